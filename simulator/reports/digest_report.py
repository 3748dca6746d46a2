"""A failure digest as terminal lines, Markdown or HTML parts (pure functions, no I/O).

The digest is :func:`simulator.analysis.digest.build_digest`'s (:class:`~simulator.models.digest.Digest`), with
the judge model's suggestions when it was asked; they are shown under :data:`SUGGESTIONS_HEADING`, as
unverified. Every text from the results and the model is escaped in Markdown.
"""

from __future__ import annotations

from simulator.models.digest import SUGGESTIONS_HEADING, Digest, FailureGroup
from simulator.reports._html_values import HtmlParts, _e
from simulator.reports.markdown import escape as md_escape
from simulator.reports.markdown import escape_lines as md_lines
from simulator.safety import redacted_and_shortened

__all__ = ["render_digest_html", "render_digest_markdown", "render_digest_text"]

_SHOWN_TEXT = 300
_SHOWN_CASES = 10


def _flat(text: str) -> str:
    return " ".join(text.split())


def _summary(digest: Digest) -> str:
    causes = len(digest.groups)
    return (
        f"{digest.not_passed} of {digest.results} conversation{'s' if digest.results != 1 else ''} did not pass; "
        f"{causes} cause{'s' if causes != 1 else ''}, most frequent first."
    )


def _count_line(group: FailureGroup) -> str:
    line = f"{group.count} conversation{'s' if group.count != 1 else ''}"
    if group.occurrences != group.count:
        line += f", {group.occurrences} failures"
    return line


def _cases_text(group: FailureGroup) -> str:
    shown = "; ".join(ref.describe() for ref in group.cases[:_SHOWN_CASES])
    more = len(group.cases) - _SHOWN_CASES
    return shown + (f"; and {more} more" if more > 0 else "")


def _has_suggestions(digest: Digest) -> bool:
    return any(group.suggestion is not None for group in digest.groups)


def render_digest_text(digest: Digest) -> list[str]:
    """Plain lines for the terminal: the summary, every group (count, cases, reasons, examples), then the
    model suggestions under :data:`SUGGESTIONS_HEADING`, or the digest's note."""
    if not digest.groups:
        return [f"Failure digest: {digest.not_passed} of {digest.results} conversations did not pass."]
    lines = [f"Failure digest: {_summary(digest)}"]
    for number, group in enumerate(digest.groups, start=1):
        lines.append(f"{number}. {group.title()}: {_count_line(group)}")
        lines.append(f"     cases: {_cases_text(group)}")
        for reason in group.reasons:
            lines.append(f"     {reason.count}× {redacted_and_shortened(reason.text, _SHOWN_TEXT)}")
        for example in group.examples:
            where = f", turn {example.turn}" if example.turn is not None else ""
            lines.append(f"     example: {example.case.describe()}{where}")
            if example.user is not None:
                lines.append(f"       user: {redacted_and_shortened(example.user, _SHOWN_TEXT, flat=True)}")
            lines += [f"       tool: {tool}" for tool in example.tools]
            lines += [
                f"       agent: {redacted_and_shortened(message, _SHOWN_TEXT, flat=True)}" for message in example.agent
            ]
            if not example.agent:
                lines.append("       agent: (no message)")
    if _has_suggestions(digest):
        lines.append(f"{SUGGESTIONS_HEADING}:")
        for number, group in enumerate(digest.groups, start=1):
            suggestion = group.suggestion
            if suggestion is None:
                continue
            if suggestion.failed:
                lines.append(f"  {number}. {group.title()}: no suggestion: {suggestion.error}")
                continue
            lines.append(f"  {number}. {group.title()}:")
            lines += [f"       {line}" for line in suggestion.change.splitlines() if line.strip()]
            lines.append(f"       why: {_flat(suggestion.rationale)}")
    if digest.note:
        lines.append(f"Note: {digest.note}")
    return lines


def _md_text(text: str) -> str:
    return md_escape(redacted_and_shortened(text, _SHOWN_TEXT, flat=True)) or "*(empty)*"


def render_digest_markdown(digest: Digest) -> str:
    """The digest as Markdown: a section per group (most frequent first), then the model suggestions under a
    heading ``Model suggestions (not verified)``. All text from the results and the model is escaped."""
    lines = ["# Failure digest", ""]
    if not digest.groups:
        lines += [f"{digest.not_passed} of {digest.results} conversations did not pass.", ""]
    else:
        lines += [_summary(digest), ""]
    for number, group in enumerate(digest.groups, start=1):
        lines += [f"## {number}. {md_escape(group.title())}", ""]
        lines.append(f"- **Kind:** {group.kind} · **Metric:** {md_escape(group.name)} · {_count_line(group)}")
        lines.append(f"- **Cases:** {md_escape(_cases_text(group))}")
        if group.reasons:
            lines.append("- **Most common reasons:**")
            lines += [f"  - {reason.count}× {_md_text(reason.text)}" for reason in group.reasons]
        lines.append("")
        for example in group.examples:
            where = f", turn {example.turn}" if example.turn is not None else ""
            quote = [f"**Example:** {md_escape(example.case.describe())}{where}"]
            if example.user is not None:
                quote.append(f"**User:** {_md_text(example.user)}")
            quote += [f"**Tool call:** {md_escape(tool)}" for tool in example.tools]
            quote += [f"**Agent:** {_md_text(message)}" for message in example.agent]
            if not example.agent:
                quote.append("**Agent:** *(no message)*")
            # One quote, its lines joined by hard line breaks (a trailing backslash).
            lines += [f"> {line}\\" for line in quote[:-1]]
            lines += [f"> {quote[-1]}", ""]
    if _has_suggestions(digest) or digest.note:
        lines += [f"## {SUGGESTIONS_HEADING}", ""]
        if _has_suggestions(digest):
            lines += [
                "*Proposed by the judge model from the failures above (source: model suggestion); not tested. "
                "Re-run the suite after changing the instructions.*",
                "",
            ]
        for number, group in enumerate(digest.groups, start=1):
            suggestion = group.suggestion
            if suggestion is None:
                continue
            lines.append(f"### {number}. {md_escape(group.title())}")
            lines.append("")
            if suggestion.failed:
                lines += [f"No suggestion: {md_escape(suggestion.error or '')}", ""]
                continue
            model = f" ({md_escape(suggestion.model)})" if suggestion.model else ""
            lines += [f"**Suggested change{model}:**", ""]
            change = [line for line in md_lines(suggestion.change) if line]
            lines += [f"> {line}\\" for line in change[:-1]]
            lines += [f"> {line}" for line in change[-1:]]
            lines += ["", f"**Why:** {md_escape(suggestion.rationale)}", ""]
        if digest.note:
            lines += [f"*{md_escape(digest.note)}*", ""]
    while lines and not lines[-1]:
        lines.pop()
    return "\n".join(lines) + "\n"


def _html_text(text: str) -> str:
    return _e(redacted_and_shortened(text, _SHOWN_TEXT, flat=True)) or "<em>(empty)</em>"


def render_digest_html(digest: Digest, title: str) -> HtmlParts:
    """The digest as HTML parts (its body for a page with the report's styles): the summary, a section per group
    (most frequent first: count, cases, the most common reasons, examples), the model suggestions as unverified,
    the note. Every text from the results and the model is escaped as the reports escape it."""
    parts = [f"<h1>{_e(title)}</h1>"]
    if not digest.groups:
        parts.append(f"<p>{_e(f'{digest.not_passed} of {digest.results} conversations did not pass.')}</p>")
    else:
        parts.append(f"<p>{_e(_summary(digest))}</p>")
    for number, group in enumerate(digest.groups, start=1):
        reasons = "".join(f"<li>{reason.count}× {_html_text(reason.text)}</li>" for reason in group.reasons)
        examples = []
        for example in group.examples:
            where = f", turn {example.turn}" if example.turn is not None else ""
            lines = [f"<p class='muted'>Example: {_e(example.case.describe())}{_e(where)}</p>"]
            if example.user is not None:
                lines.append(f"<div class='msg user'><div class='text'>{_html_text(example.user)}</div></div>")
            lines += [f"<div class='tool'>tool <code>{_e(tool)}</code></div>" for tool in example.tools]
            lines += [
                f"<div class='msg agent'><div class='text'>{_html_text(message)}</div></div>"
                for message in example.agent
            ] or ["<div class='msg agent'><em>(no message)</em></div>"]
            examples.append(f"<div class='transcript'>{''.join(lines)}</div>")
        suggestion = ""
        if group.suggestion is not None:
            found = group.suggestion
            suggestion = (
                f"<p class='muted'>{_e(SUGGESTIONS_HEADING)}: no suggestion: {_e(found.error or '')}</p>"
                if found.failed
                else f"<h4>{_e(SUGGESTIONS_HEADING)}{' (' + _e(found.model) + ')' if found.model else ''}</h4>"
                f"<pre>{_e(found.change)}</pre><p>Why: {_e(found.rationale)}</p>"
            )
        parts.append(
            f"<section class='digest-group' id='cause-{number}'><h2>{number}. {_e(group.title())}</h2>"
            f"<p>{_e(group.kind)} · {_e(group.name)} · {_e(_count_line(group))}</p>"
            f"<p class='muted'>Cases: {_e(_cases_text(group))}</p>"
            + (f"<h4>Most common reasons</h4><ul class='reasons'>{reasons}</ul>" if reasons else "")
            + "".join(examples)
            + suggestion
            + "</section>"
        )
    if digest.note:
        parts.append(f"<p class='muted'>{_e(digest.note)}</p>")
    return HtmlParts(title, "".join(parts))
