"""The public API on stored runs: what the command line does to a run, callable from Python."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path
from typing import Any

import pytest

import simulator

AGENT = """
def respond(messages):
    return "Sure. Your refund is approved."
"""

SUITE = """\
name: toy
agent: agent.yaml
cases:
  - kind: simulation
    name: refund
    steps:
      - static_utterance: I want a refund.
        checks:
          - must_contain: [refund is approved]
  - kind: simulation
    name: apology
    steps:
      - static_utterance: Sorry?
        checks:
          - must_contain: [we apologise]
"""


@pytest.fixture
def stored(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[Path, str]:
    (tmp_path / ".git").mkdir()
    (tmp_path / "toy_agent.py").write_text(textwrap.dedent(AGENT), encoding="utf-8")
    (tmp_path / "agent.yaml").write_text("type: python\ncallable: toy_agent:respond\n", encoding="utf-8")
    (tmp_path / "suite.yaml").write_text(SUITE, encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    db = tmp_path / "runs.db"
    return db, simulator.run("suite.yaml", db=db, seed=1).id


CALLS: list[tuple[str, Any]] = [
    ("list_runs", lambda db, run: [record.id for record in simulator.list_runs(db=db)] == [run]),
    ("read_run", lambda db, run: len(simulator.read_run(run, db=db).results) == 2),
    ("note_run", lambda db, run: simulator.note_run(run, "n", db=db) == run
                                 and simulator.get_run(run, db=db).record.note == "n"),
    ("find_run", lambda db, run: simulator.find_run("latest", db=db)[0] == run),
    ("count_results", lambda db, run: simulator.count_results(run, db=db) == 2),
    ("iter_result_rows", lambda db, run: sorted(row.outcome for row in simulator.iter_result_rows(run, db=db))
                                         == ["fail", "pass"]),
    ("compare_runs", lambda db, run: not simulator.compare_runs(run, run, db=db).has_regressions),
    ("run_coverage", lambda db, run: simulator.run_coverage(run, fail_under=100.0, db=db).coverage.percent is not None),
    ("digest_run", lambda db, run: "apology" in simulator.render_digest(simulator.digest_run(run, db=db), "text")),
    ("run_report", lambda db, run: json.loads(simulator.run_report(run, "json", db=db).text or "")["run"]["id"] == run),
    ("export_run", lambda db, run: json.loads(simulator.export_run(run, db=db))["run"]["id"] == run),
    ("check_resume", lambda db, run: simulator.check_resume(run, db=db).complete),
    ("check_repeat", lambda db, run: simulator.check_repeat(run, db=db).id == run),
    ("run_overview", lambda db, run: len(simulator.run_overview(run, db=db).shown) == 2),
    ("persona_fidelity", lambda db, run: simulator.persona_fidelity(run, db=db)[0] == run),
]  # fmt: skip


@pytest.mark.parametrize(("name", "call"), CALLS, ids=[name for name, _ in CALLS])
def test_every_stored_run_command_is_a_public_function(stored: tuple[Path, str], name: str, call: Any) -> None:
    db, run = stored
    assert name in simulator.__all__
    assert call(db, run)


def test_an_exported_run_imports_under_a_new_id(stored: tuple[Path, str], tmp_path: Path) -> None:
    db, run = stored
    export = simulator.write_export({"run.json": simulator.export_run(run, db=db)}, tmp_path / "run.json")
    imported = simulator.import_run(export, db=tmp_path / "other.db")
    assert (imported.original_id, imported.results) == (run, 2)
    assert imported.record.id != run


def test_golden_from_run_and_suite_checks(stored: tuple[Path, str]) -> None:
    db, run = stored
    assert "refund_golden" in simulator.golden_from_run(run, "refund", db=db)
    assert not simulator.validate(["suite.yaml"]).errors
    assert simulator.lint(["suite.yaml"]).exit_code() == 0
    assert simulator.yaml_kind("suite.yaml") == "suite"
    assert '"$schema"' in simulator.json_schema("suite")


def test_a_missing_personas_folder_is_an_input_error(tmp_path: Path) -> None:
    with pytest.raises(simulator.InputError, match="no such folder"):
        simulator.list_personas(tmp_path / "none")
