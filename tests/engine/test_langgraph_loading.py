"""LangGraph's graph is imported in a thread while a run's first turns go (``simulator.engine._imports``); the
process never exits while that import is half done."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

EXIT_WHILE_LOADING = """
import sys, time
from pathlib import Path
import simulator.engine._imports as imports

load = imports._load

def slow(on_loaded):
    time.sleep(1.0)  # the import is still going when the program ends
    load(on_loaded)
    Path(sys.argv[1]).write_text("loaded")

imports._load = slow
imports.load_graph()
print("leaving", flush=True)
"""


def test_the_process_waits_at_exit_for_the_langgraph_import_to_finish(tmp_path: Path) -> None:
    """A run of one short conversation can end before the import has: the process then lets it finish before
    the interpreter shuts down. Stopped half-way (a daemon thread), it kept the interpreter's import lock, and
    litellm's clients, which import in their ``__del__`` at shutdown, waited for it forever (seen in 2 of 6 runs
    of ``simulator run`` with a litellm judge)."""
    marker = tmp_path / "loaded.txt"
    result = subprocess.run(
        [sys.executable, "-c", EXIT_WHILE_LOADING, str(marker)],
        cwd=ROOT, capture_output=True, text=True, timeout=120, check=False,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )  # fmt: skip
    assert result.returncode == 0, result.stderr[-3000:]
    assert result.stdout.strip() == "leaving"
    assert marker.read_text() == "loaded"
