"""A person's review of a stored result: their verdict beside the judge's, never in place of it.

A :class:`Review` names one thing of one result of one run (its ``target``): the whole ``result`` (verdict
``pass`` / ``fail``), a ``step N`` of a scenario or simulation (1-based; ``met`` / ``not_met``), or one check,
by the text of its score's ``check`` (``turn 1: hallucination``; ``met`` / ``not_met``). Reviews are kept apart
from the results and never change them; :class:`RunReviews` is what a run's reviews make of it: each reviewed
result's outcome as reviewed, and the run's correctness as reviewed beside the judged one.
"""

from __future__ import annotations

import re
from datetime import UTC, datetime
from typing import Final, Literal

from pydantic import Field, field_validator, model_validator

from simulator.models._base import DataModel, Text
from simulator.models.scores import Outcome
from simulator.models.summary import Counts

ReviewVerdict = Literal["pass", "fail", "met", "not_met"]
#: The target that reviews the whole result.
RESULT_TARGET: Final = "result"
_STEP: Final = re.compile(r"^step ([1-9][0-9]*)$")
_RESULT_VERDICTS: Final = ("pass", "fail")
_PART_VERDICTS: Final = ("met", "not_met")


def step_number(target: str) -> int | None:
    """The 1-based step number of a ``step N`` target; None for any other target."""
    found = _STEP.match(target)
    return int(found.group(1)) if found else None


def target_kind(target: str) -> Literal["result", "step", "check"]:
    """What a target names: the whole result, a step, or a check (by its text)."""
    if target == RESULT_TARGET:
        return "result"
    return "step" if step_number(target) is not None else "check"


class Review(DataModel):
    """One person's verdict on one result, step or check of a stored run, with their reason and name."""

    id: Text = Field(description="The review's own id (unique in the store).")
    run_id: Text
    key: Text = Field(description="The result's plan key.")
    target: Text = Field(
        description="`result`, `step N` (1-based) or a check's text as its score names it (`turn 1: hallucination`)."
    )
    verdict: ReviewVerdict = Field(description="pass / fail for a result; met / not_met for a step or a check.")
    reason: Text
    reviewer: Text
    created_at: datetime = Field(description="When it was recorded (UTC).")

    @field_validator("target", "reviewer")
    @classmethod
    def _one_line(cls, value: str) -> str:
        return value.strip()

    @field_validator("created_at")
    @classmethod
    def _utc(cls, value: datetime) -> datetime:
        return value.replace(tzinfo=UTC) if value.tzinfo is None else value.astimezone(UTC)

    @model_validator(mode="after")
    def _verdict_fits_target(self) -> Review:
        expected = _RESULT_VERDICTS if self.target == RESULT_TARGET else _PART_VERDICTS
        if self.verdict not in expected:
            what = "the whole result" if self.target == RESULT_TARGET else f"{target_kind(self.target)} {self.target!r}"
            raise ValueError(
                f"verdict {self.verdict!r} does not fit {what}: give {' or '.join(expected)} "
                f"({'pass/fail for a result, met/not_met for a step or a check'})"
            )
        return self

    @property
    def kind(self) -> Literal["result", "step", "check"]:
        """What the review is about: ``result``, ``step`` or ``check``."""
        return target_kind(self.target)

    def describe(self, judged: str) -> str:
        """``judge: pass · reviewer: fail — reason (name)``: the judge's verdict (``judged``) beside this one."""
        return f"judge: {judged} · reviewer: {self.verdict} — {self.reason} ({self.reviewer})"


class ReviewedResult(DataModel):
    """One reviewed result: its outcome as judged and as reviewed, and the reviews that count (the newest of each
    target), oldest first."""

    key: str
    judged: Outcome
    reviewed: Outcome
    reviews: list[Review] = Field(default_factory=list)


class RunReviews(DataModel):
    """What a run's reviews make of it: every review (history included, oldest first), each reviewed result's
    outcome as reviewed, and the run's counts and correctness as reviewed (a result nobody reviewed counts as
    judged). The judged figures are the run's own and never change."""

    run_id: str
    reviews: list[Review] = Field(default_factory=list)
    results: dict[str, ReviewedResult] = Field(default_factory=dict, description="By result key.")
    judged: Counts = Field(default_factory=Counts)
    reviewed: Counts = Field(default_factory=Counts)

    def current(self, key: str) -> list[Review]:
        """The reviews of result ``key`` that count (the newest of each target), oldest first."""
        found = self.results.get(key)
        return list(found.reviews) if found is not None else []

    def of(self, key: str, target: str) -> Review | None:
        """The review of ``target`` of result ``key`` that counts, if any."""
        return next((review for review in self.current(key) if review.target == target), None)
