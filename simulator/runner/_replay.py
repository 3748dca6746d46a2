"""Record and replay: the cassettes of a recorded run (``run --record``) played back as a new run, offline
(:func:`replay_async`: scored again with the suites as they are now, or as the run stored them) or with the agent
live from the first turn that differs (:func:`rerun_async`)."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from simulator.cassettes import Compare, Playback, decode
from simulator.errors import InputError
from simulator.models.cassette import Cassette
from simulator.models.run import PlanItem, RunRecord, RunSettings, SuiteSnapshot
from simulator.runner._case import (
    check_environment,
)
from simulator.runner._execute import execute
from simulator.runner._plan import (
    new_record,
    restore,
    snapshot_of,
)
from simulator.runner._secrets import register_run_secrets
from simulator.runner._settings import model_options
from simulator.runner._trust import check_trust
from simulator.runner._types import EventHandler, PathLike, RunOutcome, RunStarted, blocking
from simulator.store import RunStore, default_db_path


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


def _suites_for_replay(source: RunRecord, suite_from: str, items: Sequence[PlanItem]) -> list[SuiteSnapshot]:
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
    # The recorded run's modality plays back as it was; the comparison it was a side of is not this run's.
    settings = settings.model_copy(update={"paired_with": None})
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
    models: Mapping[Any, Mapping[str, Any]] | None = None,
    suite_from: str = "disk",
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
        given = model_options(user_model, judge_model, models)
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
    compare: str = "exact",
    persona: str | None = None,
    suite_from: str = "disk",
    judge_model: str | None = None,
    user_model: str | None = None,
    models: Mapping[Any, Mapping[str, Any]] | None = None,
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
    matching: Compare = "exact" if compare == "exact" else "normalized"
    store = RunStore(Path(db) if db is not None else default_db_path())
    with store:
        store.require_writable("rerun a run")
        source = store.get_run(run_ref)
        check_trust(source, trust_imported, "rerunning")
        chosen = _recorded_items(store, source, case, persona)
        snapshots = _suites_for_replay(source, suite_from, [item for item, _ in chosen])
        check_environment([restore(snapshot) for snapshot in snapshots])
        given = model_options(user_model, judge_model, models)
        settings = given.over(source.settings).model_copy(update={"live": live, "record": True, "checkpoints": False})
        return await _play(
            store, source, chosen, snapshots, settings, note=f"rerun of {source.id} from the first divergence",
            live=live, on_event=on_event,
            make=lambda cassette: Playback(cassette, source.id, mode="rerun", compare=matching, live_judge=True),
        )  # fmt: skip


replay = blocking(replay_async)
rerun = blocking(rerun_async)
