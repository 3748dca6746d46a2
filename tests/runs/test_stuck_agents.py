"""An agent stuck past its timeout ends its case as ``error``, and the process still exits with its exit code
(issue 10, item 3: the worker thread used to keep ``asyncio.run``, and so a CI job, waiting forever)."""

from __future__ import annotations

import os
import sqlite3
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

STUCK_PYTHON = """
import time


def respond(messages):
    time.sleep(3600)
    return "never"
"""

STUCK_GRAPH = """
import time

from langgraph.graph import END, START, MessagesState, StateGraph


def node(state):
    time.sleep(3600)
    return {"messages": [("ai", "never")]}


builder = StateGraph(MessagesState)
builder.add_node("node", node)
builder.add_edge(START, "node")
builder.add_edge("node", END)
graph = builder.compile()
"""

AGENTS = {
    "python": ("stuck_agent.py", STUCK_PYTHON, "type: python\ncallable: stuck_agent:respond\ntimeout: 0.5\n"),
    "langgraph": ("stuck_graph.py", STUCK_GRAPH, "type: langgraph\ngraph: stuck_graph:graph\ntimeout: 0.5\n"),
}
#: Seconds the whole command may take; it finishes in 2-5 s (most of it importing langgraph).
LIMIT = 30


def project(root: Path, kind: str) -> Path:
    (root / ".git").mkdir()
    module, code, agent = AGENTS[kind]
    (root / module).write_text(textwrap.dedent(code), encoding="utf-8")
    (root / "agent.yaml").write_text(agent, encoding="utf-8")
    (root / "suite.yaml").write_text(
        "name: stuck\ncases:\n  - kind: golden\n    name: stuck_case\n    turns:\n      - user: hello\n",
        encoding="utf-8",
    )
    return root


def simulator(root: Path, *args: str) -> tuple[int, str, str, float]:
    env = {**os.environ, "LITELLM_OFFLINE_MODE": "true", "SIMULATOR_DB": str(root / "runs.db")}
    started = time.monotonic()
    process = subprocess.Popen(
        [sys.executable, "-m", "simulator", *args],
        cwd=root, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        out, err = process.communicate(timeout=LIMIT)
    except subprocess.TimeoutExpired:
        process.kill()
        out, err = process.communicate(timeout=10)
        pytest.fail(f"`simulator {' '.join(args)}` did not exit within {LIMIT} s: {out}\n{err}")
    return process.returncode, out, err, time.monotonic() - started


@pytest.mark.parametrize("kind", ["python", "langgraph"])
def test_run_exits_with_its_code_while_a_stuck_agent_thread_sleeps(tmp_path: Path, kind: str) -> None:
    root = project(tmp_path, kind)
    code, out, err, elapsed = simulator(root, "run", "suite.yaml")
    assert code == 1, (out, err)  # correctness 0 % < 100 %: below the bar, not "could not complete"
    assert elapsed < 15, f"the process took {elapsed:.1f} s to exit"
    with sqlite3.connect(root / "runs.db") as db:
        rows = list(db.execute("SELECT outcome, result FROM results"))
        statuses = [row[0] for row in db.execute("SELECT status FROM runs")]
    assert [row[0] for row in rows] == ["error"]
    assert "the agent did not answer within 0.5 s" in rows[0][1]
    assert statuses == ["completed"]


@pytest.mark.parametrize("kind", ["python", "langgraph"])
def test_simulate_exits_with_its_code_while_a_stuck_agent_thread_sleeps(tmp_path: Path, kind: str) -> None:
    root = project(tmp_path, kind)
    code, out, err, elapsed = simulator(root, "simulate", "suite.yaml")
    assert code == 1, (out, err)
    assert elapsed < 15, f"the process took {elapsed:.1f} s to exit"
    assert "the agent did not answer within 0.5 s" in out
