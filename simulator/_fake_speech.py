"""The fake speech codec the tests' speech backends share: text written into 16-bit PCM with the timing of speech
and read back exactly. A base module, so that the offline fake model provider (``fake/...`` speech and
transcription models, in the model client) and the voice layer's fake synthesizer and recogniser speak the same
audio without the model client importing the voice layer above it. Pure functions of bytes: no model, no
randomness, no time."""

from __future__ import annotations

import array
import io
import sys
import wave

#: The sample rate of the codec's audio (what speech recognisers expect).
RATE = 16_000
#: Seconds a character takes at rate 1.0 (about 14 characters a second, as in speech).
CHARACTER_SECONDS = 0.07
_STEP = 96  # a byte's value times this is its segment's level: noise under half of it changes nothing
_SAMPLE_BYTES = 2


def speak_pcm(text: str, *, rate: float = 1.0) -> bytes:
    """``text`` as mono 16-bit little-endian PCM at :data:`RATE`: byte k of its UTF-8 is a run of samples at
    ``(byte + 1) * 96``, positive for even k and negative for odd k (so that two equal bytes in a row stay two),
    each run ``CHARACTER_SECONDS / rate`` long."""
    width = max(4, round(CHARACTER_SECONDS / max(rate, 0.1) * RATE))
    samples = array.array("h")
    for index, byte in enumerate(text.encode("utf-8")):
        samples.extend([(byte + 1) * _STEP * (1 if index % 2 == 0 else -1)] * width)
    if sys.byteorder == "big":
        samples.byteswap()
    return samples.tobytes()


def listen_pcm(pcm: bytes) -> tuple[str, float]:
    """What :func:`speak_pcm` wrote in ``pcm`` (16-bit little-endian PCM at :data:`RATE`, cut anywhere), and the
    share of segments read cleanly (1.0 for silence)."""
    values = array.array("h")
    values.frombytes(pcm[: len(pcm) - len(pcm) % _SAMPLE_BYTES])
    if sys.byteorder == "big":
        values.byteswap()
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


def speak_wav(text: str, *, rate: float = 1.0) -> bytes:
    """``text`` spoken by the codec (:func:`speak_pcm`), as a WAV file (mono, 16-bit, :data:`RATE`)."""
    buffer = io.BytesIO()
    with wave.open(buffer, "wb") as writer:
        writer.setnchannels(1)
        writer.setsampwidth(_SAMPLE_BYTES)
        writer.setframerate(RATE)
        writer.writeframes(speak_pcm(text, rate=rate))
    return buffer.getvalue()


def listen_wav(data: bytes) -> tuple[str, float]:
    """What the codec wrote in a WAV file; a ``ValueError`` saying why for a file that is not mono 16-bit PCM at
    :data:`RATE` (the voice layer resamples before it sends)."""
    try:
        with wave.open(io.BytesIO(data), "rb") as reader:
            shape = reader.getnchannels(), reader.getsampwidth(), reader.getframerate()
            frames = reader.readframes(reader.getnframes())
    except (wave.Error, EOFError) as exc:
        raise ValueError(f"not a WAV file: {exc}") from exc
    if shape != (1, _SAMPLE_BYTES, RATE):
        channels, width, rate = shape
        got = f"{channels} channel(s), {8 * width}-bit, {rate} Hz"
        raise ValueError(f"expected mono 16-bit WAV at {RATE} Hz, got {got}")
    return listen_pcm(frames)
