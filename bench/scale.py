"""Scale: 100 / 1,000 / 10,000 conversations through the console script; memory must stay flat.

Each size is one ``simulator run SUITE --repeat N --db TMP`` run as a subprocess, so its peak RSS and CPU are
its own (``os.wait4`` gives the child's rusage), against a local OpenAI-compatible server in its own process
(an ``http`` agent on it, the scripted user, no judge: as ``bench/run.py``). The agent's replies are padded so
a stored conversation is about the size of a real one (~45 KB). Printed per size: wall and CPU per
conversation, peak RSS, store bytes per conversation (the store file with its WAL; the checkpoints file
apart), and the lines the command printed. The driver's peak RSS is read from ``/proc`` (``VmHWM``) while it
runs where it can be, so a Ray run's cluster processes (its children) are not counted in it.

With ``--executor ray`` each size also runs on a local Ray cluster (``--executor ray --ray-workers W``, the
cluster started by the command) for each of ``--workers``, beside the same run without Ray; ``--latency`` makes
the server answer after that many seconds (e.g. 0.2), and each line says how far the wall time is
from the latency-bound ideal (``ceil(N / concurrency) x turns x latency``).

    python bench/scale.py [--sizes 100,1000] [--full] [--concurrency C] [--reply-chars R] [--src DIR]
    python bench/scale.py --executor ray --workers 1,2,4 --latency 0.2 --sizes 1000,2000 --concurrency 100

``--full`` adds 10,000. ``--src DIR`` runs the package found in DIR (e.g. an unpacked older commit, for a
baseline measured in the same sitting) with this Python instead of the console script.

Ends with one line: BENCH peak_mb_<N>=M cpu_ms_per_conv_<N>=C wall_ms_per_conv_<N>=W store_kb_per_conv_<N>=S ...
(with ``--executor ray``, each figure of a Ray run is suffixed ``_ray<W>``, and ``ideal_s_<N>`` / ``wall_s_<N>``
give the ideal and the wall in seconds), and, with two sizes or more, ``peak_mb_per_1k_conv[_ray<W>]``: how much
the driver's peak RSS grows per 1,000 conversations between the two largest sizes (flat memory: close to 0; 0.03
is 30 bytes a conversation; below about 1,000 conversations the run's bounded caches are still filling, so the
smallest size is left out of it). ``--no-local`` leaves out the runs without Ray.
"""

from __future__ import annotations

import argparse
import math
import os
import socket
import subprocess
import sys
import tempfile
import textwrap
import threading
import time
from dataclasses import dataclass
from pathlib import Path

SERVER = textwrap.dedent(
    """
    import asyncio, json, sys
    from aiohttp import web

    REPLY = "Your order ORD-1 has shipped. " + "x" * int(sys.argv[2])
    LATENCY = float(sys.argv[3])
    calls = 0

    async def chat(request):
        global calls
        calls += 1
        body = await request.json()
        if LATENCY:
            await asyncio.sleep(LATENCY)
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
    """One size's figures (``label``: ``local`` or ``ray<W>``)."""

    size: int
    label: str
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


def _watch_peak(pid: int, peak: list[int]) -> None:
    """Keep reading the process's own high-water mark of RSS (KB) until it exits."""
    status = Path(f"/proc/{pid}/status")
    while True:
        try:
            text = status.read_text()
        except OSError:
            return
        for line in text.splitlines():
            if line.startswith("VmHWM:"):
                peak[0] = max(peak[0], int(line.split()[1]))
        time.sleep(0.2)


def _one(command: list[str], suite: Path, root: Path, size: int, concurrency: int, *, workers: int = 0) -> Sample:
    label = f"ray{workers}" if workers else "local"
    db = root / f"runs-{size}-{label}.db"
    log = root / f"out-{size}-{label}.txt"
    args = [*command, "run", str(suite), "--repeat", str(size), "--db", str(db), "--concurrency", str(concurrency)]
    args += ["--no-cache", "--seed", "1"]
    if workers:
        args += ["--executor", "ray", "--ray-workers", str(workers)]
    peak = [0]
    with log.open("wb") as sink:
        started = time.perf_counter()
        child = subprocess.Popen(args, stdout=sink, stderr=subprocess.STDOUT, cwd=root)
        watcher = threading.Thread(target=_watch_peak, args=(child.pid, peak), daemon=True)
        watcher.start()
        # wait4: this child's own rusage (CPU; peak RSS where /proc cannot be read), not the server's.
        _, status, usage = os.wait4(child.pid, 0)
        wall = time.perf_counter() - started
    child.returncode = os.waitstatus_to_exitcode(status)
    checkpoints = db.with_name(f"{db.stem}-checkpoints.db")
    return Sample(
        size=size,
        label=label,
        wall_s=wall,
        cpu_s=usage.ru_utime + usage.ru_stime,
        peak_mb=(peak[0] or usage.ru_maxrss) / 1024,  # KB on Linux
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
    parser.add_argument("--latency", type=float, default=0.0, help="Seconds the server takes to answer.")
    parser.add_argument(
        "--executor", choices=("local", "ray"), default="local", help="ray: also run each size on a Ray cluster."
    )
    parser.add_argument("--workers", default="1,2,4", help="With --executor ray: the Ray worker counts to run.")
    parser.add_argument("--no-local", action="store_true", help="With --executor ray: only the Ray runs.")
    args = parser.parse_args()
    sizes = [int(part) for part in args.sizes.split(",") if part.strip()]
    workers = [int(part) for part in args.workers.split(",") if part.strip()] if args.executor == "ray" else []
    if args.full and 10_000 not in sizes:
        sizes.append(10_000)
    os.environ.setdefault("LITELLM_OFFLINE_MODE", "true")
    os.environ.pop("SIMULATOR_DB", None)
    port = _free_port()
    server = subprocess.Popen([sys.executable, "-c", SERVER, str(port), str(args.reply_chars), str(args.latency)])
    samples: list[Sample] = []
    try:
        _wait_for_port(port)
        with tempfile.TemporaryDirectory() as tmp:
            root = Path(tmp)
            suite = _suite(root, port, args.turns)
            command = _command(args.src)
            for size in sizes:
                ideal = math.ceil(size / args.concurrency) * args.turns * args.latency
                for count in [*([] if args.no_local and workers else [0]), *workers]:
                    sample = _one(command, suite, root, size, args.concurrency, workers=count)
                    samples.append(sample)
                    versus = f", {sample.wall_s / ideal:.2f}x the ideal {ideal:.0f} s" if ideal else ""
                    print(
                        f"{size:>6} conversations, {sample.label:>6}: wall {sample.wall_s:.1f} s "
                        f"({sample.wall_s * 1000 / size:.1f} ms/conv{versus}), "
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
        tag = f"{s.size}" if s.label == "local" else f"{s.size}_{s.label}"
        fields += [
            f"peak_mb_{tag}={s.peak_mb:.0f}",
            f"cpu_ms_per_conv_{tag}={s.cpu_s * 1000 / s.size:.2f}",
            f"wall_ms_per_conv_{tag}={s.wall_s * 1000 / s.size:.2f}",
            f"store_kb_per_conv_{tag}={s.store_bytes / s.size / 1024:.1f}",
            f"checkpoint_kb_per_conv_{tag}={s.checkpoint_bytes / s.size / 1024:.1f}",
            f"lines_{tag}={s.lines}",
        ]
        if args.latency:
            fields += [f"wall_s_{tag}={s.wall_s:.1f}"]
    if args.latency:
        for size in sizes:
            fields += [f"ideal_s_{size}={math.ceil(size / args.concurrency) * args.turns * args.latency:.1f}"]
    for label in dict.fromkeys(s.label for s in samples):
        slope = _slope([s for s in samples if s.label == label])
        if slope is not None:
            fields += [f"peak_mb_per_1k_conv{'' if label == 'local' else '_' + label}={slope:.2f}"]
    print("BENCH " + " ".join(fields))


def _slope(samples: list[Sample]) -> float | None:
    """MB of driver peak RSS per 1,000 conversations between the two largest sizes (None: one size)."""
    by_size = sorted(samples, key=lambda s: s.size)
    if len(by_size) < 2 or by_size[-1].size == by_size[-2].size:
        return None
    small, large = by_size[-2], by_size[-1]
    return (large.peak_mb - small.peak_mb) * 1000 / (large.size - small.size)


if __name__ == "__main__":
    main()
