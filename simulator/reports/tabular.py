"""A run as tables: CSV (:func:`render_csv`) and an Excel workbook (:func:`render_xlsx`). Pure functions, no I/O.

Both formats hold one row per conversation (case x persona x repeat), in plan order. The columns
(:func:`case_table`) are:

- ``suite``: the suite's name (from the run's snapshot);
- ``case``: the case's name; ``kind``: ``golden`` / ``scenario`` / ``simulation``;
- ``persona``: the persona's name, empty without one;
- ``repeat``: which run of the case this is, counted from 1;
- ``outcome``: ``pass`` / ``fail`` / ``error`` / ``unsure`` / ``user_error`` (a failure the simulated user
  caused; its first reason names the fidelity finding);
- ``goals``: ``k/n``, completed steps out of all steps; empty for a case without steps (golden);
- ``turns``: the conversation's number of turns;
- ``prompt``: the first user message of the conversation (empty when it had none);
- ``final_output``: the agent's last reply that has a message, its messages joined by blank lines;
- ``metric:<name>``: one column per distinct ``Score.metric`` of the run, in the order first seen, holding how
  many of the conversation's scores of that metric had each verdict: non-zero counts only, in the fixed order
  met, not_met, unsure, error, n/a, e.g. ``met=2 not_met=1``; empty when the conversation has no score of that
  metric. Counts rather than values, because every metric has verdicts and only some have values (the values
  are in the JSON export);
- ``faults``: only in a run where faults were injected on purpose (``faults:``): the faults that answered the
  conversation's tool calls, one per line (``tool: entry: effect (when)``, with ``xN`` for more than one call);
- ``reasons``: why the outcome is not ``pass``, one reason per line;
- ``duration_s``: seconds the conversation took, rounded to milliseconds;
- ``agent_tokens``, ``user_tokens``, ``judge_tokens``: prompt + completion tokens of each model role;
- ``cost_usd``: the conversation's cost over all roles in US dollars, empty when any role's cost is unknown;
- ``cached_answers``: how many of the conversation's model answers (all roles) came from the request cache
  instead of a request; ``cached_cost_usd``: what those answers cost when they were first asked (their would-be
  cost, not part of ``cost_usd``), empty when unknown;
- ``prompt_cache_read_tokens``, ``prompt_cache_write_tokens``, ``prompt_cache_saved_usd``: only in a run where a
  provider's prompt cache served or stored prompt tokens (requests that were sent, billed at its cached price):
  the prompt tokens read from it and written to it over all roles, and what it saved in US dollars (the same
  tokens at the full prompt price minus what they cost; negative when writes cost more than reads saved; empty
  when unknown).

Agent text is untrusted, and a spreadsheet must show it, never evaluate it. In CSV, every text cell that starts
with ``=``, ``+``, ``-``, ``@``, a tab or a carriage return (also after leading spaces) is prefixed with a single
quote, as OWASP recommends against CSV/formula injection (:func:`neutralise`). In the workbook such a cell holds
the text as it is, stored as a string (never a formula) and marked with Excel's quote prefix, so it shows no
quote and stays text when edited. Numbers are written as numbers and are never negative, but for what a prompt
cache saved. Control characters other than tab, line feed and carriage return are removed from text cells in both
formats (Excel's file format cannot hold them; many CSV readers choke on them).

The workbook has four sheets: ``Summary`` (the run's header figures and per-metric summaries), ``Cases``
(the rows above, frozen header, autofilter), ``Steps`` (one row per step of every conversation:
:func:`step_table`) and ``Coverage`` (:func:`coverage_rows`; left out for a run without coverage); a run with
injected faults has a ``Faults`` sheet too (outcome by fault: :func:`fault_rows`). The CSV
text uses ``\\r\\n`` row ends (RFC 4180); write it with ``newline=""`` (and with
``encoding="utf-8-sig"`` if Excel is to open it).

The helpers here (plan order, suite names, prompt, final output, tokens per role) are shared by the other
report formats.
"""

from __future__ import annotations

import csv
import io
import math
import re
import zipfile
from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any

from simulator.models.run import RunRecord, StoredResult, listed_roles
from simulator.models.scores import Score
from simulator.models.summary import RunSummary
from simulator.models.transcript import AgentEvent, Transcript, Usage, UserEvent
from simulator.reports._reviews import reviews_cell
from simulator.reports._states import step_name, steps_in_order
from simulator.reports.coverage_view import WORLD_HEADER, CoverageMatrix, coverage_matrix, step_text, world_row
from simulator.reports.figures import uses_prompt_cache
from simulator.safety import redacted_and_shortened, terminal_safe

__all__ = [
    "CASE_HEAD",
    "CASE_TAIL",
    "FAULTS_COLUMN",
    "STEP_COLUMNS",
    "Cell",
    "case_table",
    "fault_rows",
    "final_output",
    "first_user_message",
    "injected_faults",
    "neutralise",
    "ordered_results",
    "render_csv",
    "render_xlsx",
    "step_table",
    "strip_xml_illegal",
    "suite_name",
    "summary_of",
    "transcript_cost",
    "transcript_tokens",
]

#: A table cell: text, a number, or nothing (an unknown or absent value).
Cell = str | int | float | None

CASE_HEAD = ("suite", "case", "kind", "persona", "repeat", "outcome", "goals", "turns", "prompt", "final_output")
#: The roles with a tokens column of their own (the speech roles' calls are counted in the cost columns).
_TOKEN_ROLES = ("agent", "user", "judge")
CASE_TAIL = (
    "reasons",
    "duration_s",
    "agent_tokens",
    "user_tokens",
    "judge_tokens",
    "cost_usd",
    "cached_answers",
    "cached_cost_usd",
)
#: The columns a run where a provider's prompt cache served or stored prompt tokens adds after :data:`CASE_TAIL`.
PROMPT_CACHE_COLUMNS = ("prompt_cache_read_tokens", "prompt_cache_write_tokens", "prompt_cache_saved_usd")
#: The column that lists a conversation's injected faults (only in a run that had any).
FAULTS_COLUMN = "faults"
#: The columns a run with reviews adds last: the outcome as reviewed and the reviews that count.
REVIEW_COLUMNS = ("reviewed_outcome", "reviews")
STEP_COLUMNS = ("suite", "case", "persona", "repeat", "step", "goal", "status", "blocked_by", "rationale")
METRIC_PREFIX = "metric:"

_VERDICTS = ("met", "not_met", "unsure", "error", "n/a")
_FORMULA_START = ("=", "+", "-", "@", "\t", "\r")
#: Characters XML 1.0 does not allow (C0 controls but tab, LF and CR; surrogates; U+FFFE and U+FFFF).
_XML_ILLEGAL = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ud800-\udfff\ufffe\uffff]")
#: The most characters an Excel cell holds.
_EXCEL_CELL_MAX = 32767


# -- shared helpers ---------------------------------------------------------------------------------------


def ordered_results(record: RunRecord, results: Sequence[StoredResult]) -> list[StoredResult]:
    """The results in plan order (results whose key is not in the plan last, by suite, case, persona, repeat)."""
    position = {item.key: index for index, item in enumerate(record.plan)}
    return sorted(
        results,
        key=lambda r: (position.get(r.key, len(position)), r.suite, r.case, r.persona or "", r.repeat),
    )


def suite_name(record: RunRecord, index: int) -> str:
    """The name of the run's ``index``-th suite, or ``suite <index>`` when the snapshot has no such suite."""
    if 0 <= index < len(record.snapshot):
        return record.snapshot[index].suite.name
    return f"suite {index}"


def first_user_message(transcript: Transcript) -> str:
    """The prompt: the text of the conversation's first user message, empty when it had none."""
    return next((event.text for event in transcript.events if isinstance(event, UserEvent)), "")


def final_output(transcript: Transcript) -> str:
    """The agent's final output: its last reply that has a message, messages joined by blank lines."""
    replies = [event for event in transcript.events if isinstance(event, AgentEvent) and event.messages]
    return replies[-1].text if replies else ""


def transcript_tokens(transcript: Transcript, role: str) -> int:
    """Prompt plus completion tokens of one model role in a conversation (0 when the role made no call)."""
    used = transcript.usage.get(role)
    return used.total_tokens if used is not None else 0


def transcript_cost(transcript: Transcript) -> float | None:
    """The conversation's cost over every role in US dollars; None when any role's cost is unknown."""
    return _known_fsum([used.cost for used in transcript.usage.values()])


def _known_fsum(costs: Sequence[float | None]) -> float | None:
    if any(cost is None for cost in costs):
        return None
    return math.fsum(cost for cost in costs if cost is not None)


def summary_of(record: RunRecord) -> RunSummary:
    """The run's summary, which every aggregate of a report is read from (computed once, when the run's results
    were stored); an empty one for a run that has none yet."""
    return record.totals if record.totals is not None else RunSummary()


def strip_xml_illegal(text: str) -> str:
    """``text`` without the characters XML 1.0 forbids (most C0 controls, lone surrogates, U+FFFE/U+FFFF): a
    last guard, for text that :func:`simulator.safety.terminal_safe` has already written as visible escapes."""
    return _XML_ILLEGAL.sub("", text)


def neutralise(text: str) -> str:
    """``text`` made safe for a spreadsheet cell: a leading ``'`` when it could be read as a formula.

    A cell is neutralised when it starts with ``=``, ``+``, ``-``, ``@``, a tab or a carriage return, or
    starts with one of ``= + - @`` after leading spaces (OWASP, CSV injection).
    """
    if text.startswith(_FORMULA_START) or text.lstrip(" ").startswith(_FORMULA_START[:4]):
        return "'" + text
    return text


# -- tables -----------------------------------------------------------------------------------------------


def _verdict_counts(scores: Sequence[Score]) -> str:
    counts = dict.fromkeys(_VERDICTS, 0)
    for score in scores:
        counts[score.verdict] += 1
    return " ".join(f"{verdict}={count}" for verdict, count in counts.items() if count)


def injected_faults(transcript: Transcript) -> str:
    """The faults injected into a conversation's calls, one per line: ``tool: fault`` and how many calls it
    answered when more than one."""
    calls: dict[str, int] = {}
    for call in transcript.tool_calls():
        if call.fault is not None:
            key = f"{call.name}: {call.fault}"
            calls[key] = calls.get(key, 0) + 1
    return "\n".join(key if count == 1 else f"{key} x{count}" for key, count in calls.items())


def fault_rows(record: RunRecord) -> list[list[Cell]]:
    """The ``Faults`` sheet: outcome by injected fault (empty for a run without faults)."""
    faults = summary_of(record).faults
    if not faults:
        return []
    header: list[Cell] = ["tool", "fault", "conversations", "calls", "passed", "failed", "error", "unsure"]
    rows: list[list[Cell]] = [[*header, "user_error", "correctness"]]
    for fault in faults:
        rows.append(
            [
                fault.tool,
                fault.fault,
                fault.total,
                fault.calls,
                fault.passed,
                fault.failed,
                fault.error,
                fault.unsure,
                fault.user_error,
                _rate(fault.correctness),
            ]
        )
    return rows


def case_table(record: RunRecord, results: Sequence[StoredResult]) -> tuple[list[str], list[list[Cell]]]:
    """The header and one row per conversation, in plan order (see the module docstring for the columns)."""
    ordered = ordered_results(record, results)
    metrics = list(summary_of(record).metrics)
    # Only a run with injected faults has the column: other runs' tables stay as they were.
    faulted = [FAULTS_COLUMN] if summary_of(record).faults else []
    # Only a run with reviews has their columns: other runs' tables stay as they were.
    reviewed = any(stored.reviews for stored in ordered)
    # Only a run where a provider's prompt cache did its part has its columns: other runs' tables stay as they were.
    prompt_cache = any(uses_prompt_cache(used) for used in summary_of(record).usage.values())
    header = [*CASE_HEAD, *(METRIC_PREFIX + metric for metric in metrics), *faulted, *CASE_TAIL]
    header += list(PROMPT_CACHE_COLUMNS) if prompt_cache else []
    header += list(REVIEW_COLUMNS) if reviewed else []
    rows: list[list[Cell]] = []
    for stored in ordered:
        result = stored.result
        transcript = result.transcript
        steps = transcript.steps
        complete = sum(1 for step in steps if step.status == "complete")
        by_metric: dict[str, list[Score]] = {}
        for score in result.scores:
            by_metric.setdefault(score.metric, []).append(score)
        cost = transcript_cost(transcript)
        cached_cost = _known_fsum([used.cached_cost for used in transcript.usage.values()])
        rows.append(
            [
                suite_name(record, stored.suite),
                stored.case,
                result.kind,
                stored.persona or "",
                stored.repeat + 1,
                stored.outcome,
                f"{complete}/{len(steps)}" if steps else "",
                transcript.turns,
                first_user_message(transcript),
                final_output(transcript),
                *(_verdict_counts(by_metric.get(metric, [])) for metric in metrics),
                *([injected_faults(transcript)] if faulted else []),
                "\n".join(result.reasons),
                round(stored.duration_s, 3),
                *(transcript_tokens(transcript, role) for role in _TOKEN_ROLES),
                None if cost is None else round(cost, 6),
                sum(used.cached_calls for used in transcript.usage.values()),
                None if cached_cost is None else round(cached_cost, 6),
                *(_prompt_cache_cells(transcript) if prompt_cache else []),
                *([stored.reviewed_outcome or "", reviews_cell(stored.reviews)] if reviewed else []),
            ]
        )
    return header, rows


def _prompt_cache_cells(transcript: Transcript) -> list[Cell]:
    """A conversation's provider prompt cache over all roles: prompt tokens read, written, and what it saved."""
    used = sum(transcript.usage.values(), Usage())
    saved = None if used.cache_savings is None else round(used.cache_savings, 6)
    return [used.cache_read_tokens, used.cache_write_tokens, saved]


def step_table(record: RunRecord, results: Sequence[StoredResult]) -> tuple[list[str], list[list[Cell]]]:
    """One row per step of every conversation, in plan and step order.

    Columns: suite, case, persona, repeat (from 1), step (its number, from 1), goal (the step's label), status
    (the state's word, as every view names it: ``complete`` ✓, ``incomplete`` ✗, ``unsure`` ?, ``blocked`` or
    ``not_reached`` ⊘; the older ``not_attempted`` is written ``not_reached``), blocked_by (``step j: <goal>`` of
    the step whose failure blocked it, else empty), rationale.
    """
    rows: list[list[Cell]] = []
    for stored in ordered_results(record, results):
        for step in steps_in_order(stored.result.transcript.steps):
            blocked = ""
            if step.blocked_by is not None:
                blocked = f"step {step.blocked_by + 1}" + (f": {step.blocked_by_goal}" if step.blocked_by_goal else "")
            rows.append(
                [
                    suite_name(record, stored.suite),
                    stored.case,
                    stored.persona or "",
                    stored.repeat + 1,
                    step.index + 1,
                    step.label,
                    step_name(step.status),
                    blocked,
                    step.rationale,
                ]
            )
    return list(STEP_COLUMNS), rows


def _csv_cell(value: Cell) -> str:
    if value is None:
        return ""
    if isinstance(value, str):
        return neutralise(strip_xml_illegal(terminal_safe(value)))
    return str(value)


def render_csv(record: RunRecord, results: Sequence[StoredResult]) -> str:
    """The run's conversations as CSV: a header row and one row per conversation (see :func:`case_table`)."""
    header, rows = case_table(record, results)
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\r\n")
    writer.writerow([neutralise(name) for name in header])
    writer.writerows([_csv_cell(value) for value in row] for row in rows)
    return out.getvalue()


# -- Excel ------------------------------------------------------------------------------------------------


def _xlsx_cell(value: Cell) -> Cell:
    # Not neutralised with a quote, which Excel would show: a text cell is stored as a string, never a formula
    # (see _fill_sheet).
    if not isinstance(value, str):
        return value
    # Escaped, not removed (what Excel cannot hold included): distinct texts stay distinct, and nothing reorders.
    return redacted_and_shortened(strip_xml_illegal(terminal_safe(value)), _EXCEL_CELL_MAX)


def _rate(value: float | None) -> Cell:
    return None if value is None else round(value, 6)


def _summary_rows(record: RunRecord, results: Sequence[StoredResult]) -> list[list[Cell]]:
    breakdown = summary_of(record)
    duration = breakdown.duration_s
    user_errors: list[list[Cell]] = [["user_error", breakdown.user_error]] if breakdown.user_error else []
    rows: list[list[Cell]] = [
        ["run id", record.id],
        ["status", record.status],
        ["created (UTC)", _iso(record.created)],
        ["finished (UTC)", _iso(record.finished) if record.finished else None],
        ["suites", ", ".join(f"{s.suite.name} ({s.path})" for s in record.snapshot)],
        ["suite hash", record.suite_hash],
        ["agent version", record.agent_version],
        ["note", record.note or None],
        ["repeat of", record.repeat_of],
        ["correctness", _rate(breakdown.correctness)],
        ["total", breakdown.total],
        ["passed", breakdown.passed],
        ["failed", breakdown.failed],
        ["error", breakdown.error],
        ["unsure", breakdown.unsure],
        *user_errors,
        ["planned", len(record.plan)],
        ["duration_s", round(duration, 3)],
        ["seed", record.settings.seed],
        ["persona", record.settings.persona],
        ["repeat", record.settings.repeat],
        ["tools", "live" if record.settings.live else "test mode"],
        ["user model", record.settings.user_model],
        ["judge model", record.settings.judge_model],
    ]
    usage = breakdown.usage
    roles = listed_roles(usage)
    prompt_cache = any(uses_prompt_cache(used) for used in usage.values())
    costs: list[float | None] = []
    for role in roles:
        used = usage.get(role, Usage())
        costs.append(used.cost)
        rows.extend(
            [
                [f"{role} calls", used.calls],
                [f"{role} from cache", used.cached_calls],
                [f"{role} requests sent", used.requests],
                [f"{role} prompt tokens", used.prompt_tokens],
                [f"{role} completion tokens", used.completion_tokens],
                [f"{role} cost_usd", None if used.cost is None else round(used.cost, 6)],
                [f"{role} cached cost_usd", None if used.cached_cost is None else round(used.cached_cost, 6)],
            ]
        )
        if prompt_cache:
            saved = None if used.cache_savings is None else round(used.cache_savings, 6)
            rows.extend(
                [
                    [f"{role} prompt cache read tokens", used.cache_read_tokens],
                    [f"{role} prompt cache write tokens", used.cache_write_tokens],
                    [f"{role} prompt cache saved_usd", saved],
                ]
            )
    total_cost = None if any(c is None for c in costs) else round(math.fsum(c for c in costs if c is not None), 6)
    rows.append(["total cost_usd", total_cost])
    rows.extend([f"version {name}", version] for name, version in sorted(record.versions.items()))
    rows.append([])
    rows.append(["metric", "scores", "met", "not_met", "unsure", "error", "n/a", "mean", "values"])
    for summary in breakdown.metrics.values():
        rows.append(
            [
                summary.metric,
                summary.count,
                summary.met,
                summary.not_met,
                summary.unsure,
                summary.error,
                summary.not_applicable,
                None if summary.mean is None else round(summary.mean, 6),
                summary.values,
            ]
        )
    return rows


def coverage_rows(record: RunRecord) -> tuple[list[list[Cell]], list[int]]:
    """The ``Coverage`` sheet: the percentage and its ratios, then tables of the persona x case matrix, step
    reach, declared tools, available personas, world collections (a run with a world) and expectations (each
    after a blank row, with a header); and the header rows' numbers (from 1). No rows for a run without coverage."""
    coverage = summary_of(record).coverage
    if coverage is None:
        return [], []
    rows: list[list[Cell]] = [["coverage %", None if coverage.percent is None else round(coverage.percent, 3)]]
    rows += [[f"{name} covered / total", ratio.covered, ratio.total] for name, ratio in coverage.ratios().items()]
    headers: list[int] = []

    def table(header: list[str], body: list[list[Cell]]) -> None:
        if body:
            rows.append([])
            headers.append(len(rows) + 1)
            rows.extend([list[Cell](header), *body])

    matrix = coverage_matrix(record, coverage)
    table(
        ["case", *(CoverageMatrix.column(p) for p in matrix.personas)],
        [[title, *(cells[p].label if p in cells else None for p in matrix.personas)] for title, cells in matrix.rows],
    )
    table(
        ["step", "conversations", "reached", "complete", "failed", "unsure", "blocked", "not reached"],
        [
            [step_text(record, s), s.conversations, s.reached, s.complete, s.incomplete, s.unsure, s.blocked,
             s.not_reached]
            for s in coverage.steps
        ],
    )  # fmt: skip
    table(["tool", "calls"], [[tool.name, tool.calls] for tool in coverage.tools])
    table(["persona", "conversations"], [[persona.name, persona.conversations] for persona in coverage.personas])
    table(
        list(WORLD_HEADER),
        [
            [row[0], c.records, c.read, c.changed, c.conversations, *row[5:]]
            for c in coverage.world
            for row in [world_row(c)]
        ],
    )
    table(
        ["expectation", "case", "scope", "needs judge", "evaluated", "conversations", "never evaluated because"],
        [
            [f"{e.where}: {e.label}", suite_name(record, e.suite) + " › " + e.case, e.scope,
             "yes" if e.needs_judge else "no", e.evaluated, e.conversations, e.reason or ""]
            for e in coverage.expectations
        ],
    )  # fmt: skip
    return rows, headers


def _iso(moment: datetime) -> str:
    return moment.isoformat()


#: Columns whose text is long: wrapped, and given the widest column.
_WIDE = {"prompt", "final_output", "reasons", "rationale", "goal"}


def _fill_sheet(
    sheet: Any,
    header: list[str] | None,
    rows: list[list[Cell]],
    *,
    table: bool,
    bold_rows: Sequence[int] = (),
    bold_first_column: bool = False,
) -> None:
    """Write ``header`` and ``rows`` to ``sheet``: text cells are strings, never formulas, widths from the
    longest line of each column, long-text columns wrapped; a table also gets a frozen header and a filter."""
    from openpyxl.styles import Alignment, Font
    from openpyxl.utils import get_column_letter

    all_rows = ([header] if header else []) + rows
    for values in all_rows:
        sheet.append([_xlsx_cell(value) for value in values])
    for row in sheet.iter_rows():
        for cell in row:
            if isinstance(cell.value, str):
                cell.data_type = "s"  # never a formula, whatever the text
                # Excel's own mark for text typed with a leading quote: the cell shows the text as it is, and
                # stays text when someone edits it.
                if neutralise(cell.value) != cell.value:
                    cell.quotePrefix = True
    widths: dict[int, int] = {}
    for values in all_rows:
        for column, value in enumerate(values, start=1):
            text = "" if value is None else str(value)
            longest = max((len(line) for line in text.split("\n")), default=0)
            widths[column] = max(widths.get(column, 0), longest)
    wrap = Alignment(wrap_text=True, vertical="top")
    for column, width in widths.items():
        letter = get_column_letter(column)
        name = header[column - 1] if header and column <= len(header) else ""
        limit = 60 if name in _WIDE or (column == 2 and not header) else 30
        sheet.column_dimensions[letter].width = min(max(width + 2, 8), limit)
        if name in _WIDE:
            for cell in sheet[letter][1:]:
                cell.alignment = wrap
    bold = Font(bold=True)
    for number in [*([1] if header else []), *bold_rows]:
        for cell in sheet[number]:
            cell.font = bold
    if bold_first_column:
        for cell in sheet["A"]:
            cell.font = bold
    if table and header:
        sheet.freeze_panes = "A2"
        sheet.auto_filter.ref = f"A1:{get_column_letter(len(header))}{max(len(all_rows), 1)}"


def render_xlsx(record: RunRecord, results: Sequence[StoredResult]) -> bytes:
    """The run as an Excel workbook: sheets ``Summary``, ``Cases``, ``Steps`` and ``Coverage`` (see the module
    docstring).

    The bytes depend on the record and results only: the workbook's created and modified times and every
    zip entry's time are the run's creation time (or finish time), not the clock.
    """
    from openpyxl import Workbook
    from openpyxl.writer.excel import ExcelWriter

    workbook = Workbook()
    summary = workbook.active
    summary.title = "Summary"
    summary_rows = _summary_rows(record, results)
    metrics_header = summary_rows.index([]) + 2  # the metric table's header row, counted from 1
    _fill_sheet(summary, None, summary_rows, table=False, bold_rows=[metrics_header], bold_first_column=True)
    correctness = next(number for number, row in enumerate(summary_rows, start=1) if row[:1] == ["correctness"])
    summary.cell(row=correctness, column=2).number_format = "0.0%"

    header, rows = case_table(record, results)
    _fill_sheet(workbook.create_sheet("Cases"), header, rows, table=True)
    step_header, step_rows = step_table(record, results)
    _fill_sheet(workbook.create_sheet("Steps"), step_header, step_rows, table=True)
    faults = fault_rows(record)
    if faults:
        _fill_sheet(workbook.create_sheet("Faults"), None, faults, table=False, bold_rows=[1])
    coverage, coverage_headers = coverage_rows(record)
    if coverage:
        _fill_sheet(workbook.create_sheet("Coverage"), None, coverage, table=False, bold_rows=coverage_headers)

    moment = _naive_utc(record.finished or record.created)
    workbook.properties.creator = "simulator"
    workbook.properties.title = strip_xml_illegal(f"Simulator run {record.id}")
    workbook.properties.created = _naive_utc(record.created)
    workbook.properties.modified = moment
    raw = io.BytesIO()
    with zipfile.ZipFile(raw, "w", zipfile.ZIP_DEFLATED) as archive:
        ExcelWriter(workbook, archive).write_data()
    return _fixed_times(raw.getvalue(), moment)


def _naive_utc(moment: datetime) -> datetime:
    """``moment`` in UTC without a zone (what the workbook's properties hold); a naive time is taken as UTC."""
    return moment.astimezone(UTC).replace(tzinfo=None) if moment.tzinfo is not None else moment


def _fixed_times(data: bytes, moment: datetime) -> bytes:
    """The zip archive ``data`` rewritten with every entry dated ``moment`` (zip entries carry the clock)."""
    stamp = (max(moment.year, 1980), moment.month, moment.day, moment.hour, moment.minute, moment.second)
    out = io.BytesIO()
    with zipfile.ZipFile(io.BytesIO(data)) as source, zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as target:
        for entry in source.infolist():
            info = zipfile.ZipInfo(entry.filename, date_time=stamp)
            info.compress_type = zipfile.ZIP_DEFLATED
            info.external_attr = entry.external_attr
            target.writestr(info, source.read(entry.filename))
    return out.getvalue()
