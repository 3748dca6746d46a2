"""The openai backend: ``openai/<model>`` strings (and any model with ``backend: openai``) sent straight to an
OpenAI-compatible ``/chat/completions`` endpoint over httpx, without litellm and without the openai SDK.

Why beside litellm: litellm spent most of the client's CPU per call (logging, hidden params and cost bookkeeping),
and ``import litellm`` takes seconds. Why not the openai SDK: ``import openai`` alone was a large share of every
run's start-up (httpx, which the HTTP agent imports anyway, is much less), and it bought one POST. Figures:
docs/performance.md. This backend sends the same request litellm would (same
body, same strict ``response_format`` JSON schema for structured output, :func:`strict_json_schema`) and reads
the reply into the same :class:`Completion`; retries stay the client's.

* ``httpx.AsyncClient`` s (a connection pool each) per event loop, base URL and API key, one more for every
  :data:`POOL_REQUESTS` requests in flight at once, made on first use and closed when its loop shuts down
  (``asyncio.run`` closes async generators, see :func:`_close_at_shutdown`) or by :meth:`OpenAIBackend.aclose`.
* The base URL is the request's ``api_base``, else ``OPENAI_BASE_URL``, else OpenAI's; the key is the request's
  (from ``api_key_env``), else ``OPENAI_API_KEY``; none at all is an authentication failure before any request
  (litellm reports it as a retried server error 500). ``OPENAI_ORG_ID`` / ``OPENAI_PROJECT_ID`` are sent as the
  SDK sends them.
* Failures mean what the SDK's exceptions meant (:meth:`OpenAIBackend.classify`): an HTTP status as the status
  (``Retry-After`` read from the response), a timeout, a connection error, a reply that is not a chat completion
  (retried like a server error, as litellm does).
* Cost is computed once from the usage, with litellm's bundled price table read as JSON (litellm itself is not
  imported: see :func:`price_table`); a model missing from it costs ``None``, as with litellm.

No module of Simulator imports the openai SDK.
"""

from __future__ import annotations

import asyncio
import atexit
import functools
import importlib.util
import ipaddress
import json
import os
import ssl
import threading
from collections.abc import AsyncIterator, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from pydantic import BaseModel

from simulator.llm._retry import Failure, failure_detail, failure_for_status
from simulator.llm._types import Completion, Role, ToolCallRequest, Usage
from simulator.safety import redacted_and_shortened, register_secret

if TYPE_CHECKING:
    import httpx

__all__ = [
    "OPENAI_PREFIX",
    "MalformedReplyError",
    "MissingCredentialsError",
    "OpenAIBackend",
    "StatusError",
    "is_local_base",
    "load_openai",
    "price_table",
    "strict_json_schema",
    "usage_cost",
]

#: The model-string prefix the ``auto`` backend sends through this backend.
OPENAI_PREFIX = "openai/"

#: Where requests go when neither the role's ``api_base`` nor ``OPENAI_BASE_URL`` says otherwise.
DEFAULT_BASE_URL = "https://api.openai.com/v1"

# Keys of the client's request that are not chat-completion parameters: they choose the connection or bound it.
_CONNECTION_KEYS = frozenset({"model", "api_key", "api_base", "timeout"})

# The price list litellm ships (and uses itself when LITELLM_LOCAL_MODEL_COST_MAP is set).
_PRICE_FILE = "model_prices_and_context_window_backup.json"

# A request without a timeout of its own: the SDK's defaults (10 minutes, 5 s to connect).
_DEFAULT_TIMEOUT = 600.0
_CONNECT_TIMEOUT = 5.0


_LOCAL_NAMES = frozenset({"localhost", "host.docker.internal"})


def is_local_base(api_base: str | None) -> bool:
    """True when ``api_base`` points at this machine or a private network (loopback, ``localhost``, 10/8,
    172.16/12, 192.168/16, fc00::/7, link-local, a ``.local`` / ``.internal`` name): no key is needed there."""
    if not api_base:
        return False
    try:
        host = urlsplit(api_base if "//" in api_base else f"//{api_base}").hostname or ""
    except ValueError:  # no host a client could reach (a stored URL whose credentials are [redacted:url])
        return False
    if host in _LOCAL_NAMES or host.endswith((".localhost", ".local", ".internal")):
        return True
    try:
        address = ipaddress.ip_address(host)
    except ValueError:
        return False
    return address.is_loopback or address.is_private or address.is_link_local


class MissingCredentialsError(Exception):
    """No API key for an openai-backend model: neither ``api_key_env`` nor ``OPENAI_API_KEY`` gave one."""


class StatusError(Exception):
    """The endpoint answered with an HTTP error status; ``response`` is its reply (its headers give the wait a
    rate limit asks for)."""

    def __init__(self, response: httpx.Response) -> None:
        self.status_code = response.status_code
        self.response = response
        try:
            body: Any = json.loads(response.content)
        except ValueError:
            body = response.text
        super().__init__(f"Error code: {response.status_code} - {body}")


class MalformedReplyError(Exception):
    """The endpoint answered 200 with a body that is not a chat completion (cut off, an HTML page, no choices)."""


@functools.cache
def load_openai() -> None:
    """Import what the first request needs (httpx, and httpcore, its transport, which httpx itself imports only
    at its first client) and build its TLS context, once per process; start reading the price list in a thread
    (:func:`price_table`, a large JSON file), so that it can overlap the run's set-up and the wait for the first
    replies instead of coming before them."""
    import httpcore  # noqa: F401
    import httpx  # noqa: F401

    import simulator._http  # noqa: F401

    # In threads of their own: loading the CA bundle lets the GIL go (OpenSSL works on the other core while this
    # one sets the run up), and the price list is not needed before the first reply.
    helpers = [
        threading.Thread(target=_tls, name="simulator-tls-context", daemon=True),
        threading.Thread(target=price_table, name="simulator-price-table", daemon=True),
    ]
    for helper in helpers:
        helper.start()
    # A process that ends first waits for them: a daemon thread stopped inside the import system (the price
    # list's find_spec takes the import lock) would hang the interpreter's shutdown (see engine._imports).
    atexit.register(_joined, helpers)


def _joined(threads: list[threading.Thread]) -> None:
    for thread in threads:
        thread.join(timeout=10)


_TLS = threading.Lock()


def _tls() -> ssl.SSLContext:
    """The TLS context of every connection pool: httpx's default (certifi's CA bundle), built once, since each
    build loads the bundle; a pool per endpoint and key would otherwise pay it again. A caller
    that comes while :func:`load_openai`'s thread builds it waits for that build."""
    with _TLS:
        return _build_tls()


@functools.cache
def _build_tls() -> ssl.SSLContext:
    import httpx

    return httpx.create_ssl_context()


_PRICES = threading.Lock()


def price_table() -> Mapping[str, Mapping[str, Any]]:
    """litellm's bundled price list, read as JSON without importing litellm (which takes seconds); empty when
    litellm is not installed or the file is missing or unreadable (every cost is then unknown). Read once: a
    caller that comes while :func:`load_openai`'s thread reads it waits for that reading."""
    with _PRICES:
        return _read_price_table()


@functools.cache
def _read_price_table() -> Mapping[str, Mapping[str, Any]]:
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


#: The prices of speech models: by the character spoken, by the second of audio heard.
_SPEECH_PRICES = ("input_cost_per_character", "input_cost_per_second", "output_cost_per_second")


def has_price(model: str) -> bool | None:
    """Whether litellm's price list prices ``model`` (as given, or without its provider prefix), so its calls'
    cost is known: by the token, or for a speech model by the character or the second; None for a ``fake/...``
    model, whose price its script decides."""
    if model.startswith("fake/"):
        return None
    bare = model.partition("/")[2]
    if usage_cost(model, 1, 1) is not None or (bool(bare) and usage_cost(bare, 1, 1) is not None):
        return True
    table = price_table()
    entry = table.get(model) or (table.get(bare) if bare else None) or {}
    return any(isinstance(entry.get(name), int | float) for name in _SPEECH_PRICES)


def response_format_param(response_format: Any) -> Any:
    """The ``response_format`` body field for a pydantic class, exactly as litellm sends it (the strict JSON
    schema, named after the class); any other value as given."""
    if isinstance(response_format, type) and issubclass(response_format, BaseModel):
        return _strict_response_format(response_format)
    return response_format


@functools.cache
def _strict_response_format(schema: type[BaseModel]) -> dict[str, Any]:
    # Once per class: generating the JSON schema is costly, on every structured request otherwise. The dict is
    # only ever serialised, never changed.
    return {
        "type": "json_schema",
        "json_schema": {"schema": strict_json_schema(schema), "name": schema.__name__, "strict": True},
    }


def strict_json_schema(model: type[BaseModel]) -> dict[str, Any]:
    """``model``'s JSON schema in the form OpenAI's strict structured output accepts, the one litellm and the
    openai SDK send: every object closed (``additionalProperties: false`` unless set) with all its properties
    required, a lone ``allOf`` merged into its parent, ``default: null`` dropped, and a ``$ref`` that has
    sibling keys replaced by what it points to."""
    root = model.model_json_schema()
    return _strict(root, root)


def _strict(node: Any, root: dict[str, Any]) -> dict[str, Any]:
    if not isinstance(node, dict):
        raise TypeError(f"a JSON schema node must be an object, not {node!r}")
    for container in ("$defs", "definitions"):
        named = node.get(container)
        if isinstance(named, dict):
            for child in named.values():
                _strict(child, root)
    if node.get("type") == "object":
        node.setdefault("additionalProperties", False)
    properties = node.get("properties")
    if isinstance(properties, dict):
        node["required"] = list(properties)
        node["properties"] = {name: _strict(child, root) for name, child in properties.items()}
    items = node.get("items")
    if isinstance(items, dict):
        node["items"] = _strict(items, root)
    variants = node.get("anyOf")
    if isinstance(variants, list):
        node["anyOf"] = [_strict(child, root) for child in variants]
    parts = node.get("allOf")
    if isinstance(parts, list):
        if len(parts) == 1:
            node.update(_strict(parts[0], root))
            del node["allOf"]
        else:
            node["allOf"] = [_strict(child, root) for child in parts]
    if "default" in node and node["default"] is None:
        del node["default"]
    ref = node.get("$ref")
    if ref and len(node) > 1:
        target = _resolve(root, str(ref))
        merged = {**target, **node}  # the node's own keys win over the referenced schema's
        node.clear()
        node.update(merged)
        del node["$ref"]
        return _strict(node, root)  # what was inlined is made strict too
    return node


def _resolve(root: dict[str, Any], ref: str) -> dict[str, Any]:
    if not ref.startswith("#/"):
        raise ValueError(f"a $ref must point inside the schema (#/...), not {ref!r}")
    target: Any = root
    for part in ref[2:].split("/"):
        target = target[part]
        if not isinstance(target, dict):
            raise ValueError(f"$ref {ref!r} does not point to an object")
    return dict(target)


#: The most requests one HTTP client carries at once before another client (its own connection pool) is made for
#: the same API base and key. httpcore's pool does work quadratic in its connections each time a request comes or
#: goes (every idle connection counts all of them, and each is polled for readability), so one pool for every
#: request of a run cost more CPU per request the higher the concurrency (docs/performance.md).
POOL_REQUESTS = 16


class _Pool:
    """One HTTP client and how many requests it has in flight."""

    __slots__ = ("client", "in_flight")

    def __init__(self, client: httpx.AsyncClient) -> None:
        self.client = client
        self.in_flight = 0


class _LoopClients:
    """The HTTP clients made on one event loop, and the async generator that closes them when it shuts down."""

    def __init__(self) -> None:
        self.clients: dict[tuple[str, str], list[_Pool]] = {}
        self.closer: AsyncIterator[None] | None = None


async def _close_at_shutdown(entry: _LoopClients) -> AsyncIterator[None]:
    """Closes ``entry``'s clients when it is closed: ``asyncio.run`` closes every async generator still open on
    its loop before closing the loop, so pooled connections end with the run instead of leaking sockets."""
    try:
        yield
    finally:
        await _close_all(entry)


async def _close_all(entry: _LoopClients) -> None:
    pools = [pool for pools in entry.clients.values() for pool in pools]
    entry.clients.clear()
    for pool in pools:
        await pool.client.aclose()


class OpenAIBackend:
    """POSTs requests to ``<base>/chat/completions`` over one pooled ``httpx.AsyncClient`` per endpoint and key."""

    def __init__(self, environ: Mapping[str, str] | None = None) -> None:
        self._environ: Mapping[str, str] = os.environ if environ is None else environ
        # Keyed by loop: an httpx pool belongs to the loop its connections were opened on.
        self._loops: dict[asyncio.AbstractEventLoop, _LoopClients] = {}

    async def complete(self, request: Mapping[str, Any], *, role: Role) -> Completion:
        """One chat-completions request, its reply as a :class:`Completion` priced from its usage."""
        import httpx

        model = str(request["model"])
        pool = await self._pool(request.get("api_base"), request.get("api_key"))
        # Known parameters and a provider's own ones go in the same body, as litellm sends them.
        body: dict[str, Any] = {"model": model.removeprefix(OPENAI_PREFIX)}
        for name, value in request.items():
            if name in _CONNECTION_KEYS:
                continue
            body[name] = response_format_param(value) if name == "response_format" else value
        timeout = request.get("timeout")
        seconds = float(timeout) if timeout is not None else _DEFAULT_TIMEOUT
        pool.in_flight += 1
        try:
            response = await pool.client.post(
                "chat/completions",
                content=json.dumps(body).encode(),
                timeout=httpx.Timeout(seconds, connect=min(seconds, _CONNECT_TIMEOUT)),
            )
        finally:
            pool.in_flight -= 1
        if response.is_error:  # 4xx, 5xx
            raise StatusError(response)
        try:
            reply = json.loads(response.content)
        except ValueError as exc:
            raise MalformedReplyError(f"the reply is not JSON: {exc}") from exc
        if not isinstance(reply, dict) or not isinstance(reply.get("choices"), list):
            raise MalformedReplyError(
                f"the reply is not a chat completion: {redacted_and_shortened(response.text, 200)}"
            )
        try:
            return _to_completion(reply, model)
        except (AttributeError, TypeError, ValueError) as exc:  # a field of the wrong shape (a string for an object)
            raise MalformedReplyError(
                f"the reply is not a chat completion ({exc}): {redacted_and_shortened(response.text, 200)}"
            ) from exc

    def classify(self, exc: Exception) -> Failure | None:
        """This backend's failures as the client's failure kinds (the same ones litellm's map to)."""
        import httpx

        if isinstance(exc, MissingCredentialsError):
            return Failure(retry=False, kind="missing credentials", detail=failure_detail(exc))
        # The timeout first: it is a kind of transport error.
        if isinstance(exc, httpx.TimeoutException):
            return Failure(retry=True, kind="timeout", detail=failure_detail(exc) or "timed out")
        if isinstance(exc, httpx.TransportError):
            return Failure(retry=True, kind="connection error", detail=failure_detail(exc))
        if isinstance(exc, StatusError):
            return failure_for_status(exc.status_code, exc)  # reads Retry-After from exc.response.headers
        if isinstance(exc, MalformedReplyError):
            # Retried like a server error, as litellm does (it reports such a reply as a server error 500).
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

    async def _pool(self, api_base: Any, api_key: Any) -> _Pool:
        """The least busy client of this loop for ``api_base`` and the key; a new one when every client has
        :data:`POOL_REQUESTS` requests in flight."""
        import httpx

        from simulator._http import async_client

        key = str(api_key) if api_key else self._environ.get("OPENAI_API_KEY", "")
        local = is_local_base(str(api_base) if api_base else self._environ.get("OPENAI_BASE_URL"))
        if not key and not local:  # a server on this machine or a private network is asked without a key
            raise MissingCredentialsError(
                "no API key was sent: set OPENAI_API_KEY or name the variable that holds the key with api_key_env"
            )
        if key and not api_key:
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
        base = str(api_base) if api_base else self._environ.get("OPENAI_BASE_URL") or DEFAULT_BASE_URL
        pools = entry.clients.setdefault((base, key), [])
        least = min(pools, key=lambda pool: pool.in_flight, default=None)
        if least is None or least.in_flight >= POOL_REQUESTS:
            headers = {"Content-Type": "application/json", "Accept": "application/json"}
            if key:
                headers["Authorization"] = f"Bearer {key}"
            for variable, header in (("OPENAI_ORG_ID", "OpenAI-Organization"), ("OPENAI_PROJECT_ID", "OpenAI-Project")):
                if self._environ.get(variable):
                    headers[header] = self._environ[variable]
            # The SDK's pool limits; a trailing slash so that "chat/completions" is joined under the base's path.
            least = _Pool(
                async_client(
                    base_url=base.rstrip("/") + "/",
                    headers=headers,
                    follow_redirects=True,
                    verify=_tls(),
                    limits=httpx.Limits(max_connections=1000, max_keepalive_connections=100),
                )
            )
            pools.append(least)
        return least


def _to_completion(reply: Mapping[str, Any], model: str) -> Completion:
    choices = reply["choices"]
    choice = choices[0] if choices and isinstance(choices[0], dict) else None
    content: str | None = None
    finish_reason: str | None = None
    tool_calls: list[ToolCallRequest] = []
    if choice is not None:
        finish_reason = choice.get("finish_reason")
        message = choice.get("message") or {}
        content = message.get("content") if isinstance(message.get("content"), str) else None
        for call in message.get("tool_calls") or []:
            function = call.get("function")
            if isinstance(function, dict):
                tool_calls.append(
                    ToolCallRequest.parse(call.get("id") or "", function.get("name") or "", function.get("arguments"))
                )
                continue
            custom = call.get("custom") if isinstance(call.get("custom"), dict) else {}
            # A free-form ("custom") tool call carries text, not JSON arguments: keep it, flagged.
            tool_calls.append(
                ToolCallRequest(
                    id=call.get("id"),
                    name=str(custom.get("name") or ""),
                    arguments={},
                    raw_arguments=str(custom.get("input") or ""),
                    arguments_error="free-form (custom) tool call: the input is text, not JSON arguments",
                )
            )
    usage_data = reply.get("usage")
    known = isinstance(usage_data, dict)
    used: Mapping[str, Any] = usage_data if isinstance(usage_data, dict) else {}
    prompt = int(used.get("prompt_tokens") or 0)
    completion = int(used.get("completion_tokens") or 0)
    details = used.get("prompt_tokens_details")
    cached = int((details.get("cached_tokens") if isinstance(details, dict) else 0) or 0)
    cached = min(max(0, cached), prompt)
    cost = usage_cost(model, prompt, completion, cached) if known else None
    savings: float | None = 0.0
    if cached:
        full = usage_cost(model, prompt, completion)
        savings = None if cost is None or full is None else full - cost
    usage = Usage(
        prompt_tokens=prompt, completion_tokens=completion, calls=1, cost=cost, cache_read_tokens=cached,
        cache_savings=savings,
    )  # fmt: skip
    return Completion(
        content=content,
        tool_calls=tool_calls,
        finish_reason=finish_reason,
        usage=usage,
        model=model,
        cost=cost,
        raw_text=content or "",
    )
