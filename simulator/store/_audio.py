"""Voice conversations' audio: one WAV file per conversation (both sides, in turn order) in a folder beside the store
(``runs-audio/RUN/KEY.wav`` beside ``runs.db``), written whole or not at all, named in the result's transcript,
and deleted with their run. (Not the cassettes of ``--record``, which hold a run's model and agent exchanges.)

Audio is a file and not a row: a run of spoken conversations holds hundreds of megabytes of audio that no
query reads, and a report or the web app hands the file to a browser as it is. A file whose result was never
stored (a process killed between the two) is left over until its run is deleted, and harms nothing.
"""

from __future__ import annotations

import hashlib
import re
import shutil
from pathlib import Path

from simulator._files import write_error, write_file

__all__ = ["AudioMethods", "audio_folder", "audio_name"]

_UNSAFE = re.compile(r"[^A-Za-z0-9._-]+")


def audio_folder(store_path: Path) -> Path:
    """The folder the conversations' audio of the store at ``store_path`` goes in."""
    return store_path.with_name(f"{store_path.stem}-audio")


def audio_name(run_id: str, key: str) -> str:
    """The audio file's name in the folder, ``RUN/KEY.wav``: the key's readable part and a short hash of it (keys
    hold slashes and characters no file system takes; two keys never share a name)."""
    readable = _UNSAFE.sub("_", key).strip("._")[:80] or "conversation"
    digest = hashlib.sha256(key.encode("utf-8")).hexdigest()[:10]
    return f"{_UNSAFE.sub('_', run_id)}/{readable}-{digest}.wav"


class AudioMethods:
    """The store's audio files (mixed into :class:`RunStore`)."""

    path: Path

    def save_audio(self, run_id: str, key: str, wav: bytes) -> str:
        """Write the audio of conversation ``key`` of run ``run_id``; its name (for :meth:`audio_path`). A full
        disk is a :class:`~simulator.errors.DiskError` naming the file, and nothing is left half-written."""
        name = audio_name(run_id, key)
        target = audio_folder(self.path) / name
        try:
            target.parent.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise write_error(target.parent, exc) from None
        write_file(target, wav)
        return name

    def audio_path(self, name: str) -> Path | None:
        """The audio file ``name`` (as a result's transcript names it); None when it is not there or the name
        points outside the audio folder."""
        folder = audio_folder(self.path).resolve()
        candidate = (folder / name).resolve()
        if folder not in candidate.parents or not candidate.is_file():
            return None
        return candidate

    def forget_audio(self, run_id: str) -> None:
        """Delete run ``run_id``'s audio files (with the run)."""
        shutil.rmtree(audio_folder(self.path) / _UNSAFE.sub("_", run_id), ignore_errors=True)
