"""Claims of tool use, checked against the tool calls that really happened (no model needed).

Before any model is asked whether an agent turn hallucinated, two kinds of claim are flagged here, because
they are certain and a judge that reads only the text can be fooled by them:

* the agent says it used a tool or looked something up ("according to our delivery system", "I've checked
  your order", "our records show", "laut unserem System") but no tool call ran in this turn; a claim that
  names a tool (e.g. "holiday lookup" for ``lookup_holidays``) is also backed by an earlier call of that
  tool that ran, never by an earlier call of another tool;
* the agent states results although every tool call of this turn did not run (``not_executed`` in test mode,
  or ``failed``; a fake's or a simulated tool's answer counts as a result) and it does not say so ("could not",
  "unable", "konnte nicht" ...).

The phrase lists cover English and German; they find claims, they cannot prove their absence, so a turn they
do not flag still goes to the judge model (or stays ``unsure`` without one).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from simulator.models.transcript import AgentEvent, ToolCallRecord

_CLAIMS = [
    r"\baccording to (?:our|the|my|your) [\w\- ]{0,40}?"
    r"(?:system|records?|database|data|lookup|tool|tracking|check)\b",
    r"\b(?:i|we)(?:'ve| have)? (?:just )?"
    r"(?:checked|looked (?:it |that |this )?up|verified|searched|queried|pulled up)\b",
    r"\b(?:our|the) (?:records?|system|database|data) (?:show|shows|say|says|indicate|indicates|confirm|confirms)\b",
    r"\b(?:i|we)(?:'ve| have) "
    r"(?:processed|issued|refunded|cancel+ed|booked|submitted|created|updated|changed|sent|added|attached)\b",
    r"\blaut (?:(?:unserem|unseren|unserer|dem|der|den) )?(?:\w+ ){0,2}?"
    r"\w*(?:system|daten|unterlagen|aufzeichnung|abfrage)\w*",
    r"\bich habe (?:\w+ ){0,3}?"
    r"(?:nachgesehen|nachgeschaut|geprüft|überprüft|abgefragt|gefunden|storniert|erstattet)\b",
    r"\bunser(?:e)? (?:system|daten|unterlagen) (?:zeigt|zeigen|sagt|sagen|bestätigt|bestätigen)\b",
]
_CLAIM = re.compile("|".join(f"(?:{pattern})" for pattern in _CLAIMS), re.IGNORECASE)
_ADMITS_FAILURE = re.compile(
    r"\b(?:could(?:n't| not)|can(?:'t|not)|unable|not able|failed|error|unavailable|didn't work|did not work|"
    r"konnten? (?:[\w-]+ ){0,6}?nicht|nicht möglich|nicht verfügbar|fehler|leider nicht)\b",
    re.IGNORECASE,
)
# A claim inside a question, or in a clause about what will happen ("once I've verified ..."), claims nothing.
_NOT_A_STATEMENT = re.compile(
    r"\b(?:once|after|when|if|before|as soon as|until|sobald|wenn|nachdem|bevor|falls)\b", re.IGNORECASE
)
_SENTENCE = re.compile(r"[^.!?\n]+[.!?]*")
_WORD = re.compile(r"[a-zäöüß]+", re.IGNORECASE)


@dataclass(frozen=True)
class ClaimFinding:
    """A flagged turn: the claim as written and why it is unsupported."""

    turn: int
    claim: str
    reason: str


def _named_tool(claim: str, declared: Sequence[str]) -> str | None:
    """A declared tool the claim names by its words ("holiday lookup" -> ``lookup_holidays``)."""
    words = {w.casefold().rstrip("s") for w in _WORD.findall(claim)}
    best: str | None = None
    for tool in declared:
        parts = {p.casefold().rstrip("s") for p in re.split(r"[_\-]+", tool) if len(p) > 2}
        named = parts and parts <= words | {"get", "do"} and len(parts & words) >= min(2, len(parts))
        if named or _compound_names(words, parts):
            best = tool
    return best


def _compound_names(words: set[str], parts: set[str]) -> bool:
    """A German compound naming a tool of several parts: "Feiertagsabfrage" for ``feiertage_abfragen``. Each
    part's stem (without its last two letters, at least four kept) occurs in one word of the claim."""
    stems = [part[: max(4, len(part) - 2)] for part in parts if len(part) >= 4]
    if len(stems) < 2 or len(stems) != len(parts):
        return False
    return any(all(stem in word for stem in stems) for word in words)


def _statements(text: str) -> list[str]:
    """The sentences that state something: not questions."""
    return [s.strip() for s in _SENTENCE.findall(text) if s.strip() and not s.strip().endswith("?")]


def _claim_in(statements: list[str]) -> re.Match[str] | None:
    for sentence in statements:
        match = _CLAIM.search(sentence)
        if match is not None and not _NOT_A_STATEMENT.search(sentence[: match.start()]):
            return match
    return None


def find_unsupported_claims(replies: Sequence[AgentEvent], declared_tools: Sequence[str] = ()) -> list[ClaimFinding]:
    """Every agent turn that claims tool use which did not happen, or results its tools never returned.

    A claim is backed by a call that ran (``executed`` or ``faked``, without an error) in the same turn, or,
    when it names a declared tool, by a call of that tool that ran in this turn or an earlier one. A call
    that ran at turn 1 does not back "I checked the order" at turn 2, which names no tool. When every call of
    the turn did not run, the rule for results stated without data decides (a turn that admits it is not
    flagged).
    """
    findings: list[ClaimFinding] = []
    earlier: list[ToolCallRecord] = []
    for reply in replies:
        this_turn = list(reply.tool_calls)
        called = earlier + this_turn
        earlier = called
        # Typographic apostrophes ("couldn’t") read like plain ones.
        text = "\n".join(reply.messages).replace("\u2019", "'")
        if not text.strip():
            continue
        statements = _statements(text)
        match = _claim_in(statements)
        none_ran = bool(this_turn) and not any(_ran(call) for call in this_turn)
        if match is not None and not none_ran:
            claim = match.group(0)
            why = _unbacked(claim, _named_tool(claim, declared_tools), this_turn, called)
            if why is not None:
                findings.append(ClaimFinding(reply.turn, claim, f"claims “{claim}” but {why}"))
                continue
        states_data = match is not None or any(re.search(r"\d", sentence) for sentence in statements)
        if none_ran and not _ADMITS_FAILURE.search(text) and states_data:
            statuses = ", ".join(f"{call.name} [{call.status}]" for call in this_turn)
            findings.append(
                ClaimFinding(
                    reply.turn,
                    match.group(0) if match else text[:80],
                    f"states results although its tool calls did not run ({statuses}) and does not say so",
                )
            )
    return findings


def _ran(call: ToolCallRecord) -> bool:
    # A fake's or a simulated tool's result backs a claim as a real one does: the agent got it as the tool's answer.
    return call.answered


def _unbacked(
    claim: str, tool: str | None, this_turn: Sequence[ToolCallRecord], called: Sequence[ToolCallRecord]
) -> str | None:
    """Why a claim made in a turn with these calls (``called``: so far, this turn's included) is not backed,
    or None when it is."""
    if not called:
        return "no tool was called in the conversation"
    if tool is None:
        return None if any(_ran(call) for call in this_turn) else "no tool was called in this turn"
    of_tool = [call for call in called if call.name == tool]
    if not of_tool:
        return f"{tool} was never called"
    if any(_ran(call) for call in of_tool):
        return None
    statuses = ", ".join(f"{call.name} [{call.status}]" for call in of_tool)
    return f"{tool} never ran ({statuses})"
