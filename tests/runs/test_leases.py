"""A run's lease, with real processes: while a live process runs a run, resuming or repeating it is refused
naming that process, and of two resumes started at once exactly one runs (the agent is never asked twice)."""

from __future__ import annotations

import json
import signal
import socket
import sys
import time
from pathlib import Path

import pytest

from tests.runs._held_project import (
    CASES,
    LIMIT,
    calls,
    hold,
    make_project,
    release,
    shown,
    simulator,
    start,
    stored,
    turns,
    wait_held,
)

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="needs POSIX signals")

HELD = ("c2 two", "c3 two")


def test_a_run_its_owner_still_runs_cannot_be_resumed_or_repeated(tmp_path: Path) -> None:
    root = make_project(tmp_path)
    hold(root, *HELD)
    run = start(root, "run", "suite.yaml", "--concurrency", "2", "--seed", "1")
    try:
        wait_held(root, run, *HELD)
        owner = f"{run.pid}@{socket.gethostname()}"
        assert shown(root)["status"] == "running"
        owned = json.loads(simulator(root, "runs", "show", "latest", "--json").stdout)["owner"]
        assert (owned["pid"], owned["host"]) == (run.pid, socket.gethostname())
        listed = simulator(root, "runs", "list")
        assert "running" in listed.stdout
        show = simulator(root, "runs", "show", "latest")
        assert f"Running now: pid {run.pid} on {socket.gethostname()}" in show.stdout

        for command in (("runs", "resume", "latest"), ("runs", "repeat", "latest")):
            refused = simulator(root, *command)
            assert refused.returncode == 3, refused.stdout + refused.stderr
            assert f"is being run by {owner}" in refused.stderr
            assert "since " in refused.stderr
        # The refused commands asked the agent nothing: only the first run's turns are in the log.
        assert sorted(calls(root)) == sorted([*turns(0, 1), ("c2 one", 1), ("c2 two", 2), ("c3 one", 1), ("c3 two", 2)])
        assert len(json.loads(simulator(root, "runs", "list", "--json").stdout)) == 1  # no repeat was created
    finally:
        release(root)
    out, errors = run.communicate(timeout=LIMIT)
    assert run.returncode == 0, out + errors
    assert sorted(calls(root)) == sorted(turns(*range(CASES)))
    assert shown(root)["status"] == "completed"


def test_two_resumes_started_at_once_exactly_one_runs(tmp_path: Path) -> None:
    root = make_project(tmp_path)
    hold(root, *HELD)
    first = start(root, "run", "suite.yaml", "--concurrency", "2", "--seed", "1")
    wait_held(root, first, *HELD)
    first.send_signal(signal.SIGKILL)
    first.communicate(timeout=LIMIT)
    release(root)
    before = len(calls(root))

    # The winner waits at c5's first turn, holding the run, until the loser has been refused.
    hold(root, "c5 one")
    resumes = [start(root, "runs", "resume", "latest") for _ in range(2)]
    try:
        deadline = time.monotonic() + LIMIT
        while all(process.poll() is None for process in resumes):
            assert time.monotonic() < deadline, "neither resume ended"
            time.sleep(0.02)
        [loser] = [process for process in resumes if process.poll() is not None]
        [winner] = [process for process in resumes if process is not loser]
        out, errors = loser.communicate(timeout=LIMIT)
        assert loser.returncode == 3, out + errors
        assert f"is being run by {winner.pid}@{socket.gethostname()}" in errors
        wait_held(root, winner, "c5 one")
    finally:
        release(root)
    out, errors = winner.communicate(timeout=LIMIT)
    assert winner.returncode == 0, out + errors

    # The agent traffic of the resumes is one resume's: each remaining turn asked once.
    again = calls(root)[before:]
    assert sorted(again) == sorted([*turns(2, 3, first=2), *turns(4, 5, 6, 7)]), again
    keys = [key for key, _ in stored(root)]
    assert len(keys) == len(set(keys)) == CASES
    assert shown(root)["status"] == "completed"


def test_the_resume_command_exits_like_run_by_the_stored_fail_under(tmp_path: Path) -> None:
    root = make_project(tmp_path)
    (root / "suite.yaml").write_text(
        (root / "suite.yaml")
        .read_text(encoding="utf-8")
        .replace(
            '      - static_utterance: "c0 three"\n',
            '      - static_utterance: "c0 three"\n        checks: [{must_contain: [nowhere]}]\n',
        ),
        encoding="utf-8",
    )
    hold(root, *HELD)
    run = start(root, "run", "suite.yaml", "--concurrency", "2", "--seed", "1", "--fail-under", "99")
    wait_held(root, run, *HELD)
    run.kill()
    run.communicate(timeout=LIMIT)
    release(root)
    # 7 of 8 pass: 87.5% is below the stored --fail-under 99, so the resume exits 1, as `run` would have.
    resumed = simulator(root, "runs", "resume", "latest")
    assert resumed.returncode == 1, resumed.stdout + resumed.stderr
    assert "below --fail-under 99" in resumed.stderr
    # Resuming the completed run again runs nothing and still exits by the same rule (it used to exit 0).
    again = simulator(root, "runs", "resume", "latest")
    assert again.returncode == 1, again.stdout + again.stderr
    assert "nothing to resume" in again.stdout
