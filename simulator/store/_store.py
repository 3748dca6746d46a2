"""The store itself: :class:`RunStore`, one SQLite file of runs and their results."""

from __future__ import annotations

import itertools
import json
import re
import sqlite3
import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from datetime import datetime
from pathlib import Path
from types import TracebackType
from typing import Final

from pydantic import ValidationError

from simulator._sqlite import BUSY_TIMEOUT_S, connect
from simulator.errors import StoreError, StoreInputError
from simulator.models.run import (
    LEGACY_STATUSES,
    Plan,
    RunRecord,
    RunStatus,
    StoredResult,
)
from simulator.models.summary import RunSummary
from simulator.store._file import _FIX, _RECENT_SHOWN, new_run_id, writable
from simulator.store._leases import LeaseMethods, _reserve_size
from simulator.store._listing import RunListing, listing, listing_query, read_status
from simulator.store._migrations import (
    MIGRATIONS,
    _applied,
    _refuse_unknown,
    imported_from_note,
    migrate,
    migration_name,
)
from simulator.store._recordings import RecordingMethods
from simulator.store._reviews import ReviewMethods
from simulator.store._rows import (
    _LEASE_COLUMNS,
    _LEASE_MIGRATION,
    _LIGHT_RESULT_COLUMNS,
    _NEWEST_FIRST,
    _REPLAY_MIGRATION,
    _RESULT_COLUMNS,
    _REVIEW_MIGRATION,
    _ROW_COLUMNS,
    _RUN_COLUMNS,
    _SNAPSHOT,
    _TABLE_ORDER,
    _VERSIONS,
    ResultRow,
    SearchRow,
    Unreadable,
    UnreadableRunError,
    _compose,
    _explain,
    _first_problem,
    _json_text,
    _not_a_database,
    _result_name,
    _row,
    _status_update,
    _stored,
    _time_text,
    _unreadable_result,
)

_ID_PATTERN: Final = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.:-]*$")
_LATEST: Final = re.compile(r"^latest(?:~(\d+))?$")
_MATCHES_SHOWN: Final = 10


class RunStore(LeaseMethods, ReviewMethods, RecordingMethods):
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
        #: Whether the schema has the reviews table (a read-only older store has not).
        self._reviews = True
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
            self._reviews = _REVIEW_MIGRATION in applied
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

    def run_listings(self, *, skipped: list[Unreadable] | None = None) -> list[RunListing]:
        """Every stored run as a runs list shows it (:class:`RunListing`), newest first, without reading whole
        records. A run that cannot be read raises :class:`UnreadableRunError`, unless ``skipped`` is given (as
        :meth:`list_runs`)."""
        with self._sql("list runs") as conn:
            rows = conn.execute(listing_query(leases=self._leases)).fetchall()
        listings = []
        for row in rows:
            try:
                listings.append(listing(row, str(self.path)))
            except UnreadableRunError as exc:
                if skipped is None:
                    raise
                skipped.append(Unreadable(exc.run_id, str(exc), f"delete it with `simulator runs delete {exc.run_id}`"))
        return listings

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
                self.forget_recordings(run_id)
            except BaseException:
                if conn.in_transaction:
                    conn.execute("ROLLBACK")
                raise

    # --- results (the leases: LeaseMethods)

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

    def results(
        self, run_id: str, *, skipped: list[Unreadable] | None = None, light: bool = False
    ) -> list[StoredResult]:
        """The stored results of a run, in plan order (results whose key is not in the plan last); for
        ``skipped`` and ``light`` see :meth:`iter_results`."""
        return list(self.iter_results(run_id, skipped=skipped, light=light))

    def iter_results(
        self, run_id: str, *, batch: int = 64, skipped: list[Unreadable] | None = None, light: bool = False
    ) -> Iterator[StoredResult]:
        """The stored results of a run one by one, in the order of :meth:`results`: at most ``batch`` results
        are read at a time, so a run of any size can be summed up in flat memory.

        A result that cannot be read raises :class:`StoreError`, unless ``skipped`` is given: it is then left
        out and described there, so one damaged row does not hide the rest of the run.

        ``light``: each result's transcript comes without its events (an empty list; steps, usage, stop reason,
        scores and reasons are all there), about half the reading time: for a page that lists results and
        loads a conversation only when it is opened. Never for anything that decides, sums up or exports.
        """
        columns = _LIGHT_RESULT_COLUMNS if light else _RESULT_COLUMNS
        for chunk in self._ordered_ids(run_id, batch):
            by_id = self._by_ids(run_id, chunk, columns)
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

    def result_texts(self, run_id: str, in_json: Sequence[str] = ()) -> Iterator[SearchRow]:
        """Each result of the run as a text search reads it (:class:`SearchRow`), in store order, a few at a time:
        only those whose JSON holds every one of ``in_json`` (any case), decided by SQLite without Python reading
        the others. Only the words that are plain ASCII and written the same inside a JSON string are so decided;
        the caller looks for the others."""
        plain = [word.lower() for word in in_json if word.isascii() and json.dumps(word)[1:-1] == word]
        where = "".join(" AND instr(lower(result), ?) > 0" for _ in plain)
        with self._sql(f"search the results of run {run_id}") as conn:
            ids = [
                int(row[0])
                for row in conn.execute(f"SELECT id FROM results WHERE run_id = ?{where} ORDER BY id", (run_id, *plain))
            ]
        for start in range(0, len(ids), 64):
            chunk = ids[start : start + 64]
            by_id = self._by_ids(run_id, chunk, '"key", suite, case_name, persona, outcome, result')
            for row in (by_id[result_id] for result_id in chunk if result_id in by_id):
                yield SearchRow(
                    str(row["key"]),
                    int(row["suite"]),
                    str(row["case_name"]),
                    None if row["persona"] is None else str(row["persona"]),
                    str(row["outcome"]),
                    str(row["result"]),
                )

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

    def result(self, run_id: str, key: str) -> StoredResult | None:
        """The stored result of one key of the run, or None when it has none."""
        with self._sql(f"read result {key} of run {run_id}") as conn:
            row = conn.execute(
                f'SELECT {_RESULT_COLUMNS} FROM results WHERE run_id = ? AND "key" = ?', (run_id, key)
            ).fetchone()
        return None if row is None else self._result(row)

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
        status = read_status(row)
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
