"""Stored runs: list them, read one with its results, change its note, find it to delete, stream its rows,
and say the commands that continue or report it."""

from __future__ import annotations

import os
import shlex
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from simulator.api._store import PathLike, open_store

if TYPE_CHECKING:
    from simulator.models.run import RunRecord, StoredResult
    from simulator.store import Lease, ResultRow, RunListing, Unreadable


def list_runs(
    *, db: PathLike | None = None, limit: int | None = 20, skipped: list[Unreadable] | None = None
) -> list[RunRecord]:
    """The stored runs, newest first (at most ``limit``; None: all). A run whose record cannot be read is left
    out and added to ``skipped``."""
    with open_store(db) as store:
        return store.list_runs(limit=limit, skipped=skipped)


def list_run_listings(*, db: PathLike | None = None, skipped: list[Unreadable] | None = None) -> list[RunListing]:
    """Every stored run as a runs list shows it (status, created, version, suites, note, planned, and from its
    summary the counts, usage and duration), newest first, without reading whole records: cheap for hundreds of
    runs. A run that cannot be read is left out and added to ``skipped``."""
    with open_store(db) as store:
        return store.run_listings(skipped=skipped)


@dataclass(frozen=True)
class RunResults:
    """A stored run with every result it holds, in plan order, and the live process running it now (None when
    none does)."""

    record: RunRecord
    results: list[StoredResult]
    owner: Lease | None
    store_path: Path


def read_run(run_ref: str, *, db: PathLike | None = None, skipped: list[Unreadable] | None = None) -> RunResults:
    """A stored run (``run_ref``: an id, a unique prefix, ``latest`` or ``latest~N``) with its results; a result
    that cannot be read is left out and added to ``skipped``."""
    with open_store(db) as store:
        record = store.get_run(run_ref)
        owner = store.owner(record.id) if record.status == "running" else None
        return RunResults(record, store.results(record.id, skipped=skipped), owner, store.path)


def note_run(run_ref: str, text: str, *, db: PathLike | None = None) -> str:
    """Replace a stored run's note (nothing else of a run ever changes); returns the run's id."""
    with open_store(db) as store:
        record = store.get_run(run_ref)
        store.set_note(record.id, text)
    return record.id


def find_run(run_ref: str, *, db: PathLike | None = None) -> tuple[str, RunRecord | None]:
    """The id of a stored run and its record, or None for a record that cannot be read (such a run can still be
    deleted with :func:`simulator.delete_run`)."""
    from simulator.store import UnreadableRunError

    with open_store(db) as store:
        try:
            record = store.get_run(run_ref)
        except UnreadableRunError as exc:
            return exc.run_id, None
    return record.id, record


def count_results(run_id: str, *, db: PathLike | None = None) -> int:
    """How many results of the run are stored (an interrupted run: the conversations already done)."""
    with open_store(db) as store:
        return store.result_count(run_id)


def iter_result_rows(run_id: str, *, db: PathLike | None = None) -> Iterator[ResultRow]:
    """The run's results as rows (case, persona, repeat, outcome, reasons), in plan order, read from the store a
    few at a time: memory stays flat whatever the run's size."""
    with open_store(db) as store:
        yield from store.iter_result_rows(run_id)


def resume_command(record: RunRecord, store_path: PathLike, *, db_given: bool = False) -> str:
    """The command that continues ``record``: with ``--db`` when a store was chosen (``db_given``, or
    ``$SIMULATOR_DB``, which another shell may not have set), ``--live`` for a live run, ``--yes`` for an
    imported one."""
    from simulator.store import DB_ENV

    words = ["simulator", "runs", "resume", record.id]
    if db_given or os.environ.get(DB_ENV, "").strip():
        words += ["--db", str(store_path)]
    if record.settings.live:
        words.append("--live")
    if record.imported_from:
        words.append("--yes")
    return shlex.join(words)


def run_command(command: str, run_id: str, store_path: PathLike) -> str:
    """``simulator COMMAND RUN``, with ``--db`` when the store is not the one found without it."""
    from simulator.store import default_db_path

    words = ["simulator", command, run_id]
    if Path(store_path).resolve() != default_db_path().resolve():
        words += ["--db", str(store_path)]
    return shlex.join(words)
