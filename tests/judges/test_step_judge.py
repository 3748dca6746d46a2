"""Step checking: deterministic checks decide without a model; the judge model through the fake provider."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest
from pydantic import TypeAdapter

from simulator.judges import StepJudge
from simulator.judges.step import NO_JUDGE
from simulator.llm import FakeScript, LLMClient, StructuredOutputError, fake_rate_limit
from simulator.models import ExpectationSpec, ModelRoles
from simulator.models.case import Expectation
from simulator.models.transcript import AgentEvent, StepVerdict, ToolCallRecord, TranscriptEvent, UserEvent
from tests.factories import events_in, section

EXPECTATION: TypeAdapter[Any] = TypeAdapter(Expectation)


def expectation(data: Any) -> ExpectationSpec:
    result: ExpectationSpec = EXPECTATION.validate_python(data)
    return result


REPLY = AgentEvent(
    turn=1,
    messages=["Your order A1 was shipped on 3 May."],
    tool_calls=[
        ToolCallRecord(id="c1", name="lookup_order", arguments={"order_id": "A1"}, status="faked", result={"s": 1})
    ],
)
EVENTS: list[TranscriptEvent] = [UserEvent(turn=1, text="Where is A1?", source="scripted"), REPLY]


async def _no_wait(delay: float) -> None:
    return None


def check(judge: StepJudge, *, criteria: str | None = None, checks: list[Any] | None = None) -> StepVerdict:
    return asyncio.run(
        judge.check_step(
            goal="find the order",
            criteria=criteria,
            checks=[expectation(c) for c in checks or []],
            replies=[REPLY],
            events=EVENTS,
            variables={},
        )
    )


def judge_with(script: FakeScript) -> StepJudge:
    client = LLMClient(ModelRoles.model_validate({"judge": "fake/judge"}), fake_script=script, sleep=_no_wait)
    return StepJudge(client)


def test_deterministic_checks_decide_and_quote_their_evidence() -> None:
    verdict = check(
        StepJudge(),
        checks=[
            {"must_contain": ["shipped"]},
            {"tool_call": {"name": "lookup_order", "arguments": {"order_id": "A1"}}},
        ],
    )
    assert verdict.verdict == "met"
    assert [d.verdict for d in verdict.details] == ["met", "met"]
    assert "found 'shipped' in “Your order A1 was shipped on 3 May.”" in verdict.details[0].evidence
    assert verdict.details[1].evidence == 'called lookup_order({"order_id": "A1"}) [faked]'


def test_one_failed_check_fails_the_step_with_the_reason() -> None:
    verdict = check(StepJudge(), checks=[{"must_contain": ["refund"]}, {"must_not_contain": ["shipped"]}])
    assert verdict.verdict == "not_met"
    assert "missing 'refund'" in verdict.rationale
    assert "found 'shipped'" in verdict.rationale


def test_without_a_judge_model_criteria_are_unsure_never_guessed() -> None:
    verdict = check(StepJudge(), criteria="The agent gives the delivery status.")
    assert verdict.verdict == "unsure"
    assert verdict.details[0].evidence == NO_JUDGE


def test_without_a_judge_model_met_checks_leave_the_step_unsure_and_name_the_unjudged_criteria() -> None:
    """A pass needs every check decided: the met checks do not stand in for the criteria nobody judged."""
    verdict = check(StepJudge(), criteria="The agent gives the status.", checks=[{"must_contain": ["shipped"]}])
    assert (verdict.verdict, verdict.settled) == ("unsure", True)
    assert verdict.rationale.startswith("1 of 2 checks met")
    assert "success_criteria: The agent gives the status." in verdict.rationale
    assert verdict.rationale.endswith(NO_JUDGE)


def test_a_failed_check_beside_unjudged_criteria_fails_the_step() -> None:
    verdict = check(StepJudge(), criteria="The agent gives the status.", checks=[{"must_contain": ["refund"]}])
    assert (verdict.verdict, verdict.settled) == ("not_met", False)


#: A met verdict with the agent's words as its evidence.
MET = {"verdict": "met", "reason": "ok", "quote": "was shipped on 3 May"}


def test_the_judge_model_decides_criteria_and_sees_the_tool_calls() -> None:
    said = {**MET, "reason": "The agent looked up A1 and gave the date."}
    script = FakeScript().enqueue("judge", said)
    verdict = check(judge_with(script), criteria="The agent gives the delivery status.")
    assert (verdict.verdict, verdict.details[0].evidence) == ("met", "The agent looked up A1 and gave the date.")
    prompt = script.requests[0].messages[-1]["content"]
    assert events_in(prompt) == [
        {"turn": 1, "role": "user", "text": "Where is A1?"},
        {"turn": 1, "role": "tool_call", "name": "lookup_order", "arguments": {"order_id": "A1"}, "status": "faked",
         "result": {"s": 1}},
        {"turn": 1, "role": "agent", "text": "Your order A1 was shipped on 3 May."},
    ]  # fmt: skip
    assert section(prompt, "criterion") == "The agent gives the delivery status."
    assert section(prompt, "user_goal") == "find the order"


def test_malformed_judge_output_is_retried() -> None:
    script = FakeScript().enqueue("judge", "not json", {"verdict": "not_met", "reason": "No date was given."})
    verdict = check(judge_with(script), criteria="The agent gives the date.")
    assert verdict.verdict == "not_met"
    assert len(script.requests) == 2


def test_a_judge_that_never_answers_properly_is_a_judge_failure_not_an_unsure_verdict() -> None:
    """The engine ends such a case as ``error`` naming the judge (tests/engine/test_truth_table.py)."""
    script = FakeScript().enqueue("judge", "nope", times=3)
    with pytest.raises(StructuredOutputError, match="judge model 'fake/judge' gave no valid"):
        check(judge_with(script), criteria="The agent gives the date.")


def test_rate_limits_are_retried_for_the_judge() -> None:
    script = FakeScript().enqueue("judge", fake_rate_limit(), MET)
    assert check(judge_with(script), criteria="c").verdict == "met"


@pytest.mark.parametrize(
    ("verdicts", "expected"),
    [
        (["met", "met"], "met"),
        (["met", "not_met"], "not_met"),
        (["unsure", "met"], "unsure"),
        (["unsure", "not_met"], "not_met"),
    ],
)
def test_checks_and_judge_combine(verdicts: list[str], expected: str) -> None:
    # A plain-text check needs the judge too: two judge questions, combined.
    script = FakeScript()
    for verdict in verdicts:
        script.enqueue("judge", {**MET, "verdict": verdict, "reason": f"said {verdict}"})
    result = check(judge_with(script), criteria="criterion", checks=["The agent is polite."])
    assert result.verdict == expected


def test_a_step_without_criteria_is_met_once_the_agent_replied() -> None:
    verdict = check(StepJudge())
    assert verdict.verdict == "met"
    assert "no success criteria" in verdict.rationale


def test_the_judge_reads_a_str_tool_result_as_the_agent_got_it() -> None:
    """A tool's JSON text is shown as that JSON, not as an escaped string literal."""
    from simulator.judges.step import render_conversation

    text = '{"feiertage": ["2026-12-25"]}'
    reply = AgentEvent(
        turn=1,
        messages=["ok"],
        tool_calls=[ToolCallRecord(id="1", name="feiertage", status="executed", result=text)],
    )
    data = AgentEvent(
        turn=2,
        messages=["ok"],
        tool_calls=[ToolCallRecord(id="2", name="feiertage", status="executed", result={"feiertage": ["2026-12-25"]})],
    )
    first, second = (json.loads(render_conversation([event]).splitlines()[0]) for event in (reply, data))
    assert first["result"] == {"feiertage": ["2026-12-25"]}
    assert first == {**second, "turn": 1}


def test_a_steps_judge_questions_are_asked_at_once_and_kept_in_order() -> None:
    """A check in words and the success criteria: both requests in flight together, details in step order."""
    in_flight, most = 0, 0

    async def judge(messages: list[dict[str, Any]]) -> dict[str, str]:
        nonlocal in_flight, most
        in_flight += 1
        most = max(most, in_flight)
        await asyncio.sleep(0)  # let the other question start if it was sent at the same time
        in_flight -= 1
        criterion = section(messages[-1]["content"], "criterion")
        return {**MET, "verdict": "met" if criterion == "says it shipped" else "unsure", "reason": criterion}

    verdict = check(
        judge_with(FakeScript().enqueue("judge", judge, times=2)),
        criteria="The agent gives the delivery status.",
        checks=[{"text": "says it shipped"}, {"must_contain": ["shipped"]}],
    )
    assert most == 2
    assert [(d.check, d.verdict) for d in verdict.details] == [
        ("must_contain (all, substring): 'shipped'", "met"),
        ("judge: check: says it shipped", "met"),
        ("judge: success_criteria: The agent gives the delivery status.", "unsure"),
    ]
