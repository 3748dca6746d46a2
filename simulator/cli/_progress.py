"""Running a run from the command line: the progress bar, Ctrl-C and SIGTERM, and the run as a table."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import typer
from rich.table import Table

import simulator
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


def _tokens(count: int) -> str:
    """A token count in a few characters: ``950``, ``12.3k``, ``4.56M``."""
    if count < 1000:
        return str(count)
    if count < 1_000_000:
        return f"{count / 1000:.1f}k"
    return f"{count / 1_000_000:.2f}M"


def _spent_words(usage: Any) -> str:
    """The run's tokens and cost so far, with the share of the prompt the provider's prompt cache served when it
    served any, e.g. ``12.3k tokens (41% of prompt cached) · $0.0123``; empty before any model was asked."""
    if not usage.total_tokens:
        return ""
    share = usage.prompt_cache_share
    cached = f" ({share * 100:.0f}% of prompt cached)" if usage.cache_read_tokens and share is not None else ""
    cost = "cost unknown" if usage.cost is None else f"${usage.cost:.4f}"
    return f"{_tokens(usage.total_tokens)} tokens{cached} · {cost}"


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
    (Ctrl-C) or 143 (SIGTERM). A second SIGTERM ends the process at once. A run that reached its ``--max-cost``
    stops the same way (exit 130), naming what it cost and the limit."""
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
            for note in event.notes:
                err.print(f"warning: {note}", markup=False, soft_wrap=True)
            return
        spent = _spent_words(event.usage)
        so_far = f" · {spent}" if spent else ""
        bar.update(task, completed=event.done, description=f"{event.item.case}{so_far}")
        if not console.is_terminal and _progress_line_shown(event.done, event.total, event.result.outcome):
            persona = f" ({event.item.persona})" if event.item.persona else ""
            (lines_to or out).print(
                f"[{event.done}/{event.total}] {event.result.outcome:<6} {event.item.case}{persona} "
                f"#{event.item.repeat + 1} {event.duration_s:.1f}s{so_far}",
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
    except simulator.CostLimitReached as exc:
        command = simulator.resume_command(begun[0].record, begun[0].store_path, db_given=db is not None)
        err.print(f"{exc}; continue with a higher limit: {command} --max-cost USD", markup=False)
        raise typer.Exit(EXIT_INTERRUPTED) from None
    except (KeyboardInterrupt, asyncio.CancelledError) as exc:
        if isinstance(exc, asyncio.CancelledError) and not terminated:
            raise
        what = "terminated (SIGTERM)" if terminated else "interrupted"
        if not begun:
            err.print(what, markup=False)
        else:
            record, path = begun[0].record, begun[0].store_path
            stored = simulator.count_results(record.id, db=path)
            command = simulator.resume_command(record, path, db_given=db is not None)
            err.print(
                f"{what}: {stored} of {len(record.plan)} conversation(s) stored; continue with: {command}",
                markup=False,
            )
        raise typer.Exit(EXIT_TERMINATED if terminated else EXIT_INTERRUPTED) from None


def _print_run(outcome: simulator.RunOutcome, *, verbose: bool = False) -> None:
    _print_run_record(outcome.id, outcome.store_path, verbose=verbose)


def _print_run_record(run_ref: str, db: Path | None, *, verbose: bool = False) -> None:
    """The run's overview (:func:`simulator.run_overview`): its header, a bounded table of its conversations with
    how many were left out and the command that reports the whole run, the totals and coverage; by default each
    reason whole and the "no judge model" advice once at the end, with ``verbose`` every reason of every row."""
    overview = simulator.run_overview(run_ref, db=db)
    text = simulator.render_overview(overview, verbose=verbose)
    for line in text.header:
        out.print(line, markup=False)
    table = Table(title_justify="left")
    for column in text.columns:
        table.add_column(column, overflow="fold")
    styles = {"pass": "green", "fail": "red", "error": "bold red", "unsure": "yellow", "user_error": "magenta"}
    for row in text.rows:
        table.add_row(*row, style=styles.get(row[3]))
    out.print(table)
    for line in text.footer:
        out.print(line, markup=False)
    _print_unreadable(overview.skipped)


def _exit_for(
    outcome: simulator.RunOutcome,
    fail_under: float | None,
    fail_under_coverage: float | None = None,
    *,
    reviewed: bool = False,
) -> None:
    """Exit as the run's outcome says (``reviewed``: its counts as people's reviews make them)."""
    counts = simulator.run_reviews(outcome.id, db=outcome.store_path).reviewed if reviewed else None
    code = outcome.exit_code(fail_under, fail_under_coverage, reviewed=counts)
    if code == EXIT_BELOW_BAR and fail_under is not None:
        correctness = ((outcome.correctness if counts is None else counts.correctness) or 0.0) * 100
        if correctness < fail_under:
            how = " as reviewed" if counts is not None else ""
            err.print(f"correctness{how} {correctness:.1f}% is below --fail-under {fail_under:g}%", markup=False)
    if code == EXIT_BELOW_BAR and fail_under_coverage is not None:
        coverage = outcome.coverage or 0.0
        if coverage < fail_under_coverage:
            err.print(f"coverage {coverage:.1f}% is below --fail-under-coverage {fail_under_coverage:g}%", markup=False)
    if code != EXIT_OK:
        raise typer.Exit(code)
