"""A project whose agent can be held at a chosen turn, for tests that stop, kill or race real processes.

The agent logs every call (utterance, turn, pid) to ``calls.log``. When a file named after the utterance
exists in ``hold/`` (``hold/c2_two``), the agent touches ``held/c2_two`` and waits until the hold file is
removed (60 s at most, so a test that forgets to release never hangs). A test therefore acts when the run is
in a known state (these conversations waiting at these turns, everything before them stored and
checkpointed), never after a guessed delay.

Cases ``case_0`` .. ``case_7`` each say ``c<i> one``, ``c<i> two``, ``c<i> three``. With ``--concurrency 2``
the conversations start in plan order as slots free up, so holding ``c2 two`` and ``c3 two`` stops the run
with exactly ``case_0`` and ``case_1`` stored.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import sqlite3
import subprocess
import sys
import textwrap
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

CASES = 8
#: Seconds any wait in these tests may take before it fails (never reached when things work).
LIMIT = 90.0

AGENT_CODE = """
import asyncio
import os
from pathlib import Path

HERE = Path(__file__).parent


async def respond(messages, *, turn):
    user = messages[-1]["content"] if messages else ""
    with (HERE / "calls.log").open("a") as log:
        log.write(f"{user}|{turn}|{os.getpid()}\\n")
    hold = HERE / "hold" / user.replace(" ", "_")
    if hold.exists():
        (HERE / "held" / hold.name).touch()
        for _ in range(3000):
            if not hold.exists():
                break
            await asyncio.sleep(0.02)
    return f"noted {user}"
"""


def make_project(root: Path) -> Path:
    (root / ".git").mkdir()
    (root / "hold").mkdir()
    (root / "held").mkdir()
    (root / "held_agent.py").write_text(textwrap.dedent(AGENT_CODE), encoding="utf-8")
    (root / "agent.yaml").write_text("type: python\ncallable: held_agent:respond\n", encoding="utf-8")
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
    (root / "suite.yaml").write_text(f"name: held\ncases:{cases}", encoding="utf-8")
    return root


def hold(root: Path, *utterances: str) -> None:
    for text in utterances:
        (root / "hold" / text.replace(" ", "_")).touch()


def release(root: Path) -> None:
    for path in (root / "hold").iterdir():
        path.unlink()


def environment(root: Path, *, db_in_env: bool = True) -> dict[str, str]:
    env = {key: value for key, value in os.environ.items() if key != "SIMULATOR_DB"}
    env["LITELLM_OFFLINE_MODE"] = "true"
    if db_in_env:
        env["SIMULATOR_DB"] = str(root / "runs.db")
    return env


def start(root: Path, *args: str, db_in_env: bool = True) -> subprocess.Popen[str]:
    with ctrl_c_heard():
        return subprocess.Popen(
            [sys.executable, "-m", "simulator", *args],
            cwd=root, env=environment(root, db_in_env=db_in_env),
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        )  # fmt: skip


@contextlib.contextmanager
def ctrl_c_heard() -> Iterator[None]:
    """The run started inside hears Ctrl-C (SIGINT) as a terminal's foreground command does, however pytest was
    started: a shell starts a background command (``pytest &``, ``nohup``) with SIGINT ignored, and a child
    inherits an ignored signal; a handled one is reset to its default when the child starts."""
    main = threading.current_thread() is threading.main_thread()
    ignored = main and signal.getsignal(signal.SIGINT) is signal.SIG_IGN
    if ignored:
        signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        yield
    finally:
        if ignored:
            signal.signal(signal.SIGINT, signal.SIG_IGN)


def simulator(root: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "simulator", *args],
        cwd=root, env=environment(root), capture_output=True, text=True, timeout=LIMIT, check=False,
    )  # fmt: skip


def wait_held(root: Path, process: subprocess.Popen[str], *utterances: str) -> None:
    """Wait until the agent is waiting at each of these utterances (the run is then in a known state)."""
    deadline = time.monotonic() + LIMIT
    markers = [root / "held" / text.replace(" ", "_") for text in utterances]
    while not all(marker.exists() for marker in markers):
        if process.poll() is not None:
            raise AssertionError(f"the process ended before holding {utterances}: {process.communicate()}")
        if time.monotonic() > deadline:
            process.kill()
            raise AssertionError(f"not held at {utterances} in time: {process.communicate()}")
        time.sleep(0.02)


def wait_until(condition: Any, what: str) -> None:
    deadline = time.monotonic() + LIMIT
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"{what}: not in time")
        time.sleep(0.02)


def stored(root: Path) -> list[tuple[str, str]]:
    """(key, finished) of every stored result, in insertion order."""
    db = root / "runs.db"
    if not db.exists():
        return []
    with sqlite3.connect(db, timeout=10) as connection:
        try:
            return list(connection.execute('SELECT "key", finished FROM results ORDER BY id'))
        except sqlite3.OperationalError:
            return []


def stored_status(root: Path) -> str:
    """The status column as the runner wrote it (not as readers are shown it)."""
    with sqlite3.connect(root / "runs.db", timeout=10) as connection:
        [(status,)] = list(connection.execute("SELECT status FROM runs ORDER BY created DESC LIMIT 1"))
    return str(status)


def calls(root: Path) -> list[tuple[str, int]]:
    """(utterance, turn) of every call the agent got, in order."""
    path = root / "calls.log"
    if not path.exists():
        return []
    return [(text, int(turn)) for text, turn, _ in (line.split("|") for line in path.read_text().splitlines())]


def turns(*cases: int, first: int = 1) -> list[tuple[str, int]]:
    """The calls a whole conversation makes, from turn ``first``: ``[("c4 one", 1), ("c4 two", 2), ...]``."""
    words = ["one", "two", "three"]
    return [(f"c{i} {words[n - 1]}", n) for i in cases for n in range(first, 4)]


def shown(root: Path, ref: str = "latest") -> dict[str, Any]:
    done = simulator(root, "runs", "show", ref, "--json")
    assert done.returncode == 0, done.stdout + done.stderr
    run: dict[str, Any] = json.loads(done.stdout)["run"]
    return run


def case_of(key: str) -> str:
    return key.split(":")[1]
