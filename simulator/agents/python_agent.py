"""The ``python`` adapter: an agent written as a Python function or class, sync or async.

The callable gets the messages (OpenAI chat format) and, if its signature asks for them by name, the
keyword arguments ``session`` (session parameters), ``tools`` (a :class:`~simulator.tools.ToolHandle`),
``event``, ``turn`` and ``options`` (from the agent config). A class is instantiated once per conversation
(with ``options`` as keyword arguments), so it may keep state; its instances must be callable or have a
``respond`` method. Sync code runs in a worker thread, so it can call ``tools.call(...)`` directly; the thread
is a daemon, so code that blocks past the agent's ``timeout`` ends its turn as ``error`` and cannot keep the
run (or the process) from ending.

The module is looked for beside the suite file and the agent file first, then in the working folder and the
installed packages (:mod:`simulator.code_refs`).
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from simulator.agents import agent_type
from simulator.agents._base import AgentInput, AgentReply, in_agent_thread, normalize_reply
from simulator.agents._history import copied
from simulator.code_refs import CodeRefError, resolve
from simulator.errors import AgentError
from simulator.models import PythonAgent

_OPTIONAL = ("session", "tools", "event", "turn", "options")

if TYPE_CHECKING:
    from simulator.llm import LLMClient


def import_ref(ref: str, *, what: str, folders: Sequence[Path] = ()) -> Any:
    """Import ``module:attribute``, from ``folders`` first (the suite's and the agent file's), then from the
    working folder (as for ``python -m``) and the installed packages; an AgentError says why it cannot."""
    try:
        return resolve(ref, what=what, folders=folders)
    except CodeRefError as exc:
        raise AgentError(str(exc)) from None


@agent_type("python")
def _python(config: PythonAgent, *, llm: LLMClient | None = None, code_folders: Sequence[Path] = ()) -> PythonAdapter:
    return PythonAdapter(config, code_folders=code_folders)


class PythonAdapter:
    """Calls a Python agent in-process."""

    def __init__(self, config: PythonAgent, *, code_folders: Sequence[Path] = ()) -> None:
        self.config = config
        target = import_ref(config.callable, what="agent", folders=code_folders)
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
        messages = [copied(message) for message in request.messages]
        if self._is_async:
            result = await self._function(messages, **kwargs)
        else:
            # A daemon thread: if the agent blocks past its timeout, the run still ends and the process exits.
            result = await in_agent_thread(self._function, messages, **kwargs)
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
