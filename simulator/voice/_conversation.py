"""A voice conversation as the engine sees it: an ordinary agent adapter whose turns are spoken. The user's text is
synthesized (in the persona's voice, with its seeded noise), the voice agent answers with audio, and what the
recogniser hears of that audio is the reply every check, judge and report reads. Each turn's audio (both sides) is
kept in order, with its place in the conversation's recording."""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Literal

from simulator.agents import AgentInput, AgentReply, Message
from simulator.errors import SimulatorError
from simulator.models import Persona
from simulator.models.transcript import ToolRound
from simulator.models.voice import AgentVoice, UserVoice
from simulator.voice._agent import VoiceAgentAdapter, VoiceInput, VoiceReply
from simulator.voice._audio import DEFAULT_RATE, Audio, join
from simulator.voice._missing import SpeechBackendError
from simulator.voice._protocol import Recognizer, Speaker, Synthesizer


@dataclass(frozen=True)
class TurnAudio:
    """Where one side's audio of one turn lies in the conversation's recording (seconds from its start)."""

    turn: int
    side: Literal["user", "agent"]
    start: float
    end: float


def persona_speaker(persona: Persona | None, language: str) -> Speaker:
    """How ``persona`` speaks (its voice settings and language; ``language`` when there is no persona)."""
    voice = persona.voice if persona is not None else None
    return Speaker(
        language=persona.language if persona is not None else language,
        voice=voice.voice if voice is not None else None,
        rate=voice.rate if voice is not None else 1.0,
        pitch=voice.pitch if voice is not None else 1.0,
    )


class VoiceConversation:
    """The engine's adapter for a voice case: speaks the user's turns to ``agent`` and hears its answers.

    The engine calls :meth:`speak` with each user turn (so the user's event records its audio) and :meth:`take`
    after each reply (so the agent's event records how it was heard); used as a plain adapter, :meth:`respond`
    speaks the latest user message itself.
    """

    def __init__(
        self,
        agent: VoiceAgentAdapter,
        *,
        synthesizer: Synthesizer,
        recognizer: Recognizer,
        speaker: Speaker,
        noise: float = 0.0,
        seed: int = 0,
        min_confidence: float = 0.5,
    ) -> None:
        self.agent = agent
        self.synthesizer = synthesizer
        self.recognizer = recognizer
        self.speaker = speaker
        self.noise = noise
        self.seed = seed
        #: Below this confidence a failure on a turn is unsure (recorded with the transcript, decided at scoring).
        self.min_confidence = min_confidence
        self._parts: list[Audio] = []
        self._offsets: list[TurnAudio] = []
        self._length = 0.0
        self._pending: Audio | None = None
        self._interrupt_after: float | None = None
        self._heard: AgentVoice | None = None

    @property
    def stateful(self) -> bool:
        """As stateful as the voice agent (its conversation cannot be resumed half-way then)."""
        return bool(getattr(self.agent, "stateful", False))

    @property
    def turn_timeout(self) -> float | None:
        """The voice agent's own bound on a turn, where it has one."""
        value = getattr(self.agent, "turn_timeout", None)
        return float(value) if isinstance(value, int | float) and not isinstance(value, bool) else None

    async def speak(
        self, text: str, *, turn: int, silence: float | None = None, interrupt_after: float | None = None
    ) -> UserVoice:
        """Speak the user's turn ``turn`` (``silence``: say nothing for that many seconds) for the next reply,
        which the user interrupts after ``interrupt_after`` seconds of the agent's audio."""
        if silence:
            audio = Audio.silence(silence)
        else:
            try:
                audio = await self.synthesizer.synthesize(text, self.speaker)
            except SimulatorError:
                raise
            except Exception as exc:
                raise SpeechBackendError(
                    f"the speech synthesizer {self.synthesizer.name} failed: {type(exc).__name__}: {exc}"
                ) from exc
            # Each turn its own noise, the same on every run of the conversation.
            audio = audio.with_noise(self.noise, self.seed * 1_000 + turn)
        self._pending = audio
        self._interrupt_after = interrupt_after
        start = self._add(audio, turn, "user")
        return UserVoice(audio_seconds=round(audio.seconds, 3), offset=round(start, 3), silence=silence or None)

    async def respond(self, request: AgentInput) -> AgentReply:
        """The voice agent's reply to the turn, as the recogniser heard it."""
        audio = self._pending
        text = _latest_user_text(request.messages) if audio is None else None
        if text is not None:
            await self.speak(text, turn=request.turn)
            audio = self._pending
        interrupt_after = self._interrupt_after
        self._pending, self._interrupt_after, self._heard = None, None, None
        started = time.monotonic()
        reply = await self.agent.respond_audio(
            VoiceInput(audio=audio or Audio.silence(0), turn=request, interrupt_after=interrupt_after)
        )
        elapsed = time.monotonic() - started
        reply = _cut(reply, interrupt_after)
        try:
            heard = await self.recognizer.transcribe(reply.audio, self.speaker.language)
        except Exception as exc:
            raise SpeechBackendError(
                f"the speech recogniser {self.recognizer.name} failed on the agent's audio: {type(exc).__name__}: {exc}"
            ) from exc
        start = self._add(reply.audio, request.turn, "agent")
        first = reply.first_audio if reply.first_audio is not None else elapsed
        end = reply.end_audio if reply.end_audio is not None else first + reply.audio.seconds
        self._heard = AgentVoice(
            said=list(reply.said),
            confidence=heard.confidence,
            first_audio_ms=round(first * 1000, 1),
            end_audio_ms=round(end * 1000, 1),
            audio_seconds=round(reply.audio.seconds, 3),
            offset=round(start, 3),
            interrupted_after=interrupt_after if reply.interrupted else None,
        )
        text = heard.text.strip()
        return AgentReply(
            messages=[text] if text else [],
            handoff=reply.handoff,
            variables=reply.variables,
            tool_rounds=_without_texts(reply.tool_rounds),
            usage=reply.usage,
        )

    def take(self) -> AgentVoice | None:
        """How the latest reply was heard (once: None after, and when the reply did not come from here)."""
        heard, self._heard = self._heard, None
        return heard

    def recording(self) -> tuple[Audio, list[TurnAudio]]:
        """The conversation's audio so far, both sides in turn order, and where each turn's audio lies in it."""
        return join(self._parts, DEFAULT_RATE), list(self._offsets)

    async def aclose(self) -> None:
        """Close the voice agent."""
        await self.agent.aclose()

    def _add(self, audio: Audio, turn: int, side: Literal["user", "agent"]) -> float:
        start = self._length
        self._parts.append(audio)
        self._length += audio.seconds
        self._offsets.append(TurnAudio(turn, side, round(start, 3), round(self._length, 3)))
        return start


def _latest_user_text(messages: list[Message]) -> str | None:
    """The latest message's text when it is the user's speech (not an event)."""
    if not messages or messages[-1].get("role") != "user" or "event" in messages[-1]:
        return None
    content = messages[-1].get("content")
    return content if isinstance(content, str) else ""


def _cut(reply: VoiceReply, interrupt_after: float | None) -> VoiceReply:
    """The reply as the user heard it: an agent that did not stop at the barge-in is cut there."""
    if interrupt_after is None or reply.audio.seconds <= interrupt_after:
        return reply
    reply.audio = reply.audio.cut(0, interrupt_after)
    reply.interrupted = True
    return reply


def _without_texts(rounds: list[ToolRound] | None) -> list[ToolRound] | None:
    """Tool rounds with no text of their own: the transcript has one heard text per turn, not the agent's messages."""
    if rounds is None:
        return None
    return [ToolRound(calls=r.calls, content="null") if r.content == "text" else r for r in rounds]
