"""Runs started from the app: ``simulator runs resume|repeat RUN --db STORE`` as a process of its own, detached
from the app (it runs on when the app stops), its output in a log file beside the store."""

from __future__ import annotations

import subprocess
import sys
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

__all__ = ["Started", "start"]


@dataclass(frozen=True)
class Started:
    """A command started: its words, its process id and where its output goes."""

    command: list[str]
    pid: int
    log: Path


def start(action: str, run_id: str, store: Path) -> Started:
    """Start ``runs ACTION RUN`` on ``store`` (tools in test mode, never ``--live`` or ``--yes``: what needs
    them is started from a terminal)."""
    words = [sys.executable, "-m", "simulator", "runs", action, run_id, "--db", str(store)]
    folder = store.resolve().parent / "view-logs"
    folder.mkdir(parents=True, exist_ok=True)
    log = folder / f"{action}-{run_id}-{datetime.now(UTC):%Y%m%d-%H%M%S-%f}.log"
    with log.open("wb") as output:
        # Its own session: Ctrl-C in the app's terminal does not reach it, and it outlives the app.
        process = subprocess.Popen(
            words,
            stdin=subprocess.DEVNULL,
            stdout=output,
            stderr=subprocess.STDOUT,
            start_new_session=True,
            close_fds=True,
        )
    return Started(words, process.pid, log)
