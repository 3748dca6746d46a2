"""Checkpoints for conversations: LangGraph's SQLite checkpointer, its writes done by one thread of its own.

LangGraph's async SQLite saver sends every statement through a worker thread (about 15 hand-offs per graph
step), which cost 3.4 ms of CPU per turn here. SQLite in WAL mode with ``synchronous=NORMAL`` commits without
waiting for the disk, so serialising happens on the event loop and the writes go to one thread
(:class:`CheckpointWrites`) that runs whatever is queued in one transaction: a commit per batch of turns
instead of one per turn, and the file's I/O (a write of the log, now and then a checkpoint of it into the
database) never stalls the loop. Each write is awaited until its batch is committed, so what LangGraph's
``durability="sync"`` promises holds as before: a step's checkpoint is in the file (and survives a killed
process) before the next step runs. Reads (a conversation's start or resume) stay on the loop: they are few.

What is written is redacted first (:class:`RedactingSerializer`): a checkpoint holds the conversation so far,
and no secret the process knows may reach a file.

Measured costs, and what cut them (``python bench/engine.py --checkpoints``, CPU per user turn): a checkpoint
holds the whole state, so serialising the transcript's pydantic events again at every checkpoint was half of
it; each event's encoding is now kept (:class:`RedactingSerializer`). A step's writes to the state are not
stored beside its checkpoint (:meth:`LoopSqliteSaver.put_writes`): one statement per step, not two. The engine
runs a whole user turn as one graph step, so one checkpoint is written per turn.
"""

from __future__ import annotations

import asyncio
import copy
import dataclasses
import enum
import itertools
import json
import queue
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


#: Most writes one transaction of :class:`CheckpointWrites` takes (a bound on how long a batch holds the file).
_BATCH_MAX = 256

#: LangGraph's statement for a checkpoint (``SqliteSaver.put``), run here on rows serialised beforehand: the
#: checkpoints queued one after another go in one statement of that many rows (see :class:`CheckpointWrites`).
_INSERT_CHECKPOINTS = (
    "INSERT OR REPLACE INTO checkpoints (thread_id, checkpoint_ns, checkpoint_id, parent_checkpoint_id, type, "
    "checkpoint, metadata) VALUES "
)
_CHECKPOINT_ROW = "(?, ?, ?, ?, ?, ?, ?)"


def _insert_checkpoints(cur: sqlite3.Cursor, rows: Sequence[tuple[Any, ...]]) -> None:
    for start in range(0, len(rows), _ROWS_MAX):
        chunk = rows[start : start + _ROWS_MAX]
        cur.execute(_INSERT_CHECKPOINTS + ", ".join([_CHECKPOINT_ROW] * len(chunk)), [v for row in chunk for v in row])


#: Rows of one insert: 7 parameters each, within the 999 of SQLite before 3.32.
_ROWS_MAX = 128


#: What :class:`CheckpointWrites` queues: statements to run, or a checkpoint's row; and who waits for it.
_Job = tuple[Callable[[], None] | tuple[Any, ...], asyncio.Future[None]]


class CheckpointWrites:
    """One thread that runs a checkpointer's writes in the order they were queued, each batch of queued writes in
    one transaction, and tells each waiting coroutine once its write is committed.

    Checkpoints queued one after another are inserted by one statement: the thread waits for the GIL after every
    call into SQLite (which lets it go), up to the interpreter's switch interval (5 ms) while the event loop is
    busy, and a statement per checkpoint made a batch of eight wait ~3 ms, each step of every conversation
    waiting ~10 ms for its commit (``bench/run.py``: 1.28 of the ideal with checkpoints, 1.18 without).

    Until :meth:`start` (or after :meth:`stop`) a write runs at once in the caller's thread and is committed.
    """

    def __init__(self, saver: LoopSqliteSaver) -> None:
        self._saver = saver
        self._queue: queue.SimpleQueue[_Job | None] = queue.SimpleQueue()
        self.thread: threading.Thread | None = None

    def start(self) -> None:
        self.thread = threading.Thread(target=self._work, name="simulator-checkpoint-writes", daemon=True)
        self.thread.start()

    def stop(self) -> None:
        """Run every write still queued, then end the thread (a cancelled run's last checkpoints are kept)."""
        if self.thread is not None:
            self._queue.put(None)
            self.thread.join()
            self.thread = None

    async def run(self, write: Callable[[], None] | tuple[Any, ...]) -> None:
        """Run ``write`` (statements on the saver's connection, through its ``cursor``; or a checkpoint's row to
        insert) and return once it is committed; its error, if any, is raised here."""
        if self.thread is None:
            (error,) = self._write([write])
            if error is not None:
                raise error
            return
        done: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._queue.put((write, done))
        await done

    def _work(self) -> None:
        while True:
            job = self._queue.get()
            if job is None:
                return
            batch = [job]
            while len(batch) < _BATCH_MAX:
                try:
                    job = self._queue.get_nowait()
                except queue.Empty:
                    break
                if job is None:
                    self._queue.put(None)  # after this batch: the thread ends at the next get
                    break
                batch.append(job)
            errors = self._write([write for write, _ in batch])
            loop = batch[0][1].get_loop()
            with suppress(RuntimeError):  # the loop is closed: nobody waits any more
                loop.call_soon_threadsafe(_settle, [done for _, done in batch], errors)

    def _write(self, writes: list[Callable[[], None] | tuple[Any, ...]]) -> list[BaseException | None]:
        """Run ``writes`` in one transaction, in order, the checkpoint rows queued one after another by one
        statement; the error of each (a failed commit is every one's)."""
        errors: list[BaseException | None] = []
        for is_row, group in itertools.groupby(writes, key=lambda write: isinstance(write, tuple)):
            jobs = list(group)
            if not is_row:
                for job in typing.cast(list[Callable[[], None]], jobs):
                    errors.append(_error_of(job))
                continue
            rows = typing.cast(list[tuple[Any, ...]], jobs)
            errors += [_error_of(partial(self._saver.insert, rows))] * len(rows)
        try:
            self._commit()
        except Exception as exc:
            with suppress(sqlite3.Error), self._saver.lock:
                self._saver.conn.rollback()
            return [exc] * len(writes)
        return errors

    def _commit(self) -> None:
        with self._saver.lock:
            self._saver.conn.commit()


def _error_of(write: Callable[[], None]) -> Exception | None:
    """Run ``write``; its error, if it failed (the other writes of the batch are still committed)."""
    try:
        write()
    except Exception as exc:
        return exc
    return None


def _settle(waiting: list[asyncio.Future[None]], errors: list[BaseException | None]) -> None:
    for done, error in zip(waiting, errors, strict=True):
        if done.done():
            continue  # its coroutine was cancelled; the write was made all the same
        if error is None:
            done.set_result(None)
        else:
            done.set_exception(error)


class LoopSqliteSaver(SqliteSaver):
    """:class:`SqliteSaver` answering its async methods on the event loop, its writes done by
    :class:`CheckpointWrites`."""

    serde = RedactingSerializer()

    def __init__(self, conn: sqlite3.Connection) -> None:
        super().__init__(conn)
        self.writes = CheckpointWrites(self)

    @contextmanager
    def cursor(self, transaction: bool = True) -> Iterator[sqlite3.Cursor]:
        """LangGraph's cursor; in the writes' thread it leaves the commit to the end of the batch."""
        if threading.current_thread() is not self.writes.thread:
            with super().cursor(transaction) as cur:
                yield cur
            return
        with self.lock:
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
        self.insert([self._row(config, checkpoint, metadata)])
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

    def insert(self, rows: Sequence[tuple[Any, ...]]) -> None:
        """Insert checkpoint rows (:meth:`_row`) through :meth:`cursor`."""
        with self.cursor() as cur:
            _insert_checkpoints(cur, rows)

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
        # Serialised here, on the loop: the writes' thread then needs the GIL only to hand the row to SQLite.
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
    """A checkpointer on the SQLite file ``path`` (WAL, ``synchronous=NORMAL``, a busy timeout), its writes
    done by a thread of its own while the block runs; every queued write is made before it ends."""
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
