"""Commands that read stored runs into documents: report, compare (and its alias runs compare), digest."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from simulator.cli._output import (
    EXIT_BELOW_BAR,
    EXIT_INVALID,
    DbOption,
    _handles_errors,
    _print_document,
    _store,
    err,
    out,
)
from simulator.cli.run import _check_report_formats


@_handles_errors
def report(
    run_ref: Annotated[str, typer.Argument(metavar="RUN", help="Run id, a unique prefix, latest or latest~N.")],
    fmt: Annotated[str, typer.Option("--format", "-f", help="md, html, json, csv, xlsx or junit.")] = "md",
    output: Annotated[Path | None, typer.Option("--output", "-o", help="File to write (default: stdout).")] = None,
    db: DbOption = None,
) -> None:
    """Write a stored run as a report: Markdown, self-contained HTML, JSON, CSV, Excel or JUnit XML."""
    from simulator.reports.formats import default_filename, render

    [report_format] = _check_report_formats([fmt])
    with _store(db) as store:
        record = store.get_run(run_ref)
        data = render(report_format, record, store.results(record.id))
    if output is None and fmt == "xlsx":
        output = Path(default_filename(record, "xlsx"))
    if output is None:
        _print_document(data.decode("utf-8"), "json" if fmt == "json" else "text")
        return
    output.parent.mkdir(parents=True, exist_ok=True)
    output.write_bytes(data)
    out.print(f"wrote {output}", markup=False)


@_handles_errors
def compare_command(
    run_a: Annotated[str, typer.Argument(metavar="RUN_A", help="The baseline run.")],
    run_b: Annotated[str, typer.Argument(metavar="RUN_B", help="The new run.")],
    fmt: Annotated[str, typer.Option("--format", "-f", help="text, md or html.")] = "text",
    output: Annotated[Path | None, typer.Option("--output", "-o", help="File to write (default: stdout).")] = None,
    db: DbOption = None,
    fail_on_regression: Annotated[
        bool, typer.Option("--fail-on-regression", help="Exit 1 when a case or step regressed.")
    ] = False,
) -> None:
    """Compare two runs as a report: regressions first, side by side per step."""
    from simulator.compare import compare_runs, render_comparison_text
    from simulator.reports.compare_report import render_compare_html, render_compare_markdown

    if fmt not in ("text", "md", "html"):
        err.print(f"unknown format {fmt!r}: choose text, md or html", markup=False)
        raise typer.Exit(EXIT_INVALID)
    with _store(db) as store:
        a, b = store.get_run(run_a), store.get_run(run_b)
        comparison = compare_runs(a, store.results(a.id), b, store.results(b.id))
    if fmt == "md":
        text = render_compare_markdown(comparison)
    elif fmt == "html":
        text = render_compare_html(comparison)
    else:
        text = "\n".join(render_comparison_text(comparison)) + "\n"
    if output is None:
        _print_document(text)
    else:
        output.parent.mkdir(parents=True, exist_ok=True)
        output.write_text(text, encoding="utf-8")
        out.print(f"wrote {output}", markup=False)
    if fail_on_regression and comparison.has_regressions:
        raise typer.Exit(EXIT_BELOW_BAR)


@_handles_errors
def digest(
    run_ref: Annotated[str, typer.Argument(metavar="RUN")],
    judge_model: Annotated[
        str | None, typer.Option("--judge-model", help="Model that suggests instruction changes (optional).")
    ] = None,
    fmt: Annotated[str, typer.Option("--format", "-f", help="text or md.")] = "text",
    db: DbOption = None,
) -> None:
    """Failures grouped by step, criterion and check, most common first, with example turns; with a judge
    model, suggested changes to the agent's instructions (clearly labelled as model suggestions)."""
    import asyncio

    from simulator.digest import build_digest, render_digest_markdown, render_digest_text, suggest_fixes
    from simulator.llm import LLMClient
    from simulator.models import ModelRoles

    if fmt not in ("text", "md"):
        err.print(f"unknown format {fmt!r}: choose text or md", markup=False)
        raise typer.Exit(EXIT_INVALID)
    with _store(db) as store:
        record = store.get_run(run_ref)
        results = store.results(record.id)
    found = build_digest(results)
    agent = record.snapshot[0].suite.agent if record.snapshot else None
    instructions = getattr(agent, "instructions", None)
    model = judge_model or record.settings.judge_model
    llm = LLMClient(ModelRoles.model_validate({"judge": model})) if model else None
    found = asyncio.run(suggest_fixes(found, llm, instructions=instructions))
    if fmt == "md":
        _print_document(render_digest_markdown(found))
        return
    for line in render_digest_text(found):
        out.print(line, markup=False)


@_handles_errors
def runs_compare(
    run_a: Annotated[str, typer.Argument(metavar="RUN_A", help="The baseline run.")],
    run_b: Annotated[str, typer.Argument(metavar="RUN_B", help="The new run.")],
    db: DbOption = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print the comparison as JSON.")] = False,
    fail_on_regression: Annotated[
        bool, typer.Option("--fail-on-regression", help="Exit 1 when a case or step regressed.")
    ] = False,
) -> None:
    """Compare two runs case by case and step by step: regressed first, then improved, new, removed."""
    from simulator.compare import compare_runs, render_comparison_text

    with _store(db) as store:
        a, b = store.get_run(run_a), store.get_run(run_b)
        comparison = compare_runs(a, store.results(a.id), b, store.results(b.id))
    if as_json:
        _print_document(comparison.model_dump_json(indent=2) + "\n", "json")
    else:
        for line in render_comparison_text(comparison):
            out.print(line, markup=False)
    if fail_on_regression and comparison.has_regressions:
        raise typer.Exit(EXIT_BELOW_BAR)
