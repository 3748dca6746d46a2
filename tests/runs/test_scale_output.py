"""Output of large runs: a bounded terminal table (failures first, a pointer to the whole run), ``run --json``
written row by row, ``RunOutcome.iter_results`` in plan order, and an old store shown the same way."""

from __future__ import annotations

import json
import re
import sqlite3
import textwrap
from collections.abc import Callable
from contextlib import closing
from pathlib import Path

import pytest
from typer.testing import CliRunner

import simulator
from simulator.cli import app
from simulator.models.run import PlanItem, RunSettings
from simulator.models.scores import Outcome
from simulator.reports.run_text import FAILING_SHOWN, OTHERS_SHOWN
from simulator.store import MIGRATIONS, RunStore, migrate
from tests.factories import T0, make_result, make_run

runner = CliRunner()
RUN_ID = "20261201-120000-abcdef"
ROW = re.compile(r"│ (case-\d{3}) ")


def _outcome(index: int) -> Outcome:
    """66 failing (6 errors, 60 failures), some unsure, the rest passes, spread over 300 conversations."""
    if index % 50 == 1:
        return "error"
    if index % 5 == 0:
        return "fail"
    if index % 7 == 2:
        return "unsure"
    return "pass"


def _store_run(db: Path, outcome_of: Callable[[int], Outcome] = _outcome, size: int = 300) -> list[Outcome]:
    outcomes = [outcome_of(i) for i in range(size)]
    plan = [PlanItem(key=f"0:case-{i:03d}::0", suite=0, case=f"case-{i:03d}") for i in range(size)]
    record = make_run(RUN_ID, "shop", status="completed", plan=plan)
    with RunStore(db) as store:
        store.create_run(record)
        for i, outcome in enumerate(outcomes):
            reasons = [f"reason of case-{i:03d}"] if outcome != "pass" else []
            store.save_result(make_result(record, 0, f"case-{i:03d}", outcome, key=plan[i].key, reasons=reasons))
    return outcomes


def _rows(stdout: str) -> list[str]:
    return ROW.findall(stdout)


def test_the_table_of_a_300_conversation_run_shows_failures_first_and_at_most_the_bound(tmp_path: Path) -> None:
    db = tmp_path / "runs.db"
    outcomes = _store_run(db)
    result = runner.invoke(app, ["runs", "show", RUN_ID, "--db", str(db)])
    assert result.exit_code == 0, result.stdout + result.stderr
    rows = _rows(result.stdout)
    assert len(rows) == FAILING_SHOWN + OTHERS_SHOWN
    outcome = {f"case-{i:03d}": o for i, o in enumerate(outcomes)}
    shown = [outcome[case] for case in rows]
    # Errors, then failures (each by case), then unsure, then passes.
    errors = sorted(case for case, o in outcome.items() if o == "error")
    assert rows[: len(errors)] == errors
    assert set(shown[:FAILING_SHOWN]) == {"error", "fail"}
    assert rows[len(errors) : FAILING_SHOWN] == sorted(c for c, o in outcome.items() if o == "fail")[: 50 - 6]
    unsure = sorted(case for case, o in outcome.items() if o == "unsure")
    assert rows[FAILING_SHOWN:] == unsure[:OTHERS_SHOWN]
    failing = sum(1 for o in outcomes if o in ("error", "fail"))
    report = f"simulator report {RUN_ID} --db {db}"
    assert f"{failing - FAILING_SHOWN} more failing: see {report}" in result.stdout
    assert f"showing {FAILING_SHOWN + OTHERS_SHOWN} of 300 conversations; the whole run: {report} -f html" in (
        result.stdout
    )
    assert "of 300 (of 300 planned)" in result.stdout  # the totals are over the whole run


def test_a_run_with_few_failures_shows_them_all_then_a_few_passes(tmp_path: Path) -> None:
    db = tmp_path / "runs.db"
    _store_run(db, lambda i: "fail" if i in (7, 250, 299) else "pass")
    result = runner.invoke(app, ["runs", "show", RUN_ID, "--db", str(db)])
    rows = _rows(result.stdout)
    assert rows[:3] == ["case-007", "case-250", "case-299"]
    assert rows[3:] == [f"case-{i:03d}" for i in range(OTHERS_SHOWN + 3) if i != 7][:OTHERS_SHOWN]
    assert "more failing" not in result.stdout
    assert f"showing {3 + OTHERS_SHOWN} of 300 conversations" in result.stdout


def test_a_small_run_shows_every_row_without_a_pointer(tmp_path: Path) -> None:
    db = tmp_path / "runs.db"
    _store_run(db, size=FAILING_SHOWN)
    result = runner.invoke(app, ["runs", "show", RUN_ID, "--db", str(db)])
    assert len(_rows(result.stdout)) == FAILING_SHOWN
    assert "showing" not in result.stdout


def test_an_old_store_still_shows(tmp_path: Path) -> None:
    """A store of the schema before leases (m001-m003), its run without a summary (as older versions left it):
    the summary is computed over the stored results, and the table is bounded the same way."""
    db = tmp_path / "runs.db"
    plan = [PlanItem(key=f"0:case-{i:03d}::0", suite=0, case=f"case-{i:03d}") for i in range(80)]
    record = make_run(RUN_ID, "shop", status="completed", plan=plan)
    with closing(sqlite3.connect(db, isolation_level=None)) as conn:
        migrate(conn, db, MIGRATIONS[:3])
        conn.execute(
            "INSERT INTO runs (id, created, status, note, suite_hash, snapshot, settings, versions, plan) "
            "VALUES (?, ?, 'completed', '', 'h', ?, ?, '{}', ?)",
            (
                RUN_ID,
                T0.isoformat(),
                json.dumps([s.model_dump(mode="json", exclude_unset=True) for s in record.snapshot]),
                record.settings.model_dump_json(),
                json.dumps([item.model_dump(mode="json") for item in plan]),
            ),
        )
        for i, item in enumerate(plan):
            stored = make_result(record, 0, item.case, "fail" if i % 2 else "pass", key=item.key, reasons=["no"])
            conn.execute(
                'INSERT INTO results (run_id, "key", suite, case_name, persona, "repeat", outcome, duration_s, '
                "finished, result) VALUES (?, ?, 0, ?, NULL, 0, ?, 1.5, ?, ?)",
                (RUN_ID, item.key, item.case, stored.outcome, T0.isoformat(), stored.result.model_dump_json()),
            )
    result = runner.invoke(app, ["runs", "show", RUN_ID, "--db", str(db)])
    assert result.exit_code == 0, result.stdout + result.stderr
    rows = _rows(result.stdout)
    assert rows[:40] == [f"case-{i:03d}" for i in range(1, 80, 2)]
    assert len(rows) == 40 + OTHERS_SHOWN
    assert "Correctness 50.0%: 40 passed, 40 failed, 0 error, 0 unsure of 80 (of 80 planned)" in result.stdout
    assert "showing 60 of 80 conversations" in result.stdout


AGENT = """
def respond(messages):
    text = messages[-1]["content"] if messages else ""
    return "I cannot help with that." if "refund" in text else f"Sure: {text}"
"""


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    (tmp_path / ".git").mkdir()
    (tmp_path / "toy_agent.py").write_text(textwrap.dedent(AGENT), encoding="utf-8")
    (tmp_path / "suite.yaml").write_text(
        textwrap.dedent(
            """\
            name: toy
            agent: {type: python, callable: toy_agent:respond}
            cases:
              - kind: simulation
                name: refund
                steps:
                  - static_utterance: I want a refund.
                    checks: [{must_contain: [approved]}]
              - kind: simulation
                name: hello
                steps:
                  - static_utterance: Hello.
                    checks: [{must_contain: [Sure]}]
            """
        ),
        encoding="utf-8",
    )
    monkeypatch.chdir(tmp_path)
    monkeypatch.syspath_prepend(str(tmp_path))
    return tmp_path


def test_run_json_is_one_document_with_every_row(project: Path) -> None:
    db = project / "runs.db"
    result = runner.invoke(app, ["run", "suite.yaml", "--repeat", "30", "--db", str(db), "--json", "--seed", "3"])
    document = json.loads(result.stdout)
    # Written element by element, yet exactly what json.dumps(indent=2) writes for the whole document.
    assert result.stdout == json.dumps(document, indent=2, ensure_ascii=False) + "\n"
    rows = document["results"]
    assert len(rows) == 60 == document["counts"]["total"]
    with RunStore(db) as store:
        plan = store.get_run(document["run"]["id"]).plan
    assert [(r["case"], r["repeat"]) for r in rows] == [(item.case, item.repeat + 1) for item in plan]
    refund = next(r for r in rows if r["case"] == "refund")
    assert refund["outcome"] == "fail"
    assert refund["reasons"]
    assert next(r for r in rows if r["case"] == "hello") == {
        "case": "hello", "persona": None, "repeat": 1, "outcome": "pass", "reasons": []
    }  # fmt: skip


def test_run_prints_the_bounded_table(project: Path) -> None:
    result = runner.invoke(app, ["run", "suite.yaml", "--repeat", "40", "--db", str(project / "runs.db")])
    rows = re.findall(r"│ (refund|hello) ", result.stdout)
    assert rows == ["refund"] * 40 + ["hello"] * OTHERS_SHOWN
    assert "showing 60 of 80 conversations; the whole run: simulator report" in result.stdout


def test_iter_results_yields_every_result_in_plan_order(project: Path) -> None:
    outcome = simulator.run(["suite.yaml"], settings=RunSettings(repeat=3, seed=1), db=project / "runs.db")
    results = outcome.iter_results()
    assert iter(results) is results  # an iterator, not a list
    keys = [stored.key for stored in results]
    assert keys == [item.key for item in outcome.record.plan]
    assert len(keys) == 6
