"""The public run API: everything the command line does to run suites, callable from Python.

``run`` plans suites (cases x personas x repeats), stores the run and runs it; ``resume`` finishes a stored run;
``repeat`` runs a stored run's snapshot again as a new run; ``simulate`` runs and scores cases one by one without
storing anything; ``replay`` plays a recorded run (``record=True``) back offline and scores it again, and
``rerun`` runs the agent again against a recorded conversation from the first turn where it differs. Each has
an ``*_async`` twin for callers that own an event loop (the CLI, which runs it once).

Every option is checked before any conversation starts or anything is stored: invalid suites raise
:class:`~simulator.errors.ConfigErrors` naming file, line and key; options that make no sense raise
:class:`~simulator.errors.InputError`. Progress reaches the caller as events (:class:`RunStarted`, then one
:class:`Progress` per finished conversation) through ``on_event``.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from simulator.errors import ConfigErrors, InputError
from simulator.loading import LoadedSuite, validate_paths
from simulator.models import Case, Persona
from simulator.models.ranges import check_number, check_numbers
from simulator.models.run import PlanItem, RunRecord, RunSettings, SuiteSnapshot
from simulator.models.scores import CaseResult
from simulator.runner._case import (
    check_environment,
    check_modality,
    check_models,
    check_simulated_tools,
    check_voice,
    find_case,
    model_roles,
    pick_persona,
    simulated_tools,
)
from simulator.runner._cost import cost_notes
from simulator.runner._execute import check_live, execute, forget_checkpoints
from simulator.runner._otlp import OtlpTarget
from simulator.runner._plan import (
    build_plan,
    new_record,
    parse_shard,
    plan_hash,
    plan_notes,
    restore,
    shard_part,
    snapshot_of,
    unknown_case_filters,
)
from simulator.runner._secrets import register_record_secrets, register_run_secrets
from simulator.runner._settings import (
    checked_settings,
    model_options,
    on_cluster,
    role_overrides,
    trace_target,
)
from simulator.runner._trust import check_environment_of, check_trust
from simulator.runner._types import EventHandler, PathLike, PlannedRun, RunOutcome, RunStarted, Suites, blocking
from simulator.store import RunStore, UnreadableRunError, default_db_path


def _as_list(suites: Suites) -> list[PathLike | LoadedSuite]:
    if isinstance(suites, str | Path | LoadedSuite):
        return [suites]
    return list(suites)


def _load(suites: Suites) -> list[LoadedSuite]:
    """Loaded suites for paths (validated together, all errors at once) and loaded suites as given."""
    given = _as_list(suites)
    if not given:
        raise InputError("no suite given: pass suite files or folders holding them")
    paths = [item for item in given if not isinstance(item, LoadedSuite)]
    loaded = [item for item in given if isinstance(item, LoadedSuite)]
    if paths:
        report = validate_paths(paths)
        if report.errors:
            raise ConfigErrors(report.errors)
        if not report.suites:
            raise InputError("no suite among the paths given: pass suite files or folders holding them")
        loaded = [*loaded, *report.suites]
    return loaded


def _path_as_given(loaded: LoadedSuite) -> str:
    cwd = Path.cwd()
    return str(loaded.path.relative_to(cwd)) if loaded.path.is_relative_to(cwd) else str(loaded.path)


def _has_judge(settings: RunSettings) -> Callable[[LoadedSuite], bool]:
    return lambda loaded: bool(model_roles(loaded, settings).judge.model)


def plan(suites: Suites, settings: RunSettings | None = None, **options: Any) -> PlannedRun:
    """Check and expand what a run would run, storing nothing: suites validated (ConfigErrors), the settings
    (``RunSettings`` fields as keywords, e.g. ``repeat=3, judge_model="openai/gpt-4o-mini"``) checked, the
    ``cases`` / ``tags`` filters matched, the agents' environment variables present, and the plan of cases x
    personas x repeats expanded with a fixed seed.

    ``shard="K/N"`` keeps the K-th of N parts of the plan (see :mod:`simulator.runner._plan`); a part may be
    empty. Without ``seed=``, the first suite's ``seed:`` is the run's seed; without either, a random one (every
    shard must plan the same, so a sharded plan without a seed takes seed 0, not a random one)."""
    options = dict(options)
    seed = options.pop("seed", None)
    chosen = checked_settings(settings, options if seed is None else {**options, "seed": seed})
    shard = parse_shard(chosen.shard) if chosen.shard is not None else None
    loaded = _load(suites)
    if seed is None and (settings is None or "seed" not in settings.model_fields_set):
        # The seed a suite writes (the first that writes one), else a random one; recorded in the run either way,
        # so the persona choice, the scripted user and the faults' rates can be reproduced.
        written = [item.suite.seed for item in loaded if item.suite.seed is not None]
        fallback = 0 if shard else random.SystemRandom().randrange(2**31)
        chosen = chosen.model_copy(update={"seed": written[0] if written else fallback})
    if not chosen.paths:
        chosen = chosen.model_copy(update={"paths": [_path_as_given(item) for item in loaded]})
    unknown = unknown_case_filters(loaded, chosen)
    if unknown:
        raise InputError(f"no case named {', '.join(map(repr, unknown))} in these suites")
    items = build_plan(loaded, chosen)
    if not items:
        raise InputError("nothing to run: no case matches the --tag / --case filters")
    # Only the suites the filters leave in run their agents: a suite filtered out needs none of its variables.
    check_environment([loaded[index] for index in sorted({item.suite for item in items})], settings=chosen)
    check_models([loaded[index] for index in sorted({item.suite for item in items})], chosen)
    check_modality([loaded[index] for index in sorted({item.suite for item in items})], chosen)
    check_voice([loaded[index] for index in sorted({item.suite for item in items})], chosen)
    # Only the suites and cases the filters leave in need a model for their simulated tools.
    kept: dict[int, set[str]] = {}
    for item in items:
        kept.setdefault(item.suite, set()).add(item.case)
    check_simulated_tools([loaded[index] for index in sorted(kept)], chosen, [kept[index] for index in sorted(kept)])
    # Known before the run writes anything: a key first read at its role's first call would be unknown to the
    # checkpoints and cached replies written before that call.
    register_run_secrets(loaded, chosen)
    snapshots = [snapshot_of(item, _path_as_given(item)) for item in loaded]
    whole = plan_hash(snapshots, chosen, items)
    chosen = chosen.model_copy(update={"plan_hash": whole})
    shard_notes: list[str] = []
    if shard is not None:
        index, count = shard
        part = shard_part(snapshots, items, index, count)
        chosen = chosen.model_copy(update={"shard": f"{index}/{count}"})
        shard_notes.append(
            f"shard {index}/{count} of plan {whole}: {len(part)} of its {len(items)} conversation(s)"
            + ("" if part else ", none here: the run stores no results")
            + "; `simulator runs merge` puts the shards back together."
        )
        items = part
    notes = plan_notes(loaded, {(item.suite, item.case) for item in items}, _has_judge(chosen))
    return PlannedRun(suites=loaded, settings=chosen, items=items, snapshots=snapshots, notes=[*shard_notes, *notes])


def _simulated_tools_note(names: Sequence[str]) -> str:
    """What a plan says about its simulated tools: how many, which, and who plays them."""
    return (
        f"{len(names)} tool(s) simulated by the user model ({', '.join(names)}): a call no fake answers is answered "
        "by the model and recorded as simulated (the tool never runs)."
    )


def combine(plans: Sequence[PlannedRun]) -> PlannedRun:
    """Plans made one suite file at a time, as one run (one record, one id): suites, snapshots and notes side by
    side, each item's suite index moved past the suites of the plans before it. Each item keeps the seed its own
    plan gave it, so every conversation is the one :func:`plan` showed for its file. The plans must differ in
    their paths only (the pytest plugin plans each collected file with the same options); narrow a plan first
    with ``dataclasses.replace(planned, items=[...])`` to run part of it."""
    if not plans:
        raise InputError("nothing to run: no plan given")
    if any(planned.settings.shard for planned in plans):
        raise InputError("sharded plans cannot be combined: plan the suites together with --shard instead")
    first = plans[0].settings.model_copy(update={"paths": [], "plan_hash": None})
    for other in plans[1:]:
        if other.settings.model_copy(update={"paths": [], "plan_hash": None}) != first:
            raise InputError(
                "plans made with different settings cannot run as one run: plan them with the same options"
            )
    suites: list[LoadedSuite] = []
    snapshots: list[SuiteSnapshot] = []
    items: list[PlanItem] = []
    notes: list[str] = []
    for planned in plans:
        offset = len(suites)
        for item in planned.items:
            # A key begins with its suite index (build_plan), which is unique only within its own plan.
            _, _, rest = item.key.partition(":")
            index = item.suite + offset
            items.append(item.model_copy(update={"suite": index, "key": f"{index}:{rest}"}))
        suites.extend(planned.suites)
        snapshots.extend(planned.snapshots)
        notes.extend(note for note in planned.notes if note not in notes)
    paths = [path for planned in plans for path in planned.settings.paths]
    settings = plans[0].settings.model_copy(update={"paths": paths})
    settings = settings.model_copy(update={"plan_hash": plan_hash(snapshots, settings, items)})
    return PlannedRun(suites=suites, settings=settings, items=items, snapshots=snapshots, notes=notes)


def _cache(store_path: Path, record: RunRecord, enabled: bool, size_mb: int) -> Any:
    """The run's request cache, beside the store; none when turned off, or on Ray (its workers cannot reach it)."""
    if not enabled or record.settings.executor == "ray":
        return None
    from simulator.llm import RequestCache

    return RequestCache(store_path.parent / "cache.db", max_bytes=size_mb * 1024 * 1024)


async def _execute(
    store: RunStore,
    record: RunRecord,
    *,
    live: bool,
    cache: bool,
    cache_size_mb: int,
    on_event: EventHandler | None,
    estimate_s: float | None = None,
    trace_to: OtlpTarget | None = None,
) -> RunOutcome:
    done = store.result_count(record.id)
    request_cache = _cache(store.path, record, cache, cache_size_mb)
    if on_event is not None:
        limited = record.settings.max_cost is not None  # the suites are read again only for a limited run
        notes = cost_notes([restore(snapshot) for snapshot in record.snapshot], record.settings) if limited else []
        on_event(
            RunStarted(
                record=record, store_path=store.path, already_done=done, estimate_s=estimate_s,
                cache_path=request_cache.path if request_cache is not None else None, notes=tuple(notes),
            )
        )  # fmt: skip
    finished = await execute(
        store, record, live=live, on_progress=on_event, cache=request_cache, trace_to=trace_to
    )  # fmt: skip
    return RunOutcome(record=finished, store_path=store.path)


async def run_async(
    suites: Suites | PlannedRun,
    settings: RunSettings | None = None,
    *,
    db: PathLike | None = None,
    agent_version: str | None = None,
    note: str = "",
    cache_size_mb: int = 200,
    on_event: EventHandler | None = None,
    trace_endpoint: str | None = None,
    **options: Any,
) -> RunOutcome:
    """Run suites (paths of suite files or folders, loaded suites, or a :class:`PlannedRun`): every case x
    persona x repeat, concurrently, each result stored the moment it is scored (``db``: the run store, default
    ``$SIMULATOR_DB`` or ``.simulator/runs.db``). Settings are a :class:`RunSettings` and/or its fields as
    keywords (``repeat=3``, ``persona="all"``, ``judge_model=...``, ``live=True`` to run real tool
    functions, ``models={"judge": {"api_base": ...}}``, ``trace="otlp"`` to send OpenTelemetry spans of the run to
    ``trace_endpoint`` or the collector the standard ``OTEL_EXPORTER_OTLP_*`` variables name). Returns the stored
    run. Cancelling it marks the run
    ``interrupted`` (continue it with :func:`resume`) and re-raises. A number out of its range
    (:mod:`simulator.models.ranges`) is an InputError before anything is stored."""
    check_number("cache_size_mb", cache_size_mb)
    planned = suites if isinstance(suites, PlannedRun) else plan(suites, settings, **options)
    check_numbers(planned.settings.model_dump())  # a PlannedRun made by hand too
    register_run_secrets(planned.suites, planned.settings)  # a PlannedRun made by hand too
    trace_to = trace_target(planned.settings, trace_endpoint)  # before anything is stored
    # The cluster first: the store's file is made when it opens, and a cluster that refuses must leave none.
    with on_cluster(planned.settings), RunStore(Path(db) if db is not None else default_db_path()) as store:
        record = new_record(
            store.new_run_id(), planned.snapshots, planned.settings, planned.items,
            agent_version=agent_version, note=note,
        )  # fmt: skip
        speech = check_voice(planned.suites, planned.settings)
        if speech:  # the speech backends a voice run used can change its results, as a library's version can
            record = record.model_copy(update={"versions": {**record.versions, **speech}})
        store.create_run(record)
        mean = store.mean_duration(record.suite_hash)
        estimate = mean * len(planned.items) / planned.settings.concurrency if mean else None
        return await _execute(
            store, record, live=planned.settings.live, cache=planned.settings.cache, cache_size_mb=cache_size_mb,
            on_event=on_event, estimate_s=estimate, trace_to=trace_to,
        )  # fmt: skip


@dataclass(frozen=True)
class ResumeCheck:
    """A stored run checked for :func:`resume`: its record, where it is stored, and how many of its planned
    conversations are not stored yet. A complete run has nothing to resume."""

    record: RunRecord
    store_path: Path
    left: int

    @property
    def complete(self) -> bool:
        """Whether the run completed and every planned conversation is stored: resuming it runs nothing."""
        return self.left == 0 and self.record.status == "completed"

    @property
    def outcome(self) -> RunOutcome:
        """The run as :func:`get_run` gives it."""
        return RunOutcome(record=self.record, store_path=self.store_path)


def check_resume(
    run_ref: str, *, db: PathLike | None = None, live: bool = False, ray_workers: int | None = None
) -> ResumeCheck:
    """What :func:`resume` would do with a stored run, running nothing: the same checks (the store writable, no
    other live process running the run, a run started live resumed only with ``live=True``, a replayed run never)
    and how many conversations are left. What an imported run would execute is :func:`code_it_runs`."""
    check_number("ray_workers", ray_workers)
    with RunStore(Path(db) if db is not None else default_db_path()) as store:
        return _resumable(store, run_ref, live)


def _resumable(store: RunStore, run_ref: str, live: bool) -> ResumeCheck:
    store.require_writable("resume a run")
    record = store.get_run(run_ref)
    store.check_free(record.id, "resumed")
    left = ResumeCheck(record, store.path, len(record.plan) - len(store.completed_keys(record.id)))
    if left.complete:
        return left
    if record.replay_of:
        # Its conversations were played from cassettes: resumed, they would run live.
        raise InputError(
            f"run {record.id} plays back the recording of run {record.replay_of} and cannot be resumed: "
            f"replay it again (simulator replay {record.replay_of}, or simulator rerun for a rerun)"
        )
    check_live(record, live)
    return left


def check_repeat(run_ref: str, *, db: PathLike | None = None) -> RunRecord:
    """The stored run :func:`repeat` would run again, checked as it checks it (the store writable, no other live
    process running the run), running nothing."""
    with RunStore(Path(db) if db is not None else default_db_path()) as store:
        return _repeatable(store, run_ref)


def _repeatable(store: RunStore, run_ref: str) -> RunRecord:
    store.require_writable("repeat a run")
    record = store.get_run(run_ref)
    store.check_free(record.id, "repeated")
    return record


async def resume_async(
    run_ref: str,
    *,
    db: PathLike | None = None,
    live: bool = False,
    trust_imported: bool = False,
    cache: bool = True,
    cache_size_mb: int = 200,
    on_event: EventHandler | None = None,
    executor: Literal["local", "ray"] | None = None,
    ray_address: str | None = None,
    ray_workers: int | None = None,
    max_cost: float | None = None,
) -> RunOutcome:
    """Finish an interrupted or failed run (``run_ref``: an id, a unique prefix, ``latest`` or ``latest~N``):
    finished conversations are not run again, unfinished ones continue where they stopped. A run another live
    process runs is refused (:class:`~simulator.store.RunBusyError`); a run started live continues only with
    ``live=True``; an imported run only with ``trust_imported=True``. A complete run is returned as it is.
    It runs on the executor it was started with (``executor``, ``ray_address`` and ``ray_workers`` as stored)
    unless these say otherwise. A traced run (``trace="otlp"``) goes on sending spans to the collector the
    ``OTEL_EXPORTER_OTLP_*`` variables name (its address is not stored). ``max_cost``: the run's cost limit for
    this process instead of its own (``--max-cost``); either counts what the whole run cost so far."""
    check_numbers({"cache_size_mb": cache_size_mb, "ray_workers": ray_workers, "max_cost": max_cost})
    store = RunStore(Path(db) if db is not None else default_db_path())
    with store:
        left = _resumable(store, run_ref, live)
        record = left.record
        if left.complete:
            return RunOutcome(record=record, store_path=store.path)
        check_trust(record, trust_imported, "resuming")
        check_environment_of(record)
        register_record_secrets(record)
        record = _on_executor(record, executor, ray_address, ray_workers)
        if max_cost is not None:
            record = record.model_copy(update={"settings": checked_settings(record.settings, {"max_cost": max_cost})})
        with on_cluster(record.settings):
            return await _execute(
                store, record, live=live, cache=record.settings.cache and cache, cache_size_mb=cache_size_mb,
                on_event=on_event, trace_to=trace_target(record.settings),
            )  # fmt: skip


def _on_executor(
    record: RunRecord, executor: str | None, ray_address: str | None, ray_workers: int | None
) -> RunRecord:
    """``record`` to run on the executor given, where one is (the stored one otherwise)."""
    given: dict[str, Any] = {}
    if executor is not None:
        given = {"executor": executor, "ray_address": None, "ray_workers": None}
    if ray_address is not None:
        given["ray_address"] = ray_address
    if ray_workers is not None:
        given["ray_workers"] = ray_workers
    if not given:
        return record
    settings = checked_settings(record.settings, given)
    return record.model_copy(update={"settings": settings})


async def repeat_async(
    run_ref: str,
    *,
    db: PathLike | None = None,
    live: bool = False,
    trust_imported: bool = False,
    note: str | None = None,
    agent_version: str | None = None,
    cache: bool = True,
    judge_model: str | None = None,
    user_model: str | None = None,
    models: Mapping[Any, Mapping[str, Any]] | None = None,
    cache_size_mb: int = 200,
    on_event: EventHandler | None = None,
    max_cost: float | None = None,
) -> RunOutcome:
    """Run again exactly what a stored run ran (its suite snapshot, settings and plan) as a new run; tools in
    test mode unless ``live=True``; the request cache as the stored run had it, off with ``cache=False``.
    ``judge_model``, ``user_model`` and ``models`` (per-role settings as ``run`` takes them) are laid over the
    stored run's model settings: the same plan, other models or endpoints. ``max_cost`` replaces the stored
    run's cost limit (``--max-cost``; the new run counts its own cost)."""
    check_numbers({"cache_size_mb": cache_size_mb, "max_cost": max_cost})
    store = RunStore(Path(db) if db is not None else default_db_path())
    with store:
        old = _repeatable(store, run_ref)
        check_trust(old, trust_imported, "repeating")
        settings = model_options(user_model, judge_model, models).over(old.settings)
        if max_cost is not None:
            settings = settings.model_copy(update={"max_cost": max_cost})
        register_record_secrets(old, settings)
        trace_to = trace_target(settings)  # before anything is stored
        check_environment_of(old, settings)
        record = new_record(
            store.new_run_id(), old.snapshot,
            # The same modality; but a repeat is no side of the comparison the old run was made for.
            settings.model_copy(update={"live": live, "cache": old.settings.cache and cache, "paired_with": None}),
            old.plan,
            agent_version=agent_version if agent_version is not None else old.agent_version,
            note=note if note is not None else f"repeat of {old.id}", repeat_of=old.id,
            imported_from=old.imported_from,
        )  # fmt: skip
        with on_cluster(record.settings):
            store.create_run(record)
            return await _execute(
                store, record, live=live, cache=record.settings.cache, cache_size_mb=cache_size_mb,
                on_event=on_event, trace_to=trace_to,
            )  # fmt: skip


@dataclass(frozen=True)
class SimulationPlan:
    """What :func:`simulate` will run: the suite, the cases with their personas, the options, and notes."""

    suite: LoadedSuite
    cases: list[tuple[Case, Persona | None]]
    options: RunSettings
    notes: list[str]
    has_judge: bool


def plan_simulation(
    suite: PathLike | LoadedSuite,
    *,
    cases: Sequence[str] = (),
    persona: str | None = None,
    live: bool = False,
    user_model: str | None = None,
    judge_model: str | None = None,
    models: Mapping[Any, Mapping[str, Any]] | None = None,
    seed: int = 0,
) -> SimulationPlan:
    """Check what :func:`simulate` would run, running nothing."""
    from simulator.loading import load_suite

    check_number("seed", seed)

    loaded = suite if isinstance(suite, LoadedSuite) else load_suite(suite)
    settings = RunSettings(
        live=live, user_model=user_model, judge_model=judge_model, seed=seed, models=role_overrides(models or {})
    )
    check_environment([loaded], settings=settings)
    check_models([loaded], settings)
    check_voice([loaded], settings)
    register_run_secrets([loaded], settings)
    chosen = [find_case(loaded, name) for name in cases] if cases else list(loaded.suite.cases)
    check_simulated_tools([loaded], settings, [{case.name for case in chosen}])
    pairs = [(case, pick_persona(loaded, case, persona)) for case in chosen]
    notes = plan_notes([loaded], {(0, case.name) for case in chosen}, _has_judge(settings))
    simulated = simulated_tools(loaded, settings, {case.name for case in chosen})
    if simulated:
        notes.append(_simulated_tools_note(simulated))
    return SimulationPlan(
        suite=loaded, cases=pairs, options=settings, notes=notes,
        has_judge=bool(model_roles(loaded, settings).judge.model),
    )  # fmt: skip


async def simulate_async(
    suite: PathLike | LoadedSuite | SimulationPlan,
    *,
    on_result: Callable[[CaseResult], None] | None = None,
    **options: Any,
) -> list[CaseResult]:
    """Run and score cases of one suite one by one, storing nothing: each result holds the transcript, step
    outcomes, every score and the outcome with its reasons. Keywords as :func:`plan_simulation` (``cases``,
    ``persona``, ``live``, ``user_model``, ``judge_model``, ``models``, ``seed``). Offline by default
    (scripted user, deterministic checks)."""
    from simulator.llm import LLMClient
    from simulator.runner._case import run_case, score_case

    planned = suite if isinstance(suite, SimulationPlan) else plan_simulation(suite, **options)
    llm = LLMClient(model_roles(planned.suite, planned.options))
    results: list[CaseResult] = []
    for case, persona in planned.cases:
        transcript = await run_case(planned.suite, case, persona=persona, llm=llm, options=planned.options)
        result = await score_case(planned.suite, case, transcript, llm=llm, options=planned.options)
        results.append(result)
        if on_result is not None:
            on_result(result)
    return results


def delete_run(run_ref: str, *, db: PathLike | None = None) -> str:
    """Delete a stored run, its results and its conversation checkpoints; returns its id."""
    with RunStore(Path(db) if db is not None else default_db_path()) as store:
        try:
            run_id = store.get_run(run_ref).id
        except UnreadableRunError as exc:  # a run that cannot be read can still be deleted
            run_id = exc.run_id
        store.delete_run(run_id)
        forget_checkpoints(store.path, run_id)
    return run_id


def get_run(run_ref: str, *, db: PathLike | None = None) -> RunOutcome:
    """A stored run (``run_ref``: an id, a unique prefix, ``latest`` or ``latest~N``)."""
    with RunStore(Path(db) if db is not None else default_db_path()) as store:
        return RunOutcome(record=store.get_run(run_ref), store_path=store.path)


run = blocking(run_async)
resume = blocking(resume_async)
repeat = blocking(repeat_async)
simulate = blocking(simulate_async)
