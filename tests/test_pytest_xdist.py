"""The pytest plugin under pytest-xdist (``pytest -n 2``), end to end in a subprocess, offline: every conversation
runs once, on one worker, and the session's results are ONE stored run; ``--dist each`` is refused."""

from __future__ import annotations

import os
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

import simulator
from simulator.store import RunStore

pytest.importorskip("xdist")

#: An agent that writes each message it answers to calls.log (appended by whichever worker calls it).
AGENT = """
from pathlib import Path

def respond(messages):
    text = messages[-1]["content"]
    with (Path(__file__).parent / "calls.log").open("a", encoding="utf-8") as log:
        log.write(text + "\\n")
    return f"You said: {text}"
"""
CASES = ["alpha", "bravo", "charlie", "delta", "echo", "foxtrot"]
#: Golden cases of one turn; the last one expects what the agent never says.
SUITE = "name: counted\nagent: agent.yaml\ncases:\n" + "".join(
    f"  - name: {name}\n    kind: golden\n    turns:\n      - user: message {name}\n"
    f"        expect:\n          must_contain: [{'refund' if name == 'foxtrot' else name}]\n"
    for name in CASES
)


@pytest.fixture
def project(tmp_path: Path) -> Path:
    """A folder with the counting agent, its suite and a pytest.ini of its own."""
    (tmp_path / "counting_agent.py").write_text(AGENT, encoding="utf-8")
    (tmp_path / "agent.yaml").write_text("type: python\ncallable: counting_agent:respond\n", encoding="utf-8")
    (tmp_path / "counted.yaml").write_text(SUITE, encoding="utf-8")
    (tmp_path / "pytest.ini").write_text("[pytest]\njunit_duration_report = call\n", encoding="utf-8")
    return tmp_path


def pytest_n2(folder: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """``python -m pytest -p xdist -n 2 ARGS`` in ``folder``, offline."""
    env = {**os.environ, "LITELLM_OFFLINE_MODE": "true", "PYTHONPATH": os.pathsep.join(sys.path)}
    env.pop("SIMULATOR_DB", None)
    env.pop("PYTEST_ADDOPTS", None)
    command = [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-p", "xdist", "-n", "2", *args]
    return subprocess.run(command, cwd=folder, env=env, capture_output=True, text=True, timeout=300, check=False)


def test_each_conversation_runs_once_into_one_stored_run_with_junit_properties(project: Path) -> None:
    db, junit = project / "runs.db", project / "junit.xml"
    done = pytest_n2(project, "counted.yaml", "--sim-db", str(db), f"--junitxml={junit}")
    assert "1 failed, 5 passed" in done.stdout, done.stdout + done.stderr
    assert sorted((project / "calls.log").read_text(encoding="utf-8").splitlines()) == [
        f"message {name}" for name in CASES
    ]

    runs = RunStore(db).list_runs(limit=None)
    assert [run.id for run in runs] == [runs[0].id]  # the workers' parts are merged and gone
    outcome = simulator.get_run(runs[0].id, db=db)
    assert outcome.record.status == "completed"
    assert [item.case for item in outcome.record.plan] == CASES
    stored = {result.case: result for result in outcome.results()}
    assert sorted(stored) == CASES
    assert [stored[name].outcome for name in CASES] == ["pass"] * 5 + ["fail"]
    assert f"simulator run {outcome.id} stored in {db}" in done.stdout

    cases = {case.get("name", ""): case for case in ET.parse(junit).getroot().iter("testcase")}
    assert sorted(cases) == sorted(f"{name}[#1]" for name in CASES)
    for name in CASES:
        case = cases[f"{name}[#1]"]
        properties = {prop.get("name"): prop.get("value") for prop in case.iter("property")}
        assert properties["simulator_run"] == outcome.id
        assert properties["persona"] == ""
        assert properties["outcome"] == stored[name].outcome
        assert ("transcript" in properties) == (name == "foxtrot")
        assert float(case.get("time", "")) == pytest.approx(stored[name].duration_s, abs=0.0015)
    failed = {prop.get("name"): prop.get("value") or "" for prop in cases["foxtrot[#1]"].iter("property")}
    assert "You said: message foxtrot" in failed["transcript"]


def test_dist_each_is_refused_naming_the_fix_and_runs_nothing(project: Path) -> None:
    db = project / "runs.db"
    done = pytest_n2(project, "counted.yaml", "--dist", "each", "--sim-db", str(db))
    assert done.returncode == 1, done.stdout + done.stderr
    assert "12 failed" in done.stdout
    assert "--dist each gives every item to every worker" in done.stdout
    assert "run the suites with --dist load" in done.stdout
    assert "Traceback" not in done.stdout
    assert not (project / "calls.log").exists()
    assert not db.exists() or RunStore(db).list_runs(limit=None) == []
