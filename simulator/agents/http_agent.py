"""The ``http`` adapter: an agent behind an OpenAI-compatible chat-completions endpoint.

Each turn posts the conversation to ``{base_url}/chat/completions``. The session parameters, if there are any,
go first as a system message ``Session parameters: {json}`` (the only place a plain chat API has for them).
When the reply asks for tools, each call is answered by the tool router (faked and recorded in test mode),
the results are sent back as ``tool`` messages, and the endpoint is asked again, at most
:data:`MAX_TOOL_ROUNDS` times per turn. Every text the agent sends in those rounds is part of its reply.

Each request may take the agent's ``timeout``. A request that got no reply (a connection error, a timeout
before the reply, a 429, 408 or 5xx status) is sent again, up to the agent's ``retries`` times, after a wait
from the model roles' :class:`~simulator.llm.RetryPolicy` (jittered exponential backoff, at least the
``Retry-After`` the server sent). A reply that arrived is never sent again, even a malformed one, and neither
is a request the agent refused (any other 4xx): the agent may have acted on it, so resending would not be the
same turn.

The API key and extra headers are read from the environment variables the config names, never from YAML;
their values never appear in an error message.

The client is aiohttp's (a dependency of litellm already; its parser is compiled): less CPU per request than
httpx's (docs/performance.md), which is what a run at high concurrency waits for between one reply and the next request
(``bench/run.py``). It is imported at the first request, not with this module (a run starts the import in a thread
before its conversations start, :func:`import_client_meanwhile`): a conversation whose simulated user speaks first
sends that user's first request without waiting for it (``bench/startup.py``). One session per
conversation, as one agent adapter is: its cookies are kept and sent back within the conversation, never into
another. No redirect is followed. The proxy the environment names for the agent's URL (``HTTP_PROXY``,
``HTTPS_PROXY``, ``NO_PROXY``, as ``urllib`` reads them), with the credentials in its URL, is looked up once, not on
every request; nothing else is taken from the environment (no ``.netrc``).
"""

from __future__ import annotations

import asyncio
import contextlib
import copy
import functools
import json
import os
import ssl
import sys
import threading
import urllib.parse
import urllib.request
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from simulator.agents import agent_type
from simulator.agents._base import AgentInput, AgentReply, Message, wire_messages
from simulator.agents._chat import (
    MAX_TOOL_ROUNDS,
    answer_tool_call,
    function_tools,
    session_text,
    text_of,
    tool_round,
)
from simulator.errors import AgentError
from simulator.llm import RetryPolicy, retry_after_seconds
from simulator.models import HttpAgent
from simulator.models.env_refs import UnsetVariable, expand
from simulator.models.transcript import ReportedUsage, ToolRound
from simulator.safety import redacted_and_shortened, register_secret
from simulator.taps import active_tape

if TYPE_CHECKING:
    import aiohttp

    from simulator.llm import LLMClient

_EXCERPT = 300
_HEADER_LIMIT = 65536


def _encoded(body: dict[str, Any]) -> bytes:
    """The request's JSON as httpx sent it: compact, UTF-8 as it is (no ``\\u`` escapes)."""
    return json.dumps(body, ensure_ascii=False, separators=(",", ":")).encode()


class _NoReply(Exception):
    """An attempt that got no reply from the agent: the same request may be sent again."""

    def __init__(self, kind: str, detail: str, retry_after: float | None = None) -> None:
        super().__init__(detail)
        self.kind = kind
        self.detail = detail
        self.retry_after = retry_after


@functools.cache
def import_client_meanwhile() -> None:
    """Import aiohttp in a thread of its own (once), unless it is imported already. Its first request imports it
    anyway: if the thread is still at it, that request waits for it; if the thread failed, it raises the error."""
    if "aiohttp" not in sys.modules:
        threading.Thread(target=_import_client, name="simulator-aiohttp-import").start()  # not a daemon: see below


def _import_client() -> None:
    # A daemon thread stopped at exit half-way through an import would keep the interpreter's import lock (see
    # simulator.engine._imports); this one is waited for at exit instead.
    with contextlib.suppress(Exception):  # raised again where the client is needed, by its own import
        import aiohttp  # noqa: F401


@functools.cache
def _ssl_context() -> ssl.SSLContext:
    """One TLS context for every conversation: building one loads the CA bundle, which a run of
    hundreds of conversations would otherwise pay each time."""
    return ssl.create_default_context()


def _env_proxy(url: str) -> str | None:
    """The proxy the environment names for ``url`` (credentials in its URL), or None: none for the URL's scheme, or
    ``NO_PROXY`` covers its host."""
    parts = urllib.parse.urlsplit(url)
    proxy = urllib.request.getproxies().get(parts.scheme)
    if not proxy or (parts.hostname and urllib.request.proxy_bypass(parts.hostname)):
        return None
    return proxy


def _describe(exc: BaseException) -> str:
    """An aiohttp error in a sentence, without the TLS context's repr aiohttp puts into a failed connection's."""
    import aiohttp

    if isinstance(exc, aiohttp.ClientConnectorError):
        cause = getattr(exc, "certificate_error", None) or exc.os_error
        text = f"cannot connect to {exc.host}:{exc.port}: {cause}"
    elif isinstance(exc, aiohttp.ClientResponseError):  # its status is the parser's, not the agent's
        text = exc.message
    else:
        text = str(exc)
    text = " ".join(text.split())  # the parser's messages span lines
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


def _text(raw: bytes, charset: str | None) -> str:
    try:
        return raw.decode(charset or "utf-8", errors="replace")
    except LookupError:  # a charset Python does not know
        return raw.decode("utf-8", errors="replace")


def _content(message: dict[str, Any]) -> Any:
    return message.get("content")


@dataclass
class Exchange:
    """One turn's requests to the endpoint: every reply (and when it arrived, in the event loop's time), the tool
    rounds answered between them, and the tokens the responses reported."""

    replies: list[dict[str, Any]] = field(default_factory=list)
    arrived: list[float] = field(default_factory=list)
    rounds: list[ToolRound] = field(default_factory=list)
    usage: ReportedUsage | None = None


@agent_type("http", prepare=import_client_meanwhile)
def _http(config: HttpAgent, *, llm: LLMClient | None = None, code_folders: Sequence[Path] = ()) -> HttpAdapter:
    # The same waits between retries as the model roles (a test's client may make them instant).
    return HttpAdapter(config, retry=llm.retry_policy if llm is not None else None)


class HttpAdapter:
    """Talks to one OpenAI-compatible endpoint for one conversation."""

    def __init__(self, config: HttpAgent, *, retry: RetryPolicy | None = None) -> None:
        self.config = config
        self._retry = retry or RetryPolicy()
        try:
            base_url = expand(config.base_url)
        except UnsetVariable as exc:
            raise AgentError(f"the HTTP agent's base_url {exc}") from None
        self.url = f"{base_url.rstrip('/')}/chat/completions"
        headers = {
            header: _from_env(variable, f"headers_from_env.{header}")
            for header, variable in config.headers_from_env.items()
        }
        # Header values may be secrets too: none of them is ever quoted back in an error.
        self._secrets = list(headers.values())
        if config.api_key_env is not None:
            key = _from_env(config.api_key_env, "api_key_env")
            headers["Authorization"] = f"Bearer {key}"
            self._secrets.append(key)
        self._tools = function_tools(config.tools)
        https = self.url.startswith("https://")
        # An http:// agent never speaks TLS (no redirect is followed): it keeps aiohttp's default, built at its import.
        self._tls: ssl.SSLContext | bool = _ssl_context() if https else True
        self._proxy = _env_proxy(self.url)
        self._headers = {**headers, "Content-Type": "application/json"}
        self._session: aiohttp.ClientSession | None = None  # made at the first request, in the loop that sends it

    def _opened(self) -> aiohttp.ClientSession:
        if self._session is None:
            import aiohttp

            self._session = aiohttp.ClientSession(
                connector=aiohttp.TCPConnector(ssl=self._tls),
                headers=self._headers,
                # Cookies from an agent on an IP address (127.0.0.1) are kept too, as from a named host.
                cookie_jar=aiohttp.CookieJar(unsafe=True),
                timeout=aiohttp.ClientTimeout(),  # none of aiohttp's own: each request is bounded below
                # Header lines as long as httpx took them (64 KB; aiohttp's own limit is 8 KB).
                max_line_size=_HEADER_LIMIT,
                max_field_size=_HEADER_LIMIT,
                trust_env=False,  # the proxy is looked up once (above); .netrc is never sent to the agent
            )
        return self._session

    async def respond(self, request: AgentInput) -> AgentReply:
        """Post the conversation; answer tool calls until the agent replies with text (or stops)."""
        messages: list[Message] = []
        if request.session:
            messages.append({"role": "system", "content": session_text(request.session)})
        messages.extend(wire_messages(request.messages))
        turn = await self.exchange(request, messages)
        texts = [text for message in turn.replies if (text := text_of(message.get("content")))]
        return AgentReply(messages=texts, tool_rounds=turn.rounds or None, usage=turn.usage)

    async def exchange(
        self,
        request: AgentInput,
        messages: list[Message],
        *,
        extra: Mapping[str, Any] | None = None,
        content: Callable[[dict[str, Any]], Any] = _content,
    ) -> Exchange:
        """Post ``messages`` (``extra`` added to each request's body), answer the reply's tool calls through the
        turn's tool handle and post again, until a reply asks for none (at most :data:`MAX_TOOL_ROUNDS` rounds).
        ``content`` reads what a reply said, as the next request's history holds it (its ``content`` here)."""
        turn = Exchange()
        loop = asyncio.get_running_loop()
        for round_ in range(MAX_TOOL_ROUNDS + 1):
            message, reported = await self.post(messages, extra)
            turn.replies.append(message)
            turn.arrived.append(loop.time())
            if reported is not None:
                turn.usage = reported if turn.usage is None else turn.usage + reported
            calls = message.get("tool_calls") or []
            if not isinstance(calls, list) or not calls:
                return turn
            if round_ == MAX_TOOL_ROUNDS:
                break
            # Ids are made up only if the endpoint sent none: the tool messages must point at their call, and the
            # history of later turns holds this turn's calls too.
            made_up = f"call_{request.turn}_{round_}_"
            normalized = [_normalize_call(call, f"{made_up}{index}") for index, call in enumerate(calls)]
            wire_calls = [wire for wire, _ in normalized]
            said = content(message)
            messages.append({"role": "assistant", "content": said, "tool_calls": wire_calls})
            turn.rounds.append(tool_round([wire["id"] for wire in wire_calls], said))
            for wire, raw_arguments in normalized:
                function = wire["function"]
                messages.append(
                    await answer_tool_call(
                        request.tools,
                        wire["id"],
                        function["name"],
                        raw_arguments,
                        sent=function["arguments"],
                        timeout=self.config.timeout,
                    )
                )
        raise AgentError(
            f"agent kept calling tools: the HTTP agent at {self.url} still asked for tools after "
            f"{MAX_TOOL_ROUNDS} rounds of tool results in one turn"
        )

    async def aclose(self) -> None:
        """Close the HTTP session (and its connections)."""
        session, self._session = self._session, None
        if session is not None:
            await session.close()

    @property
    def turn_timeout(self) -> float:
        """The longest one turn can take: every request of every tool round with all its attempts and waits.

        Each request is bounded by the agent's ``timeout`` here, so the engine's own bound on a turn is only a
        safety net, and must not cut the retries short.
        """
        attempts = self.config.retries + 1
        request = attempts * self.config.timeout + self.config.retries * self._retry.longest_wait()
        return (MAX_TOOL_ROUNDS + 1) * request

    async def post(
        self, messages: list[Message], extra: Mapping[str, Any] | None = None
    ) -> tuple[dict[str, Any], ReportedUsage | None]:
        """Send one request, again while no reply came back and retries are left; the reply's message and the
        tokens the response reports (``usage``), if it reports them. ``extra`` adds keys to the request's body
        (a voice agent's ``modalities`` and ``audio``)."""
        body: dict[str, Any] = {"model": self.config.model, "messages": messages}
        if self._tools:
            body["tools"] = self._tools  # some servers refuse an empty list, so it is left out instead
        body.update(extra or {})
        attempts = self.config.retries + 1
        for attempt in range(1, attempts + 1):
            try:
                message, usage = await self._attempt(body)
            except _NoReply as failure:
                if attempt == attempts:
                    raise AgentError(self._gave_up(failure, attempts)) from None
                await self._retry.wait(attempt, failure.retry_after)
                continue
            tape = active_tape()
            if tape is not None:
                tape.add("agent", "http", copy.deepcopy(body), copy.deepcopy(message), url=self.url)
            return message, usage
        raise AssertionError("unreachable: the last attempt returns or raises")  # pragma: no cover

    async def _attempt(self, body: dict[str, Any]) -> tuple[dict[str, Any], ReportedUsage | None]:
        """One request. :class:`_NoReply` when nothing came back, :class:`AgentError` for a reply that is unusable."""
        import aiohttp

        status: int | None = None
        session = self._opened()
        try:
            # The whole request, not each read: a server that trickles bytes cannot stretch it.
            async with asyncio.timeout(self.config.timeout):
                async with session.post(
                    self.url, data=_encoded(body), allow_redirects=False, proxy=self._proxy
                ) as response:
                    status = response.status
                    raw = await response.read()
        except TimeoutError:
            if status is not None and 200 <= status < 300:
                raise AgentError(
                    f"the HTTP agent at {self.url} answered {status} but its reply did not arrive within "
                    f"{self.config.timeout:g} s; a reply that started is not sent again"
                ) from None
            raise _NoReply(
                "timeout",
                f"the HTTP agent at {self.url} did not answer within {self.config.timeout:g} s",
            ) from None
        except aiohttp.ClientResponseError as exc:
            # Something answered, but not in HTTP (a bad status line, header or chunk): the agent may have acted on
            # the request, so it is not sent again.
            raise AgentError(
                f"the HTTP agent at {self.url} sent a reply that is not valid HTTP: {_describe(exc)}"
            ) from exc
        except (aiohttp.ClientConnectionError, aiohttp.ClientPayloadError) as exc:
            if status is not None and 200 <= status < 300:
                raise AgentError(
                    f"the HTTP agent at {self.url} answered {status} but the connection broke while it sent its "
                    f"reply ({_describe(exc)}); a reply that started is not sent again"
                ) from exc
            raise _NoReply("connection error", f"cannot reach the HTTP agent at {self.url}: {_describe(exc)}") from exc
        except aiohttp.ClientError as exc:
            raise AgentError(f"cannot reach the HTTP agent at {self.url}: {_describe(exc)}") from exc
        if not 200 <= response.status < 300:
            text = _text(raw, response.charset)
            detail = f"the HTTP agent at {self.url} answered {response.status} {response.reason or ''}".rstrip()
            detail += f": {self._excerpt(text)}"
            if response.status in (408, 429) or response.status >= 500:
                kind = "rate limited" if response.status == 429 else f"status {response.status}"
                raise _NoReply(kind, detail, retry_after_seconds(response.headers))
            raise AgentError(detail)
        try:
            data = json.loads(raw)
        except ValueError:  # UnicodeDecodeError included
            raise AgentError(
                f"the HTTP agent at {self.url} sent a reply that is not valid JSON: "
                f"{self._excerpt(_text(raw, response.charset))}"
            ) from None
        try:
            message = data["choices"][0]["message"]
        except (KeyError, IndexError, TypeError):
            message = None
        if not isinstance(message, dict):
            raise AgentError(
                f"the HTTP agent at {self.url} sent JSON without `choices[0].message` (is it an OpenAI-compatible "
                f"chat-completions endpoint?): {self._excerpt(_text(raw, response.charset))}"
            )
        return message, _reported_usage(data)

    def _gave_up(self, failure: _NoReply, attempts: int) -> str:
        if failure.kind == "timeout":
            fix = "raise the agent's `timeout` if it is just slow"
        elif failure.kind == "rate limited":
            fix = "lower the run's --concurrency"
        else:
            fix = "check that the agent is up"
        if attempts == 1:
            return f"{failure.detail} ({fix}, or give it `retries`)"
        return f"{failure.detail}; no reply in {attempts} attempts ({fix}, or raise the agent's `retries`)"

    def _excerpt(self, text: str) -> str:
        text = " ".join(text.split()) or "(empty body)"
        for secret in self._secrets:
            text = text.replace(secret, "***")
        return redacted_and_shortened(text, _EXCERPT)


def _reported_usage(data: Any) -> ReportedUsage | None:
    """The response's ``usage`` (OpenAI's ``prompt_tokens`` and ``completion_tokens``), None when it has none
    that can be read: whole numbers of 0 or more, booleans not counted."""
    usage = data.get("usage") if isinstance(data, dict) else None
    if not isinstance(usage, dict):
        return None
    counts = [usage.get("prompt_tokens"), usage.get("completion_tokens")]
    if not all(isinstance(n, int) and not isinstance(n, bool) and n >= 0 for n in counts):
        return None
    return ReportedUsage(prompt_tokens=counts[0], completion_tokens=counts[1])


def _from_env(variable: str, key: str) -> str:
    value = os.environ.get(variable, "")
    if not value:
        raise AgentError(
            f"the HTTP agent's `{key}` names the environment variable {variable}, but it is not set; "
            f"set it (export {variable}=...) before running"
        )
    register_secret(variable, value)  # redacted from everything stored, printed or exported from now on
    return value


def _normalize_call(call: Any, default_id: str) -> tuple[dict[str, Any], dict[str, Any] | str | None]:
    """A tool call in the exact OpenAI shape, whatever liberties the endpoint took, and its arguments as sent.

    The arguments are routed as sent (usually a JSON string), so the router records malformed ones as such.
    """
    call = call if isinstance(call, Mapping) else {}
    function = call.get("function")
    function = function if isinstance(function, Mapping) else {}
    raw = function.get("arguments")
    arguments: dict[str, Any] | str | None = raw if isinstance(raw, str | dict) else None
    wire = {
        "id": str(call.get("id") or default_id),
        "type": "function",
        "function": {
            "name": str(function.get("name") or ""),
            "arguments": json.dumps(arguments) if isinstance(arguments, dict) else arguments or "",
        },
    }
    return wire, arguments
