"""The verdict mutation suite, whole: every mutant of tests/verdicts/ in every setting, through ``simulator.run``.

Passing conversations of the three case kinds get labelled agent faults (claims without the call in English and
German, wrong and missing arguments, skipped steps, wrong dates and amounts, forbidden phrases, text for the judge
planted in the agent's message or a tool's result) and user faults played by the stub user model (breaking
character, ending early, inventing facts, leaking the response guide, alone and beside the agent's faults); each
runs with the scripted or the stub user, without a judge or with the stub judge, in test mode and live; the
simulation cases with the stub user and judge are also recorded and replayed. The unmutated conversations must pass
with the stub judge (and pass or be unsure without one), and no conversation may end as an error.

Prints the outcome table (mutation × kind × mode), the mutations that give false passes or blame the wrong party,
the instructions the stub judge obeyed, and ends with one line:

    BENCH mutants=N false_pass=F agent_fault_blamed_on_user=A user_fault_blamed_on_agent=K unsure=U

    python bench/verdicts.py [--concurrency C] [--sample N] [--seed S]

``--sample 10`` runs the seeded subset of tests/verdicts/test_mutations.py (same seed), with its tables.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tests.verdicts.generate import (  # noqa: E402
    Observation,
    Tally,
    baselines,
    false_pass_table,
    groups,
    mutants_for,
    outcome_table,
    run_group,
    sample,
)
from tests.verdicts.stub_judge import StubJudge  # noqa: E402


def main() -> None:
    """Run every setting, print the tables and the BENCH line."""
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--concurrency", type=int, default=32, help="conversations at once per run")
    parser.add_argument("--sample", type=int, default=0, help="at most this many mutants per setting (0: all)")
    parser.add_argument("--seed", type=int, default=2026, help="the seed of --sample (setting i draws with seed + i)")
    options = parser.parse_args()
    judge = StubJudge()
    observations: list[Observation] = []
    started = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="verdicts-") as folder:
        for index, group in enumerate(groups()):
            mutants = mutants_for(group)
            if options.sample:
                mutants = sample(mutants, options.sample, options.seed + index)
            began = time.perf_counter()
            seen = run_group(group, baselines() + mutants, Path(folder), judge=judge, concurrency=options.concurrency)
            observations += seen
            took = time.perf_counter() - began
            print(f"{group.kind:<10} {group.mode:<28} {len(seen):>5} conversations {took:6.1f} s", file=sys.stderr)
    seconds = time.perf_counter() - started
    _check_baselines(observations)
    tally = Tally.of(observations)
    print(outcome_table(observations))
    print("\nMutations with false passes or the blame on the wrong party:")
    print(false_pass_table(observations))
    print(f"\nInstructions the stub judge obeyed: {dict(judge.obeyed)}")
    print(f"Questions asked: {dict(judge.asked)}")
    print(
        f"Errors: {tally.error}; unsure results that name nothing missing: {len(tally.unsure_unexplained)}; "
        f"mutants whose fault the conversation never reached (left out): {len(tally.not_exercised)}"
    )
    print(f"Runtime: {seconds:.1f} s for {len(observations)} conversations")
    print(tally.bench_line())


def _check_baselines(observations: list[Observation]) -> None:
    """The unmutated conversations pass with the stub judge, and pass or are unsure without one."""
    for seen in observations:
        if seen.mutant.label != "baseline":
            continue
        allowed = ("pass",) if seen.group.judge else ("pass", "unsure")
        if seen.outcome not in allowed:
            raise SystemExit(f"base conversation {seen.mutant.base} in {seen.group.kind} {seen.mode}: {seen.outcome}")


if __name__ == "__main__":
    main()
