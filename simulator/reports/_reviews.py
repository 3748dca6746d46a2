"""People's reviews as every report writes them: beside the judge's verdict, never in place of it
(``judge: pass · reviewer: fail — reason (name)``)."""

from __future__ import annotations

from collections.abc import Sequence

from simulator.models.review import RESULT_TARGET, Review, step_number
from simulator.models.run import StoredResult
from simulator.reports.figures import percent

__all__ = ["judged_verdict", "review_texts", "reviewed_correctness_line", "reviews_cell"]


def judged_verdict(stored: StoredResult, target: str) -> str:
    """What the judge (the run) decided about ``target``: the outcome, a step's verdict, or a check's."""
    if target == RESULT_TARGET:
        return stored.counted_outcome
    number = step_number(target)
    if number is not None:
        step = next((s for s in stored.result.transcript.steps if s.index == number - 1), None)
        return step.verdict if step is not None and step.verdict else "?"
    score = next((score for score in stored.result.scores if score.check == target), None)
    return score.verdict if score is not None else "?"


def review_texts(stored: StoredResult) -> list[str]:
    """One text per review of the result that counts: ``TARGET — judge: X · reviewer: Y — reason (name)``."""
    return [f"{review.target} — {review.describe(judged_verdict(stored, review.target))}" for review in stored.reviews]


def reviews_cell(reviews: Sequence[Review]) -> str:
    """The reviews of one result in one spreadsheet cell, one per line: ``TARGET: verdict — reason (name)``."""
    return "\n".join(f"{r.target}: {r.verdict} — {r.reason} ({r.reviewer})" for r in reviews)


def reviewed_correctness_line(judged: float | None, reviewed: float | None, reviewed_results: int) -> str:
    """``as judged 58.3% · as reviewed 66.7% (3 results reviewed)``."""
    plural = "s" if reviewed_results != 1 else ""
    return f"as judged {percent(judged)} · as reviewed {percent(reviewed)} ({reviewed_results} result{plural} reviewed)"
