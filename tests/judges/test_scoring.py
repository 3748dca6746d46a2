"""Scoring hand-built transcripts end to end: every score of a case, what produced it and why, and the outcome.

Transcripts are built directly (no engine, no StepJudge); cases are validated as a suite file would be. The
judge is either absent (``LLMJudge(None)``: questions only a model can answer are ``unsure``) or the fake
provider, answering each question by what its prompt asks (questions may run concurrently, in any order).
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable, Sequence
from typing import Any

import pytest
from pydantic import JsonValue, TypeAdapter

from simulator.fence import fenced
from simulator.judges.llm_judges import LLMJudge
from simulator.judges.scoring import ScoringContext, goal_description, hallucination_context, score_transcript
from simulator.judges.step import NO_JUDGE
from simulator.llm import FakeScript, LLMClient, StaticReply
from simulator.metrics import case_outcome
from simulator.models import Case, JudgingSettings, ModelRoles, Thresholds
from simulator.models.scores import Score
from simulator.models.transcript import (
    AgentEvent,
    CaseKind,
    StepOutcome,
    StepStatus,
    StopReason,
    ToolCallRecord,
    ToolStatus,
    Transcript,
    TranscriptEvent,
    UserEvent,
    Verdict,
)
from tests.factories import events_in, review_reply, section

CASE: TypeAdapter[Any] = TypeAdapter(Case)


def case(data: dict[str, Any]) -> Any:
    return CASE.validate_python(data)


# -- building transcripts -------------------------------------------------------------------------------------


def call(name: str, status: ToolStatus = "faked", *, id_: str | None = None, **arguments: JsonValue) -> ToolCallRecord:
    return ToolCallRecord(id=id_ or f"c-{name}", name=name, arguments=arguments, status=status, result={"ok": True})


def user(turn: int, text: str, step: int | None = None) -> UserEvent:
    return UserEvent(turn=turn, step=step, text=text, source="scripted")


def agent(
    turn: int,
    *messages: str,
    step: int | None = None,
    calls: Sequence[ToolCallRecord] = (),
    handoff: str | None = None,
    variables: dict[str, JsonValue] | None = None,
) -> AgentEvent:
    return AgentEvent(
        turn=turn,
        step=step,
        messages=list(messages),
        tool_calls=list(calls),
        handoff=handoff,
        variables=variables or {},
    )


def outcome(
    index: int, label: str, status: StepStatus = "complete", verdict: Verdict | None = None, rationale: str = ""
) -> StepOutcome:
    return StepOutcome(index=index, label=label, status=status, verdict=verdict, rationale=rationale)


def transcript(
    kind: CaseKind,
    *events: TranscriptEvent,
    steps: Sequence[StepOutcome] = (),
    stop_reason: StopReason = "completed",
    error: str | None = None,
    session_parameters: dict[str, JsonValue] | None = None,
) -> Transcript:
    return Transcript(
        case="c",
        kind=kind,
        events=list(events),
        steps=list(steps),
        stop_reason=stop_reason,
        error=error,
        turns=max((getattr(e, "turn", 0) for e in events), default=0),
        session_parameters=session_parameters or {},
    )


# -- scoring --------------------------------------------------------------------------------------------------


async def no_wait(delay: float) -> None:
    return None


Answer = StaticReply | Callable[[str], StaticReply]

#: The first words of each built-in prompt (after its header comment), by question.
QUESTIONS = {
    "You check one expectation": "expectation",
    "You decide whether a conversation": "goal_satisfaction",
    "You check one turn": "hallucination",
    "You check the turns": "hallucination_batch",
    "You judge one finished conversation": "conversation_review",
    "You grade one answer": "reference_answer",
    "You compare the message": "semantic_match",
    "You check an answer": "side_claim",
}


class FakeJudge:
    """The judge model through the fake provider: answers each question by what its prompt asks."""

    def __init__(self, **answers: Answer) -> None:
        self.answers = answers
        self.asked: list[tuple[str, str]] = []
        self.script = FakeScript().enqueue("judge", self._reply, times=200)
        roles = ModelRoles.model_validate({"judge": "fake/judge"})
        self.judge = LLMJudge(LLMClient(roles, fake_script=self.script, sleep=no_wait))

    def _reply(self, messages: list[dict[str, Any]]) -> StaticReply:
        prompt: str = messages[0]["content"]
        question = next(name for start, name in QUESTIONS.items() if prompt.startswith(start))
        self.asked.append((question, prompt))
        if question == "hallucination_batch":
            return {"turns": [{"turn": n, **self._per_turn(body)} for n, body in marked_turns(prompt)]}
        if question == "conversation_review":
            # The goal and every turn answered as their own questions would be: the same verdicts.
            turns = [{"turn": n, **self._per_turn(body)} for n, body in marked_turns(prompt)]
            goal = self.answers["goal_satisfaction"]
            return review_reply({"goal": goal(prompt) if callable(goal) else goal, "turns": turns})
        answer = self.answers[question]
        return answer(prompt) if callable(answer) else answer

    def _per_turn(self, body: str) -> Any:
        """The batched question answered turn by turn, as the per-turn question would be: the same verdicts."""
        answer = self.answers["hallucination"]
        return answer(fenced("agent_turn", body, "0" * 16)) if callable(answer) else answer

    def prompts(self, question: str) -> list[str]:
        return [prompt for name, prompt in self.asked if name == question]


def marked_turns(prompt: str) -> list[tuple[int, str]]:
    """The turns a batched hallucination prompt marks for judging: their numbers and their events (without the
    mark), as the per-turn prompt shows a turn."""
    turns: dict[int, list[str]] = {}
    for event in events_in(prompt):
        if event.pop("judge", False):
            turns.setdefault(event["turn"], []).append(json.dumps(event, ensure_ascii=False))
    return [(number, "\n".join(lines)) for number, lines in turns.items()]


def agent_texts(prompt: str, name: str = "conversation") -> list[str]:
    """The agent's messages in the fenced section ``name`` of a prompt."""
    return [event["text"] for event in events_in(prompt, name) if event["role"] == "agent"]


def quoting(reply: dict[str, Any]) -> Callable[[str], StaticReply]:
    """A judge's pass that quotes the last agent message of the conversation it was shown, as its evidence."""
    return lambda prompt: {**reply, "quote": agent_texts(prompt)[-1]}


PER_TURN = JudgingSettings(batch=False)
SUPPORTED: StaticReply = {"verdict": "supported", "claim": "", "reason": "The lookup shows it."}
SATISFIED = quoting({"satisfied": True, "reason": "The user got the date."})


def score(
    case_data: dict[str, Any],
    transcript_: Transcript,
    judge: LLMJudge | FakeJudge | None = None,
    context: ScoringContext | None = None,
) -> list[Score]:
    llm_judge = judge.judge if isinstance(judge, FakeJudge) else judge or LLMJudge(None)
    return asyncio.run(score_transcript(case(case_data), transcript_, context or ScoringContext(), llm_judge))


def row(s: Score) -> tuple[str, str, str, str, float | None, bool]:
    return (s.metric, s.check, s.source, s.verdict, s.value, s.required)


def only(scores: Sequence[Score], check: str) -> Score:
    (found,) = [s for s in scores if s.check == check]
    return found


def of(scores: Sequence[Score], metric: str) -> list[Score]:
    return [s for s in scores if s.metric == metric]


# -- a simulation without a judge model ----------------------------------------------------------------------

GOAL = "Find out when order A1 arrives"
CRITERIA = "The agent gives the delivery date."
SIMULATION: dict[str, Any] = {
    "kind": "simulation",
    "name": "order status",
    "steps": [
        {"goal": GOAL, "success_criteria": CRITERIA, "checks": [{"must_contain": ["5 May"]}]},
        {"static_utterance": "Thanks, bye!"},
    ],
}
STEP_1 = outcome(0, GOAL, rationale="must_contain (all, substring): '5 May': found '5 May'")
STEP_2 = outcome(1, "say: Thanks, bye!", rationale="the step sets no success criteria: complete once the agent replied")
CONVERSATION: list[TranscriptEvent] = [
    user(1, "When does my order A1 arrive?", step=0),
    agent(1, "Your order A1 arrives on 5 May.", step=0, calls=[call("lookup_order", order_id="A1")]),
    user(2, "Thanks, bye!", step=1),
    agent(2, "You're welcome, goodbye!", step=1),
]
GOAL_TEXT = f"{GOAL} (satisfied when: {CRITERIA})"
GOAL_CHECK = f"user goal: {GOAL_TEXT[:79]}…"  # labels shorten the goal to 80 characters


def simulation(*events: TranscriptEvent, **options: Any) -> Transcript:
    options.setdefault("steps", [STEP_1, STEP_2])
    return transcript("simulation", *(events or CONVERSATION), **options)


def test_a_simulation_without_a_judge_every_score_with_its_evidence() -> None:
    data = {
        **SIMULATION,
        "expectations": [
            {"text": "looks up the order", "tool_call": {"name": "lookup_order", "arguments": {"order_id": "A1"}}},
            {"text": "no refund talk", "must_not_contain": ["refund"]},
            {"text": "says the weekday", "must_contain": ["Monday"]},
            "The agent is polite.",
        ],
    }
    scores = score(data, simulation())
    assert [row(s) for s in scores] == [
        ("goal_achievement", f"step 1: {GOAL}", "engine", "met", 1.0, True),
        ("goal_achievement", "step 2: say: Thanks, bye!", "engine", "met", 1.0, True),
        ("expectation", "looks up the order", "deterministic", "met", None, True),
        ("expectation", "no refund talk", "deterministic", "met", None, True),
        ("expectation", "says the weekday", "deterministic", "not_met", None, True),
        # What the author wrote stays required, judged or not.
        ("expectation", "expectation: The agent is polite.", "judge", "unsure", None, True),
        # The questions asked of every case are reported as not judged, but hold it only with a judge model.
        ("hallucination", "turn 1: hallucination", "judge", "unsure", None, False),
        ("hallucination", "turn 2: hallucination", "judge", "unsure", None, False),
        # The engine's step outcomes stand for the goal without a judge model.
        ("goal_satisfaction", GOAL_CHECK, "judge", "unsure", None, False),
    ]
    reasons = [s.reason for s in scores]
    assert reasons[:5] == [
        STEP_1.rationale,
        STEP_2.rationale,
        'called lookup_order({"order_id": "A1"}) [faked]',
        "none of the terms appears",
        "missing 'Monday'",
    ]
    assert reasons[5:] == [NO_JUDGE] * 4
    assert [(s.turn, s.step) for s in of(scores, "hallucination")] == [(1, 0), (2, 1)]
    assert [s.step for s in of(scores, "goal_achievement")] == [0, 1]
    assert case_outcome(simulation(), scores) == ("fail", ["says the weekday: missing 'Monday'"])


def test_all_steps_complete_and_only_automatic_questions_unjudged_passes() -> None:
    # The per-turn hallucination and goal questions are unsure without a judge model, but not required.
    scores = score(SIMULATION, simulation())
    assert [(s.metric, s.verdict, s.required) for s in scores if s.source == "judge"] == [
        ("hallucination", "unsure", False),
        ("hallucination", "unsure", False),
        ("goal_satisfaction", "unsure", False),
    ]
    assert case_outcome(simulation(), scores) == ("pass", [])


def test_all_steps_complete_with_an_unjudged_written_expectation_is_unsure() -> None:
    data = {**SIMULATION, "expectations": ["The agent is polite."]}
    scores = score(data, simulation())
    assert case_outcome(simulation(), scores) == ("unsure", [f"expectation: The agent is polite.: {NO_JUDGE}"])


def unsupported(prompt: str) -> StaticReply:
    """A hallucination verdict quoting the judged turn's message."""
    said = agent_texts(prompt, "agent_turn")[-1]
    return {"verdict": "unsupported", "claim": said, "reason": "No date was looked up."}


def test_all_steps_complete_with_a_judged_hallucination_is_held_to_it() -> None:
    fake = FakeJudge(hallucination=unsupported, goal_satisfaction=SATISFIED)
    scores = score(SIMULATION, simulation(), fake)
    assert [(s.verdict, s.required) for s in of(scores, "hallucination")] == [("not_met", True), ("not_met", True)]
    assert case_outcome(simulation(), scores)[0] == "fail"


def test_a_failed_step_fails_the_case_and_blocks_the_next() -> None:
    failed = outcome(0, GOAL, "incomplete", "not_met", "not met within 3 turns; last check: not_met: missing '5 May'")
    blocked = StepOutcome(
        index=1,
        label="say: Thanks, bye!",
        status="blocked",
        rationale=f"blocked: step 1 ({GOAL}) was not completed (step_failed)",
        blocked_by=0,
        blocked_by_goal=GOAL,
    )
    t = simulation(
        CONVERSATION[0], agent(1, "I don't know.", step=0), steps=[failed, blocked], stop_reason="step_failed"
    )
    scores = score(SIMULATION, t)
    assert [row(s) for s in of(scores, "goal_achievement")] == [
        ("goal_achievement", f"step 1: {GOAL}", "engine", "not_met", 0.0, True),
        ("goal_achievement", "step 2: say: Thanks, bye!", "engine", "not_met", 0.0, True),
    ]
    assert case_outcome(t, scores) == (
        "fail",
        [f"step 1: {GOAL}: {failed.rationale}", f"step 2: say: Thanks, bye!: {blocked.rationale}"],
    )


@pytest.mark.parametrize(
    ("status", "verdict", "expected"),
    [
        ("complete", "met", "met"),
        ("incomplete", "not_met", "not_met"),
        ("incomplete", "unsure", "not_met"),  # the status decides: incomplete is the agent's failure
        ("incomplete", None, "not_met"),
        ("incomplete", "met", "not_met"),  # never met unless complete
        ("unsure", "unsure", "unsure"),
        ("unsure", None, "unsure"),
        ("blocked", None, "not_met"),
        ("not_reached", None, "unsure"),
        ("not_attempted", None, "unsure"),
    ],
)
def test_an_engine_step_outcome_becomes_a_goal_achievement_verdict(
    status: StepStatus, verdict: Verdict | None, expected: str
) -> None:
    t = simulation(steps=[outcome(0, GOAL, status, verdict, "why"), STEP_2])
    (first, _) = of(score(SIMULATION, t), "goal_achievement")
    assert (first.verdict, first.value, first.reason, first.required) == (
        expected,
        {"met": 1.0, "not_met": 0.0}.get(expected),  # undecided steps have no value
        "why",
        True,
    )


def test_an_unjudged_step_makes_the_case_unsure() -> None:
    unsure = outcome(0, GOAL, "unsure", "unsure", f"judge: success_criteria: {CRITERIA}: {NO_JUDGE}")
    t = simulation(steps=[unsure, STEP_2], stop_reason="completed")
    data = {**SIMULATION, "thresholds": {"fail_on_hallucination": False}}
    assert case_outcome(t, score(data, t)) == ("unsure", [f"step 1: {GOAL}: {unsure.rationale}"])


def test_a_run_that_stopped_with_an_error_is_an_error_whatever_else_failed() -> None:
    failed = outcome(0, GOAL, "incomplete", "not_met", "the conversation stopped (error) before this step was complete")
    t = simulation(
        CONVERSATION[0],
        steps=[failed],
        stop_reason="error",
        error="the agent failed: HTTP 500 from http://localhost:8000/chat",
    )
    scores = score(SIMULATION, t)
    assert only(scores, f"step 1: {GOAL}").verdict == "not_met"
    assert case_outcome(t, scores) == ("error", ["the agent failed: HTTP 500 from http://localhost:8000/chat"])


@pytest.mark.parametrize(
    ("stop_reason", "expected"),
    [
        ("turn_cap", ("run", "turn cap", "engine", "not_met", "the conversation hit the cap of 2 turns")),
        (
            "needs_approval",
            (
                "run",
                "approval",
                "engine",
                "unsure",
                "stopped for a person's approval of issue_refund: nothing after it was tested",
            ),
        ),
    ],
)
def test_how_the_run_stopped_is_a_score(stop_reason: StopReason, expected: tuple[str, ...]) -> None:
    events = [
        *CONVERSATION[:3],
        agent(2, "Let me refund that.", step=1, calls=[call("issue_refund", "needs_approval")]),
    ]
    scores = score(SIMULATION, simulation(*events, stop_reason=stop_reason))
    (run,) = of(scores, "run")
    assert (run.metric, run.check, run.source, run.verdict, run.reason) == expected


# -- hallucination: flagged tool claims, the setting ---------------------------------------------------------

CLAIM = "According to our delivery system, order A1 arrives on 5 May."
CLAIM_REASON = "claims “According to our delivery system” but no tool was called in the conversation"


def test_a_flagged_tool_claim_is_a_deterministic_hallucination() -> None:
    t = simulation(CONVERSATION[0], agent(1, CLAIM, step=0), *CONVERSATION[2:])
    scores = score(SIMULATION, t)
    flagged = only(scores, "turn 1: hallucination")
    assert row(flagged) == ("hallucination", "turn 1: hallucination", "deterministic", "not_met", 1.0, True)
    assert (flagged.reason, flagged.turn, flagged.step) == (CLAIM_REASON, 1, 0)
    unflagged = only(scores, "turn 2: hallucination")  # left to the judge, and there is none
    assert (unflagged.source, unflagged.verdict, unflagged.required) == ("judge", "unsure", False)
    assert case_outcome(t, scores) == ("fail", [f"turn 1: hallucination: {CLAIM_REASON}"])


def test_a_flagged_turn_is_not_sent_to_the_judge() -> None:
    fake = FakeJudge(hallucination=SUPPORTED, goal_satisfaction=SATISFIED)
    t = simulation(CONVERSATION[0], agent(1, CLAIM, step=0), *CONVERSATION[2:])
    scores = score(SIMULATION, t, fake)
    assert [(s.check, s.source, s.verdict) for s in of(scores, "hallucination")] == [
        ("turn 1: hallucination", "deterministic", "not_met"),
        ("turn 2: hallucination", "judge", "met"),
    ]
    (prompt,) = fake.prompts("conversation_review")  # the one turn left rides with the goal question
    assert [number for number, _ in marked_turns(prompt)] == [2]
    assert "You're welcome, goodbye!" in agent_texts(prompt)


def test_a_claim_naming_a_declared_tool_that_never_ran() -> None:
    events: list[TranscriptEvent] = [
        user(1, "When does A1 arrive, and is Monday a holiday?", step=0),
        agent(1, "According to the holiday lookup, Monday is a holiday.", step=0, calls=[call("lookup_order")]),
    ]
    context = ScoringContext(declared_tools=["lookup_order", "lookup_holidays"])
    flagged = only(score(SIMULATION, simulation(*events), context=context), "turn 1: hallucination")
    assert (flagged.source, flagged.verdict, flagged.value) == ("deterministic", "not_met", 1.0)
    assert flagged.reason == "claims “According to the holiday lookup” but lookup_holidays was never called"
    # Without the declared tools the claim names no tool, and lookup_order ran: left to the judge.
    assert only(score(SIMULATION, simulation(*events)), "turn 1: hallucination").verdict == "unsure"


@pytest.mark.parametrize("where", ["case", "suite"])
def test_fail_on_hallucination_false_makes_hallucination_scores_not_required(where: str) -> None:
    t = simulation(CONVERSATION[0], agent(1, CLAIM, step=0), *CONVERSATION[2:])
    data = {**SIMULATION, "thresholds": {"fail_on_hallucination": False}} if where == "case" else SIMULATION
    context = ScoringContext(thresholds=Thresholds(fail_on_hallucination=where != "suite"))
    scores = score(data, t, context=context)
    assert [(s.source, s.verdict, s.required) for s in of(scores, "hallucination")] == [
        ("deterministic", "not_met", False),
        ("judge", "unsure", False),
    ]
    assert case_outcome(t, scores) == ("pass", [])
    fake = FakeJudge(
        hallucination={"verdict": "unsupported", "claim": "bye", "reason": "r"}, goal_satisfaction=SATISFIED
    )
    judged = score(data, t, fake, context)
    assert [(s.source, s.verdict, s.required) for s in of(judged, "hallucination")] == [
        ("deterministic", "not_met", False),
        ("judge", "not_met", False),
    ]
    assert case_outcome(t, judged) == ("pass", [])


def test_a_turn_without_a_message_gets_no_hallucination_score() -> None:
    events = [*CONVERSATION[:2], user(2, "Thanks, bye!", step=1), agent(2, " ", step=1, calls=[call("close_ticket")])]
    scores = score(SIMULATION, simulation(*events))
    assert [s.check for s in of(scores, "hallucination")] == ["turn 1: hallucination"]


# -- hallucination and goal satisfaction with the fake judge -------------------------------------------------


def by_turn(prompt: str) -> StaticReply:
    turn = section(prompt, "agent_turn")
    if "9 May" in turn:
        return {"verdict": "unsupported", "claim": "It arrives on 9 May.", "reason": "The lookup said 5 May."}
    if "Anything else?" in turn:
        return {"verdict": "no_claim", "claim": "", "reason": "Only a question."}
    return SUPPORTED


def test_hallucination_verdicts_map_to_1_0_and_n_a() -> None:
    fake = FakeJudge(hallucination=by_turn, goal_satisfaction=SATISFIED)
    events = [
        *CONVERSATION[:2],
        user(2, "Are you sure?", step=0),
        agent(2, "Sorry: it arrives on 9 May.", step=0),
        user(3, "Thanks, bye!", step=1),
        agent(3, "Anything else?", step=1),
    ]
    scores = score(SIMULATION, simulation(*events), fake)
    assert [(s.check, s.source, s.verdict, s.value, s.required) for s in of(scores, "hallucination")] == [
        ("turn 1: hallucination", "judge", "met", 0, True),
        ("turn 2: hallucination", "judge", "not_met", 1, True),
        ("turn 3: hallucination", "judge", "n/a", None, True),
    ]
    assert only(scores, "turn 2: hallucination").reason == (
        "unsupported claim: “It arrives on 9 May.”: The lookup said 5 May."
    )
    assert case_outcome(simulation(*events), scores) == (
        "fail",
        ["turn 2: hallucination: unsupported claim: “It arrives on 9 May.”: The lookup said 5 May."],
    )


def test_the_hallucination_judge_sees_instructions_session_variables_and_tool_results() -> None:
    fake = FakeJudge(hallucination=SUPPORTED, goal_satisfaction=SATISFIED)
    # Reads the per-turn prompts on purpose: asked one request per turn (the batched prompt is tested below).
    context = ScoringContext(instructions="You are the shop's order assistant.", judging=PER_TURN)
    t = simulation(session_parameters={"customer_id": 7})
    score(SIMULATION, t, fake, context)
    first, second = fake.prompts("hallucination")
    assert section(first, "context").splitlines()[:3] == [
        "AGENT INSTRUCTIONS: You are the shop's order assistant.",
        "SESSION VARIABLES: {'customer_id': 7}",
        '{"turn": 1, "role": "user", "text": "When does my order A1 arrive?"}',
    ]
    assert events_in(first, "agent_turn") == [
        {"turn": 1, "role": "tool_call", "name": "lookup_order", "arguments": {"order_id": "A1"}, "status": "faked",
         "result": {"ok": True}},
        {"turn": 1, "role": "agent", "text": "Your order A1 arrives on 5 May."},
    ]  # fmt: skip
    assert "Thanks, bye!" in section(second, "context")
    assert "Thanks, bye!" not in section(first, "context")  # nothing from later turns


@pytest.mark.parametrize(
    ("satisfied", "verdict", "value", "outcome_"), [(True, "met", 1, "pass"), (False, "not_met", 0, "fail")]
)
def test_a_judged_goal_satisfaction_is_required(satisfied: bool, verdict: str, value: int, outcome_: str) -> None:
    fake = FakeJudge(hallucination=SUPPORTED, goal_satisfaction=quoting({"satisfied": satisfied, "reason": "judged"}))
    scores = score(SIMULATION, simulation(), fake)
    goal = only(scores, GOAL_CHECK)
    assert (goal.metric, goal.source, goal.verdict, goal.value, goal.required) == (
        "goal_satisfaction",
        "judge",
        verdict,
        value,
        True,
    )
    assert case_outcome(simulation(), scores)[0] == outcome_
    (prompt,) = fake.prompts("conversation_review")
    assert section(prompt, "user_goal") == GOAL_TEXT  # the model reads the whole goal, criteria included
    assert "You're welcome, goodbye!" in agent_texts(prompt)


SCENARIO: dict[str, Any] = {"kind": "scenario", "name": "refund", "goal": "Get a refund for order A1"}
REFUND_EVENTS: list[TranscriptEvent] = [
    user(1, "I want a refund for A1."),
    agent(1, "Done: the refund of 23,60 € is on its way.", calls=[call("issue_refund", order_id="A1")]),
]


def scenario(status: StepStatus, verdict: Verdict | None, rationale: str) -> Transcript:
    stop: StopReason = "completed" if status == "complete" else "max_turns"
    steps = [outcome(0, "Get a refund for order A1", status, verdict, rationale)]
    return transcript("scenario", *REFUND_EVENTS, steps=steps, stop_reason=stop)


def test_a_scenario_goal_text_includes_its_success_criteria() -> None:
    data = {
        **SCENARIO,
        "success_criteria": "The agent issues the refund.",
        "thresholds": {"fail_on_hallucination": False},
    }
    fake = FakeJudge(hallucination=SUPPORTED, goal_satisfaction=SATISFIED)
    t = scenario("complete", "met", "judge: success_criteria: The agent issues the refund.: the refund ran")
    scores = score(data, t, fake)
    assert [row(s) for s in scores] == [
        ("goal_achievement", "goal: Get a refund for order A1", "engine", "met", 1.0, True),
        ("hallucination", "turn 1: hallucination", "judge", "met", 0, False),
        (
            "goal_satisfaction",
            "user goal: Get a refund for order A1 (satisfied when: The agent issues the refund.)",
            "judge",
            "met",
            1,
            True,
        ),
    ]
    assert section(fake.prompts("conversation_review")[0], "user_goal") == (
        "Get a refund for order A1 (satisfied when: The agent issues the refund.)"
    )


@pytest.mark.parametrize(
    ("data", "step", "expected"),
    [
        # A scenario with checks: the engine decided the goal; goal satisfaction cannot be judged and is not needed.
        pytest.param(
            {"checks": [{"must_contain": ["refund"]}]},
            ("complete", "met"),
            ("met", True, False, "pass"),
            id="checks, met",
        ),
        pytest.param(
            {"checks": [{"must_contain": ["voucher"]}]},
            ("incomplete", "not_met"),
            ("not_met", True, False, "fail"),
            id="checks, not met",
        ),
        # An open scenario (no checks, no criteria): the simulated user ended it saying the goal was reached.
        pytest.param({}, ("complete", "met"), ("met", True, False, "pass"), id="open, the user reached the goal"),
        # An open scenario that ran out of turns: the engine had nothing to check, only a judge could decide, so
        # the engine's verdict does not hold the case and the unjudged goal satisfaction does.
        pytest.param({}, ("incomplete", None), ("not_met", False, True, "unsure"), id="open, out of turns"),
    ],
)
def test_scenario_goal_without_a_judge(
    data: dict[str, Any], step: tuple[StepStatus, Verdict | None], expected: tuple[str, bool, bool, str]
) -> None:
    case_data = {**SCENARIO, **data, "thresholds": {"fail_on_hallucination": False}}
    t = scenario(*step, "why")
    scores = score(case_data, t)
    (goal,) = of(scores, "goal_achievement")
    (satisfaction,) = of(scores, "goal_satisfaction")
    assert goal.check == "goal: Get a refund for order A1"
    assert (satisfaction.check, satisfaction.verdict, satisfaction.reason) == (
        "user goal: Get a refund for order A1",
        "unsure",
        NO_JUDGE,
    )
    assert (goal.verdict, goal.required, satisfaction.required, case_outcome(t, scores)[0]) == expected


@pytest.mark.parametrize(("satisfied", "expected"), [(True, "pass"), (False, "fail")])
def test_an_open_scenario_out_of_turns_is_decided_by_the_judge(satisfied: bool, expected: str) -> None:
    fake = FakeJudge(hallucination=SUPPORTED, goal_satisfaction=quoting({"satisfied": satisfied, "reason": "judged"}))
    t = scenario("incomplete", None, "the conversation stopped (max_turns) before this step was complete")
    scores = score(SCENARIO, t, fake)
    (goal,) = of(scores, "goal_achievement")
    (satisfaction,) = of(scores, "goal_satisfaction")
    assert (goal.verdict, goal.required) == ("not_met", False)
    assert (satisfaction.verdict, satisfaction.required) == ("met" if satisfied else "not_met", True)
    assert case_outcome(t, scores)[0] == expected


def test_goal_description() -> None:
    sim = case(
        {
            "kind": "simulation",
            "name": "s",
            "steps": [
                {"goal": "Say hello"},
                {"static_utterance": "My order is A1."},
                {"goal": "Get a refund", "success_criteria": "The refund is issued."},
            ],
        }
    )
    assert goal_description(sim) == "Say hello; Get a refund (satisfied when: The refund is issued.)"
    assert goal_description(case({**SCENARIO, "success_criteria": "Refunded."})) == (
        "Get a refund for order A1 (satisfied when: Refunded.)"
    )
    assert goal_description(case(GOLDEN_DATA)) is None
    assert goal_description(case({"kind": "simulation", "name": "s", "steps": [{"static_utterance": "Hi"}]})) is None


def test_a_simulation_without_goals_scores_goal_satisfaction_n_a() -> None:
    data = {"kind": "simulation", "name": "s", "steps": [{"static_utterance": "Hi"}]}
    t = transcript("simulation", user(1, "Hi", 0), agent(1, "Hello!", step=0), steps=[outcome(0, "say: Hi")])
    fake = FakeJudge(hallucination={"verdict": "no_claim", "claim": "", "reason": "A greeting."})
    (goal,) = of(score(data, t, fake), "goal_satisfaction")
    assert (goal.check, goal.source, goal.verdict, goal.value) == ("user goal", "deterministic", "n/a", -1)
    assert fake.prompts("goal_satisfaction") == []


def test_a_long_goal_is_shortened_in_the_check_label() -> None:
    goal = "Find out when order A1 arrives and whether it can be delivered to the neighbour instead of the house"
    (satisfaction,) = of(score({**SCENARIO, "goal": goal}, scenario("complete", "met", "")), "goal_satisfaction")
    assert satisfaction.check == "user goal: " + goal[:79] + "…"


# -- expectations: scoped to a step or turn, or on the whole conversation -----------------------------------

DATE_IN_STEP_2: list[TranscriptEvent] = [
    user(1, "When does my order A1 arrive?", step=0),
    agent(1, "Let me check order A1.", step=0, calls=[call("lookup_order", order_id="A1")]),
    user(2, "So when?", step=1),
    agent(2, "It arrives on 5 May.", step=1),
]


def test_an_expectation_a_step_refers_to_is_checked_on_that_steps_replies_only() -> None:
    data = {
        "kind": "simulation",
        "name": "s",
        "steps": [
            {"goal": "Ask about A1", "expectations": ["Gives the date"]},
            {"goal": "Insist", "expectations": ["  gives THE date "]},  # references compare loosely
        ],
        "expectations": [
            {"text": "Gives the date", "must_contain": ["5 May"]},
            {"text": "Mentions the date somewhere", "must_contain": ["5 May"]},
        ],
        "thresholds": {"fail_on_hallucination": False},
    }
    t = transcript("simulation", *DATE_IN_STEP_2, steps=[outcome(0, "Ask about A1"), outcome(1, "Insist")])
    scores = of(score(data, t), "expectation")
    assert [(s.check, s.verdict, s.step, s.turn) for s in scores] == [
        ("step 1: Gives the date", "not_met", 0, None),
        ("step 2: Gives the date", "met", 1, None),
        ("Mentions the date somewhere", "met", None, None),  # not referenced: the whole conversation
    ]
    assert scores[0].reason == "missing '5 May'"
    assert scores[1].reason == "found '5 May' in “It arrives on 5 May.”"


def test_a_plain_text_expectation_a_step_refers_to_keeps_its_step() -> None:
    data = {**SIMULATION, "expectations": ["The agent is polite."]}
    data["steps"] = [{**data["steps"][0], "expectations": ["The agent is polite."]}, data["steps"][1]]
    fake = FakeJudge(
        hallucination=SUPPORTED, goal_satisfaction=SATISFIED, expectation=quoting({"verdict": "met", "reason": "Kind."})
    )
    scores = score(data, simulation(), fake)
    (polite,) = of(scores, "expectation")
    assert (polite.check, polite.source, polite.verdict, polite.reason, polite.step) == (
        "step 1: expectation: The agent is polite.",
        "judge",
        "met",
        "Kind.",
        0,
    )
    (prompt,) = fake.prompts("expectation")
    assert section(prompt, "expectation") == "The agent is polite."
    unjudged = only(score(data, simulation()), "step 1: expectation: The agent is polite.")
    assert (unjudged.verdict, unjudged.reason, unjudged.step) == ("unsure", NO_JUDGE, 0)


def test_a_plain_text_expectation_of_a_step_is_judged_without_later_steps() -> None:
    data = {
        "kind": "simulation",
        "name": "s",
        "steps": [{"goal": "Ask about A1", "expectations": ["The agent gives the date."]}, {"goal": "Insist"}],
        "expectations": ["The agent gives the date."],
        "thresholds": {"fail_on_hallucination": False},
    }
    fake = FakeJudge(
        hallucination=SUPPORTED, goal_satisfaction=SATISFIED, expectation=quoting({"verdict": "met", "reason": "r"})
    )
    score(data, transcript("simulation", *DATE_IN_STEP_2, steps=[outcome(0, "a"), outcome(1, "b")]), fake)
    (prompt,) = fake.prompts("expectation")
    assert "Let me check order A1." in agent_texts(prompt)
    assert "It arrives on 5 May." not in section(prompt, "conversation")


@pytest.mark.parametrize(("judged", "verdict"), [(4, "met"), (3, "met"), (2, "not_met")])
def test_a_message_expectation_is_a_semantic_match_on_its_scope(judged: int, verdict: str) -> None:
    data = {
        **SIMULATION,
        "steps": [{**SIMULATION["steps"][0], "expectations": ["confirms the date"]}, SIMULATION["steps"][1]],
        "expectations": [{"text": "confirms the date", "message": "Order A1 will arrive on 5 May."}],
    }
    fake = FakeJudge(
        hallucination=SUPPORTED, goal_satisfaction=SATISFIED, semantic_match={"score": judged, "reason": "compared"}
    )
    (match,) = of(score(data, simulation(), fake), "semantic_match")
    assert (match.check, match.verdict, match.value, match.threshold, match.step) == (
        "step 1: semantic match with: Order A1 will arrive on 5 May.",
        verdict,
        judged,
        3,
        0,
    )
    (prompt,) = fake.prompts("semantic_match")
    assert section(prompt, "actual_message") == "Your order A1 arrives on 5 May."  # step 1's reply only


def test_a_fractional_expectation_threshold_is_not_truncated() -> None:
    data = {
        **SIMULATION,
        "expectations": [{"text": "date", "message": "Order A1 will arrive on 5 May.", "threshold": 3.5}],
    }
    fake = FakeJudge(
        hallucination=SUPPORTED, goal_satisfaction=SATISFIED, semantic_match={"score": 3, "reason": "close"}
    )
    (match,) = of(score(data, simulation(), fake), "semantic_match")
    assert (match.verdict, match.threshold) == ("not_met", 3.5)


def test_a_case_threshold_overrides_only_the_fields_it_sets() -> None:
    data = {**SIMULATION, "thresholds": {"semantic_match": 4}}
    context = ScoringContext(thresholds=Thresholds(fail_on_hallucination=False))
    t = simulation(CONVERSATION[0], agent(1, CLAIM, step=0), *CONVERSATION[2:])
    flagged = only(score(data, t, context=context), "turn 1: hallucination")
    assert (flagged.source, flagged.required) == ("deterministic", False)


def test_structured_case_expectations_variable_and_handoff() -> None:
    data = {
        **SIMULATION,
        "expectations": [
            {"variable": {"name": "order_status", "value": "shipped"}},
            {"text": "customer known", "variable": {"name": "customer_id", "value": 7}},
            {"variable": {"name": "priority", "value": 1}},
            {"handoff": {"to": "Human"}},
            {"tool_call": {"name": "issue_refund"}, "after": "lookup_order"},
        ],
    }
    events = [
        *CONVERSATION[:3],
        agent(2, "A colleague takes over.", step=1, handoff="human", variables={"order_status": "shipped"}),
    ]
    scores = of(score(data, simulation(*events, session_parameters={"customer_id": 7})), "expectation")
    assert [(s.check, s.verdict, s.reason) for s in scores] == [
        ("variable order_status = 'shipped'", "met", "order_status = 'shipped'"),
        ("customer known", "met", "customer_id = 7"),
        ("variable priority = 1", "not_met", "priority is not set"),
        ("handoff to Human", "met", "handed off to human"),
        (
            "tool_call: issue_refund after lookup_order",
            "not_met",
            'issue_refund was not called (lookup_order({"order_id": "A1"}) [faked])',
        ),
    ]


# -- golden cases ---------------------------------------------------------------------------------------------

GOLDEN_DATA: dict[str, Any] = {
    "kind": "golden",
    "name": "golden",
    "turns": [{"user": "Where is my order A1?", "expect": {"message": "Your order A1 arrives on 5 May."}}],
}


def golden(*turns: dict[str, Any], **extra: Any) -> dict[str, Any]:
    return {"kind": "golden", "name": "golden", "turns": list(turns), **extra}


def exchange(turn: int, question: str, *messages: str, **reply: Any) -> list[TranscriptEvent]:
    return [UserEvent(turn=turn, text=question, source="golden"), agent(turn, *messages, **reply)]


def golden_transcript(*exchanges: list[TranscriptEvent], **options: Any) -> Transcript:
    return transcript("golden", *(event for pair in exchanges for event in pair), **options)


def test_golden_semantic_match_through_the_judge_and_the_exact_text_shortcut() -> None:
    data = golden(
        {"user": "Where is my order A1?", "expect": {"message": "Your order A1 arrives on 5 May."}},
        {"user": "Thanks!", "expect": {"message": "You're welcome!"}},
    )
    t = golden_transcript(
        exchange(1, "Where is my order A1?", "A1 will be with you on May 5th.", calls=[call("lookup_order")]),
        exchange(2, "Thanks!", "  you're   WELCOME! "),
    )
    data["turns"][0]["expect"]["tool_calls"] = [{"name": "lookup_order"}]
    fake = FakeJudge(hallucination=SUPPORTED, semantic_match={"score": 3, "reason": "Same date, other words."})
    scores = score(data, t, fake)
    first, second = of(scores, "semantic_match")
    assert (first.check, first.source, first.verdict, first.value, first.threshold, first.turn, first.reason) == (
        "turn 1: semantic match with: Your order A1 arrives on 5 May.",
        "judge",
        "met",
        3,
        3,
        1,
        "Same date, other words.",
    )
    assert (second.check, second.source, second.verdict, second.value, second.turn, second.reason) == (
        "turn 2: semantic match with: You're welcome!",
        "deterministic",
        "met",
        4,
        2,
        "the reply is the expected message (same text, ignoring case and whitespace)",
    )
    (prompt,) = fake.prompts("semantic_match")  # the identical text was not sent
    assert section(prompt, "actual_message") == "A1 will be with you on May 5th."
    assert section(prompt, "expected_message") == "Your order A1 arrives on 5 May."
    assert [s.metric for s in scores] == [
        "semantic_match",
        "tool_call_correctness",
        "tool_order",
        "semantic_match",
        "hallucination",
        "hallucination",
    ]
    assert case_outcome(t, scores) == ("pass", [])
    # Without a judge model the shortcut still decides; the other match is unsure.
    unjudged = of(score(data, t), "semantic_match")
    assert [(s.verdict, s.reason) for s in unjudged] == [("unsure", NO_JUDGE), ("met", second.reason)]


def test_a_golden_turn_is_judged_with_the_conversation_up_to_it_never_its_own_reply_or_later_turns() -> None:
    data = golden(
        {"user": "Where is my order A1?", "expect": {"message": "Your order A1 arrives on 5 May."}},
        {"user": "Can I change the address?", "expect": {"message": "Yes, until it ships."}},
    )
    first_reply, second_reply = "A1 will be with you on May 5th.", "Sure, as long as it has not shipped."
    t = golden_transcript(
        exchange(1, "Where is my order A1?", first_reply), exchange(2, "Can I change the address?", second_reply)
    )
    fake = FakeJudge(hallucination=SUPPORTED, semantic_match={"score": 3, "reason": "Same meaning."})
    score(data, t, fake)
    first, second = fake.prompts("semantic_match")
    # Turn 1: its own question as context, its reply only as the message compared, nothing of turn 2.
    assert "Where is my order A1?" in first
    assert first.count(first_reply) == 1
    assert "Can I change the address?" not in first
    assert second_reply not in first
    # Turn 2: turn 1 as context, and its own reply once.
    assert first_reply in second
    assert second.count(second_reply) == 1


def test_golden_semantic_match_is_held_to_the_case_threshold() -> None:
    data = {**GOLDEN_DATA, "thresholds": {"semantic_match": 4}}
    t = golden_transcript(exchange(1, "Where is my order A1?", "A1 will be with you on May 5th."))
    fake = FakeJudge(hallucination=SUPPORTED, semantic_match={"score": 3, "reason": "Close."})
    (match,) = of(score(data, t, fake), "semantic_match")
    assert (match.verdict, match.value, match.threshold) == ("not_met", 3, 4)


RETURN_CLAIMS = ["Returns are free of charge.", "Returns are accepted for 90 days."]


def reference_or_side_claim(prompt: str) -> StaticReply:
    if prompt.startswith("You grade one answer"):
        return {"score": 90, "verdict": "pass", "reason": "Same 30-day period."}
    claim = section(prompt, "claim")
    if claim == RETURN_CLAIMS[0]:
        return {"stated": "yes", "quote": "returns are free", "reason": "It says so."}
    return {"stated": "no", "quote": "", "reason": "The answer says 30 days."}


def test_golden_reference_answer_with_a_side_claim() -> None:
    data = golden(
        {
            "user": "Can I return order A1?",
            "expect": {
                "reference_answer": {"answer": "Yes, within 30 days of delivery.", "must_not_state": RETURN_CLAIMS}
            },
        }
    )
    answer = "Yes, you can return it within 30 days, and returns are free."
    t = golden_transcript(exchange(1, "Can I return order A1?", answer))
    fake = FakeJudge(
        hallucination=SUPPORTED,
        reference_answer=reference_or_side_claim,
        side_claim=reference_or_side_claim,
    )
    scores = score(data, t, fake)
    judged = [s for s in scores if s.metric in ("reference_answer", "side_claim")]
    assert [(s.metric, s.check, s.verdict, s.value, s.threshold, s.turn) for s in judged] == [
        ("reference_answer", "turn 1: reference answer: Yes, within 30 days of delivery.", "met", 90, 70, 1),
        ("side_claim", "turn 1: must not state: Returns are free of charge.", "not_met", None, None, 1),
        ("side_claim", "turn 1: must not state: Returns are accepted for 90 days.", "met", None, None, 1),
    ]
    assert judged[1].reason == "the answer states it: “returns are free”: It says so."
    assert len(fake.prompts("reference_answer")) == 1
    assert sorted(section(p, "claim") for p in fake.prompts("side_claim")) == sorted(RETURN_CLAIMS)
    for prompt in fake.prompts("reference_answer") + fake.prompts("side_claim"):
        assert section(prompt, "question") == "Can I return order A1?"
        assert section(prompt, "agent_answer") == answer
    assert case_outcome(t, scores) == (
        "fail",
        ["turn 1: must not state: Returns are free of charge.: the answer states it: “returns are free”: It says so."],
    )


def test_golden_side_claim_quoting_words_the_answer_does_not_have_is_unsure() -> None:
    data = golden(
        {
            "user": "Can I return order A1?",
            "expect": {"reference_answer": {"answer": "Yes, within 30 days.", "must_not_state": RETURN_CLAIMS[:1]}},
        }
    )
    t = golden_transcript(exchange(1, "Can I return order A1?", "Yes, you can return it within 30 days."))
    fake = FakeJudge(
        hallucination=SUPPORTED,
        reference_answer=reference_or_side_claim,
        side_claim=reference_or_side_claim,  # says "yes", quoting "returns are free"
    )
    scores = score(data, t, fake)
    side = only(scores, "turn 1: must not state: Returns are free of charge.")
    expected = "the judge quoted text that is not in the answer: “returns are free”; it said yes: It says so."
    assert (side.verdict, side.reason) == ("unsure", expected)
    assert case_outcome(t, scores) == ("unsure", [f"{side.check}: {expected}"])


def test_golden_reference_answer_without_a_judge_is_unsure() -> None:
    data = golden({"user": "Can I return A1?", "expect": {"reference_answer": "Yes, within 30 days."}})
    scores = score(data, golden_transcript(exchange(1, "Can I return A1?", "Yes.")))
    (reference,) = of(scores, "reference_answer")
    assert (reference.check, reference.verdict, reference.reason) == (
        "turn 1: reference answer: Yes, within 30 days.",
        "unsure",
        NO_JUDGE,
    )


def test_golden_keywords() -> None:
    expect = {"must_contain": ["A1", "5 May"], "must_not_contain": ["refund", "sorry"]}
    data = golden({"user": "Where is A1?", "expect": expect}, {"user": "And now?", "expect": expect})
    t = golden_transcript(
        exchange(1, "Where is A1?", "Your order A1 arrives on 5 May."),
        exchange(2, "And now?", "Sorry, I will refund order A1."),
    )
    scores = of(score(data, t), "keywords")
    assert [(s.check, s.source, s.verdict, s.reason, s.turn) for s in scores] == [
        (
            "turn 1: must_contain (all, substring): 'A1', '5 May'",
            "deterministic",
            "met",
            "found 'A1' in “Your order A1 arrives on 5 May.”; found '5 May' in “Your order A1 arrives on 5 May.”",
            1,
        ),
        ("turn 1: must_not_contain: 'refund', 'sorry'", "deterministic", "met", "none of the terms appears", 1),
        (
            "turn 2: must_contain (all, substring): 'A1', '5 May'",
            "deterministic",
            "not_met",
            "found 'A1' in “Sorry, I will refund order A1.”; missing '5 May'",
            2,
        ),
        (
            "turn 2: must_not_contain: 'refund', 'sorry'",
            "deterministic",
            "not_met",
            "found 'refund' in “Sorry, I will refund order A1.”; 'sorry' in “Sorry, I will refund order A1.”",
            2,
        ),
    ]


REFUND_TURN: dict[str, Any] = {
    "user": "Refund A1, please.",
    "expect": {
        "tool_calls": [
            {"name": "lookup_order", "arguments": {"order_id": "A1"}},
            {"name": "issue_refund", "arguments": {"order_id": "A1", "amount": 23.6}},
        ]
    },
}


@pytest.mark.parametrize(("threshold", "outcome"), [(None, "fail"), (0.75, "pass"), (0.8, "fail")])
def test_a_threshold_below_one_lets_the_mismatch_it_allows_pass_the_turn_and_says_so(
    threshold: float | None, outcome: str
) -> None:
    """One table: the tool-call correctness threshold governs the turn's tool check as a whole, so a call the
    threshold passes is not failed again by the order check on the same argument."""
    extra = {"thresholds": {"tool_call_correctness": threshold}} if threshold is not None else {}
    data = golden(REFUND_TURN, **extra)
    calls = [call("lookup_order", order_id="A1", id_="c1"), call("issue_refund", order_id="A1", amount=20.0, id_="c2")]
    t = golden_transcript(exchange(1, "Refund A1, please.", "Refunded 20 €.", calls=calls))
    scores = score(data, t)
    (correctness,) = of(scores, "tool_call_correctness")
    (order,) = of(scores, "tool_order")
    assert (correctness.verdict, order.verdict) == (("met", "met") if outcome == "pass" else ("not_met", "not_met"))
    assert case_outcome(t, scores)[0] == outcome
    if outcome == "pass":
        assert "met at the threshold 0.75" in correctness.reason
        assert order.reason.startswith("allowed by the tool_call_correctness threshold 0.75 (0.50 of the arguments")
        assert "amount" in order.reason


@pytest.mark.parametrize(("threshold", "verdict"), [(None, "not_met"), (0.75, "met"), (0.8, "not_met")])
def test_golden_tool_call_correctness_is_held_to_the_threshold(threshold: float | None, verdict: str) -> None:
    extra = {"thresholds": {"tool_call_correctness": threshold}} if threshold is not None else {}
    data = golden(REFUND_TURN, **extra)
    calls = [call("lookup_order", order_id="A1", id_="c1"), call("issue_refund", order_id="A1", amount=20.0, id_="c2")]
    t = golden_transcript(exchange(1, "Refund A1, please.", "Refunded 20 €.", calls=calls))
    (correctness,) = of(score(data, t), "tool_call_correctness")
    assert (correctness.check, correctness.source, correctness.verdict, correctness.value, correctness.turn) == (
        "turn 1: tool-call correctness",
        "deterministic",
        verdict,
        0.75,
        1,
    )
    assert correctness.threshold == (threshold if threshold is not None else 1.0)
    assert correctness.reason.startswith(
        "0.75 = mean of lookup_order 1.00 (call c1), issue_refund 0.50 (call c2: amount: 20.0 (expected 23.6))"
    )


def test_golden_tool_order() -> None:
    data = golden({**REFUND_TURN, "expect": {**REFUND_TURN["expect"], "tool_order": "in_order"}})
    calls = [call("issue_refund", order_id="A1", amount=23.6), call("lookup_order", order_id="A1")]
    t = golden_transcript(exchange(1, "Refund A1, please.", "Refunded.", calls=calls))
    scores = score(data, t)
    assert only(scores, "turn 1: tool-call correctness").verdict == "met"  # the right calls ...
    order = only(scores, "turn 1: tool_calls (in_order): lookup_order, issue_refund")  # ... in the wrong order
    assert (order.metric, order.source, order.verdict, order.turn) == ("tool_order", "deterministic", "not_met", 1)
    assert order.reason == (
        'out of order: issue_refund({"amount": 23.6, "order_id": "A1"}) [faked] came before '
        'lookup_order({"order_id": "A1"}) [faked], but issue_refund is listed after it; calls seen: '
        'issue_refund({"amount": 23.6, "order_id": "A1"}) [faked], lookup_order({"order_id": "A1"}) [faked]'
    )


LOOKUP_2026 = {"name": "lookup_holidays", "arguments": {"year": 2026}}
HOLIDAYS_2026 = call("lookup_holidays", id_="c1", year=2026)
HOLIDAYS_2027 = call("lookup_holidays", id_="c2", year=2027)
NOTIFY = call("notify_customer", id_="c3")
ALLOWED = "allowed by tool_order: {} (tool_order: exact would fail the turn)"
NOT_ALLOWED = "which this turn does not expect (tool_order: exact allows no other call)"

#: (expect, calls, the unexpected_tool_call score as (check, verdict, required, reason), outcome). Other calls
#: are always reported; they fail the turn only under tool_order: exact.
OTHER_CALLS = [
    pytest.param(
        {"tool_calls": [LOOKUP_2026]},
        [HOLIDAYS_2026, NOTIFY],
        ("other tool calls", "n/a", False, "also called notify_customer({}) [faked]: " + ALLOWED.format("any")),
        "pass",
        id="any (the default): another tool",
    ),
    pytest.param(
        {"tool_calls": [LOOKUP_2026]},
        [HOLIDAYS_2026, HOLIDAYS_2027],
        (
            "other tool calls",
            "n/a",
            False,
            'also called lookup_holidays({"year": 2027}) [faked]: ' + ALLOWED.format("any"),
        ),
        "pass",
        id="any: the expected tool again with other arguments (2026 and 2027)",
    ),
    pytest.param(
        {"tool_calls": [LOOKUP_2026, {"name": "notify_customer"}], "tool_order": "in_order"},
        [HOLIDAYS_2027, HOLIDAYS_2026, NOTIFY],
        (
            "other tool calls",
            "n/a",
            False,
            'also called lookup_holidays({"year": 2027}) [faked]: ' + ALLOWED.format("in_order"),
        ),
        "pass",
        id="in_order: another call before the listed ones",
    ),
    pytest.param(
        {"must_contain": ["Monday"]},
        [NOTIFY],
        ("other tool calls", "n/a", False, "also called notify_customer({}) [faked]: " + ALLOWED.format("any")),
        "pass",
        id="a turn that lists no tool call, default order",
    ),
    pytest.param(
        {"tool_calls": [LOOKUP_2026], "tool_order": "exact"},
        [HOLIDAYS_2026, HOLIDAYS_2027],
        (
            "no unexpected tool call",
            "not_met",
            True,
            f'called lookup_holidays({{"year": 2027}}) [faked], {NOT_ALLOWED}',
        ),
        "fail",
        id="exact: the expected tool again with other arguments",
    ),
    pytest.param(
        {"tool_calls": [LOOKUP_2026], "tool_order": "exact"},
        [HOLIDAYS_2026, NOTIFY],
        ("no unexpected tool call", "not_met", True, f"called notify_customer({{}}) [faked], {NOT_ALLOWED}"),
        "fail",
        id="exact: another tool",
    ),
]


@pytest.mark.parametrize(("expect", "calls", "expected", "outcome_"), OTHER_CALLS)
def test_golden_other_tool_calls_are_reported_and_fail_only_under_exact(
    expect: dict[str, Any], calls: list[ToolCallRecord], expected: tuple[str, str, bool, str], outcome_: str
) -> None:
    data = golden({"user": "Holidays in 2026?", "expect": expect})
    t = golden_transcript(exchange(1, "Holidays in 2026?", "Monday is a holiday.", calls=calls))
    scores = score(data, t, FakeJudge(hallucination=SUPPORTED))
    (other,) = of(scores, "unexpected_tool_call")
    check, verdict, required, reason = expected
    assert (other.check, other.source, other.verdict, other.required, other.reason, other.turn) == (
        f"turn 1: {check}",
        "deterministic",
        verdict,
        required,
        reason,
        1,
    )
    for correctness in of(scores, "tool_call_correctness"):
        assert (correctness.verdict, correctness.value) == ("met", 1.0)  # other calls never lower it
        assert "extra: " in correctness.reason
    assert case_outcome(t, scores)[0] == outcome_
    order = of(scores, "tool_order")
    if expect.get("tool_order") == "exact":
        assert [(s.verdict, "extra: " in s.reason) for s in order] == [("not_met", True)]
    else:
        assert [s.verdict for s in order] == (["met"] if expect.get("tool_calls") else [])


def test_golden_calls_of_a_turn_without_expect_are_not_checked() -> None:
    data = golden({"user": "Where is A1?", "expect": {"tool_calls": [{"name": "lookup_order"}]}}, {"user": "Bye!"})
    t = golden_transcript(
        exchange(1, "Where is A1?", "It ships today.", calls=[call("lookup_order")]),
        exchange(2, "Bye!", "Bye!", calls=[call("log_chat")]),
    )
    scores = score(data, t)
    assert [s for s in scores if s.turn == 2 and s.metric != "hallucination"] == []


def test_golden_exact_argument_match_fails_the_tool_check_and_keeps_correctness() -> None:
    # match: exact: an argument nobody expected makes the call no exact match. The tool check fails and names
    # the argument; tool-call correctness keeps its definition (share of expected arguments matched), so both
    # are shown and neither hides the other.
    spec = {"name": "lookup_holidays", "arguments": {"year": 2026}, "match": "exact"}
    data = golden({"user": "Holidays in 2026?", "expect": {"tool_calls": [spec]}})
    calls = [call("lookup_holidays", id_="c1", year=2026, country="DE")]
    t = golden_transcript(exchange(1, "Holidays in 2026?", "Monday is a holiday.", calls=calls))
    scores = score(data, t)
    order = only(scores, "turn 1: tool_calls (any): lookup_holidays")
    assert (order.verdict, order.reason) == (
        "not_met",
        'missing lookup_holidays({"year": 2026} exactly): closest was '
        'lookup_holidays({"country": "DE", "year": 2026}) [faked]: unexpected argument \'country\'; '
        'calls seen: lookup_holidays({"country": "DE", "year": 2026}) [faked]',
    )
    correctness = only(scores, "turn 1: tool-call correctness")
    assert (correctness.verdict, correctness.value, correctness.reason) == (
        "met",
        1.0,
        "1.00 = mean of lookup_holidays 1.00 (call c1: unexpected argument 'country')",
    )
    assert of(scores, "unexpected_tool_call") == []  # the call was expected; its argument was not
    assert case_outcome(t, scores) == ("fail", [f"{order.check}: {order.reason}"])


def test_golden_exact_tool_order_with_no_call_expected() -> None:
    data = golden({"user": "Hi", "expect": {"tool_order": "exact"}})
    t = golden_transcript(exchange(1, "Hi", "Hello!", calls=[call("lookup_order")]))
    scores = score(data, t)
    order = only(scores, "turn 1: tool_calls (exact): no tool call")
    assert (order.verdict, order.reason) == (
        "not_met",
        "no tool call was allowed, extra: lookup_order({}) [faked]; calls seen: lookup_order({}) [faked]",
    )
    assert of(scores, "tool_call_correctness") == []  # no call expected: no value
    unexpected = only(scores, "turn 1: no unexpected tool call")
    assert (unexpected.verdict, unexpected.required) == ("not_met", True)


def test_a_golden_turn_the_conversation_never_reached() -> None:
    data = golden(
        {"user": "Where is A1?", "expect": {"must_contain": ["A1"]}},
        {"user": "Can I return it?", "expect": {"message": "Yes, within 30 days.", "must_contain": ["30"]}},
        {"user": "Bye!"},
    )
    t = golden_transcript(exchange(1, "Where is A1?", "A1 ships today."), stop_reason="error", error="agent down")
    scores = score(data, t)
    turn_2 = [s for s in scores if s.turn == 2]
    assert [row(s) for s in turn_2] == [("golden_turn", "turn 2: reply", "engine", "not_met", None, True)]
    assert turn_2[0].reason == "the conversation ended before this turn"
    assert [s for s in scores if s.turn == 3] == []
    assert case_outcome(t, scores) == ("error", ["agent down"])
    t_done = t.model_copy(update={"stop_reason": "completed", "error": None})
    assert case_outcome(t_done, scores)[1][0] == "turn 2: reply: the conversation ended before this turn"


def test_golden_handoff_and_variables() -> None:
    expect = {"handoff": {"to": "human"}, "variables": {"order_status": "shipped", "priority": 2, "customer_id": 7}}
    data = golden(
        {"user": "Where is A1?", "expect": expect}, {"user": "Hurry!", "expect": {"variables": {"priority": 2}}}
    )
    t = golden_transcript(
        exchange(1, "Where is A1?", "A colleague takes over.", handoff="human", variables={"order_status": "shipped"}),
        exchange(2, "Hurry!", "Done.", variables={"priority": 2}),
        session_parameters={"customer_id": 7},
    )
    scores = score(data, t)
    assert [
        (s.metric, s.check, s.verdict, s.reason, s.turn) for s in scores if s.metric in ("handoff", "variable")
    ] == [
        ("handoff", "turn 1: handoff to human", "met", "handed off to human", 1),
        ("variable", "turn 1: variable order_status = 'shipped'", "met", "order_status = 'shipped'", 1),
        # Set in turn 2: not yet set after turn 1.
        ("variable", "turn 1: variable priority = 2", "not_met", "priority is not set", 1),
        # A session parameter counts as set.
        ("variable", "turn 1: variable customer_id = 7", "met", "customer_id = 7", 1),
        ("variable", "turn 2: variable priority = 2", "met", "priority = 2", 2),
    ]
    t_no_handoff = golden_transcript(exchange(1, "Where is A1?", "Let me see."))
    handoff = only(
        score(golden({"user": "Where is A1?", "expect": {"handoff": {"to": "human"}}}), t_no_handoff),
        "turn 1: handoff to human",
    )
    assert (handoff.verdict, handoff.reason) == ("not_met", "no hand-off happened")


def test_a_golden_turn_expectation_is_checked_on_that_turns_replies() -> None:
    data = golden(
        {"user": "Where is A1?", "expectations": ["gives the date"]},
        {"user": "When?", "expect": {"must_contain": ["May"]}},
        expectations=[{"text": "gives the date", "must_contain": ["5 May"]}],
    )
    t = golden_transcript(exchange(1, "Where is A1?", "Let me check."), exchange(2, "When?", "On 5 May."))
    (expectation,) = of(score(data, t), "expectation")
    assert (expectation.check, expectation.verdict, expectation.turn, expectation.reason) == (
        "turn 1: gives the date",
        "not_met",
        1,
        "missing '5 May'",
    )


def test_golden_without_a_judge_is_decided_by_its_deterministic_checks() -> None:
    data = golden({"user": "Where is A1?", "expect": {"must_contain": ["A1"]}})
    t = golden_transcript(exchange(1, "Where is A1?", "A1 ships today."))
    scores = score(data, t)
    assert of(scores, "goal_satisfaction") == []  # a golden case has no user goal
    assert [(s.verdict, s.required) for s in of(scores, "hallucination")] == [("unsure", False)]
    assert case_outcome(t, scores) == ("pass", [])
    claimed = golden_transcript(exchange(1, "Where is A1?", "Our records show A1 ships today."))
    assert case_outcome(claimed, score(data, claimed)) == (
        "fail",
        ["turn 1: hallucination: claims “Our records show” but no tool was called in the conversation"],
    )


# -- the context the hallucination judge reads ----------------------------------------------------------------


def test_the_hallucination_context_does_not_contain_the_judged_reply() -> None:
    t = simulation()
    reply = t.agent_events()[0]
    context = hallucination_context(t, reply)
    assert '{"turn": 1, "role": "user", "text": "When does my order A1 arrive?"}' in context
    assert "Your order A1 arrives on 5 May." not in context
