"""Every ``httpx.AsyncClient`` Simulator opens is made here: the OpenAI-compatible backend's (the ``http`` agent's
client is aiohttp's, see :mod:`simulator.agents.http_agent`).

A leaf module (the standard library, httpx and httpcore) beside :mod:`simulator._sqlite`, so that whatever opens an
httpx client (the model backend, a bench) opens it the same way.

The client is httpx's own, with two things of its pool changed where they cost CPU on every request and buy nothing
on asyncio (``python bench/http_client.py``, figures in docs/performance.md):

- **The network backend**: httpcore reaches sockets through anyio (a cancel scope and an async-library lookup for
  every read and write); :class:`AsyncioBackend` uses asyncio's streams and ``asyncio.timeout`` directly. Only the
  client's own connections use it; a proxy from the environment keeps httpx's transport as it is.
- **Cookies**: httpx hands every response to ``http.cookiejar`` (which builds urllib request objects for it) even when
  it sets no cookie. :class:`_Cookies` skips that when there is no ``Set-Cookie`` header; a response that sets a
  cookie is handled as before, and the cookie is sent back with the next requests.

Both are set on attributes httpx and httpcore keep to themselves (``_transport._pool._network_backend``,
``_cookies``); when a version of either no longer has them, the client is left as httpx made it (slower, the same
answers), and ``tests/test_http_client.py`` says so.
"""

from __future__ import annotations

import asyncio
import ssl
import typing
from collections.abc import Iterable
from typing import Any

import httpcore
import httpx
from httpcore._utils import is_socket_readable

__all__ = ["AsyncioBackend", "async_client"]


def async_client(**options: Any) -> httpx.AsyncClient:
    """``httpx.AsyncClient(**options)`` with the asyncio network backend and the cookie jar described above."""
    client = httpx.AsyncClient(**options)
    pool = getattr(client._transport, "_pool", None)
    if isinstance(pool, httpcore.AsyncConnectionPool) and hasattr(pool, "_network_backend"):
        pool._network_backend = _BACKEND
    if isinstance(getattr(client, "_cookies", None), httpx.Cookies):
        client._cookies = _Cookies(client._cookies)
    return client


class _Cookies(httpx.Cookies):
    """httpx's cookie jar, which reads a response's cookies only when it sets some."""

    def extract_cookies(self, response: httpx.Response) -> None:
        if "set-cookie" in response.headers:
            super().extract_cookies(response)


class _Stream(httpcore.AsyncNetworkStream):
    """A connection as asyncio's streams; errors and timeouts raised as httpcore's, as its anyio backend does."""

    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self._reader = reader
        self._writer = writer

    async def read(self, max_bytes: int, timeout: float | None = None) -> bytes:
        try:
            async with asyncio.timeout(timeout):
                return await self._reader.read(max_bytes)
        except TimeoutError:
            raise httpcore.ReadTimeout(f"no data within {timeout} s") from None
        except OSError as exc:
            raise httpcore.ReadError(str(exc) or type(exc).__name__) from exc

    async def write(self, buffer: bytes, timeout: float | None = None) -> None:
        if not buffer:
            return
        writer = self._writer
        if writer.transport.is_closing():
            raise httpcore.WriteError("the connection is closed")
        try:
            writer.write(buffer)
            if writer.transport.get_write_buffer_size():  # the socket did not take it all: wait until it has
                async with asyncio.timeout(timeout):
                    await writer.drain()
        except TimeoutError:
            raise httpcore.WriteTimeout(f"could not send within {timeout} s") from None
        except OSError as exc:
            raise httpcore.WriteError(str(exc) or type(exc).__name__) from exc

    async def aclose(self) -> None:
        self._writer.close()

    async def start_tls(
        self, ssl_context: ssl.SSLContext, server_hostname: str | None = None, timeout: float | None = None
    ) -> httpcore.AsyncNetworkStream:
        try:
            async with asyncio.timeout(timeout):
                await self._writer.start_tls(ssl_context, server_hostname=server_hostname)
        except TimeoutError:
            self._writer.close()
            raise httpcore.ConnectTimeout(f"no TLS handshake within {timeout} s") from None
        except OSError as exc:  # ssl.SSLError included
            self._writer.close()
            raise httpcore.ConnectError(str(exc) or type(exc).__name__) from exc
        return self

    def get_extra_info(self, info: str) -> Any:
        if info == "is_readable":  # asked before an idle connection is used again: did the server close it?
            return is_socket_readable(self._writer.get_extra_info("socket"))
        return self._writer.get_extra_info(_EXTRA.get(info, info))


#: httpcore's names for a connection's details, as asyncio's transports call them.
_EXTRA = {"client_addr": "sockname", "server_addr": "peername"}


class AsyncioBackend(httpcore.AsyncNetworkBackend):
    """httpcore's network backend on asyncio's streams (see the module's docstring)."""

    async def connect_tcp(
        self,
        host: str,
        port: int,
        timeout: float | None = None,
        local_address: str | None = None,
        socket_options: Iterable[Any] | None = None,
    ) -> httpcore.AsyncNetworkStream:
        local = (local_address, 0) if local_address else None
        stream = await _connected(asyncio.open_connection(host, port, local_addr=local), timeout)
        _set_options(stream, socket_options)
        return stream

    async def connect_unix_socket(
        self, path: str, timeout: float | None = None, socket_options: Iterable[Any] | None = None
    ) -> httpcore.AsyncNetworkStream:
        stream = await _connected(asyncio.open_unix_connection(path), timeout)
        _set_options(stream, socket_options)
        return stream

    async def sleep(self, seconds: float) -> None:
        await asyncio.sleep(seconds)


#: The backend every client's pool shares (it holds no state of its own).
_BACKEND = AsyncioBackend()


async def _connected(
    opening: typing.Coroutine[Any, Any, tuple[asyncio.StreamReader, asyncio.StreamWriter]], timeout: float | None
) -> _Stream:
    try:
        async with asyncio.timeout(timeout):
            reader, writer = await opening
    except TimeoutError:
        raise httpcore.ConnectTimeout(f"no connection within {timeout} s") from None
    except OSError as exc:
        raise httpcore.ConnectError(str(exc) or type(exc).__name__) from exc
    return _Stream(reader, writer)


def _set_options(stream: _Stream, options: Iterable[Any] | None) -> None:
    sock = stream.get_extra_info("socket")
    for option in options or ():
        sock.setsockopt(*option)
