"""The ``http`` agent's HTTP client (aiohttp, one session per conversation): what it keeps from one request to the
next within a conversation (cookies, the connection) and never across conversations, what it refuses (redirects,
an untrusted certificate), and the proxy the environment names. Against local aiohttp servers; the TLS tests need
the ``openssl`` command to make a certificate and skip without it."""

from __future__ import annotations

import asyncio
import socket
import ssl
import sys
import threading
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest
from aiohttp import web

from simulator.agents.http_agent import HttpAdapter, _ssl_context
from simulator.errors import AgentError
from simulator.llm import RetryPolicy
from simulator.models import HttpAgent
from tests._certificates import self_signed_certificate
from tests.agents.test_adapters import make_input, make_router, text_reply, tool_reply
from tests.factories import no_sleep

INSTANT = RetryPolicy(sleep=no_sleep)


def agent(url: str, **values: Any) -> HttpAdapter:
    config = HttpAgent.model_validate({"type": "http", "base_url": url, "model": "m", "retries": 0, **values})
    return HttpAdapter(config, retry=INSTANT)


async def turn(adapter: HttpAdapter) -> list[str]:
    return (await adapter.respond(make_input(make_router()))).messages


class Seen:
    """What a server saw: per request its path as sent (absolute through a proxy), headers and client port."""

    def __init__(self) -> None:
        self.targets: list[str] = []
        self.headers: list[dict[str, str]] = []
        self.ports: list[int] = []


@asynccontextmanager
async def serving(
    handler: Any = None, tls: ssl.SSLContext | None = None, seen: Seen | None = None, keepalive: float = 75.0
) -> AsyncIterator[tuple[str, Seen]]:
    seen = seen or Seen()

    async def record(request: web.Request) -> web.StreamResponse:
        seen.targets.append(request.raw_path)
        seen.headers.append(dict(request.headers))
        peer = request.transport.get_extra_info("peername") if request.transport else None
        seen.ports.append(peer[1] if peer else 0)
        if handler is not None:
            answered: web.StreamResponse = await handler(request)
            return answered
        return web.json_response(text_reply(f"reply {len(seen.targets)}"))

    app = web.Application()
    app.router.add_route("*", "/{tail:.*}", record)
    runner = web.AppRunner(app, keepalive_timeout=keepalive)
    await runner.setup()
    await web.TCPSite(runner, "127.0.0.1", 0, ssl_context=tls).start()
    host, port = runner.addresses[0][:2]
    try:
        yield f"{'https' if tls else 'http'}://{host}:{port}/v1", seen
    finally:
        await runner.cleanup()


def test_a_conversation_keeps_its_cookies_and_its_connection_and_the_next_conversation_starts_without_them() -> None:
    async def handler(request: web.Request) -> web.StreamResponse:
        reply = web.json_response(text_reply("ok"))
        if "session" not in request.cookies:
            reply.set_cookie("session", f"s{len(seen.targets)}")
        return reply

    seen = Seen()

    async def go() -> None:
        async with serving(handler, seen=seen) as (url, _):
            first = agent(url)
            for _ in range(3):
                await turn(first)
            await first.aclose()
            second = agent(url)
            await turn(second)
            await second.aclose()

    asyncio.run(go())
    cookies = [headers.get("Cookie") for headers in seen.headers]
    assert cookies == [None, "session=s1", "session=s1", None]
    assert len(set(seen.ports[:3])) == 1  # one kept-alive connection for the conversation's requests
    assert seen.ports[3] != seen.ports[0]


def test_a_connection_the_agent_closed_while_idle_is_not_used_again() -> None:
    async def go() -> tuple[list[list[str]], Seen]:
        async with serving(keepalive=0.05) as (url, seen):  # the server closes a connection idle for 50 ms
            adapter = agent(url)
            replies = [await turn(adapter)]
            await asyncio.sleep(0.3)
            replies.append(await turn(adapter))
            await adapter.aclose()
        return replies, seen

    replies, seen = asyncio.run(go())
    assert replies == [["reply 1"], ["reply 2"]]
    assert seen.ports[0] != seen.ports[1]


def test_a_reply_that_is_not_http_is_the_agents_answer_and_not_sent_again() -> None:
    async def go() -> tuple[str, int]:
        sent = 0

        async def garbage(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
            nonlocal sent
            await reader.readuntil(b"\r\n\r\n")
            sent += 1
            writer.write(b"NOT HTTP AT ALL\r\n\r\n")
            await writer.drain()
            writer.close()

        server = await asyncio.start_server(garbage, "127.0.0.1", 0)
        port = server.sockets[0].getsockname()[1]
        adapter = agent(f"http://127.0.0.1:{port}/v1", retries=3)
        with pytest.raises(AgentError) as caught:
            await turn(adapter)
        await adapter.aclose()
        server.close()
        await server.wait_closed()
        return str(caught.value), sent

    message, sent = asyncio.run(go())
    assert "sent a reply that is not valid HTTP: ClientResponseError: Bad status line" in message
    assert "\n" not in message
    assert sent == 1


def test_the_request_is_compact_utf8_json_with_the_configured_headers(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AGENT_KEY", "sk-agent-1")
    monkeypatch.setenv("AGENT_TENANT", "acme")
    bodies: list[bytes] = []

    async def handler(request: web.Request) -> web.StreamResponse:
        bodies.append(await request.read())
        return web.json_response(text_reply("Grüße"))

    async def go() -> tuple[list[str], Seen]:
        async with serving(handler) as (url, seen):
            adapter = agent(url, api_key_env="AGENT_KEY", headers_from_env={"X-Tenant": "AGENT_TENANT"})
            messages = await adapter.respond(
                make_input(make_router(), [{"role": "user", "content": "Wo ist meine Bestellung über 23,60 €?"}])
            )
            await adapter.aclose()
        return messages.messages, seen

    messages, seen = asyncio.run(go())
    assert messages == ["Grüße"]
    assert seen.headers[0]["Authorization"] == "Bearer sk-agent-1"
    assert seen.headers[0]["X-Tenant"] == "acme"
    assert seen.headers[0]["Content-Type"] == "application/json"
    assert "über 23,60 €".encode() in bodies[0]  # UTF-8 as it is, no \\u escapes
    assert b'"model":"m"' in bodies[0]  # compact


def test_a_redirect_is_not_followed() -> None:
    async def handler(request: web.Request) -> web.StreamResponse:
        raise web.HTTPFound("/elsewhere")

    async def go() -> tuple[str, Seen]:
        async with serving(handler) as (url, seen):
            adapter = agent(url)
            with pytest.raises(AgentError) as caught:
                await turn(adapter)
            await adapter.aclose()
        return str(caught.value), seen

    message, seen = asyncio.run(go())
    assert "answered 302 Found" in message
    assert seen.targets == ["/v1/chat/completions"]


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def test_the_proxy_the_environment_names_is_used_with_its_credentials_unless_no_proxy_covers_the_host(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    nowhere = f"http://127.0.0.1:{_free_port()}/v1"  # nothing listens: only the proxy can answer

    async def go() -> tuple[list[str], Seen, str]:
        async with serving() as (proxy_url, seen):
            proxy = proxy_url.removesuffix("/v1").replace("http://", "http://scott:tiger@")
            monkeypatch.setenv("HTTP_PROXY", proxy)
            monkeypatch.delenv("NO_PROXY", raising=False)
            monkeypatch.delenv("no_proxy", raising=False)
            through = agent(nowhere)
            messages = await turn(through)
            await through.aclose()
            monkeypatch.setenv("NO_PROXY", "127.0.0.1")
            direct = agent(nowhere)
            with pytest.raises(AgentError) as caught:
                await turn(direct)
            await direct.aclose()
        return messages, seen, str(caught.value)

    messages, seen, refused = asyncio.run(go())
    assert messages == ["reply 1"]
    assert seen.targets == [f"{nowhere}/chat/completions"]  # the absolute form a proxy is sent
    assert seen.headers[0]["Proxy-Authorization"].startswith("Basic ")
    assert f"cannot reach the HTTP agent at {nowhere}/chat/completions" in refused
    assert "SSLContext" not in refused
    assert "ssl:" not in refused


def test_an_https_agent_is_verified_against_the_trusted_certificates(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    cert, key = self_signed_certificate(tmp_path)
    tls = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    tls.load_cert_chain(cert, key)

    async def go() -> tuple[str, list[str]]:
        async with serving(tls=tls) as (url, _):
            _ssl_context.cache_clear()  # the system's certificates: the server's is not among them
            untrusting = agent(url)
            with pytest.raises(AgentError) as caught:
                await turn(untrusting)
            await untrusting.aclose()
            monkeypatch.setenv("SSL_CERT_FILE", str(cert))
            _ssl_context.cache_clear()
            trusting = agent(url)
            messages = await turn(trusting)
            await trusting.aclose()
        return str(caught.value), messages

    try:
        refused, messages = asyncio.run(go())
    finally:
        _ssl_context.cache_clear()
    assert "cannot reach the HTTP agent" in refused
    assert "CERTIFICATE_VERIFY_FAILED" in refused
    assert "SSLContext object" not in refused
    assert messages == ["reply 1"]  # the refused handshake never reached the server's handler


def test_a_run_can_have_the_client_library_imported_in_a_thread_before_the_first_request(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from simulator.agents import http_agent, prepare_agent

    imported_in: list[str] = []

    def fake_import() -> None:
        imported_in.append(threading.current_thread().name)

    monkeypatch.setattr(http_agent, "_import_client", fake_import)
    monkeypatch.delitem(sys.modules, "aiohttp")  # as if not imported yet (given back after the test)
    http_agent.import_client_meanwhile.cache_clear()
    try:
        config = HttpAgent.model_validate({"type": "http", "base_url": "http://127.0.0.1:9/v1", "model": "m"})
        prepare_agent(config)
        prepare_agent(config)  # once
        for thread in threading.enumerate():
            if thread.name == "simulator-aiohttp-import":
                thread.join(timeout=10)
    finally:
        http_agent.import_client_meanwhile.cache_clear()
    assert imported_in == ["simulator-aiohttp-import"]


@pytest.mark.parametrize(
    ("usages", "expected"),
    [
        ([{"prompt_tokens": 120, "completion_tokens": 8}, {"prompt_tokens": 150, "completion_tokens": 20}], (270, 28)),
        ([None, {"prompt_tokens": 150, "completion_tokens": 20}], (150, 20)),
        ([None, None], None),
        ([{"prompt_tokens": "many", "completion_tokens": 1}, {"prompt_tokens": True, "completion_tokens": 2}], None),
        ([{"prompt_tokens": -1, "completion_tokens": 1}, {"total_tokens": 9}], None),
    ],
    ids=["added-over-the-turns-requests", "one-request-reports", "none-reported", "not-numbers", "negative-or-partial"],
)
def test_the_tokens_an_http_agents_responses_report_are_added_up_per_turn(
    usages: list[dict[str, Any] | None], expected: tuple[int, int] | None
) -> None:
    replies = [tool_reply(("c1", "lookup_order", '{"order_id": "A1"}')), text_reply("done")]

    async def handler(request: web.Request) -> web.StreamResponse:
        body = dict(replies[len(seen.targets) - 1])
        usage = usages[len(seen.targets) - 1]
        if usage is not None:
            body["usage"] = usage
        return web.json_response(body)

    seen = Seen()

    async def go() -> Any:
        async with serving(handler, seen=seen) as (url, _):
            adapter = agent(url)
            reply = await adapter.respond(make_input(make_router()))
            await adapter.aclose()
            return reply

    reply = asyncio.run(go())
    assert reply.messages == ["done"]
    got = (reply.usage.prompt_tokens, reply.usage.completion_tokens) if reply.usage is not None else None
    assert got == expected
