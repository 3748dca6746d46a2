"""Metric definitions over transcripts and scores, and their run-level aggregates.

Every function here is pure: it reads transcripts, scores, results or outcomes and returns numbers, with no
I/O and no model calls. The docstring of each function is the exact definition users read in the docs and
reports; the tests in ``tests/test_metrics.py`` pin each of them.

Per case:

- :func:`goal_achievement` -- how many steps (goals) of a conversation were completed: ``Goals (k/n)``.
- :func:`case_outcome` -- ``pass`` / ``fail`` / ``error`` / ``unsure`` from the transcript and its scores,
  with the reasons (scoring turns a ``fail`` the simulated user caused into ``user_error``:
  ``simulator.judges.fidelity``).
- :func:`task_completion` -- 1 / 0 / None: the case's task was (not) completed, or the judge was unsure.
- :func:`state_correctness` -- the share of the case's ``expect_state`` items its final world meets.
- :func:`case_metrics` -- the per-case numbers stored on a result (``CaseResult.metrics``).

Per run:

- :func:`counts` and :func:`correctness` -- counts of outcomes and passed / (total - user_error).
- :func:`persona_fidelity` -- per persona, the share of the user model's turns without a fidelity finding.
- :func:`metric_summary` -- verdict counts and mean value per metric over every score of a run.
- :func:`run_summary` (:class:`SummaryBuilder`) -- the run summary the store keeps with a run and every report
  reads: counts, usage per role, metric summaries, repeat statistics per case, counts per suite; computed once,
  one result at a time. :func:`summarized` gives a run read from an older store its summary.

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
from typing import Any, TypeVar, get_args

from simulator.coverage import CoverageBuilder, run_coverage
from simulator.models.run import RunRecord, StoredResult
from simulator.models.scores import CaseResult, Outcome, Score
from simulator.models.summary import (
    SUMMARY_VERSION,
    CaseSummary,
    Counts,
    FaultOutcomes,
    MetricSummary,
    RepeatLabel,
    RepeatStats,
    RunSummary,
    SuiteSummary,
    persona_fidelity,
)
from simulator.models.transcript import StepOutcome, Transcript, Usage

__all__ = [
    "Z_95",
    "Agreement",
    "GoalAchievement",
    "MetricSummary",
    "RepeatLabel",
    "RepeatStats",
    "SummaryBuilder",
    "agreement",
    "case_metrics",
    "case_outcome",
    "correctness",
    "counts",
    "goal_achievement",
    "metric_summary",
    "pass_at_k_estimate",
    "pass_hat_k_estimate",
    "persona_fidelity",
    "repeat_stats",
    "run_summary",
    "state_correctness",
    "summarized",
    "task_completion",
    "wilson_interval",
]

#: The two-sided 95% normal quantile, z = Φ⁻¹(0.975), used by :func:`wilson_interval`.
Z_95 = 1.959963984540054

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


def state_correctness(scores: Sequence[Score]) -> float | None:
    """State correctness of one case: the share of its ``expect_state`` items the world it left meets.

    Definition: over the scores of metric ``state`` (one per item: each record, each unchanged entry, each count,
    and "nothing else changed"), ``met / (met + not_met)``. A state check is never unsure; a state that could not
    be checked (no world: an ``error`` score) is not counted. None when no state item was decided (the case has
    no ``expect_state``, or it could not be checked), never 0 or 1.
    """
    decided = [score.verdict for score in scores if score.metric == "state" and score.verdict in ("met", "not_met")]
    return decided.count("met") / len(decided) if decided else None


def case_metrics(
    transcript: Transcript, scores: Sequence[Score], outcome: Outcome | None = None
) -> dict[str, float | None]:
    """The per-case numbers stored in ``CaseResult.metrics``, computed from the transcript and its scores.

    ``outcome`` is the outcome the case was given when it is not :func:`case_outcome`'s (``user_error``: then
    ``task_completion`` and ``goal_achievement`` are None, as for an error: the failure says nothing about
    the agent).

    - ``goals_complete``, ``goals_total`` and ``goal_achievement`` (= complete / total, None without steps):
      from :func:`goal_achievement` of the transcript.
    - ``task_completion``: 1.0 / 0.0 / None as :func:`task_completion` of the outcome :func:`case_outcome`
      gives (pass -> 1, fail -> 0, unsure or error -> None). For an ``error`` case ``goal_achievement`` is
      None as well: steps the conversation never reached say nothing about the agent.
    - ``hallucinations``: how many scores of metric ``hallucination`` have verdict ``not_met`` (hallucinated
      turns, required or not).
    - ``turns``: the transcript's number of turns.
    - ``state_correctness``: :func:`state_correctness` of the scores, only when the case's state was checked.
    - For every other metric with at least one score whose ``value`` is not None: the mean of those values
      under the metric's name (e.g. ``tool_call_correctness``, ``semantic_match``, ``hallucination``).
      ``goal_achievement`` always comes from the transcript, never from score values.
    """
    goals = goal_achievement(transcript)
    if outcome is None:
        outcome, _ = case_outcome(transcript, scores)
    completion = {"pass": 1.0, "fail": 0.0}.get(outcome)
    numbers: dict[str, float | None] = {
        "goals_complete": float(goals.complete),
        "goals_total": float(goals.total),
        "goal_achievement": None if outcome in ("error", "user_error") else goals.rate,
        "task_completion": completion,
        "hallucinations": float(sum(1 for s in scores if s.metric == "hallucination" and s.verdict == "not_met")),
        "turns": float(transcript.turns),
    }
    state = state_correctness(scores)
    if state is not None:
        numbers["state_correctness"] = state
    values: dict[str, list[float]] = {}
    for score in scores:
        if score.value is not None:
            values.setdefault(score.metric, []).append(score.value)
    for metric, found in values.items():
        numbers.setdefault(metric, math.fsum(found) / len(found))
    return numbers


# -- per run --------------------------------------------------------------------------------------------------


def counts(outcomes: Iterable[Outcome]) -> Counts:
    """How many of the outcomes are ``pass``, ``fail``, ``error``, ``unsure`` and ``user_error``; ``total``
    counts them all and ``correctness`` = passed / (total - user_error) (:func:`correctness`). ValueError for a
    value that is not an outcome."""
    tally = _Tally()
    for outcome in outcomes:
        tally.add(outcome)
    return tally.counts(Counts)


def correctness(outcomes: Iterable[Outcome]) -> float | None:
    """Correctness of a run: ``passed / (total - user_error)`` over the case outcomes.

    ``total`` counts every outcome: an ``error`` counts as a failure (the run could not show the case
    passes), and ``unsure`` counts as not passed. A ``user_error`` (a failure the simulated user caused) is
    left out: it says nothing about the agent (``--count-user-errors`` stores such cases as ``fail``). None when
    nothing is left to count (no outcomes, or only user errors), never 0 or 1.
    """
    return counts(outcomes).correctness


_C = TypeVar("_C", bound=Counts)
_K = TypeVar("_K")


class _Tally:
    """Outcome counts, added one at a time."""

    def __init__(self) -> None:
        self.by_outcome = dict.fromkeys(_OUTCOMES, 0)

    def add(self, outcome: Outcome) -> None:
        _check_outcome(outcome)
        self.by_outcome[outcome] += 1

    def counts(self, kind: type[_C], **more: Any) -> _C:
        found = self.by_outcome
        return kind(
            passed=found["pass"],
            failed=found["fail"],
            error=found["error"],
            unsure=found["unsure"],
            user_error=found["user_error"],
            **more,
        )


class _Sum:
    """An exactly rounded running sum of floats (the same value as ``math.fsum`` of them all), in a few floats
    of memory however many are added (Shewchuk's partials, as in the ``math.fsum`` recipe)."""

    def __init__(self) -> None:
        self.partials: list[float] = []

    def add(self, x: float) -> None:
        kept = 0
        for partial in self.partials:
            x, y = (partial, x) if abs(x) < abs(partial) else (x, partial)
            high = x + y
            low = y - (high - x)
            if low:
                self.partials[kept] = low
                kept += 1
            x = high
        self.partials[kept:] = [x]

    @property
    def value(self) -> float:
        return math.fsum(self.partials)


class _UsageTally:
    """One model role's calls and tokens, its answers from the request cache, its prompt tokens read from and
    written to the provider's prompt cache, and its cost, the cached answers' would-be cost and what the prompt
    cache saved summed exactly (each None once any part of it is unknown)."""

    def __init__(self) -> None:
        self.calls = self.prompt_tokens = self.completion_tokens = self.cached_calls = 0
        self.cache_read_tokens = self.cache_write_tokens = 0
        self.cost: _Sum | None = _Sum()
        self.cached_cost: _Sum | None = _Sum()
        self.cache_savings: _Sum | None = _Sum()

    def add(self, used: Usage) -> None:
        self.calls += used.calls
        self.prompt_tokens += used.prompt_tokens
        self.completion_tokens += used.completion_tokens
        self.cached_calls += used.cached_calls
        self.cache_read_tokens += used.cache_read_tokens
        self.cache_write_tokens += used.cache_write_tokens
        self.cost = _added(self.cost, used.cost)
        self.cached_cost = _added(self.cached_cost, used.cached_cost)
        self.cache_savings = _added(self.cache_savings, used.cache_savings)

    def usage(self) -> Usage:
        return Usage(
            calls=self.calls,
            prompt_tokens=self.prompt_tokens,
            completion_tokens=self.completion_tokens,
            cost=None if self.cost is None else self.cost.value,
            cached_calls=self.cached_calls,
            cached_cost=None if self.cached_cost is None else self.cached_cost.value,
            cache_read_tokens=self.cache_read_tokens,
            cache_write_tokens=self.cache_write_tokens,
            cache_savings=None if self.cache_savings is None else self.cache_savings.value,
        )


def _added(total: _Sum | None, value: float | None) -> _Sum | None:
    """``total`` with ``value`` added; unknown (None) from the first unknown value on."""
    if total is None or value is None:
        return None
    total.add(value)
    return total


class _MetricTally:
    """One metric's verdict counts and the exact sum of its values, score by score."""

    def __init__(self, metric: str) -> None:
        self.metric = metric
        self.verdicts: dict[str, int] = {}
        self.total = _Sum()
        self.values = 0

    def add(self, score: Score) -> None:
        self.verdicts[score.verdict] = self.verdicts.get(score.verdict, 0) + 1
        if score.value is not None:
            self.total.add(score.value)
            self.values += 1

    def summary(self) -> MetricSummary:
        found = self.verdicts
        return MetricSummary(
            metric=self.metric,
            count=sum(found.values()),
            met=found.get("met", 0),
            not_met=found.get("not_met", 0),
            unsure=found.get("unsure", 0),
            error=found.get("error", 0),
            not_applicable=found.get("n/a", 0),
            mean=self.total.value / self.values if self.values else None,
            values=self.values,
        )


def metric_summary(results: Iterable[CaseResult]) -> dict[str, MetricSummary]:
    """Every score of every result, grouped by ``Score.metric``: counts per verdict and the mean value.

    For each metric: ``count`` = number of scores; ``met`` / ``not_met`` / ``unsure`` / ``error`` /
    ``not_applicable`` = how many have that verdict (``not_applicable`` is ``"n/a"``); ``mean`` = the mean of
    ``value`` over the scores whose value is not None, whatever their verdict or ``required`` flag (None when
    no score has a value). Metrics appear in the order they are first seen. An empty run gives ``{}``.
    """
    tallies: dict[str, _MetricTally] = {}
    for result in results:
        for score in result.scores:
            tallies.setdefault(score.metric, _MetricTally(score.metric)).add(score)
    return {metric: tally.summary() for metric, tally in tallies.items()}


class SummaryBuilder:
    """The run summary, built one stored result at a time: what it keeps grows with the cases, metrics,
    suites and roles of the run, never with the conversations' transcripts (a result can be dropped as soon
    as it is added).

    Results may be added in any order: each with its ``position`` in the plan (by default the order of adding).
    Roles, metrics and cases are listed in the order the plan first meets them, as if added in plan order. Given
    the run's ``record`` (its plan and suites), the run's coverage is built too (:mod:`simulator.coverage`).
    """

    def __init__(self, record: RunRecord | None = None) -> None:
        self._coverage = CoverageBuilder(record) if record is not None else None
        self._tally = _Tally()
        self._seconds = _Sum()
        self._usage: dict[str, _UsageTally] = {}
        self._metrics: dict[str, _MetricTally] = {}
        self._cases: dict[tuple[int, str, str | None], list[tuple[int, str, Outcome]]] = {}
        self._suites: dict[int, tuple[_Tally, _Sum]] = {}
        self._faults: dict[tuple[str, str], tuple[_Tally, list[int]]] = {}
        self._added = 0
        # Where the plan first meets each role, metric and case: (position, place within that result).
        self._first: dict[tuple[str, object], tuple[int, int]] = {}

    def add(self, stored: StoredResult, position: int | None = None) -> None:
        """Count one stored conversation, the ``position``-th of the plan. ValueError for an outcome that is not
        one."""
        position = self._added if position is None else position
        self._added += 1
        outcome = stored.counted_outcome  # an outcome kept on trust counts as its evidence decides
        self._tally.add(outcome)
        self._seconds.add(stored.duration_s)
        for place, (role, used) in enumerate(stored.result.transcript.usage.items()):
            self._usage.setdefault(role, _UsageTally()).add(used)
            self._met(("role", role), position, place)
        for place, score in enumerate(stored.result.scores):
            self._metrics.setdefault(score.metric, _MetricTally(score.metric)).add(score)
            self._met(("metric", score.metric), position, place)
        key = (stored.suite, stored.case, stored.persona)
        self._cases.setdefault(key, []).append((stored.repeat, stored.key, outcome))
        self._met(("case", key), position, 0)
        tally, seconds = self._suites.setdefault(stored.suite, (_Tally(), _Sum()))
        tally.add(outcome)
        seconds.add(stored.duration_s)
        self._add_faults(stored, outcome, position)
        if self._coverage is not None:
            self._coverage.add(stored)

    def _add_faults(self, stored: StoredResult, outcome: Outcome, position: int) -> None:
        """Count the conversation once under each fault that answered a call in it, and the calls it answered."""
        calls: dict[tuple[str, str], int] = {}
        for call in stored.result.transcript.tool_calls():
            if call.fault is not None:
                calls[call.name, call.fault] = calls.get((call.name, call.fault), 0) + 1
        for place, (key, count) in enumerate(calls.items()):
            tally, answered = self._faults.setdefault(key, (_Tally(), [0]))
            tally.add(outcome)
            answered[0] += count
            self._met(("fault", key), position, place)

    def _met(self, what: tuple[str, object], position: int, place: int) -> None:
        first = self._first.get(what)
        if first is None or (position, place) < first:
            self._first[what] = (position, place)

    def _in_plan_order(self, kind: str, names: Iterable[_K]) -> list[_K]:
        return sorted(names, key=lambda name: self._first[kind, name])

    def build(self, duration_s: float) -> RunSummary:
        """The summary of every result added; ``duration_s`` is the run's wall-clock time."""
        cases = []
        for suite, case, persona in self._in_plan_order("case", self._cases):
            outcomes: list[Outcome] = [outcome for _, _, outcome in sorted(self._cases[suite, case, persona])]
            cases.append(
                CaseSummary(suite=suite, case=case, persona=persona, outcomes=outcomes, stats=repeat_stats(outcomes))
            )
        suites = [
            tally.counts(SuiteSummary, suite=index, duration_s=seconds.value)
            for index, (tally, seconds) in sorted(self._suites.items())
        ]
        summary = self._tally.counts(
            RunSummary,
            version=SUMMARY_VERSION,
            duration_s=duration_s,
            conversations_s=self._seconds.value,
            usage={role: self._usage[role].usage() for role in self._in_plan_order("role", self._usage)},
            metrics={
                metric: self._metrics[metric].summary() for metric in self._in_plan_order("metric", self._metrics)
            },
            cases=cases,
            suites=suites,
            faults=[
                self._faults[key][0].counts(FaultOutcomes, tool=key[0], fault=key[1], calls=self._faults[key][1][0])
                for key in self._in_plan_order("fault", self._faults)
            ],
        )
        if self._coverage is not None:
            summary.coverage = self._coverage.build()
        return summary


def run_summary(results: Iterable[StoredResult], duration_s: float, record: RunRecord | None = None) -> RunSummary:
    """The run summary of ``results`` (in plan order), read one at a time: the counts and correctness (:func:`counts`;
    a result whose outcome an import kept on trust counts as its evidence decides,
    :attr:`~simulator.models.run.StoredResult.counted_outcome`), tokens, calls and cost per model role added up over
    the transcripts (a cost is None when any call's cost is unknown), every metric's :func:`metric_summary`, every
    case's :func:`repeat_stats` over its repeats, and each suite's counts and seconds. ``duration_s`` is the run's
    wall-clock time. Given the run's ``record`` (its plan and suites), the run's coverage too
    (:mod:`simulator.coverage`), in the same pass."""
    builder = SummaryBuilder(record)
    for stored in results:
        builder.add(stored)
    return builder.build(duration_s)


def summarized(record: RunRecord, results: Iterable[StoredResult], *, recompute: bool = False) -> RunRecord:
    """``record`` with a current summary: its own when it has one (:attr:`RunSummary.current`) and not
    ``recompute``, else one computed from ``results`` (a run stored by an older version kept only counts, usage
    and duration; a run without a summary yet gets one with duration 0), keeping the record's duration.
    ``results`` are put in plan order first. A current summary without coverage (stored before coverage was
    computed) gets the run's coverage computed from ``results``."""
    if record.totals is not None and record.totals.current and not recompute:
        if record.totals.coverage is not None:
            return record
        totals = record.totals.model_copy(update={"coverage": run_coverage(record, results)})
        return record.model_copy(update={"totals": totals})
    position = {item.key: index for index, item in enumerate(record.plan)}
    ordered = sorted(
        results, key=lambda r: (position.get(r.key, len(position)), r.suite, r.case, r.persona or "", r.repeat)
    )
    duration = record.totals.duration_s if record.totals is not None else 0.0
    return record.model_copy(update={"totals": run_summary(ordered, duration, record)})


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


def repeat_stats(outcomes: Sequence[Outcome]) -> RepeatStats:
    """Statistics of one case's repeated runs, from their outcomes (one per run).

    - ``k`` = number of runs, leaving out ``user_error`` runs (the simulated user failed, not the agent);
      ``passes`` = runs whose outcome is ``pass``. ``error`` counts as a failure and ``unsure`` as not
      passed: only ``pass`` is a pass.
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
    k = sum(1 for outcome in outcomes if outcome != "user_error")
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
