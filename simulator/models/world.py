"""Worlds: a seeded backend as data (collections of records keyed by id), the tools that read and change it, the
state the conversation must leave it in, and what a conversation did to it.

A suite (or a case) declares ``world:``; every conversation works on its own copy. A tool whose declaration has
``world:`` is answered from that copy in test mode, declaratively (``find``, ``get``, ``update``, ``insert``,
``delete``) or by a Python function given the world. ``expect_state:`` on a case or a simulation step checks the
world the conversation left, deterministically, with a field-by-field diff as its evidence.
"""

from __future__ import annotations

import builtins
import json
import re
from typing import Annotated, Any, Literal

from pydantic import BeforeValidator, Field, JsonValue, StringConstraints, model_validator

from simulator.models._base import DataModel, ImportRef, StrictModel, located_error

#: A collection's name: what tools and state checks call it.
CollectionName = Annotated[str, StringConstraints(pattern=r"^[A-Za-z_][A-Za-z0-9_-]*$", max_length=64)]
#: A record's id inside its collection (YAML keys written as numbers are read as their text: ``1001:`` is ``"1001"``).
RecordId = Annotated[str, StringConstraints(min_length=1, max_length=200)]
#: A record: its fields and their values.
Record = dict[str, JsonValue]

#: ``{name}`` in a declarative operation: the value of the call's argument ``name``.
PLACEHOLDER = re.compile(r"\{([A-Za-z_][A-Za-z0-9_-]*)\}")


def _ids_as_text(value: Any) -> Any:
    """Record ids written as YAML numbers (``1001:``) are the id ``"1001"``; booleans and nulls are not ids."""
    if not isinstance(value, dict):
        return value
    return {
        (str(key) if isinstance(key, int) and not isinstance(key, bool) else key): records
        for key, records in value.items()
    }


def _collections_as_text_ids(value: Any) -> Any:
    if not isinstance(value, dict):
        return value
    return {name: _ids_as_text(records) for name, records in value.items()}


#: A collection: records by id.
Collection = Annotated[dict[RecordId, Record], BeforeValidator(_ids_as_text)]
#: A whole world: collections by name.
Collections = Annotated[dict[CollectionName, Collection], BeforeValidator(_collections_as_text_ids)]


def _id_text(value: Any) -> Any:
    return str(value) if isinstance(value, int) and not isinstance(value, bool) else value


#: An id as a state check or operation writes it: text, or a number read as its text, or ``{argument}``.
IdRef = Annotated[str, BeforeValidator(_id_text), StringConstraints(min_length=1, max_length=200)]


class WorldOperation(StrictModel):
    """How a world tool answers a call: one declarative operation on one collection, or a Python function.

    Values may name the call's arguments: ``"{order_id}"`` alone is the argument's value with its JSON type;
    inside longer text it is written in (``"note for {order_id}"``). ``id`` is always text.
    """

    find: CollectionName | None = Field(
        default=None, description="Find the records of this collection whose fields equal `where` (all if unset)."
    )
    get: CollectionName | None = Field(default=None, description="Read the record `id` of this collection.")
    update: CollectionName | None = Field(
        default=None, description="Set the fields `set` of the record `id` of this collection."
    )
    insert: CollectionName | None = Field(
        default=None, description="Add `record` to this collection under `id` (unset: the next free number)."
    )
    delete: CollectionName | None = Field(default=None, description="Remove the record `id` of this collection.")
    function: ImportRef | None = Field(
        default=None,
        description="module:callable given the conversation's world as `world` and the call's arguments by name; "
        "what it returns is the tool's result (for logic the operations cannot say: refund rules, fees).",
    )
    id: IdRef | None = Field(default=None, description="The record's id, e.g. '{order_id}'.")
    where: dict[str, JsonValue] | None = Field(
        default=None, description="find: fields a record must have, e.g. {customer: '{customer_id}'}."
    )
    set: dict[str, JsonValue] | None = Field(default=None, description="update: the fields to set and their values.")
    record: dict[str, JsonValue] | None = Field(default=None, description="insert: the new record's fields.")
    require: dict[str, JsonValue] | None = Field(
        default=None,
        description="update, delete: fields the record must have for the change to happen (e.g. {status: placed}); "
        "otherwise nothing changes and the agent is told which field differs.",
    )
    fields: list[str] | None = Field(
        default=None, description="find, get: the fields to return (unset: all), e.g. [status, total]."
    )
    limit: int | None = Field(default=None, ge=1, le=10_000, description="find: at most this many records.")

    @property
    def action(self) -> Literal["find", "get", "update", "insert", "delete", "function"]:
        """Which operation this is."""
        for name in ("find", "get", "update", "insert", "delete", "function"):
            if getattr(self, name) is not None:
                return name
        raise AssertionError("validated: one operation is set")  # pragma: no cover

    @property
    def collection(self) -> str | None:
        """The collection the operation works on (None for a function)."""
        return self.find or self.get or self.update or self.insert or self.delete

    @model_validator(mode="after")
    def _one_operation(self) -> WorldOperation:
        chosen = [name for name in ("find", "get", "update", "insert", "delete", "function") if getattr(self, name)]
        if len(chosen) != 1:
            raise ValueError(
                "a world tool does one thing: set exactly one of `find`, `get`, `update`, `insert`, `delete` "
                "(each naming a collection) or `function` (module:callable)"
                + (f"; this one sets {', '.join(chosen)}" if chosen else "")
            )
        action = chosen[0]
        allowed = {
            "find": {"where", "fields", "limit"},
            "get": {"id", "fields"},
            "update": {"id", "set", "require"},
            "insert": {"id", "record"},
            "delete": {"id", "require"},
            "function": set(),
        }[action]
        for key in ("id", "where", "set", "record", "require", "fields", "limit"):
            if key in self.model_fields_set and key not in allowed:
                raise located_error(f"`{key}` does not apply to `{action}`: remove it", key)
        if action in ("get", "update", "delete") and self.id is None:
            raise located_error(f"`{action}` needs `id`, the record's id (e.g. '{{order_id}}')", action)
        if action == "update" and not self.set:
            raise located_error("`update` needs `set`: the fields to change and their new values", action)
        if action == "insert" and self.record is None:
            raise located_error("`insert` needs `record`: the new record's fields", action)
        return self

    def placeholders(self) -> builtins.set[str]:
        """The argument names the operation refers to (``{name}``)."""
        found: builtins.set[str] = builtins.set()

        def visit(value: Any) -> None:
            if isinstance(value, str):
                found.update(PLACEHOLDER.findall(value))
            elif isinstance(value, dict):
                for item in value.values():
                    visit(item)
            elif isinstance(value, list):
                for item in value:
                    visit(item)

        for value in (self.id, self.where, self.set, self.record, self.require):
            visit(value)
        return found


class RecordExpectation(StrictModel):
    """A record the world must hold at the end (or must not, with ``exists: false``), found by ``id`` or ``where``."""

    collection: CollectionName = Field(description="The collection the record is in.")
    id: IdRef | None = Field(default=None, description="The record's id.")
    where: dict[str, JsonValue] | None = Field(
        default=None,
        description="Find the record by these fields instead of by id (a record the agent created under an id of "
        "its choosing). Exactly one record must match.",
    )
    fields: dict[str, JsonValue] = Field(
        default_factory=dict, description="Fields the record must have, with these values (others may differ)."
    )
    exists: bool = Field(default=True, description="false: the record must not exist (deleted, or never created).")

    @model_validator(mode="after")
    def _found_somehow(self) -> RecordExpectation:
        if (self.id is None) == (self.where is None):
            raise ValueError("name the record by `id` or find it by `where` (exactly one)")
        if not self.exists and self.fields:
            raise located_error("a record that must not exist has no fields to check: remove `fields`", "fields")
        return self

    def label(self) -> str:
        """``orders/1001`` or ``tickets where order=1001``."""
        if self.id is not None:
            return f"{self.collection}/{self.id}"
        where = ", ".join(f"{key}={value}" for key, value in (self.where or {}).items())
        return f"{self.collection} where {where}"


class UnchangedExpectation(StrictModel):
    """Something that must be as it was seeded: a whole collection, one record, or some fields of one record."""

    collection: CollectionName = Field(description="The collection that must be as seeded (or holds the record).")
    id: IdRef | None = Field(default=None, description="One record (unset: the whole collection).")
    fields: list[str] | None = Field(default=None, description="Only these fields of the record (unset: all).")

    @model_validator(mode="after")
    def _fields_need_a_record(self) -> UnchangedExpectation:
        if self.fields is not None and self.id is None:
            raise located_error("`fields` are fields of one record: set `id` too", "fields")
        return self

    def label(self) -> str:
        """``cards``, ``orders/1002`` or ``orders/1002 (status, total)``."""
        if self.id is None:
            return self.collection
        suffix = f" ({', '.join(self.fields)})" if self.fields else ""
        return f"{self.collection}/{self.id}{suffix}"


class CountExpectation(StrictModel):
    """How many records of a collection (matching ``where``) the world must hold at the end."""

    collection: CollectionName = Field(description="The collection whose records are counted.")
    where: dict[str, JsonValue] | None = Field(default=None, description="Count only the records with these fields.")
    count: int = Field(ge=0, description="The number of records.")

    def label(self) -> str:
        """``tickets`` or ``tickets where status=open``."""
        if not self.where:
            return self.collection
        return f"{self.collection} where " + ", ".join(f"{key}={value}" for key, value in self.where.items())


class StateExpectation(StrictModel):
    """What the world must look like when the case (or the step) ends, decided without a model."""

    records: list[RecordExpectation] = Field(
        default_factory=list, description="Records that must exist with these field values (or must not exist)."
    )
    unchanged: list[UnchangedExpectation] = Field(
        default_factory=list, description="Collections, records or fields that must be as seeded."
    )
    counts: list[CountExpectation] = Field(default_factory=list, description="Record counts at the end.")
    nothing_else_changed: bool = Field(
        default=False,
        description="Any change to a record not named under `records` fails the check (the agent changed "
        "something it should not have).",
    )

    @model_validator(mode="after")
    def _says_something(self) -> StateExpectation:
        if not (self.records or self.unchanged or self.counts or self.nothing_else_changed):
            raise ValueError(
                "expect_state checks nothing: give `records`, `unchanged`, `counts` or `nothing_else_changed: true`"
            )
        return self

    def collections(self) -> set[str]:
        """Every collection the expectation names."""
        return {item.collection for group in (self.records, self.unchanged, self.counts) for item in group}


def _world_shorthand(value: Any) -> Any:
    """``world: FILE`` is ``world: {file: FILE}``; a mapping without ``file``/``collections`` is the collections."""
    if isinstance(value, str):
        return {"file": value}
    if isinstance(value, dict) and not ({"file", "collections"} & set(value)):
        return {"collections": value}
    return value


class WorldSpec(StrictModel):
    """A seeded world: collections of records keyed by id, written inline or in a YAML/JSON file beside the suite.

    The loader reads ``file`` into ``collections``, so what is stored with a run always holds the records.
    """

    file: str | None = Field(
        default=None, description="A YAML or JSON file (relative to the suite) holding the collections."
    )
    collections: Collections = Field(default_factory=dict, description="Collections by name: records by id.")

    def merged_over(self, base: WorldSpec | None) -> WorldSpec:
        """This world laid over ``base``: the collections it names replace the base's, the others are kept."""
        if base is None:
            return self
        return WorldSpec(collections={**base.collections, **self.collections})


#: ``world:`` as a person writes it: the collections, a file name, or ``{file: ..., collections: ...}``.
WorldSetting = Annotated[
    WorldSpec | None,
    BeforeValidator(_world_shorthand, json_schema_input_type=str | dict[str, dict[str, dict[str, Any]]] | WorldSpec),
]


# --- what a conversation did to its world (produced by Simulator, stored with the transcript) ---


#: Values longer than this are shortened where a diff shows them (it names the record and field; the value is a hint).
_LONGEST_VALUE = 80


def show_value(value: JsonValue) -> str:
    """A value as a diff writes it: text in single quotes with control characters escaped (a value never breaks
    a line), anything else as JSON (``true``, ``50``, ``null``); long values shortened."""
    if isinstance(value, str):
        inner = json.dumps(value, ensure_ascii=False)[1:-1].replace('\\"', '"').replace("'", "\\'")
        text = f"'{inner}'"
    else:
        text = json.dumps(value, ensure_ascii=False, sort_keys=True)
    return text if len(text) <= _LONGEST_VALUE else text[: _LONGEST_VALUE - 1] + "…"


class FieldChange(DataModel):
    """One field of one record, before and after (``None`` with ``absent``: the field did not exist)."""

    before: JsonValue = None
    after: JsonValue = None
    before_absent: bool = Field(default=False, exclude_if=lambda value: not value)
    after_absent: bool = Field(default=False, exclude_if=lambda value: not value)

    def describe(self) -> str:
        """``false -> true``, ``(absent) -> 'x'`` or ``'x' -> (removed)``."""
        before = "(absent)" if self.before_absent else show_value(self.before)
        after = "(removed)" if self.after_absent else show_value(self.after)
        return f"{before} -> {after}"


class WorldChange(DataModel):
    """One record changed: inserted (``record`` is the new record), updated (``fields`` before/after), or deleted
    (``record`` is what was removed)."""

    collection: str
    id: str
    action: Literal["insert", "update", "delete"]
    fields: dict[str, FieldChange] = Field(default_factory=dict, exclude_if=lambda value: not value)
    record: Record | None = Field(default=None, exclude_if=lambda value: value is None)

    def label(self) -> str:
        """``orders/1001``."""
        return f"{self.collection}/{self.id}"

    def describe(self) -> str:
        """The change in words, as state checks and reports show it: ``cards/c-2 changed: blocked false -> true``,
        ``tickets/7 inserted: {...}``, ``orders/1003 deleted``."""
        if self.action == "insert":
            return f"{self.label()} inserted: {show_value(self.record or {})}"
        if self.action == "delete":
            return f"{self.label()} deleted"
        fields = ", ".join(f"{key} {field.describe()}" for key, field in self.fields.items())
        return f"{self.label()} changed: {fields}"


class WorldAccess(DataModel):
    """What one world tool call read and changed (``executed (world)``)."""

    read: list[str] = Field(default_factory=list, description="Records read, as collection/id.")
    changes: list[WorldChange] = Field(default_factory=list)

    def summary(self) -> str:
        """What the call read and changed, in one line: ``read orders/1001; changed orders/1001 (status: placed ->
        cancelled)``; empty when it touched nothing."""
        parts = [f"read {', '.join(self.read)}"] if self.read else []
        changed = [_change_text(change) for change in self.changes]
        if changed:
            parts.append(f"changed {', '.join(changed)}")
        return "; ".join(parts)


def _change_text(change: WorldChange) -> str:
    if change.action != "update":
        return f"{change.label()} ({'inserted' if change.action == 'insert' else 'deleted'})"
    fields = ", ".join(
        f"{key}: {'(none)' if field.before_absent else _short(field.before)} -> "
        f"{'(removed)' if field.after_absent else _short(field.after)}"
        for key, field in change.fields.items()
    )
    return f"{change.label()} ({fields})"


def _short(value: JsonValue) -> str:
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
    return text if len(text) <= 60 else text[:57] + "..."


class WorldTrace(DataModel):
    """A conversation's world: which seed it started from, and every record it left different (the net diff).

    The seed itself is stored once with the run's suite snapshot; ``digest`` names it, so the initial world can
    be rebuilt and the final one is the initial with ``changes`` applied.
    """

    digest: str = Field(description="sha256 of the seeded world (canonical JSON).")
    records: int = Field(description="How many records the seeded world holds.")
    changes: list[WorldChange] = Field(default_factory=list, description="The net diff: initial vs final, by record.")
