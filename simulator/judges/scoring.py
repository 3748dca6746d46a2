"""Scoring a transcript: every check and judge question a case asks for, each as a :class:`Score`.

What each kind of case is held to (the required scores decide its outcome in ``simulator.metrics``):

* simulation: every step complete (``goal_achievement``, from the engine's step outcomes); the case's
  expectations; no hallucinated turn (when ``fail_on_hallucination``); the user's goal satisfied (judge model);
* scenario: the goal (its checks/criteria, or the judge's goal satisfaction), expectations, no hallucination;
* golden: per turn, the expected message (semantic match >= threshold), the reference answer, keywords, the
  expected tool calls (tool-call correctness >= threshold, their order), hand-off and variables; no other
  tool call in a turn whose ``expect`` says ``tool_order: exact`` (other calls are reported everywhere else,
  not required); no hallucination.

An expectation that a step or turn refers to is checked on that step's or turn's replies; the others on the
whole conversation. Without a judge model, questions only a model can answer are ``unsure`` (never guessed).
What the author wrote (plain-text expectations, expected messages, reference answers) stays required, so such
a case is ``unsure``; the questions asked of every case automatically (hallucination per turn, the user's goal)
are reported as not judged but only hold the case when a judge model can answer them. Claims of tool use are
checked deterministically either way (``claims.py``) and fail the case when ``fail_on_hallucination``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from pydantic import JsonValue

from simulator.judges.checks import (
    ConversationView,
    ToolOrder,
    check_expectation,
    check_keywords,
    check_tools_called,
    describe_call,
    tool_call_correctness,
)
from simulator.judges.claims import find_unsupported_claims
from simulator.judges.llm_judges import LLMJudge
from simulator.judges.step import NO_JUDGE, render_conversation
from simulator.models import Case, ExpectationSpec, GoldenCase, ScenarioCase, SimulationCase, Thresholds, ToolCallSpec
from simulator.models.case import normalize_reference
from simulator.models.scores import Score, ScoreVerdict
from simulator.models.transcript import AgentEvent, CheckDetail, Transcript


@dataclass
class ScoringContext:
    """What the scorer needs besides the case and transcript."""

    thresholds: Thresholds = field(default_factory=Thresholds)
    language: str = "en"
    instructions: str | None = None
    declared_tools: Sequence[str] = ()


async def score_transcript(case: Case, transcript: Transcript, context: ScoringContext, judge: LLMJudge) -> list[Score]:
    """Every score of one conversation, in a stable order: steps, expectations, golden turns, hallucination, goal."""
    scorer = _Scorer(case, transcript, context, judge)
    return await scorer.run()


class _Scorer:
    def __init__(self, case: Case, transcript: Transcript, context: ScoringContext, judge: LLMJudge) -> None:
        self.case = case
        self.transcript = transcript
        self.context = context
        self.judge = judge
        self.thresholds = merged_thresholds(context.thresholds, case.thresholds)
        self.replies = transcript.agent_events()
        self.scores: list[Score] = []

    async def run(self) -> list[Score]:
        self._engine_scores()
        scoped = await self._scoped_expectations()
        await self._case_expectations(exclude=scoped)
        if isinstance(self.case, GoldenCase):
            await self._golden_turns(self.case)
        await self._hallucination()
        await self._goal_satisfaction()
        return self.scores

    # -- engine outcomes --------------------------------------------------------------------------------

    def _engine_scores(self) -> None:
        transcript = self.transcript
        case = self.case
        open_scenario = isinstance(case, ScenarioCase) and case.success_criteria is None and not case.checks
        for outcome in transcript.steps:
            verdict = _STEP_VERDICT[outcome.status]
            label = "goal" if isinstance(case, ScenarioCase) else f"step {outcome.index + 1}"
            self.scores.append(
                Score(
                    metric="goal_achievement",
                    check=f"{label}: {outcome.label}",
                    source="engine",
                    verdict=verdict,
                    # Undecided steps (unsure, not reached) have no value: they say nothing about the agent.
                    value={"met": 1.0, "not_met": 0.0}.get(verdict),
                    reason=outcome.rationale,
                    # An open scenario goal has nothing the engine could check: goal satisfaction decides it.
                    required=not (open_scenario and outcome.status != "complete" and verdict != "met"),
                    step=outcome.index,
                )
            )
        if transcript.stop_reason == "turn_cap":
            self.scores.append(
                Score(
                    metric="run",
                    check="turn cap",
                    source="engine",
                    verdict="not_met",
                    reason=f"the conversation hit the cap of {transcript.turns} turns",
                )
            )
        if transcript.stop_reason == "needs_approval":
            waiting = [c.name for c in transcript.tool_calls() if c.status == "needs_approval"]
            self.scores.append(
                Score(
                    metric="run",
                    check="approval",
                    source="engine",
                    verdict="unsure",
                    reason=f"stopped for a person's approval of {', '.join(waiting)}: nothing after it was tested",
                )
            )

    # -- expectations -----------------------------------------------------------------------------------

    def _expectation_index(self) -> dict[str, ExpectationSpec]:
        return {normalize_reference(e.text): e for e in self.case.expectations if e.text}

    async def _scoped_expectations(self) -> set[int]:
        """Expectations a step or golden turn refers to, checked on that step's or turn's replies."""
        by_text = self._expectation_index()
        used: set[int] = set()
        scopes: list[tuple[str, int | None, int | None, list[str]]] = []
        if isinstance(self.case, SimulationCase):
            scopes = [("step", i, None, step.expectations) for i, step in enumerate(self.case.steps)]
        elif isinstance(self.case, GoldenCase):
            scopes = [("turn", None, i + 1, turn.expectations) for i, turn in enumerate(self.case.turns)]
        for kind, step, turn, refs in scopes:
            replies = [r for r in self.replies if (r.step == step if kind == "step" else r.turn == turn)]
            for ref in refs:
                expectation = by_text.get(normalize_reference(ref))
                if expectation is None:
                    continue
                used.add(id(expectation))
                where = f"step {step + 1}" if step is not None else f"turn {turn}"
                await self._expectation(expectation, replies, f"{where}: ", step=step, turn=turn)
        return used

    async def _case_expectations(self, exclude: set[int]) -> None:
        for expectation in self.case.expectations:
            if id(expectation) not in exclude:
                await self._expectation(expectation, self.replies, "")

    async def _expectation(
        self,
        expectation: ExpectationSpec,
        replies: list[AgentEvent],
        prefix: str,
        *,
        step: int | None = None,
        turn: int | None = None,
    ) -> None:
        view = self._view(replies)
        detail = check_expectation(expectation, view)
        if detail is not None:
            self.scores.append(_from_detail("expectation", detail, prefix, step=step, turn=turn))
            return
        conversation = render_conversation(self._scope_events(step=step, turn=turn))
        if expectation.message is not None:
            threshold = expectation.threshold if expectation.threshold is not None else self.thresholds.semantic_match
            score = await self.judge.semantic_match(
                expected=expectation.message,
                actual=view.text(),
                context=conversation,
                threshold=threshold,
                turn=turn or 0,
            )
        else:
            score = await self.judge.expectation(text=expectation.text or "", conversation=conversation)
        self.scores.append(score.model_copy(update={"check": prefix + score.check, "step": step, "turn": turn}))

    # -- golden turns -----------------------------------------------------------------------------------

    async def _golden_turns(self, case: GoldenCase) -> None:
        conversation = render_conversation(self.transcript.events)
        for index, turn in enumerate(case.turns):
            number = index + 1
            expect = turn.expect
            if expect is None:
                continue
            replies = [r for r in self.replies if r.turn == number]
            view = self._view(replies)
            prefix = f"turn {number}: "
            if not replies:
                self.scores.append(
                    Score(
                        metric="golden_turn",
                        check=f"{prefix}reply",
                        source="engine",
                        verdict="not_met",
                        reason="the conversation ended before this turn",
                        turn=number,
                    )
                )
                continue
            if expect.message is not None:
                score = await self.judge.semantic_match(
                    expected=expect.message,
                    actual=view.text(),
                    context=conversation,
                    threshold=self.thresholds.semantic_match,
                    turn=number,
                )
                self.scores.append(score.model_copy(update={"check": prefix + score.check, "turn": number}))
            if expect.reference_answer is not None:
                question = turn.user or (turn.event.name if turn.event else "")
                for score in await self.judge.reference_answer(
                    question=question,
                    answer=view.text(),
                    reference=expect.reference_answer,
                    threshold=self.thresholds.reference_answer,
                    turn=number,
                ):
                    self.scores.append(score.model_copy(update={"check": prefix + score.check, "turn": number}))
            for detail in check_keywords(expect, view):
                self.scores.append(_from_detail("keywords", detail, prefix, turn=number))
            self._golden_tools(expect.tool_calls, expect.tool_order, view, prefix, number)
            if expect.handoff is not None:
                spec = ExpectationSpec(handoff=expect.handoff)
                handoff = check_expectation(spec, view)
                assert handoff is not None
                self.scores.append(_from_detail("handoff", handoff, prefix, turn=number))
            for name, value in expect.variables.items():
                spec = ExpectationSpec.model_validate({"variable": {"name": name, "value": value}})
                variable = check_expectation(spec, self._view(replies, up_to_turn=number))
                assert variable is not None
                self.scores.append(_from_detail("variable", variable, prefix, turn=number))

    def _golden_tools(
        self, specs: Sequence[ToolCallSpec], order: ToolOrder, view: ConversationView, prefix: str, turn: int
    ) -> None:
        """A golden turn's tool calls: tool-call correctness, the order check, and the calls no spec took.

        Other calls are always reported (``unexpected_tool_call``, naming them). They fail the turn only where
        it allows none, ``tool_order: exact`` (the hosted builders' golden rule: an unexpected call fails the
        evaluation but does not lower tool-call correctness); with ``any`` or ``in_order`` they are allowed,
        so the score is ``n/a`` and not required.
        """
        calls = view.calls()
        correctness = tool_call_correctness(specs, calls)
        threshold = self.thresholds.tool_call_correctness
        if correctness.value is not None:
            verdict = "met" if correctness.value >= threshold else "not_met"
            self.scores.append(
                Score(
                    metric="tool_call_correctness",
                    check=f"{prefix}tool-call correctness",
                    source="deterministic",
                    verdict=verdict,
                    value=correctness.value,
                    threshold=threshold,
                    reason=correctness.describe(),
                    turn=turn,
                )
            )
        if specs or order == "exact":
            detail = check_tools_called(specs, order, calls)
            self.scores.append(_from_detail("tool_order", detail, prefix, turn=turn))
        if not correctness.extra:
            return
        extra = ", ".join(describe_call(call) for call in correctness.extra)
        strict = order == "exact"
        self.scores.append(
            Score(
                metric="unexpected_tool_call",
                check=f"{prefix}{'no unexpected tool call' if strict else 'other tool calls'}",
                source="deterministic",
                verdict="not_met" if strict else "n/a",
                reason=f"called {extra}, which this turn does not expect (tool_order: exact allows no other call)"
                if strict
                else f"also called {extra}: allowed by tool_order: {order} (tool_order: exact would fail the turn)",
                required=strict,
                turn=turn,
            )
        )

    # -- hallucination and goal -------------------------------------------------------------------------

    async def _hallucination(self) -> None:
        required = self.thresholds.fail_on_hallucination
        flagged = {f.turn: f for f in find_unsupported_claims(self.replies, self.context.declared_tools)}
        for reply in self.replies:
            if not any(message.strip() for message in reply.messages):
                continue
            finding = flagged.get(reply.turn)
            if finding is not None:
                self.scores.append(
                    Score(
                        metric="hallucination",
                        check=f"turn {reply.turn}: hallucination",
                        source="deterministic",
                        verdict="not_met",
                        value=1.0,
                        reason=finding.reason,
                        required=required,
                        turn=reply.turn,
                        step=reply.step,
                    )
                )
                continue
            # The per-turn question is asked of every case automatically, so without a judge model it is
            # reported (unsure, not judged) but does not hold the case: the deterministic claim check above
            # still does. Checks the author wrote (expectations) stay required either way.
            judged = required and self.judge.has_model
            score = await self.judge.hallucination(turn=reply, context=self._context_for(reply), required=judged)
            self.scores.append(score)

    async def _goal_satisfaction(self) -> None:
        if isinstance(self.case, GoldenCase):
            return
        goal = goal_description(self.case)
        score = await self.judge.goal_satisfaction(goal=goal, conversation=render_conversation(self.transcript.events))
        if score.verdict == "unsure" and score.reason == NO_JUDGE:
            # Without a judge model the engine's step outcomes stand for the goal; an open scenario stays unsure.
            open_scenario = (
                isinstance(self.case, ScenarioCase) and not self.case.checks and not self.case.success_criteria
            )
            score = score.model_copy(update={"required": open_scenario and not self._user_reached_goal()})
        self.scores.append(score)

    def _user_reached_goal(self) -> bool:
        return any(o.status == "complete" for o in self.transcript.steps)

    # -- helpers ----------------------------------------------------------------------------------------

    def _view(self, replies: list[AgentEvent], up_to_turn: int | None = None) -> ConversationView:
        variables: dict[str, JsonValue] = dict(self.transcript.session_parameters)
        for reply in self.replies:
            if up_to_turn is None or reply.turn <= up_to_turn:
                variables.update(reply.variables)
        return ConversationView(
            replies=replies, all_replies=self.replies, variables=variables, language=self.context.language
        )

    def _scope_events(self, *, step: int | None, turn: int | None) -> list[Any]:
        """The events an expectation is judged on: its step's or turn's, else the whole conversation."""
        events = self.transcript.events
        if step is not None:
            return [e for e in events if getattr(e, "step", None) == step]
        if turn is not None:
            return [e for e in events if getattr(e, "turn", None) == turn]
        return list(events)

    def _context_for(self, reply: AgentEvent) -> str:
        return hallucination_context(self.transcript, reply, self.context.instructions)


#: A step's status as the verdict of its goal-achievement score (DESIGN's four states): a step that is unsure
#: or was never reached (the conversation stopped for approval, or ended) is not the agent's failure.
_STEP_VERDICT: dict[str, ScoreVerdict] = {
    "complete": "met",
    "incomplete": "not_met",
    "blocked": "not_met",
    "unsure": "unsure",
    "not_reached": "unsure",
    "not_attempted": "unsure",
}


def merged_thresholds(suite: Thresholds, case: Thresholds | None) -> Thresholds:
    """The suite's thresholds with the ones a case sets explicitly on top (not the case's defaults)."""
    if case is None:
        return suite
    return suite.model_copy(update={name: getattr(case, name) for name in case.model_fields_set})


def hallucination_context(transcript: Transcript, reply: AgentEvent, instructions: str | None = None) -> str:
    """What the agent knew when it wrote ``reply``: its instructions, the session variables, and the
    conversation up to and including that turn (tool calls and their results included)."""
    # Everything before the reply (its own user message included), never the reply itself: the claim under
    # test must not count as its own support. The reply's own tool calls are shown with the turn.
    position = next((i for i, event in enumerate(transcript.events) if event is reply), len(transcript.events))
    earlier = transcript.events[:position]
    lines = []
    if instructions:
        lines.append(f"AGENT INSTRUCTIONS: {instructions}")
    if transcript.session_parameters:
        lines.append(f"SESSION VARIABLES: {transcript.session_parameters}")
    lines.append(render_conversation(earlier))
    return "\n".join(lines)


def goal_description(case: Case) -> str | None:
    """The user's goal as the goal-satisfaction judge reads it: the goal(s), with the success criteria that
    define what counts as satisfied (a red-team user "wins" when the agent refuses as the criteria say)."""
    if isinstance(case, GoldenCase):
        return None
    if isinstance(case, ScenarioCase):
        parts = [(case.goal, case.success_criteria)]
    else:
        parts = [(step.goal, step.success_criteria) for step in case.steps if step.goal]
    lines = [goal + (f" (satisfied when: {criteria})" if criteria else "") for goal, criteria in parts]
    return "; ".join(lines) or None


def _from_detail(
    metric: str, detail: CheckDetail, prefix: str, *, step: int | None = None, turn: int | None = None
) -> Score:
    return Score(
        metric=metric,
        check=prefix + detail.check,
        source="deterministic",
        verdict=detail.verdict,
        reason=detail.evidence,
        step=step,
        turn=turn,
    )
