"""Speech backends for tests: the fake synthesizer writes the text into the audio so that the fake recogniser reads
it back exactly, with the timing of speech (each character one short segment), so that cutting the audio after N
seconds (a barge-in) leaves the words said until then, silence is heard as nothing, and noise above the code's
margin garbles what it covers and lowers the confidence. No model, no randomness, no time."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from simulator.voice._audio import DEFAULT_RATE, Audio
from simulator.voice._protocol import Heard, Speaker

#: Seconds a character takes at rate 1.0 (about 14 characters a second, as in speech).
CHARACTER_SECONDS = 0.07
_STEP = 96  # a byte's value times this is its segment's level: noise under half of it changes nothing


@dataclass
class FakeSynthesizer:
    """Speaks every text as its UTF-8 bytes, one segment each, at ``DEFAULT_RATE``."""

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
    """The fake synthesizer's audio for ``text``: byte k of its UTF-8 is a run of samples at ``(byte + 1) * 96``,
    positive for even k and negative for odd k (so that two equal bytes in a row stay two)."""
    width = max(4, round(CHARACTER_SECONDS / max(rate, 0.1) * DEFAULT_RATE))
    samples: list[int] = []
    for index, byte in enumerate(text.encode("utf-8")):
        samples.extend([(byte + 1) * _STEP * (1 if index % 2 == 0 else -1)] * width)
    return Audio.from_samples(samples, DEFAULT_RATE)


def listen(audio: Audio) -> tuple[str, float]:
    """What :func:`speak` wrote in ``audio`` (any rate, cut anywhere), and the share of segments read cleanly."""
    values = audio.resampled(DEFAULT_RATE).values()
    data = bytearray()
    clean = total = 0
    run: list[int] = []
    positive = True
    for value in [*values, 0]:
        quiet = abs(value) < _STEP // 2
        if run and (quiet or (value > 0) != positive):
            if len(run) >= 4:
                total += 1
                # the edges of a resampled segment lean towards its neighbours: judge the middle of it
                middle = sorted(run)[len(run) // 8 : len(run) - len(run) // 8]
                code = round(middle[len(middle) // 2] / _STEP) - 1
                clean += middle[-1] - middle[0] <= _STEP
                if 0 <= code <= 255:
                    data.append(code)
            run = []
        if not quiet:
            positive = value > 0
            run.append(abs(value))
    return bytes(data).decode("utf-8", errors="ignore"), (clean / total if total else 1.0)
