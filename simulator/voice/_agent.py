"""The agent side of a voice conversation: what a voice agent is given each turn and what it answers, and the two
voice agents built in here: any text agent given ears and a voice (:class:`SpokenTextAgent`), and a Python
function that hears WAV bytes and answers with them (:class:`PythonVoiceAgent`)."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from pydantic import JsonValue

from simulator.agents import AgentAdapter, AgentInput, Message, agent_code, copied, in_agent_thread
from simulator.errors import AgentError
from simulator.models import EventSpec, PythonAgent
from simulator.models.transcript import ReportedUsage, ToolRound
from simulator.tools import ToolHandle
from simulator.voice._audio import Audio, AudioError
from simulator.voice._protocol import Heard, Recognizer, Speaker, Synthesizer

if TYPE_CHECKING:
    pass


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
    """A voice agent's answer to one turn."""

    #: The agent's audio as the user heard it (cut at a barge-in).
    audio: Audio
    #: Seconds from the end of the user's audio to the agent's first audio (None: not measured by the agent).
    first_audio: float | None = None
    #: ... to the end of the agent's audio (its duration added when not streamed).
    end_audio: float | None = None
    #: The agent's own transcript of its audio, when it reports one.
    said: list[str] = field(default_factory=list)
    interrupted: bool = False
    handoff: str | None = None
    variables: dict[str, JsonValue] = field(default_factory=dict)
    tool_rounds: list[ToolRound] | None = None
    usage: ReportedUsage | None = None
    #: What Simulator's own recogniser heard of the user's audio for an agent that talks text
    #: (:class:`SpokenTextAgent`): a mistake there is the harness's, not the agent's. None for an agent that hears
    #: for itself (its recognition is part of what is tested).
    user_heard: Heard | None = None


class VoiceAgentAdapter(Protocol):
    """One conversation's connection to a voice agent under test. Made fresh for every conversation."""

    async def respond_audio(self, request: VoiceInput) -> VoiceReply:
        """The agent's spoken reply to the user's spoken turn."""
        ...

    async def aclose(self) -> None:
        """Release what the adapter holds."""
        ...


class SpokenTextAgent:
    """A text agent as a voice agent: it hears the user's audio with ``recognizer`` (the agent's ears), answers
    with ``text_adapter`` and speaks its reply with ``synthesizer``. Every text agent type runs in voice modality
    so, and the example voice agent has this shape."""

    def __init__(
        self, text_adapter: AgentAdapter, recognizer: Recognizer, synthesizer: Synthesizer, speaker: Speaker
    ) -> None:
        self.text_adapter = text_adapter
        self.recognizer = recognizer
        self.synthesizer = synthesizer
        self.speaker = speaker
        #: What it heard of each of the user's spoken messages, in order: its history shows these, not what the
        #: user meant to say.
        self._heard: list[str] = []

    @property
    def stateful(self) -> bool:
        """As stateful as the text agent it speaks for (a Python class keeps state)."""
        return bool(getattr(self.text_adapter, "stateful", False))

    async def respond_audio(self, request: VoiceInput) -> VoiceReply:
        """Hear the user, answer as text, speak the answer."""
        turn = request.turn
        messages = turn.messages
        heard: Heard | None = None
        if _spoken_last(messages):
            heard = await self.recognizer.transcribe(request.audio, self.speaker.language)
            self._heard.append(heard.text)
            messages = _with_heard(messages, self._heard)
        reply = await self.text_adapter.respond(
            AgentInput(
                messages=messages,
                session=turn.session,
                tools=turn.tools,
                event=turn.event,
                case=turn.case,
                turn=turn.turn,
            )
        )
        text = " ".join(message.strip() for message in reply.messages if message.strip())
        audio = await self.synthesizer.synthesize(text, self.speaker) if text else Audio.silence(0)
        return VoiceReply(
            audio=audio,
            said=list(reply.messages),
            handoff=reply.handoff,
            variables=reply.variables,
            tool_rounds=reply.tool_rounds,
            usage=reply.usage,
            user_heard=heard,
        )

    async def aclose(self) -> None:
        """Close the text agent."""
        await self.text_adapter.aclose()


def _spoken_last(messages: Sequence[Message]) -> bool:
    """Whether the latest message is the user's speech (not an event, not the agent's greeting turn)."""
    return bool(messages) and messages[-1].get("role") == "user" and "event" not in messages[-1]


def _with_heard(messages: Sequence[Message], heard: Sequence[str]) -> list[Message]:
    """``messages`` with the user's spoken ones (in order) replaced by what was heard of them."""
    spoken = [
        index for index, message in enumerate(messages) if message.get("role") == "user" and "event" not in message
    ]
    out = list(messages)
    # The latest ones line up with what was heard: earlier turns of a resumed conversation were not heard here.
    for index, text in zip(reversed(spoken), reversed(heard), strict=False):
        out[index] = {**messages[index], "content": text}
    return out


@dataclass
class VoiceContext:
    """What a Python voice agent is given beside the user's audio."""

    #: The conversation so far as text (the user's turns as meant, the agent's as heard), OpenAI chat format.
    history: list[Message]
    session: dict[str, JsonValue]
    tools: ToolHandle
    turn: int
    event: EventSpec | None = None
    options: Mapping[str, JsonValue] = field(default_factory=dict)
    #: Barge-in: the user stops listening after this many seconds of the agent's audio.
    interrupt_after: float | None = None


class PythonVoiceAgent:
    """A ``type: python`` agent with ``audio: true``: ``function(wav_bytes, context)`` (sync or async) returns WAV
    bytes, ``(wav, text)``, or a mapping with ``audio`` and optionally ``text``, ``handoff``, ``variables``."""

    def __init__(self, config: PythonAgent, *, code_folders: Sequence[Path] = ()) -> None:
        self.config = config
        code = agent_code(config, code_folders=code_folders, what="voice agent")
        #: A class instance may remember earlier turns, so its conversation cannot be resumed half-way.
        self.stateful = code.stateful
        self._function: Callable[..., Any] = code.function
        self._is_async = code.is_async

    async def respond_audio(self, request: VoiceInput) -> VoiceReply:
        """Call the function with the user's WAV bytes and the context."""
        turn = request.turn
        context = VoiceContext(
            history=[copied(message) for message in turn.messages],
            session=turn.session,
            tools=turn.tools,
            turn=turn.turn,
            event=turn.event,
            options=self.config.options,
            interrupt_after=request.interrupt_after,
        )
        wav = request.audio.wav()
        if self._is_async:
            result = await self._function(wav, context)
        else:
            # A daemon thread, as for a text agent: one that blocks past its timeout cannot keep the run alive.
            result = await in_agent_thread(self._function, wav, context)
        try:
            return voice_reply(result)
        except (TypeError, AudioError) as exc:
            raise AgentError(f"voice agent {self.config.callable!r} returned something unusable: {exc}") from None

    async def aclose(self) -> None:
        """Nothing to release for in-process agents."""


def voice_reply(value: Any) -> VoiceReply:
    """What a Python voice agent returns, as a :class:`VoiceReply` (a TypeError or AudioError says what is wrong)."""
    if isinstance(value, VoiceReply):
        return value
    if isinstance(value, bytes | bytearray):
        return VoiceReply(audio=Audio.from_wav(bytes(value)))
    if isinstance(value, tuple) and len(value) == 2:
        wav, text = value
        return voice_reply({"audio": wav, "text": text})
    if isinstance(value, Mapping):
        unknown = set(value) - {"audio", "text", "handoff", "variables"}
        if unknown:
            raise TypeError(f"unknown keys in the reply: {', '.join(sorted(map(str, unknown)))}")
        wav = value.get("audio")
        if not isinstance(wav, bytes | bytearray):
            raise TypeError("`audio` must be WAV bytes")
        text = value.get("text")
        if text is not None and not isinstance(text, str):
            raise TypeError("`text` must be text")
        handoff = value.get("handoff")
        if handoff is not None and not isinstance(handoff, str):
            raise TypeError("`handoff` must be text: 'human' or the name of an agent")
        variables = value.get("variables") or {}
        if not isinstance(variables, dict):
            raise TypeError("`variables` must be a mapping")
        return VoiceReply(
            audio=Audio.from_wav(bytes(wav)), said=[text] if text else [], handoff=handoff, variables=variables
        )
    raise TypeError(
        f"a voice agent returns WAV bytes, (wav, text), or a mapping with `audio`; got {type(value).__name__}"
    )
