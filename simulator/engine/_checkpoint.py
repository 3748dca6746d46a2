"""Checkpoints for conversations: LangGraph's SQLite checkpointer, driven from the event loop directly.

LangGraph's async SQLite saver sends every statement through a worker thread (about 15 hand-offs per graph
step), which cost 3.4 ms of CPU per turn here. SQLite in WAL mode with ``synchronous=NORMAL`` commits in tens
of microseconds without waiting for the disk, so the synchronous saver is called from the loop instead: the
same tables, the same durability after a killed process (a committed transaction survives it), a fraction of
the CPU.

What is written is redacted first (:class:`RedactingSerializer`): a checkpoint holds the conversation so far,
and no secret the process knows may reach a file.
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

from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import ChannelVersions, Checkpoint, CheckpointMetadata, CheckpointTuple
from langgraph.checkpoint.serde.encrypted import EncryptedSerializer
from langgraph.checkpoint.serde.jsonplus import JsonPlusSerializer
from langgraph.checkpoint.sqlite import SqliteSaver
from pydantic import BaseModel

from simulator._sqlite import connect
from simulator.safety import contains_secret, redact_data


class RedactingSerializer(JsonPlusSerializer):
    """LangGraph's serializer, writing every secret the process knows as ``[redacted:NAME]``.

    The serialized bytes are checked (a few substring searches); only a value that holds a secret is
    redacted and serialized again. A subclass, so LangGraph's msgpack allow-list still applies to it.
    """

    def dumps_typed(self, obj: Any) -> tuple[str, bytes]:
        kind, data = super().dumps_typed(obj)
        if contains_secret(data):
            kind, data = super().dumps_typed(redact_data(obj))
        return kind, data


class LoopSqliteSaver(SqliteSaver):
    """:class:`SqliteSaver` with its async methods answered synchronously, on the event loop."""

    serde = RedactingSerializer()

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
