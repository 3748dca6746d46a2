"""State checks: whether a world is as an ``expect_state`` says, decided without a model.

Every item of the expectation is one result (each ``records`` entry, each ``unchanged`` entry, each ``counts``
entry, and ``nothing_else_changed``), met or not met, never unsure: the world is there to read. The evidence is
a short, exact diff, one line per record or field that differs, e.g.
``orders/1001 status: expected 'cancelled', is 'placed' (seeded 'placed', not changed)`` or
``cards/c-2 changed: blocked false -> true``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from pydantic import JsonValue

from simulator.models.transcript import CheckDetail
from simulator.models.world import (
    CountExpectation,
    Record,
    RecordExpectation,
    StateExpectation,
    UnchangedExpectation,
    WorldChange,
    show_value,
)
from simulator.world._world import World

__all__ = ["StateItem", "StateResult", "check_state"]

#: Which part of an ``expect_state`` a result is about.
StateItem = Literal["record", "unchanged", "count", "nothing_else_changed"]


@dataclass(frozen=True)
class StateResult:
    """One item of an ``expect_state``, decided: what was checked, met or not, and the diff that shows it.

    ``missing`` says the item is not met only because something did not happen (a record left as seeded, a
    record never created): a conversation cut short can explain it, as for a call never made.
    """

    item: StateItem
    check: str
    met: bool
    evidence: str
    missing: bool = False

    def detail(self) -> CheckDetail:
        """The result as a step's check detail."""
        return CheckDetail(
            check=self.check, verdict="met" if self.met else "not_met", evidence=self.evidence, missing=self.missing
        )


def check_state(expectation: StateExpectation, world: World) -> list[StateResult]:
    """Every item of ``expectation`` checked against ``world`` as it is now, in the order they are written:
    records, unchanged, counts, then nothing else changed."""
    results: list[StateResult] = []
    named: set[tuple[str, str]] = set()
    for record in expectation.records:
        result, found = _check_record(record, world)
        results.append(result)
        named.update((record.collection, record_id) for record_id in found)
    results.extend(_check_unchanged(item, world) for item in expectation.unchanged)
    results.extend(_check_count(item, world) for item in expectation.counts)
    if expectation.nothing_else_changed:
        results.append(_nothing_else(world, named))
    return results


# --- records ---


def _check_record(expected: RecordExpectation, world: World) -> tuple[StateResult, list[str]]:
    """The record's result, and the ids it named (for ``nothing_else_changed``)."""
    check = f"state: {expected.label()}" + ("" if expected.exists else " absent")
    if not world.has_collection(expected.collection):
        evidence = f"{expected.label()}: {_no_collection(world, expected.collection)}"
        return StateResult("record", check, met=not expected.exists, evidence=evidence), []
    if expected.id is not None:
        return _record_by_id(expected, expected.id, world, check), [expected.id]
    # Read without noting reads: the check is no tool call, whenever it runs.
    where = expected.where or {}
    matches = [
        record_id
        for record_id, record in world.collection(expected.collection).items()
        if all(key in record and record[key] == value for key, value in where.items())
    ]
    label = expected.label()
    if not expected.exists:
        if not matches:
            return StateResult("record", check, met=True, evidence=f"{label}: no record matches"), []
        return StateResult("record", check, met=False, evidence=f"{label}: expected none, found {_ids(matches)}"), []
    if not matches:
        total = world.count(expected.collection)
        evidence = f"{label}: no record matches ({total} record{'s' * (total != 1)} in {expected.collection})"
        return StateResult("record", check, met=False, evidence=evidence, missing=True), []
    if len(matches) > 1:
        evidence = f"{label}: {len(matches)} records match ({_ids(matches)}), expected exactly one"
        return StateResult("record", check, met=False, evidence=evidence), []
    return _record_by_id(expected, matches[0], world, check), matches


def _record_by_id(expected: RecordExpectation, record_id: str, world: World, check: str) -> StateResult:
    collection = expected.collection
    label = f"{collection}/{record_id}"
    current = world.current(collection, record_id)
    seeded = world.initial(collection, record_id)
    if not expected.exists:
        if current is None:
            how = "deleted by the conversation" if seeded is not None else "never seeded nor created"
            return StateResult("record", check, met=True, evidence=f"{label}: absent ({how})")
        how = "created by the conversation" if seeded is None else "seeded, not deleted"
        return StateResult(
            "record", check, met=False, evidence=f"{label}: expected absent, exists ({how})", missing=seeded == current
        )
    if current is None:
        if seeded is not None:
            return StateResult("record", check, met=False, evidence=f"{label}: expected to exist, was deleted")
        evidence = f"{label}: expected to exist, there is none (not seeded, not created)"
        return StateResult("record", check, met=False, evidence=evidence, missing=True)
    wrong = [key for key, value in expected.fields.items() if key not in current or current[key] != value]
    if not wrong:
        if not expected.fields:
            return StateResult("record", check, met=True, evidence=f"{label}: exists")
        shown = ", ".join(f"{key} {show_value(value)}" for key, value in expected.fields.items())
        return StateResult("record", check, met=True, evidence=f"{label}: {shown} as expected")
    lines = [_field_line(label, key, expected.fields[key], current, seeded) for key in wrong]
    # Not met only because nothing happened: every wrong field is still as seeded.
    untouched = seeded is not None and all(current.get(key) == seeded.get(key) for key in wrong)
    return StateResult("record", check, met=False, evidence="\n".join(lines), missing=untouched)


def _field_line(label: str, key: str, expected: JsonValue, current: Record, seeded: Record | None) -> str:
    actual = show_value(current[key]) if key in current else "missing"
    if seeded is None:
        origin = "the record was created"
    elif key not in seeded:
        origin = "not seeded"
    elif key in current and current[key] == seeded[key]:
        origin = f"seeded {show_value(seeded[key])}, not changed"
    else:
        origin = f"seeded {show_value(seeded[key])}"
    return f"{label} {key}: expected {show_value(expected)}, is {actual} ({origin})"


# --- unchanged, counts, nothing else ---


def _check_unchanged(expected: UnchangedExpectation, world: World) -> StateResult:
    check = f"state: {expected.label()} unchanged"
    collection = expected.collection
    if collection not in world.seed.collections:
        evidence = f"{expected.label()}: the seeded world has no collection {collection!r} (nothing to keep as seeded)"
        return StateResult("unchanged", check, met=False, evidence=evidence)
    if expected.id is not None and world.initial(collection, expected.id) is None:
        evidence = f"{expected.label()}: {collection} was seeded with no record {expected.id!r} (nothing to keep)"
        return StateResult("unchanged", check, met=False, evidence=evidence)
    changes = [
        _narrowed(change, expected.fields)
        for change in world.diff()
        if change.collection == collection and (expected.id is None or change.id == expected.id)
    ]
    changed = [change for change in changes if change is not None]
    if not changed:
        size = len(world.seed.collections[collection])
        kept = f" ({size} record{'s' * (size != 1)})" if expected.id is None else ""
        return StateResult("unchanged", check, met=True, evidence=f"{expected.label()}: as seeded{kept}")
    return StateResult("unchanged", check, met=False, evidence="\n".join(c.describe() for c in changed))


def _narrowed(change: WorldChange, fields: list[str] | None) -> WorldChange | None:
    """The change limited to ``fields`` (None: it changed none of them); a deleted record changed them all."""
    if fields is None or change.action != "update":
        return change
    kept = {key: field for key, field in change.fields.items() if key in fields}
    return change.model_copy(update={"fields": kept}) if kept else None


def _check_count(expected: CountExpectation, world: World) -> StateResult:
    check = f"state: count of {expected.label()}"
    if world.has_collection(expected.collection):
        actual, note = world.count(expected.collection, expected.where), ""
    else:
        actual, note = 0, f" ({_no_collection(world, expected.collection)})"
    if actual == expected.count:
        return StateResult("count", check, met=True, evidence=f"{expected.label()}: {actual} as expected{note}")
    evidence = f"{expected.label()}: expected {expected.count}, is {actual}{note}"
    return StateResult("count", check, met=False, evidence=evidence)


def _nothing_else(world: World, named: set[tuple[str, str]]) -> StateResult:
    check = "state: nothing else changed"
    others = [change for change in world.diff() if (change.collection, change.id) not in named]
    if not others:
        return StateResult("nothing_else_changed", check, met=True, evidence="no record other than those named changed")
    return StateResult(
        "nothing_else_changed", check, met=False, evidence="\n".join(change.describe() for change in others)
    )


def _ids(ids: list[str]) -> str:
    return ", ".join(ids[:5]) + (f" and {len(ids) - 5} more" if len(ids) > 5 else "")


def _no_collection(world: World, collection: str) -> str:
    return f"the world has no collection {collection!r} (it has: {', '.join(world.names) or 'none'})"
