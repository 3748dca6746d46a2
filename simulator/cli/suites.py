"""Commands on suite files: validate, schema, personas list, import csv."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated

import typer
from rich.table import Table

import simulator
from simulator import one_line, write_file
from simulator.cli._choices import SchemaKind
from simulator.cli._models import (
    AgentApiBaseOption,
    JudgeApiBaseOption,
    JudgeModelOption,
    ModelsFileOption,
    UserApiBaseOption,
    UserModelOption,
)
from simulator.cli._output import (
    EXIT_INVALID,
    DbOption,
    JsonOption,
    _handles_errors,
    _plural,
    _print_config_errors,
    _print_json,
    _print_unreadable,
    _print_warnings,
    err,
    out,
)
from simulator.cli.lint import IgnoreOption, StrictOption, lint_models, run_lint


@_handles_errors
def validate(
    paths: Annotated[list[Path], typer.Argument(help="Suite files, persona files or folders holding them.")],
    as_json: JsonOption = False,
    lint: Annotated[
        bool, typer.Option("--lint", help="Also lint the suites (see `simulator lint`): exit 1 on an error finding.")
    ] = False,
    strict: StrictOption = False,
    ignore: IgnoreOption = None,
    judge_model: JudgeModelOption = None,
    user_model: UserModelOption = None,
    models_file: ModelsFileOption = None,
    judge_api_base: JudgeApiBaseOption = None,
    user_api_base: UserApiBaseOption = None,
    agent_api_base: AgentApiBaseOption = None,
) -> None:
    """Check suites, hosted evals files, agent files and personas; report every problem with its place.
    With --json, one JSON document: the counts and every error with its file, line, column and key.
    With --lint, what `simulator lint` prints instead (--strict, --ignore and the model options as there: only
    --lint asks a model)."""
    if lint:
        given = lint_models(
            judge_model=judge_model, user_model=user_model, models_file=models_file, judge_api_base=judge_api_base,
            user_api_base=user_api_base, agent_api_base=agent_api_base,
        )  # fmt: skip
        run_lint(paths, as_json=as_json, strict=strict, models=given, ignore=ignore or [])
        return

    report = simulator.validate(paths)
    counts = report.case_counts()
    if as_json:
        _print_json(
            {
                "valid": not report.errors,
                "files": [str(path) for path in report.files],
                "skipped": [{"file": str(item.path), "reason": item.why} for item in report.skipped],
                "suites": len(report.suites),
                "cases": counts,
                "personas": len(report.personas),
                "agent_files": len(report.agents),
                "errors": [
                    {"file": e.file, "line": e.line, "column": e.column, "key": e.key_path, "message": e.message}
                    for e in report.errors
                ],
            }
        )
        if report.errors:
            raise typer.Exit(EXIT_INVALID)
        return
    _print_config_errors(report.errors)
    for item in report.skipped:
        err.print(f"skipped {one_line(str(item.path))}: {item.why}", markup=False)
    kinds = ", ".join(f"{kind} {n}" for kind, n in counts.items())
    summary = (
        f"Checked {_plural(len(report.files), 'file')}: {_plural(len(report.suites), 'suite')} with "
        f"{_plural(sum(counts.values()), 'case')} ({kinds}), {_plural(len(report.personas), 'persona')}, "
        f"{_plural(len(report.agents), 'agent file')}."
    )
    if report.skipped:
        summary += f" Skipped {_plural(len(report.skipped), 'YAML name')} that cannot be read as a file (listed)."
    out.print(summary, markup=False)
    if report.errors:
        bad_files = len({e.file for e in report.errors})
        out.print(f"Found {_plural(len(report.errors), 'error')} in {_plural(bad_files, 'file')}.", markup=False)
        raise typer.Exit(EXIT_INVALID)
    out.print("All valid.", markup=False)


@_handles_errors
def schema(
    kind: Annotated[SchemaKind, typer.Argument(help="The kind of file.")] = SchemaKind.suite,
    output: Annotated[Path | None, typer.Option("--output", "-o", help="Write to this file instead of stdout.")] = None,
) -> None:
    """Print the JSON Schema of a kind of file, for editors (see the README on yaml-language-server)."""
    text = simulator.json_schema(kind.value)
    if output is None:
        sys.stdout.write(text)
        return
    write_file(output, text)
    out.print(f"wrote {output}", markup=False)


@_handles_errors
def personas_list(
    directory: Annotated[
        Path | None,
        typer.Option("--dir", help="Folder of persona files (default: the nearest personas/ folder)."),
    ] = None,
    run_ref: Annotated[
        str | None,
        typer.Option(
            "--run",
            metavar="RUN",
            help="Instead: the personas a stored run used, with the simulated user's fidelity rate (turns "
            "without a finding / turns the user model wrote) and findings by kind. Run id, prefix, latest.",
        ),
    ] = None,
    db: DbOption = None,
    as_json: JsonOption = False,
) -> None:
    """List the personas with their language and description; with --run, how well the simulated user played
    each persona in that run."""
    if run_ref is not None:
        _persona_fidelity(run_ref, db, as_json=as_json)
        return
    try:
        listed = simulator.list_personas(directory)
    except simulator.InputError as exc:
        err.print(str(exc), markup=False)
        raise typer.Exit(EXIT_INVALID) from None
    directory, personas = listed.directory, listed.personas
    if as_json:
        _print_json([{"name": name} | personas[name].model_dump(mode="json") for name in sorted(personas)])
        return
    table = Table(title=f"Personas in {directory}", title_justify="left")
    table.add_column("name", no_wrap=True)
    table.add_column("language")
    table.add_column("style")
    table.add_column("description")
    for name in sorted(personas):
        persona = personas[name]
        table.add_row(
            name, persona.language, persona.style.verbosity, persona.description or persona.personality.split(".")[0]
        )
    out.print(table)
    out.print(f"{_plural(len(personas), 'persona')}.", markup=False)


def _persona_fidelity(run_ref: str, db: Path | None, *, as_json: bool) -> None:
    skipped: list[simulator.Unreadable] = []
    run_id, personas = simulator.persona_fidelity(run_ref, db=db, skipped=skipped)
    _print_unreadable(skipped)
    if as_json:
        _print_json({"run": run_id, "personas": [p.model_dump(mode="json") for p in personas]})
        return
    table = Table(title=f"Simulated user fidelity per persona in run {run_id}", title_justify="left")
    for column in ("persona", "conversations", "user turns", "flagged", "fidelity", "findings", "user errors"):
        table.add_column(column, overflow="fold")
    for p in personas:
        rate = "n/a (scripted user)" if p.rate is None else simulator.percent(p.rate)
        kinds = ", ".join(f"{kind} {count}" for kind, count in p.findings.items()) or "none"
        table.add_row(
            p.persona or "-", str(p.conversations), str(p.user_turns), str(p.flagged_turns), rate, kinds,
            str(p.user_errors),
        )  # fmt: skip
    out.print(table)
    out.print(
        "fidelity = user turns without a finding / turns the user model wrote (scripted lines are not checked).",
        markup=False,
    )


@_handles_errors
def import_csv_command(
    file: Annotated[Path, typer.Argument(help="CSV file: columns prompt, must_contain, must_not_contain, ...")],
    output: Annotated[Path, typer.Option("--output", "-o", help="Suite file to write, e.g. suites/faq.yaml.")],
    name: Annotated[str | None, typer.Option("--name", help="Suite name (default: the CSV file's name).")] = None,
    force: Annotated[bool, typer.Option("--force", help="Overwrite the output file if it exists.")] = False,
) -> None:
    """Import a CSV of single-turn tests as golden cases (one per row)."""
    imported = simulator.import_csv(file, output, name=name, force=force)
    out.print(f"wrote {imported.path}: {_plural(imported.cases, 'golden case')}", markup=False)
    _print_warnings(imported.warnings)
