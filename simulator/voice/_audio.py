"""Audio as the voice layer passes it around: mono 16-bit PCM at one sample rate, with the few operations a
conversation needs (silence, joining, cutting, seeded noise, WAV in and out). Pure Python: no audio library."""

from __future__ import annotations

import array
import io
import random
import sys
import wave
from collections.abc import Iterable
from dataclasses import dataclass

#: The rate every backend's audio is brought to before it is joined into a recording: what speech recognisers expect.
DEFAULT_RATE = 16_000

_SAMPLE_BYTES = 2
_LIMIT = 32_767


class AudioError(ValueError):
    """Audio that cannot be read or joined (not a WAV file, not 16-bit mono, rates that differ)."""


@dataclass(frozen=True)
class Audio:
    """Mono 16-bit little-endian PCM samples at ``rate`` samples a second."""

    pcm: bytes
    rate: int = DEFAULT_RATE

    def __post_init__(self) -> None:
        if self.rate <= 0:
            raise AudioError(f"a sample rate must be positive, got {self.rate}")
        if len(self.pcm) % _SAMPLE_BYTES:
            raise AudioError("16-bit PCM has an even number of bytes")

    @property
    def seconds(self) -> float:
        """How long the audio lasts."""
        return len(self.pcm) / _SAMPLE_BYTES / self.rate

    @property
    def samples(self) -> int:
        """How many samples it has."""
        return len(self.pcm) // _SAMPLE_BYTES

    @classmethod
    def silence(cls, seconds: float, rate: int = DEFAULT_RATE) -> Audio:
        """``seconds`` of silence."""
        return cls(bytes(_SAMPLE_BYTES * max(0, round(seconds * rate))), rate)

    @classmethod
    def from_samples(cls, samples: Iterable[int], rate: int = DEFAULT_RATE) -> Audio:
        """Audio from sample values (clipped to 16 bits)."""
        values = array.array("h", (max(-_LIMIT - 1, min(_LIMIT, int(value))) for value in samples))
        return cls(_little_endian(values), rate)

    def values(self) -> array.array[int]:
        """The samples as numbers."""
        values = array.array("h")
        values.frombytes(self.pcm)
        if sys.byteorder == "big":
            values.byteswap()
        return values

    def cut(self, start: float = 0.0, end: float | None = None) -> Audio:
        """The part from ``start`` to ``end`` seconds (to the end when ``end`` is None)."""
        first = max(0, round(start * self.rate)) * _SAMPLE_BYTES
        last = len(self.pcm) if end is None else max(0, round(end * self.rate)) * _SAMPLE_BYTES
        return Audio(self.pcm[first:last], self.rate)

    def __add__(self, other: Audio) -> Audio:
        if other.rate != self.rate:
            raise AudioError(f"cannot join audio at {self.rate} Hz and {other.rate} Hz: resample first")
        return Audio(self.pcm + other.pcm, self.rate)

    def resampled(self, rate: int) -> Audio:
        """The audio at another sample rate (linear interpolation: enough for speech)."""
        if rate == self.rate:
            return self
        if not self.pcm:
            return Audio(b"", rate)
        source = self.values()
        count = max(1, round(len(source) * rate / self.rate))
        step = (len(source) - 1) / max(1, count - 1)
        out = array.array("h")
        for index in range(count):
            position = index * step
            low = int(position)
            high = min(low + 1, len(source) - 1)
            fraction = position - low
            out.append(round(source[low] * (1 - fraction) + source[high] * fraction))
        return Audio(_little_endian(out), rate)

    def with_noise(self, level: float, seed: int) -> Audio:
        """The audio with white noise added: ``level`` is the noise's peak as a share of full scale (0 to 1),
        the same noise for the same seed."""
        if level <= 0 or not self.pcm:
            return self
        generator = random.Random(seed)
        peak = level * _LIMIT
        return Audio.from_samples((round(value + generator.uniform(-peak, peak)) for value in self.values()), self.rate)

    def wav(self) -> bytes:
        """The audio as a WAV file."""
        buffer = io.BytesIO()
        with wave.open(buffer, "wb") as writer:
            writer.setnchannels(1)
            writer.setsampwidth(_SAMPLE_BYTES)
            writer.setframerate(self.rate)
            writer.writeframes(self.pcm)
        return buffer.getvalue()

    @classmethod
    def from_wav(cls, data: bytes) -> Audio:
        """Audio from a 16-bit WAV file (a stereo one is mixed down to mono)."""
        try:
            with wave.open(io.BytesIO(data), "rb") as reader:
                channels, width, rate = reader.getnchannels(), reader.getsampwidth(), reader.getframerate()
                frames = reader.readframes(reader.getnframes())
        except (wave.Error, EOFError) as exc:
            raise AudioError(f"not a WAV file the voice layer can read: {exc}") from exc
        if width != _SAMPLE_BYTES:
            raise AudioError(f"the WAV file has {8 * width}-bit samples; 16-bit PCM is what is read")
        audio = cls(frames, rate)
        if channels == 1:
            return audio
        values = audio.values()
        mixed = (sum(values[start : start + channels]) // channels for start in range(0, len(values), channels))
        return cls.from_samples(mixed, rate)


def join(parts: Iterable[Audio], rate: int = DEFAULT_RATE) -> Audio:
    """One audio of ``parts`` in order, each brought to ``rate``."""
    return Audio(b"".join(part.resampled(rate).pcm for part in parts), rate)


def _little_endian(values: array.array[int]) -> bytes:
    if sys.byteorder == "big":
        values = array.array("h", values)
        values.byteswap()
    return values.tobytes()
