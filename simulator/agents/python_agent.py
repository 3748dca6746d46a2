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
from simulator.agents._code import agent_code
from simulator.agents._history import copied
from simulator.errors import AgentError
from simulator.models import PythonAgent

_OPTIONAL = ("session", "tools", "event", "turn", "options")

if TYPE_CHECKING:
    from simulator.llm import LLMClient


@agent_type("python")
def _python(config: PythonAgent, *, llm: LLMClient | None = None, code_folders: Sequence[Path] = ()) -> PythonAdapter:
    return PythonAdapter(config, code_folders=code_folders)


class PythonAdapter:
    """Calls a Python agent in-process."""

    def __init__(self, config: PythonAgent, *, code_folders: Sequence[Path] = ()) -> None:
        self.config = config
        code = agent_code(config, code_folders=code_folders, what="agent")
        #: A class instance may remember earlier turns, so its conversation cannot be resumed half-way.
        self.stateful = code.stateful
        self._function: Callable[..., Any] = code.function
        self._accepts = _accepted_keywords(code.function)
        self._is_async = code.is_async

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
