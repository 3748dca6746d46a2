"""Client CPU per HTTP request: httpx's own ``AsyncClient`` against Simulator's (``simulator._http.async_client``).

N requests (default 2,000) of an agent turn (six messages of history, the reply read as a stream, as the ``http``
agent sends them) go from ``concurrency`` asyncio workers to a local OpenAI-compatible server answering at once
(0 ms), in its own process so that its CPU does not count. The two clients are measured in alternation in the same
process (``--repeats`` rounds of each, after a warm-up round), because the machine is shared and drifts; the ratio is
taken per round and its median printed.

    python bench/http_client.py [--requests N] [--concurrency C] [--repeats R]

Ends with one line: BENCH httpx_ms=A simulator_ms=B ratio=B/A
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import time
from collections.abc import Callable
from typing import Any

import httpx
from _server import FakeServer  # bench/_server.py: the shared fake server

from simulator._http import async_client

_LIMITS = httpx.Limits(max_connections=1000, max_keepalive_connections=100)


async def _round(make: Callable[..., httpx.AsyncClient], url: str, requests: int, concurrency: int) -> float:
    """CPU milliseconds per request of one round."""
    messages = [
        {"role": "user" if i % 2 == 0 else "assistant", "content": f"Turn {i}: " + "words " * 30} for i in range(6)
    ]
    body: dict[str, Any] = {"model": "fake-agent", "messages": messages}
    left = iter(range(requests))
    async with make(timeout=30, limits=_LIMITS) as client:

        async def worker() -> None:
            for _ in left:
                async with asyncio.timeout(30), client.stream("POST", url, json=body) as response:
                    await response.aread()
                response.json()

        cpu = time.process_time()
        await asyncio.gather(*(worker() for _ in range(concurrency)))
        return (time.process_time() - cpu) * 1000 / requests


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--requests", type=int, default=2000)
    parser.add_argument("--concurrency", type=int, default=50)
    parser.add_argument("--repeats", type=int, default=7)
    args = parser.parse_args()
    clients: dict[str, Callable[..., httpx.AsyncClient]] = {"httpx": httpx.AsyncClient, "simulator": async_client}
    results: dict[str, list[float]] = {name: [] for name in clients}
    with FakeServer(latency=0.0) as server:
        url = f"{server.base_url}/chat/completions"
        for make in clients.values():  # warm-up: imports, first connections
            asyncio.run(_round(make, url, 200, args.concurrency))
        for _ in range(args.repeats):
            for name, make in clients.items():
                results[name].append(asyncio.run(_round(make, url, args.requests, args.concurrency)))
    ratios = [ours / theirs for ours, theirs in zip(results["simulator"], results["httpx"], strict=True)]
    for name, values in results.items():
        rounds = ", ".join(f"{value:.2f}" for value in values)
        print(f"{name:>9}: CPU ms per request {statistics.median(values):.3f} (rounds: {rounds})")
    print(f"simulator / httpx, per round: {', '.join(f'{r:.2f}' for r in ratios)}")
    print(
        f"BENCH httpx_ms={statistics.median(results['httpx']):.3f} "
        f"simulator_ms={statistics.median(results['simulator']):.3f} ratio={statistics.median(ratios):.3f}"
    )


if __name__ == "__main__":
    main()
