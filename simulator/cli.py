"""The ``simulator`` command line. The only module that imports typer and rich.

Exit codes: 0 success, 1 results below the bar (``--fail-under``), 2 invalid input, 3 the run could not
complete (or another process is running it), 70 an internal error (a bug in Simulator), 130 interrupted by
Ctrl-C, 143 stopped by SIGTERM (both leave an ``interrupted`` run that ``runs resume`` continues).

Heavy libraries (litellm takes seconds to import, langgraph too) are imported inside the commands that need
them, so ``--help``, ``validate``, ``schema`` and ``personas`` stay fast.
"""

from __future__ import annotations

import functools
import os
import sys
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, Literal, TypeVar, cast

import typer
from rich.console import Console, ConsoleOptions, RenderableType
from rich.segment import Segment
from rich.table import Table
from rich.text import Text

from simulator import __version__
from simulator.errors import ConfigError, ConfigErrors, InputError, SimulatorError

if TYPE_CHECKING:
    from simulator.reports.formats import ReportFormat
from simulator.safety import json_safe, redact, terminal_safe

EXIT_OK = 0
EXIT_BELOW_BAR = 1
EXIT_INVALID = 2
EXIT_INCOMPLETE = 3
EXIT_INTERNAL = 70
EXIT_INTERRUPTED = 130
EXIT_TERMINATED = 143  # 128 + SIGTERM, what process supervisors (systemd, Kubernetes, CI runners) expect

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



class SafeConsole(Console):
    """The only kind of console the CLI prints with: no secret, and no text that drives the terminal.

    Every text printed (arguments, table cells, titles) has the secrets the process knows redacted and its
    control characters escaped (``simulator.safety``) before rich lays it out; then every segment rich renders
    is checked again, so text that reaches rich another way (a progress bar's description) is escaped too.
    Rich's own styles and cursor movements are added outside the text and stay. Markup, emoji codes and
    highlighting are off: a case named ``[/]`` or ``:boom:`` is shown as written.
    """

    def __init__(self, **options: Any) -> None:
        super().__init__(markup=False, emoji=False, highlight=False, **options)

    def render_str(self, text: str, *args: Any, **kwargs: Any) -> Text:
        return super().render_str(terminal_safe(redact(text)), *args, **kwargs)

    def render(self, renderable: RenderableType, options: ConsoleOptions | None = None) -> Iterable[Segment]:
        for segment in super().render(renderable, options):
            if segment.control or terminal_safe(segment.text) is segment.text:
                yield segment
            else:
                yield Segment(terminal_safe(segment.text), segment.style)


# Off a terminal (CI logs, pipes) rich would wrap tables at 80 columns; logs are read wide.
out = SafeConsole(soft_wrap=True, width=None if sys.stdout.isatty() else 160)
err = SafeConsole(stderr=True, soft_wrap=True)


def _print_document(text: str, kind: Literal["json", "text"] = "text") -> None:
    """Write a document (JSON, a report, an export) to stdout as the console would: secrets redacted, control
    characters escaped. In JSON they become ``\\u`` escapes, so the document still parses to the same values;
    in YAML exports (whose strings holding them are double-quoted) ``\\x1b`` and ``\\u202e`` are escapes too."""
    text = redact(text)
    text = json_safe(text) if kind == "json" else terminal_safe(text)
    buffer = getattr(sys.stdout, "buffer", None)
    if buffer is None:
        sys.stdout.write(text)
        return
    # As UTF-8 bytes, whatever the terminal's encoding, and without newline translation (CSV ends lines in CR LF).
    sys.stdout.flush()
    buffer.write(text.encode("utf-8"))
    buffer.flush()


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
        except InputError as exc:
            err.print(f"error: {exc}", markup=False)
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
    from simulator.loading.csv_import import import_csv

    warnings: list[Any] = []
    _import_suite_from(file, output, force, lambda: import_csv(file, suite_name=name, warnings=warnings))
    _print_warnings(warnings)


def _print_warnings(warnings: list[Any]) -> None:
    for warning in warnings:
        err.print(f"warning: {warning}", markup=False, soft_wrap=True)


def _import_suite_from(file: Path, output: Path, force: bool, read: Callable[[], dict[str, Any]]) -> None:
    """Write the suite ``read`` makes of ``file`` to ``output``, never overwriting without --force."""
    from simulator.loading.csv_import import dump_suite_yaml

    if not file.exists():  # a named pipe or a device is refused by the importer, saying what it is
        err.print(f"{file}: no such file", markup=False)
        raise typer.Exit(EXIT_INVALID)
    if output.exists() and not force:
        err.print(f"{output} exists: choose another --output, or pass --force to overwrite it", markup=False)
        raise typer.Exit(EXIT_INVALID)
    data = read()
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


ModelsFileOption = Annotated[
    Path | None,
    typer.Option(
        "--models",
        help="YAML file of model settings per role, like a suite's `models:` (agent/user/judge: model, api_base, "
        "api_key_env, timeout, ...); what it sets overrides the suite.",
    ),
]
JudgeApiBaseOption = Annotated[
    str | None, typer.Option("--judge-api-base", help="Base URL of the judge model's endpoint.")
]
UserApiBaseOption = Annotated[
    str | None, typer.Option("--user-api-base", help="Base URL of the simulated user's model endpoint.")
]
AgentApiBaseOption = Annotated[
    str | None, typer.Option("--agent-api-base", help="Base URL of a litellm agent's model endpoint.")
]


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
    models_file: ModelsFileOption = None,
    judge_api_base: JudgeApiBaseOption = None,
    user_api_base: UserApiBaseOption = None,
    agent_api_base: AgentApiBaseOption = None,
    seed: Annotated[int, typer.Option("--seed", help="Seed for the scripted user's perturbations.")] = 0,
    as_json: Annotated[
        bool, typer.Option("--json", help="Print one JSON document: counts and every scored result.")
    ] = False,
) -> None:
    """Run and score cases of a suite one by one, storing nothing: each conversation, its step outcomes, every
    score and the case's outcome with the reasons. Offline by default (scripted user, deterministic checks).
    With --json, one JSON document: the counts and every scored result."""
    import asyncio
    import json

    from simulator.metrics import counts
    from simulator.reports import result_lines, transcript_lines

    planned = _api().plan_simulation(
        suite, cases=case or [], persona=persona, live=live, user_model=user_model, judge_model=judge_model,
        models=_model_overrides(models_file, judge_api_base, user_api_base, agent_api_base), seed=seed,
    )  # fmt: skip
    if not as_json:
        for note in planned.notes:
            err.print(f"note: {note}", markup=False, soft_wrap=True)

    def show(result: Any) -> None:
        if as_json:
            return
        for line in [*transcript_lines(result.transcript, result), *result_lines(result)]:
            out.print(line.text, style=_STYLES[line.style] or None, markup=False)
        out.print("")

    results = asyncio.run(_api().simulate_async(planned, on_result=show))
    breakdown = counts(r.outcome for r in results)
    if as_json:
        document = {**breakdown.model_dump(mode="json"), "results": [r.model_dump(mode="json") for r in results]}
        _print_document(json.dumps(document, indent=2, ensure_ascii=False) + "\n", "json")
    else:
        out.print(
            f"{breakdown.total} case(s): {breakdown.passed} passed, {breakdown.failed} failed, "
            f"{breakdown.error} error, {breakdown.unsure} unsure.",
            markup=False,
        )
        if breakdown.unsure and not planned.has_judge:
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

    from simulator.analysis.judge_check import judge_check
    from simulator.errors import JudgeError

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
        _print_document(json.dumps(payload, indent=2, ensure_ascii=False) + "\n", "json")
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


runs_app = typer.Typer(help="Stored runs: list, show, note, resume, repeat, compare, delete.", no_args_is_help=True)
app.add_typer(runs_app, name="runs")

DbOption = Annotated[
    Path | None, typer.Option("--db", help="Run store (default: $SIMULATOR_DB or .simulator/runs.db).")
]


def _store(db: Path | None) -> Any:
    from simulator.store import RunStore, default_db_path

    return RunStore(db or default_db_path())


def _api() -> Any:
    """The public run API (imported when a command runs, not for --help)."""
    import simulator.runner

    return simulator.runner


def _model_overrides(
    models_file: Path | None, judge_api_base: str | None, user_api_base: str | None, agent_api_base: str | None
) -> dict[str, dict[str, Any]]:
    """Per-role model settings from ``--models FILE`` (the suite's ``models:`` mapping, as YAML) and the
    ``--*-api-base`` options (which win over the file)."""
    overrides: dict[str, dict[str, Any]] = {}
    if models_file is not None:
        from simulator.loading import load_model_file
        from simulator.models import ModelRoles

        roles = load_model_file(models_file, ModelRoles)
        for role in sorted(roles.model_fields_set):
            chosen = getattr(roles, role)
            overrides[role] = {name: getattr(chosen, name) for name in chosen.model_fields_set}
    for role, base in (("judge", judge_api_base), ("user", user_api_base), ("agent", agent_api_base)):
        if base is not None:
            overrides.setdefault(role, {})["api_base"] = base
    return overrides


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


def _run_with_progress(
    start: Callable[[Callable[[Any], None]], Any], *, db: Path | None, on_start: Callable[[Any], None] | None = None
) -> Any:
    """Run the coroutine ``start(on_event)`` (a public API call) with a progress bar on a terminal (plain lines
    otherwise). Ctrl-C and SIGTERM both stop it cleanly: the run is marked interrupted, the command to resume it
    is printed, and the exit code is 130 (Ctrl-C) or 143 (SIGTERM). A second SIGTERM ends the process at once."""
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
        if not console.is_terminal:
            persona = f" ({event.item.persona})" if event.item.persona else ""
            out.print(
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
                stored = len(store.completed_keys(record.id))
            err.print(
                f"{what}: {stored} of {len(record.plan)} conversation(s) stored; "
                f"continue with: {_resume_command(record, path, db)}",
                markup=False,
            )
        raise typer.Exit(EXIT_TERMINATED if terminated else EXIT_INTERRUPTED) from None


def _print_run(outcome: Any) -> None:
    from simulator.store import RunStore

    with RunStore(outcome.store_path) as store:
        _print_run_record(store, outcome.record)


def _print_run_record(store: Any, record: Any) -> None:
    from simulator.metrics import summarized
    from simulator.reports.run_text import CASE_COLUMNS, case_rows, repeat_lines, run_header, totals_lines

    results = store.results(record.id)
    record = summarized(record, results)  # a run stored by an older version, or still running
    for line in run_header(record):
        out.print(line, markup=False)
    owner = store.owner(record.id) if record.status == "running" else None
    if owner is not None:
        out.print(f"Running now: {owner.describe()}.", markup=False)
    table = Table(title_justify="left")
    for column in CASE_COLUMNS:
        table.add_column(column, overflow="fold")
    styles = {"pass": "green", "fail": "red", "error": "bold red", "unsure": "yellow"}
    for row in case_rows(results):
        table.add_row(*row, style=styles.get(row[3]))
    out.print(table)
    for line in [*repeat_lines(record), *totals_lines(record)]:
        out.print(line, markup=False)


def _exit_for(outcome: Any, fail_under: float | None) -> None:
    code = outcome.exit_code(fail_under)
    if code == EXIT_BELOW_BAR and fail_under is not None:
        correctness = (outcome.correctness or 0.0) * 100
        err.print(f"correctness {correctness:.1f}% is below --fail-under {fail_under:g}%", markup=False)
    if code != EXIT_OK:
        raise typer.Exit(code)


@app.command()
@_handles_errors
def run(
    paths: Annotated[list[Path], typer.Argument(help="Suite files or folders.")],
    persona: Annotated[str | None, typer.Option("--persona", help="A persona name, all, or random.")] = None,
    repeat: Annotated[int, typer.Option("--repeat", min=1, help="Run each case K times.")] = 1,
    tag: Annotated[list[str] | None, typer.Option("--tag", help="Only cases with this tag (repeatable).")] = None,
    case: Annotated[list[str] | None, typer.Option("--case", help="Only this case (repeatable).")] = None,
    agent_version: Annotated[str | None, typer.Option("--agent-version", help="Label of the agent version.")] = None,
    note: Annotated[str, typer.Option("--note", help="A note kept with the run (editable later).")] = "",
    live: Annotated[bool, typer.Option("--live", help="Run real tool functions instead of fakes.")] = False,
    user_model: Annotated[
        str | None, typer.Option("--user-model", help="litellm model for the simulated user.")
    ] = None,
    judge_model: Annotated[str | None, typer.Option("--judge-model", help="litellm model for the judge.")] = None,
    models_file: ModelsFileOption = None,
    judge_api_base: JudgeApiBaseOption = None,
    user_api_base: UserApiBaseOption = None,
    agent_api_base: AgentApiBaseOption = None,
    concurrency: Annotated[int, typer.Option("--concurrency", min=1, help="Conversations in flight at once.")] = 8,
    fail_under: Annotated[
        float | None, typer.Option("--fail-under", help="Exit 1 only when correctness (%) is below this.")
    ] = None,
    seed: Annotated[int | None, typer.Option("--seed", help="Seed for persona choice and the scripted user.")] = None,
    db: DbOption = None,
    no_cache: Annotated[bool, typer.Option("--no-cache", help="Do not use the model request cache.")] = False,
    cache_size: Annotated[int, typer.Option("--cache-size", min=1, help="Request cache limit in MB.")] = 200,
    checkpoints: Annotated[
        bool,
        typer.Option(
            "--checkpoints/--no-checkpoints",
            help="Checkpoint every step so a resumed run continues conversations mid-way (costs ~1 ms a turn).",
        ),
    ] = True,
    report_formats: Annotated[
        list[str] | None,
        typer.Option("--report", help="Also write a report: md, html, json, csv, xlsx or junit (repeatable)."),
    ] = None,
    report_dir: Annotated[Path, typer.Option("--report-dir", help="Folder for --report files.")] = Path(
        ".simulator/reports"
    ),
) -> None:
    """Run suites: cases x personas x repeats, concurrently; every result is stored as it finishes.

    Exit 0 when every case passed (or correctness is at least --fail-under), 1 below it, 2 for invalid input,
    3 when the run could not complete, 130 when interrupted by Ctrl-C and 143 by SIGTERM (the run can be
    resumed). A suite names code that runs: its python agent, langgraph graph and, with --live, tool functions.
    """
    from simulator.runner import plan

    formats = _check_report_formats(report_formats or [])  # before anything runs: not after an hour of it
    planned = plan(
        paths, persona=persona, repeat=repeat, tags=tag or [], cases=case or [], live=live, user_model=user_model,
        judge_model=judge_model, models=_model_overrides(models_file, judge_api_base, user_api_base, agent_api_base),
        concurrency=concurrency, fail_under=fail_under, seed=seed, cache=not no_cache, checkpoints=checkpoints,
    )  # fmt: skip

    def started(event: Any) -> None:
        guess = (
            f"estimated {event.estimate_s:.0f} s from earlier runs of these suites"
            if event.estimate_s else "no estimate yet (first run of these suites)"
        )  # fmt: skip
        out.print(
            f"Run {event.record.id}: {len(planned.items)} conversation(s) of {planned.cases} case(s) from "
            f"{len(planned.snapshots)} suite(s), concurrency {concurrency}; {guess}.",
            markup=False,
        )
        for note_text in planned.notes:
            err.print(f"note: {note_text}", markup=False, soft_wrap=True)

    outcome = _run_with_progress(
        lambda on_event: _api().run_async(
            planned, db=db, agent_version=agent_version, note=note, cache_size_mb=cache_size, on_event=on_event
        ),
        db=db, on_start=started,
    )  # fmt: skip
    _print_run(outcome)
    if report_formats:
        _write_reports(outcome, formats, report_dir)
    _exit_for(outcome, fail_under)


def _check_report_formats(formats: list[str]) -> list[ReportFormat]:
    """``formats`` as report formats; exit 2 naming the first that is not one, before anything runs or is read."""
    from simulator.reports.formats import FORMATS

    for fmt in formats:
        if fmt not in FORMATS:
            err.print(f"unknown report format {fmt!r}: choose one of {', '.join(FORMATS)}", markup=False)
            raise typer.Exit(EXIT_INVALID)
    return cast("list[ReportFormat]", formats)


def _write_reports(outcome: Any, formats: list[ReportFormat], directory: Path) -> None:
    """Write the run's reports; the formats were checked before the run (:func:`_check_report_formats`)."""
    from simulator.metrics import summarized
    from simulator.reports.formats import default_filename, render

    results = outcome.results()
    record = summarized(outcome.record, results)
    directory.mkdir(parents=True, exist_ok=True)
    for fmt in formats:
        path = directory / default_filename(record, fmt)
        path.write_bytes(render(fmt, record, results))
        out.print(f"report: {path}", markup=False)


@app.command()
@_handles_errors
def report(
    run_ref: Annotated[str, typer.Argument(metavar="RUN", help="Run id, a unique prefix, latest or latest~N.")],
    fmt: Annotated[str, typer.Option("--format", "-f", help="md, html, json, csv, xlsx or junit.")] = "md",
    output: Annotated[Path | None, typer.Option("--output", "-o", help="File to write (default: stdout).")] = None,
    db: DbOption = None,
) -> None:
    """Write a stored run as a report: Markdown, self-contained HTML, JSON, CSV, Excel or JUnit XML."""
    from simulator.metrics import summarized
    from simulator.reports.formats import default_filename, render

    [report_format] = _check_report_formats([fmt])
    with _store(db) as store:
        record = store.get_run(run_ref)
        results = store.results(record.id)
        data = render(report_format, summarized(record, results), results)
    if output is None and fmt == "xlsx":
        output = Path(default_filename(record, "xlsx"))
    if output is None:
        _print_document(data.decode("utf-8"), "json" if fmt == "json" else "text")
        return
    output.parent.mkdir(parents=True, exist_ok=True)
    output.write_bytes(data)
    out.print(f"wrote {output}", markup=False)


@runs_app.command("list")
@_handles_errors
def runs_list(
    db: DbOption = None,
    limit: Annotated[int, typer.Option("--limit", min=1, help="How many runs, newest first.")] = 20,
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON.")] = False,
) -> None:
    """List stored runs, newest first."""
    import json

    with _store(db) as store:
        records = store.list_runs(limit=limit)
    if as_json:
        payload = [
            {"id": r.id, "created": r.created.isoformat(), "status": r.status, "agent_version": r.agent_version,
             "note": r.note, "suite_hash": r.suite_hash, "planned": len(r.plan),
             "totals": r.totals.model_dump(mode="json") if r.totals else None}
            for r in records
        ]  # fmt: skip
        _print_document(json.dumps(payload, indent=2, ensure_ascii=False) + "\n", "json")
        return
    table = Table(title="Runs", title_justify="left")
    for column in ("id", "created", "status", "suites", "version", "correctness", "P/F/E/U", "note"):
        table.add_column(column, overflow="fold")
    for r in records:
        t = r.totals
        correctness = "-" if t is None or t.correctness is None else f"{t.correctness * 100:.1f}%"
        counts = "-" if t is None else f"{t.passed}/{t.failed}/{t.error}/{t.unsure}"
        table.add_row(
            r.id, f"{r.created:%Y-%m-%d %H:%M}", r.status, ", ".join(s.suite.name for s in r.snapshot),
            r.agent_version or "", correctness, counts, r.note,
        )  # fmt: skip
    out.print(table)


@runs_app.command("show")
@_handles_errors
def runs_show(
    run_ref: Annotated[str, typer.Argument(metavar="RUN", help="Run id, a unique prefix, latest or latest~N.")],
    db: DbOption = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print the run record and its results as JSON.")] = False,
) -> None:
    """Show a run: header, one row per conversation, totals."""
    import json

    with _store(db) as store:
        record = store.get_run(run_ref)
        if as_json:
            owner = store.owner(record.id) if record.status == "running" else None
            payload = {
                "run": record.model_dump(mode="json"),
                "owner": None
                if owner is None
                else {
                    "pid": owner.pid,
                    "host": owner.host,
                    "started": owner.started.isoformat(),
                    "heartbeat": owner.heartbeat.isoformat(),
                },
                "results": [r.model_dump(mode="json") for r in store.results(record.id)],
            }
            _print_document(json.dumps(payload, indent=2, ensure_ascii=False) + "\n", "json")
            return
        _print_run_record(store, record)


@runs_app.command("note")
@_handles_errors
def runs_note(
    run_ref: Annotated[str, typer.Argument(metavar="RUN")],
    text: Annotated[str, typer.Argument(help="The new note.")],
    db: DbOption = None,
) -> None:
    """Replace a run's note (the suite, version and settings of a run never change)."""
    with _store(db) as store:
        record = store.get_run(run_ref)
        store.set_note(record.id, text)
    out.print(f"note of {record.id} set", markup=False)


@runs_app.command("delete")
@_handles_errors
def runs_delete(
    run_ref: Annotated[str, typer.Argument(metavar="RUN")],
    db: DbOption = None,
    yes: Annotated[bool, typer.Option("--yes", help="Do not ask for confirmation.")] = False,
) -> None:
    """Delete a run and its results."""
    with _store(db) as store:
        record = store.get_run(run_ref)
        if not yes and not typer.confirm(f"Delete run {record.id} and its {len(record.plan)} planned results?"):
            raise typer.Exit(EXIT_OK)
        store.delete_run(record.id)
        from simulator.runner._execute import forget_checkpoints

        forget_checkpoints(store.path, record.id)
    out.print(f"deleted {record.id}", markup=False)


LiveOption = Annotated[
    bool,
    typer.Option(
        "--live",
        help="Run real tool functions instead of fakes. Never carried over from the stored run: only this flag, "
        "given to this command, turns them on.",
    ),
]
YesOption = Annotated[
    bool, typer.Option("--yes", help="Run the code an imported run names (it is listed first) without asking.")
]


def _confirm_imported(record: Any, yes: bool, live: bool, doing: str) -> None:
    """An imported run names code that did not come from this machine's files: say what it runs, and go on
    only with --yes."""
    if not record.imported_from:
        return
    from simulator.runner import code_it_runs
    from simulator.runner._api import _visible

    lines = code_it_runs(record, live)
    err.print(
        f"Run {record.id} came from `simulator import run` (run {_visible(record.imported_from)} elsewhere). "
        f"{doing.capitalize()} it runs what its snapshot names, on this machine, as you:",
        markup=False,
    )
    for line in lines or ["no agent code of its own"]:
        err.print(f"  - {line}", markup=False)
    if not yes:
        err.print(f"Read the export and trust that code first; then {doing} it with --yes.", markup=False)
        raise typer.Exit(EXIT_INVALID)


@runs_app.command("resume")
@_handles_errors
def runs_resume(
    run_ref: Annotated[str, typer.Argument(metavar="RUN")],
    db: DbOption = None,
    no_cache: Annotated[bool, typer.Option("--no-cache", help="Do not use the model request cache.")] = False,
    live: LiveOption = False,
    yes: YesOption = False,
) -> None:
    """Finish an interrupted or failed run: finished cases are not run again; unfinished conversations continue
    where they stopped (for agents without state of their own). A run another live process runs is refused
    (exit 3). A run started with --live continues only with --live. Exits like `run` (its --fail-under)."""
    from simulator.runner._execute import check_live

    with _store(db) as store:
        store.require_writable("resume a run")
        record = store.get_run(run_ref)
        store.check_free(record.id, "resumed")
        missing = len(record.plan) - len(store.completed_keys(record.id))
        if missing == 0 and record.status == "completed":
            out.print(f"run {record.id} is complete: nothing to resume", markup=False)
            _print_run_record(store, record)
            _exit_for(_api().RunOutcome(record=record, store_path=store.path), record.settings.fail_under)
            return
        check_live(record, live)
        _confirm_imported(record, yes, live, "resuming")
    out.print(f"Resuming {record.id}: {missing} of {len(record.plan)} conversation(s) left.", markup=False)
    outcome = _run_with_progress(
        lambda on_event: _api().resume_async(
            record.id, db=db, live=live, trust_imported=yes, cache=not no_cache, on_event=on_event
        ),
        db=db,
    )
    _print_run(outcome)
    _exit_for(outcome, outcome.record.settings.fail_under)


@runs_app.command("repeat")
@_handles_errors
def runs_repeat(
    run_ref: Annotated[str, typer.Argument(metavar="RUN")],
    db: DbOption = None,
    note: Annotated[str | None, typer.Option("--note", help="Note of the new run.")] = None,
    agent_version: Annotated[str | None, typer.Option("--agent-version", help="Label of the agent version.")] = None,
    live: LiveOption = False,
    yes: YesOption = False,
) -> None:
    """Run again exactly what a stored run ran (its suite snapshot and settings) as a new run; tools in test
    mode unless this command says --live."""
    with _store(db) as store:
        store.require_writable("repeat a run")
        old = store.get_run(run_ref)
        store.check_free(old.id, "repeated")
        _confirm_imported(old, yes, live, "repeating")
    if old.settings.live and not live:
        err.print(
            f"note: {old.id} ran with --live; this repeat runs its tools in test mode (fakes): pass --live to "
            "run the real tool functions",
            markup=False,
        )

    def started(event: Any) -> None:
        out.print(f"Run {event.record.id} repeats {old.id}: {len(event.record.plan)} conversation(s).", markup=False)

    outcome = _run_with_progress(
        lambda on_event: _api().repeat_async(
            old.id, db=db, live=live, trust_imported=yes, note=note, agent_version=agent_version, on_event=on_event
        ),
        db=db, on_start=started,
    )  # fmt: skip
    _print_run(outcome)
    _exit_for(outcome, outcome.record.settings.fail_under)


@runs_app.command("compare")
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
    from simulator.analysis.compare import compare_runs
    from simulator.reports.compare_text import render_comparison_text

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


export_app = typer.Typer(help="Export cases, runs and results as YAML or JSON.", no_args_is_help=True)
golden_app = typer.Typer(help="Golden cases from real conversations.", no_args_is_help=True)
app.add_typer(export_app, name="export")
app.add_typer(golden_app, name="golden")

FormatOption = Annotated[str, typer.Option("--format", "-f", help="json or yaml.")]


def _check_exchange_format(fmt: str) -> None:
    if fmt not in ("json", "yaml"):
        err.print(f"unknown format {fmt!r}: choose json or yaml", markup=False)
        raise typer.Exit(EXIT_INVALID)


def _emit(text: str, output: Path | None, force: bool, fmt: str) -> None:
    from simulator.exchange import write_export

    if output is None:
        _print_document(text, "json" if fmt == "json" else "text")
        return
    path = write_export({output.name: text}, output, force=force)
    out.print(f"wrote {path}", markup=False)


@export_app.command("cases")
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


@export_app.command("run")
@_handles_errors
def export_run_command(
    run_ref: Annotated[str, typer.Argument(metavar="RUN")],
    fmt: FormatOption = "json",
    output: Annotated[Path | None, typer.Option("--output", "-o", help="File to write (default: stdout).")] = None,
    force: Annotated[bool, typer.Option("--force", help="Overwrite the output file.")] = False,
    db: DbOption = None,
) -> None:
    """Export a stored run (record and results) to move it to another store."""
    from simulator.exchange import export_run

    _check_exchange_format(fmt)
    with _store(db) as store:
        record = store.get_run(run_ref)
        text = export_run(record, store.results(record.id), fmt)  # type: ignore[arg-type]
    _emit(text, output, force, fmt)


@export_app.command("results")
@_handles_errors
def export_results_command(
    run_ref: Annotated[str, typer.Argument(metavar="RUN")],
    fmt: FormatOption = "json",
    output: Annotated[Path | None, typer.Option("--output", "-o", help="File to write (default: stdout).")] = None,
    force: Annotated[bool, typer.Option("--force", help="Overwrite the output file.")] = False,
    db: DbOption = None,
) -> None:
    """Export the results of a stored run."""
    from simulator.exchange import export_results

    _check_exchange_format(fmt)
    with _store(db) as store:
        record = store.get_run(run_ref)
        text = export_results(store.results(record.id), fmt)  # type: ignore[arg-type]
    _emit(text, output, force, fmt)


@import_app.command("run")
@_handles_errors
def import_run_command(
    file: Annotated[Path, typer.Argument(help="A run exported with `simulator export run`.")],
    db: DbOption = None,
) -> None:
    """Import an exported run into the store (under a new id)."""
    from simulator.exchange import import_into_store, import_run

    if not file.exists():  # a named pipe or a device is refused by import_run, saying what it is
        err.print(f"{file}: no such file", markup=False)
        raise typer.Exit(EXIT_INVALID)
    record, results = import_run(file)
    with _store(db) as store:
        stored = import_into_store(store, record, results)
    out.print(f"imported run {record.id} as {stored.id}: {len(results)} result(s)", markup=False)


@import_app.command("csv-turns")
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


@golden_app.command("from-run")
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

    with _store(db) as store:
        record = store.get_run(run_ref)
        text = golden_from_run(
            record, store.results(record.id), case, persona=persona,
            repeat=None if repeat is None else repeat - 1, include_tools=not no_tools,
        )  # fmt: skip
    path = write_export({output.name: text}, output, force=force)
    out.print(f"wrote {path}", markup=False)


@app.command("compare")
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
    from simulator.analysis.compare import compare_runs
    from simulator.reports.compare_report import render_compare_html, render_compare_markdown
    from simulator.reports.compare_text import render_comparison_text

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


@app.command()
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

    from simulator.analysis.digest import build_digest, suggest_fixes
    from simulator.llm import LLMClient
    from simulator.models import ModelRoles
    from simulator.reports.digest_report import render_digest_markdown, render_digest_text

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


def main() -> None:
    """Entry point of the ``simulator`` console script."""
    app()


if __name__ == "__main__":  # pragma: no cover
    main()
