"""Every SQLite connection Simulator opens is set up here: the run store's, the request cache's, the checkpoints'.

Owned by the store (:mod:`simulator.store`), and a leaf module (only the standard library) so that the model
client and the engine, which may not import the store, open their files the same way.

The set-up: a busy timeout (a writer waits for another process's lock instead of failing at once), and for a
file that is written, WAL journal (readers never wait for the writer, nor the writer for them) with
``synchronous=NORMAL`` (a commit is durable against a crash of the process; a power cut may lose the last
commits, never corrupt the file).
"""

from __future__ import annotations

import sqlite3
import time
from pathlib import Path
from typing import Final, Literal

#: Seconds a connection waits for another process's write lock before giving up.
BUSY_TIMEOUT_S: Final = 30.0

#: ``sqlite3``'s transaction control: ``None`` is autocommit (the caller says ``BEGIN``); else the kind of
#: transaction the module opens before a write (``DEFERRED`` is what ``sqlite3`` does by default).
IsolationLevel = Literal["DEFERRED", "IMMEDIATE", "EXCLUSIVE"] | None


def connect(
    target: Path | str,
    *,
    timeout: float = BUSY_TIMEOUT_S,
    isolation_level: IsolationLevel = "DEFERRED",
    check_same_thread: bool = True,
    wal: bool = True,
    foreign_keys: bool = False,
    uri: bool = False,
) -> sqlite3.Connection:
    """A connection to the SQLite file ``target`` (a ``file:`` URI when ``uri``), set up as described above.

    ``wal``: WAL journal and ``synchronous=NORMAL`` (leave it off for a read-only connection, which cannot
    change the journal mode). ``check_same_thread=False`` for a connection used from several threads (its
    owner serialises the calls). Setting the journal mode is the first read of the file: a file that is not a
    database fails here, with ``sqlite3.DatabaseError``, and the connection is closed. Any ``sqlite3.Error``
    is the caller's to put in words.
    """
    connection = sqlite3.connect(
        target if uri else str(target),
        timeout=timeout,
        isolation_level=isolation_level,
        check_same_thread=check_same_thread,
        uri=uri,
    )
    try:
        if foreign_keys:
            connection.execute("PRAGMA foreign_keys = ON")
        if wal:
            _set_wal(connection, timeout)
            connection.execute("PRAGMA synchronous = NORMAL")
    except BaseException:
        connection.close()
        raise
    return connection


def _set_wal(connection: sqlite3.Connection, timeout: float) -> None:
    """Switch ``connection``'s file to WAL, waiting up to ``timeout`` seconds for other connections.

    Changing the journal mode of a file another process is opening at the same moment (several workers
    creating one new store) fails at once with "database is locked": SQLite does not call the busy handler
    for it. So it is tried again, a little later each time, like the busy timeout would.
    """
    deadline = time.monotonic() + timeout
    pause = 0.005
    while True:
        try:
            connection.execute("PRAGMA journal_mode = WAL")
            return
        except sqlite3.OperationalError as exc:
            if ("locked" not in str(exc) and "busy" not in str(exc)) or time.monotonic() + pause > deadline:
                raise
        time.sleep(pause)
        pause = min(pause * 2, 0.1)


# SQLite's primary result codes (the low byte of an extended code) of a disk that cannot take a write.
_SQLITE_IOERR: Final = 10
_SQLITE_FULL: Final = 13


def disk_full(exc: sqlite3.Error) -> bool:
    """Whether ``exc`` says the disk is full or failing (SQLITE_FULL, SQLITE_IOERR and its extended codes)."""
    code = getattr(exc, "sqlite_errorcode", None)
    if code is None:
        return "disk is full" in str(exc) or "disk I/O error" in str(exc)
    return code & 0xFF in (_SQLITE_IOERR, _SQLITE_FULL)
