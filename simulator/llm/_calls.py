"""A log of the model calls made in a block (one conversation), for tracing: who called which model, when, with
what usage.

The runner opens :func:`logging_calls` around a conversation only when the run is traced (``--trace otlp``); the
model client adds one :class:`ModelCall` per answer it gives (:func:`log_call`). Without a log a call reads one
context variable and does nothing else.
"""

from __future__ import annotations

import contextvars
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass

from simulator.llm._types import Usage

__all__ = ["ModelCall", "log_call", "logging_calls"]


@dataclass(frozen=True)
class ModelCall:
    """One answer a model role got: the role, the model asked, the wall-clock times (ns since the epoch), the
    tokens, and whether it came from the request cache or a recording instead of the model."""

    role: str
    model: str
    started_ns: int
    ended_ns: int
    usage: Usage
    cached: bool
    finish_reason: str | None = None


_LOG: contextvars.ContextVar[list[ModelCall] | None] = contextvars.ContextVar("simulator_model_calls", default=None)


@contextmanager
def logging_calls() -> Iterator[list[ModelCall]]:
    """Log every model call answered in this block (and the tasks and agent threads started from it)."""
    calls: list[ModelCall] = []
    token = _LOG.set(calls)
    try:
        yield calls
    finally:
        _LOG.reset(token)


def log_call(call: ModelCall) -> None:
    """Add ``call`` to the log of the block it was made in, if there is one."""
    calls = _LOG.get()
    if calls is not None:
        calls.append(call)
