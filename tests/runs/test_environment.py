"""An agent's environment variable that is not set is found before anything runs or is stored (a missing
HTTP-agent variable used to error every conversation of the run, one by one)."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest
from typer.testing import CliRunner

from simulator.cli import EXIT_INVALID, app

runner = CliRunner()

AGENT = """\
type: http
base_url: http://127.0.0.1:9/v1
retries: 0
api_key_env: SIMULATOR_TEST_AGENT_KEY
headers_from_env:
  X-Tenant: SIMULATOR_TEST_TENANT
"""
SUITE = """\
name: env
cases:
  - kind: golden
    name: hello
    turns:
      - user: hello
"""


def _project(root: Path) -> Path:
    (root / ".git").mkdir()
    (root / "agent.yaml").write_text(AGENT, encoding="utf-8")
    (root / "suite.yaml").write_text(SUITE, encoding="utf-8")
    return root


@pytest.mark.parametrize("command", ["run", "simulate"])
def test_a_missing_agent_variable_is_invalid_input_and_nothing_is_stored(
    command: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = _project(tmp_path)
    monkeypatch.chdir(root)
    monkeypatch.delenv("SIMULATOR_TEST_AGENT_KEY", raising=False)
    monkeypatch.delenv("SIMULATOR_TEST_TENANT", raising=False)
    args = [command, "suite.yaml"] + (["--db", "runs.db"] if command == "run" else [])
    result = runner.invoke(app, args)
    assert result.exit_code == EXIT_INVALID, result.stdout + result.stderr
    shown = result.stdout + result.stderr
    expected = (
        "agent.yaml:1:1: agent.api_key_env: the HTTP agent's api_key_env names the environment variable "
        "SIMULATOR_TEST_AGENT_KEY, which is not set: set it (export SIMULATOR_TEST_AGENT_KEY=...) before running"
    )
    assert expected in shown
    assert "agent.headers_from_env.X-Tenant" in shown
    if (root / "runs.db").exists():
        with sqlite3.connect(root / "runs.db") as db:
            assert list(db.execute("SELECT id FROM runs")) == []


def test_with_the_variables_set_the_run_goes_ahead(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    root = _project(tmp_path)
    monkeypatch.chdir(root)
    monkeypatch.setenv("SIMULATOR_TEST_AGENT_KEY", "a-key-of-some-length")
    monkeypatch.setenv("SIMULATOR_TEST_TENANT", "tenant-one")
    result = runner.invoke(app, ["run", "suite.yaml", "--db", "runs.db"])
    # Nothing listens on port 9: the case is an error naming the agent, but the run ran and was stored.
    assert result.exit_code == 1, result.stdout + result.stderr
    with sqlite3.connect(root / "runs.db") as db:
        assert len(list(db.execute("SELECT id FROM runs"))) == 1


def test_a_suite_the_filters_leave_out_needs_none_of_its_variables(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`simulator run suites --tag refunds` on a fresh checkout: the HTTP example's variables are not set, and
    its suite has no case with that tag, so it is not asked for them."""
    root = _project(tmp_path)
    other = root / "other"
    other.mkdir()
    (other / "suite.yaml").write_text(
        "name: other\nagent: {type: python, callable: simulator.demo.shop:respond}\ncases:\n"
        "  - {kind: golden, name: greet, tags: [mine], turns: [{user: hello}]}\n",
        encoding="utf-8",
    )
    monkeypatch.chdir(root)
    monkeypatch.delenv("SIMULATOR_TEST_AGENT_KEY", raising=False)
    monkeypatch.delenv("SIMULATOR_TEST_TENANT", raising=False)
    kept = runner.invoke(app, ["run", "suite.yaml", "other/suite.yaml", "--tag", "mine", "--db", "runs.db"])
    assert kept.exit_code == 0, kept.stdout + kept.stderr
    both = runner.invoke(app, ["run", "suite.yaml", "other/suite.yaml", "--db", "runs.db"])
    assert both.exit_code == EXIT_INVALID
    assert "SIMULATOR_TEST_AGENT_KEY, which is not set" in both.stdout + both.stderr
