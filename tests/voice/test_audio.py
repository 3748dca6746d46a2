"""The voice layer's audio type: WAV in and out, cutting, joining, resampling, seeded noise, and the errors a bad
file or a mismatched join gives."""

from __future__ import annotations

import io
import wave

import pytest

from simulator.voice import DEFAULT_RATE, Audio, AudioError, join


def _ramp(count: int, rate: int = DEFAULT_RATE) -> Audio:
    return Audio.from_samples(((index * 37) % 20_000 - 10_000 for index in range(count)), rate)


@pytest.mark.parametrize("rate", [8_000, 16_000, 22_050, 48_000])
def test_a_wav_file_reads_back_as_the_same_audio(rate: int) -> None:
    audio = _ramp(1_234, rate)
    again = Audio.from_wav(audio.wav())
    assert again == audio
    assert again.seconds == pytest.approx(1_234 / rate)


def test_a_stereo_wav_is_mixed_down_to_mono() -> None:
    buffer = io.BytesIO()
    with wave.open(buffer, "wb") as writer:
        writer.setnchannels(2)
        writer.setsampwidth(2)
        writer.setframerate(8_000)
        writer.writeframes(Audio.from_samples([100, 300, -50, -150, 7, 9]).pcm)
    assert list(Audio.from_wav(buffer.getvalue()).values()) == [200, -100, 8]


@pytest.mark.parametrize(
    ("data", "complaint"),
    [
        (b"not a wav file at all", "not a WAV file"),
        (b"", "not a WAV file"),
    ],
)
def test_a_file_that_is_not_a_wav_is_a_clear_error(data: bytes, complaint: str) -> None:
    with pytest.raises(AudioError, match=complaint):
        Audio.from_wav(data)


def test_an_8_bit_wav_is_refused_naming_its_width() -> None:
    buffer = io.BytesIO()
    with wave.open(buffer, "wb") as writer:
        writer.setnchannels(1)
        writer.setsampwidth(1)
        writer.setframerate(8_000)
        writer.writeframes(bytes(10))
    with pytest.raises(AudioError, match="8-bit"):
        Audio.from_wav(buffer.getvalue())


@pytest.mark.parametrize(
    ("start", "end", "samples"),
    [(0.0, None, 16_000), (0.25, None, 12_000), (0.0, 0.5, 8_000), (0.25, 0.75, 8_000), (0.9, 0.1, 0), (2.0, 3.0, 0)],
)
def test_a_cut_keeps_the_seconds_asked_for(start: float, end: float | None, samples: int) -> None:
    audio = _ramp(16_000)
    part = audio.cut(start, end)
    assert part.samples == samples
    if samples:
        first = round(start * DEFAULT_RATE)
        assert list(part.values()) == list(audio.values()[first : first + samples])


def test_joining_keeps_the_order_and_brings_every_part_to_one_rate() -> None:
    first, second = _ramp(100), Audio.silence(0.01)
    assert (first + second).samples == 260
    assert join([first, second]).pcm == first.pcm + second.pcm
    joined = join([Audio.silence(1.0, rate=8_000), first])
    assert joined.rate == DEFAULT_RATE
    assert joined.samples == 16_000 + 100


def test_adding_audio_of_two_rates_says_to_resample() -> None:
    with pytest.raises(AudioError, match="resample"):
        _ = Audio.silence(0.1) + Audio.silence(0.1, rate=8_000)


@pytest.mark.parametrize(("source", "target"), [(22_050, 16_000), (8_000, 16_000), (16_000, 16_000)])
def test_resampling_keeps_the_duration_and_the_shape(source: int, target: int) -> None:
    audio = Audio.from_samples(([1_000] * (source // 10)) + ([-1_000] * (source // 10)), source)
    again = audio.resampled(target)
    assert again.rate == target
    assert again.seconds == pytest.approx(audio.seconds, abs=1 / target)
    values = again.values()
    assert values[0] == 1_000
    assert values[-1] == -1_000


def test_noise_is_seeded_and_silence_stays_untouched_at_level_zero() -> None:
    audio = Audio.silence(0.1)
    assert audio.with_noise(0.0, seed=1) is audio
    noisy = audio.with_noise(0.01, seed=7)
    assert noisy == audio.with_noise(0.01, seed=7)
    assert noisy != audio.with_noise(0.01, seed=8)
    assert 0 < max(abs(value) for value in noisy.values()) <= 0.01 * 32_767 + 1


@pytest.mark.parametrize(("pcm", "rate", "complaint"), [(b"\x00", 16_000, "even number"), (b"", 0, "positive")])
def test_malformed_audio_is_refused(pcm: bytes, rate: int, complaint: str) -> None:
    with pytest.raises(AudioError, match=complaint):
        Audio(pcm, rate)
