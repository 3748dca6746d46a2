"""A run killed mid-way (SIGKILL), interrupted (Ctrl-C) or terminated (SIGTERM) resumes with nothing lost and
nothing run twice, and its status says what happened.

Every signal is sent while the agent is held at known turns (see ``_held_project``), so what was stored and
checkpointed at that moment is exact, whatever the machine's speed: no test here depends on when a signal lands.
"""

from __future__ import annotations

import signal
import subprocess
import sys
from pathlib import Path

import pytest

from tests.runs._held_project import (
    CASES,
    LIMIT,
    calls,
    case_of,
    hold,
    make_project,
    release,
    shown,
    simulator,
    start,
    stored,
    stored_status,
    turns,
    wait_held,
    wait_until,
)

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="needs POSIX signals")

HELD = ("c2 two", "c3 two")
#: What the agent was asked before the signal: case_0 and case_1 whole, case_2 and case_3 up to their held turn.
BEFORE = [*turns(0, 1), ("c2 one", 1), ("c2 two", 2), ("c3 one", 1), ("c3 two", 2)]


def _held_run(root: Path, *extra: str, db_in_env: bool = True) -> subprocess.Popen[str]:
    """A run waiting at the held turns: case_0 and case_1 stored, case_2 and case_3 one turn in flight each."""
    hold(root, *HELD)
    run = start(root, "run", "suite.yaml", "--concurrency", "2", "--seed", "1", *extra, db_in_env=db_in_env)
    wait_held(root, run, *HELD)
    # A conversation frees its place as soon as it ends, and its result is written a moment later: on a busy
    # machine case_3 can be held before case_1's result is stored.
    wait_until(lambda: len(stored(root)) == 2, "case_0 and case_1 stored")
    return run


def test_sigkill_then_resume_loses_nothing_and_runs_nothing_twice(tmp_path: Path) -> None:
    root = make_project(tmp_path)
    run = _held_run(root)
    run.kill()
    run.communicate(timeout=LIMIT)
    before = dict(stored(root))
    assert sorted(case_of(key) for key in before) == ["case_0", "case_1"]
    assert sorted(calls(root)) == sorted(BEFORE)
    # Nothing runs it any more: readers see it interrupted (its owner's pid is gone), not running forever.
    assert stored_status(root) == "running"
    assert shown(root)["status"] == "interrupted"

    release(root)
    resume = simulator(root, "runs", "resume", "latest")
    assert resume.returncode == 0, resume.stdout + resume.stderr
    after = stored(root)
    keys = [key for key, _ in after]
    # Every planned conversation is stored exactly once; the ones stored before the kill are untouched.
    assert len(keys) == len(set(keys)) == CASES, (before, after)
    assert all(dict(after)[key] == finished for key, finished in before.items()), (before, after)
    # The agent was asked exactly: the two turns in flight at the kill (their replies were never checkpointed),
    # the rest of those two conversations, and the four conversations not started. Nothing finished, nothing
    # before the turn a conversation stopped at, is asked again.
    again = calls(root)[len(BEFORE) :]
    assert sorted(again) == sorted([*turns(2, 3, first=2), *turns(4, 5, 6, 7)]), again
    run_shown = shown(root)
    assert run_shown["status"] == "completed"
    assert run_shown["totals"]["passed"] == CASES


def test_ctrl_c_stops_cleanly_with_exit_130_and_a_resumable_run(tmp_path: Path) -> None:
    root = make_project(tmp_path)
    run = _held_run(root)
    run.send_signal(signal.SIGINT)
    out, errors = run.communicate(timeout=LIMIT)
    assert run.returncode == 130, out + errors
    # SIMULATOR_DB was set for the run: the command printed names the store, for a shell where it is not set.
    assert f"continue with: simulator runs resume {shown(root)['id']} --db {root / 'runs.db'}" in errors
    assert stored_status(root) == "interrupted"
    assert sorted(case_of(key) for key, _ in stored(root)) == ["case_0", "case_1"]
    release(root)
    resume = simulator(root, "runs", "resume", "latest")
    assert resume.returncode == 0, resume.stdout + resume.stderr
    keys = [key for key, _ in stored(root)]
    assert len(keys) == len(set(keys)) == CASES


def test_sigterm_is_handled_like_ctrl_c_with_exit_143(tmp_path: Path) -> None:
    root = make_project(tmp_path)
    db = root / "runs.db"
    run = _held_run(root, "--db", str(db), db_in_env=False)
    run.send_signal(signal.SIGTERM)
    out, errors = run.communicate(timeout=LIMIT)
    assert run.returncode == 143, out + errors
    run_id = shown(root)["id"]
    assert f"terminated (SIGTERM): 2 of {CASES} conversation(s) stored" in errors
    assert f"continue with: simulator runs resume {run_id} --db {db}" in errors
    assert "Traceback" not in errors
    # The runner itself wrote the status on its way out (not only readers inferring it from a dead pid).
    assert stored_status(root) == "interrupted"
    release(root)
    resume = simulator(root, "runs", "resume", run_id)
    assert resume.returncode == 0, resume.stdout + resume.stderr
    assert shown(root)["status"] == "completed"
    assert sorted(calls(root)[len(BEFORE) :]) == sorted([*turns(2, 3, first=2), *turns(4, 5, 6, 7)])
