"""Start-up of the console script: time to the first model request, and the imports of ``--help`` and ``validate``.

Issue 12, goal 4: ``simulator run SUITE`` sends its first request at most 1 s after the command starts for an
OpenAI-compatible model (``openai/...`` with ``api_base``), and ``simulator --help`` / ``simulator validate``
spend under 0.3 s in imports. The machine is noisy, so every figure is also given against a baseline measured
in the same sitting:

* first request: the seconds from spawning a process to the first request reaching the local fake server
  (``bench/_server.py``, its own process), for the console script ``simulator run`` on the ``bench/peers.py``
  suite (LLM user and judge ``openai/...`` on the server, ``http`` agent; one conversation of one turn) and for
  the bare asyncio + openai SDK loop of ``bench/peers.py`` (``ratio_first_request`` = Simulator / bare);
* imports: the console script run with ``PYTHONPROFILEIMPORTTIME=1``; the sum of the top-level imports'
  cumulative times, less the same sum for ``python -c pass`` (the interpreter's own start-up imports), for
  ``simulator --help`` and ``simulator validate suites/demo``. The import profiler adds its own overhead, so
  these read a little high. The wall of each whole process is printed beside them.

Sittings run one after another, each measuring every figure once; the BENCH line gives the medians.

The children run without ``PYTHONDONTWRITEBYTECODE`` (the warm-up writes the bytecode caches), as after
``pip install``, which compiles them: with the variable set, an editable install compiles Simulator's own modules
from source at every start.

    python bench/startup.py [--sittings S]

Ends with one line:
BENCH first_request_s=F first_request_bare_s=B ratio_first_request=R help_import_s=H validate_import_s=V
help_wall_s=HW validate_wall_s=VW
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from _server import FakeServer  # bench/_server.py: the shared fake server
from peers import BARE, _console_script, _suite  # the same bare loop and suite as the side-by-side bench

ROOT = Path(__file__).resolve().parent.parent


def _environment() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("SIMULATOR_DB", "OPENAI_BASE_URL", "OPENAI_API_BASE")}
    env.update(BENCH_FAKE_KEY="not-a-real-key", LITELLM_OFFLINE_MODE="true", LITELLM_LOCAL_MODEL_COST_MAP="True")
    env.pop("PYTHONPROFILEIMPORTTIME", None)
    env.pop("PYTHONDONTWRITEBYTECODE", None)  # see the module docstring
    return env


def _first_request(command: list[str], server: FakeServer, cwd: Path) -> float:
    """Seconds from spawning ``command`` to the server's first request (the process is run to its end)."""
    server.stats()  # reset
    spawned = time.time()
    done = subprocess.run(command, cwd=cwd, env=_environment(), capture_output=True, check=False)
    if done.returncode not in (0, 1):
        raise SystemExit(f"{command[:2]} exited with {done.returncode}:\n{done.stderr.decode()[-3000:]}")
    first = server.stats().get("first_request")
    if first is None:
        raise SystemExit(f"{command[:2]} sent no request")
    return float(first) - spawned


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


def _imports(command: list[str]) -> tuple[float, float]:
    """(seconds in top-level imports, wall of the whole process) of ``command``."""
    env = dict(_environment(), PYTHONPROFILEIMPORTTIME="1")
    started = time.perf_counter()
    done = subprocess.run(command, cwd=ROOT, env=env, capture_output=True, text=True, check=False)
    wall = time.perf_counter() - started
    if done.returncode != 0:
        raise SystemExit(f"{command} exited with {done.returncode}:\n{done.stderr[-3000:]}")
    return _top_level_imports(done.stderr), wall


def _sitting(server: FakeServer, suite: Path, where: Path, script: str) -> dict[str, float]:
    bare = _first_request([sys.executable, "-c", BARE, server.base_url, "1", "1", "1"], server, where)
    cli = _first_request(
        [script, "run", str(suite), "--repeat", "1", "--concurrency", "1", "--no-cache", "--db", str(where / "s.db")],
        server,
        where,
    )
    interpreter, interpreter_wall = _imports([sys.executable, "-c", "pass"])
    help_imports, help_wall = _imports([script, "--help"])
    validate_imports, validate_wall = _imports([script, "validate", "suites/demo"])
    return {
        "first_request_s": cli,
        "first_request_bare_s": bare,
        "ratio_first_request": cli / bare,
        "help_import_s": help_imports - interpreter,
        "validate_import_s": validate_imports - interpreter,
        "help_wall_s": help_wall,
        "validate_wall_s": validate_wall,
        "interpreter_wall_s": interpreter_wall,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sittings", type=int, default=3, help="How many times to measure everything (medians).")
    args = parser.parse_args()
    script = _console_script()
    sittings: list[dict[str, float]] = []
    with tempfile.TemporaryDirectory() as tmp, FakeServer(latency=0.0) as server:
        where = Path(tmp)
        suite = _suite(where, server.base_url, turns=1, role_concurrency=None)
        # A sitting not counted: warms the page cache and writes the bytecode caches, so that the first sitting
        # does not pay for them alone.
        _sitting(server, suite, where, script)
        for number in range(1, args.sittings + 1):
            figures = _sitting(server, suite, where, script)
            sittings.append(figures)
            print(f"sitting {number}: " + "  ".join(f"{k}={v:.3f}" for k, v in figures.items()), flush=True)
    medians = {key: statistics.median(s[key] for s in sittings) for key in sittings[0]}
    print(f"\nmedians of {len(sittings)} sittings:")
    print(f"  first request, console script    {medians['first_request_s']:.3f} s  (target <= 1 s)")
    print(f"  first request, bare openai loop  {medians['first_request_bare_s']:.3f} s")
    print(f"  Simulator / bare                 {medians['ratio_first_request']:.2f}")
    print(f"  imports of --help                {medians['help_import_s']:.3f} s  (target < 0.3 s)")
    print(f"  imports of validate suites/demo  {medians['validate_import_s']:.3f} s  (target < 0.3 s)")
    print(f"  wall of --help / validate / python -c pass   {medians['help_wall_s']:.3f} / "
          f"{medians['validate_wall_s']:.3f} / {medians['interpreter_wall_s']:.3f} s")  # fmt: skip
    keys = ("first_request_s", "first_request_bare_s", "ratio_first_request", "help_import_s", "validate_import_s",
            "help_wall_s", "validate_wall_s")  # fmt: skip
    print("BENCH " + " ".join(f"{key}={medians[key]:.3f}" for key in keys))


if __name__ == "__main__":
    main()
