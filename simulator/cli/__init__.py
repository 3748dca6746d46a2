"""The ``simulator`` command line: the only package that imports typer and rich.

One module per command group, each a thin layer (parse the options, call the public API or the module that owns
the work, print): ``suites`` (validate, schema, personas, import csv), ``run`` (run, simulate), ``runs`` (stored
runs), ``reports`` (report, compare, digest), ``exchange`` (export, import run / csv-turns, golden), ``judge``
(judge-check), ``review`` (review, reviews), ``replay`` (replay and rerun of recorded runs), ``lint`` (spec
lint), ``view`` (the web app); ``_output`` holds what they share (consoles, exit codes, error handling, option
aliases), ``_models`` the model options of every command that asks a model, and ``_progress`` the progress bar and
signal handling of a running run. This module builds the app from them.

Exit codes: 0 success, 1 results below the bar (``--fail-under``), 2 invalid input, 3 the run could not
complete (or another process is running it, or a file could not be written on a full or failing disk), 70 an
internal error (a bug in Simulator), 130 interrupted by Ctrl-C or stopped at ``--max-cost``, 143 stopped by
SIGTERM (all leave an ``interrupted`` run that ``runs resume`` continues).

Heavy libraries (litellm takes seconds to import, langgraph too) are imported inside the commands that need
them, so ``--help``, ``validate``, ``schema`` and ``personas`` stay fast.
"""

from __future__ import annotations

from typing import Annotated

import typer

from simulator import __version__
from simulator.cli import exchange, judge, lint, plugins, replay, reports, review, run, runs, suites, view
from simulator.cli._output import (
    EXIT_BELOW_BAR,
    EXIT_INCOMPLETE,
    EXIT_INTERNAL,
    EXIT_INTERRUPTED,
    EXIT_INVALID,
    EXIT_OK,
    EXIT_TERMINATED,
    out,
)

__all__ = [
    "EXIT_BELOW_BAR",
    "EXIT_INCOMPLETE",
    "EXIT_INTERNAL",
    "EXIT_INTERRUPTED",
    "EXIT_INVALID",
    "EXIT_OK",
    "EXIT_TERMINATED",
    "app",
    "main",
]

app = typer.Typer(
    name="simulator",
    help="Evaluate conversational agents with YAML test cases, simulated users and goal-by-goal reports.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)
personas_app = typer.Typer(help="Personas of the simulated user.", no_args_is_help=True)
import_app = typer.Typer(help="Turn other formats into suites.", no_args_is_help=True)
runs_app = typer.Typer(help="Stored runs: list, show, note, resume, repeat, merge, delete.", no_args_is_help=True)
export_app = typer.Typer(help="Export cases, runs and results as YAML or JSON.", no_args_is_help=True)
golden_app = typer.Typer(help="Golden cases from real conversations.", no_args_is_help=True)
app.add_typer(personas_app, name="personas")
app.add_typer(import_app, name="import")
app.add_typer(runs_app, name="runs")
app.add_typer(export_app, name="export")
app.add_typer(golden_app, name="golden")


def _version(value: bool) -> None:
    if value:
        out.print(f"simulator {__version__}")
        raise typer.Exit()


@app.callback()
def _root(
    version: Annotated[
        bool, typer.Option("--version", callback=_version, is_eager=True, help="Show the version and exit.")
    ] = False,
) -> None:
    """Evaluate conversational agents with YAML test cases, simulated users and goal-by-goal reports."""


app.command()(suites.validate)
app.command("lint")(lint.lint_command)
app.command()(suites.schema)
personas_app.command("list")(suites.personas_list)
import_app.command("csv")(suites.import_csv_command)
app.command()(run.simulate)
app.command("judge-check")(judge.judge_check_command)
app.command()(run.run)
app.command()(reports.report)
app.command()(reports.coverage)
runs_app.command("list")(runs.runs_list)
runs_app.command("show")(runs.runs_show)
runs_app.command("note")(runs.runs_note)
runs_app.command("delete")(runs.runs_delete)
runs_app.command("resume")(runs.runs_resume)
runs_app.command("repeat")(runs.runs_repeat)
runs_app.command("merge")(runs.runs_merge)
export_app.command("cases")(exchange.export_cases_command)
export_app.command("run")(exchange.export_run_command)
export_app.command("results")(exchange.export_results_command)
import_app.command("run")(exchange.import_run_command)
import_app.command("csv-turns")(exchange.import_csv_turns_command)
golden_app.command("from-run")(exchange.golden_from_run_command)
app.command("compare")(reports.compare_command)
# The one compare; `runs compare` (its name before) stays as a hidden alias of the very same command.
runs_app.command("compare", hidden=True)(reports.compare_command)
app.command()(reports.digest)
app.command()(replay.replay)
app.command()(replay.rerun)
app.command("plugins")(plugins.plugins_command)
app.command("review")(review.review_command)
app.command("reviews")(review.reviews_command)
app.command("view")(view.view)


def main() -> None:
    """Entry point of the ``simulator`` console script."""
    app()
