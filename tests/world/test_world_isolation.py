"""Every conversation works on its own world: concurrent conversations and repeats never see each other's changes,
and a conversation resumed from its checkpoints rebuilds its world from the calls it recorded (no tool runs
twice)."""

from __future__ import annotations

import asyncio
import textwrap
from pathlib import Path
from typing import Any

import pytest
from langgraph.checkpoint.sqlite.aio import AsyncSqliteSaver
from pydantic import TypeAdapter

import simulator
from simulator.agents import AgentInput, AgentReply
from simulator.engine import ConversationSetup, forget, simulate
from simulator.judges import StepJudge
from simulator.models import AgentConfig, Case
from simulator.models.world import WorldSpec
from simulator.user import UserReply, UserTurnRequest
from simulator.world import SeededWorld

#: Conversations in flight at once: each waits at the barrier after changing its world, until all have.
AT_ONCE = 4

AGENT_PY = f"""\
    import json
    import threading

    # Every conversation changes its world, then waits until all of them have: their worlds are alive together.
    BARRIER = threading.Barrier({AT_ONCE}, timeout=60)

    def respond(messages, tools):
        status = messages[-1]["content"]
        order = tools.call("set_status", order_id="1001", status=status)
        ticket = tools.call("open_ticket", text=status)
        BARRIER.wait()
        return json.dumps([order, ticket])
"""

SUITE_YAML = """\
    name: shared
    world:
      orders:
        1001: {status: placed}
      tickets: {}
    agent:
      type: python
      callable: iso_agent:respond
      tools:
        - name: set_status
          parameters: {type: object, properties: {order_id: {type: string}, status: {type: string}}}
          world: {update: orders, id: "{order_id}", set: {status: "{status}"}}
        - name: open_ticket
          parameters: {type: object, properties: {text: {type: string}}}
          world: {insert: tickets, record: {text: "{text}"}}
    cases:
      - {name: ship, kind: golden, turns: [{user: shipped}]}
      - {name: lose, kind: golden, turns: [{user: lost}]}
"""


def test_concurrent_conversations_and_repeats_each_change_only_their_own_world(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / ".git").mkdir()
    (tmp_path / "iso_agent.py").write_text(textwrap.dedent(AGENT_PY), encoding="utf-8")
    (tmp_path / "suite.yaml").write_text(textwrap.dedent(SUITE_YAML), encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    outcome = simulator.run("suite.yaml", db=tmp_path / "runs.db", repeat=2, concurrency=AT_ONCE, seed=1)
    results = outcome.results()
    assert len(results) == AT_ONCE
    for stored in results:
        transcript = stored.result.transcript
        assert transcript.error is None, transcript.error
        assert transcript.world is not None
        said = {"ship": "shipped", "lose": "lost"}[stored.case]
        changes = [(c.label(), c.action, c.fields.get("status"), c.record) for c in transcript.world.changes]
        # Only its own change: its status over the seeded one, and its ticket the first of its world.
        assert [(label, action) for label, action, _, _ in changes] == [
            ("orders/1001", "update"), ("tickets/1", "insert"),
        ]  # fmt: skip
        status = changes[0][2]
        assert status is not None
        assert (status.before, status.after) == ("placed", said)
        assert changes[1][3] == {"text": said}


# --- resume ---

CASE = TypeAdapter(Case).validate_python(
    {
        "kind": "simulation",
        "name": "logged",
        "steps": [{"goal": f"g{i}", "checks": [{"must_contain": [f"r{i}"]}], "max_turns": 2} for i in range(4)],
    }
)
AGENT = TypeAdapter(AgentConfig).validate_python(
    {
        "type": "python",
        "callable": "unused:respond",
        "tools": [{"name": "log", "world": {"insert": "log", "record": {"turn": "{turn}"}}}],
    }
)


class Crash(BaseException):
    """Stands for the process dying: not an Exception, so nothing in the engine catches it."""


class LoggingAgent:
    """Logs each turn in the world (an insert: the next free id), and says which reply it is."""

    def __init__(self, crash_on_turn: int | None = None) -> None:
        self.crash_on_turn = crash_on_turn

    async def respond(self, request: AgentInput) -> AgentReply:
        if request.turn == self.crash_on_turn:
            raise Crash
        await request.tools.acall("log", turn=request.turn)
        return AgentReply(messages=[f"r{request.turn - 1}"])

    async def aclose(self) -> None:
        return None


class User:
    async def next_message(self, request: UserTurnRequest) -> UserReply:
        return UserReply(text=f"please {request.goal}")


def setup(agent: LoggingAgent) -> ConversationSetup:
    seed = SeededWorld(WorldSpec(collections={"log": {}}))
    return ConversationSetup(case=CASE, agent=agent, user=User(), checker=StepJudge(), agent_config=AGENT, world=seed)


def logged(transcript: Any) -> list[tuple[str, Any]]:
    assert transcript.world is not None
    return [(change.id, (change.record or {}).get("turn")) for change in transcript.world.changes]


def test_a_resumed_conversation_rebuilds_its_world_from_the_calls_it_recorded(tmp_path: Path) -> None:
    async def go() -> Any:
        async with AsyncSqliteSaver.from_conn_string(str(tmp_path / "runs.db")) as saver:
            with pytest.raises(Crash):
                await simulate(setup(LoggingAgent(crash_on_turn=3)), checkpointer=saver, thread_id="t")
        async with AsyncSqliteSaver.from_conn_string(str(tmp_path / "runs.db")) as saver:
            transcript = await simulate(setup(LoggingAgent()), checkpointer=saver, thread_id="t")
            await forget(saver, "t")
        return transcript

    transcript = asyncio.run(go())
    assert transcript.stop_reason == "completed"
    # Turns 1 and 2 were logged before the crash; their changes were made again, so turn 3 takes the id 3.
    assert logged(transcript) == [("1", 1), ("2", 2), ("3", 3), ("4", 4)]
    calls = transcript.tool_calls()
    assert [call.world.changes[0].id for call in calls if call.world] == ["1", "2", "3", "4"]


def test_a_finished_conversation_read_back_from_its_checkpoint_keeps_its_world(tmp_path: Path) -> None:
    async def go() -> tuple[Any, Any]:
        async with AsyncSqliteSaver.from_conn_string(str(tmp_path / "runs.db")) as saver:
            first = await simulate(setup(LoggingAgent()), checkpointer=saver, thread_id="done")
            again = await simulate(setup(LoggingAgent(crash_on_turn=1)), checkpointer=saver, thread_id="done")
        return first, again

    first, again = asyncio.run(go())
    assert logged(first) == [("1", 1), ("2", 2), ("3", 3), ("4", 4)]
    assert again.world == first.world


# --- Ray ---

RAY_AGENT_PY = """\
    import json

    def respond(messages, tools):
        status = messages[-1]["content"]
        return json.dumps([tools.call("set_status", order_id="1001", status=status), tools.call("open_ticket",
                                                                                                 text=status)])
"""


@pytest.mark.ray
def test_conversations_on_ray_workers_each_change_only_their_own_world(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    ray = pytest.importorskip("ray")
    (tmp_path / ".git").mkdir()
    (tmp_path / "iso_agent.py").write_text(textwrap.dedent(RAY_AGENT_PY), encoding="utf-8")
    (tmp_path / "suite.yaml").write_text(textwrap.dedent(SUITE_YAML), encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("LITELLM_OFFLINE_MODE", "true")
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False, configure_logging=False)
    try:
        outcome = simulator.run("suite.yaml", db=tmp_path / "runs.db", repeat=3, seed=1, executor="ray")
    finally:
        ray.shutdown()
    assert outcome.record.settings.executor == "ray"
    results = outcome.results()
    assert len(results) == 6
    for stored in results:
        transcript = stored.result.transcript
        assert transcript.error is None, transcript.error
        assert transcript.world is not None
        said = {"ship": "shipped", "lose": "lost"}[stored.case]
        assert [(c.label(), c.record or c.fields["status"].after) for c in transcript.world.changes] == [
            ("orders/1001", said), ("tickets/1", {"text": said}),
        ]  # fmt: skip
