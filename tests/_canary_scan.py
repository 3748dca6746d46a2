"""The canary scan: does any piece of a secret remain in what a run leaves behind?

A test plants canary secrets, runs, then scans every file (and every captured output) for each canary in the
forms a leak takes: the value itself, its base64 (as in an HTTP Basic header, standard and URL-safe, padded or
not) and the first :data:`PREFIX` characters of each of these, so a secret cut short anywhere is found too.
Files are read as bytes (a SQLite file, its WAL and shared memory as they are on disk); inside an archive (an
xlsx) every member is read, a gzip file is read decompressed, and every BLOB cell of a SQLite database that is
zlib-compressed (a recorded cassette) is read decompressed.

Canaries must begin with characters nothing else writes (random ones, see :func:`canary`), since a prefix of
six characters is enough to count as a hit.
"""

from __future__ import annotations

import base64
import contextlib
import gzip
import io
import secrets
import shutil
import sqlite3
import tempfile
import zipfile
import zlib
from collections.abc import Iterable, Mapping
from pathlib import Path

#: A piece of a secret this long or longer counts as a leak.
PREFIX = 6


def canary(tag: str) -> str:
    """A fresh canary value: random first (so its prefixes are found nowhere by chance), then ``tag``."""
    return f"Q{secrets.token_hex(6)}{tag}"


def forms(value: str) -> dict[str, bytes]:
    """The byte strings whose presence means ``value`` leaked, named for the report of a hit."""
    encoded = base64.b64encode(value.encode())
    url_safe = base64.urlsafe_b64encode(value.encode())
    found = {"value": value.encode(), "base64": encoded.rstrip(b"="), "urlsafe base64": url_safe.rstrip(b"=")}
    for name, whole in list(found.items()):
        found[f"{name} prefix"] = whole[:PREFIX]
    return found


def needles(canaries: Mapping[str, str]) -> dict[bytes, str]:
    """Every needle of every canary (named ``canary: form``), shortest forms included."""
    found: dict[bytes, str] = {}
    for name, value in canaries.items():
        for form, needle in forms(value).items():
            found.setdefault(needle, f"{name}: {form}")  # a base64 without + or / is its URL-safe form too
    return found


def hits(data: bytes | str, canaries: Mapping[str, str]) -> list[str]:
    """The canary forms found in ``data``."""
    raw = data.encode("utf-8", "surrogateescape") if isinstance(data, str) else data
    return sorted({what for needle, what in needles(canaries).items() if needle in raw})


def _sqlite_blobs(path: Path) -> bytes:
    """The zlib-compressed BLOB cells of a SQLite database with its WAL, decompressed (nothing when ``path`` is no
    database). Read from a copy: opening the database itself would recover its WAL, changing what is scanned."""
    if not path.read_bytes().startswith(b"SQLite format 3\x00"):
        return b""
    found: list[bytes] = []
    with tempfile.TemporaryDirectory() as folder:
        copy = Path(folder) / path.name
        for suffix in ("", "-wal"):
            if Path(f"{path}{suffix}").exists():
                shutil.copyfile(f"{path}{suffix}", f"{copy}{suffix}")
        connection = sqlite3.connect(copy)
        try:
            tables = [row[0] for row in connection.execute("SELECT name FROM sqlite_master WHERE type = 'table'")]
            for table in tables:
                for row in connection.execute(f'SELECT * FROM "{table}"'):
                    for cell in row:
                        if isinstance(cell, bytes):
                            with contextlib.suppress(zlib.error):
                                found.append(zlib.decompress(cell))
        finally:
            connection.close()
    return b"".join(found)


def readable(path: Path) -> bytes:
    """What a reader of ``path`` could find in it: its bytes, plus its decompressed contents."""
    data = path.read_bytes()
    if zipfile.is_zipfile(path):
        with zipfile.ZipFile(path) as archive:
            data += b"".join(archive.read(name) for name in archive.namelist())
    elif data.startswith(b"\x1f\x8b"):
        data += gzip.GzipFile(fileobj=io.BytesIO(data)).read()
    return data + _sqlite_blobs(path)


def scan_files(root: Path, canaries: Mapping[str, str], *, skip: Iterable[Path] = ()) -> dict[str, list[str]]:
    """Every file under ``root`` (but ``skip``) with a canary in it, and which forms were found."""
    skipped = {path.resolve() for path in skip}
    found: dict[str, list[str]] = {}
    for path in sorted(root.rglob("*")):
        if not path.is_file() or path.resolve() in skipped:
            continue
        leaks = hits(readable(path), canaries)
        if leaks:
            found[str(path.relative_to(root))] = leaks
    return found


def scan_outputs(outputs: Mapping[str, str], canaries: Mapping[str, str]) -> dict[str, list[str]]:
    """Every captured output (named by what printed it) with a canary in it."""
    return {name: found for name, text in outputs.items() if (found := hits(text, canaries))}
