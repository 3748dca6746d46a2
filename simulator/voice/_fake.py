"""Speech backends for tests: the fake synthesizer writes the text into the audio so that the fake recogniser reads
it back exactly, with the timing of speech (each character one short segment), so that cutting the audio after N
seconds (a barge-in) leaves the words said until then, silence is heard as nothing, and noise above the code's
margin garbles what it covers and lowers the confidence. No model, no randomness, no time."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from simulator._fake_speech import CHARACTER_SECONDS, RATE, listen_pcm, speak_pcm
from simulator.voice._audio import Audio
from simulator.voice._protocol import Heard, Speaker

__all__ = ["CHARACTER_SECONDS", "FakeRecognizer", "FakeSynthesizer", "listen", "speak"]


@dataclass
class FakeSynthesizer:
    """Speaks every text as its UTF-8 bytes, one segment each, at 16 kHz (:mod:`simulator._fake_speech`)."""

    name: str = "fake-speech"
    #: Every text it was asked to speak, in order.
    spoken: list[tuple[str, Speaker]] = field(default_factory=list)

    async def synthesize(self, text: str, speaker: Speaker) -> Audio:
        """``text`` as audio: a segment of ``CHARACTER_SECONDS / speaker.rate`` per byte."""
        self.spoken.append((text, speaker))
        return speak(text, rate=speaker.rate)


@dataclass
class FakeRecognizer:
    """Reads back what :class:`FakeSynthesizer` spoke. ``mishear`` replaces words (as a recogniser that hears
    "lock" for "block"), lowering the confidence to ``misheard_confidence`` where it did."""

    name: str = "fake-recognizer"
    mishear: Mapping[str, str] = field(default_factory=dict)
    misheard_confidence: float = 0.4
    #: Every audio it was asked to transcribe, with the language asked for.
    heard: list[tuple[Audio, str]] = field(default_factory=list)

    async def transcribe(self, audio: Audio, language: str) -> Heard:
        """The text in ``audio``; its confidence is the share of segments read cleanly."""
        self.heard.append((audio, language))
        text, confidence = listen(audio)
        words = text.split(" ")
        changed = [self.mishear.get(word, word) for word in words]
        if changed != words:
            return Heard(" ".join(changed), min(confidence, self.misheard_confidence))
        return Heard(text, confidence)


def speak(text: str, *, rate: float = 1.0) -> Audio:
    """The fake synthesizer's audio for ``text`` (the codec of :mod:`simulator._fake_speech`)."""
    return Audio(speak_pcm(text, rate=rate), RATE)


def listen(audio: Audio) -> tuple[str, float]:
    """What :func:`speak` wrote in ``audio`` (any rate, cut anywhere), and the share of segments read cleanly."""
    return listen_pcm(audio.resampled(RATE).pcm)
