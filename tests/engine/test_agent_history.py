"""The agent under test gets the history a production client would send: from the second turn on, each earlier turn
with its assistant tool calls and one ``tool`` message per result, exactly as the adapter built them within the turn.

Every agent here is stateless, as an OpenAI-compatible agent is: it calls its tools once, and later answers from the
tool results it finds in the history. Given a history without them, it would call its tools again.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest
from aiohttp import web
from langchain_core.messages import AIMessage, ToolMessage
from langchain_core.tools import tool
from langgraph.graph import END, START, MessagesState, StateGraph
from langgraph.prebuilt import ToolNode, tools_condition
from pydantic import JsonValue, TypeAdapter

from simulator.agents import AgentAdapter, AgentInput, AgentReply, build_agent
from simulator.cassettes import Playback, cassette_of, decode, encode, recorded_agent
from simulator.engine import ConversationSetup, forget, open_checkpointer, simulate
from simulator.judges import StepJudge
from simulator.llm import FakeScript, FakeToolCall, LLMClient
from simulator.models import AgentConfig, Case, ToolFake
from simulator.models.settings import ModelRoles
from simulator.models.transcript import ToolRound, Transcript
from simulator.taps import recording
from simulator.tools import NOT_EXECUTED, ToolHandle, ToolRouter
from simulator.user import UserReply, UserTurnRequest

HERE = "tests.engine.test_agent_history"
TOOLS = [
    {"name": "lookup_order", "description": "Find an order.", "parameters": {"type": "object"}},
    {"name": "track_parcel", "description": "Track a parcel.", "parameters": {"type": "object"}},
]
SHIPPED: dict[str, JsonValue] = {"status": "shipped", "eta": "2026-12-03"}
FAKE = ToolFake(tool="lookup_order", arguments={"order_id": "A1"}, result=SHIPPED)
ASK, FOLLOW_UP = "Where is my order A1?", "When does it arrive?"
FIRST_ANSWER, SECOND_ANSWER = "Order A1 has shipped.", "It arrives on 2026-12-03."
EXPECTED = "Your order A1 has shipped with UPS."


def golden(replay: str = "simple") -> Case:
    turns: list[dict[str, Any]] = [{"user": ASK, "expect": {"message": EXPECTED}}, {"user": FOLLOW_UP}]
    return TypeAdapter(Case).validate_python({"kind": "golden", "name": "g", "replay": replay, "turns": turns})


def answer(messages: list[dict[str, Any]]) -> str | None:
    """What the stateless agent says, from the OpenAI-style conversation: None means "call the tools first"."""
    last_user = max(index for index, message in enumerate(messages) if message["role"] == "user")
    results = [message for message in messages if message["role"] == "tool"]
    if any(index > last_user for index, message in enumerate(messages) if message["role"] == "tool"):
        return FIRST_ANSWER
    if results:
        return f"It arrives on {json.loads(results[0]['content'])['eta']}."
    return None


class Nobody:
    """The simulated user of a golden case is never asked."""

    async def next_message(self, request: UserTurnRequest) -> UserReply:
        raise AssertionError("a golden case's user turns are scripted")


def converse(adapter: AgentAdapter, config: AgentConfig, replay: str = "simple") -> Transcript:
    setup = ConversationSetup(
        case=golden(replay), agent=adapter, user=Nobody(), checker=StepJudge(), agent_config=config, suite_fakes=[FAKE]
    )
    return asyncio.run(simulate(setup))


def agent_config(kind: str, **values: Any) -> AgentConfig:
    return TypeAdapter(AgentConfig).validate_python({"type": kind, "tools": TOOLS, **values})


def tool_turn(ids: list[str], content: str | None, arguments: str) -> list[dict[str, Any]]:
    """Turn 1's tool round as the chat adapters send it: the calls, then the result of each."""
    calls = [
        {"id": ids[0], "type": "function", "function": {"name": "lookup_order", "arguments": arguments}},
        {"id": ids[1], "type": "function", "function": {"name": "track_parcel", "arguments": arguments}},
    ]
    return [
        {"role": "assistant", "content": content, "tool_calls": calls},
        {"role": "tool", "tool_call_id": ids[0], "content": json.dumps(SHIPPED)},
        {"role": "tool", "tool_call_id": ids[1], "content": NOT_RUN},
    ]


#: What the agent got for ``track_parcel``, which no fake answers.
NOT_RUN = json.dumps(
    {
        "error": f"{NOT_EXECUTED}: no tool fake matches track_parcel(order_id='A1'); add a `tool_fakes` entry for "
        "it, or run with --live",
        "status": "not_executed",
    }
)


def assert_one_lookup(transcript: Transcript) -> None:
    """The agent answered turn 2 from turn 1's results: no tool was called again."""
    assert transcript.stop_reason == "completed", transcript.error
    assert [(call.name, call.status) for call in transcript.tool_calls()] == [
        ("lookup_order", "faked"),
        ("track_parcel", "not_executed"),
    ]
    assert [event.messages[-1] for event in transcript.agent_events()] == [FIRST_ANSWER, SECOND_ANSWER]


# --------------------------------------------------------------------------------------------------------------
# http: a stateless OpenAI-compatible endpoint


@asynccontextmanager
async def stateless_endpoint(
    content: str | None, *, ids: bool = True
) -> AsyncIterator[tuple[str, list[dict[str, Any]]]]:
    """An OpenAI-compatible agent on 127.0.0.1 that remembers nothing: it calls both tools (compact JSON arguments,
    ``content`` beside the calls; call ids unless ``ids`` is false) until it sees their results. Yields its URL and
    the request bodies as they arrive."""
    requests: list[dict[str, Any]] = []

    async def handle(request: web.Request) -> web.Response:
        body = await request.json()
        requests.append(body)
        said = answer(body["messages"])
        if said is None:
            calls: list[dict[str, Any]] = [
                {"id": f"c{n}", "type": "function", "function": {"name": name, "arguments": '{"order_id":"A1"}'}}
                for n, name in enumerate(["lookup_order", "track_parcel"], 1)
            ]
            if not ids:
                calls = [{key: value for key, value in call.items() if key != "id"} for call in calls]
            message: dict[str, Any] = {"role": "assistant", "content": content, "tool_calls": calls}
        else:
            message = {"role": "assistant", "content": said}
        return web.json_response({"choices": [{"index": 0, "message": message}]})

    app = web.Application()
    app.router.add_post("/v1/chat/completions", handle)
    runner = web.AppRunner(app)
    await runner.setup()
    await web.TCPSite(runner, "127.0.0.1", 0).start()
    host, port = runner.addresses[0][:2]
    try:
        yield f"http://{host}:{port}/v1", requests
    finally:
        await runner.cleanup()


def talk_to_endpoint(
    content: str | None, replay: str = "simple", wrap: Callable[[AgentAdapter], AgentAdapter] = lambda agent: agent
) -> tuple[Transcript, list[list[dict[str, Any]]]]:
    """A golden conversation with the stateless endpoint (its adapter wrapped by ``wrap``): the transcript, and the
    messages of each request."""

    async def main() -> tuple[Transcript, list[dict[str, Any]]]:
        async with stateless_endpoint(content) as (url, requests):
            config = agent_config("http", base_url=url, model="shop")
            setup = ConversationSetup(
                case=golden(replay),
                agent=wrap(build_agent(config)),
                user=Nobody(),
                checker=StepJudge(),
                agent_config=config,
                suite_fakes=[FAKE],
            )
            return await simulate(setup), requests

    transcript, requests = asyncio.run(main())
    return transcript, [request["messages"] for request in requests]


@pytest.mark.parametrize("content", [None, "", "Let me check."])
def test_a_stateless_http_agent_gets_its_tool_calls_and_their_results_back(content: str | None) -> None:
    transcript, requests = talk_to_endpoint(content)
    assert_one_lookup(transcript)
    first_turn, second_turn = requests[1], requests[2]
    # Turn 1's second request is the adapter's own history of the turn: turn 2 starts with it, byte for byte.
    assert first_turn == [{"role": "user", "content": ASK}, *tool_turn(["c1", "c2"], content, '{"order_id":"A1"}')]
    assert second_turn == [
        *first_turn,
        {"role": "assistant", "content": FIRST_ANSWER},
        {"role": "user", "content": FOLLOW_UP},
    ]
    assert len(requests) == 3


def test_made_up_call_ids_differ_from_turn_to_turn() -> None:
    """An endpoint that sends no call ids gets ids made up per turn: the history never holds one id twice."""

    async def main() -> list[str]:
        async with stateless_endpoint(None, ids=False) as (url, _):
            adapter = build_agent(agent_config("http", base_url=url, model="shop"))
            router = ToolRouter(fakes=[("suite tool_fakes[0]", FAKE)])
            ids: list[str] = []
            for turn in (1, 2):
                messages = [{"role": "user", "content": ASK}]  # no tool results: it calls its tools each time
                await adapter.respond(
                    AgentInput(messages, {}, ToolHandle(router, asyncio.get_running_loop()), turn=turn)
                )
                ids += [call.id for call in router.drain()]
            await adapter.aclose()
            return ids

    assert asyncio.run(main()) == ["call_1_0_0", "call_1_0_1", "call_2_0_0", "call_2_0_1"]


# --------------------------------------------------------------------------------------------------------------
# litellm: the fake backend, a model that remembers nothing either


def fake_model(messages: list[dict[str, Any]]) -> Any:
    said = answer([message for message in messages if message["role"] != "system"])
    if said is None:
        return [
            FakeToolCall("lookup_order", '{"order_id":"A1"}', id="t1"),
            FakeToolCall("track_parcel", '{"order_id":"A1"}', id="t2"),
        ]
    return said


def test_a_litellm_agent_gets_its_tool_calls_and_their_results_back() -> None:
    script = FakeScript().enqueue("shop", fake_model, times=5)
    llm = LLMClient(ModelRoles.model_validate({"agent": {"model": "fake/shop", "max_retries": 0}}), fake_script=script)
    config = agent_config("litellm", model="fake/shop", instructions="You are a shop assistant.")
    transcript = converse(build_agent(config, llm=llm), config)
    assert_one_lookup(transcript)
    system = {"role": "system", "content": "You are a shop assistant."}
    first_turn, second_turn = (request.messages for request in script.requests[1:])
    assert first_turn == [system, {"role": "user", "content": ASK}, *tool_turn(["t1", "t2"], None, '{"order_id":"A1"}')]
    assert second_turn == [
        *first_turn,
        {"role": "assistant", "content": FIRST_ANSWER},
        {"role": "user", "content": FOLLOW_UP},
    ]
    assert len(script.requests) == 3


# --------------------------------------------------------------------------------------------------------------
# python: a function that gets OpenAI-style messages

SEEN: list[list[dict[str, Any]]] = []


def python_agent(messages: list[dict[str, Any]], tools: ToolHandle) -> str:
    SEEN.append(messages)
    said = answer(messages)
    if said is None:
        tools.call("lookup_order", order_id="A1")
        tools.call("track_parcel", order_id="A1")
        said = FIRST_ANSWER
    return said


def test_a_python_agent_gets_its_tool_calls_and_their_results_back() -> None:
    SEEN.clear()
    config = agent_config("python", callable=f"{HERE}:python_agent")
    transcript = converse(build_agent(config), config)
    assert_one_lookup(transcript)
    assert SEEN[1] == [
        {"role": "user", "content": ASK},
        *tool_turn(["call_1", "call_2"], None, '{"order_id": "A1"}'),
        {"role": "assistant", "content": FIRST_ANSWER},
        {"role": "user", "content": FOLLOW_UP},
    ]


# --------------------------------------------------------------------------------------------------------------
# langgraph: a graph with langgraph's prebuilt ToolNode


@tool
def lookup_order(order_id: str) -> str:
    """Find an order."""
    raise AssertionError("test mode: a fake answers, the tool never runs")


@tool
def track_parcel(order_id: str) -> str:
    """Track a parcel."""
    raise AssertionError("test mode: the tool never runs")


GRAPH_SEEN: list[list[Any]] = []


def _model(state: MessagesState) -> dict[str, Any]:
    """A scripted model that remembers nothing: it reads the messages as a chat model would be sent them."""
    messages = list(state["messages"])
    GRAPH_SEEN.append(messages)
    openai_style = [
        {"role": "tool", "content": m.content}
        if isinstance(m, ToolMessage)
        else {"role": "user" if m.type == "human" else "assistant", "content": m.content}
        for m in messages
    ]
    said = answer(openai_style)
    if said is not None:
        return {"messages": [AIMessage(content=said)]}
    calls = [
        {"name": "lookup_order", "args": {"order_id": "A1"}, "id": "lc1"},
        {"name": "track_parcel", "args": {"order_id": "A1"}, "id": "lc2"},
    ]
    return {"messages": [AIMessage(content="", tool_calls=calls)]}


def _graph() -> Any:
    builder = StateGraph(MessagesState)
    builder.add_node("model", _model)
    builder.add_node("tools", ToolNode([lookup_order, track_parcel]))
    builder.add_edge(START, "model")
    builder.add_conditional_edges("model", tools_condition)
    builder.add_edge("tools", "model")
    builder.add_edge("model", END)
    return builder.compile()


TOOL_NODE_GRAPH = _graph()


def test_a_langgraph_graph_with_a_tool_node_gets_its_tool_calls_and_their_results_back() -> None:
    GRAPH_SEEN.clear()
    config = agent_config("langgraph", graph=f"{HERE}:TOOL_NODE_GRAPH")
    transcript = converse(build_agent(config), config)
    assert_one_lookup(transcript)
    first_turn, second_turn = GRAPH_SEEN[1], GRAPH_SEEN[2]  # turn 1 after its tools ran; turn 2
    assert [m.type for m in second_turn] == ["human", "ai", "tool", "tool", "ai", "human"]
    call, result = second_turn[1], second_turn[2]
    assert isinstance(call, AIMessage)
    assert isinstance(result, ToolMessage)
    assert [(c["id"], c["name"], c["args"]) for c in call.tool_calls] == [
        (c["id"], c["name"], c["args"]) for c in first_turn[1].tool_calls
    ]
    assert [(m.tool_call_id, m.name, m.content) for m in second_turn[2:4]] == [
        (m.tool_call_id, m.name, m.content) for m in first_turn[2:4]
    ]


# --------------------------------------------------------------------------------------------------------------
# golden stable replay: earlier turns as written, with the tool calls the agent made in them


@pytest.mark.parametrize("content", [None, "Let me check."])
def test_stable_replay_shows_the_expected_message_after_the_turns_tool_calls(content: str | None) -> None:
    transcript, requests = talk_to_endpoint(content, replay="stable")
    assert transcript.stop_reason == "completed", transcript.error
    # The expected message stands for all the agent said in turn 1, its text beside the calls included.
    assert requests[2] == [
        {"role": "user", "content": ASK},
        *tool_turn(["c1", "c2"], None, '{"order_id":"A1"}'),
        {"role": "assistant", "content": EXPECTED},
        {"role": "user", "content": FOLLOW_UP},
    ]
    assert [event.messages[-1] for event in transcript.agent_events()] == [FIRST_ANSWER, SECOND_ANSWER]


def test_stable_replay_of_a_python_agent() -> None:
    SEEN.clear()
    config = agent_config("python", callable=f"{HERE}:python_agent")
    transcript = converse(build_agent(config), config, replay="stable")
    assert transcript.golden_turns[1].history == "expected"
    assert SEEN[1] == [
        {"role": "user", "content": ASK},
        *tool_turn(["call_1", "call_2"], None, '{"order_id": "A1"}'),
        {"role": "assistant", "content": EXPECTED},
        {"role": "user", "content": FOLLOW_UP},
    ]


# --------------------------------------------------------------------------------------------------------------
# checkpoint and resume: the history is rebuilt from the checkpointed events


class Crash(BaseException):
    """Stands for the process dying: nothing in the engine catches it."""


class ToolAgent:
    """Calls ``lookup_order`` every turn, and remembers what it was sent; crashes at ``crash_on_turn``."""

    def __init__(self, crash_on_turn: int | None = None) -> None:
        self.crash_on_turn = crash_on_turn
        self.seen: dict[int, list[dict[str, Any]]] = {}

    async def respond(self, request: AgentInput) -> AgentReply:
        if request.turn == self.crash_on_turn:
            raise Crash
        self.seen[request.turn] = request.messages
        await request.tools.acall("lookup_order", order_id="A1")
        return AgentReply(messages=[f"reply {request.turn}"])

    async def aclose(self) -> None:
        return None


def three_turns(agent: ToolAgent) -> ConversationSetup:
    case = TypeAdapter(Case).validate_python(
        {"kind": "golden", "name": "g", "turns": [{"user": "one"}, {"user": "two"}, {"user": "three"}]}
    )
    return ConversationSetup(case=case, agent=agent, user=Nobody(), checker=StepJudge(), suite_fakes=[FAKE])


def test_a_resumed_conversation_gets_the_same_history_with_its_tool_results(tmp_path: Path) -> None:
    async def main() -> tuple[ToolAgent, ToolAgent, Transcript]:
        whole = ToolAgent()
        await simulate(three_turns(whole))
        async with open_checkpointer(tmp_path / "checkpoints.db") as saver:
            with pytest.raises(Crash):
                await simulate(three_turns(ToolAgent(crash_on_turn=3)), checkpointer=saver, thread_id="t")
        async with open_checkpointer(tmp_path / "checkpoints.db") as saver:
            resumed = ToolAgent()
            transcript = await simulate(three_turns(resumed), checkpointer=saver, thread_id="t")
            await forget(saver, "t")
        return whole, resumed, transcript

    whole, resumed, transcript = asyncio.run(main())
    # The resumed conversation makes up no id its earlier calls have (the next history would hold both).
    assert [call.id for call in transcript.tool_calls()] == ["call_1", "call_2", "call_3"]
    assert list(resumed.seen) == [3]
    assert resumed.seen[3] == whole.seen[3]
    assert [m["role"] for m in resumed.seen[3]] == ["user", "assistant", "tool", "assistant"] * 2 + ["user"]
    assert [m["tool_call_id"] for m in resumed.seen[3] if m["role"] == "tool"] == ["call_1", "call_2"]


def test_a_recorded_conversation_replays_with_its_tool_rounds() -> None:
    with recording() as tape:
        recorded, _ = talk_to_endpoint("Let me check.", wrap=recorded_agent)
    cassette = decode(
        encode(cassette_of(tape, run_id="r", key="k", case="g", persona=None, simulator_version="0")), where="test"
    )
    setup = ConversationSetup(
        case=golden(), agent=Playback(cassette, "r").agent(None), user=Nobody(), checker=StepJudge(), suite_fakes=[FAKE]
    )
    replayed = asyncio.run(simulate(setup))

    def turns(transcript: Transcript) -> list[Any]:
        return [
            (event.messages, event.tool_rounds, [call.model_dump(exclude={"duration_ms"}) for call in event.tool_calls])
            for event in transcript.agent_events()
        ]

    assert turns(replayed) == turns(recorded)
    assert recorded.agent_events()[0].tool_rounds == [ToolRound(calls=["c1", "c2"], content="text")]
    assert [call.arguments_text for call in recorded.tool_calls()] == ['{"order_id":"A1"}'] * 2


MEDDLER_SEEN: dict[int, list[dict[str, Any]]] = {}


def meddling_agent(messages: list[dict[str, Any]], tools: ToolHandle, turn: int) -> str:
    """Calls its tool, then changes every message it was given, tool calls included."""
    MEDDLER_SEEN[turn] = json.loads(json.dumps(messages))
    tools.call("lookup_order", order_id="A1")
    for message in messages:
        message["content"] = "changed"
        for call in message.get("tool_calls", []):
            call["id"] = call["function"]["name"] = "changed"
    return f"reply {turn}"


def test_a_python_agent_that_changes_the_messages_it_is_given_changes_no_later_history() -> None:
    MEDDLER_SEEN.clear()
    config = agent_config("python", callable=f"{HERE}:meddling_agent")
    setup = three_turns(ToolAgent())
    setup.agent, setup.agent_config = build_agent(config), config
    asyncio.run(simulate(setup))
    first_turn = [
        {"role": "user", "content": "one"},
        {"role": "assistant", "content": None, "tool_calls": [tool_call("call_1")]},
        {"role": "tool", "tool_call_id": "call_1", "content": json.dumps(SHIPPED)},
        {"role": "assistant", "content": "reply 1"},
    ]
    assert MEDDLER_SEEN[2][:4] == first_turn
    assert MEDDLER_SEEN[3][:4] == first_turn


def tool_call(id_: str) -> dict[str, Any]:
    return {"id": id_, "type": "function", "function": {"name": "lookup_order", "arguments": '{"order_id": "A1"}'}}
