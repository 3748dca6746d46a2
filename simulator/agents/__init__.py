"""Adapters for the agent under test, registered by the agent config's ``type:`` (:func:`agent_type`)."""

from __future__ import annotations

import importlib
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol, TypeVar

from simulator.agents._base import (
    AgentAdapter,
    AgentInput,
    AgentReply,
    Message,
    event_message,
    turn_timeout,
    wire_messages,
)
from simulator.agents._history import BuiltTurns, conversation_history, turn_messages
from simulator.errors import AgentError
from simulator.models import AgentConfig

if TYPE_CHECKING:
    from simulator.llm import LLMClient

F = TypeVar("F", bound=Callable[..., AgentAdapter])

__all__ = [
    "AgentAdapter",
    "AgentFactory",
    "AgentInput",
    "AgentReply",
    "BuiltTurns",
    "Message",
    "agent_type",
    "agent_types",
    "build_agent",
    "conversation_history",
    "event_message",
    "prepare_agent",
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
#: The modules that register the built-in agent types, imported on first use (not every command needs them).
_BUILTIN_MODULES = (
    "simulator.agents.python_agent",
    "simulator.agents.http_agent",
    "simulator.agents.litellm_agent",
    "simulator.agents.langgraph_agent",
)


def agent_type(name: str) -> Callable[[F], F]:
    """Register the decorated factory as the adapter for agent configs with ``type: name`` (once per name)."""

    def register(factory: F) -> F:
        if name in _AGENT_TYPES:
            raise ValueError(f"an adapter for agent type {name!r} is already registered")
        _AGENT_TYPES[name] = factory
        return factory

    return register


def agent_types() -> dict[str, AgentFactory]:
    """Every registered agent type and its factory."""
    for module in _BUILTIN_MODULES:
        importlib.import_module(module)
    return dict(_AGENT_TYPES)


def build_agent(
    config: AgentConfig, *, llm: LLMClient | None = None, code_folders: Sequence[Path] = ()
) -> AgentAdapter:
    """A fresh adapter for one conversation with the agent ``config`` describes.

    ``code_folders`` (the suite's and the agent file's folders) are where a python agent's ``callable`` or a
    graph's module is looked for first.
    """
    factory = agent_types().get(config.type)
    if factory is None:  # pragma: no cover - the config's discriminator makes this unreachable
        raise AgentError(f"unknown agent type {config.type!r}")
    return factory(config, llm=llm, code_folders=code_folders)


def prepare_agent(config: AgentConfig) -> None:
    """Start loading what ``config``'s adapter will need, without waiting for it: a run calls this before its
    conversations start. An ``http`` agent's HTTP client library is imported in a thread meanwhile, so that the first
    request to the agent does not import it on the event loop (~0.1 s, every conversation waiting)."""
    if config.type == "http":
        from simulator.agents.http_agent import import_client_meanwhile

        import_client_meanwhile()
