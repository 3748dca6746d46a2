"""The four states (``docs/architecture.md``), one symbol each, shared by every view (terminal, md, html, csv/xlsx,
junit, digest, compare), so a step, a check or a golden turn reads the same wherever it is shown:

====  =====================================  =====================================================
mark  state                                  what has it
====  =====================================  =====================================================
✓     ``met``                                a met check, a ``complete`` step, a ``pass``
✗     ``not_met``                            a check not met, an ``incomplete`` step, a ``fail``
?     ``unsure``                             an ``unsure`` check, step or case; a check *not judged*
⊘     ``not_reached``                        a ``blocked`` or ``not_reached`` (``not_attempted``) step
====  =====================================  =====================================================

Two marks stand outside the four: ``!`` for an error (the judge or the simulated user failed; the case is
``error``) and ``–`` for a score that does not apply (``n/a``). ``⚑`` marks the simulated user's fidelity
problems: a finding beside its turn, and a ``user_error`` case (a failure the simulated user caused). A score
whose verdict is ``not_met`` or ``n/a`` but whose reason says it was *not judged* (no judge model) is unsure,
not a failure. Textual formats put the word beside the mark (``? unsure``); spreadsheet cells hold the word
alone.
"""

from __future__ import annotations

from collections.abc import Iterable

from simulator.models.scores import Outcome, Score, ScoreVerdict
from simulator.models.states import State, not_judged, score_state, step_state, verdict_state
from simulator.models.transcript import GoldenTurnRecord, StepOutcome, StepStatus

__all__ = [
    "CSS_CLASS",
    "FIDELITY_MARK",
    "MARK",
    "State",
    "goals_count",
    "golden_turn_states",
    "not_judged",
    "outcome_mark",
    "score_mark",
    "score_state",
    "step_mark",
    "step_name",
    "step_state",
    "step_status_text",
    "step_words",
    "steps_in_order",
    "unsure_note",
    "verdict_mark",
    "verdict_state",
]

#: The mark of each state.
MARK: dict[State, str] = {
    "met": "✓",
    "not_met": "✗",
    "unsure": "?",
    "not_reached": "⊘",
    "error": "!",
    "n/a": "–",
}

#: The CSS class (colour) of each state's mark in the HTML pages (``assets/report.css``).
CSS_CLASS: dict[State, str] = {
    "met": "ok",
    "not_met": "bad",
    "unsure": "warn",
    "not_reached": "muted",
    "error": "bad",
    "n/a": "muted",
}

_STEP_WORDS: dict[StepStatus, str] = {
    "complete": "complete",
    "incomplete": "not complete",
    "unsure": "unsure",
    "blocked": "blocked",
    "not_reached": "not reached",
    "not_attempted": "not reached",
}
_OUTCOME_STATE: dict[Outcome, State] = {"pass": "met", "fail": "not_met", "unsure": "unsure", "error": "error"}
_TURN_PRECEDENCE: tuple[State, ...] = ("error", "not_met", "unsure")


def verdict_mark(verdict: ScoreVerdict, reason: str = "") -> str:
    """The mark of a verdict (see :func:`verdict_state`)."""
    return MARK[verdict_state(verdict, reason)]


def score_mark(score: Score) -> str:
    """A score's mark."""
    return MARK[score_state(score)]


def step_mark(status: StepStatus) -> str:
    """A step's mark: ✓ complete, ✗ incomplete, ? unsure, ⊘ blocked or not reached."""
    return MARK[step_state(status)]


def step_name(status: StepStatus) -> StepStatus:
    """The status as written in data cells: ``not_attempted`` (the older name) is ``not_reached``."""
    return "not_reached" if status == "not_attempted" else status


def step_words(step: StepOutcome) -> str:
    """A step's status in words: ``complete``, ``not complete``, ``unsure``, ``blocked by step j (goal)``,
    ``not reached``."""
    if step.status == "blocked" and step.blocked_by is not None:
        goal = f" ({step.blocked_by_goal})" if step.blocked_by_goal else ""
        return f"blocked by step {step.blocked_by + 1}{goal}"
    return _STEP_WORDS[step.status]


def step_status_text(status: StepStatus) -> str:
    """A step status as a mark and words, without a step to name (``"⊘ blocked"``, ``"? unsure"``)."""
    return f"{step_mark(status)} {_STEP_WORDS[status]}"


#: The mark of the simulated user's fidelity problems: a finding beside its turn, and a ``user_error`` case.
FIDELITY_MARK = "⚑"


def outcome_mark(outcome: Outcome) -> str:
    """A case outcome's mark: ✓ pass, ✗ fail, ? unsure, ! error, ⚑ user error (the simulated user's failure)."""
    if outcome == "user_error":
        return FIDELITY_MARK
    return MARK[_OUTCOME_STATE[outcome]]


def golden_turn_states(turns: Iterable[GoldenTurnRecord], scores: Iterable[Score]) -> dict[int, State]:
    """Each golden turn's state (by ``GoldenTurnRecord.index``) from the required scores of its turn.

    As for a case's outcome: a turn is ! when a required score of it errored, else ✗ when one is not met,
    else ? when one is unsure (or was not judged), else ✓. An unsure turn is not a failed one.
    """
    by_turn: dict[int, set[State]] = {}
    for score in scores:
        if score.turn is not None and score.required:
            by_turn.setdefault(score.turn, set()).add(score_state(score))
    states: dict[int, State] = {}
    for turn in turns:
        found = by_turn.get(turn.index + 1, set())
        states[turn.index] = next((state for state in _TURN_PRECEDENCE if state in found), "met")
    return states


def unsure_note(states: Iterable[State]) -> str:
    """``", k unsure"`` when ``k`` of the states are unsure (neither passed nor failed), else nothing: added to
    a ``Goals (k/n)`` or ``Turns (k/n)`` count, whose ``k`` counts only what was met."""
    unsure = sum(1 for state in states if state == "unsure")
    return f", {unsure} unsure" if unsure else ""


def steps_in_order(steps: Iterable[StepOutcome]) -> list[StepOutcome]:
    """A conversation's step outcomes by step index: the goals a report lists (none for a golden case)."""
    return sorted(steps, key=lambda step: step.index)


def goals_count(steps: Iterable[StepOutcome]) -> str:
    """``k/n``, complete steps of all steps, with ``, u unsure`` when some are unsure (neither done nor failed)
    as every ``Goals (k/n)`` shows it: ``2/3``, ``1/3, 1 unsure``."""
    states = [step_state(step.status) for step in steps]
    done = sum(1 for state in states if state == "met")
    return f"{done}/{len(states)}{unsure_note(states)}"
