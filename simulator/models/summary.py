"""A run's summary: outcome counts, usage per role, metric summaries and repeat statistics. Pure data.

:mod:`simulator.metrics` computes it once, when a run's results are stored (``metrics.run_summary``); the
store keeps it with the run record; every report, comparison and digest reads it instead of adding up the
results again. The definitions of every figure are those of :mod:`simulator.metrics`.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Literal

from pydantic import Field, model_validator

from simulator.models._base import DataModel
from simulator.models.coverage import RunCoverage
from simulator.models.scores import CaseResult, Outcome
from simulator.models.transcript import Usage

#: How a case behaves over repeated runs: every run passed, none did, or some did.
RepeatLabel = Literal["stable", "flaky", "broken"]

#: The version of what :class:`RunSummary` holds; 0 is a summary written before it held metric, case and suite
#: summaries (counts, usage and duration only): a reader recomputes such a summary from the results.
SUMMARY_VERSION = 1


class Counts(DataModel):
    """How many conversations had each outcome, and correctness = passed / (total - user_error).

    ``failed`` counts only ``fail``; errors are counted apart so they are never hidden, but correctness counts
    them as not passed (as ``unsure``). ``user_error`` (a failure caused by the simulated user) is counted apart
    and left out of correctness: it says nothing about the agent (a run with ``--count-user-errors`` stores
    those cases as ``fail`` instead). ``total`` and ``correctness`` always follow from the five counts: a
    stored value that disagrees with them (a file changed by hand) is replaced, so a reader can trust them.
    """

    total: int = 0
    passed: int = Field(default=0, ge=0)
    failed: int = Field(default=0, ge=0)
    error: int = Field(default=0, ge=0)
    unsure: int = Field(default=0, ge=0)
    user_error: int = Field(default=0, ge=0)
    correctness: float | None = None

    @model_validator(mode="after")
    def _derived(self) -> Counts:
        self.total = self.passed + self.failed + self.error + self.unsure + self.user_error
        judged = self.total - self.user_error
        self.correctness = self.passed / judged if judged else None
        return self

    def count(self, outcome: Outcome) -> int:
        """How many conversations had ``outcome``."""
        return {
            "pass": self.passed,
            "fail": self.failed,
            "error": self.error,
            "unsure": self.unsure,
            "user_error": self.user_error,
        }[outcome]


class PersonaFidelity(DataModel):
    """How well the simulated user played one persona over a run (:func:`persona_fidelity`).

    ``user_turns`` counts the turns the user model wrote (scripted lines are not checked); ``flagged_turns``
    those with at least one finding (an ending without a message counts as a turn of its own when flagged);
    ``rate`` = (user_turns - flagged_turns) / user_turns, None without model-written turns; ``findings`` counts
    findings by kind; ``user_errors`` the conversations whose failure was put down to the user.
    """

    persona: str | None = None
    conversations: int = 0
    user_turns: int = 0
    flagged_turns: int = 0
    rate: float | None = None
    findings: dict[str, int] = Field(default_factory=dict)
    user_errors: int = 0


def persona_fidelity(results: Iterable[CaseResult]) -> list[PersonaFidelity]:
    """The simulated user's fidelity per persona over ``results`` (golden cases, which have no simulated user,
    left out), personas in the order first met.

    Per persona: ``conversations``; ``user_turns`` = the results' ``user_turns_checked`` added up;
    ``flagged_turns`` = distinct (conversation, turn) pairs with a finding; ``rate`` = (user_turns -
    flagged_turns) / user_turns (None without model-written turns; never below 0); ``findings`` = findings by
    kind, in the order first met; ``user_errors`` = results with outcome ``user_error``.
    """
    tallies: dict[str | None, PersonaFidelity] = {}
    for result in results:
        if result.kind == "golden":
            continue  # fixed turns: no simulated user played anyone
        tally = tallies.setdefault(result.persona, PersonaFidelity(persona=result.persona))
        tally.conversations += 1
        tally.user_turns += result.user_turns_checked
        tally.flagged_turns += len({finding.turn for finding in result.fidelity})
        for finding in result.fidelity:
            tally.findings[finding.kind] = tally.findings.get(finding.kind, 0) + 1
        tally.user_errors += result.outcome == "user_error"
    for tally in tallies.values():
        if tally.user_turns:
            tally.rate = max(0, tally.user_turns - tally.flagged_turns) / tally.user_turns
    return list(tallies.values())


class FaultOutcomes(Counts):
    """The conversations in which one injected fault (``faults:``) answered a call of one tool, and their outcomes.

    ``tool`` is the tool called; ``fault`` the entry and its effect as the call's record says it (``suite
    faults[0]: error 'database down' (rate 0.3)``); ``calls`` how many calls it answered; the counts (``total``:
    the conversations) are those of the conversations it happened in, each counted once.
    """

    tool: str
    fault: str
    calls: int = 0


class MetricSummary(DataModel):
    """Verdict counts and mean value of one metric over a run's scores (:func:`simulator.metrics.metric_summary`).

    ``count`` = met + not_met + unsure + error + not_applicable (``not_applicable`` counts verdict ``"n/a"``);
    ``mean`` is the mean of the scores' values where not None (None when no score has one); ``values`` is how
    many values that mean is over.
    """

    metric: str
    count: int = 0
    met: int = 0
    not_met: int = 0
    unsure: int = 0
    error: int = 0
    not_applicable: int = 0
    mean: float | None = None
    values: int = 0


class RepeatStats(DataModel):
    """One case run k times (:func:`simulator.metrics.repeat_stats`): passes, pass rate, observed pass@k and
    pass^k, the 95% Wilson interval and a label. Every field but ``k`` and ``passes`` is None when k = 0."""

    k: int
    passes: int
    pass_rate: float | None = None
    pass_at_k: float | None = None
    pass_hat_k: float | None = None
    wilson: tuple[float, float] | None = None
    label: RepeatLabel | None = None


class CaseSummary(DataModel):
    """One case (suite index, case, persona) of a run over its repeats: outcomes in repeat order, statistics."""

    suite: int
    case: str
    persona: str | None = None
    outcomes: list[Outcome] = Field(default_factory=list)
    stats: RepeatStats

    @property
    def key(self) -> tuple[int, str, str | None]:
        """``(suite, case, persona)``: the case's identity in its run."""
        return self.suite, self.case, self.persona


class SuiteSummary(Counts):
    """One suite of a run (by its index in the snapshot): its outcome counts and its conversations' seconds."""

    suite: int
    duration_s: float = 0.0


class RunSummary(Counts):
    """The run's figures, computed once when its results are stored: what every report reads in aggregate.

    The counts are those of every stored conversation (every repeat); ``duration_s`` is the run's wall-clock
    time (over every resume); ``usage`` is tokens, calls and cost per model role; ``metrics`` each metric's
    summary in the order metrics are first met in plan order; ``cases`` every case's repeats, in plan order of
    its first conversation; ``suites`` each suite's counts; ``coverage`` what the run exercised of what its
    suites declare (:mod:`simulator.models.coverage`). A summary stored by an older version (``version``
    0) has only the counts, duration and usage; one stored before coverage existed has no ``coverage``.
    """

    version: int = 0
    duration_s: float = 0.0
    conversations_s: float = Field(default=0.0, description="The conversations' own seconds, added up.")
    usage: dict[str, Usage] = Field(default_factory=dict)
    metrics: dict[str, MetricSummary] = Field(default_factory=dict)
    cases: list[CaseSummary] = Field(default_factory=list)
    suites: list[SuiteSummary] = Field(default_factory=list)
    faults: list[FaultOutcomes] = Field(
        default_factory=list,
        description="Outcome by injected fault: per tool and fault entry, the conversations it answered a call in "
        "and their outcomes, in the order first met.",
        exclude_if=lambda faults: not faults,  # a run without faults stores its summary as before
    )
    reviewed: Counts | None = Field(
        default=None,
        description="The counts and correctness as people's reviews make them (a result nobody reviewed counts as "
        "judged), when the run has reviews; set for a report, never stored (the judged figures are the run's).",
        exclude_if=lambda counts: counts is None,  # a run without reviews dumps its summary as before
    )
    coverage: RunCoverage | None = Field(
        default=None,
        description="What the run exercised of what its suites declare (simulator.coverage); None in a summary "
        "stored before coverage was computed: a reader computes it from the results.",
    )

    @property
    def current(self) -> bool:
        """Whether this summary holds everything this version computes (else recompute it from the results)."""
        return self.version >= SUMMARY_VERSION

    def by_case(self) -> dict[tuple[int, str, str | None], CaseSummary]:
        """Every case's summary by ``(suite, case, persona)``."""
        return {case.key: case for case in self.cases}

    def suite(self, index: int) -> SuiteSummary | None:
        """The summary of the run's ``index``-th suite, if it has results."""
        return next((s for s in self.suites if s.suite == index), None)
