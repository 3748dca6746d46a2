"""The command line end to end: output, exit codes, and what it must not import."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from typer.testing import CliRunner

from simulator import __version__
from simulator.cli import EXIT_INTERNAL, EXIT_INVALID, app

runner = CliRunner()

VALID_SUITE = """\
name: tiny
cases:
  - kind: scenario
    name: greet
    goal: Say hello and get a greeting back.
    personas: [terse]
"""

AGENT = "type: http\nbase_url: http://127.0.0.1:9/v1\n"
PERSONA = "name: terse\npersonality: Writes as few words as possible.\nlanguage: en\n"


def _project(tmp_path: Path, suite: str = VALID_SUITE) -> Path:
    (tmp_path / "personas").mkdir()
    (tmp_path / "personas" / "terse.yaml").write_text(PERSONA, encoding="utf-8")
    (tmp_path / "suites").mkdir()
    (tmp_path / "suites" / "tiny.yaml").write_text(suite, encoding="utf-8")
    (tmp_path / "suites" / "agent.yaml").write_text(AGENT, encoding="utf-8")
    return tmp_path


def test_help_lists_the_commands() -> None:
    result = runner.invoke(app, ["--help"])
    assert result.exit_code == 0
    for command in ("validate", "schema", "personas", "import"):
        assert command in result.stdout


def test_version() -> None:
    result = runner.invoke(app, ["--version"])
    assert result.exit_code == 0
    assert result.stdout.strip() == f"simulator {__version__}"


def test_validate_valid_files(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(_project(tmp_path))
    result = runner.invoke(app, ["validate", "suites", "personas"])
    assert result.exit_code == 0, result.stdout
    assert result.stdout.splitlines() == [
        "Checked 3 files: 1 suite with 1 case (golden 0, scenario 1, simulation 0), 1 persona, 1 agent file.",
        "All valid.",
    ]


def test_validate_reports_every_error_with_its_place_and_exits_2(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    broken = textwrap.dedent(
        """\
        name: tiny
        cases:
          - kind: scenario
            name: greet
            gaol: Say hello.
            personas: [terce]
          - kind: simulaton
            name: other
        """
    )
    monkeypatch.chdir(_project(tmp_path, broken))
    result = runner.invoke(app, ["validate", "suites"])
    assert result.exit_code == EXIT_INVALID
    lines = result.stdout.splitlines()
    # The misspelt `gaol` is reported once, as the did-you-mean, not again as "missing required key 'goal'".
    assert lines[:2] == [
        "suites/tiny.yaml:5:5: cases[0].gaol: unknown key 'gaol'; did you mean 'goal'?",
        "suites/tiny.yaml:7:11: cases[1].kind: kind must be one of golden, scenario, simulation, "
        "got the text 'simulaton'; did you mean 'simulation'?",
    ]
    assert lines[-1] == "Found 2 errors in 1 file."


def test_validate_missing_path_is_an_error_not_a_traceback(tmp_path: Path) -> None:
    result = runner.invoke(app, ["validate", str(tmp_path / "nope")])
    assert result.exit_code == EXIT_INVALID
    assert "no such file or folder" in result.stdout
    assert result.exception is None or isinstance(result.exception, SystemExit)


def test_schema_prints_the_suite_schema() -> None:
    result = runner.invoke(app, ["schema"])
    assert result.exit_code == 0
    schema = json.loads(result.stdout)
    assert schema["title"] == "Simulator suite"
    assert "cases" in schema["required"]


def test_schema_writes_a_file_and_refuses_unknown_kinds(tmp_path: Path) -> None:
    target = tmp_path / "out" / "persona.schema.json"
    assert runner.invoke(app, ["schema", "persona", "-o", str(target)]).exit_code == 0
    assert json.loads(target.read_text(encoding="utf-8"))["title"] == "Simulator persona"
    result = runner.invoke(app, ["schema", "suits"])
    assert result.exit_code == EXIT_INVALID
    # typer refuses it up front, naming the choices (the message sits in a box: its lines are joined here)
    assert "'suits' is not one of 'suite', 'evals', 'agent', 'persona', 'personas'" in " ".join(
        result.stderr.replace("│", " ").split()
    )


def test_personas_list(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(_project(tmp_path) / "suites")
    result = runner.invoke(app, ["personas", "list"])
    assert result.exit_code == 0, result.stdout + result.stderr
    assert "terse" in result.stdout
    assert result.stdout.strip().endswith("1 persona.")


def test_personas_list_reports_broken_persona_files(tmp_path: Path) -> None:
    (tmp_path / "bad.yaml").write_text("name: x\npersonalty: typo\n", encoding="utf-8")
    result = runner.invoke(app, ["personas", "list", "--dir", str(tmp_path)])
    assert result.exit_code == EXIT_INVALID
    assert "bad.yaml:2:1: personalty: unknown key 'personalty'; did you mean 'personality'?" in result.stdout


def test_personas_list_without_a_folder(tmp_path: Path) -> None:
    result = runner.invoke(app, ["personas", "list", "--dir", str(tmp_path / "none")])
    assert result.exit_code == EXIT_INVALID
    assert "no such folder" in result.stderr


def test_internal_errors_are_reported_as_bugs_without_a_traceback(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def broken(paths: object) -> object:
        raise RuntimeError("boom")

    monkeypatch.setattr("simulator.loading.validate_paths", broken)
    monkeypatch.delenv("SIMULATOR_DEBUG", raising=False)
    result = runner.invoke(app, ["validate", str(tmp_path)])
    assert result.exit_code == EXIT_INTERNAL
    assert "internal error: RuntimeError: boom" in result.stderr
    assert "Traceback" not in result.stderr


def test_help_and_validate_do_not_import_litellm_or_langgraph(tmp_path: Path) -> None:
    # litellm alone takes seconds to import; the everyday commands must not pay for it.
    _project(tmp_path)
    code = textwrap.dedent(
        f"""
        import sys
        from simulator.cli import app
        personas = {str(tmp_path / "personas")!r}
        for args in (["--help"], ["validate", {str(tmp_path)!r}], ["schema"], ["personas", "list", "--dir", personas]):
            try:
                app(args)
            except SystemExit as exit:
                assert exit.code in (0, None), (args, exit.code)
        heavy = sorted(m for m in sys.modules if m.split(".")[0] in ("litellm", "langgraph", "openai", "httpx"))
        print("HEAVY", heavy)
        """
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stderr
    assert "HEAVY []" in done.stdout, done.stdout


def test_import_csv_writes_a_suite_that_validates(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "agent.yaml").write_text(AGENT, encoding="utf-8")
    (tmp_path / "faq.csv").write_text(
        'prompt;must_contain;expected_tools\nWas kostet das?;"""23,60"", EUR";get_price\n', encoding="utf-8-sig"
    )
    result = runner.invoke(app, ["import", "csv", "faq.csv", "-o", "suites/faq.yaml"])
    assert result.exit_code == 0, result.stdout + result.stderr
    assert result.stdout.strip() == "wrote suites/faq.yaml: 1 golden case"
    assert runner.invoke(app, ["validate", "suites"]).exit_code == 0
    from simulator.loading import load_suite

    case = load_suite(tmp_path / "suites" / "faq.yaml").suite.cases[0]
    assert case.kind == "golden"
    expect = case.turns[0].expect
    assert expect is not None
    assert expect.must_contain == ["23,60", "EUR"]


def test_import_csv_never_overwrites_without_force(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "agent.yaml").write_text(AGENT, encoding="utf-8")
    (tmp_path / "faq.csv").write_text("prompt\nHello\n", encoding="utf-8")
    (tmp_path / "faq.yaml").write_text("keep me\n", encoding="utf-8")
    result = runner.invoke(app, ["import", "csv", "faq.csv", "-o", "faq.yaml"])
    assert result.exit_code == EXIT_INVALID
    assert "pass --force" in result.stderr
    assert (tmp_path / "faq.yaml").read_text(encoding="utf-8") == "keep me\n"
    assert runner.invoke(app, ["import", "csv", "faq.csv", "-o", "faq.yaml", "--force"]).exit_code == 0


def test_import_csv_reports_bad_rows_with_row_and_column(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "bad.csv").write_text("prompt,expected_tools\nHi,not a tool\n", encoding="utf-8")
    result = runner.invoke(app, ["import", "csv", "bad.csv", "-o", "out.yaml"])
    assert result.exit_code == EXIT_INVALID
    assert result.stdout.startswith("bad.csv:2:2: row 1.expected_tools: ")
    assert not (tmp_path / "out.yaml").exists()


ROOT = Path(__file__).resolve().parents[2]


def test_simulate_prints_the_transcript_and_step_outcomes(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(ROOT)
    result = runner.invoke(
        app, ["simulate", "suites/demo/simulations.yaml", "--case", "order_status_needs_the_order_number", "-v"]
    )
    assert result.exit_code == 0, result.stdout + result.stderr
    lines = result.stdout.splitlines()
    assert lines[0] == (
        "order_status_needs_the_order_number (simulation) with persona impatient: stopped completed after 2 turns, "
        "Goals (0/2, 2 unsure)"
    )
    assert "  [1] agent: I can check that for you. What is your order number?" in lines
    assert any(
        line.startswith("      tool lookup_order(") and "[faked by suite tool_fakes[0]]" in line for line in lines
    )
    # Its checks are met, its criteria in words were not judged: unsure, never complete.
    assert "  ? step 2: give the number — unsure" in lines
    assert any(line.startswith("      ? check step 2: unsure — 3 of 4 checks met") for line in lines)
    # Offline, its plain-text expectation has no judge: the case is unsure, never guessed; the automatic
    # per-turn hallucination question is reported as not judged without holding the case.
    assert "Outcome: unsure" in lines
    assert "  ? [judge] turn 2: hallucination (not required)" in lines
    assert any(line.startswith("  ? [judge] expectation: The agent does not ask again") for line in lines)
    assert lines[-2] == "1 case(s): 0 passed, 0 failed, 0 error, 1 unsure."
    assert lines[-1].startswith("Unsure cases have checks only a judge model can decide")


def test_simulate_exits_1_when_a_case_misses_a_goal(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(ROOT)
    result = runner.invoke(
        app, ["simulate", "suites/demo/scenarios.yaml", "-c", "express_delivery_date_is_made_up", "--verbose"]
    )
    assert result.exit_code == 1
    assert "lookup_order was not called (no tool calls)" in result.stdout
    assert "Outcome: fail" in result.stdout
    assert (
        "  ✗ [deterministic] turn 1: hallucination = 1\n"
        "      claims “according to our delivery system” but no tool was called in the conversation"
    ) in result.stdout


def test_simulate_json_is_the_scored_result(monkeypatch: pytest.MonkeyPatch) -> None:
    from simulator.models.scores import CaseResult

    monkeypatch.chdir(ROOT)
    result = runner.invoke(
        app, ["simulate", "suites/demo/golden.yaml", "-c", "lookup_without_a_fake_is_not_executed", "--json"]
    )
    document = json.loads(result.stdout)  # one JSON document, however many cases ran
    assert (document["total"], document["passed"]) == (1, 1)
    [scored] = [CaseResult.model_validate(item) for item in document["results"]]
    [call] = scored.transcript.tool_calls()
    assert call.status == "not_executed"
    assert {score.metric for score in scored.scores} >= {"tool_call_correctness", "hallucination"}


def test_simulate_unknown_case_names_the_closest(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(ROOT)
    result = runner.invoke(app, ["simulate", "suites/demo/scenarios.yaml", "-c", "express_delivery"])
    assert result.exit_code == EXIT_INVALID
    assert "no case named 'express_delivery'; did you mean 'express_delivery_date_is_made_up'?" in result.stdout


def test_simulate_invalid_suite_is_exit_2_with_the_errors(tmp_path: Path) -> None:
    (tmp_path / "s.yaml").write_text("name: x\ncases: []\n", encoding="utf-8")
    result = runner.invoke(app, ["simulate", str(tmp_path / "s.yaml")])
    assert result.exit_code == EXIT_INVALID
    assert "cases: needs at least 1 entry" in result.stdout


def test_judge_check_without_a_judge_model_is_exit_2_with_the_fix(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(ROOT)
    result = runner.invoke(app, ["judge-check", "judge_labels/demo.yaml"])
    assert result.exit_code == EXIT_INVALID
    assert "pass --judge-model MODEL" in result.stderr


def test_help_shows_bracketed_extras_as_written() -> None:
    """Help text is rendered as rich markup: an extra such as ``[ray]`` must be escaped, or it vanishes."""
    result = runner.invoke(app, ["run", "--help"], env={"COLUMNS": "200"})
    assert result.exit_code == 0
    assert "pip install 'simulator[ray]'" in result.stdout
