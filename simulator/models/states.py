"""The four states (``docs/architecture.md``) as data: what state a check, a step or a case outcome is in. Pure.

``met`` (✓), ``not_met`` (✗), ``unsure`` (?), ``not_reached`` (⊘), and outside the four ``error`` (!) and ``n/a``
(–). A score whose verdict is ``not_met`` or ``n/a`` but whose reason says it was *not judged* (no judge
model) is unsure, not a failure. The marks and words every view shows are :mod:`simulator.reports._states`'s;
the analysis (digest) groups by these states, so they live with the data.
"""

from __future__ import annotations

from typing import Literal

from simulator.models.scores import Score, ScoreVerdict
from simulator.models.transcript import StepStatus

__all__ = ["State", "not_judged", "score_state", "step_state", "verdict_state"]

#: A check's state: the four of the table, and the two outside it.
State = Literal["met", "not_met", "unsure", "not_reached", "error", "n/a"]

_STEP_STATE: dict[StepStatus, State] = {
    "complete": "met",
    "incomplete": "not_met",
    "unsure": "unsure",
    "blocked": "not_reached",
    "not_reached": "not_reached",
    "not_attempted": "not_reached",
}
_NOT_JUDGED = "not judged"


def not_judged(reason: str) -> bool:
    """Whether a score's reason (or a check's evidence) says it was not judged (no judge model answered)."""
    return reason.strip().lower().startswith(_NOT_JUDGED)


def verdict_state(verdict: ScoreVerdict, reason: str = "") -> State:
    """A verdict's state; ``not_met`` or ``n/a`` with a *not judged* reason is ``unsure``."""
    if verdict in ("not_met", "n/a") and not_judged(reason):
        return "unsure"
    return verdict


def score_state(score: Score) -> State:
    """A score's state: its verdict, read with its reason."""
    return verdict_state(score.verdict, score.reason)


def step_state(status: StepStatus) -> State:
    """A step's state: ``complete`` met, ``incomplete`` not met, ``unsure``, the rest not reached."""
    return _STEP_STATE[status]
