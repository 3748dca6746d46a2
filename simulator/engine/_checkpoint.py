"""Checkpoints for conversations: LangGraph's SQLite checkpointer, driven from the event loop directly.

LangGraph's async SQLite saver sends every statement through a worker thread (about 15 hand-offs per graph
step), which cost 3.4 ms of CPU per turn here. SQLite in WAL mode with ``synchronous=NORMAL`` commits in tens
of microseconds without waiting for the disk, so the synchronous saver is called from the loop instead: the
same tables, the same durability after a killed process (a committed transaction survives it), a fraction of
the CPU.

What is written is redacted first (:class:`RedactingSerializer`): a checkpoint holds the conversation so far,
and no secret the process knows may reach a file.

Measured costs, and what cut them (``python bench/engine.py --checkpoints``, CPU per user turn): a checkpoint
holds the whole state, so serialising the transcript's pydantic events again at every checkpoint was half of
it; each event's encoding is now kept (:class:`RedactingSerializer`). A step's writes to the state are not
stored beside its checkpoint (:meth:`LoopSqliteSaver.put_writes`): one commit per step, not two. The engine
runs a whole user turn as one graph step, so one checkpoint is written per turn.
"""

from __future__ import annotations

import copy
import dataclasses
import enum
import sqlite3
import types
import typing
from collections.abc import AsyncIterator, Iterable, Iterator, Sequence
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import ormsgpack
from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import WRITES_IDX_MAP, ChannelVersions, Checkpoint, CheckpointMetadata, CheckpointTuple
from langgraph.checkpoint.serde import jsonplus
from langgraph.checkpoint.serde.encrypted import EncryptedSerializer
from langgraph.checkpoint.serde.jsonplus import JsonPlusSerializer
from langgraph.checkpoint.sqlite import SqliteSaver
from pydantic import BaseModel

from simulator._sqlite import connect
from simulator.safety import contains_secret, redact_data

#: Encoded pydantic objects by ``id``, each with the object itself (so the id is not reused while the entry
#: lives). Emptied when full: a bound on memory, not a cache policy.
_ENCODED: dict[int, tuple[Any, Any]] = {}
_ENCODED_MAX = 4_096


def _encode_once(obj: Any) -> Any:
    """LangGraph's msgpack encoding of ``obj``, computed once per pydantic object.

    A checkpoint holds the whole state, so every event of the transcript so far is encoded again at each
    one; the state's events, outcomes and verdicts are never changed once made, so their encoding is kept.
    The bytes are LangGraph's own (``_msgpack_default``): what is written and how it is read back do not
    change.
    """
    if isinstance(obj, BaseModel):
        entry = _ENCODED.get(id(obj))
        if entry is not None and entry[0] is obj:
            return entry[1]
        encoded = jsonplus._msgpack_default(obj)
        if len(_ENCODED) >= _ENCODED_MAX:
            _ENCODED.clear()
        _ENCODED[id(obj)] = (obj, encoded)
        return encoded
    return jsonplus._msgpack_default(obj)


class RedactingSerializer(JsonPlusSerializer):
    """LangGraph's serializer, writing every secret the process knows as ``[redacted:NAME]``.

    The serialized bytes are checked (a few substring searches); only a value that holds a secret is
    redacted and serialized again. A subclass, so LangGraph's msgpack allow-list still applies to it.
    Pydantic objects are encoded once each (:func:`_encode_once`).
    """

    def dumps_typed(self, obj: Any) -> tuple[str, bytes]:
        kind, data = self._dumps(obj)
        if contains_secret(data):
            kind, data = super().dumps_typed(redact_data(obj))
        return kind, data

    def _dumps(self, obj: Any) -> tuple[str, bytes]:
        if obj is None or isinstance(obj, bytes | bytearray):
            return super().dumps_typed(obj)
        try:
            return "msgpack", ormsgpack.packb(obj, default=_encode_once, option=jsonplus._option)
        except ormsgpack.MsgpackEncodeError:
            return super().dumps_typed(obj)  # LangGraph's own fallbacks (pickle, if allowed) or its error


class LoopSqliteSaver(SqliteSaver):
    """:class:`SqliteSaver` with its async methods answered synchronously, on the event loop."""

    serde = RedactingSerializer()

    def put_writes(
        self, config: RunnableConfig, writes: Sequence[tuple[str, Any]], task_id: str, task_path: str = ""
    ) -> None:
        """Store LangGraph's own writes (an error, an interrupt); a node's writes to the state are not stored.

        Every step of the conversation graph has one task, and its checkpoint, written right after it with
        the same values, follows its writes: storing them as well cost a tenth of a millisecond a turn and
        bought nothing but the rare crash between the two calls, after which the step runs again (as it does
        when the crash comes while it runs)."""
        kept = [(channel, value) for channel, value in writes if channel in WRITES_IDX_MAP]
        if kept:
            super().put_writes(config, kept, task_id, task_path)

    async def aget_tuple(self, config: RunnableConfig) -> CheckpointTuple | None:
        return self.get_tuple(config)

    async def alist(
        self,
        config: RunnableConfig | None,
        *,
        filter: dict[str, Any] | None = None,
        before: RunnableConfig | None = None,
        limit: int | None = None,
    ) -> AsyncIterator[CheckpointTuple]:
        items: Iterator[CheckpointTuple] = self.list(config, filter=filter, before=before, limit=limit)
        for item in items:
            yield item

    async def aput(
        self,
        config: RunnableConfig,
        checkpoint: Checkpoint,
        metadata: CheckpointMetadata,
        new_versions: ChannelVersions,
    ) -> RunnableConfig:
        return self.put(config, checkpoint, metadata, new_versions)

    async def aput_writes(
        self, config: RunnableConfig, writes: Sequence[tuple[str, Any]], task_id: str, task_path: str = ""
    ) -> None:
        self.put_writes(config, writes, task_id, task_path)

    async def adelete_thread(self, thread_id: str) -> None:
        self.delete_thread(thread_id)


@asynccontextmanager
async def open_checkpointer(path: Path | str) -> AsyncIterator[LoopSqliteSaver]:
    """A checkpointer on the SQLite file ``path`` (WAL, ``synchronous=NORMAL``, a busy timeout)."""
    connection = connect(path, check_same_thread=False)
    try:
        saver = LoopSqliteSaver(connection)
        saver.setup()
        yield saver
    finally:
        connection.close()


#: The tables LangGraph's SQLite checkpointer keeps, each with a ``thread_id`` column.
CHECKPOINT_TABLES = ("checkpoints", "writes")


def forget_threads(path: Path | str, prefix: str) -> None:
    """Delete every checkpoint in the file ``path`` whose thread id starts with ``prefix`` (e.g. a deleted run's
    ``"<run id>:"``). Nothing happens when the file or its tables do not exist (nothing was checkpointed)."""
    path = Path(path)
    if not path.exists():
        return
    pattern = prefix.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_") + "%"
    connection = connect(path)
    try:
        with connection:
            for table in CHECKPOINT_TABLES:
                try:
                    connection.execute(f"DELETE FROM {table} WHERE thread_id LIKE ? ESCAPE '\\'", (pattern,))
                except sqlite3.OperationalError:
                    continue  # the table was never created: nothing to forget
    finally:
        connection.close()


def registered(checkpointer: Any, state_schema: Any) -> Any:
    """A shallow copy of ``checkpointer`` whose serializer restores exactly the types ``state_schema`` can hold.

    Only LangGraph's JSON-plus serializer or a subclass (alone or inside its encrypting one) is replaced; a checkpointer
    with any other serializer is returned as it is.
    """
    allowed = tuple(sorted(state_types(state_schema)))
    serde = getattr(checkpointer, "serde", None)
    # The same class (RedactingSerializer included), with the allow-list.
    if isinstance(serde, JsonPlusSerializer):
        replacement: Any = type(serde)(pickle_fallback=serde.pickle_fallback, allowed_msgpack_modules=allowed)
    elif isinstance(serde, EncryptedSerializer) and isinstance(serde.serde, JsonPlusSerializer):
        inner = type(serde.serde)(pickle_fallback=serde.serde.pickle_fallback, allowed_msgpack_modules=allowed)
        replacement = EncryptedSerializer(serde.cipher, inner)
    else:
        return checkpointer
    clone = copy.copy(checkpointer)
    clone.serde = replacement
    return clone


def state_types(*roots: Any) -> set[tuple[str, str]]:
    """``(module, name)`` of every class a value of the types ``roots`` may contain that the checkpoint
    serializer stores by name: pydantic models, dataclasses and enums, at any depth (fields, unions,
    containers, type aliases, TypedDicts). Built-in and standard types (``datetime``) are LangGraph's own
    concern."""
    found: set[tuple[str, str]] = set()
    seen: list[Any] = []

    def walk(hint: Any) -> None:
        if any(hint is earlier for earlier in seen):
            return
        seen.append(hint)
        value = getattr(hint, "__value__", None)  # a type alias (`type X = ...`, pydantic's JsonValue)
        if value is not None and not isinstance(hint, type):
            walk(value)
            return
        if isinstance(hint, type):
            if issubclass(hint, BaseModel):
                found.add((hint.__module__, hint.__name__))
                _walk_all(walk, (field.annotation for field in hint.model_fields.values()))
            elif dataclasses.is_dataclass(hint):
                found.add((hint.__module__, hint.__name__))
                _walk_all(walk, typing.get_type_hints(hint).values())
            elif issubclass(hint, enum.Enum):
                found.add((hint.__module__, hint.__name__))
            elif typing.is_typeddict(hint):
                _walk_all(walk, typing.get_type_hints(hint).values())
            return
        if isinstance(hint, types.UnionType) or typing.get_origin(hint) is not None:
            _walk_all(walk, typing.get_args(hint))

    _walk_all(walk, roots)
    return found


def _walk_all(walk: Any, hints: Iterable[Any]) -> None:
    for hint in hints:
        walk(hint)
