"""Chat-only formatting in what a voice agent says: markdown, links, addresses, code and emoji that a chat window
shows and a voice reads out ("asterisk asterisk refund", "h t t p s colon slash slash").

:func:`chat_only_formatting` finds them in one text (the agent's own text of a spoken reply where it reports one,
else what the recogniser heard); the ``spoken_formatting`` scorer turns them into one flag per voice reply that has
any. A flag is not required: a voice that reads out an address on purpose is not wrong, and the report shows it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from simulator.models.scores import Score
from simulator.models.transcript import AgentEvent, Transcript

__all__ = ["METRIC", "Formatting", "chat_only_formatting", "formatting_flags"]

#: The metric of the flags.
METRIC = "spoken_formatting"


@dataclass(frozen=True)
class Formatting:
    """One piece of chat-only formatting: what kind (``bold``, ``heading``, ``bullet``, ``link``, ``url``,
    ``code``, ``table``, ``emoji``) and the text found."""

    kind: str
    text: str

    def describe(self) -> str:
        """``markdown bold "**refund**"``."""
        return f'{_NAMES[self.kind]} "{self.text}"'


_NAMES = {
    "bold": "markdown bold",
    "heading": "a markdown heading",
    "bullet": "a list bullet",
    "link": "a markdown link",
    "url": "a web address",
    "code": "code formatting",
    "table": "a table row",
    "emoji": "an emoji",
}

_PATTERNS: tuple[tuple[str, re.Pattern[str]], ...] = (
    ("link", re.compile(r"\[[^\]\n]+\]\([^)\s]+\)")),
    ("url", re.compile(r"\b(?:https?://|www\.)[^\s<>()\"']+", re.IGNORECASE)),
    ("bold", re.compile(r"(\*\*|__)(?=\S)[^\n]+?(?<=\S)\1")),
    ("heading", re.compile(r"^[ \t]{0,3}#{1,6}[ \t]+\S[^\n]*", re.MULTILINE)),
    ("bullet", re.compile(r"^[ \t]*[-*+•][ \t]+\S[^\n]*", re.MULTILINE)),
    ("code", re.compile(r"`[^`\n]+`")),
    ("table", re.compile(r"^[ \t]*\|[^\n]*\|[ \t]*$", re.MULTILINE)),
)

# Pictographs, dingbats, symbols and flags, the keycap and variation-selector marks of emoji sequences.
_EMOJI = re.compile(
    "[\U0001f1e6-\U0001f1ff\U0001f300-\U0001f5ff\U0001f600-\U0001f64f\U0001f680-\U0001f6ff"
    "\U0001f900-\U0001f9ff\U0001fa70-\U0001faff\u2600-\u26ff\u2700-\u27bf\u2b50\u2b55\u203c\u2049]"
    "[\ufe0f\u200d\U0001f3fb-\U0001f3ff]*"
)


def chat_only_formatting(text: str) -> list[Formatting]:
    """The chat-only formatting in ``text``, in order of appearance, each found once (a link's address is not a
    second finding)."""
    found: list[tuple[int, Formatting]] = []
    taken: list[range] = []
    for kind, pattern in (*_PATTERNS, ("emoji", _EMOJI)):
        for match in pattern.finditer(text):
            span = range(match.start(), match.end())
            if any(span.start < other.stop and other.start < span.stop for other in taken):
                continue
            taken.append(span)
            # a sentence's full stop after an address is not part of it
            shown = match.group(0).rstrip(".,;:!?") if kind == "url" else match.group(0).strip()
            found.append((match.start(), Formatting(kind, shown)))
    return [finding for _, finding in sorted(found, key=lambda item: item[0])]


def formatting_flags(transcript: Transcript) -> list[Score]:
    """One not-required ``spoken_formatting`` score (``not_met``) per voice agent turn whose words carry chat-only
    formatting, naming the turn and describing each finding; none for a chat turn or a clean one. A flag never
    decides the case: a voice that reads out an address may mean to."""
    flags: list[Score] = []
    for reply in transcript.agent_events():
        if reply.voice is None:
            continue
        found = chat_only_formatting(_spoken_text(reply))
        if not found:
            continue
        whose = "the agent's own text of its audio" if reply.voice.said else "what was heard of the agent"
        flags.append(
            Score(
                metric=METRIC,
                check=f"spoken formatting: turn {reply.turn}",
                source="deterministic",
                verdict="not_met",
                reason=f"chat-only formatting a voice reads out, in {whose}: "
                + "; ".join(finding.describe() for finding in found),
                required=False,
                turn=reply.turn,
                step=reply.step,
            )
        )
    return flags


def _spoken_text(reply: AgentEvent) -> str:
    """What the agent said in a voice turn: its own text where it reported one (a recogniser writes no markdown),
    else what was heard."""
    said = reply.voice.said if reply.voice is not None else []
    return "\n".join(said if said else reply.messages)
