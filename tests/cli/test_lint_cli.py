"""``simulator lint`` and ``validate --lint`` end to end: grouped text, --json, exit codes, the model pass."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

import pytest
from typer.testing import CliRunner

from simulator.cli import EXIT_BELOW_BAR, EXIT_INCOMPLETE, EXIT_INVALID, EXIT_OK, app
from simulator.llm import FakeScript, fake_auth_error
from tests.loading.test_lint import AGENT

runner = CliRunner()
ROOT = Path(__file__).resolve().parents[2]

SUITE = """\
name: t
cases:
  - name: refund
    kind: simulation
    steps:
      - goal: Ask for a refund.
        success_criteria: The agent refunds order ORD-55555.
      - goal: Say thanks.
        success_criteria: The agent responds politely.
"""
WARNING_ONLY = """\
name: t
cases:
  - name: vague
    kind: scenario
    goal: Ask about the opening hours.
    success_criteria: The agent responds helpfully.
"""


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    (tmp_path / "agent.yaml").write_text(AGENT, encoding="utf-8")
    return tmp_path


def _suite(folder: Path, text: str, name: str = "suite.yaml") -> str:
    path = folder / name
    path.write_text(textwrap.dedent(text), encoding="utf-8")
    return str(path)


def test_text_groups_findings_by_file_with_their_fix_and_fails_on_errors(folder: Path) -> None:
    path = _suite(folder, SUITE)
    result = runner.invoke(app, ["lint", path])
    assert result.exit_code == EXIT_BELOW_BAR
    lines = result.stdout.splitlines()
    assert lines[0] == path
    assert lines[1] == (
        f"  {path}:7:9: error unknown-fact: cases[0].steps[0].success_criteria: success_criteria of step 1 needs "
        "'ORD-55555' (an id), which neither the simulated user nor the agent is given: not in the goal, "
        "response_guide, say lines or earlier steps, the session parameters, the tool fakes or the agent's "
        "description"
    )
    assert lines[2].startswith("      fix: give the fact to the simulated user")
    assert lines[3].startswith(f"  {path}:9:9: warning vague-criteria: cases[0].steps[1].success_criteria: ")
    assert lines[-1] == "Linted 1 suite: 1 error, 1 warning, 0 info in 1 file."
    assert "lint failed" in result.stderr


def test_warnings_pass_unless_strict(folder: Path) -> None:
    path = _suite(folder, WARNING_ONLY)
    assert runner.invoke(app, ["lint", path]).exit_code == EXIT_OK
    assert runner.invoke(app, ["lint", path, "--strict"]).exit_code == EXIT_BELOW_BAR
    assert runner.invoke(app, ["lint", path, "--strict", "--ignore", "vague-criteria"]).exit_code == EXIT_OK
    assert runner.invoke(app, ["validate", "--lint", path, "--strict"]).exit_code == EXIT_BELOW_BAR
    assert runner.invoke(app, ["validate", "--lint", path, "--strict", "--ignore", "vague-criteria"]).exit_code == 0


def test_json_is_one_document_with_every_finding(folder: Path) -> None:
    path = _suite(folder, SUITE)
    result = runner.invoke(app, ["lint", path, "--json"])
    assert result.exit_code == EXIT_BELOW_BAR
    document = json.loads(result.stdout)
    assert document["valid"] is True
    assert document["counts"] == {"error": 1, "warning": 1, "info": 0}
    assert document["rules"]["unknown-fact"]["severity"] == "error"
    first = document["findings"][0]
    assert {k: first[k] for k in ("file", "line", "column", "key", "severity", "rule", "source")} == {
        "file": path,
        "line": 7,
        "column": 9,
        "key": "cases[0].steps[0].success_criteria",
        "severity": "error",
        "rule": "unknown-fact",
        "source": "rule",
    }
    assert first["fix"].startswith("give the fact")


def test_a_clean_suite_exits_0(folder: Path) -> None:
    result = runner.invoke(app, ["lint", str(ROOT / "suites" / "demo"), str(ROOT / "personas")])
    assert result.exit_code == EXIT_OK, result.stdout
    assert result.stdout.strip().endswith("Linted 3 suites: 0 errors, 0 warnings, 0 info.")


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("", "suite.yaml:1:1: (root): file is empty"),
        ("name: t\ncases: [\n", "YAML syntax error"),
        ("name: t\ncases:\n  - name: x\n    kind: scenario\n", "missing required key 'goal'"),
    ],
)
def test_invalid_files_exit_2_with_the_validate_errors(folder: Path, text: str, message: str) -> None:
    path = _suite(folder, text)
    for args in (["lint", path], ["validate", "--lint", path]):
        result = runner.invoke(app, args)
        assert result.exit_code == EXIT_INVALID, result.stdout
        assert message in result.stdout
        assert "Traceback" not in result.stdout + result.stderr
    document = json.loads(runner.invoke(app, ["lint", path, "--json"]).stdout)
    assert document["valid"] is False
    assert any(
        message in f"{e['file']}:{e['line']}:{e['column']}: {e['key']}: {e['message']}" for e in document["errors"]
    )


def test_validate_lint_is_lint(folder: Path) -> None:
    path = _suite(folder, SUITE)
    lint = runner.invoke(app, ["lint", path, "--json"])
    validate = runner.invoke(app, ["validate", "--lint", path, "--json"])
    assert (validate.exit_code, validate.stdout) == (lint.exit_code, lint.stdout)
    assert runner.invoke(app, ["validate", path]).exit_code == EXIT_OK  # without --lint: valid is valid


def test_an_unknown_rule_to_ignore_exits_2(folder: Path) -> None:
    result = runner.invoke(app, ["lint", _suite(folder, SUITE), "--ignore", "two-goal"])
    assert result.exit_code == EXIT_INVALID
    assert "no lint rule 'two-goal'; did you mean 'two-goals'?" in result.stderr


def test_the_judge_model_adds_labelled_suggestions_in_one_request_per_suite(folder: Path) -> None:
    path = _suite(folder, WARNING_ONLY)
    reply = {
        "suggestions": [
            {
                "case": "vague",
                "step": None,
                "field": "goal",
                "problem": "Opening hours of which shop?",
                "fix": "Name the shop.",
            },
            {"case": "ghost", "step": 2, "field": "goal", "problem": "No such case.", "fix": "None."},
        ]
    }
    script = FakeScript().enqueue("judge", reply)
    with script.active():
        result = runner.invoke(app, ["lint", path, "--judge-model", "fake/judge", "--json"])
    assert result.exit_code == EXIT_OK, result.stdout + result.stderr
    [request] = script.requests
    assert "Ask about the opening hours." in request.messages[1]["content"]
    assert "vague-criteria" in request.messages[1]["content"]  # the rules' findings, so they are not repeated
    findings = json.loads(result.stdout)["findings"]
    model = [f for f in findings if f["source"] == "model"]
    assert [(f["rule"], f["severity"], f["line"], f["column"], f["key"]) for f in model] == [
        ("model-review", "info", 1, 1, "(root)"),
        ("model-review", "info", 5, 5, "cases[0].goal"),
    ]
    assert model[0]["message"] == "No such case. (case 'ghost' is not in this suite)"
    with script.active():
        script.enqueue("judge", reply)
        text = runner.invoke(app, ["lint", path, "--judge-model", "fake/judge"]).stdout
    assert "info model-review (model suggestion): cases[0].goal: Opening hours of which shop?" in text


def test_a_failing_judge_model_keeps_the_rules_findings_and_exits_3(folder: Path) -> None:
    path = _suite(folder, WARNING_ONLY)
    with FakeScript().enqueue("judge", fake_auth_error()).active():
        result = runner.invoke(app, ["lint", path, "--judge-model", "fake/judge", "--json"])
    assert result.exit_code == EXIT_INCOMPLETE
    document = json.loads(result.stdout)
    assert [f["rule"] for f in document["findings"]] == ["vague-criteria"]
    assert document["model_error"].startswith("the review by fake/judge failed: ")
    with FakeScript().enqueue("judge", fake_auth_error()).active():
        result = runner.invoke(app, ["lint", path, "--judge-model", "fake/judge"])
    assert result.exit_code == EXIT_INCOMPLETE
    assert "warning vague-criteria" in result.stdout
    assert "error: the review by fake/judge failed: " in result.stderr


def test_without_a_judge_model_nothing_is_sent(folder: Path) -> None:
    script = FakeScript()
    with script.active():
        assert runner.invoke(app, ["lint", _suite(folder, WARNING_ONLY)]).exit_code == EXIT_OK
    assert script.requests == []


def test_the_docs_example_prints_what_the_docs_show(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    page = (ROOT / "docs" / "suites.md").read_text(encoding="utf-8")
    section = page.split("## Lint a suite before you run it", 1)[1]
    suite = section.split("cat > /tmp/lint-demo/flawed.yaml <<'EOF'\n", 1)[1].split("\nEOF\n", 1)[0]
    shown = section.split("```\n/tmp/lint-demo/flawed.yaml\n", 1)[1].split("```", 1)[0]
    (tmp_path / "agent.yaml").write_text((ROOT / "suites" / "demo" / "agent.yaml").read_text(encoding="utf-8"))
    (tmp_path / "flawed.yaml").write_text(suite + "\n", encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    result = runner.invoke(app, ["lint", "flawed.yaml"])
    assert result.exit_code == EXIT_BELOW_BAR
    assert result.stdout == "flawed.yaml\n" + shown.replace("/tmp/lint-demo/flawed.yaml", "flawed.yaml")
