"""A local OpenAI-compatible chat-completions server that injects provider faults, for the agent under test
(Simulator's ``http`` adapter) and for the simulated user and the judge (litellm, ``openai/...`` with
``api_base``), all on 127.0.0.1.

Each role has its own base URL, ``{url}/{role}/v1`` with role ``agent``, ``user`` or ``judge``. A request that
is not faulted gets a good answer: the agent says where the order is (and calls ``lookup_order`` once when
asked for a tool call), the user and the judge answer like the acceptance tests' model stub (the user speaks
its goal, the judge decides by fixed rules).

Faults (:data:`FAULTS`):

=============  ==============================================================================================
``429``        HTTP 429 with ``Retry-After: 1`` (and the body of a rate limit error)
``500``        HTTP 500
``503``        HTTP 503
``reset``      the connection is dropped before any reply
``hang``       no reply for :data:`HANG` seconds (longer than any timeout the tests set)
``malformed``  HTTP 200 whose body is not JSON
``empty``      HTTP 200 with ``"choices": []``
``badargs``    HTTP 200 with a tool call whose arguments are not JSON (the agent then answers the tool result)
``401echo``    HTTP 401 whose error message quotes the credentials it was sent (``Authorization`` and every
               ``x-...`` header), as some providers and proxies do
=============  ==============================================================================================

Two ways to fault:

* **persistent**, by marker: a request whose text contains ``{role}-fault=NAME`` gets that fault every time
  (the user's goal for the user role, a step's success criteria for the judge, a static utterance for the agent);
* **flaky**, :meth:`FaultServer.flaky`: a share of requests gets a transient fault (429, 500, 503, reset, hang),
  decided from a hash of the request (so a run with the same requests gets the same faults) and the number of
  times the same request was seen: a request is faulted at most twice in a row, so a client that retries three
  times always gets through, and "no error" is a certainty, not a likelihood.

Every request is logged (:class:`Hit`: role, request hash, attempt number, fault, arrival time on the server's
clock), so tests check retries and waits from the server's side.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import json
import re
import threading
import time
from dataclasses import dataclass, field
from typing import Any

from aiohttp import web

from tests._loop_thread import LoopThread
from tests.acceptance._servers import judge_reply, user_reply

ROLES = ("agent", "user", "judge")
TRANSIENT = ("429", "500", "503", "reset", "hang")
FAULTS = (*TRANSIENT, "malformed", "empty", "badargs", "401echo")
#: Seconds a hang lasts (the server's stop ends it at once).
HANG = 30.0
#: After this many requests the server answers only 503, so a runaway client ends.
MAX_REQUESTS = 5000

_MARKER = re.compile(r"\b(agent|user|judge)-fault=([0-9a-z]+)")


@dataclass(frozen=True)
class Hit:
    """One request the server received."""

    role: str
    key: str
    attempt: int
    fault: str | None
    at: float


def _completion(content: str | None, tool_calls: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    message: dict[str, Any] = {"role": "assistant", "content": content}
    if tool_calls:
        message["tool_calls"] = tool_calls
    return {
        "id": "chatcmpl-fault",
        "object": "chat.completion",
        "created": int(time.time()),
        "model": "fault",
        "choices": [{"index": 0, "message": message, "finish_reason": "tool_calls" if tool_calls else "stop"}],
        "usage": {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15},
    }


def agent_reply(body: dict[str, Any]) -> dict[str, Any]:
    """The agent under test: answers the last user message; after a tool result, reports it."""
    messages = [m for m in body.get("messages", []) if isinstance(m, dict)]
    if messages and messages[-1].get("role") == "tool":
        return _completion("I looked it up: your order has shipped.")
    return _completion("Your order ORD-1 has shipped and arrives tomorrow.")


@dataclass
class FaultServer:
    """The server, in a background thread with its own event loop; use it as a context manager."""

    flaky_rate: float = 0.0
    seed: int = 0
    hits: list[Hit] = field(default_factory=list)
    url: str = ""
    _seen: dict[str, int] = field(default_factory=dict)
    _rotation: dict[str, int] = field(default_factory=dict)
    _background: LoopThread = field(default_factory=lambda: LoopThread("fault-server"))
    _runner: web.AppRunner | None = None
    _stop: asyncio.Event | None = None
    _lock: threading.Lock = field(default_factory=threading.Lock)

    @classmethod
    def flaky(cls, rate: float, seed: int) -> FaultServer:
        """A server that gives about ``rate`` of the requests of every role a transient fault."""
        return cls(flaky_rate=rate, seed=seed)

    def base_url(self, role: str) -> str:
        """The OpenAI-style base URL a role's client is given."""
        return f"{self.url}/{role}/v1"

    def __enter__(self) -> FaultServer:
        self.url = self._background.start(self._start)
        return self

    def __exit__(self, *exc: object) -> None:
        self._background.stop(self._shutdown, timeout=15)

    async def _start(self) -> str:
        self._stop = asyncio.Event()
        app = web.Application()
        app.router.add_post("/{role}/v1/chat/completions", self._handle)
        self._runner = web.AppRunner(app, access_log=None, shutdown_timeout=2.0)
        await self._runner.setup()
        await web.TCPSite(self._runner, "127.0.0.1", 0).start()
        host, port = self._runner.addresses[0][:2]
        return f"http://{host}:{port}"

    async def _shutdown(self) -> None:
        assert self._stop is not None
        assert self._runner is not None
        self._stop.set()  # every hang ends now
        await self._runner.cleanup()

    # -- deciding -----------------------------------------------------------------------------------------------

    def _decide(self, role: str, raw: bytes) -> tuple[str, int, str | None]:
        key = hashlib.sha256(role.encode() + b"\0" + raw).hexdigest()[:16]
        # A marker may start a line of a message (a fenced section's first line): read JSON's "\n" as the line break.
        text = raw.decode("utf-8", errors="replace").replace("\\n", "\n")
        with self._lock:
            attempt = self._seen.get(key, 0)
            self._seen[key] = attempt + 1
            marked = [name for marked_role, name in _MARKER.findall(text) if marked_role == role]
            fault: str | None = marked[0] if marked else None
            if fault is None and self.flaky_rate and attempt < 2:
                draw = int(hashlib.sha256(f"{self.seed}:{key}:{attempt}".encode()).hexdigest()[:8], 16) / 0xFFFFFFFF
                if draw < self.flaky_rate:
                    turn = self._rotation.get(role, 0)
                    self._rotation[role] = turn + 1
                    fault = TRANSIENT[turn % len(TRANSIENT)]
            self.hits.append(Hit(role, key, attempt, fault, time.monotonic()))
            if len(self.hits) > MAX_REQUESTS:
                fault = "503"
        return key, attempt, fault

    # -- answering ----------------------------------------------------------------------------------------------

    async def _handle(self, request: web.Request) -> web.StreamResponse:
        role = request.match_info["role"]
        raw = await request.read()
        _, _, fault = self._decide(role, raw)
        body = json.loads(raw)
        if fault is None:
            return self._good(role, body)
        if fault == "429":
            error = {"error": {"message": "Rate limit reached, retry after 1 s", "type": "rate_limit_error"}}
            return web.json_response(error, status=429, headers={"Retry-After": "1"})
        if fault in ("500", "503"):
            error = {"error": {"message": f"injected fault {fault}", "type": "server_error"}}
            return web.json_response(error, status=int(fault))
        if fault == "reset":
            if request.transport is not None:
                request.transport.abort()
            return web.Response()
        if fault == "hang":
            assert self._stop is not None
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._stop.wait(), HANG)
            return web.json_response({"error": {"message": "hung"}}, status=504)
        if fault == "malformed":
            return web.Response(
                status=200, text='{"choices": [{"message": {"content": "cut', content_type="application/json"
            )
        if fault == "empty":
            return web.json_response({"id": "x", "object": "chat.completion", "model": "fault", "choices": []})
        if fault == "badargs":
            messages = body.get("messages", [])
            if role == "agent" and messages and messages[-1].get("role") == "tool":
                return self._good(role, body)
            call = {"id": "call_bad", "type": "function", "function": {"name": "lookup_order", "arguments": "{oops"}}
            return web.json_response(_completion(None, [call]))
        if fault == "401echo":
            sent = {
                name: value
                for name, value in request.headers.items()
                if name.lower() in ("authorization", "api-key") or name.lower().startswith("x-")
            }
            message = f"Incorrect API key provided: {json.dumps(sent)}"
            return web.json_response({"error": {"message": message, "type": "invalid_request_error"}}, status=401)
        return web.json_response({"error": {"message": f"unknown fault {fault}"}}, status=400)

    @staticmethod
    def _good(role: str, body: dict[str, Any]) -> web.Response:
        if role == "agent":
            return web.json_response(agent_reply(body))
        text = user_reply(body) if role == "user" else judge_reply(body)
        return web.json_response(_completion(text))
