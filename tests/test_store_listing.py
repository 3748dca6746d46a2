"""``RunStore.run_listings``: every run as a runs list shows it, read with SQLite's JSON functions instead of
whole records; the same figures as the records give, and a damaged run left out with its cause."""

from __future__ import annotations

import sqlite3
from contextlib import closing
from datetime import timedelta
from pathlib import Path

import pytest

import simulator
from simulator.metrics import summarized
from simulator.models.run import Plan, PlanItem, RunRecord
from simulator.models.transcript import Usage
from simulator.store import RunStore, Unreadable, UnreadableRunError
from tests.factories import T0, make_result, make_run

COMPLETED, RUNNING, GONE, FRESH = "20260101-aaaaaa", "20260102-bbbbbb", "20260103-cccccc", "20260104-dddddd"


def _plan(*cases: str) -> Plan:
    return Plan([PlanItem(key=f"0:{case}:-:0", suite=0, case=case) for case in cases])


def _fill(db: Path) -> None:
    with RunStore(db) as store:
        done = make_run(COMPLETED, "billing", "support", status="completed", note="base", plan=_plan("a", "b", "c"))
        results = [
            make_result(done, 0, "a", "pass", kind="scenario"),
            make_result(done, 0, "b", "fail", kind="scenario"),
            make_result(done, 0, "c", "user_error", kind="scenario"),
        ]
        summary = summarized(done, results, recompute=True).totals
        assert summary is not None
        usage = {"agent": Usage(prompt_tokens=10, completion_tokens=5, calls=1, cost=0.25)}
        store.create_run(done.model_copy(update={"totals": summary.model_copy(update={"usage": usage})}))
        for result in results:
            store.save_result(result)
        for run_id, day, host in ((RUNNING, 1, "worker.example"), (GONE, 2, None)):
            store.create_run(make_run(run_id, "support", created=T0 + timedelta(days=day), plan=_plan("x", "y")))
            if host is not None:
                store.acquire(run_id, pid=4242, host=host)  # a live process on another machine
        store.create_run(make_run(FRESH, created=T0 + timedelta(days=3), agent_version="v2", plan=_plan()))
    with closing(sqlite3.connect(db)) as conn:  # GONE's process was killed: its lease is gone
        conn.execute("UPDATE runs SET status = 'running' WHERE id = ?", (GONE,))
        conn.commit()


def _expected(record: RunRecord) -> tuple[object, ...]:
    totals = record.totals
    counts = None if totals is None else (totals.passed, totals.failed, totals.unsure, totals.user_error)
    return (
        record.id,
        record.status,
        record.created,
        record.agent_version,
        record.note,
        [snapshot.suite.name for snapshot in record.snapshot],
        len(record.plan),
        counts,
        {} if totals is None else totals.usage,
        0.0 if totals is None else totals.duration_s,
    )


def test_listings_give_what_the_whole_records_give(tmp_path: Path) -> None:
    db = tmp_path / "runs.db"
    _fill(db)
    with RunStore(db) as store:
        records = store.list_runs(limit=None)
        listings = store.run_listings()
    got = [
        (
            item.id,
            item.status,
            item.created,
            item.agent_version,
            item.note,
            item.suites,
            item.planned,
            None
            if item.counts is None
            else (item.counts.passed, item.counts.failed, item.counts.unsure, item.counts.user_error),
            item.usage,
            item.duration_s,
        )
        for item in listings
    ]
    assert got == [_expected(record) for record in records]
    assert [(item.id, item.status) for item in listings] == [
        (FRESH, "interrupted"),
        (GONE, "interrupted"),
        (RUNNING, "running"),
        (COMPLETED, "completed"),
    ]
    assert listings[-1].counts is not None
    assert listings[-1].counts.correctness == 0.5
    assert simulator.list_run_listings(db=db) == listings


DAMAGE = [
    ("snapshot", "{not json", "its suites have no names"),
    ("snapshot", '{"suite": 1}', "its suites have no names"),
    ("plan", "[unclosed", "its plan is not a list"),
    ("totals", "{not json", "its summary is not a JSON object"),
    ("totals", '{"passed": -3}', "its summary: 1 problem"),
    ("totals", '{"usage": {"agent": {"prompt_tokens": "many"}}}', "its summary: 1 problem"),
    ("totals", '{"duration_s": "long"}', "its summary's duration is not a number"),
    ("created", "yesterday", "its creation time 'yesterday' is not a time"),
]


@pytest.mark.parametrize(("column", "value", "problem"), DAMAGE)
def test_a_damaged_run_is_left_out_with_its_cause(tmp_path: Path, column: str, value: str, problem: str) -> None:
    db = tmp_path / "runs.db"
    _fill(db)
    with closing(sqlite3.connect(db)) as conn:
        conn.execute("DROP TRIGGER runs_keep_what_was_run")  # damage by hand what the store never changes
        conn.execute(f"UPDATE runs SET {column} = ? WHERE id = ?", (value, COMPLETED))
        conn.commit()
    skipped: list[Unreadable] = []
    with RunStore(db) as store:
        listings = store.run_listings(skipped=skipped)
        with pytest.raises(UnreadableRunError, match=f"run {COMPLETED} in .* cannot be read"):
            store.run_listings()
    assert [item.id for item in listings] == [FRESH, GONE, RUNNING]
    assert [item.run_id for item in skipped] == [COMPLETED]
    assert problem in skipped[0].describe()
    assert f"simulator runs delete {COMPLETED}" in skipped[0].describe()
