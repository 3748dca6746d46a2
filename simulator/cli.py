"""The ``simulator`` command line. The only module that imports typer and rich.

Exit codes: 0 success, 1 results below the bar (``--fail-under``), 2 invalid input, 3 the run could not
complete, 70 an internal error (a bug in Simulator), 130 interrupted.

Heavy libraries (litellm takes seconds to import, langgraph too) are imported inside the commands that need
them, so ``--help``, ``validate``, ``schema`` and ``personas`` stay fast.
"""

from __future__ import annotations

import functools
import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Annotated, Any, TypeVar

import typer
from rich.console import Console
from rich.table import Table

from simulator import __version__
from simulator.errors import ConfigError, ConfigErrors, SimulatorError

EXIT_OK = 0
EXIT_BELOW_BAR = 1
EXIT_INVALID = 2
EXIT_INCOMPLETE = 3
EXIT_INTERNAL = 70
EXIT_INTERRUPTED = 130

app = typer.Typer(
    name="simulator",
    help="Evaluate conversational agents with YAML test cases, simulated users and goal-by-goal reports.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)
personas_app = typer.Typer(help="Personas of the simulated user.", no_args_is_help=True)
import_app = typer.Typer(help="Turn other formats into suites.", no_args_is_help=True)
app.add_typer(personas_app, name="personas")
app.add_typer(import_app, name="import")

out = Console(soft_wrap=True, highlight=False)
err = Console(stderr=True, soft_wrap=True, highlight=False)

F = TypeVar("F", bound=Callable[..., Any])


def _print_config_errors(errors: list[ConfigError]) -> None:
    for error in errors:
        out.print(error.render(), markup=False)


def _handles_errors(command: F) -> F:
    """Turn Simulator's errors into messages and exit codes; a traceback only for real bugs, on request."""

    @functools.wraps(command)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return command(*args, **kwargs)
        except ConfigErrors as exc:
            _print_config_errors(exc.errors)
            count = len(exc.errors)
            err.print(f"{count} error{'s' if count != 1 else ''}: fix the places above and run again.", markup=False)
            raise typer.Exit(EXIT_INVALID) from None
        except ConfigError as exc:
            out.print(exc.render(), markup=False)
            raise typer.Exit(EXIT_INVALID) from None
        except SimulatorError as exc:
            err.print(f"error: {exc}", markup=False)
            raise typer.Exit(EXIT_INCOMPLETE) from None
        except KeyboardInterrupt:
            err.print("interrupted", markup=False)
            raise typer.Exit(EXIT_INTERRUPTED) from None
        except (typer.Exit, typer.Abort):
            raise
        except Exception as exc:
            if os.environ.get("SIMULATOR_DEBUG"):
                raise
            err.print(
                f"internal error: {type(exc).__name__}: {exc}\n"
                "This is a bug in Simulator, not in your files. Run again with SIMULATOR_DEBUG=1 to see the "
                "traceback, and please report it.",
                markup=False,
            )
            raise typer.Exit(EXIT_INTERNAL) from None

    return wrapper  # type: ignore[return-value]


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


def _plural(count: int, word: str) -> str:
    return f"{count} {word}{'' if count == 1 else 's'}"


@app.command()
@_handles_errors
def validate(
    paths: Annotated[list[Path], typer.Argument(help="Suite files, persona files or folders holding them.")],
) -> None:
    """Check suites, hosted evals files, agent files and personas; report every problem with its place."""
    from simulator.loading import validate_paths

    report = validate_paths(paths)
    _print_config_errors(report.errors)
    counts = report.case_counts()
    kinds = ", ".join(f"{kind} {n}" for kind, n in counts.items())
    summary = (
        f"Checked {_plural(len(report.files), 'file')}: {_plural(len(report.suites), 'suite')} with "
        f"{_plural(sum(counts.values()), 'case')} ({kinds}), {_plural(len(report.personas), 'persona')}, "
        f"{_plural(len(report.agents), 'agent file')}."
    )
    out.print(summary, markup=False)
    if report.errors:
        bad_files = len({e.file for e in report.errors})
        out.print(f"Found {_plural(len(report.errors), 'error')} in {_plural(bad_files, 'file')}.", markup=False)
        raise typer.Exit(EXIT_INVALID)
    out.print("All valid.", markup=False)


@app.command()
@_handles_errors
def schema(
    kind: Annotated[str, typer.Argument(help="suite, evals, agent, persona or personas.")] = "suite",
    output: Annotated[Path | None, typer.Option("--output", "-o", help="Write to this file instead of stdout.")] = None,
) -> None:
    """Print the JSON Schema of a kind of file, for editors (see the README on yaml-language-server)."""
    from importlib import resources

    from simulator.loading import SCHEMA_FILES

    if kind not in SCHEMA_FILES:
        err.print(f"unknown schema {kind!r}: choose one of {', '.join(SCHEMA_FILES)}", markup=False)
        raise typer.Exit(EXIT_INVALID)
    text = resources.files("simulator.schemas").joinpath(SCHEMA_FILES[kind]).read_text(encoding="utf-8")
    if output is None:
        sys.stdout.write(text)
        return
    output.parent.mkdir(parents=True, exist_ok=True)
    output.write_text(text, encoding="utf-8")
    out.print(f"wrote {output}", markup=False)


@personas_app.command("list")
@_handles_errors
def personas_list(
    directory: Annotated[
        Path | None,
        typer.Option("--dir", help="Folder of persona files (default: the nearest personas/ folder)."),
    ] = None,
) -> None:
    """List the personas with their language and description."""
    from simulator.loading import find_upwards, load_personas

    if directory is None:
        directory = find_upwards(Path.cwd(), "personas", want_dir=True)
        if directory is None:
            err.print("no personas/ folder here or above: pass --dir FOLDER", markup=False)
            raise typer.Exit(EXIT_INVALID)
    elif not directory.is_dir():
        err.print(f"{directory}: no such folder", markup=False)
        raise typer.Exit(EXIT_INVALID)
    personas = load_personas(directory)
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


@import_app.command("csv")
@_handles_errors
def import_csv_command(
    file: Annotated[Path, typer.Argument(help="CSV file: columns prompt, must_contain, must_not_contain, ...")],
    output: Annotated[Path, typer.Option("--output", "-o", help="Suite file to write, e.g. suites/faq.yaml.")],
    name: Annotated[str | None, typer.Option("--name", help="Suite name (default: the CSV file's name).")] = None,
    force: Annotated[bool, typer.Option("--force", help="Overwrite the output file if it exists.")] = False,
) -> None:
    """Import a CSV of single-turn tests as golden cases (one per row)."""
    from simulator.loading.csv_import import dump_suite_yaml, import_csv

    if not file.is_file():
        err.print(f"{file}: no such file", markup=False)
        raise typer.Exit(EXIT_INVALID)
    if output.exists() and not force:
        err.print(f"{output} exists: choose another --output, or pass --force to overwrite it", markup=False)
        raise typer.Exit(EXIT_INVALID)
    data = import_csv(file, suite_name=name)
    output.parent.mkdir(parents=True, exist_ok=True)
    output.write_text(dump_suite_yaml(data), encoding="utf-8")
    out.print(f"wrote {output}: {_plural(len(data['cases']), 'golden case')}", markup=False)


_STYLES = {
    "header": "bold",
    "user": "cyan",
    "agent": "green",
    "tool": "dim",
    "tool_warning": "yellow",
    "check_met": "green",
    "check_other": "yellow",
    "error": "bold red",
    "pass": "green",
    "fail": "red",
    "blocked": "magenta",
    "plain": "",
}


@app.command()
@_handles_errors
def simulate(
    suite: Annotated[Path, typer.Argument(help="The suite (or hosted evals) file.")],
    case: Annotated[
        list[str] | None, typer.Option("--case", "-c", help="Case to run (repeatable; default: all).")
    ] = None,
    persona: Annotated[str | None, typer.Option("--persona", help="Persona name (default: the case's first).")] = None,
    live: Annotated[bool, typer.Option("--live", help="Run real tool functions instead of fakes.")] = False,
    user_model: Annotated[
        str | None, typer.Option("--user-model", help="litellm model for the simulated user.")
    ] = None,
    judge_model: Annotated[str | None, typer.Option("--judge-model", help="litellm model for the judge.")] = None,
    seed: Annotated[int, typer.Option("--seed", help="Seed for the scripted user's perturbations.")] = 0,
    as_json: Annotated[bool, typer.Option("--json", help="Print the transcripts as JSON.")] = False,
) -> None:
    """Run and score cases of a suite one by one: each conversation, its step outcomes, every score and the
    case's outcome with the reasons. Offline by default (scripted user, deterministic checks)."""
    import asyncio

    from simulator.llm import LLMClient
    from simulator.loading import load_suite
    from simulator.metrics import Breakdown
    from simulator.reports import result_lines, transcript_lines
    from simulator.runner import RunOptions, find_case, model_roles, pick_persona, run_case, score_case

    loaded = load_suite(suite)
    options = RunOptions(live=live, user_model=user_model, judge_model=judge_model, seed=seed)
    cases = [find_case(loaded, name) for name in case] if case else list(loaded.suite.cases)
    plan = [(c, pick_persona(loaded, c, persona)) for c in cases]
    llm = LLMClient(model_roles(loaded, options))

    async def run_all() -> list[Any]:
        results = []
        for c, p in plan:
            transcript = await run_case(loaded, c, persona=p, llm=llm, options=options)
            results.append(await score_case(loaded, c, transcript, llm=llm, options=options))
        return results

    results = asyncio.run(run_all())
    for result in results:
        if as_json:
            sys.stdout.write(result.model_dump_json(indent=2) + "\n")
            continue
        for line in [*transcript_lines(result.transcript), *result_lines(result)]:
            out.print(line.text, style=_STYLES[line.style] or None, markup=False)
        out.print("")
    breakdown = Breakdown.of([r.outcome for r in results])
    if not as_json:
        out.print(
            f"{breakdown.total} case(s): {breakdown.passed} passed, {breakdown.failed} failed, "
            f"{breakdown.error} error, {breakdown.unsure} unsure.",
            markup=False,
        )
        if breakdown.unsure and not model_roles(loaded, options).judge.model:
            out.print(
                "Unsure cases have checks only a judge model can decide; they were not guessed. "
                "Pass --judge-model (any litellm model) to judge them.",
                markup=False,
            )
    if breakdown.failed or breakdown.error:
        raise typer.Exit(EXIT_BELOW_BAR)


@app.command("judge-check")
@_handles_errors
def judge_check_command(
    file: Annotated[Path, typer.Argument(help="YAML file of labelled transcripts (see judge_labels/demo.yaml).")],
    judge_model: Annotated[
        str | None, typer.Option("--judge-model", help="litellm model to check (default: the suite's judge).")
    ] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print the report as JSON.")] = False,
) -> None:
    """Score labelled transcripts with the judge model and report its agreement with the person who labelled
    them: accuracy and Cohen's kappa per question, and every disagreement with the judge's reason."""
    import asyncio
    import json
    from dataclasses import asdict

    from simulator.errors import JudgeError
    from simulator.judge_check import judge_check

    if not file.is_file():
        err.print(f"{file}: no such file", markup=False)
        raise typer.Exit(EXIT_INVALID)
    try:
        report = asyncio.run(judge_check(file, judge_model=judge_model))
    except JudgeError as exc:
        err.print(f"error: {exc}", markup=False)
        raise typer.Exit(EXIT_INVALID) from None
    if as_json:
        payload = {
            "overall": _agreement_dict(report.overall),
            "by_question": {kind: _agreement_dict(a) for kind, a in report.by_question.items()},
            "judgements": [asdict(j) for j in report.judgements],
        }
        sys.stdout.write(json.dumps(payload, indent=2, ensure_ascii=False) + "\n")
        return
    table = Table(title=f"Judge agreement with the labels in {file}", title_justify="left")
    for column in ("question", "n", "accuracy", "Cohen's kappa"):
        table.add_column(column)
    rows = [*report.by_question.items(), ("all", report.overall)]
    for kind, result in rows:
        if result is None:
            continue
        table.add_row(kind, str(result.n), _fraction(result.accuracy), _fraction(result.cohen_kappa))
    out.print(table)
    disagreements = report.disagreements
    out.print(f"{len(disagreements)} disagreement(s):", markup=False)
    for judgement in disagreements:
        out.print(
            f"  item {judgement.item + 1} ({judgement.transcript}), {judgement.question}: "
            f"person {judgement.human}, judge {judgement.judge} — {judgement.reason}",
            markup=False,
        )


def _fraction(value: float | None) -> str:
    return "–" if value is None else f"{value:.2f}"


def _agreement_dict(result: Any) -> dict[str, Any] | None:
    if result is None:
        return None
    return {"n": result.n, "accuracy": result.accuracy, "cohen_kappa": result.cohen_kappa}


def main() -> None:
    """Entry point of the ``simulator`` console script."""
    app()


if __name__ == "__main__":  # pragma: no cover
    main()
