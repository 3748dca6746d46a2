"""The verdict mutation suite's generator and classifier: which mutants run in which setting, one
``simulator.run`` per setting, and what each outcome means.

A setting (:class:`Group`) is a case kind × who plays the user (nobody for golden cases, the scripted user, or the
stub user model) × the judge (none, or the stub judge model) × the tools (test mode with fakes, or live with
the functions in tools.py) × whether the run is recorded and replayed. Every setting runs the unmutated base
conversations (which must pass with the stub judge, and pass or be unsure without a judge) and its mutants:
agent faults everywhere, user faults and agent faults with a user slip only where the stub user plays the user.

Each mutant's outcome is classified (:class:`Tally`): an agent fault that ends ``pass`` or ``user_error`` is a
false pass, one that ends ``user_error`` is also blamed on the user; a user fault (with a correct agent) that ends
``fail`` is blamed on the agent; ``unsure`` and ``error`` are counted.
"""

from __future__ import annotations

import itertools
import random
from collections import Counter, defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

import simulator
from simulator.llm import FakeScript
from tests.verdicts.conversations import BASES
from tests.verdicts.mutations import Mutant, agent_mutants, combined_mutants, user_mutants
from tests.verdicts.stub_judge import StubJudge
from tests.verdicts.stub_user import user_reply
from tests.verdicts.suites import Kind, write_suites

User = Literal["none", "scripted", "stub"]
KINDS: tuple[Kind, ...] = ("golden", "scenario", "simulation")
#: Words that show an unsure result names what was missing: the judge (none configured, or it could not tell), or
#: the evidence (a quote).
MISSING = ("judge", "evidence", "quote")


@dataclass(frozen=True)
class Group:
    """One setting: every mutant in it runs in one ``simulator.run``."""

    kind: Kind
    user: User
    judge: bool
    live: bool
    replay: bool = False

    @property
    def mode(self) -> str:
        """The setting but its kind, as the result table shows it."""
        parts = [f"{self.user} user" if self.user != "none" else "no user", "judge" if self.judge else "no judge"]
        parts.append("live" if self.live else "test")
        return "/".join(parts)

    @property
    def slug(self) -> str:
        """A folder name for the setting's files."""
        return f"{self.kind}-{self.mode.replace('/', '-').replace(' ', '_')}{'-replay' if self.replay else ''}"


def groups() -> list[Group]:
    """Every setting: golden cases without a user, the other kinds with each user; each with and without the
    stub judge, in test mode and live. The simulations with the stub user and judge in test mode (the setting
    that asks the judge the most) are recorded and replayed."""
    found = []
    for kind in KINDS:
        users: tuple[User, ...] = ("none",) if kind == "golden" else ("scripted", "stub")
        for user, judge, live in itertools.product(users, (False, True), (False, True)):
            replay = kind == "simulation" and user == "stub" and judge and not live
            found.append(Group(kind, user, judge, live, replay))
    return found


def mutants_for(group: Group) -> list[Mutant]:
    """Every mutant the setting can run (not the unmutated base conversations)."""
    found: list[Mutant] = []
    for base in BASES.values():
        found += agent_mutants(base)
        if group.user == "stub":
            found += user_mutants(base) + combined_mutants(base)
    if group.kind == "scenario":
        # A scenario ends once its goal is reached, after the last request with a tool: its closing line is
        # never said, and a fault planted in the answer to it would never happen.
        found = [mutant for mutant in found if mutant.stage < len(BASES[mutant.base].stages)]
    return found


def baselines() -> list[Mutant]:
    """The unmutated base conversations."""
    return [Mutant(base) for base in BASES]


def sample(mutants: Sequence[Mutant], size: int, seed: int) -> list[Mutant]:
    """``size`` of ``mutants``, seeded, spread over the mutations: one of each mutation in turn, each drawn at
    random from its own."""
    rng = random.Random(seed)
    buckets: dict[str, list[Mutant]] = defaultdict(list)
    for mutant in mutants:
        buckets[mutant.mutation.split(":")[0]].append(mutant)
    for bucket in buckets.values():
        rng.shuffle(bucket)
    order = list(buckets)
    rng.shuffle(order)
    chosen: list[Mutant] = []
    while len(chosen) < min(size, len(mutants)):
        for name in order:
            if buckets[name] and len(chosen) < size:
                chosen.append(buckets[name].pop())
    return chosen


@dataclass(frozen=True)
class Observation:
    """One mutant's outcome in one setting."""

    mutant: Mutant
    group: Group
    outcome: str
    reasons: tuple[str, ...]
    #: How many times the agent replied: a fault planted in a reply that never came did not happen.
    replies: int
    replayed: bool = False

    @property
    def exercised(self) -> bool:
        """Whether the conversation got as far as the agent's fault, or the user turn of the user's fault."""
        return self.replies >= max(self.mutant.stage, self.mutant.user_stage - 1)

    @property
    def mode(self) -> str:
        """The setting's mode, marked when the outcome comes from a replay."""
        return f"{self.group.mode}/replay" if self.replayed else self.group.mode

    @property
    def false_pass(self) -> bool:
        """An agent fault that ends pass or user_error."""
        return self.mutant.label == "agent_fault" and self.outcome in ("pass", "user_error")

    @property
    def blamed_on_user(self) -> bool:
        """An agent fault that ends user_error."""
        return self.mutant.label == "agent_fault" and self.outcome == "user_error"

    @property
    def blamed_on_agent(self) -> bool:
        """A user fault, with a correct agent, that ends fail."""
        return self.mutant.label == "user_fault" and self.outcome == "fail"

    @property
    def names_what_is_missing(self) -> bool:
        """An unsure result whose reasons name the missing judge or evidence."""
        return any(word in reason.casefold() for reason in self.reasons for word in MISSING)


def run_group(
    group: Group, mutants: Sequence[Mutant], root: Path, *, judge: StubJudge, concurrency: int = 16
) -> list[Observation]:
    """Run ``mutants`` (the base conversations among them or not) in ``group``'s setting, in one
    ``simulator.run`` over suites written under ``root``; with ``group.replay`` the run is recorded and replayed,
    and the replay's outcomes are observations too."""
    folder = root / group.slug
    paths = write_suites(folder, group.kind, mutants, scripted_user=group.user == "scripted")
    by_name = {mutant.slug: mutant for mutant in mutants}
    script = FakeScript()
    script.enqueue("judge", judge, times=40 * len(mutants) + 100)
    script.enqueue("user", user_reply, times=10 * len(mutants) + 100)
    db = folder / "runs.db"
    with script.active():
        outcome = simulator.run(
            [str(path) for path in paths],
            db=db,
            judge_model="fake/judge" if group.judge else None,
            user_model="fake/user" if group.user == "stub" else None,
            live=group.live,
            concurrency=concurrency,
            seed=0,
            cache=False,
            checkpoints=False,
            record=group.replay,
        )
        runs = [(outcome, False)]
        if group.replay:
            runs.append((simulator.replay(outcome.id, db=db, judge_model="fake/judge" if group.judge else None), True))
    return [
        Observation(
            by_name[stored.case],
            group,
            stored.outcome,
            tuple(stored.result.reasons),
            len(stored.result.transcript.agent_events()),
            replayed,
        )
        for ran, replayed in runs
        for stored in ran.iter_results()
    ]


@dataclass
class Tally:
    """The counts of the BENCH line, over mutants (base conversations left out)."""

    mutants: int = 0
    false_pass: int = 0
    agent_fault_blamed_on_user: int = 0
    user_fault_blamed_on_agent: int = 0
    unsure: int = 0
    error: int = 0
    unsure_unexplained: list[Observation] = field(default_factory=list)
    not_exercised: list[Observation] = field(default_factory=list)

    @classmethod
    def of(cls, observations: Iterable[Observation]) -> Tally:
        """Count ``observations`` (those of base conversations are left out)."""
        tally = cls()
        for seen in observations:
            if seen.mutant.label == "baseline":
                continue
            if not seen.exercised:
                tally.not_exercised.append(seen)
                continue
            tally.mutants += 1
            tally.false_pass += seen.false_pass
            tally.agent_fault_blamed_on_user += seen.blamed_on_user
            tally.user_fault_blamed_on_agent += seen.blamed_on_agent
            tally.unsure += seen.outcome == "unsure"
            tally.error += seen.outcome == "error"
            if seen.outcome == "unsure" and not seen.names_what_is_missing:
                tally.unsure_unexplained.append(seen)
        return tally

    def bench_line(self) -> str:
        """The one-line summary the bench ends with."""
        return (
            f"BENCH mutants={self.mutants} false_pass={self.false_pass} "
            f"agent_fault_blamed_on_user={self.agent_fault_blamed_on_user} "
            f"user_fault_blamed_on_agent={self.user_fault_blamed_on_agent} unsure={self.unsure}"
        )


OUTCOMES = ("pass", "fail", "unsure", "user_error", "error")


def outcome_table(observations: Iterable[Observation]) -> str:
    """Mutation × kind × mode -> outcome counts, with the misclassifications of each row."""
    rows: dict[tuple[str, str, str], Counter[str]] = defaultdict(Counter)
    for seen in observations:
        if not seen.exercised:
            continue
        counts = rows[(seen.mutant.mutation, seen.group.kind, seen.mode)]
        counts[seen.outcome] += 1
        counts["false_pass"] += seen.false_pass
        counts["blamed_on_user"] += seen.blamed_on_user
        counts["blamed_on_agent"] += seen.blamed_on_agent
    columns = (*OUTCOMES, "false_pass", "blamed_on_user", "blamed_on_agent")
    header = ("mutation", "kind", "mode", *columns)
    lines = [header, *((*key, *(str(rows[key][c]) for c in columns)) for key in sorted(rows))]
    return _aligned(lines)


def false_pass_table(observations: Iterable[Observation]) -> str:
    """The mutations that produce false passes (or blame the wrong party): by mutation, where the faults sit,
    kind and judge."""
    rows: dict[tuple[str, str, str, str], Counter[str]] = defaultdict(Counter)
    for seen in observations:
        if seen.mutant.label == "baseline" or not seen.exercised:
            continue
        key = (seen.mutant.mutation, seen.mutant.position, seen.group.kind, "judge" if seen.group.judge else "no judge")
        rows[key]["mutants"] += 1
        rows[key]["false_pass"] += seen.false_pass
        rows[key]["blamed_on_user"] += seen.blamed_on_user
        rows[key]["blamed_on_agent"] += seen.blamed_on_agent
    bad = [key for key, counts in rows.items() if counts["false_pass"] or counts["blamed_on_agent"]]
    columns = ("mutants", "false_pass", "blamed_on_user", "blamed_on_agent")
    lines: list[tuple[str, ...]] = [("mutation", "position", "kind", "judge", *columns)]
    lines += [(*key, *(str(rows[key][c]) for c in columns)) for key in sorted(bad)]
    return _aligned(lines)


def _aligned(lines: Sequence[Sequence[str]]) -> str:
    widths = [max(len(line[i]) for line in lines) for i in range(len(lines[0]))]
    return "\n".join(
        "  ".join(cell.ljust(width) for cell, width in zip(line, widths, strict=True)).rstrip() for line in lines
    )
