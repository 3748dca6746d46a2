"""Voice conversations' recordings: one WAV file per conversation in a folder beside the store
(``runs-recordings/RUN/KEY.wav`` beside ``runs.db``), written whole or not at all, named in the result's
transcript, and deleted with their run.

A recording is a file and not a row: a run of spoken conversations holds hundreds of megabytes of audio that no
query reads, and a report or the web app hands the file to a browser as it is. A file whose result was never
stored (a process killed between the two) is left over until its run is deleted, and harms nothing.
"""

from __future__ import annotations

import hashlib
import re
import shutil
from pathlib import Path

from simulator._files import write_file

__all__ = ["RecordingMethods", "recordings_folder"]

_UNSAFE = re.compile(r"[^A-Za-z0-9._-]+")


def recordings_folder(store_path: Path) -> Path:
    """The folder the recordings of the store at ``store_path`` go in."""
    return store_path.with_name(f"{store_path.stem}-recordings")


def recording_name(run_id: str, key: str) -> str:
    """The recording's name in the folder, ``RUN/KEY.wav``: the key's readable part and a short hash of it (keys
    hold slashes and characters no file system takes; two keys never share a name)."""
    readable = _UNSAFE.sub("_", key).strip("._")[:80] or "conversation"
    digest = hashlib.sha256(key.encode("utf-8")).hexdigest()[:10]
    return f"{_UNSAFE.sub('_', run_id)}/{readable}-{digest}.wav"


class RecordingMethods:
    """The store's recordings (mixed into :class:`RunStore`)."""

    path: Path

    def save_recording(self, run_id: str, key: str, wav: bytes) -> str:
        """Write conversation ``key``'s recording of run ``run_id``; its name (for :meth:`recording_path`). A full
        disk is a :class:`~simulator.errors.DiskError` naming the file, and nothing is left half-written."""
        name = recording_name(run_id, key)
        target = recordings_folder(self.path) / name
        target.parent.mkdir(parents=True, exist_ok=True)
        write_file(target, wav)
        return name

    def recording_path(self, name: str) -> Path | None:
        """The file of the recording ``name`` (as a result's transcript names it); None when it is not there or
        the name points outside the recordings folder."""
        folder = recordings_folder(self.path).resolve()
        candidate = (folder / name).resolve()
        if folder not in candidate.parents or not candidate.is_file():
            return None
        return candidate

    def forget_recordings(self, run_id: str) -> None:
        """Delete run ``run_id``'s recordings (with the run)."""
        shutil.rmtree(recordings_folder(self.path) / _UNSAFE.sub("_", run_id), ignore_errors=True)
