"""The four states (``docs/architecture.md``) as one truth table, through the real engine, step judge, scorer and
case outcome.

Rows: (does the simulated user end the conversation? × what the step's check says × is min_turns reached?)
-> (the step's status, the next step's status, the case outcome, words the first reason must hold).

The step under test has a natural-language criterion decided by the (fake) judge model; the step after it has
a deterministic check the agent always meets, so "the conversation moves on" is visible as that step's
``complete``. The user's "done" never decides a step: only checks and the judge do.
"""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from simulator.agents import AgentInput, AgentReply
from simulator.engine import ConversationSetup, simulate
from simulator.judges import StepJudge
from simulator.judges.llm_judges import LLMJudge
from simulator.judges.scoring import ScoringContext, score_transcript
from simulator.llm import FakeScript, LLMClient
from simulator.metrics import case_outcome
from simulator.models import ModelRoles, SimulationCase
from simulator.models.transcript import ErrorEvent, Transcript
from simulator.user import UserReply, UserTurnRequest

CRITERION = "The agent names the delivery date."


class Agent:
    """Always answers, with the word the second step checks for."""

    def __init__(self) -> None:
        self.turns = 0

    async def respond(self, request: AgentInput) -> AgentReply:
        self.turns += 1
        return AgentReply(messages=[f"Reply {self.turns}: your parcel is on its way, thanks."])

    async def aclose(self) -> None:
        return None


class User:
    """Speaks until its ``ends_at``-th message, which is a "done" with ``goal_reached`` (the false-pass trap)."""

    def __init__(self, ends_at: int | None) -> None:
        self.ends_at = ends_at
        self.spoken = 0

    async def next_message(self, request: UserTurnRequest) -> UserReply:
        self.spoken += 1
        if self.ends_at is not None and self.spoken >= self.ends_at:
            return UserReply(text="Great, thanks!", done=True, reason="goal_reached: the agent helped")
        return UserReply(text=f"message {self.spoken}")


async def _no_wait(delay: float) -> None:
    return None


def _judge(check: str) -> StepJudge:
    if check == "not_judged":
        return StepJudge()
    script = FakeScript()
    if check == "judge_error":
        script.enqueue("judge", "this is not JSON", times=50)
    else:
        # A pass quotes the agent's words (every reply of the agent below says them).
        said = {"verdict": check, "reason": f"the judge says {check}", "quote": "your parcel is on its way"}
        script.enqueue("judge", said, times=50)
    client = LLMClient(ModelRoles.model_validate({"judge": "fake/judge"}), fake_script=script, sleep=_no_wait)
    return StepJudge(client)


def _run(check: str, *, ends_at: int | None, min_turns: int) -> tuple[Transcript, str, list[str]]:
    case = SimulationCase.model_validate(
        {
            "kind": "simulation",
            "name": "truth",
            "steps": [
                {"goal": "Ask for the date.", "success_criteria": CRITERION, "max_turns": 2, "min_turns": min_turns},
                {"goal": "Say thanks.", "checks": [{"must_contain": ["thanks"]}], "max_turns": 1},
            ],
        }
    )
    setup = ConversationSetup(case=case, agent=Agent(), user=User(ends_at), checker=_judge(check))
    transcript = asyncio.run(simulate(setup))
    context = ScoringContext()
    context.thresholds = context.thresholds.model_copy(update={"fail_on_hallucination": False})
    scores = asyncio.run(score_transcript(case, transcript, context, LLMJudge(None)))
    outcome, reasons = case_outcome(transcript, scores)
    return transcript, outcome, reasons


ROWS: list[tuple[Any, ...]] = [
    # user ends at | check | min_turns -> step 1, step 2, case, first reason holds
    (None, "met", 1, "complete", "complete", "pass", ""),
    (None, "met", 2, "complete", "complete", "pass", ""),
    (None, "not_met", 1, "incomplete", "blocked", "fail", "not met within 2 turns"),
    (None, "not_met", 2, "incomplete", "blocked", "fail", "not met within 2 turns"),
    (None, "unsure", 1, "unsure", "complete", "unsure", "unsure after its max turns"),
    (None, "unsure", 2, "unsure", "complete", "unsure", "unsure after its max turns"),
    (None, "not_judged", 1, "unsure", "complete", "unsure", "not judged: no judge model"),
    (None, "not_judged", 2, "unsure", "complete", "unsure", "not judged: no judge model"),
    (None, "judge_error", 1, "not_reached", "not_reached", "error", "the judge failed checking step 1"),
    (None, "judge_error", 2, "not_reached", "not_reached", "error", "the judge failed checking step 1"),
    # The user ends at its second message, after one agent reply.
    (2, "met", 1, "complete", "unsure", "unsure", "ended the conversation (goal_reached: the agent helped) before"),
    (2, "not_met", 1, "incomplete", "blocked", "fail", "the simulated user ended the conversation"),
    (2, "unsure", 1, "unsure", "not_reached", "unsure", "the simulated user ended the conversation"),
    (2, "not_judged", 1, "unsure", "not_reached", "unsure", "not judged: no judge model"),
    (2, "judge_error", 1, "not_reached", "not_reached", "error", "the judge failed checking step 1"),
    # min_turns not reached when the user ends: nothing was checked, nothing is met.
    (2, "met", 2, "unsure", "not_reached", "unsure", "before this step was checked"),
    (2, "not_met", 2, "unsure", "not_reached", "unsure", "before this step was checked"),
    (2, "judge_error", 2, "unsure", "not_reached", "unsure", "before this step was checked"),
    # The user ends before the agent said anything: nothing is met, and it is the simulated user's failure.
    (1, "met", 1, "not_reached", "not_reached", "error", "the simulated user ended the conversation before the agent"),
    (1, "not_met", 1, "not_reached", "not_reached", "error", "the simulated user ended the conversation before the"),
]


@pytest.mark.parametrize("row", ROWS, ids=lambda row: "-".join(map(str, row[:3])))
def test_the_four_states(row: tuple[Any, ...]) -> None:
    ends_at, check, min_turns, step1, step2, case, reason = row
    transcript, outcome, reasons = _run(check, ends_at=ends_at, min_turns=min_turns)
    assert [s.status for s in transcript.steps] == [step1, step2], [s.rationale for s in transcript.steps]
    assert outcome == case, reasons
    if reason:
        assert reason in reasons[0], reasons
    else:
        assert reasons == []
    # The user's "done" is never a verdict, and is named where it ended the conversation.
    if ends_at is not None and step1 != "complete" and transcript.stop_reason != "error":
        assert transcript.stop_reason == "user_ended"
        assert transcript.steps[0].status != "complete"
    if check == "judge_error" and step1 == "not_reached":
        [error] = [e for e in transcript.events if isinstance(e, ErrorEvent)]
        assert error.where == "judge"


def test_min_turns_holds_the_judge_back() -> None:
    """Before min_turns nothing is checked, so a step met on the first reply completes at the second."""
    transcript, _, _ = _run("met", ends_at=None, min_turns=2)
    assert transcript.steps[0].completed_at_turn == 2


def test_checks_met_with_criteria_nobody_judged_leave_the_step_unsure_at_once() -> None:
    """A pass means every check of the step was decided: met deterministic checks beside criteria no judge model
    could judge keep the step (and the case) unsure. Nothing a later turn says could judge them, so the step is
    settled on its first check and the conversation moves on as it would after a met step."""
    case = SimulationCase.model_validate(
        {
            "kind": "simulation",
            "name": "half_judged",
            "steps": [
                {
                    "goal": "Ask for the date.",
                    "success_criteria": CRITERION,
                    "checks": [{"must_contain": ["parcel"]}],
                    "max_turns": 3,
                },
                {"goal": "Say thanks.", "checks": [{"must_contain": ["thanks"]}], "max_turns": 1},
            ],
        }
    )
    setup = ConversationSetup(case=case, agent=Agent(), user=User(None), checker=_judge("not_judged"))
    transcript = asyncio.run(simulate(setup))
    scores = asyncio.run(score_transcript(case, transcript, ScoringContext(), LLMJudge(None)))
    outcome, reasons = case_outcome(transcript, scores)
    first, second = transcript.steps
    assert (first.status, first.turns_used, second.status) == ("unsure", 1, "complete")
    assert outcome == "unsure"
    assert "1 of 2 checks met" in first.rationale
    assert f"success_criteria: {CRITERION}" in first.rationale
    assert any("not judged" in reason and "judge model" in reason for reason in reasons), reasons
