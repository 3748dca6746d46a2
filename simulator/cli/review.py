"""review and reviews: a person's verdict on a stored result, step or check, and a run's reviews."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

import simulator
from simulator.cli._output import EXIT_BELOW_BAR, DbOption, _handles_errors, _print_json, err, out


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
    fail_under: Annotated[
        float | None,
        typer.Option(
            "--fail-under", help="Exit 1 when correctness (%, 0-100) is below this: as judged, unless --reviewed."
        ),
    ] = None,
    reviewed: Annotated[
        bool, typer.Option("--reviewed", help="--fail-under holds correctness as reviewed to the bar.")
    ] = False,
    db: DbOption = None,
) -> None:
    """List a run's reviews (every one, oldest first; the newest of a target counts) and its correctness as
    judged and as reviewed."""
    if fail_under is not None and not 0 <= fail_under <= 100:
        raise simulator.InputError(f"--fail-under {fail_under:g} is not a percentage: give a number from 0 to 100")
    if export is not None:
        left_out = simulator.export_review_labels(run_ref, export, db=db)
        out.print(f"wrote {export}")
        for line in left_out:
            err.print(f"note: left out {line}")
        return
    summary = simulator.run_reviews(run_ref, db=db)
    if as_json:
        _print_json(summary.model_dump(mode="json"))
    elif not summary.reviews:
        out.print(f"run {summary.run_id} has no reviews yet (add one with `simulator review RUN KEY ...`)")
    else:
        _print_reviews(summary)
    if fail_under is not None:
        counted = summary.reviewed if reviewed else summary.judged
        correctness = (counted.correctness or 0.0) * 100
        if correctness < fail_under:
            how = "as reviewed" if reviewed else "as judged"
            err.print(f"correctness {how} {correctness:.1f}% is below --fail-under {fail_under:g}%")
            raise typer.Exit(EXIT_BELOW_BAR)


def _print_reviews(summary: simulator.RunReviews) -> None:
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
