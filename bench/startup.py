"""Start-up of the console script: time to the first model request, and the imports of ``--help`` and ``validate``.

The goal: ``simulator run SUITE`` sends its first request at most 1 s after the command starts for an
OpenAI-compatible model (``openai/...`` with ``api_base``), and ``simulator --help`` / ``simulator validate``
spend under 0.3 s in imports. The machine is noisy (2 cores shared by several sessions: a wall time can triple
within minutes), so every wall time comes with the CPU time it took, which load changes much less, and the first
request also with the bare loop's, measured in the same sitting:

* first request: from spawning a process to the first request reaching the local fake server
  (``bench/_server.py``, its own process), for the console script ``simulator run`` on the ``bench/peers.py``
  suite (LLM user and judge ``openai/...`` on the server, ``http`` agent; one conversation of one turn) and for
  the bare asyncio + openai SDK loop of ``bench/peers.py`` (``ratio_first_request`` = Simulator / bare, on wall
  times; ``ratio_first_request_cpu`` on CPU times). The wall is the server's arrival time less the spawn time;
  the CPU is the process's own at its first ``socket.connect`` (an audit hook installed by a ``sitecustomize``
  module on the children's ``PYTHONPATH``, which prints it and changes nothing else);
* imports: ``simulator --help`` and ``simulator validate suites/demo`` run with ``PYTHONPROFILEIMPORTTIME=1``; the
  sum of the top-level imports' cumulative times, less the same sum for ``python -c pass`` (the interpreter's own
  start-up imports); the profiler adds its own overhead, so these read a little high. Beside them, the CPU of each
  whole process, run without the profiler (interpreter start-up included: ``python -c pass`` is printed too).

Sittings run one after another, each measuring every figure once, after one sitting that is not counted (it
warms the page cache and writes the bytecode caches); the BENCH line gives the medians. The children run without
``PYTHONDONTWRITEBYTECODE``, as after ``pip install``, which compiles the bytecode: with the variable set, an
editable install compiles Simulator's own modules from source at every start.

    python bench/startup.py [--sittings S]

Ends with one line:
BENCH first_request_s=F first_request_bare_s=B ratio_first_request=R first_request_cpu_s=FC
first_request_bare_cpu_s=BC ratio_first_request_cpu=RC help_import_s=H validate_import_s=V help_cpu_s=HC
validate_cpu_s=VC
"""

from __future__ import annotations

import argparse
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from _server import FakeServer, child_environment  # bench/_server.py: the shared fake server
from peers import BARE, _console_script, _suite  # the same bare loop and suite as the side-by-side bench

ROOT = Path(__file__).resolve().parent.parent

# Installed as ``sitecustomize`` in the children: prints the process's CPU time at its first connection.
FIRST_CONNECT_HOOK = """
import sys, time

def _first_connect(event, args, seen=[]):
    if event == "socket.connect" and not seen:
        seen.append(True)
        print(f"BENCH_FIRST_CONNECT_CPU={time.process_time():.4f}", file=sys.stderr, flush=True)

sys.addaudithook(_first_connect)
"""


def _environment(hooks: Path | None = None) -> dict[str, str]:
    env = child_environment()
    env.pop("PYTHONPROFILEIMPORTTIME", None)
    if hooks is not None:
        env["PYTHONPATH"] = os.pathsep.join(p for p in (str(hooks), env.get("PYTHONPATH", "")) if p)
    return env


def _first_request(command: list[str], server: FakeServer, cwd: Path, hooks: Path) -> tuple[float, float]:
    """(seconds from spawning ``command`` to the server's first request, the process's CPU seconds at its first
    connection); the process is run to its end."""
    server.stats()  # reset
    spawned = time.time()
    done = subprocess.run(command, cwd=cwd, env=_environment(hooks), capture_output=True, text=True, check=False)
    if done.returncode not in (0, 1):
        raise SystemExit(f"{command[:2]} exited with {done.returncode}:\n{done.stderr[-3000:]}")
    first = server.stats().get("first_request")
    cpu = re.search(r"BENCH_FIRST_CONNECT_CPU=([\d.]+)", done.stderr)
    if first is None or cpu is None:
        raise SystemExit(f"{command[:2]} sent no request:\n{done.stderr[-3000:]}")
    return float(first) - spawned, float(cpu.group(1))


def _top_level_imports(stderr: str) -> float:
    """Seconds spent in top-level imports, from ``-X importtime`` output (cumulative column, no indentation)."""
    total = 0
    for line in stderr.splitlines():
        if not line.startswith("import time:"):
            continue
        parts = line.split("|")
        if len(parts) != 3 or not parts[1].strip().isdigit():
            continue  # the header line
        name = parts[2]
        if name.startswith(" ") and not name.startswith("  "):  # one space: a top-level import
            total += int(parts[1])
    return total / 1e6


def _run(command: list[str], *, profile_imports: bool) -> tuple[float, float]:
    """(seconds in top-level imports with ``profile_imports``, else 0; CPU seconds of the whole process)."""
    env = dict(_environment(), PYTHONPROFILEIMPORTTIME="1") if profile_imports else _environment()
    process = subprocess.Popen(command, cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    stderr = process.stderr.read() if process.stderr is not None else ""
    _, status, usage = os.wait4(process.pid, 0)
    if os.waitstatus_to_exitcode(status) != 0:
        raise SystemExit(f"{command} exited with {os.waitstatus_to_exitcode(status)}:\n{stderr[-3000:]}")
    return (_top_level_imports(stderr) if profile_imports else 0.0), usage.ru_utime + usage.ru_stime


def _sitting(server: FakeServer, suite: Path, where: Path, script: str, hooks: Path) -> dict[str, float]:
    bare, bare_cpu = _first_request([sys.executable, "-c", BARE, server.base_url, "1", "1", "1"], server, where, hooks)
    cli, cli_cpu = _first_request(
        [script, "run", str(suite), "--repeat", "1", "--concurrency", "1", "--no-cache", "--db", str(where / "s.db")],
        server, where, hooks,
    )  # fmt: skip
    figures = {
        "first_request_s": cli,
        "first_request_bare_s": bare,
        "ratio_first_request": cli / bare,
        "first_request_cpu_s": cli_cpu,
        "first_request_bare_cpu_s": bare_cpu,
        "ratio_first_request_cpu": cli_cpu / bare_cpu,
    }
    for name, command in (
        ("interpreter", [sys.executable, "-c", "pass"]),
        ("help", [script, "--help"]),
        ("validate", [script, "validate", "suites/demo"]),
    ):
        figures[f"{name}_import_s"], _ = _run(command, profile_imports=True)
        _, figures[f"{name}_cpu_s"] = _run(command, profile_imports=False)
    for name in ("help", "validate"):
        figures[f"{name}_import_s"] -= figures["interpreter_import_s"]
    return figures


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sittings", type=int, default=3, help="How many times to measure everything (medians).")
    args = parser.parse_args()
    script = _console_script()
    sittings: list[dict[str, float]] = []
    with tempfile.TemporaryDirectory() as tmp, FakeServer(latency=0.0) as server:
        where = Path(tmp)
        hooks = where / "hooks"
        hooks.mkdir()
        (hooks / "sitecustomize.py").write_text(FIRST_CONNECT_HOOK, encoding="utf-8")
        suite = _suite(where, server.base_url, turns=1, role_concurrency=None)
        _sitting(server, suite, where, script, hooks)  # not counted: see the module docstring
        for number in range(1, args.sittings + 1):
            figures = _sitting(server, suite, where, script, hooks)
            sittings.append(figures)
            print(f"sitting {number}: " + "  ".join(f"{k}={v:.3f}" for k, v in figures.items()), flush=True)
    m = {key: statistics.median(s[key] for s in sittings) for key in sittings[0]}
    print(f"\nmedians of {len(sittings)} sittings (wall s / CPU s):")
    print(
        f"  first request, console script    {m['first_request_s']:.3f} / {m['first_request_cpu_s']:.3f}"
        "  (target: wall <= 1 s)"
    )
    print(f"  first request, bare openai loop  {m['first_request_bare_s']:.3f} / {m['first_request_bare_cpu_s']:.3f}")
    print(f"  Simulator / bare                 {m['ratio_first_request']:.2f} / {m['ratio_first_request_cpu']:.2f}")
    print(f"  --help: imports {m['help_import_s']:.3f}, process CPU {m['help_cpu_s']:.3f}  (target: imports < 0.3 s)")
    print(f"  validate suites/demo: imports {m['validate_import_s']:.3f}, process CPU {m['validate_cpu_s']:.3f}")
    print(f"  python -c pass: process CPU {m['interpreter_cpu_s']:.3f}")
    keys = ("first_request_s", "first_request_bare_s", "ratio_first_request", "first_request_cpu_s",
            "first_request_bare_cpu_s", "ratio_first_request_cpu", "help_import_s", "validate_import_s",
            "help_cpu_s", "validate_cpu_s")  # fmt: skip
    print("BENCH " + " ".join(f"{key}={m[key]:.3f}" for key in keys))


if __name__ == "__main__":
    main()
