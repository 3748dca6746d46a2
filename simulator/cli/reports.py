"""Commands that read stored runs into documents: report, coverage, compare (``runs compare`` is its hidden
alias), digest.

Compare and digest are imported in one place each (:func:`_comparison`, :func:`_digest_of`), so the module that
owns them can move without touching the commands.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from simulator._files import write_file
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
    _store,
    err,
    out,
)
from simulator.cli.run import REPORT_FORMATS_HELP, report_format_given
from simulator.errors import InputError

if TYPE_CHECKING:
    from simulator.analysis.compare import Comparison
    from simulator.analysis.digest import Digest
    from simulator.models.run import ModelOptions
    from simulator.store import Unreadable


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
    from simulator.metrics import summarized
    from simulator.reports.formats import default_filename, file_bytes, render

    skipped: list[Unreadable] = []
    with _store(db) as store:
        record = store.get_run(run_ref)
        results = store.results(record.id, skipped=skipped)
        left_out = [item.describe() for item in skipped]
        data = render(fmt, summarized(record, results), results, left_out=left_out)
    _print_unreadable(skipped)
    if output is None and not _is_text(data):
        output = Path(default_filename(record, fmt))
    if output is None:
        _print_document(data.decode("utf-8"), "json" if fmt == "json" else "text")
        return
    write_file(output, file_bytes(fmt, data))
    out.print(f"wrote {output}", markup=False)


def _is_text(data: bytes) -> bool:
    """Whether a report can go to the terminal: UTF-8 text (an Excel workbook or a plugin's binary is written to
    a file named after the run instead)."""
    try:
        data.decode("utf-8")
    except UnicodeDecodeError:
        return False
    return True


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
    how often each simulation step was reached, tools never called, personas never used and expectations
    never evaluated. The percentage is the mean of: cases x personas run / planned, steps reached at least
    once / steps, declared tools called / declared, expectations evaluated at least once / written."""
    from simulator.metrics import summarized
    from simulator.models.ranges import check_number
    from simulator.reports.coverage_view import coverage_text

    check_number("fail_under_coverage", fail_under_coverage)
    skipped: list[Unreadable] = []
    with _store(db) as store:
        record = store.get_run(run_ref)
        # Stored with the run's summary; computed here, a few results at a time, for a run stored without it.
        record = summarized(record, store.iter_results(record.id, skipped=skipped))
    _print_unreadable(skipped)
    found = record.totals.coverage if record.totals is not None else None
    assert found is not None, "summarized always gives a summary with coverage"
    if as_json:
        _print_document(found.model_dump_json(indent=2) + "\n", "json")
    else:
        _print_document("\n".join(coverage_text(record, found)) + "\n")
    if fail_under_coverage is not None and (found.percent or 0.0) < fail_under_coverage:
        err.print(
            f"coverage {found.percent or 0.0:.1f}% is below --fail-under-coverage {fail_under_coverage:g}%",
            markup=False,
        )
        raise typer.Exit(EXIT_BELOW_BAR)


def _comparison(run_a: str, run_b: str, db: Path | None) -> Comparison:
    from simulator.analysis.compare import compare_runs

    skipped: list[Unreadable] = []
    with _store(db) as store:
        a, b = store.get_run(run_a), store.get_run(run_b)
        found = compare_runs(a, store.results(a.id, skipped=skipped), b, store.results(b.id, skipped=skipped))
    _print_unreadable(skipped)
    return found


def _comparison_text(comparison: Comparison, fmt: CompareFormat) -> str:
    if fmt is CompareFormat.md:
        from simulator.reports.compare_report import render_compare_markdown

        return render_compare_markdown(comparison)
    if fmt is CompareFormat.html:
        from simulator.reports.compare_report import render_compare_html

        return render_compare_html(comparison)
    from simulator.reports.compare_text import render_comparison_text

    return "\n".join(render_comparison_text(comparison)) + "\n"


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
) -> None:
    """Compare two runs case by case and step by step: first the settings that differ between them, then the
    regressed cases, improved, new, removed and not comparable ones (judged in one run only, or defined
    differently: never counted as regressed or improved); correctness and McNemar's test count the comparable
    cases in both runs. With --format md or html, a report side by side per step; with --json, one JSON
    document."""
    if as_json and fmt is not None:
        raise InputError(f"--json and --format {fmt} ask for two formats: give one of them")
    comparison = _comparison(run_a, run_b, db)
    if as_json:
        text = comparison.model_dump_json(indent=2) + "\n"
    else:
        text = _comparison_text(comparison, fmt or CompareFormat.text)
    if output is None:
        _print_document(text, "json" if as_json else "text")
    else:
        write_file(output, text)
        out.print(f"wrote {output}", markup=False)
    if fail_on_regression and comparison.has_regressions:
        raise typer.Exit(EXIT_BELOW_BAR)


def _digest_of(run_ref: str, given: ModelOptions, db: Path | None) -> Digest:
    import asyncio

    from simulator.analysis.digest import build_digest, suggest_fixes
    from simulator.llm import LLMClient
    from simulator.models import ModelRoles
    from simulator.models.run import resolved_models

    skipped: list[Unreadable] = []
    with _store(db) as store:
        record = store.get_run(run_ref)
        results = store.results(record.id, skipped=skipped)
    _print_unreadable(skipped)
    found = build_digest(results)
    suite = record.snapshot[0].suite if record.snapshot else None
    instructions = getattr(suite.agent, "instructions", None) if suite is not None else None
    # The judge the run was judged by (its suite's, with the run's own options), the options given here laid over.
    judge = resolved_models(suite, given.over(record.settings)).judge if suite is not None else None
    llm = LLMClient(ModelRoles(judge=judge)) if judge is not None and judge.model else None
    return asyncio.run(suggest_fixes(found, llm, instructions=instructions))


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
    from simulator.reports.digest_report import render_digest_markdown, render_digest_text

    given = model_options(
        user_model=user_model, judge_model=judge_model, models_file=models_file, judge_api_base=judge_api_base,
        user_api_base=user_api_base, agent_api_base=agent_api_base,
    )  # fmt: skip
    unused = note_unused_roles(given, "digest")
    if unused:
        err.print(f"note: {unused}", markup=False)
    found = _digest_of(run_ref, given, db)
    if as_json:
        _print_document(found.model_dump_json(indent=2) + "\n", "json")
    elif fmt is DigestFormat.md:
        _print_document(render_digest_markdown(found))
    else:
        for line in render_digest_text(found):
            out.print(line, markup=False)
