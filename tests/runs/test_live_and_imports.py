"""Live stays a decision: only ``--live`` given to the very command runs real tool functions, and a run that
came from ``import run`` says which code it would execute and needs ``--yes`` before repeating or resuming."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from simulator.cli import EXIT_INVALID, app
from simulator.store import RunStore

runner = CliRunner()

AGENT = """
from pathlib import Path


def respond(messages, *, tools):
    # the working folder, not the module's: the module stays imported from the first test's folder
    with (Path.cwd() / "agent_calls.log").open("a") as log:
        log.write("called\\n")
    result = tools.call("refund", order=42)
    return f"Refund: {result}"
"""

LIVE_TOOLS = """
from pathlib import Path


def refund(order):
    with (Path.cwd() / "live_calls.log").open("a") as log:
        log.write(f"refund {order}\\n")
    return {"status": "refunded"}
"""


def _project(root: Path) -> Path:
    (root / ".git").mkdir()
    (root / "toy_agent_live.py").write_text(textwrap.dedent(AGENT), encoding="utf-8")
    (root / "toy_tools_live.py").write_text(textwrap.dedent(LIVE_TOOLS), encoding="utf-8")
    (root / "agent.yaml").write_text(
        textwrap.dedent(
            """\
            type: python
            callable: toy_agent_live:respond
            tools:
              - name: refund
                function: toy_tools_live:refund
            """
        ),
        encoding="utf-8",
    )
    (root / "suite.yaml").write_text(
        textwrap.dedent(
            """\
            name: toy
            tool_fakes:
              - tool: refund
                result: {status: faked}
            cases:
              - kind: simulation
                name: refund
                steps:
                  - static_utterance: I want a refund.
            """
        ),
        encoding="utf-8",
    )
    return root


def _live_calls(root: Path) -> int:
    path = root / "live_calls.log"
    return len(path.read_text(encoding="utf-8").splitlines()) if path.exists() else 0


def _agent_calls(root: Path) -> int:
    path = root / "agent_calls.log"
    return len(path.read_text(encoding="utf-8").splitlines()) if path.exists() else 0


def _invoke(*args: str) -> Any:
    return runner.invoke(app, list(args))


def _shown(db: str, ref: str = "latest") -> dict[str, Any]:
    result = _invoke("runs", "show", ref, "--db", db, "--json")
    assert result.exit_code == 0, result.stdout + result.stderr
    run: dict[str, Any] = json.loads(result.stdout)["run"]
    return run


def _interrupted_copy(db: str, ref: str) -> str:
    """A stored copy of run ``ref`` that stopped before any conversation finished (as a Ctrl-C leaves one)."""
    with RunStore(db) as store:
        record = store.get_run(ref)
        copy = record.model_copy(update={"id": store.new_run_id(), "status": "interrupted", "totals": None})
        store.create_run(copy)
    return copy.id


def test_repeat_and_resume_run_live_only_with_their_own_live_flag(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(_project(tmp_path))
    db = str(tmp_path / "runs.db")
    assert _invoke("run", "suite.yaml", "--db", db, "--live").exit_code == 0
    assert _live_calls(tmp_path) == 1
    live_run = _shown(db)["id"]

    # A repeat of a live run without --live runs the fakes, says so, and records that it was not live.
    repeated = _invoke("runs", "repeat", live_run, "--db", db)
    assert repeated.exit_code == 0, repeated.stdout + repeated.stderr
    assert _live_calls(tmp_path) == 1
    assert "runs its tools in test mode" in repeated.stderr
    assert _shown(db)["settings"]["live"] is False
    # With --live given to the repeat, it is live.
    assert _invoke("runs", "repeat", live_run, "--db", db, "--live").exit_code == 0
    assert _live_calls(tmp_path) == 2
    assert _shown(db)["settings"]["live"] is True

    # An interrupted live run does not continue live by itself: without --live it is refused, nothing runs.
    stopped = _interrupted_copy(db, live_run)
    refused = _invoke("runs", "resume", stopped, "--db", db)
    assert refused.exit_code == EXIT_INVALID, refused.stdout + refused.stderr
    assert "needs --live again" in refused.stderr
    assert (_live_calls(tmp_path), _agent_calls(tmp_path)) == (2, 3)
    resumed = _invoke("runs", "resume", stopped, "--db", db, "--live")
    assert resumed.exit_code == 0, resumed.stdout + resumed.stderr
    assert _live_calls(tmp_path) == 3

    # A test-mode run cannot be turned live half-way (the results would mix fakes and real calls) ...
    test_mode = _interrupted_copy(db, "latest~1")  # the repeat without --live
    refused = _invoke("runs", "resume", test_mode, "--db", db, "--live")
    assert refused.exit_code == EXIT_INVALID
    assert "cannot continue with --live" in refused.stderr
    # ... and resumed without --live it runs the fakes.
    assert _invoke("runs", "resume", test_mode, "--db", db).exit_code == 0
    assert _live_calls(tmp_path) == 3


def test_an_imported_run_says_what_code_it_runs_and_needs_yes(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(_project(tmp_path))
    db, elsewhere = str(tmp_path / "runs.db"), str(tmp_path / "elsewhere.db")
    assert _invoke("run", "suite.yaml", "--db", elsewhere).exit_code == 0
    export = tmp_path / "run.json"
    assert _invoke("export", "run", "latest", "--db", elsewhere, "-o", str(export)).exit_code == 0
    data = json.loads(export.read_text(encoding="utf-8"))
    data["run"]["status"] = "running"  # exported mid-run: it imports as interrupted, a run to resume
    export.write_text(json.dumps(data), encoding="utf-8")
    assert _invoke("import", "run", str(export), "--db", db).exit_code == 0
    imported = _shown(db)
    assert imported["imported_from"] == data["run"]["id"]
    assert imported["status"] == "interrupted"
    agent_calls = _agent_calls(tmp_path)

    for command in (["runs", "repeat", "latest"], ["runs", "resume", "latest"]):
        refused = _invoke(*command, "--db", db)
        assert refused.exit_code == EXIT_INVALID, refused.stdout + refused.stderr
        assert "came from `simulator import run`" in refused.stderr
        assert "python agent toy_agent_live:respond (suite 'toy')" in refused.stderr
        not_run = "tool function toy_tools_live:refund for tool refund (suite 'toy'): not run (no --live)"
        assert not_run in refused.stderr
        assert "with --yes" in refused.stderr
    assert _agent_calls(tmp_path) == agent_calls  # nothing was executed
    assert len(json.loads(_invoke("runs", "list", "--db", db, "--json").stdout)) == 1

    # With --live the live tool functions are named as code that will run.
    refused = _invoke("runs", "repeat", "latest", "--db", db, "--live")
    called = "live tool function toy_tools_live:refund for tool refund (suite 'toy'): called with --live"
    assert called in refused.stderr
    assert _live_calls(tmp_path) == 0

    repeated = _invoke("runs", "repeat", imported["id"], "--db", db, "--yes")
    assert repeated.exit_code == 0, repeated.stdout + repeated.stderr
    assert _agent_calls(tmp_path) == agent_calls + 1
    # The repeat runs the imported snapshot too: repeating it asks again.
    assert _shown(db)["imported_from"] == data["run"]["id"]
    assert _invoke("runs", "repeat", "latest", "--db", db).exit_code == EXIT_INVALID
    resumed = _invoke("runs", "resume", imported["id"], "--db", db, "--yes")
    assert resumed.exit_code == 0, resumed.stdout + resumed.stderr
    assert _shown(db, imported["id"])["status"] == "completed"


def test_what_an_imported_run_would_run_is_shown_without_control_characters(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(_project(tmp_path))
    db, elsewhere = str(tmp_path / "runs.db"), str(tmp_path / "elsewhere.db")
    assert _invoke("run", "suite.yaml", "--db", elsewhere).exit_code == 0
    export = tmp_path / "run.json"
    assert _invoke("export", "run", "latest", "--db", elsewhere, "-o", str(export)).exit_code == 0
    data = json.loads(export.read_text(encoding="utf-8"))
    data["run"]["snapshot"][0]["suite"]["name"] = "toy\x1b]0;owned\x07\u202e"
    export.write_text(json.dumps(data), encoding="utf-8")
    assert _invoke("import", "run", str(export), "--db", db).exit_code == 0
    refused = _invoke("runs", "repeat", "latest", "--db", db)
    assert refused.exit_code == EXIT_INVALID
    assert "(suite 'toy\\u001b]0;owned\\u0007\\u202e')" in refused.stderr
    assert "\x1b" not in refused.stderr
