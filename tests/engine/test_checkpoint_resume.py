"""A conversation interrupted mid-way continues from its last completed step when resumed from a checkpoint."""

from __future__ import annotations

import asyncio
import logging
import os
import subprocess
import sys
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from langgraph.checkpoint.sqlite.aio import AsyncSqliteSaver
from pydantic import TypeAdapter

from simulator.agents import AgentInput, AgentReply
from simulator.engine import ConversationSetup, forget, open_checkpointer, simulate
from simulator.judges import StepJudge
from simulator.models import Case
from simulator.models.transcript import AgentEvent, Transcript, UserEvent
from simulator.user import UserReply, UserTurnRequest

CASE = TypeAdapter(Case).validate_python(
    {
        "kind": "simulation",
        "name": "long",
        "steps": [{"goal": f"g{i}", "checks": [{"must_contain": [f"r{i}"]}], "max_turns": 2} for i in range(4)],
    }
)


class Crash(BaseException):
    """Stands for the process dying: not an Exception, so nothing in the engine catches it."""


class Agent:
    def __init__(self, crash_on_turn: int | None = None) -> None:
        self.crash_on_turn = crash_on_turn
        self.turns: list[int] = []

    async def respond(self, request: AgentInput) -> AgentReply:
        if request.turn == self.crash_on_turn:
            raise Crash
        self.turns.append(request.turn)
        return AgentReply(messages=[f"r{request.turn - 1}"])

    async def aclose(self) -> None:
        return None


class User:
    async def next_message(self, request: UserTurnRequest) -> UserReply:
        return UserReply(text=f"please {request.goal}")


def setup(agent: Agent) -> ConversationSetup:
    return ConversationSetup(case=CASE, agent=agent, user=User(), checker=StepJudge())


def langgraph_saver(db: Path) -> Any:
    return AsyncSqliteSaver.from_conn_string(str(db))


async def crash_then_resume(
    db: Path, saver_on: Callable[[Path], Any] = langgraph_saver
) -> tuple[Agent, Transcript, int]:
    async with saver_on(db) as saver:
        with pytest.raises(Crash):
            await simulate(setup(Agent(crash_on_turn=3)), checkpointer=saver, thread_id="run:case")
    async with saver_on(db) as saver:
        resumed = Agent()
        transcript = await simulate(setup(resumed), checkpointer=saver, thread_id="run:case")
        await forget(saver, "run:case")  # as the runner does once the result is stored
        left = [c async for c in saver.alist({"configurable": {"thread_id": "run:case"}})]
    return resumed, transcript, len(left)


def test_a_crashed_conversation_resumes_at_the_turn_it_stopped(tmp_path: Path) -> None:
    resumed, transcript, checkpoints_left = asyncio.run(crash_then_resume(tmp_path / "runs.db"))
    # Turns 1 and 2 were done before the crash; the resumed agent is asked from turn 3 on, once each.
    assert resumed.turns == [3, 4]
    assert transcript.stop_reason == "completed"
    assert [e.turn for e in transcript.events if isinstance(e, UserEvent)] == [1, 2, 3, 4]
    assert [e.messages for e in transcript.events if isinstance(e, AgentEvent)] == [["r0"], ["r1"], ["r2"], ["r3"]]
    assert [s.status for s in transcript.steps] == ["complete"] * 4
    # Finished conversations leave no checkpoints behind.
    assert checkpoints_left == 0


def test_a_finished_conversation_whose_result_was_not_stored_is_not_run_again(tmp_path: Path) -> None:
    """A crash after the conversation ended but before its result was stored: the resume returns the
    conversation as it ended; the agent is asked nothing (the checkpoints go only once the result is stored)."""

    async def go() -> tuple[Transcript, Agent, Transcript]:
        async with AsyncSqliteSaver.from_conn_string(str(tmp_path / "runs.db")) as saver:
            first = await simulate(setup(Agent()), checkpointer=saver, thread_id="done")
            again = Agent()
            second = await simulate(setup(again), checkpointer=saver, thread_id="done")
            return first, again, second

    first, again, second = asyncio.run(go())
    assert again.turns == []
    assert second.events == first.events
    assert second.stop_reason == first.stop_reason == "completed"


def test_without_a_checkpoint_a_thread_starts_fresh(tmp_path: Path) -> None:
    async def go() -> Any:
        async with AsyncSqliteSaver.from_conn_string(str(tmp_path / "runs.db")) as saver:
            return await simulate(setup(Agent()), checkpointer=saver, thread_id="fresh")

    transcript = asyncio.run(go())
    assert transcript.turns == 4
    assert transcript.stop_reason == "completed"


@pytest.mark.parametrize("saver_on", [langgraph_saver, open_checkpointer], ids=["AsyncSqliteSaver", "runner's"])
def test_a_resume_prints_no_warning_and_restores_the_projects_types(
    saver_on: Callable[[Path], Any], tmp_path: Path, caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    """LangGraph warns once per process about each type it restores without it being registered ("will be
    blocked in a future version"), as a log record; a blocked type would come back as a plain dict."""
    from langgraph.checkpoint.serde import jsonplus
    from langgraph.checkpoint.serde.event_hooks import register_serde_event_listener

    # The warnings are given once per process: forget the ones other tests may have caused.
    monkeypatch.setattr(jsonplus, "_warned_unregistered_types", set())
    monkeypatch.setattr(jsonplus, "_warned_blocked_types", set())
    events: list[Any] = []
    unregister = register_serde_event_listener(events.append)
    try:
        with warnings.catch_warnings(), caplog.at_level(logging.WARNING):
            warnings.simplefilter("error")
            resumed, transcript, left = asyncio.run(crash_then_resume(tmp_path / "runs.db", saver_on))
    finally:
        unregister()
    assert [record.getMessage() for record in caplog.records if record.levelno >= logging.WARNING] == []
    assert events == []
    # The restored state holds the project's own types, not dicts: the resumed conversation is whole.
    assert resumed.turns == [3, 4]
    assert [type(event).__name__ for event in transcript.events[:4]] == [
        "UserEvent",
        "AgentEvent",
        "CheckEvent",
        "UserEvent",
    ]
    assert [s.status for s in transcript.steps] == ["complete"] * 4
    assert left == 0


def test_the_registered_serializer_is_the_checkpointers_copy_and_allows_the_state_types_only(tmp_path: Path) -> None:
    from simulator.engine._checkpoint import registered, state_types
    from simulator.engine._graph import State

    async def go() -> None:
        async with open_checkpointer(tmp_path / "c.db") as saver:
            original = saver.serde
            clone = registered(saver, State)
            # The caller's checkpointer keeps its serializer; the copy shares its connection.
            assert saver.serde is original
            assert clone is not saver
            assert clone.conn is saver.conn
            assert clone.serde._allowed_msgpack_modules == state_types(State)

    asyncio.run(go())
    assert {("simulator.models.transcript", "UserEvent"), ("simulator.models.case", "EventSpec")} <= state_types(State)


def test_the_runs_checkpointer_writes_one_checkpoint_per_user_turn_and_no_state_writes(tmp_path: Path) -> None:
    """A user turn (user, agent, check) is one graph step: one checkpoint per turn, plus the input and the
    start (the last turn also writes the outcomes: no step of its own); the first turn runs before the graph,
    and the input checkpoint holds it; a step's state writes are not stored beside its checkpoint (it holds them)."""

    async def go() -> tuple[Transcript, int, int]:
        async with open_checkpointer(tmp_path / "c.db") as saver:
            transcript = await simulate(setup(Agent()), checkpointer=saver, thread_id="run:case")
            rows = [c async for c in saver.alist({"configurable": {"thread_id": "run:case"}})]
            (writes,) = saver.conn.execute("SELECT COUNT(*) FROM writes").fetchone()
        return transcript, len(rows), writes

    transcript, checkpoints, writes = asyncio.run(go())
    assert transcript.turns == 4
    assert checkpoints == transcript.turns + 1
    assert writes == 0


@pytest.mark.parametrize(("crash_on_turn", "asked_after"), [(1, [1, 2, 3, 4]), (2, [2, 3, 4])])
def test_a_crash_in_the_first_two_turns_resumes_at_the_turn_in_flight(
    tmp_path: Path, crash_on_turn: int, asked_after: list[int]
) -> None:
    """The first turn runs before the graph (see simulator.engine._imports): a crash in it leaves no checkpoint
    (the conversation starts over), and a crash in the second resumes there, the graph's input checkpoint holding
    the first turn."""

    async def go() -> tuple[Agent, Transcript]:
        async with open_checkpointer(tmp_path / "runs.db") as saver:
            with pytest.raises(Crash):
                await simulate(setup(Agent(crash_on_turn=crash_on_turn)), checkpointer=saver, thread_id="t")
            resumed = Agent()
            return resumed, await simulate(setup(resumed), checkpointer=saver, thread_id="t")

    resumed, transcript = asyncio.run(go())
    assert resumed.turns == asked_after
    assert [e.turn for e in transcript.events if isinstance(e, UserEvent)] == [1, 2, 3, 4]
    assert [s.status for s in transcript.steps] == ["complete"] * 4


WHILE_LOADING = """
import asyncio, sys, threading
import simulator.engine._imports as imports
from tests.engine.test_checkpoint_resume import Agent, setup
from simulator.engine import load_graph, open_checkpointer, simulate

release = threading.Event()
load = imports._load
imports._load = lambda on_loaded: (release.wait(30), load(on_loaded))
seen = []

class Watching(Agent):
    async def respond(self, request):
        seen.append("langgraph.graph" in sys.modules)
        reply = await super().respond(request)
        release.set()  # LangGraph may load now: the first turn is done
        return reply

async def go():
    load_graph()
    async with open_checkpointer(sys.argv[1]) as saver:
        return await simulate(setup(Watching()), checkpointer=saver, thread_id="t")

transcript = asyncio.run(go())
print(seen, transcript.turns, [s.status for s in transcript.steps])
"""


def test_the_first_turn_is_taken_while_langgraph_loads(tmp_path: Path) -> None:
    """In a fresh process, the first turn (user and agent) runs with LangGraph's graph not imported (its import
    held until the agent has answered), and the conversation then goes on through the graph to its end."""
    root = Path(__file__).resolve().parents[2]
    result = subprocess.run(
        [sys.executable, "-c", WHILE_LOADING, str(tmp_path / "c.db")],
        cwd=root, capture_output=True, text=True, timeout=120, check=False,
        env={**os.environ, "PYTHONPATH": str(root)},
    )  # fmt: skip
    assert result.returncode == 0, result.stderr[-3000:]
    assert result.stdout.strip() == "[False, True, True, True] 4 ['complete', 'complete', 'complete', 'complete']"
