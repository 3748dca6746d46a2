"""Commands on a real, small, full disk: run as ``python -m tests.runs._small_disk SCENARIO WORK SIZE`` by
``test_full_disk.py``, alone or under ``unshare -rm`` (a user and mount namespace, where a tmpfs may be mounted
without root). It mounts a tmpfs of SIZE at WORK/disk, runs the scenario's commands in this one process (one
interpreter start for all of them), prints what a test needs as one JSON document, and unmounts.

Exit 77 when the tmpfs cannot be mounted here (the test then tries the next way, or skips)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

DEMO = Path(__file__).resolve().parents[2] / "suites" / "demo"
CANNOT_MOUNT = 77


def _cli(*args: str) -> dict[str, Any]:
    from typer.testing import CliRunner

    from simulator.cli import app

    result = CliRunner().invoke(app, list(args))
    return {"code": result.exit_code, "stderr": result.stderr, "stdout": result.stdout}


def _files(folder: Path) -> dict[str, int]:
    """Every file under ``folder`` (the filler left out) with its size."""
    return {
        str(path.relative_to(folder)): path.stat().st_size
        for path in sorted(folder.rglob("*"))
        if path.is_file() and path.name != "filler"
    }


def _fill(disk: Path, leave: int = 0) -> None:
    """Fill ``disk`` until it is full, or until ``leave`` bytes are left (``leave`` rounded to pages)."""
    with (disk / "filler").open("wb") as handle:
        block = bytes(4096)
        try:
            while os.statvfs(disk).f_bavail * os.statvfs(disk).f_frsize > leave:
                handle.write(block)
                handle.flush()
        except OSError:
            pass


def outputs(work: Path, disk: Path) -> dict[str, Any]:
    """report -o, run --report, export run -o and compare -o onto a full disk; then export once it has room."""
    store = str(work / "store" / "runs.db")
    _cli("run", str(DEMO), "--db", store)
    _fill(disk)
    found: dict[str, Any] = {}
    for name, args in {
        "report html": ["report", "latest", "--db", store, "--format", "html", "-o", str(disk / "run.html")],
        "report xlsx": ["report", "latest", "--db", store, "--format", "xlsx", "-o", str(disk / "run.xlsx")],
        "run --report": ["run", str(DEMO), "--db", store, "--report", "html", "--report-dir", str(disk / "reports")],
        "export run": ["export", "run", "latest", "--db", store, "-o", str(disk / "run.yaml")],
        "compare -o": ["compare", "latest~1", "latest", "--db", store, "-o", str(disk / "compare.md")],
    }.items():
        found[name] = {**_cli(*args), "files": _files(disk)}
    (disk / "filler").unlink()
    again = _cli("export", "run", "latest", "--db", store, "-o", str(disk / "run.yaml"))
    found["export run again"] = {**again, "files": _files(disk)}
    return found


def store(work: Path, disk: Path) -> dict[str, Any]:
    """A run whose store is on a disk that fills up while it runs; then resumed once there is room again."""
    from simulator.store import RunStore

    db = disk / "runs.db"

    def stored() -> dict[str, Any]:
        with RunStore(db, read_only=True) as runs:
            record = runs.get_run("latest")
            return {
                "status": record.status,
                "results": {result.key: result.finished.isoformat() for result in runs.results(record.id)},
            }

    _fill(disk, leave=600 * 1024)
    first = _cli("run", str(DEMO), "--db", str(db))
    after_failure = {**first, **stored(), "files": _files(disk)}
    (disk / "filler").unlink()
    resumed = _cli("runs", "resume", "latest", "--db", str(db))
    return {"run": after_failure, "resume": {**resumed, **stored(), "files": _files(disk)}}


SCENARIOS: dict[str, Callable[[Path, Path], dict[str, Any]]] = {"outputs": outputs, "store": store}


def main() -> int:
    scenario, work, size = sys.argv[1], Path(sys.argv[2]), sys.argv[3]
    disk = work / "disk"
    disk.mkdir(parents=True, exist_ok=True)
    mounted = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(disk)], capture_output=True, check=False
    )
    if mounted.returncode != 0:
        print(mounted.stderr.decode(errors="replace"), file=sys.stderr)
        return CANNOT_MOUNT
    try:
        os.chdir(work)  # the request cache and anything else relative lands beside, never in the repository
        print(json.dumps(SCENARIOS[scenario](work, disk)))
    finally:
        subprocess.run(["umount", "-l", str(disk)], capture_output=True, check=False)
    return 0


if __name__ == "__main__":
    sys.exit(main())
