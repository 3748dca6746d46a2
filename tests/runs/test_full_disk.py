"""A real small disk (a tmpfs) that fills up: every command that writes a file exits 3 with one line naming the
file and the cause and leaves nothing partial; a run whose store fills up ends ``failed`` (docs/troubleshooting.md),
keeps what it stored and resumes once there is room. The commands run in ``tests/runs/_small_disk.py``, in a
process that mounts the tmpfs itself, or under ``unshare -rm`` where mounting needs a user namespace."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.runs._small_disk import CANNOT_MOUNT

ROOT = Path(__file__).resolve().parents[2]


def _on_small_disk(scenario: str, work: Path, size: str) -> dict[str, Any]:
    """Run ``scenario`` on a tmpfs of ``size`` under ``work``: mounted directly, else in a user namespace; skip
    (saying why) when neither may mount one here."""
    ways: list[list[str]] = [[]] + ([["unshare", "-rm"]] if shutil.which("unshare") else [])
    env = {**os.environ, "PYTHONPATH": str(ROOT), "LITELLM_OFFLINE_MODE": "true"}
    why = []
    for way in ways:
        done = subprocess.run(
            [*way, sys.executable, "-m", "tests.runs._small_disk", scenario, str(work), size],
            cwd=ROOT, env=env, capture_output=True, text=True, check=False, timeout=300,
        )  # fmt: skip
        if done.returncode == CANNOT_MOUNT or (way and done.returncode != 0 and not done.stdout):
            why.append(f"{' '.join(way) or 'mount'}: {done.stderr.strip()[-200:]}")
            continue
        assert done.returncode == 0, done.stderr
        found: dict[str, Any] = json.loads(done.stdout)
        return found
    pytest.skip(f"no small tmpfs can be mounted here ({'; '.join(why)})")


def _errors(stderr: str) -> list[str]:
    return [line for line in stderr.splitlines() if line.startswith(("error", "internal error", "Traceback"))]


@pytest.mark.parametrize(
    ("command", "file"),
    [
        ("report html", "run.html"),
        ("report xlsx", "run.xlsx"),
        ("run --report", "reports/simulator-"),
        ("export run", "run.yaml"),
        ("compare -o", "compare.md"),
    ],
)
def test_a_full_disk_ends_a_command_with_exit_3_one_line_and_no_file(
    full_disk_outputs: dict[str, Any], command: str, file: str
) -> None:
    found = full_disk_outputs[command]
    assert found["code"] == 3, found
    (line,) = _errors(found["stderr"])
    assert line.startswith(f"error: cannot write {full_disk_outputs['disk']}/{file}"), line
    assert "No space left on device" in line
    assert found["files"] == {}, "nothing partial, no temporary file"


def test_an_export_that_failed_on_a_full_disk_is_written_once_there_is_room(
    full_disk_outputs: dict[str, Any],
) -> None:
    again = full_disk_outputs["export run again"]
    assert again["code"] == 0, again["stderr"]
    assert list(again["files"]) == ["run.yaml"]
    assert again["files"]["run.yaml"] > 0


@pytest.fixture(scope="module")
def full_disk_outputs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    work = tmp_path_factory.mktemp("outputs")
    return {**_on_small_disk("outputs", work, "2m"), "disk": str(work / "disk")}


def test_a_run_whose_store_fills_the_disk_ends_failed_and_resumes_with_its_results(tmp_path: Path) -> None:
    # The run fills what is left of the disk (600 KB); the disk is larger so that once the filler is gone the
    # resume has room for the store, its write-ahead log and the checkpoints together, however far the run got.
    found = _on_small_disk("store", tmp_path, "4m")
    first, resumed = found["run"], found["resume"]
    assert first["code"] == 3, first["stderr"]
    (line,) = _errors(first["stderr"])
    assert f"{tmp_path / 'disk' / 'runs.db'}" in line, line
    assert "full" in line, line
    assert first["status"] == "failed"  # not `interrupted`: the process said why it stopped
    assert 0 < len(first["results"]) < 12
    assert not [name for name in first["files"] if "reserve" in name or name.endswith(".tmp")]
    # Once there is room the run is resumed: what was stored stays as it was, the rest is added.
    assert resumed["code"] in (0, 1), resumed["stderr"]
    assert resumed["status"] == "completed"
    assert len(resumed["results"]) == 12
    assert {key: resumed["results"][key] for key in first["results"]} == first["results"]
    assert not [name for name in resumed["files"] if "reserve" in name]
