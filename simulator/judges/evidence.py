"""A judge's pass must show its evidence, and deterministic evidence outranks it.

A judge that decides met (a step's criterion, an expectation) or satisfied (the user's goal) quotes the agent's
words that show it. :func:`overrule_pass` checks such a pass before it counts:

1. the criterion names a declared tool (``refund_order``, or its words: "refunds the order") whose calls in the
   judged conversation all did not run (``not_executed``, ``failed``, ``needs_approval``): ``not_met``, naming
   the tool and its status. A criterion that negates ("does not refund", "without", "never") is left to the
   judge: not calling a tool may be what it asks;
2. the quote is empty: ``unsure`` ("the judge's pass quotes no agent text");
3. the quote is not in the agent's own messages in the judged scope (a tool result or a user turn is not the
   agent's words): ``unsure`` ("the judge quoted text that is not in the agent's messages");
4. the quote lies in a sentence :func:`~simulator.judges.claims.find_unsupported_claims` flags (a claim of tool
   use that no call backs): ``not_met``, with that finding.

Quotes are compared by :func:`quote_in`: ignoring case, whitespace and the kind of quotation marks.
"""

from __future__ import annotations

import json
import re
import unicodedata
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Literal

from simulator.judges.claims import DeclaredTools, find_unsupported_claims
from simulator.models.transcript import AgentEvent, ToolCallRecord, TranscriptEvent
from simulator.safety import redacted_and_shortened

__all__ = ["NOT_AGENT_TEXT", "NO_QUOTE", "Evidence", "Overruled", "overrule_pass", "quote_in"]

#: The reason of a pass whose quote is empty.
NO_QUOTE = "the judge's pass quotes no agent text"
#: The reason of a pass whose quote is not in the agent's messages.
NOT_AGENT_TEXT = "the judge quoted text that is not in the agent's messages"

_QUOTE_MARKS = str.maketrans(
    {"“": '"', "”": '"', "„": '"', "‟": '"', "«": '"', "»": '"', "‘": "'", "’": "'", "‚": "'", "‛": "'", "`": "'"}
)
_ELLIPSIS = re.compile(r"\[?(?:\.\.\.|…)\]?")
_EDGES = " \"'.,;:!?"

#: How much of a quote a verdict shows.
_QUOTE_CHARS = 200


def _comparable(text: str) -> str:
    return " ".join(unicodedata.normalize("NFKC", text).translate(_QUOTE_MARKS).casefold().split())


def quote_in(quote: str, text: str) -> bool:
    """Whether ``quote`` occurs in ``text``: ignoring case, whitespace and the kind of quotation marks, and
    the quotation marks and punctuation around it. An ellipsis (``...``, ``…``, ``[...]``) stands for
    left-out words: the parts around it must occur in this order. An empty quote (nothing quoted) is in
    every text. A quote copied with JSON's escapes (``\\"``, ``\\n``: the judge reads messages as JSON
    strings) is also read unescaped."""
    if _found(quote, text):
        return True
    return "\\" in quote and _found(_unescaped(quote), text)


def _found(quote: str, text: str) -> bool:
    haystack = _comparable(text)
    position = 0
    for part in _ELLIPSIS.split(_comparable(quote)):
        needle = part.strip(_EDGES)
        if not needle:
            continue
        found = haystack.find(needle, position)
        if found < 0:
            return False
        position = found + len(needle)
    return True


def _unescaped(quote: str) -> str:
    try:
        value = json.loads(f'"{quote}"')
    except ValueError:
        return quote
    return value if isinstance(value, str) else quote


@dataclass(frozen=True)
class Evidence:
    """What a judge's pass is checked against: ``scope``, the events the judge was shown (the quote must be in
    the agent's messages among them); ``replies``, every agent reply of the conversation (a claim of tool use
    may be backed by an earlier call; default: the agent's replies in ``scope``); the agent's declared tools, as
    :func:`~simulator.judges.claims.find_unsupported_claims` takes them (names, or tools with a description)."""

    scope: Sequence[TranscriptEvent]
    replies: Sequence[AgentEvent] | None = None
    declared_tools: DeclaredTools = ()

    def agent_replies(self) -> list[AgentEvent]:
        """The agent's replies in the judged scope."""
        return [event for event in self.scope if isinstance(event, AgentEvent)]


@dataclass(frozen=True)
class Overruled:
    """A pass that does not count: what it is instead, and why."""

    verdict: Literal["not_met", "unsure"]
    reason: str


def overrule_pass(quote: str, criterion: str, reason: str, evidence: Evidence) -> Overruled | None:
    """Why a judge's pass of ``criterion`` with ``quote`` (and its ``reason``) does not count, or None when it
    stands (the rules are the module's)."""
    said = f"the judge said it is met: {reason}"
    scope = evidence.agent_replies()
    idle = _idle_tool(criterion, evidence.declared_tools, [call for reply in scope for call in reply.tool_calls])
    if idle is not None:
        return Overruled("not_met", f"{idle}; {said}")
    if not quote.strip():
        return Overruled("unsure", f"{NO_QUOTE}; {said}")
    messages = "\n".join(message for reply in scope for message in reply.messages)
    if not quote_in(quote, messages):
        return Overruled(
            "unsure", f"{NOT_AGENT_TEXT}: “{redacted_and_shortened(quote, _QUOTE_CHARS, flat=True)}”; {said}"
        )
    replies = evidence.replies if evidence.replies is not None else scope
    turns = {reply.turn for reply in scope}
    for finding in find_unsupported_claims(replies, evidence.declared_tools):
        if finding.turn not in turns:
            continue
        text = "\n".join(m for reply in scope if reply.turn == finding.turn for m in reply.messages)
        if _rests_on(quote, finding.claim, text):
            return Overruled(
                "not_met", f"the judge's quote rests on an unbacked claim of tool use (turn {finding.turn}: "
                f"{finding.reason}); {said}"
            )  # fmt: skip
    return None


_NEGATION = re.compile(r"n't\b|\b(?:not|never|no|without|nicht|nie|niemals|ohne|kein\w*)\b", re.IGNORECASE)
_WORD = re.compile(r"[^\W\d_]+")
_GENERIC = {"get", "do"}


def _idle_tool(criterion: str, declared: DeclaredTools, calls: Sequence[ToolCallRecord]) -> str | None:
    """Why the criterion cannot be met: a declared tool it names whose calls all did not run, or None."""
    if _NEGATION.search(criterion):
        return None
    names = list(declared) if isinstance(declared, Mapping) else [t if isinstance(t, str) else t.name for t in declared]
    for tool in _named_tools(criterion, names):
        of_tool = [call for call in calls if call.name == tool]
        if of_tool and not any(call.answered for call in of_tool):
            statuses = ", ".join(f"{call.name} [{call.status}]" for call in of_tool)
            return f"the criterion names {tool}, whose calls did not run ({statuses})"
    return None


def _named_tools(criterion: str, declared: Sequence[str]) -> list[str]:
    """The declared tools ``criterion`` names: by name (``refund_order``) or by the words of it ("refunds the
    order"): every part of the name but a generic one (``get``, ``do``), and at least two of them when it has two."""
    text = criterion.casefold()
    words = {word.casefold().removesuffix("s") for word in _WORD.findall(criterion)}
    named: list[str] = []
    for tool in declared:
        parts = {part.casefold().removesuffix("s") for part in re.split(r"[_\-\s]+", tool) if len(part) > 2}
        by_words = bool(parts) and parts <= words | _GENERIC and len(parts & words) >= min(2, len(parts))
        if tool.casefold() in text or by_words:
            named.append(tool)
    return named


_SENTENCE = re.compile(r"[^.!?\n]+[.!?]*")


def _rests_on(quote: str, claim: str, text: str) -> bool:
    """Whether ``quote`` holds the flagged ``claim`` or lies in a sentence of ``text`` that makes it."""
    if quote_in(claim, quote):
        return True
    sentences = [s.strip() for s in _SENTENCE.findall(text.replace("\u2019", "'")) if s.strip()]
    flagged = [s for s in sentences if quote_in(claim, s) or quote_in(s, claim)]
    return any(quote_in(quote, sentence) or quote_in(sentence, quote) for sentence in flagged)
