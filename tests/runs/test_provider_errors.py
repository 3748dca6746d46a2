"""Provider failures during a run end as retries or as `error` cases, and the run still completes."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

from simulator.llm import (
    FakeScript,
    LLMClient,
    fake_rate_limit,
    fake_server_error,
    fake_timeout,
)
from simulator.loading import validate_paths
from simulator.models.run import RunSettings
from simulator.runner._case import model_roles
from simulator.runner._execute import execute
from simulator.runner._plan import build_plan, new_record, snapshot_of
from simulator.store import RunStore


def move(text: str) -> dict[str, Any]:
    return {"message": text, "done": False, "reason": ""}


async def _no_wait(delay: float) -> None:
    return None


def test_retries_and_errors_through_the_fake_provider(tmp_path: Path) -> None:
    (tmp_path / ".git").mkdir()
    cases = "".join(
        f"  - kind: scenario\n    name: {name}\n    goal: Ask where order ORD-10042 is.\n    max_turns: 1\n"
        for name in ("a_rate_limited", "b_server_down", "c_slow", "d_malformed")
    )
    (tmp_path / "suite.yaml").write_text(
        f"name: flaky\nagent:\n  type: python\n  callable: simulator.demo.shop:respond\ncases:\n{cases}",
        encoding="utf-8",
    )
    report = validate_paths([tmp_path / "suite.yaml"])
    assert report.ok, report.errors
    settings = RunSettings(user_model="fake/user", concurrency=1, seed=3, cache=False)
    plan = build_plan(report.suites, settings)
    script = FakeScript()
    script.enqueue("user", fake_rate_limit(), move("Where is ORD-10042?"))  # a: retried, then fine
    script.enqueue("user", *[fake_server_error() for _ in range(4)])  # b: 4 attempts, all fail
    script.enqueue("user", fake_timeout(), move("Where is ORD-10042?"))  # c: retried, then fine
    script.enqueue("user", "not json", "still not json", "{}")  # d: malformed three times
    client = LLMClient(
        model_roles(report.suites[0], RunSettings(user_model="fake/user")), fake_script=script, sleep=_no_wait
    )
    with RunStore(tmp_path / "runs.db") as store:
        record = new_record(store.new_run_id(), [snapshot_of(report.suites[0], "suite.yaml")], settings, plan)
        store.create_run(record)
        done = asyncio.run(execute(store, record, clients={0: client}, checkpoints=False))
        results = {r.case: r for r in store.results(record.id)}
    assert done.status == "completed"
    assert script.pending() == 0
    assert results["a_rate_limited"].outcome != "error"
    assert results["c_slow"].outcome != "error"
    assert results["b_server_down"].outcome == "error"
    assert "failed after 4 attempts" in results["b_server_down"].result.reasons[0]
    assert results["d_malformed"].outcome == "error"
    assert "gave no valid UserMove JSON in 3 attempts" in results["d_malformed"].result.reasons[0]
    assert done.totals is not None
    assert (done.totals.total, done.totals.error) == (4, 2)
