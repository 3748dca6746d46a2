"""Lint of state checks: a change no tool of the agent can make is found at its key, with the tools that exist;
checks the seed already meets, or that ask for no change, are never flagged."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from simulator.loading.lint import RULES, Finding, lint_paths

AGENT = """\
type: python
callable: simulator.demo.shop:respond
name: shop
tools:
  - name: find_orders
    world: {find: orders, where: {customer: '{customer}'}}
  - name: cancel_order
    world: {update: orders, id: '{order_id}', set: {status: cancelled}, require: {status: placed}}
  - name: add_note
    world: {update: orders, id: '{order_id}', set: {note: '{note}'}}
  - name: open_ticket
    world: {insert: tickets, record: {order: '{order_id}', status: open}}
  - name: lookup
"""
FUNCTION_TOOL = AGENT + "  - name: refund\n    world: {function: shop_tools:refund}\n"

WORLD = """\
name: t
world:
  orders:
    1001: {customer: c1, status: placed}
    1002: {customer: c1, status: shipped}
  tickets: {}
  cards:
    k1: {blocked: false}
cases:
  - name: c
    kind: scenario
    goal: Cancel order 1001.
"""


def _suite(expect_state: str, *, case_world: str = "") -> str:
    """The suite :data:`WORLD` whose case (line 10) has its own world and ``expect_state`` (line 13; its entries
    from line 14 at column 7)."""
    state = textwrap.indent(textwrap.dedent(expect_state), "      ")
    return WORLD + case_world + "    expect_state:\n" + state


def _findings(tmp_path: Path, suite: str, agent: str = AGENT) -> list[Finding]:
    (tmp_path / "agent.yaml").write_text(agent, encoding="utf-8")
    # The function tool's module, beside the agent file (lint imports the code an agent names).
    (tmp_path / "shop_tools.py").write_text("def refund(world, order_id):\n    return {}\n", encoding="utf-8")
    path = tmp_path / "suite.yaml"
    path.write_text(suite, encoding="utf-8")
    report = lint_paths([path])
    assert report.errors == [], [e.render() for e in report.errors]
    return [f for f in report.findings if f.rule in ("unchangeable-state", "unwritable-field")]


FLAGGED = [
    pytest.param(
        "records: [{collection: cards, id: k1, fields: {blocked: true}}]",
        [("unchangeable-state", 14, 18, "expect_state.records[0].collection",
          "cards/k1 blocked must become true, but no tool can change cards")],
        id="a-field-of-a-collection-no-tool-changes",
    ),
    pytest.param(
        "counts: [{collection: cards, count: 0}]",
        [("unchangeable-state", 14, 17, "expect_state.counts[0].collection",
          "cards must count 0 (the world seeds 1), but no tool can change cards")],
        id="a-count-no-tool-can-reach",
    ),
    pytest.param(
        "records: [{collection: orders, id: 1002, exists: false}]",
        [("unchangeable-state", 14, 18, "expect_state.records[0].collection",
          "orders/1002 must not exist, but no tool can delete from orders (cancel_order, add_note updates it)")],
        id="a-record-that-must-go-with-no-delete",
    ),
    pytest.param(
        "records: [{collection: tickets, where: {order: '1001'}, exists: false}]\n"
        "counts: [{collection: tickets, where: {status: open}, count: 1}]",
        [],
        id="a-check-the-seed-meets-or-an-insert-reaches",
    ),
    pytest.param(
        "records: [{collection: orders, id: 1001, fields: {status: refunded}}]",
        [("unwritable-field", 14, 57, "expect_state.records[0].fields.status",
          "orders/1001 status must become 'refunded', but no tool writes that value (cancel_order writes "
          "'cancelled')")],
        id="a-value-no-tool-writes",
    ),
    pytest.param(
        "records: [{collection: orders, id: 1001, fields: {refund: 30, note: late, status: cancelled}}]",
        [("unwritable-field", 14, 57, "expect_state.records[0].fields.refund",
          "orders/1001 refund must become 30, but no tool writes refund of orders")],
        id="a-field-no-tool-writes-beside-fields-they-write",
    ),
    pytest.param(
        "records: [{collection: orders, id: 1002, fields: {status: shipped}}]\n"
        "unchanged: [{collection: cards}]\n"
        "nothing_else_changed: true",
        [],
        id="checks-that-ask-for-no-change",
    ),
]  # fmt: skip


@pytest.mark.parametrize(("expect_state", "expected"), FLAGGED)
def test_a_change_no_tool_can_make_is_found_at_its_key(
    tmp_path: Path, expect_state: str, expected: list[tuple[str, int, int, str, str]]
) -> None:
    findings = _findings(tmp_path, _suite(expect_state))
    assert [(f.rule, f.line, f.column, f.key_path.removeprefix("cases[0]."), f.message) for f in findings] == expected
    assert all(f.severity == "error" and f.fix for f in findings)


def test_a_step_check_is_found_and_the_fix_names_the_tool_to_add(tmp_path: Path) -> None:
    suite = WORLD.replace(
        "    kind: scenario\n    goal: Cancel order 1001.\n",
        "    kind: simulation\n    steps:\n      - goal: Block my card.\n"
        "        expect_state: {records: [{collection: cards, id: k1, fields: {blocked: true}}]}\n",
    )
    [finding] = _findings(tmp_path, suite)
    assert (finding.rule, finding.key_path, finding.line) == (
        "unchangeable-state", "cases[0].steps[0].expect_state.records[0].collection", 14
    )  # fmt: skip
    assert finding.fix == (
        "give the agent a world tool that can change cards (`world: {update: cards, ...}`), or correct the state check"
    )


@pytest.mark.parametrize(
    ("agent", "case_world"),
    [
        (FUNCTION_TOOL, ""),  # a Python world tool may change anything
        (AGENT, "    world: {cards: {k1: {blocked: true}}}\n"),  # the case's own world already has it
    ],
    ids=["a-function-tool", "the-case-world-meets-it"],
)
def test_what_a_function_tool_or_the_case_world_settles_is_not_flagged(
    tmp_path: Path, agent: str, case_world: str
) -> None:
    expect_state = "records: [{collection: cards, id: k1, fields: {blocked: true}}, {collection: orders, id: 1001, " \
        "fields: {refund: 30}}]"  # fmt: skip
    flagged = _findings(tmp_path, _suite(expect_state))
    assert {f.rule for f in flagged} == {"unchangeable-state", "unwritable-field"}  # the same check, plain
    settled = _findings(tmp_path, _suite(expect_state, case_world=case_world), agent)
    assert [f.key_path for f in settled] == (
        [] if agent == FUNCTION_TOOL else ["cases[0].expect_state.records[1].fields.refund"]
    )


def test_the_rules_are_registered_after_the_others() -> None:
    assert list(RULES)[-2:] == ["unchangeable-state", "unwritable-field"]
