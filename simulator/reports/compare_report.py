"""A comparison of two runs as Markdown or as one self-contained HTML page (pure functions, no I/O).

Both renderings of a :class:`~simulator.models.comparison.Comparison` have the same content, in this order:

1. a header: run A (baseline) and run B (new), correctness A -> B over the comparable cases in both runs with
   passed/total and the change in percentage points, McNemar's b, c, n and exact p over the same cases, and the
   significance sentence (:meth:`~simulator.models.comparison.McNemar.sentence`); then the settings that differ
   between the runs, A -> B;
2. the **regressed** cases, first, each with its changed steps side by side in a table
   ``step | A | B | B's rationale`` (A and B give the step's status and how many repeats completed it; a
   regressed step shows the status of the first B repeat that did not complete it, and that repeat's
   rationale; an improved step, the status of the first A repeat that did not), then the reasons the first
   non-passing B repeat gave;
3. the **improved** cases (same table, without a rationale: the step completed), then the **new** cases
   (only in B, with B's reasons when they did not pass), the **removed** ones (only in A) and the **not
   comparable** ones (the change they would read as and why they are not comparable, never counted);
4. the count of **unchanged** cases, listing those whose pass rate or steps changed.

Statuses carry the marks of every view (:mod:`simulator.reports._states`): ✓ complete / pass, ✗ not complete /
fail, ? unsure, ⊘ blocked or not reached; repeats are numbered from 1.

Escaping. Every text taken from the runs (run ids, suite, case and persona names, step labels, rationales,
reasons) is untrusted. In Markdown it goes through :func:`simulator.reports.markdown.escape` (HTML written
as entities, Markdown syntax backslash-escaped, so no text adds a link, table cell or HTML element); in HTML
through ``html.escape(..., quote=True)`` after its control characters and bidi marks are written as visible
escapes (``\\u202e``). The HTML page embeds the run report's stylesheet
(``assets/report.css``) and has no script at all: its Content-Security-Policy (:data:`CONTENT_SECURITY_POLICY`)
allows inline styles only, so even text that escaped escaping could run nothing and load nothing.
"""

from __future__ import annotations

import html
from collections.abc import Sequence
from importlib import resources

from simulator.models.comparison import CaseDiff, Change, Comparison, McNemar, StepDiff
from simulator.models.summary import Counts
from simulator.models.transcript import StepStatus
from simulator.reports._html_values import HtmlParts
from simulator.reports._states import CSS_CLASS, step_state, step_status_text
from simulator.reports.compare_text import (
    case_label,
    case_state,
    correctness_title,
    points_change,
    repeat_number,
    would_be,
)
from simulator.reports.figures import percent
from simulator.reports.markdown import escape as md_escape
from simulator.safety import terminal_safe

__all__ = [
    "CONTENT_SECURITY_POLICY",
    "compare_css",
    "render_compare_html",
    "render_compare_markdown",
    "render_compare_parts",
]

#: The comparison page's Content-Security-Policy: no network access and no script, inline styles only.
CONTENT_SECURITY_POLICY = (
    "default-src 'none'; style-src 'unsafe-inline'; img-src data:; base-uri 'none'; form-action 'none'"
)

#: The sections after the regressions, in order, with their titles.
_SECTIONS: tuple[tuple[Change, str], ...] = (
    ("improved", "Improved"),
    ("new", "New (only in B)"),
    ("removed", "Removed (only in A)"),
)
_ALL_CHANGES: tuple[Change, ...] = ("regressed", "improved", "new", "removed", "not_comparable", "unchanged")
_NOT_COMPARABLE_TITLE = "Not comparable (never counted as regressed or improved)"


def _css() -> str:
    text = resources.files("simulator.reports").joinpath("assets", "report.css").read_text(encoding="utf-8")
    if "</style" in text.lower():  # pragma: no cover - guards the shipped file
        raise ValueError("assets/report.css must not contain '</style'")
    return text


_CSS = _css()
_EXTRA_CSS = """
.compare-case { border: 1px solid #d0d7de; border-radius: 6px; padding: .5rem .9rem; margin: .6rem 0; }
.compare-case.change-regressed { border-left: 5px solid #cf222e; }
.compare-case.change-improved { border-left: 5px solid #1a7f37; }
.compare-case.change-not_comparable { border-left: 5px solid #9a6700; }
.compare-case h3 { margin: .2rem 0 .4rem; font-size: 1.05rem; }
table.step-diff { width: 100%; }
table.step-diff td.rationale { white-space: pre-wrap; }
.significant { font-weight: 600; }
"""


# -- shared wording -------------------------------------------------------------------------------------------


def _p(p: float) -> str:
    return f"{p:.4g}"


def _states(diff: CaseDiff) -> str:
    """The case in A -> B (or in the one run that has it), with the pass-rate change when it was repeated."""
    if diff.a is not None and diff.b is not None:
        text = f"{case_state(diff.a)} -> {case_state(diff.b)}"
        if diff.pass_rate_change and max(diff.a.repeats, diff.b.repeats) > 1:
            text += f" (pass rate {points_change(diff.pass_rate_change)})"
        return text
    only = diff.b if diff.b is not None else diff.a
    assert only is not None  # a case is in at least one run
    return f"{case_state(only)} (only in {'B' if diff.b is not None else 'A'})"


def _correctness(a: Counts, b: Counts, change: float | None) -> str:
    delta = "" if change is None else f" ({points_change(change)})"
    return f"{percent(a.correctness)} ({a.passed}/{a.total}) -> {percent(b.correctness)} ({b.passed}/{b.total}){delta}"


def _mcnemar(test: McNemar) -> str:
    return (
        f"b = {test.b} (passed in A, not in B), c = {test.c} (passed in B, not in A), n = {test.n}, "
        f"exact two-sided p = {_p(test.p_value)}"
    )


def _step_name(step: StepDiff) -> str:
    return f"{step.index + 1}. {step.label}"


def _moved_as(step: StepDiff) -> str:
    """How the step moved: its change, or the change a not comparable step would read as."""
    return step.would_be or step.change


def _a_status(step: StepDiff) -> StepStatus:
    return "complete" if _moved_as(step) == "regressed" else step.a_status or "incomplete"


def _b_status(step: StepDiff) -> StepStatus:
    return "complete" if _moved_as(step) == "improved" else step.b_status or "incomplete"


def _rationale(step: StepDiff) -> str | None:
    """The step table's last cell: B's rationale of a regressed step, or why a step is not comparable."""
    if step.change == "not_comparable":
        return f"not comparable{would_be(step.would_be)}: {step.not_comparable}"
    if step.change == "regressed" and step.b_rationale:
        return step.b_rationale
    return None


def _a_cell(step: StepDiff) -> str:
    return f"{step_status_text(_a_status(step))} ({step.complete_a}/{step.recorded_a})"


def _b_cell(step: StepDiff, diff: CaseDiff) -> str:
    counts = f"({step.complete_b}/{step.recorded_b})"
    where = ""
    regressed = _moved_as(step) == "regressed"
    if regressed and step.b_repeat is not None and diff.b is not None and diff.b.repeats > 1:
        where = f", first in repeat {repeat_number(step.b_repeat)}"
    return f"{step_status_text(_b_status(step))} {counts}{where}"


def _moved(comparison: Comparison) -> list[CaseDiff]:
    return [diff for diff in comparison.unchanged if diff.pass_rate_change or diff.steps]


# -- Markdown -------------------------------------------------------------------------------------------------


def _md_steps(diff: CaseDiff) -> list[str]:
    if not diff.steps:
        return []
    lines = ["| step | A | B | B's rationale |", "|---|---|---|---|"]
    for step in diff.steps:
        text = _rationale(step)
        rationale = md_escape(text) if text else "—"
        lines.append(f"| {md_escape(_step_name(step))} | {_a_cell(step)} | {_b_cell(step, diff)} | {rationale} |")
    return [*lines, ""]


def _md_reasons(diff: CaseDiff) -> list[str]:
    if not diff.b_reasons:
        return []
    return ["Why B did not pass:", "", *(f"- {md_escape(reason)}" for reason in diff.b_reasons), ""]


def _md_case(diff: CaseDiff, *, reasons: bool) -> list[str]:
    lines = [f"### {md_escape(case_label(diff))}", "", _states(diff), ""]
    steps = _md_steps(diff)
    if diff.change == "regressed" and not steps:
        lines += ["No step changed between the runs.", ""]
    lines += steps
    if reasons:
        lines += _md_reasons(diff)
    return lines


def _md_settings(comparison: Comparison) -> list[str]:
    if not comparison.settings:
        return ["## Settings", "", "The settings are the same in both runs.", ""]
    rows = [f"| {md_escape(d.setting)} | {md_escape(d.a)} | {md_escape(d.b)} |" for d in comparison.settings]
    return ["## Settings that differ", "", "| setting | A | B |", "|---|---|---|", *rows, ""]


def render_compare_markdown(comparison: Comparison) -> str:
    """The comparison as Markdown: header, regressed cases first with a step table each, then improved, new
    and removed cases, and the unchanged count (see the module docstring). Pure; all run text is escaped."""
    test = comparison.mcnemar
    run_a, run_b = md_escape(comparison.run_a), md_escape(comparison.run_b)
    lines = [
        f"# Run comparison: {run_b} against {run_a}",
        "",
        f"- **Run A (baseline):** {run_a}",
        f"- **Run B (new):** {run_b}",
        f"- **{correctness_title(comparison)}, A -> B:** "
        f"{_correctness(comparison.correctness_a, comparison.correctness_b, comparison.correctness_change)}",
        f"- **McNemar on the comparable cases:** {_mcnemar(test)}",
        f"- **Significance:** {test.sentence()}",
        "",
        *_md_settings(comparison),
    ]
    regressed = comparison.regressed
    lines += [f"## Regressed ({len(regressed)})", ""]
    if not regressed:
        lines += ["No regressed cases.", ""]
    for diff in regressed:
        lines += _md_case(diff, reasons=True)
    for change, title in _SECTIONS:
        diffs = comparison.with_change(change)
        if not diffs:
            continue
        lines += [f"## {title} ({len(diffs)})", ""]
        if change == "improved":
            for diff in diffs:
                lines += _md_case(diff, reasons=False)
        else:
            for diff in diffs:
                lines.append(f"- {md_escape(case_label(diff))}: {_states(diff)}")
                if change == "new":
                    lines += [f"  - why: {md_escape(reason)}" for reason in diff.b_reasons]
            lines.append("")
    apart = comparison.not_comparable
    if apart:
        lines += [f"## {_NOT_COMPARABLE_TITLE} ({len(apart)})", ""]
        for diff in apart:
            lines += [f"### {md_escape(case_label(diff))}", "", f"{_states(diff)}{would_be(diff.would_be)}", ""]
            lines += [f"Not comparable: {md_escape(diff.not_comparable)}", "", *_md_steps(diff)]
    unchanged = comparison.unchanged
    moved = _moved(comparison)
    lines += [f"## Unchanged ({len(unchanged)})", ""]
    detail = f", {len(moved)} with a changed pass rate or steps" if moved else ""
    lines += [f"{len(unchanged)} case{'s' if len(unchanged) != 1 else ''} unchanged{detail}.", ""]
    for diff in moved:
        lines += _md_case(diff, reasons=False)
    while lines and not lines[-1]:
        lines.pop()
    return "\n".join(lines) + "\n"


# -- HTML -----------------------------------------------------------------------------------------------------


def _e(value: object) -> str:
    """Any value as HTML text or attribute content: ``&``, ``<``, ``>``, ``"`` and ``'`` escaped, control
    characters and bidi marks written as visible escapes, as the run report writes them."""
    return html.escape(terminal_safe(str(value)), quote=True)


def _html_steps(diff: CaseDiff) -> str:
    if not diff.steps:
        if diff.change == "regressed":
            return "<p class='muted'>No step changed between the runs.</p>"
        return ""
    rows = []
    for step in diff.steps:
        text = _rationale(step)
        rationale = _e(text) if text else "<span class='muted'>—</span>"
        rows.append(
            f"<tr class='step-{_e(step.change)}'><td>{_e(_step_name(step))}</td>"
            f"<td class='{CSS_CLASS[step_state(_a_status(step))]}'>{_e(_a_cell(step))}</td>"
            f"<td class='{CSS_CLASS[step_state(_b_status(step))]}'>{_e(_b_cell(step, diff))}</td>"
            f"<td class='rationale'>{rationale}</td></tr>"
        )
    return (
        "<table class='step-diff'><thead><tr><th>Step</th><th>A</th><th>B</th><th>B's rationale</th></tr></thead>"
        f"<tbody>{''.join(rows)}</tbody></table>"
    )


def _html_reasons(diff: CaseDiff) -> str:
    if not diff.b_reasons:
        return ""
    items = "".join(f"<li>{_e(reason)}</li>" for reason in diff.b_reasons)
    return f"<h4>Why B did not pass</h4><ul class='reasons'>{items}</ul>"


def _html_case(diff: CaseDiff, *, reasons: bool) -> str:
    badge = {
        "regressed": "fail", "improved": "pass", "new": "unsure", "removed": "unsure", "unchanged": "unsure",
        "not_comparable": "unsure",
    }  # fmt: skip
    apart = (
        f"<p class='not-comparable'>Not comparable{_e(would_be(diff.would_be))}: {_e(diff.not_comparable)}</p>"
        if diff.change == "not_comparable"
        else ""
    )
    return (
        f"<article class='compare-case change-{_e(diff.change)}'>"
        f"<h3><span class='badge {badge[diff.change]}'>{_e(diff.change.replace('_', ' ').upper())}</span> "
        f"<span class='case-name'>{_e(case_label(diff))}</span></h3>"
        f"<p class='case-meta'>{_e(_states(diff))}</p>{apart}"
        f"{_html_steps(diff)}{_html_reasons(diff) if reasons else ''}</article>"
    )


def _html_settings(comparison: Comparison) -> str:
    if not comparison.settings:
        return "<section id='settings'><h2>Settings</h2><p>The settings are the same in both runs.</p></section>"
    rows = "".join(
        f"<tr><td>{_e(d.setting)}</td><td>{_e(d.a)}</td><td>{_e(d.b)}</td></tr>" for d in comparison.settings
    )
    return (
        "<section id='settings'><h2>Settings that differ</h2><table class='settings-diff'><thead><tr><th>Setting</th>"
        f"<th>A</th><th>B</th></tr></thead><tbody>{rows}</tbody></table></section>"
    )


def _html_section(anchor: str, title: str, diffs: Sequence[CaseDiff], body: str) -> str:
    return f"<section id='{anchor}'><h2>{_e(title)} ({len(diffs)})</h2>{body}</section>"


def render_compare_parts(comparison: Comparison) -> HtmlParts:
    """The comparison page of :func:`render_compare_html` as parts: its title and body (it has no script)."""
    test = comparison.mcnemar
    facts = [
        ("Run A (baseline)", f"<code>{_e(comparison.run_a)}</code>"),
        ("Run B (new)", f"<code>{_e(comparison.run_b)}</code>"),
        (
            f"{correctness_title(comparison)}, A → B",
            _e(_correctness(comparison.correctness_a, comparison.correctness_b, comparison.correctness_change)),
        ),
        ("McNemar on the comparable cases", _e(_mcnemar(test))),
        (
            "Significance",
            f"<span class='significant'>{_e(test.sentence())}</span>" if test.significant else _e(test.sentence()),
        ),
    ]
    header = (
        "<header class='run-header'>"
        f"<h1>Run comparison: <code>{_e(comparison.run_b)}</code> against <code>{_e(comparison.run_a)}</code></h1>"
        f"<dl class='facts'>{''.join(f'<dt>{_e(name)}</dt><dd>{value}</dd>' for name, value in facts)}</dl></header>"
    )
    regressed = comparison.regressed
    sections = [
        _html_settings(comparison),
        _html_section(
            "regressed",
            "Regressed",
            regressed,
            "".join(_html_case(diff, reasons=True) for diff in regressed) or "<p class='ok'>No regressed cases.</p>",
        ),
    ]
    for change, title in _SECTIONS:
        diffs = comparison.with_change(change)
        if not diffs:
            continue
        sections.append(
            _html_section(change, title, diffs, "".join(_html_case(d, reasons=change == "new") for d in diffs))
        )
    apart = comparison.not_comparable
    if apart:
        body = "".join(_html_case(diff, reasons=False) for diff in apart)
        sections.append(_html_section("not_comparable", _NOT_COMPARABLE_TITLE, apart, body))
    unchanged = comparison.unchanged
    moved = _moved(comparison)
    detail = f", {len(moved)} with a changed pass rate or steps" if moved else ""
    sections.append(
        _html_section(
            "unchanged",
            "Unchanged",
            unchanged,
            f"<p>{len(unchanged)} case{'s' if len(unchanged) != 1 else ''} unchanged{_e(detail)}.</p>"
            + "".join(_html_case(diff, reasons=False) for diff in moved),
        )
    )
    counts = [(change, len(comparison.with_change(change))) for change in _ALL_CHANGES]
    jump = " ".join(f"<a href='#{change}'>{count} {change.replace('_', ' ')}</a>" for change, count in counts if count)
    title = f"Simulator comparison {comparison.run_b} against {comparison.run_a}"
    body = (
        f"{header}<nav class='jump'>{jump}</nav>{''.join(sections)}"
        f"<footer>Run <code>{_e(comparison.run_b)}</code> (B) against <code>{_e(comparison.run_a)}</code> (A) · "
        "self-contained page, no network access</footer>"
    )
    return HtmlParts(title, body)


def compare_css() -> str:
    """The comparison page's styles: the run report's and its own."""
    return _CSS + _EXTRA_CSS


def render_compare_html(comparison: Comparison) -> str:
    """The comparison as one self-contained HTML page (inline CSS, no script, no network at view time), in
    the order of :func:`render_compare_markdown`. Pure; all run text is HTML-escaped."""
    parts = render_compare_parts(comparison)
    return (
        "<!DOCTYPE html>\n<html lang='en'>\n<head>\n<meta charset='utf-8'>\n"
        f"<meta http-equiv='Content-Security-Policy' content=\"{_e(CONTENT_SECURITY_POLICY)}\">\n"
        "<meta name='referrer' content='no-referrer'>\n"
        "<meta name='viewport' content='width=device-width, initial-scale=1'>\n"
        "<link rel='icon' href='data:,'>\n"
        f"<title>{_e(parts.title)}</title>\n<style>\n{_CSS}{_EXTRA_CSS}</style>\n</head>\n"
        f"<body>\n{parts.body}\n</body>\n</html>\n"
    )
