"""One client for every model role (agent, simulated user, judge), and the offline fake provider.

This is the only module of Simulator that imports litellm, and it imports it lazily, on the first model call:
``import litellm`` takes 3-4 s, and ``simulator --help``, ``validate`` and ``report`` never need it.

What the client adds on top of litellm
  * per-role settings (:class:`~simulator.models.settings.ModelSettings`): model, temperature, max tokens,
    timeout, API base, and the API key read from the environment variable named by ``api_key_env``
    (the key itself is never logged or put in an error message);
  * a per-role concurrency limit (an :class:`asyncio.Semaphore` of ``concurrency`` slots);
  * retries done here, not by litellm: exponential backoff with full jitter (:class:`RetryPolicy`, shared
    with the agent adapters) on rate limits (429), server errors (5xx), timeouts and connection errors,
    waiting at least as long as the provider's ``Retry-After`` asks (capped at 60 s); no retry on
    authentication, bad request or unknown model errors, which fail at once with a
    :class:`~simulator.errors.ModelError` that says what to fix.
    (litellm's ``num_retries`` also retries plain exceptions it wraps as connection errors, and the OpenAI
    SDK retries on its own, so both are turned off);
  * per-role token and cost accounting; a cost is ``None`` when litellm does not know the model's price;
  * :meth:`LLMClient.structured`: JSON output validated with pydantic, re-asked with the validation error.

Offline use
  * ``LITELLM_OFFLINE_MODE=true`` makes litellm use its bundled price list and skip tokenizer downloads
    (a tokenizer download blocked for 24 s on a machine without internet). Set it in tests, CI and any
    air-gapped run. This module does not set it itself: whether a run may reach the network for litellm's
    catalogs is the operator's choice (``tests/conftest.py`` sets it for the test suite).
  * Before importing litellm this module sets ``LITELLM_LOCAL_MODEL_COST_MAP=True`` (unless already set), so
    the import never tries to download the price list; prices then come from the copy bundled with litellm.
  * The ``fake`` provider (``model="fake/anything"``) answers from a :class:`FakeScript` instead of a network
    service. It goes through the whole of litellm like a real provider (real usage, tool calls,
    ``finish_reason="tool_calls"``, litellm's own exception types), so tests exercise the real code path.

The request cache
  litellm's own response cache is not used (in the installed version a cache hit imports fastapi, and the disk
  cache was removed). :class:`RequestCache` is ours: one SQLite file, keyed by :func:`request_cache_key`, a
  sha256 of the normalized request. Give one to ``LLMClient(cache=...)``; the simulated user and the judge are
  cached by default, the agent under test only when asked (``cache_roles``), since it is what a run measures.
  A cache hit returns the stored reply without calling the model: that is what makes a re-run of an unchanged
  suite fast, free and reproducible. A request is only reproducible *live* when its temperature is 0 or the
  provider is deterministic; with a cache it is reproducible anyway, because the first reply is replayed.
"""

from __future__ import annotations

import asyncio
import contextvars
import copy
import email.utils
import functools
import hashlib
import inspect
import json
import logging
import math
import os
import random
import re
import sqlite3
import threading
import time
import warnings
from collections import deque
from collections.abc import Awaitable, Callable, Collection, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import UTC
from enum import StrEnum
from pathlib import Path
from types import TracebackType
from typing import TYPE_CHECKING, Any, TypeVar

from pydantic import BaseModel, ConfigDict, ValidationError

from simulator._sqlite import connect
from simulator.errors import ModelError, StoreError
from simulator.models.settings import ModelRoles, ModelSettings
from simulator.models.transcript import Usage
from simulator.safety import redact, register_secret

if TYPE_CHECKING:
    from litellm.types.utils import ModelResponse

__all__ = [
    "FAKE_PROVIDER",
    "Completion",
    "FakeReply",
    "FakeRequest",
    "FakeScript",
    "FakeToolCall",
    "LLMClient",
    "RequestCache",
    "RetryPolicy",
    "Role",
    "StaticReply",
    "StructuredOutputError",
    "ToolCallRequest",
    "Usage",
    "UsageMeter",
    "cache_scope",
    "fake_auth_error",
    "fake_bad_request",
    "fake_connection_error",
    "fake_not_found",
    "fake_rate_limit",
    "fake_server_error",
    "fake_timeout",
    "metering",
    "request_cache_key",
    "retry_after_seconds",
]

#: The litellm provider name of the offline fake: ``model="fake/anything"`` is answered by a :class:`FakeScript`.
FAKE_PROVIDER = "fake"

T = TypeVar("T", bound=BaseModel)

# Keyword arguments the client sets itself; letting a caller override them would bypass the role's
# settings, its accounting or its retry policy.
_RESERVED = frozenset({"model", "messages", "tools", "api_key", "stream", "num_retries", "max_retries"})


class Role(StrEnum):
    """The three roles that call models; each has its own settings, concurrency limit and account."""

    AGENT = "agent"
    USER = "user"
    JUDGE = "judge"


# --------------------------------------------------------------------------------------------------------------
# Results


class ToolCallRequest(BaseModel):
    """One tool call the model asked for.

    ``arguments`` is the parsed JSON object. When the model sent arguments that are not a JSON object, they are
    kept in ``raw_arguments``, ``arguments`` is empty and ``arguments_error`` says what was wrong, so a judge can
    count the call as malformed instead of the run crashing.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    id: str
    name: str
    arguments: dict[str, Any]
    raw_arguments: str
    arguments_error: str | None = None

    @property
    def malformed(self) -> bool:
        """True when the arguments were not a valid JSON object."""
        return self.arguments_error is not None

    @classmethod
    def parse(cls, id: str, name: str, raw_arguments: str | None) -> ToolCallRequest:
        """Build from the provider's fields; never raises on bad arguments."""
        raw = raw_arguments or ""
        if not raw.strip():
            # Some providers send "" for a tool without parameters: that is an empty object, not an error.
            return cls(id=id, name=name, arguments={}, raw_arguments=raw)
        try:
            parsed = json.loads(raw)
        except json.JSONDecodeError as exc:
            return cls(id=id, name=name, arguments={}, raw_arguments=raw, arguments_error=f"not valid JSON: {exc}")
        if not isinstance(parsed, dict):
            error = f"expected a JSON object, got {type(parsed).__name__}"
            return cls(id=id, name=name, arguments={}, raw_arguments=raw, arguments_error=error)
        return cls(id=id, name=name, arguments=parsed, raw_arguments=raw)


class Completion(BaseModel):
    """A model's reply to one :meth:`LLMClient.complete` call.

    ``content`` is the text (``None`` when the model only called tools); ``raw_text`` is the same text as
    received but never ``None`` (empty when there was none), for code that quotes or parses the reply.
    ``model`` is the model string configured for the role. ``usage`` covers this call only.

    ``cached`` is True when the reply came from the :class:`RequestCache` instead of the model: then no request
    was made, ``cost`` and ``usage.cost`` are 0.0 (nothing was spent) and the token counts are those of the
    call that was stored (what the reply cost to produce the first time).
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    content: str | None
    tool_calls: list[ToolCallRequest]
    finish_reason: str | None
    usage: Usage
    model: str
    cost: float | None
    raw_text: str
    cached: bool = False


class StructuredOutputError(ModelError):
    """The model did not produce valid structured output within the allowed attempts.

    ``raw`` is the text of the last reply, kept for the report; ``error`` is why it was rejected.
    """

    def __init__(self, message: str, *, raw: str, error: str) -> None:
        super().__init__(message)
        self.raw = raw
        self.error = error


# --------------------------------------------------------------------------------------------------------------
# The request cache

_log = logging.getLogger(__name__)

#: Part of every key: bump it when the normalization below or the stored format changes, and old entries then
#: simply miss (they age out through the LRU eviction).
_CACHE_FORMAT = 1

#: The message fields that reach the model; anything else a caller keeps in a message dict is bookkeeping.
_MESSAGE_FIELDS = ("role", "content", "tool_calls", "tool_call_id", "name")
#: Request parameters that are always part of the key (``None`` when not set).
_KEY_PARAMETERS = ("temperature", "max_tokens", "response_format", "top_p", "seed", "stop")
#: Request parameters that never are: how the request travels and is paid for, not what the model answers.
_NOT_IN_KEY = frozenset(
    {
        "model",
        "messages",
        "tools",
        *_KEY_PARAMETERS,
        "api_key",
        "api_base",
        "base_url",
        "api_version",
        "timeout",
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
#: Other credentials a provider may take as a parameter (aws_secret_access_key, azure_ad_token, ...).
_CREDENTIAL = re.compile(r"(^|_)(key|secret|password|credentials?)(_|$)|(^|_)token$")


class _Uncacheable(Exception):
    """A request holds a value with no canonical JSON form (a callable, an exception, NaN): it is not cached."""


def _canonical(value: Any) -> Any:
    """``value`` as plain JSON data that is equal for equal requests (``1.0`` and ``1`` are the same number)."""
    if value is None or isinstance(value, bool | str):
        return value
    if isinstance(value, int):
        return value
    if isinstance(value, float):
        if not math.isfinite(value):
            raise _Uncacheable("not a finite number")
        return int(value) if value.is_integer() else value
    if isinstance(value, type) and issubclass(value, BaseModel):
        # A pydantic class as response_format: what the provider is given is its JSON schema, under its name.
        return {"json_schema": _canonical(value.model_json_schema()), "name": value.__name__}
    if isinstance(value, BaseModel):
        return _canonical(value.model_dump(mode="json"))
    if isinstance(value, Mapping):
        if not all(isinstance(key, str) for key in value):
            raise _Uncacheable("a mapping with keys that are not strings")
        return {key: _canonical(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [_canonical(item) for item in value]
    raise _Uncacheable(f"a {type(value).__name__} has no canonical JSON form")


def _canonical_message(message: Mapping[str, Any]) -> dict[str, Any]:
    normalized: dict[str, Any] = {}
    for name in _MESSAGE_FIELDS:
        value = message.get(name)
        # A missing field, None and (for tool_calls) an empty list all say the same to a provider.
        if value is None or (name == "tool_calls" and not value):
            continue
        normalized[name] = _canonical(value)
    return normalized


def request_cache_key(request: Mapping[str, Any]) -> str | None:
    """The :class:`RequestCache` key of a litellm request: a sha256 hex digest, or ``None`` if it cannot be cached.

    The digest is taken over a canonical JSON (sorted keys, no whitespace, integral floats written as integers)
    of the normalized request:

    * ``model``: the model string (litellm syntax, e.g. ``openai/gpt-4o-mini``);
    * ``messages``: each reduced to ``role``, ``content``, ``tool_calls``, ``tool_call_id`` and ``name``
      (a missing field, ``None`` and an empty ``tool_calls`` are the same);
    * ``tools`` (none and an empty list are the same);
    * ``temperature``, ``max_tokens``, ``response_format`` (a pydantic class as its name and JSON schema),
      ``top_p``, ``seed`` and ``stop``;
    * any other parameter passed to the model (``tool_choice``, ``frequency_penalty``, ...), so a parameter
      that changes the reply never hits an entry made without it;
    * a format number, bumped when this definition changes.

    Not part of the key: ``api_key`` and any other credential (a rotated key still hits), ``api_base`` (it may
    carry secrets; the model string names the model), ``timeout``, retry settings, headers, metadata and
    per-token prices. A request holding a value with no JSON form (a callable, an exception, NaN) gets ``None``.
    """
    try:
        normalized = {
            "format": _CACHE_FORMAT,
            "model": str(request["model"]),
            "messages": [_canonical_message(message) for message in request["messages"]],
            "tools": _canonical(request.get("tools") or None),
            **{name: _canonical(request.get(name)) for name in _KEY_PARAMETERS},
            "other": {
                name: _canonical(value)
                for name, value in request.items()
                if name not in _NOT_IN_KEY and not _CREDENTIAL.search(name)
            },
        }
        text = json.dumps(normalized, sort_keys=True, separators=(",", ":"), allow_nan=False)
    except (_Uncacheable, ValueError, TypeError):
        return None
    return hashlib.sha256(text.encode()).hexdigest()


_SQLITE_HEADER = b"SQLite format 3\x00"


class RequestCache:
    """Model replies stored by request, in one SQLite file, so an unchanged request is never sent twice.

    Keys come from :func:`request_cache_key`. :class:`LLMClient` looks a request up before calling the model and
    stores each successful reply (never an error, never a structured reply that failed validation). A hit
    replays the stored reply: that makes a re-run of an unchanged suite fast, free and reproducible, even for
    a model sampled at a temperature above 0 (whose live replies are only reproducible at temperature 0 or from
    a deterministic provider). The flip side: identical requests get identical replies, so repeats of one case
    only differ where their requests differ (pass a per-repeat ``seed`` to the model, or run without a cache,
    to sample anew).

    The file holds one table, ``requests`` (``key`` primary key, ``created`` and ``last_used`` as Unix times,
    ``size`` in bytes, ``completion`` as JSON), in WAL mode with ``synchronous=NORMAL``: a few processes may
    share it, and a crash loses at most the last replies stored, never the file. When the stored bytes (the
    ``size`` column: key and JSON, not the file's size on disk) exceed ``max_bytes``, the least recently used
    entries are evicted down to 90 % of it.

    A cache is an optimisation, so its failures never stop a run: if the file is damaged, is not a SQLite
    database, or a read or write fails, the problem is reported once, through ``on_error`` (default: a
    ``logging`` warning), and the cache acts as a miss. Only a path that cannot be created at all (its folder
    cannot be made, or it is a folder) raises :class:`~simulator.errors.StoreError` at once, before any call.
    Thread-safe; use it as a context manager or call :meth:`close`.
    """

    def __init__(
        self,
        path: Path | str,
        *,
        max_bytes: int = 200 * 1024 * 1024,
        on_error: Callable[[str], None] | None = None,
    ) -> None:
        if max_bytes < 1:
            raise ValueError("max_bytes must be at least 1")
        self.path = Path(path)
        self.max_bytes = max_bytes
        #: How many cache operations failed (only the first is reported).
        self.errors = 0
        self._on_error = on_error
        self._reported = False
        self._lock = threading.RLock()
        self._db: sqlite3.Connection | None = None
        self._closed = False
        self._clock = 0.0
        # Bytes stored, as far as this instance knows (other processes may add some): checked exactly, with
        # SUM(size), only when this estimate passes max_bytes.
        self._estimate = 0
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise StoreError(
                f"cannot create the request cache {self.path}: its folder {self.path.parent} cannot be made "
                f"({exc.strerror or exc}). Choose another cache path, or run without the cache."
            ) from exc
        if self.path.is_dir():
            raise StoreError(
                f"cannot create the request cache {self.path}: it is a folder. Give the path of a file (it is "
                "made if missing), or run without the cache."
            )
        self._open()

    # -- public operations ------------------------------------------------------------------------------------

    def get(self, key: str) -> Completion | None:
        """The stored reply for ``key`` (with ``cached=True``), or ``None``; a hit becomes the most recently used."""
        with self._lock:
            db = self._db
            if db is None:
                return None
            try:
                row = db.execute("SELECT completion FROM requests WHERE key = ?", (key,)).fetchone()
            except sqlite3.Error as exc:
                self._report(f"reading failed ({exc})")
                return None
            if row is None:
                return None
            try:
                completion = Completion.model_validate_json(row[0])
            except ValidationError:
                # Stored by a version whose Completion had another shape: a miss, and the entry goes.
                self._execute(db, "DELETE FROM requests WHERE key = ?", (key,), "deleting a stale entry")
                return None
            self._execute(db, "UPDATE requests SET last_used = ? WHERE key = ?", (self._now(), key), "updating")
        return completion.model_copy(update={"cached": True})

    def put(self, key: str, completion: Completion) -> None:
        """Store ``completion`` as the reply to ``key`` (replacing any), then evict if over ``max_bytes``.

        A reply larger than ``max_bytes`` on its own is not stored.
        """
        text = redact(completion.model_copy(update={"cached": False}).model_dump_json())  # no secret in the file
        size = len(key.encode()) + len(text.encode())
        if size > self.max_bytes:
            return
        with self._lock:
            db = self._db
            if db is None:
                return
            now = self._now()
            stored = self._execute(
                db,
                "INSERT OR REPLACE INTO requests (key, created, last_used, size, completion) VALUES (?, ?, ?, ?, ?)",
                (key, now, now, size, text),
                "storing a reply",
            )
            if stored:
                self._estimate += size
                if self._estimate > self.max_bytes:
                    self._evict(db)

    def delete(self, key: str) -> None:
        """Forget the reply stored for ``key``, if any."""
        with self._lock:
            if self._db is not None:
                self._execute(self._db, "DELETE FROM requests WHERE key = ?", (key,), "deleting an entry")

    def clear(self) -> None:
        """Forget every stored reply and give the space back to the file system.

        A damaged cache file (one that starts like a SQLite database but cannot be read) is deleted and made
        anew; a file that is not a SQLite database at all is never deleted: :class:`StoreError` says so.
        """
        with self._lock:
            if self._closed:
                raise ValueError("the request cache is closed")
            if self._db is not None:
                if self._execute(self._db, "DELETE FROM requests", (), "clearing"):
                    self._execute(self._db, "VACUUM", (), "compacting")
                    self._estimate = 0
                return
            try:
                with self.path.open("rb") as file:
                    head = file.read(len(_SQLITE_HEADER))
            except FileNotFoundError:
                head = b""
            except OSError as exc:
                raise StoreError(f"cannot clear the request cache {self.path}: {exc.strerror or exc}") from exc
            if head and head != _SQLITE_HEADER:
                raise StoreError(
                    f"{self.path} is not a SQLite database, so it is not a request cache: it was not deleted. "
                    "Point the cache at another file, or delete this one yourself."
                )
            for suffix in ("", "-wal", "-shm"):
                Path(f"{self.path}{suffix}").unlink(missing_ok=True)
            self._reported = False
        self._open()

    def stats(self) -> tuple[int, int]:
        """``(entries, bytes)`` stored; bytes are the ``size`` column's total. ``(0, 0)`` when unusable."""
        with self._lock:
            db = self._db
            if db is None:
                return (0, 0)
            try:
                entries, size = db.execute("SELECT COUNT(*), COALESCE(SUM(size), 0) FROM requests").fetchone()
            except sqlite3.Error as exc:
                self._report(f"reading its statistics failed ({exc})")
                return (0, 0)
        return (int(entries), int(size))

    @property
    def usable(self) -> bool:
        """False when the file could not be opened (damaged, not SQLite) or the cache is closed."""
        return self._db is not None

    def close(self) -> None:
        """Close the file; the cache then acts as a miss. Calling it again does nothing."""
        with self._lock:
            self._closed = True
            db, self._db = self._db, None
        if db is not None:
            db.close()

    def __enter__(self) -> RequestCache:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, traceback: TracebackType | None
    ) -> None:
        self.close()

    def __repr__(self) -> str:
        state = "closed" if self._closed else "open" if self._db is not None else "unusable"
        return f"RequestCache({str(self.path)!r}, max_bytes={self.max_bytes}, {state})"

    # -- internals ---------------------------------------------------------------------------------------------

    def _open(self) -> None:
        try:
            db = connect(self.path, timeout=5.0, isolation_level=None, check_same_thread=False, wal=False)
        except sqlite3.Error as exc:
            raise StoreError(
                f"cannot create the request cache {self.path} ({exc}). Check that its folder is writable, "
                "or run without the cache."
            ) from exc
        try:
            db.execute("PRAGMA journal_mode=WAL")
            db.execute("PRAGMA synchronous=NORMAL")
            db.execute(
                "CREATE TABLE IF NOT EXISTS requests ("
                "key TEXT PRIMARY KEY, created REAL NOT NULL, last_used REAL NOT NULL, "
                "size INTEGER NOT NULL, completion TEXT NOT NULL)"
            )
            db.execute("CREATE INDEX IF NOT EXISTS requests_by_last_used ON requests (last_used)")
            (total,) = db.execute("SELECT COALESCE(SUM(size), 0) FROM requests").fetchone()
        except sqlite3.Error as exc:
            db.close()
            self._report(
                f"cannot be used ({exc}); running without it. If it is a damaged cache, delete it (or clear "
                "the cache) to start a new one",
                prefix=False,
            )
            return
        with self._lock:
            self._db = db
            self._estimate = int(total)

    def _now(self) -> float:
        # Strictly increasing within this instance, so "least recently used" is exact even for calls that fall
        # in the same clock tick.
        self._clock = max(time.time(), self._clock + 1e-6)
        return self._clock

    def _execute(self, db: sqlite3.Connection, sql: str, parameters: tuple[Any, ...], doing: str) -> bool:
        try:
            db.execute(sql, parameters)
        except sqlite3.Error as exc:
            self._report(f"{doing} failed ({exc})")
            return False
        return True

    def _evict(self, db: sqlite3.Connection) -> None:
        """Drop least recently used entries until the stored bytes are at most 90 % of ``max_bytes``."""
        try:
            (total,) = db.execute("SELECT COALESCE(SUM(size), 0) FROM requests").fetchone()
            if total > self.max_bytes:
                # One statement, so it is atomic: the shortest run of oldest entries that frees the excess.
                db.execute(
                    "DELETE FROM requests WHERE key IN (SELECT key FROM (SELECT key, size, SUM(size) OVER "
                    "(ORDER BY last_used, rowid ROWS UNBOUNDED PRECEDING) AS upto FROM requests) "
                    "WHERE upto - size < ?)",
                    (int(total) - self.max_bytes * 9 // 10,),
                )
                (total,) = db.execute("SELECT COALESCE(SUM(size), 0) FROM requests").fetchone()
            self._estimate = int(total)
        except sqlite3.Error as exc:
            self._report(f"evicting old entries failed ({exc})")

    def _report(self, problem: str, *, prefix: bool = True) -> None:
        self.errors += 1
        if self._reported:
            return
        self._reported = True
        message = f"request cache {self.path}: {problem}" if prefix else f"request cache {self.path} {problem}"
        if prefix:
            message += "; it acts as a miss (the cache only saves time and cost, the run goes on)"
        if self._on_error is not None:
            self._on_error(message)
        else:
            _log.warning("%s", message)


# --------------------------------------------------------------------------------------------------------------
# Loading litellm


# litellm installs a global "ignore" filter for this pydantic warning when it is imported, because its own
# TypedDicts with ReadOnly items trigger it while pydantic builds schemas lazily (on the first request, not at
# import). Anything that re-installs warning filters (pytest does so around every test, with
# `filterwarnings = error` here) drops litellm's filter, and the warning then raises inside litellm, which
# wraps it as a connection error. We re-assert exactly that one filter before each call: it is idempotent
# (`filterwarnings` moves an existing identical entry to the front), and unlike `catch_warnings` it is safe when
# many asyncio tasks call litellm at once.
_READONLY_TYPEDDICT_WARNING = r".*on TypedDict class .* using the `ReadOnly` qualifier"


def _silence_known_litellm_warnings() -> None:
    warnings.filterwarnings(
        "ignore",
        message=_READONLY_TYPEDDICT_WARNING,
        category=UserWarning,
        module=r"pydantic\._internal\._generate_schema",
    )


@functools.cache
def _load_litellm() -> None:
    """Import and configure litellm once per process."""
    # The variable name and its "true" check are in litellm/litellm_core_utils/get_model_cost_map.py.
    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    _silence_known_litellm_warnings()
    import litellm

    litellm.suppress_debug_info = True


def preload(roles: ModelRoles) -> None:
    """Import litellm now if any role of ``roles`` has a model: a run calls this before its conversations start,
    because the import takes seconds and, done inside the first model call, blocks the event loop while the
    agent timeouts of every other conversation keep running (their agents then look as if they never answered)."""
    if any(settings.model for settings in (roles.agent, roles.user, roles.judge)):
        _load_litellm()


def _ensure_fake_registered() -> None:
    """Register the fake provider unless it already is (cheap; checked per call in case the map was replaced)."""
    import litellm

    if not any(item.get("provider") == FAKE_PROVIDER for item in litellm.custom_provider_map):
        litellm.custom_provider_map.append({"provider": FAKE_PROVIDER, "custom_handler": _fake_provider()})


# --------------------------------------------------------------------------------------------------------------
# The client


def _full_jitter(ceiling: float) -> float:
    return random.uniform(0.0, ceiling)


#: The longest wait a server's ``Retry-After`` can ask for; a longer one is cut to this (and the call retried).
RETRY_AFTER_CAP = 60.0


@dataclass(frozen=True)
class RetryPolicy:
    """How long to wait before a retry; one policy for every model role and for the agent adapters.

    Before retry *n* the wait is a random time between 0 and ``min(cap, base * 2**(n-1))`` seconds ("full
    jitter", so many conversations hit by the same rate limit do not retry in lockstep). When the server said
    how long to wait (``Retry-After``, see :func:`retry_after_seconds`), the wait is at least that, cut to
    ``retry_after_cap``. ``sleep`` and ``jitter`` are injectable so tests do not wait.

    What is retried is decided by each caller (the model client by litellm's exception types, the HTTP agent
    by status and transport errors): rate limits (429), server errors (5xx, 408), timeouts and connection
    errors, never a request the server refused for good (401, 403, 404, other 4xx).
    """

    base: float = 1.0
    cap: float = 30.0
    retry_after_cap: float = RETRY_AFTER_CAP
    jitter: Callable[[float], float] = _full_jitter
    sleep: Callable[[float], Awaitable[None]] = asyncio.sleep

    def __post_init__(self) -> None:
        if self.base < 0 or self.cap < 0 or self.retry_after_cap < 0:
            raise ValueError("retry delays must not be negative")

    def delay(self, attempt: int, retry_after: float | None = None) -> float:
        """Seconds to wait after failed attempt ``attempt`` (1 for the first), honouring ``retry_after``."""
        ceiling = min(self.cap, self.base * 2 ** (attempt - 1))
        wait = max(0.0, self.jitter(ceiling))
        if retry_after is not None:
            wait = max(wait, min(max(0.0, retry_after), self.retry_after_cap))
        return wait

    async def wait(self, attempt: int, retry_after: float | None = None) -> None:
        """Sleep for :meth:`delay`."""
        await self.sleep(self.delay(attempt, retry_after))

    def longest_wait(self) -> float:
        """The longest :meth:`delay` can be: a bound for callers that budget a whole series of attempts."""
        return max(self.cap, self.retry_after_cap)


def retry_after_seconds(headers: Any, *, now: float | None = None) -> float | None:
    """The wait a server asked for in its response headers, in seconds, or ``None`` if it asked for none.

    Reads ``retry-after-ms`` (milliseconds, sent by OpenAI) and ``Retry-After`` in both of its forms, seconds
    (``"7"``, also ``"1.5"``) and an HTTP date (``"Wed, 21 Oct 2026 07:28:00 GMT"``, measured from ``now``,
    default the clock). Header names are matched case-insensitively; a date in the past gives 0; a value that
    is neither form is ignored. Callers cap the result (:attr:`RetryPolicy.retry_after_cap`).
    """
    if headers is None:
        return None
    try:
        items = list(headers.items())
    except (AttributeError, TypeError):
        return None
    values = {str(name).lower(): str(value).strip() for name, value in items}
    milliseconds = _finite(values.get("retry-after-ms"))
    if milliseconds is not None:
        return max(0.0, milliseconds / 1000)
    text = values.get("retry-after")
    if not text:
        return None
    seconds = _finite(text)
    if seconds is not None:
        return max(0.0, seconds)
    try:
        when = email.utils.parsedate_to_datetime(text)
    except (TypeError, ValueError, IndexError):
        return None
    if when.tzinfo is None:  # an HTTP date is always GMT; a sloppy one without a zone is read as such
        when = when.replace(tzinfo=UTC)
    return max(0.0, when.timestamp() - (time.time() if now is None else now))


def _finite(text: str | None) -> float | None:
    if text is None:
        return None
    try:
        value = float(text)
    except ValueError:
        return None
    return value if math.isfinite(value) else None


def _exception_retry_after(exc: BaseException) -> float | None:
    """The ``Retry-After`` of the response a litellm exception came from, if the server sent one.

    litellm keeps the provider's response headers on the exception (``litellm_response_headers``, and on
    ``response.headers`` for status errors); ``headers`` holds ones a litellm proxy attached explicitly.
    """
    for headers in (
        getattr(exc, "headers", None),
        getattr(exc, "litellm_response_headers", None),
        getattr(getattr(exc, "response", None), "headers", None),
    ):
        seconds = retry_after_seconds(headers)
        if seconds is not None:
            return seconds
    return None


@dataclass
class _Failure:
    """A classified provider failure."""

    retry: bool
    kind: str
    detail: str
    retry_after: float | None = None


_CACHE_SALT: contextvars.ContextVar[str | None] = contextvars.ContextVar("simulator_cache_salt", default=None)


@contextmanager
def cache_scope(salt: str) -> Iterator[None]:
    """Cached replies inside this block are keyed with ``salt`` too.

    The runner gives each repeat of a case its own salt (its repeat number): a re-run of an unchanged suite
    replays the same replies repeat by repeat, while the repeats of one run stay independent samples instead
    of all replaying the first one.
    """
    token = _CACHE_SALT.set(salt)
    try:
        yield
    finally:
        _CACHE_SALT.reset(token)


class UsageMeter:
    """Usage of the calls made inside one :func:`metering` block (one conversation), per role.

    Replies served from the request cache count as calls (at cost 0.0) in ``by_role`` and also in ``cache_hits``.
    """

    def __init__(self) -> None:
        self.by_role: dict[Role, Usage] = {}
        self.cache_hits: dict[Role, int] = {}

    def add(self, role: Role, usage: Usage, *, cached: bool = False) -> None:
        """Count one call's usage (``cached``: it was a cache hit)."""
        self.by_role[role] = self.by_role.get(role, Usage()) + usage
        if cached:
            self.cache_hits[role] = self.cache_hits.get(role, 0) + 1


_METER: contextvars.ContextVar[UsageMeter | None] = contextvars.ContextVar("simulator_usage_meter", default=None)


@contextmanager
def metering() -> Iterator[UsageMeter]:
    """Count the usage of every model call made in this block, and in tasks started from it.

    Many conversations share one client; each runs its own block, so each knows its own tokens and cost.
    """
    meter = UsageMeter()
    token = _METER.set(meter)
    try:
        yield meter
    finally:
        _METER.reset(token)


class LLMClient:
    """Calls models for the agent, user and judge roles through litellm.

    ``fake_script`` answers ``fake/...`` models in this client's calls (it overrides a script made active with
    :meth:`FakeScript.active`). ``backoff_base`` and ``backoff_cap`` (seconds) shape the retry delays: before
    retry *n* the client sleeps a random time between 0 and ``min(cap, base * 2**(n-1))`` ("full jitter", so
    many clients hit by the same rate limit do not retry in lockstep), and at least as long as the provider's
    ``Retry-After`` asked (at most :data:`RETRY_AFTER_CAP`). ``sleep`` and ``jitter`` are injectable so tests
    do not wait; or pass a whole :class:`RetryPolicy` as ``retry`` (it then replaces those four). The policy is
    :attr:`retry_policy`; the HTTP agent adapter waits by the same one. ``environ`` is where API keys are read
    from (default ``os.environ``).

    ``cache`` (a :class:`RequestCache`) is consulted before calling the model for the roles in ``cache_roles``:
    by default the simulated user and the judge, not the agent, because the agent under test is what a run
    measures (add :attr:`Role.AGENT` to replay it too). A hit makes no request (and needs no API key); it is
    counted in :meth:`usage_by_role` as a call with cost 0.0 and the stored reply's token counts, and
    separately in :meth:`cache_hits_by_role`. A miss calls the model and stores the reply if the call
    succeeded; errors are never stored.
    """

    def __init__(
        self,
        roles: ModelRoles,
        *,
        fake_script: FakeScript | None = None,
        backoff_base: float = 1.0,
        backoff_cap: float = 30.0,
        sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
        jitter: Callable[[float], float] = _full_jitter,
        environ: Mapping[str, str] | None = None,
        cache: RequestCache | None = None,
        cache_roles: Collection[Role | str] = (Role.USER, Role.JUDGE),
        retry: RetryPolicy | None = None,
    ) -> None:
        if backoff_base < 0 or backoff_cap < 0:
            raise ValueError("backoff_base and backoff_cap must not be negative")
        #: The waits between attempts; the agent adapters use the same policy (see ``build_agent``).
        self.retry_policy = retry or RetryPolicy(base=backoff_base, cap=backoff_cap, jitter=jitter, sleep=sleep)
        self._cache = cache
        # A single role given as a string is one role, not a collection of letters.
        roles_to_cache: Collection[Role | str] = (cache_roles,) if isinstance(cache_roles, str) else cache_roles
        self._cache_roles = frozenset(Role(role) for role in roles_to_cache)
        self._cache_hits: dict[Role, int] = dict.fromkeys(Role, 0)
        self._roles = roles
        self._fake_script = fake_script
        self._environ: Mapping[str, str] = os.environ if environ is None else environ
        self._usage: dict[Role, Usage] = {role: Usage() for role in Role}
        # One semaphore per role and event loop: a semaphore binds to the loop it is first contended on, and a
        # client may outlive one `asyncio.run`.
        self._semaphores: dict[Role, tuple[asyncio.AbstractEventLoop, asyncio.Semaphore]] = {}

    def settings(self, role: Role | str) -> ModelSettings:
        """The settings of ``role``."""
        settings: ModelSettings = getattr(self._roles, Role(role).value)
        return settings

    def usage_by_role(self) -> dict[Role, Usage]:
        """Tokens, calls and cost so far, per role (every role is present, unused ones with zero usage)."""
        return dict(self._usage)

    def total_usage(self) -> Usage:
        """Tokens, calls and cost so far over all roles."""
        total = Usage()
        for usage in self._usage.values():
            total = total + usage
        return total

    @property
    def cache(self) -> RequestCache | None:
        """The request cache, if the client has one."""
        return self._cache

    def cache_hits_by_role(self) -> dict[Role, int]:
        """Replies served from the request cache so far, per role (every role is present)."""
        return dict(self._cache_hits)

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

        ``tools`` are OpenAI-style function tools. ``overrides`` are passed to ``litellm.acompletion`` and win
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
        settings = self.settings(role)
        model = self._model(role, settings)
        bad = _RESERVED.intersection(overrides)
        if bad:
            raise ValueError(f"complete() sets {', '.join(sorted(bad))} itself; these cannot be overridden")
        request: dict[str, Any] = {
            "model": model,
            "messages": [dict(message) for message in messages],
            "timeout": settings.timeout,
            # Retries are done here, with our classification and backoff: litellm's num_retries would also
            # retry plain exceptions it wraps as connection errors, and the OpenAI SDK retries twice by default.
            "num_retries": 0,
            "max_retries": 0,
        }
        if settings.temperature is not None:
            request["temperature"] = settings.temperature
        if settings.max_tokens is not None:
            request["max_tokens"] = settings.max_tokens
        if settings.api_base is not None:
            request["api_base"] = settings.api_base
        if tools:
            request["tools"] = [dict(tool) for tool in tools]
        request.update(overrides)
        timeout = float(request["timeout"])

        cache = self._cache_for(role)
        key = None
        if cache is not None:
            salt = _CACHE_SALT.get()
            key = request_cache_key({**request, "cache_salt": salt} if salt else request)
        if cache is not None and key is not None and read_cache:
            hit = cache.get(key)
            if hit is not None:
                # Looked up before the API key is read: a run served wholly from the cache needs no secrets.
                return self._serve_hit(role, hit), key
        api_key = self._api_key(role, settings, model)
        if api_key is not None:
            request["api_key"] = api_key

        _load_litellm()
        if retries is not None and retries < 0:
            raise ValueError("retries must not be negative")
        attempts = (settings.max_retries if retries is None else retries) + 1
        last: _Failure | None = None
        last_exc: BaseException | None = None
        for attempt in range(1, attempts + 1):
            try:
                async with self._semaphore(role, settings):
                    response = await self._call(role, request, timeout)
            except Exception as exc:
                failure = _classify(exc, timeout)
                if failure is None:
                    raise  # not a provider failure: a bug, let it surface with its traceback
                failure.detail = _scrub(failure.detail, api_key)
                if not failure.retry:
                    raise ModelError(_fatal_message(role, model, settings, failure)) from exc
                last, last_exc = failure, exc
                if attempt < attempts:
                    # The slot is released while waiting, so a backing-off call does not hold up the others.
                    await self.retry_policy.wait(attempt, failure.retry_after)
                continue
            completion = _to_completion(response, model)
            self._account(role, completion.usage, cached=False)
            if cache is not None and key is not None and write_cache:
                cache.put(key, completion)
            return completion, key
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
        **overrides: Any,
    ) -> T:
        """Ask for a JSON object matching ``schema`` and return it validated.

        The schema is passed as ``response_format`` (providers that support it constrain their output), but the
        reply is always validated here: litellm does not. A reply wrapped in a Markdown code fence is unwrapped.
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
        arguments = {**overrides, "response_format": schema}
        cache = self._cache_for(role)
        key: str | None = None
        read_cache = True
        attempt = 0
        while attempt < attempts:
            completion, request_key = await self._complete(
                role, conversation, None, arguments, read_cache=read_cache and attempt == 0, write_cache=False
            )
            if attempt == 0:
                key = request_key
            raw = completion.raw_text
            try:
                value = _parse_structured(raw, schema)
            except _InvalidReply as exc:
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
            # Only the latest failed reply is shown back, so the prompt does not grow with every attempt.
            conversation = [
                *base,
                {"role": "assistant", "content": raw},
                {
                    "role": "user",
                    "content": f"Your reply could not be used: {error}\n"
                    f"Reply again with only a JSON object that matches the {schema.__name__} schema: "
                    "no prose, no code fences.",
                },
            ]
        model = self.settings(role).model
        raise StructuredOutputError(
            f"{role.value} model {model!r} gave no valid {schema.__name__} JSON in {attempts} "
            f"attempt{'s' if attempts != 1 else ''}; last problem: {error}",
            raw=raw,
            error=error,
        )

    # -- helpers -------------------------------------------------------------------------------------------

    def _cache_for(self, role: Role) -> RequestCache | None:
        return self._cache if role in self._cache_roles else None

    def _account(self, role: Role, usage: Usage, *, cached: bool) -> None:
        self._usage[role] = self._usage[role] + usage
        if cached:
            self._cache_hits[role] += 1
        meter = _METER.get()
        if meter is not None:
            meter.add(role, usage, cached=cached)

    def _serve_hit(self, role: Role, hit: Completion) -> Completion:
        """A stored reply as this call's result: one call, the stored token counts, nothing spent."""
        usage = Usage(
            prompt_tokens=hit.usage.prompt_tokens, completion_tokens=hit.usage.completion_tokens, calls=1, cost=0.0
        )
        self._account(role, usage, cached=True)
        return hit.model_copy(update={"usage": usage, "cost": 0.0, "cached": True})

    @staticmethod
    def _model(role: Role, settings: ModelSettings) -> str:
        if not settings.model:
            raise ModelError(
                f"No model is configured for the {role.value} role. Set one in the suite "
                f"(models: {{{role.value}: openai/gpt-4o-mini}}) or on the command line "
                f"(--{role.value}-model openai/gpt-4o-mini)."
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

    def _semaphore(self, role: Role, settings: ModelSettings) -> asyncio.Semaphore:
        loop = asyncio.get_running_loop()
        entry = self._semaphores.get(role)
        if entry is None or entry[0] is not loop:
            entry = (loop, asyncio.Semaphore(settings.concurrency))
            self._semaphores[role] = entry
        return entry[1]

    async def _call(self, role: Role, request: dict[str, Any], timeout: float) -> ModelResponse:
        import litellm
        from litellm.types.utils import ModelResponse

        _silence_known_litellm_warnings()
        if str(request["model"]).startswith(f"{FAKE_PROVIDER}/"):
            _ensure_fake_registered()
        script = self._fake_script or _ACTIVE_SCRIPT.get()
        token = _BINDING.set(_Binding(script, role))
        try:
            # litellm passes the timeout to the HTTP client, where it bounds each read, not the whole call;
            # this bounds the whole call, and also covers providers that ignore the timeout.
            response = await asyncio.wait_for(litellm.acompletion(**request), timeout)
        finally:
            _BINDING.reset(token)
        if not isinstance(response, ModelResponse):
            raise TypeError(f"expected a ModelResponse from litellm, got {type(response).__name__}")
        return response


def _classify(exc: BaseException, timeout: float) -> _Failure | None:
    """Decide whether a failed call is worth retrying; ``None`` for exceptions that are not provider failures."""
    from litellm.exceptions import APIConnectionError, Timeout

    if isinstance(exc, TimeoutError):
        return _Failure(retry=True, kind="timeout", detail=f"no reply within {timeout:g} s")
    detail = str(exc).strip() or type(exc).__name__
    if len(detail) > 500:
        detail = detail[:500] + "…"
    # Timeouts and connection errors first: litellm.Timeout is a subclass of the connection error, and a
    # connection error carries status 500 without the server having answered.
    if isinstance(exc, Timeout):
        return _Failure(retry=True, kind="timeout", detail=detail)
    if isinstance(exc, APIConnectionError):
        return _Failure(retry=True, kind="connection error", detail=detail)
    status = getattr(exc, "status_code", None)
    if not isinstance(status, int):
        return None
    if status == 429:
        return _Failure(retry=True, kind="rate limited", detail=detail, retry_after=_exception_retry_after(exc))
    if status >= 500 or status == 408:
        return _Failure(
            retry=True, kind=f"server error {status}", detail=detail, retry_after=_exception_retry_after(exc)
        )
    if status in (401, 403):
        return _Failure(retry=False, kind="authentication", detail=detail)
    if status == 404:
        return _Failure(retry=False, kind="not found", detail=detail)
    return _Failure(retry=False, kind=f"bad request {status}", detail=detail)


def _retry_hint(role: Role, failure: _Failure) -> str:
    settings = f"models.{role.value}"
    # A litellm agent's own `retries` and `timeout` (in its agent config) win over the role's.
    retries = "the agent's `retries`" if role is Role.AGENT else f"{settings}.max_retries"
    timeout = f"the agent's `timeout` and {settings}.timeout" if role is Role.AGENT else f"{settings}.timeout"
    if failure.kind == "rate limited":
        return f"Lower {settings}.concurrency or raise {retries}."
    if failure.kind == "timeout":
        return f"Raise {timeout} or {retries}, or check that the provider is up."
    return f"Check that the provider (or {settings}.api_base) is up, or raise {retries}."


def _fatal_message(role: Role, model: str, settings: ModelSettings, failure: _Failure) -> str:
    where = f"{role.value} model {model!r}"
    if failure.kind == "authentication":
        if settings.api_key_env:
            fix = f"Check that {settings.api_key_env} holds a valid key for this provider and model."
        else:
            fix = (
                "Set the provider's key variable (for example OPENAI_API_KEY), or name the variable that holds "
                f"the key with models.{role.value}.api_key_env."
            )
        return f"{where}: the provider refused the credentials ({failure.detail}). {fix}"
    if failure.kind == "not found":
        return (
            f"{where}: the provider does not know this model ({failure.detail}). Check models.{role.value} "
            "(litellm syntax provider/model, for example openai/gpt-4o-mini) and api_base."
        )
    return f"{where}: the provider rejected the request ({failure.detail}). Retrying would not help."


def _scrub(text: str, secret: str | None) -> str:
    return redact(text.replace(secret, "***") if secret else text)


def _to_completion(response: ModelResponse, model: str) -> Completion:
    from litellm.types.utils import ChatCompletionMessageToolCall, Choices

    choice = response.choices[0] if response.choices else None
    content: str | None = None
    finish_reason: str | None = None
    tool_calls: list[ToolCallRequest] = []
    if isinstance(choice, Choices):
        finish_reason = choice.finish_reason
        message = choice.message
        content = message.content if isinstance(message.content, str) else None
        for call in message.tool_calls or []:
            if isinstance(call, ChatCompletionMessageToolCall):
                tool_calls.append(
                    ToolCallRequest.parse(call.id or "", call.function.name or "", call.function.arguments)
                )
            else:
                # A free-form ("custom") tool call carries text, not JSON arguments: keep it, flagged.
                tool_calls.append(
                    ToolCallRequest(
                        id=call.id,
                        name=call.custom.name,
                        arguments={},
                        raw_arguments=call.custom.input,
                        arguments_error="free-form (custom) tool call: the input is text, not JSON arguments",
                    )
                )
    usage_data = getattr(response, "usage", None)
    cost = response._hidden_params.get("response_cost")
    usage = Usage(
        prompt_tokens=int(getattr(usage_data, "prompt_tokens", 0) or 0),
        completion_tokens=int(getattr(usage_data, "completion_tokens", 0) or 0),
        calls=1,
        cost=float(cost) if isinstance(cost, int | float) else None,
    )
    return Completion(
        content=content,
        tool_calls=tool_calls,
        finish_reason=finish_reason,
        usage=usage,
        model=model,
        cost=usage.cost,
        raw_text=content or "",
    )


class _InvalidReply(Exception):
    """A structured reply that cannot be used; the message is shown to the model."""


_FENCE = re.compile(r"```[A-Za-z0-9_-]*[ \t]*\n?(.*?)```", re.DOTALL)


def _parse_structured(raw: str, schema: type[T]) -> T:
    text = raw.strip()
    fenced = _FENCE.search(text)
    if fenced:
        text = fenced.group(1).strip()
    if not text:
        raise _InvalidReply("the reply was empty.")
    try:
        return schema.model_validate_json(text)
    except ValidationError as exc:
        problems = []
        for error in exc.errors(include_url=False):
            if error["type"] == "json_invalid":
                problems.append(f"it is not valid JSON ({error['msg']})")
            else:
                location = ".".join(str(part) for part in error["loc"]) or "(root)"
                problems.append(f"{location}: {error['msg']}")
        raise _InvalidReply("; ".join(problems) + ".") from exc


# --------------------------------------------------------------------------------------------------------------
# The offline fake provider


@dataclass(frozen=True)
class FakeToolCall:
    """A tool call for a fake reply. ``arguments`` given as a string are sent verbatim (to test bad JSON)."""

    name: str
    arguments: Mapping[str, Any] | str = field(default_factory=dict)
    id: str | None = None


#: What a fake reply can be, before any callable is called.
StaticReply = str | list[FakeToolCall] | dict[str, Any] | BaseException
#: A queued reply: text; tool calls; a dict sent as JSON text; an exception instance to raise; or a callable
#: that receives the messages and returns one of these (or an awaitable of one, under ``acompletion``).
FakeReply = StaticReply | Callable[[list[dict[str, Any]]], "StaticReply | Awaitable[StaticReply]"]


@dataclass(frozen=True)
class FakeRequest:
    """One request the fake provider received, as the model saw it.

    ``model`` is the part after ``fake/``; ``role`` is the client role that sent it (``None`` outside
    :class:`LLMClient`); ``params`` are litellm's provider parameters (temperature, max_tokens,
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
    error (a litellm ``BadRequestError``, so it is not retried). Every request is kept in :attr:`requests`.

    Use it with ``LLMClient(..., fake_script=script)``, or make it active for the current context (and the asyncio
    tasks started in it) with ``with script.active(): ...``. There is no global script: nothing leaks between
    tests.
    """

    def __init__(self) -> None:
        self._queues: dict[str, deque[FakeReply]] = {}
        self.requests: list[FakeRequest] = []
        self._served = 0
        # The sync `completion` path may be called from worker threads.
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


@dataclass(frozen=True)
class _Binding:
    script: FakeScript | None
    role: Role | None


# Context variables, not globals: each asyncio task and each test sees only the script bound in its own context.
_ACTIVE_SCRIPT: contextvars.ContextVar[FakeScript | None] = contextvars.ContextVar(
    "simulator_fake_script", default=None
)
_BINDING: contextvars.ContextVar[_Binding | None] = contextvars.ContextVar("simulator_fake_binding", default=None)


def _words(value: Any) -> int:
    """A crude token count: whitespace-separated words of all text in ``value``."""
    if value is None:
        return 0
    if isinstance(value, str):
        return len(value.split())
    if isinstance(value, Mapping):
        return sum(_words(item) for key, item in value.items() if key not in ("role", "type", "id"))
    if isinstance(value, list | tuple):
        return sum(_words(item) for item in value)
    return len(str(value).split())


@functools.cache
def _fake_provider() -> Any:
    """Build the fake provider (a litellm ``CustomLLM``); the class needs litellm, so it is made on first use."""
    from litellm.exceptions import BadRequestError
    from litellm.llms.custom_llm import CustomLLM
    from litellm.types.utils import ChatCompletionMessageToolCall, Choices, Function, Message, ModelResponse
    from litellm.types.utils import Usage as LiteLLMUsage

    class FakeProvider(CustomLLM):
        """Answers ``fake/<model>`` requests from the :class:`FakeScript` bound to the calling context."""

        def completion(self, model: str, messages: list[Any], *args: Any, **kwargs: Any) -> Any:
            reply = self._next(model, messages, kwargs)
            answer = reply(copy.deepcopy(messages)) if callable(reply) else reply
            if inspect.isawaitable(answer):
                raise TypeError("an async callable reply needs acompletion; the sync completion path was used")
            return self._respond(model, messages, kwargs, answer)

        async def acompletion(self, model: str, messages: list[Any], *args: Any, **kwargs: Any) -> Any:
            reply = self._next(model, messages, kwargs)
            answer = reply(copy.deepcopy(messages)) if callable(reply) else reply
            if inspect.isawaitable(answer):
                answer = await answer
            return self._respond(model, messages, kwargs, answer)

        def _next(self, model: str, messages: list[Any], kwargs: dict[str, Any]) -> FakeReply:
            binding = _BINDING.get()
            script = binding.script if binding else _ACTIVE_SCRIPT.get()
            if script is None:
                raise BadRequestError(
                    message=f"no FakeScript is bound for fake/{model}: pass fake_script= to LLMClient "
                    "or call it inside `with script.active():`",
                    model=model,
                    llm_provider=FAKE_PROVIDER,
                )
            params = dict(kwargs.get("optional_params") or {})
            tools = params.pop("tools", None)
            params.pop("max_retries", None)  # the client's transport setting, not something the model sees
            request = FakeRequest(
                model=model,
                role=binding.role if binding else None,
                messages=copy.deepcopy(list(messages)),
                tools=copy.deepcopy(tools),
                params=params,
                api_base=kwargs.get("api_base"),
                has_api_key=bool(kwargs.get("api_key")),
            )
            reply = script._take(request)
            if reply is None:
                raise BadRequestError(message=script._exhausted_message(model), model=model, llm_provider=FAKE_PROVIDER)
            return reply

        def _respond(self, model: str, messages: list[Any], kwargs: dict[str, Any], reply: Any) -> ModelResponse:
            if isinstance(reply, BaseException):
                raise reply
            response = kwargs.get("model_response")
            if not isinstance(response, ModelResponse):
                response = ModelResponse()
            if isinstance(reply, list):
                calls = []
                for index, call in enumerate(reply):
                    if not isinstance(call, FakeToolCall):
                        raise TypeError(f"a tool-call reply must be a list of FakeToolCall, got {call!r}")
                    arguments = call.arguments if isinstance(call.arguments, str) else json.dumps(call.arguments)
                    calls.append(
                        ChatCompletionMessageToolCall(
                            id=call.id or f"call_{len(messages)}_{index}",
                            type="function",
                            function=Function(name=call.name, arguments=arguments),
                        )
                    )
                message = Message(content=None, tool_calls=calls)
                finish_reason = "tool_calls"
                reply_words = sum(_words(c.function.name) + _words(c.function.arguments) for c in calls)
            else:
                if isinstance(reply, dict):
                    text = json.dumps(reply)
                elif isinstance(reply, str):
                    text = reply
                else:
                    raise TypeError(f"unsupported fake reply {reply!r}")
                message = Message(content=text)
                finish_reason = "stop"
                reply_words = _words(text)
            prompt_words = _words(list(messages))
            response.choices = [Choices(index=0, finish_reason=finish_reason, message=message)]
            response.usage = LiteLLMUsage(  # type: ignore[attr-defined]
                prompt_tokens=prompt_words, completion_tokens=reply_words, total_tokens=prompt_words + reply_words
            )
            response.model = f"{FAKE_PROVIDER}/{model}"
            return response

    return FakeProvider()


def _fake_response(status: int, retry_after: float | str | None) -> Any:
    """The provider's HTTP response a fake error carries: only its status and, if given, ``Retry-After``."""
    import httpx  # a dependency of litellm

    headers = {} if retry_after is None else {"retry-after": str(retry_after)}
    request = httpx.Request("POST", f"http://{FAKE_PROVIDER}.invalid/chat/completions")
    return httpx.Response(status, headers=headers, request=request)


def fake_rate_limit(message: str = "rate limit reached (fake)", *, retry_after: float | str | None = None) -> Exception:
    """The ``litellm.RateLimitError`` (429) a provider raises when rate limiting; retried by the client.

    ``retry_after`` (seconds, or an HTTP date) is sent as the response's ``Retry-After`` header.
    """
    _load_litellm()
    from litellm.exceptions import RateLimitError

    response = _fake_response(429, retry_after)
    return RateLimitError(message, llm_provider=FAKE_PROVIDER, model=FAKE_PROVIDER, response=response)


def fake_server_error(
    status: int = 500, message: str = "server error (fake)", *, retry_after: float | str | None = None
) -> Exception:
    """The litellm exception for a 5xx reply (500, 502, 503 or another 5xx); retried by the client.

    ``retry_after`` (seconds, or an HTTP date) is sent as the response's ``Retry-After`` header.
    """
    _load_litellm()
    from litellm.exceptions import APIError, BadGatewayError, InternalServerError, ServiceUnavailableError

    response = _fake_response(status, retry_after)
    if status == 500:
        return InternalServerError(message, llm_provider=FAKE_PROVIDER, model=FAKE_PROVIDER, response=response)
    if status == 502:
        return BadGatewayError(message, llm_provider=FAKE_PROVIDER, model=FAKE_PROVIDER, response=response)
    if status == 503:
        return ServiceUnavailableError(message, llm_provider=FAKE_PROVIDER, model=FAKE_PROVIDER, response=response)
    error = APIError(status_code=status, message=message, llm_provider=FAKE_PROVIDER, model=FAKE_PROVIDER)
    error.response = response
    return error


def fake_timeout(message: str = "request timed out (fake)") -> Exception:
    """The ``litellm.Timeout`` a provider call raises when it takes too long; retried by the client."""
    _load_litellm()
    from litellm.exceptions import Timeout

    return Timeout(message, model=FAKE_PROVIDER, llm_provider=FAKE_PROVIDER)


def fake_connection_error(message: str = "connection refused (fake)") -> Exception:
    """The ``litellm.APIConnectionError`` raised when the provider cannot be reached; retried by the client."""
    _load_litellm()
    from litellm.exceptions import APIConnectionError

    return APIConnectionError(message, llm_provider=FAKE_PROVIDER, model=FAKE_PROVIDER)


def fake_auth_error(message: str = "invalid API key (fake)") -> Exception:
    """The ``litellm.AuthenticationError`` (401) for a bad or missing key; never retried."""
    _load_litellm()
    from litellm.exceptions import AuthenticationError

    return AuthenticationError(message, llm_provider=FAKE_PROVIDER, model=FAKE_PROVIDER)


def fake_not_found(message: str = "model not found (fake)") -> Exception:
    """The ``litellm.NotFoundError`` (404) for an unknown model; never retried."""
    _load_litellm()
    from litellm.exceptions import NotFoundError

    return NotFoundError(message, model=FAKE_PROVIDER, llm_provider=FAKE_PROVIDER)


def fake_bad_request(message: str = "invalid request (fake)") -> Exception:
    """The ``litellm.BadRequestError`` (400) for a request the provider refuses; never retried."""
    _load_litellm()
    from litellm.exceptions import BadRequestError

    return BadRequestError(message, model=FAKE_PROVIDER, llm_provider=FAKE_PROVIDER)
