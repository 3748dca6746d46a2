"""A case's outcome from its stored evidence: one function, used when a conversation is scored and again when a
result comes in from elsewhere (an import, a merge), so an outcome is never taken on trust."""

from __future__ import annotations

from collections.abc import Sequence

from simulator.judges.fidelity import blame, user_error_reason
from simulator.metrics import case_outcome
from simulator.models.scores import FidelityFinding, Outcome, Score
from simulator.models.transcript import Transcript

__all__ = ["decide_outcome"]


def decide_outcome(
    transcript: Transcript,
    scores: Sequence[Score],
    findings: Sequence[FidelityFinding],
    *,
    count_user_errors: bool = False,
) -> tuple[Outcome, list[str]]:
    """The case's outcome and reasons: :func:`simulator.metrics.case_outcome` of the scores, and a ``fail`` the
    simulated user caused (:func:`simulator.judges.fidelity.blame`) is ``user_error``, with the finding as its
    first reason (``count_user_errors``: it stays ``fail`` and the reason says so). A failure the user slipped in
    but did not cause stays ``fail``, and says why."""
    outcome, reasons = case_outcome(transcript, scores)
    if outcome != "fail":
        return outcome, reasons
    verdict = blame(findings, transcript, scores)
    if verdict.cause is None:
        return outcome, [*reasons, verdict.kept] if verdict.kept else reasons
    if count_user_errors:
        return outcome, [
            *reasons,
            f"counted as the agent's failure (--count-user-errors): {user_error_reason(verdict.cause)}",
        ]
    return "user_error", [user_error_reason(verdict.cause), *reasons]
