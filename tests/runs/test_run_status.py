"""How a run ends, through the runner API: completed, failed (any error but an interruption: the store could
not be written), interrupted (cancelled); the lease is given back in every case, and live mode is only what
the caller says."""

from __future__ import annotations

import asyncio
import textwrap
from pathlib import Path

import pytest

from simulator.errors import InputError, StoreError
from simulator.loading import load_suite
from simulator.models.run import RunRecord, RunSettings, StoredResult
from simulator.runner._execute import execute
from simulator.runner._plan import build_plan, new_record, snapshot_of
from simulator.store import RunStore

AGENT = """
import asyncio


async def respond(messages):
    if "slow" in messages[-1]["content"]:
        await asyncio.sleep(60)
    return "ok"
"""


class FullDiskStore(RunStore):
    """A store whose writes of results fail, as on a full disk."""

    def save_result(self, stored: StoredResult) -> None:
        raise StoreError(f"cannot store result {stored.key}: database or disk is full")


def _record(tmp_path: Path, store: RunStore, *, utterance: str = "hello", live: bool = False) -> RunRecord:
    (tmp_path / "status_agent.py").write_text(textwrap.dedent(AGENT), encoding="utf-8")
    (tmp_path / "suite.yaml").write_text(
        textwrap.dedent(
            f"""\
            name: statuses
            agent: {{type: python, callable: "status_agent:respond"}}
            cases:
              - kind: simulation
                name: one
                steps:
                  - static_utterance: {utterance}
            """
        ),
        encoding="utf-8",
    )
    loaded = load_suite(tmp_path / "suite.yaml")
    settings = RunSettings(paths=["suite.yaml"], seed=1, live=live, checkpoints=False)
    plan = build_plan([loaded], settings)
    record = new_record(store.new_run_id(), [snapshot_of(loaded, "suite.yaml")], settings, plan)
    store.create_run(record)
    return record


def test_a_run_ends_completed_and_gives_its_lease_back(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    with RunStore(tmp_path / "runs.db") as store:
        record = _record(tmp_path, store)
        done = asyncio.run(execute(store, record))
        assert (done.status, done.totals and done.totals.passed) == ("completed", 1)
        assert done.finished is not None
        assert store.owner(record.id) is None


def test_a_store_that_cannot_be_written_ends_the_run_failed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    with FullDiskStore(tmp_path / "runs.db") as store:
        record = _record(tmp_path, store)
        with pytest.raises(StoreError, match="disk is full"):
            asyncio.run(execute(store, record))
        assert store.get_run(record.id).status == "failed"
        assert store.owner(record.id) is None


def test_a_cancelled_run_ends_interrupted(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    with RunStore(tmp_path / "runs.db") as store:
        record = _record(tmp_path, store, utterance="slow")

        async def cancel_when_running() -> None:
            task = asyncio.create_task(execute(store, record))
            while store.owner(record.id) is None:  # the lease is taken before any conversation starts
                await asyncio.sleep(0.01)
            task.cancel()
            with pytest.raises(asyncio.CancelledError):
                await task

        asyncio.run(asyncio.wait_for(cancel_when_running(), timeout=60))
        assert store.get_run(record.id).status == "interrupted"
        assert store.owner(record.id) is None


def test_the_runner_is_live_only_when_its_caller_says_so(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    with RunStore(tmp_path / "runs.db") as store:
        live = _record(tmp_path, store, live=True)
        with pytest.raises(InputError, match="needs --live again"):
            asyncio.run(execute(store, live))  # the stored setting alone never turns live mode on
        assert store.owner(live.id) is None
        assert asyncio.run(execute(store, live, live=True)).status == "completed"
        test_mode = _record(tmp_path, store)
        with pytest.raises(InputError, match="cannot continue with --live"):
            asyncio.run(execute(store, test_mode, live=True))
