"""Voice settings a person writes (a suite's or case's modality, a persona's voice, a suite's recognition bar) and
what a voice conversation records beside its text (each turn's audio, timing and how sure the recogniser was)."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from simulator.models._base import DataModel, StrictModel

#: How a case talks to the agent: ``chat`` (text, the default) or ``voice`` (the user's turns are spoken, the agent's
#: audio is transcribed, and the transcript is what every check reads).
Modality = Literal["chat", "voice"]

#: Seconds a barge-in or a silence may last at most.
_LONGEST = 600.0


class PersonaVoice(StrictModel):
    """How the persona sounds in a voice case, and how it behaves on the line (barge-in, silence)."""

    voice: str | None = Field(
        default=None, description="The speech backend's voice name; unset: its default voice for the language."
    )
    rate: float = Field(default=1.0, ge=0.25, le=4.0, description="Speaking rate as a factor of normal (1.0).")
    pitch: float = Field(default=1.0, ge=0.25, le=4.0, description="Pitch as a factor of normal (1.0).")
    noise: float = Field(
        default=0.0,
        ge=0.0,
        le=1.0,
        description="White noise added to the persona's speech, as a share of full scale (0 to 1), seeded by the "
        "conversation's seed: the same noise on every run.",
    )
    barge_in_after: float | None = Field(
        default=None,
        gt=0,
        le=_LONGEST,
        description="The persona interrupts the agent after this many seconds of its audio, every turn; the "
        "transcript holds what the agent said until then.",
    )
    silence: float | None = Field(
        default=None,
        ge=0,
        le=_LONGEST,
        description="The persona says nothing: each of its turns is this many seconds of silence (a silent "
        "caller); a step's `silence: 0` makes it speak in that step.",
    )


class SuiteVoice(StrictModel):
    """How a suite's voice cases are heard."""

    min_confidence: float = Field(
        default=0.5,
        ge=0.0,
        le=1.0,
        description="A failing check or judge verdict on an agent turn the recogniser heard with less confidence "
        "than this is `unsure` (a bad transcript is never the agent's fail).",
    )
    backend: Literal["fake"] | None = Field(
        default=None,
        description="fake: the lossless test backends for speech and recognition (no model); unset: the "
        "`voice` and `transcriber` model roles, else the offline default.",
        exclude_if=lambda backend: backend is None,
    )


# -- what a voice conversation records ------------------------------------------------------------------------


def _unset(value: object) -> bool:
    return value is None


class UserVoice(DataModel):
    """A user turn as it was spoken: its audio's length and place in the conversation's recording."""

    audio_seconds: float = 0.0
    offset: float = Field(default=0.0, description="Seconds from the recording's start to this turn's audio.")
    silence: float | None = Field(
        default=None, description="The user said nothing: the turn was this many seconds of silence.", exclude_if=_unset
    )


class AgentVoice(DataModel):
    """An agent turn as it was heard: the transcript is the event's ``messages``; this is the rest."""

    said: list[str] = Field(
        default_factory=list,
        description="The agent's own text of its audio, when it reported one (the messages are what was heard).",
        exclude_if=lambda said: not said,
    )
    confidence: float | None = Field(default=None, description="How sure the recogniser was of the transcript (0-1).")
    first_audio_ms: float | None = Field(
        default=None, description="From the end of the user's audio to the agent's first audio.", exclude_if=_unset
    )
    end_audio_ms: float | None = Field(
        default=None, description="From the end of the user's audio to the end of the agent's audio.", exclude_if=_unset
    )
    audio_seconds: float = 0.0
    offset: float = Field(default=0.0, description="Seconds from the recording's start to this turn's audio.")
    interrupted_after: float | None = Field(
        default=None,
        description="The user barged in after this many seconds of the agent's audio; the rest was not heard.",
        exclude_if=_unset,
    )


class TranscriptVoice(DataModel):
    """A voice conversation: the backends that spoke and heard it, and the confidence bar it was judged with."""

    synthesizer: str
    recognizer: str
    min_confidence: float = 0.5
