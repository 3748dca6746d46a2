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
filter bar (outcome, tag, persona, suite, search) appears above the cases, and its state is kept in the
address's fragment (``report.html#?outcome=fail,error&tag=billing&q=refund``) so a filtered view can be shared.
"""

from __future__ import annotations

import html
import json
from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime
from importlib import resources

from pydantic import JsonValue

from simulator.kinds import kind_named, kind_of
from simulator.models.case import GoldenCase, ScenarioCase, SimulationCase
from simulator.models.run import RunRecord, StoredResult
from simulator.models.scores import CaseResult, FidelityFinding, Outcome, Score
from simulator.models.summary import MetricSummary, RepeatStats, persona_fidelity
from simulator.models.transcript import (
    AgentEvent,
    CheckEvent,
    ErrorEvent,
    GoldenTurnRecord,
    InputEvent,
    StepOutcome,
    ToolCallRecord,
    Transcript,
    TranscriptEvent,
    Usage,
    UserEvent,
)
from simulator.reports._states import (
    CSS_CLASS,
    FIDELITY_MARK,
    MARK,
    State,
    goals_count,
    golden_turn_states,
    score_state,
    step_name,
    step_state,
    step_words,
    unsure_note,
    verdict_state,
)
from simulator.reports.coverage_view import (
    CoverageMatrix,
    coverage_headline,
    coverage_matrix,
    gap_sections,
    step_text,
)
from simulator.reports.tabular import summary_of
from simulator.safety import redacted_and_shortened, terminal_safe

__all__ = ["CONTENT_SECURITY_POLICY", "OPEN_LIMIT", "OUTCOME_ORDER", "render_html"]

#: The page's Content-Security-Policy: no network access of any kind, inline styles and scripts only.
CONTENT_SECURITY_POLICY = (
    "default-src 'none'; style-src 'unsafe-inline'; script-src 'unsafe-inline'; img-src data:; "
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
_TOOL_STATUS = {
    "executed": "executed",
    "faked": "faked",
    "simulated": "SIMULATED",
    "not_executed": "NOT EXECUTED",
    "failed": "FAILED",
    "needs_approval": "NEEDS APPROVAL",
}
_STATE_TITLE: dict[State, str] = {
    "met": "met",
    "not_met": "not met",
    "unsure": "unsure",
    "not_reached": "not reached",
    "error": "error",
    "n/a": "not applicable",
}
_ROLES = ("agent", "user", "judge")
_WHY_LENGTH = 180
#: Cases that did not pass start open, unless there are more of them than this: then every case starts
#: closed, and the summary lines (outcome, name, persona, goals, first reason) read as a compact list.
OPEN_LIMIT = 50
_NO_PERSONA = "-"  # persona names are slugs, which never start with "-"

CaseDefinition = GoldenCase | ScenarioCase | SimulationCase


def _asset(name: str) -> str:
    text = resources.files("simulator.reports").joinpath("assets", name).read_text(encoding="utf-8")
    closing = "</style" if name.endswith(".css") else "</script"
    if closing in text.lower():  # pragma: no cover - guards the shipped files
        raise ValueError(f"assets/{name} must not contain {closing!r}")
    return text


_CSS = _asset("report.css")
_JS = _asset("report.js")


# -- escaping -------------------------------------------------------------------------------------------------


def _e(value: object) -> str:
    """Any value as HTML text or attribute content: ``&``, ``<``, ``>``, ``"`` and ``'`` escaped, and control
    characters and bidi marks and overrides written as visible escapes (``\\u202e``: nothing reorders the page,
    as the terminal shows it)."""
    return html.escape(terminal_safe(str(value)), quote=True)


def _visible_data(value: object) -> object:
    """``value`` with every string in it as :func:`_e` shows it: the filters' tags, personas and suites are the
    texts the page shows, and match them."""
    if isinstance(value, str):
        return terminal_safe(value)
    if isinstance(value, dict):
        return {_visible_data(key): _visible_data(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [_visible_data(item) for item in value]
    return value


def _left_out(left_out: Sequence[str]) -> str:
    if not left_out:
        return ""
    items = "".join(f"<li>{_e(text)}</li>" for text in left_out)
    title = f"Left out: {len(left_out)} stored result(s) could not be read"
    return f"<section class='left-out'><h2>{title}</h2><ul>{items}</ul></section>"


def _script_json(value: object) -> str:
    """JSON that is safe inside ``<script type="application/json">``: no ``<``, ``>`` or ``&`` in it at all, and
    its texts as the page shows them (:func:`_visible_data`)."""
    text = json.dumps(_visible_data(value), ensure_ascii=False, sort_keys=True)
    for char, escaped in (
        ("&", "\\u0026"),
        ("<", "\\u003c"),
        (">", "\\u003e"),
        ("\u2028", "\\u2028"),
        ("\u2029", "\\u2029"),
    ):
        text = text.replace(char, escaped)
    return text


def _json_text(value: JsonValue) -> str:
    return json.dumps(value, ensure_ascii=False, sort_keys=True, indent=None)


def _shorten(text: str, limit: int) -> str:
    text = " ".join(text.split())
    return redacted_and_shortened(text, limit)


# -- figures --------------------------------------------------------------------------------------------------


def _percent(value: float | None) -> str:
    return "n/a" if value is None else f"{value * 100:.1f}%"


def _number(value: float | None) -> str:
    return "–" if value is None else f"{value:.3g}" if abs(value) < 1000 else f"{value:,.0f}"


def _cost(value: float | None) -> str:
    return "unknown" if value is None else f"${value:.4f}"


def _seconds(value: float) -> str:
    if value < 120:
        return f"{value:.1f} s"
    minutes, seconds = divmod(round(value), 60)
    return f"{minutes} min {seconds:02d} s" if minutes < 60 else f"{minutes // 60} h {minutes % 60:02d} min"


def _time(value: datetime | None) -> str:
    return "–" if value is None else value.isoformat(sep=" ", timespec="seconds")


def _usage(record: RunRecord) -> list[tuple[str, Usage]]:
    """Answers, tokens and cost per role, from the run summary."""
    used = summary_of(record).usage
    ordered = [(role, used[role]) for role in _ROLES if role in used]
    ordered += [(role, used[role]) for role in sorted(used) if role not in _ROLES]
    return ordered


# -- the cases as the page lists them ---------------------------------------------------------------------------


@dataclass(frozen=True)
class _Item:
    """One result as the page shows it: its id, where it came from, its repeats."""

    number: int
    stored: StoredResult
    suite_name: str
    definition: CaseDefinition | None
    tags: list[str]
    runs: int
    repeat_stats: RepeatStats | None

    @property
    def anchor(self) -> str:
        return f"case-{self.number}"


def _group_key(stored: StoredResult) -> tuple[int, str, str]:
    return stored.suite, stored.case, stored.persona or ""


def _order_key(stored: StoredResult) -> tuple[int, int, str, str, int]:
    return _RANK.get(stored.outcome, len(_RANK)), stored.suite, stored.case, stored.persona or "", stored.repeat


def _items(record: RunRecord, results: Sequence[StoredResult]) -> list[_Item]:
    definitions: list[dict[str, CaseDefinition]] = [
        {case.name: case for case in snapshot.suite.cases} for snapshot in record.snapshot
    ]
    cases = summary_of(record).by_case()
    items: list[_Item] = []
    for number, stored in enumerate(sorted(results, key=_order_key), start=1):
        known = 0 <= stored.suite < len(record.snapshot)
        definition = definitions[stored.suite].get(stored.case) if known else None
        case = cases.get((stored.suite, stored.case, stored.persona))
        items.append(
            _Item(
                number=number,
                stored=stored,
                suite_name=record.snapshot[stored.suite].suite.name if known else f"suite {stored.suite + 1}",
                definition=definition,
                tags=list(dict.fromkeys(definition.tags)) if definition is not None else [],
                runs=case.stats.k if case is not None else 1,
                repeat_stats=case.stats if case is not None and case.stats.k > 1 else None,
            )
        )
    return items


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
        [("cached", f"From cache (would-be {_cost(total.cached_cost)})", f"{total.cached_calls:,} of {total.calls:,}")]
        if total.cached_calls
        else []
    )
    tiles = [
        ("correctness", "Correctness", _percent(correctness)),
        ("pass", "Passed", str(counts.passed)),
        ("fail", "Failed", str(counts.failed)),
        ("error", "Error", str(counts.error)),
        ("unsure", "Unsure", str(counts.unsure)),
        *([("user_error", "User error", str(counts.user_error))] if counts.user_error else []),
        ("total", "Total", f"{counts.total} of {len(record.plan)}" if record.plan else str(counts.total)),
        ("cost", "Cost", _cost(total.cost)),
        *cached,
        ("duration", "Duration", _seconds(duration)),
    ]
    board = "".join(
        f"<div class='tile {cls}'><span class='value'>{_e(value)}</span><span class='label'>{_e(label)}</span></div>"
        for cls, label, value in tiles
    )
    bar = ""
    if counts.total:
        bar = (
            "<div class='bar' aria-hidden='true'>"
            + "".join(
                f"<span class='{cls}' style='width:{count / counts.total * 100:.2f}%'></span>"
                for cls, count in (
                    ("pass", counts.passed),
                    ("unsure", counts.unsure),
                    ("fail", counts.failed),
                    ("error", counts.error),
                    ("user_error", counts.user_error),
                )
                if count
            )
            + "</div>"
        )
    rows = "".join(
        f"<tr><td>{_e(role)}</td><td class='num'>{u.calls:,}</td><td class='num'>{u.cached_calls:,}</td>"
        f"<td class='num'>{u.requests:,}</td><td class='num'>{u.prompt_tokens:,}</td>"
        f"<td class='num'>{u.completion_tokens:,}</td><td class='num'>{u.total_tokens:,}</td>"
        f"<td class='num'>{_e(_cost(u.cost))}</td>"
        f"<td class='num'>{_e(_cost(u.cached_cost)) if u.cached_calls else '–'}</td></tr>"
        for role, u in usage
    )
    table = (
        "<table class='usage'><thead><tr><th>Model role</th><th class='num'>Answers</th>"
        "<th class='num'>From cache</th><th class='num'>Requests sent</th><th class='num'>Prompt tokens</th>"
        "<th class='num'>Completion tokens</th><th class='num'>Total tokens</th><th class='num'>Cost</th>"
        "<th class='num'>Would-be cost of cached</th></tr></thead>"
        f"<tbody>{rows}</tbody></table>"
        if usage
        else "<p class='muted'>No model calls recorded.</p>"
    )
    return (
        f"<section id='totals'><h2>Totals</h2><div class='scoreboard'>{board}</div>{bar}"
        f"<h3>Answers and tokens by role</h3>{table}</section>"
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


def _fidelity(results: Sequence[StoredResult]) -> str:
    """The simulated user's fidelity per persona, when the user model wrote any turn or a finding was made."""
    personas = persona_fidelity(stored.result for stored in results)
    if not any(p.user_turns or p.findings for p in personas):
        return ""
    rows = "".join(
        f"<tr><td>{_e(p.persona or _NO_PERSONA)}</td><td class='num'>{p.user_turns}</td>"
        f"<td class='num'>{p.flagged_turns}</td><td class='num'>{_e(_percent(p.rate))}</td>"
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
            f"<td class='num'>{_e(_percent(stats.pass_rate))}</td><td class='num'>{_e(_number(stats.pass_hat_k))}</td>"
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


def _step_label(step: StepOutcome, kind: str) -> str:
    return kind_named(kind).report_label(step.index)


def _criteria(definition: CaseDefinition | None, index: int) -> str | None:
    return kind_of(definition).report_criteria(definition, index) if definition is not None else None


def _steps(item: _Item, transcript: Transcript) -> str:
    steps = sorted(transcript.steps, key=lambda s: s.index)
    labels = {s.index: s.label for s in steps}
    stepped = {e.step for e in transcript.events if e.step is not None}
    rows = []
    for step in steps:
        complete = step.status == "complete"
        state = step_state(step.status)
        words = step_words(step)
        mark = _mark(state, words)
        if complete:
            status = "complete" + (f" at turn {step.completed_at_turn}" if step.completed_at_turn is not None else "")
            status_html = f"<span class='ok'>{_e(status)}</span>"
        elif step.status == "blocked":
            if step.blocked_by is None:
                status_html = "<span class='blocked-by'>blocked</span>"
            else:
                goal = step.blocked_by_goal or labels.get(step.blocked_by) or ""
                status_html = (
                    f"<span class='blocked-by'>blocked by step {step.blocked_by + 1}"
                    f"{': ' + _e(goal) if goal else ''}</span>"
                )
        elif step.status == "unsure":
            status_html = "<span class='warn'>unsure</span> <span class='muted'>(the conversation moved on)</span>"
        else:
            status_html = f"<span class='{CSS_CLASS[state]}'>{_e(words)}</span>"
        body = []
        if step.rationale:
            body.append(f"<p class='rationale'>{_e(step.rationale)}</p>")
        else:
            body.append("<p class='rationale muted'>No rationale recorded.</p>")
        criteria = _criteria(item.definition, step.index)
        if criteria:
            body.append(f"<p class='muted'>Success criteria: {_e(criteria)}</p>")
        facts = [f"{step.turns_used} turn{'s' if step.turns_used != 1 else ''} used"]
        if step.verdict:
            facts.append(f"last check: {step.verdict}")
        link = (
            f" · <a href='#{item.anchor}-step-{step.index + 1}'>in the transcript</a>" if step.index in stepped else ""
        )
        body.append(f"<p class='muted'>{_e(', '.join(facts))}{link}</p>")
        rows.append(
            f"<li class='step step-{_e(step_name(step.status))}'><details{'' if complete else ' open'}><summary>{mark} "
            f"<strong>{_e(_step_label(step, transcript.kind))}:</strong> {_e(step.label)} — {status_html}</summary>"
            f"<div class='step-body'>{''.join(body)}</div></details></li>"
        )
    return f"<h4>Goals ({goals_count(steps)})</h4><ol class='steps'>{''.join(rows)}</ol>"


def _mark(state: State, title: str | None = None) -> str:
    """A state's mark as every view shows it, coloured, with its words as the tooltip."""
    return f"<span class='{CSS_CLASS[state]}' title='{_e(title or _STATE_TITLE[state])}'>{MARK[state]}</span>"


def _golden(turns: Sequence[GoldenTurnRecord], scores: Sequence[Score]) -> str:
    states = golden_turn_states(turns, scores)
    met = sum(1 for state in states.values() if state == "met")
    rows = []
    for turn in turns:
        state = states[turn.index]
        sent = _e(turn.user) if turn.user is not None else f"event <code>{_e(turn.event or '')}</code>"
        tools = ""
        if turn.expected_tools or turn.actual_tools:
            expected = ", ".join(turn.expected_tools) or "—"
            called = ", ".join(turn.actual_tools) or "—"
            tools = f"expected {_e(expected)}<br>called {_e(called)}"
        rows.append(
            f"<tr class='turn-{_e(state)}'><td class='num'>{turn.index + 1}</td>"
            f"<td>{_mark(state)} {_e(_STATE_TITLE[state])}</td><td>{sent}</td>"
            f"<td>{_e(turn.expected_message) if turn.expected_message else '<span class=muted>—</span>'}</td>"
            f"<td>{'<br>'.join(_e(m) for m in turn.actual_messages) or '<span class=muted>(no message)</span>'}</td>"
            f"<td>{tools}</td><td>{_e(turn.history)}</td></tr>"
        )
    return (
        f"<h4>Golden turns ({met}/{len(turns)}{unsure_note(states.values())})</h4><table class='golden'><thead><tr>"
        "<th class='num'>#</th><th>State</th><th>Sent</th>"
        "<th>Expected</th><th>Actual</th><th>Tools</th><th>History</th></tr></thead>"
        f"<tbody>{''.join(rows)}</tbody></table>"
    )


def _tool(call: ToolCallRecord) -> str:
    status = _TOOL_STATUS.get(call.status, call.status)
    arguments = (
        f"<span class='bad'>invalid arguments: {_e(call.arguments_error)}</span>"
        if call.arguments_error
        else f"<code>{_e(_json_text(call.arguments))}</code>"
    )
    text = call.error if call.error else call.result_text
    answer = f"<span class='bad'>{_e(text)}</span>" if call.error else f"<code>{_e(text)}</code>"
    extra = []
    if call.fake:
        extra.append(f"by {call.fake}")
    if call.simulated_by and call.status == "simulated":
        extra.append(f"played by the {call.simulated_by}; the tool did not run")
    if call.duration_ms:
        extra.append(f"{call.duration_ms:.0f} ms")
    extra_html = f" <span class='muted'>({_e(', '.join(extra))})</span>" if extra else ""
    return (
        f"<div class='tool tool-{_e(call.status)}'><span class='tool-status'>{_e(status)}</span> "
        f"tool <code><strong>{_e(call.name)}</strong></code>({arguments}) → {answer}{extra_html}</div>"
    )


def _finding(finding: FidelityFinding) -> str:
    return (
        f"<div class='check fidelity'><span class='warn'>{FIDELITY_MARK}</span> user fidelity, turn {finding.turn}: "
        f"<strong>{_e(finding.kind)}</strong> “{_e(finding.evidence)}” <span class='muted'>({_e(finding.rule)})"
        "</span></div>"
    )


def _event(event: TranscriptEvent, transcript: Transcript) -> str:
    if isinstance(event, UserEvent):
        return (
            f"<div class='msg user'><div class='who'>user · turn {event.turn} · {_e(event.source)}</div>"
            f"<div class='text'>{_e(event.text)}</div></div>"
        )
    if isinstance(event, InputEvent):
        payload = f" <code>{_e(_json_text(event.payload))}</code>" if event.payload else ""
        return (
            f"<div class='msg input'><div class='who'>event · turn {event.turn}</div>"
            f"<code><strong>{_e(event.name)}</strong></code>{payload}</div>"
        )
    if isinstance(event, AgentEvent):
        parts = [_tool(call) for call in event.tool_calls]
        latency = f" · {event.latency_ms:.0f} ms" if event.latency_ms else ""
        parts.extend(
            f"<div class='msg agent'><div class='who'>agent · turn {event.turn}{latency}</div>"
            f"<div class='text'>{_e(message)}</div></div>"
            for message in event.messages
        )
        if event.handoff:
            parts.append(f"<div class='msg agent'><strong>hands off to {_e(event.handoff)}</strong></div>")
        if event.variables:
            parts.append(f"<div class='check'>agent set variables <code>{_e(_json_text(event.variables))}</code></div>")
        if not event.messages and not event.handoff:
            parts.append(
                f"<div class='msg agent'><div class='who'>agent · turn {event.turn}</div><em>(no message)</em></div>"
            )
        return "".join(parts)
    if isinstance(event, CheckEvent):
        target = "goal" if event.step is None else kind_named(transcript.kind).outcome_label(event.step)
        state = verdict_state(event.verdict, event.rationale)
        details = "".join(
            f"<li>{_mark(verdict_state(d.verdict, d.evidence))} {_e(d.check)}: "
            f"<span class='{CSS_CLASS[verdict_state(d.verdict, d.evidence)]}'>{_e(d.verdict)}</span>"
            f"{' — ' + _e(d.evidence) if d.evidence else ''}</li>"
            for d in event.details
        )
        return (
            f"<div class='check'>{_mark(state)} check {_e(target)} after turn {event.turn}: "
            f"<span class='{CSS_CLASS[state]}'>{_e(event.verdict)}</span>"
            f" — {_e(event.rationale)}{f'<ul>{details}</ul>' if details else ''}</div>"
        )
    assert isinstance(event, ErrorEvent)
    return f"<div class='event-error'><strong>error ({_e(event.where)})</strong>: {_e(event.message)}</div>"


def _transcript(item: _Item, transcript: Transcript) -> str:
    labels = {s.index: s.label for s in transcript.steps}
    findings = item.stored.result.fidelity
    parts = []
    current: int | None = None
    shown: set[int] = set()
    flagged: set[int] = set()
    for event in transcript.events:
        if event.step is not None and event.step != current:
            current = event.step
            if current not in shown:
                shown.add(current)
                name = kind_named(transcript.kind).report_label(current)
                label = labels.get(current, "")
                parts.append(
                    f"<div class='step-divider' id='{item.anchor}-step-{current + 1}'>{_e(name)}"
                    f"{': ' + _e(label) if label else ''}</div>"
                )
        replay = transcript.replay
        divergence = replay.divergence(event.turn) if replay is not None and isinstance(event, AgentEvent) else None
        if divergence is not None:
            parts.append(f"<div class='event-error divergence'><strong>⟂</strong> {_e(divergence)}</div>")
        parts.append(_event(event, transcript))
        if isinstance(event, UserEvent) and event.turn not in flagged:
            flagged.add(event.turn)
            parts.extend(_finding(finding) for finding in findings if finding.turn == event.turn)
    # An ending without a closing message has no user message of its own.
    parts.extend(_finding(finding) for finding in findings if finding.turn not in flagged)
    if not parts:
        parts.append("<p class='muted'>No events.</p>")
    origin = f"<p class='muted'>{_e(transcript.replay.summary())}</p>" if transcript.replay is not None else ""
    return f"<h4>Transcript</h4>{origin}<div class='transcript'>{''.join(parts)}</div>"


def _score_row(score: Score) -> str:
    value = _number(score.value)
    if score.threshold is not None:
        value += f" / {_number(score.threshold)}"
    where = []
    if score.turn is not None:
        where.append(f"turn {score.turn}")
    if score.step is not None:
        where.append(f"step {score.step + 1}")
    raw = f"<details><summary>raw judge reply</summary><pre>{_e(score.raw)}</pre></details>" if score.raw else ""
    return (
        f"<tr class='verdict-{_e(score.verdict)}'>"
        f"<td>{_mark(score_state(score))} {_e(score.verdict)}</td>"
        f"<td>{_e(score.metric)}</td><td>{_e(score.check)}</td><td>{_e(score.source)}</td>"
        f"<td class='num'>{_e(value)}</td><td>{'required' if score.required else '<span class=muted>info</span>'}</td>"
        f"<td>{_e(', '.join(where))}</td><td class='reason'>{_e(score.reason)}{raw}</td></tr>"
    )


def _scores(scores: Sequence[Score]) -> str:
    if not scores:
        return "<h4>Scores</h4><p class='muted'>No scores.</p>"
    return (
        f"<h4>Scores ({len(scores)})</h4><table class='scores'><thead><tr><th>Verdict</th><th>Metric</th>"
        "<th>Check</th><th>Source</th><th class='num'>Value / pass mark</th><th>Decides</th><th>Where</th>"
        f"<th>Reason</th></tr></thead><tbody>{''.join(_score_row(s) for s in scores)}</tbody></table>"
    )


def _error_card(result: CaseResult) -> str:
    transcript = result.transcript
    errors = [e for e in transcript.events if isinstance(e, ErrorEvent)]
    if result.outcome != "error" and transcript.error is None and not errors:
        return ""
    lines = []
    if transcript.error:
        lines.append(f"<pre>{_e(transcript.error)}</pre>")
    lines.extend(f"<p>{_e(e.where)} error at turn {e.turn}: {_e(e.message)}</p>" for e in errors)
    if result.outcome == "error":
        lines.extend(f"<p>{_e(reason)}</p>" for reason in result.reasons if reason != transcript.error)
    title = "The run could not finish this case" if result.outcome == "error" else "Errors during the conversation"
    return (
        f"<div class='error-card' role='alert'><strong>{_e(title)}</strong> "
        f"<span class='muted'>(stopped: {_e(transcript.stop_reason)})</span>{''.join(lines)}</div>"
    )


def _case(item: _Item, *, expand: bool) -> str:
    stored = item.stored
    result = stored.result
    transcript = result.transcript
    outcome = stored.outcome
    steps = transcript.steps
    summary = [
        f"<span class='badge {_e(outcome)}'>{_e(outcome.upper())}</span>",
        f"<span class='case-name'>{_e(stored.case)}</span>",
        f"<span class='muted'>{_e(item.suite_name)}</span>",
    ]
    if stored.persona:
        summary.append(f"<span>persona <strong>{_e(stored.persona)}</strong></span>")
    if item.runs > 1:
        summary.append(f"<span class='muted'>run {stored.repeat + 1} of {item.runs}</span>")
    if item.repeat_stats is not None and item.repeat_stats.label:
        summary.append(f"<span class='label-{_e(item.repeat_stats.label)}'>{_e(item.repeat_stats.label)}</span>")
    if steps:
        left = {step_state(step.status) for step in steps} - {"met"}
        state: State = "met" if not left else "unsure" if left == {"unsure"} else "not_met"
        summary.append(f"<span class='{CSS_CLASS[state]}'>Goals ({goals_count(steps)})</span>")
    if result.reasons:
        summary.append(f"<span class='case-why'>{_e(_shorten(result.reasons[0], _WHY_LENGTH))}</span>")

    meta = [
        f"{transcript.kind}",
        f"stopped: {transcript.stop_reason}",
        f"{transcript.turns} turn{'s' if transcript.turns != 1 else ''}",
        _seconds(stored.duration_s),
    ]
    tokens = sum(u.total_tokens for u in transcript.usage.values())
    if tokens:
        meta.append(f"{tokens:,} tokens")
    if transcript.seed is not None:
        meta.append(f"seed {transcript.seed}")
    body = [f"<p class='case-meta'>{_e(' · '.join(meta))}</p>"]
    if item.tags:
        body.append("<p>" + "".join(f"<span class='chip'>{_e(tag)}</span>" for tag in item.tags) + "</p>")
    if item.definition is not None and item.definition.description:
        body.append(f"<p class='muted'>{_e(item.definition.description)}</p>")
    goal = kind_of(item.definition).report_goal(item.definition) if item.definition is not None else None
    if goal is not None and not steps:
        body.append(f"<p>Goal: {_e(goal)}</p>")
    body.append(_error_card(result))
    if result.reasons and outcome != "error":
        reasons = "".join(f"<li>{_e(reason)}</li>" for reason in result.reasons)
        body.append(f"<h4>Why it did not pass</h4><ul class='reasons'>{reasons}</ul>")
    if steps:
        body.append(_steps(item, transcript))
    if transcript.golden_turns:
        body.append(_golden(transcript.golden_turns, result.scores))
    if transcript.session_parameters:
        body.append(
            f"<p class='muted'>Session parameters: <code>{_e(_json_text(transcript.session_parameters))}</code></p>"
        )
    body.append(_transcript(item, transcript))
    body.append(_scores(result.scores))
    open_attr = " open" if expand and outcome != "pass" else ""
    return (
        f"<details class='case outcome-{_e(outcome)}' id='{item.anchor}' data-outcome='{_e(outcome)}'{open_attr}>"
        f"<summary>{''.join(summary)}</summary><div class='case-body'>{''.join(body)}</div></details>"
    )


def _cases(record: RunRecord, items: Sequence[_Item]) -> str:
    by_outcome: dict[str, list[_Item]] = defaultdict(list)
    for item in items:
        by_outcome[item.stored.outcome].append(item)
    expand = sum(1 for item in items if item.stored.outcome != "pass") <= OPEN_LIMIT
    jumps = " ".join(
        f"<a href='#group-{o}'>{len(by_outcome[o])} {_GROUP_COUNT[o][len(by_outcome[o]) != 1]}</a>"
        for o in OUTCOME_ORDER
        if by_outcome[o]
    )
    groups = "".join(
        f"<section class='group' id='group-{o}' data-group='{o}'><h3>{_GROUP_TITLE[o]} ({len(by_outcome[o])})</h3>"
        + "".join(_case(item, expand=expand) for item in by_outcome[o])
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


def _data(record: RunRecord, items: Sequence[_Item]) -> dict[str, JsonValue]:
    cases: list[JsonValue] = [
        {
            "id": item.anchor,
            "case": item.stored.case,
            "outcome": item.stored.outcome,
            "persona": item.stored.persona,
            "suite": item.stored.suite,
            "repeat": item.stored.repeat,
            "tags": list(item.tags),
        }
        for item in items
    ]
    return {"run": record.id, "cases": cases}


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
    items = _items(record, results)
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
            _coverage(record),
            _fidelity(results),
            _cases(record, items),
            f"<footer>Run <code>{_e(record.id)}</code> · generated by simulator "
            f"{_e(record.versions.get('simulator', ''))} · self-contained page, no network access</footer>",
        )
    )
    return (
        "<!DOCTYPE html>\n<html lang='en'>\n<head>\n<meta charset='utf-8'>\n"
        f"<meta http-equiv='Content-Security-Policy' content=\"{_e(CONTENT_SECURITY_POLICY)}\">\n"
        "<meta name='referrer' content='no-referrer'>\n"
        "<meta name='viewport' content='width=device-width, initial-scale=1'>\n"
        "<link rel='icon' href='data:,'>\n"
        f"<title>{_e(title)}</title>\n<style>\n{_CSS}</style>\n</head>\n<body>\n{body}\n"
        f"<script type='application/json' id='simulator-report-data'>{_script_json(_data(record, items))}</script>\n"
        f"<script id='simulator-report-script'>\n{_JS}</script>\n</body>\n</html>\n"
    )
