"""Which judge questions a judge answered in a case's results, and whether a change between two runs rests only
on questions one run judged and the other did not (compare's *not comparable*). Pure.

A judge question is a score whose source is the judge, or a step check labelled ``judge: ...`` (a success
criterion or a check in words). It was *asked* when a judge model answered it (whatever it answered, an error
included), and *not asked* when its reason says it was not judged: no judge model was configured
(:data:`simulator.judges.step.NO_JUDGE`) or a replay's changed question had no judge to go to. A question is
known by what it checks (its metric and check text; a step check by its step and label), so the same question of
two runs of one suite has the same key.

A change from passing to not passing (either way round) rests only on judging when every repeat that did not pass
is held only by questions judged on one side: asked there and not asked on the other (or the other asked no judge
question at all in that case), or not asked there and asked on the other. A step that did not complete is held by
its last check's unmet details, and a step blocked or not reached by the step that stopped it. Anything else
holding a repeat (a deterministic check, the agent's error, a question both runs judged) makes the change real.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from simulator.models.run import StoredResult
from simulator.models.scores import Score
from simulator.models.states import not_judged, score_state
from simulator.models.transcript import CheckDetail, CheckEvent, ErrorEvent, StepOutcome

__all__ = ["Judging", "OneSided", "judging_of", "only_judging_holds", "step_only_judging_holds"]

_JUDGE_CHECK = "judge:"
_HOLDING = ("not_met", "unsure", "error")
_UNREACHED = ("blocked", "not_reached", "not_attempted")
#: How many questions a reason names before it says how many more there are.
_NAMED = 3


@dataclass
class Judging:
    """The judge questions of one case's repeats in one run, by key: answered by a judge, or left not judged."""

    asked: set[str] = field(default_factory=set)
    not_asked: set[str] = field(default_factory=set)

    def differs_from(self, key: str, asked_here: bool) -> bool:
        """Whether question ``key`` (asked here or not) was judged on one side only, this being the other side."""
        if not asked_here:
            return key in self.asked
        return key not in self.asked and (key in self.not_asked or not self.asked)


@dataclass
class OneSided:
    """The questions that hold the not-passing side, judged on one side only: by where they were judged."""

    judged_here: list[str] = field(default_factory=list)
    judged_there: list[str] = field(default_factory=list)

    def add(self, label: str, asked_here: bool) -> None:
        """Note question ``label``: judged on this side only when ``asked_here``, else on the other side only."""
        found = self.judged_here if asked_here else self.judged_there
        if label not in found:
            found.append(label)

    def reason(self, here: str, there: str) -> str:
        """In words, with ``here`` / ``there`` naming the runs (``A``, ``B``)."""
        parts = [
            f"judged in {side} only ({_named(labels)})"
            for side, labels in ((here, self.judged_here), (there, self.judged_there))
            if labels
        ]
        return "; ".join(parts)


def _named(labels: Sequence[str]) -> str:
    shown = "; ".join(labels[:_NAMED])
    return shown + (f"; and {len(labels) - _NAMED} more" if len(labels) > _NAMED else "")


def _score_key(score: Score) -> str:
    return f"{score.metric}: {score.check}"


def _detail_key(step: int | None, detail: CheckDetail) -> str:
    return f"step {step}: {detail.check}"


def _is_judge_detail(detail: CheckDetail) -> bool:
    return detail.check.startswith(_JUDGE_CHECK)


def judging_of(results: Iterable[StoredResult]) -> Judging:
    """The judge questions of ``results`` (one case's repeats in one run): which a judge answered, which not."""
    found = Judging()
    for stored in results:
        for score in stored.result.scores:
            if score.source == "judge":
                (found.not_asked if not_judged(score.reason) else found.asked).add(_score_key(score))
        for event in stored.result.transcript.events:
            if isinstance(event, CheckEvent):
                for detail in event.details:
                    if _is_judge_detail(detail):
                        key = _detail_key(event.step, detail)
                        (found.not_asked if not_judged(detail.evidence) else found.asked).add(key)
    return found


def only_judging_holds(not_passing: Sequence[StoredResult], other: Judging) -> OneSided | None:
    """The questions judged on one side only that alone keep ``not_passing`` (one side's repeats of a case that
    did not pass there, where the other side, judged as ``other``, passed) from passing; None when anything else
    holds one of those repeats: then the change is real."""
    one_sided = OneSided()
    for stored in not_passing:
        if not _held_only_by_judging(stored, other, one_sided):
            return None
    return one_sided if not_passing else None


def step_only_judging_holds(
    not_complete: Sequence[tuple[StoredResult, StepOutcome]], other: Judging
) -> OneSided | None:
    """As :func:`only_judging_holds` for one step: the repeats in which it did not complete, with its outcome."""
    one_sided = OneSided()
    for stored, step in not_complete:
        if not _step_held_only_by_judging(stored, step, other, one_sided, seen=set()):
            return None
    return one_sided if not_complete else None


def _held_only_by_judging(stored: StoredResult, other: Judging, found: OneSided) -> bool:
    result = stored.result
    if any(isinstance(event, ErrorEvent) and event.where != "judge" for event in result.transcript.events):
        return False  # the agent, the user, a tool or the engine failed: that is not a matter of judging
    holding = [score for score in result.scores if score.required and score_state(score) in _HOLDING]
    if not holding:
        return False
    steps = {step.index: step for step in result.transcript.steps}
    for score in holding:
        if score.source == "engine" and score.metric == "goal_achievement" and score.step in steps:
            if not _step_held_only_by_judging(stored, steps[score.step], other, found, seen=set()):
                return False
        elif score.source == "judge":
            asked = not not_judged(score.reason)
            if not other.differs_from(_score_key(score), asked):
                return False
            found.add(score.check, asked)
        else:
            return False
    return True


def _step_held_only_by_judging(
    stored: StoredResult, step: StepOutcome, other: Judging, found: OneSided, *, seen: set[int]
) -> bool:
    seen.add(step.index)
    transcript = stored.result.transcript
    if step.status in _UNREACHED:
        # Held by the step that stopped it: the one that blocked it, else the nearest earlier one not complete.
        earlier = [s for s in transcript.steps if s.index < step.index and s.status != "complete"]
        stopper = next((s for s in transcript.steps if s.index == step.blocked_by), None)
        stopper = stopper or (earlier[-1] if earlier else None)
        if stopper is None or stopper.index in seen:
            return False
        return _step_held_only_by_judging(stored, stopper, other, found, seen=seen)
    checks = [event for event in transcript.events if isinstance(event, CheckEvent) and event.step == step.index]
    if step.status == "complete" or not checks:
        return False
    holding = [detail for detail in checks[-1].details if detail.verdict in _HOLDING]
    if not holding:
        return False
    for detail in holding:
        if not _is_judge_detail(detail):
            return False
        asked = not not_judged(detail.evidence)
        if not other.differs_from(_detail_key(step.index, detail), asked):
            return False
        found.add(f"step {step.index + 1}: {detail.check}", asked)
    return True
