"""One stored result or run that cannot be read (its JSON damaged by hand, or no longer valid after a schema
change) does not hide the rest: every command that reads the run shows what can be read and names the bad row
or run on stderr, with its cause and the fix; an unreadable run can still be deleted."""

from __future__ import annotations

import shutil
import sqlite3
import textwrap
from contextlib import closing
from pathlib import Path

import pytest
from typer.testing import CliRunner

from simulator.cli import app

runner = CliRunner()

SUITE = """\
name: toy
cases:
  - kind: simulation
    name: refund
    steps:
      - static_utterance: I want a refund.
        checks: [{must_contain: [approved]}]
  - kind: simulation
    name: greeting
    steps:
      - static_utterance: Hello.
        checks: [{must_contain: [Sure]}]
"""
AGENT = """
def respond(messages):
    return "Sure: " + messages[-1]["content"] + " Your refund is approved."
"""

#: How a result row is damaged: JSON cut short, and JSON that no longer matches the model.
DAMAGES = {
    "corrupt json": "'{broken'",
    "validation error": "json_set(result, '$.transcript', 42)",
}


@pytest.fixture(scope="module")
def two_runs(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A project with two stored runs of the toy suite (both cases pass); returns its folder."""
    root = tmp_path_factory.mktemp("project")
    (root / ".git").mkdir()
    (root / "toy_agent.py").write_text(textwrap.dedent(AGENT), encoding="utf-8")
    (root / "agent.yaml").write_text("type: python\ncallable: toy_agent:respond\n", encoding="utf-8")
    (root / "suite.yaml").write_text(SUITE, encoding="utf-8")
    mp = pytest.MonkeyPatch()
    mp.chdir(root)
    try:
        for _ in range(2):
            result = runner.invoke(app, ["run", "suite.yaml", "--db", "runs.db"])
            assert result.exit_code == 0, result.stdout + result.stderr
    finally:
        mp.undo()
    return root


def _copy(two_runs: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    for name in ("toy_agent.py", "agent.yaml", "suite.yaml", "runs.db"):
        shutil.copy(two_runs / name, tmp_path / name)
    (tmp_path / ".git").mkdir()
    monkeypatch.chdir(tmp_path)
    return tmp_path / "runs.db"


def _damage(db: Path, sql: str) -> str:
    """Run ``sql`` on the store as another program would (its guards against edits dropped); returns the id of
    the newest run (``latest``)."""
    with closing(sqlite3.connect(db)) as conn:
        conn.execute("DROP TRIGGER results_insert_only")
        conn.execute("DROP TRIGGER runs_keep_what_was_run")
        conn.execute(sql)
        conn.commit()
        return str(conn.execute(f"SELECT id FROM runs {NEWEST}").fetchone()[0])


#: The order of ``latest``, ``latest~1``: both runs may start within the same second.
NEWEST = "ORDER BY created DESC, id DESC LIMIT 1"
OLDEST = "ORDER BY created ASC, id ASC LIMIT 1"

#: Each command that reads a run, and what of the rest it shows (the readable case, or its count).
COMMANDS = {
    "report md": (["report", "latest"], "greeting"),
    "report html": (["report", "latest", "-f", "html"], "greeting"),
    "report json": (["report", "latest", "-f", "json"], "greeting"),
    "report csv": (["report", "latest", "-f", "csv"], "greeting"),
    "report junit": (["report", "latest", "-f", "junit"], "greeting"),
    "report xlsx": (["report", "latest", "-f", "xlsx", "-o", "run.xlsx"], "wrote run.xlsx"),
    "export run": (["export", "run", "latest"], "greeting"),
    "export results": (["export", "results", "latest"], "greeting"),
    "compare": (["compare", "latest~1", "latest"], "Unchanged: 2"),
    "compare html": (["compare", "latest~1", "latest", "-f", "html"], "</html>"),
    "digest": (["digest", "latest"], "0 of 1 conversations did not pass"),
    "runs show": (["runs", "show", "latest"], "greeting"),
    "runs show json": (["runs", "show", "latest", "--json"], "greeting"),
}


@pytest.mark.parametrize("damage", list(DAMAGES), ids=list(DAMAGES))
@pytest.mark.parametrize("command", list(COMMANDS), ids=list(COMMANDS))
def test_one_unreadable_result_does_not_hide_the_run(
    two_runs: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, command: str, damage: str
) -> None:
    db = _copy(two_runs, tmp_path, monkeypatch)
    run_id = _damage(
        db,
        f"UPDATE results SET result = {DAMAGES[damage]} "
        f"WHERE case_name = 'refund' AND run_id = (SELECT id FROM runs {NEWEST})",
    )
    args, shown = COMMANDS[command]
    result = runner.invoke(app, [*args, "--db", str(db)])
    assert result.exit_code == 0, result.stdout + result.stderr
    assert shown in result.stdout  # the rest of the run is shown
    warning = " ".join(result.stderr.split())
    assert f"the result of case 'refund' #0 (key 0:refund:-:0) of run {run_id}" in warning
    assert "cannot be read" in warning
    assert f"simulator runs repeat {run_id}" in warning
    assert f"simulator runs delete {run_id}" in warning
    assert warning.count("cannot be read") == 1  # named once


def test_the_run_table_of_a_run_with_damaged_json_still_shows_its_rows(
    two_runs: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    db = _copy(two_runs, tmp_path, monkeypatch)
    _damage(db, f"UPDATE results SET result = '{{broken' WHERE run_id = (SELECT id FROM runs {NEWEST})")
    result = runner.invoke(app, ["runs", "show", "latest", "--db", str(db)])
    assert result.exit_code == 0, result.stdout + result.stderr
    assert " ".join(result.stderr.split()).count("cannot be read") == 2  # both rows named, each once


def test_one_unreadable_run_does_not_hide_the_others_and_can_be_deleted(
    two_runs: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    db = _copy(two_runs, tmp_path, monkeypatch)
    newest = _damage(db, f"UPDATE runs SET settings = '{{\"x\":' WHERE id = (SELECT id FROM runs {OLDEST})")
    with closing(sqlite3.connect(db)) as conn:
        oldest = str(conn.execute(f"SELECT id FROM runs {OLDEST}").fetchone()[0])

    listed = runner.invoke(app, ["runs", "list", "--db", str(db)])
    assert listed.exit_code == 0, listed.stdout + listed.stderr
    assert newest in listed.stdout
    assert oldest in listed.stdout
    assert "unreadable" in listed.stdout
    warning = " ".join(listed.stderr.split())
    assert f"run {oldest} in" in warning
    assert "cannot be read" in warning
    assert f"delete it with `simulator runs delete {oldest}`" in warning

    as_json = runner.invoke(app, ["runs", "list", "--json", "--db", str(db)])
    assert as_json.exit_code == 0, as_json.stdout + as_json.stderr
    assert newest in as_json.stdout
    assert oldest in as_json.stderr

    deleted = runner.invoke(app, ["runs", "delete", oldest, "--yes", "--db", str(db)])
    assert deleted.exit_code == 0, deleted.stdout + deleted.stderr
    after = runner.invoke(app, ["runs", "list", "--db", str(db)])
    assert oldest not in after.stdout + after.stderr
    assert newest in after.stdout


@pytest.mark.parametrize(("fmt", "heading"), [("md", "**Left out: 1 stored result(s)"), ("html", "<h2>Left out: 1")])
def test_the_report_names_the_result_it_left_out(
    two_runs: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, fmt: str, heading: str
) -> None:
    db = _copy(two_runs, tmp_path, monkeypatch)
    run_id = _damage(
        db,
        f"UPDATE results SET result = '{{broken' WHERE case_name = 'refund' "
        f"AND run_id = (SELECT id FROM runs {NEWEST})",
    )
    result = runner.invoke(app, ["report", "latest", "-f", fmt, "--db", str(db)])
    assert result.exit_code == 0, result.stdout + result.stderr
    assert heading in result.stdout
    assert "(key 0:refund:-:0)" in result.stdout
    assert f"runs delete {run_id}" in result.stdout
