"""Human review of stored runs: record a person's verdict on a result, a step or a check (kept apart, never
changing the judge's), read a run's reviews and what they make of it (correctness as reviewed beside as judged),
measure the judge against them, and write them as a labels file for ``judge-check``."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING

from simulator.api._store import PathLike, open_store

if TYPE_CHECKING:
    from simulator.analysis.judge_check import JudgeCheckReport
    from simulator.analysis.review_labels import ReviewedRun
    from simulator.models.review import Review, RunReviews
    from simulator.store import RunStore

_KEYS_SHOWN = 12


def add_review(
    run: str, key: str, *, target: str, verdict: str, reason: str, reviewer: str, db: PathLike | None = None
) -> Review:
    """Record a person's review of one result of a stored run (``run``: an id, a unique prefix, ``latest`` or
    ``latest~N``) and return it. ``key`` is the result's plan key; ``target`` is ``result`` (verdict ``pass`` /
    ``fail``), ``step N`` (1-based) or a check's text as its score names it (``met`` / ``not_met``). A later
    review of the same target is kept beside the earlier ones and is the one that counts. A key, target or
    verdict that does not fit, or an empty reason or reviewer, is an InputError naming the choices."""
    from pydantic import ValidationError

    from simulator.analysis.reviewed import check_target
    from simulator.errors import InputError
    from simulator.models.review import Review

    for name, value in (("reason", reason), ("reviewer", reviewer)):
        if not value.strip():
            raise InputError(f"a review needs a {name}: give a non-empty --{name}")
    with open_store(db) as store:
        record = store.get_run(run)
        stored = store.result(record.id, key)
        if stored is None:
            keys = [item.key for item in record.plan]
            stored_keys = store.stored_keys(record.id, keys[:500]) if keys else set()
            choices = [k for k in keys if k in stored_keys][:_KEYS_SHOWN]
            more = " (and more)" if len(stored_keys) > _KEYS_SHOWN else ""
            listed = ", ".join(choices) + more if choices else "none: the run has no stored results yet"
            raise InputError(f"run {record.id} has no result with key {key!r}; its results: {listed}")
        check_target(record.id, stored, target.strip())
        try:
            review = Review(
                id=store.new_review_id(), run_id=record.id, key=key, target=target, verdict=verdict,
                reason=reason, reviewer=reviewer, created_at=datetime.now(UTC),
            )  # fmt: skip
        except ValidationError as exc:
            first = exc.errors()[0]
            where = ".".join(str(part) for part in first["loc"])
            message = str(first["msg"]).removeprefix("Value error, ")
            raise InputError(f"review of {key} ({target}): {where + ': ' if where else ''}{message}") from None
        store.add_review(review)
    return review


def reviews(run: str, *, db: PathLike | None = None) -> list[Review]:
    """Every review of a stored run, oldest first (history included: the newest of a target counts)."""
    with open_store(db) as store:
        return store.list_reviews(store.get_run(run).id)


def run_reviews(run: str, *, db: PathLike | None = None) -> RunReviews:
    """What a stored run's reviews make of it: each reviewed result's outcome as judged and as reviewed, and the
    run's counts and correctness both ways (the results are read a few at a time)."""
    from simulator.analysis.reviewed import run_reviews as build

    with open_store(db) as store:
        record = store.get_run(run)
        return build(record, store.iter_results(record.id), store.list_reviews(record.id))


def reviewed_runs(*, db: PathLike | None = None) -> dict[str, RunReviews]:
    """By run id, what the reviews make of every stored run that has any (:func:`run_reviews`); a run nobody
    reviewed is left out, and costs one shared query only."""
    from simulator.analysis.reviewed import run_reviews as build

    found: dict[str, RunReviews] = {}
    with open_store(db) as store:
        for run_id in sorted(store.reviewed_run_ids()):
            record = store.get_run(run_id)
            found[run_id] = build(record, store.iter_results(record.id), store.list_reviews(record.id))
    return found


@dataclass(frozen=True)
class ReviewTarget:
    """One thing of a stored result a person may review: its ``target`` (as :func:`add_review` takes it), what it
    is (``result``, ``step`` or ``check``), the judge's verdict on it, the verdicts a review may give, and the
    review of it that counts now (None when nobody reviewed it)."""

    target: str
    kind: str
    judged: str
    verdicts: tuple[str, ...]
    review: Review | None


def review_targets(run: str, key: str, *, db: PathLike | None = None) -> list[ReviewTarget]:
    """Everything of the result ``key`` of a stored run a review may name: the whole result, each step, each
    check, in that order, each with the judge's verdict and its current review. An unknown run or key is an
    InputError."""
    from simulator.analysis.reviewed import current_reviews
    from simulator.analysis.reviewed import review_targets as targets_of
    from simulator.errors import InputError
    from simulator.models.review import target_kind
    from simulator.reports import judged_verdict

    with open_store(db) as store:
        record = store.get_run(run)
        stored = store.result(record.id, key)
        if stored is None:
            raise InputError(f"run {record.id} has no result with key {key!r}")
        current = {review.target: review for review in current_reviews(store.list_reviews(record.id)).get(key, [])}
    return [
        ReviewTarget(
            target,
            target_kind(target),
            judged_verdict(stored, target),
            ("pass", "fail") if target_kind(target) == "result" else ("met", "not_met"),
            current.get(target),
        )
        for target in targets_of(stored)
    ]


def _reviewed_runs(store: RunStore, runs: Sequence[str]) -> list[ReviewedRun]:
    from simulator.analysis.review_labels import ReviewedRun

    found = []
    refs = list(runs) or [record.id for record in store.list_runs(limit=None)]
    for ref in refs:
        record = store.get_run(ref)
        found.append(ReviewedRun(record, store.results(record.id), store.list_reviews(record.id)))
    return found


def judge_check_reviews(runs: Sequence[str] = (), *, db: PathLike | None = None) -> JudgeCheckReport:
    """The judge's agreement with people's reviews of ``runs`` (every stored run when none is given): the
    reviews of steps and checks the judge model decided, compared with its stored verdicts; accuracy and
    Cohen's kappa per metric and overall, and every disagreement (the report ``judge_check`` gives for a
    labels file). No model is asked."""
    from simulator.analysis.review_labels import judge_check_from_reviews

    with open_store(db) as store:
        return judge_check_from_reviews(_reviewed_runs(store, runs))


def export_review_labels(run: str, path: PathLike, *, db: PathLike | None = None) -> list[str]:
    """Write a stored run's reviews as a labels file at ``path`` (YAML; ``simulator judge-check PATH`` reads it),
    each reviewed transcript in a folder beside it (``<name>-transcripts``). Returns the reviews the format has
    no place for (a whole result, a step, a deterministic check), each in words."""
    from simulator._files import write_file
    from simulator.analysis.review_labels import labels_from_reviews
    from simulator.loading import export_yaml

    target = Path(path)
    with open_store(db) as store:
        export = labels_from_reviews(_reviewed_runs(store, [run]), f"{target.stem}-transcripts")
    if not export.data["items"]:
        from simulator.errors import InputError

        raise InputError(f"run {run} has no review a labels file can hold: {'; '.join(export.left_out) or 'none'}")
    for name, text in export.transcripts.items():
        write_file(target.parent / name, text.encode("utf-8"))
    header = ["Reviews of stored runs as judge-check labels (simulator reviews RUN --export FILE)."]
    write_file(target, export_yaml(export.data, header=header).encode("utf-8"))
    return export.left_out
