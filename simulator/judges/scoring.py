"""Scoring a transcript: every check and judge question a case asks for, each as a :class:`Score`.

The checks and questions are scorers registered by name (``_registry.py``, the built-in ones in
``scorers.py``); :func:`score_transcript` runs, in registration order, those that apply to the case's kind.

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

from simulator.judges._gather import gather_in_order
from simulator.judges._registry import ScoringContext, ScoringInput, plugin_scorer, registered_scorers
from simulator.judges.llm_judges import LLMJudge
from simulator.judges.scorers import hallucination_context
from simulator.kinds import kind_of
from simulator.models import Case, Thresholds
from simulator.models.scores import Score
from simulator.models.transcript import Transcript

__all__ = ["ScoringContext", "goal_description", "hallucination_context", "merged_thresholds", "score_transcript"]


async def score_transcript(case: Case, transcript: Transcript, context: ScoringContext, judge: LLMJudge) -> list[Score]:
    """Every score of one conversation, in a stable order: steps, expectations, golden turns, hallucination, goal.

    The judge questions are asked concurrently; a judge error raised by one propagates as it is."""
    return await _Scorer(case, transcript, context, judge).run()


class _Scorer:
    def __init__(self, case: Case, transcript: Transcript, context: ScoringContext, judge: LLMJudge) -> None:
        self.target = ScoringInput(
            case=case,
            transcript=transcript,
            context=context,
            judge=judge,
            thresholds=merged_thresholds(context.thresholds, case.thresholds),
            replies=transcript.agent_events(),
        )

    async def run(self) -> list[Score]:
        entries = registered_scorers(scope="case", kind=self.target.case.kind)
        named = dict.fromkeys([*self.target.context.plugin_scorers, *self.target.case.scorers])
        entries += [plugin_scorer(name) for name in named]
        # The scorers ask the judge independent questions: all at once, stored in registration order.
        results = await gather_in_order(entry.run(self.target) for entry in entries)
        return [score for scores in results for score in scores]


def merged_thresholds(suite: Thresholds, case: Thresholds | None) -> Thresholds:
    """The suite's thresholds with the ones a case sets explicitly on top (not the case's defaults)."""
    if case is None:
        return suite
    return suite.model_copy(update={name: getattr(case, name) for name in case.model_fields_set})


def goal_description(case: Case) -> str | None:
    """The user's goal as the goal-satisfaction judge reads it: the goal(s), with the success criteria that
    define what counts as satisfied (a red-team user "wins" when the agent refuses as the criteria say)."""
    return kind_of(case).goal_description(case)
