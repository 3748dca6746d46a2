"""The ``python`` adapter: an agent written as a Python function or class, sync or async.

The callable gets the messages (OpenAI chat format) and, if its signature asks for them by name, the
keyword arguments ``session`` (session parameters), ``tools`` (a :class:`~simulator.tools.ToolHandle`),
``event``, ``turn`` and ``options`` (from the agent config). A class is instantiated once per conversation
(with ``options`` as keyword arguments), so it may keep state; its instances must be callable or have a
``respond`` method. Sync code runs in a worker thread, so it can call ``tools.call(...)`` directly.
"""

from __future__ import annotations

import asyncio
import importlib
import inspect
import os
import sys
from collections.abc import Callable
from typing import Any

from simulator.agents._base import AgentInput, AgentReply, normalize_reply
from simulator.errors import AgentError
from simulator.models import PythonAgent

_OPTIONAL = ("session", "tools", "event", "turn", "options")


def import_ref(ref: str, *, what: str) -> Any:
    """Import ``module:attribute``; the working folder is importable, as it is for ``python -m``."""
    module_name, _, attribute = ref.partition(":")
    cwd = os.getcwd()
    if cwd not in sys.path:
        sys.path.insert(0, cwd)
    try:
        target: Any = importlib.import_module(module_name)
    except Exception as exc:
        raise AgentError(
            f"cannot import {what} {ref!r}: {type(exc).__name__}: {exc}. Check the module path in the agent "
            "config and that the module is importable from the folder you run simulator in"
        ) from exc
    for part in attribute.split("."):
        try:
            target = getattr(target, part)
        except AttributeError:
            raise AgentError(f"cannot import {what} {ref!r}: module {module_name!r} has no {part!r}") from None
    return target


class PythonAdapter:
    """Calls a Python agent in-process."""

    def __init__(self, config: PythonAgent) -> None:
        self.config = config
        target = import_ref(config.callable, what="agent")
        #: A class instance may remember earlier turns, so its conversation cannot be resumed half-way.
        self.stateful = inspect.isclass(target)
        if inspect.isclass(target):
            try:
                target = target(**config.options)
            except Exception as exc:
                raise AgentError(f"could not create agent {config.callable!r}: {type(exc).__name__}: {exc}") from exc
            target = getattr(target, "respond", target)
        if not callable(target):
            raise AgentError(f"agent {config.callable!r} is not callable")
        self._function: Callable[..., Any] = target
        self._accepts = _accepted_keywords(target)
        self._is_async = inspect.iscoroutinefunction(target) or (
            not inspect.isroutine(target) and inspect.iscoroutinefunction(type(target).__call__)
        )

    async def respond(self, request: AgentInput) -> AgentReply:
        """Call the agent with the messages and the keyword arguments it asks for."""
        available = {
            "session": request.session,
            "tools": request.tools,
            "event": request.event,
            "turn": request.turn,
            "options": self.config.options,
        }
        kwargs = {name: available[name] for name in _OPTIONAL if name in self._accepts}
        messages = [dict(message) for message in request.messages]
        if self._is_async:
            result = await self._function(messages, **kwargs)
        else:
            result = await asyncio.to_thread(self._function, messages, **kwargs)
        try:
            return normalize_reply(result)
        except TypeError as exc:
            raise AgentError(f"agent {self.config.callable!r} returned something unusable: {exc}") from None

    async def aclose(self) -> None:
        """Nothing to release for in-process agents."""


def _accepted_keywords(function: Callable[..., Any]) -> set[str]:
    try:
        parameters = inspect.signature(function).parameters.values()
    except (TypeError, ValueError):
        return set()
    if any(p.kind is inspect.Parameter.VAR_KEYWORD for p in parameters):
        return set(_OPTIONAL)
    return {p.name for p in parameters if p.name in _OPTIONAL}
