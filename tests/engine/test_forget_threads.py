"""Deleting a run's checkpoints: only the threads of that run, whatever characters its id holds."""

from __future__ import annotations

import sqlite3
from contextlib import closing
from pathlib import Path

from simulator.engine import forget_threads


def test_only_the_threads_with_the_prefix_are_forgotten(tmp_path: Path) -> None:
    path = tmp_path / "runs-checkpoints.db"
    with closing(sqlite3.connect(path)) as conn:
        for table in ("checkpoints", "writes"):
            conn.execute(f"CREATE TABLE {table} (thread_id TEXT)")
            # "_" and "%" are LIKE wildcards: another run whose id differs there must keep its checkpoints
            conn.executemany(f"INSERT INTO {table} VALUES (?)", [("run_1%:a",), ("run_1%:b",), ("runX1%:a",)])
        conn.commit()
    forget_threads(path, "run_1%:")
    with closing(sqlite3.connect(path)) as conn:
        for table in ("checkpoints", "writes"):
            assert [row[0] for row in conn.execute(f"SELECT thread_id FROM {table}")] == ["runX1%:a"]


def test_a_missing_file_or_table_is_nothing_to_forget(tmp_path: Path) -> None:
    forget_threads(tmp_path / "none.db", "r:")
    assert not (tmp_path / "none.db").exists()
    path = tmp_path / "empty.db"
    sqlite3.connect(path).close()
    forget_threads(path, "r:")
