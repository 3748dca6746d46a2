"""One case of the HTML report: its card, with the goals step by step, the transcript, the scores and the error."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Literal

from simulator.kinds import kind_named, kind_of
from simulator.models.case import GoldenCase, ScenarioCase, SimulationCase
from simulator.models.run import StoredResult
from simulator.models.scores import CaseResult, FidelityFinding, Score
from simulator.models.summary import RepeatStats
from simulator.models.transcript import (
    AgentEvent,
    CheckEvent,
    ErrorEvent,
    GoldenTurnRecord,
    InputEvent,
    StepOutcome,
    ToolCallRecord,
    Transcript,
    TranscriptEvent,
    UserEvent,
)
from simulator.reports._html_values import _e, _json_text, _number, _seconds
from simulator.reports._reviews import review_texts
from simulator.reports._states import (
    CSS_CLASS,
    FIDELITY_MARK,
    MARK,
    State,
    goals_count,
    golden_turn_states,
    score_state,
    step_name,
    step_state,
    step_words,
    unsure_note,
    verdict_state,
)
from simulator.reports._voice_view import AUDIO_FOLDER, agent_voice, conversation_player, user_voice
from simulator.reports._world_view import change_lines, world_summary
from simulator.safety import redacted_and_shortened

CaseDefinition = GoldenCase | ScenarioCase | SimulationCase

_TOOL_STATUS = {
    "executed": "executed",
    "faked": "faked",
    "simulated": "SIMULATED",
    "not_executed": "NOT EXECUTED",
    "failed": "FAILED",
    "needs_approval": "NEEDS APPROVAL",
}
_STATE_TITLE: dict[State, str] = {
    "met": "met",
    "not_met": "not met",
    "unsure": "unsure",
    "not_reached": "not reached",
    "error": "error",
    "n/a": "not applicable",
}
_WHY_LENGTH = 180


@dataclass(frozen=True)
class _Item:
    """One result as the page shows it: its id, where it came from, its repeats."""

    number: int
    stored: StoredResult
    suite_name: str
    definition: CaseDefinition | None
    tags: list[str]
    runs: int
    repeat_stats: RepeatStats | None
    #: HTML (already escaped) to show beside what it names: ``result``, ``step N`` or a check's text; whatever
    #: has no place of its own on the card (a check without a score row) comes at the end of the card.
    beside: Mapping[str, str] = field(default_factory=dict)
    #: Where the page finds the conversations' audio files (their names are appended): the folder copied beside a
    #: written report, or the address a front end serves them under.
    audio_base: str = AUDIO_FOLDER + "/"

    @property
    def anchor(self) -> str:
        return f"case-{self.number}"


def _step_label(step: StepOutcome, kind: str) -> str:
    return kind_named(kind).report_label(step.index)


def _criteria(definition: CaseDefinition | None, index: int) -> str | None:
    return kind_of(definition).report_criteria(definition, index) if definition is not None else None


def _steps(item: _Item, transcript: Transcript) -> str:
    steps = sorted(transcript.steps, key=lambda s: s.index)
    labels = {s.index: s.label for s in steps}
    stepped = {e.step for e in transcript.events if e.step is not None}
    rows = []
    for step in steps:
        complete = step.status == "complete"
        state = step_state(step.status)
        words = step_words(step)
        mark = _mark(state, words)
        if complete:
            status = "complete" + (f" at turn {step.completed_at_turn}" if step.completed_at_turn is not None else "")
            status_html = f"<span class='ok'>{_e(status)}</span>"
        elif step.status == "blocked":
            if step.blocked_by is None:
                status_html = "<span class='blocked-by'>blocked</span>"
            else:
                goal = step.blocked_by_goal or labels.get(step.blocked_by) or ""
                status_html = (
                    f"<span class='blocked-by'>blocked by step {step.blocked_by + 1}"
                    f"{': ' + _e(goal) if goal else ''}</span>"
                )
        elif step.status == "unsure":
            status_html = "<span class='warn'>unsure</span> <span class='muted'>(the conversation moved on)</span>"
        else:
            status_html = f"<span class='{CSS_CLASS[state]}'>{_e(words)}</span>"
        body = []
        if step.rationale:
            body.append(f"<p class='rationale'>{_e(step.rationale)}</p>")
        else:
            body.append("<p class='rationale muted'>No rationale recorded.</p>")
        criteria = _criteria(item.definition, step.index)
        if criteria:
            body.append(f"<p class='muted'>Success criteria: {_e(criteria)}</p>")
        facts = [f"{step.turns_used} turn{'s' if step.turns_used != 1 else ''} used"]
        if step.verdict:
            facts.append(f"last check: {step.verdict}")
        link = (
            f" · <a href='#{item.anchor}-step-{step.index + 1}'>in the transcript</a>" if step.index in stepped else ""
        )
        body.append(f"<p class='muted'>{_e(', '.join(facts))}{link}</p>")
        body.append(item.beside.get(f"step {step.index + 1}", ""))
        rows.append(
            f"<li class='step step-{_e(step_name(step.status))}'><details{'' if complete else ' open'}><summary>{mark} "
            f"<strong>{_e(_step_label(step, transcript.kind))}:</strong> {_e(step.label)} — {status_html}</summary>"
            f"<div class='step-body'>{''.join(body)}</div></details></li>"
        )
    return f"<h4>Goals ({goals_count(steps)})</h4><ol class='steps'>{''.join(rows)}</ol>"


def _mark(state: State, title: str | None = None) -> str:
    """A state's mark as every view shows it, coloured, with its words as the tooltip."""
    return f"<span class='{CSS_CLASS[state]}' title='{_e(title or _STATE_TITLE[state])}'>{MARK[state]}</span>"


def _golden(turns: Sequence[GoldenTurnRecord], scores: Sequence[Score]) -> str:
    states = golden_turn_states(turns, scores)
    met = sum(1 for state in states.values() if state == "met")
    rows = []
    for turn in turns:
        state = states[turn.index]
        sent = _e(turn.user) if turn.user is not None else f"event <code>{_e(turn.event or '')}</code>"
        tools = ""
        if turn.expected_tools or turn.actual_tools:
            expected = ", ".join(turn.expected_tools) or "—"
            called = ", ".join(turn.actual_tools) or "—"
            tools = f"expected {_e(expected)}<br>called {_e(called)}"
        rows.append(
            f"<tr class='turn-{_e(state)}'><td class='num'>{turn.index + 1}</td>"
            f"<td>{_mark(state)} {_e(_STATE_TITLE[state])}</td><td>{sent}</td>"
            f"<td>{_e(turn.expected_message) if turn.expected_message else '<span class=muted>—</span>'}</td>"
            f"<td>{'<br>'.join(_e(m) for m in turn.actual_messages) or '<span class=muted>(no message)</span>'}</td>"
            f"<td>{tools}</td><td>{_e(turn.history)}</td></tr>"
        )
    return (
        f"<h4>Golden turns ({met}/{len(turns)}{unsure_note(states.values())})</h4><table class='golden'><thead><tr>"
        "<th class='num'>#</th><th>State</th><th>Sent</th>"
        "<th>Expected</th><th>Actual</th><th>Tools</th><th>History</th></tr></thead>"
        f"<tbody>{''.join(rows)}</tbody></table>"
    )


def _tool(call: ToolCallRecord) -> str:
    status = _TOOL_STATUS.get(call.status, call.status) if call.world is None else call.status_label
    arguments = (
        f"<span class='bad'>invalid arguments: {_e(call.arguments_error)}</span>"
        if call.arguments_error
        else f"<code>{_e(_json_text(call.arguments))}</code>"
    )
    text = call.error if call.error else call.result_text
    answer = f"<span class='bad'>{_e(text)}</span>" if call.error else f"<code>{_e(text)}</code>"
    extra = [f"⚡ injected fault {call.fault} (on purpose; the tool was not asked)"] if call.fault else []
    if call.fake:
        extra.append(f"by {call.fake}")
    if call.simulated_by and call.status == "simulated":
        extra.append(f"played by the {call.simulated_by}; the tool did not run")
    if call.world is not None and call.world.summary():
        extra.append(f"world: {call.world.summary()}")
    if call.duration_ms:
        extra.append(f"{call.duration_ms:.0f} ms")
    extra_html = f" <span class='muted'>({_e(', '.join(extra))})</span>" if extra else ""
    return (
        f"<div class='tool tool-{_e(call.status)}'><span class='tool-status'>{_e(status)}</span> "
        f"tool <code><strong>{_e(call.name)}</strong></code>({arguments}) → {answer}{extra_html}</div>"
    )


def _finding(finding: FidelityFinding) -> str:
    return (
        f"<div class='check fidelity'><span class='warn'>{FIDELITY_MARK}</span> user fidelity, turn {finding.turn}: "
        f"<strong>{_e(finding.kind)}</strong> “{_e(finding.evidence)}” <span class='muted'>({_e(finding.rule)})"
        "</span></div>"
    )


def _event(event: TranscriptEvent, transcript: Transcript, audio_base: str) -> str:
    if isinstance(event, UserEvent):
        spoken, player = user_voice(event, transcript, audio_base)
        misreport = (
            f"<div class='muted'>misreports on purpose (persona): {_e(event.misreport)}</div>"
            if event.misreport
            else ""
        )
        return (
            f"<div class='msg user'><div class='who'>user · turn {event.turn} · {_e(event.source)}{spoken}</div>"
            f"<div class='text'>{_e(event.text)}</div>{misreport}{player}</div>"
        )
    if isinstance(event, InputEvent):
        payload = f" <code>{_e(_json_text(event.payload))}</code>" if event.payload else ""
        return (
            f"<div class='msg input'><div class='who'>event · turn {event.turn}</div>"
            f"<code><strong>{_e(event.name)}</strong></code>{payload}</div>"
        )
    if isinstance(event, AgentEvent):
        parts = [_tool(call) for call in event.tool_calls]
        latency = f" · {event.latency_ms:.0f} ms" if event.latency_ms else ""
        heard, notes = agent_voice(event, transcript, audio_base)
        parts.extend(
            f"<div class='msg agent'><div class='who'>agent · turn {event.turn}{latency}{heard}</div>"
            f"<div class='text'>{_e(message)}</div></div>"
            for message in event.messages
        )
        if notes:
            parts.append(f"<div class='msg agent voice-notes'>{notes}</div>")
        if event.handoff:
            parts.append(f"<div class='msg agent'><strong>hands off to {_e(event.handoff)}</strong></div>")
        if event.variables:
            parts.append(f"<div class='check'>agent set variables <code>{_e(_json_text(event.variables))}</code></div>")
        if not event.messages and not event.handoff:
            parts.append(
                f"<div class='msg agent'><div class='who'>agent · turn {event.turn}</div><em>(no message)</em></div>"
            )
        return "".join(parts)
    if isinstance(event, CheckEvent):
        target = "goal" if event.step is None else kind_named(transcript.kind).outcome_label(event.step)
        state = verdict_state(event.verdict, event.rationale)
        details = "".join(
            f"<li>{_mark(verdict_state(d.verdict, d.evidence))} {_e(d.check)}: "
            f"<span class='{CSS_CLASS[verdict_state(d.verdict, d.evidence)]}'>{_e(d.verdict)}</span>"
            f"{' — ' + _e(d.evidence) if d.evidence else ''}</li>"
            for d in event.details
        )
        return (
            f"<div class='check'>{_mark(state)} check {_e(target)} after turn {event.turn}: "
            f"<span class='{CSS_CLASS[state]}'>{_e(event.verdict)}</span>"
            f" — {_e(event.rationale)}{f'<ul>{details}</ul>' if details else ''}</div>"
        )
    assert isinstance(event, ErrorEvent)
    return f"<div class='event-error'><strong>error ({_e(event.where)})</strong>: {_e(event.message)}</div>"


def _transcript(item: _Item, transcript: Transcript) -> str:
    labels = {s.index: s.label for s in transcript.steps}
    findings = item.stored.result.fidelity
    parts = []
    current: int | None = None
    shown: set[int] = set()
    flagged: set[int] = set()
    for event in transcript.events:
        if event.step is not None and event.step != current:
            current = event.step
            if current not in shown:
                shown.add(current)
                name = kind_named(transcript.kind).report_label(current)
                label = labels.get(current, "")
                parts.append(
                    f"<div class='step-divider' id='{item.anchor}-step-{current + 1}'>{_e(name)}"
                    f"{': ' + _e(label) if label else ''}</div>"
                )
        replay = transcript.replay
        divergence = replay.divergence(event.turn) if replay is not None and isinstance(event, AgentEvent) else None
        if divergence is not None:
            parts.append(f"<div class='event-error divergence'><strong>⟂</strong> {_e(divergence)}</div>")
        parts.append(_event(event, transcript, item.audio_base))
        if isinstance(event, UserEvent) and event.turn not in flagged:
            flagged.add(event.turn)
            parts.extend(_finding(finding) for finding in findings if finding.turn == event.turn)
    # An ending without a closing message has no user message of its own.
    parts.extend(_finding(finding) for finding in findings if finding.turn not in flagged)
    if not parts:
        parts.append("<p class='muted'>No events.</p>")
    origin = f"<p class='muted'>{_e(transcript.replay.summary())}</p>" if transcript.replay is not None else ""
    spoken = conversation_player(transcript, item.audio_base)
    return f"<h4>Transcript</h4>{origin}{spoken}<div class='transcript'>{''.join(parts)}</div>"


def _world(transcript: Transcript) -> str:
    """The conversation's world: what it left changed, one record a line (nothing without a world)."""
    if transcript.world is None:
        return ""
    changes = "".join(f"<li><code>{_e(line)}</code></li>" for line in change_lines(transcript.world))
    return f"<h4>World</h4><p class='muted'>{_e(world_summary(transcript.world))}</p>" + (
        f"<ul class='world-changes'>{changes}</ul>" if changes else ""
    )


def _score_row(score: Score, beside: str = "") -> str:
    value = _number(score.value)
    if score.threshold is not None:
        value += f" / {_number(score.threshold)}"
    where = []
    if score.turn is not None:
        where.append(f"turn {score.turn}")
    if score.step is not None:
        where.append(f"step {score.step + 1}")
    raw = f"<details><summary>raw judge reply</summary><pre>{_e(score.raw)}</pre></details>" if score.raw else ""
    return (
        f"<tr class='verdict-{_e(score.verdict)}'>"
        f"<td>{_mark(score_state(score))} {_e(score.verdict)}</td>"
        f"<td>{_e(score.metric)}</td><td>{_e(score.check)}</td><td>{_e(score.source)}</td>"
        f"<td class='num'>{_e(value)}</td><td>{'required' if score.required else '<span class=muted>info</span>'}</td>"
        f"<td>{_e(', '.join(where))}</td><td class='reason'>{_e(score.reason)}{raw}</td></tr>"
        + (f"<tr class='beside'><td colspan='8'>{beside}</td></tr>" if beside else "")
    )


def _scores(scores: Sequence[Score], beside: Mapping[str, str] | None = None) -> str:
    """The scores table; ``beside``: HTML to show under the first row of each check it names."""
    if not scores:
        return "<h4>Scores</h4><p class='muted'>No scores.</p>"
    pending = dict(beside or {})
    return (
        f"<h4>Scores ({len(scores)})</h4><table class='scores'><thead><tr><th>Verdict</th><th>Metric</th>"
        "<th>Check</th><th>Source</th><th class='num'>Value / pass mark</th><th>Decides</th><th>Where</th>"
        f"<th>Reason</th></tr></thead><tbody>{''.join(_score_row(s, pending.pop(s.check, '')) for s in scores)}</tbody>"
        "</table>"
    )


def _error_card(result: CaseResult) -> str:
    transcript = result.transcript
    errors = [e for e in transcript.events if isinstance(e, ErrorEvent)]
    if result.outcome != "error" and transcript.error is None and not errors:
        return ""
    lines = []
    if transcript.error:
        lines.append(f"<pre>{_e(transcript.error)}</pre>")
    lines.extend(f"<p>{_e(e.where)} error at turn {e.turn}: {_e(e.message)}</p>" for e in errors)
    if result.outcome == "error":
        lines.extend(f"<p>{_e(reason)}</p>" for reason in result.reasons if reason != transcript.error)
    title = "The run could not finish this case" if result.outcome == "error" else "Errors during the conversation"
    return (
        f"<div class='error-card' role='alert'><strong>{_e(title)}</strong> "
        f"<span class='muted'>(stopped: {_e(transcript.stop_reason)})</span>{''.join(lines)}</div>"
    )


def case_detail(item: _Item) -> str:
    """What a case's card holds below its goals: the transcript (tool calls, checks, fidelity findings), the
    world it left changed and the scores."""
    result = item.stored.result
    elsewhere = {RESULT_BESIDE, *(f"step {step.index + 1}" for step in result.transcript.steps)}
    checks = {target: html for target, html in item.beside.items() if target not in elsewhere}
    scored = {score.check for score in result.scores}
    rest = "".join(html for target, html in checks.items() if target not in scored)
    return (
        _transcript(item, result.transcript)
        + _world(result.transcript)
        + _scores(result.scores, checks)
        + (f"<div class='beside'>{rest}</div>" if rest else "")
    )


#: What :attr:`_Item.beside` names the whole result by.
RESULT_BESIDE = "result"


#: The parts of a card a page may load later (:func:`_case` with ``detail=False``): ``body``, everything below
#: the summary line, or ``detail``, what :func:`case_detail` holds.
CasePart = Literal["body", "detail"]


def case_part(item: _Item, part: CasePart) -> str:
    """One part of a case's card, as :func:`_case` leaves it for the page's script to load."""
    return _body(item) + case_detail(item) if part == "body" else case_detail(item)


def _pending(part: CasePart) -> str:
    what = "This case" if part == "body" else "The transcript, world and scores"
    return (
        f"<div class='case-detail' data-pending='{part}'><p class='muted'>{what} is loaded when the case is opened."
        "</p></div>"
    )


def _case(item: _Item, *, expand: bool, detail: bool = True) -> str:
    """A case's card: summary line, then the body: facts, reviews, errors, reasons, goals, golden turns, and its
    detail (:func:`case_detail`). With ``detail=False`` (the result may have been read without its transcript's
    events) a card that starts closed holds only its summary line, and one that starts open its body without
    the detail: the page's script loads the rest (:func:`case_part`) when the card is opened."""
    stored = item.stored
    outcome = stored.outcome
    opened = expand and outcome != "pass"
    if detail:
        body = _body(item) + case_detail(item)
    elif opened:
        body = _body(item) + _pending("detail")
    else:
        body = _pending("body")
    return (
        f"<details class='case outcome-{_e(outcome)}' id='{item.anchor}' data-outcome='{_e(outcome)}'"
        f"{' open' if opened else ''}><summary>{_summary(item)}</summary><div class='case-body'>{body}</div></details>"
    )


def _summary(item: _Item) -> str:
    stored = item.stored
    result = stored.result
    transcript = result.transcript
    outcome = stored.outcome
    steps = transcript.steps
    summary = [
        f"<span class='badge {_e(outcome)}'>{_e(outcome.upper())}</span>",
        f"<span class='case-name'>{_e(stored.case)}</span>",
        f"<span class='muted'>{_e(item.suite_name)}</span>",
    ]
    if stored.persona:
        summary.append(f"<span>persona <strong>{_e(stored.persona)}</strong></span>")
    if item.runs > 1:
        summary.append(f"<span class='muted'>run {stored.repeat + 1} of {item.runs}</span>")
    if item.repeat_stats is not None and item.repeat_stats.label:
        summary.append(f"<span class='label-{_e(item.repeat_stats.label)}'>{_e(item.repeat_stats.label)}</span>")
    if steps:
        left = {step_state(step.status) for step in steps} - {"met"}
        state: State = "met" if not left else "unsure" if left == {"unsure"} else "not_met"
        summary.append(f"<span class='{CSS_CLASS[state]}'>Goals ({goals_count(steps)})</span>")
    if result.reasons:
        summary.append(
            f"<span class='case-why'>{_e(redacted_and_shortened(result.reasons[0], _WHY_LENGTH, flat=True))}</span>"
        )
    if stored.reviews:
        summary.append(f"<span class='reviewed'>reviewer: {_e(stored.reviewed_outcome or outcome)}</span>")
    return "".join(summary)


def _body(item: _Item) -> str:
    stored = item.stored
    result = stored.result
    transcript = result.transcript
    outcome = stored.outcome
    steps = transcript.steps
    meta = [
        f"{transcript.kind}",
        f"stopped: {transcript.stop_reason}",
        f"{transcript.turns} turn{'s' if transcript.turns != 1 else ''}",
        _seconds(stored.duration_s),
    ]
    tokens = sum(u.total_tokens for u in transcript.usage.values())
    if tokens:
        roles = [f"{role} {use.total_tokens:,}" for role, use in transcript.usage.items() if use.total_tokens]
        meta.append(f"{tokens:,} tokens ({', '.join(roles)})")
        read = sum(use.cache_read_tokens for use in transcript.usage.values())
        if read:
            meta.append(f"{read:,} prompt tokens from the provider's prompt cache")
    if transcript.seed is not None:
        meta.append(f"seed {transcript.seed}")
    body = [f"<p class='case-meta'>{_e(' · '.join(meta))}</p>", item.beside.get(RESULT_BESIDE, "")]
    if item.tags:
        body.append("<p>" + "".join(f"<span class='chip'>{_e(tag)}</span>" for tag in item.tags) + "</p>")
    if item.definition is not None and item.definition.description:
        body.append(f"<p class='muted'>{_e(item.definition.description)}</p>")
    goal = kind_of(item.definition).report_goal(item.definition) if item.definition is not None else None
    if goal is not None and not steps:
        body.append(f"<p>Goal: {_e(goal)}</p>")
    if stored.reviews:
        reviews = "".join(f"<li>{_e(text)}</li>" for text in review_texts(stored))
        body.append(
            f"<h4>Reviewed: {_e(stored.reviewed_outcome or outcome)} (judged {_e(outcome)})</h4>"
            f"<ul class='reviews'>{reviews}</ul>"
        )
    body.append(_error_card(result))
    if result.reasons and outcome != "error":
        reasons = "".join(f"<li>{_e(reason)}</li>" for reason in result.reasons)
        body.append(f"<h4>Why it did not pass</h4><ul class='reasons'>{reasons}</ul>")
    if steps:
        body.append(_steps(item, transcript))
    if transcript.golden_turns:
        body.append(_golden(transcript.golden_turns, result.scores))
    if transcript.session_parameters:
        body.append(
            f"<p class='muted'>Session parameters: <code>{_e(_json_text(transcript.session_parameters))}</code></p>"
        )
    return "".join(body)
