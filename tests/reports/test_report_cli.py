"""`simulator report` and `simulator run --report` write every format from the store."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from simulator.cli import EXIT_INVALID, app

ROOT = Path(__file__).resolve().parents[2]
runner = CliRunner()


@pytest.fixture
def stored_run(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    monkeypatch.chdir(ROOT)
    db = str(tmp_path / "runs.db")
    result = runner.invoke(
        app,
        ["run", "suites/demo/scenarios.yaml", "--db", db, "--seed", "3", "--report", "junit",
         "--report-dir", str(tmp_path / "reports")],
    )  # fmt: skip
    assert result.exit_code == 1, result.stdout + result.stderr  # the demo's planted failure
    written = list((tmp_path / "reports").glob("simulator-*.xml"))
    assert len(written) == 1
    assert "<testsuites" in written[0].read_text(encoding="utf-8")
    return db


@pytest.mark.parametrize(
    ("fmt", "marker"),
    [
        ("md", b"# Simulator run"),
        ("json", b'"format"'),
        ("csv", b"suite,"),
        ("junit", b"<testsuites"),
        ("html", b"<!DOCTYPE html>"),
    ],
)
def test_every_text_format_to_stdout(stored_run: str, fmt: str, marker: bytes) -> None:
    result = runner.invoke(app, ["report", "latest", "--format", fmt, "--db", stored_run])
    assert result.exit_code == 0, result.stderr
    assert marker in result.stdout_bytes


def test_json_report_is_the_versioned_envelope(stored_run: str) -> None:
    payload = json.loads(runner.invoke(app, ["report", "latest", "-f", "json", "--db", stored_run]).stdout)
    assert (payload["format"], payload["version"]) == ("simulator.run-report", 1)
    assert len(payload["results"]) == 4


def test_excel_is_written_to_a_file(stored_run: str, tmp_path: Path) -> None:
    import openpyxl

    target = tmp_path / "out" / "run.xlsx"
    result = runner.invoke(app, ["report", "latest", "-f", "xlsx", "-o", str(target), "--db", stored_run])
    assert result.exit_code == 0, result.stderr
    workbook = openpyxl.load_workbook(target)
    assert workbook.sheetnames == ["Summary", "Cases", "Steps", "Coverage"]


def test_unknown_format_is_exit_2(stored_run: str) -> None:
    result = runner.invoke(app, ["report", "latest", "-f", "pdf", "--db", stored_run])
    assert result.exit_code == EXIT_INVALID
    assert "'pdf' is not a report format: choose one of md, html, json, csv, xlsx, junit" in " ".join(
        result.stderr.replace("│", " ").split()
    )


def test_a_csv_file_starts_with_the_byte_order_mark_excel_needs(stored_run: str, tmp_path: Path) -> None:
    target = tmp_path / "run.csv"
    result = runner.invoke(app, ["report", "latest", "-f", "csv", "-o", str(target), "--db", stored_run])
    assert result.exit_code == 0, result.stderr
    written = target.read_bytes()
    assert written.startswith(b"\xef\xbb\xbfsuite,")
    # Without the mark the same text: stdout (read by programs) has none.
    stdout = runner.invoke(app, ["report", "latest", "-f", "csv", "--db", stored_run]).stdout_bytes
    assert stdout.startswith(b"suite,")
    assert written.removeprefix(b"\xef\xbb\xbf") == stdout
    # `run --report csv` writes its file the same way.
    result = runner.invoke(
        app,
        ["run", "suites/demo/scenarios.yaml", "--db", stored_run, "--seed", "3", "--report", "csv",
         "--report-dir", str(tmp_path / "reports")],
    )  # fmt: skip
    (report,) = (tmp_path / "reports").glob("simulator-*.csv")
    assert report.read_bytes().startswith(b"\xef\xbb\xbfsuite,")
