"""Scale: 100 / 1,000 / 10,000 conversations through the console script, at 0 ms latency; memory must stay flat.

Each size is one ``simulator run SUITE --repeat N --db TMP`` run as a subprocess, so its peak RSS and CPU are
its own (``os.wait4`` gives the child's rusage), against a local OpenAI-compatible server in its own process
(an ``http`` agent on it, the scripted user, no judge: as ``bench/run.py``). The agent's replies are padded so
a stored conversation is about the size the issue measured (~45 KB). Printed per size: wall and CPU per
conversation, peak RSS, store bytes per conversation (the store file with its WAL; the checkpoints file
apart), and the lines the command printed.

    python bench/scale.py [--sizes 100,1000] [--full] [--concurrency C] [--reply-chars R] [--src DIR]

``--full`` adds 10,000. ``--src DIR`` runs the package found in DIR (e.g. an unpacked older commit, for a
baseline measured in the same sitting) with this Python instead of the console script.

Ends with one line: BENCH peak_mb_<N>=M cpu_ms_per_conv_<N>=C wall_ms_per_conv_<N>=W store_kb_per_conv_<N>=S ...
"""

from __future__ import annotations

import argparse
import os
import socket
import subprocess
import sys
import tempfile
import textwrap
import time
from dataclasses import dataclass
from pathlib import Path

SERVER = textwrap.dedent(
    """
    import json, sys
    from aiohttp import web

    REPLY = "Your order ORD-1 has shipped. " + "x" * int(sys.argv[2])
    calls = 0

    async def chat(request):
        global calls
        calls += 1
        body = await request.json()
        return web.json_response({
            "id": f"c{calls}", "object": "chat.completion", "created": 0, "model": body.get("model", "fake"),
            "choices": [{"index": 0, "finish_reason": "stop", "message": {"role": "assistant", "content": REPLY}}],
            "usage": {"prompt_tokens": 20, "completion_tokens": 8, "total_tokens": 28},
        })

    app = web.Application()
    app.router.add_post("/v1/chat/completions", chat)
    web.run_app(app, host="127.0.0.1", port=int(sys.argv[1]), print=None, access_log=None)
    """
)


@dataclass
class Sample:
    """One size's figures."""

    size: int
    wall_s: float
    cpu_s: float
    peak_mb: float
    store_bytes: int
    checkpoint_bytes: int
    lines: int
    exit_code: int


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _wait_for_port(port: int, limit: float = 20.0) -> None:
    deadline = time.monotonic() + limit
    while time.monotonic() < deadline:
        with socket.socket() as sock:
            if sock.connect_ex(("127.0.0.1", port)) == 0:
                return
        time.sleep(0.05)
    raise SystemExit("the fake server did not start")


def _suite(root: Path, port: int, turns: int) -> Path:
    steps = "".join(f"      - goal: Ask about the order, part {i}.\n        max_turns: 1\n" for i in range(turns))
    (root / "suite.yaml").write_text(
        f"""name: scale
agent:
  type: http
  base_url: http://127.0.0.1:{port}/v1
  model: fake-agent
  timeout: 30
cases:
  - kind: simulation
    name: order_status
    steps:
{steps}""",
        encoding="utf-8",
    )
    return root / "suite.yaml"


def _command(src: str | None) -> list[str]:
    if src is None:
        return [str(Path(sys.executable).with_name("simulator"))]
    # The package in ``src`` first on the path: an unpacked older commit measured with this environment.
    code = f"import sys; sys.path.insert(0, {src!r}); from simulator.cli import main; sys.exit(main())"
    return [sys.executable, "-c", code]


def _size_of(path: Path) -> int:
    return sum(p.stat().st_size for p in (path, Path(f"{path}-wal")) if p.exists())


def _one(command: list[str], suite: Path, root: Path, size: int, concurrency: int) -> Sample:
    db = root / f"runs-{size}.db"
    log = root / f"out-{size}.txt"
    args = [*command, "run", str(suite), "--repeat", str(size), "--db", str(db), "--concurrency", str(concurrency)]
    args += ["--no-cache", "--seed", "1"]
    with log.open("wb") as sink:
        started = time.perf_counter()
        child = subprocess.Popen(args, stdout=sink, stderr=subprocess.STDOUT, cwd=root)
        # wait4: this child's own rusage (peak RSS, CPU), not the server's nor an earlier size's.
        _, status, usage = os.wait4(child.pid, 0)
        wall = time.perf_counter() - started
    child.returncode = os.waitstatus_to_exitcode(status)
    checkpoints = db.with_name(f"{db.stem}-checkpoints.db")
    return Sample(
        size=size,
        wall_s=wall,
        cpu_s=usage.ru_utime + usage.ru_stime,
        peak_mb=usage.ru_maxrss / 1024,  # KB on Linux
        store_bytes=_size_of(db),
        checkpoint_bytes=_size_of(checkpoints),
        lines=len(log.read_bytes().splitlines()),
        exit_code=child.returncode,
    )


def main() -> None:
    """Run each size through the console script and print its figures, then the BENCH line."""
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", default="100,1000", help="Comma-separated conversation counts.")
    parser.add_argument("--full", action="store_true", help="Also run 10,000 conversations.")
    parser.add_argument("--turns", type=int, default=6)
    parser.add_argument("--concurrency", type=int, default=20)
    parser.add_argument("--reply-chars", type=int, default=4000, help="Padding of each agent reply.")
    parser.add_argument("--src", default=None, help="Run the package in this folder instead of the console script.")
    args = parser.parse_args()
    sizes = [int(part) for part in args.sizes.split(",") if part.strip()]
    if args.full and 10_000 not in sizes:
        sizes.append(10_000)
    os.environ.setdefault("LITELLM_OFFLINE_MODE", "true")
    os.environ.pop("SIMULATOR_DB", None)
    port = _free_port()
    server = subprocess.Popen([sys.executable, "-c", SERVER, str(port), str(args.reply_chars)])
    samples: list[Sample] = []
    try:
        _wait_for_port(port)
        with tempfile.TemporaryDirectory() as tmp:
            root = Path(tmp)
            suite = _suite(root, port, args.turns)
            command = _command(args.src)
            for size in sizes:
                sample = _one(command, suite, root, size, args.concurrency)
                samples.append(sample)
                print(
                    f"{size:>6} conversations: wall {sample.wall_s:.1f} s ({sample.wall_s * 1000 / size:.1f} ms/conv), "
                    f"cpu {sample.cpu_s:.1f} s ({sample.cpu_s * 1000 / size:.1f} ms/conv), "
                    f"peak RSS {sample.peak_mb:.0f} MB, store {sample.store_bytes / size / 1024:.1f} KB/conv, "
                    f"checkpoints {sample.checkpoint_bytes / size / 1024:.1f} KB/conv, "
                    f"{sample.lines} lines printed, exit {sample.exit_code}",
                    flush=True,
                )
    finally:
        server.terminate()
        server.wait(timeout=10)
    fields = []
    for s in samples:
        fields += [
            f"peak_mb_{s.size}={s.peak_mb:.0f}",
            f"cpu_ms_per_conv_{s.size}={s.cpu_s * 1000 / s.size:.2f}",
            f"wall_ms_per_conv_{s.size}={s.wall_s * 1000 / s.size:.2f}",
            f"store_kb_per_conv_{s.size}={s.store_bytes / s.size / 1024:.1f}",
            f"checkpoint_kb_per_conv_{s.size}={s.checkpoint_bytes / s.size / 1024:.1f}",
            f"lines_{s.size}={s.lines}",
        ]
    print("BENCH " + " ".join(fields))


if __name__ == "__main__":
    main()
