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
from simulator.cli._output import EXIT_INVALID, DbOption, _handles_errors, _print_json, err, out


@_handles_errors
def judge_check_command(
    sources: Annotated[
        list[str] | None,
        typer.Argument(
            metavar="FILE | RUN...",
            help="YAML file of labelled transcripts (see judge_labels/demo.yaml); with --from-reviews, the runs whose "
            "reviews to use (none: every stored run).",
        ),
    ] = None,
    from_reviews: Annotated[
        bool,
        typer.Option(
            "--from-reviews",
            help="Measure the judge against people's reviews (`simulator review`) of the checks and steps it "
            "decided, in stored runs: its stored verdicts are compared, no model is asked.",
        ),
    ] = False,
    db: DbOption = None,
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
    the first item's suite's (models.judge), with the model options given here laid over it. With
    --from-reviews, the reviews people recorded of stored runs are the labels instead."""
    from dataclasses import asdict

    if from_reviews:
        report = simulator.judge_check_reviews(sources or [], db=db)
        title = f"Judge agreement with the reviews of {', '.join(sources) if sources else 'every stored run'}"
    else:
        if not sources or len(sources) != 1:
            err.print("error: give one labels file (YAML), or --from-reviews [RUN...]", markup=False)
            raise typer.Exit(EXIT_INVALID)
        given = model_options(
            user_model=user_model, judge_model=judge_model, models_file=models_file, judge_api_base=judge_api_base,
            user_api_base=user_api_base, agent_api_base=agent_api_base,
        )  # fmt: skip
        report = _from_labels(Path(sources[0]), given)
        title = f"Judge agreement with the labels in {sources[0]}"
    if as_json:
        payload = {
            "overall": _agreement_dict(report.overall),
            "by_question": {kind: _agreement_dict(a) for kind, a in report.by_question.items()},
            "judgements": [asdict(j) for j in report.judgements],
        }
        _print_json(payload)
        return
    table = Table(title=title, title_justify="left")
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


def _from_labels(file: Path, given: simulator.ModelOptions) -> simulator.JudgeCheckReport:
    unused = note_unused_roles(given, "judge-check")
    if unused:
        err.print(f"note: {unused}", markup=False)
    try:
        return simulator.judge_check(file, judge_model=given.judge_model, models=given.models)
    except simulator.JudgeError as exc:
        err.print(f"error: {exc}", markup=False)
        raise typer.Exit(EXIT_INVALID) from None


def _fraction(value: float | None) -> str:
    return "–" if value is None else f"{value:.2f}"


def _agreement_dict(result: Any) -> dict[str, Any] | None:
    if result is None:
        return None
    return {"n": result.n, "accuracy": result.accuracy, "cohen_kappa": result.cohen_kappa}
