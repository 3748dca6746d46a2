"""``--json`` on every command that prints results: stdout is exactly one JSON document (one ``json.loads``)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from simulator.cli import EXIT_BELOW_BAR, EXIT_INVALID, app
from simulator.llm import FakeScript
from tests.judges.test_judge_check import ANSWERS

runner = CliRunner()
ROOT = Path(__file__).resolve().parents[2]


def _document(args: list[str], *, exit_code: int = 0) -> Any:
    result = runner.invoke(app, args)
    assert result.exit_code == exit_code, result.stdout + result.stderr
    return json.loads(result.stdout)


@pytest.fixture
def db(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    """A store holding one run of the demo suites (one failure, some unsure cases)."""
    monkeypatch.chdir(ROOT)
    path = str(tmp_path / "runs.db")
    assert runner.invoke(app, ["run", "suites/demo", "--db", path]).exit_code == EXIT_BELOW_BAR
    return path


def test_run_json_is_the_summary_counts_and_one_row_per_result(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(ROOT)
    result = runner.invoke(app, ["run", "suites/demo", "--db", str(tmp_path / "runs.db"), "--json", "--report", "md"])
    assert result.exit_code == EXIT_BELOW_BAR
    document = json.loads(result.stdout)  # nothing else on stdout: progress, notes, report paths go to stderr
    assert document["run"]["status"] == "completed"
    assert document["counts"] == {
        "planned": 12, "total": 12, "passed": 7, "failed": 1, "error": 0, "unsure": 4, "user_error": 0
    }  # fmt: skip
    assert len(document["results"]) == 12
    [failed] = [row for row in document["results"] if row["outcome"] == "fail"]
    assert set(failed) == {"case", "persona", "repeat", "outcome", "reasons"}
    assert (failed["case"], failed["persona"]) == ("express_delivery_date_is_made_up", "power_user")
    assert failed["repeat"] == 1
    assert failed["reasons"][0].startswith("goal: Find out when your express order ORD-90011 will arrive.")
    assert f"Run {document['run']['id']}" in result.stderr
    assert "report: " in result.stderr


def test_run_json_errors_go_to_stderr(tmp_path: Path) -> None:
    (tmp_path / "broken.yaml").write_text("name: x\ncases: []\n", encoding="utf-8")
    result = runner.invoke(app, ["run", str(tmp_path / "broken.yaml"), "--db", str(tmp_path / "r.db"), "--json"])
    assert result.exit_code == EXIT_INVALID
    assert result.stdout == ""
    assert "cases: needs at least 1 entry" in result.stderr


def test_runs_show_and_list_json(db: str) -> None:
    shown = _document(["runs", "show", "latest", "--db", db, "--json"])
    assert len(shown["results"]) == 12
    [listed] = _document(["runs", "list", "--db", db, "--json"])
    assert listed["id"] == shown["run"]["id"]


def test_compare_json_and_its_alias_runs_compare_print_the_same(db: str) -> None:
    document = _document(["compare", "latest", "latest", "--db", db, "--json"])
    assert document["run_a"] == document["run_b"]
    assert len(document["cases"]) == 12
    alias = runner.invoke(app, ["runs", "compare", "latest", "latest", "--db", db, "--json"])
    assert json.loads(alias.stdout) == document
    text = runner.invoke(app, ["compare", "latest", "latest", "--db", db])
    assert runner.invoke(app, ["runs", "compare", "latest", "latest", "--db", db]).stdout == text.stdout
    assert "compare" not in runner.invoke(app, ["runs", "--help"]).stdout  # the alias is hidden


def test_compare_refuses_json_with_another_format(db: str) -> None:
    result = runner.invoke(app, ["compare", "latest", "latest", "--db", db, "--json", "-f", "md"])
    assert result.exit_code == EXIT_INVALID
    assert "give one of them" in result.stderr


def test_digest_json(db: str) -> None:
    document = _document(["digest", "latest", "--db", db, "--json"])
    assert document["groups"]


def test_validate_json_valid_and_invalid(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(ROOT)
    valid = _document(["validate", "suites/demo", "--json"])
    assert valid["valid"] is True
    assert valid["errors"] == []
    assert valid["cases"]["simulation"] > 0
    (tmp_path / "bad.yaml").write_text("name: x\ncases: []\n", encoding="utf-8")
    invalid = _document(["validate", str(tmp_path / "bad.yaml"), "--json"], exit_code=EXIT_INVALID)
    assert invalid["valid"] is False
    [error] = invalid["errors"]
    assert (error["line"], error["key"]) == (2, "cases")


def test_personas_list_json(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(ROOT)
    personas = _document(["personas", "list", "--json"])
    assert "terse" in [persona["name"] for persona in personas]


def test_judge_check_json(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(ROOT)
    with FakeScript().enqueue("judge", *ANSWERS).active():
        document = _document(["judge-check", "judge_labels/demo.yaml", "--judge-model", "fake/judge", "--json"])
    assert document["overall"]["n"] > 0
    assert len([j for j in document["judgements"] if j["human"] != j["judge"]]) == 2


def test_simulate_json_is_one_document(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(ROOT)
    document = _document(["simulate", "suites/demo/scenarios.yaml", "--json"], exit_code=EXIT_BELOW_BAR)
    assert document["total"] == 4
