"""The request cache: model replies stored by request in one SQLite file, so an unchanged request is never sent
twice (litellm's own response cache is not used: in the installed version a cache hit imports fastapi, and the
disk cache was removed)."""

from __future__ import annotations

import contextvars
import functools
import hashlib
import json
import logging
import math
import re
import sqlite3
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from types import TracebackType
from typing import Any

from pydantic import BaseModel, ValidationError

from simulator._sqlite import connect
from simulator.errors import StoreError
from simulator.llm._types import Completion
from simulator.safety import redact

__all__ = ["RequestCache", "cache_salt", "cache_scope", "request_cache_key"]

# The package's logger, not this module's: what the cache reports is the model client's business to its users.
_log = logging.getLogger("simulator.llm")

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
        return _schema_key(value)
    if isinstance(value, BaseModel):
        return _canonical(value.model_dump(mode="json"))
    if isinstance(value, Mapping):
        if not all(isinstance(key, str) for key in value):
            raise _Uncacheable("a mapping with keys that are not strings")
        return {key: _canonical(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [_canonical(item) for item in value]
    raise _Uncacheable(f"a {type(value).__name__} has no canonical JSON form")


@functools.cache
def _schema_key(schema: type[BaseModel]) -> dict[str, Any]:
    # Once per class: a JSON schema is costly to generate, on every structured request otherwise. The result is
    # only read (serialised into the key), never changed.
    return {"json_schema": _canonical(schema.model_json_schema()), "name": schema.__name__}


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

    Keys come from :func:`request_cache_key`. :class:`~simulator.llm.LLMClient` looks a request up before calling
    the model and stores each successful reply (never an error, never a structured reply that failed
    validation). A hit replays the stored reply: that makes a re-run of an unchanged suite fast, free and
    reproducible, even for
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


def cache_salt() -> str | None:
    """The salt of the innermost :func:`cache_scope` around the current code, if any."""
    return _CACHE_SALT.get()
