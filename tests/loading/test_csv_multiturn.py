"""Multi-turn CSV import: one row per turn, grouped by case, and every problem reported with its place."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from simulator.errors import ConfigError, ConfigErrors
from simulator.loading import load_suite
from simulator.loading.csv_import import dump_suite_yaml
from simulator.loading.csv_multiturn import import_multiturn_csv
from simulator.models import GoldenCase


@pytest.fixture(autouse=True)
def _an_agent_beside_written_suites(tmp_path: Path) -> None:
    """Suites written here are loaded back, and a suite needs an agent to test (the nearest agent.yaml)."""
    (tmp_path / "agent.yaml").write_text("type: http\nbase_url: http://127.0.0.1:9/v1\n", encoding="utf-8")


def _write(tmp_path: Path, content: str | bytes, name: str = "dialogs.csv") -> Path:
    path = tmp_path / name
    path.write_bytes(content if isinstance(content, bytes) else content.encode("utf-8"))
    return path


REFUND: dict[str, Any] = {
    "name": "refund",
    "kind": "golden",
    "tags": ["refunds", "de"],
    "turns": [
        {"user": "I want a refund.", "expect": {"message": "What is your order number?"}},
        {
            "user": "ORD-40051, it arrived broken.",
            "expect": {
                "message": "Sorry!\nRefund RF-5512 is on its way.",
                "tool_calls": [{"name": "lookup_order"}, {"name": "refund_order"}],
                # "These tools were called", others allowed: never the strict `exact`.
                "tool_order": "any",
            },
        },
        {"event": "hang_up"},
    ],
}
HELLO: dict[str, Any] = {"name": "hello", "kind": "golden", "turns": [{"user": "Hi, 23,60 EUR?"}]}

HEADER = ["case", "turn", "user", "event", "expected_agent", "expected_tools", "tags"]
# Out of order on purpose: turn 2 before turn 1, another case in between, the event last.
SORRY = "Sorry!\nRefund RF-5512 is on its way."
ROWS = [
    ["refund", "2", "ORD-40051, it arrived broken.", "", SORRY, "lookup_order, refund_order", ""],
    ["refund", "1", "I want a refund.", "", "What is your order number?", "", "refunds, de"],
    ["hello", "1", "Hi, 23,60 EUR?", "", "", "", ""],
    ["refund", "3", "", "hang_up", "", "", ""],
]


def _csv(delimiter: str, newline: str = "\n", *, columns: list[int] | None = None) -> str:
    """HEADER and ROWS as CSV text; ``columns`` reorders the columns (indexes into HEADER)."""
    order = columns or list(range(len(HEADER)))

    def quoted(cell: str) -> str:
        if any(char in cell for char in (delimiter, '"', "\n", ",")):
            return '"' + cell.replace('"', '""') + '"'
        return cell

    lines = [delimiter.join(quoted(row[i]) for i in order) for row in [HEADER, *ROWS]]
    return newline.join(lines) + newline


GOOD: list[tuple[str, str | bytes]] = [
    ("comma", _csv(",")),
    ("semicolon", _csv(";")),
    ("semicolon-crlf-bom", b"\xef\xbb\xbf" + _csv(";", "\r\n").encode("utf-8")),
    ("excel-sep-line", "sep=;\n" + _csv(";")),
    ("columns-in-another-order", _csv(",", columns=[6, 5, 4, 3, 2, 1, 0])),
    ("header-case-and-spaces-ignored", _csv(",").replace("case,turn,user", " CASE , Turn ,User", 1)),
]


@pytest.mark.parametrize("content", [pytest.param(c, id=i) for i, c in GOOD])
def test_import(tmp_path: Path, content: str | bytes) -> None:
    data = import_multiturn_csv(_write(tmp_path, content))
    assert data == {"name": "dialogs", "description": "Imported from dialogs.csv", "cases": [REFUND, HELLO]}


def test_the_dumped_suite_loads_as_the_same_cases(tmp_path: Path) -> None:
    (tmp_path / ".git").mkdir()  # no agent.yaml from a folder above
    data = import_multiturn_csv(_write(tmp_path, _csv(";")))
    suite_file = tmp_path / "dialogs.yaml"
    suite_file.write_text(dump_suite_yaml(data), encoding="utf-8")
    loaded = load_suite(suite_file)
    assert loaded.suite.name == "dialogs"
    assert loaded.suite.cases == [GoldenCase.model_validate(REFUND), GoldenCase.model_validate(HELLO)]


@pytest.mark.parametrize(
    ("content", "tags", "warned"),
    [
        ("case;turn;user;tags\nc;1;Hi;release 1,5, de\n", ["release 1,5", "de"], []),
        ('case,turn,user,tags\nc,1,Hi,"release 1,5, de"\n', ["release 1", "5", "de"], [(2, 4, "row 1.tags")]),
    ],
)
def test_a_decimal_comma_splits_only_in_a_comma_file_and_then_warns(
    tmp_path: Path, content: str, tags: list[str], warned: list[tuple[int, int, str]]
) -> None:
    warnings: list[ConfigError] = []
    data = import_multiturn_csv(_write(tmp_path, content), warnings=warnings)
    assert data["cases"][0]["tags"] == tags
    assert [(w.line, w.column, w.key_path) for w in warnings] == warned
    assert all("'release 1,5' was split at a comma between two digits" in w.message for w in warnings)


def test_minimal_columns_and_suite_name(tmp_path: Path) -> None:
    path = _write(tmp_path, "case,turn,user\nc,1,Hi\nc,2,Bye\n")
    data = import_multiturn_csv(path, suite_name="Dialogs")
    assert data["name"] == "Dialogs"
    assert data["cases"] == [{"name": "c", "kind": "golden", "turns": [{"user": "Hi"}, {"user": "Bye"}]}]


def test_events_only_and_the_same_tags_on_every_row(tmp_path: Path) -> None:
    path = _write(tmp_path, "case;turn;event;tags\nc;2;hang_up;x\nc;1;start;x\n")
    assert import_multiturn_csv(path)["cases"] == [
        {"name": "c", "kind": "golden", "tags": ["x"], "turns": [{"event": "start"}, {"event": "hang_up"}]}
    ]


# (line, column, key_path, stable part of the message)
Expected = tuple[int, int, str, str]

ERRORS: list[tuple[str, str | bytes, list[Expected]]] = [
    ("missing-turn-column", "case,user\nc,Hi\n", [(1, 1, "header", "no 'turn' column: add a column named turn")]),
    ("missing-case-column", "turn;user\n1;Hi\n", [(1, 1, "header", "no 'case' column")]),
    ("missing-user-and-event-columns", "case,turn\nc,1\n", [(1, 1, "header", "no 'user' column")]),
    (
        "unknown-column-did-you-mean",
        "case,turn,user,expected_tool\nc,1,Hi,x\n",
        [(1, 4, "header", "unknown column 'expected_tool'; did you mean 'expected_tools'?")],
    ),
    (
        "turn-gap",
        "case,turn,user\nc,1,Hi\nc,3,Bye\n",
        [(3, 2, "row 2.turn", "case 'c' has no turn 2 (its turns: 1, 3): number the turns of a case 1, 2, 3")],
    ),
    (
        "no-turn-one",
        "case,turn,user\nc,3,Bye\nc,2,Hi\n",
        [(3, 2, "row 2.turn", "case 'c' has no turn 1 (its turns: 2, 3)")],
    ),
    (
        "gap-of-several-turns",
        "case,turn,user\nc,1,Hi\nc,4,Bye\n",
        [(3, 2, "row 2.turn", "case 'c' has no turns 2 to 3")],
    ),
    (
        "duplicate-turn",
        "case,turn,user\nc,1,Hi\nc,2,Hm\nc,1,Again\n",
        [(4, 2, "row 3.turn", "case 'c' has turn 1 twice: row 1 (line 2) is that turn too")],
    ),
    (
        "non-integer-turn",
        "case;turn;user\nc;one;Hi\n",
        [(2, 2, "row 1.turn", "turn 'one' is not a whole number: number the turns of each case 1, 2, 3")],
    ),
    ("decimal-turn", "case,turn,user\nc,1.5,Hi\n", [(2, 2, "row 1.turn", "turn '1.5' is not a whole number")]),
    ("turn-zero", "case,turn,user\nc,0,Hi\n", [(2, 2, "row 1.turn", "turn 0: turns are numbered from 1")]),
    ("empty-turn", "case,turn,user\nc,,Hi\n", [(2, 2, "row 1.turn", "the turn number is empty")]),
    (
        "neither-user-nor-event",
        "case,turn,user,event\nc,1,Hi,\nc,2, ,\n",
        [(3, 3, "row 2.user", "this row has neither a user message nor an event")],
    ),
    (
        "neither-and-no-user-column",
        "case,turn,event\nc,1,\n",
        [(2, 3, "row 1.event", "this row has neither a user message nor an event")],
    ),
    (
        "both-user-and-event",
        "case,turn,user,event\nc,1,Hi,hang_up\n",
        [(2, 4, "row 1.event", "this row has both a user message and an event")],
    ),
    ("bad-event-name", "case,turn,event\nc,1,hang up\n", [(2, 3, "row 1.event", "'hang up' is not an event name")]),
    (
        "bad-tool-name",
        "case;turn;user;expected_tools\nc;1;Hi;lookup_order, get price\n",
        [(2, 4, "row 1.expected_tools", "'get price' is not a tool name")],
    ),
    (
        "unterminated-term-quote",
        'case,turn,user,expected_tools\nc,1,Hi,"""lookup, x"\n',
        [(2, 4, "row 1.expected_tools", "the double quote before 'lookup, x' is never closed")],
    ),
    ("empty-case", "case,turn,user\n ,1,Hi\n", [(2, 1, "row 1.case", "the case is empty")]),
    ("multi-line-case-name", 'case,turn,user\n"a\nb",1,Hi\n', [(2, 1, "row 1.case", "a case name is one line")]),
    (
        # Caught by the model the loader uses, placed at the cell it came from.
        "case-name-with-a-unicode-line-break",
        'case,turn,user\nc,1,Hi\n"a\u2028b",1,Hi\n',
        [(3, 1, "row 2.case", "String should match pattern")],
    ),
    (
        "different-tags-on-two-rows",
        "case,turn,user,tags\nc,1,Hi,a\nc,2,Bye,b\n",
        [(3, 4, "row 2.tags", "case 'c' already has the tags a from row 1 (line 2)")],
    ),
    (
        "more-cells-than-header",
        "case,turn,user\nc,1,Hi,there\n",
        [(2, 4, "row 1", "this row has 4 cells but the header has 3 columns")],
    ),
    ("cell-in-unnamed-column", "case,turn,,user\nc,1,x,Hi\n", [(2, 3, "row 1", "which has no name in the header")]),
    ("empty-file", b"", [(1, 1, "(root)", "write a header row naming the columns (case,turn,user,...)")]),
    ("header-only", "case,turn,user\n", [(1, 1, "(root)", "no test cases: add one row per turn of a test case")]),
    (
        "csv-quote-never-closed",
        'case,turn,user\nc,1,Hi\nc,2,"open\nnext,row\n',
        [(3, 3, "row 2.user", "the double quote that opens this cell (line 3) is never closed")],
    ),
    (
        "every-problem-at-once-with-multi-line-cells",
        "\n".join(
            [
                "case;turn;user;event;expected_agent;expected_tools",
                'a;1;"line one\nline two";;ok;',
                "b;x;Hi;;;",
                "a;3;Bye;;;bad tool",
                "",
                "c;1;;;;",
                "a;3;Again;;;",
                "",
            ]
        ),
        [
            (4, 2, "row 2.turn", "turn 'x' is not a whole number"),
            (5, 2, "row 3.turn", "case 'a' has no turn 2 (its turns: 1, 3)"),
            (5, 6, "row 3.expected_tools", "'bad tool' is not a tool name"),
            (7, 3, "row 5.user", "this row has neither a user message nor an event"),
            (8, 2, "row 6.turn", "case 'a' has turn 3 twice: row 3 (line 5) is that turn too"),
        ],
    ),
]


@pytest.mark.parametrize(("content", "expected"), [pytest.param(c, e, id=i) for i, c, e in ERRORS])
def test_errors(tmp_path: Path, content: str | bytes, expected: list[Expected]) -> None:
    path = _write(tmp_path, content)
    with pytest.raises(ConfigErrors) as caught:
        import_multiturn_csv(path)
    errors = caught.value.errors
    assert {e.file for e in errors} == {str(path)}
    assert [(e.line, e.column, e.key_path) for e in errors] == [(line, col, key) for line, col, key, _ in expected]
    for error, (_, _, _, message) in zip(errors, expected, strict=True):
        assert message in error.message


def test_rendered_error(tmp_path: Path) -> None:
    path = _write(tmp_path, "case,turn,user\nc,1,Hi\nc,3,Bye\n")
    with pytest.raises(ConfigErrors) as caught:
        import_multiturn_csv(path)
    assert str(caught.value) == (
        f"{path}:3:2: row 2.turn: case 'c' has no turn 2 (its turns: 1, 3): number the turns of a case 1, 2, 3, "
        "... without gaps"
    )


def test_a_gap_is_not_reported_when_a_turn_number_is_unreadable(tmp_path: Path) -> None:
    # Turn "two" may well be the missing 2: only the unreadable number is reported.
    path = _write(tmp_path, "case,turn,user\nc,1,Hi\nc,two,Hm\nc,3,Bye\n")
    with pytest.raises(ConfigErrors) as caught:
        import_multiturn_csv(path)
    assert [(e.line, e.column, e.key_path) for e in caught.value.errors] == [(3, 2, "row 2.turn")]
