"""The engine's own LangGraph graph is never traced by ambient LangSmith settings.

A capture server on 127.0.0.1 stands in for LangSmith; the environment turns tracing on and points at it. A run
of the demo suite sends it nothing, while a traced runnable outside Simulator, under the same environment, does
(so the test cannot pass because the capture itself sees nothing).
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable, Coroutine, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
from langgraph.graph import END, START, MessagesState, StateGraph

import simulator
from simulator.agents._tracing import engine_untraced
from simulator.agents.langgraph_agent import LanggraphAdapter
from simulator.models import LanggraphAgent
from simulator.tools import ToolRouter
from tests.agents.test_adapters import make_input, respond_once

_ROOT = Path(__file__).resolve().parents[1]
HERE = "tests.test_tracing"


def _hello(state: MessagesState) -> dict[str, Any]:
    return {"messages": [{"role": "assistant", "content": "hello"}]}


_BUILDER = StateGraph(MessagesState)
_BUILDER.add_node("hello", _hello)
_BUILDER.add_edge(START, "hello")
_BUILDER.add_edge("hello", END)
GRAPH = _BUILDER.compile()  # the user's own LangGraph agent


class _Capture(BaseHTTPRequestHandler):
    """Records every request's method and path and answers an empty JSON object."""

    seen: list[str]

    def _answer(self) -> None:
        length = int(self.headers.get("content-length") or 0)
        if length:
            self.rfile.read(length)
        self.seen.append(f"{self.command} {self.path}")
        body = b"{}"
        self.send_response(200)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    do_GET = do_POST = do_PATCH = do_PUT = _answer

    def log_message(self, format: str, *args: Any) -> None:  # the server's own signature
        """Quiet: the test reads what was seen, not a log."""


def _clear_langsmith_caches() -> None:
    """langsmith caches the environment it read and the client it made from it: both forgotten, so this test's
    settings are read now and not kept for the tests after it."""
    import langsmith.run_trees
    import langsmith.utils

    langsmith.utils.get_env_var.cache_clear()  # type: ignore[attr-defined]  # lru_cache behind overloads
    langsmith.utils.get_tracer_project.cache_clear()
    langsmith.run_trees._CLIENT = None


def _flush() -> None:
    from langchain_core.tracers.langchain import wait_for_all_tracers

    wait_for_all_tracers()


@pytest.fixture
def langsmith_capture(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[str]]:
    """Tracing on, every LangSmith endpoint variable pointing at a local capture server; yields what it saw."""
    seen: list[str] = []
    handler = type("Handler", (_Capture,), {"seen": seen})
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    url = f"http://127.0.0.1:{server.server_address[1]}"
    for name, value in {
        "LANGSMITH_TRACING": "true",
        "LANGCHAIN_TRACING_V2": "true",
        "LANGSMITH_API_KEY": "fake",
        "LANGCHAIN_API_KEY": "fake",
        "LANGSMITH_ENDPOINT": url,
        "LANGCHAIN_ENDPOINT": url,
        "LANGSMITH_PROJECT": "simulator-tracing-test",
    }.items():
        monkeypatch.setenv(name, value)
    _clear_langsmith_caches()
    try:
        yield seen
    finally:
        _flush()
        monkeypatch.undo()
        _clear_langsmith_caches()
        server.shutdown()
        server.server_close()
        thread.join(timeout=5)


def _runs_posted(seen: list[str]) -> list[str]:
    return [request for request in seen if "/runs" in request]


async def _plain_graph() -> None:
    state: Any = {"messages": [{"role": "user", "content": "hi"}]}  # dicts, as the agent adapter sends them
    await GRAPH.ainvoke(state)


async def _plain_graph_in_the_engine() -> None:
    with engine_untraced():
        await _plain_graph()


async def _agent_under_test() -> None:
    adapter = LanggraphAdapter(LanggraphAgent(type="langgraph", graph=f"{HERE}:GRAPH"))
    reply = await respond_once(adapter, make_input(ToolRouter(declared=[], mode="test")))
    assert reply.messages


async def _agent_under_test_in_the_engine() -> None:
    with engine_untraced():
        await _agent_under_test()


@pytest.mark.parametrize(
    ("run", "traced"),
    [
        (_plain_graph, True),  # the control: the capture server does see a traced graph
        (_plain_graph_in_the_engine, False),  # the engine's switch reaches what runs inside it...
        (_agent_under_test, True),
        (_agent_under_test_in_the_engine, True),  # ...but the user's agent keeps the user's settings
    ],
    ids=lambda value: getattr(value, "__name__", str(value)),
)
def test_only_the_engine_is_kept_from_langsmith(
    run: Callable[[], Coroutine[Any, Any, None]],
    traced: bool,
    langsmith_capture: list[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Under tracing settings a graph is traced, the user's agent too, except the engine's own graph."""
    monkeypatch.chdir(_ROOT)  # where the agent's graph reference is imported from
    asyncio.run(run())
    _flush()
    assert bool(_runs_posted(langsmith_capture)) is traced, langsmith_capture


@pytest.mark.parametrize(
    ("suite", "case"),
    [
        ("suites/demo/golden.yaml", "status_then_delivery_date"),
        ("suites/demo/golden.yaml", "session_order_balance_and_handoff"),
    ],
)
def test_a_run_sends_nothing_to_langsmith(
    suite: str, case: str, langsmith_capture: list[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A whole run (its graph's nodes, the conversation's text) stays on this machine."""
    monkeypatch.chdir(_ROOT)
    outcome = simulator.run(suite, cases=[case], db=tmp_path / "runs.db", seed=0)
    [stored] = outcome.results()
    assert stored.result.transcript.turns >= 2  # the conversation went through the graph, not only its first turn
    _flush()
    assert langsmith_capture == []
