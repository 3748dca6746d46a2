"""Running a run from the command line: the progress bar, Ctrl-C and SIGTERM, and the run as a table."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import typer
from rich.table import Table

from simulator.cli._output import (
    EXIT_BELOW_BAR,
    EXIT_INTERRUPTED,
    EXIT_OK,
    EXIT_TERMINATED,
    SafeConsole,
    _print_unreadable,
    err,
    out,
)


def _resume_command(record: Any, store_path: Path, db: Path | None) -> str:
    """The command that continues ``record``: with the store it is in when one was chosen (``--db`` or
    ``$SIMULATOR_DB``: another shell may not have it set), ``--live`` for a live run, ``--yes`` for an
    imported one."""
    import shlex

    from simulator.store import DB_ENV

    words = ["simulator", "runs", "resume", record.id]
    if db is not None or os.environ.get(DB_ENV, "").strip():
        words += ["--db", str(store_path)]
    if record.settings.live:
        words.append("--live")
    if record.imported_from:
        words.append("--yes")
    return shlex.join(words)


def _cache_words(event: Any) -> str:
    """Whether the run's user and judge answers may come from the request cache, where it is and how to turn it
    off (said before a run starts, so a replayed answer is never taken for a model's)."""
    if event.cache_path is not None:
        return (
            f"request cache on ({event.cache_path}: user and judge answers to requests asked before are replayed, "
            "not sent; --no-cache turns it off)"
        )
    why = "not used on Ray" if event.record.settings.executor == "ray" else "--no-cache"
    return f"request cache off ({why}): every answer is asked of the models"


#: Up to this many conversations, a run off the terminal prints a line for each; a larger one prints its
#: failures (fail, error, user_error) and a line every twentieth of the way, so a CI log stays readable.
EVERY_LINE_UP_TO = 200
_ALWAYS_SHOWN = frozenset({"fail", "error", "user_error"})


def _progress_line_shown(done: int, total: int, outcome: str) -> bool:
    """Whether the plain progress line of the ``done``-th finished conversation (of ``total``) is printed."""
    if total <= EVERY_LINE_UP_TO or outcome in _ALWAYS_SHOWN or done >= total:
        return True
    return done % max(1, total // 20) == 0


def _run_with_progress(
    start: Callable[[Callable[[Any], None]], Any],
    *,
    db: Path | None,
    on_start: Callable[[Any], None] | None = None,
    lines_to: SafeConsole | None = None,
) -> Any:
    """Run the coroutine ``start(on_event)`` (a public API call) with a progress bar on a terminal (plain lines
    on ``lines_to``, stdout by default, otherwise: see :func:`_progress_line_shown`). Ctrl-C and SIGTERM both
    stop it cleanly: the run is marked interrupted, the command to resume it is printed, and the exit code is 130
    (Ctrl-C) or 143 (SIGTERM). A second SIGTERM ends the process at once."""
    import asyncio
    import contextlib
    import signal

    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    console = SafeConsole(stderr=True, soft_wrap=True)
    bar = Progress(
        TextColumn("{task.description}", markup=False), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
        console=console, disable=not console.is_terminal, transient=True,
    )  # fmt: skip
    task = bar.add_task("running", total=None)
    begun: list[Any] = []

    def on_event(event: Any) -> None:
        if hasattr(event, "already_done"):  # RunStarted
            begun.append(event)
            bar.update(task, total=len(event.record.plan), completed=event.already_done)
            if on_start is not None:
                on_start(event)
            return
        bar.update(task, completed=event.done, description=f"{event.item.case}")
        if not console.is_terminal and _progress_line_shown(event.done, event.total, event.result.outcome):
            persona = f" ({event.item.persona})" if event.item.persona else ""
            (lines_to or out).print(
                f"[{event.done}/{event.total}] {event.result.outcome:<6} {event.item.case}{persona} "
                f"#{event.item.repeat + 1} {event.duration_s:.1f}s",
                markup=False,
            )

    terminated = False

    async def main() -> Any:
        loop = asyncio.get_running_loop()
        task = asyncio.current_task()

        def on_sigterm() -> None:
            nonlocal terminated
            terminated = True
            loop.remove_signal_handler(signal.SIGTERM)  # a second SIGTERM ends the process at once
            if task is not None:
                task.cancel()  # as Ctrl-C does: the run is marked interrupted on the way out

        with contextlib.suppress(NotImplementedError, RuntimeError, ValueError, AttributeError):
            loop.add_signal_handler(signal.SIGTERM, on_sigterm)  # not on Windows, nor off the main thread
        try:
            return await start(on_event)
        finally:
            with contextlib.suppress(NotImplementedError, RuntimeError, ValueError, AttributeError):
                loop.remove_signal_handler(signal.SIGTERM)

    try:
        with bar:
            return asyncio.run(main())
    except (KeyboardInterrupt, asyncio.CancelledError) as exc:
        if isinstance(exc, asyncio.CancelledError) and not terminated:
            raise
        what = "terminated (SIGTERM)" if terminated else "interrupted"
        if not begun:
            err.print(what, markup=False)
        else:
            from simulator.store import RunStore

            record, path = begun[0].record, begun[0].store_path
            with RunStore(path) as store:
                stored = store.result_count(record.id)
            err.print(
                f"{what}: {stored} of {len(record.plan)} conversation(s) stored; "
                f"continue with: {_resume_command(record, path, db)}",
                markup=False,
            )
        raise typer.Exit(EXIT_TERMINATED if terminated else EXIT_INTERRUPTED) from None


def _print_run(outcome: Any, *, verbose: bool = False) -> None:
    from simulator.store import RunStore

    with RunStore(outcome.store_path) as store:
        _print_run_record(store, outcome.record, verbose=verbose)


def _report_command(store: Any, run_id: str) -> str:
    """``simulator report RUN``, with ``--db`` when the store is not the one found without it."""
    return _store_command(store, "report", run_id)


def _store_command(store: Any, command: str, run_id: str) -> str:
    """``simulator COMMAND RUN``, with ``--db`` when the store is not the one found without it."""
    import shlex

    from simulator.store import default_db_path

    words = ["simulator", command, run_id]
    if Path(store.path).resolve() != default_db_path().resolve():
        words += ["--db", str(store.path)]
    return shlex.join(words)


def _current(store: Any, record: Any, skipped: list[Any]) -> Any:
    """``record`` with a current summary: its own, else one computed streaming over the stored results (a run
    stored by an older version, or still running), keeping the record's duration; results that cannot be read
    are left out and described in ``skipped``."""
    if record.totals is not None and record.totals.current and record.totals.coverage is not None:
        return record
    from simulator.metrics import run_summary, summarized

    results = store.iter_results(record.id, skipped=skipped)
    if record.totals is not None and record.totals.current:
        return summarized(record, results)  # only the coverage is missing: computed alone
    duration = record.totals.duration_s if record.totals is not None else 0.0
    # iter_results reads in plan order, a few at a time: the summary never holds the run's results at once.
    return record.model_copy(update={"totals": run_summary(results, duration, record)})


def _print_run_record(store: Any, record: Any, *, verbose: bool = False) -> None:
    """The run's header, a bounded table of its conversations (every failure and error up to a limit, then
    unsure, then a few passes; a run of at most 50 conversations whole) with how many were left out and the
    command that reports the whole run, the totals; by default each reason whole and the "no judge model"
    advice once at the end, with ``verbose`` every reason of every row shown. Only the rows shown are read."""
    from simulator.reports.coverage_view import coverage_summary_lines
    from simulator.reports.run_text import (
        CASE_COLUMNS,
        FAILING,
        OTHERS,
        case_rows,
        judge_advice_for,
        more_lines,
        repeat_lines,
        rows_shown,
        run_header,
        totals_lines,
    )
    from simulator.reports.transcript_text import NO_JUDGE_ADVICE

    skipped: list[Any] = []
    record = _current(store, record, skipped)
    for line in run_header(record):
        out.print(line, markup=False)
    owner = store.owner(record.id) if record.status == "running" else None
    if owner is not None:
        out.print(f"Running now: {owner.describe()}.", markup=False)
    counts = store.outcome_counts(record.id)
    failing_limit, others_limit = rows_shown(counts)
    failing = store.first_results(record.id, FAILING, failing_limit, skipped=skipped)
    shown = failing + store.first_results(record.id, OTHERS, others_limit, skipped=skipped)
    table = Table(title_justify="left")
    for column in CASE_COLUMNS:
        table.add_column(column, overflow="fold")
    styles = {"pass": "green", "fail": "red", "error": "bold red", "unsure": "yellow", "user_error": "magenta"}
    for row in case_rows(shown, verbose=verbose):
        table.add_row(*row, style=styles.get(row[3]))
    out.print(table)
    for line in more_lines(counts, len(failing), len(shown), _report_command(store, record.id)):
        out.print(line, markup=False)
    for line in [*repeat_lines(record), *totals_lines(record)]:
        out.print(line, markup=False)
    if record.totals is not None and record.totals.coverage is not None:
        command = _store_command(store, "coverage", record.id)
        for line in coverage_summary_lines(record, record.totals.coverage, command):
            out.print(line, markup=False)
    advice = None if verbose else judge_advice_for(store.count_mentioning(record.id, NO_JUDGE_ADVICE))
    if advice:
        out.print(advice, markup=False)
    # Once each: the summary and the table may both have met the same row.
    _print_unreadable(list({item.cause: item for item in skipped}.values()))


def _exit_for(outcome: Any, fail_under: float | None, fail_under_coverage: float | None = None) -> None:
    code = outcome.exit_code(fail_under, fail_under_coverage)
    if code == EXIT_BELOW_BAR and fail_under is not None:
        correctness = (outcome.correctness or 0.0) * 100
        if correctness < fail_under:
            err.print(f"correctness {correctness:.1f}% is below --fail-under {fail_under:g}%", markup=False)
    if code == EXIT_BELOW_BAR and fail_under_coverage is not None:
        coverage = outcome.coverage or 0.0
        if coverage < fail_under_coverage:
            err.print(f"coverage {coverage:.1f}% is below --fail-under-coverage {fail_under_coverage:g}%", markup=False)
    if code != EXIT_OK:
        raise typer.Exit(code)
