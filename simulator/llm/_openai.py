"""The openai backend: ``openai/<model>`` strings (and any model with ``backend: openai``) through the ``openai``
SDK, for OpenAI and OpenAI-compatible endpoints, without litellm.

Why beside litellm: at 0 ms latency litellm was 58% of the client's CPU (much of it logging, hidden params and
cost bookkeeping per call), and ``import litellm`` takes 3-4 s. This backend sends the same request litellm
would (same body, same ``response_format`` JSON schema for structured output) and reads the reply into the same
:class:`Completion`; retries stay the client's (the SDK's own are off).

* One ``AsyncOpenAI`` (one httpx connection pool) per event loop, base URL and API key, made on first use and
  closed when its loop shuts down (``asyncio.run`` closes async generators, see :func:`_close_at_shutdown`) or
  by :meth:`OpenAIBackend.aclose`.
* The key is the request's (from ``api_key_env``), else ``OPENAI_API_KEY``; none at all is an authentication
  failure before any request (litellm reports it as a retried server error 500).
* Cost is computed once from the usage, with litellm's bundled price table read as JSON (litellm itself is not
  imported: see :func:`price_table`); a model missing from it costs ``None``, as with litellm.

This is the only module of Simulator that imports ``openai``, lazily (``import openai`` takes ~0.5 s).
"""

from __future__ import annotations

import asyncio
import functools
import importlib.util
import inspect
import json
import os
from collections.abc import AsyncIterator, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel

from simulator.llm._retry import Failure, failure_detail, failure_for_status
from simulator.llm._types import Completion, Role, ToolCallRequest, Usage
from simulator.safety import register_secret

if TYPE_CHECKING:
    from openai import AsyncOpenAI
    from openai.types.chat import ChatCompletion

__all__ = ["OPENAI_PREFIX", "MissingCredentialsError", "OpenAIBackend", "load_openai", "price_table", "usage_cost"]

#: The model-string prefix the ``auto`` backend sends through this backend.
OPENAI_PREFIX = "openai/"

# Keys of the client's request that are not chat-completion parameters: they choose the connection or bound it.
_CONNECTION_KEYS = frozenset({"model", "api_key", "api_base", "timeout"})

# The price list litellm ships (and uses itself when LITELLM_LOCAL_MODEL_COST_MAP is set).
_PRICE_FILE = "model_prices_and_context_window_backup.json"


class MissingCredentialsError(Exception):
    """No API key for an openai-backend model: neither ``api_key_env`` nor ``OPENAI_API_KEY`` gave one."""


@functools.cache
def load_openai() -> None:
    """Import the openai SDK (and the parts the first request needs) once per process."""
    import openai
    import openai.lib._pydantic
    import openai.types.chat  # noqa: F401  (imported lazily by the SDK on the first reply otherwise)


@functools.cache
def price_table() -> Mapping[str, Mapping[str, Any]]:
    """litellm's bundled price list, read as JSON without importing litellm (which takes seconds); empty when
    litellm is not installed or the file is missing or unreadable (every cost is then unknown)."""
    try:
        spec = importlib.util.find_spec("litellm")  # a top-level package: found, not imported
    except (ImportError, ValueError):
        return {}
    folders = list(spec.submodule_search_locations or []) if spec is not None else []
    for folder in folders:
        try:
            data = json.loads((Path(folder) / _PRICE_FILE).read_bytes())
        except (OSError, ValueError):
            continue
        if isinstance(data, dict):
            return {name: entry for name, entry in data.items() if isinstance(entry, dict)}
    return {}


def usage_cost(model: str, prompt_tokens: int, completion_tokens: int, cached_tokens: int = 0) -> float | None:
    """The price of one call's usage in USD from :func:`price_table`, or ``None`` when the model is not in it.

    ``model`` is looked up as given, then without its ``openai/`` prefix. Cached prompt tokens are priced at the
    cache-read price when the table has one.
    """
    table = price_table()
    entry = table.get(model)
    if entry is None and model.startswith(OPENAI_PREFIX):
        entry = table.get(model.removeprefix(OPENAI_PREFIX))
    if entry is None:
        return None
    prompt_price = entry.get("input_cost_per_token")
    completion_price = entry.get("output_cost_per_token")
    if not isinstance(prompt_price, int | float) or not isinstance(completion_price, int | float):
        return None
    cached_price = entry.get("cache_read_input_token_cost")
    if not isinstance(cached_price, int | float):
        cached_price, cached_tokens = prompt_price, 0
    cached_tokens = min(max(0, cached_tokens), prompt_tokens)
    prompt_cost = (prompt_tokens - cached_tokens) * prompt_price + cached_tokens * cached_price
    return float(prompt_cost + completion_tokens * completion_price)


def response_format_param(response_format: Any) -> Any:
    """The ``response_format`` body field for a pydantic class, exactly as litellm sends it (the SDK's strict JSON
    schema, named after the class); any other value as given."""
    if isinstance(response_format, type) and issubclass(response_format, BaseModel):
        return _strict_response_format(response_format)
    return response_format


@functools.cache
def _strict_response_format(schema: type[BaseModel]) -> dict[str, Any]:
    # Once per class: generating the JSON schema costs ~0.5 ms, on every structured request otherwise. The dict is
    # only ever serialised, never changed.
    from openai.lib._pydantic import to_strict_json_schema

    return {
        "type": "json_schema",
        "json_schema": {"schema": to_strict_json_schema(schema), "name": schema.__name__, "strict": True},
    }


@functools.cache
def _request_options(timeout: float | None) -> Any:
    """The SDK's per-request options (timeout, bearer auth) for a raw ``post``."""
    from openai._base_client import make_request_options

    options: dict[str, Any] = {} if timeout is None else {"timeout": timeout}
    if "security" in inspect.signature(make_request_options).parameters:  # SDKs that add auth per request
        options["security"] = {"bearer_auth": True}
    return make_request_options(**options)


class _LoopClients:
    """The SDK clients made on one event loop, and the async generator that closes them when it shuts down."""

    def __init__(self) -> None:
        self.clients: dict[tuple[str | None, str], AsyncOpenAI] = {}
        self.closer: AsyncIterator[None] | None = None


async def _close_at_shutdown(entry: _LoopClients) -> AsyncIterator[None]:
    """Closes ``entry``'s clients when it is closed: ``asyncio.run`` closes every async generator still open on
    its loop before closing the loop, so pooled connections end with the run instead of leaking sockets."""
    try:
        yield
    finally:
        await _close_all(entry)


async def _close_all(entry: _LoopClients) -> None:
    clients = list(entry.clients.values())
    entry.clients.clear()
    for client in clients:
        await client.close()


class OpenAIBackend:
    """Sends requests with ``AsyncOpenAI.chat.completions.create`` over one pooled client per endpoint and key."""

    def __init__(self, environ: Mapping[str, str] | None = None) -> None:
        self._environ: Mapping[str, str] = os.environ if environ is None else environ
        # Keyed by loop: an httpx pool belongs to the loop its connections were opened on.
        self._loops: dict[asyncio.AbstractEventLoop, _LoopClients] = {}

    async def complete(self, request: Mapping[str, Any], *, role: Role) -> Completion:
        """One chat-completions request, its reply as a :class:`Completion` priced from its usage."""
        load_openai()
        model = str(request["model"])
        client = await self._client(request.get("api_base"), request.get("api_key"))
        from openai.types.chat import ChatCompletion

        # The body is posted as it is: ``chat.completions.create`` would first walk every message through the
        # SDK's TypedDict transform (~3 ms of CPU a request, more than everything else here together). Known
        # parameters and a provider's own ones go in the same body, as ``extra_body`` would put them.
        body: dict[str, Any] = {"model": model.removeprefix(OPENAI_PREFIX)}
        for name, value in request.items():
            if name in _CONNECTION_KEYS:
                continue
            body[name] = response_format_param(value) if name == "response_format" else value
        timeout = request.get("timeout")
        options: Any = {**_request_options(float(timeout) if timeout is not None else None)}  # a copy per request
        response = await client.post("/chat/completions", body=body, cast_to=ChatCompletion, options=options)
        return _to_completion(response, model)

    def classify(self, exc: Exception) -> Failure | None:
        """The SDK's exception types as the client's failure kinds (the same ones litellm's map to)."""
        import openai

        if isinstance(exc, MissingCredentialsError):
            return Failure(retry=False, kind="authentication", detail=failure_detail(exc))
        # The timeout first: it is a subclass of the connection error.
        if isinstance(exc, openai.APITimeoutError):
            return Failure(retry=True, kind="timeout", detail=failure_detail(exc))
        if isinstance(exc, openai.APIConnectionError):
            return Failure(retry=True, kind="connection error", detail=failure_detail(exc))
        if isinstance(exc, openai.APIStatusError):
            return failure_for_status(exc.status_code, exc)  # reads Retry-After from exc.response.headers
        if isinstance(exc, json.JSONDecodeError | openai.APIResponseValidationError):
            # The server answered 200 with a body that is not a chat completion (cut off, an HTML page): retried
            # like a server error, as litellm does (it reports such a reply as a server error 500).
            return Failure(retry=True, kind="malformed reply", detail=failure_detail(exc))
        return None  # not a provider failure: a bug, which the client lets surface

    async def aclose(self) -> None:
        """Close the clients made on the running loop (they are made again if needed)."""
        entry = self._loops.pop(asyncio.get_running_loop(), None)
        if entry is None:
            return
        if entry.closer is not None:
            await entry.closer.aclose()  # type: ignore[attr-defined]  # an async generator
        await _close_all(entry)

    async def _client(self, api_base: Any, api_key: Any) -> AsyncOpenAI:
        from openai import AsyncOpenAI

        key = str(api_key) if api_key else self._environ.get("OPENAI_API_KEY", "")
        if not key:
            raise MissingCredentialsError(
                "no API key: set OPENAI_API_KEY or name the variable that holds the key with api_key_env"
            )
        if not api_key:
            register_secret("OPENAI_API_KEY", key)
        loop = asyncio.get_running_loop()
        entry = self._loops.get(loop)
        if entry is None:
            for old in [old for old in self._loops if old.is_closed()]:
                del self._loops[old]  # a finished loop's clients were closed with it (or cannot be any more)
            entry = self._loops[loop] = _LoopClients()
            closer = _close_at_shutdown(entry)
            await closer.__anext__()  # started on this loop, so the loop closes it at shutdown
            entry.closer = closer
        base = str(api_base) if api_base else None
        client = entry.clients.get((base, key))
        if client is None:
            # Retries are the client's; the SDK's (two by default) would multiply them.
            client = entry.clients[(base, key)] = AsyncOpenAI(api_key=key, base_url=base, max_retries=0)
        return client


def _to_completion(response: ChatCompletion, model: str) -> Completion:
    choice = response.choices[0] if response.choices else None
    content: str | None = None
    finish_reason: str | None = None
    tool_calls: list[ToolCallRequest] = []
    if choice is not None:
        finish_reason = choice.finish_reason
        message = choice.message
        content = message.content if isinstance(message.content, str) else None
        for call in message.tool_calls or []:
            function = getattr(call, "function", None)
            if function is not None:
                tool_calls.append(ToolCallRequest.parse(call.id or "", function.name or "", function.arguments))
                continue
            custom = getattr(call, "custom", None)
            # A free-form ("custom") tool call carries text, not JSON arguments: keep it, flagged.
            tool_calls.append(
                ToolCallRequest(
                    id=call.id,
                    name=str(getattr(custom, "name", "") or ""),
                    arguments={},
                    raw_arguments=str(getattr(custom, "input", "") or ""),
                    arguments_error="free-form (custom) tool call: the input is text, not JSON arguments",
                )
            )
    usage_data = response.usage
    prompt = int(getattr(usage_data, "prompt_tokens", 0) or 0)
    completion = int(getattr(usage_data, "completion_tokens", 0) or 0)
    details = getattr(usage_data, "prompt_tokens_details", None)
    cached = int(getattr(details, "cached_tokens", 0) or 0)
    cost = usage_cost(model, prompt, completion, cached) if usage_data is not None else None
    usage = Usage(prompt_tokens=prompt, completion_tokens=completion, calls=1, cost=cost)
    return Completion(
        content=content,
        tool_calls=tool_calls,
        finish_reason=finish_reason,
        usage=usage,
        model=model,
        cost=cost,
        raw_text=content or "",
    )
