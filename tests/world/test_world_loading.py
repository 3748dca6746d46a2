"""Loading worlds: ``world: FILE`` read into the collections the run keeps, a case's world laid over the suite's,
and every problem with a world, a world tool or an ``expect_state`` found before anything runs, at its place."""

from __future__ import annotations

from pathlib import Path

import pytest

from simulator.loading import load_suite, validate_paths

AGENT = """\
agent:
  type: python
  callable: shop_agent:respond
  tools:
{tools}
"""

CANCEL = """\
    - name: cancel
      parameters: {type: object, properties: {order_id: {type: string}}}
      world: {update: orders, id: "{order_id}", set: {status: cancelled}}
"""


def suite_text(world: str = "world: world.yaml\n", tools: str = CANCEL, cases: str = "") -> str:
    case_list = cases or "  - {name: c, kind: golden, turns: [{user: hi}]}\n"
    return "name: shop\n" + world + AGENT.replace("{tools}", tools.rstrip("\n")) + "cases:\n" + case_list


def problems(folder: Path, files: dict[str, str]) -> list[tuple[str, int, int, str, str]]:
    (folder / ".git").mkdir(parents=True, exist_ok=True)
    (folder / "shop_agent.py").write_text("def respond(messages):\n    return 'ok'\n\ndef fee(world):\n    return 1\n")
    for name, text in files.items():
        path = folder / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    report = validate_paths([folder / "suite.yaml"])
    return [(Path(e.file).name, e.line, e.column, e.key_path, e.message) for e in report.errors]


GOOD_WORLD = "orders:\n  1001: {status: placed}\n"


@pytest.mark.parametrize(
    ("files", "expected"),
    [
        (
            {"world.yaml": "- orders\n"},
            ("world.yaml", 1, 1, "(root)", "a world file holds collections by name (a mapping), got a list"),
        ),
        (
            {"world.yaml": "orders:\n  1001: {status: placed}\ncards: 5\n"},
            ("world.yaml", 3, 8, "cards", "collection 'cards' must be a mapping of records by id"),
        ),
        (
            {"world.yaml": "orders:\n  1001: {status: placed}\n  1002: shipped\n"},
            ("world.yaml", 3, 9, "orders['1002']", "record orders/1002 must be a mapping of fields"),
        ),
        (
            {"world.json": '{"orders": {"1001": {"status": "placed"},\n  "1002": [1]}}'},
            ("world.json", 2, 11, "orders['1002']", "record orders/1002 must be a mapping of fields"),
        ),
        ({"world.json": '{"orders": {\n  "1001": }}'}, ("world.json", 2, 11, "(root)", "not valid JSON")),
        ({"world.yaml": "orders: {1001: {a: 1}, 1001: {a: 2}}\n"}, ("world.yaml", 1, 24, "orders['1001']", "")),
        ({}, ("suite.yaml", 2, 8, "world", "cannot read the world file 'world.yaml'")),
        ({"world.txt": GOOD_WORLD}, ("suite.yaml", 2, 8, "world", "the world file 'world.txt' is not YAML or JSON")),
    ],
)
def test_a_world_file_that_cannot_be_used_is_an_error_at_its_place(
    tmp_path: Path, files: dict[str, str], expected: tuple[str, int, int, str, str]
) -> None:
    name = next(iter(files), "world.yaml")
    found = problems(tmp_path, {"suite.yaml": suite_text(world=f"world: {name}\n"), **files})
    assert len(found) == 1, found
    [(file, line, column, key, message)] = found
    assert (file, line, column, key) == expected[:4]
    assert message.startswith(expected[4]), message


def test_a_world_file_outside_the_suites_folder_is_refused(tmp_path: Path) -> None:
    (tmp_path / "world.yaml").write_text(GOOD_WORLD, encoding="utf-8")
    found = problems(tmp_path / "suite", {"suite.yaml": suite_text(world="world: {file: ../world.yaml}\n")})
    assert found == [
        (
            "suite.yaml", 2, 15, "world.file",
            "the world file '../world.yaml' is outside the suite's folder: put it beside the suite (or in a folder "
            "below it) and give its path relative to the suite",
        )
    ]  # fmt: skip


STATE_CASES = """\
  - name: c
    kind: golden
    turns: [{user: hi}]
    expect_state:
      records:
        - {collection: orders, id: 1001, fields: {status: cancelled}}
        - {collection: orders, id: 9999, fields: {status: cancelled}}
        - {collection: orders, id: 8888, exists: false}
        - {collection: tickets, where: {order: 1001}}
        - {collection: order, id: 1001}
      unchanged:
        - {collection: orders, id: 7777}
      counts:
        - {collection: tickets, count: 1}
        - {collection: refunds, count: 0}
"""

TICKETS = """\
    - name: open_ticket
      parameters: {type: object, properties: {order_id: {type: string}}}
      world: {insert: tickets, record: {order: "{order}"}}
    - name: lookup
      world: {find: orderz}
    - name: fee
      world: {function: shop_agent:fees}
"""


def test_world_tools_and_expect_state_are_checked_against_the_world(tmp_path: Path) -> None:
    suite = suite_text(tools=CANCEL + TICKETS, cases=STATE_CASES)
    found = problems(tmp_path, {"suite.yaml": suite, "world.yaml": GOOD_WORLD})
    expected = [
        (
            12, "agent.tools[1].world",
            "tool 'open_ticket' writes {order}, but its `parameters` have no property 'order'",
        ),
        (
            14, "agent.tools[2].world.find",
            "tool 'lookup' works on collection 'orderz', which the world lacks (it has: orders)",
        ),
        (16, "agent.tools[3].world.function", "cannot import world function 'shop_agent:fees': module 'shop_agent' "
         "has no"),
        (29, "cases[0].expect_state.unchanged[0].id", "orders has no record with id '7777': fix the id (`unchanged` "
         "names a record"),
    ]  # fmt: skip
    assert [(line, key) for _, line, _, key, _ in found] == [(line, key) for line, key, _ in expected]
    for (*_, message), (_, _, start) in zip(found, expected, strict=True):
        assert message.startswith(start), message


def test_expect_state_names_only_what_the_world_has_or_a_tool_can_make(tmp_path: Path) -> None:
    tools = (
        CANCEL + TICKETS.replace('"{order}"', '"{order_id}"').replace("orderz", "orders").split("    - name: fee")[0]
    )
    found = problems(tmp_path, {"suite.yaml": suite_text(tools=tools, cases=STATE_CASES), "world.yaml": GOOD_WORLD})
    assert [(key, message) for _, _, _, key, message in found] == [
        (
            "cases[0].expect_state.records[1].id",
            "orders has no record with id '9999': fix the id, or use `exists: false` for a record that must not exist",
        ),
        (
            "cases[0].expect_state.records[4].collection",
            "the world has no collection 'order' (it has: orders); did you mean 'orders'?",
        ),
        (
            "cases[0].expect_state.unchanged[0].id",
            "orders has no record with id '7777': fix the id (`unchanged` names a record as it was seeded)",
        ),
        ("cases[0].expect_state.counts[1].collection", "the world has no collection 'refunds' (it has: orders)"),
    ]


def test_a_world_tool_or_expect_state_without_a_world_is_an_error(tmp_path: Path) -> None:
    cases = "  - {name: c, kind: golden, turns: [{user: hi}], expect_state: {nothing_else_changed: true}}\n"
    found = problems(tmp_path, {"suite.yaml": suite_text(world="", cases=cases)})
    assert [(line, key, message) for _, line, _, key, message in found] == [
        (1, "(root)", "tool 'cancel' is a world tool, but this suite and its cases have no world: add `world:` "
         "(collections of records by id, or a YAML/JSON file beside the suite)"),
        (10, "cases[0].expect_state", "expect_state checks a world, but this case has none: add `world:` to the "
         "suite or the case"),
    ]  # fmt: skip


def test_the_file_is_read_into_the_suite_and_a_case_world_is_laid_over_it(tmp_path: Path) -> None:
    cases = (
        "  - {name: plain, kind: golden, turns: [{user: hi}]}\n"
        "  - {name: own, kind: golden, turns: [{user: hi}], world: {cards: {7: {blocked: false}}, orders: {}}}\n"
    )
    files = {"suite.yaml": suite_text(cases=cases), "world.yaml": GOOD_WORLD + "cards:\n  1: {blocked: true}\n"}
    assert problems(tmp_path, files) == []
    loaded = load_suite(tmp_path / "suite.yaml")
    assert loaded.suite.world is not None
    # What a run's snapshot keeps: the records themselves, not only the file's name.
    assert loaded.suite.world.collections == {
        "orders": {"1001": {"status": "placed"}},
        "cards": {"1": {"blocked": True}},
    }
    plain, own = (loaded.world_of(case) for case in loaded.suite.cases)
    assert plain is not None
    assert own is not None
    assert plain.collections == loaded.suite.world.collections
    assert own.collections == {"orders": {}, "cards": {"7": {"blocked": False}}}
    assert loaded.world_of(loaded.suite.cases[0]) is plain  # built once per case, shared by its conversations


def test_a_yaml_world_file_beside_the_suite_is_read_as_its_world_not_reported_as_unknown(tmp_path: Path) -> None:
    (tmp_path / "suite.yaml").write_text(
        "name: s\nagent: {type: python, callable: 'simulator.demo.shop:respond'}\nworld: world.yaml\n"
        "cases:\n  - {name: c, kind: scenario, goal: g}\n",
        encoding="utf-8",
    )
    (tmp_path / "world.yaml").write_text("orders:\n  1001: {status: placed}\n", encoding="utf-8")
    (tmp_path / "stray.yaml").write_text("orders:\n  1001: {status: placed}\n", encoding="utf-8")
    report = validate_paths([tmp_path])
    assert [(Path(error.file).name, error.message.split(":")[0]) for error in report.errors] == [
        ("stray.yaml", "cannot tell what this file holds")
    ]
    assert report.suites[0].suite.world is not None
    assert report.suites[0].suite.world.collections == {"orders": {"1001": {"status": "placed"}}}
