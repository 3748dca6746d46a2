"""Compare two runs: which cases and steps regressed or improved, correctness of both, and McNemar's test.

Run A is the baseline, run B the new run. Everything here is pure (no I/O); the models are pydantic so the
CLI can dump a :class:`Comparison` as JSON, and :func:`render_comparison_text` gives the terminal lines.

Definitions (pinned by ``tests/test_compare.py``):

- **Case identity** is ``(suite name, case name, persona)``: the suite name is
  ``run.snapshot[result.suite].suite.name``, the case and persona those of the stored result. All repeats of
  one identity in one run are aggregated (two suites of one run with the same name count as one suite).
- **Case status in a run** (:class:`CaseRunSummary`): ``pass`` when every repeat's outcome is ``pass``;
  ``fail`` when any repeat's outcome is ``fail`` or ``error``; ``unsure`` otherwise (no failure or error,
  but at least one ``unsure``). The pass rate is ``passes / repeats`` as :func:`simulator.metrics.repeat_stats`
  defines it (only ``pass`` is a pass). A case *passes* in a run when its status is ``pass``.
- **Case change** (:data:`Change`): ``regressed`` -- passes in A, not in B; ``improved`` -- does not pass in
  A, passes in B; ``unchanged`` -- in both runs and passes in both or in neither (its status may still go
  e.g. from ``fail`` to ``unsure``, and its pass rate may change); ``new`` -- only in B; ``removed`` -- only
  in A. ``pass_rate_change`` = B's pass rate - A's, for every case in both runs.
- **Step change**, for cases in both runs: a step is identified by ``(StepOutcome.index, StepOutcome.label)``
  and only steps recorded in at least one repeat of each run are compared. Over the repeats whose transcript
  records the step, ``complete`` counts those with status ``complete``; the step is *complete in a run*
  when it is complete in every repeat that records it (as a case passes only when every repeat passes). A
  step ``regressed`` when complete in A and not in B, ``improved`` when not complete in A and complete in B.
  A regressed step carries the status, rationale and repeat number of the first B repeat (lowest repeat)
  where it was not complete: the reason the report gives; an improved step, the status of the first A repeat
  where it was not complete (so an unsure step reads ``? unsure``, not ``✗ not complete``).
- **Display**: statuses carry the marks of every view (:mod:`simulator.reports._states`): cases ✓ pass,
  ✗ fail, ? unsure; steps ✓ complete, ✗ not complete, ? unsure, ⊘ blocked or not reached. Repeats are stored
  from 0 (``b_repeat``) and shown from 1, as in every view.
- **Correctness** of a run = ``passed / total`` over all its stored results, every repeat counted, as
  :func:`simulator.metrics.correctness` (``error`` and ``unsure`` are not passes); the change is B - A.
- **McNemar's exact test** (:func:`mcnemar_exact`) over the cases in both runs, paired as pass / not pass.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from fractions import Fraction
from typing import Literal

from pydantic import Field

from simulator.metrics import Breakdown, repeat_stats
from simulator.models._base import DataModel
from simulator.models.run import RunRecord, StoredResult
from simulator.models.scores import Outcome
from simulator.models.transcript import StepOutcome, StepStatus
from simulator.reports._states import outcome_mark, step_status_text

__all__ = [
    "ALPHA",
    "CaseDiff",
    "CaseRunSummary",
    "CaseStatus",
    "Change",
    "Comparison",
    "McNemar",
    "RunCorrectness",
    "StepChange",
    "StepDiff",
    "compare_runs",
    "mcnemar_exact",
    "render_comparison_text",
]

#: The significance level McNemar's test is read at.
ALPHA = 0.05

#: A case's aggregated status over its repeats in one run (see :class:`CaseRunSummary`).
CaseStatus = Literal["pass", "fail", "unsure"]
#: How a case changed from run A to run B.
Change = Literal["regressed", "improved", "unchanged", "new", "removed"]
#: How a step changed from run A to run B.
StepChange = Literal["regressed", "improved"]

_CHANGE_ORDER: dict[Change, int] = {"regressed": 0, "improved": 1, "new": 2, "removed": 3, "unchanged": 4}

_Key = tuple[str, str, str | None]

#: The fewest discordant pairs for which some table can be significant at 0.05 (2 / 2^6 < 0.05 <= 2 / 2^5).
_MIN_SIGNIFICANT_N = 6


class CaseRunSummary(DataModel):
    """One case (suite, case, persona) in one run, over its repeats.

    ``outcomes`` are the repeats' outcomes in repeat order; ``passes`` counts ``pass``; ``pass_rate`` =
    passes / repeats. ``status`` is ``pass`` when every repeat passed, ``fail`` when any repeat failed or
    errored, ``unsure`` otherwise.
    """

    outcomes: list[Outcome]
    repeats: int
    passes: int
    pass_rate: float
    status: CaseStatus

    @property
    def passed(self) -> bool:
        """Whether the case passes in this run: every repeat passed."""
        return self.status == "pass"


class StepDiff(DataModel):
    """One step whose completion changed between the runs, with B's reason when it regressed.

    ``complete_a`` / ``recorded_a`` (and B's): repeats in which the step was complete / repeats that record
    the step. ``b_status``, ``b_rationale`` and ``b_repeat`` (0-based, as stored; shown from 1) are those of the
    first B repeat where the step was not complete; they are set for regressed steps only. ``a_status`` is the
    status of the first A repeat where the step was not complete; it is set for improved steps only.
    """

    index: int
    label: str
    change: StepChange
    complete_a: int
    recorded_a: int
    complete_b: int
    recorded_b: int
    b_status: StepStatus | None = None
    b_rationale: str = ""
    b_repeat: int | None = None
    a_status: StepStatus | None = None


class CaseDiff(DataModel):
    """One case identity and how it changed from A to B.

    ``a`` / ``b`` summarise the case in each run (None when the case is not in that run).
    ``pass_rate_change`` = ``b.pass_rate - a.pass_rate`` for a case in both runs, else None. ``steps`` are the
    changed steps (regressed first, then improved, each by step index), only for cases in both runs.
    ``b_reasons`` are the reasons of the first B repeat that did not pass (empty if every B repeat passed).
    """

    suite: str
    case: str
    persona: str | None = None
    change: Change
    a: CaseRunSummary | None = None
    b: CaseRunSummary | None = None
    pass_rate_change: float | None = None
    steps: list[StepDiff] = Field(default_factory=list)
    b_reasons: list[str] = Field(default_factory=list)

    @property
    def regressed_steps(self) -> list[StepDiff]:
        """The steps complete in A and not in B."""
        return [step for step in self.steps if step.change == "regressed"]

    @property
    def improved_steps(self) -> list[StepDiff]:
        """The steps not complete in A and complete in B."""
        return [step for step in self.steps if step.change == "improved"]


class RunCorrectness(DataModel):
    """A run's outcome counts over all its results (every repeat) and ``correctness = passed / total``.

    ``correctness`` is None for a run without results.
    """

    passed: int = 0
    failed: int = 0
    error: int = 0
    unsure: int = 0
    total: int = 0
    correctness: float | None = None


class McNemar(DataModel):
    """McNemar's exact test on paired pass / not-pass results (see :func:`mcnemar_exact`)."""

    b: int = Field(description="Discordant pairs that passed in A and not in B.")
    c: int = Field(description="Discordant pairs that did not pass in A and passed in B.")
    n: int = Field(description="b + c, the discordant pairs.")
    p_value: float
    significant: bool = Field(description=f"p < {ALPHA}.")

    def sentence(self) -> str:
        """The test's result in words: significant or not at 0.05, in which direction, and why not."""
        p = _p_text(self.p_value)
        if self.significant:
            direction = "B is worse than A" if self.b > self.c else "B is better than A"
            return f"Significant at {ALPHA}: p = {p} < {ALPHA}; {direction} on the shared cases."
        sentence = f"Not significant at {ALPHA}: p = {p} >= {ALPHA}."
        if self.n == 0:
            sentence += " No shared case changed between passing and not passing."
        elif self.n < _MIN_SIGNIFICANT_N:
            sentence += (
                f" With only {self.n} discordant pair{'s' if self.n != 1 else ''}, no difference can be significant"
                f" (at least {_MIN_SIGNIFICANT_N} are needed)."
            )
        return sentence


def mcnemar_exact(b: int, c: int) -> McNemar:
    """McNemar's exact (binomial) two-sided test for paired pass / not-pass results.

    ``b`` = pairs that passed in A and not in B, ``c`` = pairs that did not pass in A and passed in B
    (concordant pairs do not enter the test). Under the null hypothesis that A and B pass equally often, each
    of the n = b + c discordant pairs is a fair coin, so with C the binomial coefficient::

        p = min(1, 2 · Σ_{i=0}^{min(b, c)} C(n, i) / 2^n)

    computed exactly in integers, and p = 1.0 when n = 0. The difference is *significant* when p < 0.05.

    With few discordant pairs no difference can be significant: the smallest possible p is 2 / 2^n, which
    is 0.0625 for n = 5, so at least 6 discordant pairs are needed (n = 6, b = 6, c = 0 gives p = 0.03125).
    Examples: b = 5, c = 0 -> p = 2/32 = 0.0625 (not significant); b = 10, c = 1 -> p = 2 · (1 + 11) / 2048 =
    0.01171875 (significant). ValueError when b or c is negative.
    """
    if b < 0 or c < 0:
        raise ValueError(f"b and c must not be negative (got b={b}, c={c})")
    n = b + c
    if n == 0:
        return McNemar(b=b, c=c, n=0, p_value=1.0, significant=False)
    tail = sum(math.comb(n, i) for i in range(min(b, c) + 1))
    p = float(min(Fraction(1), Fraction(2 * tail, 2**n)))
    return McNemar(b=b, c=c, n=n, p_value=p, significant=p < ALPHA)


class Comparison(DataModel):
    """Run B against baseline run A: every case's change, correctness of both, McNemar's test.

    ``cases`` lists every case identity of either run: regressed first, then improved, new, removed and
    unchanged, each group sorted by (suite, case, persona) with no persona first. ``correctness_change`` is
    B's correctness minus A's (None if either run has no results). ``mcnemar`` pairs the cases in both runs.
    The properties (:attr:`has_regressions`, :attr:`regressed`, ...) are derived from ``cases`` and not
    dumped, so the JSON form validates back into a :class:`Comparison` unchanged.
    """

    run_a: str
    run_b: str
    correctness_a: RunCorrectness
    correctness_b: RunCorrectness
    correctness_change: float | None = None
    mcnemar: McNemar
    cases: list[CaseDiff] = Field(default_factory=list)

    @property
    def has_regressions(self) -> bool:
        """Whether any case passed in A and does not pass in B (a regressed case)."""
        return any(case.change == "regressed" for case in self.cases)

    def with_change(self, change: Change) -> list[CaseDiff]:
        """The cases with this change, in listing order."""
        return [case for case in self.cases if case.change == change]

    @property
    def regressed(self) -> list[CaseDiff]:
        """Cases that passed in A and do not pass in B."""
        return self.with_change("regressed")

    @property
    def improved(self) -> list[CaseDiff]:
        """Cases that did not pass in A and pass in B."""
        return self.with_change("improved")

    @property
    def new(self) -> list[CaseDiff]:
        """Cases only in B."""
        return self.with_change("new")

    @property
    def removed(self) -> list[CaseDiff]:
        """Cases only in A."""
        return self.with_change("removed")

    @property
    def unchanged(self) -> list[CaseDiff]:
        """Cases in both runs that pass in both or in neither."""
        return self.with_change("unchanged")


# -- comparing ------------------------------------------------------------------------------------------------


def _group(run: RunRecord, results: Iterable[StoredResult]) -> dict[_Key, list[StoredResult]]:
    """The run's results by case identity, each group in repeat order."""
    groups: dict[_Key, list[StoredResult]] = {}
    for result in results:
        if result.run_id != run.id:
            raise ValueError(f"result {result.key!r} belongs to run {result.run_id!r}, not to run {run.id!r}")
        if not 0 <= result.suite < len(run.snapshot):
            raise ValueError(
                f"result {result.key!r} names suite {result.suite}, but run {run.id!r} has "
                f"{len(run.snapshot)} suite(s) in its snapshot"
            )
        key = (run.snapshot[result.suite].suite.name, result.case, result.persona)
        groups.setdefault(key, []).append(result)
    for group in groups.values():
        group.sort(key=lambda result: (result.repeat, result.key))
    return groups


def _summary(results: Sequence[StoredResult]) -> CaseRunSummary:
    outcomes: list[Outcome] = [result.outcome for result in results]
    stats = repeat_stats(outcomes)
    status: CaseStatus
    if stats.passes == stats.k:
        status = "pass"
    elif any(outcome in ("fail", "error") for outcome in outcomes):
        status = "fail"
    else:
        status = "unsure"
    return CaseRunSummary(
        outcomes=outcomes, repeats=stats.k, passes=stats.passes, pass_rate=stats.pass_rate or 0.0, status=status
    )


def _steps(results: Sequence[StoredResult]) -> dict[tuple[int, str], list[tuple[int, StepOutcome]]]:
    """Every step recorded by the results, by (index, label): (repeat, outcome) in repeat order."""
    steps: dict[tuple[int, str], list[tuple[int, StepOutcome]]] = {}
    for result in results:
        for step in result.result.transcript.steps:
            steps.setdefault((step.index, step.label), []).append((result.repeat, step))
    return steps


def _step_diffs(results_a: Sequence[StoredResult], results_b: Sequence[StoredResult]) -> list[StepDiff]:
    steps_a = _steps(results_a)
    steps_b = _steps(results_b)
    diffs: list[StepDiff] = []
    for index, label in sorted(steps_a.keys() & steps_b.keys()):
        in_a = steps_a[index, label]
        in_b = steps_b[index, label]
        complete_a = sum(1 for _, step in in_a if step.status == "complete")
        complete_b = sum(1 for _, step in in_b if step.status == "complete")
        was_complete = complete_a == len(in_a)
        is_complete = complete_b == len(in_b)
        if was_complete and not is_complete:
            repeat, first = next((r, step) for r, step in in_b if step.status != "complete")
            diffs.append(
                StepDiff(
                    index=index,
                    label=label,
                    change="regressed",
                    complete_a=complete_a,
                    recorded_a=len(in_a),
                    complete_b=complete_b,
                    recorded_b=len(in_b),
                    b_status=first.status,
                    b_rationale=first.rationale,
                    b_repeat=repeat,
                )
            )
        elif is_complete and not was_complete:
            before = next(step for _, step in in_a if step.status != "complete")
            diffs.append(
                StepDiff(
                    index=index,
                    label=label,
                    change="improved",
                    complete_a=complete_a,
                    recorded_a=len(in_a),
                    complete_b=complete_b,
                    recorded_b=len(in_b),
                    a_status=before.status,
                )
            )
    diffs.sort(key=lambda diff: (diff.change != "regressed", diff.index, diff.label))
    return diffs


def _correctness(results: Sequence[StoredResult]) -> RunCorrectness:
    counts = Breakdown.of(result.outcome for result in results)
    return RunCorrectness(
        passed=counts.passed,
        failed=counts.failed,
        error=counts.error,
        unsure=counts.unsure,
        total=counts.total,
        correctness=counts.correctness,
    )


def _sort_key(diff: CaseDiff) -> tuple[int, str, str, bool, str]:
    return (_CHANGE_ORDER[diff.change], diff.suite, diff.case, diff.persona is not None, diff.persona or "")


def compare_runs(
    run_a: RunRecord, results_a: list[StoredResult], run_b: RunRecord, results_b: list[StoredResult]
) -> Comparison:
    """Compare run B (new) against run A (baseline); the definitions are in this module's docstring.

    Each case identity ``(suite name, case name, persona)`` of either run becomes one :class:`CaseDiff`
    (regressed / improved / unchanged / new / removed, with the pass-rate change and the changed steps);
    correctness is computed over each run's results; McNemar's exact test pairs the cases in both runs,
    b = passes in A and not in B, c = does not pass in A and passes in B.

    ValueError when a result belongs to another run (its ``run_id``) or names a suite its run does not have.
    """
    groups_a = _group(run_a, results_a)
    groups_b = _group(run_b, results_b)
    cases: list[CaseDiff] = []
    for key in groups_a.keys() | groups_b.keys():
        suite, case, persona = key
        in_a = groups_a.get(key, [])
        in_b = groups_b.get(key, [])
        b_reasons = next((list(r.result.reasons) for r in in_b if r.outcome != "pass"), [])
        if not in_a or not in_b:
            change: Change = "removed" if in_a else "new"
            only = _summary(in_a or in_b)
            cases.append(
                CaseDiff(
                    suite=suite,
                    case=case,
                    persona=persona,
                    change=change,
                    a=only if in_a else None,
                    b=only if in_b else None,
                    b_reasons=b_reasons,
                )
            )
            continue
        a, b = _summary(in_a), _summary(in_b)
        if a.passed and not b.passed:
            change = "regressed"
        elif b.passed and not a.passed:
            change = "improved"
        else:
            change = "unchanged"
        cases.append(
            CaseDiff(
                suite=suite,
                case=case,
                persona=persona,
                change=change,
                a=a,
                b=b,
                pass_rate_change=b.pass_rate - a.pass_rate,
                steps=_step_diffs(in_a, in_b),
                b_reasons=b_reasons,
            )
        )
    cases.sort(key=_sort_key)
    correctness_a = _correctness(results_a)
    correctness_b = _correctness(results_b)
    change_in_correctness = (
        None
        if correctness_a.correctness is None or correctness_b.correctness is None
        else correctness_b.correctness - correctness_a.correctness
    )
    regressed = sum(1 for case in cases if case.change == "regressed")
    improved = sum(1 for case in cases if case.change == "improved")
    return Comparison(
        run_a=run_a.id,
        run_b=run_b.id,
        correctness_a=correctness_a,
        correctness_b=correctness_b,
        correctness_change=change_in_correctness,
        mcnemar=mcnemar_exact(regressed, improved),
        cases=cases,
    )


# -- text -----------------------------------------------------------------------------------------------------


def _p_text(p: float) -> str:
    return f"{p:.4g}"


def _percent(value: float | None) -> str:
    return "n/a" if value is None else f"{value * 100:.1f}%"


def points_change(delta: float) -> str:
    """A change of a rate in points: ``+12.5 points``."""
    return f"{delta * 100:+.1f} points"


def case_label(diff: CaseDiff) -> str:
    """``suite / case [persona name]``."""
    persona = f" [persona {diff.persona}]" if diff.persona is not None else ""
    return f"{diff.suite} / {diff.case}{persona}"


def case_state(summary: CaseRunSummary) -> str:
    """``"<mark> <status> <passes>/<repeats>"``, naming errors apart so they are never hidden, e.g.
    ``✗ fail 0/1 (1 error)``; the mark is every view's (✓ pass, ✗ fail, ? unsure)."""
    errors = summary.outcomes.count("error")
    detail = f" ({errors} error{'s' if errors != 1 else ''})" if errors else ""
    return f"{outcome_mark(summary.status)} {summary.status} {summary.passes}/{summary.repeats}{detail}"


def repeat_number(repeat: int) -> int:
    """A stored (0-based) repeat as every view numbers it, from 1."""
    return repeat + 1


def _case_line(diff: CaseDiff) -> str:
    if diff.a is not None and diff.b is not None:
        line = f"{case_label(diff)}: {case_state(diff.a)} -> {case_state(diff.b)}"
        if diff.pass_rate_change and max(diff.a.repeats, diff.b.repeats) > 1:
            line += f" (pass rate {points_change(diff.pass_rate_change)})"
        return line
    summary = diff.b if diff.b is not None else diff.a
    assert summary is not None  # a case is in at least one run
    return f"{case_label(diff)}: {case_state(summary)}"


def _step_lines(diff: CaseDiff) -> list[str]:
    lines: list[str] = []
    for step in diff.steps:
        counts = f"complete {step.complete_a}/{step.recorded_a} -> {step.complete_b}/{step.recorded_b}"
        line = f"      step {step.index + 1} ({step.label}) {step.change}: {counts}"
        if step.change == "regressed":
            repeated = diff.b is not None and diff.b.repeats > 1 and step.b_repeat is not None
            where = f" in B repeat {repeat_number(step.b_repeat or 0)}" if repeated else " in B"
            line += f"; {step_status_text(step.b_status or 'incomplete')}{where}"
            if step.b_rationale:
                line += f" — {step.b_rationale}"
        elif step.a_status is not None:
            line += f"; {step_status_text(step.a_status)} in A"
        lines.append(line)
    return lines


def _why_lines(diff: CaseDiff) -> list[str]:
    return [f"      why: {reason}" for reason in diff.b_reasons]


def render_comparison_text(comparison: Comparison) -> list[str]:
    """Plain lines for the terminal, in this order:

    1. a header naming run A (baseline) and run B (new);
    2. correctness A -> B, with passed/total and the change in percentage points;
    3. McNemar's b, c, n and exact p, then the significance sentence (:meth:`McNemar.sentence`);
    4. REGRESSED cases, each with its changed steps (a regressed step with B's status and rationale) and the
       reasons the first non-passing B repeat gave; then IMPROVED, NEW and REMOVED cases. A case reads
       ``status passes/repeats`` in A -> B (errors named apart), with the pass-rate change in points when
       either run repeated it;
    5. the count of unchanged cases, listing those whose pass rate or steps changed.
    """
    a, b = comparison.correctness_a, comparison.correctness_b
    change = "" if comparison.correctness_change is None else f" ({points_change(comparison.correctness_change)})"
    test = comparison.mcnemar
    lines = [
        f"Comparing run {comparison.run_b} (B, new) against run {comparison.run_a} (A, baseline)",
        f"Correctness: {_percent(a.correctness)} ({a.passed}/{a.total}) -> "
        f"{_percent(b.correctness)} ({b.passed}/{b.total}){change}",
        f"McNemar on shared cases: b = {test.b} (passed in A, not in B), c = {test.c} (passed in B, not in A), "
        f"n = {test.n}, exact two-sided p = {_p_text(test.p_value)}",
        test.sentence(),
    ]
    regressed = comparison.regressed
    if regressed:
        lines.append(f"REGRESSED ({len(regressed)}):")
        for diff in regressed:
            lines.append(f"  ! {_case_line(diff)}")
            lines.extend(_step_lines(diff))
            lines.extend(_why_lines(diff))
    else:
        lines.append("No regressed cases.")
    sections: list[tuple[str, str, list[CaseDiff]]] = [
        ("IMPROVED", "+", comparison.improved),
        ("NEW (only in B)", "*", comparison.new),
        ("REMOVED (only in A)", "-", comparison.removed),
    ]
    for title, mark, diffs in sections:
        if not diffs:
            continue
        lines.append(f"{title} ({len(diffs)}):")
        for diff in diffs:
            lines.append(f"  {mark} {_case_line(diff)}")
            lines.extend(_step_lines(diff))
            if diff.change == "new":
                lines.extend(_why_lines(diff))
    unchanged = comparison.unchanged
    moved = [diff for diff in unchanged if diff.pass_rate_change or diff.steps]
    detail = f", {len(moved)} with a changed pass rate or steps" if moved else ""
    lines.append(f"Unchanged: {len(unchanged)}{detail}")
    for diff in moved:
        lines.append(f"  = {_case_line(diff)}")
        lines.extend(_step_lines(diff))
    return lines
