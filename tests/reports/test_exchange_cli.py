"""export / import / golden from-run / compare / digest from the command line."""

from __future__ import annotations

import json
import zipfile
from pathlib import Path

import pytest
from typer.testing import CliRunner

from simulator.cli import EXIT_INVALID, app
from simulator.loading import load_suite

ROOT = Path(__file__).resolve().parents[2]
runner = CliRunner()


@pytest.fixture
def two_runs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    monkeypatch.chdir(ROOT)
    db = str(tmp_path / "runs.db")
    for _ in range(2):
        result = runner.invoke(app, ["run", "suites/demo/simulations.yaml", "--db", db, "--seed", "5"])
        assert result.exit_code in (0, 1), result.stdout + result.stderr
    return db


def test_export_and_import_a_run(two_runs: str, tmp_path: Path) -> None:
    target = tmp_path / "run.json"
    assert runner.invoke(app, ["export", "run", "latest", "-o", str(target), "--db", two_runs]).exit_code == 0
    assert json.loads(target.read_text(encoding="utf-8"))["format"] == "simulator-run"
    refused = runner.invoke(app, ["export", "run", "latest", "-o", str(target), "--db", two_runs])
    assert refused.exit_code == EXIT_INVALID
    other = str(tmp_path / "other.db")
    imported = runner.invoke(app, ["import", "run", str(target), "--db", other])
    assert imported.exit_code == 0, imported.stdout + imported.stderr
    listed = json.loads(runner.invoke(app, ["runs", "list", "--db", other, "--json"]).stdout)
    assert len(listed) == 1
    assert listed[0]["note"].startswith("imported from ")


def test_export_cases_to_a_zip(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(ROOT)
    target = tmp_path / "suites.zip"
    result = runner.invoke(app, ["export", "cases", "suites/demo", "-o", str(target)])
    assert result.exit_code == 0, result.stdout + result.stderr
    with zipfile.ZipFile(target) as archive:
        names = archive.namelist()
    assert {"golden.yaml", "scenarios.yaml", "simulations.yaml"} <= set(names)


def test_golden_from_run_loads_as_a_suite(two_runs: str, tmp_path: Path) -> None:
    target = tmp_path / "golden" / "suite.yaml"
    result = runner.invoke(
        app,
        ["golden", "from-run", "latest", "order_status_needs_the_order_number", "-o", str(target), "--db", two_runs],
    )
    assert result.exit_code == 0, result.stdout + result.stderr
    (tmp_path / "golden" / ".git").mkdir()
    loaded = load_suite(target)
    assert [case.kind for case in loaded.suite.cases] == ["golden"]


def test_compare_report_and_digest(two_runs: str) -> None:
    markdown = runner.invoke(app, ["compare", "latest~1", "latest", "-f", "md", "--db", two_runs])
    assert markdown.exit_code == 0, markdown.stderr
    assert "latest" not in markdown.stdout.splitlines()[0] or markdown.stdout.startswith("#")
    html = runner.invoke(app, ["compare", "latest~1", "latest", "-f", "html", "--db", two_runs])
    assert "<!DOCTYPE html>" in html.stdout
    digest = runner.invoke(app, ["digest", "latest", "--db", two_runs])
    assert digest.exit_code == 0, digest.stderr
    assert digest.stdout.startswith("Failure digest:")
