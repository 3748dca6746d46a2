"""Every command that asks a model takes run's model options (--models, --judge-model, --user-model and the
--*-api-base options), and a command on a stored run reaches the run's own models unless told otherwise: the
fake judge at the api_base given (or stored) is the one that gets the requests."""

from __future__ import annotations

import json
import re
import textwrap
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from simulator.cli import EXIT_BELOW_BAR, EXIT_OK, app
from simulator.llm import FakeScript, Role
from tests.judges.test_judge_check import ANSWERS

runner = CliRunner()
ROOT = Path(__file__).resolve().parents[2]

STORED = "http://stored-judge.test/v1"
GIVEN = "http://given-judge.test/v1"
MODEL_OPTIONS = ["--models", "--judge-model", "--user-model", "--judge-api-base", "--user-api-base", "--agent-api-base"]


@pytest.mark.parametrize(
    "command",
    [
        ["run"],
        ["simulate"],
        ["digest"],
        ["replay"],
        ["rerun"],
        ["judge-check"],
        ["lint"],
        ["validate"],
    ],
)
def test_every_command_that_asks_a_model_takes_the_model_options(command: list[str]) -> None:
    result = runner.invoke(app, [*command, "--help"], terminal_width=200)
    assert result.exit_code == EXIT_OK
    words = set(re.findall(r"--[a-z-]+", result.stdout))
    assert set(MODEL_OPTIONS) <= words


AGENT = """
def respond(messages):
    text = messages[-1]["content"] if messages else ""
    return f"Sure: {text} Your refund is approved."
"""
SUITE = """\
name: toy
agent: agent.yaml
judging: {batch: false}
cases:
  - kind: simulation
    name: criteria
    steps:
      - static_utterance: I want a refund.
        checks:
          - must_contain: [refund]
        success_criteria: CRITERION
"""


def judge(messages: list[dict[str, Any]]) -> dict[str, Any]:
    """A judge that finds no claim in a turn, no satisfied goal and no criterion met; it suggests a change."""
    prompt = str(messages[0]["content"])
    if prompt.startswith("You check one turn"):
        return {"verdict": "no_claim", "claim": "", "reason": "the turn states no fact"}
    if prompt.startswith("You decide whether a conversation"):
        return {"satisfied": False, "reason": "no refund number was given"}
    if prompt.startswith("You check one success criterion"):
        return {"verdict": "not_met", "reason": "no refund number was given"}
    return {"change": "Give the refund number.", "rationale": "the user asked for it"}


def _suite(project: Path, criterion: str) -> None:
    (project / "suite.yaml").write_text(SUITE.replace("CRITERION", criterion), encoding="utf-8")


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    (tmp_path / ".git").mkdir()
    (tmp_path / "toy_agent.py").write_text(textwrap.dedent(AGENT), encoding="utf-8")
    (tmp_path / "agent.yaml").write_text("type: python\ncallable: toy_agent:respond\n", encoding="utf-8")
    _suite(tmp_path, "The agent gives the refund number.")
    monkeypatch.chdir(tmp_path)
    return tmp_path


def _invoke(args: list[str], *, exit_code: int | None = None) -> tuple[Any, FakeScript]:
    script = FakeScript().enqueue("*", judge, times=100)
    with script.active():
        result = runner.invoke(app, args)
    if exit_code is not None:
        assert result.exit_code == exit_code, result.stdout + result.stderr
    return result, script


def _judge_bases(script: FakeScript) -> set[str | None]:
    return {request.api_base for request in script.requests if request.role is Role.JUDGE}


def _stored_run(*options: str) -> str:
    """A run of the toy suite judged by fake/judge at STORED, recorded; its id."""
    args = ["run", "suite.yaml", "--db", "runs.db", "--seed", "1", "--json", "--judge-model", "fake/judge"]
    result, script = _invoke([*args, "--judge-api-base", STORED, *options], exit_code=EXIT_BELOW_BAR)
    assert _judge_bases(script) == {STORED}
    return str(json.loads(result.stdout)["run"]["id"])


def _settings(run_id: str) -> Any:
    import simulator

    return simulator.get_run(run_id, db="runs.db").record.settings


def test_digest_asks_the_runs_judge_where_it_was_and_the_command_line_overrides_it(project: Path) -> None:
    run_id = _stored_run()
    _, script = _invoke(["digest", run_id, "--db", "runs.db"], exit_code=EXIT_OK)
    assert _judge_bases(script) == {STORED}
    (project / "models.yaml").write_text(f"judge:\n  api_base: {GIVEN}\n", encoding="utf-8")
    for options in (["--judge-api-base", GIVEN], ["--models", "models.yaml"]):
        result, script = _invoke(["digest", run_id, "--db", "runs.db", "--json", *options], exit_code=EXIT_OK)
        assert _judge_bases(script) == {GIVEN}
        assert {request.model for request in script.requests} == {"judge"}
        suggestions = [group["suggestion"] for group in json.loads(result.stdout)["groups"]]
        assert {"model suggestion"} == {suggestion["source"] for suggestion in suggestions if suggestion}


def test_a_role_a_command_never_asks_is_named_in_a_note(project: Path) -> None:
    run_id = _stored_run()
    result, _ = _invoke(["digest", run_id, "--db", "runs.db", "--user-model", "fake/user"], exit_code=EXIT_OK)
    assert "note: digest asks only the judge model: --user-model / --user-api-base / the user in --models not " \
        "used here" in result.stderr  # fmt: skip


def test_replay_sends_changed_judge_questions_to_the_judge_given(project: Path) -> None:
    run_id = _stored_run("--record")
    _suite(project, "The agent gives the refund number and says thank you.")  # a judge question that changed
    _, script = _invoke(["replay", run_id, "--db", "runs.db"], exit_code=EXIT_BELOW_BAR)
    assert _judge_bases(script) == set()  # no judge option: a changed question is not judged, nothing is sent
    _, script = _invoke(["replay", run_id, "--db", "runs.db", "--judge-api-base", GIVEN], exit_code=EXIT_BELOW_BAR)
    assert _judge_bases(script) == {GIVEN}
    replayed = _settings("latest")
    assert (replayed.judge_model, replayed.models["judge"]["api_base"]) == ("fake/judge", GIVEN)


def test_rerun_reaches_the_runs_judge_or_the_one_given(project: Path) -> None:
    run_id = _stored_run("--record")
    _suite(project, "The agent gives the refund number and says thank you.")
    rerun = ["rerun", run_id, "criteria", "--from-divergence", "--db", "runs.db"]
    _, script = _invoke(rerun, exit_code=EXIT_BELOW_BAR)
    assert _judge_bases(script) == {STORED}
    (project / "models.yaml").write_text(f"judge:\n  model: fake/other-judge\n  api_base: {GIVEN}\n", encoding="utf-8")
    _, script = _invoke([*rerun, "--models", "models.yaml"], exit_code=EXIT_BELOW_BAR)
    assert _judge_bases(script) == {GIVEN}
    assert {request.model for request in script.requests if request.role is Role.JUDGE} == {"other-judge"}
    # The file's model wins over the --judge-model the recorded run was started with.
    assert (_settings("latest").judge_model, _settings("latest").models["judge"]["model"]) == (
        None, "fake/other-judge",
    )  # fmt: skip


def test_a_repeat_runs_the_same_plan_against_the_runs_judge_or_the_one_given(project: Path) -> None:
    run_id = _stored_run("--no-cache")  # else the repeat's judge questions are answered from the request cache
    _, script = _invoke(["runs", "repeat", run_id, "--db", "runs.db"], exit_code=EXIT_BELOW_BAR)
    assert _judge_bases(script) == {STORED}
    _, script = _invoke(
        ["runs", "repeat", run_id, "--db", "runs.db", "--judge-api-base", GIVEN], exit_code=EXIT_BELOW_BAR
    )
    assert _judge_bases(script) == {GIVEN}
    assert _settings("latest").models["judge"]["api_base"] == GIVEN


def test_lint_asks_the_judge_named_in_a_models_file_at_its_api_base(project: Path) -> None:
    (project / "models.yaml").write_text(f"judge:\n  model: fake/judge\n  api_base: {GIVEN}\n", encoding="utf-8")
    reply: dict[str, Any] = {"suggestions": []}
    for command in (["lint", "suite.yaml"], ["validate", "suite.yaml", "--lint"]):
        script = FakeScript().enqueue("judge", reply)
        with script.active():
            result = runner.invoke(app, [*command, "--models", "models.yaml", "--json"])
        assert result.exit_code in (EXIT_OK, EXIT_BELOW_BAR), result.stdout + result.stderr
        assert [request.api_base for request in script.requests] == [GIVEN]
    script = FakeScript().enqueue("judge", reply)
    with script.active():
        runner.invoke(app, ["lint", "suite.yaml", "--judge-model", "fake/judge", "--judge-api-base", STORED])
    assert [request.api_base for request in script.requests] == [STORED]


def test_judge_check_asks_the_judge_at_the_api_base_given(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(ROOT)
    script = FakeScript().enqueue("judge", *ANSWERS)
    with script.active():
        result = runner.invoke(
            app, ["judge-check", "judge_labels/demo.yaml", "--judge-model", "fake/judge", "--judge-api-base", GIVEN]
        )
    assert result.exit_code == EXIT_OK, result.stdout + result.stderr
    assert _judge_bases(script) == {GIVEN}
    assert len(script.requests) == len(ANSWERS)
