"""The plan: golden cases once without a persona, and the notes printed before anything runs."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from simulator.cli import app
from simulator.loading import load_suite
from simulator.models.run import RunSettings
from simulator.runner._plan import build_plan, judge_questions, plan_notes

ROOT = Path(__file__).resolve().parents[2]


def test_golden_cases_do_not_fan_out_over_personas() -> None:
    loaded = load_suite(ROOT / "suites/demo/golden.yaml")
    settings = RunSettings(paths=["suites/demo"], persona="all", repeat=2, seed=1)
    plan = build_plan([loaded], settings)
    golden = [case.name for case in loaded.suite.cases if case.kind == "golden"]
    assert golden
    for name in golden:
        items = [item for item in plan if item.case == name]
        assert [(item.persona, item.repeat) for item in items] == [(None, 0), (None, 1)]


def test_simulations_still_fan_out_over_personas() -> None:
    loaded = load_suite(ROOT / "suites/demo/simulations.yaml")
    plan = build_plan([loaded], RunSettings(paths=["x"], persona="all", seed=1))
    assert len(plan) == len(loaded.suite.cases) * len(loaded.personas) > len(loaded.suite.cases)


def test_judge_questions_name_what_only_a_model_decides() -> None:
    loaded = load_suite(ROOT / "suites/examples/hosted_evals.yaml")
    questions = [q for case in loaded.suite.cases for q in judge_questions(case)]
    assert "step 2: success criteria" in questions
    assert "expectation: expectation in words" in questions


def test_notes_say_how_many_checks_need_a_judge_and_that_golden_runs_once() -> None:
    suites = [load_suite(ROOT / "suites/demo/golden.yaml")]
    planned = {(0, case.name) for case in suites[0].suite.cases}
    notes = plan_notes(suites, planned, lambda loaded: False)
    assert notes[0].startswith("5 golden case(s) run once per repeat, without a persona")
    assert "need a judge model" in notes[1]
    assert "--judge-model" in notes[1]
    # With a judge model there is nothing to warn about.
    assert plan_notes(suites, planned, lambda loaded: True) == notes[:1]


@pytest.mark.parametrize("command", ["run", "simulate"])
def test_run_and_simulate_print_the_notes_before_running(
    command: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(ROOT)
    args = [command, "suites/examples/hosted_evals.yaml"]
    if command == "run":
        args += ["--db", str(tmp_path / "runs.db")]
    result = CliRunner().invoke(app, args)
    assert "need a judge model" in result.stderr, result.stderr
    assert "pass --judge-model" in result.stderr
