"""CSV import: spreadsheet exports become golden cases, and every problem is reported with its place."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from simulator.errors import ConfigError, ConfigErrors
from simulator.loading import load_suite
from simulator.loading.csv_import import dump_suite_yaml, import_csv, split_terms
from simulator.models import GoldenCase


@pytest.fixture(autouse=True)
def _an_agent_beside_written_suites(tmp_path: Path) -> None:
    """Suites written here are loaded back, and a suite needs an agent to test (the nearest agent.yaml)."""
    (tmp_path / "agent.yaml").write_text("type: http\nbase_url: http://127.0.0.1:9/v1\n", encoding="utf-8")


def _write(tmp_path: Path, content: str | bytes, name: str = "tests.csv") -> Path:
    path = tmp_path / name
    # Bytes as given: newline translation or an encoder would hide what a real export contains.
    path.write_bytes(content if isinstance(content, bytes) else content.encode("utf-8"))
    return path


def _case(name: str, user: str, tags: list[str] | None = None, **expect: Any) -> dict[str, Any]:
    case: dict[str, Any] = {"name": name, "kind": "golden"}
    if tags:
        case["tags"] = tags
    turn: dict[str, Any] = {"user": user}
    if expect:
        turn["expect"] = expect
    case["turns"] = [turn]
    return case


FULL = _case(
    "zeit",
    "Wie spät ist es?",
    tags=["smoke", "de"],
    must_contain=["Uhr"],
    must_not_contain=["Fehler"],
    reference_answer="Es ist 12 Uhr.",
    tool_calls=[{"name": "get_time"}],
    tool_order="any",
)

IMPORTS: list[tuple[str, str | bytes, list[dict[str, Any]]]] = [
    (
        "comma",
        "prompt,must_contain,must_not_contain,reference_answer,expected_tools,name,tags\n"
        'Wie spät ist es?,Uhr,Fehler,Es ist 12 Uhr.,get_time,zeit,"smoke, de"\n',
        [FULL],
    ),
    (
        "semicolon",
        "prompt;must_contain;must_not_contain;reference_answer;expected_tools;name;tags\n"
        "Wie spät ist es?;Uhr;Fehler;Es ist 12 Uhr.;get_time;zeit;smoke, de\n",
        [FULL],
    ),
    (
        "crlf-and-bom",
        b"\xef\xbb\xbfprompt;must_contain;must_not_contain;reference_answer;expected_tools;name;tags\r\n"
        b"Wie sp\xc3\xa4t ist es?;Uhr;Fehler;Es ist 12 Uhr.;get_time;zeit;smoke, de\r\n",
        [FULL],
    ),
    # The known trap: the hosted tool splits "23,60" into 23 and 60, so German prices could not be tested.
    (
        "german-price-comma-file",
        'prompt,must_contain\nWas kostet das?,"""23,60"", EUR"\n',
        [_case("row_1", "Was kostet das?", must_contain=["23,60", "EUR"])],
    ),
    (
        "german-price-semicolon-file",
        'prompt;must_contain\nWas kostet das?;"""23,60"", EUR"\n',
        [_case("row_1", "Was kostet das?", must_contain=["23,60", "EUR"])],
    ),
    # A decimal comma is not a list separator: in a ;-separated file (German Excel) 23,60 stays one term.
    (
        "decimal-comma-in-semicolon-file",
        "prompt;must_contain;must_not_contain;tags\nWas kostet das?;23,60, EUR;0,00;v1,5, de\n",
        [
            _case(
                "row_1",
                "Was kostet das?",
                tags=["v1,5", "de"],
                must_contain=["23,60", "EUR"],
                must_not_contain=["0,00"],
            )
        ],
    ),
    (
        "decimal-comma-in-semicolon-file-with-sep-line",
        "sep=;\nprompt;must_contain\nWas kostet das?;Preis 23,60 EUR, 1, 2\n",
        [_case("row_1", "Was kostet das?", must_contain=["Preis 23,60 EUR", "1", "2"])],
    ),
    (
        "quoted-term-with-inner-quote",
        'prompt,must_contain\nBegrüße mich,"""Sag """"Hallo"""""", x"\n',
        [_case("row_1", "Begrüße mich", must_contain=['Sag "Hallo"', "x"])],
    ),
    (
        "quoted-term-keeps-its-spaces",
        'prompt,must_not_contain\nHi,"""  a "", b"\n',
        [_case("row_1", "Hi", must_not_contain=["  a ", "b"])],
    ),
    (
        "umlauts",
        "prompt;must_contain;must_not_contain\nKann ich meine Überweisung stornieren?;Überweisung, Größe;Straße\n",
        [
            _case(
                "row_1",
                "Kann ich meine Überweisung stornieren?",
                must_contain=["Überweisung", "Größe"],
                must_not_contain=["Straße"],
            )
        ],
    ),
    (
        "multi-line-cells-get-plain-newlines",
        'prompt,reference_answer\r\n"Zeile eins\r\nZeile zwei",Antwort\r\nNoch was?,"a\nb"\r\n',
        [
            _case("row_1", "Zeile eins\nZeile zwei", reference_answer="Antwort"),
            _case("row_2", "Noch was?", reference_answer="a\nb"),
        ],
    ),
    (
        "terms-trimmed-empty-terms-dropped",
        'prompt,must_contain,tags\nHi,"  a ,, b ,",", ,"\n',
        [_case("row_1", "Hi", must_contain=["a", "b"])],
    ),
    (
        "blank-rows-skipped-but-counted",
        "prompt\nerste\n\n   \ndritte\n",
        [_case("row_1", "erste"), _case("row_4", "dritte")],
    ),
    (
        "header-case-and-spaces-ignored",
        " Prompt , MUST_CONTAIN \nHi,x\n",
        [_case("row_1", "Hi", must_contain=["x"])],
    ),
    (
        "excel-sep-line",
        "sep=;\nprompt;must_contain\nHi;a,b\n",
        [_case("row_1", "Hi", must_contain=["a", "b"])],
    ),
    (
        "empty-cells-leave-keys-out",
        "prompt,must_contain,must_not_contain,reference_answer,expected_tools,name,tags\nHallo,,, ,,,\n",
        [_case("row_1", "Hallo")],
    ),
    (
        "short-row-means-empty-cells",
        "prompt,must_contain,tags\nHallo\n",
        [_case("row_1", "Hallo")],
    ),
    (
        "unnamed-empty-columns-from-excel",
        "prompt;must_contain;;\nHallo;x;;\n",
        [_case("row_1", "Hallo", must_contain=["x"])],
    ),
    (
        "several-tools",
        'prompt,expected_tools\nBuche einen Flug,"search_flights, book-flight"\n',
        [
            _case(
                "row_1",
                "Buche einen Flug",
                tool_calls=[{"name": "search_flights"}, {"name": "book-flight"}],
                tool_order="any",
            )
        ],
    ),
    (
        "quotes-in-prompt-are-text",
        'prompt\n"Sag ""Hallo"", bitte"\nEr sagte "ja"\n',
        [_case("row_1", 'Sag "Hallo", bitte'), _case("row_2", 'Er sagte "ja"')],
    ),
    (
        "yaml-1.1-words-stay-text",
        'prompt,must_contain,name\nno,"on, off, 012, 2024-01-01",yes\n',
        [_case("yes", "no", must_contain=["on", "off", "012", "2024-01-01"])],
    ),
]


@pytest.mark.parametrize(("content", "cases"), [pytest.param(c, e, id=i) for i, c, e in IMPORTS])
def test_import(tmp_path: Path, content: str | bytes, cases: list[dict[str, Any]]) -> None:
    data = import_csv(_write(tmp_path, content))
    assert data == {"name": "tests", "description": "Imported from tests.csv", "cases": cases}


TERMS: list[tuple[str, list[str]]] = [
    ("", []),
    ("a", ["a"]),
    (" a , b ", ["a", "b"]),
    ("a,,b,", ["a", "b"]),
    ('"23,60", EUR', ["23,60", "EUR"]),
    ('EUR, "23,60"', ["EUR", "23,60"]),
    ('"x ""y"" z"', ['x "y" z']),
    ('""', []),
    ('"", a', ["a"]),
    ('"a" , "b"', ["a", "b"]),
    ("mehr\nzeilig, x", ["mehr\nzeilig", "x"]),
]


@pytest.mark.parametrize(("cell", "terms"), TERMS)
def test_split_terms(cell: str, terms: list[str]) -> None:
    assert split_terms(cell) == terms


DECIMAL_TERMS: list[tuple[str, list[str], list[str]]] = [
    # cell, terms in a ;-separated file, terms in a ,-separated file
    ("23,60, EUR", ["23,60", "EUR"], ["23", "60", "EUR"]),
    ("1,2,3", ["1,2,3"], ["1", "2", "3"]),
    ("1, 2", ["1", "2"], ["1", "2"]),
    ("1 ,2", ["1", "2"], ["1", "2"]),
    ("a,1", ["a", "1"], ["a", "1"]),
    ("1,a", ["1", "a"], ["1", "a"]),
    (",1,5,", ["1,5"], ["1", "5"]),
    ('"23",60', ["23", "60"], ["23", "60"]),  # after a quoted term the comma separates
    ("Preis 23,60 EUR, inkl. MwSt", ["Preis 23,60 EUR", "inkl. MwSt"], ["Preis 23", "60 EUR", "inkl. MwSt"]),
    ("١,٢", ["١", "٢"], ["١", "٢"]),  # ASCII digits only
]


@pytest.mark.parametrize(("cell", "semicolon", "comma"), DECIMAL_TERMS)
def test_split_terms_with_a_decimal_comma(cell: str, semicolon: list[str], comma: list[str]) -> None:
    assert split_terms(cell, decimal_comma=True) == semicolon
    assert split_terms(cell) == comma


@pytest.mark.parametrize("cell", ['"23,60, EUR', '"23,60" EUR', 'EUR "23,60"', '5" Display'])
def test_split_terms_refuses_ambiguous_quotes(cell: str) -> None:
    with pytest.raises(ValueError, match="quote"):
        split_terms(cell)


# (line, column, key_path, stable part of the message)
Expected = tuple[int, int, str, str]

ERRORS: list[tuple[str, str | bytes, list[Expected]]] = [
    (
        "unknown-column-did-you-mean",
        "prompt,must_contian\nHi,x\n",
        [(1, 2, "header", "unknown column 'must_contian'; did you mean 'must_contain'?")],
    ),
    (
        "missing-prompt-column",
        "must_contain,name\nx,y\n",
        [(1, 1, "header", "no 'prompt' column: add a column named prompt")],
    ),
    (
        "duplicate-column",
        "prompt,Prompt \na,b\n",
        [(1, 2, "header", "column 'prompt' appears twice (columns 1 and 2): delete one of them")],
    ),
    (
        "data-instead-of-header",
        "Hallo,Welt\nWie geht's,gut\n",
        [(1, 1, "header", "the first row must be a header naming the columns")],
    ),
    (
        "not-utf8",
        b"prompt,must_contain\nHallo,Hi\nGr\xf6\xdfe,x\n",
        [(3, 3, "(root)", "not UTF-8 text (byte 0xf6")],
    ),
    (
        "utf16",
        "prompt,must_contain\nHi,x\n".encode("utf-16"),
        [(1, 1, "(root)", "the file is UTF-16")],
    ),
    ("empty-file", b"", [(1, 1, "(root)", "the file is empty")]),
    ("bom-and-blank-lines-only", b"\xef\xbb\xbf\n  \r\n", [(1, 1, "(root)", "the file is empty")]),
    ("header-only", "prompt,must_contain\n", [(1, 1, "(root)", "no test cases")]),
    ("header-and-blank-rows-only", "prompt,must_contain\n,\n\n", [(1, 1, "(root)", "no test cases")]),
    ("sep-line-only", "sep=;\n", [(1, 1, "(root)", "no header row")]),
    (
        "tab-delimited",
        "prompt\tmust_contain\nHi\tx\n",
        [(1, 1, "header", "separated by tabs: separate them with , or ;")],
    ),
    ("pipe-delimited", "prompt|must_contain\nHi|x\n", [(1, 1, "header", "separated by '|'")]),
    ("mixed-delimiters", "prompt,must_contain;tags\nHi,x;y\n", [(1, 1, "header", "mixes , and ;")]),
    ("unsupported-sep-line", "sep=|\nprompt|must_contain\n", [(1, 1, "(root)", "`sep=|` declares '|'")]),
    ("empty-prompt", "prompt,must_contain\n  ,x\n", [(2, 1, "row 1.prompt", "the prompt is empty")]),
    (
        "more-cells-than-header",
        "prompt,must_contain\nWas kostet das?,23,60\n",
        [(2, 3, "row 1", "this row has 3 cells but the header has 2 columns")],
    ),
    (
        "unterminated-term-quote",
        'prompt,must_contain\nWas kostet das?,"""23,60, EUR"\n',
        [(2, 2, "row 1.must_contain", "the double quote before '23,60, EUR' is never closed")],
    ),
    (
        "text-after-term-quote",
        'prompt;must_contain\nWas kostet das?;"""23,60"" EUR"\n',
        [(2, 2, "row 1.must_contain", "text 'EUR' follows the closing quote of the term '23,60'")],
    ),
    (
        "quote-inside-unquoted-term",
        'prompt,must_not_contain\nWas kostet das?,"EUR ""23,60"""\n',
        [(2, 2, "row 1.must_not_contain", "the term 'EUR \"23' contains a double quote")],
    ),
    (
        "bad-tool-name",
        "prompt,expected_tools\nHi,get price\n",
        [(2, 2, "row 1.expected_tools", "'get price' is not a tool name")],
    ),
    (
        "tool-name-too-long",
        f"prompt,expected_tools\nHi,{'t' * 65}\n",
        [(2, 2, "row 1.expected_tools", "at most 64 characters")],
    ),
    (
        "duplicate-names",
        "prompt,name\na,x\nb,x\n",
        [(3, 2, "row 2.name", "case name 'x' is also used by row 1 (line 2)")],
    ),
    (
        "generated-name-collides",
        "prompt,name\na,row_2\nb,\n",
        [(3, 2, "row 2.name", "this row has no name, so it is named 'row_2', which row 1 (line 2) already uses")],
    ),
    ("multi-line-name", 'prompt,name\na,"x\ny"\n', [(2, 2, "row 1.name", "a case name is one line")]),
    (
        "cell-in-unnamed-column",
        "prompt,,must_contain\nHi,oops,x\n",
        [(2, 2, "row 1", "which has no name in the header")],
    ),
    (
        "csv-quote-never-closed",
        'prompt,must_contain\nHi,ok\nBye,"open\nnext,row\n',
        [(3, 2, "row 2.must_contain", "the double quote that opens this cell (line 3) is never closed")],
    ),
    (
        "csv-text-after-quote-and-later-rows-still-checked",
        'prompt,must_contain\n"Hi" there,x\n,y\n',
        [
            (2, 1, "row 1.prompt", "text follows the closing double quote of this cell: a cell that starts"),
            (3, 1, "row 2.prompt", "the prompt is empty"),
        ],
    ),
    (
        "csv-quote-closed-on-a-later-line",
        'prompt,must_contain\nHi,"a\nb"c\n',
        [(2, 2, "row 1.must_contain", "(the quote opened on line 2 closes on line 3)")],
    ),
    (
        "cell-over-the-csv-field-limit",
        f'prompt,must_contain\nHi,"{"x" * 200_000}"\nOk,\n',
        [(2, 1, "row 1", "a cell of this row is longer than 131,072 characters")],
    ),
    (
        "unterminated-quote-over-the-csv-field-limit",
        f'prompt,must_contain\nHi,"{"x" * 200_000}\nOk,\n',
        [(2, 2, "row 1.must_contain", "the double quote that opens this cell (line 2) is never closed")],
    ),
    ("nul-byte", b"prompt\nHi\x00\n", [(2, 3, "(root)", "binary file (contains NUL bytes)")]),
    (
        "multi-line-cells-shift-line-numbers",
        'prompt,reference_answer,expected_tools\n"eins\nzwei\ndrei",ok,a\nHallo,"x\r\ny",bad tool\n,z,\n',
        [
            (5, 3, "row 2.expected_tools", "'bad tool' is not a tool name"),
            (7, 1, "row 3.prompt", "the prompt is empty"),
        ],
    ),
    (
        "every-problem-at-once",
        "\n".join(
            [
                "sep=;",
                "prompt;must_contian;expected_tools;name",
                ";x;;a",
                'Hi;;"1tool";a',
                "",
                'Ok;y;"""broken";b;extra',
                "",
            ]
        ),
        [
            (2, 2, "header", "unknown column 'must_contian'"),
            (3, 1, "row 1.prompt", "the prompt is empty"),
            (4, 3, "row 2.expected_tools", "'1tool' is not a tool name"),
            (4, 4, "row 2.name", "case name 'a' is also used by row 1 (line 3)"),
            (6, 5, "row 4", "this row has 5 cells but the header has 4 columns"),
        ],
    ),
]


@pytest.mark.parametrize(("content", "expected"), [pytest.param(c, e, id=i) for i, c, e in ERRORS])
def test_errors(tmp_path: Path, content: str | bytes, expected: list[Expected]) -> None:
    path = _write(tmp_path, content)
    with pytest.raises(ConfigErrors) as caught:
        import_csv(path)
    errors = caught.value.errors
    assert {e.file for e in errors} == {str(path)}
    assert [(e.line, e.column, e.key_path) for e in errors] == [(line, col, key) for line, col, key, _ in expected]
    for error, (_, _, _, message) in zip(errors, expected, strict=True):
        assert message in error.message


RENDERED: list[tuple[str, str]] = [
    (
        'prompt,must_contain\nWas kostet das?,"""23,60, EUR"\n',
        "{file}:2:2: row 1.must_contain: the double quote before '23,60, EUR' is never closed: add the closing "
        'quote, and write a quote inside a term twice ("")',
    ),
    (
        "prompt;must_contian\nHi;x\n",
        "{file}:1:2: header: unknown column 'must_contian'; did you mean 'must_contain'? (columns: prompt, "
        "must_contain, must_not_contain, reference_answer, expected_tools, name, tags): rename or delete it",
    ),
    (
        "prompt,must_contain\nWas kostet das?,23,60\n",
        "{file}:2:3: row 1: this row has 3 cells but the header has 2 columns: put a cell that contains , in "
        'double quotes ("a, b"), or remove the extra , at the end of the row',
    ),
]


@pytest.mark.parametrize(("content", "rendered"), RENDERED)
def test_rendered_error(tmp_path: Path, content: str, rendered: str) -> None:
    path = _write(tmp_path, content)
    with pytest.raises(ConfigErrors) as caught:
        import_csv(path)
    assert str(caught.value) == rendered.format(file=path)


WARNINGS: list[tuple[str, str, list[Expected]]] = [
    (
        "cut-between-digits-in-a-comma-file",
        'prompt,must_contain,tags\nWas kostet das?,"23,60, EUR",de\nUnd das?,"Preis 1,5 EUR",x\n',
        [
            (2, 2, "row 1.must_contain", "'23,60' was split at a comma between two digits into '23' and '60'"),
            (3, 2, "row 2.must_contain", "'Preis 1,5 EUR' was split at a comma between two digits into 'Preis 1'"),
        ],
    ),
    (
        "several-cuts-in-one-term-are-one-warning",
        'prompt,must_not_contain\nHi,"1,2,3, x"\n',
        [(2, 2, "row 1.must_not_contain", "'1,2,3' was split at a comma between two digits into '1', '2' and '3'")],
    ),
    ("semicolon-file-never-cuts-between-digits", "prompt;must_contain\nHi;23,60, EUR\n", []),
    ("quoted-term-is-not-cut", 'prompt,must_contain\nHi,"""23,60"", EUR"\n', []),
    ("space-after-the-comma-is-a-separator", 'prompt,must_contain\nHi,"23, 60"\n', []),
    ("prompt-is-not-a-list", 'prompt,must_contain\n"Was kostet 23,60 EUR?",EUR\n', []),
]


@pytest.mark.parametrize(("content", "expected"), [pytest.param(c, e, id=i) for i, c, e in WARNINGS])
def test_warnings(tmp_path: Path, content: str, expected: list[Expected]) -> None:
    warnings: list[ConfigError] = []
    path = _write(tmp_path, content)
    data = import_csv(path, warnings=warnings)
    assert data["cases"]  # a warning never stops the import
    assert [(w.file, w.line, w.column, w.key_path) for w in warnings] == [
        (str(path), line, column, key) for line, column, key, _ in expected
    ]
    for warning, (_, _, _, message) in zip(warnings, expected, strict=True):
        assert message in warning.message
    assert import_csv(path) == data  # without a list to fill, the same suite


def test_rendered_warning_names_row_column_and_fix(tmp_path: Path) -> None:
    warnings: list[ConfigError] = []
    path = _write(tmp_path, 'prompt,must_contain\nWas kostet das?,"23,60, EUR"\n')
    import_csv(path, warnings=warnings)
    assert [w.render() for w in warnings] == [
        f"{path}:2:2: row 1.must_contain: '23,60' was split at a comma between two digits into '23' and '60': if "
        'it is one term (a decimal comma), put it in double quotes inside the cell ("23,60"), or save the file '
        "with ; between columns, where such a comma never splits; if they are separate terms, write a space "
        "after the comma (23, 60)"
    ]


def test_missing_file(tmp_path: Path) -> None:
    with pytest.raises(ConfigErrors) as caught:
        import_csv(tmp_path / "missing.csv")
    [error] = caught.value.errors
    assert (error.line, error.column, error.key_path) == (1, 1, "(root)")
    assert error.message.startswith("cannot read the file")


@pytest.mark.parametrize(("suite_name", "expected"), [(None, "fragen"), ("FAQ Suite", "FAQ Suite"), (" x ", "x")])
def test_suite_name(tmp_path: Path, suite_name: str | None, expected: str) -> None:
    path = _write(tmp_path, "prompt\nHi\n", name="fragen.csv")
    assert import_csv(path, suite_name=suite_name)["name"] == expected


def test_blank_suite_name_is_an_error(tmp_path: Path) -> None:
    path = _write(tmp_path, "prompt\nHi\n")
    with pytest.raises(ConfigErrors, match="the suite name is empty"):
        import_csv(path, suite_name="  ")


def test_expected_tools_are_written_as_called_with_others_allowed(tmp_path: Path) -> None:
    """The column means "these tools were called": the YAML says tool_order: any, never the strict exact."""
    path = _write(tmp_path, 'prompt,expected_tools\nBuche einen Flug,"search_flights, book_flight"\nHallo,\n')
    text = dump_suite_yaml(import_csv(path))
    assert (
        "  - user: Buche einen Flug\n"
        "    expect:\n"
        "      tool_calls:\n"
        "      - name: search_flights\n"
        "      - name: book_flight\n"
        "      tool_order: any\n"
    ) in text
    assert text.count("tool_order") == 1  # a row without expected tools gets no tool expectation
    suite_path = tmp_path / "suite.yaml"
    suite_path.write_text(text, encoding="utf-8")
    case = load_suite(suite_path).suite.cases[0]
    assert isinstance(case, GoldenCase)
    expect = case.turns[0].expect
    assert expect is not None
    assert expect.tool_order == "any"


def test_round_trip_through_yaml_and_loader(tmp_path: Path) -> None:
    csv_path = _write(
        tmp_path,
        "\ufeffprompt;must_contain;must_not_contain;reference_answer;expected_tools;name;tags\r\n"
        'Was kostet das Ticket?;"""23,60"", EUR";"""0,00""";"Es kostet 23,60 EUR.\r\nInkl. MwSt.";get_price;'
        "preis;smoke, de\r\n"
        "no;on;;;;;\r\n"
        "Größe?;2024-01-01, 012;;;;;\r\n",
        name="Preise.csv",
    )
    data = import_csv(csv_path)
    text = dump_suite_yaml(data)
    assert text.startswith("# Imported from Preise.csv")
    suite_path = tmp_path / "suite" / "preise.yaml"
    suite_path.parent.mkdir()
    suite_path.write_text(text, encoding="utf-8")

    suite = load_suite(suite_path).suite

    assert suite.name == "Preise"
    assert [case.name for case in suite.cases] == ["preis", "row_2", "row_3"]
    first = suite.cases[0]
    assert first.kind == "golden"
    assert first.tags == ["smoke", "de"]
    turn = first.turns[0]
    assert turn.user == "Was kostet das Ticket?"
    assert turn.expect is not None
    assert turn.expect.must_contain == ["23,60", "EUR"]
    assert turn.expect.must_not_contain == ["0,00"]
    assert turn.expect.reference_answer is not None
    assert turn.expect.reference_answer.answer == "Es kostet 23,60 EUR.\nInkl. MwSt."
    assert [call.name for call in turn.expect.tool_calls] == ["get_price"]
    second = suite.cases[1]
    assert second.kind == "golden"
    assert second.turns[0].user == "no"
    assert second.turns[0].expect is not None
    assert second.turns[0].expect.must_contain == ["on"]
    third = suite.cases[2]
    assert third.kind == "golden"
    assert third.turns[0].expect is not None
    assert third.turns[0].expect.must_contain == ["2024-01-01", "012"]


# Strings YAML 1.1 reads as something else when unquoted, plus ones that are YAML syntax.
TRICKY = [
    "no", "No", "NO", "yes", "on", "off", "y", "n", "true", "null", "~", "", "012", "0x1F", "0o17", "1_000",
    "1e3", ".inf", ".NaN", "1:30", "2024-01-01", "2024-01-01 10:00:00", "=", "<<", "- x", "? x", "#x", "a: b",
    "x #y", "@x", "`x", "!x", "&x", "*x", "%x", "|", ">", "'", '"', "{a}", "[a]", " lead", "trail ",
    "23,60", "Größe", "zwei\nZeilen", "ende\n", "\ttab", "\u2028", "\x85", "😀",
]  # fmt: skip


@pytest.mark.parametrize("value", TRICKY)
def test_dumped_strings_round_trip(tmp_path: Path, value: str) -> None:
    term = value or "x"
    # A user message must say something, so blank values are wrapped in visible text.
    user = value if value.strip() else f"x{value}x"
    data = {
        "name": "tricky",
        "description": "Imported from tricky.csv",
        "cases": [
            {
                "name": "case",
                "kind": "golden",
                "tags": [term],
                "turns": [{"user": user, "expect": {"must_contain": [term], "reference_answer": value + "."}}],
            }
        ],
    }
    text = dump_suite_yaml(data)
    assert yaml.safe_load(text) == data
    path = tmp_path / "tricky.yaml"
    path.write_text(text, encoding="utf-8")
    turn = load_suite(path).suite.cases[0]
    assert turn.kind == "golden"
    assert turn.tags == [term]
    assert turn.turns[0].user == user
    assert turn.turns[0].expect is not None
    assert turn.turns[0].expect.must_contain == [term]


@pytest.mark.parametrize(
    ("source", "description", "header"),
    [
        (None, "Imported from faq.csv", "# Imported from faq.csv:"),
        ("data/other.csv", "Imported from faq.csv", "# Imported from other.csv:"),
        (None, "hand-written", "# Imported from a CSV file:"),
    ],
)
def test_dump_header_names_the_csv(source: str | None, description: str, header: str) -> None:
    data = {"name": "s", "description": description, "cases": [_case("c", "Hi")]}
    assert dump_suite_yaml(data, source=source).startswith(header)
