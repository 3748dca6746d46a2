"""Checkpoints for conversations: LangGraph's SQLite checkpointer, its writes made on the event loop.

LangGraph's async SQLite saver sends every statement through a worker thread (many hand-offs per graph
step, most of a turn's CPU). SQLite in WAL mode with ``synchronous=NORMAL`` commits without waiting for the disk,
so a checkpoint is serialised, written and committed on the loop
(:class:`CheckpointWrites`), and only what can take long goes to a thread: a write that would wait for another
process's lock on the file, and the checkpoint of the log into the database (which syncs). What LangGraph's
``durability="sync"`` promises holds: a step's checkpoint is in the file (and survives a killed process)
before the next step runs. Reads (a conversation's start or resume) stay on the loop: they are few.

What is written is redacted first (:class:`RedactingSerializer`): a checkpoint holds the conversation so far,
and no secret the process knows may reach a file.

What cut the cost (``python bench/engine.py --checkpoints``; figures in docs/performance.md): a checkpoint
holds the whole state, so serialising the transcript's pydantic events again at every checkpoint was half of
it; each event's encoding is now kept (:class:`RedactingSerializer`). A step's writes to the state are not
stored beside its checkpoint (:meth:`LoopSqliteSaver.put_writes`): one statement per step, not two. The engine
runs a whole user turn as one graph step, so one checkpoint is written per turn.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import copy
import dataclasses
import enum
import json
import sqlite3
import threading
import types
import typing
from collections.abc import AsyncIterator, Callable, Iterable, Iterator, Sequence
from contextlib import asynccontextmanager, contextmanager, suppress
from functools import partial
from pathlib import Path
from typing import Any

import ormsgpack
from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import (
    WRITES_IDX_MAP,
    ChannelVersions,
    Checkpoint,
    CheckpointMetadata,
    CheckpointTuple,
    get_checkpoint_metadata,
)
from langgraph.checkpoint.serde import jsonplus
from langgraph.checkpoint.serde.encrypted import EncryptedSerializer
from langgraph.checkpoint.serde.jsonplus import JsonPlusSerializer
from langgraph.checkpoint.sqlite import SqliteSaver
from pydantic import BaseModel

from simulator._sqlite import BUSY_TIMEOUT_S, connect
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


#: LangGraph's statement for a checkpoint (``SqliteSaver.put``), run here on a row serialised beforehand.
_INSERT_CHECKPOINT = (
    "INSERT OR REPLACE INTO checkpoints (thread_id, checkpoint_ns, checkpoint_id, parent_checkpoint_id, type, "
    "checkpoint, metadata) VALUES (?, ?, ?, ?, ?, ?, ?)"
)

#: Commits on the event loop between two checkpoints of the write-ahead log into the file (done in the thread of
#: :class:`CheckpointWrites`, on a connection of its own). A commit adds a few pages to the log; SQLite's own
#: default is a checkpoint per 1,000 pages.
_COMMITS_PER_WAL_CHECKPOINT = 200

#: SQLite's default: a checkpoint of the log each 1,000 pages, restored on the saver's connection when the writes stop.
_WAL_AUTOCHECKPOINT = 1000

#: What :class:`CheckpointWrites` runs: statements on the saver's connection (through its ``cursor``), or a
#: checkpoint's row to insert.
_Write = Callable[[], None] | tuple[Any, ...]


class CheckpointWrites:
    """A checkpointer's writes, each committed before its caller goes on: on the event loop when the file's write
    lock can be had at once, else in a thread of its own that waits for it (another process writing the file).

    A commit in WAL mode with ``synchronous=NORMAL`` writes the log and does not wait for the disk.
    What can take long is moved off the loop: waiting for another process's lock (the loop tries without
    waiting and hands the write to the thread) and the checkpoint of the log into the file, which syncs it (turned
    off on the loop's connection and done by the thread on a connection of its own, every
    :data:`_COMMITS_PER_WAL_CHECKPOINT` commits).

    Every write used to go to a thread, a batch of them per transaction. The thread waited for the GIL after every
    call into SQLite while the loop was busy, each step waited for that, and the thread taking the GIL slowed the loop
    itself (``bench/run.py``, in docs/performance.md).

    Until :meth:`start` (or after :meth:`stop`) a write runs in the caller's thread, waiting for the lock as any.
    """

    def __init__(self, saver: LoopSqliteSaver) -> None:
        self._saver = saver
        self._thread: concurrent.futures.ThreadPoolExecutor | None = None
        self._last: concurrent.futures.Future[None] | None = None  # the last write handed to the thread
        self._path = ""  # the file's, for the thread's connection ("" in memory: no log to checkpoint)
        self._wal: sqlite3.Connection | None = None  # the thread's connection, for checkpoints of the log
        self._commits = 0
        self.started = False
        #: The thread that holds the saver's lock for a write (its ``cursor`` then leaves the commit to the write).
        self.owner: int | None = None

    def start(self) -> None:
        with self._saver.lock:
            self._saver.conn.execute("PRAGMA wal_autocheckpoint = 0")
            self._path = next(
                (row[2] for row in self._saver.conn.execute("PRAGMA database_list") if row[1] == "main"), ""
            )
        self.started = True

    def stop(self) -> None:
        """Make every write handed to the thread (a cancelled conversation's last checkpoint is kept), then end it;
        the log is checkpointed when the saver's connection closes, as SQLite does."""
        self.started = False
        if self._thread is not None:
            self._thread.submit(self._close_wal)
            self._thread.shutdown(wait=True)
            self._thread = None
        with self._saver.lock:
            self._saver.conn.execute(f"PRAGMA wal_autocheckpoint = {_WAL_AUTOCHECKPOINT}")

    async def run(self, write: _Write) -> None:
        """Run ``write`` and return once it is committed; its error, if any, is raised here."""
        if not self.started:
            self._waiting(write)
            return
        if (self._last is None or self._last.done()) and self._saver.lock.acquire(blocking=False):
            try:
                if self._at_once(write):
                    self._commits += 1
                    if self._commits % _COMMITS_PER_WAL_CHECKPOINT == 0 and self._path:
                        self._pool().submit(self._checkpoint_wal)
                    return
            finally:
                self._saver.lock.release()
        # Another process holds the file's lock (or writes wait for it already): the thread waits for it, in order.
        self._last = self._pool().submit(self._waiting, write)
        # Shielded: a cancelled caller stops waiting, its write is made all the same.
        await asyncio.shield(asyncio.wrap_future(self._last))

    def _at_once(self, write: _Write) -> bool:
        """Run ``write`` (the saver's lock held) if the file's lock is free now; whether it ran (an error is raised)."""
        conn = self._saver.conn
        conn.execute("PRAGMA busy_timeout = 0")
        try:
            self._locked(write)
        except sqlite3.OperationalError as exc:
            if getattr(exc, "sqlite_errorcode", 0) & 0xFF == sqlite3.SQLITE_BUSY:
                return False  # rolled back: nothing was written
            raise
        finally:
            conn.execute(f"PRAGMA busy_timeout = {int(BUSY_TIMEOUT_S * 1000)}")
        return True

    def _waiting(self, write: _Write) -> None:
        """Run ``write`` and commit, waiting for the saver's lock and the file's (its busy timeout)."""
        with self._saver.lock:
            self._locked(write)

    def _locked(self, write: _Write) -> None:
        """Run ``write`` and commit (the saver's lock held); roll back and raise if it fails."""
        self.owner = threading.get_ident()
        try:
            if isinstance(write, tuple):
                self._saver.insert(write)
            else:
                write()
            self._saver.conn.commit()
        except BaseException:
            with suppress(sqlite3.Error):
                self._saver.conn.rollback()
            raise
        finally:
            self.owner = None

    def _pool(self) -> concurrent.futures.ThreadPoolExecutor:
        if self._thread is None:
            self._thread = concurrent.futures.ThreadPoolExecutor(1, thread_name_prefix="simulator-checkpoint-writes")
        return self._thread

    def _checkpoint_wal(self) -> None:
        """Copy the log's new pages into the file (PASSIVE: nobody waits for it, nor it for anybody); its fsync
        happens here, not on the loop. A failure is left to the next one, or to the connection's close."""
        with suppress(sqlite3.Error):
            if self._wal is None:
                self._wal = connect(self._path, wal=False)
            self._wal.execute("PRAGMA wal_checkpoint(PASSIVE)")

    def _close_wal(self) -> None:
        if self._wal is not None:
            self._wal.close()
            self._wal = None


class LoopSqliteSaver(SqliteSaver):
    """:class:`SqliteSaver` answering its async methods on the event loop, its writes done by
    :class:`CheckpointWrites`."""

    serde = RedactingSerializer()

    def __init__(self, conn: sqlite3.Connection) -> None:
        super().__init__(conn)
        self.writes = CheckpointWrites(self)

    @contextmanager
    def cursor(self, transaction: bool = True) -> Iterator[sqlite3.Cursor]:
        """LangGraph's cursor; within a write of :class:`CheckpointWrites` (which holds the lock) it leaves the
        commit to the write."""
        if self.writes.owner != threading.get_ident():
            with super().cursor(transaction) as cur:
                yield cur
            return
        self.setup()
        cur = self.conn.cursor()
        try:
            yield cur
        finally:
            cur.close()

    def put(
        self,
        config: RunnableConfig,
        checkpoint: Checkpoint,
        metadata: CheckpointMetadata,
        new_versions: ChannelVersions,
    ) -> RunnableConfig:
        self.insert(self._row(config, checkpoint, metadata))
        return _saved(config, checkpoint)

    def _row(self, config: RunnableConfig, checkpoint: Checkpoint, metadata: CheckpointMetadata) -> tuple[Any, ...]:
        """The row ``SqliteSaver.put`` writes, serialised."""
        kind, data = self.serde.dumps_typed(checkpoint)
        stored_metadata = json.dumps(get_checkpoint_metadata(config, metadata), ensure_ascii=False)
        configurable = config["configurable"]
        return (
            str(configurable["thread_id"]),
            configurable["checkpoint_ns"],
            checkpoint["id"],
            configurable.get("checkpoint_id"),
            kind,
            data,
            stored_metadata.encode("utf-8", "ignore"),
        )

    def insert(self, row: tuple[Any, ...]) -> None:
        """Insert a checkpoint's row (:meth:`_row`) through :meth:`cursor`."""
        with self.cursor() as cur:
            cur.execute(_INSERT_CHECKPOINT, row)

    def put_writes(
        self, config: RunnableConfig, writes: Sequence[tuple[str, Any]], task_id: str, task_path: str = ""
    ) -> None:
        """Store LangGraph's own writes (an error, an interrupt); a node's writes to the state are not stored.

        Every step of the conversation graph has one task, and its checkpoint, written right after it with
        the same values, follows its writes: storing them as well cost a tenth of a millisecond a turn and
        bought nothing but the rare crash between the two calls, after which the step runs again (as it does
        when the crash comes while it runs)."""
        kept = _kept(writes)
        if kept:
            super().put_writes(config, kept, task_id, task_path)

    def has_thread(self, thread_id: str) -> bool:
        """Whether ``thread_id`` has a checkpoint (a conversation to resume): one read, nothing deserialised."""
        with self.cursor(transaction=False) as cur:
            cur.execute("SELECT 1 FROM checkpoints WHERE thread_id = ? LIMIT 1", (str(thread_id),))
            return cur.fetchone() is not None

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
        await self.writes.run(self._row(config, checkpoint, metadata))
        return _saved(config, checkpoint)

    async def aput_writes(
        self, config: RunnableConfig, writes: Sequence[tuple[str, Any]], task_id: str, task_path: str = ""
    ) -> None:
        kept = _kept(writes)
        if kept:
            await self.writes.run(partial(SqliteSaver.put_writes, self, config, kept, task_id, task_path))

    async def adelete_thread(self, thread_id: str) -> None:
        await self.writes.run(partial(self.delete_thread, thread_id))


def _kept(writes: Sequence[tuple[str, Any]]) -> list[tuple[str, Any]]:
    return [(channel, value) for channel, value in writes if channel in WRITES_IDX_MAP]


def _saved(config: RunnableConfig, checkpoint: Checkpoint) -> RunnableConfig:
    """The config of the checkpoint just written (what ``SqliteSaver.put`` returns)."""
    configurable = config["configurable"]
    return {
        "configurable": {
            "thread_id": configurable["thread_id"],
            "checkpoint_ns": configurable["checkpoint_ns"],
            "checkpoint_id": checkpoint["id"],
        }
    }


@asynccontextmanager
async def open_checkpointer(path: Path | str) -> AsyncIterator[LoopSqliteSaver]:
    """A checkpointer on the SQLite file ``path`` (WAL, ``synchronous=NORMAL``, a busy timeout), its writes made
    by :class:`CheckpointWrites` while the block runs; every write handed to its thread is made before it ends."""
    connection = connect(path, check_same_thread=False)
    try:
        saver = LoopSqliteSaver(connection)
        saver.setup()
        saver.writes.start()
        try:
            yield saver
        finally:
            saver.writes.stop()
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
