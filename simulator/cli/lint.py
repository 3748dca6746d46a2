"""lint (and validate --lint): what makes a suite unwinnable or meaningless, found before anything runs."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

import simulator
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
    EXIT_INVALID,
    JsonOption,
    _handles_errors,
    _plural,
    _print_config_errors,
    _print_json,
    err,
    out,
)

if TYPE_CHECKING:
    from simulator import ModelOptions

StrictOption = Annotated[bool, typer.Option("--strict", help="Fail (exit 1) on warnings too, not only on errors.")]
IgnoreOption = Annotated[
    list[str] | None,
    typer.Option("--ignore", metavar="RULE", help="Skip this rule (repeat for several), e.g. --ignore two-goals."),
]


def lint_models(
    *,
    judge_model: str | None,
    user_model: str | None,
    models_file: Path | None,
    judge_api_base: str | None,
    user_api_base: str | None,
    agent_api_base: str | None,
) -> ModelOptions:
    """The model options of ``lint`` (and ``validate --lint``): read, checked, and a note for roles it never asks."""
    given = model_options(
        user_model=user_model, judge_model=judge_model, models_file=models_file, judge_api_base=judge_api_base,
        user_api_base=user_api_base, agent_api_base=agent_api_base,
    )  # fmt: skip
    unused = note_unused_roles(given, "lint")
    if unused:
        err.print(f"note: {unused}", markup=False)
    return given


@_handles_errors
def lint_command(
    paths: Annotated[list[Path], typer.Argument(help="Suite files, hosted evals files or folders holding them.")],
    as_json: JsonOption = False,
    strict: StrictOption = False,
    ignore: IgnoreOption = None,
    judge_model: JudgeModelOption = None,
    user_model: UserModelOption = None,
    models_file: ModelsFileOption = None,
    judge_api_base: JudgeApiBaseOption = None,
    user_api_base: UserApiBaseOption = None,
    agent_api_base: AgentApiBaseOption = None,
) -> None:
    """Find what makes a simulation unwinnable or meaningless before any model is called: facts the user is
    never given, goals that ask two things, criteria any reply meets, say lines beyond max_turns, unreachable
    steps, contradicting checks, undeclared tools, duplicate cases. Exit 1 on an error finding (--strict: on a
    warning too), 2 on invalid files. With --judge-model (or a judge model in --models) that model is also asked,
    one request per suite, where the suite is ambiguous, with the suite's judge settings and the model options
    laid over them; its findings are labelled model suggestions (info). Without it nothing is sent anywhere."""
    given = lint_models(
        judge_model=judge_model, user_model=user_model, models_file=models_file, judge_api_base=judge_api_base,
        user_api_base=user_api_base, agent_api_base=agent_api_base,
    )  # fmt: skip
    run_lint(paths, as_json=as_json, strict=strict, models=given, ignore=ignore or [])


def run_lint(
    paths: Sequence[Path], *, as_json: bool, strict: bool, models: ModelOptions, ignore: Sequence[str] = ()
) -> None:
    """Lint ``paths``, print the findings (text or JSON) and exit with the lint's code; the suites are also
    reviewed by the judge model when ``models`` names one."""
    linted = simulator.lint(paths, ignore=ignore, judge_model=models.judge_model, models=models.models)
    report, model_error = linted.report, linted.model_error
    code = linted.exit_code(strict=strict)
    counts = report.counts()
    if as_json:
        _print_json(
            {
                "valid": not report.errors,
                "files": [str(path) for path in report.files],
                "suites": len(report.suites),
                "counts": counts,
                "rules": {
                    rule.id: {"severity": rule.severity, "summary": rule.summary} for rule in linted.rules.values()
                },
                "findings": [finding.as_dict() for finding in report.findings],
                "model_error": model_error,
                "errors": [
                    {"file": e.file, "line": e.line, "column": e.column, "key": e.key_path, "message": e.message}
                    for e in report.errors
                ],
            }
        )
        if code:
            raise typer.Exit(code)
        return
    if report.errors:
        _print_config_errors(report.errors)
        bad_files = len({e.file for e in report.errors})
        out.print(
            f"Found {_plural(len(report.errors), 'error')} in {_plural(bad_files, 'file')}: fix them, then lint again.",
            markup=False,
        )
        raise typer.Exit(EXIT_INVALID)
    _print_findings(report.findings)
    summary = f"{_plural(counts['error'], 'error')}, {_plural(counts['warning'], 'warning')}, {counts['info']} info"
    files = len({f.file for f in report.findings})
    where = f" in {_plural(files, 'file')}" if report.findings else ""
    out.print(f"Linted {_plural(len(report.suites), 'suite')}: {summary}{where}.", markup=False)
    if model_error:
        err.print(f"error: {model_error}", markup=False)
    elif code:
        failing = "errors or warnings (--strict)" if strict else "errors"
        err.print(f"lint failed: fix the {failing} above.", markup=False)
    if code:
        raise typer.Exit(code)


def _print_findings(findings: Sequence[Any]) -> None:
    """Findings grouped by file, each with its fix."""
    current: str | None = None
    for finding in findings:
        if finding.file != current:
            if current is not None:
                out.print("", markup=False)
            current = finding.file
            out.print(current, style="bold", markup=False)
        out.print(f"  {finding.render()}", markup=False)
        out.print(f"      fix: {finding.fix}", markup=False)
    if findings:
        out.print("", markup=False)
