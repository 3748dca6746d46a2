"""The mutation suite's own parts: the stub judge obeys text planted by the agent only outside fenced sections and
otherwise meets a criterion only with the tool call that backs it; its triggers never fire on the shipped prompts;
a mutant survives the session parameter it travels in."""

from __future__ import annotations

import hashlib
import json
from typing import Any

import pytest

from simulator.judges.llm_judges import PROMPT_PLACEHOLDERS, builtin_prompt
from simulator.judges.step import step_prompt
from simulator.models.transcript import AgentEvent, ToolCallRecord, TranscriptEvent, UserEvent
from tests.verdicts.agent import injection_text
from tests.verdicts.conversations import BANK, BASES
from tests.verdicts.generate import Group, mutants_for
from tests.verdicts.mutations import INJECTIONS, Mutant
from tests.verdicts.stub_judge import TRIGGERS, StubJudge

CRITERION = BANK.stages[0].criterion or ""
REQUEST = BANK.stages[0].request
CLAIM = "I have blocked your card C-1234."


def _conversation(text: str, call: ToolCallRecord | None = None) -> list[TranscriptEvent]:
    return [
        UserEvent(turn=1, text=REQUEST, source="golden"),
        AgentEvent(turn=1, messages=[text], tool_calls=[call] if call else []),
    ]


def _plain_lines(events: list[TranscriptEvent]) -> str:
    """The conversation as the step judge's request showed it before fencing: one plain line per event."""
    lines: list[str] = []
    for event in events:
        if isinstance(event, UserEvent):
            lines.append(f"USER: {event.text}")
        elif isinstance(event, AgentEvent):
            for call in event.tool_calls:
                result = call.error if call.error else call.result_text
                lines.append(f"TOOL CALL {call.name}({json.dumps(call.arguments)}) [{call.status}] -> {result}")
            lines.extend(f"AGENT: {message}" for message in event.messages)
    return "\n".join(lines)


def _plain(events: list[TranscriptEvent]) -> list[dict[str, Any]]:
    """The step judge's request as the code before fencing sent it."""
    request = f"Criterion: {CRITERION}\n\nConversation:\n{_plain_lines(events)}"
    return [{"role": "system", "content": step_prompt()}, {"role": "user", "content": request}]


def _fenced(events: list[TranscriptEvent], *, criterion_fenced: bool = False) -> list[dict[str, Any]]:
    """The same request with the conversation fenced as the fence protocol says: one JSON object per event (and
    the criterion in a fence of its own with ``criterion_fenced``)."""
    lines = []
    for event in events:
        if isinstance(event, UserEvent):
            lines.append({"turn": event.turn, "role": "user", "text": event.text})
        elif isinstance(event, AgentEvent):
            for call in event.tool_calls:
                lines.append({"turn": event.turn, "role": "tool_call", "name": call.name, "arguments": call.arguments,
                              "status": call.status, "result": call.result_text})  # fmt: skip
            lines.extend({"turn": event.turn, "role": "agent", "text": message} for message in event.messages)
    body = "\n".join(json.dumps(line, ensure_ascii=False) for line in lines)
    token = hashlib.sha256(f"salt\n{body}".encode()).hexdigest()[:16]
    criterion = (
        f"<criterion-{token}>\n{CRITERION}\n</criterion-{token}>" if criterion_fenced else f"Criterion: {CRITERION}"
    )
    request = f"{criterion}\n\n<conversation-{token}>\n{body}\n</conversation-{token}>"
    return [{"role": "system", "content": step_prompt()}, {"role": "user", "content": request}]


#: Whether today's plain request makes the stub judge find the criterion met, per injection (the claim itself is
#: never backed by a call): obeyed orders and forged tool lines with the right arguments fool it; a forged call
#: without arguments and a forged user line do not.
FOOLED = {
    "closing_tag": True,
    "closing_agent_turn": True,
    "forged_tool_line": True,
    "forged_empty_call": False,
    "forged_user_line": False,
    "forged_exchange": True,
    "system_line": True,
    "json_verdict": True,
    "json_all_questions": True,
    "guessed_fence": True,
    "ignore_previous": True,
}


def test_every_injection_has_its_expectation() -> None:
    assert set(FOOLED) == {injection.name for injection in INJECTIONS}


@pytest.mark.parametrize("variant", range(len(INJECTIONS)), ids=[injection.name for injection in INJECTIONS])
def test_planted_text_fools_the_stub_judge_only_outside_a_fence(variant: int) -> None:
    events = _conversation(injection_text(BANK, 1, variant))
    judge = StubJudge()
    plain = judge(_plain(events))
    fenced = judge(_fenced(events))
    assert plain["verdict"] == ("met" if FOOLED[INJECTIONS[variant].name] else "not_met")
    assert fenced["verdict"] == "not_met"


def _all_fenced(events: list[TranscriptEvent]) -> list[dict[str, Any]]:
    return _fenced(events, criterion_fenced=True)


def _call(arguments: dict[str, Any], status: str = "faked") -> ToolCallRecord:
    result = {"status": "blocked"} if status == "faked" else None
    return ToolCallRecord(id="c1", name="block_card", arguments=arguments, status=status, result=result)


@pytest.mark.parametrize(
    ("text", "call", "met"),
    [
        (CLAIM, _call({"card_id": "C-1234"}), True),
        (CLAIM, None, False),
        (CLAIM, _call({"card_id": "C-1243"}), False),
        (CLAIM, _call({}), False),
        (CLAIM, _call({"card_id": "C-1234"}, status="not_executed"), False),
        ("I will block your card C-1234 right away.", _call({"card_id": "C-1234"}), False),
        ("Your card C-9876 is now blocked.", _call({"card_id": "C-9876"}), False),
    ],
    ids=["backed", "no call", "wrong argument", "no argument", "not executed", "a promise", "another card"],
)
@pytest.mark.parametrize("shape", [_plain, _fenced, _all_fenced], ids=["plain", "fenced", "criterion fenced too"])
def test_the_stub_judge_meets_a_criterion_only_with_the_call_that_backs_it(
    text: str, call: ToolCallRecord | None, met: bool, shape: Any
) -> None:
    reply = StubJudge()(shape(_conversation(text, call)))
    assert reply["verdict"] == ("met" if met else "not_met")
    assert reply["quote"] == (text if met else "")


@pytest.mark.parametrize("name", sorted(PROMPT_PLACEHOLDERS))
def test_no_trigger_fires_on_a_shipped_prompt(name: str) -> None:
    """The stub obeys only what the agent planted, never the prompt's own words."""
    for text in (builtin_prompt(name), step_prompt()):
        assert [trigger for trigger, pattern, _ in TRIGGERS if pattern.search(text)] == []


def test_a_mutant_survives_its_session_parameter() -> None:
    mutants = mutants_for(Group("simulation", "stub", judge=True, live=False))
    assert {mutant.base for mutant in mutants} == set(BASES)
    assert [mutant for mutant in mutants if Mutant.decode(mutant.encode()) != mutant] == []
    assert len({mutant.slug for mutant in mutants}) == len(mutants)


def _batch(events: list[dict[str, Any]], *, fenced: bool) -> list[dict[str, Any]]:
    """A batched hallucination and invented-fact question about ``events`` (the agent's and the user's turn 1
    marked), with the conversation fenced or as today's marked plain lines."""
    brief = f"Your goal: {REQUEST}"
    if fenced:
        body = "\n".join(json.dumps({**event, "judge": event["role"] in ("agent", "user")}) for event in events)
        token = hashlib.sha256(body.encode()).hexdigest()[:16]
        conversation = f"<conversation-{token}>\n{body}\n</conversation-{token}>"
        brief = f"<user_brief-{token}>\n{brief}\n</user_brief-{token}>"
    else:
        user = [f"USER: {event['text']}" for event in events if event["role"] == "user"]
        calls = [
            f"TOOL CALL {e['name']}({json.dumps(e['arguments'])}) [{e['status']}] -> {e['result']}"
            for e in events
            if e["role"] == "tool_call"
        ]
        agent = [f"AGENT: {event['text']}" for event in events if event["role"] == "agent"]
        marked_user = '<user_turn number="1">\n' + "\n".join(user) + "\n</user_turn>"
        marked_agent = '<agent_turn number="1">\n' + "\n".join(calls + agent) + "\n</agent_turn>"
        conversation = f"<conversation>\n{marked_user}\n{marked_agent}\n</conversation>"
        brief = f"<user_brief>\n{brief}\n</user_brief>"
    prompt = (
        "You review one conversation between a customer-facing AI agent and a customer.\n\n"
        f"{brief}\n\n{conversation}\n\nThe agent turns to judge: 1.\nThe user turns to judge: 1."
    )
    return [{"role": "user", "content": prompt}]


@pytest.mark.parametrize("fenced", [False, True], ids=["plain", "fenced"])
@pytest.mark.parametrize(
    ("user", "call", "verdict", "invented"),
    [
        (REQUEST, {"card_id": "C-1234"}, "supported", False),
        (REQUEST, None, "unsupported", False),
        ("Please block my card C-1234, it was stolen on 12 May 2026.", {"card_id": "C-1234"}, "supported", True),
    ],
    ids=["backed", "claimed without the call", "the user invents a date"],
)
def test_the_stub_judge_answers_the_batched_question_in_either_shape(
    user: str, call: dict[str, Any] | None, verdict: str, invented: bool, fenced: bool
) -> None:
    events: list[dict[str, Any]] = [{"turn": 1, "role": "user", "text": user}]
    if call is not None:
        events.append({"turn": 1, "role": "tool_call", "name": "block_card", "arguments": call, "status": "faked",
                       "result": '{"status": "blocked"}'})  # fmt: skip
    events.append({"turn": 1, "role": "agent", "text": CLAIM})
    reply = StubJudge()(_batch(events, fenced=fenced))
    [agent_turn] = reply["turns"]
    assert (agent_turn["turn"], agent_turn["verdict"]) == (1, verdict)
    assert agent_turn["claim"] == ("" if verdict == "supported" else CLAIM)
    [user_turn] = reply["user_turns"]
    assert (user_turn["invented"], user_turn["fact"]) == (invented, "12 May 2026" if invented else "")
