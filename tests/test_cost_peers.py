"""The peer drivers of the cost bench (bench/cost_peers/): what runs without the peers installed — the command
line, the report line, the guard that keeps connections on this machine, and the installer's marker and
errors. The drivers themselves run the peers through bench/cost.py."""

from __future__ import annotations

import importlib.util
import json
import os
import socket
import subprocess
import sys
from importlib import metadata
from pathlib import Path
from types import ModuleType

import pytest

_FOLDER = Path(__file__).resolve().parent.parent / "bench" / "cost_peers"
_DISTRIBUTIONS = {"scenario": "langwatch-scenario", "deepeval": "deepeval", "openevals": "openevals"}


def _load(name: str) -> ModuleType:
    spec = importlib.util.spec_from_file_location(f"bench_cost_peers_{name}", _FOLDER / f"{name}.py")
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # its dataclasses look their module up there
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def workload() -> ModuleType:
    return _load("_workload")


@pytest.fixture(scope="module")
def setup() -> ModuleType:
    return _load("setup")


_URL = "http://127.0.0.1:9/v1"


def test_the_command_line_reads_urls_conversations_and_turns(workload: ModuleType) -> None:
    argv = ["--base-url", f"{_URL}/", "--agent-url", _URL, "--conversations", "4", "--turns", "6"]
    assert workload.parse_args("deepeval", argv) == workload.Options(_URL, _URL, 4, 6)
    assert workload.parse_args("deepeval", argv[:4]) == workload.Options(_URL, _URL, 2, 3)


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--agent-url", _URL], "--base-url"),
        (["--base-url", "127.0.0.1:9/v1", "--agent-url", _URL], "give an http(s) URL"),
        (["--base-url", _URL, "--agent-url", _URL, "--turns", "0"], "0 is below 1"),
        (["--base-url", _URL, "--agent-url", _URL, "--conversations", "two"], "'two' is not a whole number"),
    ],
    ids=["missing-base", "not-a-url", "no-turns", "not-a-number"],
)
def test_a_bad_command_line_exits_2_naming_the_fix(
    workload: ModuleType, argv: list[str], message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as stopped:
        workload.parse_args("openevals", argv)
    assert stopped.value.code == 2
    assert message in capsys.readouterr().err


def test_the_report_is_the_line_bench_cost_reads(workload: ModuleType) -> None:
    options = workload.Options(_URL, _URL, 2, 3)
    line = json.dumps(workload.report("scenario", "1.0", options, 5, ["conversation 2 stopped after 2 of 3"]))
    assert json.loads(line) == {
        "peer": "scenario", "version": "1.0", "conversations": 2, "turns": 3, "user_turns_done": 5,
        "errors": ["conversation 2 stopped after 2 of 3"],
    }  # fmt: skip


def test_the_guard_refuses_and_lists_what_would_leave_the_machine(workload: ModuleType) -> None:
    with socket.socket() as server:
        server.bind(("127.0.0.1", 0))
        server.listen(1)
        with workload.guard() as state:
            with socket.create_connection(server.getsockname(), timeout=2):
                pass  # the loopback stays open: the fake server is there
            with pytest.raises(OSError, match="blocked by the bench"):
                socket.getaddrinfo("app.langwatch.example", 443)
            with socket.socket() as sock, pytest.raises(OSError, match="blocked by the bench"):
                sock.connect(("203.0.113.9", 443))
        assert state.blocked == ["app.langwatch.example:443", "203.0.113.9:443"]
    assert socket.getaddrinfo.__name__ != "guarded_lookup"  # put back on leaving


def test_the_environment_turns_reporting_off_and_points_clients_at_the_fake_server(
    workload: ModuleType, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A copy of the environment, so nothing set here reaches other tests.
    environ = {**os.environ, "LANGWATCH_API_KEY": "a-real-looking-key", "ANTHROPIC_API_KEY": "a-real-looking-key"}
    monkeypatch.setattr(os, "environ", environ)
    workload.environment(_URL, {"DEEPEVAL_TELEMETRY_OPT_OUT": "1"}, removed=("LANGWATCH_API_KEY",))
    assert "LANGWATCH_API_KEY" not in environ
    assert "ANTHROPIC_API_KEY" not in environ
    assert environ["OPENAI_BASE_URL"] == _URL
    assert environ["OPENAI_API_KEY"] == workload.DUMMY_KEY
    assert environ["DEEPEVAL_TELEMETRY_OPT_OUT"] == "1"


def _installed(distribution: str) -> bool:
    try:
        metadata.version(distribution)
    except metadata.PackageNotFoundError:
        return False
    return True


@pytest.mark.parametrize("peer", sorted(_DISTRIBUTIONS))
def test_a_driver_without_its_peer_exits_2_naming_the_setup(peer: str) -> None:
    if _installed(_DISTRIBUTIONS[peer]):
        pytest.skip(f"{_DISTRIBUTIONS[peer]} is installed in the project's environment")
    done = subprocess.run(
        [sys.executable, str(_FOLDER / f"{peer}.py"), "--base-url", _URL, "--agent-url", _URL],
        capture_output=True, text=True, timeout=60, check=False,
    )  # fmt: skip
    assert done.returncode == 2
    assert done.stdout == ""
    assert f"python bench/cost_peers/setup.py {peer} VENV_DIR" in done.stderr


def test_setup_pins_every_peer_and_a_marker_at_todays_pins_is_ready(setup: ModuleType, tmp_path: Path) -> None:
    assert sorted(setup.PINS) == sorted(_DISTRIBUTIONS)
    for peer, pins in setup.PINS.items():
        assert pins[0] == f"{_DISTRIBUTIONS[peer]}=={pins[0].split('==')[1]}"
        assert all("==" in pin for pin in pins)
    python = setup.python_of(tmp_path)
    python.parent.mkdir(parents=True)
    python.touch()
    assert not setup.is_ready("deepeval", tmp_path)  # no marker yet
    marker = setup.marker_for("deepeval", {"deepeval": "0"})
    (tmp_path / setup.MARKER).write_text(json.dumps(marker), encoding="utf-8")
    assert setup.is_ready("deepeval", tmp_path)
    assert not setup.is_ready("openevals", tmp_path)  # another peer's venv
    (tmp_path / setup.MARKER).write_text(json.dumps({**marker, "pins": ["deepeval==0.0.1"]}), encoding="utf-8")
    assert not setup.is_ready("deepeval", tmp_path)  # older pins: installed again


@pytest.mark.parametrize(
    ("argv", "message"),
    [([], "usage: python bench/cost_peers/setup.py PEER VENV_DIR"), (["ragas", "v"], "unknown peer 'ragas'")],
    ids=["no-arguments", "unknown-peer"],
)
def test_setup_exits_2_with_one_line(
    setup: ModuleType, argv: list[str], message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert setup.main(argv) == 2
    error = capsys.readouterr().err
    assert message in error
    assert error.count("\n") == 1


def test_setup_reports_a_failed_install_in_one_line(
    setup: ModuleType, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    def failing(command: list[str], **kwargs: object) -> subprocess.CompletedProcess[str]:
        stderr = "Looking in indexes: ...\nERROR: No matching distribution found for deepeval==4.3.1\n"
        return subprocess.CompletedProcess(command, 1, "", stderr)

    monkeypatch.setattr(setup.subprocess, "run", failing)
    assert setup.main(["deepeval", str(tmp_path / "venv")]) == 2
    assert capsys.readouterr().err == (
        "deepeval: not installed: creating the virtual environment "
        f"{tmp_path / 'venv'} failed: ERROR: No matching distribution found for deepeval==4.3.1\n"
    )
