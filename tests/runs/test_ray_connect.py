"""Joining a Ray cluster: named by --ray-address or by Ray's own RAY_ADDRESS, with Ray's token authentication,
and a cluster that refuses (nobody answers, or the token is refused) told apart, named, and leaving nothing in
the store. The tests marked ``ray`` start one cluster for the module (``ray start --head``, token auth on) and
run the command line in a child process each, with the environment a user would give it."""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import textwrap
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

import simulator
from simulator.cli import EXIT_INVALID, app
from simulator.store import RunStore

os.environ.setdefault("RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER", "0")
try:
    import ray
except Exception as exc:  # not installed (no wheel for this platform or Python), or installed but broken
    pytest.skip(
        f"Ray cannot be imported here ({type(exc).__name__}: {exc}): the Ray executor cannot be tested here",
        allow_module_level=True,
    )

ROOT = Path(__file__).resolve().parents[2]
LIMIT = 120.0
TOKEN = "simulator-test-cluster-token"
RAY_VARIABLES = ("RAY_ADDRESS", "RAY_AUTH_MODE", "RAY_AUTH_TOKEN", "RAY_AUTH_TOKEN_PATH")


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    (tmp_path / ".git").mkdir()
    (tmp_path / "echo_agent.py").write_text(
        "async def respond(messages, *, turn):\n    return 'noted ' + messages[-1]['content']\n", encoding="utf-8"
    )
    (tmp_path / "agent.yaml").write_text("type: python\ncallable: echo_agent:respond\n", encoding="utf-8")
    suite = """
        name: tiny
        cases:
          - kind: simulation
            name: one
            steps:
              - static_utterance: "hello"
    """
    (tmp_path / "suite.yaml").write_text(textwrap.dedent(suite), encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    for name in RAY_VARIABLES:
        monkeypatch.delenv(name, raising=False)
    return tmp_path


def _closed_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])  # closed again on leaving: nothing listens there


@pytest.fixture
def listening() -> Iterator[str]:
    """An address where something accepts connections (what a running cluster's port does)."""
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen()

    def accept() -> None:
        while True:
            try:
                server.accept()[0].close()
            except OSError:
                return

    threading.Thread(target=accept, daemon=True).start()
    try:
        yield f"127.0.0.1:{server.getsockname()[1]}"
    finally:
        server.close()


def test_ray_address_in_the_environment_names_the_cluster(project: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    address = f"127.0.0.1:{_closed_port()}"
    monkeypatch.setenv("RAY_ADDRESS", address)
    shown = CliRunner().invoke(app, ["run", "suite.yaml", "--db", "r.db", "--executor", "ray"])
    assert shown.exit_code == EXIT_INVALID, shown.output
    assert f"RAY_ADDRESS={address}: nothing answers there" in shown.stderr
    assert not (project / "r.db").exists()


def _refused_by_token(*_: Any, **__: Any) -> None:
    raise ray.exceptions.AuthenticationError("RPC error: InvalidAuthToken: Authentication token is missing")


def _init_refused_by_token(*_: Any, **__: Any) -> None:
    # What ray.init raises when the cluster refuses the token: the refusal is in the text of its cause.
    try:
        raise RuntimeError(
            "Failed to connect to GCS. Last connection error: Traceback (most recent call last):\n"
            "ray.exceptions.AuthenticationError: RPC error: InvalidAuthToken: Authentication token is missing"
        )
    except RuntimeError as cause:
        raise ConnectionError("Failed to connect to Ray cluster at 127.0.0.1") from cause


def _timed_out(*_: Any, **__: Any) -> None:
    raise ray.exceptions.RpcError("Timed out while waiting for GCS to become available.")  # type: ignore[no-untyped-call]


def _init_timed_out(*_: Any, **__: Any) -> None:
    raise ConnectionError("Failed to connect to Ray cluster at 127.0.0.1")


@pytest.mark.parametrize(
    "refusal",
    [
        (_refused_by_token, _init_refused_by_token, "set RAY_AUTH_MODE=token and give the cluster's token in "
         "RAY_AUTH_TOKEN", "no Ray cluster answers"),
        (_timed_out, _init_refused_by_token, "RAY_AUTH_TOKEN", "no Ray cluster answers"),
        (_timed_out, _init_timed_out, "no Ray cluster answers there", "RAY_AUTH"),
    ],
    ids=["token-refused", "token-refused-at-init", "nobody-answers"],
)  # fmt: skip
def test_a_cluster_that_refuses_says_why_and_stores_nothing(
    project: Path, listening: str, monkeypatch: pytest.MonkeyPatch, refusal: tuple[Any, Any, str, str]
) -> None:
    probe, init, says, never = refusal  # the cluster's answer to a quick request, and to ray.init; what is said
    db = project / "r.db"
    before = simulator.run("suite.yaml", db=db)  # latest~1 must stay this run
    monkeypatch.setattr(ray._raylet, "GcsClient", probe)
    monkeypatch.setattr(ray, "init", init)
    shown = CliRunner().invoke(app, ["run", "suite.yaml", "--db", str(db), "--executor", "ray", "--ray-address",
                                     listening])  # fmt: skip
    assert shown.exit_code == EXIT_INVALID, shown.output
    assert f"--ray-address {listening}: " in shown.stderr
    assert says in shown.stderr
    assert never not in shown.stderr
    with RunStore(db) as store:
        assert [run.id for run in store.list_runs()] == [before.id]
    assert simulator.get_run("latest", db=db).id == before.id


@pytest.fixture(scope="module")
def token_cluster() -> Iterator[str]:
    """A Ray cluster started as a user starts one (``ray start --head``), token authentication on, with one CPU;
    its address. Stopped by its process group at the end (never ``ray stop``, which stops every cluster here)."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    temp = tempfile.mkdtemp(prefix="simray")  # short: Ray's socket paths live under it
    env = {key: value for key, value in os.environ.items() if key not in RAY_VARIABLES}
    env.update(RAY_AUTH_MODE="token", RAY_AUTH_TOKEN=TOKEN, PYTHONPATH=str(ROOT), LITELLM_OFFLINE_MODE="true")
    ray_cli = Path(sys.executable).with_name("ray")
    head = subprocess.Popen(
        [str(ray_cli), "start", "--head", f"--port={port}", "--num-cpus=1", "--include-dashboard=false",
         f"--temp-dir={temp}", "--block"],
        env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, start_new_session=True,
    )  # fmt: skip
    try:
        started = threading.Event()
        said: list[str] = []

        def read() -> None:
            assert head.stdout is not None
            for line in head.stdout:
                said.append(line)
                if "Ray runtime started" in line:
                    started.set()

        threading.Thread(target=read, daemon=True).start()
        if not started.wait(LIMIT):
            pytest.fail(f"ray start --head did not start in {LIMIT} s: {''.join(said[-20:])}")
        yield f"127.0.0.1:{port}"
    finally:
        # A throwaway cluster: killed at once (a graceful stop takes half a minute), every process of its group.
        os.killpg(head.pid, signal.SIGKILL)
        head.wait()
        if head.stdout is not None:
            head.stdout.close()
        shutil.rmtree(temp, ignore_errors=True)


def _simulator(project: Path, args: list[str], **ray_variables: str) -> subprocess.CompletedProcess[str]:
    """The command line in a child process, with the Ray variables given and no others (as a user's shell)."""
    env = {key: value for key, value in os.environ.items() if key not in RAY_VARIABLES}
    env.update(ray_variables, PYTHONPATH=str(ROOT), LITELLM_OFFLINE_MODE="true")
    return subprocess.run(
        [sys.executable, "-m", "simulator", *args], cwd=project, env=env, capture_output=True, text=True,
        timeout=LIMIT, check=False,
    )  # fmt: skip


def _ran_on_ray(db: Path) -> None:
    """The store holds one run, completed on Ray, its one conversation passed."""
    with RunStore(db) as store:
        assert len(store.list_runs()) == 1
    outcome = simulator.get_run("latest", db=db)
    assert outcome.record.status == "completed"
    assert outcome.record.settings.executor == "ray"
    assert [stored.outcome for stored in outcome.results()] == ["pass"]


@pytest.mark.ray
def test_ray_address_in_the_environment_runs_the_suite_there(project: Path, token_cluster: str) -> None:
    shown = _simulator(project, ["run", "suite.yaml", "--db", "r.db", "--executor", "ray"],
                       RAY_ADDRESS=token_cluster, RAY_AUTH_MODE="token", RAY_AUTH_TOKEN=TOKEN)  # fmt: skip
    assert shown.returncode == 0, shown.stdout + shown.stderr
    assert f"on Ray (RAY_ADDRESS={token_cluster}," in shown.stdout
    assert TOKEN not in shown.stdout + shown.stderr
    _ran_on_ray(project / "r.db")


@pytest.mark.ray
def test_a_token_refused_names_the_variables_and_the_token_lets_the_run_in(project: Path, token_cluster: str) -> None:
    args = ["run", "suite.yaml", "--db", "r.db", "--executor", "ray", "--ray-address", token_cluster]
    refused = _simulator(project, args)
    assert refused.returncode == EXIT_INVALID, refused.stdout + refused.stderr
    assert f"--ray-address {token_cluster}: the Ray cluster there refused this process" in refused.stderr
    assert "RAY_AUTH_MODE=token" in refused.stderr
    assert "no Ray cluster answers" not in refused.stderr
    assert not (project / "r.db").exists()
    shown = _simulator(project, args, RAY_AUTH_MODE="token", RAY_AUTH_TOKEN=TOKEN)
    assert shown.returncode == 0, shown.stdout + shown.stderr
    _ran_on_ray(project / "r.db")  # the refused start left nothing: this run is the only one
