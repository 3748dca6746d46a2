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
            blocker = asyncio.create_task(saver.writes.run(_held_until(release)))
            await asyncio.sleep(0)  # let it queue

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
