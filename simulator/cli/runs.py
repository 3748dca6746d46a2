"""Commands on stored runs: runs list, show, note, delete, resume, repeat, merge."""

from __future__ import annotations

from typing import Annotated, Any

import typer
from rich.table import Table

import simulator
from simulator.cli._choices import ExecutorChoice
from simulator.cli._models import (
    AgentApiBaseOption,
    JudgeApiBaseOption,
    JudgeModelOption,
    ModelsFileOption,
    UserApiBaseOption,
    UserModelOption,
    model_options,
)
from simulator.cli._output import (
    EXIT_INVALID,
    EXIT_OK,
    DbOption,
    LiveOption,
    MaxCostOption,
    RayAddressOption,
    RayWorkersOption,
    TrustOption,
    VerboseOption,
    YesOption,
    _handles_errors,
    _print_json,
    _print_unreadable,
    err,
    out,
)
from simulator.cli._progress import _cache_words, _exit_for, _print_run, _print_run_record, _run_with_progress


@_handles_errors
def runs_list(
    db: DbOption = None,
    limit: Annotated[int, typer.Option("--limit", min=1, help="How many runs, newest first.")] = 20,
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON.")] = False,
) -> None:
    """List stored runs, newest first."""
    skipped: list[Any] = []
    records = simulator.list_runs(db=db, limit=limit, skipped=skipped)
    _print_unreadable(skipped)
    if as_json:
        payload = [
            {"id": r.id, "created": r.created.isoformat(), "status": r.status, "agent_version": r.agent_version,
             "note": r.note, "suite_hash": r.suite_hash, "planned": len(r.plan),
             "totals": r.totals.model_dump(mode="json") if r.totals else None}
            for r in records
        ]  # fmt: skip
        _print_json(payload)
        return
    table = Table(title="Runs", title_justify="left")
    for column in ("id", "created", "status", "suites", "version", "correctness", "P/F/E/U", "note"):
        table.add_column(column, overflow="fold")
    for r in records:
        t = r.totals
        correctness = "-" if t is None or t.correctness is None else simulator.percent(t.correctness)
        counts = "-" if t is None else f"{t.passed}/{t.failed}/{t.error}/{t.unsure}"
        if t is not None and t.user_error:
            counts += f" +{t.user_error} user error"
        table.add_row(
            r.id, f"{r.created:%Y-%m-%d %H:%M}", r.status, ", ".join(s.suite.name for s in r.snapshot),
            r.agent_version or "", correctness, counts, r.note,
        )  # fmt: skip
    for bad in skipped:  # in the table too, where the run would be (its columns are what cannot be read)
        table.add_row(bad.run_id, "-", "unreadable", "-", "", "-", "-", "see the warning above")
    out.print(table)


@_handles_errors
def runs_show(
    run_ref: Annotated[str, typer.Argument(metavar="RUN", help="Run id, a unique prefix, latest or latest~N.")],
    db: DbOption = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print the run record and its results as JSON.")] = False,
    verbose: VerboseOption = False,
) -> None:
    """Show a run: header, one row per conversation (failures first, each with its first reason whole; -v:
    every reason), totals."""
    if not as_json:
        _print_run_record(run_ref, db, verbose=verbose)
        return
    skipped: list[Any] = []
    found = simulator.read_run(run_ref, db=db, skipped=skipped)
    owner = found.owner
    payload = {
        "run": found.record.model_dump(mode="json"),
        "owner": None
        if owner is None
        else {
            "pid": owner.pid,
            "host": owner.host,
            "started": owner.started.isoformat(),
            "heartbeat": owner.heartbeat.isoformat(),
        },
        "results": [r.model_dump(mode="json") for r in found.results],
    }
    _print_unreadable(skipped)
    _print_json(payload)


@_handles_errors
def runs_note(
    run_ref: Annotated[str, typer.Argument(metavar="RUN")],
    text: Annotated[str, typer.Argument(help="The new note.")],
    db: DbOption = None,
) -> None:
    """Replace a run's note (the suite, version and settings of a run never change)."""
    run_id = simulator.note_run(run_ref, text, db=db)
    out.print(f"note of {run_id} set", markup=False)


@_handles_errors
def runs_delete(
    run_ref: Annotated[str, typer.Argument(metavar="RUN")],
    db: DbOption = None,
    yes: Annotated[bool, typer.Option("--yes", help="Do not ask for confirmation.")] = False,
) -> None:
    """Delete a run and its results (a run whose record cannot be read too)."""
    run_id, record = simulator.find_run(run_ref, db=db)
    if record is None:
        question = f"Run {run_id} cannot be read. Delete it and its results?"
    else:
        question = f"Delete run {run_id} and its {len(record.plan)} planned results?"
    if not yes and not typer.confirm(question):
        raise typer.Exit(EXIT_OK)
    simulator.delete_run(run_id, db=db)
    out.print(f"deleted {run_id}", markup=False)


def _confirm_imported(record: simulator.RunRecord, yes: bool, live: bool, doing: str) -> None:
    """An imported run names code that did not come from this machine's files: say what it runs, and go on
    only with --yes."""
    if not record.imported_from:
        return
    lines = simulator.code_it_runs(record, live)
    err.print(
        f"Run {record.id} came from `simulator import run` (run {simulator.printable(record.imported_from)} "
        "elsewhere). "
        f"{doing.capitalize()} it runs what its snapshot names, on this machine, as you:",
        markup=False,
    )
    for line in lines or ["no agent code of its own"]:
        err.print(f"  - {line}", markup=False)
    if not yes:
        err.print(f"Read the export and trust that code first; then {doing} it with --yes.", markup=False)
        raise typer.Exit(EXIT_INVALID)


@_handles_errors
def runs_resume(
    run_ref: Annotated[str, typer.Argument(metavar="RUN")],
    db: DbOption = None,
    no_cache: Annotated[bool, typer.Option("--no-cache", help="Do not use the model request cache.")] = False,
    live: LiveOption = False,
    yes: YesOption = False,
    executor: Annotated[
        ExecutorChoice | None,
        typer.Option("--executor", help="Where conversations run (default: where the run was started)."),
    ] = None,
    ray_address: RayAddressOption = None,
    ray_workers: RayWorkersOption = None,
    max_cost: MaxCostOption = None,
    reviewed: Annotated[
        bool,
        typer.Option(
            "--reviewed",
            help="Exit on the run's correctness as people's reviews make it (reviews recorded while it was "
            "interrupted) rather than as judged.",
        ),
    ] = False,
) -> None:
    """Finish an interrupted or failed run: finished cases are not run again; unfinished conversations continue
    where they stopped (for agents without state of their own). A run another live process runs is refused
    (exit 3). A run started with --live continues only with --live. A run started on Ray resumes on Ray (the
    same --ray-address) unless --executor says otherwise. The run's --max-cost holds unless --max-cost gives
    another; either counts what the whole run cost so far. Exits like `run` (its --fail-under; with --reviewed
    on the correctness as reviewed)."""
    left = simulator.check_resume(run_ref, db=db, live=live, ray_workers=ray_workers)
    record = left.record
    if left.complete:
        out.print(f"run {record.id} is complete: nothing to resume", markup=False)
        _print_run_record(record.id, db)
        _exit_for(left.outcome, record.settings.fail_under, record.settings.fail_under_coverage, reviewed=reviewed)
        return
    _confirm_imported(record, yes, live, "resuming")
    out.print(f"Resuming {record.id}: {left.left} of {len(record.plan)} conversation(s) left.", markup=False)

    def started(event: Any) -> None:
        out.print(_cache_words(event).capitalize() + ".", markup=False)

    outcome = _run_with_progress(
        lambda on_event: simulator.resume_async(
            record.id,
            db=db,
            live=live,
            trust_imported=yes,
            cache=not no_cache,
            on_event=on_event,
            executor=executor.value if executor else None,
            ray_address=ray_address,
            ray_workers=ray_workers,
            max_cost=max_cost,
        ),
        db=db,
        on_start=started,
    )
    _print_run(outcome)
    _exit_for(
        outcome, outcome.record.settings.fail_under, outcome.record.settings.fail_under_coverage, reviewed=reviewed
    )


@_handles_errors
def runs_repeat(
    run_ref: Annotated[str, typer.Argument(metavar="RUN")],
    db: DbOption = None,
    note: Annotated[str | None, typer.Option("--note", help="Note of the new run.")] = None,
    agent_version: Annotated[str | None, typer.Option("--agent-version", help="Label of the agent version.")] = None,
    no_cache: Annotated[bool, typer.Option("--no-cache", help="Do not use the model request cache.")] = False,
    live: LiveOption = False,
    yes: YesOption = False,
    judge_model: JudgeModelOption = None,
    user_model: UserModelOption = None,
    models_file: ModelsFileOption = None,
    judge_api_base: JudgeApiBaseOption = None,
    user_api_base: UserApiBaseOption = None,
    agent_api_base: AgentApiBaseOption = None,
    max_cost: MaxCostOption = None,
) -> None:
    """Run again exactly what a stored run ran (its suite snapshot and settings) as a new run; tools in test
    mode unless this command says --live; the request cache as that run had it, unless --no-cache. The model
    options given here are laid over the stored run's (the same plan against other models or endpoints), and
    --max-cost over its cost limit."""
    given = model_options(
        user_model=user_model, judge_model=judge_model, models_file=models_file, judge_api_base=judge_api_base,
        user_api_base=user_api_base, agent_api_base=agent_api_base,
    )  # fmt: skip
    old = simulator.check_repeat(run_ref, db=db)
    _confirm_imported(old, yes, live, "repeating")
    if old.settings.live and not live:
        err.print(
            f"note: {old.id} ran with --live; this repeat runs its tools in test mode (fakes): pass --live to "
            "run the real tool functions",
            markup=False,
        )

    def started(event: Any) -> None:
        out.print(
            f"Run {event.record.id} repeats {old.id}: {len(event.record.plan)} conversation(s); {_cache_words(event)}.",
            markup=False,
        )

    outcome = _run_with_progress(
        lambda on_event: simulator.repeat_async(
            old.id, db=db, live=live, trust_imported=yes, note=note, agent_version=agent_version,
            cache=not no_cache, judge_model=given.judge_model, user_model=given.user_model, models=given.models,
            on_event=on_event, max_cost=max_cost,
        ),
        db=db, on_start=started,
    )  # fmt: skip
    _print_run(outcome)
    _exit_for(outcome, outcome.record.settings.fail_under, outcome.record.settings.fail_under_coverage)


@_handles_errors
def runs_merge(
    runs: Annotated[
        list[str],
        typer.Argument(
            metavar="RUN",
            help="The shards' runs: ids (or unique prefixes) in the store and/or run export files "
            "(simulator export run).",
        ),
    ],
    db: DbOption = None,
    note: Annotated[str | None, typer.Option("--note", help="Note of the merged run (default: its inputs).")] = None,
    allow_partial: Annotated[
        bool,
        typer.Option(
            "--allow-partial",
            help="Store the merge even when shards are missing: an interrupted run that `runs resume` completes.",
        ),
    ] = False,
    as_json: Annotated[
        bool, typer.Option("--json", help="Print JSON: the merged run, the runs it merges, what is missing.")
    ] = False,
    trust: TrustOption = False,
) -> None:
    """Merge the shards of one plan (`simulator run --shard K/N`) into one new run, its summary computed again
    over every result. Refused (exit 2) when the runs are parts of different plans (saying what differs), when
    an item is in two of them, or when shards are missing (unless --allow-partial). Exits as `run` would have
    for the whole plan: 0 when every case passed (or its --fail-under is met), 1 below that, 3 when shards are
    missing. Every outcome is decided again from its result's transcript, scores and fidelity findings: a result
    stored with another outcome is refused (exit 2), or with --trust kept and marked."""
    merged = simulator.merge_runs(runs, db=db, note=note, allow_partial=allow_partial, trust=trust)
    outcome = merged.outcome
    if as_json:
        _print_json(
            {
                "run": {
                    "id": outcome.id,
                    "status": outcome.record.status,
                    "plan_hash": outcome.record.settings.plan_hash,
                    "planned": len(outcome.record.plan),
                    "totals": outcome.record.totals.model_dump(mode="json") if outcome.record.totals else None,
                    "store": str(outcome.store_path),
                },
                "merged": [vars(part) for part in merged.parts],
                "missing": [vars(shard) for shard in merged.missing],
                "kept_on_trust": merged.kept_on_trust,
            }
        )
    else:
        out.print(
            f"Merged {len(merged.parts)} run(s) into {outcome.id}: "
            + ", ".join(f"{part.run_id} (shard {part.shard}, {part.results} result(s))" for part in merged.parts),
            markup=False,
        )
        for shard in merged.missing:
            err.print(f"missing: {shard.describe()}", markup=False)
        if merged.missing:
            err.print(f"partial merge: `simulator runs resume {outcome.id}` runs the missing items here", markup=False)
        if merged.kept_on_trust:
            err.print(
                f"note: {merged.kept_on_trust} outcome(s) kept as stored, not re-derived (--trust): each is marked "
                "in every report, and the run's totals count it as its evidence decides",
                markup=False,
            )
        _print_run(outcome)
    _exit_for(outcome, outcome.record.settings.fail_under, outcome.record.settings.fail_under_coverage)
