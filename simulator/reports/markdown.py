"""A run as a Markdown report, goal by goal (pure function, no I/O: everything comes from the record).

The report has, in order:

1. the run header: suites, agent version, note, status, correctness, the outcome breakdown, answers (how many
   came from the request cache, with their would-be cost, and how many requests were sent), tokens and cost
   per model role (agent, user, judge), the prompt tokens a provider's prompt cache served and stored and what
   it saved (when it did any), duration, seed and settings, versions;
2. one table row per metric (the run summary's, :func:`simulator.metrics.metric_summary`): verdict counts and
   mean value;
3. when cases ran more than once: pass^k, pass@k, the 95% interval and the stable / flaky / broken label;
   then the run's coverage (:mod:`simulator.reports.coverage_view`): the percentage, the persona x case
   matrix, step reach, and the gaps (pairs not run, steps never reached, tools never called, personas never
   used, expectations never evaluated);
4. the simulated user's fidelity per persona (when a model played the user): user turns, flagged turns,
   fidelity rate, findings by kind, user errors; then an overview table of every conversation, failures first
   (error, fail, user error, unsure, then pass);
5. every conversation in that order: its outcome and why, an error card when it errored, ``Goals (k/n)``
   with each step marked ✓ complete, ✗ not complete or ? unsure (both expanded with their checks), ⊘
   blocked (naming the blocking step and its goal) or ⊘ not reached, with its rationale; a golden case's
   turns instead, each ✓, ✗, ? (unsure or not judged: not a failure) or ! (error); the scores that did not
   pass (check, source, reason); and the transcript, tool calls shown with how they were answered
   (``executed`` / ``faked`` / **SIMULATED** / **NOT EXECUTED** / **FAILED** / **NEEDS APPROVAL**).

The marks are those of every view (:mod:`simulator.reports._states`): ✓ met, ✗ not met, ? unsure or not
judged, ⊘ blocked or not reached, ! error, – not applicable; outcomes ✓ pass, ✗ fail, ? unsure, ! error,
⚑ user error (a failure the simulated user caused); ⚑ also marks each fidelity finding below its user turn.

Everything that is not the report's own wording (agent and user text, tool arguments and results, judge
rationales, names from the suite) is untrusted and goes through :func:`escape`: HTML is written as entities
and Markdown syntax is backslash-escaped, so no text can add a heading, link, image, table, code block, HTML
element, mention or issue reference.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence

from simulator.kinds import kind_named
from simulator.models.run import RunRecord, StoredResult, listed_roles
from simulator.models.scores import FidelityFinding, Score
from simulator.models.summary import RepeatStats, RunSummary, persona_fidelity
from simulator.models.transcript import (
    AgentEvent,
    CheckEvent,
    ErrorEvent,
    InputEvent,
    StepOutcome,
    ToolCallRecord,
    Transcript,
    Usage,
    UserEvent,
)
from simulator.reports._reviews import review_texts
from simulator.reports._states import (
    FIDELITY_MARK,
    MARK,
    goals_count,
    golden_turn_states,
    outcome_mark,
    score_mark,
    step_mark,
    step_state,
    step_words,
    steps_in_order,
    unsure_note,
    verdict_mark,
)
from simulator.reports._world_view import change_lines, world_summary
from simulator.reports.coverage_view import (
    WORLD_HEADER,
    CoverageMatrix,
    coverage_headline,
    coverage_matrix,
    gap_sections,
    step_text,
    world_row,
)
from simulator.reports.figures import percent, prompt_cache_text, saved_dollars, uses_prompt_cache
from simulator.reports.tabular import ordered_results, suite_name, summary_of
from simulator.safety import redacted_and_shortened, terminal_safe

__all__ = ["escape", "escape_lines", "render_markdown"]

#: Characters always backslash-escaped: code, emphasis, links and images, tables, strikethrough, math,
#: mentions and issue references.
_ALWAYS = frozenset("\\`*_[]|~$@#")
_ENTITIES = {"&": "&amp;", "<": "&lt;", ">": "&gt;"}
_ORDERED_ITEM = re.compile(r"^(\d{1,9})([.)])")
_BARE_LINK = re.compile(r"(?i)\b(www)\.|(:)//")
_OUTCOME_ORDER = {"error": 0, "fail": 1, "user_error": 2, "unsure": 3, "pass": 4}
_TOOL_STATUS = {
    "executed": "executed",
    "faked": "faked",
    "simulated": "**SIMULATED**",
    "not_executed": "**NOT EXECUTED** (test mode: no fake answered this call)",
    "failed": "**FAILED**",
    "needs_approval": "**NEEDS APPROVAL** (live mode: stopped for a person's approval)",
}
_TOOL_RESULT_MAX = 500


# -- escaping ---------------------------------------------------------------------------------------------


def _escape_line(line: str, *, at_start: bool) -> str:
    # Leading spaces would make an indented code block, trailing ones a hard line break.
    line = line.strip()
    text = "".join(_ENTITIES.get(ch, "\\" + ch if ch in _ALWAYS else ch) for ch in line)
    # Bare URLs become links in GitHub Markdown: an escaped ':' or '.' keeps them text.
    text = _BARE_LINK.sub(lambda m: f"{m.group(1)}\\." if m.group(1) else "\\://", text)
    if not at_start:
        return text
    ordered = _ORDERED_ITEM.match(text)
    if ordered:
        return f"{ordered.group(1)}\\{ordered.group(2)}{text[ordered.end() :]}"
    if text[:1] in ("-", "+", "="):
        return "\\" + text  # a list item, a setext heading underline or a thematic break
    return text


def escape_lines(text: str, *, first_at_start: bool = True) -> list[str]:
    """Untrusted text as Markdown that shows it literally, one string per line of the text.

    Control characters and bidi marks and overrides are written as visible escapes
    (:func:`simulator.safety.terminal_safe`: a report shown in a terminal cannot drive it, nor reorder text, and
    two names that differ by such a character stay distinct); ``&``, ``<`` and
    ``>`` become entities (no HTML gets through);
    ``\\ ` * _ [ ] | ~ $ @ #`` are backslash-escaped everywhere; ``www.`` and ``://`` are escaped so bare
    URLs do not become links; lines lose their surrounding spaces (no indented code blocks, no hard breaks).
    A line that starts a Markdown line also has a leading ``-``, ``+``, ``=`` or ``1.`` / ``1)`` escaped (no
    list items, setext headings or rules): every line but the first, and the first unless ``first_at_start``
    is false (when the caller puts it after other text on the same line).
    """
    lines = terminal_safe(text).splitlines()
    return [_escape_line(line, at_start=first_at_start or index > 0) for index, line in enumerate(lines)]


def escape(text: str) -> str:
    """Untrusted text as inline Markdown, placed after other text on a line (a table cell, a heading after
    its marks, a list item after its label): :func:`escape_lines` of the text, its lines joined by spaces."""
    return " ".join(line for line in escape_lines(text, first_at_start=False) if line)


def _block(text: str, indent: str, *, at_start: bool) -> list[str]:
    """Untrusted multi-line text inside a list item or quote: the first line, then the rest indented under it.

    Lines of one paragraph are joined by hard line breaks (a trailing backslash); blank lines separate
    paragraphs (one blank line at most). ``at_start`` says whether the first line starts a Markdown line
    (right after a list marker or quote mark, or on its own) rather than following other text.
    """
    lines = escape_lines(text, first_at_start=at_start)
    while lines and not lines[-1]:
        lines.pop()
    while lines and not lines[0]:
        lines.pop(0)
    if not lines:
        return ["*(empty)*"]
    out: list[str] = []
    for line in lines:
        if not line:
            if out and out[-1]:
                out.append("")
            continue
        if out and out[-1]:
            out[-1] += "\\"
        out.append(line if not out else indent + line)
    return out


def _cell(text: str) -> str:
    # A table row is one Markdown line: the text's own lines (a state check's diff) are kept apart by <br>.
    return "<br>".join(line for line in escape_lines(text, first_at_start=False) if line) or " "


def _json(value: object) -> str:
    return json.dumps(value, ensure_ascii=False, sort_keys=True)


def _cost(value: float | None) -> str:
    return "unknown" if value is None else f"${value:.4f}"


# -- header -----------------------------------------------------------------------------------------------


def _left_out(left_out: Sequence[str]) -> list[str]:
    if not left_out:
        return []
    lines = [f"**Left out: {len(left_out)} stored result(s) could not be read.**", ""]
    return [*lines, *(f"- {escape(text)}" for text in left_out), ""]


def _header(record: RunRecord, breakdown: RunSummary) -> list[str]:
    settings = record.settings
    duration = breakdown.duration_s
    suites = ", ".join(f"{escape(s.suite.name)} ({escape(s.path)})" for s in record.snapshot) or "none"
    lines = [f"# Simulator run {escape(record.id)}", ""]
    lines.append(f"- **Suites:** {suites}")
    lines.append(f"- **Agent version:** {escape(record.agent_version) if record.agent_version else 'not given'}")
    if record.note:
        lines.append(f"- **Note:** {escape(record.note)}")
    status = f"{record.status}, created {record.created:%Y-%m-%d %H:%M:%S} UTC"
    if record.finished is not None:
        status += f", finished {record.finished:%Y-%m-%d %H:%M:%S} UTC"
    lines.append(f"- **Status:** {status}")
    if record.repeat_of:
        lines.append(f"- **Repeats run:** {escape(record.repeat_of)}")
    if record.replay_of:
        lines.append(f"- **Replays the recording of run:** {escape(record.replay_of)}")
    judged = breakdown.total - breakdown.user_error
    left_out = f"; {breakdown.user_error} user error left out" if breakdown.user_error else ""
    lines.append(f"- **Correctness:** {percent(breakdown.correctness)} ({breakdown.passed} of {judged}{left_out})")
    if breakdown.reviewed is not None:
        reviewed = breakdown.reviewed
        lines.append(
            f"- **Correctness as reviewed:** {percent(reviewed.correctness)} ({reviewed.passed} of "
            f"{reviewed.total - reviewed.user_error}; as judged {percent(breakdown.correctness)})"
        )
    user_errors = f", {breakdown.user_error} user error" if breakdown.user_error else ""
    lines.append(
        f"- **Outcomes:** {breakdown.passed} passed, {breakdown.failed} failed, {breakdown.error} error, "
        f"{breakdown.unsure} unsure{user_errors} ({breakdown.total} of {len(record.plan)} planned)"
    )
    usage = breakdown.usage
    costs = [usage[role].cost for role in usage]
    total_cost = None if any(c is None for c in costs) else sum(c for c in costs if c is not None)
    tokens = sum(u.prompt_tokens + u.completion_tokens for u in usage.values())
    lines.append(f"- **Tokens:** {tokens:,} · **Cost:** {_cost(total_cost)}{_from_cache(usage)}")
    total = sum(usage.values(), Usage())
    if uses_prompt_cache(total):
        lines.append(f"- **Provider prompt cache:** {prompt_cache_text(total)}")
    lines.append(f"- **Duration:** {duration:.1f} s")
    run_settings = [f"repeat {settings.repeat}"]
    run_settings.append("live tools" if settings.live else "test-mode tools")
    if settings.persona:
        run_settings.append(f"persona {escape(settings.persona)}")
    for role, model in (("user", settings.user_model), ("judge", settings.judge_model)):
        if model:
            run_settings.append(f"{role} model {escape(model)}")
    lines.append(f"- **Seed:** {settings.seed} · **Settings:** {', '.join(run_settings)}")
    versions = ", ".join(f"{escape(name)} {escape(version)}" for name, version in sorted(record.versions.items()))
    lines.append(f"- **Versions:** {versions or 'not recorded'}")
    # The provider prompt cache's columns only where a provider reported one: a run without stays as it was.
    prompt_cache = uses_prompt_cache(total)
    extra = " prompt cache read | prompt cache written | saved by prompt cache |" if prompt_cache else ""
    lines += [
        "",
        "| role | answers | from request cache | requests sent | prompt tokens | completion tokens | cost | would-be "
        f"cost of cached |{extra}",
        "|---|---:|---:|---:|---:|---:|---:|---:|" + ("---:|" * 3 if prompt_cache else ""),
    ]
    for role in listed_roles(usage):
        used = usage.get(role, Usage())
        would_be = _cost(used.cached_cost) if used.cached_calls else "–"
        cells = (
            f" {used.cache_read_tokens:,} | {used.cache_write_tokens:,} | "
            f"{saved_dollars(used.cache_savings) if uses_prompt_cache(used) else '–'} |"
            if prompt_cache
            else ""
        )
        lines.append(
            f"| {escape(role)} | {used.calls:,} | {used.cached_calls:,} | {used.requests:,} | {used.prompt_tokens:,} "
            f"| {used.completion_tokens:,} | {_cost(used.cost)} | {would_be} |{cells}"
        )
    return [*lines, ""]


def _from_cache(usage: dict[str, Usage]) -> str:
    """How many answers came from the request cache (never sent) and their would-be cost, when any did (else
    nothing)."""
    cached = sum(used.cached_calls for used in usage.values())
    if not cached:
        return ""
    would_be: float | None = 0.0
    for used in usage.values():
        would_be = None if would_be is None or used.cached_cost is None else would_be + used.cached_cost
    answers = sum(used.calls for used in usage.values())
    return f" · **From the request cache:** {cached:,} of {answers:,} answers (would-be cost {_cost(would_be)})"


def _metrics(summary: RunSummary) -> list[str]:
    if not summary.metrics:
        return []
    lines = [
        "## Metrics",
        "",
        "| metric | scores | met | not met | unsure | error | n/a | mean |",
        "|---|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for item in summary.metrics.values():
        mean = "" if item.mean is None else f"{item.mean:.3g} (of {item.values})"
        lines.append(
            f"| {escape(item.metric)} | {item.count} | {item.met} | {item.not_met} | {item.unsure} | {item.error} "
            f"| {item.not_applicable} | {mean} |"
        )
    return [*lines, ""]


def _repeats(record: RunRecord, summary: RunSummary) -> list[str]:
    repeated = [case for case in summary.cases if case.stats.k > 1]
    if not repeated:
        return []
    lines = [
        "## Repeats",
        "",
        "| suite | case | persona | passed | pass^k | pass@k | 95% interval | label |",
        "|---|---|---|---:|---:|---:|---|---|",
    ]
    for case in repeated:
        stats = case.stats
        low, high = stats.wilson or (0.0, 0.0)
        lines.append(
            f"| {escape(suite_name(record, case.suite))} | {escape(case.case)} | {escape(case.persona or '') or '-'} "
            f"| {stats.passes}/{stats.k} | {stats.pass_hat_k:g} | {stats.pass_at_k:g} | {low:.2f}–{high:.2f} "
            f"| {_label(stats)} |"
        )
    return [*lines, ""]


def _faults(summary: RunSummary) -> list[str]:
    """Outcome by injected fault: per tool and fault entry, the conversations it answered a call in."""
    if not summary.faults:
        return []
    lines = [
        "## Outcome by injected fault",
        "",
        "| tool | fault | conversations | calls | passed | failed | error | unsure | user error | correctness |",
        "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for fault in summary.faults:
        lines.append(
            f"| {escape(fault.tool)} | {_cell(fault.fault)} | {fault.total} | {fault.calls} | {fault.passed} "
            f"| {fault.failed} | {fault.error} | {fault.unsure} | {fault.user_error} | {percent(fault.correctness)} |"
        )
    return [*lines, ""]


def _coverage(record: RunRecord, summary: RunSummary) -> list[str]:
    coverage = summary.coverage
    if coverage is None:
        return []
    lines = ["## Coverage", "", escape(coverage_headline(coverage)), ""]
    lines += [
        "The percentage is the mean of the ratios shown: cases x personas run / planned, simulation steps reached "
        "at least once / steps, declared tools called / declared, expectations evaluated at least once / written.",
        "",
    ]
    matrix = coverage_matrix(record, coverage)
    if matrix.rows:
        columns = [CoverageMatrix.column(persona) for persona in matrix.personas]
        lines += [
            "| case | " + " | ".join(_cell(column) for column in columns) + " |",
            "|---|" + "---|" * len(columns),
        ]
        for title, cells in matrix.rows:
            labels = [escape(cells[p].label) if p in cells else "–" for p in matrix.personas]
            lines.append(f"| {_cell(title)} | " + " | ".join(labels) + " |")
        lines.append("")
    if coverage.steps:
        lines += [
            "| step | reached | complete | failed | unsure | blocked | not reached |",
            "|---|---:|---:|---:|---:|---:|---:|",
        ]
        for step in coverage.steps:
            lines.append(
                f"| {_cell(step_text(record, step))} | {step.reached}/{step.conversations} | {step.complete} "
                f"| {step.incomplete} | {step.unsure} | {step.blocked} | {step.not_reached} |"
            )
        lines.append("")
    if coverage.world:
        lines += [
            "| " + " | ".join(WORLD_HEADER) + " |",
            "|---|---:|---:|---:|---:|---|---|---|",
            *("| " + " | ".join(_cell(text) for text in world_row(c)) + " |" for c in coverage.world),
            "",
        ]
    for heading, items in gap_sections(record, coverage):
        lines += [f"**{heading[0].upper()}{heading[1:]} ({len(items)}):**", ""]
        lines += ["- " + escape(item) for item in items]
        lines.append("")
    return lines


def _label(stats: RepeatStats) -> str:
    return "**flaky**" if stats.label == "flaky" else str(stats.label)


# -- one conversation -------------------------------------------------------------------------------------


def _title(record: RunRecord, stored: StoredResult) -> str:
    persona = f" [{escape(stored.persona)}]" if stored.persona else ""
    return f"{escape(suite_name(record, stored.suite))} › {escape(stored.case)}{persona} #{stored.repeat + 1}"


def _overview(record: RunRecord, results: Sequence[StoredResult]) -> list[str]:
    lines = [
        "## Cases (failures first)",
        "",
        "| outcome | case | kind | goals | turns | seconds | why |",
        "|---|---|---|---|---:|---:|---|",
    ]
    for stored in results:
        steps = stored.result.transcript.steps
        why = redacted_and_shortened(stored.result.reasons[0], 120) if stored.result.reasons else ""
        lines.append(
            f"| {outcome_mark(stored.outcome)} {stored.outcome} | {_title(record, stored)} | {stored.result.kind} "
            f"| {goals_count(steps) if steps else '-'} | {stored.result.transcript.turns} "
            f"| {stored.duration_s:.1f} | {_cell(why)} |"
        )
    return [*lines, ""]


def _error_card(stored: StoredResult) -> list[str]:
    transcript = stored.result.transcript
    lines = [f"> **⚠️ Error:** the run could not finish this case (stopped: {transcript.stop_reason}).", ">"]
    messages: list[str] = []
    if transcript.error:
        messages.append(transcript.error)
    for event in transcript.events:
        if isinstance(event, ErrorEvent) and event.message not in messages:
            messages.append(f"{event.where} (turn {event.turn}): {event.message}")
    messages.extend(reason for reason in stored.result.reasons if reason not in messages)
    for message in messages:
        lines.extend(f"> {line}" if line else ">" for line in _block(message, "", at_start=True))
        lines.append(">")
    if lines[-1] == ">":
        lines.pop()
    return [*lines, ""]


def _step_checks(transcript: Transcript, step: StepOutcome, indent: str) -> list[str]:
    lines: list[str] = []
    for event in transcript.events:
        if not isinstance(event, CheckEvent) or event.step != step.index:
            continue
        lines.append(
            f"{indent}- {verdict_mark(event.verdict, event.rationale)} check after turn {event.turn}: "
            f"{event.verdict} — {escape(event.rationale)}"
        )
        lines.extend(
            f"{indent}  - {verdict_mark(detail.verdict, detail.evidence)} {escape(detail.check)}: {detail.verdict}"
            + (f" — {escape(detail.evidence)}" if detail.evidence else "")
            for detail in event.details
        )
    return lines


def _step_lines(transcript: Transcript, step: StepOutcome) -> list[str]:
    number = f"{step.index + 1}."
    indent = " " * (len(number) + 1)
    label = kind_named(transcript.kind).outcome_label(step.index)
    head = f"{number} {step_mark(step.status)} **{escape(step.label)}** ({label}) — "
    turns = f"{step.turns_used} turn{'s' if step.turns_used != 1 else ''}"
    if step.status == "complete":
        head += "complete" + (f" at turn {step.completed_at_turn}" if step.completed_at_turn is not None else "")
    elif step.status == "blocked":
        head += escape(step_words(step))
    elif step.status == "incomplete":
        head += f"**not complete** after {turns}"
        if step.verdict:
            head += f" (last check: {step.verdict})"
    elif step.status == "unsure":
        head += f"unsure after {turns}: the conversation moved on"
    else:
        head += step_words(step)
    lines = [head]
    if step.rationale:
        lines.append("")
        lines.append(indent + "\n".join(_block(step.rationale, indent, at_start=True)))
    if step_state(step.status) in ("not_met", "unsure"):
        checks = _step_checks(transcript, step, indent)
        if checks:
            lines += ["", *checks]
    return lines


def _golden_lines(stored: StoredResult) -> list[str]:
    transcript = stored.result.transcript
    states = golden_turn_states(transcript.golden_turns, stored.result.scores)
    met = sum(1 for state in states.values() if state == "met")
    lines = [f"#### Turns ({met}/{len(transcript.golden_turns)}{unsure_note(states.values())})", ""]
    for record in transcript.golden_turns:
        number = f"{record.index + 1}."
        indent = " " * (len(number) + 1)
        sent = f"user: {escape(record.user)}" if record.user is not None else f"event: {escape(record.event or '')}"
        lines.append(f"{number} {MARK[states[record.index]]} {sent}")
        if record.expected_message is not None:
            lines.append(f"{indent}expected: {escape(record.expected_message)}\\")
        actual = " / ".join(escape(message) for message in record.actual_messages) or "*(no message)*"
        lines.append(f"{indent}actual: {actual}")
        if record.expected_tools or record.actual_tools:
            lines[-1] += "\\"
            expected = ", ".join(escape(name) for name in record.expected_tools) or "none"
            called = ", ".join(escape(name) for name in record.actual_tools) or "none"
            lines.append(f"{indent}tools expected: {expected}; called: {called}")
    return [*lines, ""]


def _scores_not_passed(scores: Sequence[Score]) -> list[str]:
    shown = [score for score in scores if score.verdict in ("not_met", "unsure", "error")]
    if not shown:
        return []
    lines = [
        "#### Scores that did not pass",
        "",
        "| verdict | check | source | value | reason |",
        "|---|---|---|---|---|",
    ]
    for score in shown:
        verdict = f"{score_mark(score)} {score.verdict}" + ("" if score.required else " (not required)")
        value = "" if score.value is None else f"{score.value:g}"
        if score.threshold is not None:
            value += f" (threshold {score.threshold:g})"
        lines.append(f"| {verdict} | {_cell(score.check)} | {score.source} | {value or ' '} | {_cell(score.reason)} |")
    return [*lines, ""]


def _tool_line(call: ToolCallRecord) -> list[str]:
    arguments = call.arguments_error or _json(call.arguments)
    status = _TOOL_STATUS[call.status] if call.world is None else escape(call.status_label)
    if call.fake and call.status == "faked":
        status += f" by {escape(call.fake)}"
    if call.simulated_by and call.status == "simulated":
        status += f" by {escape(call.simulated_by)} (test mode: a model played the tool, which did not run)"
    if call.fault:
        status += f" — ⚡ injected fault {escape(call.fault)} (on purpose; the tool was not asked)"
    mark = "🔧" if call.answered else "⚠️"
    shown = escape(redacted_and_shortened(arguments, _TOOL_RESULT_MAX))
    line = f"- {mark} tool **{escape(call.name)}**({shown}) — {status}"
    answer = call.error if call.error else (None if call.result is None else call.result_text)
    if answer is not None:
        line += f" → {escape(redacted_and_shortened(answer, _TOOL_RESULT_MAX))}"
    touched = call.world.summary() if call.world is not None else ""
    return [line, f"  - world: {escape(redacted_and_shortened(touched, _TOOL_RESULT_MAX))}"] if touched else [line]


def _finding_line(finding: FidelityFinding) -> str:
    return (
        f"  - {FIDELITY_MARK} **user fidelity** (turn {finding.turn}): {finding.kind}: "
        f"“{escape(finding.evidence)}” ({escape(finding.rule)})"
    )


def _transcript_lines(transcript: Transcript, findings: Sequence[FidelityFinding] = ()) -> list[str]:
    if not transcript.events:
        return ["#### Transcript", "", "*(no events)*", ""]
    lines = ["#### Transcript", ""]
    replay = transcript.replay
    if replay is not None:
        lines += [f"*{escape(replay.summary())}*", ""]
    shown_at: set[int] = set()
    for event in transcript.events:
        divergence = replay.divergence(event.turn) if replay is not None and isinstance(event, AgentEvent) else None
        if divergence is not None:
            lines.append(f"- ⟂ **{escape(divergence)}**")
        if isinstance(event, UserEvent):
            lines.append(f"- 🧑 **user** (turn {event.turn}): " + "\n".join(_block(event.text, "  ", at_start=False)))
            if event.misreport:
                lines.append(f"  - misreports on purpose (persona): {escape(event.misreport)}")
            if event.turn not in shown_at:
                shown_at.add(event.turn)
                lines.extend(_finding_line(finding) for finding in findings if finding.turn == event.turn)
        elif isinstance(event, InputEvent):
            payload = f" {escape(_json(event.payload))}" if event.payload else ""
            lines.append(f"- 🔔 **event** (turn {event.turn}): {escape(event.name)}{payload}")
        elif isinstance(event, AgentEvent):
            for call in event.tool_calls:
                lines.extend(_tool_line(call))
            for message in event.messages:
                lines.append(f"- 🤖 **agent** (turn {event.turn}): " + "\n".join(_block(message, "  ", at_start=False)))
            if event.handoff:
                lines.append(f"- 🤖 **agent** (turn {event.turn}) hands off to {escape(event.handoff)}")
            if not event.messages and not event.handoff:
                lines.append(f"- 🤖 **agent** (turn {event.turn}): *(no message)*")
        elif isinstance(event, CheckEvent):
            where = f"step {event.step + 1}" if event.step is not None else "goal"
            lines.append(
                f"- {verdict_mark(event.verdict, event.rationale)} check of {where} (turn {event.turn}): "
                f"{event.verdict} — {escape(event.rationale)}"
            )
        elif isinstance(event, ErrorEvent):
            lines.append(f"- ⚠️ **error** in {event.where} (turn {event.turn}): {escape(event.message)}")
    # An ending without a closing message has no user line of its own.
    lines.extend(_finding_line(finding).lstrip() for finding in findings if finding.turn not in shown_at)
    return [*lines, ""]


def _fidelity(results: Sequence[StoredResult]) -> list[str]:
    """The simulated user's fidelity per persona, when the user model wrote any turn or a finding was made."""
    personas = persona_fidelity(stored.result for stored in results)
    if not any(p.user_turns or p.findings for p in personas):
        return []
    lines = [
        "## Simulated user fidelity",
        "",
        "| persona | user turns | flagged | fidelity | findings | user errors |",
        "|---|---|---|---|---|---|",
    ]
    for p in personas:
        kinds = ", ".join(f"{kind} {count}" for kind, count in p.findings.items()) or "none"
        lines.append(
            f"| {escape(p.persona or '-')} | {p.user_turns} | {p.flagged_turns} | {percent(p.rate)} | {escape(kinds)} "
            f"| {p.user_errors} |"
        )
    return [*lines, ""]


def _case_lines(record: RunRecord, stored: StoredResult, stats: RepeatStats | None) -> list[str]:
    result = stored.result
    transcript = result.transcript
    lines = [f"### {outcome_mark(stored.outcome)} {stored.outcome}: {_title(record, stored)}", ""]
    facts = [
        result.kind,
        f"{transcript.turns} turn{'s' if transcript.turns != 1 else ''}",
        f"stopped: {transcript.stop_reason}",
        f"{stored.duration_s:.1f} s",
    ]
    if stats is not None:
        facts.append(f"repeats: {_label(stats)} ({stats.passes}/{stats.k} passed)")
    lines += [" · ".join(facts), ""]
    if stored.reviews:
        lines += [f"**Reviewed:** {stored.reviewed_outcome or stored.outcome} (judged {stored.outcome})", ""]
        lines += [f"- {escape(text)}" for text in review_texts(stored)] + [""]
    if stored.outcome == "error":
        lines += _error_card(stored)
    elif result.reasons:
        lines += ["**Why:**", ""]
        for reason in result.reasons:
            lines.append("- " + "\n".join(_block(reason, "  ", at_start=True)))
        lines.append("")
    steps = steps_in_order(transcript.steps)
    if steps:
        lines += [f"#### Goals ({goals_count(steps)})", ""]
        for step in steps:
            lines += _step_lines(transcript, step)
        lines.append("")
    if transcript.golden_turns:
        lines += _golden_lines(stored)
    lines += _scores_not_passed(result.scores)
    lines += _transcript_lines(transcript, result.fidelity)
    lines += _world_lines(transcript)
    return lines


def _world_lines(transcript: Transcript) -> list[str]:
    """The conversation's world: what it left changed, record by record (nothing without a world)."""
    if transcript.world is None:
        return []
    changes = [f"- {escape(line)}" for line in change_lines(transcript.world)]
    return ["#### World", "", escape(world_summary(transcript.world)), "", *changes, *([""] if changes else [])]


def render_markdown(record: RunRecord, results: Sequence[StoredResult], *, left_out: Sequence[str] = ()) -> str:
    """The run as a Markdown report: header, metrics, repeats, and every conversation goal by goal; ``left_out``
    (stored results that could not be read, each with its fix) listed under the header."""
    ordered = ordered_results(record, results)
    summary = summary_of(record)
    cases = summary.by_case()
    failures_first = sorted(ordered, key=lambda r: _OUTCOME_ORDER[r.outcome])  # stable: plan order within
    lines = _header(record, summary) + _left_out(left_out)
    lines += _metrics(summary) + _repeats(record, summary) + _faults(summary) + _coverage(record, summary)
    lines += _fidelity(ordered)
    if failures_first:
        lines += _overview(record, failures_first)
    for stored in failures_first:
        case = cases.get((stored.suite, stored.case, stored.persona))
        lines += _case_lines(record, stored, case.stats if case is not None and case.stats.k > 1 else None)
    while lines and not lines[-1]:
        lines.pop()
    return "\n".join(lines) + "\n"
