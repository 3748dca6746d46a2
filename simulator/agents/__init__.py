"""Adapters for the agent under test, chosen by the agent config's ``type:``."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from simulator.agents._base import AgentAdapter, AgentInput, AgentReply, Message, event_message, wire_messages
from simulator.errors import AgentError
from simulator.models import AgentConfig

if TYPE_CHECKING:
    from simulator.llm import LLMClient

__all__ = [
    "AgentAdapter",
    "AgentInput",
    "AgentReply",
    "Message",
    "build_agent",
    "event_message",
    "wire_messages",
]


def build_agent(config: AgentConfig, *, llm: LLMClient | None = None) -> AgentAdapter:
    """A fresh adapter for one conversation with the agent ``config`` describes."""
    adapter: Any
    if config.type == "python":
        from simulator.agents.python_agent import PythonAdapter

        adapter = PythonAdapter(config)
    elif config.type == "http":
        from simulator.agents.http_agent import HttpAdapter

        adapter = HttpAdapter(config)
    elif config.type == "litellm":
        if llm is None:
            raise AgentError("a litellm agent needs the model client: pass llm= to build_agent")
        from simulator.agents.litellm_agent import LitellmAdapter

        adapter = LitellmAdapter(config, llm)
    elif config.type == "langgraph":
        from simulator.agents.langgraph_agent import LanggraphAdapter

        adapter = LanggraphAdapter(config)
    else:  # pragma: no cover - the config's discriminator makes this unreachable
        raise AgentError(f"unknown agent type {config.type!r}")
    return adapter  # type: ignore[no-any-return]
