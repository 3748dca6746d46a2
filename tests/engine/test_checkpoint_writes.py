"""The runner's checkpointer writes from a thread of its own, several writes per transaction: each awaited write
is in the file when its await returns, a failed write fails only its own caller, and the writes still queued
when the checkpointer closes are made."""

from __future__ import annotations

import asyncio
import sqlite3
import threading
from contextlib import closing
from pathlib import Path
from typing import Any

import pytest
from langgraph.checkpoint.base import empty_checkpoint

from simulator.engine import open_checkpointer


def _config(thread: str) -> Any:
    return {"configurable": {"thread_id": thread, "checkpoint_ns": ""}}


def _held_until(event: threading.Event) -> Any:
    """A write that keeps the writes' thread busy until ``event`` is set (the next writes queue behind it)."""

    def write() -> None:
        event.wait(timeout=30)

    return write


async def _holding(saver: Any, release: threading.Event) -> asyncio.Task[None]:
    """Queue a write that holds the writes' thread until ``release`` is set, and return once the thread runs it:
    the writes queued from then on wait together for the next batch (were the thread still taking what is
    queued, on a busy machine it could take some of them into the held batch)."""
    running = threading.Event()

    def write() -> None:
        running.set()
        release.wait(timeout=30)

    blocker = asyncio.create_task(saver.writes.run(write))
    for _ in range(3000):
        if running.is_set():
            break
        await asyncio.sleep(0.01)
    assert running.is_set(), "the writes' thread never ran the held write"
    return blocker


def _threads_in(path: Path) -> list[str]:
    """The thread ids with a checkpoint, read through a connection of its own (what another process sees)."""
    with closing(sqlite3.connect(path)) as conn:
        return sorted(row[0] for row in conn.execute("SELECT DISTINCT thread_id FROM checkpoints"))


def test_an_awaited_checkpoint_is_committed_when_the_await_returns(tmp_path: Path) -> None:
    path = tmp_path / "c.db"

    async def go() -> list[list[str]]:
        seen = []
        async with open_checkpointer(path) as saver:
            for thread in ("a", "b"):
                await saver.aput(_config(thread), empty_checkpoint(), {}, {})
                seen.append(_threads_in(path))
            await saver.adelete_thread("a")
            seen.append(_threads_in(path))
        return seen

    assert asyncio.run(go()) == [["a"], ["a", "b"], ["b"]]


def test_writes_queued_together_share_a_transaction_and_a_failed_one_fails_only_its_caller(tmp_path: Path) -> None:
    path = tmp_path / "c.db"
    commits: list[int] = []

    async def go() -> list[Any]:
        async with open_checkpointer(path) as saver:
            connection = saver.conn
            release = threading.Event()
            # The writes' thread waits in a first write, so the next ones queue up behind it: one batch.
            blocker = await _holding(saver, release)

            def broken() -> None:
                raise sqlite3.OperationalError("disk I/O error")

            tasks = [
                asyncio.create_task(saver.aput(_config("one"), empty_checkpoint(), {}, {})),
                asyncio.create_task(saver.writes.run(broken)),
                asyncio.create_task(saver.aput(_config("two"), empty_checkpoint(), {}, {})),
            ]
            await asyncio.sleep(0)  # let them queue behind the first
            connection.set_trace_callback(lambda statement: commits.append(1) if statement == "COMMIT" else None)
            release.set()
            await blocker
            return list(await asyncio.gather(*tasks, return_exceptions=True))

    first, failed, second = asyncio.run(go())
    assert first["configurable"]["thread_id"] == "one"
    assert second["configurable"]["thread_id"] == "two"
    assert isinstance(failed, sqlite3.OperationalError)
    assert _threads_in(path) == ["one", "two"]
    assert len(commits) == 1


def test_writes_still_queued_when_the_checkpointer_closes_are_made(tmp_path: Path) -> None:
    """A cancelled conversation (Ctrl-C) no longer waits for its last checkpoint; the checkpoint is written all the
    same, as it was when the write ran on the event loop before the cancel could land."""
    path = tmp_path / "c.db"

    async def go() -> None:
        async with open_checkpointer(path) as saver:
            release = threading.Event()
            blocker = asyncio.create_task(saver.writes.run(_held_until(release)))
            waiting = asyncio.create_task(saver.aput(_config("late"), empty_checkpoint(), {}, {}))
            await asyncio.sleep(0)
            waiting.cancel()
            with pytest.raises(asyncio.CancelledError):
                await waiting
            release.set()
            await blocker

    asyncio.run(go())
    assert _threads_in(path) == ["late"]


@pytest.mark.parametrize("count", [3, 130])
def test_checkpoints_queued_one_after_another_go_in_one_statement(tmp_path: Path, count: int) -> None:
    """The writes' thread waits for the GIL after each call into SQLite: the checkpoints of a batch are inserted
    by one statement (of at most 128 rows, within old SQLite's 999 parameters), not one each."""
    path = tmp_path / "c.db"
    statements: list[str] = []

    async def go() -> None:
        async with open_checkpointer(path) as saver:
            release = threading.Event()
            blocker = await _holding(saver, release)
            tasks = [
                asyncio.create_task(saver.aput(_config(f"t{i:03d}"), empty_checkpoint(), {}, {})) for i in range(count)
            ]
            await asyncio.sleep(0)
            saver.conn.set_trace_callback(statements.append)
            release.set()
            await blocker
            await asyncio.gather(*tasks)

    asyncio.run(go())
    inserts = [s for s in statements if s.startswith("INSERT OR REPLACE INTO checkpoints")]
    assert len(inserts) == (count + 127) // 128
    assert statements.count("COMMIT") == 1
    assert _threads_in(path) == [f"t{i:03d}" for i in range(count)]
