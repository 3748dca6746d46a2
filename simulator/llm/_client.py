"""The client every model role calls through: roles, the request cache, limits, retries, accounting and
structured output, the same whichever backend answers.

What the client adds on top of a backend
  * per-role settings (:class:`~simulator.models.settings.ModelSettings`): model, temperature, max tokens,
    timeout, API base, and the API key read from the environment variable named by ``api_key_env``
    (the key itself is never logged or put in an error message);
  * a per-role concurrency limit (an :class:`asyncio.Semaphore` of ``concurrency`` slots);
  * a timeout on the whole call (a provider's HTTP client only bounds each read);
  * retries done here, not by litellm: exponential backoff with full jitter (:class:`RetryPolicy`, shared
    with the agent adapters) on rate limits (429), server errors (5xx), timeouts and connection errors,
    waiting at least as long as the provider's ``Retry-After`` asks (capped at 60 s); a ``Retry-After`` also
    holds off every other call to the same provider (model and API base) for that long, in the whole process
    (every client on the event loop) or, through a shared :class:`CallLimiter`, the whole Ray cluster; no retry on
    authentication, bad request or unknown model errors, which fail at once with a
    :class:`~simulator.errors.ModelError` that says what to fix;
  * token and cost accounting per role, counted into the :func:`metering` blocks around the calls (one per
    conversation: that is what a transcript's and a run's usage are made of); a cost is ``None`` when the
    price of the model is unknown;
  * :meth:`LLMClient.structured`: JSON output validated with pydantic, re-asked with the validation error.

Backends (chosen per role by :func:`backend_name`): ``fake/...`` models are answered in process by the fake backend
(:mod:`simulator.llm._fake`); with ``backend: auto`` (the default) ``openai/...`` models go straight to their
OpenAI-compatible endpoint over httpx (:mod:`simulator.llm._openai`, pooled connections, neither litellm nor the
openai SDK) and every other model through litellm (:mod:`simulator.llm._litellm`, the only importer of litellm);
``backend: litellm`` or ``openai`` forces one.

The request cache (:class:`RequestCache`): the simulated user and the judge are cached by default, the agent
under test only when asked (``cache_roles``), since it is what a run measures. A cache hit returns the stored
reply without calling the model: that is what makes a re-run of an unchanged suite fast, free and reproducible.
A request is only reproducible *live* when its temperature is 0 or the provider is deterministic; with a cache
it is reproducible anyway, because the first reply is replayed.
"""

from __future__ import annotations

import asyncio
import atexit
import contextvars
import functools
import gc
import os
import time
import weakref
from collections.abc import AsyncIterator, Awaitable, Callable, Collection, Iterator, Mapping, Sequence
from contextlib import AbstractAsyncContextManager, asynccontextmanager, contextmanager
from typing import Any, Protocol, TypeVar

from pydantic import BaseModel

from simulator.errors import CredentialsError, ModelError
from simulator.llm._backend import Backend
from simulator.llm._cache import RequestCache, cache_salt, request_cache_key
from simulator.llm._calls import ModelCall, log_call
from simulator.llm._fake import FakeBackend, FakeScript, is_fake_model
from simulator.llm._litellm import LitellmBackend, load_litellm
from simulator.llm._openai import OPENAI_PREFIX, OpenAIBackend, is_local_base, load_openai
from simulator.llm._providers import key_variables
from simulator.llm._replay import recorded_answers, request_fingerprint, request_record, taped
from simulator.llm._retry import Failure, HoldOff, HoldOffs, RetryPolicy, full_jitter, log_hold_off
from simulator.llm._speech import (
    SpeechBackend,
    Transcription,
    audio_of,
    speech_cache_key,
    speech_request,
    transcription_of,
    transcription_request,
)
from simulator.llm._structured import InvalidReply, parse_structured, refused_json_mode, reply_format
from simulator.llm._types import Completion, Role, StructuredOutputError, Usage
from simulator.models.env_refs import UnsetVariable, expand
from simulator.models.run import DEFAULT_CONCURRENCY
from simulator.models.settings import ModelRoles, ModelSettings
from simulator.safety import redact, register_secret

__all__ = [
    "CallLimiter",
    "LLMClient",
    "UsageMeter",
    "backend_name",
    "metering",
    "noting_refusals",
    "preload",
]

T = TypeVar("T", bound=BaseModel)

# Keyword arguments the client sets itself; letting a caller override them would bypass the role's
# settings, its accounting or its retry policy.
_RESERVED = frozenset({"model", "messages", "tools", "api_key", "stream", "num_retries", "max_retries"})

_LITELLM = LitellmBackend()
# One for the process: its pooled HTTP clients are shared by every LLMClient (see simulator.llm._openai).
_OPENAI = OpenAIBackend()


def backend_name(settings: ModelSettings) -> str:
    """Which backend answers ``settings``' model: ``fake`` for ``fake/...`` models, else the role's ``backend``,
    where ``auto`` means ``openai`` for ``openai/...`` models and ``litellm`` for every other provider."""
    model = settings.model or ""
    if is_fake_model(model):
        return "fake"
    if settings.backend != "auto":
        return settings.backend
    return "openai" if model.startswith(OPENAI_PREFIX) else "litellm"


def preload(roles: ModelRoles) -> None:
    """Import now what the roles' backends need (litellm, or httpx and the price list): a run calls this
    before its conversations start, because an import takes up to seconds and, done inside the first model call,
    blocks the event loop while the agent timeouts of every other conversation keep running (their agents then
    look as if they never answered). Fake models need neither; openai models never import litellm."""
    _quick_exit()
    needed = {backend_name(settings) for settings in (roles.agent, roles.user, roles.judge) if settings.model}
    if any(settings.model and not is_fake_model(settings.model) for settings in (roles.voice, roles.transcriber)):
        needed.add("litellm")  # speech calls go through litellm whatever the role's backend
    if "litellm" in needed:
        load_litellm()
    if "openai" in needed:
        load_openai()


@functools.cache
def _quick_exit() -> None:
    """Freeze the heap when the process exits: Python's last garbage collection then skips the objects of the
    model libraries, pydantic schemas and LangGraph imported for a run, which took long after the last
    result. Nothing is lost: objects still referenced are torn down as before, and only
    garbage cycles left at exit go uncollected, which the interpreter does not promise to finalize anyway."""
    atexit.register(gc.freeze)


class CallLimiter(Protocol):
    """Where a client takes a slot before each call of a role (``limit``: the role's ``concurrency``), and where
    the waits servers asked for (``Retry-After``) are kept per provider (:class:`~simulator.llm._retry.HoldOffs`).
    Without one, a client holds a semaphore per role of its own and shares the hold-offs of its event loop; a run
    spread over many processes (the Ray executor) gives every client one shared limiter, so a role's limit and a
    provider's ``Retry-After`` hold across all of them."""

    def slot(self, role: Role, limit: int, provider: str) -> AbstractAsyncContextManager[HoldOff]:
        """Held while one call of ``role`` is in flight; gives how long calls to ``provider`` are still held off
        when the slot was granted (the caller waits that out before it calls)."""
        ...

    async def hold_off(self, provider: str, seconds: float) -> int:
        """Hold off every call to ``provider`` for ``seconds`` (unless a longer hold-off runs); the number of the
        hold-off that stands (:meth:`~simulator.llm._retry.HoldOffs.hold_off`)."""
        ...

    async def held_off(self, provider: str) -> HoldOff:
        """How long calls to ``provider`` must still wait."""
        ...


#: The hold-offs of the clients without a limiter, one table per event loop: every conversation of a local run
#: shares it (a run is one ``asyncio.run``), and nothing of one loop's waits leaks into another's.
_LOOP_HOLD_OFFS: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, HoldOffs] = weakref.WeakKeyDictionary()


def _loop_hold_offs() -> HoldOffs:
    loop = asyncio.get_running_loop()
    table = _LOOP_HOLD_OFFS.get(loop)
    if table is None:
        table = _LOOP_HOLD_OFFS[loop] = HoldOffs(on_new=log_hold_off)
    return table


# --------------------------------------------------------------------------------------------------------------
# Accounting


class UsageMeter:
    """Usage of the calls made inside one :func:`metering` block (one conversation, or a whole run), per role.

    Replies served from the request cache count as calls (at cost 0.0) in ``by_role``, where each role's
    ``cached_calls`` and ``cached_cost`` (their would-be cost) say how many and what they first cost, and also in
    ``cache_hits``.
    A role appears once it made a call. ``parent`` is the meter of the enclosing block, which counts every call
    of this one too.
    """

    def __init__(self, parent: UsageMeter | None = None) -> None:
        self.by_role: dict[Role, Usage] = {}
        self.cache_hits: dict[Role, int] = {}
        self.parent = parent

    def total(self) -> Usage:
        """Tokens, calls and cost over all roles."""
        total = Usage()
        for usage in self.by_role.values():
            total = total + usage
        return total

    def add(self, role: Role, usage: Usage, *, cached: bool = False) -> None:
        """Count one call's usage (``cached``: it was a cache hit)."""
        self.by_role[role] = self.by_role.get(role, Usage()) + usage
        if cached:
            self.cache_hits[role] = self.cache_hits.get(role, 0) + 1


_METER: contextvars.ContextVar[UsageMeter | None] = contextvars.ContextVar("simulator_usage_meter", default=None)


@contextmanager
def metering() -> Iterator[UsageMeter]:
    """Count the usage of every model call made in this block, and in tasks started from it.

    Many conversations share one client; each runs its own block, so each knows its own tokens and cost. Blocks
    nest: a call counts in its own block and in every block around it (a run's block sees all its conversations).
    """
    meter = UsageMeter(_METER.get())
    token = _METER.set(meter)
    try:
        yield meter
    finally:
        _METER.reset(token)


_REFUSALS: contextvars.ContextVar[list[CredentialsError] | None] = contextvars.ContextVar(
    "simulator_refusals", default=None
)


@contextmanager
def noting_refusals() -> Iterator[list[CredentialsError]]:
    """The credential failures (:class:`~simulator.errors.CredentialsError`) of the model calls made in this block
    and the tasks started from it, whether or not a caller caught them: a runner tells a conversation that failed
    because no key was sent or the key was refused from one that failed otherwise."""
    noted: list[CredentialsError] = []
    token = _REFUSALS.set(noted)
    try:
        yield noted
    finally:
        _REFUSALS.reset(token)


def _logged(role: Role, began: int, completion: Completion) -> Completion:
    """``completion``, logged for tracing (:mod:`simulator.llm._calls`) when the conversation is traced."""
    log_call(
        ModelCall(
            role=role.value, model=completion.model, started_ns=began, ended_ns=time.time_ns(),
            usage=completion.usage, cached=completion.cached, finish_reason=completion.finish_reason,
        )
    )  # fmt: skip
    return completion


class LLMClient:
    """Calls models for the agent, user and judge roles: ``fake/...`` models through the in-process fake backend,
    ``openai/...`` models straight to their endpoint and every other model through litellm (see :func:`backend_name`).

    ``fake_script`` answers ``fake/...`` models in this client's calls (it overrides a script made active with
    :meth:`FakeScript.active`). ``backoff_base`` and ``backoff_cap`` (seconds) shape the retry delays: before
    retry *n* the client sleeps a random time between 0 and ``min(cap, base * 2**(n-1))`` ("full jitter", so
    many clients hit by the same rate limit do not retry in lockstep), and at least as long as the provider's
    ``Retry-After`` asked (at most :data:`RETRY_AFTER_CAP`). ``sleep`` and ``jitter`` are injectable so tests
    do not wait; or pass a whole :class:`RetryPolicy` as ``retry`` (it then replaces those four). The policy is
    :attr:`retry_policy`; the HTTP agent adapter waits by the same one. ``environ`` is where API keys are read
    from (default ``os.environ``).

    ``cache`` (a :class:`RequestCache`) is consulted before calling the model for the roles in ``cache_roles``:
    by default the simulated user, the judge and the speech roles, not the agent, because the agent under test is
    what a run measures (add :attr:`Role.AGENT` to replay it too). A hit makes no request (and needs no API key); it is
    counted by :func:`metering` as a call with cost 0.0 and the stored reply's token counts, with
    ``cached_calls`` 1 and the stored reply's cost as ``cached_cost``, and separately in
    :attr:`UsageMeter.cache_hits`. A miss calls the model and stores the reply if the call succeeded; errors are
    never stored.

    Usage is counted only by :func:`metering` blocks (there is no client-wide total: a client is shared by the
    conversations of a run, and each needs its own account).

    ``limiter`` (a :class:`CallLimiter`) replaces the client's own per-role semaphores: a run on many processes
    passes one that all of them share.
    """

    def __init__(
        self,
        roles: ModelRoles,
        *,
        fake_script: FakeScript | None = None,
        backoff_base: float = 1.0,
        backoff_cap: float = 30.0,
        sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
        jitter: Callable[[float], float] = full_jitter,
        environ: Mapping[str, str] | None = None,
        cache: RequestCache | None = None,
        cache_roles: Collection[Role | str] = (Role.USER, Role.JUDGE, Role.VOICE, Role.TRANSCRIBER),
        retry: RetryPolicy | None = None,
        limiter: CallLimiter | None = None,
    ) -> None:
        if backoff_base < 0 or backoff_cap < 0:
            raise ValueError("backoff_base and backoff_cap must not be negative")
        #: The waits between attempts; the agent adapters use the same policy (see ``build_agent``).
        self.retry_policy = retry or RetryPolicy(base=backoff_base, cap=backoff_cap, jitter=jitter, sleep=sleep)
        self._cache = cache
        # A single role given as a string is one role, not a collection of letters.
        roles_to_cache: Collection[Role | str] = (cache_roles,) if isinstance(cache_roles, str) else cache_roles
        self._cache_roles = frozenset(Role(role) for role in roles_to_cache)
        self._roles = roles
        self._fake = FakeBackend(fake_script)
        self._environ: Mapping[str, str] = os.environ if environ is None else environ
        # One semaphore per role and event loop: a semaphore binds to the loop it is first contended on, and a
        # client may outlive one `asyncio.run`.
        self._semaphores: dict[Role, tuple[asyncio.AbstractEventLoop, asyncio.Semaphore]] = {}
        self._limiter = limiter

    def settings(self, role: Role | str) -> ModelSettings:
        """The settings of ``role``."""
        settings: ModelSettings = getattr(self._roles, Role(role).value)
        return settings

    @property
    def cache(self) -> RequestCache | None:
        """The request cache, if the client has one."""
        return self._cache

    async def complete(
        self,
        role: Role | str,
        messages: Sequence[Mapping[str, Any]],
        *,
        tools: Sequence[Mapping[str, Any]] | None = None,
        retries: int | None = None,
        **overrides: Any,
    ) -> Completion:
        """Send ``messages`` (OpenAI chat format) to the role's model and return its reply.

        ``tools`` are OpenAI-style function tools. ``overrides`` are passed to the backend (for litellm models,
        to ``litellm.acompletion``) and win
        over the role's settings (for example ``temperature=0`` or ``response_format=...``); ``timeout`` also
        bounds the whole call here (each attempt). ``retries`` replaces the role's ``max_retries`` for this call.
        Raises :class:`ModelError` when no model is configured, on errors that a retry cannot fix, or when the
        retries run out. With a cache, a cached role's request is looked up first
        (see the class); the reply then has ``cached=True``.
        """
        completion, _ = await self._complete(
            Role(role), messages, tools, overrides, read_cache=True, write_cache=True, retries=retries
        )
        return completion

    async def _complete(
        self,
        role: Role,
        messages: Sequence[Mapping[str, Any]],
        tools: Sequence[Mapping[str, Any]] | None,
        overrides: Mapping[str, Any],
        *,
        read_cache: bool,
        write_cache: bool,
        retries: int | None = None,
    ) -> tuple[Completion, str | None]:
        """:meth:`complete`, also returning the request's cache key (``None`` when the role is not cached)."""
        began = time.time_ns()
        settings = self.settings(role)
        model = self._model(role, settings)
        bad = _RESERVED.intersection(overrides)
        if bad:
            raise ValueError(f"complete() sets {', '.join(sorted(bad))} itself; these cannot be overridden")
        request: dict[str, Any] = {"model": model, "messages": [dict(message) for message in messages]}
        if settings.temperature is not None:
            request["temperature"] = settings.temperature
        if settings.max_tokens is not None:
            request["max_tokens"] = settings.max_tokens
        request = self._routed(role, settings, request)
        if tools:
            request["tools"] = [dict(tool) for tool in tools]
        request.update(overrides)
        answers = recorded_answers()
        if answers is not None:
            record = request_record(request)
            recorded = answers.answer(role, record, request_fingerprint(record))
            if recorded is not None:
                return _logged(role, began, self._serve_hit(role, recorded)), None

        key = None
        if self._cache_for(role) is not None:
            salt = cache_salt()
            key = request_cache_key({**request, "cache_salt": salt} if salt else request)
        backend = self._backend(settings)
        completion = await self._answer(
            role, request, key, backend, backend.complete,
            began=began, read_cache=read_cache, write_cache=write_cache, retries=retries, tape=True,
        )  # fmt: skip
        return completion, key

    async def speak(
        self, role: Role | str, text: str, *, voice: str | None = None, speed: float | None = None
    ) -> bytes:
        """``text`` spoken by the role's speech model (``voice``: ``openai/tts-1``, ...), as a WAV file: in
        ``voice`` (the provider's default voice when None; ``alloy`` for OpenAI's), at ``speed`` times the normal
        rate. The role's timeout, retries, concurrency limit, accounting and request cache as for
        :meth:`complete`; ``fake/...`` models answer with the fake speech codec. Raises :class:`ModelError` as
        :meth:`complete` does."""
        role = Role(role)
        settings = self.settings(role)
        model = self._model(role, settings)
        request = self._routed(role, settings, speech_request(model, text, voice=voice, speed=speed))
        return audio_of(await self._speech(role, request, speak=True), role)

    async def transcribe(self, role: Role | str, wav: bytes, language: str | None = None) -> Transcription:
        """What is said in the WAV file ``wav``, heard by the role's transcription model (``transcriber``:
        ``openai/whisper-1``, ...) told the ``language`` (a BCP 47 tag), with how sure it was where the provider
        says (a Whisper model's segments). A cached role's transcription of the same bytes by the same model is
        served from the request cache (the audio is keyed by a hash, never stored). Otherwise as :meth:`speak`."""
        role = Role(role)
        settings = self.settings(role)
        model = self._model(role, settings)
        request = self._routed(role, settings, transcription_request(model, wav, language=language))
        return transcription_of(await self._speech(role, request, speak=False))

    async def _speech(self, role: Role, request: dict[str, Any], *, speak: bool) -> Completion:
        """One speech call (:meth:`speak`, :meth:`transcribe`): not recorded on a tape nor answered by a replay,
        whose requests are chat messages."""
        began = time.time_ns()
        key = speech_cache_key(request, cache_salt()) if self._cache_for(role) is not None else None
        backend: SpeechBackend = self._fake if is_fake_model(str(request["model"])) else _LITELLM
        send = backend.speak if speak else backend.transcribe
        return await self._answer(
            role, request, key, backend, send, began=began, read_cache=True, write_cache=True, retries=None, tape=False
        )

    def _routed(self, role: Role, settings: ModelSettings, request: dict[str, Any]) -> dict[str, Any]:
        """``request`` with the role's timeout and API base (its ``${VAR}`` references filled in)."""
        request = {**request, "timeout": settings.timeout}
        if settings.api_base is not None:
            try:
                request["api_base"] = expand(settings.api_base, self._environ)
            except UnsetVariable as exc:
                raise ModelError(f"the {role.value} role's api_base {exc}") from None
        return request

    async def _answer(
        self,
        role: Role,
        request: dict[str, Any],
        key: str | None,
        backend: Backend | SpeechBackend,
        send: Callable[..., Awaitable[Completion]],
        *,
        began: int,
        read_cache: bool,
        write_cache: bool,
        retries: int | None,
        tape: bool,
    ) -> Completion:
        """``request`` answered from the cache (under ``key``, when the role is cached) or by ``send`` (one of
        ``backend``'s calls) with the role's key, limit, timeout and retries; counted, logged and (``tape``)
        recorded."""
        settings = self.settings(role)
        model = str(request["model"])
        timeout = float(request["timeout"])
        cache = self._cache_for(role)
        if cache is not None and key is not None and read_cache:
            hit = cache.get(key)
            if hit is not None:
                # Looked up before the API key is read: a run served wholly from the cache needs no secrets.
                served = self._serve_hit(role, hit)
                if tape:
                    taped(role, request, served)
                return _logged(role, began, served)
        api_key = self._api_key(role, settings, model)
        if api_key is None and backend is _LITELLM and self._keyless(settings, model):
            # litellm's OpenAI and Azure clients refuse to start without a key, even for a server that wants none.
            request["api_key"] = _NO_KEY
        elif api_key is not None:
            request["api_key"] = api_key

        if retries is not None and retries < 0:
            raise ValueError("retries must not be negative")
        attempts = (settings.max_retries if retries is None else retries) + 1
        last: Failure | None = None
        last_exc: BaseException | None = None
        provider = _provider(model, settings)
        waited_out = 0  # the hold-off standing after this call's own 429: it waits by its own Retry-After instead
        for attempt in range(1, attempts + 1):
            failure: Failure | None = None
            try:
                async with self._slot(role, settings, provider) as held:
                    await self._sit_out(provider, held, waited_out)
                    try:
                        # A provider's HTTP client bounds each read, not the whole call; this bounds the whole
                        # call, and also covers providers that ignore the timeout (in this task: wait_for made one
                        # per call).
                        async with asyncio.timeout(timeout):
                            completion = await send(request, role=role)
                    except Exception as exc:
                        failure = _timed_out(timeout) if isinstance(exc, TimeoutError) else backend.classify(exc)
                        if failure is not None and failure.retry and failure.retry_after:
                            # Set while the slot is still held: no call waiting for it starts inside the window.
                            waited_out = await self._hold_off(provider, failure.retry_after)
                        raise
            except Exception as exc:
                if failure is None:
                    failure = _timed_out(timeout) if isinstance(exc, TimeoutError) else backend.classify(exc)
                if failure is None:
                    raise  # not a provider failure: a bug, let it surface with its traceback
                failure.detail = _scrub(failure.detail, api_key)
                if not failure.retry:
                    if failure.kind in _CREDENTIAL_KINDS:
                        refused = CredentialsError(_fatal_message(role, model, settings, failure))
                        noted = _REFUSALS.get()
                        if noted is not None:
                            noted.append(refused)
                        raise refused from exc
                    raise ModelError(_fatal_message(role, model, settings, failure)) from exc
                last, last_exc = failure, exc
                if attempt < attempts:
                    # The slot is released while waiting, so a backing-off call does not hold up the others.
                    await self.retry_policy.wait(attempt, failure.retry_after)
                continue
            self._account(role, completion.usage, cached=False)
            if tape:
                taped(role, request, completion)
            if cache is not None and key is not None and write_cache:
                cache.put(key, completion)
            return _logged(role, began, completion)
        assert last is not None
        raise ModelError(
            f"{role.value} model {model!r} failed after {attempts} attempt{'s' if attempts != 1 else ''}; "
            f"last error ({last.kind}): {last.detail}. {_retry_hint(role, last)}"
        ) from last_exc

    async def structured(
        self,
        role: Role | str,
        messages: Sequence[Mapping[str, Any]],
        schema: type[T],
        *,
        attempts: int = 3,
        json_mode: bool = False,
        **overrides: Any,
    ) -> T:
        """Ask for a JSON object matching ``schema`` and return it validated.

        The schema is passed as ``response_format`` (providers that support it constrain their output), but the
        reply is always validated here: litellm does not. ``json_mode`` (for a caller whose messages state the
        shape, and say "JSON") sends JSON mode instead where the role's provider has one, saving the schema's
        tokens on every request (:func:`~simulator.llm._structured.reply_format`); a server that rejects it is
        asked again with the schema. A reply wrapped in a Markdown code fence is unwrapped.
        An empty, malformed or schema-invalid reply is answered with a follow-up message quoting the error, up to
        ``attempts`` replies in all; then :class:`StructuredOutputError` (a :class:`ModelError`) is raised, with
        the last reply's text in ``raw``.

        With a cache, only a reply that passed validation is stored, and it is stored under the key of the
        *first* request (the caller's messages), even when it took a correction to get it: a re-run then gets
        the valid reply at once, with no request. A stored reply that no longer validates (the schema's
        validators changed) is deleted and the same request is sent to the model.
        """
        if attempts < 1:
            raise ValueError("attempts must be at least 1")
        role = Role(role)
        base = [dict(message) for message in messages]
        conversation = base
        raw, error = "", ""
        if "response_format" in overrides:
            raise TypeError("structured() sets response_format itself, from schema")
        settings = self.settings(role)
        arguments = {**overrides, "response_format": reply_format(schema, settings, json_mode=json_mode)}
        cache = self._cache_for(role)
        key: str | None = None
        read_cache = True
        attempt = 0
        while attempt < attempts:
            try:
                completion, request_key = await self._complete(
                    role, conversation, None, arguments, read_cache=read_cache and attempt == 0, write_cache=False
                )
            except ModelError as exc:
                if isinstance(exc, CredentialsError) or not refused_json_mode(
                    settings, arguments["response_format"], exc
                ):
                    raise
                arguments["response_format"] = schema
                continue
            if attempt == 0:
                key = request_key
            raw = completion.raw_text
            try:
                value = parse_structured(raw, schema)
            except InvalidReply as exc:
                if completion.cached and cache is not None and key is not None:
                    cache.delete(key)
                    read_cache = False
                    continue  # ask the model the same request; the stale entry does not use up an attempt
                error = str(exc)
            else:
                if cache is not None and key is not None and not completion.cached:
                    cache.put(key, completion)
                return value
            attempt += 1
            # In JSON mode the model never saw the schema, only the shape its instructions give.
            sent_schema = arguments["response_format"] is schema
            shape = f"the {schema.__name__} schema" if sent_schema else "the shape your instructions give"
            # Only the latest failed reply is shown back, so the prompt does not grow with every attempt.
            conversation = [
                *base,
                {"role": "assistant", "content": raw},
                {
                    "role": "user",
                    "content": f"Your reply could not be used: {error}\n"
                    f"Reply again with only a JSON object that matches {shape}: "
                    "no prose, no code fences.",
                },
            ]
        model = settings.model
        raise StructuredOutputError(
            f"{role.value} model {model!r} gave no valid {schema.__name__} JSON in {attempts} "
            f"attempt{'s' if attempts != 1 else ''}; last problem: {error}",
            raw=raw,
            error=error,
        )

    # -- helpers -------------------------------------------------------------------------------------------

    def _cache_for(self, role: Role) -> RequestCache | None:
        return self._cache if role in self._cache_roles else None

    @staticmethod
    def _account(role: Role, usage: Usage, *, cached: bool) -> None:
        meter = _METER.get()
        while meter is not None:
            meter.add(role, usage, cached=cached)
            meter = meter.parent

    def _backend(self, settings: ModelSettings) -> Backend:
        name = backend_name(settings)
        if name == "fake":
            return self._fake
        return _OPENAI if name == "openai" else _LITELLM

    async def aclose(self) -> None:
        """Close the pooled HTTP connections of the openai backend on the running loop (shared by every client;
        made again on the next call). ``asyncio.run`` closes them anyway when its loop ends."""
        await _OPENAI.aclose()

    def _serve_hit(self, role: Role, hit: Completion) -> Completion:
        """A stored reply as this call's result: one answer from the cache, the stored token counts (those the
        provider's prompt cache served included), nothing spent (so nothing saved by the prompt cache either),
        and what the reply cost when it was first asked as its would-be cost (a reply recorded while it was served
        from the cache already carries that)."""
        would_be = hit.usage.cached_cost if hit.usage.cached_calls else hit.usage.cost
        usage = Usage(
            prompt_tokens=hit.usage.prompt_tokens,
            completion_tokens=hit.usage.completion_tokens,
            calls=1,
            cost=0.0,
            cached_calls=1,
            cached_cost=would_be,
            cache_read_tokens=hit.usage.cache_read_tokens,
            cache_write_tokens=hit.usage.cache_write_tokens,
        )
        self._account(role, usage, cached=True)
        return hit.model_copy(update={"usage": usage, "cost": 0.0, "cached": True})

    @staticmethod
    def _model(role: Role, settings: ModelSettings) -> str:
        if not settings.model:
            example = _EXAMPLE_MODELS.get(role, "openai/gpt-4o-mini")
            where = f"--{role.value}-model {example}" if role not in _EXAMPLE_MODELS else "--models FILE"
            raise ModelError(
                f"No model is configured for the {role.value} role. Set one in the suite "
                f"(models: {{{role.value}: {example}}}) or on the command line ({where})."
            )
        return settings.model

    def _api_key(self, role: Role, settings: ModelSettings, model: str) -> str | None:
        if settings.api_key_env is None:
            return None  # litellm falls back to the provider's standard variable, e.g. OPENAI_API_KEY
        key = self._environ.get(settings.api_key_env, "")
        if not key:
            raise ModelError(
                f"{role.value} model {model!r}: models.{role.value}.api_key_env names "
                f"{settings.api_key_env}, but that environment variable is not set. "
                f"Set it (export {settings.api_key_env}=...) before running."
            )
        register_secret(settings.api_key_env, key)
        return key

    def _keyless(self, settings: ModelSettings, model: str) -> bool:
        """A model on a local ``api_base`` whose provider's key variables are all unset: it is asked without a key."""
        api_base = expand(settings.api_base, self._environ) if settings.api_base else None
        return is_local_base(api_base) and not any(self._environ.get(name) for name in key_variables(model))

    def _slot(self, role: Role, settings: ModelSettings, provider: str) -> AbstractAsyncContextManager[HoldOff]:
        if self._limiter is not None:
            return self._limiter.slot(role, settings.concurrency or DEFAULT_CONCURRENCY, provider)
        return self._local_slot(role, settings, provider)

    @asynccontextmanager
    async def _local_slot(self, role: Role, settings: ModelSettings, provider: str) -> AsyncIterator[HoldOff]:
        async with self._semaphore(role, settings):
            yield _loop_hold_offs().held_off(provider)

    async def _hold_off(self, provider: str, seconds: float) -> int:
        """Hold off every call to ``provider`` for what its server asked (cut to the policy's cap)."""
        seconds = min(seconds, self.retry_policy.retry_after_cap)
        if self._limiter is not None:
            return await self._limiter.hold_off(provider, seconds)
        return _loop_hold_offs().hold_off(provider, seconds)

    async def _sit_out(self, provider: str, held: HoldOff, waited_out: int) -> None:
        """Wait until no hold-off of ``provider`` is left, but the one this call set (waited out already), for at
        most the policy's ``retry_after_cap`` in all; by the policy's sleep, so tests inject it."""
        waited = 0.0
        cap = self.retry_policy.retry_after_cap
        while held.seconds > 0 and held.number != waited_out and waited < cap:
            wait = min(held.seconds, cap - waited)
            await self.retry_policy.sleep(wait)
            waited += wait
            seen = held.number
            held = (
                await self._limiter.held_off(provider)
                if self._limiter is not None
                else _loop_hold_offs().held_off(provider)
            )
            if held.number == seen:
                return  # waited out what was asked; only a newer hold-off (another 429 meanwhile) waits again

    def _semaphore(self, role: Role, settings: ModelSettings) -> asyncio.Semaphore:
        loop = asyncio.get_running_loop()
        entry = self._semaphores.get(role)
        if entry is None or entry[0] is not loop:
            # Unset: the runner resolves it to the run's concurrency; a client built by hand gets the default.
            entry = (loop, asyncio.Semaphore(settings.concurrency or DEFAULT_CONCURRENCY))
            self._semaphores[role] = entry
        return entry[1]


def _provider(model: str, settings: ModelSettings) -> str:
    """What a ``Retry-After`` holds off: every call of this model at this API base, whichever role makes it."""
    return f"{model} at {settings.api_base}" if settings.api_base else model


def _timed_out(timeout: float) -> Failure:
    return Failure(retry=True, kind="timeout", detail=f"no reply within {timeout:g} s")


def _retry_hint(role: Role, failure: Failure) -> str:
    settings = f"models.{role.value}"
    # A litellm agent's own `retries` and `timeout` (in its agent config) win over the role's.
    retries = "the agent's `retries`" if role is Role.AGENT else f"{settings}.max_retries"
    timeout = f"the agent's `timeout` and {settings}.timeout" if role is Role.AGENT else f"{settings}.timeout"
    if failure.kind == "rate limited":
        return f"Lower {settings}.concurrency or raise {retries}."
    if failure.kind == "timeout":
        return f"Raise {timeout} or {retries}, or check that the provider is up."
    return f"Check that the provider (or {settings}.api_base) is up, or raise {retries}."


#: The speech roles' models named in the error for a role without one (they have no --ROLE-model option).
_EXAMPLE_MODELS = {Role.VOICE: "openai/tts-1", Role.TRANSCRIBER: "openai/whisper-1"}

#: What a server on a local ``api_base`` is sent as the key when none is set (it ignores it).
_NO_KEY = "no-key"

#: The failure kinds a key would fix; never retried (see :class:`~simulator.errors.CredentialsError`).
_CREDENTIAL_KINDS = frozenset({"authentication", "missing credentials"})


def _key_fix(role: Role, model: str, settings: ModelSettings, *, sent: bool) -> str:
    """How to give ``role`` a key: the variable its settings name, else its provider's own."""
    if settings.api_key_env:
        if sent:
            return f"Check that {settings.api_key_env} holds a valid key for this provider and model."
        variable = settings.api_key_env
        return f"Set {variable} (export {variable}=...), which models.{role.value}.api_key_env names."
    names = ("OPENAI_API_KEY",) if backend_name(settings) == "openai" else key_variables(model)
    variable = names[0] if names else "the provider's key variable"
    action = f"Check that {variable} holds a valid key" if sent else f"Set {variable}"
    return f"{action}, or name the variable that holds the key with models.{role.value}.api_key_env."


def _fatal_message(role: Role, model: str, settings: ModelSettings, failure: Failure) -> str:
    where = f"{role.value} model {model!r}"
    if failure.kind == "authentication":
        return (
            f"{where}: the provider refused the credentials ({failure.detail}). "
            f"{_key_fix(role, model, settings, sent=True)}"
        )
    if failure.kind == "missing credentials":
        return f"{where}: no key was sent ({failure.detail}). {_key_fix(role, model, settings, sent=False)}"
    if failure.kind == "not found":
        return (
            f"{where}: the provider does not know this model ({failure.detail}). Check models.{role.value} "
            "(litellm syntax provider/model, for example openai/gpt-4o-mini) and api_base."
        )
    return f"{where}: the provider rejected the request ({failure.detail}). Retrying would not help."


def _scrub(text: str, secret: str | None) -> str:
    return redact(text.replace(secret, "***") if secret else text)
