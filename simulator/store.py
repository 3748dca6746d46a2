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
                status        TEXT NOT NULL      -- pending | running | completed | incomplete
                agent_version TEXT
                note          TEXT NOT NULL
                suite_hash    TEXT NOT NULL      -- what was run, for estimates and comparisons
                snapshot      TEXT NOT NULL      -- JSON list[SuiteSnapshot] (keys as written: exclude_unset)
                settings      TEXT NOT NULL      -- JSON RunSettings
                versions      TEXT NOT NULL      -- JSON {"simulator": ..., "python": ...}
                plan          TEXT NOT NULL      -- JSON list[PlanItem]
                totals        TEXT               -- JSON RunTotals, NULL until first computed
                repeat_of     TEXT               -- the run this one repeats (plain id, no foreign key)

    results     id         INTEGER PRIMARY KEY   -- insertion order
                run_id     TEXT NOT NULL REFERENCES runs(id) ON DELETE CASCADE
                key        TEXT NOT NULL         -- the PlanItem key; UNIQUE (run_id, key)
                suite      INTEGER NOT NULL      -- index into the run's snapshot
                case_name  TEXT NOT NULL
                persona    TEXT
                repeat     INTEGER NOT NULL
                outcome    TEXT NOT NULL         -- pass | fail | error | unsure
                duration_s REAL NOT NULL
                finished   TEXT NOT NULL
                result     TEXT NOT NULL         -- JSON CaseResult (transcript, scores, reasons)

    indexes     runs(created, id) for listing and ``latest``; runs(suite_hash, status, created) for
                estimates and comparison defaults; results(run_id, key) through the UNIQUE constraint.

Immutability is enforced by the database itself, whoever writes to the file:

* ``runs_keep_what_was_run``: an UPDATE that names ``id``, ``created``, ``suite_hash``, ``snapshot``,
  ``settings``, ``versions``, ``agent_version``, ``plan`` or ``repeat_of`` aborts; only ``note``,
  ``status``, ``totals`` and ``finished`` can change;
* ``results_insert_only``, ``results_no_replace``, ``results_no_delete``: a result is never updated,
  replaced (``INSERT OR REPLACE``) or deleted on its own; it goes only with its run (``delete_run``).

The same file also holds the engine's LangGraph checkpoint tables (``checkpoints``, ``writes``), which
this module neither creates nor reads.

Large payloads (snapshot, plan, each result) are JSON text. Reading or listing runs never reads the
``results`` table; :meth:`RunStore.results` reads one run's results, in plan order.

Migrations are small functions ``_mNNN_...`` in :data:`MIGRATIONS`, applied in order, each in one
transaction with its row in ``migrations``. A file whose ``migrations`` table names a migration this
version does not know was written by a newer Simulator: it is refused, never downgraded or altered.
"""

from __future__ import annotations

import json
import os
import re
import secrets
import sqlite3
import threading
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path
from types import TracebackType
from typing import Any, Final, get_args

from pydantic import BaseModel, TypeAdapter, ValidationError

from simulator.errors import StoreError, StoreInputError
from simulator.models.run import PlanItem, RunRecord, RunStatus, RunTotals, StoredResult, SuiteSnapshot
from simulator.safety import redact

#: The environment variable naming the run store file.
DB_ENV: Final = "SIMULATOR_DB"
#: Seconds a connection waits for another process's write lock before giving up.
BUSY_TIMEOUT_S: Final = 30.0

_FIX: Final = f"pass another file with --db PATH or set {DB_ENV}"
_ID_PATTERN: Final = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.:-]*$")
_LATEST: Final = re.compile(r"^latest(?:~(\d+))?$")
_STATUSES: Final[tuple[str, ...]] = get_args(RunStatus)
_RECENT_SHOWN: Final = 5
_MATCHES_SHOWN: Final = 10

#: Tables the engine's LangGraph checkpointer keeps in the same file; they do not make a file foreign.
_CHECKPOINT_TABLES: Final = frozenset({"checkpoints", "writes"})

_SNAPSHOT: Final = TypeAdapter(list[SuiteSnapshot])
_PLAN: Final = TypeAdapter(list[PlanItem])
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


#: Every migration, oldest first. Append only: never rename, reorder or edit one that has shipped.
MIGRATIONS: Final[tuple[Migration, ...]] = (_m001_tables, _m002_immutability, _m003_indexes)


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
_NEWEST_FIRST: Final = "ORDER BY created DESC, id DESC"


class RunStore:
    """Runs and their results in one SQLite file; see the module docstring for the schema.

    Use as a context manager, or call :meth:`close`. One store may be shared between threads (calls are
    serialised); several processes may open the same file (one runner writing, any number reading).
    Every method raises :class:`StoreError` with a message for a person, never a ``sqlite3`` exception.
    """

    def __init__(self, path: Path | str, *, timeout: float = BUSY_TIMEOUT_S) -> None:
        self.path = Path(path)
        self._lock = threading.RLock()
        self._conn: sqlite3.Connection | None = None
        if self.path.is_dir():
            raise StoreInputError(f"{self.path} is a folder, not a run store file: {_FIX}")
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise StoreError(f"cannot create the folder for the run store {self.path} ({exc}): {_FIX}") from exc
        try:
            conn = sqlite3.connect(self.path, timeout=timeout, isolation_level=None, check_same_thread=False)
        except sqlite3.Error as exc:
            raise StoreError(f"cannot open the run store {self.path} ({exc}): {_FIX}") from exc
        try:
            conn.row_factory = sqlite3.Row
            conn.execute("PRAGMA foreign_keys = ON")
            conn.execute("PRAGMA journal_mode = WAL")  # the first read of the file: fails here if it is not SQLite
            conn.execute("PRAGMA synchronous = NORMAL")
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
        keys = [item.key for item in record.plan]
        if len(set(keys)) != len(keys):
            twice = sorted({key for key in keys if keys.count(key) > 1})
            raise StoreError(f"run {record.id}: plan keys must be unique, repeated: {', '.join(twice[:5])}")
        row = _stored((
            record.id,
            _time_text(record.created),
            None if record.finished is None else _time_text(record.finished),
            record.status,
            record.agent_version,
            record.note,
            record.suite_hash,
            _SNAPSHOT.dump_json(record.snapshot, exclude_unset=True).decode(),
            _json_text(record.settings),
            _VERSIONS.dump_json(record.versions).decode(),
            _PLAN.dump_json(record.plan).decode(),
            None if record.totals is None else _json_text(record.totals),
            record.repeat_of,
        ))  # fmt: skip
        with self._sql(f"store run {record.id}") as conn:
            try:
                conn.execute(f"INSERT INTO runs ({_RUN_COLUMNS}) VALUES ({', '.join('?' * len(row))})", row)
            except sqlite3.IntegrityError as exc:
                if "UNIQUE" in str(exc):
                    raise StoreError(f"a run with id {record.id} already exists in {self.path}") from exc
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
                row = conn.execute(
                    f"SELECT {_RUN_COLUMNS} FROM runs {_NEWEST_FIRST} LIMIT 1 OFFSET ?", (back,)
                ).fetchone()
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
            row = conn.execute(f"SELECT {_RUN_COLUMNS} FROM runs WHERE id = ?", (ref,)).fetchone()
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
                row = conn.execute(f"SELECT {_RUN_COLUMNS} FROM runs WHERE id = ?", (matches[0],)).fetchone()
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

    def list_runs(self, limit: int | None = 20) -> list[RunRecord]:
        """Stored runs, newest first (``limit=None`` for all). Results are not read."""
        if limit is not None and limit < 1:
            raise StoreError(f"cannot list {limit} runs: the limit must be at least 1")
        with self._sql("list runs") as conn:
            rows = conn.execute(
                f"SELECT {_RUN_COLUMNS} FROM runs {_NEWEST_FIRST} LIMIT ?", (-1 if limit is None else limit,)
            ).fetchall()
        return [self._record(row) for row in rows]

    def latest_completed(self, suite_hash: str) -> RunRecord | None:
        """The newest completed run of the suites with this hash, if any."""
        with self._sql("find the latest completed run") as conn:
            row = conn.execute(
                f"SELECT {_RUN_COLUMNS} FROM runs WHERE suite_hash = ? AND status = 'completed' "
                f"{_NEWEST_FIRST} LIMIT 1",
                (suite_hash,),
            ).fetchone()
        return None if row is None else self._record(row)

    def set_status(
        self,
        run_id: str,
        status: RunStatus,
        *,
        totals: RunTotals | None = None,
        finished: datetime | None = None,
    ) -> None:
        """Change a run's status, and its totals and finishing time when given."""
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
        with self._sql(f"set the status of run {run_id}") as conn:
            cursor = conn.execute(f"UPDATE runs SET {', '.join(sets)} WHERE id = ?", (*values, run_id))
            if cursor.rowcount == 0:
                raise StoreInputError(self._unknown(run_id))

    def set_note(self, run_id: str, note: str) -> None:
        """Replace a run's note (the only thing about a run a person can change)."""
        with self._sql(f"set the note of run {run_id}") as conn:
            if conn.execute("UPDATE runs SET note = ? WHERE id = ?", _stored((note, run_id))).rowcount == 0:
                raise StoreInputError(self._unknown(run_id))

    def delete_run(self, run_id: str) -> None:
        """Delete a run and all its results."""
        with self._sql(f"delete run {run_id}") as conn:
            if conn.execute("DELETE FROM runs WHERE id = ?", (run_id,)).rowcount == 0:
                raise StoreInputError(self._unknown(run_id))

    # --- results

    def save_result(self, stored: StoredResult) -> None:
        """Store one finished conversation and commit at once. A key is stored once per run, never replaced."""
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

    def results(self, run_id: str) -> list[StoredResult]:
        """The stored results of a run, in plan order (results whose key is not in the plan last)."""
        with self._sql(f"read the results of run {run_id}") as conn:
            plan_row = conn.execute("SELECT plan FROM runs WHERE id = ?", (run_id,)).fetchone()
            if plan_row is None:
                raise StoreInputError(self._unknown(run_id))
            rows = conn.execute(
                f"SELECT {_RESULT_COLUMNS} FROM results WHERE run_id = ? ORDER BY id", (run_id,)
            ).fetchall()
        try:
            plan = _PLAN.validate_json(plan_row[0])
        except ValidationError as exc:
            raise StoreError(self._damaged(f"the plan of run {run_id}", exc)) from exc
        order = {item.key: index for index, item in enumerate(plan)}
        results = [self._result(row) for row in rows]
        return sorted(results, key=lambda result: order.get(result.key, len(order)))  # stable: others by insertion

    def completed_keys(self, run_id: str) -> set[str]:
        """Keys of the run's stored results: the conversations a resumed run must not run again."""
        with self._sql(f"read the results of run {run_id}") as conn:
            if conn.execute("SELECT 1 FROM runs WHERE id = ?", (run_id,)).fetchone() is None:
                raise StoreInputError(self._unknown(run_id))
            return {str(row[0]) for row in conn.execute('SELECT "key" FROM results WHERE run_id = ?', (run_id,))}

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
        text = _compose(
            {
                "id": row["id"],
                "created": row["created"],
                "finished": row["finished"],
                "status": row["status"],
                "agent_version": row["agent_version"],
                "note": row["note"],
                "suite_hash": row["suite_hash"],
                "repeat_of": row["repeat_of"],
            },
            {
                "snapshot": row["snapshot"],
                "settings": row["settings"],
                "versions": row["versions"],
                "plan": row["plan"],
                "totals": row["totals"],
            },
        )
        try:
            return RunRecord.model_validate_json(text)
        except ValidationError as exc:
            raise StoreError(self._damaged(f"run {row['id']}", exc)) from exc

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
            raise StoreError(self._damaged(f"result {row['key']} of run {row['run_id']}", exc)) from exc

    def _damaged(self, what: str, exc: ValidationError) -> str:
        return (
            f"{what} in {self.path} cannot be read ({_first_problem(exc)}); it was written by another version of "
            "Simulator or changed by hand"
        )

    def _unknown(self, run_id: str) -> str:
        return f"no run {run_id!r} in {self.path}"


def _explain(exc: sqlite3.Error) -> str:
    """An sqlite3 error in words, with a hint for the ones a person can do something about."""
    text = str(exc)
    if "locked" in text or "busy" in text:
        return f"{text}: another process kept the database busy for too long; try again when it has finished"
    if "readonly" in text or "read-only" in text:
        return f"{text}: the file or its folder cannot be written"
    return text
