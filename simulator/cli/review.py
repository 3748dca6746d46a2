"""review and reviews: a person's verdict on a stored result, step or check, and a run's reviews."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

import simulator
from simulator.cli._output import DbOption, _handles_errors, _print_json, err, out


@_handles_errors
def review_command(
    run_ref: Annotated[str, typer.Argument(metavar="RUN", help="The run: an id, a unique prefix, latest, latest~N.")],
    key: Annotated[
        str,
        typer.Argument(
            help="The result's plan key, as `run --json` and the JSON report show it (a wrong one lists them)."
        ),
    ],
    target: Annotated[
        str,
        typer.Option(
            "--target", help="result, `step N` (1-based), or a check's text as shown (`turn 1: hallucination`)."
        ),
    ] = "result",
    verdict: Annotated[
        str, typer.Option("--verdict", help="pass or fail for a result; met or not_met for a step or a check.")
    ] = "",
    reason: Annotated[str, typer.Option("--reason", help="Why: shown beside the judge's verdict.")] = "",
    reviewer: Annotated[str, typer.Option("--reviewer", help="Your name.")] = "",
    db: DbOption = None,
) -> None:
    """Record your verdict on one result of a stored run, one of its steps or one of its checks. It is kept
    apart and never changes the judge's verdict: reports show both, and correctness as reviewed beside as
    judged. A later review of the same target is the one that counts (the earlier ones are kept)."""
    if not verdict:
        raise simulator.InputError("give --verdict: pass or fail for a result, met or not_met for a step or a check")
    review = simulator.add_review(run_ref, key, target=target, verdict=verdict, reason=reason, reviewer=reviewer, db=db)
    out.print(f"review {review.id} of {review.key} ({review.target}) in run {review.run_id}: {review.verdict}")


@_handles_errors
def reviews_command(
    run_ref: Annotated[str, typer.Argument(metavar="RUN", help="The run: an id, a unique prefix, latest, latest~N.")],
    export: Annotated[
        Path | None,
        typer.Option(
            "--export",
            help="Write the reviews as a labels file (YAML) that `simulator judge-check FILE` reads, the transcripts "
            "in a folder beside it.",
        ),
    ] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print the reviews and what they make of the run.")] = False,
    db: DbOption = None,
) -> None:
    """List a run's reviews (every one, oldest first; the newest of a target counts) and its correctness as
    judged and as reviewed."""
    if export is not None:
        left_out = simulator.export_review_labels(run_ref, export, db=db)
        out.print(f"wrote {export}")
        for line in left_out:
            err.print(f"note: left out {line}")
        return
    summary = simulator.run_reviews(run_ref, db=db)
    if as_json:
        _print_json(summary.model_dump(mode="json"))
        return
    if not summary.reviews:
        out.print(f"run {summary.run_id} has no reviews yet (add one with `simulator review RUN KEY ...`)")
        return
    for review in summary.reviews:
        current = summary.of(review.key, review.target) == review
        mark = "" if current else " (replaced by a newer review)"
        out.print(
            f"{review.created_at:%Y-%m-%d %H:%M} {review.key} · {review.target}: {review.verdict} — {review.reason} "
            f"({review.reviewer}){mark}"
        )
    out.print(
        f"Correctness as judged {simulator.percent(summary.judged.correctness)}, as reviewed "
        f"{simulator.percent(summary.reviewed.correctness)} ({len(summary.results)} result(s) reviewed)"
    )
