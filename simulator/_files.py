"""Files Simulator writes (reports, exports, suites, schemas): whole or not at all.

:func:`write_file` writes to a temporary file in the target's own folder, flushes it to the disk and renames it
into place, so a reader, a full disk or a killed process never leaves half a file under the target's name: the
target holds its old content or the new one. A write that fails removes its temporary file and raises a
:class:`~simulator.errors.SimulatorError` whose message is one line naming the file and the cause:
:class:`~simulator.errors.DiskError` when the disk is full or failing, :class:`~simulator.errors.InputError`
for a place that cannot be written (a folder, no permission).
"""

from __future__ import annotations

import contextlib
import errno
import os
import secrets
from pathlib import Path

from simulator.errors import DiskError, InputError

#: The errnos of a disk that cannot take the data (full, over quota, failing), not of a wrong place to write.
DISK_ERRNOS = frozenset({errno.ENOSPC, errno.EDQUOT, errno.EIO})


def disk_trouble(exc: BaseException) -> bool:
    """Whether ``exc`` says the disk cannot take the data (full, over quota, failing)."""
    return isinstance(exc, OSError) and exc.errno in DISK_ERRNOS


def write_error(path: Path | str, exc: OSError) -> DiskError | InputError:
    """The error to raise for ``exc`` met while writing ``path``: one line naming the file, the cause and the fix."""
    cause = exc.strerror or str(exc)
    if disk_trouble(exc):
        return DiskError(f"cannot write {path}: {cause}; nothing was written: free some space, or write elsewhere")
    return InputError(f"cannot write {path}: {cause}; choose a file in a folder you can write")


def write_file(path: Path | str, data: bytes | str, *, replace: bool = True) -> Path:
    """Write ``data`` (text as UTF-8, bytes as they are) to ``path`` in one step; returns the path.

    The folder is created if needed. ``replace=False`` refuses to replace a file that is there, also one that
    appeared while the data was written (:class:`FileExistsError`). On any failure nothing is left behind: no
    temporary file, and ``path`` as it was.
    """
    target = Path(path)
    payload = data.encode("utf-8") if isinstance(data, str) else data
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        if target.is_dir():
            raise IsADirectoryError(errno.EISDIR, os.strerror(errno.EISDIR), str(target))
        if not replace and target.exists():
            raise FileExistsError(errno.EEXIST, os.strerror(errno.EEXIST), str(target))
        temporary = target.with_name(f".{target.name}.{secrets.token_hex(4)}.tmp")
        # os.open with 0o666: the new file gets the usual permissions (the umask applies), unlike mkstemp's 0o600.
        descriptor = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_BINARY", 0), 0o666)
        try:
            with os.fdopen(descriptor, "wb") as handle:
                handle.write(payload)
                handle.flush()
                os.fsync(handle.fileno())
            if replace:
                os.replace(temporary, target)
            else:
                _link_new(temporary, target)
        finally:
            temporary.unlink(missing_ok=True)
    except FileExistsError:
        raise
    except OSError as exc:
        raise write_error(target, exc) from exc
    _sync_folder(target.parent)
    return target


def _link_new(temporary: Path, target: Path) -> None:
    """Put ``temporary`` at ``target`` unless a file is there: a hard link fails if the name is taken, in one
    step. File systems without hard links get the check and a rename (a file appearing in between is replaced)."""
    try:
        os.link(temporary, target)
    except FileExistsError:
        raise
    except OSError as exc:
        if exc.errno not in {errno.EPERM, errno.EOPNOTSUPP, errno.ENOTSUP, errno.EMLINK, errno.EXDEV}:
            raise
        if target.exists():
            raise FileExistsError(errno.EEXIST, os.strerror(errno.EEXIST), str(target)) from exc
        os.replace(temporary, target)


def _sync_folder(folder: Path) -> None:
    """Make the rename itself durable where the system allows it (not on Windows, nor every file system)."""
    try:
        descriptor = os.open(folder, os.O_RDONLY)
    except OSError:
        return
    try:
        with contextlib.suppress(OSError):
            os.fsync(descriptor)
    finally:
        os.close(descriptor)


class Reserve:
    """Room kept on a disk: a file of zeros beside a database, given back (deleted) when the database must write
    its last words on a disk that filled up meanwhile, such as a run's final status after its results no longer
    fit. The file is written out (not sparse), so the space is really taken while it is held."""

    def __init__(self, path: Path) -> None:
        self.path = path

    def hold(self, size: int) -> None:
        """Make the file at least ``size`` bytes; :class:`DiskError` (and no file) when the disk has not that room."""
        try:
            if self.path.exists() and self.path.stat().st_size >= size:
                return
            descriptor = os.open(self.path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | getattr(os, "O_BINARY", 0), 0o666)
            with os.fdopen(descriptor, "wb") as handle:
                block = bytes(min(size, 1 << 16))
                left = size
                while left > 0:
                    left -= handle.write(block[:left])
                handle.flush()
                os.fsync(handle.fileno())
        except OSError as exc:
            self.release()
            error = write_error(self.path, exc)
            raise (error if isinstance(error, DiskError) else DiskError(str(error))) from exc

    def release(self) -> None:
        """Give the room back (delete the file); nothing happens if it is not there or cannot be deleted."""
        with contextlib.suppress(OSError):
            self.path.unlink(missing_ok=True)
