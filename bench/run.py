"""Run throughput: 500 conversations of 6 turns against a local OpenAI-compatible server answering in 200 ms.

The agent under test is an ``http`` agent on the server; every turn is one call of 200 ms, and with
concurrency 50 the ideal wall time is (calls x 0.2 s) / 50. The target is 1.15x of it with checkpoints (the
bare loop below shows how close this machine gets in that sitting). The run is the real one: plan, engine,
checkpoints, scoring, the SQLite store. The server runs in its own process so its CPU does not count as the
runner's.

Runs checkpoint every conversation step (so a resumed run continues conversations mid-way); the same run
with ``--no-checkpoints`` is measured too and reported as ``ratio_no_checkpoints``. ``--rounds R`` runs both R
times, alternated (a burst of load on a shared machine hits one round of each, not all of one kind), and
reports the medians.

``--llm-user`` also sends the simulated user through litellm to the server (two calls per turn). litellm costs
about 3.5 ms of CPU per call here (measured: one process tops out near 150-200 calls/s), so that variant is
bound by litellm, not by the runner; its figures are printed for comparison.

    python bench/run.py [--conversations N] [--turns T] [--latency S] [--concurrency C] [--llm-user] [--rounds R]

Each round also runs a bare loop: the same agent calls (the history so far, POSTed turn after turn) by
``concurrency`` asyncio workers through one httpx client, without Simulator: the floor this machine puts under
the workload in that sitting (``ratio_bare``, against the same ideal), and Simulator against it
(``ratio_to_bare``, ``ratio_no_checkpoints_to_bare``). Not with ``--llm-user``.

Ends with one line: BENCH ratio_to_ideal=R peak_mb=M cpu_ms_per_call=C ratio_no_checkpoints=R2
checkpoint_ms_per_turn=K (CPU per user turn with checkpoints minus without) ratio_bare=B ratio_to_bare=T
ratio_no_checkpoints_to_bare=T2
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import resource
import statistics
import tempfile
import time
from pathlib import Path

from _server import FakeServer  # bench/_server.py: the shared fake server


def _suite(root: Path, port: int, turns: int, concurrency: int, llm_user: bool) -> Path:
    steps = "".join(f"      - goal: Ask about the order, part {i}.\n        max_turns: 1\n" for i in range(turns))
    user = (
        f"""models:
  user:
    model: openai/fake-user
    api_base: http://127.0.0.1:{port}/v1
    api_key_env: BENCH_FAKE_KEY
    concurrency: {concurrency}
    max_retries: 0
"""
        if llm_user
        else ""
    )
    (root / "suite.yaml").write_text(
        f"""name: bench
agent:
  type: http
  base_url: http://127.0.0.1:{port}/v1
  model: fake-agent
  timeout: 30
{user}cases:
  - kind: simulation
    name: order_status
    steps:
{steps}""",
        encoding="utf-8",
    )
    return root / "suite.yaml"


async def _run(
    suite: Path, db: Path, conversations: int, concurrency: int, checkpoints: bool = True
) -> tuple[object, float, float]:
    from simulator.loading import validate_paths
    from simulator.models.run import RunSettings
    from simulator.runner._execute import execute
    from simulator.runner._plan import build_plan, new_record, snapshot_of
    from simulator.store import RunStore

    report = validate_paths([suite])
    if report.errors:
        raise SystemExit("\n".join(e.render() for e in report.errors))
    settings = RunSettings(
        paths=[str(suite)], repeat=conversations, concurrency=concurrency, seed=1, cache=False,
        checkpoints=checkpoints,
    )  # fmt: skip
    plan = build_plan(report.suites, settings)
    with RunStore(db) as store:
        record = new_record(store.new_run_id(), [snapshot_of(report.suites[0], str(suite))], settings, plan)
        store.create_run(record)
        wall, cpu = time.perf_counter(), time.process_time()
        done = await execute(store, record)
        return done, time.perf_counter() - wall, time.process_time() - cpu


async def _bare(port: int, conversations: int, turns: int, concurrency: int) -> tuple[float, float]:
    """The same agent calls without Simulator: ``concurrency`` workers, each conversation its ``turns`` POSTs one
    after another with the history so far, through one pooled httpx client (what the ``http`` agent adapter
    sends, without engine, checks, checkpoints or store). The floor this machine puts under the workload."""
    import httpx

    url = f"http://127.0.0.1:{port}/v1/chat/completions"
    left = iter(range(conversations))
    limits = httpx.Limits(max_connections=1000, max_keepalive_connections=100)
    async with httpx.AsyncClient(timeout=30, limits=limits) as client:

        async def worker() -> None:
            for number in left:
                messages: list[dict[str, str]] = []
                for turn in range(turns):
                    messages.append({"role": "user", "content": f"Ask about the order, part {turn} ({number})."})
                    reply = await client.post(url, json={"model": "fake-agent", "messages": messages})
                    reply.raise_for_status()
                    messages.append({"role": "assistant", "content": reply.json()["choices"][0]["message"]["content"]})

        wall, cpu = time.perf_counter(), time.process_time()
        await asyncio.gather(*(worker() for _ in range(concurrency)))
        return time.perf_counter() - wall, time.process_time() - cpu


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--conversations", type=int, default=500)
    parser.add_argument("--turns", type=int, default=6)
    parser.add_argument("--latency", type=float, default=0.2)
    parser.add_argument("--concurrency", type=int, default=50)
    parser.add_argument("--llm-user", action="store_true", help="Also run the simulated user through litellm.")
    parser.add_argument("--rounds", type=int, default=1, help="Alternate both runs this many times; medians.")
    args = parser.parse_args()
    os.environ.setdefault("LITELLM_OFFLINE_MODE", "true")
    os.environ["BENCH_FAKE_KEY"] = "not-a-real-key"
    with FakeServer(latency=args.latency) as server, tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        suite = _suite(root, server.port, args.turns, args.concurrency, args.llm_user)
        asyncio.run(_run(suite, root / "warmup.db", 2, 2))  # imports, litellm's first call
        saved: list[tuple[float, float]] = []
        plain: list[tuple[float, float]] = []
        bare: list[tuple[float, float]] = []
        for round_ in range(args.rounds):
            record, wall, cpu = asyncio.run(
                _run(suite, root / f"runs{round_}.db", args.conversations, args.concurrency)
            )
            saved.append((wall, cpu))
            _, wall_plain, cpu_plain = asyncio.run(
                _run(suite, root / f"plain{round_}.db", args.conversations, args.concurrency, checkpoints=False)
            )
            plain.append((wall_plain, cpu_plain))
            if not args.llm_user:
                bare.append(asyncio.run(_bare(server.port, args.conversations, args.turns, args.concurrency)))
            if args.rounds > 1:
                also = f", bare loop {bare[-1][0]:.1f} s" if bare else ""
                print(
                    f"round {round_ + 1}: wall {wall:.1f} s with checkpoints, {wall_plain:.1f} s without{also}",
                    flush=True,
                )
        wall, cpu = (statistics.median(values) for values in zip(*saved, strict=True))
        wall_plain, cpu_plain = (statistics.median(values) for values in zip(*plain, strict=True))
        wall_bare, cpu_bare = (statistics.median(values) for values in zip(*bare, strict=True)) if bare else (0.0, 0.0)
    totals = record.totals  # type: ignore[attr-defined]
    calls = sum(role.calls for role in totals.usage.values()) + args.conversations * args.turns  # + agent calls
    ideal = calls * args.latency / args.concurrency
    peak_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(
        json.dumps({"passed": totals.passed, "failed": totals.failed, "error": totals.error, "unsure": totals.unsure})
    )
    print(
        f"{args.conversations} conversations x {args.turns} turns, {calls} model calls of {args.latency * 1000:.0f} ms,"
        f" concurrency {args.concurrency}"
    )
    print(
        f"wall {wall:.1f} s vs ideal {ideal:.1f} s; cpu {cpu:.1f} s = {cpu * 1000 / calls:.2f} ms per call;"
        f" peak RSS {peak_mb:.0f} MB"
    )
    checkpoint_ms = (cpu - cpu_plain) * 1000 / (args.conversations * args.turns)  # CPU per user turn
    print(
        f"without checkpoints (--no-checkpoints): wall {wall_plain:.1f} s,"
        f" cpu {cpu_plain * 1000 / calls:.2f} ms per call"
    )
    fields = ""
    if bare:
        agent_calls = args.conversations * args.turns
        print(
            f"bare loop (the same {agent_calls} agent calls, no Simulator): wall {wall_bare:.1f} s ="
            f" {wall_bare * args.concurrency / (agent_calls * args.latency):.3f} of its ideal,"
            f" cpu {cpu_bare * 1000 / agent_calls:.2f} ms per call; Simulator with checkpoints {wall / wall_bare:.3f}"
            f" of it, without {wall_plain / wall_bare:.3f}"
        )
        fields = (
            f" ratio_bare={wall_bare * args.concurrency / (agent_calls * args.latency):.3f}"
            f" ratio_to_bare={wall / wall_bare:.3f} ratio_no_checkpoints_to_bare={wall_plain / wall_bare:.3f}"
        )
    print(
        f"BENCH ratio_to_ideal={wall / ideal:.3f} peak_mb={peak_mb:.0f} cpu_ms_per_call={cpu * 1000 / calls:.2f}"
        f" ratio_no_checkpoints={wall_plain / ideal:.3f} checkpoint_ms_per_turn={checkpoint_ms:.3f}{fields}"
    )


if __name__ == "__main__":
    main()
