"""Sync agent code runs in daemon threads: an agent stuck past its timeout ends its turn as ``error`` and keeps
neither the event loop's shutdown nor the process from ending. The whole-process check, with
the command line, is in ``tests/runs/test_stuck_agents.py``."""

from __future__ import annotations

import asyncio
import contextvars
import threading
import time
from typing import Any

import pytest
from pydantic import TypeAdapter

from simulator.agents import AgentInput
from simulator.agents._base import DaemonThreadExecutor, free_agent_threads, in_agent_thread
from simulator.agents.python_agent import PythonAdapter
from simulator.engine import ConversationSetup, simulate
from simulator.judges import StepJudge
from simulator.models import Case, PythonAgent
from simulator.user import ScriptedUser

HERE = "tests.agents.test_agent_threads"
CASE: TypeAdapter[Any] = TypeAdapter(Case)
#: Released at the end of each test, so no stuck thread outlives it for long.
RELEASE = threading.Event()
SEEN: dict[str, Any] = {}
MARK: contextvars.ContextVar[str] = contextvars.ContextVar("mark", default="unset")


def stuck_agent(messages: list[dict[str, Any]]) -> str:
    RELEASE.wait(30)
    return "too late"


def where_am_i(messages: list[dict[str, Any]]) -> str:
    SEEN["daemon"] = threading.current_thread().daemon
    SEEN["mark"] = MARK.get()
    return "here"


def exiting_agent(messages: list[dict[str, Any]]) -> str:
    raise SystemExit(3)


@pytest.fixture(autouse=True)
def release_stuck_threads() -> Any:
    RELEASE.clear()
    yield
    RELEASE.set()


def guard() -> None:
    """Release the stuck threads after 10 s anyway, so the old behaviour fails a test instead of hanging it."""
    timer = threading.Timer(10, RELEASE.set)
    timer.daemon = True
    timer.start()


def adapter(name: str) -> PythonAdapter:
    return PythonAdapter(PythonAgent(type="python", callable=f"{HERE}:{name}", timeout=0.3))


def test_a_sync_agent_runs_in_a_daemon_thread_with_the_callers_context() -> None:
    async def main() -> None:
        MARK.set("conversation 7")
        request = AgentInput(messages=[{"role": "user", "content": "hi"}], session={}, tools=None)  # type: ignore[arg-type]
        reply = await adapter("where_am_i").respond(request)
        assert reply.messages == ["here"]

    asyncio.run(main())
    assert SEEN == {"daemon": True, "mark": "conversation 7"}


def test_an_agent_that_exits_ends_its_turn_not_the_run() -> None:
    async def main() -> None:
        request = AgentInput(messages=[], session={}, tools=None)  # type: ignore[arg-type]
        await adapter("exiting_agent").respond(request)

    with pytest.raises(RuntimeError, match="the code raised SystemExit: 3"):
        asyncio.run(main())


def test_a_stuck_sync_agent_does_not_hold_up_the_end_of_the_event_loop() -> None:
    """Before: ``asyncio.run`` waited for the stuck worker thread (here: until the test released it)."""
    golden = CASE.validate_python({"kind": "golden", "name": "g", "turns": [{"user": "hi"}]})
    config = PythonAgent(type="python", callable=f"{HERE}:stuck_agent", timeout=0.3)

    async def main() -> Any:
        free_agent_threads()
        setup = ConversationSetup(
            case=golden, agent=PythonAdapter(config), user=ScriptedUser(), checker=StepJudge(), agent_config=config
        )
        return await simulate(setup)

    guard()
    started = time.monotonic()
    transcript = asyncio.run(main())
    elapsed = time.monotonic() - started
    assert transcript.stop_reason == "error"
    assert "the agent did not answer within 0.3 s" in (transcript.error or "")
    assert elapsed < 5, f"asyncio.run took {elapsed:.1f} s: it waited for the stuck agent thread"
    assert not RELEASE.is_set()


def test_a_stuck_job_in_the_default_executor_does_not_hold_up_the_end_of_the_event_loop() -> None:
    """Where LangGraph runs a graph's plain ``def`` nodes: the loop's default executor."""

    async def main() -> None:
        free_agent_threads()
        with pytest.raises(TimeoutError):
            await asyncio.wait_for(asyncio.to_thread(RELEASE.wait, 30), 0.2)

    guard()
    started = time.monotonic()
    asyncio.run(main())
    assert time.monotonic() - started < 5
    assert not RELEASE.is_set()


def test_daemon_executor_returns_results_and_errors_and_shuts_down_within_its_grace() -> None:
    executor = DaemonThreadExecutor(name="test", grace=0.2)
    assert executor.submit(lambda: threading.current_thread().daemon).result(5) is True
    with pytest.raises(ZeroDivisionError):
        executor.submit(lambda: 1 / 0).result(5)
    done = executor.submit(time.sleep, 0.05)
    stuck = executor.submit(RELEASE.wait, 30)
    started = time.monotonic()
    executor.shutdown(wait=True)
    assert time.monotonic() - started < 2
    assert done.done()
    assert not stuck.done()
    with pytest.raises(RuntimeError, match="after shutdown"):
        executor.submit(print)


def test_in_agent_thread_passes_arguments() -> None:
    async def main() -> Any:
        return await in_agent_thread(lambda a, *, b: (a, b, threading.current_thread().daemon), 1, b=2)

    assert asyncio.run(main()) == (1, 2, True)
