"""The store's schema, built by numbered migrations applied in order (see :mod:`simulator.store`)."""

from __future__ import annotations

import re
import sqlite3
from collections.abc import Callable, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Final

from simulator.errors import StoreError, StoreInputError
from simulator.models.run import (
    LEGACY_STATUSES,
)
from simulator.store._file import _FIX, _RECENT_SHOWN
from simulator.store._rows import _time_text

#: Tables older versions' LangGraph checkpointer kept in the store file; they do not make a file foreign.
_CHECKPOINT_TABLES: Final = frozenset({"checkpoints", "writes"})


Migration = Callable[[sqlite3.Connection], None]


def _m001_tables(conn: sqlite3.Connection) -> None:
    conn.execute(
        """
        CREATE TABLE runs (
            id            TEXT PRIMARY KEY NOT NULL,
            created       TEXT NOT NULL,
            finished      TEXT,
            status        TEXT NOT NULL,
            agent_version TEXT,
            note          TEXT NOT NULL DEFAULT '',
            suite_hash    TEXT NOT NULL,
            snapshot      TEXT NOT NULL,
            settings      TEXT NOT NULL,
            versions      TEXT NOT NULL,
            plan          TEXT NOT NULL,
            totals        TEXT,
            repeat_of     TEXT
        )
        """
    )
    conn.execute(
        """
        CREATE TABLE results (
            id         INTEGER PRIMARY KEY,
            run_id     TEXT NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
            "key"      TEXT NOT NULL,
            suite      INTEGER NOT NULL,
            case_name  TEXT NOT NULL,
            persona    TEXT,
            "repeat"   INTEGER NOT NULL,
            outcome    TEXT NOT NULL,
            duration_s REAL NOT NULL,
            finished   TEXT NOT NULL,
            result     TEXT NOT NULL,
            UNIQUE (run_id, "key")
        )
        """
    )


def _m002_immutability(conn: sqlite3.Connection) -> None:
    conn.execute(
        """
        CREATE TRIGGER runs_keep_what_was_run
        BEFORE UPDATE OF id, created, suite_hash, snapshot, settings, versions, agent_version, plan, repeat_of
        ON runs
        BEGIN
            SELECT RAISE(ABORT, 'a stored run is immutable: only note, status, totals and finished can change');
        END
        """
    )
    conn.execute(
        """
        CREATE TRIGGER results_insert_only BEFORE UPDATE ON results
        BEGIN
            SELECT RAISE(ABORT, 'stored results are insert-only: a result is never updated');
        END
        """
    )
    conn.execute(
        """
        CREATE TRIGGER results_no_replace BEFORE INSERT ON results
        WHEN EXISTS (SELECT 1 FROM results WHERE run_id = NEW.run_id AND "key" = NEW."key")
        BEGIN
            SELECT RAISE(ABORT, 'result already stored: stored results are insert-only');
        END
        """
    )
    # A cascade from ``DELETE FROM runs`` removes the run first, so it passes; deleting one result does not.
    conn.execute(
        """
        CREATE TRIGGER results_no_delete BEFORE DELETE ON results
        WHEN EXISTS (SELECT 1 FROM runs WHERE id = OLD.run_id)
        BEGIN
            SELECT RAISE(ABORT, 'stored results are insert-only: delete the run to delete its results');
        END
        """
    )


def _m003_indexes(conn: sqlite3.Connection) -> None:
    conn.execute("CREATE INDEX runs_by_created ON runs (created, id)")
    conn.execute("CREATE INDEX runs_by_suite ON runs (suite_hash, status, created)")


_IMPORTED_NOTE: Final = re.compile(r"^imported from ([A-Za-z0-9][A-Za-z0-9_.:-]*?)(?::\s|$)")


def imported_from_note(note: str) -> str | None:
    """The run id in a note ``imported from <id>[: ...]``, as ``import run`` wrote it before runs said so."""
    found = _IMPORTED_NOTE.match(note)
    return found.group(1) if found else None


def _m004_leases(conn: sqlite3.Connection) -> None:
    """Leases, ``imported_from``, and the statuses running / completed / interrupted / failed.

    Written so that it can run again on a file where it ran in part (every step checks first)."""
    columns = {str(row[1]) for row in conn.execute("PRAGMA table_info(runs)")}
    if "imported_from" not in columns:
        conn.execute("ALTER TABLE runs ADD COLUMN imported_from TEXT")
    for run_id, note in conn.execute("SELECT id, note FROM runs WHERE imported_from IS NULL").fetchall():
        source = imported_from_note(str(note or ""))
        if source is not None:
            conn.execute("UPDATE runs SET imported_from = ? WHERE id = ?", (source, run_id))
    for old, new in LEGACY_STATUSES.items():
        conn.execute("UPDATE runs SET status = ? WHERE status = ?", (new, old))
    conn.execute(
        """
        CREATE TRIGGER IF NOT EXISTS runs_keep_where_from
        BEFORE UPDATE OF imported_from ON runs
        BEGIN
            SELECT RAISE(ABORT, 'a stored run is immutable: only note, status, totals and finished can change');
        END
        """
    )
    conn.execute(
        """
        CREATE TABLE IF NOT EXISTS leases (
            run_id    TEXT PRIMARY KEY NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
            pid       INTEGER NOT NULL,
            host      TEXT NOT NULL,
            token     TEXT NOT NULL,
            started   TEXT NOT NULL,
            heartbeat TEXT NOT NULL
        )
        """
    )


def _m005_cassettes(conn: sqlite3.Connection) -> None:
    """Cassettes: every exchange of a recorded conversation (``run --record``), zlib-compressed JSON, one per
    result key; deleting the run deletes them. And ``replay_of``: the recorded run a replay or rerun plays back.

    Written so that it can run again on a file where it ran in part (every step checks first)."""
    columns = {str(row[1]) for row in conn.execute("PRAGMA table_info(runs)")}
    if "replay_of" not in columns:
        conn.execute("ALTER TABLE runs ADD COLUMN replay_of TEXT")
    conn.execute(
        """
        CREATE TRIGGER IF NOT EXISTS runs_keep_replay_of
        BEFORE UPDATE OF replay_of ON runs
        BEGIN
            SELECT RAISE(ABORT, 'a stored run is immutable: only note, status, totals and finished can change');
        END
        """
    )
    conn.execute(
        """
        CREATE TABLE IF NOT EXISTS cassettes (
            run_id TEXT NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
            "key"  TEXT NOT NULL,
            data   BLOB NOT NULL,
            PRIMARY KEY (run_id, "key")
        )
        """
    )


def _m006_reviews(conn: sqlite3.Connection) -> None:
    """Reviews: a person's verdicts on results, steps and checks, kept apart from the results (which they never
    change); history is kept, the newest review of a target counts. Deleting the run deletes them.

    Written so that it can run again on a file where it ran in part (every step checks first)."""
    conn.execute(
        """
        CREATE TABLE IF NOT EXISTS reviews (
            id         TEXT PRIMARY KEY NOT NULL,
            run_id     TEXT NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
            "key"      TEXT NOT NULL,
            target     TEXT NOT NULL,
            verdict    TEXT NOT NULL,
            reason     TEXT NOT NULL,
            reviewer   TEXT NOT NULL,
            created_at TEXT NOT NULL
        )
        """
    )
    conn.execute("CREATE INDEX IF NOT EXISTS reviews_by_run ON reviews (run_id, created_at, id)")


#: Every migration, oldest first. Append only: never rename, reorder or edit one that has shipped.
MIGRATIONS: Final[tuple[Migration, ...]] = (
    _m001_tables,
    _m002_immutability,
    _m003_indexes,
    _m004_leases,
    _m005_cassettes,
    _m006_reviews,
)


def migration_name(migration: Migration) -> str:
    """The name recorded in the ``migrations`` table: the function's name without its leading underscore."""
    return migration.__name__.lstrip("_")


def _applied(conn: sqlite3.Connection, path: Path) -> set[str] | None:
    """Names of the applied migrations; None for a new, empty file; StoreError for somebody else's database."""
    tables = {
        row[0]
        for row in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%'")
    }
    if "migrations" not in tables:
        foreign = tables - _CHECKPOINT_TABLES
        if foreign:
            shown = ", ".join(sorted(foreign)[:_RECENT_SHOWN])
            raise StoreInputError(
                f"{path} is an SQLite database but not a Simulator run store (it holds tables {shown}); "
                f"it was left unchanged: {_FIX}"
            )
        return None
    try:
        return {str(row[0]) for row in conn.execute("SELECT name FROM migrations")}
    except sqlite3.OperationalError as exc:
        raise StoreError(f"{path} has a `migrations` table Simulator cannot read ({exc}): {_FIX}") from exc


def _refuse_unknown(applied: set[str], known: Sequence[str], path: Path) -> None:
    unknown = sorted(applied - set(known))
    if unknown:
        raise StoreInputError(
            f"{path} was written by a newer version of Simulator (it has migrations this version does not know: "
            f"{', '.join(unknown)}); upgrade Simulator to read it, or {_FIX}. The file was left unchanged."
        )


def migrate(conn: sqlite3.Connection, path: Path, migrations: Sequence[Migration] = MIGRATIONS) -> list[str]:
    """Apply the migrations ``conn`` lacks, in order, and return their names (empty when up to date).

    ``conn`` must be in autocommit mode (``isolation_level=None``). The check is a plain read; only a file
    that needs migrating takes the write lock, and looks again under it (another process may have migrated
    it meanwhile).
    """
    names = [migration_name(m) for m in migrations]
    applied = _applied(conn, path)
    if applied is not None:
        _refuse_unknown(applied, names, path)
        if applied >= set(names):
            return []
    done: list[str] = []
    conn.execute("BEGIN IMMEDIATE")
    try:
        applied = _applied(conn, path)
        if applied is None:
            conn.execute("CREATE TABLE migrations (name TEXT PRIMARY KEY NOT NULL, applied_at TEXT NOT NULL)")
            applied = set()
        _refuse_unknown(applied, names, path)
        for migration, name in zip(migrations, names, strict=True):
            if name in applied:
                continue
            migration(conn)
            conn.execute(
                "INSERT INTO migrations (name, applied_at) VALUES (?, ?)", (name, _time_text(datetime.now(UTC)))
            )
            done.append(name)
        conn.execute("COMMIT")
    except BaseException:
        if conn.in_transaction:
            conn.execute("ROLLBACK")
        raise
    return done
