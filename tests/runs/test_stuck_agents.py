"""An agent stuck past its timeout ends its case as ``error``, and the process still exits with its exit code
(the worker thread used to keep ``asyncio.run``, and so a CI job, waiting forever)."""

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


STUCK_TOOL_AGENT = """
def respond(messages, tools=None):
    result = tools.call("holidays", year=2026)
    return f"the tool said: {result}"
"""

STUCK_TOOL = """
import time


def holidays(year):
    time.sleep(3600)
    return "never"
"""


def test_a_live_tool_that_never_returns_is_failed_and_the_run_still_ends(tmp_path: Path) -> None:
    """A plain ``def`` tool runs off the event loop and is bounded by the agent's timeout; the failure is the
    tool's, not the agent's, and the process exits."""
    (tmp_path / ".git").mkdir()
    (tmp_path / "tool_agent.py").write_text(textwrap.dedent(STUCK_TOOL_AGENT), encoding="utf-8")
    (tmp_path / "stuck_tool.py").write_text(textwrap.dedent(STUCK_TOOL), encoding="utf-8")
    (tmp_path / "agent.yaml").write_text(
        "type: python\ncallable: tool_agent:respond\ntimeout: 2\n"
        "tools:\n  - name: holidays\n    function: stuck_tool:holidays\n",
        encoding="utf-8",
    )
    (tmp_path / "suite.yaml").write_text(
        "name: stuck\ncases:\n  - kind: golden\n    name: stuck_tool\n    turns:\n      - user: hello\n",
        encoding="utf-8",
    )
    code, out, err, elapsed = simulator(tmp_path, "simulate", "suite.yaml", "--live")
    assert code == 1, (out, err)
    assert elapsed < 20, f"the process took {elapsed:.1f} s to exit"
    # A python agent's turn is bounded by the same timeout as its tool: the case is an error naming the tool.
    assert "error (tool): the live tool 'holidays' did not return within 2 s" in out, (out, err)
    assert "the agent did not answer" not in out


def test_a_stuck_live_tool_is_failed_at_the_bound_and_the_loop_goes_on() -> None:
    """Routed by an adapter whose turn bound is longer (http, litellm): the call is `failed` at the agent's
    timeout and the agent is told; other conversations kept running meanwhile."""
    import asyncio
    import threading

    from simulator.agents._base import free_agent_threads
    from simulator.tools import ToolRouter

    release = threading.Event()

    def stuck(year: int) -> str:
        release.wait(30)
        return "late"

    async def go() -> tuple[object, int]:
        free_agent_threads()  # as every run does: a stuck thread must not hold the loop's shutdown either
        router = ToolRouter(mode="live", functions={"holidays": stuck}, timeout=0.3)
        ticks = 0

        async def tick() -> None:
            nonlocal ticks
            while True:
                await asyncio.sleep(0.01)
                ticks += 1

        ticker = asyncio.create_task(tick())
        answer = await router.call("holidays", {"year": 2026})
        ticker.cancel()
        return answer, ticks

    try:
        answer, ticks = asyncio.run(go())
    finally:
        release.set()
    assert answer == {
        "error": "the tool did not return within 0.3 s (the agent's `timeout`); it was left running",
        "status": "failed",
    }
    assert ticks > 5  # the event loop was never blocked by the tool
