"""The run store: every run and every finished conversation, in one SQLite file.

Where: ``--db PATH``, else ``$SIMULATOR_DB``, else ``.simulator/runs.db`` in the working folder
(:func:`default_db_path`).

How it is opened: WAL journal (readers in other processes never wait for the runner, and the runner never
waits for them), ``synchronous=NORMAL`` (a commit is durable against a crash of Simulator; a power cut may
lose the last commits, never corrupt the file), foreign keys on, and a busy timeout so that two writers
take turns instead of failing. Each result is committed the moment it is saved: a crash loses at most the
conversations that were in flight, and a resumed run skips every key in :meth:`RunStore.completed_keys`.

Schema (built by the numbered migrations below; the ``migrations`` table records which have run)::

    migrations  name TEXT PRIMARY KEY, applied_at TEXT          -- e.g. ('m001_tables', '2026-...')

    runs        id            TEXT PRIMARY KEY   -- 20261129-232501-ab12cd: UTC time + random, sorts by time
                created       TEXT NOT NULL      -- ISO 8601; aware times are stored in UTC
                finished      TEXT               -- NULL until the run ends
                status        TEXT NOT NULL      -- running | completed | interrupted | failed (as stored; see
                                                 -- "Leases" for what a reader is shown)
                agent_version TEXT
                note          TEXT NOT NULL
                suite_hash    TEXT NOT NULL      -- what was run, for estimates and comparisons
                snapshot      TEXT NOT NULL      -- JSON list[SuiteSnapshot] (keys as written: exclude_unset)
                settings      TEXT NOT NULL      -- JSON RunSettings
                versions      TEXT NOT NULL      -- JSON {"simulator": ..., "python": ...}
                plan          TEXT NOT NULL      -- JSON list[PlanItem]
                totals        TEXT               -- JSON RunSummary (simulator.models.summary): the run summary,
                                                 -- NULL until first computed; an older version's summary
                                                 -- (counts, usage, duration) still reads
                repeat_of     TEXT               -- the run this one repeats (plain id, no foreign key)
                imported_from TEXT               -- the id it had where it was exported, for `import run`
                                                 -- (and its repeats); NULL for runs made here
                replay_of     TEXT               -- the recorded run this one replays or reruns (plain id)

    results     id         INTEGER PRIMARY KEY   -- insertion order
                run_id     TEXT NOT NULL REFERENCES runs(id) ON DELETE CASCADE
                key        TEXT NOT NULL         -- the PlanItem key; UNIQUE (run_id, key)
                suite      INTEGER NOT NULL      -- index into the run's snapshot
                case_name  TEXT NOT NULL
                persona    TEXT
                repeat     INTEGER NOT NULL
                outcome    TEXT NOT NULL         -- pass | fail | error | unsure | user_error
                duration_s REAL NOT NULL
                finished   TEXT NOT NULL
                result     TEXT NOT NULL         -- JSON CaseResult (transcript, scores, reasons)

    cassettes   run_id     TEXT NOT NULL REFERENCES runs(id) ON DELETE CASCADE
                key        TEXT NOT NULL         -- the PlanItem key; PRIMARY KEY (run_id, key)
                data       BLOB NOT NULL         -- zlib JSON Cassette (simulator.models.cassette), secrets scrubbed

    leases      run_id     TEXT PRIMARY KEY REFERENCES runs(id) ON DELETE CASCADE
                pid        INTEGER NOT NULL      -- the process running the run ...
                host       TEXT NOT NULL         -- ... on this host (socket.gethostname())
                token      TEXT NOT NULL         -- random, one per taking: a reused pid is not the owner
                started    TEXT NOT NULL         -- when it took the run
                heartbeat  TEXT NOT NULL         -- renewed every HEARTBEAT_S seconds while it runs

    indexes     runs(created, id) for listing and ``latest``; runs(suite_hash, status, created) for
                estimates and comparison defaults; results(run_id, key) through the UNIQUE constraint.

Immutability is enforced by the database itself, whoever writes to the file:

* ``runs_keep_what_was_run``: an UPDATE that names ``id``, ``created``, ``suite_hash``, ``snapshot``,
  ``settings``, ``versions``, ``agent_version``, ``plan`` or ``repeat_of`` aborts (``runs_keep_where_from``:
  ``imported_from`` too; ``runs_keep_replay_of``: ``replay_of``); only ``note``, ``status``, ``totals`` and
  ``finished`` can change;
* ``results_insert_only``, ``results_no_replace``, ``results_no_delete``: a result is never updated,
  replaced (``INSERT OR REPLACE``) or deleted on its own; it goes only with its run (``delete_run``).

The engine's LangGraph checkpoints live in a file beside the store (``runs-checkpoints.db``), not in it: a
synchronous store write and the checkpointer's connection waited on each other's locks. A store file written
by an older version may still hold those tables (``checkpoints``, ``writes``); they do not make it foreign.

Large payloads (snapshot, plan, each result) are JSON text. Reading or listing runs never reads the
``results`` table; :meth:`RunStore.results` reads one run's results, in plan order, and
:meth:`RunStore.iter_results` the same a few at a time (the run summary is computed over it). The terminal table
never reads a whole run: :meth:`RunStore.outcome_counts` counts in SQL, :meth:`RunStore.first_results` reads
only the rows shown (chosen by SQLite over the small columns), :meth:`RunStore.iter_result_rows` streams the
rows of ``run --json`` with the reasons taken out by ``json_extract``, and :meth:`RunStore.count_mentioning`
searches the stored JSON in SQL. No migration was needed for them: the columns were there. A run's plan is
read one item at a time into a compact :class:`~simulator.models.run.Plan` (never a list of objects), and
results are put in plan order by asking for a batch of the plan's keys at a time (:meth:`RunStore.stored_keys`
tells a resumed run which are done the same way): reading a run holds nothing the size of the run but its plan.

Connections are set up by :func:`simulator._sqlite.connect`, which the request cache and the checkpointer use
too.

Leases: a run's status is true. The process that runs a run (``run``, ``runs resume``, ``runs repeat``) takes
its lease first (:meth:`RunStore.acquire`: one ``BEGIN IMMEDIATE`` transaction that writes the lease only when
there is none or its owner is gone, and sets the status ``running``), renews the heartbeat from a thread
(:meth:`RunStore.heartbeat`), and gives the lease back with the final status in one transaction
(:meth:`RunStore.finish`). An owner is gone when its heartbeat is older than :data:`STALE_AFTER_S`, or, on
this host, when its pid no longer exists (``os.kill(pid, 0)``; a zombie counts as gone). Readers are shown
``interrupted`` for a run stored ``running`` whose owner is gone (a SIGKILL, a power cut), so nothing says
``running`` forever; a second process asking for a run whose owner is alive is refused with
:class:`RunBusyError` naming ``pid@host`` and since when. Two resumes started at once: exactly one takes the
lease.

Read-only: a store whose file or folder cannot be written (or is marked read-only with ``chmod a-w``, which
counts for root too) is opened read-only (``mode=ro``; ``immutable=1`` when SQLite cannot open the WAL index
beside it), without migrating it: listing, showing and reporting work, and every write fails with a
:class:`StoreError` that says the store is read-only.

Migrations are small functions ``_mNNN_...`` in :data:`MIGRATIONS`, applied in order, each in one
transaction with its row in ``migrations``. A file whose ``migrations`` table names a migration this
version does not know was written by a newer Simulator: it is refused, never downgraded or altered.
"""

from __future__ import annotations

import itertools
import json
import os
import re
import secrets
import socket
import sqlite3
import stat
import threading
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from types import TracebackType
from typing import Any, Final, get_args

from pydantic import BaseModel, TypeAdapter, ValidationError

from simulator._files import Reserve
from simulator._sqlite import BUSY_TIMEOUT_S, connect, disk_full
from simulator.errors import DiskError, StoreError, StoreInputError
from simulator.models.run import (
    LEGACY_STATUSES,
    Plan,
    RunRecord,
    RunStatus,
    StoredResult,
    SuiteSnapshot,
)
from simulator.models.summary import RunSummary
from simulator.safety import redact

#: The environment variable naming the run store file.
DB_ENV: Final = "SIMULATOR_DB"
#: Seconds between two heartbeats of a run's owner.
HEARTBEAT_S: Final = 5.0
#: A lease whose heartbeat is older than this is free (its owner was killed, hangs, or runs on a host that is gone).
STALE_AFTER_S: Final = 60.0
#: This host, as leases name it.
HOST: Final = socket.gethostname() or "localhost"

_FIX: Final = f"pass another file with --db PATH or set {DB_ENV}"
_ID_PATTERN: Final = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.:-]*$")
_LATEST: Final = re.compile(r"^latest(?:~(\d+))?$")
_STATUSES: Final[tuple[str, ...]] = get_args(RunStatus)
_RECENT_SHOWN: Final = 5
_MATCHES_SHOWN: Final = 10

#: Tables older versions' LangGraph checkpointer kept in the store file; they do not make a file foreign.
_CHECKPOINT_TABLES: Final = frozenset({"checkpoints", "writes"})

_SNAPSHOT: Final = TypeAdapter(list[SuiteSnapshot])
_VERSIONS: Final = TypeAdapter(dict[str, str])


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


# --- migrations -------------------------------------------------------------------------------------------

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


#: Every migration, oldest first. Append only: never rename, reorder or edit one that has shipped.
MIGRATIONS: Final[tuple[Migration, ...]] = (
    _m001_tables,
    _m002_immutability,
    _m003_indexes,
    _m004_leases,
    _m005_cassettes,
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


# --- helpers ----------------------------------------------------------------------------------------------


def _time_text(moment: datetime) -> str:
    """ISO 8601 with microseconds; aware times in UTC, so stored times sort as text."""
    if moment.tzinfo is not None:
        moment = moment.astimezone(UTC)
    return moment.isoformat(timespec="microseconds")


def _json_text(model: BaseModel) -> str:
    return model.model_dump_json()


def _stored(row: tuple[Any, ...]) -> tuple[Any, ...]:
    """A row as it may be written: every text with the secrets the process knows redacted (``simulator.safety``).

    Every write of text that came from outside (a run, its note, a result) goes through here, so no secret
    reaches the file, nor its write-ahead log.
    """
    return tuple(redact(value) if isinstance(value, str) else value for value in row)


def _compose(fields: dict[str, Any], raw: dict[str, str | None]) -> str:
    """A JSON object from plain values and from JSON texts already stored (inserted as they are)."""
    parts = [f"{json.dumps(name)}:{json.dumps(value)}" for name, value in fields.items()]
    parts += [f"{json.dumps(name)}:{'null' if text is None else text}" for name, text in raw.items()]
    return "{" + ",".join(parts) + "}"


def _first_problem(exc: ValidationError) -> str:
    error = exc.errors()[0]
    where = ".".join(str(part) for part in error["loc"]) or "(root)"
    return f"{exc.error_count()} problem(s), first at {where}: {error['msg']}"


def _not_a_database(exc: sqlite3.Error) -> bool:
    name = getattr(exc, "sqlite_errorname", "")
    return name == "SQLITE_NOTADB" or "not a database" in str(exc)


_RUN_COLUMNS: Final = (
    "id, created, finished, status, agent_version, note, suite_hash, snapshot, settings, versions, plan, totals, "
    "repeat_of"
)
_RESULT_COLUMNS: Final = 'run_id, "key", suite, case_name, persona, "repeat", outcome, duration_s, finished, result'
_ROW_COLUMNS: Final = 'run_id, "key", suite, case_name, persona, "repeat", outcome, duration_s'
#: The terminal table's order: errors, failures, user errors, unsure, passes; then case, persona ("" for none),
#: repeat.
_TABLE_ORDER: Final = (
    "CASE outcome WHEN 'error' THEN 0 WHEN 'fail' THEN 1 WHEN 'user_error' THEN 2 WHEN 'unsure' THEN 3 ELSE 4 END, "
    "case_name, COALESCE(persona, ''), \"repeat\""
)
_NEWEST_FIRST: Final = "ORDER BY runs.created DESC, runs.id DESC"
_LEASE_COLUMNS: Final = ("pid", "host", "token", "started", "heartbeat")
_LEASE_MIGRATION: Final = "m004_leases"
_REPLAY_MIGRATION: Final = "m005_cassettes"


@dataclass(frozen=True)
class ResultRow:
    """A stored result without its transcript and scores: what a row of a table or of ``run --json`` shows."""

    run_id: str
    key: str
    suite: int
    case: str
    persona: str | None
    repeat: int
    outcome: str
    duration_s: float
    reasons: list[str]


def _row(row: sqlite3.Row) -> ResultRow:
    reasons = json.loads(row["reasons"]) if row["reasons"] else []
    return ResultRow(
        run_id=str(row["run_id"]),
        key=str(row["key"]),
        suite=int(row["suite"]),
        case=str(row["case_name"]),
        persona=None if row["persona"] is None else str(row["persona"]),
        repeat=int(row["repeat"]),
        outcome=str(row["outcome"]),
        duration_s=float(row["duration_s"]),
        reasons=[str(reason) for reason in reasons] if isinstance(reasons, list) else [],
    )


@dataclass(frozen=True)
class Unreadable:
    """A stored run or result that cannot be read (changed by hand, or written by another version of Simulator):
    left out of what is shown, and named with its cause and the fix."""

    run_id: str
    #: What cannot be read, where, and why.
    cause: str
    fix: str

    def describe(self) -> str:
        """One line: what cannot be read, why, and what to do."""
        return f"{self.cause}; {self.fix}"


class UnreadableRunError(StoreError):
    """The record of a stored run cannot be read; ``run_id`` names it, so it can still be deleted."""

    def __init__(self, message: str, run_id: str) -> None:
        super().__init__(message)
        self.run_id = run_id


class RunBusyError(StoreError):
    """The run is being run by another live process (its lease is held): it is not resumed, repeated or
    deleted under that process's feet."""

    def __init__(self, message: str, lease: Lease) -> None:
        super().__init__(message)
        self.lease = lease


@dataclass(frozen=True)
class Lease:
    """Who runs a run: a process (pid on a host), since when, and its last heartbeat."""

    run_id: str
    pid: int
    host: str
    token: str
    started: datetime
    heartbeat: datetime

    @property
    def owner(self) -> str:
        """``pid@host``."""
        return f"{self.pid}@{self.host}"

    def alive(self, now: datetime | None = None) -> bool:
        """Whether the owner still runs the run: a recent heartbeat and, on this host, a live pid."""
        age = ((now or datetime.now(UTC)) - self.heartbeat).total_seconds()
        if age > STALE_AFTER_S:
            return False
        return self.host != HOST or pid_alive(self.pid)

    def describe(self, now: datetime | None = None) -> str:
        """``pid 1234 on host (since 2026-11-29 23:25:01 UTC, last heartbeat 3 s ago)``."""
        age = max(0.0, ((now or datetime.now(UTC)) - self.heartbeat).total_seconds())
        since = f"{self.started:%Y-%m-%d %H:%M:%S} UTC"
        return f"pid {self.pid} on {self.host} (since {since}, last heartbeat {age:.0f} s ago)"


def pid_alive(pid: int) -> bool:
    """Whether a process with this pid exists on this host and is not a zombie (killed, not yet reaped)."""
    if pid <= 0:
        return False
    if os.name == "nt":  # os.kill(pid, 0) would end the process there; the heartbeat decides alone
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True  # it exists, owned by somebody else
    except OSError:
        return False
    try:
        state = Path(f"/proc/{pid}/stat").read_text(encoding="ascii", errors="replace").rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return True  # no /proc (macOS): os.kill said it exists
    return state not in ("Z", "X")


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


def _status_update(
    status: RunStatus, totals: RunSummary | None, finished: datetime | None
) -> tuple[list[str], list[str]]:
    """The ``SET`` clauses and values of a status change (with totals and finishing time when given)."""
    if status not in _STATUSES:
        raise StoreError(f"{status!r} is not a run status (one of: {', '.join(_STATUSES)})")
    sets = ["status = ?"]
    values: list[str] = [status]
    if totals is not None:
        sets.append("totals = ?")
        values.append(_json_text(totals))
    if finished is not None:
        sets.append("finished = ?")
        values.append(_time_text(finished))
    return sets, values


class RunStore:
    """Runs and their results in one SQLite file; see the module docstring for the schema.

    Use as a context manager, or call :meth:`close`. One store may be shared between threads (calls are
    serialised); several processes may open the same file (one runner writing, any number reading).
    Every method raises :class:`StoreError` with a message for a person, never a ``sqlite3`` exception.
    """

    def __init__(self, path: Path | str, *, timeout: float = BUSY_TIMEOUT_S, read_only: bool | None = None) -> None:
        """Open (and create or migrate) the store at ``path``. ``read_only``: None decides by the file's
        permissions (:func:`writable`); True opens it read-only whatever they say."""
        self.path = Path(path)
        self._lock = threading.RLock()
        self._conn: sqlite3.Connection | None = None
        if self.path.is_dir():
            raise StoreInputError(f"{self.path} is a folder, not a run store file: {_FIX}")
        if read_only is None:
            read_only = self.path.exists() and not writable(self.path)
        #: Opened read-only: every write fails with a StoreError saying so.
        self.read_only: bool = read_only
        self._leases = True
        #: Whether the schema has ``runs.replay_of`` and the cassettes table (a read-only older store has not).
        self._replays = True
        if read_only:
            self._conn = self._open_read_only(timeout)
            return
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise StoreError(f"cannot create the folder for the run store {self.path} ({exc}): {_FIX}") from exc
        try:
            # Setting the journal mode is the first read of the file: it fails there if the file is not SQLite.
            conn = connect(self.path, timeout=timeout, isolation_level=None, check_same_thread=False, foreign_keys=True)
        except sqlite3.Error as exc:
            if _not_a_database(exc):
                raise StoreInputError(
                    f"{self.path} is not an SQLite database, so not a Simulator run store: {_FIX}"
                ) from exc
            raise StoreError(f"cannot open the run store {self.path} ({_explain(exc)}): {_FIX}") from exc
        try:
            conn.row_factory = sqlite3.Row
            migrate(conn, self.path)
        except sqlite3.Error as exc:
            conn.close()
            if _not_a_database(exc):
                raise StoreInputError(
                    f"{self.path} is not an SQLite database, so not a Simulator run store: {_FIX}"
                ) from exc
            raise StoreError(f"cannot open the run store {self.path} ({_explain(exc)}): {_FIX}") from exc
        except BaseException:
            conn.close()
            raise
        self._conn = conn

    def _open_read_only(self, timeout: float) -> sqlite3.Connection:
        """A read-only connection, the schema as it is (never migrated): ``mode=ro``, else ``immutable=1`` when
        SQLite cannot create the WAL index beside a file in a folder it may not write."""
        if not self.path.is_file():
            raise StoreInputError(f"no run store at {self.path}: {_FIX}")
        uri = self.path.resolve().as_uri()
        last: sqlite3.Error | None = None
        for query in ("?mode=ro", "?mode=ro&immutable=1"):
            conn: sqlite3.Connection | None = None
            try:
                conn = connect(
                    uri + query, uri=True, timeout=timeout, isolation_level=None, check_same_thread=False, wal=False
                )
                conn.row_factory = sqlite3.Row
                applied = _applied(conn, self.path)  # the first read: fails here if it cannot be read
            except sqlite3.Error as exc:
                if conn is not None:
                    conn.close()
                if _not_a_database(exc):
                    raise StoreInputError(
                        f"{self.path} is not an SQLite database, so not a Simulator run store: {_FIX}"
                    ) from exc
                last = exc
                continue
            except BaseException:
                if conn is not None:
                    conn.close()
                raise
            if applied is None:
                conn.close()
                raise StoreInputError(f"{self.path} is read-only and holds no runs (it is not a run store yet): {_FIX}")
            try:
                _refuse_unknown(applied, [migration_name(m) for m in MIGRATIONS], self.path)
            except BaseException:
                conn.close()
                raise
            self._leases = _LEASE_MIGRATION in applied
            self._replays = _REPLAY_MIGRATION in applied
            return conn
        raise StoreError(f"cannot open the read-only run store {self.path} ({_explain(last) if last else '?'}): {_FIX}")

    def require_writable(self, action: str) -> None:
        """Raise a :class:`StoreError` saying the store is read-only if it is (``action``: what was asked)."""
        if self.read_only:
            raise StoreError(
                f"cannot {action}: the run store {self.path} is read-only (it or its folder cannot be written, or "
                f"is marked read-only); make both writable, or {_FIX}"
            )

    # --- life cycle

    def close(self) -> None:
        """Close the connection (safe to call twice)."""
        with self._lock:
            if self._conn is not None:
                self._conn.close()
                self._conn = None

    def __enter__(self) -> RunStore:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, traceback: TracebackType | None
    ) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"RunStore({str(self.path)!r})"

    @contextmanager
    def _sql(self, action: str) -> Iterator[sqlite3.Connection]:
        """The connection, under the lock; any sqlite3 error becomes a StoreError saying what was being done."""
        with self._lock:
            if self._conn is None:
                raise StoreError(f"cannot {action}: the run store {self.path} is closed")
            try:
                yield self._conn
            except sqlite3.Error as exc:
                raise StoreError(f"cannot {action} in {self.path}: {_explain(exc)}") from exc

    # --- runs

    @property
    def _runs(self) -> str:
        """SELECT of the run columns, each run's lease beside it (NULLs in a read-only store of an older schema)."""
        columns = ", ".join(f"runs.{name.strip()} AS {name.strip()}" for name in _RUN_COLUMNS.split(","))
        columns += ", runs.replay_of AS replay_of" if self._replays else ", NULL AS replay_of"
        if not self._leases:
            nulls = ", ".join(f"NULL AS lease_{name}" for name in _LEASE_COLUMNS)
            return f"SELECT {columns}, NULL AS imported_from, {nulls} FROM runs"
        leased = ", ".join(f"leases.{name} AS lease_{name}" for name in _LEASE_COLUMNS)
        return (
            f"SELECT {columns}, runs.imported_from AS imported_from, {leased} "
            "FROM runs LEFT JOIN leases ON leases.run_id = runs.id"
        )

    def new_run_id(self) -> str:
        """A fresh run id (see :func:`new_run_id`) that no stored run has."""
        with self._sql("choose a run id") as conn:
            while True:
                run_id = new_run_id()
                if conn.execute("SELECT 1 FROM runs WHERE id = ?", (run_id,)).fetchone() is None:
                    return run_id

    def create_run(self, record: RunRecord) -> None:
        """Store a new run. Its id must be new; its snapshot, settings and plan never change afterwards."""
        if not _ID_PATTERN.match(record.id) or record.id.startswith("latest"):
            raise StoreError(f"{record.id!r} cannot be a run id (letters, digits, '-', '_', '.', ':'; not 'latest')")
        # A record's plan is a Plan, but model_copy(update=...) does not validate: a list is taken as well.
        plan = record.plan if isinstance(record.plan, Plan) else Plan(record.plan)
        seen: set[str] = set()
        twice: set[str] = set()
        for key in plan.item_keys():  # the keys alone: a plan's items are built only when read
            (twice if key in seen else seen).add(key)
        if twice:
            raise StoreError(f"run {record.id}: plan keys must be unique, repeated: {', '.join(sorted(twice)[:5])}")
        del seen
        self.require_writable(f"store run {record.id}")
        row = _stored((
            record.id,
            _time_text(record.created),
            None if record.finished is None else _time_text(record.finished),
            LEGACY_STATUSES.get(record.status, record.status),
            record.agent_version,
            record.note,
            record.suite_hash,
            _SNAPSHOT.dump_json(record.snapshot, exclude_unset=True).decode(),
            _json_text(record.settings),
            _VERSIONS.dump_json(record.versions).decode(),
            plan.to_json(),
            None if record.totals is None else _json_text(record.totals),
            record.repeat_of,
            record.imported_from,
            record.replay_of,
        ))  # fmt: skip
        if record.status == "running":  # about to run: its room to end as failed is taken before it exists
            self._hold(record.id, _reserve_size(sum(len(value) for value in row if isinstance(value, str))))
        try:
            with self._sql(f"store run {record.id}") as conn:
                try:
                    conn.execute(
                        f"INSERT INTO runs ({_RUN_COLUMNS}, imported_from, replay_of) "
                        f"VALUES ({', '.join('?' * len(row))})",
                        row,
                    )
                except sqlite3.IntegrityError as exc:
                    if "UNIQUE" in str(exc):
                        raise StoreError(f"a run with id {record.id} already exists in {self.path}") from exc
                    raise
        except BaseException:
            if record.status == "running":
                self._reserve(record.id).release()
            raise

    def get_run(self, ref: str) -> RunRecord:
        """The run ``ref`` names: a full id, a unique prefix of one, ``latest`` or ``latest~N`` (N before it)."""
        ref = ref.strip()
        if not ref:
            raise StoreInputError("no run given: name a run by its id, a unique prefix of it, latest, or latest~N")
        latest = _LATEST.match(ref)
        with self._sql(f"read run {ref}") as conn:
            if latest:
                back = int(latest.group(1) or 0)
                row = conn.execute(f"{self._runs} {_NEWEST_FIRST} LIMIT 1 OFFSET ?", (back,)).fetchone()
                if row is None:
                    count = conn.execute("SELECT COUNT(*) FROM runs").fetchone()[0]
                    if count == 0:
                        raise StoreInputError(f"no runs are stored in {self.path} yet")
                    raise StoreInputError(
                        f"{ref}: only {count} run(s) are stored in {self.path} (the oldest is latest~{count - 1})"
                    )
                return self._record(row)
            if ref.startswith("latest"):
                raise StoreInputError(
                    f"{ref!r} is not a run reference: write latest, or latest~N with N a number (latest~1)"
                )
            row = conn.execute(f"{self._runs} WHERE runs.id = ?", (ref,)).fetchone()
            if row is not None:
                return self._record(row)
            matches = [
                str(r[0])
                for r in conn.execute(
                    f"SELECT id FROM runs WHERE substr(id, 1, ?) = ? {_NEWEST_FIRST} LIMIT ?",
                    (len(ref), ref, _MATCHES_SHOWN + 1),
                )
            ]
            if len(matches) == 1:
                row = conn.execute(f"{self._runs} WHERE runs.id = ?", (matches[0],)).fetchone()
                return self._record(row)
            if matches:
                more = " and more" if len(matches) > _MATCHES_SHOWN else ""
                raise StoreInputError(
                    f"{ref!r} matches several runs: {', '.join(matches[:_MATCHES_SHOWN])}{more}; give more of the id"
                )
            recent = [str(r[0]) for r in conn.execute(f"SELECT id FROM runs {_NEWEST_FIRST} LIMIT ?", (_RECENT_SHOWN,))]
        if not recent:
            raise StoreInputError(f"no run {ref!r}: no runs are stored in {self.path} yet")
        raise StoreInputError(f"no run {ref!r} in {self.path}; the most recent runs are: {', '.join(recent)}")

    def list_runs(self, limit: int | None = 20, *, skipped: list[Unreadable] | None = None) -> list[RunRecord]:
        """Stored runs, newest first (``limit=None`` for all). Results are not read.

        A run whose record cannot be read raises :class:`UnreadableRunError`, unless ``skipped`` is given: it is
        then left out and described there, so one damaged run does not hide the others.
        """
        if limit is not None and limit < 1:
            raise StoreError(f"cannot list {limit} runs: the limit must be at least 1")
        with self._sql("list runs") as conn:
            rows = conn.execute(f"{self._runs} {_NEWEST_FIRST} LIMIT ?", (-1 if limit is None else limit,)).fetchall()
        records = []
        for row in rows:
            try:
                records.append(self._record(row))
            except UnreadableRunError as exc:
                if skipped is None:
                    raise
                fix = f"delete it with `simulator runs delete {exc.run_id}`"
                skipped.append(Unreadable(exc.run_id, str(exc), fix))
        return records

    def latest_completed(self, suite_hash: str) -> RunRecord | None:
        """The newest completed run of the suites with this hash, if any."""
        with self._sql("find the latest completed run") as conn:
            row = conn.execute(
                f"{self._runs} WHERE runs.suite_hash = ? AND runs.status = 'completed' {_NEWEST_FIRST} LIMIT 1",
                (suite_hash,),
            ).fetchone()
        return None if row is None else self._record(row)

    def set_status(
        self,
        run_id: str,
        status: RunStatus,
        *,
        totals: RunSummary | None = None,
        finished: datetime | None = None,
    ) -> None:
        """Change a run's status, and its totals and finishing time when given (a runner uses :meth:`finish`)."""
        self.require_writable(f"set the status of run {run_id}")
        sets, values = _status_update(status, totals, finished)
        with self._sql(f"set the status of run {run_id}") as conn:
            cursor = conn.execute(f"UPDATE runs SET {', '.join(sets)} WHERE id = ?", (*values, run_id))
            if cursor.rowcount == 0:
                raise StoreInputError(self._unknown(run_id))

    def set_note(self, run_id: str, note: str) -> None:
        """Replace a run's note (the only thing about a run a person can change)."""
        self.require_writable(f"set the note of run {run_id}")
        with self._sql(f"set the note of run {run_id}") as conn:
            if conn.execute("UPDATE runs SET note = ? WHERE id = ?", _stored((note, run_id))).rowcount == 0:
                raise StoreInputError(self._unknown(run_id))

    def delete_run(self, run_id: str) -> None:
        """Delete a run and all its results; refused while a live process runs it."""
        self.require_writable(f"delete run {run_id}")
        with self._sql(f"delete run {run_id}") as conn:
            conn.execute("BEGIN IMMEDIATE")
            try:
                held = self._held(conn, run_id)
                if held is not None and held.alive():
                    raise self._busy(run_id, held, "deleted")
                if conn.execute("DELETE FROM runs WHERE id = ?", (run_id,)).rowcount == 0:
                    raise StoreInputError(self._unknown(run_id))
                conn.execute("COMMIT")
                self._reserve(run_id).release()  # one a killed process left
            except BaseException:
                if conn.in_transaction:
                    conn.execute("ROLLBACK")
                raise

    # --- leases

    def acquire(self, run_id: str, *, pid: int | None = None, host: str | None = None) -> Lease:
        """Take the run's lease for this process (``pid``/``host`` default to it) and set its status ``running``.

        One ``BEGIN IMMEDIATE`` transaction: of two processes asking at once, exactly one gets the lease; the
        other, and anyone asking while the owner is alive, gets :class:`RunBusyError` naming the owner. A lease
        whose owner is gone (see :meth:`Lease.alive`) is taken over.
        """
        self.require_writable(f"run {run_id}")
        self._hold_reserve(run_id)
        now = datetime.now(UTC)
        lease = Lease(run_id, os.getpid() if pid is None else pid, host or HOST, secrets.token_hex(8), now, now)
        with self._sql(f"take the lease of run {run_id}") as conn:
            conn.execute("BEGIN IMMEDIATE")
            try:
                if conn.execute("SELECT 1 FROM runs WHERE id = ?", (run_id,)).fetchone() is None:
                    raise StoreInputError(self._unknown(run_id))
                held = self._held(conn, run_id)
                if held is not None and held.alive(now):
                    raise self._busy(run_id, held, "resumed")
                conn.execute(
                    "INSERT OR REPLACE INTO leases (run_id, pid, host, token, started, heartbeat) "
                    "VALUES (?, ?, ?, ?, ?, ?)",
                    (run_id, lease.pid, lease.host, lease.token, _time_text(now), _time_text(now)),
                )
                conn.execute("UPDATE runs SET status = 'running' WHERE id = ?", (run_id,))
                conn.execute("COMMIT")
            except sqlite3.Error as exc:
                if conn.in_transaction:
                    conn.execute("ROLLBACK")
                if disk_full(exc):
                    self._fail_on_full_disk(conn, run_id)
                raise
            except BaseException:
                if conn.in_transaction:
                    conn.execute("ROLLBACK")
                raise
        return lease

    def _reserve(self, run_id: str) -> Reserve:
        """The room kept beside the store while run ``run_id`` runs (see :class:`~simulator._files.Reserve`)."""
        return Reserve(self.path.with_name(f"{self.path.name}-reserve-{re.sub(r'[^A-Za-z0-9._-]', '_', run_id)}"))

    def _hold_reserve(self, run_id: str) -> None:
        """Take the room that ending run ``run_id`` needs on a disk that fills up while it runs: twice its row
        (an update rewrites the row's pages into the journal) and some for the lease and the journal's pages."""
        with self._sql(f"read the size of run {run_id}") as conn:
            found = conn.execute(
                "SELECT length(snapshot) + length(plan) + length(settings) + length(versions) "
                "+ coalesce(length(totals), 0) FROM runs WHERE id = ?",
                (run_id,),
            ).fetchone()
        self._hold(run_id, _reserve_size(int(found[0] or 0) if found is not None else 0))

    def _hold(self, run_id: str, size: int) -> None:
        try:
            self._reserve(run_id).hold(size)
        except DiskError as exc:
            raise DiskError(
                f"cannot run {run_id}: the disk of the run store {self.path} has not {size // 1024} KiB free "
                f"({exc.__cause__ or exc}); free some space, or {_FIX}"
            ) from exc

    def _fail_on_full_disk(self, conn: sqlite3.Connection, run_id: str) -> None:
        """The disk filled up as run ``run_id`` was to start or end: give back its room and mark it ``failed``
        (the status the user guide gives a run stopped by a store that cannot be written), its lease released."""
        self._reserve(run_id).release()
        try:
            conn.execute("BEGIN IMMEDIATE")
            conn.execute("DELETE FROM leases WHERE run_id = ?", (run_id,))
            conn.execute("UPDATE runs SET status = 'failed' WHERE id = ?", (run_id,))
            conn.execute("COMMIT")
        except sqlite3.Error:
            if conn.in_transaction:
                conn.execute("ROLLBACK")

    def beat(self, lease: Lease) -> bool:
        """Renew the lease's heartbeat; False when the lease is no longer this owner's (it was taken over)."""
        with self._sql(f"renew the lease of run {lease.run_id}") as conn:
            cursor = conn.execute(
                "UPDATE leases SET heartbeat = ? WHERE run_id = ? AND token = ?",
                (_time_text(datetime.now(UTC)), lease.run_id, lease.token),
            )
            return cursor.rowcount == 1

    @contextmanager
    def heartbeat(
        self, lease: Lease, *, every: float = HEARTBEAT_S, on_lost: Callable[[], None] | None = None
    ) -> Iterator[None]:
        """Renew the lease every ``every`` seconds from a thread (a busy event loop or a slow agent does not
        delay it) while the block runs; ``on_lost`` is called (from that thread) if the lease was taken over."""
        stop = threading.Event()

        def beat() -> None:
            while not stop.wait(every):
                try:
                    kept = self.beat(lease)
                except StoreError:
                    continue  # busy or closed: the next beat tries again, and the block is ending if closed
                if not kept and not stop.is_set():
                    if on_lost is not None:
                        on_lost()
                    return

        thread = threading.Thread(target=beat, name=f"lease of run {lease.run_id}", daemon=True)
        thread.start()
        try:
            yield
        finally:
            stop.set()
            thread.join(timeout=1.0)

    def finish(
        self, lease: Lease, status: RunStatus, *, totals: RunSummary | None = None, finished: datetime | None = None
    ) -> bool:
        """Give the lease back and set the run's final status (and totals, finishing time) in one transaction.
        False, and nothing changed, when the lease is no longer this owner's."""
        sets, values = _status_update(status, totals, finished)
        reserve = self._reserve(lease.run_id)
        with self._sql(f"set the status of run {lease.run_id}") as conn:
            for last_try in (False, True):
                conn.execute("BEGIN IMMEDIATE")
                try:
                    gone = conn.execute(
                        "DELETE FROM leases WHERE run_id = ? AND token = ?", (lease.run_id, lease.token)
                    ).rowcount
                    if gone:
                        conn.execute(f"UPDATE runs SET {', '.join(sets)} WHERE id = ?", (*values, lease.run_id))
                    conn.execute("COMMIT")
                    break
                except sqlite3.Error as exc:
                    if conn.in_transaction:
                        conn.execute("ROLLBACK")
                    if last_try or not disk_full(exc):
                        raise
                    reserve.release()  # the room kept for this very write: the status is stored once more
                except BaseException:
                    if conn.in_transaction:
                        conn.execute("ROLLBACK")
                    raise
        reserve.release()
        return bool(gone)

    def owner(self, run_id: str) -> Lease | None:
        """The live process running the run, if any (a lease whose owner is gone is not returned)."""
        if not self._leases:
            return None
        with self._sql(f"read the lease of run {run_id}") as conn:
            held = self._held(conn, run_id)
        return held if held is not None and held.alive() else None

    def check_free(self, run_id: str, doing: str) -> None:
        """Raise :class:`RunBusyError` naming the owner if a live process runs the run (``doing``: what was
        asked, e.g. "resumed"); a check before the atomic :meth:`acquire`, for a message before any work."""
        held = self.owner(run_id)
        if held is not None:
            raise self._busy(run_id, held, doing)

    def _held(self, conn: sqlite3.Connection, run_id: str) -> Lease | None:
        row = conn.execute(
            f"SELECT run_id, {', '.join(_LEASE_COLUMNS)} FROM leases WHERE run_id = ?", (run_id,)
        ).fetchone()
        if row is None:
            return None
        return _lease(run_id, [row[name] for name in _LEASE_COLUMNS])

    def _busy(self, run_id: str, lease: Lease, doing: str) -> RunBusyError:
        return RunBusyError(
            f"run {run_id} is being run by {lease.owner}: {lease.describe()}; it cannot be {doing} while that "
            f"process runs it: wait for it to end, or stop it (kill -TERM {lease.pid} on {lease.host}; it stops "
            "cleanly and can be resumed)",
            lease,
        )

    # --- results

    def save_result(self, stored: StoredResult) -> None:
        """Store one finished conversation and commit at once. A key is stored once per run, never replaced."""
        self.require_writable(f"store result {stored.key} of run {stored.run_id}")
        row = _stored((
            stored.run_id,
            stored.key,
            stored.suite,
            stored.case,
            stored.persona,
            stored.repeat,
            stored.outcome,
            stored.duration_s,
            _time_text(stored.finished),
            _json_text(stored.result),
        ))  # fmt: skip
        with self._sql(f"store result {stored.key} of run {stored.run_id}") as conn:
            try:
                conn.execute(f"INSERT INTO results ({_RESULT_COLUMNS}) VALUES ({', '.join('?' * len(row))})", row)
            except sqlite3.IntegrityError as exc:
                message = str(exc)
                if "already stored" in message or "UNIQUE" in message:
                    raise StoreError(
                        f"result {stored.key!r} of run {stored.run_id} is already stored; stored results are never "
                        "replaced"
                    ) from exc
                if "FOREIGN KEY" in message:
                    raise StoreError(self._unknown(stored.run_id)) from exc
                raise

    # --- cassettes

    def save_cassette(self, run_id: str, key: str, data: bytes) -> None:
        """Store the cassette of one conversation (compressed, secrets already scrubbed); stored once per key."""
        self.require_writable(f"store the cassette of {key} of run {run_id}")
        with self._sql(f"store the cassette of {key} of run {run_id}") as conn:
            try:
                conn.execute('INSERT INTO cassettes (run_id, "key", data) VALUES (?, ?, ?)', (run_id, key, data))
            except sqlite3.IntegrityError as exc:
                if "FOREIGN KEY" in str(exc):
                    raise StoreError(self._unknown(run_id)) from exc
                raise StoreError(f"the cassette of {key!r} of run {run_id} is already stored") from exc

    def cassette(self, run_id: str, key: str) -> bytes | None:
        """The stored cassette of one conversation, or None (not recorded)."""
        if not self._replays:
            return None
        with self._sql(f"read the cassette of {key} of run {run_id}") as conn:
            row = conn.execute('SELECT data FROM cassettes WHERE run_id = ? AND "key" = ?', (run_id, key)).fetchone()
        return None if row is None else bytes(row[0])

    def cassette_keys(self, run_id: str) -> set[str]:
        """The result keys of a run that have a cassette."""
        if not self._replays:
            return set()
        with self._sql(f"read the cassettes of run {run_id}") as conn:
            return {str(row[0]) for row in conn.execute('SELECT "key" FROM cassettes WHERE run_id = ?', (run_id,))}

    def results(self, run_id: str, *, skipped: list[Unreadable] | None = None) -> list[StoredResult]:
        """The stored results of a run, in plan order (results whose key is not in the plan last); for
        ``skipped`` see :meth:`iter_results`."""
        return list(self.iter_results(run_id, skipped=skipped))

    def iter_results(
        self, run_id: str, *, batch: int = 64, skipped: list[Unreadable] | None = None
    ) -> Iterator[StoredResult]:
        """The stored results of a run one by one, in the order of :meth:`results`: at most ``batch`` results
        are read at a time, so a run of any size can be summed up in flat memory.

        A result that cannot be read raises :class:`StoreError`, unless ``skipped`` is given: it is then left
        out and described there, so one damaged row does not hide the rest of the run.
        """
        for chunk in self._ordered_ids(run_id, batch):
            by_id = self._by_ids(run_id, chunk, _RESULT_COLUMNS)
            for result_id in chunk:
                if result_id in by_id:  # else deleted with its run meanwhile
                    found = self._readable(by_id[result_id], skipped)
                    if found is not None:
                        yield found

    def _readable(self, row: sqlite3.Row, skipped: list[Unreadable] | None) -> StoredResult | None:
        """The result of ``row``; None, described in ``skipped``, when it cannot be read and ``skipped`` is given."""
        try:
            return self._result(row)
        except StoreError as exc:
            if skipped is None:
                raise
            skipped.append(_unreadable_result(row, str(exc)))
            return None

    def _ordered_ids(self, run_id: str, batch: int) -> Iterator[list[int]]:
        """The ids of the run's results in plan order, at most ``batch`` at a time (results whose key is not in
        the plan last, in insertion order); reads only the small columns, never a result's JSON. The plan's keys
        are looked up ``batch`` at a time: nothing of the size of the run is held but its compact plan."""
        with self._sql(f"read the results of run {run_id}") as conn:
            plan_row = conn.execute("SELECT plan FROM runs WHERE id = ?", (run_id,)).fetchone()
            if plan_row is None:
                raise StoreInputError(self._unknown(run_id))
        try:
            plan = Plan.from_json(plan_row[0])
        except ValueError as exc:
            raise StoreError(self._damaged(f"the plan of run {run_id}", exc)) from exc
        del plan_row  # its JSON text (about 100 bytes a conversation) is not kept while the results are read
        found = 0
        keys = plan.item_keys()
        while chunk := list(itertools.islice(keys, batch)):
            with self._sql(f"read the results of run {run_id}") as conn:
                rows = conn.execute(
                    f'SELECT "key", id FROM results WHERE run_id = ? AND "key" IN ({", ".join("?" * len(chunk))})',
                    (run_id, *chunk),
                ).fetchall()
            by_key = {str(row[0]): int(row[1]) for row in rows}
            ids = [by_key[key] for key in chunk if key in by_key]
            found += len(ids)
            if ids:
                yield ids
        if found >= self.result_count(run_id):
            return
        # Results of keys the plan does not have (a run merged or imported so): only now is a set of keys made.
        planned = set(plan.item_keys())
        with self._sql(f"read the results of run {run_id}") as conn:
            rows = conn.execute('SELECT id, "key" FROM results WHERE run_id = ? ORDER BY id', (run_id,)).fetchall()
        strangers = [int(row[0]) for row in rows if str(row[1]) not in planned]
        for start in range(0, len(strangers), batch):
            yield strangers[start : start + batch]

    def _by_ids(self, run_id: str, ids: Sequence[int], columns: str) -> dict[int, sqlite3.Row]:
        with self._sql(f"read the results of run {run_id}") as conn:
            rows = conn.execute(
                f"SELECT id, {columns} FROM results WHERE id IN ({', '.join('?' * len(ids))})", list(ids)
            ).fetchall()
        return {int(row["id"]): row for row in rows}

    def iter_result_rows(self, run_id: str, *, batch: int = 256) -> Iterator[ResultRow]:
        """What a table row of each result holds (:class:`ResultRow`), in the order of :meth:`results`, read
        ``batch`` at a time; only the reasons are taken out of a result's JSON (by SQLite), so this is cheap
        for a run of any size."""
        # json_valid first: a result whose JSON was damaged still has its row, without reasons.
        columns = f"{_ROW_COLUMNS}, CASE WHEN json_valid(result) THEN json_extract(result, '$.reasons') END AS reasons"
        for chunk in self._ordered_ids(run_id, batch):
            by_id = self._by_ids(run_id, chunk, columns)
            for result_id in chunk:
                if result_id in by_id:  # else deleted with its run meanwhile
                    yield _row(by_id[result_id])

    def outcome_counts(self, run_id: str) -> dict[str, int]:
        """How many stored results of the run have each outcome (outcomes without any are left out)."""
        with self._sql(f"count the results of run {run_id}") as conn:
            rows = conn.execute(
                "SELECT outcome, COUNT(*) FROM results WHERE run_id = ? GROUP BY outcome", (run_id,)
            ).fetchall()
        return {str(row[0]): int(row[1]) for row in rows}

    def result_count(self, run_id: str) -> int:
        """How many results of the run are stored."""
        return sum(self.outcome_counts(run_id).values())

    def first_results(
        self, run_id: str, outcomes: Sequence[str], limit: int, *, skipped: list[Unreadable] | None = None
    ) -> list[StoredResult]:
        """At most ``limit`` results of the run with one of ``outcomes``, in the terminal table's order: errors,
        failures, unsure, passes, then by case, persona and repeat. SQLite picks them (over the small columns):
        only the results returned are read whole. For ``skipped`` see :meth:`iter_results`."""
        if limit <= 0 or not outcomes:
            return []
        with self._sql(f"read the results of run {run_id}") as conn:
            ids = [
                int(row[0])
                for row in conn.execute(
                    f"SELECT id FROM results WHERE run_id = ? AND outcome IN ({', '.join('?' * len(outcomes))}) "
                    f"ORDER BY {_TABLE_ORDER} LIMIT ?",
                    (run_id, *outcomes, limit),
                )
            ]
        if not ids:
            return []
        by_id = self._by_ids(run_id, ids, _RESULT_COLUMNS)
        found = (self._readable(by_id[result_id], skipped) for result_id in ids if result_id in by_id)
        return [result for result in found if result is not None]

    def count_mentioning(self, run_id: str, text: str) -> int:
        """How many results of the run have ``text`` in one of their reasons, a score's reason or a step's
        rationale; counted by SQLite over the stored JSON, without reading a result into Python."""
        # instr over the raw JSON first: a cheap filter, exact when the text is the same inside a JSON string.
        prefilter = "instr(result, ?) > 0 AND " if json.dumps(text, ensure_ascii=False)[1:-1] == text else ""
        query = (
            f"SELECT COUNT(*) FROM results AS r WHERE run_id = ? AND json_valid(r.result) AND {prefilter}("
            "EXISTS (SELECT 1 FROM json_each(r.result, '$.reasons') WHERE instr(value, ?) > 0) OR "
            "EXISTS (SELECT 1 FROM json_each(r.result, '$.scores') "
            "WHERE instr(json_extract(value, '$.reason'), ?) > 0) OR "
            "EXISTS (SELECT 1 FROM json_each(r.result, '$.transcript.steps') "
            "WHERE instr(json_extract(value, '$.rationale'), ?) > 0))"
        )
        params = (run_id, *([text] if prefilter else []), text, text, text)
        with self._sql(f"read the results of run {run_id}") as conn:
            return int(conn.execute(query, params).fetchone()[0])

    def completed_keys(self, run_id: str) -> set[str]:
        """Keys of the run's stored results: the conversations a resumed run must not run again."""
        with self._sql(f"read the results of run {run_id}") as conn:
            if conn.execute("SELECT 1 FROM runs WHERE id = ?", (run_id,)).fetchone() is None:
                raise StoreInputError(self._unknown(run_id))
            return {str(row[0]) for row in conn.execute('SELECT "key" FROM results WHERE run_id = ?', (run_id,))}

    def stored_keys(self, run_id: str, keys: Sequence[str]) -> set[str]:
        """Which of ``keys`` (a few hundred at most: one query) have a stored result in the run."""
        if not keys:
            return set()
        with self._sql(f"read the results of run {run_id}") as conn:
            rows = conn.execute(
                f'SELECT "key" FROM results WHERE run_id = ? AND "key" IN ({", ".join("?" * len(keys))})',
                (run_id, *keys),
            )
            return {str(row[0]) for row in rows}

    def mean_duration(self, suite_hash: str) -> float | None:
        """Mean duration in seconds of the stored results of runs with this suite hash; None if there are none."""
        with self._sql("estimate a case's duration") as conn:
            value = conn.execute(
                "SELECT AVG(results.duration_s) FROM results JOIN runs ON runs.id = results.run_id "
                "WHERE runs.suite_hash = ?",
                (suite_hash,),
            ).fetchone()[0]
        return None if value is None else float(value)

    # --- rows to models

    def _record(self, row: sqlite3.Row) -> RunRecord:
        status = LEGACY_STATUSES.get(row["status"], row["status"])
        if status == "running":
            lease = None
            if row["lease_token"] is not None:
                lease = _lease(row["id"], [row[f"lease_{name}"] for name in _LEASE_COLUMNS])
            if lease is None or not lease.alive():
                status = "interrupted"  # nothing runs it any more: killed, or the machine went down
        imported = row["imported_from"] if self._leases else imported_from_note(str(row["note"] or ""))
        text = _compose(
            {
                "id": row["id"],
                "created": row["created"],
                "finished": row["finished"],
                "status": status,
                "agent_version": row["agent_version"],
                "note": row["note"],
                "suite_hash": row["suite_hash"],
                "repeat_of": row["repeat_of"],
                "imported_from": imported,
                "replay_of": row["replay_of"],
            },
            {
                "snapshot": row["snapshot"],
                "settings": row["settings"],
                "versions": row["versions"],
                "totals": row["totals"],
            },
        )
        try:
            record = RunRecord.model_validate_json(text)
        except ValidationError as exc:
            raise UnreadableRunError(self._damaged(f"run {row['id']}", exc), str(row["id"])) from exc
        try:
            # Read apart, one item at a time, into the plan's compact form: parsed with the rest of the run, the
            # whole list would be objects at once, memory growing with the plan.
            plan = Plan.from_json(row["plan"])
        except ValueError as exc:
            raise UnreadableRunError(self._damaged(f"the plan of run {row['id']}", exc), str(row["id"])) from exc
        return record.model_copy(update={"plan": plan})

    def _result(self, row: sqlite3.Row) -> StoredResult:
        text = _compose(
            {
                "run_id": row["run_id"],
                "key": row["key"],
                "suite": row["suite"],
                "case": row["case_name"],
                "persona": row["persona"],
                "repeat": row["repeat"],
                "outcome": row["outcome"],
                "duration_s": row["duration_s"],
                "finished": row["finished"],
            },
            {"result": row["result"]},
        )
        try:
            return StoredResult.model_validate_json(text)
        except ValidationError as exc:
            raise StoreError(self._damaged(f"{_result_name(row)} of run {row['run_id']}", exc)) from exc

    def _damaged(self, what: str, exc: ValueError) -> str:
        problem = _first_problem(exc) if isinstance(exc, ValidationError) else str(exc)
        return (
            f"{what} in {self.path} cannot be read ({problem}); it was written by another version of "
            "Simulator or changed by hand"
        )

    def _unknown(self, run_id: str) -> str:
        return f"no run {run_id!r} in {self.path}"


def _reserve_size(row_bytes: int) -> int:
    """Bytes kept free to end a run whose row is ``row_bytes`` long: twice the row, and 128 KiB for the pages
    around it (the lease, the journal's frame headers)."""
    return 2 * row_bytes + 128 * 1024


def _result_name(row: sqlite3.Row) -> str:
    """A stored result as a person knows it: its case, persona and repeat (and its key, which is unique)."""
    persona = "" if row["persona"] is None else f" [{row['persona']}]"
    return f"the result of case {str(row['case_name'])!r}{persona} #{row['repeat']} (key {row['key']})"


def _unreadable_result(row: sqlite3.Row, cause: str) -> Unreadable:
    """A result row that cannot be read, with the fix: the run's other results are still read."""
    run_id = str(row["run_id"])
    fix = (
        f"run that case again (`simulator simulate SUITE --case {str(row['case_name'])!r}`, or the whole run as a "
        f"new one with `simulator runs repeat {run_id}`), or delete the run with `simulator runs delete {run_id}`"
    )
    return Unreadable(run_id, cause, fix)


def _lease(run_id: str, columns: Sequence[Any]) -> Lease | None:
    """A lease from its stored columns (:data:`_LEASE_COLUMNS`, in order); None for a row that cannot be read
    (it then holds nothing)."""
    pid, host, token, started, heartbeat = columns
    try:
        return Lease(run_id, int(pid), str(host), str(token), _parse_time(str(started)), _parse_time(str(heartbeat)))
    except (TypeError, ValueError):
        return None


def _parse_time(text: str) -> datetime:
    moment = datetime.fromisoformat(text)
    return moment if moment.tzinfo is not None else moment.replace(tzinfo=UTC)


def _explain(exc: sqlite3.Error) -> str:
    """An sqlite3 error in words, with a hint for the ones a person can do something about."""
    text = str(exc)
    if "locked" in text or "busy" in text:
        return f"{text}: another process kept the database busy for too long; try again when it has finished"
    if "readonly" in text or "read-only" in text:
        return f"{text}: the file or its folder cannot be written"
    return text
