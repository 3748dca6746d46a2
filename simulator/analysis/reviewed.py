"""Results as reviewed: what people's reviews make of a run, beside what the judge decided.

A result's outcome as reviewed is the reviewer's ``pass`` / ``fail`` when the whole result was reviewed; else the
outcome decided again by the run's own rule (:func:`simulator.runner.decide_outcome`) with every reviewed step's
and check's verdict in place of the judged one (a score keeps whether it is required); else the judged outcome.
Of several reviews of one target (history is kept), the newest counts. The judged figures never change.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Final

from simulator.errors import InputError
from simulator.metrics import counts
from simulator.models.review import RESULT_TARGET, Review, ReviewedResult, RunReviews, step_number, target_kind
from simulator.models.run import RunRecord, StoredResult
from simulator.models.scores import Outcome, Score
from simulator.runner import decide_outcome

__all__ = [
    "as_reviewed",
    "current_reviews",
    "judged_outcome",
    "matching_scores",
    "review_targets",
    "reviewed_outcome",
    "run_reviews",
    "with_reviews",
]

_SHOWN: Final = 40


def judged_outcome(stored: StoredResult) -> Outcome:
    """The outcome the run's totals count for a result (:attr:`StoredResult.counted_outcome`)."""
    return stored.counted_outcome


def current_reviews(reviews: Iterable[Review]) -> dict[str, list[Review]]:
    """By result key, the reviews that count: the newest of each target (reviews in store order, oldest
    first), in the order their targets were first reviewed."""
    newest: dict[tuple[str, str], Review] = {}
    for review in reviews:
        newest.pop((review.key, review.target), None)  # re-inserted: a target's newest review comes last
        newest[(review.key, review.target)] = review
    by_key: dict[str, list[Review]] = {}
    for (key, _), review in newest.items():
        by_key.setdefault(key, []).append(review)
    return by_key


def matching_scores(stored: StoredResult, target: str) -> list[Score]:
    """The scores a step or check target names: a step's ``goal_achievement`` scores, or every score with
    that check text."""
    number = step_number(target)
    if number is not None:
        return [s for s in stored.result.scores if s.metric == "goal_achievement" and s.step == number - 1]
    return [score for score in stored.result.scores if score.check == target]


def reviewed_outcome(stored: StoredResult, reviews: Sequence[Review], *, count_user_errors: bool) -> Outcome:
    """The result's outcome as reviewed (see the module docstring); ``reviews`` are the ones that count."""
    whole = next((review for review in reviews if review.target == RESULT_TARGET), None)
    if whole is not None:
        return "pass" if whole.verdict == "pass" else "fail"
    parts = [review for review in reviews if review.target != RESULT_TARGET]
    if not parts:
        return judged_outcome(stored)
    verdicts: dict[int, str] = {}
    for review in parts:
        for score in matching_scores(stored, review.target):
            verdicts[id(score)] = review.verdict
    scores = [
        score.model_copy(update={"verdict": verdicts[id(score)]}) if id(score) in verdicts else score
        for score in stored.result.scores
    ]
    result = stored.result
    outcome, _ = decide_outcome(result.transcript, scores, result.fidelity, count_user_errors=count_user_errors)
    return outcome


def run_reviews(record: RunRecord, results: Iterable[StoredResult], reviews: Sequence[Review]) -> RunReviews:
    """What ``reviews`` make of the run: each reviewed result's outcome as reviewed, and the run's counts and
    correctness as judged and as reviewed (``results`` read once, one at a time)."""
    by_key = current_reviews(reviews)
    judged: list[Outcome] = []
    reviewed: list[Outcome] = []
    found: dict[str, ReviewedResult] = {}
    for stored in results:
        outcome = judged_outcome(stored)
        judged.append(outcome)
        mine = by_key.get(stored.key)
        if not mine:
            reviewed.append(outcome)
            continue
        after = reviewed_outcome(stored, mine, count_user_errors=record.settings.count_user_errors)
        reviewed.append(after)
        found[stored.key] = ReviewedResult(key=stored.key, judged=outcome, reviewed=after, reviews=mine)
    return RunReviews(
        run_id=record.id, reviews=list(reviews), results=found, judged=counts(judged), reviewed=counts(reviewed)
    )


def with_reviews(
    record: RunRecord, results: Sequence[StoredResult], summary: RunReviews
) -> tuple[RunRecord, list[StoredResult]]:
    """The run and its results as a report shows them with reviews: each reviewed result with its reviews that
    count and its outcome as reviewed, the summary with the counts as reviewed. Unchanged without reviews."""
    if not summary.reviews:
        return record, list(results)
    marked = []
    for stored in results:
        found = summary.results.get(stored.key)
        update = {"reviews": found.reviews, "reviewed_outcome": found.reviewed} if found is not None else {}
        marked.append(stored.model_copy(update=update) if update else stored)
    if record.totals is not None:
        record = record.model_copy(update={"totals": record.totals.model_copy(update={"reviewed": summary.reviewed})})
    return record, marked


def as_reviewed(
    record: RunRecord, results: Sequence[StoredResult], reviews: Sequence[Review]
) -> tuple[RunRecord, list[StoredResult]]:
    """The run as if the judge had decided what people reviewed: each reviewed result with its outcome as
    reviewed, and no stored summary (a comparison computes it from these results). Unchanged without reviews."""
    if not reviews:
        return record, list(results)
    summary = run_reviews(record, results, reviews)
    changed = []
    for stored in results:
        found = summary.results.get(stored.key)
        if found is None:
            changed.append(stored)
            continue
        result = stored.result.model_copy(update={"outcome": found.reviewed, "trusted": None})
        changed.append(stored.model_copy(update={"outcome": found.reviewed, "result": result}))
    return record.model_copy(update={"totals": None}), changed


def review_targets(stored: StoredResult) -> list[str]:
    """Every target a review of this result may name: ``result``, each ``step N``, each check's text."""
    steps = [f"step {outcome.index + 1}" for outcome in stored.result.transcript.steps]
    checks = dict.fromkeys(score.check for score in stored.result.scores if score.check.strip())
    return [RESULT_TARGET, *steps, *(check for check in checks if check not in steps)]


def check_target(run_id: str, stored: StoredResult, target: str) -> None:
    """An InputError naming the choices when ``target`` is not something of this result to review."""
    targets = review_targets(stored)
    if target in targets:
        return
    shown = "; ".join(targets[:_SHOWN]) + (f" (+{len(targets) - _SHOWN} more)" if len(targets) > _SHOWN else "")
    what = "step" if target_kind(target) == "step" else "target"
    raise InputError(f"result {stored.key!r} of run {run_id} has no {what} {target!r}; choose one of: {shown}")
