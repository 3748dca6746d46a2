"""The line-aware YAML tree: data as JSON would hold it, positions of every key and value, no silent surprises."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from simulator.loading._yaml import DataPath, Position, format_path, parse_yaml, read_text

TEXT = textwrap.dedent("""\
    name: demo
    cases:
      - name: c1
        kind: scenario
        goal: Book a table
        tags: [a, b]
""")


def test_data_is_plain_and_every_value_and_key_has_its_place() -> None:
    located, errors = parse_yaml(TEXT, "suite.yaml")
    assert errors == []
    assert located is not None
    assert located.data == {
        "name": "demo",
        "cases": [{"name": "c1", "kind": "scenario", "goal": "Book a table", "tags": ["a", "b"]}],
    }
    assert located.position(("name",)) == Position(1, 7)
    assert located.position(("name",), key=True) == Position(1, 1)
    assert located.position(("cases", 0)) == Position(3, 5)
    assert located.position(("cases", 0, "goal")) == Position(5, 11)
    assert located.position(("cases", 0, "goal"), key=True) == Position(5, 5)
    assert located.position(("cases", 0, "tags", 1)) == Position(6, 15)
    assert located.position(()) == Position(1, 1)


@pytest.mark.parametrize(
    ("path", "where"),
    [
        (("cases", 0, "steps"), Position(3, 5)),  # a missing key: where its mapping starts
        (("cases", 3), Position(3, 3)),  # past the end of a list: where the list starts
        (("nothing", "below"), Position(1, 1)),
    ],
)
def test_a_path_that_is_not_written_falls_back_to_the_closest_enclosing_value(path: DataPath, where: Position) -> None:
    located, _ = parse_yaml(TEXT, "suite.yaml")
    assert located is not None
    assert located.position(path) == where


def test_keys_stay_text_as_written() -> None:
    located, errors = parse_yaml("on: 1\nno: 2\n012: 3\n1:30: 4\nnull_: 5\n", "x.yaml")
    assert errors == []
    assert located is not None
    assert list(located.data) == ["on", "no", "012", "1:30", "null_"]


@pytest.mark.parametrize(
    ("written", "value"),
    [
        ('"no"', "no"),
        ("'on'", "on"),
        ('"012"', "012"),
        ('"1:30"', "1:30"),
        ('"2024-05-01"', "2024-05-01"),
        ("true", True),
        ("false", False),
        ("12", 12),
        ("0", 0),
        ("0.5", 0.5),
        ("-3", -3),
        ("~", None),
        ("", None),
        ("plain words", "plain words"),
    ],
)
def test_values_that_mean_what_they_say_are_accepted(written: str, value: object) -> None:
    located, errors = parse_yaml(f"key: {written}\n", "x.yaml")
    assert errors == []
    assert located is not None
    assert located.data == {"key": value}


def test_a_null_anywhere_is_remembered() -> None:
    with_null, _ = parse_yaml("a: 1\nb: {c: [1, ~]}\n", "x.yaml")
    without, _ = parse_yaml("a: 1\nb: {c: [1, 2]}\n", "x.yaml")
    assert with_null is not None
    assert without is not None
    assert with_null.has_nulls
    assert not without.has_nulls


def test_merge_keys_fill_in_without_overriding_and_without_duplicate_errors() -> None:
    text = textwrap.dedent("""\
        defaults: &defaults
          kind: scenario
          max_turns: 5
        case:
          <<: *defaults
          max_turns: 8
          goal: Book
    """)
    located, errors = parse_yaml(text, "x.yaml")
    assert errors == []
    assert located is not None
    assert located.data["case"] == {"max_turns": 8, "goal": "Book", "kind": "scenario"}
    # A merged key is found where the anchored mapping writes it.
    assert located.position(("case", "kind")) == Position(2, 9)
    assert located.position(("case", "max_turns")) == Position(6, 14)


def test_an_anchor_used_twice_side_by_side_is_not_recursive() -> None:
    text = "base: &b {x: 1}\none: *b\ntwo: [*b, *b]\n"
    located, errors = parse_yaml(text, "x.yaml")
    assert errors == []
    assert located is not None
    assert located.data == {"base": {"x": 1}, "one": {"x": 1}, "two": [{"x": 1}, {"x": 1}]}
    # Built data never shares objects between places, so later edits cannot leak across aliases.
    assert located.data["one"] is not located.data["base"]


@pytest.mark.parametrize(
    ("path", "text"),
    [
        ((), "(root)"),
        (("name",), "name"),
        (("cases", 0, "steps", 1, "goal"), "cases[0].steps[1].goal"),
        (("cases", 0, "session_parameters", "customer-id"), "cases[0].session_parameters.customer-id"),
        (("metadata", "two words"), "metadata['two words']"),
        (("1",), "['1']"),
        ((0, "x"), "[0].x"),
    ],
)
def test_format_path(path: DataPath, text: str) -> None:
    assert format_path(path) == text


def test_read_text_accepts_a_byte_order_mark_and_crlf(tmp_path: Path) -> None:
    path = tmp_path / "suite.yaml"
    path.write_bytes(b"\xef\xbb\xbfname: caf\xc3\xa9\r\ncases: []\r\n")
    text, errors = read_text(path)
    assert errors == []
    assert text is not None
    located, errors = parse_yaml(text, path)
    assert errors == []
    assert located is not None
    assert located.data == {"name": "café", "cases": []}
    assert located.position(("cases",)) == Position(2, 8)


def test_read_text_refuses_a_missing_file(tmp_path: Path) -> None:
    text, errors = read_text(tmp_path / "nope.yaml")
    assert text is None
    assert [(e.line, e.column, e.key_path) for e in errors] == [(1, 1, "(root)")]
    assert errors[0].message.startswith("cannot read the file: ")
