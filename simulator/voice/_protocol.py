"""What a speech backend does, for the voice layer: a synthesizer turns text into audio, a recogniser audio into
text with how sure it was. Offline backends, provider backends and the tests' fakes all fit these two shapes."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

from simulator.voice._audio import Audio


@dataclass(frozen=True)
class Speaker:
    """How a text is spoken: the backend's voice name (None: its default for the language), the speaking rate and
    pitch as factors of the backend's normal (1.0), and the language (a BCP 47 tag such as ``en`` or ``de-AT``)."""

    language: str = "en"
    voice: str | None = None
    rate: float = 1.0
    pitch: float = 1.0


@dataclass(frozen=True)
class Heard:
    """What a recogniser heard: the text, and how sure it was (0 to 1; None when the backend says nothing)."""

    text: str
    confidence: float | None = None


class Synthesizer(Protocol):
    """Text to speech."""

    #: What the run records as the backend, e.g. ``espeak-ng 1.51`` or ``openai/tts-1``.
    name: str

    async def synthesize(self, text: str, speaker: Speaker) -> Audio:
        """``text`` spoken by ``speaker``."""
        ...


class Recognizer(Protocol):
    """Speech to text."""

    #: What the run records as the backend, e.g. ``whisper-tiny (ctranslate2)`` or ``openai/whisper-1``.
    name: str

    async def transcribe(self, audio: Audio, language: str) -> Heard:
        """What is said in ``audio``, in ``language`` (a BCP 47 tag)."""
        ...
