"""Commands that move cases and runs between stores and formats: export, import run / csv-turns, golden."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer

from simulator.cli._choices import ExchangeFormat
from simulator.cli._output import (
    EXIT_INVALID,
    DbOption,
    TrustOption,
    _handles_errors,
    _print_config_errors,
    _print_document,
    _print_unreadable,
    _print_warnings,
    _store,
    err,
    out,
)
from simulator.cli.suites import _import_suite_from

FormatOption = Annotated[
    ExchangeFormat,
    typer.Option(
        "--format",
        "-f",
        help="The export's format: json or yaml (read back by `simulator import`), or jsonl: one conversation a "
        "line as OpenAI chat messages (tool calls and results included) with its outcome and step verdicts.",
    ),
]


def _emit(text: str, output: Path | None, force: bool, fmt: str) -> None:
    from simulator.exchange import write_export

    if output is None:
        _print_document(text, "json" if fmt in ("json", "jsonl") else "text")
        return
    path = write_export({output.name: text}, output, force=force)
    out.print(f"wrote {path}", markup=False)


@_handles_errors
def export_cases_command(
    paths: Annotated[list[Path], typer.Argument(help="Suite files or folders.")],
    output: Annotated[Path, typer.Option("--output", "-o", help="A .yaml file, or a .zip for several suites.")],
    force: Annotated[bool, typer.Option("--force", help="Overwrite the output file.")] = False,
) -> None:
    """Export suites (agent inline, personas they use included) as YAML; several files go into a zip."""
    from simulator.exchange import export_cases, write_export
    from simulator.loading import validate_paths

    report = validate_paths(paths)
    if report.errors:
        _print_config_errors(report.errors)
        raise typer.Exit(EXIT_INVALID)
    files = export_cases(report.suites)
    if len(files) > 1 and output.suffix != ".zip":
        err.print(f"{len(files)} files to export: give an --output ending in .zip", markup=False)
        raise typer.Exit(EXIT_INVALID)
    path = write_export(files if len(files) > 1 else {output.name: next(iter(files.values()))}, output, force=force)
    out.print(f"wrote {path}: {len(files)} file(s)", markup=False)


@_handles_errors
def export_run_command(
    run_ref: Annotated[str, typer.Argument(metavar="RUN")],
    fmt: FormatOption = ExchangeFormat.json,
    output: Annotated[Path | None, typer.Option("--output", "-o", help="File to write (default: stdout).")] = None,
    force: Annotated[bool, typer.Option("--force", help="Overwrite the output file.")] = False,
    db: DbOption = None,
) -> None:
    """Export a stored run (record and results) to move it to another store, or its conversations as JSON Lines
    for other tools (--format jsonl)."""
    from simulator.exchange import export_chat_jsonl, export_run

    skipped: list[Any] = []
    with _store(db) as store:
        record = store.get_run(run_ref)
        if fmt is ExchangeFormat.jsonl:
            text = export_chat_jsonl(store.iter_results(record.id, skipped=skipped))
        else:
            results = store.results(record.id, skipped=skipped)
            text = export_run(record, results, "json" if fmt is ExchangeFormat.json else "yaml")
    _print_unreadable(skipped)
    _emit(text, output, force, fmt)


@_handles_errors
def export_results_command(
    run_ref: Annotated[str, typer.Argument(metavar="RUN")],
    fmt: FormatOption = ExchangeFormat.json,
    output: Annotated[Path | None, typer.Option("--output", "-o", help="File to write (default: stdout).")] = None,
    force: Annotated[bool, typer.Option("--force", help="Overwrite the output file.")] = False,
    db: DbOption = None,
) -> None:
    """Export the results of a stored run."""
    from simulator.exchange import export_chat_jsonl, export_results

    skipped: list[Any] = []
    with _store(db) as store:
        record = store.get_run(run_ref)
        if fmt is ExchangeFormat.jsonl:
            text = export_chat_jsonl(store.iter_results(record.id, skipped=skipped))
        else:
            results = store.results(record.id, skipped=skipped)
            text = export_results(results, "json" if fmt is ExchangeFormat.json else "yaml")
    _print_unreadable(skipped)
    _emit(text, output, force, fmt)


@_handles_errors
def import_run_command(
    file: Annotated[Path, typer.Argument(help="A run exported with `simulator export run`.")],
    db: DbOption = None,
    trust: TrustOption = False,
) -> None:
    """Import an exported run into the store (under a new id). Every outcome is decided again from the result's
    transcript, scores and fidelity findings; a result stored with another outcome is refused (--trust keeps it,
    marked)."""
    from simulator.exchange import import_into_store, import_run

    if not file.exists():  # a named pipe or a device is refused by import_run, saying what it is
        err.print(f"{file}: no such file", markup=False)
        raise typer.Exit(EXIT_INVALID)
    record, results = import_run(file, trust=trust)
    with _store(db) as store:
        stored = import_into_store(store, record, results, trust=trust)
    out.print(f"imported run {record.id} as {stored.id}: {len(results)} result(s)", markup=False)
    kept = sum(1 for result in results if result.result.trusted is not None)
    if kept:
        err.print(
            f"note: {kept} outcome(s) kept as imported, not re-derived (--trust): each is marked in every report, "
            "and the run's totals count it as its evidence decides",
            markup=False,
        )


@_handles_errors
def import_csv_turns_command(
    file: Annotated[Path, typer.Argument(help="CSV: case, turn, user or event, expected_agent, expected_tools, tags")],
    output: Annotated[Path, typer.Option("--output", "-o", help="Suite file to write.")],
    name: Annotated[str | None, typer.Option("--name", help="Suite name (default: the CSV file's name).")] = None,
    force: Annotated[bool, typer.Option("--force", help="Overwrite the output file if it exists.")] = False,
) -> None:
    """Import multi-turn golden cases from CSV: one row per turn."""
    from simulator.loading.csv_multiturn import import_multiturn_csv

    warnings: list[Any] = []
    _import_suite_from(file, output, force, lambda: import_multiturn_csv(file, suite_name=name, warnings=warnings))
    _print_warnings(warnings)


@_handles_errors
def golden_from_run_command(
    run_ref: Annotated[str, typer.Argument(metavar="RUN")],
    case: Annotated[str, typer.Argument(help="The case whose conversation becomes the golden case.")],
    output: Annotated[Path, typer.Option("--output", "-o", help="Suite file to write.")],
    persona: Annotated[str | None, typer.Option("--persona", help="Which persona's conversation.")] = None,
    repeat: Annotated[int | None, typer.Option("--repeat", min=1, help="Which repeat (1 = first).")] = None,
    no_tools: Annotated[bool, typer.Option("--no-tools", help="Do not expect the recorded tool calls.")] = False,
    force: Annotated[bool, typer.Option("--force", help="Overwrite the output file.")] = False,
    db: DbOption = None,
) -> None:
    """Turn a real conversation of a stored run into a golden case (the agent's replies as expected messages)."""
    from simulator.exchange import golden_from_run, write_export

    skipped: list[Any] = []
    with _store(db) as store:
        record = store.get_run(run_ref)
        results = store.results(record.id, skipped=skipped)
        _print_unreadable(skipped)
        text = golden_from_run(
            record, results, case, persona=persona,
            repeat=None if repeat is None else repeat - 1, include_tools=not no_tools,
        )  # fmt: skip
    path = write_export({output.name: text}, output, force=force)
    out.print(f"wrote {path}", markup=False)
