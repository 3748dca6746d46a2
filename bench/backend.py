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

``--startup`` measures start-up and shutdown instead: ``simulator run`` (a fresh process, as a user types it) of a
suite with an ``http`` agent, an ``openai/...`` user and judge, all on one local server that notes when each
request arrives; printed are the seconds from the command's start to the first request, from the last request to
the process's exit, and the wall time of ``simulator --help`` and ``simulator validate`` (medians of
``--repeats``). Ends with: BENCH first_request_s=F shutdown_s=S help_s=H validate_s=V
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

# Answers every request at once and appends its arrival time (time.time()) to the log file: an agent request gets
# text, a structured one gets JSON filled in from its schema (whatever the role: user move or judge verdict).
STARTUP_SERVER = textwrap.dedent(
    """
    import json, sys, time
    from aiohttp import web

    LOG = open(sys.argv[2], "a", buffering=1)

    def fill(schema, defs):
        if "$ref" in schema:
            return fill(defs[schema["$ref"].rsplit("/", 1)[1]], defs)
        if "enum" in schema:
            return schema["enum"][0]
        for option in schema.get("anyOf", []):
            if option.get("type") != "null":
                return fill(option, defs)
        kind = schema.get("type")
        if kind == "object":
            return {name: fill(prop, defs) for name, prop in schema.get("properties", {}).items()}
        return {"string": "fine", "boolean": False, "integer": 1, "number": 1.0, "array": []}.get(kind)

    async def chat(request):
        print(time.time(), file=LOG)
        body = await request.json()
        format = body.get("response_format") or {}
        if format.get("type") == "json_schema":
            schema = format["json_schema"]["schema"]
            content = json.dumps(fill(schema, schema.get("$defs", {})))
        else:
            content = "Your order ORD-1 has shipped."
        return web.json_response({
            "id": "c", "object": "chat.completion", "created": 0, "model": body.get("model", "fake"),
            "choices": [{"index": 0, "finish_reason": "stop", "message": {"role": "assistant", "content": content}}],
            "usage": {"prompt_tokens": 20, "completion_tokens": 8, "total_tokens": 28},
        })

    app = web.Application()
    app.router.add_post("/v1/chat/completions", chat)
    web.run_app(app, host="127.0.0.1", port=int(sys.argv[1]), print=None, access_log=None)
    """
)


def _startup_suite(root: Path, port: int) -> Path:
    model = f"api_base: http://127.0.0.1:{port}/v1, api_key_env: BENCH_KEY, max_retries: 0"
    (root / "suite.yaml").write_text(
        textwrap.dedent(
            f"""\
            name: startup
            agent: {{type: http, base_url: "http://127.0.0.1:{port}/v1", model: bench-agent, timeout: 30}}
            models:
              user: {{model: openai/bench-user, {model}}}
              judge: {{model: openai/bench-judge, {model}}}
            cases:
              - kind: simulation
                name: order_status
                steps:
                  - goal: Ask where order ORD-1 is.
                    success_criteria: The agent says the order has shipped.
                    max_turns: 2
            """
        ),
        encoding="utf-8",
    )
    return root / "suite.yaml"


def _timed(command: list[str], cwd: Path, env: dict[str, str]) -> tuple[float, float]:
    """(start, end) wall-clock times of running ``command`` to its end."""
    started = time.time()
    subprocess.run(command, cwd=cwd, env=env, capture_output=True, text=True, check=False, timeout=300)
    return started, time.time()


def startup(repeats: int) -> None:
    """Start-up and shutdown of ``simulator run`` with openai models, and ``--help`` / ``validate`` wall times."""
    import tempfile

    env = {**os.environ, "BENCH_KEY": "bench-key", "LITELLM_LOCAL_MODEL_COST_MAP": "True"}
    simulator = [sys.executable, "-m", "simulator"]
    with tempfile.TemporaryDirectory() as folder:
        root = Path(folder)
        (root / ".git").mkdir()  # the project root: the run store goes here
        port = _free_port()
        log = root / "arrivals.log"
        server = subprocess.Popen([sys.executable, "-c", STARTUP_SERVER, str(port), str(log)])
        suite = _startup_suite(root, port)
        first, shutdown, help_s, validate_s = [], [], [], []
        try:
            _wait_for_port(port)
            for repeat in range(repeats):
                log.write_text("")
                started, ended = _timed([*simulator, "run", str(suite), "--no-cache", "--db", "runs.db"], root, env)
                arrivals = [float(line) for line in log.read_text().split()]
                if not arrivals:
                    raise SystemExit("simulator run sent no request")
                first.append(arrivals[0] - started)
                shutdown.append(ended - arrivals[-1])
                started, ended = _timed([*simulator, "--help"], root, env)
                help_s.append(ended - started)
                started, ended = _timed([*simulator, "validate", str(suite)], root, env)
                validate_s.append(ended - started)
                print(
                    f"repeat {repeat + 1}: first request {first[-1]:.2f} s after start, {len(arrivals)} requests, "
                    f"exit {shutdown[-1]:.2f} s after the last; --help {help_s[-1]:.2f} s, "
                    f"validate {validate_s[-1]:.2f} s",
                    flush=True,
                )
        finally:
            server.terminate()
            server.wait(timeout=10)
    print(
        f"BENCH first_request_s={statistics.median(first):.2f} shutdown_s={statistics.median(shutdown):.2f} "
        f"help_s={statistics.median(help_s):.2f} validate_s={statistics.median(validate_s):.2f}"
    )


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
    parser.add_argument("--startup", action="store_true", help="measure start-up and shutdown instead")
    parser.add_argument("--child", choices=["bare", "openai", "litellm"], help=argparse.SUPPRESS)
    parser.add_argument("--base", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        _child(args)
        return
    if args.startup:
        startup(args.repeats)
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
