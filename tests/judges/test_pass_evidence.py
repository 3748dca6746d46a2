"""A judge's pass must quote the agent, and deterministic evidence outranks it: a step's criterion, an expectation
and the user's goal judged met stand only with a quote of the agent's own words in the judged scope, not from a
claim of tool use that no call backs, and not for a criterion that names a tool whose calls did not run."""

from __future__ import annotations

import asyncio
import shutil
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

from simulator.judges import StepJudge
from simulator.judges.evidence import NO_QUOTE, NOT_AGENT_TEXT, Evidence, overrule_pass
from simulator.judges.llm_judges import LLMJudge
from simulator.llm import FakeScript, LLMClient
from simulator.loading import load_suite
from simulator.models import ModelRoles
from simulator.models.run import RunSettings
from simulator.models.transcript import AgentEvent, CheckEvent, ToolCallRecord, TranscriptEvent, UserEvent
from simulator.runner import find_case, model_roles, run_case
from tests.factories import no_sleep, quoting_the_agent

ROOT = Path(__file__).resolve().parents[2]

LOOKUP = ToolCallRecord(
    id="c1",
    name="lookup_order",
    arguments={"order_id": "A1"},
    status="faked",
    result={"eta": "5 May", "carrier": "UPS"},
)
CONVERSATION: list[TranscriptEvent] = [
    UserEvent(turn=1, text="Where is my order A1?", source="llm"),
    AgentEvent(turn=1, messages=["Your order A1 arrives on 5 May."], tool_calls=[LOOKUP]),
    UserEvent(turn=2, text="And my refund?", source="llm"),
    AgentEvent(turn=2, messages=["I've checked: your refund was issued yesterday. Anything else?"]),
]
CRITERION = "The agent tells the user when the order arrives."


def _judge(reply: dict[str, Any]) -> LLMClient:
    script = FakeScript().enqueue("judge", reply)
    return LLMClient(ModelRoles.model_validate({"judge": "fake/judge"}), fake_script=script, sleep=no_sleep)


def step(
    quote: str, events: Sequence[TranscriptEvent], criterion: str, declared: Sequence[str] = ()
) -> tuple[str, str]:
    client = _judge({"verdict": "met", "reason": "the judge's reason", "quote": quote})
    replies = [event for event in events if isinstance(event, AgentEvent)]
    verdict = asyncio.run(
        StepJudge(client, declared_tools=declared).check_step(
            goal=None, criteria=criterion, checks=[], replies=replies, events=list(events), variables={}
        )
    )
    (detail,) = verdict.details
    return detail.verdict, detail.evidence


def expectation(
    quote: str, events: Sequence[TranscriptEvent], criterion: str, declared: Sequence[str] = ()
) -> tuple[str, str]:
    client = _judge({"verdict": "met", "reason": "the judge's reason", "quote": quote})
    judge = LLMJudge(client)
    score = asyncio.run(judge.expectation(text=criterion, conversation=events, declared_tools=declared))
    if score.verdict != "met":
        assert score.raw is not None  # the reply that was not used is kept for the report
    return score.verdict, score.reason


def goal(
    quote: str, events: Sequence[TranscriptEvent], criterion: str, declared: Sequence[str] = ()
) -> tuple[str, str]:
    client = _judge({"satisfied": True, "reason": "the judge's reason", "quote": quote})
    score = asyncio.run(
        LLMJudge(client).goal_satisfaction(goal=criterion, conversation=events, declared_tools=declared)
    )
    assert score.value == {"met": 1, "not_met": 0}.get(score.verdict)
    return score.verdict, score.reason


QUESTIONS = [pytest.param(step, id="step"), pytest.param(expectation, id="expectation"), pytest.param(goal, id="goal")]

QUOTES = [
    # (the judge's quote, verdict, reason starts with)
    pytest.param("arrives on 5 May", "met", "the judge's reason", id="the agent's words"),
    pytest.param(
        "“Your order A1 ARRIVES on 5 may.”", "met", "the judge's reason", id="in other case and quotation marks"
    ),
    pytest.param("", "unsure", NO_QUOTE, id="no quote"),
    pytest.param("   ", "unsure", NO_QUOTE, id="a blank quote"),
    pytest.param("Where is my order A1?", "unsure", NOT_AGENT_TEXT, id="a user turn"),
    pytest.param("carrier", "unsure", NOT_AGENT_TEXT, id="a tool result"),
    pytest.param("arrives on 6 May", "unsure", NOT_AGENT_TEXT, id="words the agent never wrote"),
    pytest.param("your refund was issued yesterday", "not_met", "the judge's quote rests on", id="an unbacked claim"),
    pytest.param("I've checked", "not_met", "the judge's quote rests on", id="the claim itself"),
]


@pytest.mark.parametrize("ask", QUESTIONS)
@pytest.mark.parametrize(("quote", "verdict", "reason"), QUOTES)
def test_a_pass_stands_only_on_the_agents_own_backed_words(ask: Any, quote: str, verdict: str, reason: str) -> None:
    got, why = ask(quote, CONVERSATION, CRITERION)
    assert got == verdict
    assert why.startswith(reason)
    if verdict != "met":
        assert why.endswith("the judge said it is met: the judge's reason")


def test_the_unbacked_claim_is_named() -> None:
    _, why = step("your refund was issued yesterday", CONVERSATION, CRITERION)
    assert "turn 2: claims “I've checked” but no tool was called in this turn" in why


REFUND = "The agent refunds the order."
NOT_RUN = [
    # (status of the refund_order call, criterion, verdict)
    pytest.param("not_executed", REFUND, "not_met", id="not executed"),
    pytest.param("failed", REFUND, "not_met", id="failed"),
    pytest.param("needs_approval", "The agent calls refund_order.", "not_met", id="waiting, named by its name"),
    pytest.param("executed", REFUND, "met", id="it ran"),
    pytest.param("faked", REFUND, "met", id="a fake answered"),
    pytest.param("not_executed", "The agent does not refund the order before approval.", "met", id="negated"),
    pytest.param("not_executed", "The agent apologises.", "met", id="not named"),
]


@pytest.mark.parametrize("ask", QUESTIONS)
@pytest.mark.parametrize(("status", "criterion", "verdict"), NOT_RUN)
def test_a_criterion_naming_a_tool_that_did_not_run_is_not_met(
    ask: Any, status: str, criterion: str, verdict: str
) -> None:
    error = None if status in ("executed", "faked") else "it did not run"
    refund = ToolCallRecord(id="c9", name="refund_order", arguments={"order_id": "A1"}, status=status, error=error)
    said = "Sorry for the trouble with your order."
    events: list[TranscriptEvent] = [
        UserEvent(turn=1, text="Refund order A1, please.", source="llm"),
        AgentEvent(turn=1, messages=[said], tool_calls=[refund]),
    ]
    got, why = ask("Sorry for the trouble", events, criterion, ["lookup_order", "refund_order"])
    assert got == verdict, why
    if verdict == "not_met":
        assert why.startswith(f"the criterion names refund_order, whose calls did not run (refund_order [{status}])")


def test_a_quote_must_be_in_the_judged_scope_and_an_earlier_call_backs_a_named_claim() -> None:
    """An expectation of turn 2 is judged on turn 2's events: a quote of turn 1 is not evidence. A claim naming a
    tool that ran at turn 1 ("according to our order lookup") is backed, so turn 2 may be quoted for it."""
    later = AgentEvent(turn=2, messages=["According to our order lookup, it arrives on 5 May."])
    events = [*CONVERSATION[:2], UserEvent(turn=2, text="Sure?", source="llm"), later]
    scope = events[2:]
    replies = [event for event in events if isinstance(event, AgentEvent)]
    evidence = Evidence(scope, replies, ["lookup_order"])
    outside = overrule_pass("Your order A1 arrives on 5 May.", CRITERION, "r", evidence)
    assert outside is not None
    assert (outside.verdict, outside.reason.startswith(NOT_AGENT_TEXT)) == ("unsure", True)
    assert overrule_pass("our order lookup, it arrives", CRITERION, "r", evidence) is None
    # Judged without the conversation before it, the same claim names a tool never called in scope: not met.
    alone = overrule_pass("our order lookup, it arrives", CRITERION, "r", Evidence(scope, None, ["lookup_order"]))
    assert alone is not None
    assert alone.verdict == "not_met"


@pytest.mark.parametrize("ask", QUESTIONS)
def test_a_not_met_verdict_needs_no_quote(ask: Any) -> None:
    client = _judge({"verdict": "not_met", "satisfied": False, "reason": "no date given"})
    if ask is step:
        verdict = asyncio.run(
            StepJudge(client).check_step(
                goal=None, criteria=CRITERION, checks=[], replies=[], events=CONVERSATION, variables={}
            )
        )
        assert (verdict.verdict, verdict.details[0].evidence) == ("not_met", "no date given")
    elif ask is expectation:
        score = asyncio.run(LLMJudge(client).expectation(text=CRITERION, conversation=CONVERSATION))
        assert (score.verdict, score.reason) == ("not_met", "no date given")
    else:
        score = asyncio.run(LLMJudge(client).goal_satisfaction(goal=CRITERION, conversation=CONVERSATION))
        assert (score.verdict, score.reason, score.value) == ("not_met", "no date given", 0)


def test_a_run_holds_the_step_judge_to_the_agents_declared_tools(tmp_path: Path) -> None:
    """The runner gives the step judge the agent's tools: a met for a criterion naming one that did not run is
    not met, with the tool and its status."""
    (tmp_path / ".git").mkdir()
    shutil.copy(ROOT / "suites" / "demo" / "agent.yaml", tmp_path / "agent.yaml")
    (tmp_path / "suite.yaml").write_text(
        "name: s\ncases:\n  - kind: scenario\n    name: lookup\n    max_turns: 1\n"
        "    goal: Ask where order ORD-99999 is.\n"
        "    success_criteria: The agent uses lookup_order and gives the status.\n",
        encoding="utf-8",
    )
    loaded = load_suite(tmp_path / "suite.yaml")
    options = RunSettings(judge_model="fake/judge")
    script = FakeScript().enqueue("judge", quoting_the_agent({"verdict": "met", "reason": "it looked"}), times=5)
    llm = LLMClient(model_roles(loaded, options), fake_script=script)
    case = find_case(loaded, "lookup")
    transcript = asyncio.run(run_case(loaded, case, persona=None, llm=llm, options=options))
    calls = [call.status for reply in transcript.agent_events() for call in reply.tool_calls]
    assert calls == ["not_executed"]
    (check,) = [event for event in transcript.events if isinstance(event, CheckEvent)]
    assert check.verdict == "not_met"
    assert "the criterion names lookup_order, whose calls did not run (lookup_order [not_executed])" in check.rationale
