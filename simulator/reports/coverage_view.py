"""A run's coverage as every view shows it: the headline, the persona x case matrix, step reach and the gaps,
as plain rows and lines (pure functions, no I/O). The Markdown, HTML and Excel reports lay these out in their
own markup; :func:`coverage_summary_lines` is the compact view printed after a run, :func:`coverage_text`
the whole view of ``simulator coverage``.

The figures are those of :class:`simulator.models.coverage.RunCoverage`, computed once when the run finished.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass

from simulator.models.coverage import CoverageCell, ExpectationUse, RunCoverage, StepReach, WorldCollectionUse
from simulator.models.run import RunRecord

__all__ = [
    "GAPS_SHOWN",
    "NO_PERSONA",
    "WORLD_HEADER",
    "CoverageMatrix",
    "coverage_headline",
    "coverage_matrix",
    "coverage_summary_lines",
    "coverage_text",
    "expectation_text",
    "gap_sections",
    "percent_text",
    "step_text",
    "world_row",
]

#: How many items of each gap the compact view lists before it counts the rest.
GAPS_SHOWN = 3
#: The matrix column of conversations without a persona (golden cases, suites without personas).
NO_PERSONA = "(no persona)"


def percent_text(value: float | None) -> str:
    """``94.6%``, or ``n/a``."""
    return "n/a" if value is None else f"{value:.1f}%"


def coverage_headline(coverage: RunCoverage) -> str:
    """``Coverage 94.6%: cells 82/82, steps 10/10, tools 4/4, expectations 55/70`` (a ratio with nothing to
    cover is left out)."""
    parts = [f"{name} {ratio.covered}/{ratio.total}" for name, ratio in coverage.ratios().items() if ratio.total]
    return f"Coverage {percent_text(coverage.percent)}" + (f": {', '.join(parts)}" if parts else "")


def _case_title(record: RunRecord, suite: int, case: str) -> str:
    if len(record.snapshot) > 1 and 0 <= suite < len(record.snapshot):
        return f"{record.snapshot[suite].suite.name} › {case}"
    return case


def step_text(record: RunRecord, step: StepReach) -> str:
    """``case › step 3: label``."""
    return f"{_case_title(record, step.suite, step.case)} › step {step.index + 1}: {step.label}"


def expectation_text(record: RunRecord, expectation: ExpectationUse) -> str:
    """``case › where: label``."""
    return f"{_case_title(record, expectation.suite, expectation.case)} › {expectation.where}: {expectation.label}"


#: The columns of the world table (one row per collection, :func:`world_row`).
WORLD_HEADER = [
    "collection", "records", "read", "changed", "conversations", "fields changed", "fields checked", "never touched"
]  # fmt: skip


def _names(names: list[str]) -> str:
    return ", ".join(names) if names else "-"


def world_row(collection: WorldCollectionUse) -> list[str]:
    """One collection as the world table shows it: its name (``(created)`` when no world seeds it), the records
    seeded, read and changed, the conversations that touched it, the fields changed, the fields ``expect_state``
    checks (``whole`` when it checks the collection but names no field, ``-`` when nothing checks it), and the
    fields no conversation read or changed (``all`` for a collection never touched)."""
    checked = _names(collection.fields_checked) if collection.fields_checked else "whole" if collection.checked else "-"
    untouched = _names(collection.untouched_fields()) if collection.touched else "all"
    return [
        collection.name if collection.seeded else f"{collection.name} (created)",
        str(collection.records), str(collection.read), str(collection.changed), str(collection.conversations),
        _names(collection.fields_changed), checked, untouched,
    ]  # fmt: skip


@dataclass(frozen=True)
class CoverageMatrix:
    """The persona x case matrix: one row per planned case (plan order), one column per persona played or
    planned (by name, conversations without a persona last), a cell where the pair was planned."""

    personas: list[str | None]
    rows: list[tuple[str, dict[str | None, CoverageCell]]]

    @staticmethod
    def column(persona: str | None) -> str:
        """A column's heading."""
        return persona if persona is not None else NO_PERSONA


def coverage_matrix(record: RunRecord, coverage: RunCoverage) -> CoverageMatrix:
    """The matrix of ``coverage``'s cells."""
    rows: dict[tuple[int, str], dict[str | None, CoverageCell]] = {}
    for cell in coverage.cells:
        rows.setdefault((cell.suite, cell.case), {})[cell.persona] = cell
    names = {cell.persona for cell in coverage.cells}
    personas: list[str | None] = [*sorted(name for name in names if name is not None)]
    if None in names:
        personas.append(None)
    return CoverageMatrix(personas, [(_case_title(record, s, c), cells) for (s, c), cells in rows.items()])


def gap_sections(record: RunRecord, coverage: RunCoverage, *, reasons: bool = True) -> list[tuple[str, list[str]]]:
    """Every gap, by kind: (heading, one line per item); kinds with no gap are left out. Without ``reasons``
    an expectation's line leaves out why it was never evaluated (the compact view says each reason once)."""
    sections = [
        ("cases x personas not run", [f"{_case_title(record, c.suite, c.case)} [{CoverageMatrix.column(c.persona)}]"
                                       for c in coverage.cells_not_run()]),
        ("steps never reached", [step_text(record, step) for step in coverage.unreached_steps()]),
        ("tools never called", [tool.name for tool in coverage.unused_tools()]),
        ("personas never used", [persona.name for persona in coverage.unused_personas()]),
        ("expectations never evaluated", [
            f"{expectation_text(record, e)} ({e.reason})" if reasons else expectation_text(record, e)
            for e in coverage.unevaluated_expectations()
        ]),
        ("world collections never touched", [c.name for c in coverage.untouched_collections()]),
        ("world fields never touched", [f"{c.name}: {', '.join(fields)}" for c, fields in coverage.untouched_fields()]),
    ]  # fmt: skip
    return [(heading, items) for heading, items in sections if items]


def coverage_summary_lines(record: RunRecord, coverage: RunCoverage, command: str) -> list[str]:
    """The compact view printed after a run: the headline, then each gap with at most :data:`GAPS_SHOWN`
    items and how many more, then ``command`` (the one that prints the whole view) when anything was left
    out. When every expectation left out has the same reason, it is said once with its count. At most
    3 + 7 x (1 + GAPS_SHOWN) lines whatever the run's size."""
    lines = [coverage_headline(coverage)]
    cut = False
    why = Counter(e.reason or "" for e in coverage.unevaluated_expectations())
    # One reason shared by every expectation left out (no judge model, typically) is said once, with its count;
    # with several reasons each line keeps its own, so a reader can tell which is which.
    grouped = len(why) == 1 and why.total() > 1
    for heading, items in gap_sections(record, coverage, reasons=not grouped):
        lines.append(f"  {heading} ({len(items)}):")
        lines += [f"    {item}" for item in items[:GAPS_SHOWN]]
        if len(items) > GAPS_SHOWN:
            lines[-1] += f" (+{len(items) - GAPS_SHOWN} more)"
            cut = True
        if grouped and heading == "expectations never evaluated":
            lines += [f"    why: {reason} ({count})" for reason, count in why.items()]
    if cut:
        lines.append(f"  the whole coverage: {command}")
    return lines


def _table(header: list[str], rows: list[list[str]]) -> list[str]:
    widths = [max(len(row[i]) for row in [header, *rows]) for i in range(len(header))]
    return ["  ".join(text.ljust(widths[i]) for i, text in enumerate(row)).rstrip() for row in [header, *rows]]


def coverage_text(record: RunRecord, coverage: RunCoverage) -> list[str]:
    """The whole view of ``simulator coverage``: the headline with how the percentage is made, the persona x
    case matrix, step reach, declared tools and available personas with their use, and every gap."""
    lines = [f"Run {record.id}", coverage_headline(coverage)]
    lines.append(
        "  (the mean of the ratios shown: cases x personas run / planned, simulation steps reached at least once, "
        "declared tools called, expectations evaluated at least once"
        + (", world collections read or changed)" if coverage.world_ratio.total else ")")
    )
    matrix = coverage_matrix(record, coverage)
    if matrix.rows:
        lines += ["", "Cases x personas (passed / finished):"]
        header = ["case", *(CoverageMatrix.column(p) for p in matrix.personas)]
        rows = [
            [title, *(cells[p].label if p in cells else "-" for p in matrix.personas)] for title, cells in matrix.rows
        ]
        lines += ["  " + line for line in _table(header, rows)]
    if coverage.steps:
        lines += ["", "Steps (over every persona and repeat):"]
        header = ["step", "reached", "complete", "failed", "unsure", "blocked", "not reached"]
        rows = [
            [step_text(record, s), f"{s.reached}/{s.conversations}", str(s.complete), str(s.incomplete),
             str(s.unsure), str(s.blocked), str(s.not_reached)]
            for s in coverage.steps
        ]  # fmt: skip
        lines += ["  " + line for line in _table(header, rows)]
    if coverage.tools:
        lines += ["", "Tools declared: " + ", ".join(f"{t.name} ({t.calls} calls)" for t in coverage.tools)]
    if coverage.personas:
        lines += ["Personas available: " + ", ".join(f"{p.name} ({p.conversations})" for p in coverage.personas)]
    if coverage.world:
        lines += ["", "World (records seeded, read and changed over every conversation; fields expect_state checks):"]
        lines += ["  " + line for line in _table(WORLD_HEADER, [world_row(c) for c in coverage.world])]
    sections = gap_sections(record, coverage)
    for heading, items in sections:
        lines += ["", f"{heading[0].upper()}{heading[1:]} ({len(items)}):", *(f"  {item}" for item in items)]
    if not sections:
        lines += ["", "No gaps: every planned pair ran, every step was reached, every tool called, every persona "
                  "used and every expectation evaluated."]  # fmt: skip
    return lines
