"""The app's own pages around the report's parts: the layout (navigation, assets as files), the runs list, the
compare picker and short answers. Every text from a run passes through :func:`simulator.html_text`."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any
from urllib.parse import quote, urlencode

import simulator
from simulator import html_text as _e

__all__ = [
    "COLUMNS",
    "RunRow",
    "compare_picker",
    "downloads",
    "layout",
    "message_page",
    "review_forms",
    "run_row",
    "runs_page",
    "sorted_rows",
]

#: The runs list's columns: query name and heading, in order.
COLUMNS: tuple[tuple[str, str], ...] = (
    ("id", "Run"),
    ("status", "Status"),
    ("created", "Created"),
    ("agent_version", "Agent version"),
    ("suites", "Suites"),
    ("note", "Note"),
    ("correctness", "Correctness"),
    ("reviewed", "Reviewed"),
    ("passed", "Pass"),
    ("failed", "Fail"),
    ("error", "Error"),
    ("unsure", "Unsure"),
    ("user_error", "User error"),
    ("duration_s", "Duration"),
    ("tokens", "Tokens"),
    ("cost", "Cost"),
)
_REPORT_FORMATS = ("html", "md", "json", "csv", "xlsx", "junit")


@dataclass(frozen=True)
class RunRow:
    """One run as the runs list shows it (and ``/api/runs`` gives it)."""

    id: str
    status: str
    created: str
    agent_version: str
    suites: str
    note: str
    correctness: float | None
    #: Correctness as reviewed (None when nobody reviewed the run).
    reviewed: float | None
    passed: int
    failed: int
    error: int
    unsure: int
    user_error: int
    planned: int
    duration_s: float
    tokens: int
    cost: float | None

    def as_json(self) -> dict[str, Any]:
        """The row as a JSON object."""
        return dict(vars(self))


def run_row(listing: simulator.RunListing, db: Any, reviewed: simulator.RunReviews | None = None) -> RunRow:
    """The row of a run (``reviewed``: what its reviews make of it, if it has any); a run without a summary yet
    (running) counts its stored results."""
    usage = list(listing.usage.values())
    costs = [use.cost for use in usage]
    counts = listing.counts
    if counts is None or listing.status == "running":
        stored = simulator.run_state(listing.id, db=db).counts
        judged = sum(stored.values()) - stored.get("user_error", 0)
        figures = (
            stored.get("pass", 0) / judged if judged else None,
            stored.get("pass", 0),
            stored.get("fail", 0),
            stored.get("error", 0),
            stored.get("unsure", 0),
            stored.get("user_error", 0),
        )
    else:
        figures = (counts.correctness, counts.passed, counts.failed, counts.error, counts.unsure, counts.user_error)
    return RunRow(
        listing.id,
        listing.status,
        f"{listing.created:%Y-%m-%d %H:%M:%S}",
        listing.agent_version or "",
        ", ".join(listing.suites),
        listing.note,
        figures[0],
        reviewed.reviewed.correctness if reviewed is not None else None,
        *figures[1:],
        listing.planned,
        listing.duration_s,
        sum(use.total_tokens for use in usage),
        None if any(cost is None for cost in costs) else sum(cost or 0.0 for cost in costs),
    )


def sorted_rows(rows: Sequence[RunRow], *, q: str, status: str, sort: str, descending: bool) -> list[RunRow]:
    """``rows`` whose id, suites, note or agent version contains ``q`` (any case) and whose status is
    ``status`` (empty: any), ordered by the column ``sort`` (unknown or empty: newest first); a run without a
    value in that column comes last."""
    needle = q.casefold().strip()
    kept = [
        row
        for row in rows
        if (not status or row.status == status)
        and (not needle or needle in " ".join((row.id, row.suites, row.note, row.agent_version)).casefold())
    ]
    if sort not in dict(COLUMNS):
        return kept
    present = [row for row in kept if getattr(row, sort) is not None]
    missing = [row for row in kept if getattr(row, sort) is None]
    return sorted(present, key=lambda row: getattr(row, sort), reverse=descending) + missing


def layout(title: str, body: str, *, scripts: Sequence[str] = (), styles: Sequence[str] = ("view.css",)) -> str:
    """A whole page: navigation, ``body``, the given ``/static/`` styles and scripts (never inline)."""
    links = "".join(f"<link rel='stylesheet' href='/static/{_e(name)}'>" for name in styles)
    tags = "".join(f"<script src='/static/{_e(name)}' defer></script>" for name in scripts)
    return (
        "<!DOCTYPE html>\n<html lang='en'>\n<head>\n<meta charset='utf-8'>\n"
        "<meta name='viewport' content='width=device-width, initial-scale=1'>\n"
        f"<link rel='icon' href='data:,'>{links}\n<title>{_e(title)}</title>\n</head>\n<body>\n"
        "<nav class='view-nav'><a href='/'>Runs</a> <a href='/compare'>Compare</a></nav>\n"
        f"<main>{body}</main>\n{tags}\n</body>\n</html>\n"
    )


def _figure(row: RunRow, column: str) -> str:
    value = getattr(row, column)
    if column == "correctness":
        return _e(simulator.percent(value))
    if column == "reviewed":
        return "" if value is None else _e(simulator.percent(value))
    if column == "cost":
        return "unknown" if value is None else f"${value:.4f}"
    if column == "duration_s":
        return f"{value:.1f} s"
    if column == "tokens":
        return f"{value:,}"
    return _e(value)


def _actions(row: RunRow) -> str:
    buttons = []
    if row.status == "running":
        buttons.append(("stop", "Stop"))
    if row.status in {"interrupted", "failed"}:
        buttons.append(("resume", "Resume"))
    buttons.append(("repeat", "Repeat"))
    run = quote(row.id, safe="")
    return "".join(
        f"<form method='post' action='/runs/{run}/{action}' class='inline'><button type='submit' "
        f"data-confirm='{_e(label)} run {_e(row.id)}?'>{_e(label)}</button></form>"
        for action, label in buttons
    )


def _sort_link(column: str, heading: str, query: dict[str, str]) -> str:
    current = query.get("sort") == column
    descending = not (current and query.get("order") == "desc")
    params = {**query, "sort": column, "order": "desc" if descending else "asc"}
    mark = (" ▼" if query.get("order") == "desc" else " ▲") if current else ""
    return f"<a href='/?{_e(urlencode(params))}'>{_e(heading)}{mark}</a>"


def runs_page(rows: Sequence[RunRow], total: int, query: dict[str, str], left_out: Sequence[str]) -> str:
    """The runs list: the filter form, one row per run (note editable, actions), what could not be read."""
    statuses = "".join(
        f"<option value='{s}'{' selected' if query.get('status') == s else ''}>{s or 'any status'}</option>"
        for s in ("", "running", "completed", "interrupted", "failed")
    )
    form = (
        "<form method='get' action='/' class='filters view-filters' role='search'>"
        f"<label>Search <input type='search' name='q' value='{_e(query.get('q', ''))}'></label> "
        f"<label>Status <select name='status'>{statuses}</select></label> "
        f"<input type='hidden' name='sort' value='{_e(query.get('sort', ''))}'>"
        f"<input type='hidden' name='order' value='{_e(query.get('order', ''))}'>"
        f"<button type='submit'>Filter</button> <output>Showing {len(rows)} of {total} runs</output></form>"
    )
    head = "".join(f"<th>{_sort_link(column, heading, query)}</th>" for column, heading in COLUMNS) + "<th></th>"
    lines = []
    for row in rows:
        run = quote(row.id, safe="")
        cells = []
        for column, _ in COLUMNS:
            if column == "id":
                cells.append(f"<td><a href='/runs/{run}'><code>{_e(row.id)}</code></a></td>")
            elif column == "status":
                cells.append(f"<td><span class='status status-{_e(row.status)}'>{_e(row.status)}</span></td>")
            elif column == "note":
                cells.append(
                    f"<td><form method='post' action='/runs/{run}/note' class='note-form'>"
                    f"<input name='note' value='{_e(row.note)}' aria-label='Note of run {_e(row.id)}'>"
                    "<button type='submit'>Save</button></form></td>"
                )
            else:
                kind = (
                    ""
                    if column in {"agent_version", "suites"}
                    else " class='when'"
                    if column == "created"
                    else (" class='num'")
                )
                cells.append(f"<td{kind}>{_figure(row, column)}</td>")
        lines.append(f"<tr data-run='{_e(row.id)}'>{''.join(cells)}<td>{_actions(row)}</td></tr>")
    table = (
        f"<div class='table-scroll'><table class='runs'><thead><tr>{head}</tr></thead><tbody>{''.join(lines)}</tbody>"
        "</table></div>"
        if rows
        else "<p class='muted'>No runs match.</p>"
    )
    unread = "".join(f"<li>{_e(text)}</li>" for text in left_out)
    skipped = (
        f"<section class='left-out'><h2>Runs that cannot be read</h2><ul>{unread}</ul></section>" if unread else ""
    )
    body = f"<h1>Runs</h1>{form}{table}{skipped if unread else ''}"
    return layout("Simulator runs", body, scripts=("view.js",))


def downloads(run_id: str) -> str:
    """Links to the run's report in every built-in format."""
    run = quote(run_id, safe="")
    links = " ".join(f"<a href='/runs/{run}/report.{fmt}' download>{fmt}</a>" for fmt in _REPORT_FORMATS)
    return f"<nav class='downloads'>Download the report: {links}</nav>"


_VERDICT_WORDS = {"pass": "pass", "fail": "fail", "met": "met", "not_met": "not met"}


def _review_form(run_id: str, key: str, index: int, target: simulator.ReviewTarget) -> str:
    """One target's form: the judge's verdict and the review that counts, then verdict, reason and name. A step's
    or a check's form is folded under that line (it sits beside the step or the check's score)."""
    what = "The whole result" if target.kind == "result" else target.target
    if target.kind == "step":
        what = target.target.capitalize()
    now = (
        target.review.describe(target.judged)
        if target.review is not None
        else f"judge: {_VERDICT_WORDS.get(target.judged, target.judged)} · not reviewed"
    )
    options = "".join(
        f"<label><input type='radio' name='verdict' value='{_e(v)}' required> {_e(_VERDICT_WORDS.get(v, v))}</label> "
        for v in target.verdicts
    )
    ident = f"review-{index}"
    fields = (
        f"<input type='hidden' name='key' value='{_e(key)}'>"
        f"<input type='hidden' name='target' value='{_e(target.target)}'>"
        f"<fieldset><legend>Your verdict</legend>{options}</fieldset>"
        f"<label>Reason <input name='reason' required maxlength='4000'></label> "
        f"<label>Your name <input name='reviewer' required maxlength='200' autocomplete='name'></label> "
        f"<button type='submit'>Save review</button> <output class='review-error' role='alert'></output>"
    )
    action = f"/api/runs/{quote(run_id, safe='')}/reviews"
    if target.kind == "result":
        return (
            f"<form method='post' action='{action}' class='review-form' id='{ident}' data-review-kind='result'>"
            f"<h3>{_e(what)}</h3><p class='review-now'>{_e(now)}</p>{fields}</form>"
        )
    return (
        f"<details class='review-beside'><summary>Review {_e(what if target.kind == 'step' else 'this check')} · "
        f"<span class='review-now'>{_e(now)}</span></summary>"
        f"<form method='post' action='{action}' class='review-form' id='{ident}' data-review-kind='{_e(target.kind)}'>"
        f"{fields}</form></details>"
    )


def review_forms(run_id: str, key: str, targets: Sequence[simulator.ReviewTarget]) -> dict[str, str]:
    """The review forms of one result by target, to show beside what they review: the whole result (pass /
    fail) at the top of the conversation, with what a review does; each step (met / not met) in the step, each
    check under its score. Each beside the judge's verdict and the review that counts now; a review never
    changes the judge's verdict."""
    forms = {target.target: _review_form(run_id, key, index, target) for index, target in enumerate(targets)}
    whole = next((target.target for target in targets if target.kind == "result"), None)
    if whole is not None:
        forms[whole] = (
            "<section class='review-section' id='review'><h2>Review</h2>"
            "<p class='muted'>Record your own verdict beside the judge's, on the whole result here or on a step or "
            "a check where it is shown: it is stored apart and counted in the correctness as reviewed; the judge's "
            f"verdict never changes.</p>{forms[whole]}</section>"
        )
    return forms


def message_page(title: str, lines: Sequence[str], *, back: str = "/") -> str:
    """A short answer: a heading, a few lines, and a link back."""
    text = "".join(f"<p>{_e(line)}</p>" for line in lines)
    return layout(title, f"<h1>{_e(title)}</h1>{text}<p><a href='{_e(back)}'>Back</a></p>")


def compare_picker(rows: Sequence[RunRow], a: str, b: str) -> str:
    """The form that picks two runs to compare (A the baseline, B the new one)."""

    def options(chosen: str) -> str:
        return "".join(
            f"<option value='{_e(row.id)}'{' selected' if row.id == chosen else ''}>"
            f"{_e(row.id)} · {_e(row.suites)}{' · ' + _e(row.note) if row.note else ''}</option>"
            for row in rows
        )

    form = (
        "<form method='get' action='/compare' class='filters view-filters'>"
        f"<label>Run A (baseline) <select name='a'>{options(a)}</select></label> "
        f"<label>Run B (new) <select name='b'>{options(b)}</select></label> "
        "<button type='submit'>Compare</button></form>"
    )
    return layout("Compare runs", f"<h1>Compare two runs</h1>{form}")
