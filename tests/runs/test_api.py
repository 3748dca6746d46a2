"""The public run API (``simulator.run`` / ``resume`` / ``repeat`` / ``simulate``): what the CLI calls."""

from __future__ import annotations

import textwrap
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

import simulator
from simulator.cli import EXIT_INVALID, app
from simulator.store import RunStore

AGENT = """
def respond(messages):
    text = messages[-1]["content"] if messages else ""
    return f"Sure: {text}. Your refund is approved."
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
    name: judged
    tags: [judged]
    steps:
      - goal: get a refund
        success_criteria: The agent approves the refund.
"""


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    (tmp_path / ".git").mkdir()
    (tmp_path / "toy_agent.py").write_text(textwrap.dedent(AGENT), encoding="utf-8")
    (tmp_path / "agent.yaml").write_text("type: python\ncallable: toy_agent:respond\n", encoding="utf-8")
    (tmp_path / "suite.yaml").write_text(SUITE, encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    return tmp_path


def _stored_runs(db: Path) -> int:
    if not db.exists():
        return 0
    with RunStore(db) as store:
        return len(store.list_runs(limit=100))


def test_run_stores_the_run_and_reports_events_in_order(project: Path) -> None:
    events: list[object] = []
    outcome = simulator.run("suite.yaml", db=project / "runs.db", repeat=2, seed=7, on_event=events.append)
    assert isinstance(events[0], simulator.RunStarted)
    assert events[0].already_done == 0
    progress = [event for event in events[1:] if isinstance(event, simulator.Progress)]
    assert [event.done for event in progress] == [1, 2, 3, 4]
    assert outcome.record.status == "completed"
    assert outcome.record.settings.seed == 7
    assert {(r.case, r.outcome) for r in outcome.results()} == {("refund", "pass"), ("judged", "unsure")}
    assert outcome.exit_code() == 1  # unsure is not a pass
    assert outcome.exit_code(fail_under=50) == 0
    assert simulator.get_run(outcome.id, db=project / "runs.db").record == outcome.record


def test_a_planned_run_can_be_inspected_before_anything_is_stored(project: Path) -> None:
    planned = simulator.plan("suite.yaml", tags=["judged"])
    assert [item.case for item in planned.items] == ["judged"]
    assert any("need a judge model" in note for note in planned.notes)
    assert planned.settings.seed != 0  # a random seed, recorded so the run can be reproduced
    outcome = simulator.run(planned, db=project / "runs.db")
    assert [r.case for r in outcome.results()] == ["judged"]


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"repeat": "many"}, "repeat"),
        ({"colour": "red"}, "colour"),
        ({"cases": ["nope"]}, "no case named 'nope'"),
        ({"tags": ["nothing-has-this"]}, "nothing to run"),
        ({"models": {"judge": {"modle": "x"}}}, "judge.modle"),
        ({"models": {"judge": {"timeout": -1}}}, "judge.timeout"),
    ],
)
def test_bad_options_are_refused_before_anything_runs(project: Path, options: dict[str, Any], message: str) -> None:
    with pytest.raises(simulator.InputError, match=message):
        simulator.run("suite.yaml", db=project / "runs.db", **options)
    assert _stored_runs(project / "runs.db") == 0


def test_an_invalid_suite_raises_located_errors_and_stores_nothing(project: Path) -> None:
    (project / "bad.yaml").write_text("name: bad\ncases:\n  - kind: golden\n    name: x\n", encoding="utf-8")
    with pytest.raises(simulator.ConfigErrors) as raised:
        simulator.run("bad.yaml", db=project / "runs.db")
    assert any(error.file.endswith("bad.yaml") for error in raised.value.errors)
    assert _stored_runs(project / "runs.db") == 0


def test_repeat_and_resume(project: Path) -> None:
    db = project / "runs.db"
    first = simulator.run("suite.yaml", db=db, cases=["refund"])
    again = simulator.repeat(first.id, db=db, note="again")
    assert again.id != first.id
    assert again.record.repeat_of == first.id
    assert again.record.note == "again"
    assert [r.outcome for r in again.results()] == ["pass"]
    assert simulator.resume(first.id, db=db).record == first.record  # complete: returned as it is


def test_simulate_scores_without_storing(project: Path) -> None:
    seen: list[str] = []
    results = simulator.simulate("suite.yaml", cases=["refund"], on_result=lambda r: seen.append(r.case))
    assert [r.outcome for r in results] == ["pass"]
    assert seen == ["refund"]
    assert not (project / ".simulator").exists()


def test_model_overrides_from_the_command_line_reach_the_stored_settings(project: Path) -> None:
    models = "judge:\n  model: openai/gpt-4o-mini\n  timeout: 5\n  max_retries: 0\n"
    (project / "models.yaml").write_text(models, encoding="utf-8")
    result = CliRunner().invoke(
        app,
        [
            "run", "suite.yaml", "--db", "runs.db", "--case", "refund", "--models", "models.yaml",
            "--judge-api-base", "http://127.0.0.1:9/v1", "--user-api-base", "http://127.0.0.1:8/v1",
        ],
    )  # fmt: skip
    # Nothing listens there: the judge fails and the case is an error, which is not the point here.
    assert result.exit_code == 1, result.output
    stored = simulator.get_run("latest", db=project / "runs.db").record.settings.models
    assert stored == {
        "judge": {
            "model": "openai/gpt-4o-mini",
            "timeout": 5.0,
            "max_retries": 0,
            "api_base": "http://127.0.0.1:9/v1",
        },
        "user": {"api_base": "http://127.0.0.1:8/v1"},
    }
    planned = simulator.plan("suite.yaml", models=stored)
    from simulator.runner import model_roles

    roles = model_roles(planned.suites[0], planned.settings)
    assert (roles.judge.model, roles.judge.api_base, roles.judge.timeout) == (
        "openai/gpt-4o-mini", "http://127.0.0.1:9/v1", 5.0,
    )  # fmt: skip
    assert roles.user.api_base == "http://127.0.0.1:8/v1"


def test_a_bad_models_file_is_a_located_error(project: Path) -> None:
    (project / "models.yaml").write_text("judge:\n  modle: x\n", encoding="utf-8")
    result = CliRunner().invoke(app, ["run", "suite.yaml", "--db", "runs.db", "--models", "models.yaml"])
    assert result.exit_code == EXIT_INVALID
    assert "models.yaml:2" in result.output
    assert "modle" in result.output
    assert _stored_runs(project / "runs.db") == 0


def test_a_run_collects_young_objects_less_often_and_gives_the_collector_back_as_it_was(project: Path) -> None:
    """The youngest generation's threshold is raised while a run runs (the conversations in flight are tens of
    thousands of young objects each collection walks again) and restored afterwards; an application's higher
    threshold, or its collector turned off, is left as it is."""
    import gc

    from simulator.runner._gc import YOUNG_COLLECTION_THRESHOLD

    seen: list[tuple[int, int, int]] = []

    def during(event: object) -> None:
        if isinstance(event, simulator.Progress):
            seen.append(gc.get_threshold())

    before = gc.get_threshold()
    try:
        gc.set_threshold(700, 10, 10)
        simulator.run("suite.yaml", db=project / "runs.db", cases=["refund"], on_event=during)
        assert set(seen) == {(YOUNG_COLLECTION_THRESHOLD, 10, 10)}
        assert gc.get_threshold() == (700, 10, 10)

        seen.clear()
        gc.set_threshold(100_000, 5, 5)  # an application's own, higher
        simulator.run("suite.yaml", db=project / "runs.db", cases=["refund"], on_event=during)
        assert set(seen) == {(100_000, 5, 5)}

        seen.clear()
        gc.set_threshold(700, 10, 10)
        gc.disable()
        simulator.run("suite.yaml", db=project / "runs.db", cases=["refund"], on_event=during)
        assert set(seen) == {(700, 10, 10)}
        assert not gc.isenabled()
    finally:
        gc.enable()
        gc.set_threshold(*before)


def test_a_ray_worker_collects_young_objects_as_rarely_as_the_runner(project: Path) -> None:
    """A Ray worker's process is the run's for as long as it lives: its threshold is raised when it starts."""
    import gc

    from simulator.loading import validate_paths
    from simulator.models.run import RunSettings
    from simulator.runner._gc import YOUNG_COLLECTION_THRESHOLD
    from simulator.runner._plan import snapshot_of
    from simulator.runner._ray import ConversationWorker

    report = validate_paths([project / "suite.yaml"])
    snapshot = snapshot_of(report.suites[0], "suite.yaml").model_dump(mode="json")
    settings = RunSettings(paths=["suite.yaml"]).model_dump(mode="json")
    before = gc.get_threshold()
    try:
        gc.set_threshold(700, 10, 10)
        ConversationWorker([snapshot], settings, None, "worker-1")
        assert gc.get_threshold() == (YOUNG_COLLECTION_THRESHOLD, 10, 10)
    finally:
        gc.set_threshold(*before)


def test_a_run_leaves_the_objects_alive_at_its_start_out_of_full_collections_and_gives_them_back(
    project: Path,
) -> None:
    """A full garbage collection over everything imported stopped the event loop for ~0.2 s: while a run runs,
    what was alive at its start is frozen; afterwards the process's collector is as it was, an application's
    own frozen objects included."""
    import gc

    seen: list[int] = []

    def during(event: object) -> None:
        if isinstance(event, simulator.Progress):  # a conversation finished: the run is running
            seen.append(gc.get_freeze_count())

    assert gc.get_freeze_count() == 0
    simulator.run("suite.yaml", db=project / "runs.db", cases=["refund"], on_event=during)
    assert seen
    assert min(seen) > 0
    assert gc.get_freeze_count() == 0

    gc.freeze()  # an application that froze its own objects keeps them frozen, and only those
    try:
        seen.clear()
        simulator.run("suite.yaml", db=project / "runs.db", cases=["refund"], on_event=during)
        assert seen
        assert min(seen) > 0
        assert gc.get_freeze_count() > 0  # not given back by the run: they were not the run's to give
    finally:
        gc.unfreeze()


SHUFFLING_AGENT = """
import random
import time

def respond(messages):
    time.sleep(random.random() * 0.02)  # the conversations end in another order than the plan's
    text = messages[-1]["content"] if messages else ""
    return f"Sure: {text}. Your refund is approved."
"""


def test_the_summary_added_up_while_the_run_stores_is_the_one_computed_from_the_store(
    project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from simulator.metrics import run_summary
    from simulator.runner import _execute

    def not_read_back(*args: object, **kwargs: object) -> object:
        raise AssertionError("a new run's results are not read back from the store to sum them up")

    monkeypatch.setattr(_execute, "run_summary", not_read_back)
    (project / "toy_agent.py").write_text(textwrap.dedent(SHUFFLING_AGENT), encoding="utf-8")
    db = project / "runs.db"
    finished: list[str] = []
    outcome = simulator.run(
        "suite.yaml", db=db, repeat=8, concurrency=6, seed=3,
        on_event=lambda event: finished.append(event.item.key) if hasattr(event, "item") else None,
    )  # fmt: skip
    with RunStore(db) as store:
        record = store.get_run(outcome.id)
        assert record.totals is not None
        again = run_summary(store.iter_results(record.id), record.totals.duration_s, record)
    assert sorted(finished) == sorted(item.key for item in record.plan)
    assert finished != [item.key for item in record.plan]  # stored out of plan order, and still:
    assert record.totals.model_dump_json() == again.model_dump_json()  # the same, in the same order
    assert record.totals.total == 16


def test_a_run_prepares_each_suites_agent_before_its_conversations_start(
    project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from simulator.runner import _execute
    from simulator.runner._converse import converse as original

    order: list[str] = []
    monkeypatch.setattr(_execute, "prepare_agent", lambda config: order.append(f"prepare {config.type}"))

    async def converse(*args: Any, **kwargs: Any) -> Any:
        order.append("conversation")
        return await original(*args, **kwargs)

    monkeypatch.setattr(_execute, "converse", converse)
    simulator.run("suite.yaml", db=project / "runs.db", cases=["refund"])
    assert order == ["prepare python", "conversation"]


def test_a_role_given_as_a_model_string_is_that_model_as_in_a_suite() -> None:
    """``models={"user": "ollama/llama3.1"}`` is the shorthand a suite's ``models:`` takes."""
    demo = Path(__file__).resolve().parents[2] / "suites" / "demo" / "scenarios.yaml"
    planned = simulator.plan(demo, models={"user": "ollama/llama3.1"})
    assert planned.settings.models == {"user": {"model": "ollama/llama3.1"}}
