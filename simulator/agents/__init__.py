"""Adapters for the agent under test, registered by the agent config's ``type:`` (:func:`agent_type`)."""

from __future__ import annotations

import importlib
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol, TypeVar, cast

from simulator.agents._base import (
    AgentAdapter,
    AgentInput,
    AgentReply,
    Message,
    event_message,
    free_agent_threads,
    in_agent_thread,
    turn_timeout,
    wire_messages,
)
from simulator.agents._chat import MAX_TOOL_ROUNDS, answer_tool_call, session_text, text_of, tool_round
from simulator.agents._code import AgentCode, agent_code, import_ref
from simulator.agents._history import BuiltTurns, conversation_history, copied, turn_messages
from simulator.agents._tracing import engine_untraced
from simulator.errors import AgentError
from simulator.models import AgentConfig
from simulator.plugins import PluginError, load_plugin, plugins

if TYPE_CHECKING:
    from simulator.llm import LLMClient

F = TypeVar("F", bound=Callable[..., AgentAdapter])

__all__ = [
    "MAX_TOOL_ROUNDS",
    "AgentAdapter",
    "AgentCode",
    "AgentFactory",
    "AgentInput",
    "AgentReply",
    "BuiltTurns",
    "Message",
    "agent_code",
    "agent_factory",
    "agent_type",
    "agent_types",
    "answer_tool_call",
    "build_agent",
    "conversation_history",
    "copied",
    "engine_untraced",
    "event_message",
    "free_agent_threads",
    "import_ref",
    "in_agent_thread",
    "prepare_agent",
    "session_text",
    "text_of",
    "tool_round",
    "turn_messages",
    "turn_timeout",
    "wire_messages",
]


class AgentFactory(Protocol):
    """Makes one conversation's adapter from its config (each adapter module registers one per ``type:``)."""

    def __call__(
        self, config: Any, /, *, llm: LLMClient | None, code_folders: Sequence[Path]
    ) -> AgentAdapter:  # pragma: no cover - a protocol
        """A fresh adapter for ``config``."""
        ...


_AGENT_TYPES: dict[str, AgentFactory] = {}
_PREPARE: dict[str, Callable[[], None]] = {}
#: The module that registers each built-in agent type, imported when that type is first used.
_BUILTIN_MODULES = {
    "python": "simulator.agents.python_agent",
    "http": "simulator.agents.http_agent",
    "litellm": "simulator.agents.litellm_agent",
    "langgraph": "simulator.agents.langgraph_agent",
    "realtime": "simulator.agents.realtime_agent",
}


def agent_type(name: str, *, prepare: Callable[[], None] | None = None) -> Callable[[F], F]:
    """Register the decorated factory as the adapter for agent configs with ``type: name`` (once per name);
    ``prepare`` starts, without waiting, what the adapter will need (called once before a run's conversations)."""

    def register(factory: F) -> F:
        if name in _AGENT_TYPES:
            raise ValueError(f"an adapter for agent type {name!r} is already registered")
        _AGENT_TYPES[name] = factory
        if prepare is not None:
            _PREPARE[name] = prepare
        return factory

    return register


def agent_types() -> dict[str, AgentFactory]:
    """Every built-in agent type and its factory (an installed plugin's: :func:`agent_factory`)."""
    for module in _BUILTIN_MODULES.values():
        importlib.import_module(module)
    return dict(_AGENT_TYPES)


def agent_factory(name: str) -> AgentFactory:
    """The factory of agent type ``name``: built in, else the installed plugin of that name (imported now)."""
    module = _BUILTIN_MODULES.get(name)
    if module is not None:
        importlib.import_module(module)
        return _AGENT_TYPES[name]
    if name not in plugins("agents"):
        known = ", ".join([*_BUILTIN_MODULES, *plugins("agents")])
        raise AgentError(f"unknown agent type {name!r}: the types here are {known} (is its plugin installed?)")
    factory = load_plugin("agents", name)
    if not callable(factory):
        raise PluginError(
            f"the agent plugin {plugins('agents')[name].describe()} is not a factory: it must be a callable "
            "taking (config, *, llm, code_folders) and returning an adapter"
        )
    return cast(AgentFactory, factory)


def build_agent(
    config: AgentConfig, *, llm: LLMClient | None = None, code_folders: Sequence[Path] = ()
) -> AgentAdapter:
    """A fresh adapter for one conversation with the agent ``config`` describes.

    ``code_folders`` (the suite's and the agent file's folders) are where a python agent's ``callable`` or a
    graph's module is looked for first.
    """
    return agent_factory(config.type)(config, llm=llm, code_folders=code_folders)


def prepare_agent(config: AgentConfig) -> None:
    """Start loading what ``config``'s adapter will need, without waiting for it: a run calls this before its
    conversations start (an ``http`` agent imports its HTTP client library in a thread meanwhile, so that the first
    request to the agent does not import it on the event loop, every conversation waiting)."""
    agent_factory(config.type)
    prepare = _PREPARE.get(config.type)
    if prepare is not None:
        prepare()
