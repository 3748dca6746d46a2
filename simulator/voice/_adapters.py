"""Which voice adapter talks to an agent config in a voice run (:func:`voice_agent_adapter`)."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from simulator.errors import AgentError
from simulator.models import AgentConfig
from simulator.voice._agent import VoiceAgentAdapter
from simulator.voice._chat_audio import ChatAudioAdapter
from simulator.voice._realtime import RealtimeAdapter

if TYPE_CHECKING:
    from simulator.llm import LLMClient


def _chat_audio(config: Any, llm: LLMClient | None) -> VoiceAgentAdapter:
    # The same waits between retries as the model roles, as the text http agent.
    return ChatAudioAdapter(config, retry=llm.retry_policy if llm is not None else None)


def _realtime(config: Any, llm: LLMClient | None) -> VoiceAgentAdapter:
    return RealtimeAdapter(config)


#: The voice adapter of each agent type that can speak audio itself (its config's ``speaks_audio``).
VOICE_ADAPTERS: dict[str, Callable[[Any, LLMClient | None], VoiceAgentAdapter]] = {
    "http": _chat_audio,
    "realtime": _realtime,
}


def voice_agent_adapter(config: AgentConfig, *, llm: LLMClient | None = None) -> VoiceAgentAdapter | None:
    """A fresh voice adapter for one conversation with ``config``'s agent, when the agent takes audio and answers in
    audio itself (an ``http`` agent with ``audio:``, a ``realtime`` agent); None for an agent that talks text (the
    voice run speaks for it). ``llm`` gives an http agent the model roles' waits between retries."""
    if not config.speaks_audio:
        return None
    make = VOICE_ADAPTERS.get(config.type)
    if make is None:
        raise AgentError(f"the agent type {config.type!r} says it speaks audio, but no voice adapter talks to it")
    return make(config, llm)
