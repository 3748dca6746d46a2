"""The offline speech backends chosen in one place: what a run uses when no provider speech model is named."""

from __future__ import annotations

from simulator.voice._espeak import EspeakSynthesizer
from simulator.voice._whisper import WhisperRecognizer, require_faster_whisper, whisper_weights


def offline_synthesizer() -> EspeakSynthesizer:
    """The default synthesizer (eSpeak NG), loaded: raises :class:`SpeechBackendMissing`, one line naming the
    install command, when it is not installed."""
    synthesizer = EspeakSynthesizer()
    synthesizer.load()
    return synthesizer


def offline_recognizer(language: str = "en") -> WhisperRecognizer:
    """The default recogniser for ``language`` (a BCP 47 tag): Whisper base (faster-whisper) where its weights are
    installed, the lowest word error rate on the project's spoken test set (docs/voice.md); Whisper tiny.en for
    English where only those are. Raises :class:`SpeechBackendMissing` naming the install command when none is
    installed. The model itself is loaded on the first transcription."""
    require_faster_whisper()
    return WhisperRecognizer(whisper_weights(language=language))
