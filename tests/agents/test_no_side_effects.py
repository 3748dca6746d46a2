"""Test mode means no side effects, for every adapter type (the audit).

One tool, ``refund``, writes a file whenever it really runs (the side-effect canary): as the agent config's live
``function:`` for the python, http and litellm adapters, and as the graph's own ToolNode tool for the langgraph
adapter. Each adapter's agent calls it once. Without ``--live`` the file is never written and the call is
recorded ``not_executed`` (no fake) or ``faked``; with ``--live`` it runs.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest
from langchain_core.messages import AIMessage, ToolMessage
from langchain_core.tools import tool
from langgraph.graph import END, START, MessagesState, StateGraph
from langgraph.prebuilt import ToolNode

from simulator.agents import AgentReply
from simulator.agents.langgraph_agent import LanggraphAdapter
from simulator.agents.python_agent import PythonAdapter
from simulator.llm import FakeScript, FakeToolCall
from simulator.models import LanggraphAgent, PythonAgent, ToolDeclaration, ToolFake
from simulator.tools import ToolHandle, ToolRouter
from tests.agents.test_adapters import (
    Scripted,
    make_input,
    respond_once,
    shop_agent,
    talk_http,
    talk_litellm,
    text_reply,
    tool_reply,
)

HERE = "tests.agents.test_no_side_effects"
ROOT = Path(__file__).resolve().parent.parent.parent
CANARY: dict[str, Path] = {}


@pytest.fixture(autouse=True)
def canary(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(ROOT)  # where the `function:` reference below is imported from
    CANARY["path"] = tmp_path / "refunds.txt"
    return CANARY["path"]


def refund_for_real(order_id: str) -> str:
    """The live function of the agent config's `refund` tool."""
    with CANARY["path"].open("a", encoding="utf-8") as file:
        file.write(f"refund {order_id}\n")
    return json.dumps({"refunded": order_id})


@tool
def refund(order_id: str) -> str:
    """The graph's own `refund` tool."""
    return refund_for_real(order_id)


async def _model(state: MessagesState) -> dict[str, Any]:
    last = state["messages"][-1]
    if isinstance(last, ToolMessage):
        return {"messages": [AIMessage(content=f"done: {last.content}")]}
    call = {"name": "refund", "args": {"order_id": "A1"}, "id": "c0"}
    return {"messages": [AIMessage(content="", tool_calls=[call])]}


def _route(state: MessagesState) -> str:
    last = state["messages"][-1]
    return "tools" if isinstance(last, AIMessage) and last.tool_calls else END


_builder = StateGraph(MessagesState)
_builder.add_node("model", _model)
_builder.add_node("tools", ToolNode([refund]))
_builder.add_edge(START, "model")
_builder.add_conditional_edges("model", _route, ["tools", END])
_builder.add_edge("tools", "model")
GRAPH = _builder.compile()

REFUND = ToolDeclaration(
    name="refund",
    description="Refund an order.",
    parameters={"type": "object", "properties": {"order_id": {"type": "string"}}},
    function=f"{HERE}:refund_for_real",
)
FAKE = ToolFake(tool="refund", arguments={"order_id": "A1"}, result={"refunded": "A1", "fake": True})


def python_refund_agent(messages: list[dict[str, Any]], tools: ToolHandle) -> str:
    return f"done: {json.dumps(tools.call('refund', order_id='A1'))}"


def talk(adapter: str, router: ToolRouter) -> AgentReply:
    """The agent of type ``adapter`` asks for ``refund(order_id="A1")`` once, then answers."""
    if adapter == "http":
        script = [Scripted(tool_reply(("c0", "refund", '{"order_id": "A1"}'))), Scripted(text_reply("done"))]
        reply, _ = asyncio.run(talk_http(script, router))
        return reply
    if adapter == "litellm":
        fake_model = FakeScript().enqueue("shop", [FakeToolCall("refund", {"order_id": "A1"}, id="c0")], "done")
        return talk_litellm(shop_agent(tools=[REFUND]), fake_model, router)

    async def main() -> AgentReply:
        agent: Any
        if adapter == "python":
            agent = PythonAdapter(PythonAgent(type="python", callable=f"{HERE}:python_refund_agent", tools=[REFUND]))
        else:
            agent = LanggraphAdapter(LanggraphAgent(type="langgraph", graph=f"{HERE}:GRAPH", tools=[REFUND]))
        return await respond_once(agent, make_input(router))

    return asyncio.run(main())


def ran(canary: Path) -> list[str]:
    return canary.read_text(encoding="utf-8").splitlines() if canary.exists() else []


ADAPTERS = ["python", "http", "litellm", "langgraph"]


@pytest.mark.parametrize("fake", [None, FAKE], ids=["no-fake", "fake"])
@pytest.mark.parametrize("adapter", ADAPTERS)
def test_without_live_no_adapter_runs_a_tool(adapter: str, fake: ToolFake | None, canary: Path) -> None:
    router = ToolRouter(declared=[REFUND], fakes=[("suite tool_fakes[0]", fake)] if fake else [], mode="test")
    reply = talk(adapter, router)
    assert ran(canary) == []
    [record] = router.records
    assert (record.name, record.arguments) == ("refund", {"order_id": "A1"})
    assert record.status == ("faked" if fake else "not_executed")
    assert reply.messages


@pytest.mark.parametrize("adapter", ADAPTERS)
def test_with_live_every_adapter_runs_the_tool(adapter: str, canary: Path) -> None:
    router = ToolRouter(declared=[REFUND], fakes=[("suite tool_fakes[0]", FAKE)], mode="live")
    talk(adapter, router)
    assert ran(canary) == ["refund A1"]
    [record] = router.records
    assert (record.status, record.result) == ("executed", '{"refunded": "A1"}')


@pytest.mark.parametrize("adapter", ADAPTERS)
def test_with_live_a_tool_that_requires_approval_runs_in_no_adapter(adapter: str, canary: Path) -> None:
    declared = REFUND.model_copy(update={"requires_approval": True})
    router = ToolRouter(declared=[declared], mode="live")
    talk(adapter, router)
    assert ran(canary) == []
    assert router.needs_approval
