"""A third-party package adds an agent type, a scorer and a report format through entry points, without a fork.

The example plugin in ``tests/data/plugin`` is installed for real (``pip install --target``, no network: it has no
dependencies and builds with the setuptools of the test environment), then used from YAML and the command line in
subprocesses that have it on their path, as a user who installed it would.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

PLUGIN = Path(__file__).resolve().parent / "data" / "plugin"

SUITE = """\
name: plugged
agent:
  type: {agent}
  options:
    prefix: "{prefix}"
scorers: [{scorer}]
cases:
  - name: echoes
    kind: golden
    turns:
      - user: hello there
        expect:
          must_contain: [hello there]
"""


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    source = tmp_path_factory.mktemp("plugin-source") / "plugin"
    shutil.copytree(PLUGIN, source)  # the build writes beside the sources: never into the repository
    target = tmp_path_factory.mktemp("site")
    subprocess.run(
        [sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--no-build-isolation", "--no-index",
         "--target", str(target), str(source)],
        check=True,
        capture_output=True,
    )  # fmt: skip
    assert (target / "simulator_example_plugin").is_dir()
    return target


def _simulator(site: Path, cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(site), "LITELLM_OFFLINE_MODE": "true"}
    return subprocess.run(
        [sys.executable, "-m", "simulator", *args], cwd=cwd, env=env, capture_output=True, text=True, check=False
    )


def _suite(tmp_path: Path, *, agent: str = "echo", prefix: str = "Please note: ", scorer: str = "polite") -> Path:
    path = tmp_path / "suite.yaml"
    path.write_text(SUITE.format(agent=agent, prefix=prefix, scorer=scorer), encoding="utf-8")
    return path


def test_the_installed_plugins_are_listed_without_importing_them(site: Path, tmp_path: Path) -> None:
    listed = _simulator(site, tmp_path, "plugins", "--json")
    assert listed.returncode == 0, listed.stderr
    names = {group: [plugin["name"] for plugin in found] for group, found in json.loads(listed.stdout).items()}
    # "broken" points at a module that does not exist: listing it imports nothing, so it is listed too.
    assert names == {"agents": ["broken", "echo"], "scorers": ["polite"], "reports": ["txt"], "tools": ["orders"]}


@pytest.mark.parametrize(
    ("prefix", "outcome", "polite"),
    [("Please note: ", "pass", "met"), ("Sure: ", "fail", "not_met")],
)
def test_a_plugin_agent_is_run_and_a_plugin_scorer_decides(
    site: Path, tmp_path: Path, prefix: str, outcome: str, polite: str
) -> None:
    suite = _suite(tmp_path, prefix=prefix)
    assert _simulator(site, tmp_path, "validate", str(suite)).returncode == 0
    ran = _simulator(site, tmp_path, "run", str(suite), "--db", "runs.db")
    assert ran.returncode == (0 if outcome == "pass" else 1), ran.stdout + ran.stderr
    report = _simulator(site, tmp_path, "report", "latest", "--db", "runs.db", "-f", "json")
    result = json.loads(report.stdout)["results"][0]
    assert result["outcome"] == outcome
    scores = {score["metric"]: score for score in result["result"]["scores"]}
    assert scores["keywords"]["verdict"] == "met"  # the echo agent really answered
    assert scores["polite"]["verdict"] == polite
    # The plugin's report format, to stdout and as a file named with its own suffix.
    text = _simulator(site, tmp_path, "report", "latest", "--db", "runs.db", "-f", "txt")
    assert text.returncode == 0, text.stderr
    assert text.stdout.splitlines()[1] == f"echoes | - | {outcome}"
    again = _simulator(site, tmp_path, "run", str(suite), "--db", "runs.db", "--report", "txt", "--report-dir", "out")
    assert [path.suffix for path in (tmp_path / "out").iterdir()] == [".txt"], again.stdout + again.stderr


@pytest.mark.parametrize(
    ("agent", "scorer", "message"),
    [
        (
            "ecko",
            "polite",
            "3:9: agent.type: type must be one of http, langgraph, litellm, python, realtime, broken, echo or an "
            "installed agent plugin, got the text 'ecko'; did you mean 'echo'?",
        ),
        ("echo", "polit", "6:11: scorers[0]: no scorer plugin named 'polit' is installed; did you mean 'polite'?"),
    ],
)
def test_a_misspelt_plugin_name_is_an_error_at_its_place(
    site: Path, tmp_path: Path, agent: str, scorer: str, message: str
) -> None:
    checked = _simulator(site, tmp_path, "validate", str(_suite(tmp_path, agent=agent, scorer=scorer)))
    assert checked.returncode == 2
    assert message in checked.stdout + checked.stderr


def test_a_plugin_that_does_not_import_stops_the_run_before_anything_is_stored(site: Path, tmp_path: Path) -> None:
    ran = _simulator(site, tmp_path, "run", str(_suite(tmp_path, agent="broken")), "--db", "runs.db")
    said = ran.stdout + ran.stderr
    assert ran.returncode == 2, said
    assert "suite.yaml:3:9: agent.type: the agent plugin broken" in said
    assert "could not be loaded: ModuleNotFoundError" in said
    assert "Traceback" not in said
    listed = _simulator(site, tmp_path, "runs", "list", "--db", "runs.db", "--json")
    assert json.loads(listed.stdout or "[]") in ([], {"runs": []})


TOOL_SUITE = """\
name: looked-up
agent:
  type: echo
  options:
    prefix: "Please note: "
  tools:
    - name: lookup_order
      description: Look an order up by its id.
      parameters: {type: object, properties: {order_id: {type: string}}, required: [order_id]}
      backend: {backend}
cases:
  - name: order
    kind: golden
    turns:
      - user: where is ORD-42
        expect:
          must_contain: [shipped]
"""


def test_a_plugin_tool_backend_answers_in_test_mode_and_is_recorded_as_simulated(site: Path, tmp_path: Path) -> None:
    suite = tmp_path / "suite.yaml"
    suite.write_text(TOOL_SUITE.replace("{backend}", "orders"), encoding="utf-8")
    ran = _simulator(site, tmp_path, "run", str(suite), "--db", "runs.db")
    assert ran.returncode == 0, ran.stdout + ran.stderr
    result = json.loads(_simulator(site, tmp_path, "report", "latest", "--db", "runs.db", "-f", "json").stdout)
    [call] = [
        call for event in result["results"][0]["result"]["transcript"]["events"] for call in event.get("tool_calls", [])
    ]
    assert (call["status"], call["simulated_by"], call["result"]) == (
        "simulated",
        "tool plugin 'orders'",
        {"order_id": "ORD-42", "status": "shipped"},
    )
    # A misspelt backend is an error at its key before anything runs.
    suite.write_text(TOOL_SUITE.replace("{backend}", "ordres"), encoding="utf-8")
    checked = _simulator(site, tmp_path, "validate", str(suite))
    assert checked.returncode == 2
    assert "10:16: agent.tools[0].backend: no tool plugin named 'ordres' is installed; did you mean 'orders'?" in (
        checked.stdout + checked.stderr
    )
