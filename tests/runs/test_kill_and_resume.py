"""A run killed mid-way (SIGKILL) or interrupted (Ctrl-C) resumes with nothing lost and nothing run twice."""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

CASES = 8

AGENT_CODE = """
import time
from pathlib import Path

LOG = Path(__file__).with_name("calls.log")


def respond(messages, *, turn):
    user = messages[-1]["content"] if messages else ""
    with LOG.open("a") as log:
        log.write(f"{user}|{turn}\\n")
    time.sleep(0.25)
    return f"noted {user}"
"""


def _project(root: Path) -> Path:
    (root / ".git").mkdir()
    (root / "slow_agent.py").write_text(textwrap.dedent(AGENT_CODE), encoding="utf-8")
    (root / "agent.yaml").write_text("type: python\ncallable: slow_agent:respond\n", encoding="utf-8")
    cases = "".join(
        f"""
  - kind: simulation
    name: case_{i}
    steps:
      - static_utterance: "c{i} one"
      - static_utterance: "c{i} two"
      - static_utterance: "c{i} three"
"""
        for i in range(CASES)
    )
    (root / "suite.yaml").write_text(f"name: slow\ncases:{cases}", encoding="utf-8")
    return root


def _simulator(root: Path, *args: str) -> subprocess.Popen[str]:
    env = {**os.environ, "LITELLM_OFFLINE_MODE": "true", "SIMULATOR_DB": str(root / "runs.db")}
    return subprocess.Popen(
        [sys.executable, "-m", "simulator", *args],
        cwd=root, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip


def _stored(root: Path) -> list[tuple[str, str]]:
    db = root / "runs.db"
    if not db.exists():
        return []
    with sqlite3.connect(db, timeout=10) as connection:
        try:
            return list(connection.execute('SELECT "key", finished FROM results ORDER BY id'))
        except sqlite3.OperationalError:
            return []


def _wait_for(root: Path, count: int, process: subprocess.Popen[str], limit: float = 60.0) -> None:
    deadline = time.monotonic() + limit
    while len(_stored(root)) < count:
        if process.poll() is not None:
            raise AssertionError(f"the run ended early: {process.communicate()}")
        if time.monotonic() > deadline:
            process.kill()
            raise AssertionError("no results in time")
        time.sleep(0.05)


def _calls(root: Path) -> list[tuple[str, int]]:
    lines = (root / "calls.log").read_text(encoding="utf-8").splitlines()
    return [(line.rsplit("|", 1)[0], int(line.rsplit("|", 1)[1])) for line in lines]


@pytest.mark.skipif(not hasattr(signal, "SIGKILL"), reason="needs POSIX signals")
def test_sigkill_then_resume_loses_nothing_and_runs_nothing_twice(tmp_path: Path) -> None:
    root = _project(tmp_path)
    run = _simulator(root, "run", "suite.yaml", "--concurrency", "2", "--seed", "1")
    _wait_for(root, 3, run)
    run.send_signal(signal.SIGKILL)
    run.communicate(timeout=30)
    before = dict(_stored(root))
    calls_before = _calls(root)
    assert 3 <= len(before) < CASES, before

    resume = _simulator(root, "runs", "resume", "latest")
    out, errors = resume.communicate(timeout=120)
    assert resume.returncode == 0, out + errors
    after = _stored(root)
    keys = [key for key, _ in after]
    # Every planned conversation is stored exactly once; the ones stored before the kill are untouched.
    assert len(keys) == len(set(keys)) == CASES, (before, after)
    assert all(dict(after)[key] == finished for key, finished in before.items()), (before, after)
    # No turn of a conversation that had finished before the kill was asked of the agent again.
    finished_cases = {key.split(":")[1].removeprefix("case_") for key in before}
    again = [(text, turn) for text, turn in _calls(root)[len(calls_before) :] if text.split()[0][1:] in finished_cases]
    assert again == [], (before, calls_before, _calls(root))
    # The conversations cut mid-way continued at the turn they stopped: only a turn that was in flight at the
    # kill (its reply not yet checkpointed) is asked again, never the turns before it.
    calls = _calls(root)
    repeated = [call for call in set(calls) if calls.count(call) > 1]
    assert len(repeated) <= 2, (calls_before, calls)  # --concurrency 2: one turn in flight per conversation
    for text, turn in repeated:
        case = text.split()[0]
        last_before_kill = [c for c in calls_before if c[0].split()[0] == case][-1]
        assert (text, turn) == last_before_kill, (calls_before, calls)
    shown = json.loads(subprocess.run(
        [sys.executable, "-m", "simulator", "runs", "show", "latest", "--json"],
        cwd=root, env={**os.environ, "SIMULATOR_DB": str(root / "runs.db")}, capture_output=True, text=True,
        check=True,
    ).stdout)  # fmt: skip
    assert shown["run"]["status"] == "completed"
    assert shown["run"]["totals"]["passed"] == CASES


@pytest.mark.skipif(not hasattr(signal, "SIGINT"), reason="needs POSIX signals")
def test_ctrl_c_stops_cleanly_with_exit_130_and_a_resumable_run(tmp_path: Path) -> None:
    root = _project(tmp_path)
    run = _simulator(root, "run", "suite.yaml", "--concurrency", "2", "--seed", "1")
    _wait_for(root, 2, run)
    run.send_signal(signal.SIGINT)
    out, errors = run.communicate(timeout=60)
    assert run.returncode == 130, out + errors
    assert "continue with: simulator runs resume" in errors
    with sqlite3.connect(root / "runs.db") as connection:
        [(status,)] = list(connection.execute("SELECT status FROM runs"))
    assert status == "interrupted"
    resume = _simulator(root, "runs", "resume", "latest")
    out, errors = resume.communicate(timeout=120)
    assert resume.returncode == 0, out + errors
    keys = [key for key, _ in _stored(root)]
    assert len(keys) == len(set(keys)) == CASES
