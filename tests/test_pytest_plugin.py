"""The pytest plugin, end to end: ``python -m pytest`` in a copy of the shipped demo, offline.

Each test runs pytest in a subprocess (as a user would), in a folder holding copies of ``suites/`` and
``personas/`` and its own ``pytest.ini``, with the run store in that folder.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

import simulator

ROOT = Path(__file__).resolve().parent.parent

DEMO_IDS = [
    "suites/demo/golden.yaml::status_then_delivery_date[#1]",
    "suites/demo/golden.yaml::refund_within_30_days[#1]",
    "suites/demo/golden.yaml::session_order_balance_and_handoff[#1]",
    "suites/demo/golden.yaml::lookup_without_a_fake_is_not_executed[#1]",
    "suites/demo/golden.yaml::greeting_event_and_small_talk[#1]",
    "suites/demo/scenarios.yaml::agent_opens_with_a_shipping_update[elderly_novice-#1]",
    "suites/demo/scenarios.yaml::refund_after_30_days_is_refused[policy_pusher-#1]",
    "suites/demo/scenarios.yaml::balance_for_a_terse_customer[terse-#1]",
    "suites/demo/scenarios.yaml::express_delivery_date_is_made_up[power_user-#1]",
    "suites/demo/simulations.yaml::order_status_needs_the_order_number[impatient-#1]",
    "suites/demo/simulations.yaml::refund_journey_with_a_reason[chatty-#1]",
    "suites/demo/simulations.yaml::complaint_goes_to_a_human[angry-#1]",
]
PLANTED_FAILURE = "suites/demo/scenarios.yaml::express_delivery_date_is_made_up[power_user-#1]"


@pytest.fixture
def project(tmp_path: Path) -> Path:
    """A folder with the shipped suites and personas and a pytest.ini of its own (so no outer one applies)."""
    shutil.copytree(ROOT / "suites", tmp_path / "suites")
    shutil.copytree(ROOT / "personas", tmp_path / "personas")
    (tmp_path / "pytest.ini").write_text("[pytest]\n", encoding="utf-8")
    return tmp_path


def pytest_in(folder: Path, *args: str, cache: bool = False) -> subprocess.CompletedProcess[str]:
    """``python -m pytest ARGS`` in ``folder``, offline; pytest's cache (for --lf) only with ``cache``."""
    env = {**os.environ, "LITELLM_OFFLINE_MODE": "true"}
    env.pop("SIMULATOR_DB", None)
    env.pop("PYTEST_ADDOPTS", None)
    command = [sys.executable, "-m", "pytest", *([] if cache else ["-p", "no:cacheprovider"]), *args]
    return subprocess.run(command, cwd=folder, env=env, capture_output=True, text=True, timeout=120, check=False)


def collected_ids(output: str) -> list[str]:
    return [line for line in output.splitlines() if "::" in line]


def test_collect_only_lists_every_case_persona_and_repeat(project: Path) -> None:
    done = pytest_in(project, "suites/demo", "--collect-only", "-q", "--sim-repeat", "2")
    assert done.returncode == 0, done.stdout + done.stderr
    expected = [
        item.replace("#1]", f"#{repeat}]")
        for suite in ("golden", "scenarios", "simulations")
        for item in DEMO_IDS
        if f"/{suite}.yaml::" in item
        for repeat in (1, 2)
    ]
    assert sorted(collected_ids(done.stdout)) == sorted(expected)
    assert "agent.yaml" not in done.stdout  # the agent file beside the suites is no suite


def test_a_session_runs_the_suites_as_one_stored_run(project: Path) -> None:
    db = project / "runs.db"
    junit = project / "junit.xml"
    done = pytest_in(project, "suites/demo", "--sim-db", str(db), f"--junitxml={junit}", "-rs")
    output = done.stdout
    assert done.returncode == 1, output + done.stderr
    assert "1 failed, 7 passed, 4 skipped" in output
    # The failure is told goal by goal, with the last turns and how to see the rest; no traceback.
    assert "✗ goal: Find out when your express order ORD-90011 will arrive. — not complete" in output
    assert "Outcome: fail" in output
    assert "Last turns" in output
    assert "according to our delivery system" in output
    assert "Traceback" not in output
    assert "pytest_plugin.py" not in output  # unsure cases are skipped at their case in the suite file
    assert "SKIPPED [1] suites/demo/golden.yaml:" in output

    outcome = simulator.get_run("latest", db=db)
    assert outcome.completed
    assert [item.case for item in outcome.record.plan] == [item.split("::")[1].split("[")[0] for item in DEMO_IDS]
    results = outcome.results()
    assert sorted(stored.outcome for stored in results) == ["fail"] + ["pass"] * 7 + ["unsure"] * 4
    assert f"simulator run {outcome.id} stored in {db}; simulator report {outcome.id} --db {db}" in output

    cases = ET.parse(junit).getroot().iter("testcase")
    by_name = {(case.get("classname"), case.get("name")): case for case in cases}
    assert len(by_name) == 12
    failed = by_name[("suites.demo.scenarios.yaml", "express_delivery_date_is_made_up[power_user-#1]")]
    failure = failed.find("failure")
    assert failure is not None
    assert "not complete" in (failure.text or "")
    skips = [skip for case in by_name.values() if (skip := case.find("skipped")) is not None]
    assert len(skips) == 4
    assert all(skip.get("message", "").startswith("unsure: ") for skip in skips)
    assert by_name[("suites.demo.golden.yaml", "refund_within_30_days[#1]")].find("failure") is None


def test_k_runs_and_stores_only_the_selected_items_and_the_fixture_runs_its_own(project: Path) -> None:
    (project / "test_by_hand.py").write_text(
        "def test_golden_by_hand(simulator_run):\n"
        "    outcome = simulator_run('suites/demo/golden.yaml', cases=['refund_within_30_days'])\n"
        "    assert outcome.passed\n"
        "    assert outcome.record.settings.seed == 5  # the session's --sim-seed is the default\n",
        encoding="utf-8",
    )
    db = project / "runs.db"
    done = pytest_in(
        project, "suites/demo", "test_by_hand.py", "-k", "refund or by_hand", "--sim-db", str(db), "--sim-seed", "5"
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "3 passed, 1 skipped, 9 deselected" in done.stdout
    suites_run, fixture_run = simulator.get_run("latest~1", db=db), simulator.get_run("latest", db=db)
    assert [(item.case, item.persona) for item in suites_run.record.plan] == [
        ("refund_within_30_days", None),
        ("refund_after_30_days_is_refused", "policy_pusher"),
        ("refund_journey_with_a_reason", "chatty"),
    ]
    assert len(suites_run.results()) == 3
    assert [item.case for item in fixture_run.record.plan] == ["refund_within_30_days"]
    for run in (suites_run, fixture_run):
        assert f"simulator run {run.id} stored in {db}" in done.stdout


def test_last_failed_reruns_only_the_failed_conversation(project: Path) -> None:
    db = project / "runs.db"
    options = ["-o", f"cache_dir={project / '.cache'}", "--sim-db", str(db)]
    first = pytest_in(project, "suites/demo", *options, cache=True)
    assert "1 failed, 7 passed, 4 skipped" in first.stdout, first.stdout + first.stderr
    again = pytest_in(project, "suites/demo", "--lf", *options, cache=True)
    assert "rerun previous 1 failure" in again.stdout, again.stdout + again.stderr
    assert "= 1 failed in" in again.stdout
    rerun = simulator.get_run("latest", db=db)
    assert [(item.case, item.persona) for item in rerun.record.plan] == [
        ("express_delivery_date_is_made_up", "power_user")
    ]


def test_an_invalid_suite_is_one_collection_error_with_its_located_problems(project: Path) -> None:
    bad = project / "bad"
    bad.mkdir()
    (bad / "agent.yaml").write_text("type: python\ncallable: simulator.demo.shop:respond\n", encoding="utf-8")
    (bad / "broken.yaml").write_text(
        "name: broken\ncases:\n  - name: one\n    kind: scenario\n    goal: 3\n    bogus: 1\n", encoding="utf-8"
    )
    done = pytest_in(project, "bad", "--sim-db", str(project / "runs.db"))
    assert done.returncode == 2, done.stdout + done.stderr
    assert "1 error" in done.stdout
    assert "ERROR collecting bad/broken.yaml" in done.stdout
    assert "bad/broken.yaml:5:11: cases[0].goal: expected text" in done.stdout
    assert "bad/broken.yaml:6:5: cases[0].bogus: unknown key 'bogus'" in done.stdout
    assert "Traceback" not in done.stdout
    assert "agent.yaml" not in done.stdout


def test_yaml_is_collected_only_when_asked_for(project: Path) -> None:
    """A plain `pytest` (arguments from testpaths) collects no YAML, as in this project's own test run;
    `simulator_suites` in the ini file makes it collect those suites."""
    (project / "pytest.ini").write_text("[pytest]\ntestpaths = suites\n", encoding="utf-8")
    plain = pytest_in(project, "--collect-only", "-q")
    assert collected_ids(plain.stdout) == [], plain.stdout
    assert plain.returncode == 5, plain.stdout + plain.stderr  # no tests collected
    (project / "pytest.ini").write_text(
        "[pytest]\ntestpaths = tests\nsimulator_suites = suites/demo/golden.yaml\n", encoding="utf-8"
    )
    (project / "tests").mkdir()
    (project / "tests" / "data.yaml").write_text("name: not a suite\ncases: 3\n", encoding="utf-8")
    listed = pytest_in(project, "--collect-only", "-q")
    assert collected_ids(listed.stdout) == DEMO_IDS[:5], listed.stdout + listed.stderr


def test_combine_runs_plans_of_several_files_as_one(monkeypatch: pytest.MonkeyPatch) -> None:
    """What the plugin relies on: plans made file by file become one run with unique keys and suite indices."""
    import dataclasses

    from simulator.errors import InputError
    from simulator.runner import combine

    monkeypatch.chdir(ROOT)
    golden = simulator.plan("suites/demo/golden.yaml", seed=3)
    scenarios = simulator.plan("suites/demo/scenarios.yaml", seed=3)
    narrowed = dataclasses.replace(scenarios, items=scenarios.items[-1:])
    combined = combine([golden, narrowed])
    assert [item.suite for item in combined.items] == [0] * 5 + [1]
    assert len({item.key for item in combined.items}) == 6
    assert combined.items[-1].seed == scenarios.items[-1].seed  # each keeps the seed its own plan gave it
    assert combined.settings.paths == ["suites/demo/golden.yaml", "suites/demo/scenarios.yaml"]
    assert [snapshot.path for snapshot in combined.snapshots] == combined.settings.paths
    with pytest.raises(InputError, match="different settings"):
        combine([golden, simulator.plan("suites/demo/scenarios.yaml", seed=4)])


def test_an_error_names_the_role_that_failed() -> None:
    from datetime import UTC, datetime

    from simulator.models.run import StoredResult
    from simulator.models.scores import CaseResult
    from simulator.models.transcript import ErrorEvent, Transcript
    from simulator.pytest_plugin import failure_lines

    now = datetime.now(UTC)
    transcript = Transcript(
        case="refund", kind="scenario", persona="terse", seed=1, stop_reason="error", error="judge down",
        events=[ErrorEvent(turn=2, where="judge", message="no answer after 3 tries")], started_at=now, finished_at=now,
    )  # fmt: skip
    result = CaseResult(
        case="refund", kind="scenario", persona="terse", outcome="error", reasons=["judge down"], transcript=transcript
    )
    stored = StoredResult(run_id="r1", key="0:refund:terse:0", suite=0, case="refund", persona="terse",
                          outcome="error", finished=now, result=result)  # fmt: skip
    lines = failure_lines(stored, "simulator report r1")
    assert "error: the judge failed: no answer after 3 tries" in lines
    assert "Outcome: error" in lines
    assert lines[-1].endswith("simulator report r1")


#: A conftest that plays the simulated user with a fake model breaking character (offline, in pytest's process).
BAD_USER_CONFTEST = """
from simulator.llm import FakeScript

reply = {"message": "How can I help you today?", "done": False, "reason": "helping"}
bound = FakeScript().enqueue("user", reply, times=50).active()  # kept: the session's whole life

def pytest_configure(config):
    bound.__enter__()
"""


def test_a_user_error_is_skipped_with_its_finding_unless_counted(project: Path) -> None:
    (project / "conftest.py").write_text(BAD_USER_CONFTEST, encoding="utf-8")
    args = ["suites/demo/simulations.yaml", "-k", "order_status", "--sim-user-model", "fake/user", "-rs"]
    apart = pytest_in(project, *args)
    assert "1 skipped, 2 deselected" in apart.stdout, apart.stdout + apart.stderr
    assert "user_error: simulated user, turn 2: broke_character" in apart.stdout
    counted = pytest_in(project, *args, "--sim-count-user-errors")
    assert "1 failed, 2 deselected" in counted.stdout, counted.stdout + counted.stderr
    assert "counted as the agent's failure (--sim-count-user-errors)" not in counted.stdout
    assert "counted as the agent's failure (--count-user-errors)" in counted.stdout
