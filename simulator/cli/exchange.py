"""Commands that move cases and runs between stores and formats: export, import run / csv-turns, golden."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer

import simulator
from simulator.cli._choices import ExchangeFormat
from simulator.cli._output import (
    EXIT_INVALID,
    DbOption,
    TrustOption,
    _handles_errors,
    _plural,
    _print_config_errors,
    _print_document,
    _print_unreadable,
    _print_warnings,
    err,
    out,
)

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
    if output is None:
        _print_document(text, "json" if fmt in ("json", "jsonl") else "text")
        return
    path = simulator.write_export({output.name: text}, output, force=force)
    out.print(f"wrote {path}", markup=False)


@_handles_errors
def export_cases_command(
    paths: Annotated[list[Path], typer.Argument(help="Suite files or folders.")],
    output: Annotated[Path, typer.Option("--output", "-o", help="A .yaml file, or a .zip for several suites.")],
    force: Annotated[bool, typer.Option("--force", help="Overwrite the output file.")] = False,
) -> None:
    """Export suites (agent inline, personas they use included) as YAML; several files go into a zip."""
    try:
        files = simulator.export_cases(paths)
    except simulator.ConfigErrors as exc:
        _print_config_errors(exc.errors)
        raise typer.Exit(EXIT_INVALID) from None
    if len(files) > 1 and output.suffix != ".zip":
        err.print(f"{len(files)} files to export: give an --output ending in .zip", markup=False)
        raise typer.Exit(EXIT_INVALID)
    path = simulator.write_export(
        files if len(files) > 1 else {output.name: next(iter(files.values()))}, output, force=force
    )
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
    skipped: list[Any] = []
    text = simulator.export_run(run_ref, fmt.value, db=db, skipped=skipped)
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
    skipped: list[Any] = []
    text = simulator.export_results(run_ref, fmt.value, db=db, skipped=skipped)
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
    imported = simulator.import_run(file, db=db, trust=trust)
    out.print(
        f"imported run {imported.original_id} as {imported.record.id}: {imported.results} result(s)", markup=False
    )
    if imported.kept_on_trust:
        err.print(
            f"note: {imported.kept_on_trust} outcome(s) kept as imported, not re-derived (--trust): each is marked in "
            "every report, and the run's totals count it as its evidence decides",
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
    imported = simulator.import_csv(file, output, name=name, turns=True, force=force)
    out.print(f"wrote {imported.path}: {_plural(imported.cases, 'golden case')}", markup=False)
    _print_warnings(imported.warnings)


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
    skipped: list[Any] = []
    text = simulator.golden_from_run(
        run_ref, case, persona=persona, repeat=None if repeat is None else repeat - 1, include_tools=not no_tools,
        db=db, skipped=skipped,
    )  # fmt: skip
    _print_unreadable(skipped)
    path = simulator.write_export({output.name: text}, output, force=force)
    out.print(f"wrote {path}", markup=False)
