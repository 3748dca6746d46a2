"""Client CPU per model request: bare ``AsyncOpenAI`` against Simulator's client with each backend.

N requests (default 2,000) at concurrency 20 go to a local OpenAI-compatible server answering at once (0 ms), in
its own process so its CPU does not count. Three ways of sending them, each measured in a fresh process (so one
library's imports and caches do not tax another) after a warm-up of 100 requests:

  (a) ``bare``:    ``AsyncOpenAI.chat.completions.create`` in an asyncio.gather loop, the floor;
  (b) ``openai``:  ``LLMClient.complete`` with the openai backend (``openai/...`` model, ``backend: auto``);
  (c) ``litellm``: ``LLMClient.complete`` with the litellm backend (``backend: litellm``).

Each is repeated ``--repeats`` times, interleaved (a b c a b c ...), because the machine is shared and drifts;
the ratios b/a and c/a are taken per repeat and their medians printed.

    python bench/backend.py [--requests N] [--concurrency C] [--repeats R]

Ends with one line: BENCH bare_ms=A openai_ms=B litellm_ms=C openai_ratio=B/A litellm_ratio=C/A
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import socket
import statistics
import subprocess
import sys
import textwrap
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

SERVER = textwrap.dedent(
    """
    import sys
    from aiohttp import web

    BODY = (
        b'{"id":"c","object":"chat.completion","created":0,"model":"gpt-4o-mini","choices":[{"index":0,'
        b'"finish_reason":"stop","message":{"role":"assistant","content":"Your order ORD-1 has shipped."}}],'
        b'"usage":{"prompt_tokens":20,"completion_tokens":8,"total_tokens":28}}'
    )

    async def chat(request):
        await request.read()
        return web.Response(body=BODY, content_type="application/json")

    app = web.Application()
    app.router.add_post("/v1/chat/completions", chat)
    web.run_app(app, host="127.0.0.1", port=int(sys.argv[1]), print=None, access_log=None)
    """
)

MESSAGES = [
    {"role": "system", "content": "You are a helpful support agent for an online shop."},
    {"role": "user", "content": "Where is my order ORD-1?"},
]
WARM_UP = 100


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def _wait_for_port(port: int, limit: float = 20.0) -> None:
    deadline = time.monotonic() + limit
    while time.monotonic() < deadline:
        with socket.socket() as sock:
            if sock.connect_ex(("127.0.0.1", port)) == 0:
                return
        time.sleep(0.05)
    raise SystemExit(f"the bench server did not start on port {port}")


async def _gather(send: object, requests: int, concurrency: int) -> None:
    limit = asyncio.Semaphore(concurrency)

    async def one() -> None:
        async with limit:
            await send()  # type: ignore[operator]

    await asyncio.gather(*(one() for _ in range(requests)))


async def _measure(mode: str, base: str, requests: int, concurrency: int) -> float:
    """CPU seconds this process spent sending ``requests`` requests (after the warm-up)."""
    closers = []
    if mode == "bare":
        from openai import AsyncOpenAI

        sdk = AsyncOpenAI(api_key="bench-key", base_url=base, max_retries=0)

        async def send() -> None:
            await sdk.chat.completions.create(model="gpt-4o-mini", messages=MESSAGES, timeout=60)  # type: ignore[arg-type]

        closers.append(sdk.close)
    else:
        from simulator.llm import LLMClient, preload
        from simulator.models.settings import ModelRoles

        backend = "auto" if mode == "openai" else "litellm"
        settings = {"model": "openai/gpt-4o-mini", "api_base": base, "api_key_env": "BENCH_KEY", "backend": backend}
        # The role's limit is the run's concurrency, as a run with --concurrency sets it.
        roles = ModelRoles.model_validate({"judge": {**settings, "concurrency": concurrency}})
        preload(roles)
        client = LLMClient(roles, environ={"BENCH_KEY": "bench-key"})

        async def send() -> None:
            await client.complete("judge", MESSAGES)

        closers.append(client.aclose)
    await _gather(send, WARM_UP, concurrency)
    started = time.process_time()
    await _gather(send, requests, concurrency)
    cpu = time.process_time() - started
    for close in closers:
        await close()
    return cpu


def _child(args: argparse.Namespace) -> None:
    cpu = asyncio.run(_measure(args.child, args.base, args.requests, args.concurrency))
    print(json.dumps({"cpu_ms_per_request": cpu * 1000 / args.requests}))


def main() -> None:
    """Start the server, measure each mode in its own process, print the figures and the BENCH line."""
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--requests", type=int, default=2000)
    parser.add_argument("--concurrency", type=int, default=20)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--child", choices=["bare", "openai", "litellm"], help=argparse.SUPPRESS)
    parser.add_argument("--base", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        _child(args)
        return

    port = _free_port()
    server = subprocess.Popen([sys.executable, "-c", SERVER, str(port)])
    env = {**os.environ, "LITELLM_LOCAL_MODEL_COST_MAP": "True", "LITELLM_OFFLINE_MODE": "true"}
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), env.get("PYTHONPATH")]))
    figures: dict[str, list[float]] = {"bare": [], "openai": [], "litellm": []}
    try:
        _wait_for_port(port)
        base = f"http://127.0.0.1:{port}/v1"
        for repeat in range(args.repeats):
            for mode, values in figures.items():
                command = [
                    sys.executable, __file__, "--child", mode, "--base", base,
                    "--requests", str(args.requests), "--concurrency", str(args.concurrency),
                ]  # fmt: skip
                out = subprocess.run(command, env=env, capture_output=True, text=True, check=True, timeout=600)
                value = float(json.loads(out.stdout.strip().splitlines()[-1])["cpu_ms_per_request"])
                values.append(value)
                print(f"repeat {repeat + 1} {mode:8s} {value:6.2f} ms CPU / request", flush=True)
    finally:
        server.terminate()
        server.wait(timeout=10)
    openai_ratios = [b / a for a, b in zip(figures["bare"], figures["openai"], strict=True)]
    litellm_ratios = [c / a for a, c in zip(figures["bare"], figures["litellm"], strict=True)]
    median = {mode: statistics.median(values) for mode, values in figures.items()}
    print(
        f"BENCH bare_ms={median['bare']:.2f} openai_ms={median['openai']:.2f} litellm_ms={median['litellm']:.2f} "
        f"openai_ratio={statistics.median(openai_ratios):.2f} litellm_ratio={statistics.median(litellm_ratios):.2f}"
    )


if __name__ == "__main__":
    main()
