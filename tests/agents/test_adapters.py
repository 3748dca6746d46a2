"""Tests of the adapters for the agent under test: python, http, litellm and langgraph, and their shared base.

Everything runs offline: the HTTP agent is a small aiohttp server on 127.0.0.1, the litellm agent runs on the
``fake/...`` provider, and the LangGraph agent is a real graph built in this module. The module-level agents and
graphs below are what the configs point at (``tests.agents.test_adapters:...``).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import socket
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from aiohttp import web
from langchain_core.messages import AIMessage, ToolMessage
from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph import END, START, MessagesState, StateGraph
from pydantic import JsonValue

from simulator.agents import AgentInput, AgentReply, build_agent, event_message, import_ref, wire_messages
from simulator.agents._base import normalize_reply
from simulator.agents._chat import MAX_TOOL_ROUNDS
from simulator.agents.http_agent import HttpAdapter, _ssl_context
from simulator.agents.langgraph_agent import LanggraphAdapter
from simulator.agents.litellm_agent import LitellmAdapter
from simulator.agents.python_agent import PythonAdapter
from simulator.errors import AgentError
from simulator.llm import FakeScript, FakeToolCall, LLMClient, RetryPolicy, fake_auth_error
from simulator.models import EventSpec, HttpAgent, LanggraphAgent, LitellmAgent, PythonAgent, ToolDeclaration, ToolFake
from simulator.models.settings import ModelRoles
from simulator.models.transcript import ToolRound
from simulator.taps import recording
from simulator.tools import NOT_EXECUTED, ToolHandle, ToolRouter
from tests.factories import no_sleep as no_wait
from tests.factories import run

HERE = "tests.agents.test_adapters"
ROOT = Path(__file__).resolve().parent.parent.parent
LOOKUP = ToolDeclaration(
    name="lookup_order",
    description="Find an order.",
    parameters={"type": "object", "properties": {"order_id": {"type": "string"}}},
)
SHIPPED = ToolFake(tool="lookup_order", arguments={"order_id": "A1"}, result={"status": "shipped"})
HELLO = [{"role": "user", "content": "Where is my order A1?"}]


def make_router(*fakes: ToolFake) -> ToolRouter:
    return ToolRouter(declared=[LOOKUP], fakes=[(f"suite tool_fakes[{i}]", fake) for i, fake in enumerate(fakes)])


def make_input(
    router: ToolRouter,
    messages: list[dict[str, Any]] | None = None,
    session: dict[str, JsonValue] | None = None,
    **extra: Any,
) -> AgentInput:
    """An AgentInput whose tool handle is bound to the running loop (call inside the test's coroutine)."""
    return AgentInput(
        messages=list(HELLO if messages is None else messages),
        session=session or {},
        tools=ToolHandle(router, asyncio.get_running_loop()),
        **extra,
    )


async def respond_once(adapter: Any, request: AgentInput) -> AgentReply:
    try:
        reply: AgentReply = await adapter.respond(request)
    finally:
        await adapter.aclose()
    return reply


# --------------------------------------------------------------------------------------------------------------
# _base


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        (None, AgentReply()),
        ("hi", AgentReply(messages=["hi"])),
        (["a", "b"], AgentReply(messages=["a", "b"])),
        ([], AgentReply()),
        ({"content": "hi"}, AgentReply(messages=["hi"])),
        ({"role": "assistant", "content": None}, AgentReply()),
        ({"messages": ["a", "b"], "handoff": "human"}, AgentReply(messages=["a", "b"], handoff="human")),
        ({"content": "ok", "variables": {"tier": "gold"}}, AgentReply(messages=["ok"], variables={"tier": "gold"})),
        (AgentReply(messages=["x"], handoff="billing"), AgentReply(messages=["x"], handoff="billing")),
    ],
)
def test_normalize_reply_accepts(value: Any, expected: AgentReply) -> None:
    assert normalize_reply(value) == expected


@pytest.mark.parametrize(
    ("value", "error"),
    [
        (42, "got int"),
        (["a", 1], "got list"),
        ({"content": 3}, "must be text or a list of texts"),
        ({"content": ["a", 2]}, "must be text or a list of texts"),
        ({"content": "x", "handoff": 1}, "`handoff` must be text"),
        ({"content": "x", "variables": ["a"]}, "`variables` must be a mapping"),
        ({"content": "x", "mood": "happy", "extra": 1}, "unknown keys in the reply: extra, mood"),
    ],
)
def test_normalize_reply_rejects(value: Any, error: str) -> None:
    with pytest.raises(TypeError, match=error):
        normalize_reply(value)


def test_event_message_and_wire_messages() -> None:
    with_payload = event_message(EventSpec(name="button_pressed", payload={"id": "yes"}))
    assert with_payload["role"] == "user"
    assert with_payload["content"] == '[event: button_pressed] {"id": "yes"}'
    assert with_payload["event"] == {"name": "button_pressed", "payload": {"id": "yes"}}
    assert event_message(EventSpec(name="hang_up"))["content"] == "[event: hang_up]"
    wired = wire_messages([with_payload, {"role": "tool", "tool_call_id": "c1", "content": "{}", "extra": 1}])
    assert wired == [
        {"role": "user", "content": '[event: button_pressed] {"id": "yes"}'},
        {"role": "tool", "tool_call_id": "c1", "content": "{}"},
    ]


# --------------------------------------------------------------------------------------------------------------
# python adapter: the agents the configs point at


def sync_agent(messages: list[dict[str, Any]], tools: ToolHandle) -> str:
    """A sync agent: runs in a worker thread and calls its tool synchronously."""
    order = tools.call("lookup_order", order_id="A1")
    missing = tools.call("cancel_order", order_id="A1")
    return f"{messages[-1]['content']} -> {json.dumps(order)} / {json.dumps(missing)}"


async def async_agent(
    messages: list[dict[str, Any]], *, session: dict[str, Any], tools: ToolHandle, turn: int, options: dict[str, Any]
) -> dict[str, Any]:
    """An async agent that uses every keyword it can ask for."""
    order = await tools.acall("lookup_order", order_id="A1")
    return {
        "content": [f"{session['customer']}: {json.dumps(order)}", f"turn {turn}, tone {options['tone']}"],
        "variables": {"looked_up": True},
    }


def kwargs_agent(messages: list[dict[str, Any]], **kwargs: Any) -> str:
    """``**kwargs`` gets every optional keyword."""
    return ",".join(sorted(kwargs))


def messages_only(messages: list[dict[str, Any]]) -> list[str]:
    """Asks for nothing but the messages; must not get anything else."""
    messages.append({"role": "user", "content": "mutated"})  # a copy: must not leak into the caller's history
    return [str(len(messages))]


def bad_agent(messages: list[dict[str, Any]]) -> int:
    return 42


class CountingAgent:
    """A class agent: made once per conversation with the options, so it may keep state."""

    def __init__(self, greeting: str = "hi") -> None:
        self.greeting = greeting
        self.count = 0

    def respond(self, messages: list[dict[str, Any]], event: EventSpec | None = None) -> str:
        self.count += 1
        seen = f" after {event.name}" if event else ""
        return f"{self.greeting} #{self.count}{seen}"


class CallableAgent:
    """A class agent without ``respond``: its instances are called."""

    async def __call__(self, messages: list[dict[str, Any]]) -> AgentReply:
        return AgentReply(messages=["called"], handoff="human")


class BrokenAgent:
    def __init__(self) -> None:
        raise RuntimeError("no database")


NOT_CALLABLE = 3


def python_agent(ref: str, **options: JsonValue) -> PythonAdapter:
    return PythonAdapter(PythonAgent(type="python", callable=f"{HERE}:{ref}", options=options))


def test_python_sync_agent_calls_tools_from_its_thread() -> None:
    router = make_router(SHIPPED)

    async def main() -> AgentReply:
        return await respond_once(python_agent("sync_agent"), make_input(router))

    reply = run(main())
    assert len(reply.messages) == 1
    assert reply.messages[0].startswith('Where is my order A1? -> {"status": "shipped"} / {"error": ')
    assert NOT_EXECUTED in reply.messages[0]
    assert [(r.name, r.status) for r in router.records] == [("lookup_order", "faked"), ("cancel_order", "not_executed")]
    assert router.records[0].fake == "suite tool_fakes[0]"
    assert "the agent declares no such tool" in (router.records[1].error or "")


def test_python_async_agent_gets_the_keywords_it_asks_for() -> None:
    router = make_router(SHIPPED)

    async def main() -> AgentReply:
        adapter = python_agent("async_agent", tone="warm")
        return await respond_once(adapter, make_input(router, session={"customer": "Ana"}, turn=3))

    reply = run(main())
    assert reply.messages == ['Ana: {"status": "shipped"}', "turn 3, tone warm"]
    assert reply.variables == {"looked_up": True}
    assert [r.status for r in router.records] == ["faked"]


def test_python_agent_with_kwargs_gets_every_keyword() -> None:
    async def main() -> AgentReply:
        return await respond_once(python_agent("kwargs_agent"), make_input(make_router()))

    assert run(main()).messages == ["event,options,session,tools,turn"]


def test_python_callable_that_accepts_only_messages_gets_a_copy() -> None:
    history = [*HELLO]

    async def main() -> AgentReply:
        return await respond_once(python_agent("messages_only"), make_input(make_router(), messages=history))

    assert run(main()).messages == ["2"]
    assert history == HELLO


def test_python_class_agent_keeps_state_per_conversation() -> None:
    async def main() -> tuple[list[str], list[str]]:
        first, second = python_agent("CountingAgent", greeting="hello"), python_agent("CountingAgent")
        router = make_router()
        event = EventSpec(name="button_pressed")
        texts = [
            *(await first.respond(make_input(router))).messages,
            *(await first.respond(make_input(router, event=event))).messages,
        ]
        other = (await second.respond(make_input(router))).messages
        await first.aclose()
        await second.aclose()
        return texts, other

    texts, other = run(main())
    assert texts == ["hello #1", "hello #2 after button_pressed"]
    assert other == ["hi #1"]


def test_python_callable_class_instance_async() -> None:
    async def main() -> AgentReply:
        return await respond_once(python_agent("CallableAgent"), make_input(make_router()))

    assert run(main()) == AgentReply(messages=["called"], handoff="human")


def test_python_bad_return_type_is_an_agent_error() -> None:
    async def main() -> AgentReply:
        return await respond_once(python_agent("bad_agent"), make_input(make_router()))

    with pytest.raises(AgentError, match=r"returned something unusable: .*got int"):
        run(main())


@pytest.mark.parametrize(
    ("ref", "error"),
    [
        ("tests.agents.no_such_module:agent", r"cannot import agent .*ModuleNotFoundError.*Check the module path"),
        (f"{HERE}:no_such_agent", r"module 'tests.agents.test_adapters' has no 'no_such_agent'"),
        (f"{HERE}:NOT_CALLABLE", r"is not callable"),
        (f"{HERE}:BrokenAgent", r"could not create agent .*RuntimeError: no database"),
    ],
)
def test_python_agent_that_cannot_be_loaded(ref: str, error: str) -> None:
    with pytest.raises(AgentError, match=error):
        PythonAdapter(PythonAgent(type="python", callable=ref))


def test_import_ref_resolves_dotted_attributes() -> None:
    assert import_ref(f"{HERE}:CountingAgent.respond", what="agent") is CountingAgent.respond


def test_build_agent_picks_the_adapter_and_litellm_needs_a_client() -> None:
    assert isinstance(build_agent(PythonAgent(type="python", callable=f"{HERE}:sync_agent")), PythonAdapter)
    config = LitellmAgent(type="litellm", model="fake/shop", instructions="Be brief.")
    with pytest.raises(AgentError, match="needs the model client"):
        build_agent(config)
    llm = LLMClient(ModelRoles.model_validate({"agent": "fake/shop"}), fake_script=FakeScript())
    assert isinstance(build_agent(config, llm=llm), LitellmAdapter)
    assert isinstance(build_agent(LanggraphAgent(type="langgraph", graph=f"{HERE}:GRAPH")), LanggraphAdapter)

    async def main() -> None:
        adapter = build_agent(HttpAgent(type="http", base_url="http://127.0.0.1:9/v1"))
        assert isinstance(adapter, HttpAdapter)
        await adapter.aclose()

    run(main())


# --------------------------------------------------------------------------------------------------------------
# http adapter: a scripted OpenAI-compatible server


def text_reply(content: str | None) -> dict[str, Any]:
    return {"choices": [{"index": 0, "finish_reason": "stop", "message": {"role": "assistant", "content": content}}]}


def tool_reply(*calls: tuple[str, str, str]) -> dict[str, Any]:
    tool_calls = [
        {"id": call_id, "type": "function", "function": {"name": name, "arguments": arguments}}
        for call_id, name, arguments in calls
    ]
    message = {"role": "assistant", "content": None, "tool_calls": tool_calls}
    return {"choices": [{"index": 0, "finish_reason": "tool_calls", "message": message}]}


@dataclass
class Scripted:
    """One scripted answer: a JSON body (or raw text), a status, and a delay before answering.

    ``fault`` breaks the connection instead: ``"reset"`` before any reply, ``"cut"`` after the status line and
    part of the body.
    """

    body: dict[str, Any] | str
    status: int = 200
    delay: float = 0.0
    headers: dict[str, str] = field(default_factory=dict)
    fault: str | None = None


@dataclass
class ChatServer:
    """A tiny OpenAI-compatible chat-completions server that answers from a script and records requests."""

    script: list[Scripted]
    requests: list[dict[str, Any]] = field(default_factory=list)
    headers: list[dict[str, str]] = field(default_factory=list)
    #: When each request arrived (the loop's clock), to measure the waits between retries.
    times: list[float] = field(default_factory=list)
    url: str = ""
    _release: asyncio.Event = field(default_factory=asyncio.Event)
    _runner: web.AppRunner | None = None

    async def __aenter__(self) -> ChatServer:
        app = web.Application()
        app.router.add_post("/v1/chat/completions", self._handle)
        self._runner = web.AppRunner(app)
        await self._runner.setup()
        await web.TCPSite(self._runner, "127.0.0.1", 0).start()
        host, port = self._runner.addresses[0][:2]
        self.url = f"http://{host}:{port}/v1"
        return self

    async def __aexit__(self, *exc: object) -> None:
        self._release.set()  # let a deliberately slow handler finish, so the server shuts down at once
        assert self._runner is not None
        await self._runner.cleanup()

    async def _handle(self, request: web.Request) -> web.StreamResponse:
        self.times.append(asyncio.get_running_loop().time())
        self.requests.append(await request.json())
        self.headers.append(dict(request.headers))
        answer = self.script.pop(0) if self.script else Scripted({"error": "script exhausted"}, status=599)
        if answer.delay:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._release.wait(), answer.delay)
        text = answer.body if isinstance(answer.body, str) else json.dumps(answer.body)
        transport = request.transport
        if answer.fault == "reset" and transport is not None:
            transport.abort()  # the connection drops before any reply
            return web.Response()
        if answer.fault == "cut" and transport is not None:
            streamed = web.StreamResponse(status=answer.status, headers=answer.headers)
            streamed.content_type = "application/json"
            streamed.content_length = len(text.encode()) + 100
            await streamed.prepare(request)
            await streamed.write(text.encode()[: len(text) // 2])
            await asyncio.sleep(0.05)
            transport.abort()  # the reply started, then the connection broke
            return streamed
        return web.Response(status=answer.status, text=text, content_type="application/json", headers=answer.headers)


def http_config(url: str, **values: Any) -> HttpAgent:
    return HttpAgent.model_validate({"type": "http", "base_url": url, "model": "shop-bot", **values})


#: Retries without waiting, for tests that are not about the waits.
INSTANT = RetryPolicy(sleep=no_wait)


async def talk_http(
    server_script: list[Scripted],
    router: ToolRouter,
    make: Callable[[str], HttpAgent] = http_config,
    retry: RetryPolicy = INSTANT,
    **extra: Any,
) -> tuple[AgentReply, ChatServer]:
    async with ChatServer(server_script) as server:
        reply = await respond_once(HttpAdapter(make(server.url), retry=retry), make_input(router, **extra))
    return reply, server


def test_http_plain_reply_sends_auth_headers_session_and_tools(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SHOP_KEY", "sk-test-123")
    monkeypatch.setenv("SHOP_TENANT", "acme")
    event = event_message(EventSpec(name="button_pressed"))

    def make(url: str) -> HttpAgent:
        return http_config(url, api_key_env="SHOP_KEY", headers_from_env={"X-Tenant": "SHOP_TENANT"}, tools=[LOOKUP])

    reply, server = run(
        talk_http(
            [Scripted(text_reply("Hello Ana"))],
            make_router(),
            make,
            messages=[*HELLO, event],
            session={"customer": "Ana", "tier": 2},
        )
    )
    assert reply == AgentReply(messages=["Hello Ana"])
    assert server.headers[0]["Authorization"] == "Bearer sk-test-123"
    assert server.headers[0]["X-Tenant"] == "acme"
    body = server.requests[0]
    assert body["model"] == "shop-bot"
    assert body["messages"] == [
        {"role": "system", "content": 'Session parameters: {"customer": "Ana", "tier": 2}'},
        *HELLO,
        {"role": "user", "content": "[event: button_pressed]"},  # the "event" key is not sent
    ]
    assert body["tools"] == [
        {
            "type": "function",
            "function": {"name": "lookup_order", "description": "Find an order.", "parameters": LOOKUP.parameters},
        }
    ]


def test_http_without_session_or_tools_sends_neither() -> None:
    reply, server = run(talk_http([Scripted(text_reply(""))], make_router()))
    assert reply == AgentReply(messages=[])
    assert server.requests[0] == {"model": "shop-bot", "messages": HELLO}
    assert "Authorization" not in server.headers[0]


def test_http_tool_calls_are_routed_and_sent_back() -> None:
    router = make_router(SHIPPED)
    script = [
        Scripted(
            tool_reply(
                ("c1", "lookup_order", '{"order_id": "A1"}'),
                ("c2", "refund", '{"order_id": "A1"}'),
                ("c3", "lookup_order", '{"order_id": '),
            )
        ),
        Scripted(text_reply("Your order A1 has shipped.")),
    ]
    reply, server = run(talk_http(script, router))
    assert reply.messages == ["Your order A1 has shipped."]
    assert [(r.id, r.name, r.status) for r in router.records] == [
        ("c1", "lookup_order", "faked"),
        ("c2", "refund", "not_executed"),
        ("c3", "lookup_order", "failed"),
    ]
    assert router.records[2].arguments_error is not None
    assert router.records[2].arguments == {"_raw": '{"order_id": '}

    second = server.requests[1]["messages"]
    assert second[:1] == HELLO
    assert second[1]["role"] == "assistant"
    assert [call["id"] for call in second[1]["tool_calls"]] == ["c1", "c2", "c3"]
    tool_messages = second[2:]
    assert [m["tool_call_id"] for m in tool_messages] == ["c1", "c2", "c3"]
    assert json.loads(tool_messages[0]["content"]) == {"status": "shipped"}
    refund = json.loads(tool_messages[1]["content"])
    assert refund["status"] == "not_executed"
    assert NOT_EXECUTED in refund["error"]
    assert "not valid JSON" in json.loads(tool_messages[2]["content"])["error"]


def test_a_recorded_http_agent_keeps_each_request_body_and_response_message_and_no_header(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("SHOP_KEY", "sk-recorded-0123456789")
    script = [Scripted(tool_reply(("c1", "lookup_order", '{"order_id": "A1"}'))), Scripted(text_reply("Shipped."))]
    with recording() as tape:
        _, server = run(talk_http(script, make_router(SHIPPED), lambda url: http_config(url, api_key_env="SHOP_KEY")))
    assert [(entry["role"], entry["kind"]) for entry in tape.entries] == [("agent", "http"), ("agent", "http")]
    assert [entry["request"] for entry in tape.entries] == server.requests
    assert tape.entries[0]["response"]["tool_calls"][0]["id"] == "c1"
    assert tape.entries[1]["response"] == {"role": "assistant", "content": "Shipped."}
    assert "sk-recorded" not in json.dumps(tape.entries)


def test_http_text_alongside_tool_calls_is_kept() -> None:
    first = tool_reply(("c1", "lookup_order", '{"order_id": "A1"}'))
    first["choices"][0]["message"]["content"] = "Let me check."
    reply, _ = run(talk_http([Scripted(first), Scripted(text_reply("Shipped."))], make_router(SHIPPED)))
    assert reply.messages == ["Let me check.", "Shipped."]


def test_http_agent_that_keeps_calling_tools_is_stopped() -> None:
    router = make_router(SHIPPED)
    loop = [Scripted(tool_reply((f"c{i}", "lookup_order", '{"order_id": "A1"}'))) for i in range(MAX_TOOL_ROUNDS + 1)]

    async def main() -> ChatServer:
        async with ChatServer(loop) as server:
            with pytest.raises(AgentError, match="agent kept calling tools"):
                await respond_once(HttpAdapter(http_config(server.url)), make_input(router))
        return server

    server = run(main())
    assert len(server.requests) == MAX_TOOL_ROUNDS + 1
    assert len(router.records) == MAX_TOOL_ROUNDS


@pytest.mark.parametrize(
    ("answer", "error"),
    [
        (Scripted('{"error": "boom: model crashed"}', status=500), r"answered 500 Internal Server Error: .*boom"),
        (Scripted("<html>" + "x" * 1000, status=502), r"answered 502 Bad Gateway: <html>x+… \("),
        (Scripted("this is not json"), r"not valid JSON: this is not json"),
        (Scripted({"id": "x", "object": "error"}), r"without `choices\[0\].message`"),
        (Scripted({"choices": []}), r"without `choices\[0\].message`"),
        (Scripted(text_reply("late"), delay=2.0), r"did not answer within 0.2 s"),
    ],
)
def test_http_failures_are_agent_errors(answer: Scripted, error: str) -> None:
    # Only the late answer is meant to time out: the others get a timeout a loaded machine never reaches, so a
    # slow 500 is still read as a 500 (0.2 s for all of them timed out under load).
    timeout = 0.2 if answer.delay else 60.0

    def make(url: str) -> HttpAgent:
        return http_config(url, timeout=timeout, retries=0)

    with pytest.raises(AgentError, match=error):
        run(talk_http([answer], make_router(), make))


def test_http_error_excerpt_hides_the_api_key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SHOP_KEY", "sk-secret-999")

    def make(url: str) -> HttpAgent:
        return http_config(url, api_key_env="SHOP_KEY")

    with pytest.raises(AgentError, match="401") as caught:
        run(talk_http([Scripted('{"error": "bad key sk-secret-999"}', status=401)], make_router(), make))
    assert "sk-secret-999" not in str(caught.value)
    assert "***" in str(caught.value)


def test_http_unreachable_agent_is_an_agent_error() -> None:
    with socket.socket() as probe:  # a port that was free a moment ago: nothing listens there
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]

    async def main() -> AgentReply:
        adapter = HttpAdapter(http_config(f"http://127.0.0.1:{port}/v1"), retry=INSTANT)
        return await respond_once(adapter, make_input(make_router()))

    with pytest.raises(
        AgentError, match=rf"cannot reach the HTTP agent at http://127.0.0.1:{port}/v1/chat/completions"
    ):
        run(main())


def test_only_an_https_agent_loads_the_ca_bundle() -> None:
    # Loading it costs 20-40 ms of CPU before the first request; an http:// agent never speaks TLS.
    _ssl_context.cache_clear()

    async def main() -> tuple[int, int]:
        plain = HttpAdapter(http_config("http://127.0.0.1:9/v1"))
        after_plain = _ssl_context.cache_info().currsize
        secure = HttpAdapter(http_config("https://agent.example/v1"))
        after_secure = _ssl_context.cache_info().currsize
        await plain.aclose()
        await secure.aclose()
        return after_plain, after_secure

    assert run(main()) == (0, 1)


@pytest.mark.parametrize(
    ("values", "error"),
    [
        (
            {"api_key_env": "SIMULATOR_TEST_UNSET_KEY"},
            r"`api_key_env` names the environment variable "
            r"SIMULATOR_TEST_UNSET_KEY, but it is not set",
        ),
        (
            {"headers_from_env": {"X-Tenant": "SIMULATOR_TEST_UNSET_TENANT"}},
            r"`headers_from_env.X-Tenant` names the environment variable SIMULATOR_TEST_UNSET_TENANT",
        ),
    ],
)
def test_http_missing_environment_variables(
    monkeypatch: pytest.MonkeyPatch, values: dict[str, Any], error: str
) -> None:
    monkeypatch.delenv("SIMULATOR_TEST_UNSET_KEY", raising=False)
    monkeypatch.delenv("SIMULATOR_TEST_UNSET_TENANT", raising=False)
    with pytest.raises(AgentError, match=error):
        HttpAdapter(http_config("http://127.0.0.1:9/v1", **values))


# --------------------------------------------------------------------------------------------------------------
# litellm adapter: the fake provider


def shop_agent(**values: Any) -> LitellmAgent:
    return LitellmAgent.model_validate(
        {
            "type": "litellm",
            "model": "fake/shop",
            "instructions": "You are a shop assistant.",
            "tools": [LOOKUP],
            **values,
        }
    )


def shop_client(script: FakeScript, model: str = "fake/shop") -> LLMClient:
    return LLMClient(ModelRoles.model_validate({"agent": {"model": model, "max_retries": 0}}), fake_script=script)


def talk_litellm(config: LitellmAgent, script: FakeScript, router: ToolRouter, **extra: Any) -> AgentReply:
    async def main() -> AgentReply:
        return await respond_once(LitellmAdapter(config, shop_client(script)), make_input(router, **extra))

    return run(main())


def test_litellm_agent_calls_tools_then_answers() -> None:
    script = FakeScript().enqueue(
        "shop", [FakeToolCall("lookup_order", {"order_id": "A1"}, id="t1")], "Your order A1 has shipped."
    )
    router = make_router(SHIPPED)
    reply = talk_litellm(shop_agent(temperature=0.2, max_tokens=50), script, router, session={"customer": "Ana"})
    # The reply says which of its messages made which calls, so the next turn's history shows them the same way.
    assert reply == AgentReply(
        messages=["Your order A1 has shipped."], tool_rounds=[ToolRound(calls=["t1"], content="null")]
    )
    assert [(r.id, r.name, r.status, r.result) for r in router.records] == [
        ("t1", "lookup_order", "faked", {"status": "shipped"})
    ]
    first, second = script.requests
    assert first.messages[0] == {
        "role": "system",
        "content": 'You are a shop assistant.\n\nSession parameters: {"customer": "Ana"}',
    }
    assert first.tools is not None
    assert first.tools[0]["function"]["name"] == "lookup_order"
    assert first.params["temperature"] == 0.2
    assert first.params["max_tokens"] == 50
    tool_message = second.messages[-1]
    assert tool_message["role"] == "tool"
    assert tool_message["tool_call_id"] == "t1"
    assert json.loads(tool_message["content"]) == {"status": "shipped"}
    assert second.messages[-2]["tool_calls"][0]["function"]["name"] == "lookup_order"


def test_litellm_agent_without_session_has_only_its_instructions() -> None:
    script = FakeScript().enqueue("shop", "Hello!")
    reply = talk_litellm(shop_agent(tools=[]), script, make_router())
    assert reply.messages == ["Hello!"]
    assert script.requests[0].messages == [{"role": "system", "content": "You are a shop assistant."}, *HELLO]
    assert script.requests[0].tools is None


def test_litellm_malformed_arguments_are_recorded_and_reported_back() -> None:
    script = FakeScript().enqueue("shop", [FakeToolCall("lookup_order", '{"order_id": ', id="t1")], "Sorry.")
    router = make_router(SHIPPED)
    assert talk_litellm(shop_agent(), script, router).messages == ["Sorry."]
    [record] = router.records
    assert record.status == "failed"
    assert record.arguments_error is not None
    assert "not valid JSON" in json.loads(script.requests[1].messages[-1]["content"])["error"]


def test_litellm_agent_that_keeps_calling_tools_is_stopped() -> None:
    script = FakeScript().enqueue("shop", [FakeToolCall("lookup_order", {"order_id": "A1"})], times=MAX_TOOL_ROUNDS + 1)
    router = make_router(SHIPPED)
    with pytest.raises(AgentError, match="agent kept calling tools"):
        talk_litellm(shop_agent(), script, router)
    assert len(script.requests) == MAX_TOOL_ROUNDS + 1
    assert len(router.records) == MAX_TOOL_ROUNDS


def test_litellm_model_error_is_an_agent_error() -> None:
    script = FakeScript().enqueue("shop", fake_auth_error("invalid API key (fake)"))
    with pytest.raises(AgentError, match=r"could not answer: agent model 'fake/shop'.*invalid API key") as caught:
        talk_litellm(shop_agent(), script, make_router())
    assert caught.value.__cause__ is not None


@pytest.mark.parametrize("role_model", ["fake/other", None])
def test_litellm_agent_refuses_a_different_role_model(role_model: str | None) -> None:
    llm = LLMClient(ModelRoles.model_validate({"agent": {"model": role_model}}), fake_script=FakeScript())
    with pytest.raises(
        AgentError,
        match=rf"defined with model 'fake/shop', but the agent model role is set to "
        rf"{role_model!r}.*models.agent.model",
    ):
        LitellmAdapter(shop_agent(), llm)


# --------------------------------------------------------------------------------------------------------------
# langgraph adapter: a real graph, built here


async def _ask_tool(state: MessagesState) -> dict[str, Any]:
    call = {"name": "lookup_order", "args": {"order_id": "A1"}, "id": f"tc{len(state['messages'])}"}
    return {"messages": [AIMessage(content="", tool_calls=[call])]}


async def _run_tool(state: MessagesState) -> dict[str, Any]:
    last = state["messages"][-1]
    assert isinstance(last, AIMessage)
    call = last.tool_calls[0]
    result = json.dumps({"order_id": call["args"]["order_id"], "status": "shipped"})
    return {"messages": [ToolMessage(content=result, tool_call_id=call["id"], name=call["name"])]}


async def _answer(state: MessagesState, config: RunnableConfig) -> dict[str, Any]:
    session = config.get("configurable", {}).get("session", {})
    turns = sum(1 for message in state["messages"] if message.type == "human")
    parts: list[str | dict[str, Any]] = [
        {"type": "text", "text": f"Order A1 has shipped, {session.get('customer', 'friend')}."},
        {"type": "text", "text": f" (turn {turns})"},
    ]
    return {"messages": [AIMessage(content=parts)]}


def _build() -> StateGraph[MessagesState]:
    builder = StateGraph(MessagesState)
    builder.add_node("ask_tool", _ask_tool)
    builder.add_node("run_tool", _run_tool)
    builder.add_node("answer", _answer)
    builder.add_edge(START, "ask_tool")
    builder.add_edge("ask_tool", "run_tool")
    builder.add_edge("run_tool", "answer")
    builder.add_edge("answer", END)
    return builder


BUILDER = _build()
GRAPH = BUILDER.compile()
CHECKPOINTED_GRAPH = _build().compile(checkpointer=InMemorySaver())


class DictGraph:
    """Not LangGraph: anything with ``ainvoke`` returning a state of plain OpenAI-style dicts will do."""

    async def ainvoke(self, state: dict[str, Any], config: dict[str, Any]) -> dict[str, Any]:
        calls = [
            {"id": "d1", "type": "function", "function": {"name": "lookup_order", "arguments": '{"order_id": "B2"}'}},
            {"id": "d2", "type": "function", "function": {"name": "refund", "arguments": "{}"}},
        ]
        new = [
            {"role": "assistant", "content": "Checking.", "tool_calls": calls},
            {"role": "tool", "tool_call_id": "d1", "content": "not json: B2 is lost"},
            {"role": "assistant", "content": [{"type": "image_url", "image_url": {"url": "x"}}, "Sorry, B2 is lost."]},
        ]
        return {"history": [*state["history"], *new]}


class FailingGraph:
    async def ainvoke(self, state: dict[str, Any], config: dict[str, Any]) -> Any:
        raise ValueError("node exploded")


class NoMessagesGraph:
    async def ainvoke(self, state: dict[str, Any], config: dict[str, Any]) -> Any:
        return {"answer": "hi"}


DICT_GRAPH = DictGraph()
FAILING_GRAPH = FailingGraph()
NO_MESSAGES_GRAPH = NoMessagesGraph()


def graph_agent(ref: str, **values: Any) -> LanggraphAdapter:
    return LanggraphAdapter(LanggraphAgent.model_validate({"type": "langgraph", "graph": f"{HERE}:{ref}", **values}))


@pytest.mark.parametrize("ref", ["GRAPH", "CHECKPOINTED_GRAPH"])
def test_langgraph_agent_replies_and_its_tools_are_recorded(ref: str) -> None:
    # Its `run_tool` node answers tool calls itself, which only live mode allows (tests/agents/test_graph_tools.py).
    router = ToolRouter(declared=[LOOKUP], mode="live")

    async def main() -> tuple[AgentReply, AgentReply]:
        adapter = graph_agent(ref)
        session: dict[str, JsonValue] = {"customer": "Ana"}
        first = await adapter.respond(make_input(router, session=session))
        history = [
            *HELLO,
            {"role": "assistant", "content": first.messages[0]},
            {"role": "user", "content": "Thanks!"},
            event_message(EventSpec(name="hang_up")),
        ]
        second = await adapter.respond(make_input(router, messages=history, session=session))
        await adapter.aclose()
        return first, second

    first, second = run(main())
    assert first.messages == ["Order A1 has shipped, Ana. (turn 1)"]
    # The whole history went in, and nothing was appended twice (with a checkpointer either).
    assert second.messages == ["Order A1 has shipped, Ana. (turn 3)"]
    # The tool message's text is recorded as it is (a str result is never re-encoded nor parsed).
    shipped = '{"order_id": "A1", "status": "shipped"}'
    assert [(r.id, r.name, r.status, r.arguments, r.result) for r in router.records] == [
        ("tc1", "lookup_order", "executed", {"order_id": "A1"}, shipped),
        ("tc4", "lookup_order", "executed", {"order_id": "A1"}, shipped),
    ]


def test_langgraph_dict_messages_and_unanswered_tool_calls() -> None:
    router = ToolRouter(declared=[LOOKUP], mode="live")

    async def main() -> AgentReply:
        return await respond_once(graph_agent("DICT_GRAPH", messages_key="history"), make_input(router))

    assert run(main()).messages == ["Checking.", "Sorry, B2 is lost."]
    assert [(r.id, r.name, r.status, r.result, r.error) for r in router.records] == [
        ("d1", "lookup_order", "executed", "not json: B2 is lost", None),
        ("d2", "refund", "failed", None, "the graph finished without a result for this tool call"),
    ]
    assert router.records[0].arguments == {"order_id": "B2"}


def test_langgraph_graph_that_answers_tool_calls_itself_is_refused_in_test_mode() -> None:
    async def main() -> AgentReply:
        return await respond_once(graph_agent("DICT_GRAPH", messages_key="history"), make_input(make_router(SHIPPED)))

    # Not a LangGraph graph: no node to name, and nothing Simulator could have intercepted.
    with pytest.raises(AgentError) as raised:
        run(main())
    assert str(raised.value).startswith(
        f"graph '{HERE}:DICT_GRAPH' runs tools that Simulator cannot route (it answered lookup_order(order_id='B2') "
        "itself, so the tool may have run); without --live Simulator lets no tool run: "
    )


@pytest.mark.parametrize(
    ("ref", "error"),
    [
        ("BUILDER", r"is not a compiled LangGraph graph .*builder.compile\(\)"),
        ("sync_agent", r"is not a compiled LangGraph graph"),
        ("NO_SUCH_GRAPH", r"cannot import graph .*has no 'NO_SUCH_GRAPH'"),
    ],
)
def test_langgraph_config_that_is_not_a_graph(ref: str, error: str) -> None:
    with pytest.raises(AgentError, match=error):
        graph_agent(ref)


@pytest.mark.parametrize(
    ("ref", "error"),
    [
        ("FAILING_GRAPH", r"graph 'tests.agents.test_adapters:FAILING_GRAPH' raised ValueError: node exploded"),
        ("NO_MESSAGES_GRAPH", r"returned no 'messages' list in its state .*set `messages_key`"),
    ],
)
def test_langgraph_failures_are_agent_errors(ref: str, error: str) -> None:
    async def main() -> AgentReply:
        return await respond_once(graph_agent(ref), make_input(make_router()))

    with pytest.raises(AgentError, match=error):
        run(main())


# --------------------------------------------------------------------------------------------------------------
# tool results: one rule for every adapter, for live functions and for fakes alike

AS_TEXT = '{"a": 1}'
AS_DATA: dict[str, JsonValue] = {"a": 1}


def results_router(source: str) -> ToolRouter:
    """Tools ``as_text`` and ``as_data`` give ``'{"a": 1}'`` and ``{"a": 1}``, run live or answered by fakes."""
    if source == "live":
        return ToolRouter(mode="live", functions={"as_text": lambda: AS_TEXT, "as_data": lambda: AS_DATA})
    fakes = [ToolFake(tool="as_text", result=AS_TEXT), ToolFake(tool="as_data", result=AS_DATA)]
    return ToolRouter(fakes=[(f"suite tool_fakes[{i}]", fake) for i, fake in enumerate(fakes)])


def tool_contents_seen(adapter: str, router: ToolRouter, *tools: str) -> tuple[list[str], AgentReply]:
    """A chat agent (``http`` or ``litellm``) calls each of ``tools`` once, then says "done": the contents of the
    tool messages it got back, and its reply."""
    if adapter == "http":
        calls = [(f"c{index}", name, "{}") for index, name in enumerate(tools)]
        reply, server = run(talk_http([Scripted(tool_reply(*calls)), Scripted(text_reply("done"))], router))
        sent = server.requests[1]["messages"]
    else:
        script = FakeScript().enqueue(
            "shop", [FakeToolCall(name, {}, id=f"c{index}") for index, name in enumerate(tools)], "done"
        )
        reply = talk_litellm(shop_agent(), script, router)
        sent = script.requests[1].messages
    return [message["content"] for message in sent if message["role"] == "tool"], reply


@pytest.mark.parametrize("source", ["live", "fake"])
@pytest.mark.parametrize("adapter", ["http", "litellm"])
def test_a_str_result_and_the_same_json_data_reach_a_chat_agent_byte_identical(adapter: str, source: str) -> None:
    router = results_router(source)
    contents, reply = tool_contents_seen(adapter, router, "as_text", "as_data")
    # The str is passed through unchanged (not encoded a second time); the dict is serialised once.
    assert contents == ['{"a": 1}', '{"a": 1}']
    assert reply.messages == ["done"]
    status = "executed" if source == "live" else "faked"
    assert [(r.status, r.result, r.error) for r in router.records] == [(status, AS_TEXT, None), (status, AS_DATA, None)]


def results_agent(messages: list[dict[str, Any]], tools: ToolHandle) -> str:
    return f"{tools.call('as_text')!r} {tools.call('as_data')!r}"


async def async_results_agent(messages: list[dict[str, Any]], tools: ToolHandle) -> str:
    return f"{await tools.acall('as_text')!r} {await tools.acall('as_data')!r}"


@pytest.mark.parametrize("source", ["live", "fake"])
@pytest.mark.parametrize("agent", ["results_agent", "async_results_agent"])
def test_a_python_agent_gets_a_str_result_as_it_is_and_json_data_as_data(agent: str, source: str) -> None:
    router = results_router(source)

    async def main() -> AgentReply:
        return await respond_once(python_agent(agent), make_input(router))

    assert run(main()).messages == [f"{AS_TEXT!r} {AS_DATA!r}"]


class Opaque:
    """An object a tool might return by mistake (a client's response object, a model instance)."""


NOT_JSON = [
    pytest.param(b'{"a": 1}', "bytes", id="bytes"),
    pytest.param(Opaque(), "Opaque", id="object"),
    pytest.param({"when": Opaque()}, "dict", id="object-inside-a-dict"),
    pytest.param({1, 2}, "set", id="set"),
    pytest.param(float("nan"), "float", id="nan"),
]


@pytest.mark.parametrize(("value", "type_name"), NOT_JSON)
@pytest.mark.parametrize("adapter", ["http", "litellm"])
def test_a_result_that_is_not_json_fails_the_call_and_the_conversation_goes_on(
    adapter: str, value: Any, type_name: str
) -> None:
    router = ToolRouter(mode="live", functions={"odd": lambda: value})
    contents, reply = tool_contents_seen(adapter, router, "odd")
    [record] = router.records
    assert (record.status, record.result) == ("failed", None)
    assert record.error is not None
    assert record.error.startswith(f"the tool returned {type_name}, which is not JSON (")
    assert record.error.endswith(
        "return a str (given to the agent as it is) or JSON data (a dict, list, number, bool or None)"
    )
    assert [json.loads(content) for content in contents] == [{"error": record.error, "status": "failed"}]
    assert reply.messages == ["done"]


def raising_tool(**arguments: Any) -> str:
    raise ValueError("no holidays for 2031")


async def async_raising_tool(**arguments: Any) -> str:
    raise ValueError("no holidays for 2031")


@pytest.mark.parametrize("tool", [raising_tool, async_raising_tool])
@pytest.mark.parametrize("adapter", ["http", "litellm"])
def test_a_live_tool_that_raises_is_failed_and_the_agent_is_told(adapter: str, tool: Callable[..., Any]) -> None:
    router = ToolRouter(mode="live", functions={"holidays": tool})
    contents, reply = tool_contents_seen(adapter, router, "holidays")
    [record] = router.records
    assert (record.status, record.error, record.result) == ("failed", "ValueError: no holidays for 2031", None)
    assert [json.loads(content) for content in contents] == [
        {"error": "ValueError: no holidays for 2031", "status": "failed"}
    ]
    assert reply.messages == ["done"]


def calls_t(messages: list[dict[str, Any]], tools: ToolHandle) -> str:
    return json.dumps(tools.call("t", year=2025))


@pytest.mark.parametrize(
    ("ref", "error"),
    [
        (
            "no_such_tools_module:list_holidays",
            "cannot import tool function 'no_such_tools_module:list_holidays': ModuleNotFoundError: no module named "
            "'no_such_tools_module' (looked in the working folder and the installed packages). Check the module "
            "path; a module of your own goes beside the suite file or the agent file, as no_such_tools_module.py",
        ),
        (
            f"{HERE}:raising_tol",
            f"cannot import tool function '{HERE}:raising_tol': module '{HERE}' has no 'raising_tol' "
            "(in tests/agents/test_adapters.py); did you mean 'raising_tool'?",
        ),
        (
            f"{HERE}:NOT_CALLABLE",
            f"tool function '{HERE}:NOT_CALLABLE' is not callable: it is an int; name a function (`def ...` or "
            "`async def ...`)",
        ),
        (f"{HERE}:raising_tool", "ValueError: no holidays for 2031"),
    ],
)
def test_a_live_function_that_cannot_be_imported_or_raises_fails_the_call_not_the_agent(
    ref: str, error: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(ROOT)
    router = ToolRouter(declared=[ToolDeclaration(name="t", function=ref)], mode="live")

    async def main() -> AgentReply:
        return await respond_once(python_agent("calls_t"), make_input(router))

    reply = run(main())
    [record] = router.records
    assert (record.status, record.error) == ("failed", error)
    assert [json.loads(text) for text in reply.messages] == [{"error": error, "status": "failed"}]
