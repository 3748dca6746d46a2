"""The HTTP clients Simulator opens (simulator._http): httpx with an asyncio network backend and a cookie jar that reads
only responses that set cookies. What a client does must not change: cookies, keep-alive, a connection the server
closed, large bodies, TLS, timeouts and refused connections, each against a local server."""

from __future__ import annotations

import asyncio
import contextlib
import socket
import ssl
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from simulator._http import AsyncioBackend, async_client
from simulator.llm._openai import OpenAIBackend
from tests._certificates import self_signed_certificate
from tests._loop_thread import LoopThread


class _Server:
    """An aiohttp server on 127.0.0.1 (TLS with ``tls``); records the client ports it saw."""

    def __init__(self, tls: ssl.SSLContext | None = None, keepalive: float = 75.0) -> None:
        self.tls = tls
        self.keepalive = keepalive
        self.ports: list[int] = []
        self.url = ""

    async def start(self) -> str:
        from aiohttp import web

        async def echo(request: web.Request) -> web.Response:
            self.ports.append(request.transport.get_extra_info("peername")[1])  # type: ignore[union-attr]
            body = await request.read()
            response = web.json_response({"cookie": request.headers.get("Cookie"), "size": len(body)})
            if request.query.get("set"):
                response.set_cookie("session", request.query["set"])
            return response

        async def big(request: web.Request) -> web.Response:
            return web.Response(body=b"x" * 3_000_000)

        async def slow(request: web.Request) -> web.Response:
            await asyncio.sleep(5)
            return web.Response(text="late")

        app = web.Application(client_max_size=10_000_000)
        app.router.add_post("/echo", echo)
        app.router.add_get("/big", big)
        app.router.add_get("/slow", slow)
        self._runner = web.AppRunner(app, access_log=None, keepalive_timeout=self.keepalive)
        await self._runner.setup()
        await web.TCPSite(self._runner, "127.0.0.1", 0, ssl_context=self.tls).start()
        scheme = "https" if self.tls else "http"
        self.url = f"{scheme}://127.0.0.1:{self._runner.addresses[0][1]}"
        return self.url

    async def stop(self) -> None:
        await self._runner.cleanup()


@contextlib.contextmanager
def _serving(server: _Server) -> Iterator[_Server]:
    thread = LoopThread("http-client-test-server")
    try:
        thread.start(server.start)
        yield server
    finally:
        thread.stop(server.stop)


@pytest.fixture
def server() -> Iterator[_Server]:
    with _serving(_Server()) as served:
        yield served


def test_every_client_simulator_opens_uses_the_asyncio_backend_and_the_lazy_cookie_jar() -> None:
    """If httpx or httpcore moved the attributes these are set on, this says so (the clients would still work,
    with anyio and the full cookie handling again)."""

    def backend_of(client: httpx.AsyncClient) -> Any:
        return client._transport._pool._network_backend  # type: ignore[attr-defined]

    async def go() -> list[Any]:
        plain = async_client()
        backend = OpenAIBackend(environ={"OPENAI_API_KEY": "sk-test"})
        pool = await backend._pool("http://127.0.0.1:9/v1", None)
        clients = [plain, pool.client]
        found = [(type(backend_of(client)), type(client._cookies).__name__) for client in clients]
        for client in clients:
            await client.aclose()
        await backend.aclose()
        return found

    assert asyncio.run(go()) == [(AsyncioBackend, "_Cookies")] * 2


def test_cookies_keep_alive_and_large_bodies(server: _Server) -> None:
    async def go() -> list[Any]:
        async with async_client(base_url=server.url, timeout=10) as client:
            first = (await client.post("/echo", params={"set": "abc"}, json={})).json()
            replies = [(await client.post("/echo", json={"n": n})).json() for n in range(20)]
            sent = (await client.post("/echo", content=b"y" * 2_000_000)).json()
            big = await client.get("/big")
            return [first, replies, sent, len(big.content)]

    first, replies, sent, size = asyncio.run(go())
    assert first["cookie"] is None
    assert {reply["cookie"] for reply in replies} == {"session=abc"}  # the cookie the server set is sent back
    assert sent["size"] == 2_000_000
    assert size == 3_000_000
    assert len(set(server.ports)) == 1  # one connection, kept alive for every request


def test_a_connection_the_server_closed_while_idle_is_not_used_again() -> None:
    async def go(url: str) -> list[int]:
        async with async_client(base_url=url, timeout=10) as client:
            statuses = [(await client.post("/echo", json={})).status_code]
            await asyncio.sleep(0.6)  # the server closes the idle connection
            statuses.append((await client.post("/echo", json={})).status_code)
            return statuses

    with _serving(_Server(keepalive=0.2)) as server:
        assert asyncio.run(go(server.url)) == [200, 200]
    assert len(set(server.ports)) == 2


def test_timeouts_and_refused_connections_are_httpx_errors(server: _Server) -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        closed_port = sock.getsockname()[1]

    async def go() -> list[type[BaseException]]:
        raised: list[type[BaseException]] = []
        async with async_client(timeout=0.3) as client:
            for url in (f"{server.url}/slow", f"http://127.0.0.1:{closed_port}/"):
                try:
                    await client.get(url)
                except httpx.HTTPError as exc:
                    raised.append(type(exc))
        return raised

    assert asyncio.run(go()) == [httpx.ReadTimeout, httpx.ConnectError]


def test_tls_is_verified_against_the_given_certificates(tmp_path: Path) -> None:
    cert, key = self_signed_certificate(tmp_path)
    tls = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    tls.load_cert_chain(cert, key)

    async def go(url: str) -> list[Any]:
        trusting = ssl.create_default_context(cafile=str(cert))
        async with async_client(base_url=url, timeout=10, verify=trusting) as client:
            replies: list[Any] = [(await client.post("/echo", json={})).status_code for _ in range(3)]
        async with async_client(base_url=url, timeout=10) as client:  # the system's CAs: not trusted
            try:
                await client.post("/echo", json={})
            except httpx.ConnectError as exc:
                replies.append("CERTIFICATE_VERIFY_FAILED" in str(exc))
        return replies

    with _serving(_Server(tls=tls)) as server:
        assert asyncio.run(go(server.url)) == [200, 200, 200, True]
    assert len(set(server.ports)) == 1
