"""The executor options are checked before anything is stored: Ray's own options without ``--executor ray`` are
refused, naming them and the fix; the executor a run asked for is stored with it (``runs resume`` reads it); the
cluster limiter (plain asyncio, tested without Ray) holds a limit across holders."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

import simulator
from simulator.cli import EXIT_INVALID, app
from simulator.errors import InputError

DEMO = Path(__file__).resolve().parents[2] / "suites" / "demo"


@pytest.mark.parametrize(
    ("options", "named"),
    [
        ({"ray_address": "127.0.0.1:6379"}, "--ray-address only apply"),
        ({"ray_workers": 4}, "--ray-workers only apply"),
        ({"ray_address": "auto", "ray_workers": 2}, "--ray-address and --ray-workers only apply"),
    ],
)
def test_ray_options_without_the_ray_executor_are_refused(options: dict[str, Any], named: str) -> None:
    with pytest.raises(InputError, match=named) as raised:
        simulator.plan(DEMO, **options)
    assert "add --executor ray" in str(raised.value)


def test_an_unknown_executor_is_exit_2_before_anything_is_stored(tmp_path: Path) -> None:
    db = tmp_path / "r.db"
    result = CliRunner().invoke(app, ["run", str(DEMO), "--db", str(db), "--executor", "spark"])
    assert result.exit_code == EXIT_INVALID
    assert "'spark' is not one of 'local', 'ray'" in " ".join(result.stderr.replace("│", " ").split())
    result = CliRunner().invoke(app, ["run", str(DEMO), "--db", str(db), "--ray-address", "auto"])
    assert result.exit_code == EXIT_INVALID
    assert "--ray-address only apply to Ray runs: add --executor ray" in result.stderr
    assert not db.exists()


def test_a_local_run_stores_its_executor(tmp_path: Path) -> None:
    outcome = simulator.run(DEMO, db=tmp_path / "r.db", seed=1, cases=["refund_within_30_days"])
    assert outcome.record.settings.executor == "local"
    assert outcome.record.settings.ray_address is None


def test_the_cluster_limiter_holds_a_limit_across_holders_and_gives_back_a_dead_holders_slots() -> None:
    from simulator.runner._ray import ClusterLimits

    async def scenario() -> None:
        limits = ClusterLimits()
        await limits.acquire("0:user", 2, "worker-a")
        await limits.acquire("0:user", 2, "worker-b")
        third = asyncio.create_task(limits.acquire("0:user", 2, "worker-b"))
        await asyncio.sleep(0)
        assert not third.done()  # two slots held on the whole cluster: the third waits, whoever asks
        await limits.acquire("0:judge", 1, "worker-b")  # another role has its own slots
        await limits.forget("worker-a")  # worker-a died holding a slot: it is given back
        await asyncio.wait_for(third, timeout=10)
        late = asyncio.create_task(limits.acquire("0:judge", 1, "worker-a"))
        await limits.release("0:judge", "worker-b")
        await asyncio.wait_for(late, timeout=10)  # granted after its holder died: not counted as held
        await limits.acquire("0:judge", 1, "worker-c")

    asyncio.run(scenario())
