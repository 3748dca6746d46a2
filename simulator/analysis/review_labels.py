"""Reviews as the judge's calibration set: agreement of the judge's stored verdicts with people's reviews, and
reviews written as a labels file that ``simulator judge-check FILE`` reads.

Only reviews of steps and checks whose judged score came from the judge model (source ``judge``) measure the
judge: a deterministic check or an engine step is not the judge's verdict. The stored verdict is compared as it
is (no model is asked again): answers are ``met`` / ``not_met`` (the judge's may also be ``unsure``, ``error``,
``n/a``), and agreement and Cohen's kappa are given per metric (hallucination, goal_satisfaction, expectation,
...) and overall, with every disagreement.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final

from simulator.analysis.judge_check import JudgeCheckReport, Judgement
from simulator.analysis.reviewed import current_reviews, matching_scores
from simulator.metrics import agreement
from simulator.models import normalize_reference
from simulator.models.review import Review
from simulator.models.run import RunRecord, StoredResult

__all__ = ["LabelsExport", "judge_check_from_reviews", "labels_from_reviews"]

_EXPECTATION: Final = "expectation: "


@dataclass(frozen=True)
class ReviewedRun:
    """A run with its results and its reviews, as :func:`judge_check_from_reviews` reads them."""

    record: RunRecord
    results: Sequence[StoredResult]
    reviews: Sequence[Review]


def judge_check_from_reviews(runs: Sequence[ReviewedRun]) -> JudgeCheckReport:
    """The judge's agreement with the reviews of ``runs`` (see the module docstring). A judgement's ``item``
    counts the reviewed results from 0, its ``transcript`` is ``RUN KEY``, its ``question`` ``METRIC: TARGET``."""
    report = JudgeCheckReport()
    kinds: dict[str, list[tuple[str, str]]] = {}
    item = -1
    for run in runs:
        by_key = current_reviews(run.reviews)
        for stored in run.results:
            mine = [review for review in by_key.get(stored.key, []) if review.kind != "result"]
            judged = [(review, score) for review in mine for score in matching_scores(stored, review.target)]
            judged = [(review, score) for review, score in judged if score.source == "judge"]
            if not judged:
                continue
            item += 1
            for review, score in judged:
                judgement = Judgement(
                    item, f"{run.record.id} {stored.key}", f"{score.metric}: {review.target}", review.verdict,
                    score.verdict, score.reason,
                )  # fmt: skip
                report.judgements.append(judgement)
                kinds.setdefault(score.metric, []).append((judgement.human, judgement.judge))
    report.by_question = {kind: agreement(pairs) for kind, pairs in kinds.items()}
    report.overall = agreement([(j.human, j.judge) for j in report.judgements])
    return report


@dataclass
class LabelsExport:
    """Reviews as a labels file: its data (``items``, each naming a transcript file and its suite), the
    transcripts to write beside it (file name relative to the labels file -> the result's JSON), and the reviews
    the format cannot hold (a result, a step, a deterministic check: each said in words)."""

    data: dict[str, Any]
    transcripts: dict[str, str] = field(default_factory=dict)
    left_out: list[str] = field(default_factory=list)


def labels_from_reviews(runs: Sequence[ReviewedRun], folder: str) -> LabelsExport:
    """The reviews of ``runs`` a labels file can hold (hallucination per turn, goal satisfaction, the case's own
    expectations), with the transcripts written under ``folder`` (relative to the labels file) and each suite
    named by its absolute path."""
    export = LabelsExport({"items": []})
    for run in runs:
        by_key = current_reviews(run.reviews)
        for stored in run.results:
            labels: dict[str, Any] = {}
            for review in by_key.get(stored.key, []):
                if not _label(stored, review, run.record, labels):
                    export.left_out.append(
                        f"run {run.record.id}, {stored.key}, {review.target}: a labels file has no place for it "
                        "(only hallucination per turn, goal satisfaction and the case's own expectations)"
                    )
            if not labels:
                continue
            name = f"{folder}/{run.record.id}-{len(export.transcripts) + 1}.json"
            export.transcripts[name] = stored.result.model_dump_json(indent=2)
            # The path as the run was given it: from the folder it was run in, it names the same file.
            suite = Path(run.record.snapshot[stored.suite].path).resolve()
            if not suite.is_file():
                export.left_out.append(
                    f"run {run.record.id}, {stored.key}: its suite {suite} is not there; the labels name it all the "
                    "same (export from the folder the run was made in, or edit `suite:`)"
                )
            item = {"transcript": name, "suite": str(suite), "case": stored.case, "labels": labels}
            export.data["items"].append(item)
    return export


def _label(stored: StoredResult, review: Review, record: RunRecord, labels: dict[str, Any]) -> bool:
    """Put ``review`` into ``labels`` in the labels file's words; False when the format has no place for it."""
    if review.kind != "check":
        return False
    scores = matching_scores(stored, review.target)
    metric = scores[0].metric if scores else ""
    if metric == "hallucination" and scores[0].turn is not None:
        # A hallucination label says whether the turn hallucinated: a met check is a turn that did not.
        labels.setdefault("hallucination", {})[str(scores[0].turn)] = 0 if review.verdict == "met" else 1
        return True
    if metric == "goal_satisfaction":
        labels["goal_satisfaction"] = 1 if review.verdict == "met" else 0
        return True
    if metric == "expectation" and review.target.startswith(_EXPECTATION):
        shown = review.target.removeprefix(_EXPECTATION)
        case = next((c for c in record.snapshot[stored.suite].suite.cases if c.name == stored.case), None)
        texts = [e.text for e in case.expectations if e.text] if case is not None else []
        for text in texts:
            if normalize_reference(text) == normalize_reference(shown) or text.startswith(shown.rstrip("…")):
                labels.setdefault("expectations", {})[text] = review.verdict
                return True
    return False
