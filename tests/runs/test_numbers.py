"""Every number a run takes has a range, checked in one place (``simulator.models.ranges``) for the Python API
and the command line alike: a number out of it is an InputError (exit 2 on the command line) naming the option,
the value and the range, before anything is planned or stored."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

import simulator
from simulator.cli import EXIT_INVALID, app
from simulator.errors import InputError
from simulator.store import RunStore
from tests.test_pytest_plugin import pytest_in

ROOT = Path(__file__).resolve().parents[2]
GOLDEN = "suites/demo/golden.yaml"
runner = CliRunner()

CONCURRENCY = "conversations in flight at once must be a whole number from 1 to 1000"
REPEAT = "runs of each case must be a whole number from 1 to 1000"
SEED = "the seed must be a whole number from 0 to 9223372036854775807"
CACHE = "the request cache's limit in MB must be a whole number from 1 to 1048576"
FAIL_UNDER = "the correctness bar in % must be a number from 0 to 100"
COVERAGE = "the coverage bar in % must be a number from 0 to 100"
WORKERS = "Ray worker processes must be a whole number from 1 to 1024"


@pytest.fixture(autouse=True)
def _at_the_root(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(ROOT)


def _runs(db: Path) -> list[str]:
    if not db.exists():
        return []
    with RunStore(db) as store:
        return [run.id for run in store.list_runs(limit=None)]


API: list[Any] = [
    pytest.param({"concurrency": 0}, f"--concurrency 0 (concurrency=0): {CONCURRENCY}", id="concurrency-0"),
    pytest.param({"concurrency": -4}, f"--concurrency -4 (concurrency=-4): {CONCURRENCY}", id="concurrency-negative"),
    pytest.param({"concurrency": 1001}, f"--concurrency 1001 (concurrency=1001): {CONCURRENCY}", id="concurrency-big"),
    pytest.param({"concurrency": 2.5}, f"--concurrency 2.5 (concurrency=2.5): {CONCURRENCY}", id="concurrency-float"),
    pytest.param({"concurrency": True}, f"--concurrency True (concurrency=True): {CONCURRENCY}", id="concurrency-bool"),
    pytest.param({"repeat": 0}, f"--repeat 0 (repeat=0): {REPEAT}", id="repeat-0"),
    pytest.param({"repeat": -1}, f"--repeat -1 (repeat=-1): {REPEAT}", id="repeat-negative"),
    pytest.param({"repeat": "3"}, f"--repeat '3' (repeat='3'): {REPEAT}", id="repeat-text"),
    pytest.param({"seed": -1}, f"--seed -1 (seed=-1): {SEED}", id="seed-negative"),
    pytest.param({"seed": 2**63}, f"--seed {2**63} (seed={2**63}): {SEED}", id="seed-too-big"),
    pytest.param({"cache_size_mb": 0}, f"--cache-size 0 (cache_size_mb=0): {CACHE}", id="cache-size-0"),
    pytest.param({"fail_under": -0.5}, f"--fail-under -0.5 (fail_under=-0.5): {FAIL_UNDER}", id="fail-under-negative"),
    pytest.param({"fail_under": 101}, f"--fail-under 101 (fail_under=101): {FAIL_UNDER}", id="fail-under-101"),
    pytest.param({"fail_under": float("nan")}, f"--fail-under nan (fail_under=nan): {FAIL_UNDER}", id="fail-under-nan"),
    pytest.param(
        {"fail_under_coverage": 150},
        f"--fail-under-coverage 150 (fail_under_coverage=150): {COVERAGE}",
        id="fail-under-coverage",
    ),
    pytest.param({"ray_workers": 0}, f"--ray-workers 0 (ray_workers=0): {WORKERS}", id="ray-workers-0"),
]


@pytest.mark.parametrize(("options", "message"), API)
def test_a_bad_number_given_to_run_is_refused_before_anything_is_stored(
    options: dict[str, Any], message: str, tmp_path: Path
) -> None:
    db = tmp_path / "runs.db"
    with pytest.raises(InputError) as caught:
        simulator.run([GOLDEN], db=db, **options)
    assert str(caught.value) == message
    assert _runs(db) == []


@pytest.fixture(scope="module")
def stored(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    """A store holding one finished run."""
    db = tmp_path_factory.mktemp("stored") / "runs.db"
    return db, simulator.run([GOLDEN], db=db, cases=["refund_within_30_days"], seed=0).id


STORED: list[Any] = [
    pytest.param(
        simulator.resume, {"cache_size_mb": 0}, f"--cache-size 0 (cache_size_mb=0): {CACHE}", id="resume-cache"
    ),
    pytest.param(
        simulator.resume, {"ray_workers": -2}, f"--ray-workers -2 (ray_workers=-2): {WORKERS}", id="resume-workers"
    ),
    pytest.param(
        simulator.repeat, {"cache_size_mb": -1}, f"--cache-size -1 (cache_size_mb=-1): {CACHE}", id="repeat-cache"
    ),
]


@pytest.mark.parametrize(("call", "options", "message"), STORED)
def test_a_bad_number_given_to_resume_or_repeat_is_refused_and_stores_nothing(
    stored: tuple[Path, str], call: Callable[..., Any], options: dict[str, Any], message: str
) -> None:
    db, run_id = stored
    with pytest.raises(InputError) as caught:
        call(run_id, db=db, **options)
    assert str(caught.value) == message
    assert _runs(db) == [run_id]


def test_a_bad_seed_given_to_simulate_is_refused() -> None:
    with pytest.raises(InputError) as caught:
        simulator.simulate(GOLDEN, seed=-7)
    assert str(caught.value) == f"--seed -7 (seed=-7): {SEED}"


CLI: list[Any] = [
    pytest.param(
        ["run", GOLDEN, "--concurrency", "0"], f"--concurrency 0 (concurrency=0): {CONCURRENCY}", id="run-concurrency"
    ),
    pytest.param(["run", GOLDEN, "--repeat", "0"], f"--repeat 0 (repeat=0): {REPEAT}", id="run-repeat-0"),
    pytest.param(["run", GOLDEN, "--repeat", "-3"], f"--repeat -3 (repeat=-3): {REPEAT}", id="run-repeat-negative"),
    pytest.param(["run", GOLDEN, "--seed", "-1"], f"--seed -1 (seed=-1): {SEED}", id="run-seed"),
    pytest.param(
        ["run", GOLDEN, "--cache-size", "0"], f"--cache-size 0 (cache_size_mb=0): {CACHE}", id="run-cache-size"
    ),
    pytest.param(
        ["run", GOLDEN, "--fail-under", "101"],
        f"--fail-under 101.0 (fail_under=101.0): {FAIL_UNDER}",
        id="run-fail-under",
    ),
    pytest.param(
        ["run", GOLDEN, "--fail-under", "nan"],
        f"--fail-under nan (fail_under=nan): {FAIL_UNDER}",
        id="run-fail-under-nan",
    ),
    pytest.param(
        ["run", GOLDEN, "--fail-under-coverage", "-1"],
        f"--fail-under-coverage -1.0 (fail_under_coverage=-1.0): {COVERAGE}",
        id="run-fail-under-coverage",
    ),
    pytest.param(
        ["run", GOLDEN, "--ray-workers", "0"], f"--ray-workers 0 (ray_workers=0): {WORKERS}", id="run-ray-workers"
    ),
    pytest.param(["simulate", GOLDEN, "--seed", "-2"], f"--seed -2 (seed=-2): {SEED}", id="simulate-seed"),
]


@pytest.mark.parametrize(("args", "message"), CLI)
def test_a_bad_number_on_the_command_line_exits_2_naming_the_option_and_its_range(
    args: list[str], message: str, tmp_path: Path
) -> None:
    db = tmp_path / "runs.db"
    done = runner.invoke(app, [*args, *(["--db", str(db)] if args[0] == "run" else [])])
    assert done.exit_code == EXIT_INVALID, done.output
    assert done.stderr == f"error: {message}\n"
    assert _runs(db) == []


STORED_CLI: list[Any] = [
    pytest.param(
        ["runs", "resume", "RUN", "--ray-workers", "0"], f"--ray-workers 0 (ray_workers=0): {WORKERS}", id="resume"
    ),
    pytest.param(
        ["coverage", "RUN", "--fail-under-coverage", "100.5"],
        f"--fail-under-coverage 100.5 (fail_under_coverage=100.5): {COVERAGE}",
        id="coverage",
    ),
]


@pytest.mark.parametrize(("args", "message"), STORED_CLI)
def test_a_bad_number_given_to_a_command_on_a_stored_run_exits_2(
    stored: tuple[Path, str], args: list[str], message: str
) -> None:
    db, run_id = stored
    done = runner.invoke(app, [*(run_id if arg == "RUN" else arg for arg in args), "--db", str(db)])
    assert done.exit_code == EXIT_INVALID, done.output
    assert done.stderr == f"error: {message}\n"
    assert _runs(db) == [run_id]


@pytest.mark.parametrize(
    ("option", "message"),
    [
        ("--sim-repeat=0", f"--sim-repeat 0 (repeat=0): {REPEAT}"),
        ("--sim-concurrency=0", f"--sim-concurrency 0 (concurrency=0): {CONCURRENCY}"),
        ("--sim-seed=-1", f"--sim-seed -1 (seed=-1): {SEED}"),
    ],
)
def test_the_pytest_plugin_holds_its_options_to_the_same_ranges(option: str, message: str, tmp_path: Path) -> None:
    (tmp_path / "pytest.ini").write_text("[pytest]\n", encoding="utf-8")
    done = pytest_in(tmp_path, option, "--collect-only", "-q")
    assert done.returncode == 4, done.stdout + done.stderr  # pytest's usage error
    assert f"ERROR: {message}" in done.stderr


@pytest.mark.parametrize(
    ("bars", "message"),
    [
        ({"fail_under": 100.5}, f"--fail-under 100.5 (fail_under=100.5): {FAIL_UNDER}"),
        ({"fail_under_coverage": -1}, f"--fail-under-coverage -1 (fail_under_coverage=-1): {COVERAGE}"),
    ],
)
def test_a_bar_out_of_range_given_to_exit_code_is_refused(
    stored: tuple[Path, str], bars: dict[str, float], message: str
) -> None:
    db, run_id = stored
    with pytest.raises(InputError) as caught:
        simulator.get_run(run_id, db=db).exit_code(bars.get("fail_under"), bars.get("fail_under_coverage"))
    assert str(caught.value) == message
