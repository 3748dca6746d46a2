"""A case's outcome from its stored evidence: one function, used when a conversation is scored and again when a
result comes in from elsewhere (an import, a merge), so an outcome is never taken on trust."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Final

from simulator.judges.fidelity import blame, user_error_reason
from simulator.metrics import case_metrics, case_outcome
from simulator.models.run import StoredResult
from simulator.models.scores import CaseResult, FidelityFinding, Outcome, Score, TrustedOutcome
from simulator.models.transcript import AgentEvent, Transcript
from simulator.safety import redacted_and_shortened

__all__ = ["TRUST_MARK", "Rederived", "decide_outcome", "misheard", "rederive", "rederived", "unheard_pass"]

#: How the first reason of a result whose outcome was kept as it came (``--trust``) begins.
TRUST_MARK: Final = "outcome as imported, not re-derived (--trust)"
_WHY: Final = 160


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
    but did not cause stays ``fail``, and says why. A voice conversation's fail or pass that rests on a turn heard
    with too little confidence is ``unsure`` (:func:`misheard`, :func:`unheard_pass`)."""
    outcome, reasons = case_outcome(transcript, scores)
    if outcome == "pass":
        doubts = unheard_pass(transcript, scores)
        return ("unsure", [*doubts, *reasons]) if doubts else (outcome, reasons)
    if outcome != "fail":
        return outcome, reasons
    doubts = misheard(transcript, scores)
    if doubts:
        return "unsure", [*doubts, *reasons]
    verdict = blame(findings, transcript, scores)
    if verdict.cause is None:
        return outcome, [*reasons, verdict.kept] if verdict.kept else reasons
    if count_user_errors:
        return outcome, [
            *reasons,
            f"counted as the agent's failure (--count-user-errors): {user_error_reason(verdict.cause)}",
        ]
    return "user_error", [user_error_reason(verdict.cause), *reasons]


#: Checks that read what the agent did, not what it said: a transcript heard badly cannot explain their failure.
_NOT_HEARD = ("tool_call_correctness", "unexpected_tool_call", "tool_order", "handoff", "variable", "state", "budget")


def misheard(transcript: Transcript, scores: Sequence[Score]) -> list[str]:
    """A voice conversation's failure the recogniser may have caused: when every failing required score (a step
    check, a judge verdict, a keyword) read an agent turn heard with less confidence than the transcript's
    ``min_confidence``, one note per such turn (its number, what was heard, the confidence); else none, and the
    failure stands. A bad transcript is never the agent's fail; a failure on a turn heard clearly still is."""
    reading = _Reading.of(transcript)
    if reading is None:
        return []
    cited: dict[int, None] = {}
    for score in scores:
        if not score.required or score.verdict != "not_met":
            continue
        if score.metric in _NOT_HEARD:
            return []
        unclear = reading.doubtful_turns(score)
        if not unclear:
            return []
        cited.update(dict.fromkeys(unclear))
    return reading.notes(cited, "a failing check there may be a recognition error, not the agent's")


def unheard_pass(transcript: Transcript, scores: Sequence[Score]) -> list[str]:
    """A voice conversation's pass that rests on a turn heard with less confidence than ``min_confidence``: a
    recognition error can make a wrong answer read right, so a passing check on such a turn is no evidence. One
    note per such turn; none when every passing check read turns heard clearly (or what the agent did)."""
    reading = _Reading.of(transcript)
    if reading is None:
        return []
    cited: dict[int, None] = {}
    for score in scores:
        if score.required and score.verdict == "met" and score.metric not in _NOT_HEARD:
            cited.update(dict.fromkeys(reading.doubtful_turns(score)))
    return reading.notes(cited, "a passing check there may rest on a recognition error: no evidence of a pass")


@dataclass(frozen=True)
class _Reading:
    """How a voice conversation was heard: its confidence bar, its agent turns, and those a recogniser of
    Simulator's was unsure of (of the agent's audio, or of the user's audio it heard for a text agent)."""

    bar: float
    replies: list[AgentEvent]
    doubtful: dict[int, AgentEvent]

    @classmethod
    def of(cls, transcript: Transcript) -> _Reading | None:
        if transcript.voice is None:
            return None
        bar = transcript.voice.min_confidence
        replies = [event for event in transcript.agent_events() if event.voice is not None]
        doubtful = {event.turn: event for event in replies if _doubtful(event, bar)}
        return cls(bar, replies, doubtful) if doubtful else None

    def doubtful_turns(self, score: Score) -> list[int]:
        """The doubtful turns among those ``score`` read: its turn, else its step's, else (a score of the whole
        conversation, or of a step it never reached) every turn."""
        turns = [score.turn] if score.turn is not None else []
        if not turns and score.step is not None:
            turns = [event.turn for event in self.replies if event.step == score.step]
        turns = turns or [event.turn for event in self.replies]
        return [turn for turn in turns if turn in self.doubtful]

    def notes(self, cited: Mapping[int, None], consequence: str) -> list[str]:
        notes = []
        bar = self.bar
        for turn in sorted(cited):
            event = self.doubtful[turn]
            voice = event.voice
            assert voice is not None
            if voice.confidence is not None and voice.confidence < bar:
                heard = redacted_and_shortened(event.text, _WHY) or "nothing"
                notes.append(
                    f"unsure: the recogniser heard the agent's turn {turn} as {heard!r} with confidence "
                    f"{voice.confidence:.2f}, below the suite's min_confidence {bar:g}; {consequence}"
                )
            if voice.user_heard_confidence is not None and voice.user_heard_confidence < bar:
                heard = redacted_and_shortened(voice.user_heard or "", _WHY) or "nothing"
                notes.append(
                    f"unsure: Simulator's recogniser heard the user's turn {turn} for the agent as {heard!r} with "
                    f"confidence {voice.user_heard_confidence:.2f}, below the suite's min_confidence {bar:g}; the "
                    f"agent answered what was misheard (a harness error, not the agent's): {consequence}"
                )
        return notes


def _doubtful(event: AgentEvent, bar: float) -> bool:
    """Whether a recogniser of Simulator's was unsure in the turn: of the agent's audio, or of the user's audio
    it heard for an agent that talks text."""
    voice = event.voice
    if voice is None:
        return False
    return any(value is not None and value < bar for value in (voice.confidence, voice.user_heard_confidence))


def rederived(result: CaseResult, *, count_user_errors: bool) -> CaseResult:
    """``result`` with its outcome, reasons and per-case metrics decided again from its own transcript, scores
    and fidelity findings, as :func:`~simulator.runner.score_case` decided them (``count_user_errors``: the
    run's setting), and no :attr:`~CaseResult.trusted` mark. A result scored by this version comes back equal."""
    outcome, reasons = decide_outcome(
        result.transcript, result.scores, result.fidelity, count_user_errors=count_user_errors
    )
    return result.model_copy(
        update={
            "outcome": outcome,
            "reasons": reasons,
            "metrics": case_metrics(result.transcript, result.scores, outcome),
            "trusted": None,
        }
    )


@dataclass(frozen=True)
class Rederived:
    """A stored result that came from elsewhere, checked: ``result`` is what to keep (outcome, reasons and
    metrics decided again; with ``trust``, the outcome as it came, marked), ``stored`` the outcome it came
    with, ``derived`` (and ``derived_reasons``) the one its evidence decides."""

    result: StoredResult
    stored: Outcome
    derived: Outcome
    derived_reasons: list[str]

    @property
    def agrees(self) -> bool:
        """Whether the outcome it came with is the one its evidence decides."""
        return self.stored == self.derived

    def describe(self) -> str:
        """The disagreement in words: ``case 'refund' [impatient] #2: stored pass, derived fail (why: ...)``."""
        found = self.result
        persona = f" [{found.persona}]" if found.persona else ""
        first = " ".join(self.derived_reasons[0].split()) if self.derived_reasons else ""
        # One line per result however long the reason: an error lists up to ten of them.
        why = f" (why: {redacted_and_shortened(first, _WHY + 1)})" if first else ""
        return (
            f"case {found.case!r}{persona} #{found.repeat + 1}: stored {self.stored}, but its transcript, scores "
            f"and fidelity findings decide {self.derived}{why}"
        )


def rederive(stored: StoredResult, *, count_user_errors: bool, trust: bool = False) -> Rederived:
    """``stored`` (a result from an export, or from another run) checked against its own evidence
    (:func:`rederived`): when the outcome it came with is the one decided, the result as decided (reasons and
    metrics too); otherwise, with ``trust``, as it came with a :class:`~simulator.models.scores.TrustedOutcome`
    mark and :data:`TRUST_MARK` as its first reason, and without, as it came (the caller refuses it: see
    :attr:`Rederived.agrees`)."""
    fresh = rederived(stored.result, count_user_errors=count_user_errors)
    if fresh.outcome == stored.outcome:
        kept = stored.model_copy(update={"result": fresh})
    elif trust:
        mark = (
            f"{TRUST_MARK}: stored {stored.outcome}, derived {fresh.outcome}; the run's totals count it as "
            f"{fresh.outcome}"
        )
        reasons = [mark, *(reason for reason in stored.result.reasons if not reason.startswith(TRUST_MARK))]
        trusted = TrustedOutcome(stored=stored.outcome, derived=fresh.outcome, derived_reasons=fresh.reasons)
        kept = stored.model_copy(
            update={"result": stored.result.model_copy(update={"reasons": reasons, "trusted": trusted})}
        )
    else:
        kept = stored
    return Rederived(result=kept, stored=stored.outcome, derived=fresh.outcome, derived_reasons=fresh.reasons)
