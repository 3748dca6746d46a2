"""Import single-turn tests from a CSV file as a suite of golden cases, one case per row.

The CSV is what spreadsheet users export: UTF-8 with or without BOM, columns separated by ``,`` or ``;``
(Excel in German locales writes ``;``), cells spanning several lines in double quotes. List cells
(``must_contain``, ``must_not_contain``, ``expected_tools``, ``tags``) hold comma-separated terms; a term in
double quotes keeps its commas, so ``"23,60", EUR`` is the two terms ``23,60`` and ``EUR``.

A decimal comma is not a list separator. In a ``;``-separated file (where a German Excel also writes
``23,60`` for a price) a comma between two digits never splits: ``23,60, EUR`` is ``23,60`` and ``EUR``, and
``1, 2`` (a space after the comma) is two terms. In a ``,``-separated file such a comma still splits, as it
always did, but every cut between two digits is reported as a warning naming the row, the column and the
fix (quote the term, ``"23,60"``).

``expected_tools`` means "these tools were called" (others allowed): the turn's ``expect`` gets their
``tool_calls`` with ``tool_order: any`` written out.

Every problem is reported at once as :class:`~simulator.errors.ConfigErrors`, each with the physical line
where its row starts, the 1-based column of the cell and a key path such as ``row 3.must_contain``. Warnings
(problems that do not stop the import) have the same shape and go to the ``warnings`` list the caller gives.
"""

from __future__ import annotations

import csv
import io
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import TypeAdapter, ValidationError

from simulator.errors import ConfigError, ConfigErrors
from simulator.loading import _limits
from simulator.loading._schema import closest, did_you_mean
from simulator.loading._yaml_out import suite_yaml
from simulator.models.case import GoldenCase

PROMPT = "prompt"
#: Every column the importer understands, in the order they are listed in messages.
COLUMNS = ("prompt", "must_contain", "must_not_contain", "reference_answer", "expected_tools", "name", "tags")
LIST_COLUMNS = ("must_contain", "must_not_contain", "expected_tools", "tags")

_DELIMITERS = (",", ";")
_HEADER_KEY = "header"
_IMPORTED_FROM = "Imported from "
_TOOL_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_-]*$")
_TOOL_NAME_MAX = 64
_CASE_NAME_MAX = 200
# The line breaks io.StringIO(newline="") splits on, hence the ones csv.reader's line_num counts.
_LINE_BREAK = re.compile(r"\r\n|\r|\n")
_LINE_BREAK_BYTES = re.compile(rb"\r\n|\r|\n")
_SEP_LINE = re.compile(r"^sep=(.)$", re.IGNORECASE)
_TOO_LARGE_ADVICE = "split the CSV into several files"

_case_adapter: TypeAdapter[GoldenCase] = TypeAdapter(GoldenCase)


def import_csv(
    path: str | Path, suite_name: str | None = None, *, warnings: list[ConfigError] | None = None
) -> dict[str, Any]:
    """Read a CSV file of single-turn tests and return suite data ready for YAML, one golden case per row.

    The result is ``{"name": ..., "description": ..., "cases": [...]}`` with plain values only; pass it to
    :func:`dump_suite_yaml`. ``suite_name`` defaults to the file's stem. Raises
    :class:`~simulator.errors.ConfigErrors` listing every problem in the file, never another exception for
    bad input. What is imported but may not be what the file meant (a list cell cut between two digits in a
    ``,``-separated file) is appended to ``warnings`` when a list is given, each with its line, column, key
    path and fix, in file order.
    """
    importer = _Importer(Path(path))
    data = importer.run(suite_name)
    if warnings is not None:
        warnings.extend(sorted(importer.warnings, key=ConfigError.sort_key))
    return data


def dump_suite_yaml(data: dict[str, Any], *, source: str | Path | None = None) -> str:
    """The suite data of :func:`import_csv` as YAML text, with a header comment naming the CSV it came from.

    ``source`` names the CSV; without it, the name recorded in the data's description by :func:`import_csv`
    is used. Strings that YAML 1.1 would read as something else (``no``, ``on``, ``012``, dates) come out
    quoted, so the file loads back to the same text.
    """
    if source is not None:
        origin = Path(source).name
    else:
        description = data.get("description")
        origin = (
            description.removeprefix(_IMPORTED_FROM)
            if isinstance(description, str) and description.startswith(_IMPORTED_FROM)
            else "a CSV file"
        )
    header = (
        f"Imported from {origin}: one golden case per CSV row.",
        "Edit this file from now on; changes are not written back to the CSV.",
    )
    text = suite_yaml(data, header=header)
    size = len(text.encode("utf-8"))
    if size > _limits.MAX_FILE_BYTES:
        # `validate` refuses a suite file over the limit: never write one.
        message = _limits.too_large(size, _TOO_LARGE_ADVICE, what="the suite to write")
        raise ConfigErrors([ConfigError(source if source is not None else origin, 1, 1, "(root)", message)])
    return text


def yaml_size_at_least(value: Any) -> tuple[int, int]:
    """A lower bound of the bytes ``value`` takes in the suite YAML (every character written at least once,
    each key with ``: `` and each list item with ``- ``; indentation and quotes left out), and the number of
    values (scalars, lists, mappings) YAML reads back from it, as `validate` counts them."""
    if isinstance(value, dict):
        sizes = [yaml_size_at_least(item) for item in value.values()]
        return sum(len(key) + 2 + size for key, (size, _) in zip(value, sizes, strict=True)), 1 + sum(
            1 + count for _, count in sizes
        )
    if isinstance(value, list):
        sizes = [yaml_size_at_least(item) for item in value]
        return sum(2 + size for size, _ in sizes) or 3, 1 + sum(count for _, count in sizes)
    return len(str(value)) + 1, 1


class _TermError(ValueError):
    """A list cell that cannot be split into terms; the message says why and how to fix it."""


def split_terms(cell: str, *, decimal_comma: bool = False) -> list[str]:
    """Split a list cell into terms: commas separate, a double-quoted term keeps its commas.

    Spaces around terms are trimmed and empty terms dropped; inside a quoted term ``""`` is one literal
    quote and the text is kept exactly. With ``decimal_comma`` (a ``;``-separated file) a comma between two
    digits is part of its term (``23,60``), never a separator. Raises ``ValueError`` for an unterminated
    quote, text after a closing quote, or a quote inside an unquoted term.
    """
    return _split(cell, decimal_comma=decimal_comma)[0]


def _is_digit(char: str) -> bool:
    return "0" <= char <= "9"


def _between_digits(cell: str, comma: int) -> bool:
    return 0 < comma < len(cell) - 1 and _is_digit(cell[comma - 1]) and _is_digit(cell[comma + 1])


def _split(cell: str, *, decimal_comma: bool) -> tuple[list[str], list[str]]:
    """The terms of a list cell, and the texts a comma between two digits was cut in: ``["23,60"]`` for
    ``23,60, EUR`` without ``decimal_comma``, each from the term before the cut to the term after it."""
    terms: list[str] = []
    cuts: list[str] = []
    cut_start: int | None = None  # where the unquoted text cut between digits starts, while it goes on
    i, n = 0, len(cell)
    while i < n:
        while i < n and cell[i].isspace():
            i += 1
        if i >= n:
            break
        if cell[i] == '"':
            term, i = _quoted_term(cell, i)
            if term:
                terms.append(term)
            continue
        end = cell.find(",", i)
        while decimal_comma and end >= 0 and _between_digits(cell, end):
            end = cell.find(",", end + 1)
        end = n if end < 0 else end
        term = cell[i:end].strip()
        if '"' in term:
            # Taken literally, `EUR "23,60"` would silently become `EUR "23` and `60"`.
            escaped = term.replace('"', '""')
            raise _TermError(
                f"the term {term!r} contains a double quote: put the whole term in double quotes and write "
                f'the quote inside it twice ("{escaped}")'
            )
        if term:
            terms.append(term)
        if end < n and _between_digits(cell, end):
            cut_start = i if cut_start is None else cut_start
        elif cut_start is not None:
            cuts.append(cell[cut_start:end].strip())
            cut_start = None
        i = end + 1
    return terms, cuts


def _quoted_term(cell: str, start: int) -> tuple[str, int]:
    """The quoted term opening at ``start`` and the index after its separating comma."""
    chars: list[str] = []
    i, n = start + 1, len(cell)
    while True:
        if i >= n:
            raise _TermError(
                f"the double quote before {_preview(cell[start + 1 :])!r} is never closed: add the closing "
                'quote, and write a quote inside a term twice ("")'
            )
        if cell[i] == '"':
            if cell.startswith('""', i):
                chars.append('"')
                i += 2
                continue
            i += 1
            break
        chars.append(cell[i])
        i += 1
    term = "".join(chars)
    while i < n and cell[i].isspace():
        i += 1
    if i < n and cell[i] != ",":
        raise _TermError(
            f"text {_preview(cell[i:])!r} follows the closing quote of the term {term!r}: separate terms with "
            'commas, and write a quote inside a quoted term twice ("")'
        )
    return term, i + 1


def _preview(text: str, limit: int = 30) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _cell_text(value: str) -> str:
    # Cells keep the file's line endings (\r\n from Excel); the agent and the YAML should see plain \n.
    return value.replace("\r\n", "\n").replace("\r", "\n")


@dataclass
class _Header:
    """The header row: which column index holds which known column."""

    line: int
    names: list[str | None]
    index: dict[str, int] = field(default_factory=dict)
    unnamed: set[int] = field(default_factory=set)


@dataclass
class _Row:
    number: int
    line: int
    cells: list[str]


class _Importer:
    """Reads one CSV file, collecting every problem before raising."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.file = str(path)
        self.errors: list[ConfigError] = []
        self.warnings: list[ConfigError] = []
        self.delimiter = ","
        #: A lower bound of the size of the suite YAML the rows read so far make, and its number of values.
        self.yaml_bytes = 0
        self.yaml_values = 2  # the suite's mapping and its list of cases
        #: Set once the file has more problems than reported: the rest of it is not read.
        self.stopped = False
        self._line_starts: list[int] | None = None

    def error(self, line: int, column: int, key_path: str, message: str) -> None:
        if self.stopped:
            return
        if len(self.errors) >= _limits.MAX_ERRORS:
            message, self.stopped = _limits.too_many_problems(), True
        self.errors.append(ConfigError(self.file, line, column, key_path, message))

    def fail(self) -> ConfigErrors:
        return ConfigErrors(self.errors)

    def split_list(self, cell: str, line: int, column: int, key_path: str) -> list[str]:
        """A list cell's terms (raises ``_TermError``); in a ``;`` file a comma between two digits does not
        split, in a ``,`` file every cut between two digits is a warning naming the fix."""
        terms, cuts = _split(cell, decimal_comma=self.delimiter == ";")
        for cut in cuts:
            pieces = [piece.strip() for piece in cut.split(",")]
            named = ", ".join(map(repr, pieces[:-1])) + f" and {pieces[-1]!r}"
            message = (
                f"{cut!r} was split at a comma between two digits into {named}: if it is "
                f'one term (a decimal comma), put it in double quotes inside the cell ("{cut}"), or save the file '
                "with ; between columns, where such a comma never splits; if they are separate terms, write a "
                f"space after the comma ({', '.join(pieces)})"
            )
            self.warnings.append(ConfigError(self.file, line, column, key_path, message))
        return terms

    def count_yaml(self, value: Any, row: _Row) -> None:
        """Add what ``value`` (a case, or a turn of one) writes into the suite; the row that takes the suite past
        the size or the values limit of `validate` is an error, and reading stops there."""
        if self.yaml_bytes > _limits.MAX_FILE_BYTES or self.yaml_values > _limits.MAX_VALUES:
            return
        size, values = yaml_size_at_least(value)
        self.yaml_bytes += size
        self.yaml_values += values
        advice = _TOO_LARGE_ADVICE
        if self.yaml_bytes > _limits.MAX_FILE_BYTES:
            message = _limits.too_large(None, advice, what="the suite to write")
        elif self.yaml_values > _limits.MAX_VALUES:
            message = f"the suite to write {_limits.too_many_values(advice)}"
        else:
            return
        self.error(row.line, 1, f"row {row.number}", f"{message} (this row is past the limit)")
        self.stopped = True

    # -- the file ----------------------------------------------------------------------------------

    def run(self, suite_name: str | None) -> dict[str, Any]:
        name = (suite_name if suite_name is not None else self.path.stem).strip()
        if not name:
            self.error(1, 1, "(root)", "the suite name is empty: pass a name with a visible character")
        text = self.read()
        if text is None:
            raise self.fail()
        lines = _LINE_BREAK.split(text)
        skipped = self.skip_preamble(lines)
        if skipped is None:
            raise self.fail()
        cases = self.parse(text, skipped)
        if self.errors:
            raise self.fail()
        return {"name": name, "description": f"{_IMPORTED_FROM}{self.path.name}", "cases": cases}

    def read(self) -> str | None:
        try:
            raw = _limits.read_bytes(self.path, "split it into several CSV files")
        except _limits.ReadProblem as problem:
            self.error(problem.line, problem.column, "(root)", problem.message)
            return None
        try:
            text = raw.decode("utf-8-sig")
        except UnicodeDecodeError as exc:
            if raw.startswith((b"\xff\xfe", b"\xfe\xff")):
                self.error(
                    1,
                    1,
                    "(root)",
                    "the file is UTF-16 (Excel's 'Unicode Text'): save it as 'CSV UTF-8 (comma delimited)'",
                )
                return None
            before = raw[: exc.start]
            line = len(_LINE_BREAK_BYTES.findall(before)) + 1
            line_start = max(before.rfind(b"\n"), before.rfind(b"\r")) + 1
            self.error(
                line,
                exc.start - line_start + 1,
                "(root)",
                f"not UTF-8 text (byte 0x{raw[exc.start]:02x}, likely an umlaut or other accented letter "
                "saved in a Windows encoding): save the file as UTF-8, in Excel as 'CSV UTF-8 (comma delimited)'",
            )
            return None
        if "\x00" in text:
            ahead = text[: text.index("\x00")]
            line = len(_LINE_BREAK.findall(ahead)) + 1
            column = len(ahead) - max(ahead.rfind("\n"), ahead.rfind("\r"))
            self.error(line, column, "(root)", "binary file (contains NUL bytes): expected CSV text")
            return None
        if not text.strip():
            self.error(
                1,
                1,
                "(root)",
                "the file is empty: write a header row naming the columns (prompt,must_contain,...) "
                "and one row per test case",
            )
            return None
        return text

    def skip_preamble(self, lines: list[str]) -> int | None:
        """Skip blank lines and Excel's ``sep=;`` line; returns the number of lines before the header."""
        index = 0
        declared: str | None = None
        while index < len(lines) and not lines[index].strip():
            index += 1
        sep = _SEP_LINE.match(lines[index].strip()) if index < len(lines) else None
        if sep is not None:
            declared = sep.group(1)
            if declared not in _DELIMITERS:
                self.error(
                    index + 1, 1, "(root)", f"`sep={declared}` declares {declared!r} as the separator: use , or ;"
                )
                return None
            index += 1
            while index < len(lines) and not lines[index].strip():
                index += 1
        if index >= len(lines):
            self.error(1, 1, "(root)", "no header row: the first row must name the columns (prompt,must_contain,...)")
            return None
        if declared is not None:
            self.delimiter = declared
            return index
        return index if self.detect_delimiter("\n".join(lines[index:]), index + 1) else None

    def detect_delimiter(self, text: str, line: int) -> bool:
        """Pick ``,`` or ``;`` by counting them outside quotes in the header record."""
        counts = dict.fromkeys((",", ";", "\t", "|"), 0)
        in_quotes = False
        for char in text:
            if char == '"':
                in_quotes = not in_quotes
            elif not in_quotes and char == "\n":
                break
            elif not in_quotes and char in counts:
                counts[char] += 1
        if counts[","] and counts[";"]:
            self.error(
                line,
                1,
                _HEADER_KEY,
                "the header row mixes , and ; between its columns: separate all columns with one of them",
            )
            return False
        if counts[";"]:
            self.delimiter = ";"
            return True
        if counts[","]:
            return True
        other = "tabs" if counts["\t"] else "'|'" if counts["|"] else None
        if other is not None:
            self.error(
                line,
                1,
                _HEADER_KEY,
                f"the columns are separated by {other}: separate them with , or ; (in Excel, save as "
                "'CSV UTF-8 (comma delimited)')",
            )
            return False
        return True

    # -- records -----------------------------------------------------------------------------------

    def parse(self, text: str, skipped: int) -> list[dict[str, Any]]:
        stream = io.StringIO(text, newline="")
        for _ in range(skipped):
            stream.readline()
        # strict: a stray quote must be an error, not silently swallow the rows after it into one cell.
        reader = csv.reader(stream, delimiter=self.delimiter, strict=True)
        header: _Header | None = None
        cases: list[dict[str, Any]] = []
        names: dict[str, _Row] = {}
        number = 0
        written = 0
        while True:
            line = skipped + reader.line_num + 1
            try:
                cells = next(reader)
            except StopIteration:
                break
            except csv.Error as exc:
                self.csv_error(text, line, exc, header, number + 1 if header else None)
                if header is None:
                    return []
                number += 1
                written += 1
                continue
            if header is None:
                header = self.read_header(line, cells)
                continue
            number += 1
            if all(not cell.strip() for cell in cells):
                continue
            written += 1
            row = _Row(number, line, cells)
            case = self.read_row(header, row, names)
            if case is not None:
                cases.append(case)
                self.count_yaml([case], row)
            if self.stopped:
                break  # refused up front (the suite would be too large for `validate`), or too many problems
        if header is not None and not written:
            self.error(header.line, 1, "(root)", "no test cases: add one row per test case below the header row")
        return cases

    def csv_error(self, text: str, line: int, exc: csv.Error, header: _Header | None, number: int | None) -> None:
        where = f"row {number}" if number is not None else _HEADER_KEY
        if self._line_starts is None:
            self._line_starts = [0] + [m.end() for m in _LINE_BREAK.finditer(text)]
        found = _quote_problem(text, line, self.delimiter, self._line_starts)
        if found is None:
            if "field larger than field limit" in str(exc):
                # The limit is process-wide state of the csv module; raising it here would leak to callers.
                limit = csv.field_size_limit()
                self.error(line, 1, where, f"a cell of this row is longer than {limit:,} characters: shorten it")
            else:
                self.error(line, 1, where, f"cannot read this row as CSV: {exc}")
            return
        column, kind, opened, at = found
        if header is not None and column <= len(header.names) and header.names[column - 1]:
            where = f"{where}.{header.names[column - 1]}"
        if kind == "unterminated":
            message = (
                f"the double quote that opens this cell (line {opened}) is never closed, so the rest of the file "
                'would be read as one cell: add the closing quote, and write a quote inside a cell twice ("")'
            )
        else:
            closed = f" (the quote opened on line {opened} closes on line {at})" if at != opened else ""
            message = (
                f"text follows the closing double quote of this cell{closed}: a cell that starts with a quote must "
                'end with one; write a quote inside a cell twice ("")'
            )
        self.error(line, column, where, message)

    #: The columns this importer understands, and the start of a header to show in messages.
    columns: tuple[str, ...] = COLUMNS
    example_header: tuple[str, ...] = (PROMPT, "must_contain")

    def read_header(self, line: int, cells: list[str]) -> _Header:
        columns = self.columns
        keys = [cell.strip().lower() for cell in cells]
        header = _Header(line, [None] * len(cells))
        known = [k for k in keys if k in columns or (k and closest(k, columns))]
        if not known:
            shown = ", ".join(repr(_preview(cell)) for cell in cells[:3] if cell.strip())
            self.error(
                line,
                1,
                _HEADER_KEY,
                f"the first row must be a header naming the columns ({', '.join(columns)}), found {shown}: "
                f"insert a header row such as {self.delimiter.join(self.example_header)}",
            )
            return header
        for i, key in enumerate(keys):
            if not key:
                header.unnamed.add(i)
                continue
            if key not in columns:
                self.error(
                    line,
                    i + 1,
                    _HEADER_KEY,
                    f"unknown column {cells[i].strip()!r}{did_you_mean(key, columns)} "
                    f"(columns: {', '.join(columns)}): rename or delete it",
                )
            elif key in header.index:
                self.error(
                    line,
                    i + 1,
                    _HEADER_KEY,
                    f"column {key!r} appears twice (columns {header.index[key] + 1} and {i + 1}): delete one of them",
                )
            else:
                header.index[key] = i
                header.names[i] = key
        self.check_required(line, header)
        return header

    def check_required(self, line: int, header: _Header) -> None:
        """Report the required columns the header lacks."""
        if PROMPT not in header.index:
            self.error(
                line,
                1,
                _HEADER_KEY,
                f"no {PROMPT!r} column: add a column named prompt holding the user's message "
                f"(for example prompt{self.delimiter}must_contain)",
            )

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
            # Excel exports trailing empty columns as `;;`: harmless unless something was written there.
            if i in header.unnamed and value.strip():
                self.error(
                    row.line,
                    i + 1,
                    f"row {row.number}",
                    f"this cell is in column {i + 1}, which has no name in the header: name the column "
                    "or empty the cell",
                )

        def cell(column: str) -> tuple[str, int]:
            index = header.index.get(column)
            if index is None or index >= len(row.cells):
                return "", (index + 1 if index is not None else 1)
            return _cell_text(row.cells[index]).strip(), index + 1

        def where(column: str) -> str:
            return f"row {row.number}.{column}"

        prompt, prompt_column = cell(PROMPT)
        if PROMPT in header.index and not prompt:
            self.error(
                row.line,
                prompt_column,
                where(PROMPT),
                "the prompt is empty: write the user's message, or delete the row",
            )

        lists: dict[str, list[str]] = {}
        for column in LIST_COLUMNS:
            text, index = cell(column)
            try:
                lists[column] = self.split_list(text, row.line, index, where(column))
            except _TermError as exc:
                self.error(row.line, index, where(column), str(exc))
                lists[column] = []
        tools_column = cell("expected_tools")[1]
        for tool in lists["expected_tools"]:
            if not _TOOL_NAME.match(tool) or len(tool) > _TOOL_NAME_MAX:
                self.error(
                    row.line,
                    tools_column,
                    where("expected_tools"),
                    f"{_preview(tool)!r} is not a tool name: use letters, digits, '_' and '-', starting with a "
                    f"letter or '_', at most {_TOOL_NAME_MAX} characters; separate several tools with commas",
                )

        name = self.case_name(header, row, names)
        # Without a prompt column the header error says it all; a case per row would only repeat it.
        if len(self.errors) > before or PROMPT not in header.index:
            return None

        expect: dict[str, Any] = {}
        for column in ("must_contain", "must_not_contain"):
            if lists[column]:
                expect[column] = lists[column]
        reference, _ = cell("reference_answer")
        if reference:
            expect["reference_answer"] = reference
        if lists["expected_tools"]:
            # "These tools were called", others allowed: written out, so the file says what it checks.
            expect["tool_calls"] = [{"name": tool} for tool in lists["expected_tools"]]
            expect["tool_order"] = "any"
        turn: dict[str, Any] = {"user": prompt}
        if expect:
            turn["expect"] = expect
        case: dict[str, Any] = {"name": name, "kind": "golden"}
        if lists["tags"]:
            case["tags"] = lists["tags"]
        case["turns"] = [turn]
        return case if self.model_accepts(header, row, case) else None

    def case_name(self, header: _Header, row: _Row, names: dict[str, _Row]) -> str:
        index = header.index.get("name")
        given = _cell_text(row.cells[index]).strip() if index is not None and index < len(row.cells) else ""
        column = index + 1 if index is not None else 1
        key = f"row {row.number}.name"
        if "\n" in given or len(given) > _CASE_NAME_MAX:
            self.error(
                row.line,
                column,
                key,
                f"a case name is one line of at most {_CASE_NAME_MAX} characters: shorten {_preview(given)!r}",
            )
            return given
        name = given or f"row_{row.number}"
        first = names.get(name)
        if first is None:
            names[name] = row
        elif given:
            self.error(
                row.line,
                column,
                key,
                f"case name {name!r} is also used by row {first.number} (line {first.line}): case names must be "
                "unique, rename one of them",
            )
        else:
            self.error(
                row.line,
                column,
                key,
                f"this row has no name, so it is named {name!r}, which row {first.number} (line {first.line}) "
                "already uses: give one of them another name",
            )
        return name

    def model_accepts(self, header: _Header, row: _Row, case: dict[str, Any]) -> bool:
        """Validate with the model the loader uses, so that an imported suite always loads."""
        try:
            _case_adapter.validate_python(case)
        except ValidationError as exc:
            for detail in exc.errors(include_url=False):
                column = _column_of(tuple(detail["loc"]))
                index = header.index.get(column, 0) if column else 0
                key = f"row {row.number}.{column}" if column else f"row {row.number}"
                message = str(detail["msg"]).removeprefix("Value error, ")
                self.error(row.line, index + 1, key, message)
            return False
        return True


def _column_of(loc: tuple[Any, ...]) -> str | None:
    """The CSV column a pydantic error location in a built case comes from."""
    if not loc:
        return None
    if loc[0] in ("name", "tags"):
        return str(loc[0])
    if loc[:3] == ("turns", 0, "user"):
        return PROMPT
    if loc[:3] == ("turns", 0, "expect") and len(loc) > 3:
        return {
            "must_contain": "must_contain",
            "must_not_contain": "must_not_contain",
            "reference_answer": "reference_answer",
            "tool_calls": "expected_tools",
        }.get(str(loc[3]))
    return None


def _quote_problem(
    text: str, line: int, delimiter: str, starts: list[int] | None = None
) -> tuple[int, str, int, int] | None:
    """Find why csv.reader refused the record starting on physical ``line``.

    Returns ``(column, kind, opened_line, problem_line)`` with kind ``unterminated`` (a quoted cell runs to
    the end of the file) or ``after_quote`` (text follows a closing quote), or None if neither.
    """
    if starts is None:
        starts = [0] + [m.end() for m in _LINE_BREAK.finditer(text)]
    if line - 1 >= len(starts):
        return None
    i = starts[line - 1]
    current = line
    column = 1
    at_start = True
    in_quotes = False
    closed = False
    opened = line
    while i < len(text):
        char = text[i]
        if char in "\r\n":
            if not in_quotes:
                return None
            current += 1
            i += 2 if text.startswith("\r\n", i) else 1
            continue
        if in_quotes:
            if char == '"':
                if text.startswith('""', i):
                    i += 2
                    continue
                in_quotes = False
                closed = True
        elif char == delimiter:
            column += 1
            at_start = True
            closed = False
        elif closed:
            return column, "after_quote", opened, current
        elif char == '"' and at_start:
            in_quotes = True
            opened = current
            at_start = False
        else:
            at_start = False
        i += 1
    if in_quotes:
        return column, "unterminated", opened, current
    return None
