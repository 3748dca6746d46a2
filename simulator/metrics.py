"""Metric definitions over transcripts and scores, and their run-level aggregates.

Every function here is pure: it reads transcripts, scores, results or outcomes and returns numbers, with no
I/O and no model calls. The docstring of each function is the exact definition users read in the docs and
reports; the tests in ``tests/test_metrics.py`` pin each of them.

Per case:

- :func:`goal_achievement` -- how many steps (goals) of a conversation were completed: ``Goals (k/n)``.
- :func:`case_outcome` -- ``pass`` / ``fail`` / ``error`` / ``unsure`` from the transcript and its scores,
  with the reasons.
- :func:`task_completion` -- 1 / 0 / None: the case's task was (not) completed, or the judge was unsure.
- :func:`case_metrics` -- the per-case numbers stored on a result (``CaseResult.metrics``).

Per run:

- :class:`Breakdown` and :func:`correctness` -- counts of outcomes and passed / total.
- :func:`metric_summary` -- verdict counts and mean value per metric over every score of a run.

Repeats of one case, and judge calibration:

- :func:`repeat_stats` -- pass rate, observed pass@k and pass^k, Wilson interval, stable / flaky / broken.
- :func:`pass_at_k_estimate`, :func:`pass_hat_k_estimate` -- unbiased estimators for a sampling budget k.
- :func:`wilson_interval` -- the 95% Wilson score interval of a pass rate.
- :func:`agreement` -- accuracy, Cohen's kappa and confusion of judge verdicts against human labels.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Literal, get_args

from simulator.models.scores import CaseResult, Outcome, Score
from simulator.models.transcript import StepOutcome, Transcript

__all__ = [
    "Z_95",
    "Agreement",
    "Breakdown",
    "GoalAchievement",
    "MetricSummary",
    "RepeatLabel",
    "RepeatStats",
    "agreement",
    "case_metrics",
    "case_outcome",
    "correctness",
    "goal_achievement",
    "metric_summary",
    "pass_at_k_estimate",
    "pass_hat_k_estimate",
    "repeat_stats",
    "task_completion",
    "wilson_interval",
]

#: The two-sided 95% normal quantile, z = Φ⁻¹(0.975), used by :func:`wilson_interval`.
Z_95 = 1.959963984540054

#: How a case behaves over repeated runs (see :func:`repeat_stats`).
RepeatLabel = Literal["stable", "flaky", "broken"]

_OUTCOMES: tuple[str, ...] = get_args(Outcome)


def _check_outcome(outcome: str) -> None:
    if outcome not in _OUTCOMES:
        raise ValueError(f"unknown outcome {outcome!r}; expected one of {', '.join(_OUTCOMES)}")


def _dedup(items: Iterable[str]) -> list[str]:
    """The items in order, each only at its first occurrence."""
    return list(dict.fromkeys(items))


# -- per case -------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class GoalAchievement:
    """How many of a conversation's steps were completed, with every step's outcome and rationale.

    ``complete`` counts the steps whose status is ``complete``; ``total`` counts every step the case has
    (complete, incomplete, blocked or not attempted); ``steps`` are their outcomes in step order.
    """

    complete: int
    total: int
    steps: list[StepOutcome]

    @property
    def label(self) -> str:
        """``"Goals (k/n)"``: complete steps out of all steps, e.g. ``"Goals (2/3)"``; ``"Goals (0/0)"`` for golden."""
        return f"Goals ({self.complete}/{self.total})"

    @property
    def rate(self) -> float | None:
        """``complete / total``; None when the case has no steps (golden)."""
        return self.complete / self.total if self.total else None

    def lines(self) -> list[str]:
        """One line per step: number, label, ``complete`` / ``not complete`` / ``blocked by step j``, rationale.

        Steps are numbered from 1 (``StepOutcome.index`` is 0-based), e.g.
        ``"2. give the order number: blocked by step 1 (say hello) — blocked: step 1 ..."``.
        """
        out: list[str] = []
        for step in self.steps:
            line = f"{step.index + 1}. {step.label}: {_step_status_words(step)}"
            if step.rationale:
                line += f" — {step.rationale}"
            out.append(line)
        return out


def _step_status_words(step: StepOutcome) -> str:
    if step.status == "complete":
        return "complete"
    if step.status == "blocked":
        if step.blocked_by is None:
            return "blocked"
        goal = f" ({step.blocked_by_goal})" if step.blocked_by_goal else ""
        return f"blocked by step {step.blocked_by + 1}{goal}"
    if step.status == "not_attempted":
        return "not complete (not attempted)"
    return "not complete"


def goal_achievement(transcript: Transcript) -> GoalAchievement:
    """Goal achievement: the number of completed steps out of all steps, ``Goals (k/n)``.

    Definition, over ``transcript.steps``:

    - ``total`` = the number of step outcomes; ``complete`` = those with status ``complete``. A step that is
      ``incomplete`` (not met within its max turns, or the conversation stopped first), ``blocked`` (an
      earlier step failed, so it never started) or ``not_attempted`` counts in ``total`` but not in
      ``complete``: a blocked goal is a goal not achieved.
    - A **simulation** has one step per milestone (goal, static utterance or event).
    - A **scenario**'s single open user goal counts as one step: ``Goals (1/1)`` or ``Goals (0/1)``.
    - A **golden** case has no steps (its turns are scored by expectations instead): ``Goals (0/0)``, and
      :attr:`GoalAchievement.rate` is None rather than 0.

    ``steps`` keeps every outcome (sorted by step index) with its rationale, so a report can say for each step
    why it is complete, not complete or blocked (see :meth:`GoalAchievement.lines`).
    """
    steps = sorted(transcript.steps, key=lambda step: step.index)
    complete = sum(1 for step in steps if step.status == "complete")
    return GoalAchievement(complete=complete, total=len(steps), steps=steps)


def _score_reason(score: Score, prefix: str = "") -> str:
    """``"<check>: [<prefix>: ]<reason>"``, leaving out the parts that are empty."""
    return ": ".join(part for part in (score.check, prefix, score.reason) if part)


def case_outcome(transcript: Transcript, scores: Sequence[Score]) -> tuple[Outcome, list[str]]:
    """The case's outcome and the reasons for it, decided by the first rule that applies:

    1. ``error`` -- the run could not finish or score the case: the transcript's ``stop_reason`` is
       ``"error"`` (reason: the transcript's ``error`` message), and/or a **required** score has verdict
       ``"error"`` (reason: ``"<check>: judge error: <score.reason>"``).
    2. ``fail`` -- a required score has verdict ``"not_met"``; one reason per such score,
       ``"<check>: <score.reason>"``.
    3. ``unsure`` -- a required score has verdict ``"unsure"``; reasons likewise.
    4. ``pass`` -- otherwise (no reasons).

    Precedence is therefore error > fail > unsure > pass, and the reasons are those of the deciding rule
    only. Scores with ``required=False`` and scores with verdict ``"n/a"`` never change the outcome (an empty
    score list passes unless the transcript errored). Reasons keep score order (the transcript's error first)
    and are deduplicated, keeping each text's first occurrence; a score with an empty ``reason`` gives just
    its ``check``.
    """
    required = [score for score in scores if score.required]
    errors: list[str] = []
    if transcript.stop_reason == "error":
        errors.append(transcript.error or "the run stopped with an error")
    errors.extend(_score_reason(score, "judge error") for score in required if score.verdict == "error")
    if errors:
        return "error", _dedup(errors)
    failed = [_score_reason(score) for score in required if score.verdict == "not_met"]
    if failed:
        return "fail", _dedup(failed)
    unsure = [_score_reason(score) for score in required if score.verdict == "unsure"]
    if unsure:
        return "unsure", _dedup(unsure)
    return "pass", []


def task_completion(result: CaseResult) -> int | None:
    """Task completion of one case: 1 when completed, 0 when not, None when the judge is unsure.

    Definition: task completion = the user's goal is satisfied AND no agent turn hallucinated AND every
    expectation is met AND, for a simulation, every step is completed (for a golden case: every turn meets
    its thresholds and no unexpected tool call happened). The scorer makes each of those conditions a
    required score, so this is exactly the case outcome: ``pass`` -> 1, ``fail`` -> 0, ``unsure`` -> None
    (unknown, not counted either way), and ``error`` -> None: the run could not show anything about the agent
    (the judge, the simulated user or the agent's endpoint failed), so an error is never counted as the
    agent's failure here; only correctness counts it as not passed.
    """
    if result.outcome == "pass":
        return 1
    if result.outcome == "fail":
        return 0
    return None


def case_metrics(transcript: Transcript, scores: Sequence[Score]) -> dict[str, float | None]:
    """The per-case numbers stored in ``CaseResult.metrics``, computed from the transcript and its scores.

    - ``goals_complete``, ``goals_total`` and ``goal_achievement`` (= complete / total, None without steps):
      from :func:`goal_achievement` of the transcript.
    - ``task_completion``: 1.0 / 0.0 / None as :func:`task_completion` of the outcome :func:`case_outcome`
      gives (pass -> 1, fail -> 0, unsure or error -> None). For an ``error`` case ``goal_achievement`` is
      None as well: steps the conversation never reached say nothing about the agent.
    - ``hallucinations``: how many scores of metric ``hallucination`` have verdict ``not_met`` (hallucinated
      turns, required or not).
    - ``turns``: the transcript's number of turns.
    - For every other metric with at least one score whose ``value`` is not None: the mean of those values
      under the metric's name (e.g. ``tool_call_correctness``, ``semantic_match``, ``hallucination``).
      ``goal_achievement`` always comes from the transcript, never from score values.
    """
    goals = goal_achievement(transcript)
    outcome, _ = case_outcome(transcript, scores)
    completion = {"pass": 1.0, "fail": 0.0, "error": None, "unsure": None}[outcome]
    numbers: dict[str, float | None] = {
        "goals_complete": float(goals.complete),
        "goals_total": float(goals.total),
        "goal_achievement": None if outcome == "error" else goals.rate,
        "task_completion": completion,
        "hallucinations": float(sum(1 for s in scores if s.metric == "hallucination" and s.verdict == "not_met")),
        "turns": float(transcript.turns),
    }
    values: dict[str, list[float]] = {}
    for score in scores:
        if score.value is not None:
            values.setdefault(score.metric, []).append(score.value)
    for metric, found in values.items():
        numbers.setdefault(metric, math.fsum(found) / len(found))
    return numbers


# -- per run --------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Breakdown:
    """How many cases of a run had each outcome. ``total`` = passed + failed + error + unsure.

    ``failed`` counts only ``fail`` outcomes; errors are counted apart so they are never hidden, but
    :attr:`correctness` treats them as failures.
    """

    passed: int = 0
    failed: int = 0
    error: int = 0
    unsure: int = 0

    @property
    def total(self) -> int:
        """All outcomes counted."""
        return self.passed + self.failed + self.error + self.unsure

    @property
    def correctness(self) -> float | None:
        """``passed / total`` (see :func:`correctness`); None when there are no outcomes."""
        return self.passed / self.total if self.total else None

    @classmethod
    def of(cls, outcomes: Iterable[Outcome]) -> Breakdown:
        """Count the outcomes; ValueError for a value that is not an outcome."""
        counts = dict.fromkeys(_OUTCOMES, 0)
        for outcome in outcomes:
            _check_outcome(outcome)
            counts[outcome] += 1
        return cls(passed=counts["pass"], failed=counts["fail"], error=counts["error"], unsure=counts["unsure"])


def correctness(outcomes: Iterable[Outcome]) -> float | None:
    """Correctness of a run: ``passed / total`` over the case outcomes.

    ``total`` counts every outcome: an ``error`` counts as a failure (the run could not show the case
    passes), and ``unsure`` counts as not passed. None for an empty run (no outcomes), never 0 or 1.
    """
    return Breakdown.of(outcomes).correctness


@dataclass(frozen=True)
class MetricSummary:
    """Verdict counts and mean value of one metric over a run's scores.

    ``count`` = met + not_met + unsure + error + not_applicable (``not_applicable`` counts verdict ``"n/a"``);
    ``mean`` is the arithmetic mean of the scores' ``value`` where it is not None, and None when no score of
    the metric has a value; ``values`` is how many values that mean is over.
    """

    metric: str
    count: int = 0
    met: int = 0
    not_met: int = 0
    unsure: int = 0
    error: int = 0
    not_applicable: int = 0
    mean: float | None = None
    values: int = 0


def metric_summary(results: Iterable[CaseResult]) -> dict[str, MetricSummary]:
    """Every score of every result, grouped by ``Score.metric``: counts per verdict and the mean value.

    For each metric: ``count`` = number of scores; ``met`` / ``not_met`` / ``unsure`` / ``error`` /
    ``not_applicable`` = how many have that verdict (``not_applicable`` is ``"n/a"``); ``mean`` = the mean of
    ``value`` over the scores whose value is not None, whatever their verdict or ``required`` flag (None when
    no score has a value). Metrics appear in the order they are first seen. An empty run gives ``{}``.
    """
    scores: dict[str, list[Score]] = {}
    for result in results:
        for score in result.scores:
            scores.setdefault(score.metric, []).append(score)
    summary: dict[str, MetricSummary] = {}
    for metric, group in scores.items():
        verdicts = [score.verdict for score in group]
        values = [score.value for score in group if score.value is not None]
        summary[metric] = MetricSummary(
            metric=metric,
            count=len(group),
            met=verdicts.count("met"),
            not_met=verdicts.count("not_met"),
            unsure=verdicts.count("unsure"),
            error=verdicts.count("error"),
            not_applicable=verdicts.count("n/a"),
            mean=math.fsum(values) / len(values) if values else None,
            values=len(values),
        )
    return summary


# -- repeats --------------------------------------------------------------------------------------------------


def wilson_interval(passes: int, k: int, z: float = Z_95) -> tuple[float, float] | None:
    """The Wilson score interval of a pass rate: ``passes`` out of ``k`` runs, 95% by default.

    With p = passes / k and z = 1.959963984540054 (:data:`Z_95`)::

        centre = (p + z² / (2k)) / (1 + z² / k)
        half   = z / (1 + z² / k) · sqrt(p (1 - p) / k + z² / (4k²))
        interval = (centre - half, centre + half)

    The bounds are exactly 0.0 when passes = 0 (low) and 1.0 when passes = k (high), and always within
    [0, 1]. None when k = 0 (no runs, no interval). ValueError when passes is not within 0..k.
    Example: 8 of 10 -> (0.490, 0.943).
    """
    if k < 0 or passes < 0 or passes > k:
        raise ValueError(f"passes must be within 0..k and k must not be negative (got passes={passes}, k={k})")
    if k == 0:
        return None
    p = passes / k
    z2 = z * z
    denominator = 1 + z2 / k
    centre = (p + z2 / (2 * k)) / denominator
    half = z / denominator * math.sqrt(p * (1 - p) / k + z2 / (4 * k * k))
    low = 0.0 if passes == 0 else max(0.0, centre - half)
    high = 1.0 if passes == k else min(1.0, centre + half)
    return low, high


@dataclass(frozen=True)
class RepeatStats:
    """One case run k times: passes, pass rate, observed pass@k and pass^k, Wilson interval, label.

    Every field but ``k`` and ``passes`` is None when k = 0.
    """

    k: int
    passes: int
    pass_rate: float | None
    pass_at_k: float | None
    pass_hat_k: float | None
    wilson: tuple[float, float] | None
    label: RepeatLabel | None


def repeat_stats(outcomes: Sequence[Outcome]) -> RepeatStats:
    """Statistics of one case's repeated runs, from their outcomes (one per run).

    - ``k`` = number of runs; ``passes`` = runs whose outcome is ``pass``. ``error`` counts as a failure and
      ``unsure`` as not passed: only ``pass`` is a pass.
    - ``pass_rate`` = passes / k.
    - ``pass_at_k`` (observed pass@k) = 1.0 if at least one of the k runs passed, else 0.0.
    - ``pass_hat_k`` (observed pass^k) = 1.0 if all k runs passed, else 0.0.
    - ``wilson`` = the 95% Wilson score interval of the pass rate (:func:`wilson_interval`).
    - ``label`` = ``"stable"`` when every run passed, ``"broken"`` when none passed, ``"flaky"`` otherwise
      (so with k = 1 it is ``"stable"`` or ``"broken"``).

    With k = 0 (no runs) there is nothing to measure: pass_rate, pass_at_k, pass_hat_k, wilson and label are
    None. ValueError for a value that is not an outcome.
    """
    for outcome in outcomes:
        _check_outcome(outcome)
    k = len(outcomes)
    passes = sum(1 for outcome in outcomes if outcome == "pass")
    if k == 0:
        return RepeatStats(k=0, passes=0, pass_rate=None, pass_at_k=None, pass_hat_k=None, wilson=None, label=None)
    label: RepeatLabel = "stable" if passes == k else "broken" if passes == 0 else "flaky"
    return RepeatStats(
        k=k,
        passes=passes,
        pass_rate=passes / k,
        pass_at_k=1.0 if passes > 0 else 0.0,
        pass_hat_k=1.0 if passes == k else 0.0,
        wilson=wilson_interval(passes, k),
        label=label,
    )


def _check_budget(n: int, c: int, k: int) -> None:
    if n < 0 or c < 0 or k < 0:
        raise ValueError(f"n, c and k must not be negative (got n={n}, c={c}, k={k})")
    if c > n:
        raise ValueError(f"c (passing runs) cannot exceed n (runs) (got c={c}, n={n})")
    if k == 0:
        raise ValueError("k (the sampling budget) must be at least 1")
    if k > n:
        raise ValueError(f"k (the sampling budget) cannot exceed n (runs) (got k={k}, n={n})")


def pass_at_k_estimate(n: int, c: int, k: int) -> float:
    """Unbiased estimate of pass@k: the chance that at least one of k runs passes, from c passes in n runs.

    ``pass@k = 1 - C(n - c, k) / C(n, k)`` (Chen et al. 2021, "Evaluating Large Language Models Trained on
    Code"), where C is the binomial coefficient: one minus the chance that k runs drawn without replacement
    from the n are all failures. It is 1.0 when n - c < k (every draw of k includes a pass). Computed in
    exact integers and divided once, e.g. n=10, c=3, k=1 -> 0.3.

    ValueError when n, c or k is negative, when c > n, when k = 0 or when k > n.
    """
    _check_budget(n, c, k)
    if n - c < k:
        return 1.0
    total = math.comb(n, k)
    return (total - math.comb(n - c, k)) / total


def pass_hat_k_estimate(n: int, c: int, k: int) -> float:
    """Unbiased estimate of pass^k: the chance that all of k runs pass, from c passes in n runs.

    ``pass^k = C(c, k) / C(n, k)``: the chance that k runs drawn without replacement from the n are all
    passes (0.0 when c < k), e.g. n=10, c=3, k=2 -> 3/45 = 1/15.

    ValueError when n, c or k is negative, when c > n, when k = 0 or when k > n.
    """
    _check_budget(n, c, k)
    return math.comb(c, k) / math.comb(n, k)


# -- judge agreement ------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Agreement:
    """Agreement of judge verdicts with human labels over n items.

    ``confusion`` maps ``(human label, judge verdict)`` to how many items had that pair; ``disagreements``
    are the indices (into the input pairs) where the two differ. ``accuracy`` and ``cohen_kappa`` are None
    when n = 0.
    """

    n: int
    accuracy: float | None
    cohen_kappa: float | None
    confusion: dict[tuple[str, str], int]
    disagreements: list[int]


def agreement(pairs: Sequence[tuple[str, str]]) -> Agreement:
    """How well a judge agrees with humans, from ``(human label, judge verdict)`` pairs.

    - ``n`` = number of pairs; ``accuracy`` = p_o = (pairs where human == judge) / n.
    - ``cohen_kappa`` = (p_o - p_e) / (1 - p_e), where p_e = Σ_c (h_c / n) · (j_c / n) over every category c
      in the union of both sides' labels, h_c and j_c being how many items the human and the judge gave
      label c (the agreement expected by chance from each side's label frequencies). Computed as
      ``(n·a - Σ h_c j_c) / (n² - Σ h_c j_c)`` in exact integers (a = agreeing pairs). 1 is perfect
      agreement, 0 is chance level (e.g. a judge that always gives the same verdict), below 0 is worse than
      chance.
    - Degenerate case p_e = 1: both sides gave every item one and the same label, so kappa's fraction is
      0/0. Kappa is then defined as 1.0 if p_o = 1 else 0.0 (p_e = 1 implies p_o = 1, so it is 1.0).
    - ``confusion[(human, judge)]`` = count of that pair, in first-seen order; ``disagreements`` = indices
      of the pairs where human != judge, ascending.

    Labels are compared as exact strings. With no pairs, n = 0 and accuracy and kappa are None.
    """
    n = len(pairs)
    confusion: dict[tuple[str, str], int] = {}
    human: dict[str, int] = {}
    judge: dict[str, int] = {}
    disagreements: list[int] = []
    for index, (label, verdict) in enumerate(pairs):
        confusion[(label, verdict)] = confusion.get((label, verdict), 0) + 1
        human[label] = human.get(label, 0) + 1
        judge[verdict] = judge.get(verdict, 0) + 1
        if label != verdict:
            disagreements.append(index)
    if n == 0:
        return Agreement(n=0, accuracy=None, cohen_kappa=None, confusion={}, disagreements=[])
    agreeing = n - len(disagreements)
    chance = sum(count * judge.get(label, 0) for label, count in human.items())  # n² · p_e
    degenerate = chance == n * n  # p_e == 1
    kappa = (1.0 if agreeing == n else 0.0) if degenerate else (n * agreeing - chance) / (n * n - chance)
    return Agreement(n=n, accuracy=agreeing / n, cohen_kappa=kappa, confusion=confusion, disagreements=disagreements)
