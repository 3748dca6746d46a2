"""LangSmith tracing: off for the engine's own graph, the user's own settings for a LangGraph agent under test.

With ``LANGSMITH_TRACING=true`` (or ``LANGCHAIN_TRACING_V2``, ``langsmith.configure(enabled=True)``, an
enclosing ``@traceable`` or ``tracing_v2_enabled()``), langchain_core attaches a tracer to every runnable, the
engine's graph included, and its runs (the whole conversation, secrets the store redacts) would go to LangSmith.
:func:`engine_untraced` turns that off for the block it wraps, through langsmith's own context switch
(``tracing_context(enabled=False)``, which outranks the environment) and langchain_core's tracer variable; the
environment and everything outside the block are left as they were.

Context variables reach the engine's nodes, and a LangGraph agent under test runs inside them: the agent's
adapter wraps its graph in :func:`users_tracing`, which puts back the tracing that was in force where the engine
was called, so the user's agent is traced exactly as their settings say. Both live here, beside that adapter,
because the engine is the layer above the agents.

langsmith is imported only inside :func:`engine_untraced`, which runs once LangGraph (which imports it) is.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class _Outside:
    """The tracing in force where the engine was called."""

    enabled: Any  # langsmith's answer: True, False or "local"
    tracer: Any  # langchain_core's tracer from ``tracing_v2_enabled()``, if any


_OUTSIDE: ContextVar[_Outside | None] = ContextVar("simulator_tracing_outside_engine", default=None)


@contextmanager
def engine_untraced() -> Iterator[None]:
    """No LangSmith tracing of what runs in the block (the engine's graph), whatever the settings say."""
    from langchain_core.tracers.context import tracing_v2_callback_var
    from langsmith.run_helpers import tracing_context
    from langsmith.utils import tracing_is_enabled

    outside = _Outside(enabled=tracing_is_enabled(), tracer=tracing_v2_callback_var.get())
    outside_token = _OUTSIDE.set(outside)
    tracer_token = tracing_v2_callback_var.set(None)
    try:
        with tracing_context(enabled=False):
            yield
    finally:
        tracing_v2_callback_var.reset(tracer_token)
        _OUTSIDE.reset(outside_token)


@contextmanager
def users_tracing() -> Iterator[None]:
    """The tracing the user's settings give, inside the engine too (for the user's own graph)."""
    outside = _OUTSIDE.get()
    if outside is None:  # not inside the engine: the settings already apply
        yield
        return
    from langchain_core.tracers.context import tracing_v2_callback_var
    from langsmith.run_helpers import tracing_context

    outside_token = _OUTSIDE.set(None)
    tracer_token = tracing_v2_callback_var.set(outside.tracer)
    try:
        with tracing_context(enabled=outside.enabled):
            yield
    finally:
        tracing_v2_callback_var.reset(tracer_token)
        _OUTSIDE.reset(outside_token)
