"""The runner's checkpointer commits each write on the event loop before its await returns; a write that would wait
for another process's lock on the file waits in a thread instead while the loop goes on, and is made even when its
caller is cancelled; the log is checkpointed into the file by that thread, never on the loop."""

from __future__ import annotations

import asyncio
import sqlite3
import threading
from contextlib import closing
from pathlib import Path
from typing import Any

import pytest
from langgraph.checkpoint.base import empty_checkpoint

from simulator.engine import _checkpoint, open_checkpointer


def _config(thread: str) -> Any:
    return {"configurable": {"thread_id": thread, "checkpoint_ns": ""}}


def _checkpoint_of(size: int = 0) -> Any:
    checkpoint = empty_checkpoint()
    checkpoint["channel_values"] = {"text": "x" * size}
    return checkpoint


def _threads_in(path: Path) -> list[str]:
    """The thread ids with a checkpoint, read through a connection of its own (what another process sees)."""
    with closing(sqlite3.connect(path)) as conn:
        return sorted(row[0] for row in conn.execute("SELECT DISTINCT thread_id FROM checkpoints"))


def _writers(saver: Any) -> list[str]:
    """Record the name of the thread that runs each ``COMMIT`` on the saver's connection."""
    seen: list[str] = []

    def trace(statement: str) -> None:
        if statement == "COMMIT":
            seen.append(threading.current_thread().name)

    saver.conn.set_trace_callback(trace)
    return seen


def test_an_awaited_checkpoint_is_committed_on_the_loop_when_the_await_returns(tmp_path: Path) -> None:
    path = tmp_path / "c.db"

    async def go() -> tuple[list[list[str]], list[str], int]:
        seen = []
        async with open_checkpointer(path) as saver:
            writers = _writers(saver)
            (autocheckpoint,) = saver.conn.execute("PRAGMA wal_autocheckpoint").fetchone()
            for thread in ("a", "b"):
                await saver.aput(_config(thread), empty_checkpoint(), {}, {})
                seen.append(_threads_in(path))
            await saver.adelete_thread("a")
            seen.append(_threads_in(path))
        return seen, writers, autocheckpoint

    seen, writers, autocheckpoint = asyncio.run(go())
    assert seen == [["a"], ["a", "b"], ["b"]]
    assert set(writers) == {threading.main_thread().name}
    assert len(writers) == 3
    assert autocheckpoint == 0  # the loop's connection never syncs the log into the file


def test_a_write_the_file_lock_holds_up_waits_in_a_thread_while_the_loop_goes_on(tmp_path: Path) -> None:
    """Another process holds the file's write lock: the writes wait for it in the checkpointer's thread, in order,
    while the event loop keeps running; once it is free, writes are made on the loop again."""
    path = tmp_path / "c.db"

    async def go() -> dict[str, Any]:
        async with open_checkpointer(path) as saver:
            writers = _writers(saver)
            other = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
            other.execute("BEGIN IMMEDIATE")  # the write lock, as a second run on the same file would hold it
            first = asyncio.create_task(saver.aput(_config("one"), _checkpoint_of(), {}, {}))
            second = asyncio.create_task(saver.aput(_config("two"), _checkpoint_of(), {}, {}))
            ticks = 0
            for _ in range(30):
                await asyncio.sleep(0.01)
                ticks += 1
            held = {"first": first.done(), "second": second.done()}
            other.execute("COMMIT")
            other.close()
            await asyncio.wait_for(asyncio.gather(first, second), timeout=30)
            waited = list(writers)
            writers.clear()
            await saver.aput(_config("three"), _checkpoint_of(), {}, {})
            return {"ticks": ticks, "held": held, "waited": waited, "after": list(writers)}

    seen = asyncio.run(go())
    assert seen["ticks"] == 30
    assert seen["held"] == {"first": False, "second": False}
    assert len(seen["waited"]) == 2
    assert all(name.startswith("simulator-checkpoint-writes") for name in seen["waited"])
    assert seen["after"] == [threading.main_thread().name]
    assert _threads_in(path) == ["one", "three", "two"]


def test_a_failed_write_fails_its_caller_and_is_rolled_back_and_the_next_is_made(tmp_path: Path) -> None:
    path = tmp_path / "c.db"

    async def go() -> BaseException | None:
        async with open_checkpointer(path) as saver:
            row = saver._row(_config("half"), empty_checkpoint(), {})

            def broken() -> None:
                saver.insert(row)
                raise sqlite3.OperationalError("disk I/O error")

            failed = None
            try:
                await saver.writes.run(broken)
            except sqlite3.OperationalError as exc:
                failed = exc
            await saver.aput(_config("next"), empty_checkpoint(), {}, {})
            return failed

    assert isinstance(asyncio.run(go()), sqlite3.OperationalError)
    assert _threads_in(path) == ["next"]


def test_a_cancelled_callers_write_is_made_before_the_checkpointer_closes(tmp_path: Path) -> None:
    """A cancelled conversation (Ctrl-C) no longer waits for its last checkpoint; the checkpoint is written all the
    same once the lock is free, before the checkpointer closes."""
    path = tmp_path / "c.db"

    async def go() -> None:
        async with open_checkpointer(path) as saver:
            other = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
            other.execute("BEGIN IMMEDIATE")
            waiting = asyncio.create_task(saver.aput(_config("late"), _checkpoint_of(), {}, {}))
            await asyncio.sleep(0.05)
            waiting.cancel()
            with pytest.raises(asyncio.CancelledError):
                await waiting

            def release() -> None:
                other.execute("COMMIT")
                other.close()

            threading.Timer(0.2, release).start()

    asyncio.run(go())
    assert _threads_in(path) == ["late"]


@pytest.mark.parametrize("thread_checkpoints", [True, False])
def test_the_log_is_checkpointed_into_the_file_by_the_thread_never_by_the_loop(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, thread_checkpoints: bool
) -> None:
    """6 MB of checkpoints: more than SQLite's own automatic checkpoint of the log (1,000 pages) would wait for.
    The database file grows while the checkpointer is open only through the thread's checkpoints."""
    path = tmp_path / "c.db"
    monkeypatch.setattr(_checkpoint, "_COMMITS_PER_WAL_CHECKPOINT", 10)
    ran_in: list[str] = []
    original = _checkpoint.CheckpointWrites._checkpoint_wal

    def checkpoint_wal(self: Any) -> None:
        ran_in.append(threading.current_thread().name)
        if thread_checkpoints:
            original(self)

    monkeypatch.setattr(_checkpoint.CheckpointWrites, "_checkpoint_wal", checkpoint_wal)

    async def go() -> int:
        async with open_checkpointer(path) as saver:
            for i in range(40):
                await saver.aput(_config(f"t{i}"), _checkpoint_of(150_000), {}, {})
            saver.writes._pool().submit(lambda: None).result()  # the thread's checkpoints are done
            return path.stat().st_size

    size = asyncio.run(go())
    assert len(ran_in) == 4
    assert all(name.startswith("simulator-checkpoint-writes") for name in ran_in)
    if thread_checkpoints:
        assert size > 4_000_000
    else:
        assert size < 100_000
    assert len(_threads_in(path)) == 40
