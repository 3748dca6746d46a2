"""The run store a public API call opens: ``db`` as given, else the default (``$SIMULATOR_DB`` or
``.simulator/runs.db``)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from simulator.store import RunStore

PathLike = str | Path


def open_store(db: PathLike | None) -> RunStore:
    """The store at ``db``, or the default one (opened by entering it)."""
    from simulator.store import RunStore, default_db_path

    return RunStore(Path(db) if db is not None else default_db_path())
