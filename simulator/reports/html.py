"""A run as one self-contained HTML page: the run header, summaries, and every case goal by goal.

:func:`render_html` is a pure function (no I/O, no clock): the page it returns needs nothing else to be read.
Its CSS and JavaScript (``simulator/reports/assets/``) are read once when this module is imported and embedded
inline; the page loads no fonts, scripts, styles or images from anywhere, and its Content-Security-Policy
forbids it to (``default-src 'none'``).

Escaping. Everything that comes from the agent, the simulated user, the judge or the suite (case names,
goals, tags, messages, tool arguments and results, reasons) passes through ``html.escape(..., quote=True)``
before it reaches the page, in text and in attribute values alike, after its control characters and bidi marks
and overrides are written as visible escapes (``\\u202e``, as the terminal shows them: nothing reorders the
page). The client-side filters read their data
from one ``<script type="application/json">`` block whose JSON has ``<``, ``>`` and ``&`` (and the line
separators U+2028/U+2029) written as ``\\u003c``-style escapes, so no text can close the script element.
Element ids are generated (``case-1``, ``case-1-step-2``), never taken from the data.

Layout. Header (suites, agent, note, status, correctness, outcome counts, answers (from the request cache and
requests sent), tokens and cost per model role,
duration, settings, versions); per-metric summaries; pass^k and flaky labels over repeats; the coverage
(percentage, persona x case matrix, step reach, gaps); then the cases,
failures first (error, fail, unsure, pass), each a ``<details>`` element (open unless it passed, or when more
than :data:`OPEN_LIMIT` cases did not pass) holding ``Goals (k/n)`` with every step's mark and rationale (steps
that are not complete are open), the transcript with tool calls and their status, the scores with their source
and reason, and an error card when the case errored. With JavaScript off the page is complete; with it on, a
filter bar (outcome, tag, persona, suite, kind, search) appears above the cases, and its state is kept in the
address's fragment (``report.html#?outcome=fail,error&tag=billing&kind=golden&q=refund``) so a filtered view can
be shared.

This module writes the page and its summaries; ``_html_case`` writes each case's card, ``_html_values`` how values
are written (escaping included).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import replace
from importlib import resources

from pydantic import JsonValue

from simulator.models.run import RunRecord, StoredResult
from simulator.models.scores import Outcome
from simulator.models.summary import CaseSummary, FaultOutcomes, MetricSummary, persona_fidelity
from simulator.models.transcript import (
    Usage,
)
from simulator.reports._html_case import CaseDefinition, CasePart, _case, _Item, case_part
from simulator.reports._html_values import (
    HtmlParts,
    _cost,
    _e,
    _left_out,
    _number,
    _script_json,
    _seconds,
    _time,
    _usage,
)
from simulator.reports._voice_view import AUDIO_FOLDER
from simulator.reports.coverage_view import (
    WORLD_HEADER,
    CoverageMatrix,
    coverage_headline,
    coverage_matrix,
    gap_sections,
    step_text,
    world_row,
)
from simulator.reports.figures import percent, saved_dollars, uses_prompt_cache
from simulator.reports.tabular import summary_of

__all__ = [
    "AUDIO_FOLDER",
    "CONTENT_SECURITY_POLICY",
    "OPEN_LIMIT",
    "OUTCOME_ORDER",
    "CasePart",
    "HtmlParts",
    "asset_text",
    "html_text",
    "opened_at_first",
    "render_case_parts",
    "render_html",
    "render_html_parts",
]

#: The page's Content-Security-Policy: no network access of any kind, inline styles and scripts only, audio only
#: from the page's own place (the conversations' audio files copied beside it).
CONTENT_SECURITY_POLICY = (
    "default-src 'none'; style-src 'unsafe-inline'; script-src 'unsafe-inline'; img-src data:; media-src 'self'; "
    "base-uri 'none'; form-action 'none'"
)
#: Cases are listed in this order of outcome: failures first.
OUTCOME_ORDER: tuple[Outcome, ...] = ("error", "fail", "user_error", "unsure", "pass")

_RANK = {outcome: rank for rank, outcome in enumerate(OUTCOME_ORDER)}
_GROUP_TITLE = {
    "error": "Errors",
    "fail": "Failures",
    "user_error": "User errors (the simulated user failed; not counted against the agent)",
    "unsure": "Unsure",
    "pass": "Passed",
}
_GROUP_COUNT = {
    "error": ("error", "errors"),
    "fail": ("failure", "failures"),
    "user_error": ("user error", "user errors"),
    "unsure": ("unsure", "unsure"),
    "pass": ("passed", "passed"),
}
#: Cases that did not pass start open, unless there are more of them than this: then every case starts
#: closed, and the summary lines (outcome, name, persona, goals, first reason) read as a compact list.
OPEN_LIMIT = 50
_NO_PERSONA = "-"  # persona names are slugs, which never start with "-"


def _asset(name: str) -> str:
    text = resources.files("simulator.reports").joinpath("assets", name).read_text(encoding="utf-8")
    closing = "</style" if name.endswith(".css") else "</script"
    if closing in text.lower():  # pragma: no cover - guards the shipped files
        raise ValueError(f"assets/{name} must not contain {closing!r}")
    return text


_CSS = _asset("report.css")
_JS = _asset("report.js")


def _group_key(stored: StoredResult) -> tuple[int, str, str]:
    return stored.suite, stored.case, stored.persona or ""


def _order_key(stored: StoredResult) -> tuple[int, int, str, str, int]:
    return _RANK.get(stored.outcome, len(_RANK)), stored.suite, stored.case, stored.persona or "", stored.repeat


def _items(record: RunRecord, results: Sequence[StoredResult]) -> list[_Item]:
    definitions: list[dict[str, CaseDefinition]] = [
        {case.name: case for case in snapshot.suite.cases} for snapshot in record.snapshot
    ]
    cases = summary_of(record).by_case()
    return [
        _item(record, definitions, cases, number, stored)
        for number, stored in enumerate(sorted(results, key=_order_key), start=1)
    ]


def _item(
    record: RunRecord,
    definitions: Sequence[dict[str, CaseDefinition]],
    cases: dict[tuple[int, str, str | None], CaseSummary],
    number: int,
    stored: StoredResult,
) -> _Item:
    known = 0 <= stored.suite < len(record.snapshot)
    definition = definitions[stored.suite].get(stored.case) if known else None
    case = cases.get((stored.suite, stored.case, stored.persona))
    return _Item(
        number=number,
        stored=stored,
        suite_name=record.snapshot[stored.suite].suite.name if known else f"suite {stored.suite + 1}",
        definition=definition,
        tags=list(dict.fromkeys(definition.tags)) if definition is not None else [],
        runs=case.stats.k if case is not None else 1,
        repeat_stats=case.stats if case is not None and case.stats.k > 1 else None,
    )


# -- header and summaries -------------------------------------------------------------------------------------


def _fact(name: str, value_html: str) -> str:
    return f"<dt>{_e(name)}</dt><dd>{value_html}</dd>"


def _header(record: RunRecord) -> str:
    settings = record.settings
    suites = "".join(
        f"<li><strong>{_e(s.suite.name)}</strong> <code>{_e(s.path)}</code> "
        f"<span class='muted'>{len(s.suite.cases)} case{'s' if len(s.suite.cases) != 1 else ''}"
        f"{', hosted evals format' if s.hosted_format else ''}</span></li>"
        for s in record.snapshot
    )
    agents = list(
        dict.fromkeys(
            f"{s.suite.agent.name} ({s.suite.agent.type})" if not isinstance(s.suite.agent, str) else s.suite.agent
            for s in record.snapshot
            if s.suite.agent is not None
        )
    )
    facts = [_fact("Suites", f"<ul>{suites}</ul>")]
    if agents:
        facts.append(_fact("Agent", _e(", ".join(agents))))
    facts.append(
        _fact(
            "Agent version", _e(record.agent_version) if record.agent_version else "<span class='muted'>not set</span>"
        )
    )
    if record.note:
        facts.append(_fact("Note", f"<span class='note'>{_e(record.note)}</span>"))
    facts.append(_fact("Created", _e(_time(record.created))))
    facts.append(_fact("Finished", _e(_time(record.finished))))
    plan = [
        f"{len(record.plan)} conversation{'s' if len(record.plan) != 1 else ''}",
        f"repeat {settings.repeat}",
        f"concurrency {settings.concurrency}",
        "live tools" if settings.live else "test-mode tools",
    ]
    if settings.persona:
        plan.append(f"persona {settings.persona}")
    if settings.tags:
        plan.append("tags " + ", ".join(settings.tags))
    if settings.cases:
        plan.append("cases " + ", ".join(settings.cases))
    if settings.fail_under is not None:
        plan.append(f"fail under {settings.fail_under:g}")
    if not settings.cache:
        plan.append("no request cache")
    facts.append(_fact("Plan", _e(", ".join(plan))))
    models = [
        f"{role} {model}" for role, model in (("user", settings.user_model), ("judge", settings.judge_model)) if model
    ]
    if models:
        facts.append(_fact("Models", _e(", ".join(models))))
    facts.append(_fact("Seed", _e(settings.seed)))
    facts.append(_fact("Suite hash", f"<code>{_e(record.suite_hash)}</code>"))
    if record.repeat_of:
        facts.append(_fact("Repeats run", f"<code>{_e(record.repeat_of)}</code>"))
    if record.replay_of:
        facts.append(_fact("Replays the recording of run", f"<code>{_e(record.replay_of)}</code>"))
    if record.versions:
        versions = ", ".join(f"{name} {version}" for name, version in sorted(record.versions.items()))
        facts.append(_fact("Versions", _e(versions)))
    return (
        "<header class='run-header'>"
        f"<h1>Run <code>{_e(record.id)}</code> "
        f"<span class='status status-{_e(record.status)}'>{_e(record.status)}</span></h1>"
        f"<dl class='facts'>{''.join(facts)}</dl></header>"
    )


def _totals(record: RunRecord) -> str:
    counts = summary_of(record)
    correctness = counts.correctness
    duration = counts.duration_s
    usage = _usage(record)
    total = Usage()
    for _, use in usage:
        total = total + use
    cached = (
        [
            (
                "cached",
                f"From request cache (would-be {_cost(total.cached_cost)})",
                f"{total.cached_calls:,} of {total.calls:,}",
            )
        ]
        if total.cached_calls
        else []
    )
    prompt_cache = uses_prompt_cache(total)
    prompt_cached = (
        [
            (
                "prompt-cache",
                f"Provider prompt cache ({total.cache_read_tokens:,} of {total.prompt_tokens:,} prompt tokens read, "
                f"saved {saved_dollars(total.cache_savings)})",
                percent(total.prompt_cache_share),
            )
        ]
        if prompt_cache
        else []
    )
    reviewed = (
        [("reviewed", "Correctness as reviewed", percent(counts.reviewed.correctness))]
        if counts.reviewed is not None
        else []
    )
    tiles = [
        ("correctness", "Correctness", percent(correctness)),
        *reviewed,
        ("pass", "Passed", str(counts.passed)),
        ("fail", "Failed", str(counts.failed)),
        ("error", "Error", str(counts.error)),
        ("unsure", "Unsure", str(counts.unsure)),
        *([("user_error", "User error", str(counts.user_error))] if counts.user_error else []),
        ("total", "Total", f"{counts.total} of {len(record.plan)}" if record.plan else str(counts.total)),
        ("cost", "Cost", _cost(total.cost)),
        *cached,
        *prompt_cached,
        ("duration", "Duration", _seconds(duration)),
    ]
    board = "".join(
        f"<div class='tile {cls}'><span class='value'>{_e(value)}</span><span class='label'>{_e(label)}</span></div>"
        for cls, label, value in tiles
    )
    bar = ""
    if counts.total:
        # An SVG's geometry is attributes, not styles: the bar needs no style attribute, which a page with a
        # strict Content-Security-Policy (simulator view's) could not show.
        parts, start = [], 0.0
        for cls, count in (
            ("pass", counts.passed),
            ("unsure", counts.unsure),
            ("fail", counts.failed),
            ("error", counts.error),
            ("user_error", counts.user_error),
        ):
            if count:
                width = count / counts.total * 100
                parts.append(f"<rect class='{cls}' x='{start:.2f}' width='{width:.2f}' height='1'/>")
                start += width
        bar = (
            "<svg class='bar' viewBox='0 0 100 1' preserveAspectRatio='none' aria-hidden='true' focusable='false'>"
            f"{''.join(parts)}</svg>"
        )
    rows = "".join(
        f"<tr><td>{_e(role)}</td><td class='num'>{u.calls:,}</td><td class='num'>{u.cached_calls:,}</td>"
        f"<td class='num'>{u.requests:,}</td><td class='num'>{u.prompt_tokens:,}</td>"
        f"<td class='num'>{u.completion_tokens:,}</td><td class='num'>{u.total_tokens:,}</td>"
        f"<td class='num'>{_e(_cost(u.cost))}</td>"
        f"<td class='num'>{_e(_cost(u.cached_cost)) if u.cached_calls else '–'}</td>"
        f"{_prompt_cache_cells(u) if prompt_cache else ''}</tr>"
        for role, u in usage
    )
    # The provider prompt cache's columns only where a provider reported one: a run without stays as it was.
    prompt_heads = (
        "<th class='num'>Prompt cache read</th><th class='num'>Prompt cache written</th>"
        "<th class='num'>Saved by prompt cache</th>"
        if prompt_cache
        else ""
    )
    table = (
        "<table class='usage'><thead><tr><th>Model role</th><th class='num'>Answers</th>"
        "<th class='num'>From request cache</th><th class='num'>Requests sent</th><th class='num'>Prompt tokens</th>"
        "<th class='num'>Completion tokens</th><th class='num'>Total tokens</th><th class='num'>Cost</th>"
        f"<th class='num'>Would-be cost of cached</th>{prompt_heads}</tr></thead>"
        f"<tbody>{rows}</tbody></table>"
        if usage
        else "<p class='muted'>No model calls recorded.</p>"
    )
    return (
        f"<section id='totals'><h2>Totals</h2><div class='scoreboard'>{board}</div>{bar}"
        f"<h3>Answers and tokens by role</h3>{table}</section>"
    )


def _prompt_cache_cells(used: Usage) -> str:
    """One role's provider prompt cache: prompt tokens read from it and written to it, and what it saved."""
    saved = saved_dollars(used.cache_savings) if uses_prompt_cache(used) else "–"
    return (
        f"<td class='num'>{used.cache_read_tokens:,}</td><td class='num'>{used.cache_write_tokens:,}</td>"
        f"<td class='num'>{_e(saved)}</td>"
    )


def _metrics(summary: dict[str, MetricSummary]) -> str:
    if not summary:
        return "<section id='metrics'><h2>Metrics</h2><p class='muted'>No scores.</p></section>"
    rows = "".join(
        f"<tr><td>{_e(m.metric)}</td><td class='num'>{m.count}</td><td class='num'>{m.met}</td>"
        f"<td class='num'>{m.not_met}</td><td class='num'>{m.unsure}</td><td class='num'>{m.error}</td>"
        f"<td class='num'>{m.not_applicable}</td><td class='num'>{_e(_number(m.mean))}</td>"
        f"<td class='num'>{m.values}</td></tr>"
        for m in summary.values()
    )
    return (
        "<section id='metrics'><h2>Metrics</h2><table class='metrics'><thead><tr><th>Metric</th>"
        "<th class='num'>Scores</th><th class='num'>Met</th><th class='num'>Not met</th><th class='num'>Unsure</th>"
        "<th class='num'>Error</th><th class='num'>n/a</th><th class='num'>Mean value</th>"
        f"<th class='num'>Values</th></tr></thead><tbody>{rows}</tbody></table></section>"
    )


def _faults(faults: Sequence[FaultOutcomes]) -> str:
    """Outcome by injected fault: per tool and fault entry, the conversations it answered a call in."""
    if not faults:
        return ""
    rows = "".join(
        f"<tr><td><code>{_e(fault.tool)}</code></td><td>{_e(fault.fault)}</td><td class='num'>{fault.total}</td>"
        f"<td class='num'>{fault.calls}</td><td class='num'>{fault.passed}</td><td class='num'>{fault.failed}</td>"
        f"<td class='num'>{fault.error}</td><td class='num'>{fault.unsure}</td>"
        f"<td class='num'>{fault.user_error}</td><td class='num'>{_e(percent(fault.correctness))}</td></tr>"
        for fault in faults
    )
    return (
        "<section id='faults'><h2>Outcome by injected fault</h2><table class='metrics'><thead><tr><th>Tool</th>"
        "<th>Fault</th><th class='num'>Conversations</th><th class='num'>Calls</th><th class='num'>Passed</th>"
        "<th class='num'>Failed</th><th class='num'>Error</th><th class='num'>Unsure</th>"
        f"<th class='num'>User error</th><th class='num'>Correctness</th></tr></thead><tbody>{rows}</tbody></table>"
        "</section>"
    )


def _fidelity(results: Sequence[StoredResult]) -> str:
    """The simulated user's fidelity per persona, when the user model wrote any turn or a finding was made."""
    personas = persona_fidelity(stored.result for stored in results)
    if not any(p.user_turns or p.findings for p in personas):
        return ""
    rows = "".join(
        f"<tr><td>{_e(p.persona or _NO_PERSONA)}</td><td class='num'>{p.user_turns}</td>"
        f"<td class='num'>{p.flagged_turns}</td><td class='num'>{_e(percent(p.rate))}</td>"
        f"<td>{_e(', '.join(f'{kind} {count}' for kind, count in p.findings.items()) or 'none')}</td>"
        f"<td class='num'>{p.user_errors}</td></tr>"
        for p in personas
    )
    return (
        "<section id='fidelity'><h2>Simulated user fidelity</h2><table class='metrics'><thead><tr><th>Persona</th>"
        "<th class='num'>User turns</th><th class='num'>Flagged</th><th class='num'>Fidelity</th><th>Findings</th>"
        f"<th class='num'>User errors</th></tr></thead><tbody>{rows}</tbody></table></section>"
    )


def _repeats(items: Sequence[_Item]) -> str:
    seen: dict[tuple[int, str, str], _Item] = {}
    for item in items:
        if item.repeat_stats is not None:
            seen.setdefault(_group_key(item.stored), item)
    if not seen:
        return ""
    label_rank = {"flaky": 0, "broken": 1, "stable": 2}
    ordered = sorted(
        seen.values(),
        key=lambda i: (label_rank.get(i.repeat_stats.label or "", 3) if i.repeat_stats else 3, i.number),
    )
    rows = []
    for item in ordered:
        stats = item.repeat_stats
        assert stats is not None
        low, high = stats.wilson or (0.0, 0.0)
        label = stats.label or ""
        rows.append(
            f"<tr><td><a href='#{item.anchor}'>{_e(item.stored.case)}</a> "
            f"<span class='muted'>{_e(item.suite_name)}</span></td>"
            f"<td>{_e(item.stored.persona or '–')}</td><td class='num'>{stats.passes}/{stats.k}</td>"
            f"<td class='num'>{_e(percent(stats.pass_rate))}</td><td class='num'>{_e(_number(stats.pass_hat_k))}</td>"
            f"<td class='num'>{_e(_number(stats.pass_at_k))}</td><td class='num'>{low:.2f}–{high:.2f}</td>"
            f"<td class='label-{_e(label)}'>{_e(label)}</td></tr>"
        )
    flaky = sum(1 for i in ordered if i.repeat_stats is not None and i.repeat_stats.label == "flaky")
    return (
        f"<section id='repeats'><h2>Repeats</h2><p>{len(ordered)} case/persona pair{'s' if len(ordered) != 1 else ''} "
        f"ran more than once; <span class='label-flaky'>{flaky} flaky</span>. pass^k is 1 when every run passed, "
        "pass@k when at least one did.</p><table class='repeats'><thead><tr><th>Case</th><th>Persona</th>"
        "<th class='num'>Passed</th><th class='num'>Pass rate</th><th class='num'>pass^k</th>"
        "<th class='num'>pass@k</th><th class='num'>95% interval</th><th>Label</th></tr></thead>"
        f"<tbody>{''.join(rows)}</tbody></table></section>"
    )


# -- filters --------------------------------------------------------------------------------------------------


def _coverage(record: RunRecord) -> str:
    coverage = summary_of(record).coverage
    if coverage is None:
        return ""
    parts = [
        f"<p><strong>{_e(coverage_headline(coverage))}</strong></p><p class='muted'>The percentage is the mean of "
        "the ratios shown: cases x personas run / planned, simulation steps reached at least once / steps, "
        "declared tools called / declared, expectations evaluated at least once / written.</p>"
    ]
    matrix = coverage_matrix(record, coverage)
    if matrix.rows:
        head = "".join(f"<th>{_e(CoverageMatrix.column(p))}</th>" for p in matrix.personas)
        rows = "".join(
            f"<tr><td>{_e(title)}</td>"
            + "".join(f"<td>{_e(cells[p].label) if p in cells else '–'}</td>" for p in matrix.personas)
            + "</tr>"
            for title, cells in matrix.rows
        )
        parts.append(
            f"<table class='metrics coverage-matrix'><thead><tr><th>Case</th>{head}</tr></thead>"
            f"<tbody>{rows}</tbody></table>"
        )
    if coverage.steps:
        rows = "".join(
            f"<tr><td>{_e(step_text(record, s))}</td><td class='num'>{s.reached}/{s.conversations}</td>"
            f"<td class='num'>{s.complete}</td><td class='num'>{s.incomplete}</td><td class='num'>{s.unsure}</td>"
            f"<td class='num'>{s.blocked}</td><td class='num'>{s.not_reached}</td></tr>"
            for s in coverage.steps
        )
        parts.append(
            "<table class='metrics coverage-steps'><thead><tr><th>Step</th><th class='num'>Reached</th>"
            "<th class='num'>Complete</th><th class='num'>Failed</th><th class='num'>Unsure</th>"
            f"<th class='num'>Blocked</th><th class='num'>Not reached</th></tr></thead><tbody>{rows}</tbody></table>"
        )
    if coverage.world:
        numeric = {"records", "read", "changed", "conversations"}
        head = "".join(f"<th class='num'>{_e(h)}</th>" if h in numeric else f"<th>{_e(h)}</th>" for h in WORLD_HEADER)
        rows = "".join(
            "<tr>"
            + "".join(
                f"<td class='num'>{_e(text)}</td>" if WORLD_HEADER[i] in numeric else f"<td>{_e(text)}</td>"
                for i, text in enumerate(world_row(c))
            )
            + "</tr>"
            for c in coverage.world
        )
        parts.append(
            f"<table class='metrics coverage-world'><thead><tr>{head}</tr></thead><tbody>{rows}</tbody></table>"
        )
    for heading, items in gap_sections(record, coverage):
        listed = "".join(f"<li>{_e(item)}</li>" for item in items)
        parts.append(f"<h3>{_e(heading[0].upper() + heading[1:])} ({len(items)})</h3><ul>{listed}</ul>")
    return f"<section id='coverage'><h2>Coverage</h2>{''.join(parts)}</section>"


def _options(values: Iterable[tuple[str, str, int]]) -> str:
    return "".join(f"<option value='{_e(value)}'>{_e(text)} ({count})</option>" for value, text, count in values)


def _filters(record: RunRecord, items: Sequence[_Item]) -> str:
    outcome_counts = summary_of(record)
    by_outcome = {
        "error": outcome_counts.error,
        "fail": outcome_counts.failed,
        "user_error": outcome_counts.user_error,
        "unsure": outcome_counts.unsure,
        "pass": outcome_counts.passed,
    }
    boxes = "".join(
        f"<label><input type='checkbox' name='outcome' value='{o}' checked> {o} ({by_outcome[o]})</label> "
        for o in OUTCOME_ORDER
        if o != "user_error" or by_outcome[o]
    )
    tags: dict[str, int] = {}
    personas: dict[str, int] = {}
    suites: dict[int, int] = {}
    for item in items:
        for tag in item.tags:
            tags[tag] = tags.get(tag, 0) + 1
        persona = item.stored.persona or _NO_PERSONA
        personas[persona] = personas.get(persona, 0) + 1
        suites[item.stored.suite] = suites.get(item.stored.suite, 0) + 1
    parts = [f"<fieldset><legend>Outcome</legend>{boxes}</fieldset>"]
    if tags:
        options = _options((tag, tag, count) for tag, count in sorted(tags.items()))
        parts.append(f"<label>Tag <select name='tag'><option value=''>any tag</option>{options}</select></label>")
    if len(personas) > 1 or _NO_PERSONA not in personas:
        options = _options(
            (name, "no persona" if name == _NO_PERSONA else name, count) for name, count in sorted(personas.items())
        )
        parts.append(
            f"<label>Persona <select name='persona'><option value=''>any persona</option>{options}</select></label>"
        )
    if len(suites) > 1:
        names = {index: s.suite.name for index, s in enumerate(record.snapshot)}
        options = _options(
            (str(index), names.get(index, f"suite {index + 1}"), count) for index, count in sorted(suites.items())
        )
        parts.append(f"<label>Suite <select name='suite'><option value=''>any suite</option>{options}</select></label>")
    kinds: dict[str, int] = {}
    for item in items:
        kinds[item.stored.result.transcript.kind] = kinds.get(item.stored.result.transcript.kind, 0) + 1
    if len(kinds) > 1:
        options = _options((kind, kind, count) for kind, count in sorted(kinds.items()))
        parts.append(f"<label>Kind <select name='kind'><option value=''>any kind</option>{options}</select></label>")
    parts.append(
        "<label>Search <input type='search' name='q' placeholder='case, message, tool, reason…' autocomplete='off'>"
        "</label>"
    )
    parts.append(
        "<span><button type='button' data-action='expand'>Expand all</button> "
        "<button type='button' data-action='collapse'>Collapse all</button> "
        "<button type='button' data-action='reset'>Reset</button></span>"
    )
    parts.append(f"<output id='shown'>Showing {len(items)} of {len(items)} cases</output>")
    return f"<form id='filters' class='filters' role='search' hidden>{''.join(parts)}</form>"


# -- one case -------------------------------------------------------------------------------------------------


def opened_at_first(results: Sequence[StoredResult]) -> list[str]:
    """The keys of the results whose cards a run page of ``results`` shows open at first: every one that did not
    pass, unless there are more than :data:`OPEN_LIMIT` of them."""
    shut = [stored.key for stored in results if stored.outcome != "pass"]
    return shut if len(shut) <= OPEN_LIMIT else []


def _cases(record: RunRecord, items: Sequence[_Item], *, details: bool) -> str:
    by_outcome: dict[str, list[_Item]] = defaultdict(list)
    for item in items:
        by_outcome[item.stored.outcome].append(item)
    expand = bool(opened_at_first([item.stored for item in items]))
    jumps = " ".join(
        f"<a href='#group-{o}'>{len(by_outcome[o])} {_GROUP_COUNT[o][len(by_outcome[o]) != 1]}</a>"
        for o in OUTCOME_ORDER
        if by_outcome[o]
    )
    groups = "".join(
        f"<section class='group' id='group-{o}' data-group='{o}'><h3>{_GROUP_TITLE[o]} ({len(by_outcome[o])})</h3>"
        + "".join(_case(item, expand=expand, detail=details) for item in by_outcome[o])
        + "</section>"
        for o in OUTCOME_ORDER
        if by_outcome[o]
    )
    if not items:
        groups = "<p class='muted'>No results yet.</p>"
    return (
        f"<section id='cases'><h2>Cases ({len(items)})</h2><nav class='jump'>{jumps}</nav>"
        f"{_filters(record, items)}<div id='case-list'>{groups}</div></section>"
    )


def _data(record: RunRecord, items: Sequence[_Item], *, details: bool) -> dict[str, JsonValue]:
    cases: list[JsonValue] = [
        {
            "id": item.anchor,
            "key": item.stored.key,
            "case": item.stored.case,
            "outcome": item.stored.outcome,
            "persona": item.stored.persona,
            "suite": item.stored.suite,
            "kind": item.stored.result.transcript.kind,
            "repeat": item.stored.repeat,
            "tags": list(item.tags),
        }
        for item in items
    ]
    data: dict[str, JsonValue] = {"run": record.id, "cases": cases}
    if not details:
        data["lazy"] = True
    return data


def asset_text(name: str) -> str:
    """The run page's asset ``report.css`` or ``report.js`` as text (KeyError for another name)."""
    texts = {"report.css": _CSS, "report.js": _JS}
    if name not in texts:
        raise KeyError(name)
    return texts[name]


def html_text(value: object) -> str:
    """Any value as HTML text or attribute content, as every page writes it: escaped, with control characters
    and bidi marks shown as visible escapes."""
    return _e(value)


def render_html_parts(
    record: RunRecord,
    results: list[StoredResult],
    *,
    left_out: Sequence[str] = (),
    details: bool = True,
    audio_base: str | None = None,
) -> HtmlParts:
    """The run page of :func:`render_html` as parts: its title, body and the JSON its filters read.

    ``details=False`` (the results may then be read without their transcripts' events): a card that starts
    closed holds only its summary line, one that starts open (:func:`opened_at_first`: read those results whole)
    all but its transcript, world and scores; a front end loads the rest when the card is opened
    (:func:`render_case_parts` with ``part``); the JSON says ``"lazy": true``, and the filters' text search
    then asks the page's address ``+ "/search?q=..."`` for the keys of the matching results. ``audio_base``:
    where the page finds the voice conversations' audio files (default: the folder a written report copies them
    into, ``simulator-audio/``)."""
    items = _items(record, results)
    if audio_base is not None:
        items = [replace(item, audio_base=audio_base) for item in items]
    title = f"Simulator run {record.id}"
    suites = ", ".join(s.suite.name for s in record.snapshot)
    if suites:
        title += f" — {suites}"
    body = "".join(
        (
            _header(record),
            _left_out(left_out),
            _totals(record),
            _metrics(summary_of(record).metrics),
            _repeats(items),
            _faults(summary_of(record).faults),
            _coverage(record),
            _fidelity(results),
            _cases(record, items, details=details),
            f"<footer>Run <code>{_e(record.id)}</code> · generated by simulator "
            f"{_e(record.versions.get('simulator', ''))} · self-contained page, no network access</footer>",
        )
    )
    return HtmlParts(title, body, _script_json(_data(record, items, details=details)))


def render_case_parts(
    record: RunRecord,
    stored: StoredResult,
    *,
    number: int = 1,
    part: CasePart | None = None,
    beside: Mapping[str, str] | None = None,
    audio_base: str | None = None,
) -> HtmlParts:
    """One conversation of the run (``stored``, one of its results) as the run page shows it, open: goals,
    transcript with verdicts, tool calls, world diffs, fidelity findings, scores and tokens. ``number``: the
    case's place on the run page (its element ids are ``case-NUMBER...``); ``part``: only that part of its card
    (``body`` or ``detail``), for a run page whose cards load it when opened. ``beside``: HTML (escaped
    already) to show beside what it names: ``result`` at the top of the card, ``step N`` in that step, a check's
    text under its first score; one without such a place at the end of the card (a front end's review forms).
    ``audio_base``: as for :func:`render_html_parts`."""
    known = 0 <= stored.suite < len(record.snapshot)
    definitions = [
        {case.name: case for case in snapshot.suite.cases} if index == stored.suite else {}
        for index, snapshot in enumerate(record.snapshot)
    ]
    item = _item(record, definitions, summary_of(record).by_case() if known else {}, number, stored)
    if beside:
        item = replace(item, beside=dict(beside))
    if audio_base is not None:
        item = replace(item, audio_base=audio_base)
    title = f"Simulator run {record.id} — {stored.case}"
    return HtmlParts(title, _case(item, expand=True) if part is None else case_part(item, part))


def render_html(record: RunRecord, results: list[StoredResult], *, left_out: Sequence[str] = ()) -> str:
    """The run as one self-contained HTML page (inline CSS and JS, no network at view time).

    The page holds the run header (suites, agent and its version, note, status, correctness, outcome counts,
    tokens and cost per model role, duration, settings, versions, seed), a table per metric, pass^k and
    flaky labels for cases that ran more than once, the run's coverage (percentage, persona x case matrix,
    step reach, gaps), the simulated user's fidelity per persona (when a model played the user), and every
    result, failures first (error, fail, user error, unsure, pass), with its goals, transcript (each user turn
    followed by its fidelity findings, ⚑), scores and errors; ``left_out`` (stored results that could not be
    read, each with its fix) is listed under the header. All text from the run is HTML-escaped; see the
    module docstring for how. Pure: the same record and results always give the same page.
    """
    parts = render_html_parts(record, results, left_out=left_out)
    return (
        "<!DOCTYPE html>\n<html lang='en'>\n<head>\n<meta charset='utf-8'>\n"
        f"<meta http-equiv='Content-Security-Policy' content=\"{_e(CONTENT_SECURITY_POLICY)}\">\n"
        "<meta name='referrer' content='no-referrer'>\n"
        "<meta name='viewport' content='width=device-width, initial-scale=1'>\n"
        "<link rel='icon' href='data:,'>\n"
        f"<title>{_e(parts.title)}</title>\n<style>\n{_CSS}</style>\n</head>\n<body>\n{parts.body}\n"
        f"<script type='application/json' id='simulator-report-data'>{parts.data}</script>\n"
        f"<script id='simulator-report-script'>\n{_JS}</script>\n</body>\n</html>\n"
    )
