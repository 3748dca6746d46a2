"""Retries: the backoff policy shared by every model role and the agent adapters, ``Retry-After``, the hold-offs
a ``Retry-After`` puts on every call to the same provider (:class:`HoldOffs`), and the kinds of provider failure a
backend sorts its exceptions into (what is retried, and what the error says)."""

from __future__ import annotations

import asyncio
import email.utils
import logging
import math
import random
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from datetime import UTC
from typing import Any, NamedTuple

from simulator.safety import redact, redacted_and_shortened

__all__ = [
    "NOT_HELD_OFF",
    "RETRY_AFTER_CAP",
    "Failure",
    "HoldOff",
    "HoldOffs",
    "RetryPolicy",
    "exception_retry_after",
    "failure_detail",
    "failure_for_status",
    "full_jitter",
    "log_hold_off",
    "retry_after_seconds",
]


def full_jitter(ceiling: float) -> float:
    """A random wait between 0 and ``ceiling`` seconds."""
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

    What is retried is decided by each caller (the model client by :class:`Failure`, the HTTP agent
    by status and transport errors): rate limits (429), server errors (5xx, 408), timeouts and connection
    errors, never a request the server refused for good (401, 403, 404, other 4xx).
    """

    base: float = 1.0
    cap: float = 30.0
    retry_after_cap: float = RETRY_AFTER_CAP
    jitter: Callable[[float], float] = full_jitter
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


class HoldOff(NamedTuple):
    """Whether calls to a provider are held off: the seconds still to wait (0.0: not held off) and the number of the
    hold-off (0 for none), so a call can tell a new hold-off from one it has already waited out."""

    seconds: float
    number: int


#: Calls to a provider that no server asked to wait.
NOT_HELD_OFF = HoldOff(0.0, 0)


class HoldOffs:
    """The waits servers asked for, per provider (a model at an API base): when one call gets a ``Retry-After``,
    every call to that provider waits it out, not only the one that got it (the limit is the provider's, for every
    caller). Times are on this process's monotonic clock; callers are told the seconds left, so a holder in
    another process (the Ray limiter actor) serves workers whose clocks differ. Plain data, no waiting: the
    callers wait, by their own :class:`RetryPolicy`."""

    def __init__(
        self, clock: Callable[[], float] = time.monotonic, on_new: Callable[[str, float], None] | None = None
    ) -> None:
        self._clock = clock
        self._on_new = on_new
        self._until: dict[str, tuple[float, int]] = {}
        self._made = 0

    def hold_off(self, provider: str, seconds: float) -> int:
        """Hold off every call to ``provider`` for ``seconds`` from now, unless a longer hold-off already runs
        (that one stands); the number of the hold-off that stands. The call whose server asked waits by its own
        ``Retry-After`` instead (:meth:`RetryPolicy.delay`): it is not held off by that number."""
        until = self._clock() + max(0.0, seconds)
        current = self._until.get(provider)
        if current is not None and current[0] >= until:
            return current[1]
        self._made += 1
        self._until[provider] = (until, self._made)
        if self._on_new is not None:
            self._on_new(provider, seconds)
        return self._made

    def held_off(self, provider: str) -> HoldOff:
        """How long calls to ``provider`` must still wait."""
        current = self._until.get(provider)
        if current is None:
            return NOT_HELD_OFF
        left = current[0] - self._clock()
        if left <= 0:
            del self._until[provider]
            return NOT_HELD_OFF
        return HoldOff(left, current[1])


_log = logging.getLogger("simulator.llm")


def log_hold_off(provider: str, seconds: float) -> None:
    """Say (a ``logging`` warning, on stderr unless the caller set up logging) that a server asked ``provider``'s
    callers to wait: the run is not stuck, it waits as it was told. The provider's URL is redacted."""
    _log.warning(
        "%s answered with Retry-After: every call to it waits %.1f s (in every conversation of the run)",
        redact(provider), seconds,
    )  # fmt: skip


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


def exception_retry_after(exc: BaseException) -> float | None:
    """The ``Retry-After`` of the response a provider exception came from, if the server sent one.

    litellm keeps the provider's response headers on the exception (``litellm_response_headers``, and on
    ``response.headers`` for status errors); ``headers`` holds ones a litellm proxy attached explicitly. The
    openai backend's status errors keep their reply (``response``), and the fake backend's errors carry theirs
    the same way.
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
class Failure:
    """A provider failure as the client sees it: whether a retry can help, its kind (named in error messages:
    ``rate limited``, ``server error 503``, ``timeout``, ``connection error``, ``malformed reply``,
    ``authentication``, ``not found``, ``bad request 400``), the provider's words, and the wait the server asked for."""

    retry: bool
    kind: str
    detail: str
    retry_after: float | None = None


_DETAIL_LIMIT = 500


def failure_detail(exc: BaseException) -> str:
    """The provider's words for a failure, cut to a length an error message can carry."""
    detail = str(exc).strip() or type(exc).__name__
    return redacted_and_shortened(detail, _DETAIL_LIMIT)


def failure_for_status(status: int, exc: BaseException) -> Failure:
    """The failure an HTTP status from the provider means: 429, 5xx and 408 are retried, other codes are not."""
    detail = failure_detail(exc)
    if status == 429:
        return Failure(retry=True, kind="rate limited", detail=detail, retry_after=exception_retry_after(exc))
    if status >= 500 or status == 408:
        return Failure(retry=True, kind=f"server error {status}", detail=detail, retry_after=exception_retry_after(exc))
    if status in (401, 403):
        return Failure(retry=False, kind="authentication", detail=detail)
    if status == 404:
        return Failure(retry=False, kind="not found", detail=detail)
    return Failure(retry=False, kind=f"bad request {status}", detail=detail)
