"""Time `simulator validate` on a generated suite of 1,000 cases (target: under 1 s on a 2-core machine).

Measures the whole command as a user runs it (a fresh process: interpreter start, imports, parsing, schema
checks, models, cross-references), best of several runs, and the in-process load alone.

    python bench/validate.py [--cases N] [--runs R]

Ends with one line: BENCH cases=N seconds=S load_seconds=L
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
import time
from pathlib import Path

AGENT = """\
type: python
callable: simulator.demo.shop:respond
variables:
  order_id: {type: string}
  customer_id: {type: string}
tools:
  - name: lookup_order
    parameters: {type: object, properties: {order_id: {type: string}}, required: [order_id]}
  - name: refund_order
    parameters: {type: object, properties: {order_id: {type: string}, reason: {type: string}}}
"""

PERSONA = "name: {name}\npersonality: A customer who {trait}.\nlanguage: en\n"


def _case(i: int) -> str:
    kind = ("simulation", "scenario", "golden")[i % 3]
    head = f"""\
  - kind: {kind}
    name: case_{i:04d}
    tags: [generated, group_{i % 10}]
    personas: [persona_{i % 5}]
    session_parameters:
      order_id: "A{i:05d}"
      customer_id: "C{i % 97}"
    expectations:
      - "Agent is polite"
      - text: Looks up the order
        tool_call: {{name: lookup_order, arguments: {{order_id: "A{i:05d}"}}}}
      - must_not_contain: [password, "23,60"]
"""
    if kind == "simulation":
        return (
            head
            + f"""\
    steps:
      - goal: Ask where order A{i:05d} is.
        success_criteria: The agent gives the delivery status.
        max_turns: 3
        response_guide: {{order number: "A{i:05d}"}}
        expectations: [looks up the order]
      - goal: Ask for a refund because the parcel is late.
        success_criteria: The agent starts a refund or escalates.
        checks:
          - tool_call: {{name: refund_order, arguments: {{order_id: "A{i:05d}"}}}}
      - static_utterance: Thanks, bye.
"""
        )
    if kind == "scenario":
        return (
            head
            + f"""\
    goal: Find out why order A{i:05d} has not arrived and get a new delivery date.
    success_criteria: The agent gives a new delivery date.
    max_turns: 8
"""
        )
    return (
        head
        + f"""\
    turns:
      - user: Where is my order A{i:05d}?
        expect:
          message: Your order A{i:05d} is on its way.
          must_contain: [A{i:05d}]
          tool_calls:
            - name: lookup_order
              arguments: {{order_id: "A{i:05d}"}}
      - user: Thanks!
        expectations: [agent is polite]
"""
    )


def build(root: Path, cases: int) -> Path:
    """Write agent.yaml, five personas and one suite of ``cases`` cases under ``root``."""
    (root / "personas").mkdir()
    for n in range(5):
        persona = PERSONA.format(name=f"persona_{n}", trait=f"has trait {n}")
        (root / "personas" / f"persona_{n}.yaml").write_text(persona)
    suites = root / "suites"
    suites.mkdir()
    (suites / "agent.yaml").write_text(AGENT)
    text = "name: generated\ndescription: Benchmark suite\ncases:\n" + "".join(_case(i) for i in range(cases))
    (suites / "big.yaml").write_text(text)
    return suites / "big.yaml"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--cases", type=int, default=1000)
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        suite = build(root, args.cases)
        size_kb = suite.stat().st_size / 1024
        command = [sys.executable, "-m", "simulator", "validate", "suites", "personas"]
        times = []
        for _ in range(args.runs):
            start = time.perf_counter()
            done = subprocess.run(command, cwd=root, capture_output=True, text=True, check=False)
            times.append(time.perf_counter() - start)
            if done.returncode != 0:
                print(done.stdout[-2000:], done.stderr[-2000:])
                raise SystemExit(f"validate failed with exit code {done.returncode}")
        from simulator.loading import validate_paths

        loads = []
        for _ in range(args.runs):
            start = time.perf_counter()
            report = validate_paths([root / "suites", root / "personas"])
            loads.append(time.perf_counter() - start)
            if not report.ok or sum(report.case_counts().values()) != args.cases:
                raise SystemExit("validate_paths did not load the generated suite cleanly")
        print(f"suite: {args.cases} cases, {size_kb:.0f} KiB")
        print(
            f"simulator validate (fresh process), best of {args.runs}: {min(times):.3f} s (all: "
            + ", ".join(f"{t:.3f}" for t in times)
            + ")"
        )
        print(f"validate_paths in process, best of {args.runs}: {min(loads):.3f} s")
        print(f"BENCH cases={args.cases} seconds={min(times):.3f} load_seconds={min(loads):.3f}")


if __name__ == "__main__":
    main()
