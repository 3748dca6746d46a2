"""The offline fake backend: ``model="fake/anything"`` is answered from a :class:`FakeScript`, in this process,
without litellm (importing it takes seconds, and no test of Simulator's own logic needs it).

Replies are queued turn by turn: text, tool calls, a dict sent as JSON text, a provider error to raise (see the
``fake_*`` constructors: rate limits with ``Retry-After``, server errors, timeouts, refused keys, ...) or a
callable that computes the reply from the messages. Every request is recorded as a :class:`FakeRequest`.
Usage is counted in words (prompt and reply), so token totals are predictable; a cost is known only when the
request carries per-token prices (``input_cost_per_token``/``output_cost_per_token``), as for litellm, or the
script prices the model (:meth:`FakeScript.price`). A script can also play a provider's prompt cache
(:meth:`FakeScript.cache_prompts`): each request then reports as cached the words of its prompt that an earlier
request to the same model already began with, priced at the script's cached price.
"""

from __future__ import annotations

import contextvars
import copy
import inspect
import json
import threading
from collections import deque
from collections.abc import Awaitable, Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

from pydantic import BaseModel

from simulator._fake_speech import RATE, listen_wav, speak_wav
from simulator.llm._retry import Failure, failure_detail, failure_for_status
from simulator.llm._speech import speech_completion, transcription_completion
from simulator.llm._types import Completion, Role, ToolCallRequest, Usage

__all__ = [
    "FAKE_PROVIDER",
    "FakeBackend",
    "FakeProviderError",
    "FakeReply",
    "FakeRequest",
    "FakeScript",
    "FakeToolCall",
    "StaticReply",
    "fake_auth_error",
    "fake_bad_request",
    "fake_connection_error",
    "fake_not_found",
    "fake_rate_limit",
    "fake_server_error",
    "fake_timeout",
    "is_fake_model",
]

#: The provider name of the offline fake: ``model="fake/anything"`` is answered by a :class:`FakeScript`.
FAKE_PROVIDER = "fake"


def is_fake_model(model: str) -> bool:
    """True for a model string the fake backend answers (``fake/...``)."""
    return model.startswith(f"{FAKE_PROVIDER}/")


@dataclass(frozen=True)
class FakeToolCall:
    """A tool call for a fake reply. ``arguments`` given as a string are sent verbatim (to test bad JSON)."""

    name: str
    arguments: Mapping[str, Any] | str = field(default_factory=dict)
    id: str | None = None


#: What a fake reply can be, before any callable is called.
StaticReply = str | list[FakeToolCall] | dict[str, Any] | BaseException
#: A queued reply: text; tool calls; a dict sent as JSON text; an exception instance to raise; or a callable
#: that receives the messages and returns one of these (or an awaitable of one).
FakeReply = StaticReply | Callable[[list[dict[str, Any]]], "StaticReply | Awaitable[StaticReply]"]


@dataclass(frozen=True)
class FakeRequest:
    """One request the fake provider received, as the model saw it.

    ``model`` is the part after ``fake/``; ``role`` is the client role that sent it (``None`` outside
    :class:`LLMClient`); ``params`` are the parameters the model is given (temperature, max_tokens,
    response_format, ...). Only whether an API key was sent is recorded, never the key.
    """

    model: str
    role: Role | None
    messages: list[dict[str, Any]]
    tools: list[dict[str, Any]] | None
    params: dict[str, Any]
    api_base: str | None
    has_api_key: bool


class FakeScript:
    """The replies of the fake provider, queued turn by turn, and the requests it received.

    Queue replies with :meth:`enqueue` for one model (the part after ``fake/``) or for any model (``"*"``);
    a model's own queue is used before the ``"*"`` queue. A request with nothing queued fails with a clear
    error (a 400 bad request, so it is not retried). Every request is kept in :attr:`requests`.

    Use it with ``LLMClient(..., fake_script=script)``, or make it active for the current context (and the asyncio
    tasks started in it) with ``with script.active(): ...``. There is no global script: nothing leaks between
    tests.
    """

    def __init__(self) -> None:
        self._queues: dict[str, deque[FakeReply]] = {}
        self._prices: dict[str, tuple[float, float, float | None]] = {}
        # The models whose prompt cache is played, and the prompts (word streams) each has been sent so far.
        self._prompt_caches: dict[str, deque[list[object]]] = {}
        self.requests: list[FakeRequest] = []
        self._served = 0
        # Scripts may be shared with code that calls from worker threads (a sync agent run in a thread pool).
        self._lock = threading.Lock()

    def enqueue(self, model: str, *replies: FakeReply, times: int = 1) -> FakeScript:
        """Queue ``replies`` (each ``times`` times, in order) for ``model`` or ``"*"``; returns the script."""
        if times < 1:
            raise ValueError("times must be at least 1")
        key = model.removeprefix(f"{FAKE_PROVIDER}/")
        with self._lock:
            queue = self._queues.setdefault(key, deque())
            for reply in replies:
                queue.extend([reply] * times)
        return self

    def price(self, model: str, *, prompt: float, completion: float, cached: float | None = None) -> FakeScript:
        """Price ``model``'s calls (or every model's, ``"*"``) in US dollars per prompt and per completion token,
        as a provider's price list would, so their cost is known; returns the script. ``cached`` is the price of a
        prompt token served from the prompt cache (:meth:`cache_prompts`; the prompt price when not given). A
        request carrying its own per-token prices keeps them."""
        if prompt < 0 or completion < 0 or (cached is not None and cached < 0):
            raise ValueError("prices must not be negative")
        with self._lock:
            self._prices[model.removeprefix(f"{FAKE_PROVIDER}/")] = (prompt, completion, cached)
        return self

    def _price(self, model: str) -> tuple[float, float, float | None] | None:
        with self._lock:
            return self._prices.get(model, self._prices.get("*"))

    def cache_prompts(self, model: str = "*", *, keep: int = 1000) -> FakeScript:
        """Play a provider's automatic prompt cache for ``model`` (or every model, ``"*"``): each request reports
        as cached (``Usage.cache_read_tokens``) the longest run of prompt words, from the start, that one of the
        last ``keep`` requests to the same model began with; returns the script. Messages count as the same only
        with the same role, so a prefix never spans a changed role."""
        if keep < 1:
            raise ValueError("keep must be at least 1")
        with self._lock:
            self._prompt_caches[model.removeprefix(f"{FAKE_PROVIDER}/")] = deque(maxlen=keep)
        return self

    def _cached_words(self, model: str, messages: list[dict[str, Any]]) -> int:
        """How many prompt words of this request the played prompt cache serves (0 when it is not played), and
        the request remembered for the next ones."""
        with self._lock:
            key = model if model in self._prompt_caches else "*"
            sent = self._prompt_caches.get(key)
            if sent is None:
                return 0
            stream = _word_stream(messages)
            best = max((_shared_words(stream, earlier) for earlier in sent), default=0)
            sent.append(stream)
            return best

    def pending(self, model: str | None = None) -> int:
        """Replies still queued, for one model key (``"*"`` included) or in all."""
        with self._lock:
            if model is not None:
                return len(self._queues.get(model.removeprefix(f"{FAKE_PROVIDER}/"), ()))
            return sum(len(queue) for queue in self._queues.values())

    @contextmanager
    def active(self) -> Iterator[FakeScript]:
        """Make this script answer ``fake/...`` calls in the current context (unless a client has its own)."""
        token = _ACTIVE_SCRIPT.set(self)
        try:
            yield self
        finally:
            _ACTIVE_SCRIPT.reset(token)

    def _take(self, request: FakeRequest) -> FakeReply | None:
        with self._lock:
            self.requests.append(request)
            for key in (request.model, "*"):
                queue = self._queues.get(key)
                if queue:
                    self._served += 1
                    return queue.popleft()
            return None

    def _exhausted_message(self, model: str) -> str:
        return (
            f"FakeScript has no reply queued for fake/{model} (request #{len(self.requests)}, "
            f"{self._served} served so far); queue one with script.enqueue({model!r}, ...) or "
            "script.enqueue('*', ...)"
        )


# A context variable, not a global: each asyncio task and each test sees only the script made active in its own
# context.
_ACTIVE_SCRIPT: contextvars.ContextVar[FakeScript | None] = contextvars.ContextVar(
    "simulator_fake_script", default=None
)


# --------------------------------------------------------------------------------------------------------------
# Provider errors


class FakeProviderError(Exception):
    """An error the fake provider raises, as a real provider's would be: an HTTP ``status_code`` and the
    response ``headers`` (``Retry-After``). The client sorts it into the same failure kinds as litellm's."""

    status_code: int = 500

    def __init__(self, message: str, *, status_code: int | None = None, headers: Mapping[str, str] | None = None):
        super().__init__(message)
        self.message = message
        if status_code is not None:
            self.status_code = status_code
        self.headers: dict[str, str] = dict(headers or {})

    def __str__(self) -> str:
        return f"{type(self).__name__}: {self.message}"


class FakeRateLimitError(FakeProviderError):
    """429: rate limited; retried."""

    status_code = 429


class FakeServerError(FakeProviderError):
    """A 5xx reply; retried."""


class FakeTimeoutError(FakeProviderError):
    """The provider took too long; retried."""

    status_code = 408


class FakeConnectionError(FakeProviderError):
    """The provider could not be reached; retried."""


class FakeAuthenticationError(FakeProviderError):
    """401: a bad or missing key; never retried."""

    status_code = 401


class FakeNotFoundError(FakeProviderError):
    """404: an unknown model; never retried."""

    status_code = 404


class FakeBadRequestError(FakeProviderError):
    """400: a request the provider refuses; never retried."""

    status_code = 400


def _retry_after_headers(retry_after: float | str | None) -> dict[str, str]:
    return {} if retry_after is None else {"retry-after": str(retry_after)}


def fake_rate_limit(message: str = "rate limit reached (fake)", *, retry_after: float | str | None = None) -> Exception:
    """The rate-limit error (429) a provider raises; retried by the client.

    ``retry_after`` (seconds, or an HTTP date) is sent as the response's ``Retry-After`` header.
    """
    return FakeRateLimitError(message, headers=_retry_after_headers(retry_after))


def fake_server_error(
    status: int = 500, message: str = "server error (fake)", *, retry_after: float | str | None = None
) -> Exception:
    """The error for a 5xx reply (500, 502, 503 or another 5xx); retried by the client.

    ``retry_after`` (seconds, or an HTTP date) is sent as the response's ``Retry-After`` header.
    """
    return FakeServerError(message, status_code=status, headers=_retry_after_headers(retry_after))


def fake_timeout(message: str = "request timed out (fake)") -> Exception:
    """The error a provider call raises when it takes too long; retried by the client."""
    return FakeTimeoutError(message)


def fake_connection_error(message: str = "connection refused (fake)") -> Exception:
    """The error raised when the provider cannot be reached; retried by the client."""
    return FakeConnectionError(message)


def fake_auth_error(message: str = "invalid API key (fake)") -> Exception:
    """The authentication error (401) for a bad or missing key; never retried."""
    return FakeAuthenticationError(message)


def fake_not_found(message: str = "model not found (fake)") -> Exception:
    """The error (404) for an unknown model; never retried."""
    return FakeNotFoundError(message)


def fake_bad_request(message: str = "invalid request (fake)") -> Exception:
    """The error (400) for a request the provider refuses; never retried."""
    return FakeBadRequestError(message)


# --------------------------------------------------------------------------------------------------------------
# The backend

# Request fields that are how a request travels or is paid for, not something the model is given.
_NOT_PARAMS = frozenset(
    {
        "model",
        "messages",
        "tools",
        "timeout",
        "api_key",
        "api_base",
        "base_url",
        "api_version",
        "num_retries",
        "max_retries",
        "stream",
        "headers",
        "extra_headers",
        "metadata",
        "input_cost_per_token",
        "output_cost_per_token",
    }
)


class FakeBackend:
    """Answers ``fake/<model>`` requests from ``script``, or else from the script made active with
    :meth:`FakeScript.active` in the calling context."""

    def __init__(self, script: FakeScript | None = None) -> None:
        self._script = script

    async def complete(self, request: Mapping[str, Any], *, role: Role | None = None) -> Completion:
        """Take the next queued reply for the request's model and answer with it (or raise it)."""
        full_model = str(request["model"])
        model = full_model.removeprefix(f"{FAKE_PROVIDER}/")
        messages = copy.deepcopy(list(request["messages"]))
        script = self._script or _ACTIVE_SCRIPT.get()
        if script is None:
            raise FakeBadRequestError(
                f"no FakeScript is bound for {full_model}: pass fake_script= to LLMClient "
                "or call it inside `with script.active():`"
            )
        params = {
            name: _model_param(name, value)
            for name, value in request.items()
            if name not in _NOT_PARAMS and value is not None
        }
        reply = script._take(
            FakeRequest(
                model=model,
                role=role,
                messages=copy.deepcopy(messages),
                tools=copy.deepcopy(request.get("tools")) or None,
                params=params,
                api_base=request.get("api_base"),
                has_api_key=bool(request.get("api_key")),
            )
        )
        if reply is None:
            raise FakeBadRequestError(script._exhausted_message(model))
        try:
            answer = reply(copy.deepcopy(messages)) if callable(reply) else reply
            if inspect.isawaitable(answer):
                answer = await answer
        except FakeProviderError:
            raise
        except Exception as exc:
            # A provider that fails in some other way could not be talked to (litellm says the same of a plain
            # exception raised inside a provider).
            raise FakeConnectionError(failure_detail(exc)) from exc
        if isinstance(answer, FakeProviderError):
            raise answer
        if isinstance(answer, Exception):
            raise FakeConnectionError(failure_detail(answer)) from answer
        price = script._price(model)
        priced = request.get("input_cost_per_token") is not None or request.get("output_cost_per_token") is not None
        cached_price = None
        if price is not None and not priced:
            request = {**request, "input_cost_per_token": price[0], "output_cost_per_token": price[1]}
            cached_price = price[2]
        cached = script._cached_words(model, messages)
        return _completion(answer, messages, request, full_model, cached=cached, cached_price=cached_price)

    async def speak(self, request: Mapping[str, Any], *, role: Role | None = None) -> Completion:
        """Speech from a ``fake/...`` voice model: the text in the fake speech codec (:mod:`simulator._fake_speech`,
        which the voice layer's fake recogniser reads back), as WAV. Usage: the words of the text; a cost only
        where the active script prices the model (:meth:`FakeScript.price`: its prompt price per character)."""
        text = str(request.get("input") or "")
        speed = request.get("speed")
        audio = speak_wav(text, rate=float(speed) if isinstance(speed, int | float) else 1.0)
        usage = Usage(prompt_tokens=_words(text), calls=1, cost=self._speech_cost(request, len(text)))
        return speech_completion(audio, usage, str(request["model"]))

    async def transcribe(self, request: Mapping[str, Any], *, role: Role | None = None) -> Completion:
        """A transcription from a ``fake/...`` transcriber model: what the fake speech codec wrote in the WAV bytes
        (``request["file"]``), with the share of it read cleanly as the confidence; a WAV file the codec cannot read
        is a bad request (400). Usage: the words heard; a cost only where the script prices the model (its prompt
        price per second of audio)."""
        wav = request.get("file")
        try:
            text, confidence = listen_wav(wav if isinstance(wav, bytes) else b"")
        except ValueError as exc:
            raise FakeBadRequestError(f"the fake transcriber cannot read the audio: {exc}") from exc
        seconds = max(0, len(wav or b"") - 44) / 2 / RATE
        usage = Usage(completion_tokens=_words(text), calls=1, cost=self._speech_cost(request, seconds))
        return transcription_completion(text, confidence, usage, str(request["model"]))

    def _speech_cost(self, request: Mapping[str, Any], units: float) -> float | None:
        script = self._script or _ACTIVE_SCRIPT.get()
        price = script._price(str(request["model"]).removeprefix(f"{FAKE_PROVIDER}/")) if script else None
        return None if price is None else price[0] * units

    def classify(self, exc: Exception) -> Failure | None:
        """The fake provider's errors as the client's failure kinds (the same ones litellm's map to)."""
        if isinstance(exc, FakeTimeoutError):
            return Failure(retry=True, kind="timeout", detail=failure_detail(exc))
        if isinstance(exc, FakeConnectionError):
            return Failure(retry=True, kind="connection error", detail=failure_detail(exc))
        if isinstance(exc, FakeProviderError):
            return failure_for_status(exc.status_code, exc)
        return None


def _model_param(name: str, value: Any) -> Any:
    """A request parameter as a provider receives it: a pydantic class as ``response_format`` becomes the strict
    JSON schema format litellm sends for it."""
    if name == "response_format" and isinstance(value, type) and issubclass(value, BaseModel):
        return {
            "type": "json_schema",
            "json_schema": {"schema": _strict(value.model_json_schema()), "name": value.__name__, "strict": True},
        }
    return copy.deepcopy(value)


def _strict(schema: Any) -> Any:
    if isinstance(schema, dict):
        strict = {key: _strict(item) for key, item in schema.items()}
        if strict.get("type") == "object":
            strict["additionalProperties"] = False
        return strict
    if isinstance(schema, list):
        return [_strict(item) for item in schema]
    return schema


def _completion(
    answer: Any,
    messages: list[dict[str, Any]],
    request: Mapping[str, Any],
    model: str,
    *,
    cached: int = 0,
    cached_price: float | None = None,
) -> Completion:
    if isinstance(answer, list):
        calls: list[ToolCallRequest] = []
        reply_words = 0
        for index, call in enumerate(answer):
            if not isinstance(call, FakeToolCall):
                raise TypeError(f"a tool-call reply must be a list of FakeToolCall, got {call!r}")
            arguments = call.arguments if isinstance(call.arguments, str) else json.dumps(call.arguments)
            calls.append(ToolCallRequest.parse(call.id or f"call_{len(messages)}_{index}", call.name, arguments))
            reply_words += _words(call.name) + _words(arguments)
        content: str | None = None
        finish_reason = "tool_calls"
    else:
        if isinstance(answer, dict):
            content = json.dumps(answer)
        elif isinstance(answer, str):
            content = answer
        else:
            raise TypeError(f"unsupported fake reply {answer!r}")
        calls = []
        finish_reason = "stop"
        reply_words = _words(content)
    prompt_words = _words(messages)
    cost = _cost(request, prompt_words, reply_words, cached, cached_price)
    savings: float | None = 0.0
    if cached:
        full = _cost(request, prompt_words, reply_words)
        savings = None if cost is None or full is None else full - cost
    usage = Usage(
        prompt_tokens=prompt_words,
        completion_tokens=reply_words,
        calls=1,
        cost=cost,
        cache_read_tokens=cached,
        cache_savings=savings,
    )
    return Completion(
        content=content,
        tool_calls=calls,
        finish_reason=finish_reason,
        usage=usage,
        model=model,
        cost=usage.cost,
        raw_text=content or "",
    )


def _cost(
    request: Mapping[str, Any],
    prompt_tokens: int,
    completion_tokens: int,
    cached: int = 0,
    cached_price: float | None = None,
) -> float | None:
    """The price of a call when the request names per-token prices, its ``cached`` prompt tokens at
    ``cached_price`` (the prompt price when None); unknown (``None``) otherwise, like a model litellm has no
    price for."""
    prompt_price = request.get("input_cost_per_token")
    completion_price = request.get("output_cost_per_token")
    if prompt_price is None and completion_price is None:
        return None
    full = float(prompt_price or 0.0)
    read = full if cached_price is None else cached_price
    return (prompt_tokens - cached) * full + cached * read + completion_tokens * float(completion_price or 0.0)


def _words(value: Any) -> int:
    """A crude token count: whitespace-separated words of all text in ``value``."""
    return len(_word_list(value))


def _word_list(value: Any) -> list[str]:
    """The whitespace-separated words of all text in ``value``, in order (a message's role, a block's type and an
    id are not text the model reads as words)."""
    if value is None:
        return []
    if isinstance(value, str):
        return value.split()
    if isinstance(value, Mapping):
        return [word for key, item in value.items() if key not in ("role", "type", "id") for word in _word_list(item)]
    if isinstance(value, list | tuple):
        return [word for item in value for word in _word_list(item)]
    return str(value).split()


def _word_stream(messages: list[dict[str, Any]]) -> list[object]:
    """A prompt as the played prompt cache compares it: each message's role (a marker, not a word), then its
    words."""
    stream: list[object] = []
    for message in messages:
        stream.append(("role", message.get("role")))
        stream.extend(_word_list(message))
    return stream


def _shared_words(stream: list[object], earlier: list[object]) -> int:
    """How many words of ``stream``, from its start, ``earlier`` began with too (role markers are not counted)."""
    words = 0
    for mine, theirs in zip(stream, earlier, strict=False):
        if mine != theirs:
            break
        if isinstance(mine, str):
            words += 1
    return words
