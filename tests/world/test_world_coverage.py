"""World coverage of a known run, pinned collection by collection, and shown in every view of coverage.

The run (built by hand, no model): a shop world of ``orders`` (2 records), ``customers`` (1; the ``vip`` case lays
its own ``customers`` over it) and ``tickets`` (1), and ``cards`` that nothing touches. The agent's world tools:
``find_orders`` (find, returns only ``status``), ``cancel_order`` (update), ``open_ticket`` (insert) and
``refund`` (a Python function: what it reads, it reads whole).

* ``cancel`` (simulation, 2 steps; step 2 checks ``orders/1001`` status, the case checks nothing else changed)
  twice: the first conversation finds 1001, cancels it and opens a ticket; the second finds 1002 only;
* ``vip`` (scenario, its own ``customers``) once: ``refund`` reads ``orders/1001`` and leaves a net diff on it
  (the diff counts even without the call's access, as a replayed conversation has it).
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from simulator.coverage import run_coverage
from simulator.metrics import run_summary
from simulator.models.coverage import RunCoverage
from simulator.models.run import PlanItem, RunRecord, StoredResult, SuiteSnapshot
from simulator.models.scores import CaseResult
from simulator.models.suite import Suite
from simulator.models.transcript import AgentEvent, ToolCallRecord, Transcript
from simulator.models.world import FieldChange, WorldAccess, WorldChange, WorldTrace
from simulator.reports.coverage_view import coverage_summary_lines, coverage_text
from simulator.reports.html import render_html
from simulator.reports.json_export import render_json
from simulator.reports.markdown import render_markdown
from simulator.reports.tabular import coverage_rows
from tests import factories

WORLD = {
    "orders": {
        1001: {"customer": "c1", "status": "placed", "total": 30},
        1002: {"customer": "c1", "status": "shipped", "total": 12},
    },
    "customers": {"c1": {"name": "Ada", "email": "ada@example.com"}},
    "tickets": {"t1": {"order": "1002", "status": "closed"}},
    "cards": {"k1": {"last4": "4242", "blocked": False}},
}
AGENT = {
    "type": "python",
    "callable": "shop:respond",
    "tools": [
        {"name": "find_orders", "world": {"find": "orders", "where": {"customer": "{customer}"}, "fields": ["status"]}},
        {"name": "cancel_order", "world": {"update": "orders", "id": "{order_id}", "set": {"status": "cancelled"}}},
        {"name": "open_ticket", "world": {"insert": "tickets", "record": {"order": "{order_id}", "status": "open"}}},
        {"name": "refund", "world": {"function": "shop:refund"}},
        {"name": "say_hello"},
    ],
}
SUITE = Suite.model_validate(
    {
        "name": "shop",
        "agent": AGENT,
        "world": WORLD,
        "cases": [
            {
                "name": "cancel",
                "kind": "simulation",
                "steps": [
                    {"goal": "give the order number"},
                    {
                        "goal": "ask to cancel",
                        "expect_state": {
                            "records": [{"collection": "orders", "id": 1001, "fields": {"status": "cancelled"}}],
                            "counts": [{"collection": "tickets", "where": {"status": "open"}, "count": 1}],
                        },
                    },
                ],
                "expect_state": {"nothing_else_changed": True},
            },
            {
                "name": "vip",
                "kind": "scenario",
                "goal": "ask for a refund",
                "world": {"customers": {"c9": {"name": "Bo", "vip": True}}},
                "expect_state": {"unchanged": [{"collection": "customers", "id": "c9", "fields": ["vip"]}]},
            },
        ],
    }
)


def _call(name: str, read: list[str], changes: list[WorldChange] | None = None) -> ToolCallRecord:
    access = WorldAccess(read=read, changes=changes or [])
    return ToolCallRecord(id=f"{name}-{len(read)}", name=name, status="executed", world=access)


CANCELLED = WorldChange(
    collection="orders", id="1001", action="update", fields={"status": FieldChange(before="placed", after="cancelled")}
)
TICKET = WorldChange(
    collection="tickets", id="1", action="insert", record={"order": "1001", "status": "open", "note": "by phone"}
)


def _stored(record: RunRecord, case: str, repeat: int, calls: list[ToolCallRecord], diff: list[WorldChange]) -> Any:
    kind = "simulation" if case == "cancel" else "scenario"
    events = [AgentEvent(turn=1, messages=["done"], tool_calls=calls)]
    world = WorldTrace(digest="d" * 64, records=5, changes=diff)
    transcript = Transcript(case=case, kind=kind, events=list(events), world=world)
    result = CaseResult(case=case, kind=kind, repeat=repeat, outcome="pass", transcript=transcript)
    return factories.make_result(record, 0, case, "pass", repeat=repeat, result=result)


def world_run(suite: Suite = SUITE) -> tuple[RunRecord, list[StoredResult]]:
    """The run of the module docstring, with its summary (coverage included) as the runner stores it."""
    names = {case.name for case in suite.cases}
    plan = [
        PlanItem(key=f"0:{case}:-:{repeat}", suite=0, case=case, repeat=repeat)
        for case, repeat in (("cancel", 0), ("cancel", 1), ("vip", 0))
        if case in names
    ]
    record = factories.make_run("run-world", SuiteSnapshot(path="shop.yaml", suite=suite), plan=plan)
    refunded = WorldChange(
        collection="orders", id="1001", action="update", fields={"refunded": FieldChange(after=30, before_absent=True)}
    )
    results = [
        _stored(
            record, "cancel", 0,
            [_call("find_orders", ["orders/1001"]), _call("cancel_order", [], [CANCELLED]),
             _call("open_ticket", [], [TICKET]), ToolCallRecord(id="h", name="say_hello", status="faked")],
            [CANCELLED, TICKET],
        ),
        _stored(record, "cancel", 1, [_call("find_orders", ["orders/1002"])], []),
        _stored(record, "vip", 0, [_call("refund", ["orders/1001", "customers/c9"])], [refunded]),
    ]  # fmt: skip
    results = [stored for stored in results if stored.case in names]
    totals = run_summary(results, 3.0, record)
    return record.model_copy(update={"totals": totals}), results


def _coverage(record: RunRecord) -> RunCoverage:
    assert record.totals is not None
    assert record.totals.coverage is not None
    return record.totals.coverage


def test_each_collection_is_pinned() -> None:
    record, results = world_run()
    coverage = run_coverage(record, results)
    assert coverage == _coverage(record)  # the summary holds the same, computed in the same pass

    shown = {
        c.name: (
            c.seeded, c.records, c.read, c.changed, c.conversations, c.fields, c.fields_read, c.fields_changed,
            c.checked, c.fields_checked,
        )
        for c in coverage.world
    }  # fmt: skip
    assert shown == {
        # find_orders returns only `status`; refund (a function) returns the whole record, fields and all.
        "orders": (
            True, 2, 2, 1, 3, ["customer", "refunded", "status", "total"],
            ["customer", "refunded", "status", "total"], ["refunded", "status"], True, ["status"],
        ),
        "customers": (True, 2, 1, 0, 1, ["email", "name", "vip"], ["email", "name", "vip"], [], True, ["vip"]),
        "tickets": (True, 1, 0, 1, 1, ["note", "order", "status"], [], ["note", "order", "status"], True, ["status"]),
        # Only nothing_else_changed looks at cards: checked, but no field named.
        "cards": (True, 1, 0, 0, 0, ["blocked", "last4"], [], [], True, []),
    }  # fmt: skip
    assert [c.name for c in coverage.world] == ["cards", "customers", "orders", "tickets"]
    assert (coverage.world_ratio.covered, coverage.world_ratio.total) == (3, 4)
    assert coverage.ratios()["world"] == coverage.world_ratio
    assert [c.name for c in coverage.untouched_collections()] == ["cards"]
    assert [(c.name, fields) for c, fields in coverage.untouched_fields()] == []


def test_fields_only_read_through_a_projection_or_never_written_are_untouched() -> None:
    suite = SUITE.model_copy(deep=True)
    suite.cases = suite.cases[:1]  # no refund: orders are only read through find_orders' `fields: [status]`
    record, results = world_run(suite)
    coverage = run_coverage(record, results)
    orders = next(c for c in coverage.world if c.name == "orders")
    assert (orders.fields_read, orders.untouched_fields()) == (["status"], ["customer", "total"])
    customers = next(c for c in coverage.world if c.name == "customers")
    assert (customers.records, customers.checked, customers.fields_checked) == (1, True, [])
    assert [(c.name, fields) for c, fields in coverage.untouched_fields()] == [("orders", ["customer", "total"])]
    assert [c.name for c in coverage.untouched_collections()] == ["cards", "customers"]
    assert coverage.world_ratio.covered == 2
    lines = coverage_summary_lines(record, coverage, "simulator coverage run-world")
    assert lines[0] == "Coverage 57.5%: cells 1/1, steps 0/2, tools 4/5, world 2/4"
    assert lines[-6:] == [
        "    refund",
        "  world collections never touched (2):",
        "    cards",
        "    customers",
        "  world fields never touched (1):",
        "    orders: customer, total",
    ]


def test_a_created_collection_is_listed_but_not_counted() -> None:
    record, results = world_run()
    note = WorldChange(collection="notes", id="1", action="insert", record={"text": "hi"})
    extra = _stored(record, "cancel", 1, [_call("open_ticket", [], [note])], [note])
    coverage = run_coverage(record, [*results, extra])
    created = coverage.world[-1]
    assert (created.name, created.seeded, created.records, created.changed, created.fields) == (
        "notes", False, 0, 1, ["text"]
    )  # fmt: skip
    assert (coverage.world_ratio.covered, coverage.world_ratio.total) == (3, 4)


def test_every_view_shows_the_world_and_a_run_without_one_shows_none() -> None:
    record, results = world_run()
    text = "\n".join(coverage_text(record, _coverage(record)))
    assert "world collections read or changed)" in text
    assert "\n".join([
        "World (records seeded, read and changed over every conversation; fields expect_state checks):",
        "  collection  records  read  changed  conversations  fields changed       fields checked  never touched",
        "  cards       1        0     0        0              -                    whole           all",
        "  customers   2        1     0        1              -                    vip             -",
        "  orders      2        2     1        3              refunded, status     status          -",
        "  tickets     1        0     1        1              note, order, status  status          -",
    ]) in text  # fmt: skip
    assert "World collections never touched (1):\n  cards" in text

    markdown = render_markdown(record, results)
    assert "| orders | 2 | 2 | 1 | 3 | refunded, status | status | - |" in markdown
    assert "**World collections never touched (1):**\n\n- cards" in markdown
    html = render_html(record, results)
    assert "<table class='metrics coverage-world'>" in html
    assert "<td>tickets</td><td class='num'>1</td><td class='num'>0</td><td class='num'>1</td>" in html
    rows, headers = coverage_rows(record)
    assert ["world covered / total", 3, 4] in rows
    world_header = next(rows[i - 1] for i in headers if rows[i - 1][0] == "collection")
    assert rows[rows.index(world_header) + 3] == ["orders", 2, 2, 1, 3, "refunded, status", "status", "-"]
    document = json.loads(render_json(record, results))
    assert document["run"]["totals"]["coverage"]["world_ratio"] == {"covered": 3, "total": 4}
    assert [c["name"] for c in document["run"]["totals"]["coverage"]["world"]] == [
        "cards", "customers", "orders", "tickets"
    ]  # fmt: skip

    # The same suite without a world: nothing of the above, and the coverage stores as it did before.
    plain = SUITE.model_copy(
        update={"world": None, "cases": [c.model_copy(update={"world": None}) for c in SUITE.cases]}
    )
    bare, _ = world_run(plain)
    coverage = run_coverage(bare, [_stored(bare, "vip", 0, [], [])])
    assert "world" not in coverage.ratios()
    assert "world" not in coverage.model_dump(mode="json")
    assert "world_ratio" not in coverage.model_dump(mode="json")
    assert "World" not in "\n".join(coverage_text(bare, coverage))


@pytest.mark.parametrize(
    ("change", "fields_changed"),
    [
        (CANCELLED, ["status"]),
        (TICKET, []),  # another collection
        (WorldChange(collection="orders", id="1002", action="delete", record={"status": "shipped"}), []),
        (WorldChange(collection="orders", id="9", action="insert", record={"status": "new", "gift": True}),
         ["gift", "status"]),
    ],
)  # fmt: skip
def test_what_a_change_writes(change: WorldChange, fields_changed: list[str]) -> None:
    record, _ = world_run()
    stored = _stored(record, "cancel", 0, [_call("cancel_order", [], [change])], [])
    orders = next(c for c in run_coverage(record, [stored]).world if c.name == "orders")
    assert orders.fields_changed == fields_changed
    assert orders.changed == (0 if change.collection != "orders" else 1)
