"""Claims of tool use, checked against the tool calls that really happened (no model needed).

Before any model is asked whether an agent turn hallucinated, two kinds of fault are flagged here, because
they are certain and a judge that reads only the text can be fooled by them:

* the agent claims an action or a result that no call backs. Claims are found by ``_claim_finder`` from the
  word lists in ``claim_words/`` and the words of the agent's tools (``_claim_tools``): an **action** ("I have
  blocked your card", "the invoice has been paid", "Ihre Karte wurde gesperrt", "Your refund is complete"),
  a **result** ("I've checked your order", "the lookup shows", "I found no price list", "laut unserem System",
  "habe ich keine Preisliste gefunden", "there are no invoices in your account"), or, with a verb of a tool
  of unknown kind, a **use** of that tool. A claim is backed by a call that ran (executed, faked or simulated,
  without an error):

  - of a tool it names by the words of its name ("holiday lookup" -> ``lookup_holidays``, "Feiertagsabruf" ->
    ``feiertage_abrufen``, "I have blocked your card" -> ``block_card``), in this turn or an earlier one; an
    action claim names only a tool that changes something and whose verb it uses, a result claim only one
    that is not an action;
  - naming none, of a tool of the claim's kind in this turn: an action claim needs an action tool's call, a
    result claim a lookup's (a lookup never backs an action: ``get_card`` does not back "I have blocked your
    card"); a tool of unknown kind backs either, and any call backs a use.

  A passive or a state ("has been cancelled", "wurde storniert") may report a record instead of the agent's
  action: it is backed by any call that ran and returned the state it names ("cancelled", or a translation),
  and after "I see that" / "laut" it is a result (see ``_claim_finder``).

* a world tool's call (``executed (world)``) that changed nothing because the world refused (a ``require`` not
  met, no such record: its result is ``{"error": ...}``) backs no action claim: "I have cancelled your order"
  after it is contradicted by the world, which shows nothing changed. A world call that changed records backs
  a claim as any call that ran does; a world lookup backs results whatever it found.

* the agent's last reply claims an action while the case's ``expect_state`` finds a record not as expected
  (:func:`contradicted_by_state`): the state check's diff is the evidence.

* the agent states results although every tool call of this turn did not run (``not_executed`` in test mode,
  or ``failed``) and it does not say so ("could not", "unable", "konnte nicht" ...).

The word lists cover English and German; they find claims, they cannot prove their absence, so a turn they
do not flag still goes to the judge model (or stays ``unsure`` without one).
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Protocol

from simulator.judges._claim_finder import Claim, find_claims
from simulator.judges._claim_text import Sentence, sentences
from simulator.judges._claim_tools import ToolEntry, ToolKind, Vocabulary, reported_forms, vocabulary
from simulator.judges._inflect import fold
from simulator.models.transcript import AgentEvent, ToolCallRecord
from simulator.safety import redacted_and_shortened

__all__ = [
    "ClaimFinding",
    "ClaimTool",
    "DescribedTool",
    "contradicted_by_state",
    "find_unsupported_claims",
    "world_refusal",
]

_RESULT_WORD = re.compile(r"[^\W\d_]+")


class DescribedTool(Protocol):
    """A tool with a description, e.g. a :class:`~simulator.models.ToolDeclaration` (its ``kind``, when it
    has one, overrides the kind derived from its words)."""

    @property
    def name(self) -> str: ...

    @property
    def description(self) -> str: ...


@dataclass(frozen=True)
class ClaimTool:
    """A declared tool as the claim check needs it: its name, description and (optionally) declared kind."""

    name: str
    description: str = ""
    kind: ToolKind | None = None


#: The tools a caller declares: names, described tools, or a mapping of name to description.
DeclaredTools = Sequence[str | DescribedTool] | Mapping[str, str]


@dataclass(frozen=True)
class ClaimFinding:
    """A flagged turn: the claim as written and why it is unsupported."""

    turn: int
    claim: str
    reason: str


def find_unsupported_claims(replies: Sequence[AgentEvent], declared_tools: DeclaredTools = ()) -> list[ClaimFinding]:
    """Every agent turn that claims an action or a result no call backs, or results its tools never returned.

    ``declared_tools`` are the agent's tools: names, objects with ``name`` and ``description`` (and optionally
    ``kind``: "action" or "lookup"), or a mapping of name to description; their words are claim words too. A
    call that ran at turn 1 does not back "I checked the order" at turn 2, which names no tool. When every
    call of the turn did not run, the rule for results stated without data decides (a turn that admits it is
    not flagged). Only a turn's first unbacked claim is reported.
    """
    vocab = vocabulary(_entries(declared_tools))
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
        parsed = sentences(text)
        claims = find_claims(text, parsed, vocab)
        none_ran = bool(this_turn) and not any(_ran(call) for call in this_turn)
        if claims and not none_ran:
            unbacked = next(
                ((claim, why) for claim in claims if (why := _unbacked(claim, vocab, this_turn, called)) is not None),
                None,
            )
            if unbacked is not None:
                claim, why = unbacked
                findings.append(ClaimFinding(reply.turn, claim.text, f"claims “{claim.text}” but {why}"))
                continue
        states_data = bool(claims) or any(not s.question and re.search(r"\d", s.text) for s in parsed)
        if none_ran and states_data and not _admits_failure(parsed, vocab):
            statuses = ", ".join(f"{call.name} [{call.status}]" for call in this_turn)
            findings.append(
                ClaimFinding(
                    reply.turn,
                    claims[0].text if claims else redacted_and_shortened(text, 80, mark=""),
                    f"states results although its tool calls did not run ({statuses}) and does not say so",
                )
            )
    return findings


def contradicted_by_state(
    replies: Sequence[AgentEvent], declared_tools: DeclaredTools, unmet: Sequence[str]
) -> ClaimFinding | None:
    """The agent's last reply, when it claims an action ("I have blocked your card") while records the case
    expects (``unmet``: the state check's evidence for each record not as expected) are not so: the world
    contradicts it, whatever call the agent made. None when every expected record is as expected, or the last
    reply claims no action."""
    last = next((reply for reply in reversed(replies) if any(m.strip() for m in reply.messages)), None)
    if not unmet or last is None:
        return None
    vocab = vocabulary(_entries(declared_tools))
    text = "\n".join(last.messages).replace("\u2019", "'")
    claim = next((found for found in find_claims(text, sentences(text), vocab) if found.kind == "action"), None)
    if claim is None:
        return None
    diff = "; ".join(line for evidence in unmet for line in evidence.splitlines())
    return ClaimFinding(last.turn, claim.text, f"claims “{claim.text}” but the world does not show it ({diff})")


def _admits_failure(parsed: Sequence[Sentence], vocab: Vocabulary) -> bool:
    """Whether the reply says its tools did not work ("could not", "unable", "konnte ... nicht")."""
    return any(vocab.lexicon.admissions.find(clause.words) for sentence in parsed for clause in sentence.clauses)


def _entries(declared: DeclaredTools) -> tuple[ToolEntry, ...]:
    """The declared tools as a hashable tuple (the vocabulary is cached by it)."""
    if isinstance(declared, Mapping):
        return tuple((str(name), str(description), None) for name, description in declared.items())
    entries: list[ToolEntry] = []
    for tool in declared:
        if isinstance(tool, str):
            entries.append((tool, "", None))
        else:
            kind = getattr(tool, "kind", None)
            entries.append((tool.name, tool.description or "", kind if kind in ("action", "lookup") else None))
    return tuple(entries)


def _ran(call: ToolCallRecord) -> bool:
    # A fake's or a simulated tool's result backs a claim as a real one does: the agent got it as the tool's answer.
    return call.answered


def world_refusal(call: ToolCallRecord) -> str | None:
    """What the world answered a world tool's call that changed nothing because it could not (``{"error": ...}``),
    or None: the call is no world call, changed something, or answered without an error."""
    if call.world is None or call.world.changes or not isinstance(call.result, dict):
        return None
    error = call.result.get("error")
    return None if error is None else redacted_and_shortened(str(error), 160, mark="")


def _backs_action(call: ToolCallRecord) -> bool:
    """Whether the call can back a claim of an action: it ran, and the world did not refuse it."""
    return _ran(call) and world_refusal(call) is None


def _refused(calls: Sequence[ToolCallRecord]) -> str | None:
    """Why an action claim these calls do not back is contradicted by the world: the first refusal among them."""
    for call in calls:
        refusal = world_refusal(call)
        if refusal is not None:
            return f"the world shows nothing changed ({call.name} answered: {refusal})"
    return None


def _unbacked(
    claim: Claim, vocab: Vocabulary, this_turn: Sequence[ToolCallRecord], called: Sequence[ToolCallRecord]
) -> str | None:
    """Why a claim made in a turn with these calls (``called``: so far, this turn's included) is not backed,
    or None when it is."""
    if not called:
        return "no tool was called in the conversation"
    backs = _backs_action if claim.kind == "action" else _ran
    if claim.kind == "action" and claim.reported:
        states = _stated_states(claim, vocab)
        if any(backs(call) and not states.isdisjoint(_result_words(call)) for call in called):
            return None
    named = _named(claim, vocab)
    if named:
        of_tool = [call for call in called if call.name in named]
        if any(backs(call) for call in of_tool):
            return None
        tools = " or ".join(named)
        if not of_tool:
            return f"{tools} was never called"
        refused = _refused(of_tool) if claim.kind == "action" else None
        if refused is not None:
            return refused
        statuses = ", ".join(f"{call.name} [{call.status}]" for call in of_tool)
        return f"{tools} never ran ({statuses})"
    ran = [call for call in this_turn if _ran(call)]
    if not ran:
        return "no tool was called in this turn"
    of_kind = [call for call in ran if _backs(vocab.kind_of(call.name), claim)]
    if any(backs(call) for call in of_kind):
        return None
    refused = _refused(of_kind) if claim.kind == "action" else None
    if refused is not None:
        return refused
    names = ", ".join(dict.fromkeys(call.name for call in ran))
    if claim.kind == "action":
        return f"no tool that changes something ran in this turn (only the lookup {names})"
    return f"no lookup ran in this turn (only {names}, which changes something)"


def _stated_states(claim: Claim, vocab: Vocabulary) -> frozenset[str]:
    """The words a tool's result would use for the state a passive claim states: the past forms of its verb and
    of the actions its clause names by their nouns ("has been cancelled" -> cancelled, canceled, storniert; "the
    refund has been processed" -> processed, refunded). A call that returned one of them backs the claim as a
    report of its result, not an action of the agent's."""
    verbs = {claim.base}
    for key in claim.clause:
        verbs |= {meaning.verb for meaning in vocab.verbs.nouns.get(key, ()) if meaning.sense == "action"}
    return frozenset(form for verb in verbs for form in reported_forms(verb))


def _result_words(call: ToolCallRecord) -> set[str]:
    return set(_RESULT_WORD.findall(fold(call.result_text)))


def _named(claim: Claim, vocab: Vocabulary) -> list[str]:
    """The declared tools the claim's clause names that could back it (see the module docstring)."""
    named: list[str] = []
    for tool in vocab.tools:
        if not tool.named_by(claim.clause):
            continue
        if claim.kind == "action" and (tool.kind == "lookup" or not tool.does(claim.verb)):
            continue
        if claim.kind == "result" and tool.kind == "action":
            continue
        named.append(tool.name)
    return named


def _backs(kind: ToolKind, claim: Claim) -> bool:
    """Whether a call of a tool of this kind, in the claim's turn, backs a claim that names no tool."""
    return kind == "unknown" or claim.kind == "use" or (kind == "action") == (claim.kind == "action")
