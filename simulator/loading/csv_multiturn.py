"""Import multi-turn tests from a CSV file as a suite of golden cases: one row per turn, rows grouped by case.

Columns (header names are case-insensitive, in any order):

``case``            required: the case the turn belongs to; rows with the same case form one conversation
``turn``            required: the turn's number, 1, 2, 3, ... within its case, without gaps or repeats
``user``            the user's message; required unless the row has an ``event``
``event``           the name of an event sent instead of a message (a button press, a hang-up)
``expected_agent``  optional: what the agent should reply (``expect.message``, a semantic match)
``expected_tools``  optional: tools the agent must call in this turn, comma-separated (others are allowed:
                    written as the turn's ``tool_calls`` with ``tool_order: any``)
``tags``            optional: the case's tags, comma-separated, on its first row (or the same on each row)

Rows may come in any order: turns are sorted by number, cases come in the order they first appear. The file
is read like the single-turn import (:mod:`simulator.loading.csv_import`): UTF-8 with or without BOM, ``,``
or ``;`` between columns, Excel's ``sep=`` line, quoted cells over several lines, and list cells split with
:func:`~simulator.loading.csv_import.split_terms` (a term in double quotes keeps its commas; in a ``;`` file a
comma between two digits never splits, in a ``,`` file such a cut is a warning). Every problem is reported at
once as :class:`~simulator.errors.ConfigErrors`, each at the line where its row starts, the cell's column and
a key path such as ``row 3.turn``; warnings go to the ``warnings`` list the caller gives. The result goes to
:func:`~simulator.loading.csv_import.dump_suite_yaml` like the single-turn import's.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import TypeAdapter, ValidationError

from simulator.errors import ConfigError
from simulator.loading import _limits
from simulator.loading.csv_import import (
    _cell_text,
    _Header,
    _Importer,
    _preview,
    _Row,
)
from simulator.models.case import GoldenCase

CASE = "case"
TURN = "turn"
USER = "user"
EVENT = "event"
EXPECTED_AGENT = "expected_agent"
EXPECTED_TOOLS = "expected_tools"
TAGS = "tags"
#: Every column the importer understands, in the order they are listed in messages.
COLUMNS = (CASE, TURN, USER, EVENT, EXPECTED_AGENT, EXPECTED_TOOLS, TAGS)
LIST_COLUMNS = (EXPECTED_TOOLS, TAGS)

_HEADER_KEY = "header"
_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_-]*$")
_NAME_MAX = 64
_CASE_NAME_MAX = 200
_TURN_NUMBER = re.compile(r"^[0-9]+$")
# The shared reader's messages name the single-turn columns and one row per case.
_REWORDED = (
    ("(prompt,must_contain,...)", "(case,turn,user,...)"),
    ("one row per test case", "one row per turn of a test case"),
)

_case_adapter: TypeAdapter[GoldenCase] = TypeAdapter(GoldenCase)


def import_multiturn_csv(
    path: str | Path, suite_name: str | None = None, *, warnings: list[ConfigError] | None = None
) -> dict[str, Any]:
    """Read a CSV file of multi-turn tests and return suite data ready for YAML, one golden case per ``case``.

    The result is ``{"name": ..., "description": ..., "cases": [...]}`` with plain values only; pass it to
    :func:`~simulator.loading.csv_import.dump_suite_yaml`. ``suite_name`` defaults to the file's stem. Raises
    :class:`~simulator.errors.ConfigErrors` listing every problem in the file, never another exception for bad
    input. Warnings (a list cell cut between two digits in a ``,`` file) are appended to ``warnings`` when a
    list is given, as :func:`~simulator.loading.csv_import.import_csv` does.
    """
    importer = _MultiTurnImporter(Path(path))
    data = importer.run(suite_name)
    if warnings is not None:
        warnings.extend(sorted(importer.warnings, key=ConfigError.sort_key))
    return data


@dataclass
class _TurnRow:
    """One row as read: its cells, parsed, and whether any of them had a problem."""

    row: _Row
    columns: dict[str, int]
    case: str
    turn: int | None
    user: str
    event: str
    expected_agent: str
    tools: list[str]
    tags: list[str]
    ok: bool

    def column(self, name: str) -> int:
        """The 1-based column of ``name`` in the file (1 when the file has no such column)."""
        return self.columns.get(name, 1)


@dataclass
class _CaseRows:
    name: str
    rows: list[_TurnRow] = field(default_factory=list)


class _MultiTurnImporter(_Importer):
    """The single-turn importer's reader (file, encoding, delimiter, CSV errors) with rows that are turns."""

    def __init__(self, path: Path) -> None:
        super().__init__(path)
        self.turns: list[_TurnRow] = []
        self.case_names: set[str] = set()

    def error(self, line: int, column: int, key_path: str, message: str) -> None:
        for single, multi in _REWORDED:
            message = message.replace(single, multi)
        super().error(line, column, key_path, message)

    def parse(self, text: str, skipped: int) -> list[dict[str, Any]]:
        # The shared loop reads the header and each row through read_header and read_row below; read_row keeps
        # the rows, and the cases are built once every row is known.
        super().parse(text, skipped)
        return [] if self.stopped else self.build_cases()

    # -- the header ---------------------------------------------------------------------------------

    columns = COLUMNS
    example_header = (CASE, TURN, USER)

    def check_required(self, line: int, header: _Header) -> None:
        """``case`` and ``turn``, and ``user`` or ``event``."""
        for required, holds in ((CASE, "the name of the test case"), (TURN, "the turn's number, 1, 2, 3, ...")):
            if required not in header.index:
                self.error(
                    line,
                    1,
                    _HEADER_KEY,
                    f"no {required!r} column: add a column named {required} holding {holds} "
                    f"(for example case{self.delimiter}turn{self.delimiter}user)",
                )
        if USER not in header.index and EVENT not in header.index:
            self.error(
                line,
                1,
                _HEADER_KEY,
                f"no {USER!r} column: add a column named user holding the user's messages "
                f"(or {EVENT!r} for turns that send an event)",
            )

    def _header_complete(self, header: _Header) -> bool:
        return CASE in header.index and TURN in header.index and (USER in header.index or EVENT in header.index)

    # -- rows ---------------------------------------------------------------------------------------

    def read_row(self, header: _Header, row: _Row, names: dict[str, _Row]) -> dict[str, Any] | None:
        before = len(self.errors)
        if len(row.cells) > len(header.names):
            self.error(
                row.line,
                len(header.names) + 1,
                f"row {row.number}",
                f"this row has {len(row.cells)} cells but the header has {len(header.names)} columns: put a cell "
                f'that contains {self.delimiter} in double quotes ("a{self.delimiter} b"), or remove the extra '
                f"{self.delimiter} at the end of the row",
            )
            return None
        for i, value in enumerate(row.cells):
            if i in header.unnamed and value.strip():
                self.error(
                    row.line,
                    i + 1,
                    f"row {row.number}",
                    f"this cell is in column {i + 1}, which has no name in the header: name the column "
                    "or empty the cell",
                )
        if not self._header_complete(header):
            return None  # the header's error says it all; an error per row would only repeat it

        columns = {name: index + 1 for name, index in header.index.items()}

        def cell(column: str) -> str:
            index = header.index.get(column)
            if index is None or index >= len(row.cells):
                return ""
            return _cell_text(row.cells[index]).strip()

        def report(column: str, message: str) -> None:
            self.error(row.line, columns.get(column, 1), f"row {row.number}.{column}", message)

        case = cell(CASE)
        if not case:
            report(CASE, "the case is empty: name the test case this turn belongs to (rows with one name form a case)")
        elif "\n" in case or len(case) > _CASE_NAME_MAX:
            report(CASE, f"a case name is one line of at most {_CASE_NAME_MAX} characters: shorten {_preview(case)!r}")

        turn = self.turn_number(cell(TURN), report)

        user, event = cell(USER), cell(EVENT)
        if user and event:
            report(EVENT, "this row has both a user message and an event: a turn sends one of them, split the row")
        elif not user and not event:
            report(
                USER if USER in header.index else EVENT,
                "this row has neither a user message nor an event: write what the user says (or the event's "
                "name), or delete the row",
            )
        elif event and not _is_name(event):
            report(
                EVENT,
                f"{_preview(event)!r} is not an event name: use letters, digits, '_' and '-', starting with a "
                f"letter or '_', at most {_NAME_MAX} characters",
            )

        lists: dict[str, list[str]] = {}
        for column in LIST_COLUMNS:
            try:
                lists[column] = self.split_list(
                    cell(column), row.line, columns.get(column, 1), f"row {row.number}.{column}"
                )
            except ValueError as exc:
                report(column, str(exc))
                lists[column] = []
        for tool in lists[EXPECTED_TOOLS]:
            if not _is_name(tool):
                report(
                    EXPECTED_TOOLS,
                    f"{_preview(tool)!r} is not a tool name: use letters, digits, '_' and '-', starting with a "
                    f"letter or '_', at most {_NAME_MAX} characters; separate several tools with commas",
                )

        self.turns.append(
            _TurnRow(
                row=row,
                columns=columns,
                case=case,
                turn=turn,
                user=user,
                event=event,
                expected_agent=cell(EXPECTED_AGENT),
                tools=lists[EXPECTED_TOOLS],
                tags=lists[TAGS],
                ok=len(self.errors) == before,
            )
        )
        # What this row adds to the suite to write, at least (see case_data): refused early when too large.
        if case not in self.case_names:
            self.case_names.add(case)
            self.count_yaml([{"name": case, "kind": "golden", "turns": []}], row)
        written: dict[str, Any] = {USER: user} if user else {EVENT: event}
        expect = {"message": cell(EXPECTED_AGENT), "tool_calls": [{"name": tool} for tool in lists[EXPECTED_TOOLS]]}
        if any(expect.values()):
            written["expect"] = {key: value for key, value in expect.items() if value}
        self.count_yaml(written, row)
        return None

    def turn_number(self, text: str, report: Callable[[str, str], None]) -> int | None:
        hint = "number the turns of each case 1, 2, 3, ..."
        if not text:
            report(TURN, f"the turn number is empty: {hint}")
            return None
        if not _TURN_NUMBER.match(text):
            report(TURN, f"turn {_preview(text)!r} is not a whole number: {hint}")
            return None
        if len(text) > _limits.MAX_INT_DIGITS:
            report(TURN, _limits.too_many_digits(text))
            return None
        number = int(text)
        if number < 1:
            report(TURN, f"turn {number}: turns are numbered from 1, {hint}")
            return None
        return number

    # -- cases --------------------------------------------------------------------------------------

    def build_cases(self) -> list[dict[str, Any]]:
        groups: dict[str, _CaseRows] = {}
        for turn in self.turns:
            if turn.case:
                groups.setdefault(turn.case, _CaseRows(turn.case)).rows.append(turn)
        cases: list[dict[str, Any]] = []
        for group in groups.values():
            before = len(self.errors)
            self.check_numbers(group)
            tags = self.case_tags(group)
            if len(self.errors) > before or not all(turn.ok for turn in group.rows):
                continue
            case = self.case_data(group, tags)
            if self.case_accepted(group, case):
                cases.append(case)
        return cases

    def check_numbers(self, group: _CaseRows) -> None:
        numbered = sorted((t for t in group.rows if t.turn is not None), key=lambda t: (t.turn, t.row.number))
        first: dict[int, _TurnRow] = {}
        for turn in numbered:
            if self.stopped:
                return
            assert turn.turn is not None
            seen = first.setdefault(turn.turn, turn)
            if seen is not turn:
                self.error(
                    turn.row.line,
                    turn.column(TURN),
                    f"row {turn.row.number}.{TURN}",
                    f"case {group.name!r} has turn {turn.turn} twice: row {seen.row.number} (line {seen.row.line}) "
                    "is that turn too; number each turn of a case once",
                )
        if len(numbered) < len(group.rows):
            return  # a turn without a valid number: gaps cannot be told apart from it
        numbers = sorted(first)
        listed = ", ".join(str(n) for n in numbers)
        expected = 1
        for number in numbers:
            if self.stopped:
                return
            if number > expected:
                turn = first[number]
                missing = f"turn {expected}" if number == expected + 1 else f"turns {expected} to {number - 1}"
                self.error(
                    turn.row.line,
                    turn.column(TURN),
                    f"row {turn.row.number}.{TURN}",
                    f"case {group.name!r} has no {missing} (its turns: {listed}): number the turns of a case 1, 2, "
                    "3, ... without gaps",
                )
            expected = number + 1

    def case_tags(self, group: _CaseRows) -> list[str]:
        tagged = [turn for turn in group.rows if turn.tags]
        if not tagged:
            return []
        first = tagged[0]
        for turn in tagged[1:]:
            if turn.tags != first.tags:
                self.error(
                    turn.row.line,
                    turn.column(TAGS),
                    f"row {turn.row.number}.{TAGS}",
                    f"case {group.name!r} already has the tags {', '.join(first.tags)} from row {first.row.number} "
                    f"(line {first.row.line}): write a case's tags on its first row only, or the same on each row",
                )
        return first.tags

    def case_data(self, group: _CaseRows, tags: list[str]) -> dict[str, Any]:
        turns: list[dict[str, Any]] = []
        for turn in sorted(group.rows, key=lambda t: t.turn or 0):
            data: dict[str, Any] = {"user": turn.user} if turn.user else {"event": turn.event}
            expect: dict[str, Any] = {}
            if turn.expected_agent:
                expect["message"] = turn.expected_agent
            if turn.tools:
                expect["tool_calls"] = [{"name": tool} for tool in turn.tools]
                expect["tool_order"] = "any"
            if expect:
                data["expect"] = expect
            turns.append(data)
        case: dict[str, Any] = {"name": group.name, "kind": "golden"}
        if tags:
            case["tags"] = tags
        case["turns"] = turns
        return case

    def case_accepted(self, group: _CaseRows, case: dict[str, Any]) -> bool:
        """Validate with the model the loader uses, so that an imported suite always loads."""
        try:
            _case_adapter.validate_python(case)
        except ValidationError as exc:
            ordered = sorted(group.rows, key=lambda t: t.turn or 0)
            for detail in exc.errors(include_url=False):
                turn, column = _place_of(tuple(detail["loc"]), ordered)
                message = str(detail["msg"]).removeprefix("Value error, ")
                key = f"row {turn.row.number}.{column}" if column else f"row {turn.row.number}"
                self.error(turn.row.line, turn.column(column) if column else 1, key, message)
            return False
        return True


def _is_name(text: str) -> bool:
    return bool(_NAME.match(text)) and len(text) <= _NAME_MAX


def _place_of(loc: tuple[Any, ...], ordered: Sequence[_TurnRow]) -> tuple[_TurnRow, str | None]:
    """The row and column a pydantic error location in a built case comes from."""
    if len(loc) >= 2 and loc[0] == "turns" and isinstance(loc[1], int) and loc[1] < len(ordered):
        turn = ordered[loc[1]]
        part = loc[2] if len(loc) > 2 else None
        if part in (USER, EVENT):
            return turn, str(part)
        if part == "expect" and len(loc) > 3:
            return turn, {"message": EXPECTED_AGENT, "tool_calls": EXPECTED_TOOLS}.get(str(loc[3]))
        return turn, None
    first = min(ordered, key=lambda t: t.row.number)
    if loc and loc[0] == "name":
        return first, CASE
    if loc and loc[0] == "tags":
        tagged = next((t for t in sorted(ordered, key=lambda t: t.row.number) if t.tags), first)
        return tagged, TAGS
    return first, None
