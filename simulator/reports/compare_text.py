"""A comparison of two runs as plain lines for the terminal (pure functions, no I/O).

The comparison is :func:`simulator.analysis.compare.compare_runs`'s (:class:`~simulator.models.comparison.Comparison`);
:mod:`simulator.reports.compare_report` renders the same content as Markdown and HTML with the helpers here.
"""

from __future__ import annotations

from simulator.models.comparison import CaseDiff, CaseRunSummary, Comparison
from simulator.reports._states import outcome_mark, step_status_text
from simulator.reports.figures import percent

__all__ = [
    "case_label",
    "case_state",
    "correctness_title",
    "points_change",
    "render_comparison_text",
    "repeat_number",
    "settings_lines",
    "would_be",
]


def _p_text(p: float) -> str:
    return f"{p:.4g}"


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
    user_errors = summary.outcomes.count("user_error")
    named = [f"{errors} error{'s' if errors != 1 else ''}"] if errors else []
    named += [f"{user_errors} user error{'s' if user_errors != 1 else ''}"] if user_errors else []
    detail = f" ({', '.join(named)})" if named else ""
    return f"{outcome_mark(summary.status)} {summary.status} {summary.passes}/{summary.repeats}{detail}"


def repeat_number(repeat: int) -> int:
    """A stored (0-based) repeat as every view numbers it, from 1."""
    return repeat + 1


def correctness_title(comparison: Comparison) -> str:
    """What the correctness figures count: the comparable cases in both runs, every repeat."""
    count = len(comparison.comparable)
    return f"Correctness on the {count} comparable case{'s' if count != 1 else ''} in both runs"


def would_be(change: str | None) -> str:
    """`` (would be regressed)`` for a not comparable case or step that moved, else nothing."""
    return f" (would be {change})" if change in ("regressed", "improved") else ""


def settings_lines(comparison: Comparison) -> list[str]:
    """What differs between the runs' settings, A -> B, one line each; one line saying so when nothing does."""
    if not comparison.settings:
        return ["Settings: the same in both runs."]
    return [
        "Settings that differ (A -> B):",
        *(f"  {diff.setting}: {diff.a} -> {diff.b}" for diff in comparison.settings),
    ]


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
        line = f"      step {step.index + 1} ({step.label}) {step.change.replace('_', ' ')}: {counts}"
        if step.change == "regressed":
            repeated = diff.b is not None and diff.b.repeats > 1 and step.b_repeat is not None
            where = f" in B repeat {repeat_number(step.b_repeat or 0)}" if repeated else " in B"
            line += f"; {step_status_text(step.b_status or 'incomplete')}{where}"
            if step.b_rationale:
                line += f" — {step.b_rationale}"
        elif step.change == "improved" and step.a_status is not None:
            line += f"; {step_status_text(step.a_status)} in A"
        else:
            line += f"{would_be(step.would_be)} — {step.not_comparable}"
        lines.append(line)
    return lines


def _why_lines(diff: CaseDiff) -> list[str]:
    return [f"      why: {reason}" for reason in diff.b_reasons]


def render_comparison_text(comparison: Comparison) -> list[str]:
    """Plain lines for the terminal, in this order:

    1. a header naming run A (baseline) and run B (new);
    2. the settings that differ between the runs, A -> B (:func:`settings_lines`);
    3. correctness A -> B over the comparable cases in both runs, with passed/total and the change in
       percentage points;
    4. McNemar's b, c, n and exact p over the comparable cases, then the significance sentence
       (:meth:`McNemar.sentence`);
    5. REGRESSED cases, each with its changed steps (a regressed step with B's status and rationale) and the
       reasons the first non-passing B repeat gave; then IMPROVED, NEW, REMOVED and NOT COMPARABLE cases (with
       the change they would read as and why they are not comparable). A case reads ``status passes/repeats``
       in A -> B (errors named apart), with the pass-rate change in points when either run repeated it;
    6. the count of unchanged cases, listing those whose pass rate or steps changed.
    """
    a, b = comparison.correctness_a, comparison.correctness_b
    change = "" if comparison.correctness_change is None else f" ({points_change(comparison.correctness_change)})"
    test = comparison.mcnemar
    lines = [
        f"Comparing run {comparison.run_b} (B, new) against run {comparison.run_a} (A, baseline)",
        *settings_lines(comparison),
        f"{correctness_title(comparison)}: {percent(a.correctness)} ({a.passed}/{a.total}) -> "
        f"{percent(b.correctness)} ({b.passed}/{b.total}){change}",
        f"McNemar on the comparable cases: b = {test.b} (passed in A, not in B), c = {test.c} (passed in B, not in A), "
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
    apart = comparison.not_comparable
    if apart:
        lines.append(f"NOT COMPARABLE ({len(apart)}), never counted as regressed or improved:")
        for diff in apart:
            lines.append(f"  ~ {_case_line(diff)}{would_be(diff.would_be)}")
            lines.append(f"      not comparable: {diff.not_comparable}")
            lines.extend(_step_lines(diff))
    unchanged = comparison.unchanged
    moved = [diff for diff in unchanged if diff.pass_rate_change or diff.steps]
    detail = f", {len(moved)} with a changed pass rate or steps" if moved else ""
    lines.append(f"Unchanged: {len(unchanged)}{detail}")
    for diff in moved:
        lines.append(f"  = {_case_line(diff)}")
        lines.extend(_step_lines(diff))
    return lines
