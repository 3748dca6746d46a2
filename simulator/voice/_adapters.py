"""Which voice adapter talks to an agent config in a voice run (:func:`voice_agent_adapter`)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from simulator.agents import build_agent
from simulator.errors import AgentError
from simulator.models import AgentConfig
from simulator.voice._agent import PythonVoiceAgent, SpokenTextAgent, VoiceAgentAdapter
from simulator.voice._chat_audio import ChatAudioAdapter
from simulator.voice._protocol import Recognizer, Speaker, Synthesizer
from simulator.voice._realtime import RealtimeAdapter

if TYPE_CHECKING:
    from simulator.llm import LLMClient


def _python(config: Any, llm: LLMClient | None, code_folders: Sequence[Path]) -> VoiceAgentAdapter:
    return PythonVoiceAgent(config, code_folders=code_folders)


def _chat_audio(config: Any, llm: LLMClient | None, code_folders: Sequence[Path]) -> VoiceAgentAdapter:
    # The same waits between retries as the model roles, as the text http agent.
    return ChatAudioAdapter(config, retry=llm.retry_policy if llm is not None else None)


def _realtime(config: Any, llm: LLMClient | None, code_folders: Sequence[Path]) -> VoiceAgentAdapter:
    return RealtimeAdapter(config)


#: The voice adapter of each agent type that can speak audio itself (its config's ``speaks_audio``).
VOICE_ADAPTERS: dict[str, Callable[[Any, LLMClient | None, Sequence[Path]], VoiceAgentAdapter]] = {
    "python": _python,
    "http": _chat_audio,
    "realtime": _realtime,
}


def voice_agent_adapter(
    config: AgentConfig, *, llm: LLMClient | None = None, code_folders: Sequence[Path] = ()
) -> VoiceAgentAdapter | None:
    """A fresh voice adapter for one conversation with ``config``'s agent, when the agent takes audio and answers in
    audio itself (a ``python`` agent with ``audio: true``, an ``http`` agent with ``audio:``, a ``realtime``
    agent); None for an agent that talks text (the voice run speaks for it). ``llm`` gives an http agent the model
    roles' waits between retries; ``code_folders`` are where a python agent's module is looked for."""
    if not config.speaks_audio:
        return None
    make = VOICE_ADAPTERS.get(config.type)
    if make is None:
        raise AgentError(f"the agent type {config.type!r} says it speaks audio, but no voice adapter talks to it")
    return make(config, llm, code_folders)


def build_voice_agent(
    config: AgentConfig,
    *,
    llm: LLMClient | None,
    code_folders: Sequence[Path],
    synthesizer: Synthesizer,
    recognizer: Recognizer,
    speaker: Speaker,
) -> VoiceAgentAdapter:
    """A fresh voice adapter for one conversation with the agent ``config`` describes: an agent that speaks audio
    itself gets its voice adapter (:func:`voice_agent_adapter`), and any other agent is a text agent given
    ``recognizer`` as its ears and ``synthesizer`` as its voice (:class:`SpokenTextAgent`)."""
    spoken = voice_agent_adapter(config, llm=llm, code_folders=code_folders)
    if spoken is not None:
        return spoken
    return SpokenTextAgent(build_agent(config, llm=llm, code_folders=code_folders), recognizer, synthesizer, speaker)
