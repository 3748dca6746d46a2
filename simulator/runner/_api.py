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

import asyncio
import functools
import random
from collections.abc import Callable, Coroutine, Iterator, Mapping, Sequence
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, ParamSpec, TypeVar, cast

from pydantic import ValidationError

from simulator.cassettes import Compare, Playback, decode
from simulator.errors import ConfigErrors, InputError
from simulator.loading import LoadedSuite, validate_paths
from simulator.models import Case, ModelRoles, Persona
from simulator.models.cassette import Cassette
from simulator.models.ranges import check_number, check_numbers
from simulator.models.run import ModelOptions, PlanItem, RunRecord, RunSettings, StoredResult, SuiteSnapshot
from simulator.models.scores import CaseResult
from simulator.runner._case import (
    check_environment,
    check_models,
    check_simulated_tools,
    find_case,
    model_limits,
    model_roles,
    pick_persona,
    simulated_tools,
)
from simulator.runner._execute import Progress, check_live, execute, forget_checkpoints
from simulator.runner._otlp import OtlpTarget, otlp_target
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
from simulator.store import RunStore, UnreadableRunError, default_db_path

P = ParamSpec("P")
T = TypeVar("T")
PathLike = str | Path
Suites = PathLike | LoadedSuite | Sequence[PathLike | LoadedSuite]
ModelRole = Literal["agent", "user", "judge"]


@dataclass(frozen=True)
class RunStarted:
    """The run is stored and about to run: its record, what is already done (a resumed run), and the request cache
    its user and judge answers are replayed from (``None``: no cache, every answer is asked of the model)."""

    record: RunRecord
    store_path: Path
    already_done: int
    estimate_s: float | None = None
    cache_path: Path | None = None


RunEvent = RunStarted | Progress
EventHandler = Callable[[RunEvent], None]


@dataclass(frozen=True)
class PlannedRun:
    """What a run will run, checked and expanded, before anything is stored: the loaded suites, the settings
    (with the seed fixed), the plan items, the suite snapshots, and notes a person should read first."""

    suites: list[LoadedSuite]
    settings: RunSettings
    items: Sequence[PlanItem]
    snapshots: list[SuiteSnapshot]
    notes: list[str] = field(default_factory=list)

    @property
    def cases(self) -> int:
        """How many distinct cases the plan runs."""
        return len({(item.suite, item.case) for item in self.items})

    @property
    def model_limits(self) -> dict[str, list[int]]:
        """Model calls in flight at once per role that has a model, as the run will apply them (a suite's own
        ``models.<role>.concurrency``, else the run's concurrency): the distinct limits across the suites."""
        limits: dict[str, list[int]] = {}
        for loaded in self.suites:
            for role, limit in model_limits(loaded, self.settings).items():
                if limit not in limits.setdefault(role, []):
                    limits[role].append(limit)
        return {role: sorted(values) for role, values in limits.items()}

    @property
    def simulated_tools(self) -> list[str]:
        """The tools a model plays in this run (they declare ``simulate``; test mode only), each name once."""
        planned: dict[int, set[str]] = {}
        for item in self.items:
            planned.setdefault(item.suite, set()).add(item.case)
        names = [
            name
            for index, loaded in enumerate(self.suites)
            if index in planned
            for name in simulated_tools(loaded, self.settings, planned[index])
        ]
        return list(dict.fromkeys(names))


@dataclass(frozen=True)
class RunOutcome:
    """A run as stored after it ran: its record (status, totals, settings, snapshot) and where it is stored.
    Results are read from the store on demand, so a large run is never held in memory whole."""

    record: RunRecord
    store_path: Path

    @property
    def id(self) -> str:
        """The run id (``runs show ID``, ``report ID``)."""
        return self.record.id

    @property
    def completed(self) -> bool:
        """Whether every planned conversation finished and was stored."""
        return self.record.status == "completed" and self.record.totals is not None

    @property
    def passed(self) -> bool:
        """Whether the run completed and every case passed, leaving out the failures the simulated user caused
        (``user_error``); a run whose every case is a user error shows nothing about the agent: not passed."""
        totals = self.record.totals
        if not self.completed or totals is None:
            return False
        judged = totals.total - totals.user_error
        return totals.passed == judged and (judged > 0 or totals.total == 0)

    @property
    def correctness(self) -> float | None:
        """Passed / (total - user errors) (errors count as failures), or None before anything finished."""
        return self.record.totals.correctness if self.record.totals else None

    def results(self) -> list[StoredResult]:
        """Every stored result of the run, in plan order, in one list (for a large run, :meth:`iter_results`)."""
        with RunStore(self.store_path) as store:
            return store.results(self.record.id)

    def iter_results(self) -> Iterator[StoredResult]:
        """Every stored result of the run, in plan order, read from the store a few at a time: memory stays flat
        whatever the run's size. The store is open while the iteration runs (closed when it ends or the
        iterator is closed)."""
        with RunStore(self.store_path) as store:
            yield from store.iter_results(self.record.id)

    @property
    def coverage(self) -> float | None:
        """The run's coverage in % (:class:`simulator.models.coverage.RunCoverage`), or None before it finished."""
        totals = self.record.totals
        return totals.coverage.percent if totals is not None and totals.coverage is not None else None

    def exit_code(self, fail_under: float | None = None, fail_under_coverage: float | None = None) -> int:
        """What the command line exits with for this run: 0 pass (or correctness at least ``fail_under`` %),
        1 below the bar (or coverage below ``fail_under_coverage`` %: a run with nothing to cover counts as
        0%), 3 when the run did not complete. A bar outside 0-100 is an InputError."""
        check_numbers({"fail_under": fail_under, "fail_under_coverage": fail_under_coverage})
        if not self.completed or self.record.totals is None:
            return 3
        if fail_under_coverage is not None and (self.coverage or 0.0) < fail_under_coverage:
            return 1
        if fail_under is not None:
            return 0 if (self.record.totals.correctness or 0.0) * 100 >= fail_under else 1
        return 0 if self.passed else 1


def _as_list(suites: Suites) -> list[PathLike | LoadedSuite]:
    if isinstance(suites, str | Path | LoadedSuite):
        return [suites]
    return list(suites)


def _settings(settings: RunSettings | None, options: Mapping[str, Any]) -> RunSettings:
    """``settings`` with ``options`` laid over it, validated: an unknown or ill-typed option, or a number out of
    its range (:mod:`simulator.models.ranges`), is an InputError naming it, before anything runs."""
    data = settings.model_dump() if settings is not None else {}
    data.update(options)
    if isinstance(data.get("models"), Mapping):
        data["models"] = _role_settings(data["models"])
    check_numbers(data)  # before pydantic, which would read True as 1 and "3" as 3
    try:
        chosen = RunSettings.model_validate(data)
    except ValidationError as exc:
        problems = "; ".join(
            f"{'.'.join(str(part) for part in error['loc']) or 'settings'}: {error['msg']}" for error in exc.errors()
        )
        raise InputError(f"invalid run settings: {problems}") from None
    check_executor(chosen)
    # RunSettings keeps per-role overrides as plain data: checked here against the models' schema, so a misspelt
    # key is an error before the run, not a field silently set on a role.
    return chosen.model_copy(update={"models": role_overrides(chosen.models)}) if chosen.models else chosen


def check_executor(settings: RunSettings) -> None:
    """The executor options fit together, Ray is installed when the run asks for it and something answers at its
    ``ray_address`` (before anything is stored), or an InputError saying what to change."""
    if settings.executor == "local":
        given = [option for option, value in (("--ray-address", settings.ray_address),
                                               ("--ray-workers", settings.ray_workers)) if value]  # fmt: skip
        if given:
            raise InputError(f"{' and '.join(given)} only apply to Ray runs: add --executor ray, or leave them out")
        return
    import importlib.util

    if importlib.util.find_spec("ray") is None:
        raise InputError(
            "--executor ray needs Ray, which is not installed: pip install 'simulator[ray]' (or run with "
            "--executor local). Ray has wheels for CPython on Linux x86_64/aarch64, macOS arm64 and Windows x86_64 "
            "(macOS x86_64 up to Python 3.13); elsewhere the extra installs nothing"
        )
    from simulator.runner._ray import check_reachable, named_cluster

    named = named_cluster(settings)  # --ray-address, else Ray's own RAY_ADDRESS
    if named is not None:
        check_reachable(*named)  # before the run is stored: Ray would retry for minutes


def _on_cluster(settings: RunSettings) -> AbstractContextManager[None]:
    """The run's Ray cluster connected to (or a local one started) for the block, when it runs on Ray: entered
    before the run is stored, so a cluster that refuses this process (an address where nobody answers, a token
    it does not take) leaves no empty failed run behind."""
    if settings.executor != "ray":
        return nullcontext()
    from simulator.runner._ray import cluster

    return cluster(settings)


def _role_settings(models: Mapping[Any, Any]) -> dict[Any, Any]:
    """A role given as a model string (``{"user": "ollama/llama3.1"}``) is that model, as in a suite's ``models:``."""
    return {role: {"model": values} if isinstance(values, str) else values for role, values in models.items()}


def role_overrides(models: Mapping[Any, Mapping[str, Any] | str]) -> dict[ModelRole, dict[str, Any]]:
    """Per-role model settings given to a command (``--models FILE``, ``--judge-api-base`` ...), checked
    against the suite's own ``models:`` schema: only the keys given, so they override the suite's field by
    field; a role given as a model string is that model. An unknown role or key is an InputError naming it."""
    try:
        roles = ModelRoles.model_validate(
            {role: dict(values) for role, values in _role_settings(models).items()}, strict=False
        )
    except ValidationError as exc:
        problems = "; ".join(
            f"{'.'.join(str(part) for part in error['loc'])}: {error['msg']}" for error in exc.errors()
        )
        raise InputError(f"invalid model settings: {problems}") from None
    return cast("dict[ModelRole, dict[str, Any]]", roles.model_dump(exclude_unset=True))


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
    empty. Every shard must plan the same, so a sharded plan without a seed takes seed 0, not a random one."""
    options = dict(options)
    seed = options.pop("seed", None)
    chosen = _settings(settings, options if seed is None else {**options, "seed": seed})
    shard = parse_shard(chosen.shard) if chosen.shard is not None else None
    loaded = _load(suites)
    if seed is None and (settings is None or "seed" not in settings.model_fields_set):
        # A random seed, recorded in the run, so the persona choice and the scripted user can be reproduced.
        chosen = chosen.model_copy(update={"seed": 0 if shard else random.SystemRandom().randrange(2**31)})
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


def yaml_kind(path: PathLike) -> str:
    """What a YAML file holds, told as ``simulator validate`` tells it (``suite``, ``evals``, ``agent``,
    ``persona``, ``personas`` or ``unknown``), or ``unreadable`` when it cannot be read or parsed (loading it
    says why). Reads the file with the loader's limits on size, depth and aliases."""
    from simulator.loading import classify, parse_yaml, read_text

    file = Path(path)
    text, _ = read_text(file)
    if text is None:
        return "unreadable"
    located, _ = parse_yaml(text, str(file))
    if located is None:
        return "unreadable"
    return classify(file, located.data)


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
        on_event(
            RunStarted(
                record=record, store_path=store.path, already_done=done, estimate_s=estimate_s,
                cache_path=request_cache.path if request_cache is not None else None,
            )
        )  # fmt: skip
    finished = await execute(
        store, record, live=live, on_progress=on_event, cache=request_cache, trace_to=trace_to
    )  # fmt: skip
    return RunOutcome(record=finished, store_path=store.path)


def trace_target(settings: RunSettings, endpoint: str | None = None) -> OtlpTarget | None:
    """Where a run with these settings sends its spans (``trace="otlp"``), or None when it is not traced; an
    InputError for an endpoint given to a run that is not traced, or one that is not a collector's URL."""
    if settings.trace is None:
        if endpoint is not None:
            raise InputError("--trace-endpoint only applies to a traced run: add --trace otlp, or leave it out")
        return None
    return otlp_target(endpoint)


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
    with _on_cluster(planned.settings), RunStore(Path(db) if db is not None else default_db_path()) as store:
        record = new_record(
            store.new_run_id(), planned.snapshots, planned.settings, planned.items,
            agent_version=agent_version, note=note,
        )  # fmt: skip
        store.create_run(record)
        mean = store.mean_duration(record.suite_hash)
        estimate = mean * len(planned.items) / planned.settings.concurrency if mean else None
        return await _execute(
            store, record, live=planned.settings.live, cache=planned.settings.cache, cache_size_mb=cache_size_mb,
            on_event=on_event, estimate_s=estimate, trace_to=trace_to,
        )  # fmt: skip


def code_it_runs(record: RunRecord, live: bool) -> list[str]:
    """What running ``record``'s snapshot executes or reaches on this machine, one line each (shown before an
    imported run is resumed or repeated)."""
    lines: list[str] = []
    for snapshot in record.snapshot:
        suite = snapshot.suite
        where = f"suite '{printable(suite.name)}'"
        agent = suite.agent
        if isinstance(agent, str):
            lines.append(f"agent file {printable(agent)} ({where})")
        elif agent is not None:
            what, effect = agent.reaches()
            lines.append(f"{printable(what)} ({where}): {effect}")
        for tool in getattr(agent, "tools", None) or []:
            if tool.function is None:
                continue
            if live:
                lines.append(f"live tool function {tool.function} for tool {tool.name} ({where}): called with --live")
            else:
                lines.append(f"tool function {tool.function} for tool {tool.name} ({where}): not run (no --live)")
    return lines


def printable(text: str) -> str:
    """Text from an imported file, with every control or invisible character written as an escape."""
    return "".join(char if char.isprintable() else f"\\u{ord(char):04x}" for char in str(text))


def _trust(record: RunRecord, trust_imported: bool, doing: str) -> None:
    if record.imported_from and not trust_imported:
        raise InputError(
            f"run {record.id} came from `simulator import run` (run {printable(record.imported_from)} elsewhere); "
            f"{doing} it runs the code its snapshot names on this machine: read the export, then pass "
            "trust_imported=True (--yes on the command line)"
        )


def _check_environment_of(record: RunRecord, settings: RunSettings | None = None) -> None:
    """The environment variables of the agents the run's plan runs (a suite its filters left out needs none), and
    the keys of the models it asks (``settings``, default the run's)."""
    planned = sorted({item.suite for item in record.plan})
    suites = [restore(record.snapshot[index]) for index in planned]
    check_environment(suites, settings=record.settings)
    check_models(suites, settings or record.settings)


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
) -> RunOutcome:
    """Finish an interrupted or failed run (``run_ref``: an id, a unique prefix, ``latest`` or ``latest~N``):
    finished conversations are not run again, unfinished ones continue where they stopped. A run another live
    process runs is refused (:class:`~simulator.store.RunBusyError`); a run started live continues only with
    ``live=True``; an imported run only with ``trust_imported=True``. A complete run is returned as it is.
    It runs on the executor it was started with (``executor``, ``ray_address`` and ``ray_workers`` as stored)
    unless these say otherwise. A traced run (``trace="otlp"``) goes on sending spans to the collector the
    ``OTEL_EXPORTER_OTLP_*`` variables name (its address is not stored)."""
    check_numbers({"cache_size_mb": cache_size_mb, "ray_workers": ray_workers})
    store = RunStore(Path(db) if db is not None else default_db_path())
    with store:
        store.require_writable("resume a run")
        record = store.get_run(run_ref)
        store.check_free(record.id, "resumed")
        if record.status == "completed" and len(store.completed_keys(record.id)) == len(record.plan):
            return RunOutcome(record=record, store_path=store.path)
        if record.replay_of:
            # Its conversations were played from cassettes: resumed, they would run live.
            raise InputError(
                f"run {record.id} plays back the recording of run {record.replay_of} and cannot be resumed: "
                f"replay it again (simulator replay {record.replay_of}, or simulator rerun for a rerun)"
            )
        check_live(record, live)
        _trust(record, trust_imported, "resuming")
        _check_environment_of(record)
        register_record_secrets(record)
        record = _on_executor(record, executor, ray_address, ray_workers)
        with _on_cluster(record.settings):
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
    settings = _settings(record.settings, given)
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
    models: Mapping[str, Mapping[str, Any]] | None = None,
    cache_size_mb: int = 200,
    on_event: EventHandler | None = None,
) -> RunOutcome:
    """Run again exactly what a stored run ran (its suite snapshot, settings and plan) as a new run; tools in
    test mode unless ``live=True``; the request cache as the stored run had it, off with ``cache=False``.
    ``judge_model``, ``user_model`` and ``models`` (per-role settings as ``run`` takes them) are laid over the
    stored run's model settings: the same plan, other models or endpoints."""
    check_number("cache_size_mb", cache_size_mb)
    store = RunStore(Path(db) if db is not None else default_db_path())
    with store:
        store.require_writable("repeat a run")
        old = store.get_run(run_ref)
        store.check_free(old.id, "repeated")
        _trust(old, trust_imported, "repeating")
        settings = _model_options(user_model, judge_model, models).over(old.settings)
        register_record_secrets(old, settings)
        trace_to = trace_target(settings)  # before anything is stored
        _check_environment_of(old, settings)
        record = new_record(
            store.new_run_id(), old.snapshot,
            settings.model_copy(update={"live": live, "cache": old.settings.cache and cache}), old.plan,
            agent_version=agent_version if agent_version is not None else old.agent_version,
            note=note if note is not None else f"repeat of {old.id}", repeat_of=old.id,
            imported_from=old.imported_from,
        )  # fmt: skip
        with _on_cluster(record.settings):
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
    models: Mapping[str, Mapping[str, Any]] | None = None,
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


# --------------------------------------------------------------------------------------------------------------
# Record and replay: cassettes of recorded runs (run --record) played back as new runs

SuiteSource = Literal["disk", "snapshot"]


def _recorded_items(
    store: RunStore, source: RunRecord, case: str | None, persona: str | None
) -> list[tuple[PlanItem, Cassette]]:
    """The recorded conversations of ``source`` that ``case`` and ``persona`` select, with their cassettes."""
    from simulator.loading import did_you_mean

    keys = store.cassette_keys(source.id)
    if not keys:
        paths = " ".join(source.settings.paths) or "SUITE"
        raise InputError(
            f"run {source.id} was run without --record, so it has no cassettes to replay; record a run with "
            f"`simulator run {paths} --record` (or record=True in simulator.run), then replay that run"
        )
    items = [item for item in source.plan if item.key in keys]
    cases = sorted({item.case for item in items})
    if case is not None and case not in cases:
        raise InputError(
            f"run {source.id} has no recorded case named {case!r}{did_you_mean(case, cases)} "
            f"(recorded cases: {', '.join(cases)})"
        )
    items = [item for item in items if case is None or item.case == case]
    personas = sorted({item.persona for item in items if item.persona})
    if persona is not None and persona not in personas:
        raise InputError(
            f"run {source.id} has no recorded conversation with persona {persona!r}"
            f"{did_you_mean(persona, personas)} (recorded personas: {', '.join(personas) or 'none'})"
        )
    items = [item for item in items if persona is None or item.persona == persona]
    return [
        (item, decode(store.cassette(source.id, item.key) or b"", where=f"cassette {item.key} of run {source.id}"))
        for item in items
    ]


def _suites_for_replay(source: RunRecord, suite_from: SuiteSource, items: Sequence[PlanItem]) -> list[SuiteSnapshot]:
    """The suites a replay scores with: the files as they are now (``disk``) or the run's snapshot."""
    if suite_from not in ("disk", "snapshot"):
        raise InputError(f"--suite-from must be disk or snapshot, not {suite_from!r}")
    if suite_from == "snapshot":
        return list(source.snapshot)
    from simulator.loading import load_suite

    snapshots: list[SuiteSnapshot] = []
    for snapshot in source.snapshot:
        if not Path(snapshot.path).is_file():
            raise InputError(
                f"the suite file {snapshot.path} of run {source.id} is not there any more (looked for from "
                f"{Path.cwd()}): run from the folder the run was started in, or pass --suite-from snapshot to score "
                "with the suite as the run stored it"
            )
        loaded = load_suite(snapshot.path)
        snapshots.append(snapshot_of(loaded, snapshot.path))
    for item in items:
        names = [case.name for case in snapshots[item.suite].suite.cases]
        if item.case not in names:
            raise InputError(
                f"case {item.case!r} of run {source.id} is no longer in {snapshots[item.suite].path}: replay it "
                "with --suite-from snapshot"
            )
    return snapshots


async def _play(
    store: RunStore,
    source: RunRecord,
    chosen: list[tuple[PlanItem, Cassette]],
    snapshots: list[SuiteSnapshot],
    settings: RunSettings,
    *,
    note: str,
    make: Callable[[Cassette], Playback],
    live: bool,
    on_event: EventHandler | None,
) -> RunOutcome:
    items = [item for item, _ in chosen]
    register_run_secrets([restore(snapshot) for snapshot in snapshots], settings)
    playbacks = {item.key: make(cassette) for item, cassette in chosen}
    record = new_record(
        store.new_run_id(), snapshots, settings, items,
        agent_version=source.agent_version, note=note, replay_of=source.id, imported_from=source.imported_from,
    )  # fmt: skip
    store.create_run(record)
    if on_event is not None:
        on_event(RunStarted(record=record, store_path=store.path, already_done=0))
    finished = await execute(
        store, record, live=live, on_progress=on_event, checkpoints=False,
        playbacks=lambda item: playbacks[item.key],
    )  # fmt: skip
    return RunOutcome(record=finished, store_path=store.path)


async def replay_async(
    run_ref: str,
    case: str | None = None,
    *,
    persona: str | None = None,
    judge_model: str | None = None,
    user_model: str | None = None,
    models: Mapping[str, Mapping[str, Any]] | None = None,
    suite_from: SuiteSource = "disk",
    db: PathLike | None = None,
    on_event: EventHandler | None = None,
) -> RunOutcome:
    """Play a recorded run (``run --record``) back without any agent or model, and score it again as a new run
    (``replay_of`` the recorded run; its note says "replay of ..."): the user's moves, the agent's replies and
    the tool results come from the cassettes; the checks and judges are the suite files' as they are now
    (``suite_from="disk"``) or the run's own (``"snapshot"``). A judge request identical to a recorded one is
    answered from the cassette; one that changed goes to the judge when a judge setting is given
    (``judge_model``, or the judge in ``models``: per-role settings as ``run`` takes them, laid over the recorded
    run's), else it is ``unsure`` (not judged), never a failure. ``case`` and ``persona`` narrow what is
    replayed."""
    store = RunStore(Path(db) if db is not None else default_db_path())
    with store:
        store.require_writable("replay a run")
        source = store.get_run(run_ref)
        chosen = _recorded_items(store, source, case, persona)
        snapshots = _suites_for_replay(source, suite_from, [item for item, _ in chosen])
        given = _model_options(user_model, judge_model, models)
        settings = given.over(source.settings).model_copy(
            update={"live": False, "record": False, "checkpoints": False, "cache": False}
        )
        live_judge = given.gives("judge")
        return await _play(
            store, source, chosen, snapshots, settings, note=f"replay of {source.id}", live=False, on_event=on_event,
            make=lambda cassette: Playback(cassette, source.id, mode="replay", live_judge=live_judge),
        )  # fmt: skip


async def rerun_async(
    run_ref: str,
    case: str,
    *,
    compare: Compare = "exact",
    persona: str | None = None,
    suite_from: SuiteSource = "disk",
    judge_model: str | None = None,
    user_model: str | None = None,
    models: Mapping[str, Mapping[str, Any]] | None = None,
    live: bool = False,
    trust_imported: bool = False,
    db: PathLike | None = None,
    on_event: EventHandler | None = None,
) -> RunOutcome:
    """Run the agent under test again, live, against the recorded user moves of ``case`` in a recorded run, from
    its first divergence: while each agent turn matches the recording (``compare``: ``exact`` text and tool
    calls, or ``normalized`` text ignoring whitespace, case and punctuation with the same tool names and
    arguments) the recorded user goes on; at the first turn that differs, the live simulated user takes over
    for the rest. Stored as a new run; each transcript says which turns were replayed and where it diverged. The
    models are the recorded run's, with ``judge_model``, ``user_model`` and ``models`` (per-role settings as
    ``run`` takes them) laid over them."""
    if compare not in ("exact", "normalized"):
        raise InputError(f"--compare must be exact or normalized, not {compare!r}")
    store = RunStore(Path(db) if db is not None else default_db_path())
    with store:
        store.require_writable("rerun a run")
        source = store.get_run(run_ref)
        _trust(source, trust_imported, "rerunning")
        chosen = _recorded_items(store, source, case, persona)
        snapshots = _suites_for_replay(source, suite_from, [item for item, _ in chosen])
        check_environment([restore(snapshot) for snapshot in snapshots])
        given = _model_options(user_model, judge_model, models)
        settings = given.over(source.settings).model_copy(update={"live": live, "record": True, "checkpoints": False})
        return await _play(
            store, source, chosen, snapshots, settings, note=f"rerun of {source.id} from the first divergence",
            live=live, on_event=on_event,
            make=lambda cassette: Playback(cassette, source.id, mode="rerun", compare=compare, live_judge=True),
        )  # fmt: skip


def _model_options(
    user_model: str | None, judge_model: str | None, models: Mapping[str, Mapping[str, Any]] | None
) -> ModelOptions:
    """A command's model options, the per-role settings checked (:func:`role_overrides`)."""
    return ModelOptions(user_model=user_model, judge_model=judge_model, models=role_overrides(models or {}))


def _blocking(function: Callable[P, Coroutine[Any, Any, T]]) -> Callable[P, T]:
    """``function`` run to completion on an event loop of its own: the API for callers without one."""

    @functools.wraps(function)
    def blocking(*args: P.args, **kwargs: P.kwargs) -> T:
        return asyncio.run(function(*args, **kwargs))

    blocking.__name__ = blocking.__qualname__ = function.__name__.removesuffix("_async")
    blocking.__doc__ = f"{function.__doc__}\n\n    Blocks until done; from async code use ``{function.__name__}``."
    return blocking


run = _blocking(run_async)
resume = _blocking(resume_async)
repeat = _blocking(repeat_async)
simulate = _blocking(simulate_async)
replay = _blocking(replay_async)
rerun = _blocking(rerun_async)
