"""The voice conversations' audio in a run export: checked when read (base64 WAV files a result names), stored
under the imported run with its results renamed to them."""

from __future__ import annotations

import base64
import binascii
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

from simulator.loading import DataPath
from simulator.models.run import StoredResult

if TYPE_CHECKING:
    from simulator.store import RunStore

__all__ = ["audio_problems", "with_audio"]


def audio_problems(
    exported: Mapping[str, str], results: Sequence[StoredResult], found: dict[str, bytes] | None
) -> list[tuple[DataPath, str]]:
    """What is wrong with an export's audio files (``exported``: base64 by name; each decoded into ``found``)."""
    named = {
        result.result.transcript.voice.audio
        for result in results
        if result.result.transcript.voice is not None and result.result.transcript.voice.audio is not None
    }
    problems: list[tuple[DataPath, str]] = []
    for name, text in exported.items():
        where: DataPath = ("audio", name)
        try:
            wav = base64.b64decode(text, validate=True)
        except (binascii.Error, ValueError):
            problems.append((where, "not base64: an audio file is exported as its bytes in base64"))
            continue
        if name not in named:
            problems.append((where, "no result's transcript names this audio file (its voice.audio)"))
        elif wav[:4] != b"RIFF" or wav[8:12] != b"WAVE":
            problems.append((where, "not a WAV file"))
        elif found is not None:
            found[name] = wav
    return problems


def with_audio(store: RunStore, result: StoredResult, run_id: str, audio: Mapping[str, bytes]) -> StoredResult:
    """``result`` with its audio file stored under run ``run_id`` (and named as stored); without its audio in
    the export, with none (its transcript says so)."""
    voice = result.result.transcript.voice
    if voice is None or voice.audio is None:
        return result
    wav = audio.get(voice.audio)
    if wav is None:
        kept = {"audio": None, "audio_error": "the export this run was imported from held no audio for it"}
    else:
        kept = {"audio": store.save_audio(run_id, result.key, wav), "audio_error": None}
    transcript = result.result.transcript.model_copy(update={"voice": voice.model_copy(update=kept)})
    return result.model_copy(update={"result": result.result.model_copy(update={"transcript": transcript})})
