"""The ``http`` agent with ``audio:`` in a voice run: an OpenAI-compatible chat-completions endpoint that takes the
user's turn as an ``input_audio`` content part and answers in audio (``modalities: ["text", "audio"]``).

The request is the http agent's own (:class:`~simulator.agents.http_agent.HttpAdapter`: headers, proxy, timeout,
retries, tool rounds, usage): the earlier turns go as text (the user's turns as the user said them, the agent's as
their transcripts), the current turn as audio, and the body asks for audio in the agent's ``audio.voice`` and
``audio.format``. Each reply's ``message.audio`` (base64 WAV, or PCM16 at 24 kHz) is what the user hears, its
``transcript`` what the agent says it said. The reply is not streamed: its audio starts when it arrives and lasts
its length; a barge-in cuts it after ``interrupt_after`` seconds.
"""

from __future__ import annotations

import asyncio
import base64
import binascii
from typing import Any

from simulator.agents import Message, session_text, text_of, wire_messages
from simulator.agents.http_agent import HttpAdapter
from simulator.errors import AgentError
from simulator.llm import RetryPolicy
from simulator.models import AgentAudio, HttpAgent
from simulator.voice._agent import VoiceInput, VoiceReply
from simulator.voice._audio import Audio, AudioError
from simulator.voice._playback import played

#: The sample rate of ``pcm16`` audio in OpenAI's chat-completions API.
PCM16_RATE = 24_000


class ChatAudioAdapter:
    """Talks to one OpenAI-compatible chat endpoint in audio, for one conversation."""

    def __init__(self, config: HttpAgent, *, retry: RetryPolicy | None = None) -> None:
        self.config = config
        self._http = HttpAdapter(config, retry=retry)
        audio = config.audio or AgentAudio()
        self._format = audio.format
        self._extra = {"modalities": ["text", "audio"], "audio": {"voice": audio.voice, "format": audio.format}}

    @property
    def turn_timeout(self) -> float:
        """The http agent's: every request of every tool round with its retries."""
        return self._http.turn_timeout

    async def respond_audio(self, request: VoiceInput) -> VoiceReply:
        """Post the conversation with the user's audio; answer tool calls; the audio of the replies as heard."""
        turn = request.turn
        messages = [
            *([{"role": "system", "content": session_text(turn.session)}] if turn.session else []),
            *_with_audio(turn.messages, request.audio),
        ]
        loop = asyncio.get_running_loop()
        started = loop.time()
        exchange = await self._http.exchange(turn, messages, extra=self._extra, content=_said)
        pieces: list[tuple[float, Audio]] = []
        said: list[str] = []
        for message, arrived in zip(exchange.replies, exchange.arrived, strict=True):
            audio = message.get("audio")
            if isinstance(audio, dict):
                pieces.append((arrived - started, self._decoded(audio)))
                transcript = audio.get("transcript")
                if isinstance(transcript, str) and transcript:
                    said.append(transcript)
            elif text_of(message.get("content")) and not message.get("tool_calls"):
                raise AgentError(
                    f"the HTTP agent at {self._http.url} answered in text but not in audio, though asked for audio "
                    "(modalities text and audio): is it a voice model? (leave out the agent's `audio` to talk to it "
                    "in text)"
                )
        heard = played(pieces, request.interrupt_after)
        return VoiceReply(
            audio=heard.audio,
            first_audio=heard.first,
            end_audio=heard.end,
            said=said,
            interrupted=heard.interrupted,
            tool_rounds=exchange.rounds or None,
            usage=exchange.usage,
        )

    async def aclose(self) -> None:
        """Close the HTTP session."""
        await self._http.aclose()

    def _decoded(self, audio: dict[str, Any]) -> Audio:
        data = audio.get("data")
        try:
            raw = base64.b64decode(data if isinstance(data, str) else "", validate=True)
            return Audio.from_wav(raw) if self._format == "wav" else Audio(raw, PCM16_RATE)
        except (binascii.Error, AudioError) as exc:
            raise AgentError(
                f"the HTTP agent at {self._http.url} sent audio that cannot be read as base64 {self._format}: {exc}"
            ) from None


def _with_audio(history: list[Message], audio: Audio) -> list[Message]:
    """The history as the endpoint takes it, the current user turn as audio: the last message when it is the user's
    words (an event stays text, its audio, if any, follows it)."""
    messages = wire_messages(history)
    part = {"type": "input_audio", "input_audio": {"data": base64.b64encode(audio.wav()).decode(), "format": "wav"}}
    spoken = bool(history) and history[-1].get("role") == "user" and "event" not in history[-1]
    if spoken:
        messages[-1] = {"role": "user", "content": [part]}
    elif audio.samples:
        messages.append({"role": "user", "content": [part]})
    return messages


def _said(message: dict[str, Any]) -> Any:
    """What a reply said, for the history of the next request: its text, else its audio's transcript."""
    content = message.get("content")
    if text_of(content):
        return content
    audio = message.get("audio")
    transcript = audio.get("transcript") if isinstance(audio, dict) else None
    return transcript if isinstance(transcript, str) and transcript else content
