"""What recording costs and what a replay takes, on the demo suites (offline: scripted user, no judge model).

Runs ``suites/demo`` with ``--repeat R`` (12 conversations a repeat) without and with ``record``, both without
checkpoints (a recorded run takes none: see RunSettings.record), alternating, best of ``--runs``; then replays
the recorded run (best of ``--runs`` too). Reports the seconds of each, the recording's overhead as a ratio
(this machine's timings drift, so compare within one run), and the mean compressed size of a cassette.

    python bench/replay.py [--repeat R] [--runs N]

Ends with one line: BENCH conversations=C plain_s=P record_s=R record_ratio=X replay_s=S cassette_bytes=B
"""

from __future__ import annotations

import argparse
import os
import shutil
import sqlite3
import tempfile
import time
from contextlib import closing
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=10)
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    os.environ.setdefault("LITELLM_OFFLINE_MODE", "true")
    import simulator

    with tempfile.TemporaryDirectory() as folder:
        work = Path(folder)
        (work / ".git").mkdir()
        shutil.copytree(ROOT / "suites" / "demo", work / "suites" / "demo")
        shutil.copytree(ROOT / "personas", work / "personas")
        os.chdir(work)
        db = work / "runs.db"
        best = {False: float("inf"), True: float("inf")}
        recorded_id = ""
        conversations = 0
        for _ in range(args.runs):
            for record in (False, True):
                started = time.perf_counter()
                outcome = simulator.run(
                    "suites/demo", repeat=args.repeat, record=record, checkpoints=False, cache=False, db=db, seed=1
                )
                best[record] = min(best[record], time.perf_counter() - started)
                conversations = len(outcome.record.plan)
                if record:
                    recorded_id = outcome.id
        replay_s = float("inf")
        for _ in range(args.runs):
            started = time.perf_counter()
            simulator.replay(recorded_id, db=db)
            replay_s = min(replay_s, time.perf_counter() - started)
        with closing(sqlite3.connect(db)) as conn:
            count, size = conn.execute(
                "SELECT COUNT(*), SUM(LENGTH(data)) FROM cassettes WHERE run_id = ?", (recorded_id,)
            ).fetchone()
    print(
        f"{conversations} conversations: plain {best[False]:.2f} s, recorded {best[True]:.2f} s, "
        f"replay {replay_s:.2f} s"
    )
    print(
        f"BENCH conversations={conversations} plain_s={best[False]:.3f} record_s={best[True]:.3f} "
        f"record_ratio={best[True] / best[False]:.2f} replay_s={replay_s:.3f} cassette_bytes={size // count}"
    )


if __name__ == "__main__":
    main()
