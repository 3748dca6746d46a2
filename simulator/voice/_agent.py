"""What a voice agent is given and gives back each turn, and the protocol its adapters implement."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Protocol

from pydantic import JsonValue

from simulator.agents import AgentInput
from simulator.models.transcript import ReportedUsage, ToolRound
from simulator.voice._audio import Audio


@dataclass
class VoiceInput:
    """One user turn, spoken."""

    #: The user's utterance (silence for a silent turn).
    audio: Audio
    #: The same turn as text (history with earlier transcripts, session, tools, event).
    turn: AgentInput
    #: Barge-in: stop taking the agent's audio after this many seconds of it.
    interrupt_after: float | None = None


@dataclass
class VoiceReply:
    """The agent's answer to one spoken turn."""

    #: The agent's audio as the user heard it (cut at a barge-in).
    audio: Audio
    #: Seconds from the end of the user's audio to the agent's first audio.
    first_audio: float | None = None
    #: Seconds from the end of the user's audio to the end of the agent's audio.
    end_audio: float | None = None
    #: The agent's own transcript of its audio, when it reports one.
    said: list[str] = field(default_factory=list)
    interrupted: bool = False
    handoff: str | None = None
    variables: dict[str, JsonValue] = field(default_factory=dict)
    tool_rounds: list[ToolRound] | None = None
    usage: ReportedUsage | None = None


class VoiceAgentAdapter(Protocol):
    """One conversation's connection to a voice agent."""

    async def respond_audio(self, request: VoiceInput) -> VoiceReply:
        """The agent's spoken reply to the user's spoken turn."""
        ...

    async def aclose(self) -> None:
        """Release what the adapter holds."""
        ...
