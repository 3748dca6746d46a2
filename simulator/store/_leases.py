"""Who runs a run: its lease (one process at a time), the heartbeat that keeps it, and the space on disk
kept free to end the run."""

from __future__ import annotations

import os
import re
import secrets
import socket
import sqlite3
import threading
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Final

from simulator._files import Reserve
from simulator._sqlite import disk_full
from simulator.errors import DiskError, StoreError, StoreInputError
from simulator.models.run import (
    RunStatus,
)
from simulator.models.summary import RunSummary
from simulator.store._base import StoreParts
from simulator.store._file import _FIX
from simulator.store._rows import _LEASE_COLUMNS, _parse_time, _status_update, _time_text

#: Seconds between two heartbeats of a run's owner.
HEARTBEAT_S: Final = 5.0
#: A lease whose heartbeat is older than this is free (its owner was killed, hangs, or runs on a host that is gone).
STALE_AFTER_S: Final = 60.0
#: This host, as leases name it.
HOST: Final = socket.gethostname() or "localhost"


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


def _lease(run_id: str, columns: Sequence[Any]) -> Lease | None:
    """A lease from its stored columns (:data:`_LEASE_COLUMNS`, in order); None for a row that cannot be read
    (it then holds nothing)."""
    pid, host, token, started, heartbeat = columns
    try:
        return Lease(run_id, int(pid), str(host), str(token), _parse_time(str(started)), _parse_time(str(heartbeat)))
    except (TypeError, ValueError):
        return None


def _reserve_size(row_bytes: int) -> int:
    """Bytes kept free to end a run whose row is ``row_bytes`` long: twice the row, and 128 KiB for the pages
    around it (the lease, the journal's frame headers)."""
    return 2 * row_bytes + 128 * 1024


class LeaseMethods(StoreParts):
    """The lease methods of :class:`~simulator.store.RunStore` (taking, renewing and giving back a run), on the
    store's file and connection."""

    #: Whether the file has the leases table (a store opened read-only may predate it).
    _leases: bool

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
