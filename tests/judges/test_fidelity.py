"""Simulated-user fidelity: each rule caught on a scripted bad-user transcript, with its turn and evidence; no
finding on good transcripts, scripted lines or the demo's offline run; the invented-fact judge question (one
request, failing conversations only); and when a failure is put down to the user (``user_error``)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

import simulator
from simulator.judges.fidelity import (
    check_fidelity,
    contradicted_calls,
    invented_fact_question,
    judge_invented_facts,
    left_hanging,
    unsourced_data,
    user_error_cause,
    user_error_reason,
)
from simulator.judges.llm_judges import LLMJudge
from simulator.llm import Completion, FakeScript, LLMClient, Role, UnrecordedRequest, replaying
from simulator.models import Case, ModelRoles, Persona
from simulator.models.case import ScenarioCase, SimulationCase
from simulator.models.scores import FidelityFinding, Score
from simulator.models.transcript import (
    AgentEvent,
    CheckEvent,
    StepOutcome,
    ToolCallRecord,
    Transcript,
    TranscriptEvent,
    UserEvent,
)
from tests.factories import judged_turns, run, section

ROOT = Path(__file__).resolve().parents[2]

SIMULATION: Case = SimulationCase.model_validate(
    {
        "kind": "simulation",
        "name": "refund",
        "steps": [
            {
                "goal": "Ask for a refund for your blender.",
                "response_guide": {
                    "order number": "ORD-40051",
                    "reason": "the lid cracked on the second day and the motor smells of burning plastic",
                },
                "max_turns": 4,
            },
            {
                "goal": "Ask how long the refund takes.",
                "response_guide": (
                    "If the agent asks why you are in a hurry, say that you need the money back before your rent "
                    "is due on Friday."
                ),
            },
        ],
    }
)
SCENARIO: Case = ScenarioCase.model_validate(
    {"kind": "scenario", "name": "eta", "goal": "Find out when order A1 arrives.", "checks": []}
)


def conversation(*turns: tuple[str, str | None], step: int | None = 0, source: str = "llm") -> list[TranscriptEvent]:
    """User and agent turns, numbered from 1: (user text, agent reply or None)."""
    events: list[TranscriptEvent] = []
    for number, (user, agent) in enumerate(turns, start=1):
        events.append(UserEvent.model_validate({"turn": number, "step": step, "text": user, "source": source}))
        if agent is not None:
            events.append(AgentEvent(turn=number, step=step, messages=[agent]))
    return events


def transcript(events: list[TranscriptEvent], case: Case = SIMULATION, **fields: Any) -> Transcript:
    turns = max((e.turn for e in events if isinstance(e, AgentEvent)), default=0)
    return Transcript(case=case.name, kind=case.kind, events=events, turns=turns, **fields)


def findings(events: list[TranscriptEvent], case: Case = SIMULATION, **fields: Any) -> list[FidelityFinding]:
    return check_fidelity(case, transcript(events, case, **fields), None, []).findings


# -- each kind, caught at its turn with its evidence -------------------------------------------------------------


@pytest.mark.parametrize(
    ("bad_line", "evidence", "rule"),
    [
        (
            "Sure thing! How can I help you today?",
            "How can I help you today?",
            "talks like the support agent (offers help)",
        ),
        (
            "As an AI language model, I cannot own a blender.",
            "As an AI language model, I cannot own a blender.",
            "speaks of itself as an AI, a language model or a simulated user",
        ),
        (
            "Honestly, I'm just a simulated user here. Refund please.",
            "Honestly, I'm just a simulated user here.",
            "speaks of itself as an AI, a language model or a simulated user",
        ),
        (
            "Can I get a refund for it? Yes, you can get a full refund within 30 days.",
            "Yes, you can get a full refund within 30 days.",
            "answers its own question in the same message",
        ),
        (
            "Wie kann ich Ihnen heute helfen?",
            "Wie kann ich Ihnen heute helfen?",
            "talks like the support agent (offers help)",
        ),
        ("Gern! Was kann ich für Sie tun?", "Was kann ich für Sie tun?", "talks like the support agent (offers help)"),
        (
            "Als KI kann ich keinen Mixer besitzen.",
            "Als KI kann ich keinen Mixer besitzen.",
            "speaks of itself as an AI, a language model or a simulated user",
        ),
    ],
)
def test_breaking_character_is_caught_at_its_turn(bad_line: str, evidence: str, rule: str) -> None:
    events = conversation(
        ("I want a refund for my blender.", "Sorry to hear that. What is your order number?"),
        (bad_line, "Let me check."),
    )
    [finding] = findings(events)
    assert (finding.turn, finding.step, finding.kind, finding.rule, finding.source) == (
        2,
        0,
        "broke_character",
        rule,
        "deterministic",
    )
    assert evidence in finding.evidence or finding.evidence in evidence
    assert finding.evidence in bad_line


@pytest.mark.parametrize(
    "line",
    [
        "I'm an AI researcher and my blender is broken.",
        "As an AI researcher, I expected better support.",
        "Is there anything I can do to speed the refund up?",
        "Did you get my email? Yes, I sent it yesterday.",
        "Where's my refund? Your site is showing an error.",
        "Could you call me? You can reach me after five.",
        "I'd like a refund. Thanks for your help!",
        "Können Sie mir helfen? Mein Mixer ist kaputt.",
        "Ich bin Kundin seit zehn Jahren und will mein Geld zurück.",
    ],
)
def test_ordinary_customer_lines_are_in_character(line: str) -> None:
    events = conversation(("I want a refund for my blender.", "What is your order number?"), (line, "Ok."))
    assert findings(events) == []


def test_a_fact_of_the_guide_volunteered_before_the_agent_named_it_is_a_leak() -> None:
    bad = "Refund please: the lid cracked on the second day and the motor smells of burning plastic."
    [finding] = findings(conversation((bad, "I am sorry. What is your order number?")))
    assert (finding.turn, finding.kind) == (1, "leaked_guide")
    assert finding.evidence == "the lid cracked on the second day and the motor smells of burning plastic"
    assert finding.rule == (
        "quotes 14 consecutive words of the response guide's fact 'reason' before the agent named it"
    )


def test_the_same_fact_after_the_agent_asked_for_it_is_no_leak() -> None:
    answer = "The lid cracked on the second day and the motor smells of burning plastic."
    events = conversation(
        ("I want a refund for my blender.", "What is the reason for the return?"),
        (answer, "Thanks."),
    )
    assert findings(events) == []


def test_guidance_in_words_quoted_before_the_agent_asked_anything_is_a_leak() -> None:
    events = conversation(
        ("How long does the refund take?", "Refunds are processed quickly."),
        ("I need the money back before your rent is due on Friday.", "I see."),
        step=1,
    )
    [finding] = findings(events)
    assert (finding.turn, finding.step, finding.kind) == (2, 1, "leaked_guide")
    assert finding.evidence == "need the money back before your rent is due on Friday"
    assert "before the agent asked anything" in finding.rule


def test_a_near_identical_message_sent_again_is_repetition() -> None:
    events = conversation(
        ("I want a refund for my blender please.", "We offer blenders in three colours."),
        ("I want a refund for my blender, please!", "Would you like to buy one?"),
    )
    [finding] = findings(events)
    assert (finding.turn, finding.kind) == (2, "repeated_itself")
    assert finding.evidence == "I want a refund for my blender, please!"
    assert finding.rule == "near-identical to its own message of turn 1"


def test_the_same_answer_to_the_same_question_again_is_not_repetition() -> None:
    events = conversation(
        ("I want a refund for my blender.", "What is your order number?"),
        ("My order number is ORD-40051 for sure.", "What is your order number?"),
        ("My order number is ORD-40051 for sure.", "Found it."),
    )
    assert findings(events) == []


def _ended(reason: str, verdict: str | None, closing: str | None = "Great, thanks, bye!") -> Transcript:
    events = conversation(("When does order A1 arrive?", "It is on its way."), step=None)
    if closing is not None:
        events.append(UserEvent(turn=2, text=closing, source="llm"))
    step = StepOutcome(index=0, label="eta", status="incomplete", verdict=verdict)
    return transcript(events, SCENARIO, steps=[step], stop_reason="user_ended", user_ended_reason=reason)


def test_ending_as_if_the_goal_were_reached_while_its_check_is_not_met_is_caught() -> None:
    [finding] = check_fidelity(SCENARIO, _ended("goal_reached: got the date", "not_met"), None, []).findings
    assert (finding.turn, finding.step, finding.kind) == (2, None, "ended_early")
    assert finding.evidence == "Great, thanks, bye! / goal_reached: got the date"
    assert finding.rule == (
        "ended the conversation as if its goal were reached while its step's last check said not met"
    )


def test_an_ending_without_a_message_is_found_at_the_last_turn() -> None:
    ended = _ended("goal_reached: done", "not_met", closing=None)
    [finding] = check_fidelity(SCENARIO, ended, None, []).findings
    assert (finding.turn, finding.kind, finding.evidence) == (1, "ended_early", "goal_reached: done")


def test_an_open_goal_the_judge_found_not_satisfied_counts_as_open() -> None:
    ended = _ended("goal_reached: fine", None)
    unsatisfied = Score(metric="goal_satisfaction", check="user goal", source="judge", verdict="not_met")
    [finding] = check_fidelity(SCENARIO, ended, None, [unsatisfied]).findings
    assert finding.rule.endswith("while the judge found its goal not satisfied")
    assert check_fidelity(SCENARIO, ended, None, []).findings == []


def test_giving_up_on_an_unhelpful_agent_is_allowed() -> None:
    assert check_fidelity(SCENARIO, _ended("gave_up: the agent cannot help", "not_met"), None, []).findings == []


# -- what is not checked, and good transcripts -----------------------------------------------------------------


def test_scripted_lines_are_not_checked_nor_counted() -> None:
    events = conversation(
        ("How can I help you today? As an AI I know everything.", "Hm?"),
        ("How can I help you today? As an AI I know everything.", "Hm?"),
        source="scripted",
    )
    check = check_fidelity(SIMULATION, transcript(events), None, [])
    assert (check.findings, check.checked_turns) == ([], 0)


def test_a_good_conversation_has_no_finding_and_counts_its_turns() -> None:
    events = conversation(
        ("Hi, my blender arrived broken and I'd like a refund.", "Sorry to hear that! What is your order number?"),
        ("It's ORD-40051.", "Thanks. What is the reason for the return?"),
        ("The lid cracked on the second day and the motor smells of burning plastic.", "Refund started."),
        ("Great, how long will it take? Can you tell me?", "Three to five days."),
    )
    check = check_fidelity(SIMULATION, transcript(events), None, [])
    assert (check.findings, check.checked_turns) == ([], 4)


def test_the_demo_run_offline_has_no_finding_even_if_every_user_line_were_the_models(tmp_path: Path) -> None:
    """The scripted user's lines in the shipped demo (every persona) read as model-written: no false positive.

    The seed is pinned: with some seeds a persona's typos confuse the rule-based demo agent and the scripted user
    then says the same line again (seed 1: twice in 82 conversations), which a model doing it would rightly be
    flagged for (``repeated_itself``)."""
    outcome = simulator.run(ROOT / "suites" / "demo", persona="all", seed=0, db=tmp_path / "runs.db")
    checked = 0
    for stored in outcome.iter_results():
        snapshot = outcome.record.snapshot[stored.suite]
        case = next(c for c in snapshot.suite.cases if c.name == stored.case)
        persona: Persona | None = snapshot.personas.get(stored.persona) if stored.persona else None
        assert stored.result.fidelity == []
        assert stored.result.user_turns_checked == 0
        as_model = [
            e.model_copy(update={"source": "llm"}) if isinstance(e, UserEvent) else e
            for e in stored.result.transcript.events
        ]
        check = check_fidelity(
            case, stored.result.transcript.model_copy(update={"events": as_model}), persona, stored.result.scores
        )
        assert check.findings == [], (stored.case, stored.persona)
        checked += check.checked_turns
    assert checked > 100


# -- invented facts: the judge, once per conversation ------------------------------------------------------------


def _judge(script: FakeScript) -> LLMJudge:
    roles = ModelRoles.model_validate({"judge": "fake/judge"})
    return LLMJudge(LLMClient(roles, fake_script=script))


def test_invented_facts_are_one_request_and_a_finding_per_quoted_turn() -> None:
    events = conversation(
        ("I want a refund for my blender.", "What is your order number?"),
        ("It's ORD-99999, bought on 3 March at the Vienna store.", "Let me see."),
        ("Please hurry.", "Done."),
    )
    reply = {
        "turns": [
            {"turn": 1, "invented": False, "fact": "", "reason": "only the goal"},
            {"turn": 2, "invented": True, "fact": "ORD-99999", "reason": "the guide says ORD-40051"},
            {"turn": 3, "invented": True, "fact": "a Vienna store", "reason": "misquoted: not in turn 3"},
        ]
    }
    script = FakeScript().enqueue("judge", reply)
    found = run(judge_invented_facts(_judge(script), SIMULATION, transcript(events), None))
    assert len(script.requests) == 1
    prompt = script.requests[0].messages[0]["content"]
    assert judged_turns(prompt, "user") == [1, 2, 3]
    assert "fact order number: ORD-40051" in section(prompt, "user_brief")
    assert [(f.turn, f.kind, f.evidence, f.source) for f in found] == [(2, "invented_fact", "ORD-99999", "judge")]
    assert found[0].rule.endswith("the guide says ORD-40051")


INVENTED_EVENTS = conversation(
    ("I want a refund for my blender.", "What is your order number?"),
    ("It's ORD-99999, bought on 3 March at the Vienna store.", "Let me see."),
    ("Please hurry.", "Done."),
)
USER_VERDICTS = [
    {"turn": 1, "invented": False, "fact": "", "reason": "only the goal"},
    {"turn": 2, "invented": True, "fact": "ORD-99999", "reason": "the guide says ORD-40051"},
    {"turn": 3, "invented": True, "fact": "a Vienna store", "reason": "misquoted: not in turn 3"},
]
AGENT_VERDICTS = [{"turn": n, "verdict": "no_claim", "claim": "", "reason": "asks only"} for n in (1, 2, 3)]


def _asked_with_hallucinations(judge: LLMJudge, events: list[TranscriptEvent]) -> tuple[Any, list[FidelityFinding]]:
    """The batched hallucination question with the user's question in it, then the fidelity check's question."""
    recorded = transcript(events)
    question = invented_fact_question(SIMULATION, recorded, None)
    assert question is not None
    agent_turns = recorded.agent_events()
    scores = run(judge.hallucinations(turns=agent_turns, events=recorded.events, context="", user=question))
    return scores, run(judge_invented_facts(judge, SIMULATION, recorded, None))


def test_invented_facts_asked_with_the_hallucination_question_cost_no_request_of_their_own() -> None:
    script = FakeScript().enqueue("judge", {"turns": AGENT_VERDICTS, "user_turns": USER_VERDICTS})
    scores, found = _asked_with_hallucinations(_judge(script), INVENTED_EVENTS)
    assert len(script.requests) == 1
    prompt = script.requests[0].messages[0]["content"]
    assert prompt.startswith("You review one conversation")
    assert "fact order number: ORD-40051" in section(prompt, "user_brief")
    assert judged_turns(prompt, "user") == judged_turns(prompt, "agent") == [1, 2, 3]
    assert "The agent turns to judge: 1, 2, 3." in prompt
    assert "The user turns to judge: 1, 2, 3." in prompt
    assert [(s.turn, s.verdict) for s in scores] == [(1, "n/a"), (2, "n/a"), (3, "n/a")]
    # The same findings the question asked on its own gives.
    alone = FakeScript().enqueue("judge", {"turns": USER_VERDICTS})
    assert found == run(judge_invented_facts(_judge(alone), SIMULATION, transcript(INVENTED_EVENTS), None))
    assert [(f.turn, f.evidence) for f in found] == [(2, "ORD-99999")]


class _RecordedApart:
    """A replay's recording made when the two questions were asked apart: the combined one was never recorded."""

    def answer(self, role: Role, record: dict[str, Any], fingerprint: str) -> Completion | None:
        if str(record["messages"][0]["content"]).startswith("You review one conversation"):
            raise UnrecordedRequest("not judged: this judge request changed since the recording")
        return None  # answered by the fake judge, standing for the recorded reply


def test_a_replay_recorded_with_the_questions_apart_asks_them_as_recorded() -> None:
    script = FakeScript().enqueue("judge", {"turns": AGENT_VERDICTS}, {"turns": USER_VERDICTS})
    with replaying(_RecordedApart()):
        scores, found = _asked_with_hallucinations(_judge(script), INVENTED_EVENTS)
    asked = [request.messages[0]["content"] for request in script.requests]
    assert [prompt.split(" ", 3)[:3] for prompt in asked] == [["You", "check", "the"], ["A", "language", "model"]]
    assert [(s.turn, s.verdict) for s in scores] == [(1, "n/a"), (2, "n/a"), (3, "n/a")]
    assert [(f.turn, f.evidence) for f in found] == [(2, "ORD-99999")]


def test_a_failed_combined_request_leaves_the_user_question_to_its_own_request() -> None:
    def judge(messages: list[dict[str, Any]]) -> dict[str, Any]:
        combined = str(messages[0]["content"]).startswith("You review one conversation")
        return {"nonsense": True} if combined else {"turns": USER_VERDICTS}

    script = FakeScript().enqueue("judge", judge, times=10)
    scores, found = _asked_with_hallucinations(_judge(script), INVENTED_EVENTS)
    assert {s.verdict for s in scores} == {"error"}
    assert [(f.turn, f.evidence) for f in found] == [(2, "ORD-99999")]
    assert str(script.requests[-1].messages[0]["content"]).startswith("A language model played a customer")


def test_no_judge_model_or_a_failing_judge_gives_no_invented_fact() -> None:
    events = conversation(("It's ORD-99999.", "Ok."))
    assert run(judge_invented_facts(LLMJudge(None), SIMULATION, transcript(events), None)) == []
    script = FakeScript().enqueue("judge", {"nonsense": True}, times=10)
    assert run(judge_invented_facts(_judge(script), SIMULATION, transcript(events), None)) == []
    assert all(request.role is Role.JUDGE for request in script.requests)


# -- whose failure -----------------------------------------------------------------------------------------------


def _not_met(metric: str, *, turn: int | None = None, step: int | None = None, missing: bool = False) -> Score:
    return Score(metric=metric, check=metric, source="engine", verdict="not_met", turn=turn, step=step, missing=missing)


def _finding(turn: int) -> FidelityFinding:
    return FidelityFinding(turn=turn, step=0, kind="broke_character", evidence="How can I help?", rule="r")


THREE_TURNS = transcript(conversation(("a b c d", "x"), ("e f g h", "y"), ("i j k l", "z")))


@pytest.mark.parametrize(
    ("finding_turns", "failed", "cause"),
    [
        # A finding strictly before what decided the failing step (its last agent reply, turn 3): the user's. A
        # user message of turn 3 comes before the agent's reply of turn 3.
        ([2], [_not_met("goal_achievement", step=0)], 2),
        ([3], [_not_met("goal_achievement", step=0)], 3),
        # A slip after the reply that decided a failure did not cause it.
        ([3], [_not_met("goal_achievement", step=0), _not_met("expectation", turn=2, missing=True)], None),
        # A failure at a turn before the first finding stands on its own.
        ([3], [_not_met("expectation", turn=1, missing=True)], None),
        # Every failure must be explained: the earliest finding before each, and each one something that did
        # not happen (a call not made, words not said), never something the agent did wrong.
        ([1, 3], [_not_met("expectation", turn=2, missing=True), _not_met("goal_achievement", step=0)], 1),
        ([1, 3], [_not_met("expectation", turn=2), _not_met("goal_achievement", step=0)], None),
        # A hallucination is the agent's, whatever the user did.
        ([1], [_not_met("hallucination", turn=2)], None),
        ([1], [_not_met("goal_achievement", step=0), _not_met("hallucination", turn=3)], None),
        # Nothing failed, or no finding.
        ([1], [], None),
        ([], [_not_met("goal_achievement", step=0)], None),
    ],
)
def test_a_failure_is_the_users_only_when_a_finding_comes_strictly_before_it(
    finding_turns: list[int], failed: list[Score], cause: int | None
) -> None:
    found = user_error_cause([_finding(turn) for turn in finding_turns], THREE_TURNS, failed)
    assert (found.turn if found else None) == cause


def test_the_user_error_reason_names_the_finding() -> None:
    reason = user_error_reason(_finding(2))
    assert reason == "simulated user, turn 2: broke_character: “How can I help?” (r)"


@pytest.mark.parametrize(
    ("reply", "calls", "hanging"),
    [
        # Promised to act, or offered to close, with nothing done and nothing asked: the task was left hanging.
        ("I will block your card C-1 right away.", False, "promised to act"),
        ("Ich trage den 2. Oktober 2025 gleich als Urlaubstag ein.", False, "promised to act"),
        ("Noted. Is there anything else I can do for you?", False, "offered to close"),
        ("Notiert. Kann ich sonst noch etwas für Sie tun?", False, "offered to close"),
        # Waiting for the user's answer, or acting in the same reply: not hanging.
        ("What is your card number? I will block it then.", False, None),
        ("I will block your card C-1 right away.", True, None),
        ("Your balance is 20 EUR.", False, None),
    ],
)
def test_a_reply_that_leaves_the_open_task_hanging_is_the_agents_fault(
    reply: str, calls: bool, hanging: str | None
) -> None:
    made = [ToolCallRecord(id="c1", name="block_card", arguments={}, status="executed", result="ok")] if calls else []
    events: list[Any] = [
        UserEvent(turn=1, step=0, text="Block my card C-1.", source="llm"),
        AgentEvent(turn=1, step=0, messages=[reply], tool_calls=made),
        CheckEvent(turn=1, step=0, verdict="not_met", rationale="block_card was not called"),
    ]
    found = left_hanging(transcript(events))
    if hanging is None:
        assert found == []
    else:
        [fault] = found
        assert fault.startswith(f"turn 1: the agent {hanging} without acting while the task was open")


@pytest.mark.parametrize(
    ("reply", "result", "judged", "unsourced"),
    [
        # A number no tool result, user turn or session gave, in a turn no judge checked: in doubt.
        ("The balance of account A-77 is 1250.40 EUR.", None, False, "1250.40"),
        ("Der 3. Oktober 2025 ist ein Feiertag.", None, False, "3, 2025"),
        # Given by the tool's result (as a JSON number, or a date in another form), by the user, or judged.
        ("The balance of account A-77 is 1250.40 EUR.", {"balance": 1250.4}, False, None),
        ("It arrives on 03.12.2026.", {"eta": "2026-12-03"}, False, None),
        ("Account A-77, noted. What else?", None, False, None),
        ("The balance of account A-77 is 1250.40 EUR.", None, True, None),
    ],
)
def test_numbers_nothing_gave_in_a_turn_no_judge_checked_are_in_doubt(
    reply: str, result: dict[str, Any] | None, judged: bool, unsourced: str | None
) -> None:
    calls = [ToolCallRecord(id="c1", name="get_balance", arguments={}, status="faked", result=result)] if result else []
    events: list[Any] = [
        UserEvent(turn=1, text="What is the balance of account A-77?", source="llm"),
        AgentEvent(turn=1, messages=[reply], tool_calls=calls),
    ]
    verdict = "met" if judged else "unsure"
    scores = [Score(metric="hallucination", check="turn 1", source="judge", verdict=verdict, turn=1)]
    found = unsourced_data(transcript(events, SCENARIO), scores)
    if unsourced is None:
        assert found == []
    else:
        [fault] = found
        assert fault.startswith(f"turn 1: states {unsourced}, which nothing before it gave")


@pytest.mark.parametrize(
    ("reply", "arguments", "contradiction"),
    [
        ("I have blocked your card C-1234.", {"card_id": "C-1243"}, "card_id='C-1243' while it says C-1234"),
        ("I have blocked your card C-1234.", {}, "no arguments while it says C-1234"),
        ("I have refunded 89.90 EUR.", {"amount": 8.99}, "amount=8.99 while it says 89.90"),
        ("Der 3. Oktober 2025 ist ein Feiertag.", {"jahr": 2024}, "jahr=2024 while it says 2025"),
        ("Ich habe den 2. Oktober 2025 eingetragen.", {"datum": "2025-10-20"}, "while it says 2025-10-02"),
        # The words and the call agree, or say nothing the call could contradict.
        ("I have blocked your card C-1234.", {"card_id": "C-1234"}, None),
        ("I have refunded 89,90 EUR.", {"amount": 89.9}, None),
        ("Ich habe den 2. Oktober 2025 eingetragen.", {"datum": "2025-10-02"}, None),
        ("Your order ORD-10042 ships on 3 December 2026.", {"order_id": "ORD-10042", "limit": 10}, None),
        ("Done, your card is blocked.", {}, None),
    ],
)
def test_a_reply_that_contradicts_its_own_tool_call_is_the_agents_fault(
    reply: str, arguments: dict[str, Any], contradiction: str | None
) -> None:
    call = ToolCallRecord(id="c1", name="block_card", arguments=arguments, status="executed", result="ok")
    found = contradicted_calls(transcript([AgentEvent(turn=1, messages=[reply], tool_calls=[call])], SCENARIO))
    if contradiction is None:
        assert found == []
    else:
        [fault] = found
        assert fault.startswith("turn 1: called block_card with ")
        assert contradiction in fault
