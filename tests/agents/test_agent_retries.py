"""The agent under test gets the model roles' resilience: retries with jittered backoff on the http and litellm
adapters, ``Retry-After`` honoured, and a request resent only when no reply came back.

The HTTP agent is the scripted aiohttp server of ``test_adapters``; the litellm agent runs on the fake provider.
"""

from __future__ import annotations

import asyncio
import time
from typing import Any

import pytest
from pydantic import TypeAdapter, ValidationError

from simulator.agents import build_agent
from simulator.agents.http_agent import HttpAdapter
from simulator.agents.litellm_agent import LitellmAdapter
from simulator.engine import ConversationSetup, simulate
from simulator.errors import AgentError
from simulator.judges import StepJudge
from simulator.llm import FakeScript, FakeToolCall, LLMClient, RetryPolicy, fake_rate_limit, fake_server_error
from simulator.models import AgentConfig, Case, HttpAgent, LitellmAgent
from simulator.models.settings import ModelRoles
from simulator.tools import ToolRouter
from simulator.user import ScriptedUser
from tests.agents.test_adapters import (
    LOOKUP,
    ChatServer,
    Scripted,
    http_config,
    make_input,
    make_router,
    respond_once,
    shop_agent,
    talk_http,
    text_reply,
    tool_reply,
)
from tests.factories import no_sleep as no_wait
from tests.factories import run

CASE: TypeAdapter[Any] = TypeAdapter(Case)
AGENT: TypeAdapter[Any] = TypeAdapter(AgentConfig)


class Waits:
    """A retry policy's sleep that records the waits instead of sleeping."""

    def __init__(self) -> None:
        self.delays: list[float] = []

    async def __call__(self, delay: float) -> None:
        self.delays.append(delay)


def top_of_range(ceiling: float) -> float:
    return ceiling


# --------------------------------------------------------------------------------------------------------------
# configuration


def test_retries_and_timeout_are_settings_of_the_agent() -> None:
    assert http_config("http://127.0.0.1:9/v1").retries == 3  # as many as the model roles
    assert http_config("http://127.0.0.1:9/v1", retries=0, timeout=2.5).timeout == 2.5
    assert shop_agent().retries is None  # unset: models.agent.max_retries
    assert shop_agent(retries=5).retries == 5
    for bad in (-1, 21, "x"):
        with pytest.raises(ValidationError):
            http_config("http://127.0.0.1:9/v1", retries=bad)
    # In-process agents are never retried (their code may have acted): the key is refused, not ignored.
    with pytest.raises(ValidationError, match="retries"):
        AGENT.validate_python({"type": "python", "callable": "x:y", "retries": 2})


# --------------------------------------------------------------------------------------------------------------
# http


def test_http_agent_resends_a_request_that_got_no_reply() -> None:
    script = [
        Scripted({"error": "slow down"}, status=429, headers={"Retry-After": "0"}),
        Scripted({"error": "boom"}, status=500),
        Scripted({"error": "down"}, status=503),
        Scripted({"error": "timeout"}, status=408),
        Scripted("", fault="reset"),
        Scripted(text_reply("too late"), delay=5.0),
        Scripted(text_reply("Your order A1 has shipped.")),
    ]

    def make(url: str) -> HttpAgent:
        return http_config(url, retries=6, timeout=0.3)

    reply, server = run(talk_http(script, make_router(), make))

    assert reply.messages == ["Your order A1 has shipped."]
    assert len(server.requests) == 7
    assert all(body == server.requests[0] for body in server.requests)  # the same turn, every time


def test_http_agent_backs_off_with_jitter_and_gives_up_naming_the_agent() -> None:
    waits = Waits()
    policy = RetryPolicy(base=1.0, cap=30.0, jitter=top_of_range, sleep=waits)

    def make(url: str) -> HttpAgent:
        return http_config(url, retries=2)

    with pytest.raises(AgentError) as caught:
        run(talk_http([Scripted({"error": "boom"}, status=500)] * 3, make_router(), make, retry=policy))

    message = str(caught.value)
    assert "the HTTP agent at http://127.0.0.1:" in message
    assert "answered 500 Internal Server Error" in message
    assert "no reply in 3 attempts" in message
    assert "`retries`" in message
    assert waits.delays == [1.0, 2.0]


def test_http_agent_honours_retry_after_as_a_floor_and_caps_it() -> None:
    waits = Waits()
    policy = RetryPolicy(base=1.0, cap=30.0, jitter=top_of_range, sleep=waits)
    script = [
        Scripted({}, status=429, headers={"Retry-After": "7"}),
        Scripted({}, status=503, headers={"Retry-After": "Fri, 01 Jan 2100 00:00:00 GMT"}),
        Scripted({}, status=429, headers={"retry-after-ms": "1500"}),
        Scripted(text_reply("ok")),
    ]
    reply, _ = run(talk_http(script, make_router(), retry=policy))
    assert reply.messages == ["ok"]
    assert waits.delays == [7.0, 60.0, 4.0]  # 7 s asked; a far date capped at 60 s; 1.5 s < the 4 s backoff


def test_http_agent_waits_retry_after_measured_by_the_server() -> None:
    policy = RetryPolicy(jitter=lambda ceiling: 0.0)  # real sleeps; the backoff alone would wait 0 s
    script = [Scripted({}, status=429, headers={"Retry-After": "1"}), Scripted(text_reply("ok"))]
    _, server = run(talk_http(script, make_router(), retry=policy))
    gap = server.times[1] - server.times[0]
    assert 0.95 <= gap < 3.0


@pytest.mark.parametrize(
    "answer",
    [
        Scripted("this is not json"),
        Scripted({"choices": []}),
        Scripted({"id": "x"}),
        Scripted(text_reply("half a reply"), fault="cut"),
        Scripted({"error": "bad request"}, status=400),
        Scripted({"error": "bad key"}, status=401),
        Scripted({"error": "forbidden"}, status=403),
        Scripted({"error": "no such model"}, status=404),
        Scripted({"error": "unprocessable"}, status=422),
    ],
    ids=["malformed-json", "empty-choices", "no-choices", "cut-after-200", "400", "401", "403", "404", "422"],
)
def test_http_agent_never_resends_a_reply_that_arrived(answer: Scripted) -> None:
    """A 2xx (even unusable, even cut off half-way) or a refusal is the agent's answer to this turn: the agent
    may have acted on it, so it is an error, never a second request."""
    with pytest.raises(AgentError) as caught:
        run(talk_http([answer, Scripted(text_reply("second try"))], make_router()))
    assert "attempts" not in str(caught.value)


def test_http_agent_cut_after_200_says_the_reply_started() -> None:
    async def main() -> ChatServer:
        script = [Scripted(text_reply("half a reply"), fault="cut"), Scripted(text_reply("second try"))]
        async with ChatServer(script) as server:
            adapter = HttpAdapter(http_config(server.url), retry=RetryPolicy(sleep=no_wait))
            with pytest.raises(AgentError, match="answered 200 but the connection broke while it sent its reply"):
                await respond_once(adapter, make_input(make_router()))
        return server

    assert len(run(main()).requests) == 1


def test_http_agent_with_no_retries_sends_once() -> None:
    def make(url: str) -> HttpAgent:
        return http_config(url, retries=0)

    with pytest.raises(AgentError, match=r"answered 503 Service Unavailable: .*or give it `retries`") as caught:
        run(talk_http([Scripted({"error": "down"}, status=503), Scripted(text_reply("ok"))], make_router(), make))
    assert "attempts" not in str(caught.value)


def test_build_agent_gives_the_http_agent_the_model_clients_retry_policy() -> None:
    waits = Waits()
    llm = LLMClient(ModelRoles(), sleep=waits, jitter=top_of_range)

    async def main() -> ChatServer:
        async with ChatServer([Scripted({}, status=502), Scripted(text_reply("ok"))]) as server:
            adapter = build_agent(http_config(server.url), llm=llm)
            assert isinstance(adapter, HttpAdapter)
            await respond_once(adapter, make_input(make_router()))
        return server

    assert len(run(main()).requests) == 2
    assert waits.delays == [1.0]


def test_a_retried_http_request_is_not_cut_short_by_the_turn_timeout() -> None:
    """The engine bounds a whole turn; for an agent that bounds and retries its own requests that bound covers
    the retries: a first request that hangs past ``timeout`` is retried and the case goes on."""
    config = http_config("http://127.0.0.1:9/v1", timeout=0.3)
    golden = CASE.validate_python({"kind": "golden", "name": "g", "turns": [{"user": "Where is A1?"}]})

    async def main() -> Any:
        script = [Scripted(text_reply("late"), delay=5.0), Scripted(text_reply("A1 has shipped."))]
        async with ChatServer(script) as server:
            agent = HttpAdapter(config.model_copy(update={"base_url": server.url}), retry=RetryPolicy(sleep=no_wait))
            setup = ConversationSetup(
                case=golden, agent=agent, user=ScriptedUser(), checker=StepJudge(), agent_config=config
            )
            transcript = await simulate(setup)
            await agent.aclose()
        return transcript, server

    transcript, server = run(main())
    assert transcript.error is None, transcript.error
    assert len(server.requests) == 2
    assert agent_turn_budget(config) > config.timeout


@pytest.mark.parametrize("adapter", ["http", "litellm"])
def test_a_live_tool_that_hangs_is_bounded_by_the_agent_timeout(adapter: str) -> None:
    """The turn's own bound now leaves room for retries, so a hung live tool gets the agent's ``timeout``."""

    async def hang(**arguments: Any) -> str:
        await asyncio.sleep(30)
        return "never"

    router = ToolRouter(declared=[LOOKUP], mode="live", functions={"lookup_order": hang})

    async def main() -> Any:
        if adapter == "http":
            call = Scripted(tool_reply(("c1", "lookup_order", '{"order_id": "A1"}')))
            async with ChatServer([call, Scripted(text_reply("done"))]) as server:
                http = HttpAdapter(http_config(server.url, timeout=0.3), retry=RetryPolicy(sleep=no_wait))
                return await respond_once(http, make_input(router))
        script = FakeScript().enqueue("shop", [FakeToolCall("lookup_order", {"order_id": "A1"})], "done")
        # The model call itself must not time out: litellm's first call in a process loads code (seconds).
        agent = LitellmAdapter(shop_agent(timeout=1.5), agent_client(script, Waits()))
        return await respond_once(agent, make_input(router))

    limit = 0.3 if adapter == "http" else 1.5
    started = time.monotonic()
    with pytest.raises(AgentError, match=rf"the tool 'lookup_order' did not return within {limit:g} s"):
        run(main())
    assert time.monotonic() - started < 10


def agent_turn_budget(config: HttpAgent) -> float:
    adapter = HttpAdapter(config)
    budget = adapter.turn_timeout
    run(adapter.aclose())
    return budget


# --------------------------------------------------------------------------------------------------------------
# litellm


def agent_client(script: FakeScript, waits: Waits, **role: Any) -> LLMClient:
    roles = ModelRoles.model_validate({"agent": {"model": "fake/shop", **role}})
    return LLMClient(roles, fake_script=script, sleep=waits, jitter=top_of_range)


def talk(config: LitellmAgent, llm: LLMClient) -> Any:
    async def main() -> Any:
        return await respond_once(LitellmAdapter(config, llm), make_input(make_router()))

    return run(main())


def test_litellm_agent_retries_as_its_config_says() -> None:
    waits = Waits()
    script = FakeScript().enqueue("shop", fake_server_error(503), fake_rate_limit(retry_after=5), "Shipped.")
    reply = talk(shop_agent(retries=2), agent_client(script, waits, max_retries=0))
    assert reply.messages == ["Shipped."]
    assert waits.delays == [1.0, 5.0]

    script = FakeScript().enqueue("shop", fake_server_error(500), times=3)
    gave_up = r"litellm agent 'agent' could not answer: .*failed after 2 attempts"
    with pytest.raises(AgentError, match=gave_up) as caught:
        talk(shop_agent(retries=1), agent_client(script, Waits(), max_retries=5))
    assert len(script.requests) == 2
    assert "raise the agent's `retries`" in str(caught.value)  # the knob that decided, not models.agent's


def test_litellm_agent_without_retries_uses_the_agent_role_setting() -> None:
    script = FakeScript().enqueue("shop", fake_server_error(500), times=3)
    with pytest.raises(AgentError, match="failed after 3 attempts"):
        talk(shop_agent(), agent_client(script, Waits(), max_retries=2))


def test_litellm_agent_call_is_bounded_by_the_agent_timeout_and_retried() -> None:
    async def slow(messages: list[dict[str, Any]]) -> str:
        await asyncio.sleep(5)
        return "too late"

    script = FakeScript().enqueue("shop", slow, "quick")
    started = time.monotonic()
    reply = talk(shop_agent(timeout=0.2, retries=1), agent_client(script, Waits()))
    assert reply.messages == ["quick"]
    assert time.monotonic() - started < 3.0
    # The turn's bound leaves room for every attempt and wait.
    adapter = LitellmAdapter(shop_agent(timeout=0.2, retries=1), agent_client(FakeScript(), Waits()))
    assert adapter.turn_timeout >= 2 * 0.2
