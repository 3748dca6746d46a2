"""The declarative world operations (find, get, update, insert, delete) with the call's arguments written in."""

from __future__ import annotations

import copy
from dataclasses import dataclass
from typing import Any

from pydantic import JsonValue

from simulator.models.world import PLACEHOLDER, WorldAccess, WorldOperation
from simulator.world._world import World, WorldError


@dataclass
class OperationOutcome:
    """A world operation's answer to the agent (``result``) and what it read and changed (``access``).

    An operation that cannot do what was asked (no such record, a ``require`` not met, an argument missing) still
    ran: its result is ``{"error": ...}`` with the reason, as a real backend would answer, and nothing changed.
    """

    result: JsonValue
    access: WorldAccess


class MissingArgument(WorldError):
    """The operation names an argument the call did not give."""


def substitute(value: Any, arguments: dict[str, Any]) -> Any:
    """``value`` with ``{name}`` replaced by the call's arguments: a whole-string placeholder keeps the argument's
    JSON type, one inside longer text is written in as text."""
    if isinstance(value, str):
        whole = PLACEHOLDER.fullmatch(value)
        if whole is not None:
            return copy.deepcopy(_argument(whole.group(1), arguments))
        return PLACEHOLDER.sub(lambda match: _as_text(_argument(match.group(1), arguments)), value)
    if isinstance(value, dict):
        return {key: substitute(item, arguments) for key, item in value.items()}
    if isinstance(value, list):
        return [substitute(item, arguments) for item in value]
    return value


def _argument(name: str, arguments: dict[str, Any]) -> Any:
    if name not in arguments:
        given = ", ".join(sorted(arguments)) or "none"
        raise MissingArgument(f"the call has no argument {name!r} (it gave: {given})")
    return arguments[name]


def _as_text(value: Any) -> str:
    if isinstance(value, str):
        return value
    if isinstance(value, bool):
        return "true" if value else "false"
    return "null" if value is None else str(value)


def _id_of(value: Any) -> str:
    """An id as the world keys it: text (an agent that sends ``1001`` means the record ``"1001"``)."""
    return _as_text(value)


def _only(record: dict[str, Any], fields: list[str] | None) -> dict[str, Any]:
    if fields is None:
        return record
    return {key: value for key, value in record.items() if key in fields or key == "id"}


def run_operation(world: World, operation: WorldOperation, arguments: dict[str, Any]) -> OperationOutcome:
    """Run one declarative operation for one call (a ``function`` operation is run by the tool router, which
    imports code)."""
    world.begin_access()
    try:
        result = _run(world, operation, arguments)
    except WorldError as exc:
        result = {"error": str(exc)}
    return OperationOutcome(result=result, access=world.end_access())


def _run(world: World, operation: WorldOperation, arguments: dict[str, Any]) -> JsonValue:
    action = operation.action
    collection = operation.collection
    assert collection is not None, "a function operation is run by the router"
    if action == "find":
        where = substitute(operation.where or {}, arguments)
        records = world.find(collection, where, operation.limit)
        return {"records": [_only(record, operation.fields) for record in records], "count": len(records)}
    record_id = _id_of(substitute(operation.id, arguments)) if operation.id is not None else None
    if action == "get":
        assert record_id is not None
        found = world.get(collection, record_id)
        if found is None:
            raise WorldError(world.missing_message(collection, record_id))
        return _only({"id": record_id, **found}, operation.fields)
    if action == "insert":
        record = substitute(operation.record or {}, arguments)
        new_id = world.insert(collection, record, record_id)
        return {"id": new_id, **record}
    assert record_id is not None
    current = world.current(collection, record_id)
    if current is None:
        raise WorldError(world.missing_message(collection, record_id))
    required = substitute(operation.require or {}, arguments)
    for key, value in required.items():
        if current.get(key) != value:
            world.note_read(collection, record_id)
            raise WorldError(
                f"{collection}/{record_id} has {key}={_as_text(current.get(key))}, not {_as_text(value)}: "
                f"nothing was changed"
            )
    if action == "delete":
        removed = world.delete(collection, record_id)
        return {"deleted": record_id, "record": {"id": record_id, **removed}}
    changes = substitute(operation.set or {}, arguments)
    world.update(collection, record_id, changes)
    updated = world.current(collection, record_id) or {}
    return {"id": record_id, **updated}
