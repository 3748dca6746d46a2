"""The world a conversation acts on: the seed shared read-only, the conversation's changes kept apart."""

from __future__ import annotations

import copy
import hashlib
import json
from collections.abc import Iterable, Iterator, Mapping
from typing import Any

from pydantic import JsonValue

from simulator.models.world import FieldChange, Record, WorldAccess, WorldChange, WorldSpec, WorldTrace

#: A record the conversation deleted (kept in the overlay so reads see it gone).
_DELETED: Record = {}


class WorldError(Exception):
    """What a world operation cannot do (no such collection, no such record, an id taken): the tool's answer to the
    agent, never a crash."""


class SeededWorld:
    """A suite's (or case's) world as seeded: read once, shared by every conversation, never changed."""

    def __init__(self, spec: WorldSpec) -> None:
        self.collections: dict[str, dict[str, Record]] = spec.collections
        text = json.dumps(self.collections, sort_keys=True, ensure_ascii=False, separators=(",", ":"))
        self.digest = hashlib.sha256(text.encode()).hexdigest()
        self.size = sum(len(records) for records in self.collections.values())

    def copy(self) -> World:
        """A conversation's own world, starting as the seed."""
        return World(self)


class World:
    """One conversation's world. Tools read and change it through these methods; the seed is never touched.

    Reads return copies, so a caller that edits what it read changes nothing: every change goes through
    :meth:`update`, :meth:`insert` or :meth:`delete` and is recorded. A Python world tool gets this object as its
    ``world`` argument.
    """

    def __init__(self, seed: SeededWorld) -> None:
        self.seed = seed
        #: Records this conversation inserted, changed or deleted (``_DELETED``), by collection and id.
        self._overlay: dict[str, dict[str, Record]] = {}
        self._access: WorldAccess | None = None

    # --- reading ---

    @property
    def names(self) -> list[str]:
        """The collections the world has (seeded, or created by an insert)."""
        return sorted({*self.seed.collections, *self._overlay})

    def has_collection(self, collection: str) -> bool:
        """Whether the world has this collection."""
        return collection in self.seed.collections or collection in self._overlay

    def get(self, collection: str, record_id: str) -> Record | None:
        """The record (a copy), or None when there is none with that id."""
        found = self._current(collection, str(record_id))
        if found is not None:
            self.note_read(collection, str(record_id))
        return copy.deepcopy(found) if found is not None else None

    def find(self, collection: str, where: Mapping[str, Any] | None = None, limit: int | None = None) -> list[Record]:
        """The records whose fields equal ``where`` (all of them when it is empty), each with its ``id``, by id."""
        found: list[Record] = []
        for record_id, record in self._records(collection):
            if all(key in record and record[key] == value for key, value in (where or {}).items()):
                self.note_read(collection, record_id)
                found.append({"id": record_id, **copy.deepcopy(record)})
                if limit is not None and len(found) >= limit:
                    break
        return found

    def collection(self, collection: str) -> dict[str, Record]:
        """Every record of a collection by id (copies)."""
        return {record_id: copy.deepcopy(record) for record_id, record in self._records(collection)}

    def count(self, collection: str, where: Mapping[str, Any] | None = None) -> int:
        """How many records of the collection have the fields of ``where``, without recording a read."""
        return sum(
            all(key in record and record[key] == value for key, value in (where or {}).items())
            for _, record in self._records(collection)
        )

    # --- changing ---

    def update(self, collection: str, record_id: str, fields: Mapping[str, JsonValue]) -> WorldChange | None:
        """Set fields of a record; the change made (None when every field already had its value)."""
        record_id = str(record_id)
        current = self._current(collection, record_id)
        if current is None:
            raise WorldError(self.missing_message(collection, record_id))
        changed = {
            key: FieldChange(before=current.get(key), after=copy.deepcopy(value), before_absent=key not in current)
            for key, value in fields.items()
            if key not in current or current[key] != value
        }
        if not changed:
            return None
        self._write(collection, record_id, {**current, **{key: change.after for key, change in changed.items()}})
        return self._changed(WorldChange(collection=collection, id=record_id, action="update", fields=changed))

    def insert(self, collection: str, record: Mapping[str, JsonValue], record_id: str | None = None) -> str:
        """Add a record (its id: ``record_id``, else the next free number of the collection); returns the id."""
        if record_id is None:
            record_id = self._next_id(collection)
        record_id = str(record_id)
        if self._current(collection, record_id) is not None:
            raise WorldError(f"{collection} already has a record with id {record_id!r}")
        new = copy.deepcopy(dict(record))
        self._write(collection, record_id, new)
        self._changed(WorldChange(collection=collection, id=record_id, action="insert", record=copy.deepcopy(new)))
        return record_id

    def delete(self, collection: str, record_id: str) -> Record:
        """Remove a record; returns what was removed."""
        record_id = str(record_id)
        current = self._current(collection, record_id)
        if current is None:
            raise WorldError(self.missing_message(collection, record_id))
        self._write(collection, record_id, _DELETED)
        self._changed(WorldChange(collection=collection, id=record_id, action="delete", record=copy.deepcopy(current)))
        return current

    def restore_fields(self, change: WorldChange) -> None:
        """Make a recorded update again, fields removed included (replay and resume)."""
        current = self._current(change.collection, change.id)
        if current is None:
            raise WorldError(self.missing_message(change.collection, change.id))
        new = {**current}
        for key, field in change.fields.items():
            if field.after_absent:
                new.pop(key, None)
            else:
                new[key] = copy.deepcopy(field.after)
        self._write(change.collection, change.id, new)

    # --- what happened ---

    def begin_access(self) -> None:
        """Start recording what the next tool call reads and changes."""
        self._access = WorldAccess()

    def end_access(self) -> WorldAccess:
        """What was read and changed since :meth:`begin_access`."""
        access, self._access = self._access or WorldAccess(), None
        return access

    def diff(self) -> list[WorldChange]:
        """The net diff: every record that differs from the seed, by collection and id."""
        changes: list[WorldChange] = []
        for collection in sorted(self._overlay):
            seeded = self.seed.collections.get(collection, {})
            for record_id in sorted(self._overlay[collection], key=_id_order):
                now = self._overlay[collection][record_id]
                before = seeded.get(record_id)
                if now is _DELETED:
                    if before is not None:
                        changes.append(WorldChange(collection=collection, id=record_id, action="delete", record=before))
                elif before is None:
                    changes.append(WorldChange(collection=collection, id=record_id, action="insert", record=now))
                else:
                    fields = _field_diff(before, now)
                    if fields:
                        changes.append(WorldChange(collection=collection, id=record_id, action="update", fields=fields))
        return changes

    def trace(self) -> WorldTrace:
        """What is stored with the conversation's result: the seed's digest and size, and the net diff."""
        return WorldTrace(digest=self.seed.digest, records=self.seed.size, changes=self.diff())

    def initial(self, collection: str, record_id: str) -> Record | None:
        """The record as seeded (a copy; None: it was not in the seed)."""
        found = self.seed.collections.get(collection, {}).get(str(record_id))
        return copy.deepcopy(found) if found is not None else None

    def current(self, collection: str, record_id: str) -> Record | None:
        """The record now (a copy), without recording a read (state checks use this)."""
        found = self._current(collection, str(record_id))
        return copy.deepcopy(found) if found is not None else None

    # --- inside ---

    def _current(self, collection: str, record_id: str) -> Record | None:
        overlay = self._overlay.get(collection)
        if overlay is not None and record_id in overlay:
            record = overlay[record_id]
            return None if record is _DELETED else record
        return self.seed.collections.get(collection, {}).get(record_id)

    def _records(self, collection: str) -> Iterator[tuple[str, Record]]:
        if not self.has_collection(collection):
            raise WorldError(f"the world has no collection {collection!r} (it has: {', '.join(self.names) or 'none'})")
        seeded = self.seed.collections.get(collection, {})
        overlay = self._overlay.get(collection, {})
        ids = list(seeded) + [record_id for record_id in overlay if record_id not in seeded]
        for record_id in ids:
            record = self._current(collection, record_id)
            if record is not None:
                yield record_id, record

    def _write(self, collection: str, record_id: str, record: Record) -> None:
        self._overlay.setdefault(collection, {})[record_id] = record

    def note_read(self, collection: str, record_id: str) -> None:
        """Record that the current tool call read this record."""
        if self._access is not None:
            label = f"{collection}/{record_id}"
            if label not in self._access.read:
                self._access.read.append(label)

    def _changed(self, change: WorldChange) -> WorldChange:
        if self._access is not None:
            self._access.changes.append(change)
        return change

    def missing_message(self, collection: str, record_id: str) -> str:
        """Why a record cannot be found, in words (no such collection, or no such id)."""
        if not self.has_collection(collection):
            return f"the world has no collection {collection!r} (it has: {', '.join(self.names) or 'none'})"
        return f"{collection} has no record with id {record_id!r}"

    def _next_id(self, collection: str) -> str:
        numbers = [int(record_id) for record_id, _ in self._records_or_none(collection) if record_id.isdigit()]
        return str(max(numbers, default=0) + 1)

    def _records_or_none(self, collection: str) -> Iterable[tuple[str, Record]]:
        return self._records(collection) if self.has_collection(collection) else ()


def _id_order(record_id: str) -> tuple[int, int, str]:
    """Numeric ids in number order, then the others as text."""
    return (0, int(record_id), "") if record_id.isdigit() else (1, 0, record_id)


def _field_diff(before: Record, after: Record) -> dict[str, FieldChange]:
    fields: dict[str, FieldChange] = {}
    for key in [*before, *(key for key in after if key not in before)]:
        if key not in after:
            fields[key] = FieldChange(before=before[key], after_absent=True)
        elif key not in before:
            fields[key] = FieldChange(after=after[key], before_absent=True)
        elif before[key] != after[key]:
            fields[key] = FieldChange(before=before[key], after=after[key])
    return fields


def apply_changes(world: World, changes: Iterable[WorldChange]) -> None:
    """Make ``changes`` (recorded by an earlier run of the same conversation) again, in order: how replay, rerun
    and resume rebuild a conversation's world without running its tools."""
    for change in changes:
        if change.action == "insert":
            world.insert(change.collection, change.record or {}, change.id)
        elif change.action == "delete":
            world.delete(change.collection, change.id)
        else:
            world.restore_fields(change)
