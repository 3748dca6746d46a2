"""The verdict mutation suite, a seeded subset: passing conversations of every case kind, mutated with labelled
agent and user faults, run through ``simulator.run`` in every setting (scripted or stub user, no judge or the
stub judge, test mode or live, one setting recorded and replayed), and classified.

The base conversations must start green and no conversation may error. No agent fault, however it is worded or
wherever it falls, ends ``pass`` or ``user_error``; a failure names the mutations that did, in a table.
``python bench/verdicts.py`` runs every mutant.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.verdicts.generate import (
    Observation,
    Tally,
    baselines,
    false_pass_table,
    groups,
    mutants_for,
    run_group,
    sample,
)
from tests.verdicts.mutations import AGENT_FAULTS, USER_FAULTS
from tests.verdicts.stub_judge import StubJudge

#: Mutants per setting, drawn seeded and spread over the mutations (20 settings: 200 mutants).
PER_SETTING = 10
SEED = 2026


@pytest.fixture(scope="module")
def observations(tmp_path_factory: pytest.TempPathFactory) -> list[Observation]:
    """Every setting's base conversations and its seeded sample of mutants, run once for the module."""
    root = Path(tmp_path_factory.mktemp("verdicts"))
    judge = StubJudge()
    found: list[Observation] = []
    for index, group in enumerate(groups()):
        mutants = sample(mutants_for(group), PER_SETTING, SEED + index)
        found += run_group(group, baselines() + mutants, root, judge=judge)
    return found


def _mutants(observations: list[Observation]) -> list[Observation]:
    return [seen for seen in observations if seen.mutant.label != "baseline"]


def test_every_base_conversation_starts_green(observations: list[Observation]) -> None:
    """With the stub judge each unmutated conversation passes; without a judge it passes or is unsure."""
    base = [seen for seen in observations if seen.mutant.label == "baseline"]
    assert len(base) == 3 * (len(groups()) + 1)  # three bases in every setting, and the replayed one
    wrong = [
        (seen.mutant.base, seen.group.kind, seen.mode, seen.outcome, seen.reasons[:1])
        for seen in base
        if seen.outcome not in (("pass",) if seen.group.judge else ("pass", "unsure"))
    ]
    assert wrong == []


def test_the_subset_covers_every_dimension_and_each_fault_happens(observations: list[Observation]) -> None:
    mutants = _mutants(observations)
    assert len(mutants) >= 150
    assert {seen.mutant.fault for seen in mutants} >= {fault.name for fault in AGENT_FAULTS}
    assert {seen.mutant.user for seen in mutants} >= {fault.name for fault in USER_FAULTS}
    assert {seen.mutant.label for seen in mutants} == {"agent_fault", "user_fault"}
    assert {seen.group.kind for seen in mutants} == {"golden", "scenario", "simulation"}
    assert {seen.mode for seen in mutants} >= {group.mode for group in groups()}
    assert any(seen.replayed for seen in mutants)
    assert [seen.mutant.slug for seen in mutants if not seen.exercised] == []


def test_no_conversation_ends_as_an_error(observations: list[Observation]) -> None:
    errors = [
        (seen.mutant.slug, seen.group.kind, seen.mode, seen.reasons[:1])
        for seen in observations
        if seen.outcome == "error"
    ]
    assert errors == []


def test_every_unsure_result_names_the_missing_judge_or_evidence(observations: list[Observation]) -> None:
    unsure = [seen for seen in observations if seen.outcome == "unsure"]
    assert unsure  # the settings without a judge leave criteria in words undecided
    assert [(seen.mutant.slug, seen.mode, seen.reasons) for seen in unsure if not seen.names_what_is_missing] == []


def test_a_replayed_run_gives_the_recorded_outcomes(observations: list[Observation]) -> None:
    recorded = {
        (seen.mutant, seen.group.kind): seen.outcome for seen in observations if seen.group.replay and not seen.replayed
    }
    replayed = {(seen.mutant, seen.group.kind): seen.outcome for seen in observations if seen.replayed}
    assert replayed
    assert replayed == recorded


def test_no_agent_fault_passes_or_is_blamed_on_the_user(observations: list[Observation]) -> None:
    tally = Tally.of(observations)
    assert (tally.false_pass, tally.agent_fault_blamed_on_user) == (0, 0), (
        f"{tally.bench_line()}\n{false_pass_table(observations)}"
    )
