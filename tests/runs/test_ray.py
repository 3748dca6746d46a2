"""The Ray executor on a local cluster of 2 worker processes (started once for the module): the same results as a
local run, nothing lost or stored twice when a worker is killed mid-conversation (recorded or not), a run recorded
on Ray that replays as the same run recorded locally, a model role's limit and a provider's Retry-After held across
the workers (counted at a local model server), and a cancelled run that resumes.

Every kill and cancel happens while the agent is known to be waiting (it leaves a marker file), never after a
guessed delay; every wait is bounded by :data:`LIMIT`, which is never reached when things work.
"""

from __future__ import annotations

import asyncio
import os
import signal
import socket
import textwrap
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

import simulator
from simulator.cassettes import decode
from simulator.cli import EXIT_BELOW_BAR, EXIT_INVALID, app
from simulator.llm import FakeScript
from simulator.models.cassette import Cassette
from simulator.store import RunStore
from tests.runs.test_model_limits import SlowUserModel, serving_slow_user_model
from tests.runs.test_model_limits import _suite as limits_suite
from tests.runs.test_retry_after import CONVERSATIONS, check_held_off, rate_limited_suite, serving_rate_limited_model
from tests.test_cassettes import signature

# Read when ray is imported: the local cluster listens on the loopback address only.
os.environ.setdefault("RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER", "0")
try:
    import ray
except Exception as exc:  # not installed (no wheel for this platform or Python), or installed but broken
    pytest.skip(
        f"Ray cannot be imported here ({type(exc).__name__}: {exc}); it is installed by the `test` extra only where "
        "Ray publishes wheels (see pyproject.toml): the Ray executor cannot be tested here",
        allow_module_level=True,
    )

pytestmark = pytest.mark.ray

LIMIT = 120.0
CASES = 6

#: The agent: logs the process id of every call to ``calls.log`` and answers every turn, except the turn "c2 two"
#: while no ``stuck`` marker exists: then it writes its process id to ``stuck`` and waits (at most LIMIT seconds)
#: until its worker is killed or the run cancelled.
AGENT = """
import asyncio
import os
from pathlib import Path

HERE = Path(__file__).parent


async def respond(messages, *, turn):
    user = messages[-1]["content"] if messages else ""
    with (HERE / "calls.log").open("a") as log:
        log.write(f"{os.getpid()}\\n")
    marker = HERE / "stuck"
    if user == "c2 two" and not marker.exists():
        marker.write_text(str(os.getpid()))
        await asyncio.sleep(LIMIT)
    return f"noted {user}"
""".replace("LIMIT", str(LIMIT))


@pytest.fixture(scope="module")
def cluster() -> Iterator[None]:
    # The workers' environment is the one the cluster starts with: the limit test's key must be in it.
    os.environ["SLOW_USER_KEY"] = "not-a-real-key"
    os.environ["LITELLM_OFFLINE_MODE"] = "true"
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False, configure_logging=False)
    try:
        yield
    finally:
        ray.shutdown()


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    (tmp_path / ".git").mkdir()
    (tmp_path / "ray_agent.py").write_text(textwrap.dedent(AGENT), encoding="utf-8")
    (tmp_path / "agent.yaml").write_text("type: python\ncallable: ray_agent:respond\n", encoding="utf-8")
    cases = "".join(
        f"""
  - kind: simulation
    name: case_{i}
    steps:
      - static_utterance: "c{i} one"
      - static_utterance: "c{i} two"
      - static_utterance: "c{i} three"
"""
        for i in range(CASES)
    )
    (tmp_path / "suite.yaml").write_text(f"name: spread\ncases:{cases}", encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    return tmp_path


def _comparable(value: Any) -> Any:
    """A stored result without what only says when and how fast it ran."""
    if isinstance(value, dict):
        timing = {"at", "latency_ms", "duration_ms", "started_at", "finished_at"}
        return {key: _comparable(item) for key, item in value.items() if key not in timing}
    if isinstance(value, list):
        return [_comparable(item) for item in value]
    return value


def _stored(db: Path, run_id: str) -> dict[str, Any]:
    with RunStore(db) as store:
        results = store.results(run_id)
    keys = [result.key for result in results]
    assert len(keys) == len(set(keys)), keys  # never two results for one conversation
    return {result.key: _comparable(result.result.model_dump(mode="json")) for result in results}


def _cassettes(db: Path, run_id: str) -> dict[str, Cassette]:
    with RunStore(db) as store:
        return {key: decode(store.cassette(run_id, key) or b"", where=key) for key in store.cassette_keys(run_id)}


def _wait_for(path: Path) -> str:
    deadline = time.monotonic() + LIMIT
    while not path.exists() or not path.read_text():
        if time.monotonic() > deadline:
            raise AssertionError(f"{path} did not appear in {LIMIT} s")
        time.sleep(0.05)
    return path.read_text()


@pytest.mark.usefixtures("cluster")
def test_a_ray_run_stores_what_a_local_run_stores(tmp_path: Path) -> None:
    demo = Path(__file__).resolve().parents[2] / "suites" / "demo"
    db = tmp_path / "runs.db"
    command = ["run", str(demo), "--seed", "5", "--repeat", "2", "--db", str(db), "--executor", "ray"]
    shown = CliRunner().invoke(app, command)
    assert shown.exit_code == EXIT_BELOW_BAR, shown.output  # the demo has cases meant to fail
    assert "on Ray (a local cluster, model limits held across its workers)" in shown.stdout
    spread = simulator.get_run("latest", db=db)
    local = simulator.run(demo, db=db, seed=5, repeat=2)
    assert spread.record.status == local.record.status == "completed"
    assert spread.record.settings.executor == "ray"
    assert _stored(db, spread.id) == _stored(db, local.id)
    assert spread.record.totals is not None
    assert local.record.totals is not None
    counts = {"total", "passed", "failed", "error", "unsure"}
    assert spread.record.totals.model_dump(include=counts) == local.record.totals.model_dump(include=counts)
    # Progress is shown as for a local run: one line per conversation, counting up.
    total = len(spread.record.plan)
    assert [line.split()[0] for line in shown.stdout.splitlines() if line.startswith("[")] == [
        f"[{done}/{total}]" for done in range(1, total + 1)
    ]


@pytest.mark.usefixtures("cluster")
def test_a_run_recorded_on_ray_replays_as_the_same_run_recorded_locally(tmp_path: Path) -> None:
    demo = Path(__file__).resolve().parents[2] / "suites" / "demo"
    db = tmp_path / "runs.db"
    shown = CliRunner().invoke(app, ["run", str(demo), "--seed", "5", "--db", str(db), "--executor", "ray", "--record",
                                     "--no-cache"])  # fmt: skip
    assert shown.exit_code == EXIT_BELOW_BAR, shown.output  # the demo has cases meant to fail
    spread = simulator.get_run("latest", db=db)
    local = simulator.run(demo, db=db, seed=5, record=True, cache=False)
    assert spread.record.settings.executor == "ray"
    assert spread.record.settings.record
    # Every conversation came back with its cassette, holding what the same conversation recorded locally holds.
    on_ray, here = _cassettes(db, spread.id), _cassettes(db, local.id)
    assert set(on_ray) == set(here) == {item.key for item in local.record.plan}
    assert {key: _comparable(c.model_dump(mode="json", exclude={"run_id"})) for key, c in on_ray.items()} == {
        key: _comparable(c.model_dump(mode="json", exclude={"run_id"})) for key, c in here.items()
    }
    nothing = FakeScript()  # a replay asks no model: any request would fail, nothing is queued
    with nothing.active():
        replays = [simulator.replay(recorded.id, db=db) for recorded in (spread, local)]
    assert nothing.requests == []
    replayed_spread, replayed_local = (
        {stored.key: signature(stored) for stored in replay.results()} for replay in replays
    )
    assert replayed_spread == replayed_local
    assert len(replayed_spread) == len(local.record.plan)


@pytest.mark.usefixtures("cluster")
@pytest.mark.parametrize("record", [False, True], ids=["plain", "recorded"])
def test_a_killed_worker_loses_nothing_and_stores_nothing_twice(project: Path, record: bool) -> None:
    killed: list[int] = []

    def kill_the_stuck_worker() -> None:
        pid = int(_wait_for(project / "stuck"))
        os.kill(pid, signal.SIGKILL)
        killed.append(pid)

    killer = threading.Thread(target=kill_the_stuck_worker, daemon=True)
    killer.start()
    outcome = simulator.run("suite.yaml", db=project / "runs.db", seed=1, executor="ray", concurrency=4, record=record)
    killer.join(timeout=LIMIT)
    assert killed, "the worker was never killed"
    assert killed[0] != os.getpid()  # the conversation ran in a worker, not in this process
    stored = _stored(project / "runs.db", outcome.id)
    assert len(stored) == CASES
    assert outcome.record.status == "completed"
    # The killed conversation ran again on another worker, from the start, to the end.
    assert {result["outcome"] for result in stored.values()} == {"pass"}
    if record:
        # One whole cassette per conversation: the killed attempt's half tape died with its worker.
        cassettes = _cassettes(project / "runs.db", outcome.id)
        assert set(cassettes) == set(stored)
        for item in outcome.record.plan:
            turns = [
                entry.request for entry in cassettes[item.key].entries if (entry.role, entry.kind) == ("agent", "turn")
            ]
            said = [turn["messages"][-1]["content"] for turn in turns if isinstance(turn, dict)]  # type: ignore[index,call-overload]
            number = item.case.removeprefix("case_")
            assert said == [f"c{number} one", f"c{number} two", f"c{number} three"]


@pytest.fixture
def slow_user_model() -> Iterator[SlowUserModel]:
    with serving_slow_user_model() as model:
        yield model


@pytest.mark.usefixtures("cluster")
def test_a_roles_limit_holds_across_the_workers(slow_user_model: SlowUserModel, tmp_path: Path) -> None:
    suite = limits_suite(tmp_path, slow_user_model.url, user_limit=3)
    outcome = simulator.run(
        [suite], db=tmp_path / "r.db", concurrency=12, seed=1, cache=False, executor="ray", ray_workers=2
    )
    assert outcome.record.totals is not None
    assert outcome.record.totals.total == outcome.record.totals.total == len(outcome.record.plan)
    assert slow_user_model.requests >= len(outcome.record.plan)
    # Two workers with 6 conversations each: a limit per worker would have let 6 requests in at once.
    assert slow_user_model.most == 3


@pytest.mark.usefixtures("cluster")
def test_a_retry_after_holds_off_the_model_on_every_worker(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    with serving_rate_limited_model() as model:
        suite = rate_limited_suite(tmp_path, model.url)
        outcome = simulator.run(
            [suite], db=tmp_path / "r.db", concurrency=CONVERSATIONS, seed=1, cache=False, executor="ray", ray_workers=2
        )
    # One worker got the 429; the calls queued on both workers (for the role's one slot on the cluster) waited.
    # ... and this process (the driver) said so, though the 429 came to a worker.
    check_held_off(model, outcome, [record.getMessage() for record in caplog.records if record.name == "simulator.llm"])


@pytest.mark.usefixtures("cluster")
def test_a_cancelled_ray_run_is_interrupted_and_resumes_on_ray(project: Path) -> None:
    db = project / "runs.db"

    async def cancel_when_stuck() -> None:
        running = asyncio.create_task(simulator.run_async("suite.yaml", db=db, seed=1, executor="ray"))
        await asyncio.to_thread(_wait_for, project / "stuck")
        running.cancel()  # what Ctrl-C and SIGTERM do to the command's run
        with pytest.raises(asyncio.CancelledError):
            await running

    asyncio.run(cancel_when_stuck())
    interrupted = simulator.get_run("latest", db=db)
    assert interrupted.record.status == "interrupted"
    before = _stored(db, interrupted.id)
    assert len(before) < CASES

    calls_before = len((project / "calls.log").read_text().split())
    resumed = simulator.resume(interrupted.id, db=db)
    assert resumed.record.status == "completed"
    assert resumed.record.settings.executor == "ray"
    # It resumed on the cluster, as stored: none of its conversations ran in this process.
    resumed_in = set((project / "calls.log").read_text().split()[calls_before:])
    assert resumed_in
    assert str(os.getpid()) not in resumed_in
    after = _stored(db, resumed.id)
    assert len(after) == CASES
    assert all(after[key] == result for key, result in before.items())  # what was stored is untouched


def test_an_address_where_no_cluster_answers_is_exit_2_before_anything_is_stored(tmp_path: Path) -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]  # closed again below: nothing listens there
    db = tmp_path / "r.db"
    demo = Path(__file__).resolve().parents[2] / "suites" / "demo"
    address = f"127.0.0.1:{port}"
    result = CliRunner().invoke(app, ["run", str(demo), "--db", str(db), "--executor", "ray", "--ray-address", address])
    assert result.exit_code == EXIT_INVALID
    assert f"--ray-address {address}: nothing answers there" in result.stderr
    assert not db.exists()
