"""CPU of a spoken turn with the offline speech backends, and what Simulator adds beyond speaking and hearing.

Runs the voice example (``suites/voice/``: the card line in simulator/demo/bank_line.py, English and German, a
barge-in and a silence) ``--repeat`` times with the offline backends (eSpeak NG, Whisper base), one conversation
at a time. Every synthesis and transcription, the simulator's and the agent's own, goes through a wrapper that
adds up the process's CPU (all threads: CTranslate2 computes in threads of its own) while it runs; with one
conversation at a time nothing else runs meanwhile. The whole run's process CPU, measured around it, minus that
speech CPU is what Simulator (and the rule-based agent's few lines) cost on top: ``overhead_ratio`` is it over the
speech CPU, the target is 0.10 at most. The models are loaded before the clock starts.

    python bench/voice.py [--repeat R]

Ends with one line:
BENCH voice_cpu_s_per_turn=.. tts_cpu_s_per_turn=.. stt_cpu_s_per_turn=.. overhead_ratio=.. turns=.. conversations=..
"""

from __future__ import annotations

import argparse
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

import simulator
import simulator.runner._case as runner_case
from simulator.demo import bank_line
from simulator.voice import Audio, Heard, Recognizer, Speaker, Synthesizer, offline_recognizer, offline_synthesizer

EXAMPLE = Path(__file__).resolve().parent.parent / "suites" / "voice"


@dataclass
class Account:
    """CPU seconds spent in speech, by kind."""

    tts: float = 0.0
    stt: float = 0.0
    syntheses: int = 0
    transcriptions: int = 0


class TimedSynthesizer:
    """A synthesizer whose CPU is counted."""

    def __init__(self, inner: Synthesizer, account: Account) -> None:
        self.inner, self.account, self.name = inner, account, inner.name

    async def synthesize(self, text: str, speaker: Speaker) -> Audio:
        """The inner synthesis, its CPU added to the account."""
        start = time.process_time()
        try:
            return await self.inner.synthesize(text, speaker)
        finally:
            self.account.tts += time.process_time() - start
            self.account.syntheses += 1


class TimedRecognizer:
    """A recogniser whose CPU is counted."""

    def __init__(self, inner: Recognizer, account: Account) -> None:
        self.inner, self.account, self.name = inner, account, inner.name

    async def transcribe(self, audio: Audio, language: str) -> Heard:
        """The inner transcription, its CPU added to the account."""
        start = time.process_time()
        try:
            return await self.inner.transcribe(audio, language)
        finally:
            self.account.stt += time.process_time() - start
            self.account.transcriptions += 1


def main() -> None:
    """Run the example, count the CPU, print the figures and the BENCH line."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--repeat", type=int, default=2, help="runs of each case (default 2)")
    args = parser.parse_args()

    account = Account()
    mouth = TimedSynthesizer(offline_synthesizer(), account)
    ears = {language: TimedRecognizer(offline_recognizer(language), account) for language in ("en", "de")}
    recognizer = offline_recognizer("en")
    recognizer.load()  # the model's load (seconds, once a process) is not a turn's cost

    def backends(*args: object, **kwargs: object) -> tuple[Synthesizer, Recognizer]:
        # The simulator's side: it hears the agent in the case's language, which it passes to transcribe.
        return mouth, ears["en"]

    # the runner's name for it, where each case gets its backends
    setattr(runner_case, "speech_backends", backends)  # noqa: B010
    bank_line.speech = lambda language: (mouth, ears[language])  # type: ignore[assignment]

    with tempfile.TemporaryDirectory() as folder:
        start = time.process_time()
        outcome = simulator.run(
            str(EXAMPLE), db=Path(folder) / "runs.db", repeat=args.repeat, concurrency=1, seed=29, cache=False
        )
        total = time.process_time() - start
        results = [stored.result for stored in outcome.results()]
    outcomes = sorted({result.outcome for result in results})
    turns = sum(len(result.transcript.agent_events()) for result in results)
    speech = account.tts + account.stt
    overhead = (total - speech) / speech
    print(f"{len(results)} conversations, {turns} spoken turns, outcomes {', '.join(outcomes)}")
    print(f"  run CPU {total:.2f} s; speech {speech:.2f} s: synthesis {account.tts:.2f} s ({account.syntheses}), ")
    print(f"  recognition {account.stt:.2f} s ({account.transcriptions}); the rest {total - speech:.2f} s")
    print(
        f"BENCH voice_cpu_s_per_turn={total / turns:.3f} tts_cpu_s_per_turn={account.tts / turns:.3f} "
        f"stt_cpu_s_per_turn={account.stt / turns:.3f} overhead_ratio={overhead:.3f} turns={turns} "
        f"conversations={len(results)}"
    )


if __name__ == "__main__":
    main()
