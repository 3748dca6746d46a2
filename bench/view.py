"""How long ``simulator view`` takes to answer on a large store: the runs list (page and JSON) over 100 runs and
a run page of 1,000 results, with 50,000 results stored in all.

The store is built cheaply but from real data: ``suites/demo`` runs once offline (scripted users, no judge model;
12 conversations of every kind: golden, scenario, simulation; pass, fail and unsure), and its run and results
are the templates. Each of ``--runs`` runs is the demo run's record under a new id and creation time, with a
plan of its own size (the demo's 12 items repeated: keys ``suite:case:persona:repeat`` as planning makes them),
a note and an agent version of its own, and its totals computed from its results by the function a run's own
summary comes from (``simulator.metrics.summarized``); it is stored with ``RunStore.create_run``. Its results are
the demo's, stored by one ``INSERT ... SELECT`` per template that writes the same columns ``RunStore.save_result``
writes (the run id, the key and the repeat changed; the result's JSON as stored, its ``repeat`` set). One run has
``--big`` results, the others share the rest of ``--results``.

Server time is the time inside the app: the Starlette app is called in-process through httpx's ASGITransport,
and a thin ASGI wrapper times each call from the request's arrival to the end of the response (no socket, no
client). Each path gets a warm-up request and then ``--repeat`` timed ones; the median is reported. The floor,
timed in the same sitting, is the app's answer for a static asset (the middleware, routing and the CSP headers
alone), and the store reads beneath the two pages (every run's record; the big run's results) are timed alone.

    python bench/view.py [--runs 100] [--results 50000] [--big 1000] [--repeat 7]

Ends with one line: BENCH view_runs_ms=A view_run_page_ms=B view_runs_json_ms=C runs=N results=M
(target: each under 300 ms).
"""

from __future__ import annotations

import argparse
import asyncio
import os
import shutil
import statistics
import tempfile
import time
from collections.abc import Awaitable, Callable, MutableMapping
from datetime import timedelta
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
TARGET_MS = 300.0

Scope = MutableMapping[str, Any]
Asgi = Callable[[Scope, Callable[[], Awaitable[Any]], Callable[[Any], Awaitable[None]]], Awaitable[None]]


def demo_run(work: Path, db: Path) -> str:
    """Run the demo suite once, offline, into ``db``; its run id."""
    import simulator

    shutil.copytree(ROOT / "suites" / "demo", work / "suites" / "demo")
    shutil.copytree(ROOT / "personas", work / "personas")
    (work / ".git").mkdir()
    os.chdir(work)
    return simulator.run("suites/demo", checkpoints=False, cache=False, db=db, seed=1).id


def sizes(runs: int, results: int, big: int) -> list[int]:
    """How many results each run holds: the first ``big``, the others an even share of the rest."""
    rest, others = results - big, runs - 1
    return [big] + [rest // others + (1 if n < rest % others else 0) for n in range(others)]


def fill(db: Path, template_id: str, counts: list[int]) -> list[str]:
    """Store a run per count, copies of the template run and its results (see the module's docstring); their
    ids, the first the big run."""
    from simulator.metrics import summarized
    from simulator.models.run import Plan, PlanItem, derived_key
    from simulator.store import RunStore

    with RunStore(db) as store:
        template = store.get_run(template_id)
        results = store.results(template_id)
        by_key = {result.key: result for result in results}
        items = [item for item in template.plan if item.key in by_key]
        conn = store._conn  # the bench writes the results the way save_result does, in one transaction
        assert conn is not None
        row_ids = dict(conn.execute('SELECT "key", id FROM results WHERE run_id = ?', (template_id,)).fetchall())
        ids: list[str] = []
        for number, count in enumerate(counts):
            run_id = f"2026{1 + number // 28:02d}{1 + number % 28:02d}-{number:06d}-bench{number % 10}"
            plan: list[PlanItem] = []
            copies = []
            for n in range(count):
                item = items[n % len(items)]
                repeat = n // len(items)
                key = derived_key(item.suite, item.case, item.persona, repeat)
                plan.append(item.model_copy(update={"key": key, "repeat": repeat}))
                copies.append(by_key[item.key].model_copy(update={"run_id": run_id, "key": key, "repeat": repeat}))
            record = template.model_copy(
                update={
                    "id": run_id,
                    "created": template.created + timedelta(hours=number),
                    "plan": Plan(plan),
                    "note": f"nightly {number}: " + ("baseline" if number % 3 else "prompt v2, new refund policy"),
                    "agent_version": f"v1.{number % 7}",
                }
            )
            store.create_run(summarized(record, copies, recompute=True))
            with conn:
                conn.executemany(
                    'INSERT INTO results (run_id, "key", suite, case_name, persona, "repeat", outcome, duration_s, '
                    "finished, result) SELECT ?, ?, suite, case_name, persona, ?, outcome, duration_s, finished, "
                    "replace(result, '\"repeat\":0,', ?) FROM results WHERE id = ?",
                    [
                        (run_id, copy.key, copy.repeat, f'"repeat":{copy.repeat},', row_ids[items[n % len(items)].key])
                        for n, copy in enumerate(copies)
                    ],
                )
            ids.append(run_id)
        store.delete_run(template_id)
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    return ids


def timed(app: Asgi, seconds: list[float]) -> Asgi:
    """``app``, appending the seconds each HTTP call spends inside it to ``seconds``."""

    async def wrapper(
        scope: Scope, receive: Callable[[], Awaitable[Any]], send: Callable[[Any], Awaitable[None]]
    ) -> None:
        started = time.perf_counter()
        await app(scope, receive, send)
        if scope["type"] == "http":
            seconds.append(time.perf_counter() - started)

    return wrapper


async def measure(app: Any, paths: dict[str, str], repeat: int) -> dict[str, float]:
    """The median milliseconds inside ``app`` of each of ``paths`` (a name each), after one warm-up each."""
    import httpx

    seconds: list[float] = []
    transport = httpx.ASGITransport(app=timed(app, seconds))
    medians: dict[str, float] = {}
    async with httpx.AsyncClient(transport=transport, base_url="http://127.0.0.1:8710") as client:
        for name, path in paths.items():
            response = await client.get(path)
            if response.status_code != 200:
                raise SystemExit(f"{path} answered {response.status_code}: {response.text[:300]}")
            seconds.clear()
            sizes_kb = len(response.content) / 1024
            for _ in range(repeat):
                (await client.get(path)).raise_for_status()
            medians[name] = statistics.median(seconds) * 1000
            spread = f"{min(seconds) * 1000:.1f}-{max(seconds) * 1000:.1f}"
            print(
                f"{name:>10}: {medians[name]:7.1f} ms median ({spread} ms, {repeat} requests), "
                f"{sizes_kb:.0f} KB, {path}"
            )
    return medians


def store_reads(db: Path, big: str, repeat: int) -> None:
    """The store reads beneath the pages, timed alone (median ms)."""
    import simulator

    def median_ms(call: Callable[[], object]) -> float:
        times = []
        for _ in range(repeat):
            started = time.perf_counter()
            call()
            times.append(time.perf_counter() - started)
        return statistics.median(times) * 1000

    every_run = median_ms(lambda: simulator.list_runs(db=db, limit=None))
    results = median_ms(lambda: simulator.read_run(big, db=db))
    print(f"store alone: every run's record {every_run:.1f} ms, the big run with its results {results:.1f} ms")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=100)
    parser.add_argument("--results", type=int, default=50_000)
    parser.add_argument("--big", type=int, default=1_000)
    parser.add_argument("--repeat", type=int, default=7)
    args = parser.parse_args()
    if args.runs < 2 or args.results < args.big + args.runs - 1:
        raise SystemExit("need at least 2 runs and a result for every run besides the big one")
    os.environ.setdefault("LITELLM_OFFLINE_MODE", "true")
    from simulator.viewer import create_app

    with tempfile.TemporaryDirectory() as folder:
        work = Path(folder)
        db = work / "runs.db"
        started = time.perf_counter()
        template = demo_run(work, db)
        ids = fill(db, template, sizes(args.runs, args.results, args.big))
        size_mb = db.stat().st_size / 2**20
        print(
            f"store: {len(ids)} runs, {args.results} results, {size_mb:.0f} MB, "
            f"built in {time.perf_counter() - started:.1f} s"
        )
        app = create_app(db)
        paths = {
            "floor": "/static/view.css",
            "runs": "/",
            "runs_json": "/api/runs",
            "run_page": f"/runs/{ids[0]}",
        }
        ms = asyncio.run(measure(app, paths, args.repeat))
        store_reads(db, ids[0], args.repeat)
        missed = [name for name in ("runs", "runs_json", "run_page") if ms[name] > TARGET_MS]
        print(f"target {TARGET_MS:.0f} ms: " + (f"missed by {', '.join(missed)}" if missed else "met"))
        print(
            f"BENCH view_runs_ms={ms['runs']:.1f} view_run_page_ms={ms['run_page']:.1f} "
            f"view_runs_json_ms={ms['runs_json']:.1f} floor_ms={ms['floor']:.1f} runs={len(ids)} results={args.results}"
        )


if __name__ == "__main__":
    main()
