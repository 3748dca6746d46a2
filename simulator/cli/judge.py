"""judge-check: how well the judge model agrees with labelled transcripts."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer
from rich.table import Table

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
from simulator.cli._output import EXIT_INVALID, _handles_errors, _print_json, err, out


@_handles_errors
def judge_check_command(
    file: Annotated[Path, typer.Argument(help="YAML file of labelled transcripts (see judge_labels/demo.yaml).")],
    judge_model: JudgeModelOption = None,
    user_model: UserModelOption = None,
    models_file: ModelsFileOption = None,
    judge_api_base: JudgeApiBaseOption = None,
    user_api_base: UserApiBaseOption = None,
    agent_api_base: AgentApiBaseOption = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print the report as JSON.")] = False,
) -> None:
    """Score labelled transcripts with the judge model and report its agreement with the person who labelled
    them: accuracy and Cohen's kappa per question, and every disagreement with the judge's reason. The judge is
    the first item's suite's (models.judge), with the model options given here laid over it."""
    from dataclasses import asdict

    given = model_options(
        user_model=user_model, judge_model=judge_model, models_file=models_file, judge_api_base=judge_api_base,
        user_api_base=user_api_base, agent_api_base=agent_api_base,
    )  # fmt: skip
    unused = note_unused_roles(given, "judge-check")
    if unused:
        err.print(f"note: {unused}", markup=False)
    try:
        report = simulator.judge_check(file, judge_model=given.judge_model, models=given.models)
    except simulator.JudgeError as exc:
        err.print(f"error: {exc}", markup=False)
        raise typer.Exit(EXIT_INVALID) from None
    if as_json:
        payload = {
            "overall": _agreement_dict(report.overall),
            "by_question": {kind: _agreement_dict(a) for kind, a in report.by_question.items()},
            "judgements": [asdict(j) for j in report.judgements],
        }
        _print_json(payload)
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
