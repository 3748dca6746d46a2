"""Merging the shards of one plan (``simulator run --shard K/N``) into one run: ``simulator runs merge``.

The inputs are runs in the store and/or run exports (``simulator export run`` files: the artefacts CI jobs pass
on); a path that is a file is read as an export, anything else names a run in the store. The merged run is a
new run stored like any other, and every report, ``compare``, ``digest`` and the pytest plugin read it as one:

* its plan is the whole plan, built again from the snapshot and settings and checked against the plan hash the
  shards recorded; each input's own plan must be exactly its shard of it;
* the inputs must be parts of one plan: the same plan hash, suites (by content, wherever their files lived) and
  settings that change what runs (``--live`` included); otherwise the merge is refused, naming what differs
  and in which run. Settings that only say how a part ran (concurrency, cache, ``--fail-under`` ...) are taken
  from the first shard;
* a plan item in two inputs (the same shard given twice, a whole run beside a shard) is refused, naming it;
* missing items (a shard not given, a shard that did not finish) are refused, naming each shard K/N and how many
  of its items have no result; with ``allow_partial`` the merge is stored ``interrupted``, its note says what
  is missing, and ``simulator runs resume`` runs the missing items on this machine;
* every result's outcome, reasons and metrics are decided again from its transcript, scores and fidelity
  findings (:func:`simulator.runner.rederive`, with the plan's ``count_user_errors``), in every input, before
  anything is stored: a result stored with another outcome is refused, naming its file and line (an export) or
  its run and key, unless ``trust``: then it is kept as stored and marked, and counted in the totals as decided;
* every result is copied under the new run's id and the run summary is computed again over all of them; the
  duration is the longest shard's (the shards ran side by side). The inputs are left as they were; a merge
  that cannot be stored whole is removed again (all or nothing).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from simulator._version import __version__
from simulator.errors import InputError
from simulator.exchange import import_run, outcome_advice
from simulator.metrics import run_summary
from simulator.models.run import Plan, PlanItem, RunRecord, StoredResult
from simulator.runner import (
    RunOutcome,
    build_plan,
    new_record,
    parse_shard,
    plan_hash,
    rederive,
    restore,
    shard_of,
    suite_identity,
    what_runs,
)
from simulator.store import RunStore, default_db_path

_EXPORT_SUFFIXES = (".json", ".yaml", ".yml")
_SHOWN = 5


@dataclass(frozen=True)
class MergedPart:
    """One run a merge was made of: where it came from (``run ID`` in the store, or an export file), its id
    and status, its shard (``K/N``; ``1/1`` for a run of the whole plan) and how many results it gave."""

    source: str
    run_id: str
    status: str
    shard: str
    results: int


@dataclass(frozen=True)
class MissingShard:
    """A shard whose items are not all in a merge: ``run_id`` is the run given for it (None when none was)."""

    shard: str
    run_id: str | None
    missing: int
    planned: int

    def describe(self) -> str:
        """In words, e.g. ``shard 3/4: no run given (5 item(s))``."""
        if self.run_id is None:
            return f"shard {self.shard}: no run given ({self.planned} item(s))"
        return f"shard {self.shard} (run {self.run_id}): {self.missing} of its {self.planned} item(s) have no result"


@dataclass(frozen=True)
class MergedRun:
    """A merge as stored: the new run (``outcome``), the runs it was made of, in shard order, the shards whose
    items are not all there (empty when the merged run is complete), and how many results kept an outcome
    their evidence does not give (``trust``; each is marked)."""

    outcome: RunOutcome
    parts: list[MergedPart]
    missing: list[MissingShard]
    kept_on_trust: int = 0

    @property
    def complete(self) -> bool:
        """Whether every item of the plan has its result in the merged run."""
        return not self.missing


@dataclass
class _Input:
    source: str  # "run ID", or the export file's path
    record: RunRecord
    keys: set[str]
    results: list[StoredResult] | None  # from an export file; None: read from the store when copied
    from_file: bool

    @property
    def shard(self) -> tuple[int, int]:
        return parse_shard(self.record.settings.shard) if self.record.settings.shard else (1, 1)

    @property
    def label(self) -> str:
        shard = f"shard {self.record.settings.shard}" if self.record.settings.shard else "the whole plan"
        return f"{self.source} ({f'run {self.record.id}, ' if self.from_file else ''}{shard})"


def merge_runs(
    runs: Sequence[str | Path],
    *,
    db: str | Path | None = None,
    note: str | None = None,
    allow_partial: bool = False,
    trust: bool = False,
) -> MergedRun:
    """Merge the shards of one plan (runs in the store ``db`` and/or ``simulator export run`` files) into one
    new run in ``db``, its summary computed again over every result. Refused with an
    :class:`~simulator.errors.InputError` saying why when the runs are not shards of one plan, when an item
    is in two of them, when a result's stored outcome is not the one its evidence decides (unless ``trust``:
    kept as stored and marked), or when items are missing (unless ``allow_partial``: the merge is then stored
    ``interrupted``; ``resume`` runs what is missing). See :mod:`simulator.merge`."""
    if not runs:
        raise InputError("nothing to merge: give the runs (ids or export files) of the shards of one plan")
    with RunStore(Path(db) if db is not None else default_db_path()) as store:
        inputs = sorted((_read(store, str(ref), trust) for ref in runs), key=lambda given: given.shard)
        _check_one_plan(inputs)
        whole = _whole_plan(inputs)
        missing = _missing(inputs, whole)
        if missing and not allow_partial:
            raise InputError(
                f"{len(missing)} shard(s) of plan {inputs[0].record.settings.plan_hash} are not all there:\n  "
                + "\n  ".join(shard.describe() for shard in missing)
                + "\ngive their runs too (resume an unfinished shard first), or pass --allow-partial "
                "(allow_partial=True) to store an interrupted merge that `simulator runs resume` completes here"
            )
        kept = _check_outcomes(store, inputs, trust=trust)
        store.require_writable("store a merged run")
        record = _merged_record(store, inputs, whole, note, missing)
        if kept:
            record = record.model_copy(
                update={"note": f"{record.note}; {kept} outcome(s) kept as stored, not re-derived (--trust)"}
            )
        _store_merge(store, record, inputs, complete=not missing, trust=trust)
        parts = [
            MergedPart(
                source=given.source,
                run_id=given.record.id,
                status=given.record.status,
                shard="{}/{}".format(*given.shard),
                results=len(given.keys),
            )
            for given in inputs
        ]
        return MergedRun(
            outcome=RunOutcome(store.get_run(record.id), store.path), parts=parts, missing=missing, kept_on_trust=kept
        )


def _read(store: RunStore, ref: str, trust: bool) -> _Input:
    path = Path(ref)
    if path.is_file():
        record, results = import_run(path, trust=trust)  # refuses a disagreeing outcome at its line
        return _Input(ref, record, {result.key for result in results}, results, from_file=True)
    if path.suffix.lower() in _EXPORT_SUFFIXES or "/" in ref:
        raise InputError(f"{ref}: no such file: give run export files (simulator export run) or run ids")
    record = store.get_run(ref)
    store.check_free(record.id, "merged")
    return _Input(f"run {record.id}", record, store.completed_keys(record.id), None, from_file=False)


def _check_one_plan(inputs: Sequence[_Input]) -> None:
    """Refuse inputs that are not parts of one plan, or one part given twice, saying which differ and how."""
    for given in inputs:
        if not given.record.settings.plan_hash:
            raise InputError(
                f"{given.label} has no plan hash: it was stored by a Simulator older than shards (or planned from "
                "several plans at once) and cannot be merged; run it again with --shard K/N"
            )
    first = inputs[0]
    problems = [f"{other.label}: {'; '.join(found)}" for other in inputs[1:] if (found := _differences(first, other))]
    if problems:
        raise InputError(
            f"these runs are not shards of one plan; compared with {first.label}:\n  "
            + "\n  ".join(problems)
            + "\nmerge only runs made by the same `simulator run ... --shard K/N` command on the same suites"
        )
    seen: dict[object, _Input] = {}
    for given in inputs:
        shard = "shard {}/{}".format(*given.shard)
        for what, key in ((f"run {given.record.id}", given.record.id), (shard, given.shard)):
            if key in seen:
                raise InputError(f"{what} is given twice ({seen[key].label} and {given.label}): give each shard once")
            seen[key] = given
    holders: dict[str, str] = {}
    twice: list[str] = []
    for given in inputs:
        for key in sorted(given.keys):
            if key in holders:
                twice.append(f"{key!r} ({holders[key]} and {given.label})")
            holders.setdefault(key, given.label)
    if twice:
        raise InputError(
            f"{len(twice)} plan item(s) have a result in two of these runs: {', '.join(twice[:_SHOWN])}"
            + (" ..." if len(twice) > _SHOWN else "")
            + "; give each shard once"
        )


def _differences(first: _Input, other: _Input) -> list[str]:
    """What makes ``other`` a part of another plan than ``first``, in words (empty: the same plan)."""
    found: list[str] = []
    a, b = first.record, other.record
    if [suite_identity(s) for s in a.snapshot] != [suite_identity(s) for s in b.snapshot]:
        names_a = ", ".join(s.suite.name for s in a.snapshot)
        names_b = ", ".join(s.suite.name for s in b.snapshot)
        found.append(f"other suites ({names_b} vs {names_a})" if names_a != names_b else "the suites' content differs")
    mine, theirs = what_runs(a.settings), what_runs(b.settings)
    for name in sorted(mine.keys() | theirs.keys()):  # a setting left at its default is in neither dump
        if mine.get(name) != theirs.get(name):
            found.append(f"{name} {getattr(b.settings, name)!r} vs {getattr(a.settings, name)!r}")
    if first.shard[1] != other.shard[1]:
        found.append(f"split into {other.shard[1]} shard(s) vs {first.shard[1]}")
    if a.settings.plan_hash != b.settings.plan_hash:
        found.append(f"plan hash {b.settings.plan_hash} vs {a.settings.plan_hash}")
    return found


def _whole_plan(inputs: Sequence[_Input]) -> Plan:
    """The whole plan the shards were cut from, built again from the first one's snapshot and settings, checked
    against the plan hash; and each input's plan checked to be exactly its shard of it."""
    first = inputs[0].record
    whole = build_plan([restore(snapshot) for snapshot in first.snapshot], first.settings)
    if plan_hash(first.snapshot, first.settings, whole) != first.settings.plan_hash:
        made_by = first.versions.get("simulator", "an unknown version")
        raise InputError(
            f"the plan of {inputs[0].label} cannot be built again here (planned by Simulator {made_by}, this is "
            f"{__version__}): merge its shards with the version that planned them"
        )
    identities = [suite_identity(snapshot) for snapshot in first.snapshot]
    planned = {item.key for item in whole}
    for given in inputs:
        index, count = given.shard
        own = [item for item in whole if shard_of(identities[item.suite], item, count) == index]
        if [item.key for item in given.record.plan] != [item.key for item in own]:
            raise InputError(f"{given.label}: its plan is not shard {index}/{count} of plan {first.settings.plan_hash}")
        strangers = sorted(given.keys - planned)
        if strangers:
            raise InputError(f"{given.label} holds results of items not in its plan: {', '.join(strangers[:_SHOWN])}")
    return whole


def _missing(inputs: Sequence[_Input], whole: Sequence[PlanItem]) -> list[MissingShard]:
    identities = [suite_identity(snapshot) for snapshot in inputs[0].record.snapshot]
    count = inputs[0].shard[1]
    by_shard = {given.shard[0]: given for given in inputs}
    present = set().union(*(given.keys for given in inputs))
    planned: dict[int, int] = {}
    absent: dict[int, int] = {}
    for item in whole:
        index = shard_of(identities[item.suite], item, count)
        planned[index] = planned.get(index, 0) + 1
        if item.key not in present:
            absent[index] = absent.get(index, 0) + 1
    return [
        MissingShard(
            shard=f"{index}/{count}",
            run_id=by_shard[index].record.id if index in by_shard else None,
            missing=absent[index],
            planned=planned[index],
        )
        for index in sorted(absent)
    ]


def _merged_record(
    store: RunStore, inputs: Sequence[_Input], whole: Plan, note: str | None, missing: list[MissingShard]
) -> RunRecord:
    first = inputs[0].record
    if note is None:
        note = f"merge of {len(inputs)} shard(s) of plan {first.settings.plan_hash}: " + ", ".join(
            given.record.id for given in inputs
        )
        if missing:
            note += "; partial, missing " + "; ".join(shard.describe() for shard in missing)
    # Code named by an export's snapshot did not come from this machine's files: the merge keeps that mark, so
    # resuming or repeating it asks for --yes as for the imported run itself.
    imported = next(
        (
            given.record.imported_from or (given.record.id if given.from_file else None)
            for given in inputs
            if given.record.imported_from or given.from_file
        ),
        None,
    )
    record = new_record(
        store.new_run_id(), first.snapshot, first.settings.model_copy(update={"shard": None}), whole,
        agent_version=first.agent_version, note=note, imported_from=imported,
    )  # fmt: skip
    return record.model_copy(update={"versions": first.versions})


def _results_of(store: RunStore, given: _Input) -> Iterable[StoredResult]:
    return given.results if given.results is not None else store.iter_results(given.record.id)


def _check_outcomes(store: RunStore, inputs: Sequence[_Input], *, trust: bool) -> int:
    """How many results of the inputs came with an outcome their evidence does not give (kept, marked, with
    ``trust``); without ``trust`` any such result refuses the merge, naming each (before anything is stored).
    A store's results are read a few at a time, as they are copied later."""
    refused: list[str] = []
    kept = 0
    for given in inputs:
        count_user_errors = given.record.settings.count_user_errors
        for number, result in enumerate(_results_of(store, given)):
            found = rederive(result, count_user_errors=count_user_errors, trust=trust)
            if found.agrees:
                continue
            kept += 1
            if not trust:
                refused.append(f"{given.label}: result {number} (key {result.key!r}): {found.describe()}")
    if refused:
        raise InputError(
            "\n".join(refused[:_SHOWN])
            + (f"\n... and {len(refused) - _SHOWN} more" if len(refused) > _SHOWN else "")
            + f"\n{outcome_advice(len(refused))}"
        )
    return kept


def _store_merge(store: RunStore, record: RunRecord, inputs: Sequence[_Input], *, complete: bool, trust: bool) -> None:
    """Store the merged run and a copy of every input's results under its id (outcomes decided again, as
    :func:`_check_outcomes` found them), then its summary; removed again if any of it cannot be stored."""
    store.create_run(record)
    lease = store.acquire(record.id)
    try:
        for given in inputs:
            count_user_errors = given.record.settings.count_user_errors
            for result in _results_of(store, given):
                found = rederive(result, count_user_errors=count_user_errors, trust=trust)
                if not found.agrees and not trust:  # changed since it was checked
                    raise InputError(f"{given.label}: {found.describe()}\n{outcome_advice(1)}")
                store.save_result(found.result.model_copy(update={"run_id": record.id}))
        duration = max((given.record.totals.duration_s for given in inputs if given.record.totals), default=0.0)
        totals = run_summary(store.iter_results(record.id), duration)
    except BaseException:
        store.finish(lease, "failed")
        store.delete_run(record.id)
        raise
    store.finish(
        lease, "completed" if complete else "interrupted", totals=totals,
        finished=datetime.now(UTC) if complete else None,
    )  # fmt: skip
