"""The run store: round trips, commit per result, immutability in the database, run refs, migrations."""

from __future__ import annotations

import multiprocessing
import os
import re
import sqlite3
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import closing
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from pydantic import TypeAdapter

from simulator.errors import StoreError
from simulator.models import Suite
from simulator.models.run import (
    PlanItem,
    RunRecord,
    RunSettings,
    RunStatus,
    StoredResult,
    SuiteSnapshot,
)
from simulator.models.scores import CaseResult, Outcome, Score
from simulator.models.summary import RunSummary
from simulator.models.transcript import AgentEvent, ToolCallRecord, Transcript, Usage, UserEvent
from simulator.store import (
    HOST,
    MIGRATIONS,
    STALE_AFTER_S,
    RunBusyError,
    RunStore,
    default_db_path,
    migrate,
    migration_name,
    new_run_id,
)
from tests import factories

T0 = datetime(2026, 11, 29, 23, 25, 1, tzinfo=UTC)
_SNAPSHOTS = TypeAdapter(list[SuiteSnapshot])
KEYS = ["0/refund/-/0", "0/refund/-/1", "0/refund/-/2"]


def make_suite() -> Suite:
    return Suite.model_validate(
        {
            "name": "Shop",
            "cases": [{"kind": "scenario", "name": "refund", "goal": "Get a refund for order 42"}],
            # a fake with `error` and no `result`: the snapshot must keep which keys were written
            "tool_fakes": [{"tool": "lookup_order", "error": "404: order not found"}],
        }
    )


def make_run(
    run_id: str = "20261129-232501-ab12cd",
    *,
    created: datetime = T0,
    suite_hash: str = "h1",
    status: RunStatus = "interrupted",
) -> RunRecord:
    return factories.make_run(
        run_id,
        SuiteSnapshot(path="suites/shop.yaml", suite=make_suite()),
        created=created,
        suite_hash=suite_hash,
        status=status,
        agent_version="v1.2",
        settings=RunSettings(paths=["suites/shop.yaml"], repeat=3, seed=7),
        versions={"simulator": "0.1.0", "python": "3.11"},
        plan=[PlanItem(key=key, suite=0, case="refund", repeat=n, seed=n) for n, key in enumerate(KEYS)],
    )


def make_result(run_id: str, key: str, *, outcome: Outcome = "pass", duration_s: float = 2.0) -> StoredResult:
    repeat = KEYS.index(key) if key in KEYS else 0
    transcript = Transcript(
        case="refund",
        kind="scenario",
        events=[
            UserEvent(turn=1, text="I want a refund for order 42", source="llm"),
            AgentEvent(
                turn=1,
                messages=["Done: refund issued."],
                tool_calls=[ToolCallRecord(id="c1", name="refund_order", arguments={"order": 42}, status="faked")],
            ),
        ],
        turns=1,
    )
    result = CaseResult(
        case="refund",
        kind="scenario",
        repeat=repeat,
        outcome="pass" if outcome == "pass" else "fail",
        transcript=transcript,
        scores=[Score(metric="goal", check="user goal", source="judge", verdict="met", value=1.0)],
        metrics={"goals": 1.0, "hallucinations": None},
    )
    return factories.make_result(
        run_id,
        0,
        "refund",
        outcome,
        repeat=repeat,
        key=key,
        result=result,
        finished=T0 + timedelta(seconds=repeat),
        duration_s=duration_s,
    )


def raw(path: Path) -> closing[sqlite3.Connection]:
    """A plain sqlite3 connection, as another program would open the file."""
    return closing(sqlite3.connect(path))


# --- round trips


def test_run_and_results_round_trip(tmp_path: Path) -> None:
    db = tmp_path / "deep" / "folder" / "runs.db"
    record = make_run()
    saved = {key: make_result(record.id, key) for key in (KEYS[2], KEYS[0], KEYS[1])}  # finished out of order
    with RunStore(db) as store:
        store.create_run(record)
        for result in saved.values():
            store.save_result(result)
        assert db.is_file()
    with RunStore(db) as store:
        again = store.get_run(record.id)
        stored = store.results(record.id)
    assert again == record
    assert again.snapshot[0].suite.tool_fakes[0].model_fields_set == {"tool", "error"}
    assert [r.key for r in stored] == KEYS  # plan order, not finishing order
    assert stored == [saved[key] for key in KEYS]
    assert stored[0].result.transcript.tool_calls()[0].arguments == {"order": 42}


def test_status_totals_finished_and_note_change(tmp_path: Path) -> None:
    record = make_run()
    totals = RunSummary(total=3, passed=2, failed=1, correctness=2 / 3, usage={"judge": Usage(calls=3, cost=None)})
    with RunStore(tmp_path / "runs.db") as store:
        store.create_run(record)
        store.set_status(record.id, "completed", totals=totals, finished=T0 + timedelta(minutes=2))
        store.set_note(record.id, "baseline before the prompt change")
        again = store.get_run(record.id)
    assert again.status == "completed"
    assert again.totals == totals
    assert again.finished == T0 + timedelta(minutes=2)
    assert again.note == "baseline before the prompt change"
    assert again.snapshot == record.snapshot


def test_pragmas_wal_and_foreign_keys(tmp_path: Path) -> None:
    with RunStore(tmp_path / "runs.db") as store, store._sql("inspect") as conn:
        assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
        assert conn.execute("PRAGMA foreign_keys").fetchone()[0] == 1
        assert conn.execute("PRAGMA synchronous").fetchone()[0] == 1  # NORMAL


def test_unknown_runs_and_bad_input_are_store_errors(tmp_path: Path) -> None:
    with RunStore(tmp_path / "runs.db") as store:
        store.create_run(make_run())
        with pytest.raises(StoreError, match="already exists"):
            store.create_run(make_run())
        with pytest.raises(StoreError, match="no run 'nope'"):
            store.save_result(make_result("nope", KEYS[0]))
        for call in (store.results, store.completed_keys, store.delete_run, lambda run_id: store.set_note(run_id, "x")):
            with pytest.raises(StoreError, match="no run 'nope'"):
                call("nope")
        with pytest.raises(StoreError, match="no run 'nope'"):
            store.set_status("nope", "completed")
        with pytest.raises(StoreError, match="not a run status"):
            store.set_status(make_run().id, "done")  # type: ignore[arg-type]
        with pytest.raises(StoreError, match="cannot be a run id"):
            store.create_run(make_run("latest"))
        with pytest.raises(StoreError, match="plan keys must be unique"):
            store.create_run(make_run("other").model_copy(update={"plan": [PlanItem(key="a", suite=0, case="c")] * 2}))
    with pytest.raises(StoreError, match="closed"):
        store.list_runs()


# --- commit per result, several processes


def test_each_result_is_visible_to_another_store_at_once(tmp_path: Path) -> None:
    db = tmp_path / "runs.db"
    record = make_run()
    with RunStore(db) as writer, RunStore(db) as reader:
        writer.create_run(record)
        assert reader.completed_keys(record.id) == set()
        writer.save_result(make_result(record.id, KEYS[1]))
        assert reader.completed_keys(record.id) == {KEYS[1]}
        writer.save_result(make_result(record.id, KEYS[0]))
        assert [r.key for r in reader.results(record.id)] == KEYS[:2]


def test_readers_and_the_writer_never_wait_for_each_other(tmp_path: Path) -> None:
    db = tmp_path / "runs.db"
    record = make_run()
    with RunStore(db) as store:
        store.create_run(record)
    with raw(db) as other:
        # a writer in the middle of a transaction: a new reader opens and reads the last committed state
        other.execute("BEGIN IMMEDIATE")
        other.execute("UPDATE runs SET note = 'in flight'")
        with RunStore(db, timeout=0.5) as reader:
            assert reader.get_run("latest").note == ""
            other.execute("COMMIT")
            assert reader.get_run("latest").note == "in flight"
        # a reader in the middle of a read transaction: the runner still commits results (WAL)
        other.execute("BEGIN")
        assert other.execute("SELECT COUNT(*) FROM results").fetchone()[0] == 0
        with RunStore(db, timeout=0.5) as writer:
            writer.save_result(make_result(record.id, KEYS[0]))
            assert writer.completed_keys(record.id) == {KEYS[0]}
        assert other.execute("SELECT COUNT(*) FROM results").fetchone()[0] == 0  # its snapshot is stable
        other.execute("COMMIT")
        assert other.execute("SELECT COUNT(*) FROM results").fetchone()[0] == 1


def test_a_locked_database_is_a_store_error(tmp_path: Path) -> None:
    db = tmp_path / "runs.db"
    record = make_run()
    with RunStore(db) as store:
        store.create_run(record)
    with raw(db) as other, RunStore(db, timeout=0.05) as writer:
        other.execute("BEGIN IMMEDIATE")
        with pytest.raises(StoreError, match="busy"):
            writer.save_result(make_result(record.id, KEYS[0]))
        other.execute("ROLLBACK")
        writer.save_result(make_result(record.id, KEYS[0]))


# --- immutability


def test_a_result_is_stored_once(tmp_path: Path) -> None:
    record = make_run()
    with RunStore(tmp_path / "runs.db") as store:
        store.create_run(record)
        store.save_result(make_result(record.id, KEYS[0], outcome="pass"))
        with pytest.raises(StoreError, match="already stored"):
            store.save_result(make_result(record.id, KEYS[0], outcome="fail"))
        assert [r.outcome for r in store.results(record.id)] == ["pass"]


@pytest.mark.parametrize(
    ("column", "value"),
    [
        ("snapshot", "[]"),
        ("settings", "{}"),
        ("suite_hash", "other"),
        ("versions", "{}"),
        ("agent_version", "v2"),
        ("plan", "[]"),
        ("created", "2020-01-01T00:00:00"),
        ("id", "renamed"),
        ("imported_from", "elsewhere"),
    ],
)
def test_what_was_run_cannot_be_updated_even_by_hand(tmp_path: Path, column: str, value: str) -> None:
    db = tmp_path / "runs.db"
    record = make_run()
    with RunStore(db) as store:
        store.create_run(record)
    with raw(db) as conn, pytest.raises(sqlite3.IntegrityError, match="immutable"):
        conn.execute(f"UPDATE runs SET {column} = ?", (value,))
    with RunStore(db) as store:
        assert store.get_run(record.id) == record


def test_results_are_insert_only_even_by_hand(tmp_path: Path) -> None:
    db = tmp_path / "runs.db"
    record = make_run()
    with RunStore(db) as store:
        store.create_run(record)
        store.save_result(make_result(record.id, KEYS[0]))
    with raw(db) as conn:
        with pytest.raises(sqlite3.IntegrityError, match="insert-only"):
            conn.execute("UPDATE results SET outcome = 'fail'")
        with pytest.raises(sqlite3.IntegrityError, match="insert-only"):
            conn.execute("DELETE FROM results")
        with pytest.raises(sqlite3.IntegrityError, match="already stored"):
            conn.execute(
                "INSERT OR REPLACE INTO results (run_id, key, suite, case_name, repeat, outcome, duration_s, finished,"
                " result) SELECT run_id, key, suite, case_name, repeat, 'fail', 0, finished, result FROM results"
            )
        # what may change, may change by hand too
        conn.execute("UPDATE runs SET note = 'by hand', status = 'incomplete', totals = NULL, finished = NULL")
        conn.commit()
    with RunStore(db) as store:
        run = store.get_run(record.id)
        assert (run.note, run.status) == ("by hand", "interrupted")  # the old word for it reads as today's
        assert [r.outcome for r in store.results(record.id)] == ["pass"]


def test_a_damaged_payload_is_a_store_error(tmp_path: Path) -> None:
    db = tmp_path / "runs.db"
    record = make_run()
    with RunStore(db) as store:
        store.create_run(record)
    with raw(db) as conn:
        conn.execute("UPDATE runs SET totals = '{not json'")
        conn.commit()
    with RunStore(db) as store, pytest.raises(StoreError, match=f"run {record.id} .* cannot be read"):
        store.get_run(record.id)


# --- run refs, listing, deleting


def three_runs(store: RunStore) -> list[RunRecord]:
    runs = [
        make_run("20261101-090000-aaaaaa", created=T0),
        make_run("20261102-090000-bbbbbb", created=T0 + timedelta(days=1)),
        make_run("20261102-090000-bbbccc", created=T0 + timedelta(days=2)),
    ]
    for run in runs:
        store.create_run(run)
    return runs


def test_run_refs(tmp_path: Path) -> None:
    with RunStore(tmp_path / "runs.db") as store:
        with pytest.raises(StoreError, match="no runs are stored"):
            store.get_run("latest")
        first, second, third = three_runs(store)
        assert store.get_run(second.id) == second
        assert store.get_run("20261101") == first
        assert store.get_run(" 20261102-090000-bbbb ") == second
        assert store.get_run("latest") == third
        assert store.get_run("latest~0") == third
        assert store.get_run("latest~1") == second
        assert store.get_run("latest~2") == first
        with pytest.raises(StoreError, match=r"only 3 run\(s\).*latest~2"):
            store.get_run("latest~3")
        with pytest.raises(StoreError, match="latest~N") as ambiguous_latest:
            store.get_run("latest~x")
        assert "latest~1" in str(ambiguous_latest.value)
        with pytest.raises(StoreError, match="several runs") as ambiguous:
            store.get_run("20261102")
        assert third.id in str(ambiguous.value)
        assert second.id in str(ambiguous.value)
        with pytest.raises(StoreError, match="most recent runs") as unknown:
            store.get_run("2025")
        assert str(unknown.value).count("2026110") == 3
        with pytest.raises(StoreError, match="no run given"):
            store.get_run("  ")


def test_list_runs_newest_first(tmp_path: Path) -> None:
    with RunStore(tmp_path / "runs.db") as store:
        assert store.list_runs() == []
        runs = three_runs(store)
        assert [r.id for r in store.list_runs()] == [r.id for r in reversed(runs)]
        assert [r.id for r in store.list_runs(limit=2)] == [runs[2].id, runs[1].id]
        assert len(store.list_runs(limit=None)) == 3
        with pytest.raises(StoreError, match="at least 1"):
            store.list_runs(limit=0)


def test_delete_run_takes_its_results(tmp_path: Path) -> None:
    db = tmp_path / "runs.db"
    with RunStore(db) as store:
        first, second, _ = three_runs(store)
        for run in (first, second):
            for key in KEYS:
                store.save_result(make_result(run.id, key))
        store.delete_run(first.id)
        with pytest.raises(StoreError, match="no run"):
            store.get_run(first.id)
        assert len(store.results(second.id)) == 3
    with raw(db) as conn:
        assert conn.execute("SELECT COUNT(*) FROM results WHERE run_id = ?", (first.id,)).fetchone()[0] == 0
        assert conn.execute("SELECT COUNT(*) FROM results").fetchone()[0] == 3


def test_latest_completed_and_mean_duration(tmp_path: Path) -> None:
    with RunStore(tmp_path / "runs.db") as store:
        assert store.latest_completed("h1") is None
        assert store.mean_duration("h1") is None
        first, second, third = three_runs(store)
        store.create_run(make_run("20261103-090000-dddddd", created=T0 + timedelta(days=3), suite_hash="h2"))
        store.set_status(first.id, "completed")
        store.set_status(second.id, "completed")
        store.set_status(third.id, "interrupted")
        latest = store.latest_completed("h1")
        assert latest is not None
        assert latest.id == second.id
        assert store.latest_completed("h2") is None
        store.save_result(make_result(first.id, KEYS[0], duration_s=1.0))
        store.save_result(make_result(third.id, KEYS[0], duration_s=4.0))
        store.save_result(make_result("20261103-090000-dddddd", KEYS[0], duration_s=100.0))
        assert store.mean_duration("h1") == pytest.approx(2.5)
        assert store.mean_duration("h2") == pytest.approx(100.0)


def test_new_run_ids_are_short_unique_and_sort_by_time(tmp_path: Path) -> None:
    assert re.fullmatch(r"\d{8}-\d{6}-[0-9a-f]{6}", new_run_id())
    assert new_run_id(T0).startswith("20261129-232501-")
    assert new_run_id(T0) < new_run_id(T0 + timedelta(seconds=1))
    with RunStore(tmp_path / "runs.db") as store:
        ids = {store.new_run_id() for _ in range(200)}
    assert len(ids) == 200


# --- migrations and opening


def migration_rows(db: Path) -> list[tuple[str, str]]:
    with raw(db) as conn:
        return [(str(n), str(a)) for n, a in conn.execute("SELECT name, applied_at FROM migrations ORDER BY name")]


def schema(db: Path) -> set[str]:
    with raw(db) as conn:
        return {str(row[0]) for row in conn.execute("SELECT name FROM sqlite_master WHERE name NOT LIKE 'sqlite_%'")}


def test_a_new_file_gets_every_migration_and_opening_again_changes_nothing(tmp_path: Path) -> None:
    db = tmp_path / "runs.db"
    with RunStore(db):
        pass
    rows = migration_rows(db)
    assert [name for name, _ in rows] == [migration_name(m) for m in MIGRATIONS]
    assert [name for name, _ in rows] == [
        "m001_tables",
        "m002_immutability",
        "m003_indexes",
        "m004_leases",
        "m005_cassettes",
        "m006_reviews",
    ]
    objects = schema(db)
    assert {"runs", "results", "migrations", "runs_keep_what_was_run", "results_insert_only"} <= objects
    with RunStore(db):
        pass
    assert migration_rows(db) == rows
    assert schema(db) == objects
    with closing(sqlite3.connect(db, isolation_level=None)) as conn:
        assert migrate(conn, db) == []


def test_an_old_store_is_upgraded_and_keeps_its_runs(tmp_path: Path) -> None:
    db = tmp_path / "runs.db"
    # the file as the first version of the store wrote it
    with closing(sqlite3.connect(db, isolation_level=None)) as conn:
        assert migrate(conn, db, MIGRATIONS[:1]) == ["m001_tables"]
    assert [name for name, _ in migration_rows(db)] == ["m001_tables"]
    assert "runs_keep_what_was_run" not in schema(db)
    with RunStore(db) as store:
        store.create_run(make_run())
    assert [name for name, _ in migration_rows(db)] == [migration_name(m) for m in MIGRATIONS]
    assert {"runs_keep_what_was_run", "runs_by_created", "runs_by_suite"} <= schema(db)

    # an old file holding data: take the later migrations back out, then open it again
    with raw(db) as conn:
        for name in ("runs_keep_what_was_run", "results_insert_only", "results_no_replace", "results_no_delete"):
            conn.execute(f"DROP TRIGGER {name}")
        conn.execute("DROP INDEX runs_by_created")
        conn.execute("DROP INDEX runs_by_suite")
        conn.execute("DELETE FROM migrations WHERE name != 'm001_tables'")
        conn.commit()
    with RunStore(db) as store:
        assert store.get_run("latest") == make_run()
    assert [name for name, _ in migration_rows(db)] == [migration_name(m) for m in MIGRATIONS]
    with raw(db) as conn, pytest.raises(sqlite3.IntegrityError, match="immutable"):
        conn.execute("UPDATE runs SET plan = '[]'")


def test_a_store_from_a_newer_simulator_is_refused_and_left_alone(tmp_path: Path) -> None:
    db = tmp_path / "runs.db"
    with RunStore(db) as store:
        store.create_run(make_run())
    with raw(db) as conn:
        conn.execute("INSERT INTO migrations VALUES ('m042_shiny_new_thing', '2030-01-01T00:00:00')")
        conn.commit()
    before = migration_rows(db)
    with pytest.raises(StoreError, match="newer version of Simulator") as refused:
        RunStore(db)
    assert "m042_shiny_new_thing" in str(refused.value)
    assert "--db" in str(refused.value)
    assert migration_rows(db) == before
    with raw(db) as conn:
        assert conn.execute("SELECT COUNT(*) FROM runs").fetchone()[0] == 1


def test_a_file_that_is_not_sqlite_is_refused(tmp_path: Path) -> None:
    db = tmp_path / "notes.txt"
    db.write_text("these are my notes, not a database\n" * 50, encoding="utf-8")
    with pytest.raises(StoreError, match="not an SQLite database") as refused:
        RunStore(db)
    assert str(db) in str(refused.value)
    assert "--db" in str(refused.value)
    assert "SIMULATOR_DB" in str(refused.value)
    assert db.read_text(encoding="utf-8").startswith("these are my notes")


def test_another_programs_database_is_refused_and_left_alone(tmp_path: Path) -> None:
    db = tmp_path / "other.db"
    with raw(db) as conn:
        conn.execute("CREATE TABLE invoices (id INTEGER PRIMARY KEY)")
        conn.commit()
    with pytest.raises(StoreError, match=r"not a Simulator run store.*--db"):
        RunStore(db)
    assert schema(db) == {"invoices"}


def test_the_checkpoint_tables_sharing_the_file_do_not_make_it_foreign(tmp_path: Path) -> None:
    db = tmp_path / "runs.db"
    with raw(db) as conn:
        conn.execute("CREATE TABLE checkpoints (thread_id TEXT)")
        conn.execute("CREATE TABLE writes (thread_id TEXT)")
        conn.commit()
    with RunStore(db) as store:
        store.create_run(make_run())
    assert {"checkpoints", "writes", "runs", "results", "migrations"} <= schema(db)


def test_a_folder_is_refused(tmp_path: Path) -> None:
    with pytest.raises(StoreError, match=r"is a folder.*--db"):
        RunStore(tmp_path)


def test_default_db_path(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("SIMULATOR_DB", raising=False)
    assert default_db_path() == tmp_path / ".simulator" / "runs.db"
    monkeypatch.setenv("SIMULATOR_DB", str(tmp_path / "elsewhere" / "mine.db"))
    assert default_db_path() == tmp_path / "elsewhere" / "mine.db"
    monkeypatch.setenv("SIMULATOR_DB", "")
    assert default_db_path() == tmp_path / ".simulator" / "runs.db"


# --- leases: a run's status is true


def dead_pid() -> int:
    """The pid of a process that has ended (and was reaped)."""
    done = subprocess.run([sys.executable, "-c", "pass"], check=True)
    assert done.returncode == 0
    process = subprocess.Popen([sys.executable, "-c", "pass"])
    process.wait(timeout=30)
    return process.pid


def test_a_running_run_whose_process_is_gone_reads_interrupted(tmp_path: Path) -> None:
    record = make_run(status="running")
    with RunStore(tmp_path / "runs.db") as store:
        store.create_run(record)
        # stored running with no lease at all (killed between creating the run and taking it)
        assert store.get_run(record.id).status == "interrupted"
        lease = store.acquire(record.id)
        assert store.get_run(record.id).status == "running"
        assert store.owner(record.id) == lease
        assert [run.status for run in store.list_runs()] == ["running"]
        store.finish(lease, "interrupted")
        assert store.owner(record.id) is None

        # held by a pid that no longer exists on this host: interrupted, and the next process takes it over
        store.acquire(record.id, pid=dead_pid())
        assert store.get_run(record.id).status == "interrupted"
        assert store.owner(record.id) is None
        taken = store.acquire(record.id)
        assert taken.pid == os.getpid()
        assert store.get_run(record.id).status == "running"


def test_a_live_owner_is_named_when_resume_repeat_or_delete_is_refused(tmp_path: Path) -> None:
    record = make_run()
    with RunStore(tmp_path / "runs.db") as store:
        store.create_run(record)
        lease = store.acquire(record.id, pid=os.getppid())  # a live process on this host, not this one
        for attempt in (
            lambda: store.acquire(record.id),
            lambda: store.check_free(record.id, "resumed"),
            lambda: store.delete_run(record.id),
        ):
            with pytest.raises(RunBusyError, match=rf"is being run by {os.getppid()}@{re.escape(HOST)}") as refused:
                attempt()
            assert refused.value.lease == lease
            assert f"since {lease.started:%Y-%m-%d %H:%M:%S} UTC" in str(refused.value)
        assert store.get_run(record.id).status == "running"
        assert store.finish(lease, "completed", finished=T0)
        store.delete_run(record.id)


def test_another_hosts_owner_is_gone_when_its_heartbeat_is_stale(tmp_path: Path) -> None:
    db = tmp_path / "runs.db"
    record = make_run()
    with RunStore(db) as store:
        store.create_run(record)
        store.acquire(record.id, pid=1, host="build-agent-7")
        assert store.get_run(record.id).status == "running"  # its pid means nothing here: the heartbeat decides
        with pytest.raises(RunBusyError, match="build-agent-7"):
            store.acquire(record.id)
        stale = datetime.now(UTC) - timedelta(seconds=STALE_AFTER_S + 1)
        with raw(db) as conn:
            conn.execute("UPDATE leases SET heartbeat = ?", (stale.isoformat(),))
            conn.commit()
        assert store.get_run(record.id).status == "interrupted"
        assert store.acquire(record.id).host == HOST


def test_of_two_processes_taking_a_run_at_once_exactly_one_gets_it(tmp_path: Path) -> None:
    db = tmp_path / "runs.db"
    with RunStore(db) as store:
        store.create_run(make_run())
    barrier = threading.Barrier(2)
    outcomes: list[str] = []

    def take(pid: int) -> None:
        with RunStore(db) as store:
            barrier.wait(timeout=30)
            try:
                store.acquire(make_run().id, pid=pid)
                outcomes.append("took it")
            except RunBusyError:
                outcomes.append("refused")

    threads = [threading.Thread(target=take, args=(pid,)) for pid in (os.getpid(), os.getppid())]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    assert sorted(outcomes) == ["refused", "took it"]


def test_the_heartbeat_renews_the_lease_and_notices_a_takeover(tmp_path: Path) -> None:
    db = tmp_path / "runs.db"
    record = make_run()
    lost = threading.Event()
    with RunStore(db) as store:
        store.create_run(record)
        lease = store.acquire(record.id)
        with store.heartbeat(lease, every=0.01, on_lost=lost.set):
            first = store.owner(record.id)
            assert first is not None

            def renewed() -> bool:
                now = store.owner(record.id)
                return now is not None and now.heartbeat > first.heartbeat

            deadline = time.monotonic() + 30
            while not renewed():
                assert time.monotonic() < deadline
                time.sleep(0.01)
            with raw(db) as conn:  # another process took the run over
                conn.execute("UPDATE leases SET token = 'someone else'")
                conn.commit()
            assert lost.wait(timeout=30)
        # The lease is not this owner's any more: finishing changes nothing.
        assert not store.finish(lease, "completed")
        assert store.get_run(record.id).status == "running"


def test_an_old_store_gets_leases_the_new_statuses_and_where_imported_runs_came_from(tmp_path: Path) -> None:
    db = tmp_path / "runs.db"
    with closing(sqlite3.connect(db, isolation_level=None)) as conn:
        assert migrate(conn, db, MIGRATIONS[:3]) == ["m001_tables", "m002_immutability", "m003_indexes"]
        for run_id, status, note in (
            ("20261101-090000-aaaaaa", "incomplete", "imported from 20250101-000000-abcdef: nightly"),
            ("20261102-090000-bbbbbb", "pending", "imported from 20250101-000000-fedcba"),
            ("20261103-090000-cccccc", "completed", "my note"),
        ):
            row = make_run(run_id)
            snapshot = _SNAPSHOTS.dump_json(row.snapshot, exclude_unset=True).decode()
            conn.execute(
                "INSERT INTO runs (id, created, status, note, suite_hash, snapshot, settings, versions, plan) "
                "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (run_id, T0.isoformat(), status, note, "h1", snapshot, row.settings.model_dump_json(), "{}", "[]"),
            )
    with RunStore(db) as store:
        runs = {run.id: run for run in store.list_runs()}
    assert [(r.status, r.imported_from) for _, r in sorted(runs.items())] == [
        ("interrupted", "20250101-000000-abcdef"),
        ("interrupted", "20250101-000000-fedcba"),
        ("completed", None),
    ]
    with raw(db) as conn:
        assert sorted(row[0] for row in conn.execute("SELECT status FROM runs")) == [
            "completed", "interrupted", "interrupted"
        ]  # fmt: skip
        with pytest.raises(sqlite3.IntegrityError, match="immutable"):
            conn.execute("UPDATE runs SET imported_from = 'elsewhere'")


# --- read-only stores


def make_read_only(db: Path) -> None:
    """chmod a-w the store and its folder. Tests run as root, whom permissions do not stop; the store counts
    the missing write bits as read-only for root too (see ``writable``), so this is the real path either way."""
    db.chmod(0o444)
    db.parent.chmod(0o555)


@pytest.fixture
def read_only_store(tmp_path: Path) -> Iterator[Path]:
    db = tmp_path / "ro" / "runs.db"
    record = make_run()
    with RunStore(db) as store:
        store.create_run(record)
        store.save_result(make_result(record.id, KEYS[0]))
    make_read_only(db)
    try:
        yield db
    finally:
        db.parent.chmod(0o755)
        db.chmod(0o644)


def test_a_read_only_store_can_be_read_and_says_so_when_written(read_only_store: Path) -> None:
    before = read_only_store.read_bytes()
    with RunStore(read_only_store) as store:
        assert store.read_only
        assert [run.id for run in store.list_runs()] == [make_run().id]
        assert store.get_run("latest").id == make_run().id
        assert [r.key for r in store.results(make_run().id)] == [KEYS[0]]
        for write in (
            lambda: store.set_note(make_run().id, "x"),
            lambda: store.create_run(make_run("20261201-000000-ffffff")),
            lambda: store.acquire(make_run().id),
        ):
            with pytest.raises(StoreError, match="is read-only"):
                write()
    assert read_only_store.read_bytes() == before


def test_an_older_read_only_store_is_read_without_migrating_it(tmp_path: Path) -> None:
    db = tmp_path / "ro" / "runs.db"
    with closing(sqlite3.connect(_mkdir(db), isolation_level=None)) as conn:
        migrate(conn, db, MIGRATIONS[:3])
    with RunStore(db) as store:  # migrate it fully, then take the newest migration back out by hand
        store.create_run(make_run(status="running"))
    with raw(db) as conn:
        conn.execute("DROP TABLE cassettes")
        conn.execute("DROP TABLE reviews")
        conn.execute("DROP TABLE leases")
        conn.execute("DROP TRIGGER runs_keep_where_from")
        conn.execute("ALTER TABLE runs DROP COLUMN imported_from")
        conn.execute("UPDATE runs SET status = 'incomplete', note = 'imported from 20250101-000000-abcdef'")
        conn.execute("DELETE FROM migrations WHERE name IN ('m004_leases', 'm005_cassettes', 'm006_reviews')")
        conn.commit()
    make_read_only(db)
    try:
        with RunStore(db) as store:
            run = store.get_run("latest")
            assert (run.status, run.imported_from) == ("interrupted", "20250101-000000-abcdef")
            assert store.owner(run.id) is None
            assert store.list_reviews(run.id) == []
        assert [name for name, _ in migration_rows(db)] == ["m001_tables", "m002_immutability", "m003_indexes"]
    finally:
        db.parent.chmod(0o755)
        db.chmod(0o644)


def _mkdir(db: Path) -> Path:
    db.parent.mkdir(parents=True, exist_ok=True)
    return db


def test_results_are_read_a_few_at_a_time_in_plan_order(tmp_path: Path) -> None:
    record = make_run()
    with RunStore(tmp_path / "runs.db") as store:
        store.create_run(record)
        for key in ["extra", *reversed(KEYS)]:  # stored out of plan order, one key not in the plan
            store.save_result(make_result(record.id, key))
        streamed = [stored.key for stored in store.iter_results(record.id, batch=2)]
        assert streamed == [*KEYS, "extra"]
        assert [stored.key for stored in store.results(record.id)] == streamed


def test_a_summary_stored_by_an_older_version_still_reads(tmp_path: Path) -> None:
    record = make_run()
    older = '{"total": 2, "passed": 1, "failed": 1, "error": 0, "unsure": 0, "correctness": 0.5, "duration_s": 4.0, '
    older += '"usage": {"judge": {"calls": 3, "prompt_tokens": 5, "completion_tokens": 1, "cost": null}}}'
    with RunStore(tmp_path / "runs.db") as store:
        store.create_run(record)
    with raw(tmp_path / "runs.db") as conn:
        conn.execute("UPDATE runs SET totals = ? WHERE id = ?", (older, record.id))
        conn.commit()
    with RunStore(tmp_path / "runs.db") as store:
        totals = store.get_run(record.id).totals
    assert totals is not None
    assert not totals.current  # a reader recomputes what it lacks (metrics.summarized)
    assert (totals.passed, totals.failed, totals.duration_s) == (1, 1, 4.0)
    assert totals.usage["judge"] == Usage(calls=3, prompt_tokens=5, completion_tokens=1, cost=None)
    # Stored before answers from the request cache were counted apart: it has none, and all were sent.
    assert (totals.usage["judge"].cached_calls, totals.usage["judge"].requests) == (0, 3)


def _open_when_all_are_ready(path: str, barrier: Any, said: Any) -> None:
    barrier.wait()
    try:
        with RunStore(path) as store:
            store.list_runs()
        said.put("ok")
    except Exception as exc:  # reported to the test, which names it
        said.put(f"{type(exc).__name__}: {exc}")


def test_processes_opening_one_new_store_at_once_all_get_it(tmp_path: Path) -> None:
    """Workers creating one new store at the same moment (pytest -n, CI jobs): SQLite refuses the switch to its
    WAL journal at once, without waiting, while another connection opens the file; the store waits instead."""
    context = multiprocessing.get_context("fork")
    said = context.Queue()
    for round_ in range(25):
        path = str(tmp_path / f"runs{round_}.db")
        barrier = context.Barrier(4)
        workers = [context.Process(target=_open_when_all_are_ready, args=(path, barrier, said)) for _ in range(4)]
        for worker in workers:
            worker.start()
        for worker in workers:
            worker.join(60)
        answers = [said.get(timeout=10) for _ in workers]
        assert answers == ["ok"] * 4, answers
