"""Commands that run suites: run (stored) and simulate (one by one, stored nowhere)."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Annotated, Any

import typer

import simulator
from simulator.cli._choices import ExecutorChoice, TraceChoice
from simulator.cli._models import (
    AgentApiBaseOption,
    JudgeApiBaseOption,
    JudgeModelOption,
    ModelsFileOption,
    UserApiBaseOption,
    UserModelOption,
    _model_overrides,
)
from simulator.cli._output import (
    _STYLES,
    EXIT_BELOW_BAR,
    DbOption,
    MaxCostOption,
    RayAddressOption,
    RayWorkersOption,
    SafeConsole,
    VerboseOption,
    _handles_errors,
    _print_document,
    _print_json,
    err,
    out,
)
from simulator.cli._progress import _cache_words, _exit_for, _print_run, _run_with_progress


@_handles_errors
def simulate(
    suite: Annotated[Path, typer.Argument(help="The suite (or hosted evals) file.")],
    case: Annotated[
        list[str] | None, typer.Option("--case", "-c", help="Case to run (repeatable; default: all).")
    ] = None,
    persona: Annotated[str | None, typer.Option("--persona", help="Persona name (default: the case's first).")] = None,
    live: Annotated[bool, typer.Option("--live", help="Run real tool functions instead of fakes.")] = False,
    user_model: UserModelOption = None,
    judge_model: JudgeModelOption = None,
    models_file: ModelsFileOption = None,
    judge_api_base: JudgeApiBaseOption = None,
    user_api_base: UserApiBaseOption = None,
    agent_api_base: AgentApiBaseOption = None,
    seed: Annotated[int, typer.Option("--seed", help="Seed for the scripted user's perturbations (0 or more).")] = 0,
    as_json: Annotated[
        bool, typer.Option("--json", help="Print one JSON document: counts and every scored result.")
    ] = False,
    verbose: VerboseOption = False,
) -> None:
    """Run and score cases of a suite one by one, storing nothing: each conversation, its step outcomes, every
    score and the case's outcome with the reasons. Offline by default (scripted user, deterministic checks).
    Each fact is said once (-v: every check with its full reasoning); with --json, one JSON document: the counts
    and every scored result."""
    import asyncio

    from simulator import case_lines, counts, not_judged

    planned = simulator.plan_simulation(
        suite, cases=case or [], persona=persona, live=live, user_model=user_model, judge_model=judge_model,
        models=_model_overrides(models_file, judge_api_base, user_api_base, agent_api_base), seed=seed,
    )  # fmt: skip
    if not as_json:
        for note in planned.notes:
            err.print(f"note: {note}", markup=False, soft_wrap=True)

    def show(result: Any) -> None:
        if as_json:
            return
        for line in case_lines(result, verbose=verbose):
            out.print(line.text, style=_STYLES[line.style] or None, markup=False)
        out.print("")

    results = asyncio.run(simulator.simulate_async(planned, on_result=show))
    breakdown = counts(r.outcome for r in results)
    if as_json:
        _print_json({**breakdown.model_dump(mode="json"), "results": [r.model_dump(mode="json") for r in results]})
    else:
        out.print(
            f"{breakdown.total} case(s): {breakdown.passed} passed, {breakdown.failed} failed, "
            f"{breakdown.error} error, {breakdown.unsure} unsure"
            + (f", {breakdown.user_error} user error (the simulated user's)." if breakdown.user_error else "."),
            markup=False,
        )
        advice = "Pass --judge-model (any litellm model) or set models.judge in the suite to judge them."
        if breakdown.unsure and not planned.has_judge:
            out.print(
                f"Unsure cases have checks only a judge model can decide; they were not guessed. {advice}",
                markup=False,
            )
        elif not verbose and any(not_judged(result) for result in results):
            out.print(f"Some checks were not judged: no judge model is configured. {advice}", markup=False)
    if breakdown.failed or breakdown.error:
        raise typer.Exit(EXIT_BELOW_BAR)


@_handles_errors
def run(
    paths: Annotated[list[Path], typer.Argument(help="Suite files or folders.")],
    persona: Annotated[str | None, typer.Option("--persona", help="A persona name, all, or random.")] = None,
    repeat: Annotated[int, typer.Option("--repeat", help="Run each case K times (1-1000).")] = 1,
    tag: Annotated[list[str] | None, typer.Option("--tag", help="Only cases with this tag (repeatable).")] = None,
    case: Annotated[list[str] | None, typer.Option("--case", help="Only this case (repeatable).")] = None,
    agent_version: Annotated[str | None, typer.Option("--agent-version", help="Label of the agent version.")] = None,
    note: Annotated[str, typer.Option("--note", help="A note kept with the run (editable later).")] = "",
    live: Annotated[bool, typer.Option("--live", help="Run real tool functions instead of fakes.")] = False,
    user_model: UserModelOption = None,
    judge_model: JudgeModelOption = None,
    models_file: ModelsFileOption = None,
    judge_api_base: JudgeApiBaseOption = None,
    user_api_base: UserApiBaseOption = None,
    agent_api_base: AgentApiBaseOption = None,
    concurrency: Annotated[
        int,
        typer.Option(
            "--concurrency",
            help="Conversations talking at once, 1-1000 (finished ones are scored beside them); also each model "
            "role's limit unless the suite sets one (the judge's: twice this).",
        ),
    ] = 8,  # simulator.DEFAULT_CONCURRENCY, written out so --help imports no data model (a test keeps them equal)
    fail_under: Annotated[
        float | None, typer.Option("--fail-under", help="Exit 1 only when correctness (%, 0-100) is below this.")
    ] = None,
    fail_under_coverage: Annotated[
        float | None,
        typer.Option(
            "--fail-under-coverage",
            help="Exit 1 when the run's coverage (%, 0-100, see `simulator coverage`) is below this.",
        ),
    ] = None,
    count_user_errors: Annotated[
        bool,
        typer.Option(
            "--count-user-errors",
            help="Count a failure the simulated user caused (a fidelity finding at or before it) as the agent's "
            "fail, instead of the separate outcome user_error left out of correctness.",
        ),
    ] = False,
    seed: Annotated[
        int | None,
        typer.Option(
            "--seed",
            help="Seed for persona choice, the scripted user and fault rates (0 or more); unset: the suite's `seed:`, "
            "else a random one (recorded in the run).",
        ),
    ] = None,
    shard: Annotated[
        str | None,
        typer.Option(
            "--shard",
            metavar="K/N",
            help="Run only the K-th of N parts of the plan (one per CI job; seed 0 unless --seed or the suite's "
            "`seed:`); put the parts "
            "back together with `simulator runs merge`.",
        ),
    ] = None,
    db: DbOption = None,
    max_cost: MaxCostOption = None,
    no_cache: Annotated[bool, typer.Option("--no-cache", help="Do not use the model request cache.")] = False,
    cache_size: Annotated[int, typer.Option("--cache-size", help="Request cache limit in MB (1-1048576).")] = 200,
    checkpoints: Annotated[
        bool,
        typer.Option(
            "--checkpoints/--no-checkpoints",
            help="Checkpoint every user turn so a resumed run continues conversations mid-way (its cost per "
            "turn: docs/performance.md).",
        ),
    ] = True,
    executor: Annotated[
        ExecutorChoice,
        typer.Option(
            "--executor",
            help="Where conversations run: local (this process) or ray (a Ray cluster: pip install "
            "'simulator\\[ray]'; this process plans and stores, model limits hold across the cluster).",
        ),
    ] = ExecutorChoice.local,
    ray_address: RayAddressOption = None,
    ray_workers: RayWorkersOption = None,
    report_formats: Annotated[
        list[str] | None,
        typer.Option(
            "--report",
            metavar="FORMAT",
            callback=report_formats_given,
            help=f"Also write a report in this format (repeatable): {REPORT_FORMATS_HELP}.",
        ),
    ] = None,
    report_dir: Annotated[Path, typer.Option("--report-dir", help="Folder for --report files.")] = Path(
        ".simulator/reports"
    ),
    as_json: Annotated[
        bool,
        typer.Option(
            "--json",
            help="Print one JSON document: the run, its counts, correctness, coverage, usage per model role "
            "(answers, from_cache, requests_sent, cost, would_be_cost) and one row per conversation (case, "
            "persona, repeat, outcome, reasons); progress and notes go to stderr.",
        ),
    ] = False,
    verbose: VerboseOption = False,
    record: Annotated[
        bool,
        typer.Option(
            "--record",
            help="Keep a cassette of every exchange (agent, tools, simulated user, judge) of each conversation, "
            "compressed and with secrets scrubbed, for `simulator replay` and `simulator rerun` (on Ray too: "
            "the workers send the cassettes back with the results).",
        ),
    ] = False,
    trace: Annotated[
        TraceChoice | None,
        typer.Option(
            "--trace",
            help="Send OpenTelemetry spans (GenAI conventions: run, conversations, turns, agent, model and tool "
            "calls; redacted) to a collector over OTLP/HTTP: --trace-endpoint, else OTEL_EXPORTER_OTLP_ENDPOINT "
            "(headers: OTEL_EXPORTER_OTLP_HEADERS). An unreachable collector gives one warning, never fails the run.",
        ),
    ] = None,
    trace_endpoint: Annotated[
        str | None,
        typer.Option(
            "--trace-endpoint", metavar="URL", help="The collector for --trace otlp, e.g. http://localhost:4318."
        ),
    ] = None,
    modality: Annotated[
        str | None,
        typer.Option(
            "--modality",
            metavar="MODALITY",
            help="chat or voice: run every case in it, whatever its suite says; chat,voice: run the suites once in "
            "each (two stored runs, the voice run naming the chat run) and compare them case by case, exiting as "
            "the worse of the two runs.",
        ),
    ] = None,
) -> None:
    """Run suites: cases x personas x repeats, concurrently; every result is stored as it finishes.

    Exit 0 when every case passed, user errors left out (or correctness is at least --fail-under), 1 below
    it (or below --fail-under-coverage), 2 for invalid input, 3 when the run could not complete, 130 when
    interrupted by Ctrl-C or stopped at --max-cost, and 143 by SIGTERM (the run can be resumed). A suite names
    code that runs: its python agent, langgraph graph and, with --live, tool functions.
    """
    # Typer checked the formats before anything runs: not after an hour of it.
    formats = list(report_formats or [])
    talk = err if as_json else out  # with --json, stdout holds the document alone

    def plan_all(**options: Any) -> list[Any]:
        # Every modality's plan is checked before any of them runs: a bad value, an agent without chat, no speech.
        if modality is None:
            return [simulator.plan(paths, **options)]
        return simulator.plan_modalities(paths, modality, **options)

    plans = plan_all(
        persona=persona, repeat=repeat, tags=tag or [], cases=case or [], live=live, user_model=user_model,
        judge_model=judge_model, models=_model_overrides(models_file, judge_api_base, user_api_base, agent_api_base),
        concurrency=concurrency, fail_under=fail_under, fail_under_coverage=fail_under_coverage, seed=seed,
        cache=not no_cache, checkpoints=checkpoints, shard=shard, record=record, count_user_errors=count_user_errors,
        executor=executor.value, ray_address=ray_address, ray_workers=ray_workers,
        trace=trace.value if trace is not None else None, max_cost=max_cost,
    )  # fmt: skip
    if len(plans) > 1 and as_json:
        raise simulator.InputError(
            f"--json prints one run, and --modality {modality} makes {len(plans)}: leave --json out, or read each "
            "run with `simulator runs show RUN --json`"
        )
    outcomes: list[Any] = []
    for given in plans:
        planned = simulator.pair_plan(given, outcomes[0].id) if outcomes else given
        outcome = _one_run(planned, db=db, agent_version=agent_version, note=note, cache_size=cache_size,
                           trace_endpoint=trace_endpoint, talk=talk, as_json=as_json, verbose=verbose)  # fmt: skip
        if formats:
            _write_reports(outcome, formats, report_dir, talk)
        outcomes.append(outcome)
    if len(outcomes) > 1:
        comparison = simulator.compare_runs(outcomes[0].id, outcomes[1].id, db=outcomes[0].store_path)
        modalities = [planned.settings.modality or "chat" for planned in plans]
        out.print("", markup=False)
        for line in simulator.modality_lines(comparison, modalities):
            out.print(line, markup=False)
    worst = max(outcomes, key=lambda outcome: outcome.exit_code(fail_under, fail_under_coverage))
    _exit_for(worst, fail_under, fail_under_coverage)


def _one_run(
    planned: Any,
    *,
    db: Path | None,
    agent_version: str | None,
    note: str,
    cache_size: int,
    trace_endpoint: str | None,
    talk: SafeConsole,
    as_json: bool,
    verbose: bool,
) -> Any:
    """Run one plan with its progress and print it (its overview, or with ``as_json`` its document)."""
    settings = planned.settings

    def started(event: Any) -> None:
        guess = (
            f"estimated {event.estimate_s:.0f} s from earlier runs of these suites"
            if event.estimate_s else "no estimate yet (first run of these suites)"
        )  # fmt: skip
        limits = ", ".join(
            f"{role} {'/'.join(str(limit) for limit in values)}" for role, values in planned.model_limits.items()
        )
        simulated = planned.simulated_tools
        tools = f", {len(simulated)} tool(s) simulated by the user model ({', '.join(simulated)})" if simulated else ""
        modality = f", every case in {settings.modality}" if settings.modality else ""
        if settings.paired_with:
            modality += f" (compared with run {settings.paired_with})"
        talk.print(
            f"Run {event.record.id}: {len(planned.items)} conversation(s) of {planned.cases} case(s) from "
            f"{len(planned.snapshots)} suite(s){modality}, concurrency {settings.concurrency}"
            f"{f' (model limits: {limits})' if limits else ''}{tools}{_where(planned.settings)}; "
            f"{_cache_words(event)}; {guess}.",
            markup=False,
        )
        for note_text in planned.notes:
            err.print(f"note: {note_text}", markup=False, soft_wrap=True)

    outcome = _run_with_progress(
        lambda on_event: simulator.run_async(
            planned, db=db, agent_version=agent_version, note=note, cache_size_mb=cache_size, on_event=on_event,
            trace_endpoint=trace_endpoint,
        ),
        db=db, on_start=started, lines_to=talk,
    )  # fmt: skip
    if as_json:
        _print_run_document(outcome)
    else:
        _print_run(outcome, verbose=verbose)
    return outcome


def _where(settings: Any) -> str:
    """Where the conversations run, when not in this process (the plan line)."""
    if settings.executor != "ray":
        return ""
    # Ray's own RAY_ADDRESS names the cluster when --ray-address does not (simulator.runner._ray.named_cluster).
    ambient = os.environ.get("RAY_ADDRESS", "").strip()
    cluster = settings.ray_address or (f"RAY_ADDRESS={ambient}" if ambient else "a local cluster")
    return f", on Ray ({cluster}, model limits held across its workers)"


#: The report formats as ``--help`` lists them (the plugins' names are looked up only when a value is given).
REPORT_FORMATS_HELP = "md, html, json, csv, xlsx, junit, or a report plugin's name (simulator plugins lists them)"


def report_format_given(value: str) -> str:
    """A ``--format`` value checked (built-in formats and installed report plugins), or a usage error naming them."""
    if value not in simulator.report_formats():
        choices = ", ".join(simulator.report_formats())
        raise typer.BadParameter(f"{value!r} is not a report format: choose one of {choices}")
    return value


def report_formats_given(values: list[str] | None) -> list[str] | None:
    """Every ``--report`` value checked like ``--format``'s."""
    return [report_format_given(value) for value in values] if values else values


def _run_head(outcome: Any) -> dict[str, Any]:
    """``run --json`` without its rows: the run (id, status, suites, labels, store), its counts, correctness,
    coverage (%, see ``simulator coverage``) and usage per model role."""
    record = outcome.record
    totals = record.totals
    return {
        "run": {
            "id": record.id,
            "status": record.status,
            "created": record.created.isoformat(),
            "suites": [{"name": s.suite.name, "path": s.path} for s in record.snapshot],
            "suite_hash": record.suite_hash,
            "agent_version": record.agent_version,
            "note": record.note,
            "seed": record.settings.seed,
            "store": str(outcome.store_path),
        },
        "counts": {
            "planned": len(record.plan),
            **(
                totals.model_dump(mode="json", include={"total", "passed", "failed", "error", "unsure", "user_error"})
                if totals
                else {}
            ),
        },
        "correctness": totals.correctness if totals else None,
        "coverage": outcome.coverage,
        "usage": {role: _usage_figures(used) for role, used in totals.usage.items()} if totals else {},
    }


def _usage_figures(used: Any) -> dict[str, Any]:
    """One role's usage in ``run --json``: answers, how many came from the request cache and what they cost when
    first asked (``would_be_cost``), the requests sent, tokens and the cost spent (null: unknown), and the prompt
    tokens a provider's prompt cache served (``prompt_cache_read_tokens``) and stored (``..._write_tokens``) with
    what it saved (``prompt_cache_saved``, null: unknown)."""
    return {
        "answers": used.calls,
        "from_cache": used.cached_calls,
        "would_be_cost": used.cached_cost,
        "requests_sent": used.requests,
        "prompt_tokens": used.prompt_tokens,
        "completion_tokens": used.completion_tokens,
        "cost": used.cost,
        "prompt_cache_read_tokens": used.cache_read_tokens,
        "prompt_cache_write_tokens": used.cache_write_tokens,
        "prompt_cache_saved": used.cache_savings,
    }


def _run_rows(outcome: Any) -> Iterator[dict[str, Any]]:
    """``run --json``'s rows, one per conversation in plan order, read from the store a few at a time (only the
    reasons are taken out of each stored result)."""
    for row in simulator.iter_result_rows(outcome.id, db=outcome.store_path):
        yield {
            "case": row.case,
            "persona": row.persona,
            "repeat": row.repeat + 1,
            "outcome": row.outcome,
            "reasons": row.reasons,
        }


def _print_run_document(outcome: Any) -> None:
    """Write ``run --json``: one JSON document (as ``json.dumps(..., indent=2)`` would write it) whose
    ``results`` array is written element by element, so a run of any size is never held in memory whole."""
    import json

    def dumps(value: Any) -> str:
        return json.dumps(value, indent=2, ensure_ascii=False)

    head = dumps({**_run_head(outcome), "results": []})
    opening = head[: head.rindex("[]")]  # everything up to the empty array, which the rows replace
    _print_document(opening + "[", "json")
    first = True
    for row in _run_rows(outcome):
        element = "\n".join("    " + line for line in dumps(row).splitlines())
        _print_document(("\n" if first else ",\n") + element, "json")
        first = False
    _print_document("]\n}\n" if first else "\n  ]\n}\n", "json")


def _write_reports(outcome: Any, formats: list[str], directory: Path, talk: SafeConsole) -> None:
    """Write the run's reports (formats checked before the run) and say where, on ``talk``."""
    for path in simulator.write_reports(outcome, formats, directory):
        talk.print(f"report: {path}", markup=False)
