"""The world itself: copies that never touch the seed, net diffs that rebuild the final world, the declarative
operations' reading, ids and ``require``."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from simulator.models.world import WorldOperation, WorldSpec
from simulator.world import SeededWorld, World, apply_changes, run_operation

COLLECTIONS: dict[str, Any] = {
    "orders": {
        "1001": {"customer": "c1", "status": "placed", "total": 20},
        "1002": {"customer": "c1", "status": "shipped", "total": 5},
        "1003": {"customer": "c2", "status": "placed", "total": 7},
    },
    "cards": {"card-a": {"blocked": False, "owner": "c1"}},
}


def seeded() -> SeededWorld:
    return SeededWorld(WorldSpec(collections=copy.deepcopy(COLLECTIONS)))


def operate(world: World, arguments: dict[str, Any] | None = None, **operation: Any) -> Any:
    return run_operation(world, WorldOperation.model_validate(operation), arguments or {})


def test_a_copy_changes_only_itself_never_the_seed_nor_another_copy() -> None:
    seed = seeded()
    first, second = seed.copy(), seed.copy()
    first.update("orders", "1001", {"status": "cancelled"})
    first.insert("orders", {"customer": "c3"}, "2000")
    first.delete("cards", "card-a")
    read = second.get("orders", "1001")
    assert read is not None
    read["status"] = "edited by the caller"  # a read is a copy: editing it changes nothing
    assert seed.collections == COLLECTIONS
    assert second.current("orders", "1001") == COLLECTIONS["orders"]["1001"]
    assert second.diff() == []
    assert first.current("orders", "1001") == {**COLLECTIONS["orders"]["1001"], "status": "cancelled"}
    assert first.get("cards", "card-a") is None


def test_the_net_diff_made_again_on_a_fresh_copy_gives_the_same_world() -> None:
    seed = seeded()
    world = seed.copy()
    world.update("orders", "1001", {"status": "cancelled", "note": "asked"})
    world.update("orders", "1002", {"status": "lost"})
    world.update("orders", "1002", {"status": "shipped"})  # back as seeded: not in the net diff
    world.insert("orders", {"customer": "c9"})
    world.delete("orders", "1003")
    world.insert("tickets", {"about": "1001"}, "t1")  # a collection the seed lacks
    diff = world.diff()
    assert [(change.label(), change.action) for change in diff] == [
        ("orders/1001", "update"), ("orders/1003", "delete"), ("orders/1004", "insert"), ("tickets/t1", "insert"),
    ]  # fmt: skip
    assert diff[0].fields["note"].before_absent
    rebuilt = seed.copy()
    apply_changes(rebuilt, diff)
    assert rebuilt.diff() == diff
    for name in world.names:
        assert rebuilt.collection(name) == world.collection(name)


@pytest.mark.parametrize(
    ("operation", "arguments", "expected"),
    [
        ({"find": "orders", "where": {"customer": "{who}"}}, {"who": "c1"}, ["1001", "1002"]),
        ({"find": "orders", "where": {"customer": "c1"}, "limit": 1}, {}, ["1001"]),
        ({"find": "orders", "where": {"status": "placed", "customer": "c2"}}, {}, ["1003"]),
        ({"find": "orders"}, {}, ["1001", "1002", "1003"]),
        ({"find": "orders", "where": {"customer": "nobody"}}, {}, []),
    ],
)
def test_find_returns_the_matching_records_up_to_the_limit(
    operation: dict[str, Any], arguments: dict[str, Any], expected: list[str]
) -> None:
    outcome = operate(seeded().copy(), arguments, **operation)
    assert [record["id"] for record in outcome.result["records"]] == expected
    assert outcome.result["count"] == len(expected)
    assert outcome.access.read == [f"orders/{record_id}" for record_id in expected]
    assert outcome.access.changes == []


def test_find_and_get_return_only_the_fields_asked_for() -> None:
    world = seeded().copy()
    found = operate(world, {"who": "c2"}, find="orders", where={"customer": "{who}"}, fields=["status"])
    assert found.result == {"records": [{"id": "1003", "status": "placed"}], "count": 1}
    got = operate(world, {"order": 1002}, get="orders", id="{order}", fields=["total"])
    assert got.result == {"id": "1002", "total": 5}  # a number argument names the id "1002"
    assert got.access.read == ["orders/1002"]


def test_insert_takes_the_next_free_number_or_the_id_given_and_refuses_a_taken_one() -> None:
    world = seeded().copy()
    first = operate(world, {"c": "c5"}, insert="orders", record={"customer": "{c}", "status": "placed"})
    assert first.result == {"id": "1004", "customer": "c5", "status": "placed"}
    assert operate(world, {}, insert="tickets", record={"n": 1}).result["id"] == "1"  # a new collection
    given = operate(world, {"id": "x-7"}, insert="tickets", id="{id}", record={"n": 2})
    assert given.result["id"] == "x-7"
    taken = operate(world, {}, insert="orders", id="1001", record={})
    assert taken.result == {"error": "orders already has a record with id '1001'"}
    assert taken.access.changes == []
    assert [change.label() for change in world.diff()] == ["orders/1004", "tickets/1", "tickets/x-7"]


@pytest.mark.parametrize(
    ("order", "changed", "answer"),
    [
        ("1001", True, {"id": "1001", "customer": "c1", "status": "cancelled", "total": 20}),
        ("1002", False, {"error": "orders/1002 has status=shipped, not placed: nothing was changed"}),
        ("9999", False, {"error": "orders has no record with id '9999'"}),
    ],
)
def test_update_changes_a_record_only_when_require_holds(order: str, changed: bool, answer: Any) -> None:
    world = seeded().copy()
    cancel = {"update": "orders", "id": "{order}", "set": {"status": "cancelled"}, "require": {"status": "placed"}}
    outcome = operate(world, {"order": order}, **cancel)
    assert outcome.result == answer
    assert bool(outcome.access.changes) is changed
    assert bool(world.diff()) is changed


def test_delete_removes_the_record_when_require_holds() -> None:
    world = seeded().copy()
    refused = operate(world, {}, delete="orders", id="1002", require={"status": "placed"})
    assert "nothing was changed" in refused.result["error"]
    done = operate(world, {}, delete="orders", id="1003", require={"status": "placed"})
    assert done.result == {"deleted": "1003", "record": {"id": "1003", **COLLECTIONS["orders"]["1003"]}}
    assert [(change.label(), change.action) for change in world.diff()] == [("orders/1003", "delete")]


def test_an_argument_the_call_lacks_is_the_agents_error_not_a_crash() -> None:
    outcome = operate(seeded().copy(), {"other": 1}, get="orders", id="{order}")
    assert outcome.result == {"error": "the call has no argument 'order' (it gave: other)"}


def test_placeholders_keep_the_arguments_type_alone_and_are_written_in_inside_text() -> None:
    world = seeded().copy()
    operate(world, {"n": 3, "o": "1001"}, update="orders", id="{o}", set={"total": "{n}", "note": "n={n}"})
    assert world.current("orders", "1001") == {**COLLECTIONS["orders"]["1001"], "total": 3, "note": "n=3"}


@pytest.mark.parametrize("read", ["get", "current", "initial", "find", "collection"])
def test_what_a_world_function_reads_is_a_copy_so_editing_it_changes_neither_the_world_nor_the_seed(read: str) -> None:
    seed = SeededWorld(WorldSpec(collections={"cards": {"k1": {"status": "active", "limits": {"day": 100}}}}))
    world = seed.copy()
    if read == "find":
        record = world.find("cards")[0]
    elif read == "collection":
        record = world.collection("cards")["k1"]
    else:
        record = getattr(world, read)("cards", "k1")
    record["status"] = "blocked"
    limits = record["limits"]
    assert isinstance(limits, dict)
    limits["day"] = 0
    assert world.diff() == []
    assert seed.copy().get("cards", "k1") == {"status": "active", "limits": {"day": 100}}
    assert world.current("cards", "k1") == {"status": "active", "limits": {"day": 100}}
