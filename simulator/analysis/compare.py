"""Compare two runs: which cases and steps regressed or improved, correctness of both, and McNemar's test.

Run A is the baseline, run B the new run. Everything here is pure (no I/O); the models
(:mod:`simulator.models.comparison`) are pydantic so the CLI can dump a :class:`Comparison` as JSON;
:func:`simulator.reports.compare_text.render_comparison_text` gives the terminal lines. Outcome counts and each
case's repeats are read from each run's summary (:func:`simulator.metrics.summarized`); the results are read
for what changed step by step and why.

Definitions (pinned by ``tests/test_compare.py``):

- **Case identity** is ``(suite name, case name, persona)``: the suite name is
  ``run.snapshot[result.suite].suite.name``, the case and persona those of the stored result. All repeats of
  one identity in one run are aggregated (two suites of one run with the same name count as one suite).
- **Case status in a run** (:class:`CaseRunSummary`): ``pass`` when every repeat's outcome is ``pass``;
  ``fail`` when any repeat's outcome is ``fail`` or ``error``; ``unsure`` otherwise (no failure or error,
  but at least one ``unsure``); ``user_error`` when every repeat is a ``user_error`` (the simulated user
  caused each failure; such repeats are left out of the pass rate, and a case ``user_error`` in either run
  is ``unchanged``: the agent was not shown to change). The pass rate is ``passes / repeats`` as
  :func:`simulator.metrics.repeat_stats` defines it (only ``pass`` is a pass). A case *passes* in a run when
  its status is ``pass``.
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

import json
import math
from collections.abc import Iterable, Sequence
from fractions import Fraction

from simulator.analysis._judging import (
    Judging,
    OneSided,
    judging_of,
    only_judging_holds,
    step_only_judging_holds,
)
from simulator.analysis._run_settings import setting_diffs
from simulator.metrics import counts, repeat_stats, summarized
from simulator.models.comparison import (
    ALPHA,
    CaseDiff,
    CaseRunSummary,
    CaseStatus,
    Change,
    Comparison,
    McNemar,
    SettingDiff,
    StepChange,
    StepDiff,
)
from simulator.models.run import RunRecord, StoredResult
from simulator.models.scores import Outcome
from simulator.models.summary import RunSummary
from simulator.models.transcript import StepOutcome

__all__ = [
    "ALPHA",
    "CaseDiff",
    "CaseRunSummary",
    "CaseStatus",
    "Change",
    "Comparison",
    "McNemar",
    "SettingDiff",
    "StepChange",
    "StepDiff",
    "compare_runs",
    "mcnemar_exact",
]

_CHANGE_ORDER: dict[Change, int] = {
    "regressed": 0, "improved": 1, "new": 2, "removed": 3, "not_comparable": 4, "unchanged": 5,
}  # fmt: skip

_Key = tuple[str, str, str | None]

#: Why a case whose definition differs between the runs is not comparable.
NOT_THE_SAME = (
    "the case is not the same in both runs: its definition, persona, thresholds, judging, tool fakes or judge "
    "prompts differ"
)


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


def _cases(run: RunRecord, summary: RunSummary) -> dict[_Key, list[Outcome]]:
    """Every case identity's outcomes in repeat order, from the run's summary (same-named suites as one)."""
    cases: dict[_Key, list[Outcome]] = {}
    for case in summary.cases:
        if not 0 <= case.suite < len(run.snapshot):
            raise ValueError(
                f"case {case.case!r} names suite {case.suite}, but run {run.id!r} has "
                f"{len(run.snapshot)} suite(s) in its snapshot"
            )
        cases.setdefault((run.snapshot[case.suite].suite.name, case.case, case.persona), []).extend(case.outcomes)
    return cases


def _summary(outcomes: list[Outcome]) -> CaseRunSummary:
    stats = repeat_stats(outcomes)
    status: CaseStatus
    if stats.k == 0 and outcomes:
        status = "user_error"  # every repeat failed through the simulated user: nothing shown about the agent
    elif stats.passes == stats.k:
        status = "pass"
    elif any(outcome in ("fail", "error") for outcome in outcomes):
        status = "fail"
    else:
        status = "unsure"
    return CaseRunSummary(
        outcomes=outcomes, repeats=stats.k, passes=stats.passes, pass_rate=stats.pass_rate or 0.0, status=status
    )


def _steps(results: Sequence[StoredResult]) -> dict[tuple[int, str], list[tuple[StoredResult, StepOutcome]]]:
    """Every step recorded by the results, by (index, label): (result, outcome) in repeat order."""
    steps: dict[tuple[int, str], list[tuple[StoredResult, StepOutcome]]] = {}
    for result in results:
        for step in result.result.transcript.steps:
            steps.setdefault((step.index, step.label), []).append((result, step))
    return steps


def _step_diffs(
    results_a: Sequence[StoredResult],
    results_b: Sequence[StoredResult],
    judging_a: Judging,
    judging_b: Judging,
) -> list[StepDiff]:
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
        counts_of = {
            "index": index, "label": label, "complete_a": complete_a, "recorded_a": len(in_a),
            "complete_b": complete_b, "recorded_b": len(in_b),
        }  # fmt: skip
        if was_complete and not is_complete:
            held = [(r, step) for r, step in in_b if step.status != "complete"]
            one_sided = step_only_judging_holds(held, judging_a)
            stored, first = held[0]
            diffs.append(
                StepDiff(
                    **counts_of,
                    change="not_comparable" if one_sided else "regressed",
                    would_be="regressed" if one_sided else None,
                    not_comparable=one_sided.reason("B", "A") if one_sided else "",
                    b_status=first.status,
                    b_rationale=first.rationale,
                    b_repeat=stored.repeat,
                )
            )
        elif is_complete and not was_complete:
            held = [(r, step) for r, step in in_a if step.status != "complete"]
            one_sided = step_only_judging_holds(held, judging_b)
            diffs.append(
                StepDiff(
                    **counts_of,
                    change="not_comparable" if one_sided else "improved",
                    would_be="improved" if one_sided else None,
                    not_comparable=one_sided.reason("A", "B") if one_sided else "",
                    a_status=held[0][1].status,
                )
            )
    order = {"regressed": 0, "improved": 1, "not_comparable": 2}
    diffs.sort(key=lambda diff: (order[diff.change], diff.index, diff.label))
    return diffs


def _definitions(run: RunRecord, summary: RunSummary) -> dict[_Key, set[str]]:
    """What each case identity was measured against in the run, as canonical JSON (one per suite holding it):
    the case as written, the persona played, and the suite's thresholds, judging, language, tool fakes and
    judge prompts. The agent is not part of it: comparing agents is what compare is for."""
    found: dict[_Key, set[str]] = {}
    for case in summary.cases:
        snapshot = run.snapshot[case.suite]
        suite = snapshot.suite
        written = next((c for c in suite.cases if c.name == case.case), None)
        persona = snapshot.personas.get(case.persona) if case.persona is not None else None
        definition = {
            "case": written.model_dump(mode="json") if written is not None else None,
            "persona": persona.model_dump(mode="json") if persona is not None else None,
            "thresholds": suite.thresholds.model_dump(mode="json"),
            "judging": suite.judging.model_dump(mode="json"),
            "language": suite.language,
            "tool_fakes": [fake.model_dump(mode="json") for fake in suite.tool_fakes],
            "judge_prompts": [suite.judge_prompts, snapshot.prompt_overrides],
        }
        key = (suite.name, case.case, case.persona)
        found.setdefault(key, set()).add(json.dumps(definition, sort_keys=True, ensure_ascii=False))
    return found


def _not_passing(results: Sequence[StoredResult]) -> list[StoredResult]:
    """The repeats that did not pass, leaving out those the simulated user spoiled (they show nothing)."""
    return [result for result in results if result.outcome not in ("pass", "user_error")]


def _one_sided(
    change: Change, in_a: Sequence[StoredResult], in_b: Sequence[StoredResult], judging_a: Judging, judging_b: Judging
) -> str:
    """Why a regression or an improvement rests only on checks judged in one run, or "" when it is real."""
    one_sided: OneSided | None
    if change == "regressed":
        one_sided = only_judging_holds(_not_passing(in_b), judging_a)
        return one_sided.reason("B", "A") if one_sided else ""
    if change == "improved":
        one_sided = only_judging_holds(_not_passing(in_a), judging_b)
        return one_sided.reason("A", "B") if one_sided else ""
    return ""


def _sort_key(diff: CaseDiff) -> tuple[int, str, str, bool, str]:
    return (_CHANGE_ORDER[diff.change], diff.suite, diff.case, diff.persona is not None, diff.persona or "")


def compare_runs(
    run_a: RunRecord, results_a: list[StoredResult], run_b: RunRecord, results_b: list[StoredResult]
) -> Comparison:
    """Compare run B (new) against run A (baseline); the definitions are in this module's docstring.

    Each case identity ``(suite name, case name, persona)`` of either run becomes one :class:`CaseDiff`
    (regressed / improved / unchanged / new / removed, with the pass-rate change and the changed steps);
    correctness and each case's repeats come from each run's summary (computed from its results when the run
    has none, e.g. a run stored by an older version); McNemar's exact test pairs the cases in both runs,
    b = passes in A and not in B, c = does not pass in A and passes in B.

    ValueError when a result belongs to another run (its ``run_id``) or names a suite its run does not have.
    """
    groups_a = _group(run_a, results_a)
    groups_b = _group(run_b, results_b)
    summary_a = _summary_of(run_a, groups_a)
    summary_b = _summary_of(run_b, groups_b)
    outcomes_a = _cases(run_a, summary_a)
    outcomes_b = _cases(run_b, summary_b)
    definitions_a = _definitions(run_a, summary_a)
    definitions_b = _definitions(run_b, summary_b)
    cases: list[CaseDiff] = []
    for key in outcomes_a.keys() | outcomes_b.keys():
        suite, case, persona = key
        in_a = groups_a.get(key, [])
        in_b = groups_b.get(key, [])
        b_reasons = next((list(r.result.reasons) for r in in_b if r.outcome != "pass"), [])
        if key not in outcomes_a or key not in outcomes_b:
            change: Change = "removed" if key in outcomes_a else "new"
            only = _summary(outcomes_a.get(key) or outcomes_b[key])
            cases.append(
                CaseDiff(
                    suite=suite,
                    case=case,
                    persona=persona,
                    change=change,
                    a=only if change == "removed" else None,
                    b=only if change == "new" else None,
                    b_reasons=b_reasons,
                )
            )
            continue
        a, b = _summary(outcomes_a[key]), _summary(outcomes_b[key])
        if "user_error" in (a.status, b.status):
            change = "unchanged"  # a run whose every repeat the simulated user spoiled shows no change of the agent
        elif a.passed and not b.passed:
            change = "regressed"
        elif b.passed and not a.passed:
            change = "improved"
        else:
            change = "unchanged"
        judging_a, judging_b = judging_of(in_a), judging_of(in_b)
        if definitions_a.get(key) != definitions_b.get(key):
            why = NOT_THE_SAME
        else:
            why = _one_sided(change, in_a, in_b, judging_a, judging_b)
        cases.append(
            CaseDiff(
                suite=suite,
                case=case,
                persona=persona,
                change="not_comparable" if why else change,
                a=a,
                b=b,
                pass_rate_change=b.pass_rate - a.pass_rate,
                steps=_step_diffs(in_a, in_b, judging_a, judging_b),
                b_reasons=b_reasons,
                would_be=change if why else None,
                not_comparable=why,
            )
        )
    cases.sort(key=_sort_key)
    comparable = [case for case in cases if case.change in ("regressed", "improved", "unchanged")]
    correctness_a = counts(outcome for case in comparable if case.a is not None for outcome in case.a.outcomes)
    correctness_b = counts(outcome for case in comparable if case.b is not None for outcome in case.b.outcomes)
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
        settings=setting_diffs(run_a, run_b),
    )


def _summary_of(run: RunRecord, groups: dict[_Key, list[StoredResult]]) -> RunSummary:
    """The run's stored summary, or one computed from its results when it has none (or an older one)."""
    record = summarized(run, (result for group in groups.values() for result in group))
    assert record.totals is not None  # summarized always gives one
    return record.totals
