"""The same suites in chat and in voice, side by side: one stored run per modality (the later runs name the first
in their settings, ``paired_with``), then compared case by case with :func:`simulator.compare_runs`, the first
modality as the baseline.

One modality is a setting of an ordinary run (``simulator.run(..., modality="voice")``); this module is for more
than one: ``--modality chat,voice``.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from simulator.api._store import PathLike
from simulator.errors import InputError

if TYPE_CHECKING:
    from simulator.analysis.compare import CaseDiff, Comparison
    from simulator.loading import LoadedSuite
    from simulator.models.run import RunSettings
    from simulator.models.voice import Modality
    from simulator.runner import PlannedRun, RunOutcome

    EventHandler = Any  # Callable[[RunEvent], None]


@dataclass(frozen=True)
class ModalityRuns:
    """The runs of one suite set in each modality asked for (in that order: the first is the baseline), and their
    comparison case by case (run A the first, run B the second)."""

    modalities: tuple[Modality, ...]
    runs: tuple[RunOutcome, ...]
    comparison: Comparison

    def exit_code(self, fail_under: float | None = None, fail_under_coverage: float | None = None) -> int:
        """The worse of the runs' exit codes (:meth:`simulator.RunOutcome.exit_code`): a side-by-side run passes
        only when every one of its runs does."""
        return max(run.exit_code(fail_under, fail_under_coverage) for run in self.runs)

    def lines(self) -> list[str]:
        """The comparison in words, a line each (:func:`modality_lines`)."""
        return modality_lines(self.comparison, self.modalities)


def plan_modalities(
    suites: Any, modality: str | Sequence[str] = "chat,voice", settings: RunSettings | None = None, **options: Any
) -> list[PlannedRun]:
    """One plan per modality named (:func:`simulator.plan` with ``modality`` set), every one checked before any
    runs: a bad value, an agent that cannot take a modality (a realtime agent has no chat), a missing speech
    backend. The plans share one seed (the first plan's), so each conversation is the same in every modality."""
    from simulator.runner import modalities_given, plan

    given = modalities_given(modality)
    first = plan(suites, settings, **{**options, "modality": given[0]})
    # The seed the first plan settled on (given, the suite's, or drawn at random), not the option, which may be None.
    seed = first.settings.seed
    return [first, *(plan(suites, settings, **{**options, "seed": seed, "modality": one}) for one in given[1:])]


def pair_plan(planned: PlannedRun, run_id: str) -> PlannedRun:
    """``planned`` naming ``run_id`` as the run it is compared with (``paired_with``; not part of its plan hash)."""
    return dataclasses.replace(planned, settings=planned.settings.model_copy(update={"paired_with": run_id}))


async def run_modalities_async(
    suites: str | PathLike | LoadedSuite | Sequence[PathLike | LoadedSuite] | Sequence[PlannedRun],
    modality: str | Sequence[str] = "chat,voice",
    settings: RunSettings | None = None,
    *,
    db: PathLike | None = None,
    agent_version: str | None = None,
    note: str = "",
    cache_size_mb: int = 200,
    on_event: EventHandler | None = None,
    trace_endpoint: str | None = None,
    **options: Any,
) -> ModalityRuns:
    """Run suites once per modality (``modality``: ``"chat,voice"`` or a list) with the options
    :func:`simulator.run` takes, each a stored run, the later ones naming the first (``paired_with``), and
    compare them case by case, the first modality as the baseline. ``suites`` may be the plans
    :func:`plan_modalities` made. Every plan is checked before anything runs or is stored."""
    from simulator.api.analysis import compare_runs
    from simulator.runner import PlannedRun, run_async

    given = list(suites) if isinstance(suites, Sequence) and not isinstance(suites, str) else [suites]
    if given and all(isinstance(item, PlannedRun) for item in given):
        plans: list[PlannedRun] = given  # type: ignore[assignment]  # checked item by item above
    else:
        plans = plan_modalities(suites, modality, settings, **options)
    if len(plans) != 2:
        raise InputError(f"{len(plans)} modality plan(s) given: a side-by-side run compares two, e.g. chat,voice")
    chosen = tuple(planned.settings.modality or "chat" for planned in plans)
    outcomes: list[RunOutcome] = []
    for planned in plans:
        outcomes.append(
            await run_async(
                pair_plan(planned, outcomes[0].id) if outcomes else planned, db=db, agent_version=agent_version,
                note=note, cache_size_mb=cache_size_mb, on_event=on_event, trace_endpoint=trace_endpoint,
            )
        )  # fmt: skip
    comparison = compare_runs(outcomes[0].id, outcomes[1].id, db=outcomes[0].store_path)
    return ModalityRuns(modalities=chosen, runs=tuple(outcomes), comparison=comparison)


def _status(diff: CaseDiff, side: str) -> str:
    summary = diff.a if side == "a" else diff.b
    if summary is None:
        return "not run"
    rate = f" ({summary.passes}/{summary.repeats} passed)" if summary.repeats > 1 else ""
    return f"{summary.status}{rate}"


def _how(diff: CaseDiff, first: str, second: str) -> str:
    if diff.change == "regressed":
        return f"passes in {first}, not in {second}"
    if diff.change == "improved":
        return f"passes in {second}, not in {first}"
    if diff.change == "not_comparable":
        return f"not comparable ({diff.not_comparable})"
    if diff.change in ("new", "removed"):
        return f"only in {second if diff.change == 'new' else first}"
    return "passes in both" if diff.a is not None and diff.a.passed else "passes in neither"


_ORDER = ("regressed", "improved", "not_comparable", "new", "removed", "unchanged")


def modality_lines(comparison: Comparison, modalities: Sequence[str] = ("chat", "voice")) -> list[str]:
    """The comparison of a side-by-side run in words: a line per case (its status in each modality and how they
    differ, the cases that pass in one modality and not the other first), the reasons the second modality gave
    where it did not pass, and each run's correctness."""
    first, second = modalities[0], modalities[1]
    lines = [f"{first} run {comparison.run_a} and {second} run {comparison.run_b}, case by case:"]
    for diff in sorted(comparison.cases, key=lambda diff: _ORDER.index(diff.change)):
        persona = f" ({diff.persona})" if diff.persona else ""
        lines.append(
            f"  {diff.suite} / {diff.case}{persona}: {_how(diff, first, second)}: {first} {_status(diff, 'a')}, "
            f"{second} {_status(diff, 'b')}"
        )
        if diff.change in ("regressed", "not_comparable") and diff.b_reasons:
            lines.extend(f"      {second}: {reason}" for reason in diff.b_reasons)
    shown = []
    for name, counts in ((first, comparison.correctness_a), (second, comparison.correctness_b)):
        percent = "n/a" if counts.correctness is None else f"{counts.correctness * 100:.1f}%"
        shown.append(f"{name} {percent} ({counts.passed}/{counts.total - counts.user_error})")
    lines.append(f"correctness: {', '.join(shown)}")
    regressed, improved = len(comparison.regressed), len(comparison.improved)
    lines.append(
        f"{regressed} case(s) pass in {first} and not in {second}, {improved} in {second} and not in {first}; "
        f"step by step: simulator compare {comparison.run_a} {comparison.run_b}"
    )
    return lines


def run_modalities(
    suites: str | PathLike | LoadedSuite | Sequence[PathLike | LoadedSuite] | Sequence[PlannedRun],
    modality: str | Sequence[str] = "chat,voice",
    settings: RunSettings | None = None,
    **options: Any,
) -> ModalityRuns:
    """:func:`run_modalities_async`, blocking until done (``db``, ``note`` and the other keywords as it takes
    them); from async code use ``run_modalities_async``."""
    import asyncio

    return asyncio.run(run_modalities_async(suites, modality, settings, **options))
