"""A comparison of two runs as data: every case's change, the changed steps, correctness of both, McNemar's test.

Computed by :func:`simulator.analysis.compare.compare_runs` (where the definitions are), rendered by
:mod:`simulator.reports.compare_text` and :mod:`simulator.reports.compare_report`. Pure data.
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from simulator.models._base import DataModel
from simulator.models.scores import Outcome
from simulator.models.summary import Counts
from simulator.models.transcript import StepStatus

__all__ = [
    "ALPHA",
    "CaseDiff",
    "CaseRunSummary",
    "CaseStatus",
    "Change",
    "Comparison",
    "McNemar",
    "SettingDiff",
    "StepChange",
    "StepDiff",
]

#: The significance level McNemar's test is read at.
ALPHA = 0.05

#: A case's aggregated status over its repeats in one run (see :class:`CaseRunSummary`).
CaseStatus = Literal["pass", "fail", "unsure", "user_error"]
#: How a case changed from run A to run B; ``not_comparable`` when its results in the two runs are not measured
#: alike (see :attr:`CaseDiff.not_comparable`): it is neither a regression nor an improvement.
Change = Literal["regressed", "improved", "unchanged", "new", "removed", "not_comparable"]
#: How a step changed from run A to run B (``not_comparable`` as for cases).
StepChange = Literal["regressed", "improved", "not_comparable"]

#: The fewest discordant pairs for which some table can be significant at 0.05 (2 / 2^6 < 0.05 <= 2 / 2^5).
_MIN_SIGNIFICANT_N = 6


class CaseRunSummary(DataModel):
    """One case (suite, case, persona) in one run, over its repeats.

    ``outcomes`` are the repeats' outcomes in repeat order; ``passes`` counts ``pass``; ``pass_rate`` =
    passes / repeats (``repeats`` leaves out ``user_error`` repeats). ``status`` is ``user_error`` when every
    repeat is one, ``pass`` when every other repeat passed, ``fail`` when any repeat failed or errored,
    ``unsure`` otherwise.
    """

    outcomes: list[Outcome]
    repeats: int
    passes: int
    pass_rate: float
    status: CaseStatus

    @property
    def passed(self) -> bool:
        """Whether the case passes in this run: every repeat passed."""
        return self.status == "pass"


class StepDiff(DataModel):
    """One step whose completion changed between the runs, with B's reason when it regressed.

    ``complete_a`` / ``recorded_a`` (and B's): repeats in which the step was complete / repeats that record
    the step. ``b_status``, ``b_rationale`` and ``b_repeat`` (0-based, as stored; shown from 1) are those of the
    first B repeat where the step was not complete; they are set for regressed steps only. ``a_status`` is the
    status of the first A repeat where the step was not complete; it is set for improved steps only. A step whose
    completion changed only because a judge decided it in one run and not in the other is ``not_comparable``:
    ``would_be`` says which way it moved (``regressed`` or ``improved``) and ``not_comparable`` why.
    """

    index: int
    label: str
    change: StepChange
    complete_a: int
    recorded_a: int
    complete_b: int
    recorded_b: int
    b_status: StepStatus | None = None
    b_rationale: str = ""
    b_repeat: int | None = None
    a_status: StepStatus | None = None
    would_be: Literal["regressed", "improved"] | None = None
    not_comparable: str = ""


class CaseDiff(DataModel):
    """One case identity and how it changed from A to B.

    ``a`` / ``b`` summarise the case in each run (None when the case is not in that run).
    ``pass_rate_change`` = ``b.pass_rate - a.pass_rate`` for a case in both runs, else None. ``steps`` are the
    changed steps (regressed first, then improved, each by step index), only for cases in both runs.
    ``b_reasons`` are the reasons of the first B repeat that did not pass (empty if every B repeat passed).
    A case in both runs whose results are not measured alike is ``not_comparable``: ``not_comparable`` says why
    (the case's definition differs between the runs' snapshots, or a check that decides the change was judged
    in one run only) and ``would_be`` the change it would otherwise read as.
    """

    suite: str
    case: str
    persona: str | None = None
    change: Change
    a: CaseRunSummary | None = None
    b: CaseRunSummary | None = None
    pass_rate_change: float | None = None
    steps: list[StepDiff] = Field(default_factory=list)
    b_reasons: list[str] = Field(default_factory=list)
    would_be: Literal["regressed", "improved", "unchanged"] | None = None
    not_comparable: str = ""

    @property
    def regressed_steps(self) -> list[StepDiff]:
        """The steps complete in A and not in B."""
        return [step for step in self.steps if step.change == "regressed"]

    @property
    def improved_steps(self) -> list[StepDiff]:
        """The steps not complete in A and complete in B."""
        return [step for step in self.steps if step.change == "improved"]


class SettingDiff(DataModel):
    """One setting of the runs that differs between A and B, each value in words (``none`` when unset)."""

    setting: str
    a: str
    b: str


class McNemar(DataModel):
    """McNemar's exact test on paired pass / not-pass results (see :func:`mcnemar_exact`)."""

    b: int = Field(description="Discordant pairs that passed in A and not in B.")
    c: int = Field(description="Discordant pairs that did not pass in A and passed in B.")
    n: int = Field(description="b + c, the discordant pairs.")
    p_value: float
    significant: bool = Field(description=f"p < {ALPHA}.")

    def sentence(self) -> str:
        """The test's result in words: significant or not at 0.05, in which direction, and why not."""
        p = _p_text(self.p_value)
        if self.significant:
            direction = "B is worse than A" if self.b > self.c else "B is better than A"
            return f"Significant at {ALPHA}: p = {p} < {ALPHA}; {direction} on the shared cases."
        sentence = f"Not significant at {ALPHA}: p = {p} >= {ALPHA}."
        if self.n == 0:
            sentence += " No shared case changed between passing and not passing."
        elif self.n < _MIN_SIGNIFICANT_N:
            sentence += (
                f" With only {self.n} discordant pair{'s' if self.n != 1 else ''}, no difference can be significant"
                f" (at least {_MIN_SIGNIFICANT_N} are needed)."
            )
        return sentence


class Comparison(DataModel):
    """Run B against baseline run A: every case's change, correctness of both, McNemar's test.

    ``cases`` lists every case identity of either run: regressed first, then improved, new, removed and
    not comparable and unchanged, each group sorted by (suite, case, persona) with no persona first.
    ``settings`` lists what differs between the runs' settings (models, api bases, tools, agent, suites,
    thresholds, seed, versions, cache, ...), shown before the cases. ``correctness_a`` / ``correctness_b``
    count the repeats of the comparable cases in both runs (not the new, removed or not comparable ones);
    ``correctness_change`` is B's correctness minus A's (None if either has nothing to count). ``mcnemar``
    pairs the comparable cases in both runs.
    The properties (:attr:`has_regressions`, :attr:`regressed`, ...) are derived from ``cases`` and not
    dumped, so the JSON form validates back into a :class:`Comparison` unchanged.
    """

    run_a: str
    run_b: str
    correctness_a: Counts
    correctness_b: Counts
    correctness_change: float | None = None
    mcnemar: McNemar
    cases: list[CaseDiff] = Field(default_factory=list)
    settings: list[SettingDiff] = Field(default_factory=list)

    @property
    def has_regressions(self) -> bool:
        """Whether any case passed in A and does not pass in B (a regressed case)."""
        return any(case.change == "regressed" for case in self.cases)

    def with_change(self, change: Change) -> list[CaseDiff]:
        """The cases with this change, in listing order."""
        return [case for case in self.cases if case.change == change]

    @property
    def regressed(self) -> list[CaseDiff]:
        """Cases that passed in A and do not pass in B."""
        return self.with_change("regressed")

    @property
    def improved(self) -> list[CaseDiff]:
        """Cases that did not pass in A and pass in B."""
        return self.with_change("improved")

    @property
    def new(self) -> list[CaseDiff]:
        """Cases only in B."""
        return self.with_change("new")

    @property
    def removed(self) -> list[CaseDiff]:
        """Cases only in A."""
        return self.with_change("removed")

    @property
    def unchanged(self) -> list[CaseDiff]:
        """Cases in both runs that pass in both or in neither."""
        return self.with_change("unchanged")

    @property
    def comparable(self) -> list[CaseDiff]:
        """Cases in both runs measured alike: regressed, improved or unchanged (what correctness and McNemar count)."""
        return [case for case in self.cases if case.change in ("regressed", "improved", "unchanged")]

    @property
    def not_comparable(self) -> list[CaseDiff]:
        """Cases in both runs whose results are not measured alike: never a regression or an improvement."""
        return self.with_change("not_comparable")


def _p_text(p: float) -> str:
    """A p-value as every view writes it."""
    return f"{p:.4g}"
