"""Simulator against a bare asyncio + openai SDK loop, side by side, in one process tree on one fake server.

The workload: N conversations x T user turns with an LLM user, an ``http`` agent and a judge, all
answered by one local OpenAI-compatible fake server (``bench/_server.py``, its own process) after a fixed
latency, at a given concurrency. Three systems run it, each in its own subprocess, one after the other:

* ``bare``: a bare asyncio + ``openai.AsyncOpenAI`` loop doing exactly the 2T+1-request conversation (user
  turn, agent turn, x T, then one judge call), N conversations bounded by a semaphore;
* ``inproc``: ``simulator.run(...)`` through the public API on a generated suite (a ``scenario`` case, LLM user
  ``openai/peer-user`` and judge ``openai/peer-judge`` on the fake server, ``http`` agent ``peer-agent``,
  ``max_turns: T``, no request cache, checkpoints on) in a small ``python -c`` script;
* ``cli``: the console script ``simulator run SUITE --repeat N --concurrency C --no-cache`` end to end.

Each is measured from outside: wall of the process, its CPU (user+sys) and peak RSS from ``os.wait4`` (the
rusage of that one child), requests per conversation by role and the most in flight (per role) from the
server's ``/stats`` (roles told apart by model name), and start-up = the server's first request time minus the
spawn time. ``bare`` and ``inproc`` also report their own wall and CPU around the run itself (imports left out: for
``inproc`` that includes the runner that ``simulator.run`` imports on first use and LangGraph's graph, which a
run imports in a thread while its first turns run; what the run imports or loads itself, the model backend's, is
in). The console script's row is the whole process: there the overlap shows.

The latency-bound ideal comes from the 13-request workload (2T+1 requests in one sequential chain
per conversation): ideal = (2T+1) x latency x N / concurrency. Ratios: each wall / ideal (``inproc`` and
``bare`` from their run, ``cli`` from the whole process, start-up and shutdown included), Simulator / bare,
and each against its own ideal (its requests per conversation instead of 2T+1). At 0 ms the ideal is 0:
only the wall ratio to ``bare`` and CPU per request mean anything there.

``LITELLM_OFFLINE_MODE=true`` is set for the children: it only keeps litellm from downloading its price list
and tokenizers; requests to ``api_base`` (the fake server) go out as usual.

    python bench/peers.py [--sizes 40x6,500x6] [--latencies 0.2,0] [--concurrency 20] [--full]
        [--role-concurrency K] [--keep DIR] [--sittings S] [--timeline] [--failing]

With ``--failing`` the fake server's judge finds no goal satisfied (``bench/_server.py --unsatisfied``), so every
conversation fails (Simulator's judge may then also be asked about the simulated user's fidelity); the BENCH
line then starts with ``failing=1``.

With ``--timeline`` the server marks its replies and logs every request (``bench/_server.py --timeline``), and each
table is followed by where each system's wall went: run start to the first request, the client's gap between a
reply and the conversation's next request (by role), the server's own time, each conversation's length, the
gap between a conversation's end and the next one's start, whether a conversation's two judge calls ran at once,
and the tail from the last reply to the end of the run.

With ``--sittings S`` every workload runs S times (the sittings one after another, so a burst of load on a
shared machine hits one sitting, not one system) and the tables and the BENCH line give the medians.

Ends with one line for the 40x6 200 ms workload (the ``_0ms`` fields from 40x6 at 0 ms, and fields suffixed
``_NxT_Lms`` for any other workload run):
BENCH requests_per_conv=R ratio_ideal_inproc=A ratio_ideal_cli=B cpu_ms_per_req=C cpu_ms_per_req_bare=D
peak_mb=M startup_s=S ratio_ideal_bare=I ratio_ideal_bare_process=P ratio_ideal_cli_to_bare_process=Q
ratio_bare_inproc=E cpu_ms_per_req_0ms=F cpu_ms_per_req_bare_0ms=G ratio_bare_0ms=H

``ratio_ideal_bare_process`` measures the bare loop as the console script is measured, its whole process (its
``import openai`` and its shutdown) against the ideal; ``ratio_ideal_cli_to_bare_process`` is the console script's
wall over that one.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from _server import FakeServer, child_environment  # bench/_server.py: the shared fake server

ROLES = ("user", "agent", "judge")

BARE = """
import asyncio, json, sys, time
started = time.perf_counter()
from openai import AsyncOpenAI
imported = time.perf_counter() - started
base_url, conversations, turns, concurrency = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])

def schema(name, properties):
    body = {"type": "object", "properties": properties, "required": list(properties), "additionalProperties": False}
    return {"type": "json_schema", "json_schema": {"name": name, "schema": body, "strict": True}}

USER = schema("UserMove", {"message": {"type": "string"}, "done": {"type": "boolean"}, "reason": {"type": "string"}})
JUDGE = schema("GoalSatisfactionReply", {"satisfied": {"type": "boolean"}, "reason": {"type": "string"}})
GOAL = "Find out where order ORD-1 is and when it arrives."

async def conversation(client, gate):
    async with gate:
        history = []
        for _ in range(turns):
            seen = [{"role": "assistant" if m["role"] == "user" else "user", "content": m["content"]} for m in history]
            reply = await client.chat.completions.create(
                model="peer-user", response_format=USER,
                messages=[{"role": "system", "content": f"You are a customer. Your goal: {GOAL}"}, *seen],
            )
            move = json.loads(reply.choices[0].message.content)
            history.append({"role": "user", "content": move["message"]})
            reply = await client.chat.completions.create(model="peer-agent", messages=history)
            history.append({"role": "assistant", "content": reply.choices[0].message.content or ""})
        transcript = "\\n".join(f"{m['role']}: {m['content']}" for m in history)
        reply = await client.chat.completions.create(
            model="peer-judge", response_format=JUDGE,
            messages=[{"role": "user", "content": f"Goal: {GOAL}\\nConversation:\\n{transcript}\\nSatisfied?"}],
        )
        return json.loads(reply.choices[0].message.content)["satisfied"]

async def main():
    client = AsyncOpenAI(base_url=base_url, api_key="not-a-real-key", max_retries=2)
    gate = asyncio.Semaphore(concurrency)
    began, wall, cpu = time.time(), time.perf_counter(), time.process_time()
    verdicts = await asyncio.gather(*(conversation(client, gate) for _ in range(conversations)))
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    ended = time.time()
    await client.close()
    print(json.dumps({"wall": wall, "cpu": cpu, "import_s": imported, "outcomes": {"done": len(verdicts)},
                      "began": began, "ended": ended}))

asyncio.run(main())
"""

INPROC = """
import json, sys, time
started = time.perf_counter()
import simulator
run = simulator.run  # the lazy attribute imports the runner: an import, left out like the others
import langgraph.graph  # which a run otherwise imports in a thread while its first turns run: left out too
imported = time.perf_counter() - started
suite, db, conversations, concurrency = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
began, wall, cpu = time.time(), time.perf_counter(), time.process_time()
outcome = run([suite], db=db, repeat=conversations, concurrency=concurrency, seed=1, cache=False)
wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
ended = time.time()
totals = outcome.record.totals
counts = {k: getattr(totals, k) for k in ("passed", "failed", "error", "unsure")} if totals else {}
print(json.dumps({"wall": wall, "cpu": cpu, "import_s": imported, "status": outcome.record.status,
                  "outcomes": counts, "run": outcome.id, "began": began, "ended": ended}))
"""


@dataclass
class Measured:
    """One system's run of one workload."""

    system: str
    exit_code: int
    wall_process: float
    cpu_process: float
    peak_mb: float
    startup_s: float | None
    requests: dict[str, int]
    max_in_flight: dict[str, int]
    max_in_flight_total: int
    schemas: dict[str, int]
    wall_run: float | None = None
    cpu_run: float | None = None
    report: dict[str, Any] = field(default_factory=dict)
    timeline: list[dict[str, Any]] = field(default_factory=list)
    spawned: float = 0.0
    exited: float = 0.0
    first_request_s: float | None = None  # with --timeline: the run's start (its own clock) to its first request

    @property
    def total(self) -> int:
        return sum(self.requests.values())

    @property
    def wall(self) -> float:
        """The run's own wall when the child reported it, else the whole process's."""
        return self.wall_run if self.wall_run is not None else self.wall_process

    @property
    def cpu(self) -> float:
        return self.cpu_run if self.cpu_run is not None else self.cpu_process


def _measure(system: str, command: list[str], server: FakeServer, env: dict[str, str], cwd: Path) -> Measured:
    server.stats()  # reset the counts
    out_path, err_path = cwd / f"{system}.out", cwd / f"{system}.err"
    with out_path.open("wb") as out, err_path.open("wb") as err:
        spawned, wall = time.time(), time.perf_counter()
        process = subprocess.Popen(command, stdout=out, stderr=err, env=env, cwd=cwd)
        _, status, usage = os.wait4(process.pid, 0)  # the rusage of this one child (and what it waited for)
        wall, exited = time.perf_counter() - wall, time.time()
    process.returncode = os.waitstatus_to_exitcode(status)
    stats = server.stats()
    timeline = server.timeline_log() if server.timeline else []
    stdout = out_path.read_text(encoding="utf-8", errors="replace")
    report: dict[str, Any] = {}
    for line in reversed(stdout.splitlines()):
        if line.startswith("{"):
            try:
                report = json.loads(line)
            except ValueError:
                continue
            break
    if process.returncode not in (0, 1) or (system != "cli" and not report):
        tail = err_path.read_text(encoding="utf-8", errors="replace")[-3000:]
        raise SystemExit(f"{system} exited with {process.returncode}:\n{stdout[-2000:]}\n{tail}")
    first = stats.get("first_request")
    return Measured(
        system=system, exit_code=process.returncode, wall_process=wall,
        cpu_process=usage.ru_utime + usage.ru_stime, peak_mb=usage.ru_maxrss / 1024,
        startup_s=(first - spawned) if first else None, requests=stats["requests"],
        max_in_flight=stats["max_in_flight_by_role"], max_in_flight_total=stats["max_in_flight"],
        schemas=stats["schemas"],
        wall_run=report.get("wall"), cpu_run=report.get("cpu"), report=report,
        timeline=timeline, spawned=spawned, exited=exited,
        first_request_s=(
            min(entry["arrived"] for entry in timeline) - report["began"] if timeline and "began" in report else None
        ),
    )  # fmt: skip


def _spread(values: list[float]) -> str:
    """``median / mean / p90 / max`` of ``values`` in milliseconds."""
    if not values:
        return "-"
    ordered = sorted(values)
    p90 = ordered[min(len(ordered) - 1, int(0.9 * len(ordered)))]
    return (
        f"{statistics.median(ordered) * 1000:7.1f} {statistics.fmean(ordered) * 1000:7.1f} "
        f"{p90 * 1000:7.1f} {ordered[-1] * 1000:7.1f}"
    )


def _print_timeline(row: Measured, concurrency: int) -> None:
    """Where one system's wall went, from the server's request log (``bench/_server.py --timeline``)."""
    log = sorted(row.timeline, key=lambda r: r["serial"])
    if not log:
        return
    began = row.report.get("began", row.spawned)
    ended = row.report.get("ended", row.exited)
    by_serial = {r["serial"]: r for r in log}
    conversation: dict[int, int] = {}
    for r in log:  # a request's conversation is its parent's (the reply it follows); a first request starts one
        parent = r["parent"]
        conversation[r["serial"]] = conversation.get(parent, r["serial"]) if parent else r["serial"]
    chains: dict[int, list[dict[str, Any]]] = {}
    for r in log:
        chains.setdefault(conversation[r["serial"]], []).append(r)
    gaps: dict[str, list[float]] = {}
    for r in log:
        parent = by_serial.get(r["parent"]) if r["parent"] else None
        if parent is not None:
            gaps.setdefault(f"{parent['role']} -> {r['role']}", []).append(r["arrived"] - parent["replied"])
    server_s = [r["replied"] - r["arrived"] for r in log]
    judge_offsets, overlapped, judged = [], 0, 0
    for chain in chains.values():
        judges = sorted((r for r in chain if r["role"] == "judge"), key=lambda r: r["arrived"])
        if len(judges) >= 2:
            judged += 1
            judge_offsets.append(judges[-1]["arrived"] - judges[0]["arrived"])
            overlapped += judges[-1]["arrived"] < judges[0]["replied"]
    starts = sorted(min(r["arrived"] for r in chain) for chain in chains.values())
    ends = sorted(max(r["replied"] for r in chain) for chain in chains.values())
    # A worker that finished a conversation starts the next: the k-th start after the first wave follows
    # the k-th end (a pool of `concurrency` workers).
    handoffs = [start - end for start, end in zip(starts[concurrency:], ends, strict=False)]
    durations = [max(r["replied"] for r in chain) - min(r["arrived"] for r in chain) for chain in chains.values()]
    hops = [len(chain) for chain in chains.values()]
    first, last = min(r["arrived"] for r in log), max(r["replied"] for r in log)
    print(f"  timeline of {_NAMES[row.system]} ({len(chains)} conversations, {len(log)} requests):")
    print(f"    {'':<36}{'median':>8}{'mean':>8}{'p90':>8}{'max':>8}  (ms)")
    print(f"    {'start of the run -> first request':<36}{(first - began) * 1000:8.1f}")
    print(f"    {'first wave: run start -> 1st request':<36}{_spread([s - began for s in starts[:concurrency]])}")
    for kind, values in sorted(gaps.items()):
        print(f"    {'client gap ' + kind:<36}{_spread(values)}   n={len(values)}")
    print(f"    {'server time per request':<36}{_spread(server_s)}")
    print(f"    {'conversation (1st request->last reply)':<36}{_spread(durations)}   hops {statistics.median(hops):g}")
    print(f"    {'handoff: conv end -> next conv start':<36}{_spread(handoffs)}   n={len(handoffs)}")
    if judged:
        at_once = f"concurrent in {overlapped} of {judged}"
        print(f"    {'2nd judge call after the 1st':<36}{_spread(judge_offsets)}   {at_once}")
    print(f"    {'last reply -> end of the run':<36}{(ended - last) * 1000:8.1f}")
    print(f"    {'run wall':<36}{(ended - began) * 1000:8.1f}")


def _suite(root: Path, base_url: str, turns: int, role_concurrency: int | None) -> Path:
    limit = f"    concurrency: {role_concurrency}\n" if role_concurrency else ""
    roles = "".join(
        f"  {role}:\n    model: openai/peer-{role}\n    api_base: {base_url}\n    api_key_env: BENCH_FAKE_KEY\n{limit}"
        for role in ("user", "judge")
    )
    path = root / "peers.yaml"
    path.write_text(
        f"""name: peers
agent:
  type: http
  base_url: {base_url}
  model: peer-agent
  timeout: 60
models:
{roles}cases:
  - kind: scenario
    name: order_status
    goal: Find out where order ORD-1 is and when it arrives.
    max_turns: {turns}
""",
        encoding="utf-8",
    )
    return path


def _console_script() -> str:
    beside = Path(sys.executable).parent / "simulator"
    found = str(beside) if beside.exists() else shutil.which("simulator")
    if not found:
        raise SystemExit("the `simulator` console script is not installed (pip install -e .)")
    return found


def _workload(
    conversations: int,
    turns: int,
    latency: float,
    *,
    concurrency: int,
    role_concurrency: int | None,
    root: Path,
    timeline: bool = False,
    failing: bool = False,
) -> list[Measured]:
    env = child_environment()
    where = root / f"{conversations}x{turns}-{int(latency * 1000)}ms"
    where.mkdir()
    with FakeServer(latency=latency, timeline=timeline, satisfied=not failing) as server:
        suite = _suite(where, server.base_url, turns, role_concurrency)
        n, c = str(conversations), str(concurrency)
        runs = [
            ("bare", [sys.executable, "-c", BARE, server.base_url, n, str(turns), c]),
            ("inproc", [sys.executable, "-c", INPROC, str(suite), str(where / "inproc.db"), n, c]),
            (
                "cli",
                [_console_script(), "run", str(suite), "--repeat", n, "--concurrency", c, "--no-cache",
                 "--seed", "1", "--db", str(where / "cli.db")],
            ),
        ]  # fmt: skip
        return [_measure(system, command, server, env, where) for system, command in runs]


_NAMES = {"bare": "bare asyncio + openai SDK", "inproc": "Simulator (in-process)", "cli": "Simulator console script"}


def _ratio(value: float, ideal: float) -> str:
    return f"{value / ideal:.2f}" if ideal > 0 else "n/a"


def _print_table(
    conversations: int, turns: int, latency: float, concurrency: int, rows: list[Measured], *, title: str = ""
) -> None:
    chain = 2 * turns + 1
    ideal = chain * latency * conversations / concurrency
    print(
        f"\n{title}{conversations} conversations x {turns} user turns, latency {latency * 1000:.0f} ms, concurrency "
        f"{concurrency}: ideal ({chain}-request chain) {ideal:.2f} s"
    )
    header = (
        f"{'system':<27}{'req/conv u/a/j':>21}{'wall s':>8}{'/ideal':>8}{'/own':>7}{'/bare':>7}"
        f"{'CPU ms/req':>12}{'(process)':>10}{'peak MB':>9}{'start s':>9}{'in flight u/a/j':>17}  outcomes"
    )
    print(header)
    print("-" * len(header))
    bare = rows[0]
    for row in rows:
        per = {role: row.requests.get(role, 0) / conversations for role in ROLES}
        others = {k: v for k, v in row.requests.items() if k not in ROLES}
        split = "/".join(f"{per[role]:g}" for role in ROLES) + (f" +{others}" if others else "")
        own = row.total / conversations * latency * conversations / concurrency
        flight = "/".join(str(row.max_in_flight.get(role, 0)) for role in ROLES) + f" ({row.max_in_flight_total})"
        start = f"{row.startup_s:.2f}" if row.startup_s is not None else "-"
        outcomes = row.report.get("outcomes", f"exit {row.exit_code}")
        print(
            f"{_NAMES[row.system]:<27}{row.total / conversations:>6.2f} ({split:>12}){row.wall:>8.2f}"
            f"{_ratio(row.wall, ideal):>8}{_ratio(row.wall, own):>7}{row.wall / bare.wall:>7.2f}"
            f"{row.cpu * 1000 / max(row.total, 1):>12.2f}{row.cpu_process * 1000 / max(row.total, 1):>10.2f}"
            f"{row.peak_mb:>9.0f}{start:>9}{flight:>17}  {outcomes}"
        )
    for row in rows:
        _print_timeline(row, concurrency)
    for row in rows:
        kinds = ", ".join(f"{k} {v / conversations:g}" for k, v in sorted(row.schemas.items()))
        print(f"  structured requests per conversation, {row.system}: {kinds or '-'}")
    print(
        "wall: the run itself for bare and in-process (imports left out), the whole process for the console script;"
        " CPU ms/req likewise, (process) = the whole child."
    )


def _size(text: str) -> tuple[int, int]:
    conversations, _, turns = text.lower().partition("x")
    return int(conversations), int(turns or 6)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", default="40x6", help="Comma-separated NxT workloads (default 40x6).")
    parser.add_argument("--latencies", default="0.2,0", help="Comma-separated latencies in seconds.")
    parser.add_argument("--concurrency", type=int, default=20)
    parser.add_argument("--full", action="store_true", help="Add the 500x6 workload.")
    parser.add_argument("--role-concurrency", type=int, default=None, help="Set the suite's user/judge limits.")
    parser.add_argument("--keep", type=Path, default=None, help="Keep the suites, stores and outputs here.")
    parser.add_argument(
        "--timeline", action="store_true", help="Log every request at the server; print where each wall went."
    )
    parser.add_argument(
        "--sittings", type=int, default=1, help="Run every workload this many times, interleaved; report medians."
    )
    parser.add_argument("--failing", action="store_true", help="The judge finds no goal satisfied: all fail.")
    args = parser.parse_args()
    sizes = [_size(s) for s in args.sizes.split(",") if s.strip()]
    if args.full and (500, 6) not in sizes:
        sizes.append((500, 6))
    latencies = [float(s) for s in args.latencies.split(",") if s.strip()]

    # Warm the page cache, so the first system measured does not pay the cold imports alone, and write the bytecode
    # caches as ``pip install`` does: with PYTHONDONTWRITEBYTECODE set (as on these machines) an editable install
    # compiled every Simulator module from source at each start of the console script (bench/startup.py).
    warm = child_environment()
    compile_package = (
        "import compileall, os, simulator; compileall.compile_dir(os.path.dirname(simulator.__file__), quiet=1)"
    )
    subprocess.run([sys.executable, "-c", compile_package], check=True, env=warm)
    subprocess.run([sys.executable, "-c", "import openai, litellm, simulator.runner"], check=True, env=warm)
    sittings: dict[tuple[int, int, float], list[list[Measured]]] = {}
    with tempfile.TemporaryDirectory() as tmp:
        for sitting in range(args.sittings):
            root = (args.keep or Path(tmp)) / f"sitting{sitting + 1}"
            root.mkdir(parents=True, exist_ok=True)
            for conversations, turns in sizes:
                for latency in latencies:
                    rows = _workload(
                        conversations, turns, latency,
                        concurrency=args.concurrency, role_concurrency=args.role_concurrency, root=root,
                        timeline=args.timeline, failing=args.failing,
                    )  # fmt: skip
                    sittings.setdefault((conversations, turns, latency), []).append(rows)
                    title = f"sitting {sitting + 1} of {args.sittings}: " if args.sittings > 1 else ""
                    _print_table(conversations, turns, latency, args.concurrency, rows, title=title)
    results = {key: [_median([rows[i] for rows in runs]) for i in range(3)] for key, runs in sittings.items()}
    if args.sittings > 1:
        print(f"\n===== medians of {args.sittings} sittings =====")
        for (conversations, turns, latency), rows in results.items():
            _print_table(conversations, turns, latency, args.concurrency, rows, title="median: ")
    print(f"\n{_bench_line(results, args.concurrency, failing=args.failing)}")


def _median(runs: list[Measured]) -> Measured:
    """Each figure's median over sittings (requests per role too); the last sitting's report and schemas."""

    def mid(values: list[float | None]) -> float | None:
        known = [v for v in values if v is not None]
        return statistics.median(known) if known else None

    def mid_counts(counts: list[dict[str, int]]) -> dict[str, int]:
        keys = {key for count in counts for key in count}
        return {key: round(statistics.median(count.get(key, 0) for count in counts)) for key in sorted(keys)}

    last = runs[-1]
    return Measured(
        system=last.system, exit_code=max(run.exit_code for run in runs),
        wall_process=statistics.median(run.wall_process for run in runs),
        cpu_process=statistics.median(run.cpu_process for run in runs),
        peak_mb=statistics.median(run.peak_mb for run in runs),
        startup_s=mid([run.startup_s for run in runs]),
        requests=mid_counts([run.requests for run in runs]),
        max_in_flight=mid_counts([run.max_in_flight for run in runs]),
        max_in_flight_total=round(statistics.median(run.max_in_flight_total for run in runs)),
        schemas=mid_counts([run.schemas for run in runs]),
        wall_run=mid([run.wall_run for run in runs]), cpu_run=mid([run.cpu_run for run in runs]),
        report=last.report, first_request_s=mid([run.first_request_s for run in runs]),
    )  # fmt: skip


def _bench_line(
    results: dict[tuple[int, int, float], list[Measured]], concurrency: int, *, failing: bool = False
) -> str:
    fields: list[str] = ["failing=1"] if failing else []
    main_rows = results.get((40, 6, 0.2))
    if main_rows is not None:
        bare, inproc, cli = main_rows
        ideal = 13 * 0.2 * 40 / concurrency
        fields += [
            f"requests_per_conv={inproc.total / 40:.2f}",
            f"judge_requests_per_conv={inproc.requests.get('judge', 0) / 40:.2f}",
            f"ratio_ideal_inproc={inproc.wall / ideal:.3f}",
            f"ratio_ideal_cli={cli.wall / ideal:.3f}",
            f"cpu_ms_per_req={inproc.cpu * 1000 / inproc.total:.2f}",
            f"cpu_ms_per_req_bare={bare.cpu * 1000 / bare.total:.2f}",
            f"peak_mb={inproc.peak_mb:.0f}",
            f"startup_s={cli.startup_s if cli.startup_s is not None else float('nan'):.2f}",
            f"ratio_ideal_bare={bare.wall / ideal:.3f}",
            f"ratio_ideal_bare_process={bare.wall_process / ideal:.3f}",
            f"ratio_ideal_cli_to_bare_process={cli.wall / bare.wall_process:.3f}",
            f"ratio_bare_inproc={inproc.wall / bare.wall:.3f}",
            f"cpu_ms_per_req_cli={cli.cpu * 1000 / cli.total:.2f}",
        ]
        for row in (bare, inproc):  # with --timeline: from the start of the run to its first request
            if row.first_request_s is not None:
                fields.append(f"first_request_s_{row.system}={row.first_request_s:.3f}")
    zero = results.get((40, 6, 0.0))
    if zero is not None:
        bare, inproc, cli = zero
        fields += [
            f"cpu_ms_per_req_0ms={inproc.cpu * 1000 / inproc.total:.2f}",
            f"cpu_ms_per_req_bare_0ms={bare.cpu * 1000 / bare.total:.2f}",
            f"ratio_bare_0ms={inproc.wall / bare.wall:.3f}",
        ]
    for (conversations, turns, latency), (bare, inproc, cli) in results.items():
        if conversations == 40 and turns == 6 and latency in (0.0, 0.2):
            continue  # in the fields above
        tag = f"{conversations}x{turns}_{latency * 1000:.0f}ms"
        ideal = (2 * turns + 1) * latency * conversations / concurrency
        fields += [
            f"requests_per_conv_{tag}={inproc.total / conversations:.2f}",
            f"ratio_bare_inproc_{tag}={inproc.wall / bare.wall:.3f}",
            f"cpu_ms_per_req_{tag}={inproc.cpu * 1000 / inproc.total:.2f}",
            f"cpu_ms_per_req_bare_{tag}={bare.cpu * 1000 / bare.total:.2f}",
            f"peak_mb_{tag}={inproc.peak_mb:.0f}",
        ]
        if ideal > 0:
            fields += [
                f"ratio_ideal_inproc_{tag}={inproc.wall / ideal:.3f}",
                f"ratio_ideal_cli_{tag}={cli.wall / ideal:.3f}",
                f"ratio_ideal_bare_{tag}={bare.wall / ideal:.3f}",
                f"ratio_ideal_bare_process_{tag}={bare.wall_process / ideal:.3f}",
            ]
    return "BENCH " + " ".join(fields)


if __name__ == "__main__":
    main()
