"""Scores and case results: every verdict with what produced it and why.

A :class:`Score` is one verdict of one check or judge question about a transcript (a keyword list, an expected
tool call, a golden turn's semantic match, one agent turn's hallucination, the user's goal). A
:class:`CaseResult` is a transcript with all its scores, the case's outcome and the reasons for it.
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from simulator.models._base import DataModel
from simulator.models.transcript import CaseKind, Transcript

#: ``met`` / ``not_met`` / ``unsure`` as for steps; ``error`` when the judge could not give a valid verdict;
#: ``n/a`` when the question does not apply (a turn that makes no factual claim).
ScoreVerdict = Literal["met", "not_met", "unsure", "error", "n/a"]
#: How a case ended: ``error`` means the run could not finish it (agent down, model error); ``user_error`` is a
#: failure that coincides with a measured problem of the simulated user (:class:`FidelityFinding`): it is shown
#: apart and left out of the agent's correctness unless the run counts it (``--count-user-errors``).
Outcome = Literal["pass", "fail", "error", "unsure", "user_error"]
ScoreSource = Literal["deterministic", "judge", "engine"]


class Score(DataModel):
    """One verdict about a transcript, with its evidence.

    ``metric`` names the definition (see ``simulator.metrics``); ``check`` says in words what was checked;
    ``value`` is the metric's number where it has one (semantic match 0-4, reference answer 0-100, tool-call
    correctness 0-1, hallucination 1/0, goal satisfaction 1/0/-1); ``threshold`` is the pass mark it was held
    to; ``required`` says whether it decides the case's outcome.
    """

    metric: str
    check: str
    source: ScoreSource
    verdict: ScoreVerdict
    value: float | None = None
    threshold: float | None = None
    reason: str = ""
    required: bool = True
    turn: int | None = None
    step: int | None = None
    raw: str | None = Field(default=None, description="The judge's raw reply when it could not be used.")
    missing: bool = Field(
        default=False,
        description="Not met only because something expected did not happen (a call not made, words not said, a "
        "variable not set, no hand-off), not because the agent did something wrong.",
    )


#: What a simulated user did wrong in a turn: talked like the assistant or as an AI (``broke_character``),
#: quoted its private response guide before the agent asked (``leaked_guide``), said its goal was reached while
#: the checks said it was not (``ended_early``), sent nearly the same message again (``repeated_itself``), or
#: stated a fact its goal, guide, persona and session never gave it (``invented_fact``, judged by the model).
FidelityKind = Literal["broke_character", "leaked_guide", "ended_early", "repeated_itself", "invented_fact"]


class FidelityFinding(DataModel):
    """One fidelity problem of the simulated user in one of its turns, with the words that show it.

    ``evidence`` is the span of the user's message (or its reason for ending) the rule matched; ``rule`` says
    in words what the rule is; ``source`` is ``deterministic`` for the pattern rules and ``judge`` for
    ``invented_fact``.
    """

    turn: int
    step: int | None = None
    kind: FidelityKind
    evidence: str
    rule: str
    source: Literal["deterministic", "judge"] = "deterministic"


class TrustedOutcome(DataModel):
    """An outcome kept as it came (an import or a merge with ``--trust``) although the result's own transcript,
    scores and fidelity findings decide another: ``stored`` is the outcome kept, ``derived`` the one its
    evidence gives (with ``derived_reasons``). The run's totals count the result as ``derived``."""

    stored: Outcome
    derived: Outcome
    derived_reasons: list[str] = Field(default_factory=list)


class CaseResult(DataModel):
    """One conversation of one case, scored: the transcript, every score, the outcome and why."""

    case: str
    kind: CaseKind
    persona: str | None = None
    repeat: int = 0
    outcome: Outcome
    reasons: list[str] = Field(default_factory=list, description="Why the outcome is not pass, one per check.")
    transcript: Transcript
    scores: list[Score] = Field(default_factory=list)
    metrics: dict[str, float | None] = Field(
        default_factory=dict, description="Per-case numbers: goals, tool-call correctness, hallucinations, ..."
    )
    fidelity: list[FidelityFinding] = Field(
        default_factory=list, description="The simulated user's fidelity problems, per turn (none for older runs)."
    )
    user_turns_checked: int = Field(
        default=0, description="How many turns the model-played user wrote (scripted lines are not checked)."
    )
    trusted: TrustedOutcome | None = Field(
        default=None,
        description="Set when an import or merge kept this outcome as it came (--trust) although the result's "
        "evidence decides another; its first reason says so. None: the outcome is the one its evidence decides.",
    )

    def findings_at(self, turn: int) -> list[FidelityFinding]:
        """The fidelity findings of user turn ``turn``."""
        return [finding for finding in self.fidelity if finding.turn == turn]
