"""`simulator run` and `simulator runs ...` end to end: exit codes, the store, repeat, compare, delete."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

import pytest
from typer.testing import CliRunner

from simulator.cli import EXIT_BELOW_BAR, EXIT_INCOMPLETE, EXIT_INVALID, app

ROOT = Path(__file__).resolve().parents[2]
runner = CliRunner()

AGENT = """
import os

def respond(messages):
    text = messages[-1]["content"] if messages else ""
    if os.environ.get("SHOP_BROKEN") and "refund" in text:
        return "I cannot help with that."
    return f"Sure: {text}. Your refund is approved."
"""


def _project(root: Path) -> Path:
    (root / ".git").mkdir()
    (root / "toy_agent.py").write_text(textwrap.dedent(AGENT), encoding="utf-8")
    (root / "agent.yaml").write_text("type: python\ncallable: toy_agent:respond\n", encoding="utf-8")
    (root / "suite.yaml").write_text(
        textwrap.dedent(
            """\
            name: toy
            cases:
              - kind: simulation
                name: refund
                steps:
                  - static_utterance: I want a refund.
                    checks: [{must_contain: [approved]}]
              - kind: simulation
                name: hello
                steps:
                  - static_utterance: Hello.
                    checks: [{must_contain: [Sure]}]
            """
        ),
        encoding="utf-8",
    )
    return root


def test_run_stores_results_and_exits_by_the_bar(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(ROOT)
    db = str(tmp_path / "runs.db")
    result = runner.invoke(app, ["run", "suites/demo", "--db", db, "--seed", "7"])
    # The demo has a failing case by design: not every case passes.
    assert result.exit_code == EXIT_BELOW_BAR, result.stdout + result.stderr
    assert "Correctness " in result.stdout
    assert "express_delivery_date_is_made_up" in result.stdout
    assert runner.invoke(app, ["run", "suites/demo", "--db", db, "--seed", "7", "--fail-under", "50"]).exit_code == 0
    listed = json.loads(runner.invoke(app, ["runs", "list", "--db", db, "--json"]).stdout)
    assert [r["status"] for r in listed] == ["completed", "completed"]
    assert listed[0]["totals"]["total"] == 12


def test_invalid_input_is_exit_2(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(_project(tmp_path))
    db = str(tmp_path / "runs.db")
    assert runner.invoke(app, ["run", "suite.yaml", "--db", db, "--case", "refnd"]).exit_code == EXIT_INVALID
    assert runner.invoke(app, ["run", "suite.yaml", "--db", db, "--tag", "nothing"]).exit_code == EXIT_INVALID
    assert runner.invoke(app, ["run", "suite.yaml", "--db", db, "--persona", "nobody"]).exit_code == EXIT_INVALID
    (tmp_path / "broken.yaml").write_text("name: x\ncases: []\n", encoding="utf-8")
    result = runner.invoke(app, ["run", "broken.yaml", "--db", db])
    assert result.exit_code == EXIT_INVALID
    assert "cases: needs at least 1 entry" in result.stdout


def test_an_unknown_report_format_is_refused_before_anything_runs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(_project(tmp_path))
    db = tmp_path / "runs.db"
    result = runner.invoke(app, ["run", "suite.yaml", "--db", str(db), "--report", "md", "--report", "pdf"])
    assert result.exit_code == EXIT_INVALID
    assert "'pdf' is not a report format: choose one of md, html, json, csv, xlsx, junit" in " ".join(
        result.stderr.replace("│", " ").split()
    )
    assert not db.exists()  # nothing ran, nothing was stored


def test_note_repeat_compare_and_delete(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(_project(tmp_path))
    db = str(tmp_path / "runs.db")
    assert runner.invoke(app, ["run", "suite.yaml", "--db", db, "--agent-version", "v1"]).exit_code == 0
    monkeypatch.setenv("SHOP_BROKEN", "1")
    broken = runner.invoke(app, ["runs", "repeat", "latest", "--db", db, "--agent-version", "v2"])
    assert broken.exit_code == EXIT_BELOW_BAR

    compared = runner.invoke(app, ["runs", "compare", "latest~1", "latest", "--db", db, "--fail-on-regression"])
    assert compared.exit_code == EXIT_BELOW_BAR
    assert "REGRESSED (1):" in compared.stdout
    assert "refund" in compared.stdout
    as_json = json.loads(runner.invoke(app, ["runs", "compare", "latest~1", "latest", "--db", db, "--json"]).stdout)
    assert [c["case"] for c in as_json["cases"] if c["change"] == "regressed"] == ["refund"]

    shown = json.loads(runner.invoke(app, ["runs", "show", "latest", "--db", db, "--json"]).stdout)
    assert shown["run"]["repeat_of"] is not None
    assert shown["run"]["agent_version"] == "v2"
    assert runner.invoke(app, ["runs", "note", "latest", "refund broke in v2", "--db", db]).exit_code == 0
    shown = json.loads(runner.invoke(app, ["runs", "show", "latest", "--db", db, "--json"]).stdout)
    assert shown["run"]["note"] == "refund broke in v2"

    assert runner.invoke(app, ["runs", "delete", "latest", "--db", db, "--yes"]).exit_code == 0
    assert len(json.loads(runner.invoke(app, ["runs", "list", "--db", db, "--json"]).stdout)) == 1
    missing = runner.invoke(app, ["runs", "show", "nope", "--db", db])
    assert missing.exit_code == EXIT_INVALID
    assert "nope" in missing.stdout + missing.stderr


def test_no_checkpoints_is_recorded_and_the_run_completes(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(_project(tmp_path))
    db = str(tmp_path / "runs.db")
    assert runner.invoke(app, ["run", "suite.yaml", "--db", db, "--no-checkpoints"]).exit_code == 0
    shown = json.loads(runner.invoke(app, ["runs", "show", "latest", "--db", db, "--json"]).stdout)
    assert shown["run"]["settings"]["checkpoints"] is False
    assert not (tmp_path / "runs-checkpoints.db").exists()


def test_a_read_only_store_can_be_listed_shown_and_reported(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(_project(tmp_path))
    folder = tmp_path / "store"
    db = str(folder / "runs.db")
    assert runner.invoke(app, ["run", "suite.yaml", "--db", db]).exit_code == 0
    # chmod a-w on the file and its folder. Tests run as root, whom permissions do not stop: the store treats
    # missing write bits as read-only for root too, so this takes the same path as for any other user.
    (folder / "runs.db").chmod(0o444)
    folder.chmod(0o555)
    try:
        listed = runner.invoke(app, ["runs", "list", "--db", db, "--json"])
        assert listed.exit_code == 0, listed.stdout + listed.stderr
        assert [run["status"] for run in json.loads(listed.stdout)] == ["completed"]
        assert runner.invoke(app, ["runs", "show", "latest", "--db", db]).exit_code == 0
        reported = runner.invoke(app, ["report", "latest", "--db", db, "--format", "md"])
        assert reported.exit_code == 0, reported.stdout + reported.stderr
        assert "refund" in reported.stdout
        for command in (["runs", "note", "latest", "x"], ["runs", "resume", "latest"], ["runs", "repeat", "latest"]):
            refused = runner.invoke(app, [*command, "--db", db])
            assert refused.exit_code == EXIT_INCOMPLETE, refused.stdout + refused.stderr
            assert f"the run store {db} is read-only" in refused.stderr
    finally:
        folder.chmod(0o755)
        (folder / "runs.db").chmod(0o644)
