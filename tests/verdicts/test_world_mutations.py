"""The verdict mutation suite on a world: an agent that says the right thing and changes the world otherwise
(world_mutants.py), run through ``simulator.run`` in test mode and live, recorded and replayed.

The right agent passes (also when an injected fault makes it try again). Every fault fails (never ``pass``,
``user_error``, ``unsure`` or ``error``), and its reasons name the record the world shows it wrong, as a diff:
the verdict comes from the state the conversation left, not from the words. Where the reply words the action as
a claim the claim finder reads, that claim is a hallucination too.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import pytest

import simulator
from tests.verdicts.world_mutants import WORLD_FAULTS, WorldMutant, world_mutants, write_world_suite

#: The record each fault's reasons must name.
NAMED = {
    "wrong_record": "bookings/BK1",
    "refused_action": "bookings/BK1",
    "extra_change": "bookings/BK3",
    "wrong_value": "bookings/BK2",
    "wrong_record_seat": "bookings/BK2",
    "late": "bookings/BK1",
    "claim_after_fault": "bookings/BK1",
    "claim_without_call": "bookings/BK1",
}
#: Replies whose claim the claim finder reads and the world contradicts: each must be a hallucination (more may).
FLAGGED = {
    WorldMutant("wrong_record", 1),
    WorldMutant("refused_action", 1),
    WorldMutant("claim_after_fault", 0),
    WorldMutant("claim_after_fault", 1),
    WorldMutant("claim_without_call", 1),
}


@dataclass(frozen=True)
class Seen:
    mutant: WorldMutant
    setting: str
    outcome: str
    reasons: tuple[str, ...]
    hallucination: bool


@pytest.fixture(scope="module")
def seen(tmp_path_factory: pytest.TempPathFactory) -> list[Seen]:
    mutants = {mutant.slug: mutant for mutant in world_mutants()}
    found: list[Seen] = []
    for live in (False, True):
        folder = Path(tmp_path_factory.mktemp("live" if live else "test"))
        path = write_world_suite(folder, list(mutants.values()))
        db = folder / "runs.db"
        ran = simulator.run(
            [str(path)], db=db, live=live, seed=0, cache=False, checkpoints=False, concurrency=8, record=not live
        )
        runs = [(ran, "live" if live else "test")]
        if not live:
            runs.append((simulator.replay(ran.id, db=db), "replayed"))
        for outcome, setting in runs:
            for stored in outcome.iter_results():
                flagged = any(s.metric == "hallucination" and s.verdict == "not_met" for s in stored.result.scores)
                found.append(Seen(mutants[stored.case], setting, stored.outcome, tuple(stored.result.reasons), flagged))
    return found


def test_every_setting_ran_every_mutant(seen: list[Seen]) -> None:
    assert len(seen) == 3 * len(world_mutants())
    assert {s.mutant.fault for s in seen} >= set(WORLD_FAULTS) | {"baseline", "baseline_retry"}


def test_the_right_agent_passes(seen: list[Seen]) -> None:
    base = [(s.mutant.slug, s.setting, s.outcome, s.reasons[:1]) for s in seen if s.mutant.label == "baseline"]
    assert [row for row in base if row[2] != "pass"] == []


def test_every_world_fault_fails_naming_the_record(seen: list[Seen]) -> None:
    wrong = [
        (s.mutant.slug, s.setting, s.outcome, s.reasons[:1])
        for s in seen
        if s.mutant.label == "agent_fault"
        and (s.outcome != "fail" or not any(NAMED[s.mutant.fault] in reason for reason in s.reasons))
    ]
    assert wrong == []


def test_a_claim_the_world_contradicts_is_a_hallucination(seen: list[Seen]) -> None:
    missed = [(s.mutant.slug, s.setting) for s in seen if s.mutant in FLAGGED and not s.hallucination]
    assert missed == []
    # The right agent's claims are backed by the world.
    assert [s.mutant.slug for s in seen if s.mutant.label == "baseline" and s.hallucination] == []


def test_a_replay_gives_the_recorded_outcomes(seen: list[Seen]) -> None:
    recorded = {s.mutant: s.outcome for s in seen if s.setting == "test"}
    replayed = {s.mutant: s.outcome for s in seen if s.setting == "replayed"}
    assert replayed == recorded
