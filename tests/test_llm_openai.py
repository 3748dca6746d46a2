"""The openai backend (simulator.llm._openai) against a small OpenAI-compatible server on 127.0.0.1.

It must behave like the litellm backend through the client: same request body (structured output's
``response_format`` included), same replies (text, tool calls, usage, cost), same failure kinds, retries and
``Retry-After`` waits (the parity table), secrets scrubbed, and no litellm import for ``openai/...`` models.
"""

from __future__ import annotations

import asyncio
import enum
import json
import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from aiohttp import web
from pydantic import BaseModel, Field

from simulator.errors import ModelError
from simulator.llm import Completion, FakeScript, LLMClient, RetryPolicy, Role, metering
from simulator.llm._client import backend_name
from simulator.llm._openai import POOL_REQUESTS, OpenAIBackend, price_table, strict_json_schema, usage_cost
from simulator.models.settings import ModelSettings
from tests._loop_thread import LoopThread, serving_chat, user_turn_completion
from tests.acceptance._servers import StubServers
from tests.acceptance.conftest import DATA, cli_command, cli_env
from tests.test_llm import HELLO, Sleeps, litellm_errors, make_client, no_jitter

ROOT = Path(__file__).resolve().parents[1]
KEY = "sk-test-openai-backend-0123456789"


@dataclass
class Reply:
    """One scripted answer of the server: status, JSON body, headers, and a delay before answering."""

    status: int = 200
    body: dict[str, Any] | None = None
    headers: dict[str, str] = field(default_factory=dict)
    delay: float = 0.0


def completion_body(
    content: str | None = "hello there",
    *,
    tool_calls: list[dict[str, Any]] | None = None,
    prompt_tokens: int = 11,
    completion_tokens: int = 7,
) -> dict[str, Any]:
    message: dict[str, Any] = {"role": "assistant", "content": content}
    if tool_calls:
        message["tool_calls"] = tool_calls
    return {
        "id": "chatcmpl-test",
        "object": "chat.completion",
        "created": 0,
        "model": "served-model",
        "choices": [{"index": 0, "message": message, "finish_reason": "tool_calls" if tool_calls else "stop"}],
        "usage": {
            "prompt_tokens": prompt_tokens,
            "completion_tokens": completion_tokens,
            "total_tokens": prompt_tokens + completion_tokens,
        },
    }


def error_body(message: str) -> dict[str, Any]:
    return {"error": {"message": message, "type": "invalid_request_error", "code": None}}


class ModelServer:
    """An OpenAI-compatible ``/v1/chat/completions`` that answers from a queue of :class:`Reply` (then the
    default text reply) and records every request's body, headers and client port."""

    def __init__(self) -> None:
        self.replies: list[Reply] = []
        self.bodies: list[dict[str, Any]] = []
        self.headers: list[dict[str, str]] = []
        self.ports: list[int] = []
        self.url = ""
        self._background = LoopThread("openai-test-server")
        self._runner: web.AppRunner | None = None

    def __enter__(self) -> ModelServer:
        self.url = self._background.start(self._start)
        return self

    def __exit__(self, *exc: object) -> None:
        self._background.stop(self._stop)

    def reset(self, *replies: Reply) -> ModelServer:
        self.replies = list(replies)
        self.bodies.clear()
        self.headers.clear()
        self.ports.clear()
        return self

    async def _start(self) -> str:
        app = web.Application()
        app.router.add_post("/v1/chat/completions", self._answer)
        self._runner = web.AppRunner(app, access_log=None)
        await self._runner.setup()
        await web.TCPSite(self._runner, "127.0.0.1", 0).start()
        host, port = self._runner.addresses[0][:2]
        return f"http://{host}:{port}/v1"

    async def _stop(self) -> None:
        if self._runner is not None:
            await self._runner.cleanup()

    async def _answer(self, request: web.Request) -> web.Response:
        self.bodies.append(await request.json())
        self.headers.append(dict(request.headers))
        peer = request.transport.get_extra_info("peername") if request.transport else None
        self.ports.append(int(peer[1]) if peer else 0)
        reply = self.replies.pop(0) if self.replies else Reply()
        if reply.delay:
            await asyncio.sleep(reply.delay)
        body = completion_body() if reply.body is None else reply.body
        if set(body) == {"raw"}:  # a body that is not JSON, sent as it is
            return web.Response(text=body["raw"], status=reply.status, content_type="application/json")
        return web.json_response(body, status=reply.status, headers=reply.headers)


@pytest.fixture(scope="module")
def module_server() -> Iterator[ModelServer]:
    with ModelServer() as running:
        yield running


@pytest.fixture
def server(module_server: ModelServer) -> ModelServer:
    return module_server.reset()


def judge(server: ModelServer, model: str = "openai/gpt-4o-mini", **settings: Any) -> ModelSettings:
    return ModelSettings(model=model, api_base=server.url, api_key_env="TEST_OPENAI_KEY", **settings)


def client_for(server: ModelServer, sleeps: Sleeps | None = None, **settings: Any) -> LLMClient:
    return make_client(FakeScript(), sleeps=sleeps, environ={"TEST_OPENAI_KEY": KEY}, judge=judge(server, **settings))


def call(client: LLMClient, *coroutines: Any) -> Any:
    """Run the calls on one loop, then close the pooled connections (as a run does)."""

    async def go() -> Any:
        try:
            return [await coroutine for coroutine in coroutines]
        finally:
            await client.aclose()

    results = asyncio.run(go())
    return results[0] if len(results) == 1 else results


class Verdict(BaseModel):
    score: int
    reason: str


# -- choosing the backend -----------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("model", "backend", "expected"),
    [
        ("openai/gpt-4o-mini", "auto", "openai"),
        ("openai/my-local-model", "auto", "openai"),
        ("anthropic/claude-3-5-haiku", "auto", "litellm"),
        ("ollama/llama3", "auto", "litellm"),
        ("openai/gpt-4o-mini", "litellm", "litellm"),
        ("hosted_vllm/qwen", "openai", "openai"),
        ("fake/judge", "auto", "fake"),
        ("fake/judge", "openai", "fake"),
    ],
)
def test_the_backend_is_chosen_by_model_string_and_setting(model: str, backend: str, expected: str) -> None:
    assert backend_name(ModelSettings.model_validate({"model": model, "backend": backend})) == expected


def test_backend_litellm_forces_litellm() -> None:
    # litellm's own mock answers: had the openai backend been used, the call would fail without a key.
    settings = ModelSettings(model="openai/gpt-4o-mini", backend="litellm")
    client = make_client(FakeScript(), judge=settings)
    completion = call(client, client.complete("judge", HELLO, mock_response="from litellm"))
    assert completion.content == "from litellm"


# -- replies ---------------------------------------------------------------------------------------------------


def test_text_reply_with_usage_and_cost(server: ModelServer) -> None:
    client = client_for(server, temperature=0.2, max_tokens=50)
    with metering() as meter:
        completion: Completion = call(client, client.complete("judge", HELLO, seed=7, top_k=3))
    assert completion.content == completion.raw_text == "hello there"
    assert completion.finish_reason == "stop"
    assert completion.model == "openai/gpt-4o-mini"
    assert (completion.usage.prompt_tokens, completion.usage.completion_tokens, completion.usage.calls) == (11, 7, 1)
    prices = price_table()["gpt-4o-mini"]
    expected = 11 * prices["input_cost_per_token"] + 7 * prices["output_cost_per_token"]
    assert completion.cost == pytest.approx(expected)
    assert completion.usage.cost == completion.cost
    assert meter.by_role[Role.JUDGE] == completion.usage
    (body,) = server.bodies
    # The provider prefix is litellm's syntax, not the model's name; a parameter the SDK does not know is sent in
    # the body, as litellm sends it.
    assert body == {
        "model": "gpt-4o-mini",
        "messages": HELLO,
        "temperature": 0.2,
        "max_tokens": 50,
        "seed": 7,
        "top_k": 3,
    }
    assert server.headers[0]["Authorization"] == f"Bearer {KEY}"


def test_cost_is_litellms_for_a_known_model_and_unknown_otherwise(server: ModelServer) -> None:
    import litellm

    expected = litellm.cost_per_token(model="gpt-4o-mini", prompt_tokens=1000, completion_tokens=500)
    assert usage_cost("openai/gpt-4o-mini", 1000, 500) == pytest.approx(sum(expected))
    assert usage_cost("openai/no-such-model-here", 1000, 500) is None
    client = client_for(server, model="openai/stub-model")
    completion = call(client, client.complete("judge", HELLO))
    assert completion.cost is None
    assert completion.usage.cost is None


def test_tool_calls(server: ModelServer) -> None:
    calls = [
        {"id": "call_1", "type": "function", "function": {"name": "lookup", "arguments": '{"plz": "80331"}'}},
        {"id": "call_2", "type": "function", "function": {"name": "broken", "arguments": "{not json"}},
    ]
    server.reset(Reply(body=completion_body(None, tool_calls=calls)))
    tools = [{"type": "function", "function": {"name": "lookup", "parameters": {"type": "object"}}}]
    client = client_for(server)
    completion = call(client, client.complete("judge", HELLO, tools=tools))
    assert completion.content is None
    assert completion.raw_text == ""
    assert completion.finish_reason == "tool_calls"
    first, second = completion.tool_calls
    assert (first.id, first.name, first.arguments) == ("call_1", "lookup", {"plz": "80331"})
    assert second.malformed
    assert second.raw_arguments == "{not json"
    assert server.bodies[0]["tools"] == tools


def test_structured_output_sends_litellms_response_format(server: ModelServer) -> None:
    from litellm.llms.base_llm.base_utils import type_to_response_format_param

    server.reset(Reply(body=completion_body("not json")), Reply(body=completion_body('{"score": 4, "reason": "ok"}')))
    client = client_for(server)
    verdict = call(client, client.structured("judge", HELLO, Verdict))
    assert verdict == Verdict(score=4, reason="ok")
    first, second = server.bodies
    assert first["response_format"] == type_to_response_format_param(Verdict)
    assert second["messages"][-1]["role"] == "user"  # the correction after the reply that was not JSON


class Kind(enum.Enum):
    A = "a"
    B = "b"


class Inner(BaseModel):
    """An inner object."""

    label: str
    weight: float = 1.0


class Nested(BaseModel):
    kind: Kind
    inner: Inner
    described: Inner = Field(description="a $ref with a sibling key")
    maybe: Inner | None = None
    items: list[Inner] = []
    tags: dict[str, int] = {}
    either: int | str = 0
    note: str | None = None


@pytest.mark.parametrize("schema", [Verdict, Nested])
def test_the_strict_schema_is_the_openai_sdks(schema: type[BaseModel]) -> None:
    # The SDK is no longer imported by Simulator; what it would send is still what is sent.
    from openai.lib._pydantic import to_strict_json_schema

    assert strict_json_schema(schema) == to_strict_json_schema(schema)


def test_one_pooled_connection_serves_many_calls(server: ModelServer) -> None:
    client = client_for(server)
    other = client_for(server)  # another client of the same endpoint and key shares the pool

    async def go() -> None:
        try:
            for _ in range(5):
                await client.complete("judge", HELLO)
                await other.complete("judge", HELLO)
        finally:
            await client.aclose()

    asyncio.run(go())
    assert len(server.ports) == 10
    assert len(set(server.ports)) == 1


def test_the_pool_is_closed_when_the_loop_ends(server: ModelServer) -> None:
    backend = OpenAIBackend(environ={"OPENAI_API_KEY": KEY})
    request = {"model": "openai/gpt-4o-mini", "messages": HELLO, "api_base": server.url, "timeout": 5}
    sdk_clients: list[Any] = []

    async def go() -> None:
        await backend.complete(request, role=Role.JUDGE)
        sdk_clients.append((await backend._pool(server.url, None)).client)

    asyncio.run(go())  # no aclose: asyncio.run's shutdown closes the pool
    assert sdk_clients[0].is_closed
    assert server.headers[0]["Authorization"] == f"Bearer {KEY}"  # OPENAI_API_KEY without api_key_env


def test_requests_in_flight_at_once_are_spread_over_pools_of_bounded_size() -> None:
    # httpcore's pool costs work quadratic in its connections at every request: one client carries at most
    # POOL_REQUESTS requests at once, and another client is made for the rest. The server answers only once every
    # request is in flight, so all are in flight together (a broken client fails the wait instead of hanging).
    total = 2 * POOL_REQUESTS + 1
    arrived: list[int] = []

    async def chat(request: web.Request) -> web.Response:
        arrived.append(1)
        for _ in range(500):
            if len(arrived) >= total:
                break
            await asyncio.sleep(0.01)
        return web.json_response(user_turn_completion("gpt-4o-mini", len(arrived)))

    backend = OpenAIBackend(environ={"OPENAI_API_KEY": KEY})
    pools: list[Any] = []

    async def go(url: str) -> None:
        request = {"model": "openai/gpt-4o-mini", "messages": HELLO, "api_base": url, "timeout": 30}
        await asyncio.gather(*(backend.complete(request, role=Role.USER) for _ in range(total)))
        pools.extend(backend._loops[asyncio.get_running_loop()].clients[(url, KEY)])
        await backend.aclose()

    with serving_chat(chat, "pooled-model") as url:
        asyncio.run(go(url))
    assert len(arrived) == total
    assert len(pools) == 3  # 16 + 16 + 1
    assert all(pool.in_flight == 0 and pool.client.is_closed for pool in pools)


# -- failures: the same as the litellm backend -----------------------------------------------------------------

STATUS_REPLIES: dict[str, Reply] = {
    "429": Reply(429, error_body("slow"), {"retry-after": "7"}),
    "500": Reply(500, error_body("down")),
    "502": Reply(502, error_body("down")),
    "503": Reply(503, error_body("down"), {"retry-after": "12"}),
    "auth": Reply(401, error_body("bad key")),
    "not-found": Reply(404, error_body("no such model")),
    "bad-request": Reply(400, error_body("no")),
}
KINDS = ["429", "500", "502", "503", "timeout", "connection", "auth", "not-found", "bad-request"]


def without_detail(message: str, detail: str) -> str:
    return message.replace(detail, "DETAIL").replace("model 'openai/gpt-4o-mini'", "model MODEL")


@pytest.mark.parametrize("kind", KINDS)
def test_openai_and_litellm_backends_fail_alike(
    kind: str, server: ModelServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The litellm backend's outcome for this kind (its exception, raised by litellm's mock on every attempt).
    litellm_error, _ = litellm_errors()[kind]
    litellm_client = make_client(
        FakeScript(),
        environ={"TEST_OPENAI_KEY": KEY},
        judge=ModelSettings(
            model="openai/gpt-4o-mini", max_retries=2, backend="litellm", api_key_env="TEST_OPENAI_KEY"
        ),
    )
    litellm_sleeps = Sleeps()
    litellm_client.retry_policy = RetryPolicy(jitter=no_jitter, sleep=litellm_sleeps)
    with pytest.raises(ModelError) as litellm_caught:
        asyncio.run(litellm_client.complete("judge", HELLO, mock_response=litellm_error))
    litellm_message = without_detail(str(litellm_caught.value), str(litellm_error).strip())

    # The openai backend's, from a real server answering the same way three times (or never, or not there).
    details: list[str] = []
    classify = OpenAIBackend.classify

    def recording(self: OpenAIBackend, exc: Exception) -> Any:
        failure = classify(self, exc)
        if failure is not None:
            details.append(failure.detail)
        return failure

    monkeypatch.setattr(OpenAIBackend, "classify", recording)
    settings: dict[str, Any] = {"max_retries": 2}
    if kind == "timeout":
        server.reset(*[Reply(delay=2.0)] * 3)
        settings["timeout"] = 0.2
    elif kind == "connection":
        settings["api_base"] = "http://127.0.0.1:9/v1"  # the discard port: nothing listens
    else:
        server.reset(*[STATUS_REPLIES[kind]] * 3)
    sleeps = Sleeps()
    base = settings.pop("api_base", server.url)
    client = make_client(
        FakeScript(),
        sleeps=sleeps,
        environ={"TEST_OPENAI_KEY": KEY},
        judge=ModelSettings(model="openai/gpt-4o-mini", api_base=base, api_key_env="TEST_OPENAI_KEY", **settings),
    )
    client.retry_policy = RetryPolicy(jitter=no_jitter, sleep=sleeps)
    with pytest.raises(ModelError) as caught:
        call(client, client.complete("judge", HELLO))
    # A timeout may be the client's own whole-call bound (no backend exception): its detail is then the client's.
    detail = details[-1] if details else "no reply within 0.2 s"
    message = without_detail(str(caught.value), detail)
    assert "DETAIL" in message
    assert message == litellm_message
    assert sleeps.delays == litellm_sleeps.delays
    assert KEY not in str(caught.value)


def test_retry_after_is_honoured_then_the_call_succeeds(server: ModelServer) -> None:
    server.reset(
        Reply(429, error_body("slow"), {"retry-after": "3"}),
        Reply(503, error_body("down"), {"retry-after-ms": "2500"}),
        Reply(),
    )
    sleeps = Sleeps()
    client = client_for(server, sleeps=sleeps)
    completion = call(client, client.complete("judge", HELLO))
    assert completion.content == "hello there"
    # no_jitter waits the ceiling (1 s, then 2 s); the server asked for more each time.
    assert sleeps.delays == [3.0, 2.5]
    assert len(server.bodies) == 3


def test_a_reply_that_is_not_json_is_retried_like_a_server_error(server: ModelServer) -> None:
    # litellm reports a cut-off body as a server error 500 and the client retries it; so does this backend.
    server.reset(Reply(body={"raw": '{"choices": [{"message": {"content": "cut'}), Reply())
    sleeps = Sleeps()
    client = client_for(server, sleeps=sleeps)
    completion = call(client, client.complete("judge", HELLO))
    assert completion.content == "hello there"
    assert sleeps.delays == [1.0]
    assert len(server.bodies) == 2


def test_a_reply_with_fields_of_the_wrong_shape_is_retried_like_a_server_error(server: ModelServer) -> None:
    broken = completion_body()
    broken["choices"][0]["message"]["tool_calls"] = ["not a tool call"]
    server.reset(Reply(body=broken), Reply())
    sleeps = Sleeps()
    client = client_for(server, sleeps=sleeps)
    completion = call(client, client.complete("judge", HELLO))
    assert completion.content == "hello there"
    assert sleeps.delays == [1.0]
    assert len(server.bodies) == 2


def test_a_missing_key_for_a_remote_endpoint_fails_before_any_request_saying_nothing_was_sent(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    sleeps = Sleeps()
    remote = ModelSettings(model="openai/gpt-4o-mini", api_base="https://models.example.com/v1")
    client = make_client(FakeScript(), sleeps=sleeps, judge=remote)
    with pytest.raises(ModelError, match=r"no key was sent.*Set OPENAI_API_KEY") as caught:
        call(client, client.complete("judge", HELLO))
    assert "refused" not in str(caught.value)
    assert sleeps.delays == []


def test_a_local_endpoint_is_asked_without_a_key(server: ModelServer, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    client = make_client(FakeScript(), judge=ModelSettings(model="openai/gpt-4o-mini", api_base=server.url))
    completion = call(client, client.complete("judge", HELLO))
    assert completion.content == "hello there"
    assert "Authorization" not in server.headers[0]


def test_the_key_is_never_in_an_error(server: ModelServer) -> None:
    server.reset(Reply(400, error_body(f"invalid key {KEY} for this model")))
    client = client_for(server)
    with pytest.raises(ModelError) as caught:
        call(client, client.complete("judge", HELLO))
    assert "rejected the request" in str(caught.value)
    assert KEY not in str(caught.value)


# -- start-up: openai models never import litellm ------------------------------------------------------------------

NO_LITELLM_PROBE = """
import asyncio, sys
from simulator.llm import LLMClient, preload
from simulator.models.settings import ModelRoles

roles = ModelRoles.model_validate({{
    "user": {{"model": "openai/stub-user", "api_base": {url!r}, "api_key_env": "TEST_OPENAI_KEY"}},
    "judge": {{"model": "openai/stub-judge", "api_base": {url!r}, "api_key_env": "TEST_OPENAI_KEY"}},
}})
preload(roles)
assert "httpx" in sys.modules, "preload did not import httpx"
client = LLMClient(roles)

async def main():
    await client.complete("user", [{{"role": "user", "content": "hi"}}])
    await client.complete("judge", [{{"role": "user", "content": "hi"}}])

asyncio.run(main())
assert "litellm" not in sys.modules, "litellm was imported"
assert "openai" not in sys.modules, "the openai SDK was imported"
"""


def test_a_client_with_openai_models_never_imports_litellm(server: ModelServer) -> None:
    env = {**os.environ, "PYTHONPATH": str(ROOT), "TEST_OPENAI_KEY": KEY}
    result = subprocess.run(
        [sys.executable, "-c", NO_LITELLM_PROBE.format(url=server.url)],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    assert len(server.bodies) == 2


# The real command line: `simulator run` of a suite whose user and judge are openai/... models.
_LAUNCH_AND_CHECK = (
    "import atexit, runpy, sys; runpy.run_path({guard!r}); "
    "atexit.register(lambda: print('LITELLM', 'litellm' in sys.modules, file=sys.stderr)); "
    "runpy.run_module('simulator', run_name='__main__', alter_sys=True)"
)


def test_a_run_with_openai_models_never_imports_litellm(tmp_path: Path) -> None:
    root = tmp_path / "projekt"
    shutil.copytree(DATA, root)
    with StubServers() as stubs:
        for path, placeholder, url in (
            (root / "lieferservice" / "agent.yaml", "AGENT_PORT", stubs.agent_url),
            (root / "lieferservice" / "mit_modellen.yaml", "MODEL_PORT", stubs.model_url),
        ):
            port = url.rsplit(":", 1)[1].split("/")[0]
            path.write_text(path.read_text(encoding="utf-8").replace(placeholder, port), encoding="utf-8")
        argv = cli_command("run", "lieferservice/mit_modellen.yaml", "--no-cache", "--db", tmp_path / "runs.db")
        argv[2] = _LAUNCH_AND_CHECK.format(guard=str(ROOT / "tests" / "conftest.py"))
        result = subprocess.run(argv, cwd=root, env=cli_env(), capture_output=True, text=True, timeout=120, check=False)
        assert stubs.user_requests, result.stdout + result.stderr
        assert stubs.judge_requests, result.stdout + result.stderr
    assert "LITELLM False" in result.stderr, result.stdout + result.stderr[-3000:]
    assert json.dumps(stubs.judge_requests[0]["model"]) == '"stub-judge"'
