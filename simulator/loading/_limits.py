"""The limits every reader of a user's file applies, their wording, and the bounded reading they share.

Suites, hosted evals files, agent and persona files, CSV imports, run imports (JSON and YAML), judge prompt
files and labelled transcripts are all read through :func:`read_bytes`: a regular file of at most
:data:`MAX_FILE_BYTES`, read with at most that many bytes plus one, so that ``/dev/zero``, a named pipe or a
file that grows while it is read can neither hang nor exhaust memory. What is parsed from them is then held
to the same depth, size and number limits, and every refusal is worded the same way wherever it happens.
"""

from __future__ import annotations

import errno
import os
import stat
from pathlib import Path
from typing import Final

#: Files larger than this are refused before they are parsed (and a CSV import never writes a larger suite).
MAX_FILE_BYTES: Final = 10_000_000
#: Lists and mappings nested deeper than this are refused before anything recursive sees them.
MAX_DEPTH: Final = 100
#: Levels a run export adds above the files it holds (run, snapshot, a suite, its agent or persona): an export of
#: a suite nested to the limit is read back.
EXPORT_EXTRA_DEPTH: Final = 8
#: Values (scalars, lists, mappings) a YAML file may write, counted while it is read (each costs about 200
#: bytes of memory with its position): also the most a CSV import may write into a suite.
MAX_VALUES: Final = 500_000
#: Values that may be reached through YAML aliases (``*name``); a few "billion laughs" levels exceed it at once.
MAX_ALIAS_EXPANSION: Final = 100_000
#: Digits a whole number may have.
MAX_INT_DIGITS: Final = 100
#: Problems reported for one file; reading stops at the next (a file of 200,000 mistakes needs no more).
MAX_ERRORS: Final = 100


class ReadProblem(Exception):
    """A file that cannot be read as text: the message says why and what to do, at a 1-based line and column."""

    def __init__(self, message: str, line: int = 1, column: int = 1) -> None:
        self.message = message
        self.line = line
        self.column = column
        super().__init__(message)


def format_size(count: int) -> str:
    """``12_345_678`` -> ``12.3 MB``; the limit itself reads ``10 MB``."""
    number, unit = (count / 1_000_000, "MB") if count >= 1_000_000 else (count / 1000, "kB")
    return f"{number:.1f}".removesuffix(".0") + f" {unit}"


def text_too_large(text: str) -> bool:
    """Whether ``text`` (given as text, not read from a file) is over :data:`MAX_FILE_BYTES`, in characters or in
    UTF-8 bytes."""
    return len(text) > MAX_FILE_BYTES or len(text.encode("utf-8", "surrogatepass")) > MAX_FILE_BYTES


def too_large(size: int | None, advice: str, *, what: str = "file") -> str:
    """``file is 12.3 MB, larger than the 10 MB limit: <advice>`` (the size left out when it is not known)."""
    limit = format_size(MAX_FILE_BYTES)
    shown = "" if size is None else format_size(size) if format_size(size) != limit else f"{size:,} bytes"
    return f"{what} is{f' {shown},' if shown else ''} larger than the {limit} limit: {advice}"


def too_deep(limit: int | None = None) -> str:
    """The refusal of lists and mappings nested deeper than ``limit`` (:data:`MAX_DEPTH`)."""
    return f"nested deeper than the {limit or MAX_DEPTH}-level limit: flatten the lists and mappings"


def too_many_values(advice: str = "split it into several files") -> str:
    """The refusal of a YAML file of more than :data:`MAX_VALUES` values (after "file" or "the suite to write")."""
    return f"holds more values than the {MAX_VALUES:,}-value limit: {advice}"


def too_many_problems() -> str:
    """The error that stops reading a file after :data:`MAX_ERRORS` problems."""
    return f"more problems than the {MAX_ERRORS}-problem limit: fix the ones above and check the file again"


def alias_bomb() -> str:
    """The refusal of aliases that expand to more than :data:`MAX_ALIAS_EXPANSION` values."""
    return (
        f"aliases expand to more values than the {MAX_ALIAS_EXPANSION:,}-value limit (an alias bomb?): write the "
        "repeated parts out or use fewer nested aliases"
    )


def too_many_digits(written: str) -> str:
    """The refusal of a whole number longer than :data:`MAX_INT_DIGITS`."""
    return (
        f"the number {_preview(written)} is longer than the {MAX_INT_DIGITS}-digit limit: write it in quotes to "
        "keep it as text"
    )


def not_finite(written: str) -> str:
    """The refusal of infinity, NaN or a number too large for a float."""
    return (
        f"{_preview(written)} is not a finite number: write a number such as 1.5, or put it in quotes to keep it "
        "as text"
    )


def lone_surrogate() -> str:
    """The refusal of text holding half a surrogate pair (an escape such as \\ud800 without its other half)."""
    return "an escape such as \\ud800 writes half a surrogate pair, not a character: write the character itself"


def _preview(text: str, limit: int = 24) -> str:
    return text if len(text) <= limit else f"{text[:12]}...{text[-6:]}"


_KINDS: Final = (
    (stat.S_ISDIR, "a folder"),
    (stat.S_ISFIFO, "a named pipe (FIFO)"),
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
    (stat.S_ISSOCK, "a socket"),
)


def why_not_read(path: Path) -> str | None:
    """Why ``path``, found in a folder, is not read as a file (a named pipe, a device, a broken symbolic link,
    a link loop); None for a regular file or a folder. Nothing is opened: a named pipe cannot block."""
    try:
        mode = path.stat().st_mode
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            return "a symbolic link loop: it never reaches a file"
        if path.is_symlink():
            return f"a broken symbolic link: its target {os.readlink(path)!r} does not exist"
        return f"it cannot be read ({exc.strerror or exc})"
    if stat.S_ISREG(mode) or stat.S_ISDIR(mode):
        return None
    kind = next((name for test, name in _KINDS if test(mode)), "something else")
    return f"not a regular file but {kind}"


def read_bytes(path: Path, advice: str) -> bytes:
    """The bytes of the regular file ``path``, at most :data:`MAX_FILE_BYTES` of them.

    Raises :class:`ReadProblem` for a missing or unreadable file, one that is not a regular file (a named pipe,
    a device such as ``/dev/zero``, a folder) and one larger than the limit; ``advice`` ends that message
    ("split it into several suites"). The file is opened without blocking (a named pipe with no writer would
    wait forever) and read up to the limit plus one byte, whatever its size claims.
    """
    try:
        descriptor = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_BINARY", 0))
    except OSError as exc:
        raise ReadProblem(_cannot_read(path, exc)) from None
    try:
        mode = os.fstat(descriptor).st_mode
        if not stat.S_ISREG(mode):
            kind = next((name for test, name in _KINDS if test(mode)), "something else")
            raise ReadProblem(f"not a regular file but {kind}: give the path of a file")
        size = os.fstat(descriptor).st_size
        if size > MAX_FILE_BYTES:
            raise ReadProblem(too_large(size, advice))
        chunks: list[bytes] = []
        left = MAX_FILE_BYTES + 1
        while left > 0:
            chunk = os.read(descriptor, min(left, 1 << 20))
            if not chunk:
                break
            chunks.append(chunk)
            left -= len(chunk)
    except OSError as exc:
        raise ReadProblem(_cannot_read(path, exc)) from None
    finally:
        os.close(descriptor)
    data = b"".join(chunks)
    if len(data) > MAX_FILE_BYTES:
        raise ReadProblem(too_large(None, advice))
    return data


def _cannot_read(path: Path, exc: OSError) -> str:
    if isinstance(exc, IsADirectoryError) or path.is_dir():
        return "not a regular file but a folder: give the path of a file"
    return f"cannot read the file: {exc.strerror or exc}"


def decode_text(raw: bytes, expected: str) -> str:
    """UTF-8 text (a BOM is allowed) without NUL characters; ``expected`` names what it should be ("YAML text").

    Raises :class:`ReadProblem` at the line and column of the first byte that is not UTF-8, or of the first NUL.
    """
    body = raw[3:] if raw.startswith(b"\xef\xbb\xbf") else raw
    try:
        text = body.decode("utf-8")
    except UnicodeDecodeError as exc:
        line, column = byte_position(body, exc.start)
        raise ReadProblem(
            f"not UTF-8 text (byte 0x{body[exc.start]:02x}): save the file as UTF-8", line, column
        ) from None
    nul = body.find(b"\x00")
    if nul >= 0:
        line, column = byte_position(body, nul)
        raise ReadProblem(f"binary file (contains a NUL byte): expected {expected}", line, column)
    return text


def byte_position(data: bytes, offset: int) -> tuple[int, int]:
    """1-based line and character column of a byte offset (the line's bytes before it decoded leniently)."""
    line_start = data.rfind(b"\n", 0, offset) + 1
    column = len(data[line_start:offset].decode("utf-8", errors="replace")) + 1
    return data.count(b"\n", 0, offset) + 1, column


def text_position(text: str, offset: int) -> tuple[int, int]:
    """1-based line and column of a character offset in ``text``."""
    line_start = text.rfind("\n", 0, offset) + 1
    return text.count("\n", 0, offset) + 1, offset - line_start + 1


def read_text(path: Path, advice: str, expected: str) -> str:
    """:func:`read_bytes` then :func:`decode_text`."""
    return decode_text(read_bytes(path, advice), expected)
