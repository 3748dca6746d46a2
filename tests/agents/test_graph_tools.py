"""A LangGraph agent's own tools go through the tool router: test mode means no side effects.

The graphs below are real LangGraph graphs whose tools write a file when they run (the side-effect canary):
in test mode the file must never be written, the call is answered by a fake or recorded ``not_executed``;
with ``--live`` (``mode="live"``) the tool runs, unless it requires approval, which stops the case.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest
from langchain_core.messages import AIMessage, ToolMessage
from langchain_core.runnables import RunnableConfig
from langchain_core.tools import tool
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph import END, START, MessagesState, StateGraph
from langgraph.prebuilt import ToolNode

from simulator.agents import AgentInput, AgentReply
from simulator.agents.langgraph_agent import LanggraphAdapter
from simulator.errors import AgentError
from simulator.models import LanggraphAgent, ToolDeclaration, ToolFake
from simulator.models.run import RunSettings
from simulator.tools import NOT_EXECUTED, ToolHandle, ToolMode, ToolRouter
from tests.factories import run

HERE = "tests.agents.test_graph_tools"
HELLO = [{"role": "user", "content": "Refund order A1, please."}]

#: Where the tools below write when they run; each test points it at a fresh file.
CANARY: dict[str, Path] = {}


def _touch(what: str) -> None:
    path = CANARY["path"]
    with path.open("a", encoding="utf-8") as file:
        file.write(what + "\n")


@pytest.fixture(autouse=True)
def canary(tmp_path: Path) -> Path:
    CANARY["path"] = tmp_path / "side-effects.txt"
    return CANARY["path"]


def ran(canary: Path) -> list[str]:
    """What the tools did for real."""
    return canary.read_text(encoding="utf-8").splitlines() if canary.exists() else []


@tool
def refund(order_id: str) -> str:
    """Refund an order (a side effect)."""
    _touch(f"refund {order_id}")
    return json.dumps({"refunded": order_id})


@tool
async def cancel(order_id: str) -> str:
    """Cancel an order (a side effect), async."""
    _touch(f"cancel {order_id}")
    return f"cancelled {order_id}"


def plain_refund(order_id: str) -> str:
    """Not a langchain tool: a plain function a custom node calls."""
    _touch(f"plain refund {order_id}")
    return "refunded"


def _model(tool_name: str = "refund") -> Any:
    """A scripted "model": asks for the tool once, then says what the tool gave."""

    async def model(state: MessagesState) -> dict[str, Any]:
        last = state["messages"][-1]
        if isinstance(last, ToolMessage):
            return {"messages": [AIMessage(content=f"The tool said: {last.content}")]}
        turn = len(state["messages"])
        call = {"name": tool_name, "args": {"order_id": "A1"}, "id": f"call-{turn}"}
        return {"messages": [AIMessage(content="", tool_calls=[call])]}

    return model


def _needs_tools(state: MessagesState) -> str:
    last = state["messages"][-1]
    return "tools" if isinstance(last, AIMessage) and last.tool_calls else END


def _graph(tools_node: Any, tool_name: str = "refund", **compile_args: Any) -> Any:
    builder = StateGraph(MessagesState)
    builder.add_node("model", _model(tool_name))
    builder.add_node("tools", tools_node)
    builder.add_edge(START, "model")
    builder.add_conditional_edges("model", _needs_tools, ["tools", END])
    builder.add_edge("tools", "model")
    return builder.compile(**compile_args)


TOOL_NODE_GRAPH = _graph(ToolNode([refund, cancel]))
ASYNC_TOOL_GRAPH = _graph(ToolNode([refund, cancel]), tool_name="cancel")
CHECKPOINTED_GRAPH = _graph(ToolNode([refund]), checkpointer=InMemorySaver())

#: The ToolNode sits in a compiled subgraph that is a node of the outer graph.
_inner = StateGraph(MessagesState)
_inner.add_node("run_tools", ToolNode([refund]))
_inner.add_edge(START, "run_tools")
_inner.add_edge("run_tools", END)
SUBGRAPH_GRAPH = _graph(_inner.compile())

#: What the graph's own tool-call wrapper (langchain middleware, say) saw.
WRAPPED: list[str] = []


async def _logging_wrapper(request: Any, execute: Callable[[Any], Awaitable[Any]]) -> Any:
    WRAPPED.append(f"before {request.tool_call['name']}")
    result = await execute(request)
    WRAPPED.append(f"after {result.content}")
    return result


def _sync_logging_wrapper(request: Any, execute: Callable[[Any], Any]) -> Any:
    WRAPPED.append(f"sync before {request.tool_call['name']}")
    result = execute(request)
    WRAPPED.append(f"sync after {result.content}")
    return result


WRAPPED_GRAPH = _graph(ToolNode([refund], awrap_tool_call=_logging_wrapper))
SYNC_WRAPPED_GRAPH = _graph(ToolNode([refund], wrap_tool_call=_sync_logging_wrapper))


# Custom tool nodes: Simulator cannot intercept these.


async def _invokes_tool(state: MessagesState) -> dict[str, Any]:
    """The "BasicToolNode" of LangGraph's tutorial: runs the langchain tools itself."""
    last = state["messages"][-1]
    assert isinstance(last, AIMessage)
    messages = []
    for call in last.tool_calls:
        try:
            result = await refund.ainvoke(call["args"])
        except Exception as exc:  # a node that swallows errors cannot swallow the refusal
            result = f"failed: {exc}"
        messages.append(ToolMessage(content=result, tool_call_id=call["id"], name=call["name"]))
    return {"messages": messages}


def _invokes_tool_sync(state: MessagesState) -> dict[str, Any]:
    """The same, as a sync node (LangGraph runs it in a worker thread)."""
    last = state["messages"][-1]
    assert isinstance(last, AIMessage)
    call = last.tool_calls[0]
    return {"messages": [ToolMessage(content=refund.invoke(call["args"]), tool_call_id=call["id"])]}


async def _calls_function(state: MessagesState) -> dict[str, Any]:
    """Calls a plain function: nothing can stop it beforehand."""
    last = state["messages"][-1]
    assert isinstance(last, AIMessage)
    call = last.tool_calls[0]
    return {"messages": [ToolMessage(content=plain_refund(**call["args"]), tool_call_id=call["id"])]}


async def _routes_through_simulator(state: MessagesState, config: RunnableConfig) -> dict[str, Any]:
    """A custom node that routes its calls through the handle Simulator puts in the config."""
    tools = config["configurable"].get("simulator_tools")
    last = state["messages"][-1]
    assert isinstance(last, AIMessage)
    messages = []
    for call in last.tool_calls:
        if tools is None:
            result: Any = plain_refund(**call["args"])
        else:
            result = await tools.acall(call["name"], **call["args"])
        messages.append(ToolMessage(content=json.dumps(result), tool_call_id=call["id"]))
    return {"messages": messages}


CUSTOM_TOOL_GRAPH = _graph(_invokes_tool)
SYNC_CUSTOM_TOOL_GRAPH = _graph(_invokes_tool_sync)
FUNCTION_GRAPH = _graph(_calls_function)
HANDLE_GRAPH = _graph(_routes_through_simulator)


async def _runs_a_subgraph(state: MessagesState) -> dict[str, Any]:
    """Invokes a compiled graph with a ToolNode from inside a node: that ToolNode is out of reach."""
    result = await _INNER_FOR_CALL.ainvoke({"messages": state["messages"]})
    return {"messages": result["messages"][len(state["messages"]) :]}


_INNER_FOR_CALL = _inner.compile()
NESTED_CALL_GRAPH = _graph(_runs_a_subgraph)


# --------------------------------------------------------------------------------------------------------------


REFUND = ToolDeclaration(name="refund", description="Refund an order.")
NEEDS_APPROVAL = ToolDeclaration(name="refund", description="Refund an order.", requires_approval=True)
FAKE = ToolFake(tool="refund", arguments={"order_id": "A1"}, result={"refunded": "A1", "fake": True})


def router(mode: ToolMode = "test", *fakes: ToolFake, declared: ToolDeclaration = REFUND) -> ToolRouter:
    return ToolRouter(
        declared=[declared], fakes=[(f"suite tool_fakes[{i}]", f) for i, f in enumerate(fakes)], mode=mode
    )


def adapter(ref: str) -> LanggraphAdapter:
    return LanggraphAdapter(LanggraphAgent(type="langgraph", graph=f"{HERE}:{ref}"))


async def talk(ref: str, tool_router: ToolRouter, turns: int = 1) -> list[AgentReply]:
    agent = adapter(ref)
    replies = []
    messages: list[dict[str, Any]] = list(HELLO)
    for _ in range(turns):
        request = AgentInput(messages=messages, session={}, tools=ToolHandle(tool_router, asyncio.get_running_loop()))
        reply = await agent.respond(request)
        replies.append(reply)
        messages = [*messages, *({"role": "assistant", "content": text} for text in reply.messages)]
        messages.append({"role": "user", "content": "And again."})
    await agent.aclose()
    return replies


def statuses(tool_router: ToolRouter) -> list[tuple[str, str, str | None]]:
    return [(record.id, record.status, record.fake) for record in tool_router.records]


# -- ToolNode: intercepted ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("declared", [REFUND, NEEDS_APPROVAL], ids=["plain", "requires_approval"])
@pytest.mark.parametrize("ref", ["TOOL_NODE_GRAPH", "CHECKPOINTED_GRAPH", "SUBGRAPH_GRAPH"])
def test_in_test_mode_a_toolnode_call_is_answered_by_its_fake_and_the_tool_never_runs(
    ref: str, declared: ToolDeclaration, canary: Path
) -> None:
    tool_router = router("test", FAKE, declared=declared)
    [reply] = run(talk(ref, tool_router))
    assert ran(canary) == []
    # The graph's model got the fake's result, as a tool message, and went on.
    assert reply.messages == ['The tool said: {"refunded": "A1", "fake": true}']
    assert statuses(tool_router) == [("call-1", "faked", "suite tool_fakes[0]")]
    assert tool_router.records[0].arguments == {"order_id": "A1"}


@pytest.mark.parametrize("ref", ["TOOL_NODE_GRAPH", "ASYNC_TOOL_GRAPH"])
def test_in_test_mode_a_toolnode_call_without_a_fake_is_not_executed(ref: str, canary: Path) -> None:
    tool_router = router("test")
    [reply] = run(talk(ref, tool_router))
    assert ran(canary) == []
    [record] = tool_router.records
    assert record.status == "not_executed"
    assert record.error is not None
    assert record.error.startswith(NOT_EXECUTED)
    # The graph is told, in the same words as every other adapter's agent.
    said = json.loads(reply.messages[0].removeprefix("The tool said: "))
    assert said == {"error": record.error, "status": "not_executed"}


def test_in_live_mode_a_toolnode_tool_runs_and_is_recorded(canary: Path) -> None:
    tool_router = router("live", FAKE)
    [reply] = run(talk("TOOL_NODE_GRAPH", tool_router))
    assert ran(canary) == ["refund A1"]
    assert reply.messages == ['The tool said: {"refunded": "A1"}']
    [record] = tool_router.records
    assert (record.id, record.status, record.result, record.error) == (
        "call-1",
        "executed",
        '{"refunded": "A1"}',
        None,
    )


def test_in_live_mode_a_toolnode_tool_that_requires_approval_is_not_run_and_stops_the_case(canary: Path) -> None:
    tool_router = router("live", declared=NEEDS_APPROVAL)
    run(talk("TOOL_NODE_GRAPH", tool_router))
    assert ran(canary) == []
    assert tool_router.needs_approval
    assert [(r.id, r.status) for r in tool_router.records] == [("call-1", "needs_approval")]


def test_the_graphs_own_tool_wrapper_still_runs_around_the_routing(canary: Path) -> None:
    for ref in ("WRAPPED_GRAPH", "SYNC_WRAPPED_GRAPH"):
        WRAPPED.clear()
        tool_router = router("test", FAKE)
        run(talk(ref, tool_router))
        assert ran(canary) == []
        prefix = "sync " if ref.startswith("SYNC") else ""
        assert list(WRAPPED) == [f"{prefix}before refund", f'{prefix}after {{"refunded": "A1", "fake": true}}']
        assert statuses(tool_router) == [("call-1", "faked", "suite tool_fakes[0]")]


def test_the_users_graph_is_not_changed_and_concurrent_conversations_keep_their_own_mode(canary: Path) -> None:
    testing, live = router("test", FAKE), router("live")

    async def both() -> None:
        await asyncio.gather(talk("TOOL_NODE_GRAPH", testing), talk("TOOL_NODE_GRAPH", live))

    run(both())
    assert [r.status for r in testing.records] == ["faked"]
    assert [r.status for r in live.records] == ["executed"]
    assert ran(canary) == ["refund A1"]
    # The graph object the module holds still runs its tools as LangGraph does, outside Simulator.
    tool_node = TOOL_NODE_GRAPH.nodes["tools"].bound
    assert tool_node._awrap_tool_call is None
    run(TOOL_NODE_GRAPH.ainvoke({"messages": HELLO}))
    assert ran(canary) == ["refund A1", "refund A1"]


# -- tools Simulator cannot intercept: refused in test mode ------------------------------------------------------


@pytest.mark.parametrize(
    ("ref", "node"),
    [("CUSTOM_TOOL_GRAPH", "tools"), ("SYNC_CUSTOM_TOOL_GRAPH", "tools"), ("NESTED_CALL_GRAPH", "tools/run_tools")],
)
def test_in_test_mode_a_langchain_tool_run_outside_a_toolnode_is_stopped_before_it_runs(
    ref: str, node: str, canary: Path
) -> None:
    with pytest.raises(AgentError) as raised:
        run(talk(ref, router("test", FAKE)))
    assert ran(canary) == []
    message = str(raised.value)
    assert message.startswith(
        f"graph '{HERE}:{ref}' runs tools in node '{node}' that Simulator cannot route "
        "(refund(order_id='A1') was stopped before it ran); without --live Simulator lets no tool run: use "
        "langgraph's ToolNode"
    )
    assert "config['configurable']['simulator_tools']" in message
    assert message.endswith("or run with --live")
    # Every later conversation in test mode is refused before the graph runs.
    with pytest.raises(AgentError) as again:
        run(talk(ref, router("test", FAKE)))
    assert str(again.value) == message
    assert ran(canary) == []


def test_in_test_mode_a_graph_that_answers_a_tool_call_itself_is_refused_from_then_on(canary: Path) -> None:
    with pytest.raises(AgentError) as raised:
        run(talk("FUNCTION_GRAPH", router("test", FAKE)))
    message = str(raised.value)
    assert message.startswith(
        f"graph '{HERE}:FUNCTION_GRAPH' runs tools in node 'tools' that Simulator cannot route (it answered "
        "refund(order_id='A1') itself, so the tool may have run); without --live Simulator lets no tool run"
    )
    # It could not be stopped the first time (a plain function); it is never run in test mode again.
    assert ran(canary) == ["plain refund A1"]
    for _ in range(2):
        with pytest.raises(AgentError, match="it answered refund"):
            run(talk("FUNCTION_GRAPH", router("test", FAKE)))
    assert ran(canary) == ["plain refund A1"]


@pytest.mark.parametrize("ref", ["CUSTOM_TOOL_GRAPH", "FUNCTION_GRAPH"])
def test_in_live_mode_a_custom_tool_node_runs_and_its_calls_are_recorded(ref: str, canary: Path) -> None:
    tool_router = router("live")
    [reply] = run(talk(ref, tool_router))
    assert len(ran(canary)) == 1
    assert reply.messages[0].startswith("The tool said: ")
    assert [(r.id, r.name, r.status) for r in tool_router.records] == [("call-1", "refund", "executed")]


def test_in_live_mode_a_tool_that_requires_approval_is_stopped_even_outside_a_toolnode(canary: Path) -> None:
    tool_router = router("live", declared=NEEDS_APPROVAL)
    [reply] = run(talk("CUSTOM_TOOL_GRAPH", tool_router))
    assert ran(canary) == []
    assert reply.messages == []
    assert tool_router.needs_approval
    # The node passed the arguments alone, without the model's call id.
    assert [(r.name, r.arguments, r.status) for r in tool_router.records] == [
        ("refund", {"order_id": "A1"}, "needs_approval")
    ]


@pytest.mark.parametrize("mode", ["test", "live"])
def test_a_custom_node_can_route_its_calls_through_the_handle_in_the_config(mode: ToolMode, canary: Path) -> None:
    tool_router = router(mode, FAKE)
    replies = run(talk("HANDLE_GRAPH", tool_router, turns=2))
    assert ran(canary) == []  # no `function:` for refund: live mode has nothing to run either
    assert len(replies) == 2
    # Recorded once each, by the router; the tool messages the node wrote are not recorded a second time.
    expected = "faked" if mode == "test" else "not_executed"
    assert [r.status for r in tool_router.records] == [expected, expected]


# -- the whole run: a refund, through the public API ----------------------------------------------------------------

REFUND_GRAPH_PY = '''\
import json
import os

from langchain_core.messages import AIMessage
from langchain_core.tools import tool
from langgraph.graph import END, START, MessagesState, StateGraph
from langgraph.prebuilt import ToolNode


@tool
def refund(order_id: str) -> str:
    """Refund an order."""
    with open(os.environ["SIMULATOR_TEST_CANARY"], "a", encoding="utf-8") as file:
        file.write(f"refund {order_id}\\n")
    return json.dumps({"refunded": order_id, "real": True})


async def model(state):
    last = state["messages"][-1]
    if last.type == "tool":
        return {"messages": [AIMessage(content=f"Refund result: {last.content}")]}
    call = {"name": "refund", "args": {"order_id": "A1"}, "id": "r1"}
    return {"messages": [AIMessage(content="", tool_calls=[call])]}


def route(state):
    return "tools" if state["messages"][-1].tool_calls else END


builder = StateGraph(MessagesState)
builder.add_node("model", model)
builder.add_node("tools", ToolNode([refund]))
builder.add_edge(START, "model")
builder.add_conditional_edges("model", route, ["tools", END])
builder.add_edge("tools", "model")
graph = builder.compile()
'''

REFUND_AGENT_YAML = """\
type: langgraph
graph: refund_graph:graph
tools:
  - name: refund
    description: Refund an order.
    requires_approval: {approval}
"""

REFUND_SUITE_YAML = """\
name: refunds
tool_fakes:
  - tool: refund
    arguments: {order_id: A1}
    result: {refunded: A1, fake: true}
cases:
  - name: refund
    kind: golden
    turns:
      - user: Refund order A1, please.
"""


def run_refund_suite(folder: Path, *, live: bool, approval: bool) -> Any:
    from simulator.llm import LLMClient
    from simulator.loading import load_suite
    from simulator.runner import find_case, model_roles, run_case

    (folder / ".git").mkdir(parents=True, exist_ok=True)
    (folder / "refund_graph.py").write_text(REFUND_GRAPH_PY, encoding="utf-8")
    (folder / "agent.yaml").write_text(REFUND_AGENT_YAML.format(approval=str(approval).lower()), encoding="utf-8")
    (folder / "suite.yaml").write_text(REFUND_SUITE_YAML, encoding="utf-8")
    loaded = load_suite(folder / "suite.yaml")
    options = RunSettings(live=live)
    llm = LLMClient(model_roles(loaded, options))
    return asyncio.run(run_case(loaded, find_case(loaded, "refund"), persona=None, llm=llm, options=options))


@pytest.mark.parametrize("approval", [True, False], ids=["requires_approval", "plain"])
def test_a_run_without_live_answers_the_graphs_refund_from_its_fake(
    approval: bool, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, canary: Path
) -> None:
    monkeypatch.setenv("SIMULATOR_TEST_CANARY", str(canary))
    transcript = run_refund_suite(tmp_path / f"suite-{approval}", live=False, approval=approval)
    assert ran(canary) == []
    assert transcript.error is None
    [call] = transcript.tool_calls()
    assert (call.name, call.status, call.fake, call.result) == (
        "refund",
        "faked",
        "suite tool_fakes[0]",
        {"refunded": "A1", "fake": True},
    )
    assert transcript.agent_events()[0].messages == ['Refund result: {"refunded": "A1", "fake": true}']


def test_a_live_run_stops_at_a_graph_tool_that_requires_approval(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, canary: Path
) -> None:
    monkeypatch.setenv("SIMULATOR_TEST_CANARY", str(canary))
    transcript = run_refund_suite(tmp_path / "approval", live=True, approval=True)
    assert ran(canary) == []
    assert transcript.stop_reason == "needs_approval"
    assert [call.status for call in transcript.tool_calls()] == ["needs_approval"]


def test_a_live_run_runs_the_graphs_own_tool(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, canary: Path) -> None:
    monkeypatch.setenv("SIMULATOR_TEST_CANARY", str(canary))
    transcript = run_refund_suite(tmp_path / "live", live=True, approval=False)
    assert ran(canary) == ["refund A1"]
    [call] = transcript.tool_calls()
    assert (call.status, call.result) == ("executed", '{"refunded": "A1", "real": true}')
