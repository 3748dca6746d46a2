"""Commands that read stored runs into documents: report, coverage, compare (``runs compare`` is its hidden
alias), digest.

Each command is one call of the public API (:mod:`simulator`) and the printing of what it returns.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

import simulator
from simulator import InputError, write_file
from simulator.cli._choices import CompareFormat, DigestFormat
from simulator.cli._models import (
    AgentApiBaseOption,
    JudgeApiBaseOption,
    JudgeModelOption,
    ModelsFileOption,
    UserApiBaseOption,
    UserModelOption,
    model_options,
    note_unused_roles,
)
from simulator.cli._output import (
    EXIT_BELOW_BAR,
    DbOption,
    JsonOption,
    _handles_errors,
    _print_document,
    _print_unreadable,
    err,
    out,
)
from simulator.cli.run import REPORT_FORMATS_HELP, report_format_given

if TYPE_CHECKING:
    from simulator import Comparison, Digest, Unreadable


@_handles_errors
def report(
    run_ref: Annotated[str, typer.Argument(metavar="RUN", help="Run id, a unique prefix, latest or latest~N.")],
    fmt: Annotated[
        str,
        typer.Option(
            "--format", "-f", metavar="FORMAT", callback=report_format_given, help=f"The format: {REPORT_FORMATS_HELP}."
        ),
    ] = "md",
    output: Annotated[Path | None, typer.Option("--output", "-o", help="File to write (default: stdout).")] = None,
    db: DbOption = None,
) -> None:
    """Write a stored run as a report: Markdown, self-contained HTML, JSON, CSV, Excel or JUnit XML."""
    skipped: list[Unreadable] = []
    found = simulator.run_report(run_ref, fmt, db=db, skipped=skipped)
    _print_unreadable(skipped)
    text = found.text
    if output is None and text is None:
        output = Path(found.filename)
    if output is None:
        assert text is not None
        _print_document(text, "json" if fmt == "json" else "text")
        return
    found.write(output)
    out.print(f"wrote {output}", markup=False)


@_handles_errors
def coverage(
    run_ref: Annotated[str, typer.Argument(metavar="RUN", help="Run id, a unique prefix, latest or latest~N.")],
    db: DbOption = None,
    as_json: JsonOption = False,
    fail_under_coverage: Annotated[
        float | None,
        typer.Option("--fail-under-coverage", help="Exit 1 when the coverage (%, 0-100) is below this."),
    ] = None,
) -> None:
    """What a run exercised of what its suites declare: the coverage percentage, the persona x case matrix,
    how often each simulation step was reached, tools never called, personas never used, expectations
    never evaluated and, with a world, the records and fields read, changed and checked per collection. The
    percentage is the mean of: cases x personas run / planned, steps reached at least once / steps, declared
    tools called / declared, expectations evaluated at least once / written, world collections read or changed
    / seeded (with a world)."""
    skipped: list[Unreadable] = []
    measured = simulator.run_coverage(run_ref, fail_under=fail_under_coverage, db=db, skipped=skipped)
    _print_unreadable(skipped)
    found = measured.coverage
    if as_json:
        _print_document(found.model_dump_json(indent=2) + "\n", "json")
    else:
        _print_document(measured.text())
    if measured.below and fail_under_coverage is not None:
        err.print(
            f"coverage {found.percent or 0.0:.1f}% is below --fail-under-coverage {fail_under_coverage:g}%",
            markup=False,
        )
        raise typer.Exit(EXIT_BELOW_BAR)


def _comparison(run_a: str, run_b: str, db: Path | None, *, reviewed: bool = False) -> Comparison:
    skipped: list[Unreadable] = []
    found = simulator.compare_runs(run_a, run_b, db=db, skipped=skipped, reviewed=reviewed)
    _print_unreadable(skipped)
    return found


@_handles_errors
def compare_command(
    run_a: Annotated[str, typer.Argument(metavar="RUN_A", help="The baseline run.")],
    run_b: Annotated[str, typer.Argument(metavar="RUN_B", help="The new run.")],
    fmt: Annotated[
        CompareFormat | None, typer.Option("--format", "-f", help="The comparison's format (default: text).")
    ] = None,
    output: Annotated[Path | None, typer.Option("--output", "-o", help="File to write (default: stdout).")] = None,
    db: DbOption = None,
    as_json: JsonOption = False,
    fail_on_regression: Annotated[
        bool,
        typer.Option(
            "--fail-on-regression",
            help="Exit 1 when a case regressed (passed in A, not in B); a not comparable case never counts.",
        ),
    ] = False,
    reviewed: Annotated[
        bool,
        typer.Option(
            "--reviewed",
            help="Compare the outcomes as people reviewed them (`simulator review`) instead of as judged.",
        ),
    ] = False,
) -> None:
    """Compare two runs case by case and step by step: first the settings that differ between them, then the
    regressed cases, improved, new, removed and not comparable ones (judged in one run only, or defined
    differently: never counted as regressed or improved); correctness and McNemar's test count the comparable
    cases in both runs. With --format md or html, a report side by side per step; with --json, one JSON
    document."""
    if as_json and fmt is not None:
        raise InputError(f"--json and --format {fmt} ask for two formats: give one of them")
    comparison = _comparison(run_a, run_b, db, reviewed=reviewed)
    if reviewed:
        err.print("note: outcomes as reviewed (a result nobody reviewed as judged)", markup=False)
    text = simulator.render_comparison(comparison, "json" if as_json else (fmt or CompareFormat.text).value)
    if output is None:
        _print_document(text, "json" if as_json else "text")
    else:
        write_file(output, text)
        out.print(f"wrote {output}", markup=False)
    if fail_on_regression and comparison.has_regressions:
        raise typer.Exit(EXIT_BELOW_BAR)


def _digest_of(run_ref: str, given: simulator.ModelOptions, db: Path | None) -> Digest:
    skipped: list[Unreadable] = []
    found = simulator.digest_run(
        run_ref, judge_model=given.judge_model, user_model=given.user_model, models=given.models, db=db,
        skipped=skipped,
    )  # fmt: skip
    _print_unreadable(skipped)
    return found


@_handles_errors
def digest(
    run_ref: Annotated[str, typer.Argument(metavar="RUN")],
    judge_model: JudgeModelOption = None,
    user_model: UserModelOption = None,
    models_file: ModelsFileOption = None,
    judge_api_base: JudgeApiBaseOption = None,
    user_api_base: UserApiBaseOption = None,
    agent_api_base: AgentApiBaseOption = None,
    fmt: Annotated[DigestFormat, typer.Option("--format", "-f", help="The digest's format.")] = DigestFormat.text,
    db: DbOption = None,
    as_json: JsonOption = False,
) -> None:
    """Failures grouped by step, criterion and check, most common first, with example turns; with a judge
    model, suggested changes to the agent's instructions (clearly labelled as model suggestions). The judge is
    the one the run was judged by (its suite's models.judge with the run's own model options), with the model
    options given here laid over it; a run judged by no model gets no suggestions unless --judge-model (or a
    judge model in --models) names one."""
    given = model_options(
        user_model=user_model, judge_model=judge_model, models_file=models_file, judge_api_base=judge_api_base,
        user_api_base=user_api_base, agent_api_base=agent_api_base,
    )  # fmt: skip
    unused = note_unused_roles(given, "digest")
    if unused:
        err.print(f"note: {unused}", markup=False)
    found = _digest_of(run_ref, given, db)
    if as_json:
        _print_document(simulator.render_digest(found, "json"), "json")
    elif fmt is DigestFormat.md:
        _print_document(simulator.render_digest(found, "md"))
    else:
        for line in simulator.render_digest(found, "text").splitlines():
            out.print(line, markup=False)
