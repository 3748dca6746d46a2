"""Fixtures of the acceptance tests: the stub servers, a copy of the project, and the CLI runs over it.

Everything runs through the real command line in a subprocess (``python -m simulator``), from the folder
that holds the project, the way a user outside this repository would run it. The subprocess installs the
same network guard as ``tests/conftest.py`` before Simulator starts, so it too can reach 127.0.0.1 only.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from tests.acceptance._servers import StubServers

REPO = Path(__file__).resolve().parents[2]
DATA = Path(__file__).resolve().parent / "data"
#: Seconds one CLI command may take before the test gives up on it.
CLI_TIMEOUT = 120

# `python -c` puts the working folder first on sys.path, as `python -m simulator` does. The network guard of
# tests/conftest.py is run from its file, so nothing of this repository but Simulator itself is importable.
_LAUNCH = "import runpy; runpy.run_path({guard!r}); runpy.run_module('simulator', run_name='__main__', alter_sys=True)"


def cli_env(**extra: str) -> dict[str, str]:
    """The environment of a CLI subprocess: offline litellm, a dummy key for the stub models, no proxies."""
    env = {key: value for key, value in os.environ.items() if not key.startswith("SIMULATOR_")}
    env.update(
        LITELLM_OFFLINE_MODE="true",
        LITELLM_LOCAL_MODEL_COST_MAP="True",
        STUB_MODEL_KEY="stub-key-not-secret",
        NO_PROXY="127.0.0.1,localhost",
        no_proxy="127.0.0.1,localhost",
        NO_COLOR="1",
        PYTHONIOENCODING="utf-8",
        **extra,
    )
    for proxy in ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "http_proxy", "https_proxy", "all_proxy"):
        env.pop(proxy, None)
    return env


def cli_command(*args: str | Path) -> list[str]:
    """The argv of ``simulator ARGS...`` run with this interpreter."""
    return [sys.executable, "-c", _LAUNCH.format(guard=str(REPO / "tests" / "conftest.py")), *map(str, args)]


def simulator(cwd: Path, *args: str | Path) -> subprocess.CompletedProcess[str]:
    """Run ``simulator ARGS...`` in ``cwd`` and wait for it (at most :data:`CLI_TIMEOUT` seconds)."""
    return subprocess.run(
        cli_command(*args), cwd=cwd, env=cli_env(), capture_output=True, text=True, timeout=CLI_TIMEOUT, check=False
    )


@dataclass
class Project:
    """A copy of tests/acceptance/data with the servers' ports written in, and the CSV imported."""

    root: Path
    suites: Path
    imported: subprocess.CompletedProcess[str]


@dataclass
class RunOutput:
    """One ``simulator run``: its exit code, output and JSON report."""

    mode: str
    exit_code: int
    stdout: str
    stderr: str
    report: dict[str, Any] = field(default_factory=dict)

    def results(self) -> list[dict[str, Any]]:
        """The stored results, each with ``file`` (the suite file's stem) added."""
        if not self.report:
            return []
        paths = [Path(s["path"]).stem for s in self.report["run"]["snapshot"]]
        return [{**r, "file": paths[r["suite"]]} for r in self.report["results"]]

    def describe(self) -> str:
        return (
            f"simulator run ({self.mode}) exited {self.exit_code}\n--- stdout\n{self.stdout}\n--- stderr\n{self.stderr}"
        )


@pytest.fixture(scope="module")
def servers() -> Iterator[StubServers]:
    with StubServers() as stubs:
        yield stubs


@pytest.fixture(scope="module")
def project(servers: StubServers, tmp_path_factory: pytest.TempPathFactory) -> Project:
    root = tmp_path_factory.mktemp("acceptance") / "projekt"
    shutil.copytree(DATA, root)
    agent_port = servers.agent_url.rsplit(":", 1)[1].split("/")[0]
    model_port = servers.model_url.rsplit(":", 1)[1].split("/")[0]
    for path, placeholder, port in (
        (root / "lieferservice" / "agent.yaml", "AGENT_PORT", agent_port),
        (root / "lieferservice" / "mit_modellen.yaml", "MODEL_PORT", model_port),
    ):
        path.write_text(path.read_text(encoding="utf-8").replace(placeholder, port), encoding="utf-8")
    imported = simulator(root, "import", "csv", "lieferfragen.csv", "-o", "lieferservice/lieferfragen.yaml")
    return Project(root=root, suites=root / "lieferservice", imported=imported)


@pytest.fixture(scope="module")
def runs(project: Project) -> dict[str, RunOutput]:
    """The suites run once in test mode and once live (every persona), both at the same time."""
    common = ["--no-cache", "--concurrency", "4", "--seed", "7", "--report", "json"]
    modes = {
        "test": ["run", "lieferservice", *common],
        "live": ["run", "lieferservice", "--live", "--persona", "all", *common],
    }
    started = {}
    for mode, args in modes.items():
        folder = project.root / f"lauf-{mode}"
        folder.mkdir()
        argv = cli_command(*args, "--db", folder / "runs.db", "--report-dir", folder)
        started[mode] = (
            folder,
            subprocess.Popen(
                argv, cwd=project.root, env=cli_env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
            ),
        )
    outputs: dict[str, RunOutput] = {}
    for mode, (folder, process) in started.items():
        try:
            stdout, stderr = process.communicate(timeout=CLI_TIMEOUT)
        except subprocess.TimeoutExpired:
            process.kill()
            stdout, stderr = process.communicate()
        reports = sorted(folder.glob("*.json"))
        report = json.loads(reports[0].read_text(encoding="utf-8")) if reports else {}
        outputs[mode] = RunOutput(mode, process.returncode, stdout, stderr, report)
    return outputs
