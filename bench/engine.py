"""Engine overhead: 1,000 simulated conversations of 10 turns with an instant agent and user.

The agent and the simulated user answer at once (no model, no I/O), and every turn runs the real graph:
user node, agent node (with a tool call routed to a fake), check node (a deterministic keyword check). So the
time per turn is Simulator's own overhead: LangGraph, the models, routing, checking, the transcript.

    python bench/engine.py [--conversations N] [--turns T] [--concurrency C] [--checkpoints]

Ends with one line: BENCH ms_per_turn=X peak_mb=Y

``--checkpoints`` also runs the same conversations with the run's checkpointer (a SQLite file, each
conversation's checkpoints deleted once it ends, as the runner does), alternating plain and checkpointed
rounds so both see the same machine, and adds ``checkpoint_ms_per_turn`` (CPU per user turn with checkpoints
minus without, best round of each) and ``ratio_checkpoints`` (wall with / without) to the BENCH line.
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import resource
import tempfile
import time
from pathlib import Path
from typing import Any

from pydantic import TypeAdapter

from simulator.agents import AgentInput, AgentReply
from simulator.engine import ConversationSetup, forget, open_checkpointer, simulate
from simulator.judges import StepJudge
from simulator.models import AgentConfig, Case, ToolFake
from simulator.user import UserReply, UserTurnRequest


class InstantAgent:
    """Answers at once, calling one tool (answered by a fake) every turn."""

    async def respond(self, request: AgentInput) -> AgentReply:
        await request.tools.acall("lookup_order", order_id="A1")
        return AgentReply(messages=[f"Your order A1 is on its way (turn {request.turn})."])

    async def aclose(self) -> None:
        """Nothing to release."""


class InstantUser:
    """Says a line at once."""

    async def next_message(self, request: UserTurnRequest) -> UserReply:
        return UserReply(text=f"Where is my order? ({request.turn_in_step})")


def _case(turns: int) -> Any:
    return TypeAdapter(Case).validate_python(
        {
            "kind": "simulation",
            "name": "bench",
            "steps": [
                {"goal": "Find the order.", "checks": [{"must_contain": ["refund approved"]}], "max_turns": turns}
            ],
        }
    )


_THREADS = itertools.count()


async def _run(conversations: int, turns: int, concurrency: int, checkpoints: Path | None = None) -> int:
    if checkpoints is None:
        return await _conversations(conversations, turns, concurrency, None)
    async with open_checkpointer(checkpoints) as saver:
        return await _conversations(conversations, turns, concurrency, saver)


async def _conversations(conversations: int, turns: int, concurrency: int, saver: Any) -> int:
    agent_config = TypeAdapter(AgentConfig).validate_python(
        {"type": "python", "callable": "bench:agent", "tools": [{"name": "lookup_order"}]}
    )
    fake = ToolFake(tool="lookup_order", result={"status": "shipped"})
    case = _case(turns)
    checker = StepJudge()
    limit = asyncio.Semaphore(concurrency)
    total = 0

    async def one() -> None:
        nonlocal total
        async with limit:
            setup = ConversationSetup(
                case=case,
                agent=InstantAgent(),
                user=InstantUser(),
                checker=checker,
                agent_config=agent_config,
                suite_fakes=[fake],
            )
            if saver is None:
                transcript = await simulate(setup)
            else:
                thread = f"bench:{next(_THREADS)}"
                transcript = await simulate(setup, checkpointer=saver, thread_id=thread)
                await forget(saver, thread)
            if transcript.stop_reason != "step_failed" or transcript.turns != turns:
                raise SystemExit(f"unexpected transcript: {transcript.stop_reason}, {transcript.turns} turns")
            total += transcript.turns

    await asyncio.gather(*(one() for _ in range(conversations)))
    return total


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--conversations", type=int, default=1000)
    parser.add_argument("--turns", type=int, default=10)
    parser.add_argument("--concurrency", type=int, default=50)
    parser.add_argument("--checkpoints", action="store_true", help="Also measure the cost of checkpoints.")
    parser.add_argument("--rounds", type=int, default=3, help="Rounds of each (with --checkpoints).")
    args = parser.parse_args()
    if args.checkpoints:
        _compare(args)
        return
    asyncio.run(_run(5, args.turns, 5))  # warm up: imports, graph compilation, schema builds
    start_wall, start_cpu = time.perf_counter(), time.process_time()
    turns = asyncio.run(_run(args.conversations, args.turns, args.concurrency))
    wall, cpu = time.perf_counter() - start_wall, time.process_time() - start_cpu
    peak_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    ms_per_turn = wall * 1000 / turns
    print(f"{args.conversations} conversations x {args.turns} turns = {turns} turns, concurrency {args.concurrency}")
    print(f"wall {wall:.2f} s, cpu {cpu:.2f} s: {ms_per_turn:.3f} ms per turn (cpu {cpu * 1000 / turns:.3f} ms)")
    print(f"peak RSS {peak_mb:.0f} MB")
    print(f"BENCH ms_per_turn={ms_per_turn:.3f} peak_mb={peak_mb:.0f}")


def _compare(args: argparse.Namespace) -> None:
    """Plain and checkpointed rounds, alternated; the best round of each is compared."""
    plain: list[tuple[float, float]] = []
    saved: list[tuple[float, float]] = []
    turns = 0
    with tempfile.TemporaryDirectory() as tmp:
        asyncio.run(_run(5, args.turns, 5))  # warm up both paths
        asyncio.run(_run(5, args.turns, 5, Path(tmp) / "warm.db"))
        for round_ in range(args.rounds):
            for results, path in ((plain, None), (saved, Path(tmp) / f"checkpoints{round_}.db")):
                start_wall, start_cpu = time.perf_counter(), time.process_time()
                turns = asyncio.run(_run(args.conversations, args.turns, args.concurrency, path))
                results.append((time.perf_counter() - start_wall, time.process_time() - start_cpu))
    wall_plain, cpu_plain = min(plain)
    wall_saved, cpu_saved = min(saved)
    ms_plain, ms_saved = wall_plain * 1000 / turns, wall_saved * 1000 / turns
    cost = (cpu_saved - cpu_plain) * 1000 / turns
    peak_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(
        f"{args.conversations} conversations x {args.turns} turns, concurrency {args.concurrency}, {args.rounds} rounds"
    )
    print(f"without checkpoints: {ms_plain:.3f} ms per turn (cpu {cpu_plain * 1000 / turns:.3f})")
    print(f"with checkpoints:    {ms_saved:.3f} ms per turn (cpu {cpu_saved * 1000 / turns:.3f})")
    print(f"checkpoints cost {cost:.3f} ms of cpu per user turn; wall ratio {wall_saved / wall_plain:.3f}")
    print(
        f"BENCH ms_per_turn={ms_plain:.3f} ms_per_turn_checkpoints={ms_saved:.3f} checkpoint_ms_per_turn={cost:.3f}"
        f" ratio_checkpoints={wall_saved / wall_plain:.3f} peak_mb={peak_mb:.0f}"
    )


if __name__ == "__main__":
    main()
