"""Worlds where runs go: split into shards and merged back, and run as pytest items.

The airline example (examples/airline) is the world under test: its planted bug fails on its state check alone.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import simulator

EXAMPLE = Path(__file__).resolve().parent.parent.parent / "examples" / "airline"
BUGGY = "cancel_the_paris_flight"


def _worlds(results: list[simulator.StoredResult]) -> dict[str, tuple[str, dict[str, Any] | None]]:
    return {
        stored.key: (
            stored.outcome,
            stored.result.transcript.world.model_dump() if stored.result.transcript.world else None,
        )
        for stored in results
    }


def test_merged_shards_hold_the_same_worlds_as_the_unsharded_run(tmp_path: Path) -> None:
    suite = tmp_path / "airline"
    shutil.copytree(EXAMPLE, suite)
    db = tmp_path / "runs.db"
    whole = simulator.run([str(suite)], db=db, seed=3, repeat=2)
    shards = [simulator.run([str(suite)], db=db, seed=3, repeat=2, shard=f"{k}/3") for k in (1, 2, 3)]
    merged = simulator.merge_runs([shard.id for shard in shards], db=db)
    assert merged.complete
    worlds = _worlds(merged.outcome.results())
    assert worlds == _worlds(whole.results())
    # Each repeat of the planted bug changed the wrong booking in its own world, and only that.
    buggy = [world for key, world in worlds.items() if BUGGY in key]
    assert len(buggy) == 2
    for outcome, world in buggy:
        assert outcome == "fail"
        assert world is not None
        assert [(change["collection"], change["id"]) for change in world["changes"]] == [("bookings", "BK1003")]


def test_the_pytest_plugin_fails_the_planted_bug_with_the_state_diff(tmp_path: Path) -> None:
    shutil.copytree(EXAMPLE, tmp_path / "airline")
    (tmp_path / "pytest.ini").write_text("[pytest]\n", encoding="utf-8")
    env = {**os.environ, "LITELLM_OFFLINE_MODE": "true"}
    env.pop("SIMULATOR_DB", None)
    env.pop("PYTEST_ADDOPTS", None)
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "airline", "--sim-db", str(tmp_path / "r.db")],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    output = done.stdout
    assert done.returncode == 1, output + done.stderr
    assert "1 failed, 5 passed" in output
    assert f"airline/bookings.yaml::{BUGGY}" in output
    assert "bookings/BK1002 status: expected 'cancelled', is 'confirmed'" in output
    assert "bookings/BK1003 changed: status 'confirmed' -> 'cancelled'" in output
    assert "Traceback" not in output
