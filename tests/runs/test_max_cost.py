"""``--max-cost`` (``max_cost=``): a run stops cleanly once its models' cost so far reaches the limit, ``interrupted``
as after SIGTERM, and ``runs resume`` finishes it; the limit counts the whole run's cost, earlier processes
included; a model whose price is unknown is said before the run starts."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

import simulator
from simulator.cli import EXIT_INTERRUPTED, EXIT_INVALID, EXIT_OK, app
from simulator.llm import FakeScript
from simulator.loading import load_suite
from simulator.models.run import RunSettings
from simulator.runner._cost import cost_notes
from simulator.store import RunStore

runner = CliRunner()

CASES = 5
#: Every agent reply is one word at $0.01 a completion token (prompts are free): each conversation costs $0.01.
SUITE = (
    "name: priced\nagent: {type: litellm, model: fake/agent, instructions: You approve refunds.}\ncases:\n"
    + "".join(
        f"  - kind: simulation\n    name: case_{n}\n    steps:\n      - static_utterance: Refund {n} please.\n"
        "        checks: [{must_contain: [approved]}]\n"
        for n in range(CASES)
    )
)


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    (tmp_path / ".git").mkdir()
    (tmp_path / "suite.yaml").write_text(SUITE, encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    return tmp_path


def _script() -> FakeScript:
    return FakeScript().enqueue("agent", "approved", times=100).price("agent", prompt=0.0, completion=0.01)


def _cli(script: FakeScript, *args: str) -> tuple[int, str]:
    with script.active():
        result = runner.invoke(app, [*args, "--db", "r.db"])
    return result.exit_code, result.stdout + result.stderr


def _stored(project: Path) -> tuple[str, int, str]:
    with RunStore(project / "r.db") as store:
        [record] = store.list_runs(limit=10)
        return record.status, store.result_count(record.id), record.id


def test_a_run_stops_at_its_cost_limit_interrupted_and_resume_finishes_it(project: Path) -> None:
    script = _script()
    code, output = _cli(script, "run", "suite.yaml", "--concurrency", "1", "--seed", "1", "--max-cost", "0.025")
    assert code == EXIT_INTERRUPTED, output
    status, stored, run_id = _stored(project)
    assert status == "interrupted"
    # Stopped once the third conversation's cost ($0.03) reached the limit; the one in flight may have been stored.
    assert 3 <= stored < CASES
    assert "cost limit reached: the models cost $0.0300 so far, --max-cost is $0.025" in output
    assert f"continue with a higher limit: simulator runs resume {run_id} --db r.db --max-cost USD" in output

    # The limit counts what the run already cost: resumed as it is, it is refused, saying what to raise.
    code, output = _cli(script, "runs", "resume", run_id)
    assert code == EXIT_INVALID, output
    assert f"run {run_id} has already cost $0.0" in output
    assert "which reaches its --max-cost $0.025" in output
    assert _stored(project)[:2] == ("interrupted", stored)

    code, output = _cli(script, "runs", "resume", run_id, "--max-cost", "1")
    assert code == EXIT_OK, output
    assert _stored(project)[:2] == ("completed", CASES)
    outcome = simulator.get_run(run_id, db=project / "r.db")
    assert outcome.record.totals is not None
    assert outcome.record.totals.usage["agent"].cost == pytest.approx(CASES * 0.01)


def test_a_run_under_its_limit_completes_and_the_limit_leaves_the_plan_hash_alone(project: Path) -> None:
    script = _script()
    with script.active():
        limited = simulator.run("suite.yaml", db=project / "r.db", seed=1, max_cost=1.0)
        free = simulator.run("suite.yaml", db=project / "r.db", seed=1)
    assert limited.completed
    assert limited.record.settings.max_cost == 1.0
    assert limited.record.settings.plan_hash == free.record.settings.plan_hash
    assert "max_cost" not in free.record.settings.model_dump()


def test_the_api_raises_cost_limit_reached_with_the_figures(project: Path) -> None:
    script = _script()
    with script.active(), pytest.raises(simulator.CostLimitReached) as raised:
        simulator.run("suite.yaml", db=project / "r.db", seed=1, concurrency=1, max_cost=0.015)
    stop = raised.value
    assert stop.spent == pytest.approx(0.02)
    assert (stop.limit, stop.total) == (0.015, CASES)
    assert 2 <= stop.stored < CASES
    assert _stored(project)[0] == "interrupted"


@pytest.mark.parametrize("value", [-1, 2_000_000, float("nan")])
def test_a_limit_out_of_range_is_refused_before_anything_is_stored(project: Path, value: float) -> None:
    with pytest.raises(simulator.InputError, match=r"--max-cost .*the run's cost limit in US dollars must be"):
        simulator.run("suite.yaml", db=project / "r.db", max_cost=value)
    assert not (project / "r.db").exists()


@pytest.mark.parametrize(
    ("judge", "warned"),
    [("openai/no-such-model-anywhere", True), ("openai/gpt-4o-mini", False), ("fake/judge", False)],
)
def test_a_model_litellm_cannot_price_is_said_before_a_limited_run(project: Path, judge: str, warned: bool) -> None:
    loaded = load_suite(project / "suite.yaml")
    notes = cost_notes([loaded], RunSettings(judge_model=judge, max_cost=1.0))
    assert bool(notes) == warned
    if warned:
        assert notes == [
            f"--max-cost $1 cannot be enforced: litellm's price list has no price for {judge} (judge), so the run's "
            "cost is unknown once it is called; the run will not stop on cost"
        ]
    assert cost_notes([loaded], RunSettings(judge_model=judge)) == []
