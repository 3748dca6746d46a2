"""Hostile files against every reader of a user's file: none may crash, hang or exhaust memory.

Generates a few hundred hostile files (nesting at many depths, in flow and block style and in tool parameters;
alias bombs and billion laughs; integers of 100 to 100,000 digits; infinity, NaN and float overflow where
numbers are read; long lines; NUL bytes, bytes that are not UTF-8, control characters; ``/dev/zero`` and
named pipes; files one byte over the 10 MB limit; deep JSON; forged run exports; CSVs of 200k rows, of
quote errors on every row, of 10,000 columns), runs every reader on each in-process (suite, persona, agent
and hosted evals files through ``validate_paths``; the two CSV imports and the YAML they write; ``import_run``
of JSON and YAML; judge prompt files; judge-check transcripts) and a few through the CLI as subprocesses.

A file "crashed" when anything but Simulator's own errors escaped the reader, an error was not one located
line (``file:line:column: ...``, line and column from 1), the reader took longer than the time limit, or
(CLI) the process exited 70, printed a traceback or was killed.

    python bench/hostile.py [--timeout S] [--no-cli]

Ends with one line: BENCH hostile_files=N crashed=0 max_rss_mb=X worst_s=Y
"""

from __future__ import annotations

import argparse
import asyncio
import os
import re
import resource
import signal
import subprocess
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from types import FrameType
from typing import TYPE_CHECKING

from simulator.errors import ConfigError, ConfigErrors, SimulatorError
from simulator.loading._limits import MAX_FILE_BYTES

if TYPE_CHECKING:
    from simulator.models.run import RunRecord, StoredResult

FILES = {
    "suite": "suite.yaml",
    "persona": "personas/p.yaml",
    "agent": "agent.yaml",
    "evals": "evals.yaml",
    "csv": "tests.csv",
    "csv-turns": "turns.csv",
    "run-json": "run.json",
    "run-yaml": "run.yaml",
    "prompt": "prompts/expectation.md",
    "transcript": "t.json",
}
YAML_READERS = ("suite", "persona", "agent", "evals", "run-yaml")
#: A valid file for each YAML reader with ``{v}`` where a hostile value goes.
TEMPLATES = {
    "suite": "name: demo\nthresholds:\n  semantic_match: {v}\ncases:\n  - {name: c1, kind: scenario, goal: Book}\n",
    "persona": "name: {v}\npersonality: Patient.\n",
    "agent": "name: a\ntype: python\ncallable: bot.main:respond\nvariables:\n  v:\n    type: string\n"
    "    default: {v}\n",
    "evals": "evals:\n  - name: e\n    steps:\n      - goal: {v}\n",
    "run-yaml": "format: simulator-run\nversion: 1\nrun: {v}\nresults: []\n",
    "run-json": '{"format": "simulator-run", "version": 1, "run": {v}, "results": []}',
}
LOCATED = re.compile(r"^.+?:[1-9][0-9]*:[1-9][0-9]*: \S")


@dataclass
class Hostile:
    name: str
    reader: str
    content: bytes | str  # bytes, or "fifo" / "devzero"


def _flow(depth: int) -> str:
    return "[" * depth + "]" * depth


def _block(depth: int) -> str:
    return "\n" + "".join("  " * (i + 1) + f"k{i}:\n" for i in range(depth)) + "  " * (depth + 1) + "v"


def _laughs(levels: int, width: int) -> str:
    items = ", ".join(["lol"] * width)
    parts = [f"&l0 [{items}]"]
    for level in range(1, levels):
        parts.append(f"&l{level} [{', '.join([f'*l{level - 1}'] * width)}]")
    return "[" + ", ".join(parts) + "]"


def _merge_bomb(levels: int) -> str:
    parts = ["&m0 {a: 1, b: 2, c: 3}"]
    for level in range(1, levels):
        parts.append(f"&m{level} {{<<: [{', '.join([f'*m{level - 1}'] * 8)}], k{level}: x}}")
    return "[" + ", ".join(parts) + "]"


def _tool_parameters(levels: int) -> str:
    return '{"type": "object", "properties": {"x": ' * levels + "{}" + "}}" * levels


def generate() -> Iterator[Hostile]:
    """Every hostile file, each for one reader."""
    for reader in FILES:
        yield Hostile("over-the-size-limit-by-one", reader, b"#" * (MAX_FILE_BYTES + 1))
        yield Hostile("dev-zero", reader, "devzero")
        yield Hostile("named-pipe", reader, "fifo")
        yield Hostile("nul-byte", reader, b"ab\x00cd\n")
        yield Hostile("not-utf8", reader, b"ab\xffcd\n")
        yield Hostile("utf16-bom", reader, "name: x\n".encode("utf-16"))
        yield Hostile("truncated-utf8", reader, b"name: caf\xc3")
        yield Hostile("empty", reader, b"")
    values: dict[str, list[str]] = {
        "nesting-flow": [_flow(d) for d in (50, 97, 98, 99, 100, 101, 150, 300, 480, 999, 1000, 5000, 100_000)],
        "nesting-block": [_block(d) for d in (90, 101, 480, 998)],
        "billion-laughs": [_laughs(levels, width) for levels, width in ((4, 10), (5, 10), (6, 10), (9, 10), (30, 2))],
        "merge-bomb": [_merge_bomb(levels) for levels in (4, 8, 12)],
        "recursive-alias": ["&r [a, *r]"],
        "undefined-alias": ["*nowhere"],
        "huge-int": ["9" * n for n in (100, 101, 4300, 4301, 100_000)] + ["0x" + "f" * 5000, ":".join(["1"] * 5000)],
        "non-finite": [".inf", "-.inf", ".nan", ".NaN", "1.0e+999", "-1.0e+400", "1" * 400 + ".0"],
        "control-char": ["a\x1b[2Jb", "a\x07b", "a\x7fb", '"a\\u202eb"', "a\u0085b", "a\u2028b"],
        "long-line": ["x" * 1_000_000, '"' + "y" * 5_000_000 + '"'],
        "many-values": ["[" + ",".join(["a"] * 1_500_000) + "]"],
    }
    for reader in YAML_READERS:
        for kind, options in values.items():
            for index, value in enumerate(options):
                text = TEMPLATES[reader].replace("{v}", value)
                if len(text.encode()) <= MAX_FILE_BYTES or kind == "many-values":
                    yield Hostile(f"{kind}-{index}", reader, text.encode())
    yield Hostile("many-duplicate-keys", "suite", ("name: d\ncases: []\n" + "name: d\n" * 200_000).encode())
    yield Hostile(
        "many-unknown-keys", "suite", ("name: d\ncases: []\n" + "".join(f"k{i}: 1\n" for i in range(200_000))).encode()
    )
    yield Hostile("many-bad-cases", "suite", ("name: d\ncases:\n" + "  - no\n" * 200_000).encode())
    for levels in (40, 47, 48, 60, 150, 300):
        tool = f"  - name: t\n    parameters: {_tool_parameters(levels)}\n"
        agent = f"type: python\ncallable: bot.main:respond\ntools:\n{tool}"
        yield Hostile(f"tool-parameters-{levels}-levels", "agent", agent.encode())
    json_values = {
        "nesting": [_flow(d) for d in (99, 100, 101, 1001, 5000, 100_000, 3_000_000)],
        "huge-int": ["9" * n for n in (101, 4301, 1_000_000)],
        "non-finite": ["Infinity", "-Infinity", "NaN", "1e999", "-1e400"],
        "control-char": ['"a\x01b"', '"a\\ud800b"', '"\\udc00"'],
        "broken": ['{"a": ', '"unterminated', "[1, 2", "{]", "tru"],
    }
    for kind, options in json_values.items():
        for index, value in enumerate(options):
            yield Hostile(f"{kind}-{index}", "run-json", TEMPLATES["run-json"].replace("{v}", value).encode())
            if kind in ("nesting", "huge-int", "non-finite"):
                yield Hostile(f"{kind}-{index}", "transcript", value.encode())
    yield from _forged_exports()
    yield from _csvs()
    for name, text in (
        ("prompt-long-line", "x" * 5_000_000),
        ("prompt-control-chars", "Judge {expectation}\x1b[2J\x07 in {conversation}"),
        ("prompt-unknown-placeholder", "{nope}"),
    ):
        yield Hostile(name, "prompt", text.encode())


def _forged_exports() -> Iterator[Hostile]:
    from simulator.exchange import export_run

    record, results = _a_run()
    base = export_run(record, results)
    swaps = {
        "forged-totals": ('"passed": 1', '"passed": 30'),
        "infinite-duration": ('"duration_s": 1.5', '"duration_s": Infinity'),
        "nan-cost": ('"duration_s": 1.5', '"duration_s": NaN'),
        "negative-duration": ('"duration_s": 12.5', '"duration_s": -12.5'),
        "forged-outcome": ('"outcome": "fail"', '"outcome": "pass"'),
        "huge-repeat": ('"repeat": 1', '"repeat": ' + "9" * 5000),
        "deep-versions": ('"versions": {}', '"versions": {"x": ' + _flow(2000) + "}"),
        "infinite-cost": ('"usage": {}', '"usage": {"judge": {"calls": 1, "cost": Infinity}}'),
        "nan-correctness": ('"correctness": 0.5', '"correctness": NaN'),
    }
    for name, (old, new) in swaps.items():
        yield Hostile(f"export-{name}", "run-json", base.replace(old, new, 1).encode())
    yaml_base = export_run(record, results, "yaml")
    yield Hostile("export-yaml", "run-yaml", yaml_base.encode())
    yield Hostile(
        "export-yaml-infinite", "run-yaml", yaml_base.replace("duration_s: 1.5", "duration_s: .inf", 1).encode()
    )
    laughs = "".join(f"  l{i}: &l{i} [{', '.join([f'*l{i - 1}'] * 10)}]\n" for i in range(1, 10))
    yield Hostile(
        "export-yaml-149kb-laughs", "run-yaml", f"format: simulator-run\nx:\n  l0: &l0 [lol]\n{laughs}".encode()
    )


def _a_run() -> tuple[RunRecord, list[StoredResult]]:
    from datetime import UTC, datetime

    from simulator.models import Suite
    from simulator.models.run import RunRecord, RunSettings, StoredResult, SuiteSnapshot
    from simulator.models.scores import CaseResult
    from simulator.models.summary import RunSummary
    from simulator.models.transcript import Transcript, UserEvent

    suite = Suite.model_validate({"name": "Shop", "cases": [{"kind": "scenario", "name": "c", "goal": "Refund"}]})
    record = RunRecord(
        id="20261129-232501-ab12cd", created=datetime(2026, 11, 29, tzinfo=UTC), status="completed",
        suite_hash="h", snapshot=[SuiteSnapshot(path="s.yaml", suite=suite)], settings=RunSettings(),
        totals=RunSummary(total=2, passed=1, failed=1, correctness=0.5, duration_s=12.5),
    )  # fmt: skip
    results = []
    for repeat, outcome in enumerate(("pass", "fail")):
        transcript = Transcript(case="c", kind="scenario", events=[UserEvent(turn=1, text="Hi", source="llm")])
        result = CaseResult(case="c", kind="scenario", outcome=outcome, repeat=repeat, transcript=transcript)
        results.append(
            StoredResult(
                run_id=record.id,
                key=f"0:c:-:{repeat}",
                suite=0,
                case="c",
                repeat=repeat,
                outcome=outcome,
                duration_s=1.5,
                finished=datetime(2026, 11, 29, tzinfo=UTC),
                result=result,
            )
        )
    return record, results


def _csvs() -> Iterator[Hostile]:
    single = {
        "200k-rows": "prompt,must_contain\n" + "".join(f"q{i},a\n" for i in range(200_000)),
        "1m-tiny-rows": "prompt\n" + "q\n" * 1_000_000,
        "quote-error-every-row": "prompt,must_contain\n" + '"x"y,a\n' * 50_000,
        "unterminated-quote": 'prompt\n"' + "a\n" * 100_000,
        "10k-columns": ",".join(["prompt"] + [f"c{i}" for i in range(10_000)]) + "\n" + "x," * 10_000 + "x\n",
        "cell-over-field-limit": "prompt\n" + "z" * 200_000 + "\n",
        "control-chars": "prompt,name\n\x1b[2Jhi,\x1b]0;pwned\x07\n",
        "bidi-name": "prompt,name\nhi,\u202eevil\n",
        "list-cell-quotes": 'prompt,must_contain\nhi,"""' + '"' * 10_000 + '"\n',
        "many-terms": "prompt,must_contain\nhi," + '"' + ",".join(["t"] * 200_000) + '"\n',
    }
    for name, text in single.items():
        yield Hostile(f"csv-{name}", "csv", text.encode())
    turns = {
        "one-case-500k-turns": "case,turn,user\n" + "".join(f"c,{i + 1},m\n" for i in range(500_000)),
        "huge-turn-numbers": "case,turn,user\n" + "".join(f"c{i},{'9' * 5000},m\n" for i in range(100)),
        "turn-gaps": "case,turn,user\n" + "".join(f"c,{i * 1000 + 1},m\n" for i in range(10_000)),
        "many-cases": "case,turn,user\n" + "".join(f"c{i},1,m\n" for i in range(200_000)),
    }
    for name, text in turns.items():
        yield Hostile(f"csv-{name}", "csv-turns", text.encode())


def place(root: Path, hostile: Hostile) -> Path:
    """Write the hostile file, and what its reader needs beside it, into ``root``."""
    (root / ".git").mkdir(exist_ok=True)
    # The agents here name bot.main:respond, which validate imports; a suite needs an agent to test (an
    # imported CSV suite too): without them a valid file would be counted as refused.
    (root / "bot").mkdir(exist_ok=True)
    (root / "bot" / "__init__.py").write_text("", encoding="utf-8")
    (root / "bot" / "main.py").write_text("def respond(messages):\n    return 'hi'\n", encoding="utf-8")
    if not (root / "agent.yaml").exists() and FILES[hostile.reader] != "agent.yaml":
        (root / "agent.yaml").write_text("type: http\nbase_url: http://127.0.0.1:9/v1\n", encoding="utf-8")
    path = root / FILES[hostile.reader]
    path.parent.mkdir(parents=True, exist_ok=True)
    if hostile.content == "fifo":
        os.mkfifo(path)
    elif hostile.content == "devzero":
        path.symlink_to("/dev/zero")
    else:
        assert isinstance(hostile.content, bytes)
        path.write_bytes(hostile.content)
    if hostile.reader == "prompt":
        (root / "suite.yaml").write_text(
            "name: s\nagent: {type: python, callable: bot.main:respond}\njudge_prompts:\n"
            "  expectation: prompts/expectation.md\ncases:\n  - kind: scenario\n    name: c\n    goal: Hi\n",
            encoding="utf-8",
        )
    if hostile.reader == "transcript":
        (root / "labels.yaml").write_text(
            "items:\n  - transcript: t.json\n    labels: {goal_satisfaction: 1}\n", encoding="utf-8"
        )
    return path


def read(root: Path, reader: str) -> list[str]:
    """Every error line the reader gives (empty when it accepts the file)."""
    from simulator.exchange import ExchangeError, import_run
    from simulator.loading import load_suite, validate_paths
    from simulator.loading.csv_import import dump_suite_yaml, import_csv
    from simulator.loading.csv_multiturn import import_multiturn_csv

    path = root / FILES[reader]
    try:
        if reader in ("suite", "persona", "agent", "evals"):
            return [error.render() for error in validate_paths([path]).errors]
        if reader in ("csv", "csv-turns"):
            data = (import_csv if reader == "csv" else import_multiturn_csv)(path)
            suite = root / "imported.yaml"
            suite.write_text(dump_suite_yaml(data), encoding="utf-8")
            # What an import writes, validate must accept.
            return [f"the imported suite is refused: {e.render()}" for e in validate_paths([suite]).errors]
        if reader in ("run-json", "run-yaml"):
            import_run(path)
        elif reader == "prompt":
            from simulator.runner import load_prompt_overrides

            load_prompt_overrides(load_suite(root / "suite.yaml"))
        else:
            from simulator.analysis.judge_check import judge_check
            from simulator.llm import FakeScript, LLMClient
            from simulator.models import ModelRoles

            llm = LLMClient(ModelRoles.model_validate({"judge": "fake/judge"}), fake_script=FakeScript())
            asyncio.run(judge_check(root / "labels.yaml", llm=llm))
    except ConfigErrors as exc:
        return [error.render() for error in exc.errors] or ["ConfigErrors without errors"]
    except ConfigError as exc:
        return [exc.render()]
    except ExchangeError as exc:
        return [line for line in str(exc).splitlines() if not line.startswith("... and ")]
    except SimulatorError as exc:
        # Another of Simulator's errors (a judge without answers...): not a crash, but not a file error either.
        return [f"(not located) {type(exc).__name__}: {exc}"]
    return []


class _Hung(Exception):
    pass


def _alarm(signum: int, frame: FrameType | None) -> None:
    raise _Hung


def _peak_mb(who: int) -> float:
    return resource.getrusage(who).ru_maxrss / 1024


def run_in_process(
    hostiles: list[Hostile], timeout: float, verbose: bool = False
) -> tuple[Counter[str], list[str], float]:
    outcomes: Counter[str] = Counter()
    peak = _peak_mb(resource.RUSAGE_SELF)
    crashes: list[str] = []
    worst = 0.0
    signal.signal(signal.SIGALRM, _alarm)
    with tempfile.TemporaryDirectory() as folder:
        for number, hostile in enumerate(hostiles):
            root = Path(folder, str(number)).resolve()
            root.mkdir()
            place(root, hostile)
            os.chdir(root)
            label = f"{hostile.reader}/{hostile.name}"
            started = time.perf_counter()
            signal.setitimer(signal.ITIMER_REAL, timeout)
            try:
                errors = read(root, hostile.reader)
            except _Hung:
                errors = None
                crashes.append(f"{label}: no answer within {timeout:.0f} s")
            except BaseException as exc:  # whatever escapes is the finding
                errors = None
                crashes.append(f"{label}: {type(exc).__name__}: {str(exc)[:200]}")
            finally:
                signal.setitimer(signal.ITIMER_REAL, 0)
            took = time.perf_counter() - started
            worst = max(worst, took)
            if verbose and (took > 1.0 or _peak_mb(resource.RUSAGE_SELF) > peak + 50):
                print(f"  {label}: {took:.2f} s, peak RSS {_peak_mb(resource.RUSAGE_SELF):.0f} MB", flush=True)
            peak = _peak_mb(resource.RUSAGE_SELF)
            if verbose and errors is not None:
                print(f"    {label}: {errors[0][:160] if errors else 'accepted'}", flush=True)
            if errors is None:
                outcomes["crashed"] += 1
            elif not errors:
                outcomes["accepted"] += 1
            elif all(LOCATED.match(line) and "\n" not in line for line in errors):
                outcomes["located error"] += 1
            else:
                outcomes["crashed"] += 1
                crashes.append(f"{label}: an error is not one located line: {errors[0][:200]!r}")
            os.chdir(folder)
    return outcomes, crashes, worst


#: Through the CLI: the arguments, the hostile file they read, and the exit codes that are fine.
CLI_CASES: list[tuple[str, list[str], Hostile, tuple[int, ...]]] = [
    ("validate a suite nested 480 deep", ["validate", "suite.yaml"],
     Hostile("", "suite", TEMPLATES["suite"].replace("{v}", _flow(480)).encode()), (2,)),
    ("validate /dev/zero", ["validate", "suite.yaml"], Hostile("", "suite", "devzero"), (2,)),
    ("validate a named pipe", ["validate", "suite.yaml"], Hostile("", "suite", "fifo"), (2,)),
    ("import a run nested 5000 deep", ["import", "run", "run.json", "--db", "runs.db"],
     Hostile("", "run-json", TEMPLATES["run-json"].replace("{v}", _flow(5000)).encode()), (2,)),
    ("import a run with a 4301-digit number", ["import", "run", "run.json", "--db", "runs.db"],
     Hostile("", "run-json", TEMPLATES["run-json"].replace("{v}", "9" * 4301).encode()), (2,)),
    ("import a billion-laughs YAML run", ["import", "run", "run.yaml", "--db", "runs.db"],
     Hostile("", "run-yaml", TEMPLATES["run-yaml"].replace("{v}", _laughs(9, 10)).encode()), (2,)),
    ("import a 200k-row CSV", ["import", "csv", "tests.csv", "-o", "out.yaml"],
     Hostile("", "csv", ("prompt\n" + "".join(f"q{i}\n" for i in range(200_000))).encode()), (2,)),
    ("import a named pipe as CSV", ["import", "csv", "tests.csv", "-o", "out.yaml"], Hostile("", "csv", "fifo"), (2,)),
]  # fmt: skip


def run_cli(timeout: float) -> tuple[int, list[str], float]:
    crashes: list[str] = []
    worst = 0.0
    env = {**os.environ, "LITELLM_OFFLINE_MODE": "true"}
    with tempfile.TemporaryDirectory() as folder:
        for number, (label, args, hostile, allowed) in enumerate(CLI_CASES):
            root = Path(folder, str(number))
            root.mkdir()
            place(root, hostile)
            started = time.perf_counter()
            try:
                done = subprocess.run(
                    [sys.executable, "-m", "simulator", *args], cwd=root, env=env, capture_output=True, text=True,
                    timeout=timeout, check=False,
                )  # fmt: skip
            except subprocess.TimeoutExpired:
                crashes.append(f"cli {label}: no answer within {timeout:.0f} s")
                continue
            finally:
                worst = max(worst, time.perf_counter() - started)
            output = done.stdout + done.stderr
            if done.returncode not in allowed or "Traceback" in output or done.returncode == 70:
                crashes.append(f"cli {label}: exit {done.returncode}: {output.strip()[-300:]!r}")
    return len(CLI_CASES), crashes, worst


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--timeout", type=float, default=60.0, help="seconds a reader may take on one file")
    parser.add_argument("--no-cli", action="store_true", help="skip the subprocess runs of the CLI")
    parser.add_argument("--verbose", action="store_true", help="name each file that is slow or raises peak RSS")
    parser.add_argument("--only", default="", help="run only the files whose reader/name contains this")
    args = parser.parse_args()
    hostiles = [h for h in generate() if args.only in f"{h.reader}/{h.name}"]
    by_reader = Counter(h.reader for h in hostiles)
    print(f"{len(hostiles)} hostile files: " + ", ".join(f"{reader} {count}" for reader, count in by_reader.items()))
    outcomes, crashes, worst = run_in_process(hostiles, args.timeout, args.verbose)
    print("in process: " + ", ".join(f"{count} {what}" for what, count in sorted(outcomes.items())))
    print(f"in process: peak RSS {_peak_mb(resource.RUSAGE_SELF):.0f} MB, slowest file {worst:.2f} s")
    tried = len(hostiles)
    if not args.no_cli:
        count, cli_crashes, cli_worst = run_cli(max(args.timeout, 120.0))
        tried += count
        crashes += cli_crashes
        print(f"through the CLI: {count} commands, {len(cli_crashes)} crashed, slowest {cli_worst:.2f} s")
    for crash in crashes:
        print(f"CRASH {crash}")
    peak = max(_peak_mb(resource.RUSAGE_SELF), _peak_mb(resource.RUSAGE_CHILDREN))
    print(f"BENCH hostile_files={tried} crashed={len(crashes)} max_rss_mb={peak:.0f} worst_s={worst:.2f}")


if __name__ == "__main__":
    main()
