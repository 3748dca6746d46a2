"""The store file: where it is (``--db``, ``$SIMULATOR_DB``, the default), what a new run is called, and
whether this process may write it."""

from __future__ import annotations

import os
import secrets
import stat
from datetime import UTC, datetime
from pathlib import Path
from typing import Final

#: The environment variable naming the run store file.
DB_ENV: Final = "SIMULATOR_DB"

_FIX: Final = f"pass another file with --db PATH or set {DB_ENV}"
#: How many names a message lists before it stops.
_RECENT_SHOWN: Final = 5


def default_db_path() -> Path:
    """``$SIMULATOR_DB`` if set, else ``.simulator/runs.db`` in the working folder."""
    value = os.environ.get(DB_ENV, "").strip()
    if value:
        return Path(value).expanduser()
    return Path.cwd() / ".simulator" / "runs.db"


def new_run_id(now: datetime | None = None) -> str:
    """A short id that sorts by creation time (UTC, to the second): ``20261129-232501-ab12cd``."""
    moment = (now or datetime.now(UTC)).astimezone(UTC)
    return f"{moment:%Y%m%d-%H%M%S}-{secrets.token_hex(3)}"


def writable(path: Path) -> bool:
    """Whether this process may write the store file ``path`` and its folder (SQLite's WAL creates files there).

    A file or folder without any write permission bit counts as read-only for root too: root passes every
    permission check, but a store someone marked read-only (``chmod a-w``) is meant to be read, not changed.
    """
    for target in (path, path.parent):
        try:
            mode = target.stat().st_mode
        except OSError:
            return False
        if not os.access(target, os.W_OK) or not mode & (stat.S_IWUSR | stat.S_IWGRP | stat.S_IWOTH):
            return False
    return True
