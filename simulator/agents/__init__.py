"""Adapters for the agent under test, chosen by the agent config's ``type:``."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from simulator.agents._base import (
    AgentAdapter,
    AgentInput,
    AgentReply,
    Message,
    event_message,
    turn_timeout,
    wire_messages,
)
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
    "turn_timeout",
    "wire_messages",
]


def build_agent(
    config: AgentConfig, *, llm: LLMClient | None = None, code_folders: Sequence[Path] = ()
) -> AgentAdapter:
    """A fresh adapter for one conversation with the agent ``config`` describes.

    ``code_folders`` (the suite's and the agent file's folders) are where a python agent's ``callable`` or a
    graph's module is looked for first.
    """
    adapter: Any
    if config.type == "python":
        from simulator.agents.python_agent import PythonAdapter

        adapter = PythonAdapter(config, code_folders=code_folders)
    elif config.type == "http":
        from simulator.agents.http_agent import HttpAdapter

        # The same waits between retries as the model roles (a test's client may make them instant).
        adapter = HttpAdapter(config, retry=llm.retry_policy if llm is not None else None)
    elif config.type == "litellm":
        if llm is None:
            raise AgentError("a litellm agent needs the model client: pass llm= to build_agent")
        from simulator.agents.litellm_agent import LitellmAdapter

        adapter = LitellmAdapter(config, llm)
    elif config.type == "langgraph":
        from simulator.agents.langgraph_agent import LanggraphAdapter

        adapter = LanggraphAdapter(config, code_folders=code_folders)
    else:  # pragma: no cover - the config's discriminator makes this unreachable
        raise AgentError(f"unknown agent type {config.type!r}")
    return adapter  # type: ignore[no-any-return]
