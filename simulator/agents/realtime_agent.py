"""The ``realtime`` agent type among the text adapters: a realtime agent takes audio only, so a chat run cannot talk
to it. Its voice adapter is :mod:`simulator.voice`'s; this one says so on the first turn of a chat run."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from simulator.agents import agent_type
from simulator.agents._base import AgentInput, AgentReply
from simulator.errors import AgentError
from simulator.models import RealtimeAgent

if TYPE_CHECKING:
    from simulator.llm import LLMClient


@agent_type("realtime")
def _realtime(
    config: RealtimeAgent, *, llm: LLMClient | None = None, code_folders: Sequence[Path] = ()
) -> AudioOnlyAdapter:
    return AudioOnlyAdapter(config)


class AudioOnlyAdapter:
    """Stands for an agent that takes audio only in a run that talks text: every turn is an error naming the fix."""

    def __init__(self, config: RealtimeAgent) -> None:
        self.config = config

    async def respond(self, request: AgentInput) -> AgentReply:
        """Never answers: the agent needs a voice run."""
        raise AgentError(
            f"the realtime agent at {self.config.url} takes audio only: run it in voice (set `modality: voice` on "
            "the suite or case)"
        )

    async def aclose(self) -> None:
        """Nothing to release."""
