"""Client CPU per HTTP request: httpx's own ``AsyncClient`` against Simulator's (``simulator._http.async_client``, the
model backend's) and against the ``http`` agent's client (aiohttp, ``simulator.agents.http_agent``).

N requests (default 2,000) of an agent turn (six messages of history, the reply read as a stream, as the ``http``
agent sends them) go from ``concurrency`` asyncio workers to a local OpenAI-compatible server answering at once
(0 ms), in its own process so that its CPU does not count. The two clients are measured in alternation in the same
process (``--repeats`` rounds of each, after a warm-up round), because the machine is shared and drifts; the ratio is
taken per round and its median printed.

The two httpx clients are measured as the model backend uses one: one client (one pool) for all the workers. The
agent's client is measured as the agent sends a turn: one adapter (one session, as one conversation has) per worker,
each request bounded, its reply's message taken from the JSON (``HttpAdapter._attempt``); against it, the client the
agent had before (``async_client``), also one per worker (``agent_before_ms``).

    python bench/http_client.py [--requests N] [--concurrency C] [--repeats R]

Ends with one line: BENCH httpx_ms=A simulator_ms=B ratio=B/A agent_before_ms=D agent_ms=C agent_ratio=C/D
"""

from __future__ import annotations

import argparse
import asyncio
import functools
import statistics
import time
from collections.abc import Awaitable, Callable
from typing import Any

import httpx
from _server import FakeServer  # bench/_server.py: the shared fake server

from simulator._http import async_client
from simulator.agents.http_agent import HttpAdapter
from simulator.models import HttpAgent

_LIMITS = httpx.Limits(max_connections=1000, max_keepalive_connections=100)


def _turn() -> dict[str, Any]:
    """An agent turn's request: six messages of history."""
    messages = [
        {"role": "user" if i % 2 == 0 else "assistant", "content": f"Turn {i}: " + "words " * 30} for i in range(6)
    ]
    return {"model": "fake-agent", "messages": messages}


async def _post(client: httpx.AsyncClient, url: str, body: dict[str, Any]) -> object:
    """One turn through an httpx client, as the agent sent it before: streamed, bounded, its message taken."""
    async with asyncio.timeout(30), client.stream("POST", url, json=body) as response:
        await response.aread()
    return response.json()["choices"][0]["message"]


async def _per_worker(sends: list[Callable[[], Awaitable[object]]], requests: int) -> float:
    """CPU milliseconds per request of ``requests`` requests, each worker sending through its own ``send``."""
    left = iter(range(requests))

    async def worker(send: Callable[[], Awaitable[object]]) -> None:
        for _ in left:
            await send()

    cpu = time.process_time()
    await asyncio.gather(*(worker(send) for send in sends))
    return (time.process_time() - cpu) * 1000 / requests


async def _round(make: Callable[..., httpx.AsyncClient], url: str, requests: int, concurrency: int) -> float:
    """CPU milliseconds per request of one round, every worker through one client (one pool)."""
    async with make(timeout=30, limits=_LIMITS) as client:
        return await _per_worker([functools.partial(_post, client, url, _turn())] * concurrency, requests)


async def _client_per_worker_round(url: str, requests: int, concurrency: int) -> float:
    """CPU milliseconds per request of one round, each worker with a client of its own (``async_client``)."""
    clients = [async_client(timeout=30) for _ in range(concurrency)]
    spent = await _per_worker([functools.partial(_post, client, url, _turn()) for client in clients], requests)
    for client in clients:
        await client.aclose()
    return spent


async def _agent_round(url: str, requests: int, concurrency: int) -> float:
    """CPU milliseconds per request of one round through ``http`` agent adapters (one per worker)."""
    base_url = url.removesuffix("/chat/completions")
    adapters = [
        HttpAdapter(HttpAgent.model_validate({"type": "http", "base_url": base_url})) for _ in range(concurrency)
    ]
    spent = await _per_worker([functools.partial(adapter._attempt, _turn()) for adapter in adapters], requests)
    for adapter in adapters:
        await adapter.aclose()
    return spent


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--requests", type=int, default=2000)
    parser.add_argument("--concurrency", type=int, default=50)
    parser.add_argument("--repeats", type=int, default=7)
    args = parser.parse_args()
    clients: dict[str, Callable[..., httpx.AsyncClient]] = {"httpx": httpx.AsyncClient, "simulator": async_client}
    results: dict[str, list[float]] = {name: [] for name in [*clients, "agent before", "agent"]}
    with FakeServer(latency=0.0) as server:
        url = f"{server.base_url}/chat/completions"
        for make in clients.values():  # warm-up: imports, first connections
            asyncio.run(_round(make, url, 200, args.concurrency))
        asyncio.run(_agent_round(url, 200, args.concurrency))
        asyncio.run(_client_per_worker_round(url, 200, args.concurrency))
        for _ in range(args.repeats):
            for name, make in clients.items():
                results[name].append(asyncio.run(_round(make, url, args.requests, args.concurrency)))
            results["agent before"].append(asyncio.run(_client_per_worker_round(url, args.requests, args.concurrency)))
            results["agent"].append(asyncio.run(_agent_round(url, args.requests, args.concurrency)))
    ratios = [ours / theirs for ours, theirs in zip(results["simulator"], results["httpx"], strict=True)]
    agent_ratios = [ours / theirs for ours, theirs in zip(results["agent"], results["agent before"], strict=True)]
    for name, values in results.items():
        rounds = ", ".join(f"{value:.2f}" for value in values)
        print(f"{name:>12}: CPU ms per request {statistics.median(values):.3f} (rounds: {rounds})")
    print(f"simulator / httpx, per round: {', '.join(f'{r:.2f}' for r in ratios)}")
    print(f"agent / agent before, per round: {', '.join(f'{r:.2f}' for r in agent_ratios)}")
    print(
        f"BENCH httpx_ms={statistics.median(results['httpx']):.3f} "
        f"simulator_ms={statistics.median(results['simulator']):.3f} ratio={statistics.median(ratios):.3f} "
        f"agent_before_ms={statistics.median(results['agent before']):.3f} "
        f"agent_ms={statistics.median(results['agent']):.3f} agent_ratio={statistics.median(agent_ratios):.3f}"
    )


if __name__ == "__main__":
    main()
