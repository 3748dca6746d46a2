"""A transcript as lines of text for the terminal: the conversation, then each step's outcome and why.

:func:`transcript_lines` and :func:`result_lines` write every fact where it arises (a step's rationale in the
check that decided it, in the step's outcome and in its score): the full record, for ``--verbose`` and JUnit.
:func:`case_lines` is what a person reads by default: each fact once, a reason shared by several checks on one
line with a count (``× 3``), and the "no judge model" advice left for the caller to say once at the end.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator
from typing import Literal, NamedTuple

from simulator.kinds import kind_named
from simulator.models.scores import CaseResult, FidelityFinding, Score
from simulator.models.transcript import (
    AgentEvent,
    CheckEvent,
    ErrorEvent,
    InputEvent,
    StepOutcome,
    ToolCallRecord,
    Transcript,
    UserEvent,
)
from simulator.reports._states import (
    FIDELITY_MARK,
    MARK,
    State,
    goals_count,
    golden_turn_states,
    score_mark,
    score_state,
    step_state,
    step_words,
)
from simulator.reports._world_view import change_lines, world_summary

Style = Literal[
    "header",
    "user",
    "agent",
    "tool",
    "tool_warning",
    "check_met",
    "check_other",
    "error",
    "pass",
    "fail",
    "blocked",
    "plain",
]

_STATE_STYLE: dict[State, Style] = {
    "met": "pass",
    "not_met": "fail",
    "unsure": "check_other",
    "not_reached": "blocked",
    "error": "error",
    "n/a": "plain",
}


class Line(NamedTuple):
    """One line of output and how to show it."""

    style: Style
    text: str


def goals(transcript: Transcript) -> tuple[int, int]:
    """``Goals (k/n)``: complete steps and all steps (a scenario counts its goal as one step)."""
    return sum(1 for step in transcript.steps if step.status == "complete"), len(transcript.steps)


def _tool_line(call: ToolCallRecord) -> Line:
    arguments = json.dumps(call.arguments, ensure_ascii=False, sort_keys=True)
    answer = call.error if call.error else call.result_text
    style: Style = "tool" if call.answered else "tool_warning"
    by = call.fake or (call.simulated_by if call.status == "simulated" else None)
    source = f" by {by}" if by else ""
    touched = call.world.summary() if call.world is not None else ""
    world = f" ({touched})" if touched else ""
    if call.fault:
        source += f", injected fault {call.fault}"
    return Line(style, f"      tool {call.name}({arguments}) [{call.status_label}{source}] → {answer}{world}")


def _outcome_line(step: StepOutcome, kind: str) -> Line:
    state = step_state(step.status)
    name = kind_named(kind).outcome_label(step.index)
    text = f"  {MARK[state]} {name}: {step.label} — {step_words(step)}"
    if step.status == "complete" and step.completed_at_turn is not None:
        text += f" at turn {step.completed_at_turn}"
    return Line(_STATE_STYLE[state], text)


def transcript_lines(transcript: Transcript, result: CaseResult | None = None, *, brief: bool = False) -> list[Line]:
    """The conversation turn by turn (tool calls with how they were answered), then the steps' outcomes, each
    marked ✓ complete, ✗ not complete, ? unsure or ⊘ blocked / not reached; a golden case's turns marked
    likewise from ``result``'s scores when it is given, and each user turn followed by ``result``'s fidelity
    findings of that turn (⚑). ``brief``: a check's rationale only where it says
    something new (not its step's final rationale, not the previous check's words again), and no "no judge
    model" advice."""
    said = _Said(transcript) if brief else None
    total = len(transcript.steps)
    head = f"{transcript.case} ({transcript.kind})"
    if transcript.persona:
        head += f" with persona {transcript.persona}"
    head += f": stopped {transcript.stop_reason} after {transcript.turns} turn{'s' if transcript.turns != 1 else ''}"
    if total:
        head += f", Goals ({goals_count(transcript.steps)})"
    lines = [Line("header", head)]
    replay = transcript.replay
    if replay is not None:
        lines.append(Line("plain", f"  ({replay.summary()})"))
    findings = result.fidelity if result is not None else []
    shown_at: set[int] = set()
    for event in transcript.events:
        divergence = replay.divergence(event.turn) if replay is not None and isinstance(event, AgentEvent) else None
        if divergence is not None:
            lines.append(Line("error", f"  ⟂ {divergence}"))
        if isinstance(event, UserEvent):
            lines.append(Line("user", f"  [{event.turn}] user: {event.text}"))
            if event.misreport:
                lines.append(Line("user", f"      misreports on purpose (persona): {event.misreport}"))
            if event.turn not in shown_at:
                shown_at.add(event.turn)
                lines.extend(_finding_line(finding) for finding in findings if finding.turn == event.turn)
        elif isinstance(event, InputEvent):
            payload = f" {json.dumps(event.payload, ensure_ascii=False)}" if event.payload else ""
            lines.append(Line("user", f"  [{event.turn}] event: {event.name}{payload}"))
        elif isinstance(event, AgentEvent):
            lines.extend(_tool_line(call) for call in event.tool_calls)
            lines.extend(Line("agent", f"  [{event.turn}] agent: {message}") for message in event.messages)
            if event.handoff:
                lines.append(Line("agent", f"  [{event.turn}] agent hands off to {event.handoff}"))
            if not event.messages and not event.handoff:
                lines.append(Line("agent", f"  [{event.turn}] agent: (no message)"))
        elif isinstance(event, CheckEvent):
            style: Style = "check_met" if event.verdict == "met" else "check_other"
            step = f"step {event.step + 1}" if event.step is not None else "goal"
            mark = MARK[event.verdict]
            text = f"      {mark} check {step}: {event.verdict}"
            rationale = event.rationale if said is None else said.check(event)
            lines.extend(_block(style, f"{text} — ", rationale) if rationale else [Line(style, text)])
        elif isinstance(event, ErrorEvent):
            lines.append(Line("error", f"  error ({event.where}): {event.message}"))
    # An ending without a closing message has no user line of its own.
    lines.extend(_finding_line(finding) for finding in findings if finding.turn not in shown_at)
    if transcript.steps:
        lines.append(Line("header", kind_named(transcript.kind).steps_heading + ":"))
        for outcome in transcript.steps:
            lines.append(_outcome_line(outcome, transcript.kind))
            if outcome.rationale:
                lines.extend(
                    _block("plain", "      ", outcome.rationale if said is None else brief_text(outcome.rationale))
                )
    states = golden_turn_states(transcript.golden_turns, result.scores) if result is not None else {}
    for record in transcript.golden_turns:
        expected = record.expected_message or "(no expected message)"
        turn_state = states.get(record.index)
        mark = f"{MARK[turn_state]} " if turn_state is not None else ""
        style = _STATE_STYLE[turn_state] if turn_state is not None else "plain"
        indent = " " * (10 + len(mark))
        lines.append(Line(style, f"  {mark}turn {record.index + 1}: expected: {expected}"))
        lines.append(Line("plain", f"{indent}actual:   {' | '.join(record.actual_messages) or '(no message)'}"))
        if record.expected_tools or record.actual_tools:
            called = f"called {record.actual_tools or '[]'}"
            lines.append(Line("plain", f"{indent}tools expected {record.expected_tools or '[]'}, {called}"))
    if transcript.world is not None:
        lines.append(Line("header", f"World: {world_summary(transcript.world)}"))
        lines.extend(Line("plain", f"  {line}") for line in change_lines(transcript.world))
    return lines


def _block(style: Style, head: str, text: str) -> list[Line]:
    """``head`` and ``text``, the text's later lines (a state check's diff has one per record) indented under
    its first."""
    first, *rest = text.splitlines() or [""]
    indent = " " * len(head)
    return [Line(style, head + first), *(Line(style, indent + line) for line in rest)]


def finding_text(finding: FidelityFinding) -> str:
    """A fidelity finding in words: ``user fidelity: kind: “evidence” (rule)``."""
    return f"user fidelity: {finding.kind}: “{finding.evidence}” ({finding.rule})"


def _finding_line(finding: FidelityFinding) -> Line:
    return Line("tool_warning", f"      {FIDELITY_MARK} [{finding.turn}] {finding_text(finding)}")


def result_lines(result: CaseResult, *, all_scores: bool = True) -> list[Line]:
    """A scored case: its outcome and why, then every score with the check that produced it and its evidence."""
    style: Style = {"pass": "pass", "fail": "fail", "error": "error"}.get(result.outcome, "check_other")  # type: ignore[assignment]
    lines = [Line(style, f"Outcome: {result.outcome}")]
    lines.extend(line for reason in result.reasons for line in _block("plain", "  why: ", reason))
    shown = [s for s in result.scores if all_scores or s.verdict != "met"]
    if shown:
        lines.append(Line("header", "Scores:"))
    for score in shown:
        mark = score_mark(score)
        value = f" = {score.value:g}" if score.value is not None else ""
        info = "" if score.required else " (not required)"
        score_style: Style = "check_met" if score_state(score) in ("met", "n/a") else "check_other"
        lines.append(Line(score_style, f"  {mark} [{score.source}] {score.check}{value}{info}"))
        if score.reason:
            lines.extend(_block("plain", "      ", score.reason))
    return lines


#: The advice every "not judged" text carries; said once at the end by default (:func:`not_judged`).
NO_JUDGE_ADVICE = " (set models.judge in the suite or pass --judge-model)"


def brief_text(text: str) -> str:
    """``text`` without the "no judge model" advice (said once, at the end, instead of on every line)."""
    return text.replace(NO_JUDGE_ADVICE, "")


def not_judged(result: CaseResult) -> bool:
    """Whether some check of ``result`` was not judged for want of a judge model (its advice is due)."""
    texts = [*result.reasons, *(score.reason for score in result.scores)]
    texts += [step.rationale for step in result.transcript.steps]
    return any(NO_JUDGE_ADVICE in text for text in texts)


class _Said:
    """What the brief view has already said about each step, so a check repeats none of it."""

    def __init__(self, transcript: Transcript) -> None:
        self.final: dict[int | None, str] = {step.index: brief_text(step.rationale) for step in transcript.steps}
        self.first = transcript.steps[0].index if transcript.steps else None
        self.last: dict[int | None, str] = {}

    def check(self, event: CheckEvent) -> str:
        """The check's rationale when it is news, else nothing."""
        key = event.step if event.step is not None else self.first
        rationale = brief_text(event.rationale)
        if not rationale or rationale == self.last.get(key) or rationale in self.final.get(key, ""):
            return ""
        self.last[key] = rationale
        return rationale


def _counted(text: str, count: int) -> str:
    return f"{text} × {count}" if count > 1 else text


def _score_head(score: Score, checks: list[str]) -> str:
    value = f" = {score.value:g}" if score.value is not None else ""
    info = "" if score.required else " (not required)"
    return f"  {score_mark(score)} [{score.source}] {'; '.join(checks)}{value}{info}"


def _grouped(items: Iterable[tuple[tuple[object, ...], Score]]) -> Iterator[list[Score]]:
    """Scores with the same key together, in the order each key first appears."""
    groups: dict[tuple[object, ...], list[Score]] = {}
    for key, score in items:
        groups.setdefault(key, []).append(score)
    yield from groups.values()


def case_lines(result: CaseResult, *, verbose: bool = False) -> list[Line]:
    """A scored case for a person: the conversation and steps (:func:`transcript_lines`, brief), the outcome
    with each reason once (reasons sharing their words on one line, counted), then the scores not already
    said, those sharing a reason on one line with its count. ``verbose``: everything, as
    :func:`transcript_lines` and :func:`result_lines` write it."""
    transcript = result.transcript
    if verbose:
        return [*transcript_lines(transcript, result), *result_lines(result)]
    lines = transcript_lines(transcript, result, brief=True)
    said = {brief_text(step.rationale) for step in transcript.steps if step.rationale}
    style: Style = {"pass": "pass", "fail": "fail", "error": "error"}.get(result.outcome, "check_other")  # type: ignore[assignment]
    lines.append(Line(style, f"Outcome: {result.outcome}"))
    cited: set[int] = set()
    by_reason = {
        ": ".join(part for part in (score.check, prefix, score.reason) if part): (index, score, prefix)
        for index, score in enumerate(result.scores)
        for prefix in ("", "judge error")
    }
    whys: dict[str, list[str]] = {}
    for reason in result.reasons:
        found = by_reason.get(reason)
        if found is None:
            whys.setdefault(brief_text(reason), [])
            continue
        index, score, prefix = found
        cited.add(index)
        head = ": ".join(part for part in (score.check, prefix) if part)
        tail = brief_text(score.reason)
        if tail in said:
            whys.setdefault(f"{head} (see above)", [])
        else:
            whys.setdefault(tail, []).append(head)
    for tail, heads in whys.items():
        text = f"{'; '.join(heads)}: {tail}" if heads else tail
        lines.extend(_block("plain", "  why: ", _counted(text, len(heads))))
    rest = [
        score
        for index, score in enumerate(result.scores)
        if index not in cited and not (score.reason and brief_text(score.reason) in said)
    ]
    if rest:
        lines.append(Line("header", "Scores:"))
    keyed = (
        ((score_mark(score), score.source, brief_text(score.reason), score.required, score.value), score)
        if score.reason
        else ((id(score),), score)
        for score in rest
    )
    for group in _grouped(keyed):
        first = group[0]
        score_style: Style = "check_met" if score_state(first) in ("met", "n/a") else "check_other"
        lines.append(Line(score_style, _score_head(first, [score.check for score in group])))
        if first.reason:
            lines.extend(_block("plain", "      ", _counted(brief_text(first.reason), len(group))))
    return lines
