"""The one writer of files (``simulator._files``): whole or not at all, whatever fails on the way."""

from __future__ import annotations

import errno
import os
import stat
from pathlib import Path

import pytest

from simulator._files import Reserve, write_file
from simulator.errors import DiskError, InputError


def _left(folder: Path) -> dict[str, bytes]:
    return {path.name: path.read_bytes() for path in folder.iterdir()}


@pytest.mark.parametrize(
    ("step", "code", "error"),
    [
        ("fsync", errno.ENOSPC, DiskError),
        ("fsync", errno.EIO, DiskError),
        ("replace", errno.EDQUOT, DiskError),
        ("replace", errno.EACCES, InputError),
    ],
)
def test_a_failed_write_leaves_the_old_file_and_no_temporary_one(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, step: str, code: int, error: type[Exception]
) -> None:
    target = tmp_path / "report.html"
    target.write_bytes(b"old")

    def fail(*args: object) -> None:
        raise OSError(code, os.strerror(code))

    monkeypatch.setattr(os, step, fail)
    with pytest.raises(error) as raised:
        write_file(target, "new " * 1000)
    message = str(raised.value)
    assert "\n" not in message
    assert message.startswith(f"cannot write {target}: {os.strerror(code)}")
    assert _left(tmp_path) == {"report.html": b"old"}


def test_a_write_puts_the_whole_file_with_the_usual_permissions(tmp_path: Path) -> None:
    target = write_file(tmp_path / "new" / "suite.yaml", "name: ü\r\n")
    assert target.read_bytes() == "name: ü\r\n".encode()
    mask = os.umask(0)
    os.umask(mask)
    assert stat.S_IMODE(target.stat().st_mode) == 0o666 & ~mask
    assert _left(target.parent) == {"suite.yaml": "name: ü\r\n".encode()}


def test_without_replace_a_file_that_is_there_stays(tmp_path: Path) -> None:
    target = tmp_path / "export.zip"
    target.write_bytes(b"mine")
    with pytest.raises(FileExistsError):
        write_file(target, b"theirs", replace=False)
    assert _left(tmp_path) == {"export.zip": b"mine"}


def test_a_folder_cannot_be_written_as_a_file(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="cannot write"):
        write_file(tmp_path, "text")


def test_a_reserve_that_does_not_fit_leaves_no_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    def fail(*args: object) -> None:
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    monkeypatch.setattr(os, "fsync", fail)
    with pytest.raises(DiskError, match="No space left on device"):
        Reserve(tmp_path / "runs.db-reserve-x").hold(100_000)
    assert _left(tmp_path) == {}
    monkeypatch.undo()
    Reserve(tmp_path / "runs.db-reserve-x").hold(100_000)
    assert (tmp_path / "runs.db-reserve-x").stat().st_size == 100_000
    Reserve(tmp_path / "runs.db-reserve-x").release()
    assert _left(tmp_path) == {}
