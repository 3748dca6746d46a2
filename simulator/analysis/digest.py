"""A failure digest: the conversations that did not pass, grouped by cause, most frequent cause first.

:func:`build_digest` is pure (no I/O, no model). It reads every stored result whose outcome is ``fail``,
``error`` or ``unsure`` and turns it into *causes*, one per thing that held it back; causes with the same key
form one :class:`FailureGroup`. :func:`suggest_fixes` may then ask the judge model, once per group, for a
change to the agent's instructions; such a suggestion is labelled ``source: "model suggestion"`` and rendered
under "Model suggestions (not verified)": it is a model's proposal, not something the digest checked. The
data models are :mod:`simulator.models.digest`'s; :mod:`simulator.reports.digest_report` renders them.

Causes of one result, in this order:

1. **error** -- the conversation stopped with an error (``stop_reason == "error"``): the transcript's error
   message. A required score whose verdict is ``error`` (the judge could not give a verdict) is an error
   cause too, with the score's reason as the message.
2. **step** -- a required ``goal_achievement`` score that is not met: a step (or a scenario's goal) the agent
   did not complete. Steps that are ``blocked`` (an earlier step failed) or ``not_reached`` (the
   conversation stopped first; ``not_attempted`` in older runs) are left out: they follow from another cause
   and would only repeat it.
3. **score** -- any other required score that is not met (expectations, keywords, tool calls, hallucination,
   the user's goal, the turn cap, ...).
4. **unsure** -- required scores that are ``unsure`` or were *not judged* (a reason that starts with
   ``not judged``, whatever the verdict), and the scores of ``unsure`` steps. They are never a failed check:
   they are grouped under "Not judged / unsure", and count only when nothing above applies (the case's
   outcome is ``unsure``): a failed case is explained by what failed, not by what could not be judged.
5. **user** -- a ``user_error`` result (the simulated user caused the failure): one cause, the earliest
   fidelity finding, labelled by its kind (``broke_character``, ...), grouped apart from the agent's causes
   (no fix of the agent is suggested for it).
6. A result without scores (stored before scoring, or built by hand) falls back to its transcript's
   incomplete steps, then its unsure steps; a result that still has no cause gives one per reason (kind
   ``reason``), or a single ``no reason recorded`` cause. So every result that did not pass is in at least
   one group.

Group key ``(kind, label, name)``:

- kind ``step``: label = the step's label, name = ``goal_achievement``, e.g.
  ``("step", "give the order number", "goal_achievement")``;
- kind ``score``: label = the score's ``check`` normalised (below), name = the score's ``metric``, e.g.
  ``"turn 3: hallucination"`` -> ``("score", "hallucination", "hallucination")``;
- kind ``unsure``: label and name as for a step (a ``goal_achievement`` score) or a score;
- kind ``error``: label = the first 80 characters of the normalised message, name = ``error`` for a
  conversation that errored, or the score's metric for a judge error;
- kind ``reason``: label = the normalised reason (first 80 characters), name = ``reason`` (or the outcome).

Normalisation (:func:`normalise_label`), so the same problem in different cases and turns groups together:
whitespace is collapsed; leading location prefixes ``turn N:`` and ``step N:`` are removed (a check label,
not a step label, so ``step 2: must_contain: refund`` -> ``must_contain: refund``); UUIDs and tokens that mix
letters and digits (order numbers like ``A1234`` or ``ORD-77``, hashes like ``9f3c2e1a``) become ``<id>``;
dates (``2026-05-04``, ``2026-05-04T10:30:00Z``, ``04.05.2026``, ``5/4/2026``) become ``<date>``, never a run
of ``<n>``; remaining numbers become ``<n>``. Step labels and error messages get the same id and number replacement
(without the prefix removal). The reasons of a group are counted after the same normalisation; a reason is
shown as written when all its occurrences were written alike, else in its normalised form.

A group's ``count`` is the number of conversations (stored results) with the cause, ``occurrences`` the
number of causes (one conversation can hallucinate in several turns). Groups are sorted by count, then
occurrences (both descending), then kind (error, step, score, unsure, reason, user) and label. Each group keeps the
conversations (:class:`CaseRef`), its :data:`TOP_REASONS` most common reasons, and up to
:data:`MAX_EXAMPLES` example turns from different conversations: the agent message(s) of the turn a score
points at (a step's cause: the step's last agent reply; an error: the turn it happened in; a cause with no
turn or step: the conversation's last agent reply), with the user message before it.
"""

from __future__ import annotations

import asyncio
import re
from collections.abc import Iterable
from dataclasses import dataclass, field

from pydantic import BaseModel, Field

from simulator.errors import ModelError
from simulator.fence import DATA_RULE, fence_sections, json_line
from simulator.llm import LLMClient, Role
from simulator.models.digest import (
    NO_SUGGESTION_MODEL,
    SUGGESTIONS_HEADING,
    CaseRef,
    Digest,
    Example,
    FailureGroup,
    FailureKind,
    ReasonCount,
    Suggestion,
)
from simulator.models.run import StoredResult
from simulator.models.scores import Outcome, Score
from simulator.models.states import State, score_state, step_state
from simulator.models.summary import Counts
from simulator.models.transcript import AgentEvent, ErrorEvent, InputEvent, Transcript, UserEvent
from simulator.safety import redact, redacted_and_shortened

__all__ = [
    "MAX_EXAMPLES",
    "NO_SUGGESTION_MODEL",
    "SUGGESTIONS_HEADING",
    "TOP_REASONS",
    "CaseRef",
    "Digest",
    "Example",
    "FailureGroup",
    "FailureKind",
    "FixSuggestionReply",
    "ReasonCount",
    "Suggestion",
    "build_digest",
    "normalise_label",
    "suggest_fixes",
]

#: Example turns kept per group, each from a different conversation.
MAX_EXAMPLES = 3
#: The most common reasons kept per group.
TOP_REASONS = 3

_KIND_ORDER: dict[FailureKind, int] = {"error": 0, "step": 1, "score": 2, "unsure": 3, "reason": 4, "user": 5}
_FAILED: tuple[Outcome, ...] = ("fail", "error", "unsure", "user_error")
_LABEL_LENGTH = 80
_SHOWN_TEXT = 300
_SHOWN_CASES = 10

_LOCATION = re.compile(r"^(?:(?:turn|step)\s+\d+\s*:\s*)+", re.IGNORECASE)
_STEP_PREFIX = re.compile(r"^(?:step\s+\d+|goal)\s*:\s*", re.IGNORECASE)
# ISO dates (with an optional time and zone), and day.month.year or month/day/year: one <date>, never <n>-<n>-<n>.
_DATE = re.compile(
    r"(?<![\w.:/-])(?:\d{4}-\d{2}-\d{2}(?:[T ]\d{2}:\d{2}(?::\d{2}(?:\.\d+)?)?(?:Z|[+-]\d{2}:?\d{2})?)?"
    r"|\d{1,2}\.\d{1,2}\.\d{2,4}|\d{1,2}/\d{1,2}/\d{2,4})(?![\w:/-]|\.\d)"
)
_UUID = re.compile(r"\b[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\b", re.IGNORECASE)
# A token of letters, digits, "_" and "-" that has at least one letter and one digit: A1234, ORD-77, 9f3c2e1a.
_MIXED = re.compile(r"(?<![\w-])(?=[\w-]*\d)(?=[\w-]*[A-Za-z])[\w-]*[A-Za-z0-9](?![\w-])")
_NUMBER = re.compile(r"(?<![\w<])\d+(?:[.,]\d+)*(?![\w>])")


class FixSuggestionReply(BaseModel):
    """What the judge model answers: one change to the agent's instructions, and why it addresses the group."""

    change: str = Field(min_length=1, pattern=r"\S")
    rationale: str = Field(min_length=1, pattern=r"\S")


# -- normalising ----------------------------------------------------------------------------------------------


def _flat(text: str) -> str:
    return " ".join(text.split())


def _ids(text: str) -> str:
    text = _UUID.sub("<id>", _flat(text))
    text = _DATE.sub("<date>", text)
    text = _MIXED.sub("<id>", text)
    return _NUMBER.sub("<n>", text)


def normalise_label(check: str) -> str:
    """A score's check label without what is specific to one case or turn (see the module docstring).

    >>> normalise_label("turn 3: hallucination")
    'hallucination'
    >>> normalise_label("step 2: must_contain: order A1234 of 3 items")
    'must_contain: order <id> of <n> items'
    """
    return _ids(_LOCATION.sub("", _flat(check))) or _flat(check)


# -- building -------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class _Cause:
    kind: FailureKind
    label: str
    name: str
    reason: str
    turn: int | None = None
    step: int | None = None
    error: bool = False


@dataclass
class _Group:
    kind: FailureKind
    label: str
    name: str
    occurrences: int = 0
    cases: list[CaseRef] = field(default_factory=list)
    seen: set[tuple[str, str]] = field(default_factory=set)
    reasons: dict[str, list[str]] = field(default_factory=dict)
    examples: list[Example] = field(default_factory=list)


def _step_label(score: Score, transcript: Transcript) -> str:
    step = next((s for s in transcript.steps if s.index == score.step), None)
    if step is not None:
        return step.label
    return _STEP_PREFIX.sub("", _flat(score.check))


def _step_state(score: Score, transcript: Transcript) -> State | None:
    """The state of the step a goal_achievement score is about (None when the transcript has no such step)."""
    step = next((s for s in transcript.steps if s.index == score.step), None)
    return step_state(step.status) if step is not None else None


def _state(score: Score, transcript: Transcript) -> State:
    """A score's state; a goal_achievement score that is not met takes its step's state when that step was
    unsure or never ran (blocked, not reached)."""
    if score.metric == "goal_achievement" and score.verdict in ("not_met", "unsure"):
        step = _step_state(score, transcript)
        if step in ("unsure", "not_reached"):
            return step
    return score_state(score)


def _error_label(message: str) -> str:
    return redacted_and_shortened(_ids(message), _LABEL_LENGTH, mark="").rstrip() or "the run stopped with an error"


def _score_cause(score: Score, state: State, transcript: Transcript) -> _Cause | None:
    if state == "error":
        return _Cause("error", _error_label(score.reason), score.metric, score.reason, score.turn, score.step, True)
    if state == "not_reached":
        return None
    kind: FailureKind = "unsure" if state == "unsure" else "step" if score.metric == "goal_achievement" else "score"
    if score.metric == "goal_achievement":
        label = _ids(_step_label(score, transcript))
        return _Cause(kind, label, "goal_achievement", score.reason, score.turn, score.step)
    return _Cause(kind, normalise_label(score.check), score.metric, score.reason, score.turn, score.step)


def _causes(stored: StoredResult) -> list[_Cause]:
    result = stored.result
    transcript = result.transcript
    if stored.outcome == "user_error" and result.fidelity:
        # The simulated user caused it: grouped apart, by what the user did, never as the agent's failure.
        first = min(result.fidelity, key=lambda finding: finding.turn)
        reason = result.reasons[0] if result.reasons else first.rule
        return [_Cause("user", first.kind, first.kind, reason, turn=first.turn, step=first.step)]
    causes: list[_Cause] = []
    if transcript.stop_reason == "error":
        message = transcript.error or "the run stopped with an error"
        causes.append(_Cause("error", _error_label(message), "error", message, error=True))
    required = [(score, _state(score, transcript)) for score in result.scores if score.required]
    states: tuple[tuple[State, ...], ...] = (("error", "not_met"), ("unsure",))
    for wanted in states:
        for score, state in required:
            if state in wanted:
                cause = _score_cause(score, state, transcript)
                if cause is not None:
                    causes.append(cause)
        if causes:
            return causes
    if not result.scores:
        steps = sorted(transcript.steps, key=lambda s: s.index)
        fallback: tuple[tuple[str, FailureKind], ...] = (("incomplete", "step"), ("unsure", "unsure"))
        for status, kind in fallback:
            causes = [
                _Cause(kind, _ids(step.label), "goal_achievement", step.rationale, step=step.index)
                for step in steps
                if step.status == status
            ]
            if causes:
                return causes
    if result.reasons:
        return [
            _Cause(
                "reason",
                redacted_and_shortened(normalise_label(redact(reason)), _LABEL_LENGTH, mark="").rstrip(),
                "reason",
                reason,
            )
            for reason in result.reasons
        ]
    return [_Cause("reason", "no reason recorded", stored.outcome, "")]


def _user_before(transcript: Transcript, position: int, turn: int | None = None) -> str | None:
    for event in reversed(transcript.events[:position]):
        if turn is not None and event.turn != turn:
            continue
        if isinstance(event, UserEvent):
            return event.text
        if isinstance(event, InputEvent):
            return f"[event {event.name}]"
    return None


def _example(stored: StoredResult, cause: _Cause, ref: CaseRef) -> Example | None:
    transcript = stored.result.transcript
    events = transcript.events
    agents = [(i, e) for i, e in enumerate(events) if isinstance(e, AgentEvent)]
    turn = cause.turn
    if turn is None and cause.error:
        turn = next((e.turn for e in events if isinstance(e, ErrorEvent)), None)
    chosen: list[tuple[int, AgentEvent]]
    if turn is not None:
        chosen = [(i, e) for i, e in agents if e.turn == turn]
        if not chosen:
            # The turn has no reply (the agent failed, or the conversation ended first): show what was sent.
            user = _user_before(transcript, len(events), turn)
            if user is not None:
                return Example(case=ref, turn=turn, step=cause.step, user=user)
            chosen = agents[-1:]
    elif cause.step is not None:
        chosen = [(i, e) for i, e in agents if e.step == cause.step][-1:] or agents[-1:]
    else:
        chosen = agents[-1:]
    if not chosen:
        return None
    first = chosen[0][0]
    replies = [e for _, e in chosen]
    return Example(
        case=ref,
        turn=replies[0].turn,
        step=replies[0].step,
        user=_user_before(transcript, first),
        agent=[message for reply in replies for message in reply.messages],
        tools=[f"{call.name} [{call.status}]" for reply in replies for call in reply.tool_calls],
    )


def _top_reasons(reasons: dict[str, list[str]]) -> list[ReasonCount]:
    """The most common reasons, ties in first-seen order (``sorted`` is stable; dicts keep insertion order)."""
    ranked = sorted(reasons.items(), key=lambda item: -len(item[1]))[:TOP_REASONS]
    return [
        ReasonCount(text=texts[0] if len(set(texts)) == 1 else normalised, count=len(texts))
        for normalised, texts in ranked
    ]


def _result_order(stored: StoredResult) -> tuple[str, int, str, bool, str, int, str]:
    return (
        stored.run_id,
        stored.suite,
        stored.case,
        stored.persona is not None,
        stored.persona or "",
        stored.repeat,
        stored.key,
    )


def build_digest(results: Iterable[StoredResult], *, summary: Counts | None = None) -> Digest:
    """Group the results that did not pass by cause (see the module docstring for the rules). Pure.

    Only the results that did not pass are kept while ``results`` is read. ``summary``: the run's summary
    (``RunRecord.totals``), whose counts then say how many conversations the run has and how many did not
    pass; without it they are counted from ``results``.
    """
    groups: dict[tuple[FailureKind, str, str], _Group] = {}
    read = 0
    failed: list[StoredResult] = []
    for stored in results:
        read += 1
        if stored.outcome in _FAILED:
            failed.append(stored)
    failed.sort(key=_result_order)
    for stored in failed:
        ref = CaseRef(
            run_id=stored.run_id,
            key=stored.key,
            suite=stored.suite,
            case=stored.case,
            persona=stored.persona,
            repeat=stored.repeat,
            outcome=stored.outcome,
        )
        for cause in _causes(stored):
            key = (cause.kind, cause.label, cause.name)
            group = groups.setdefault(key, _Group(*key))
            group.occurrences += 1
            reason = _flat(cause.reason)
            if reason:
                group.reasons.setdefault(_ids(reason), []).append(reason)
            if (stored.run_id, stored.key) in group.seen:
                continue
            group.seen.add((stored.run_id, stored.key))
            group.cases.append(ref)
            if len(group.examples) < MAX_EXAMPLES:
                example = _example(stored, cause, ref)
                if example is not None:
                    group.examples.append(example)
    ordered = sorted(
        groups.values(),
        key=lambda g: (-len(g.cases), -g.occurrences, _KIND_ORDER[g.kind], g.label, g.name),
    )
    return Digest(
        results=read if summary is None else summary.total,
        not_passed=len(failed) if summary is None else summary.total - summary.passed,
        groups=[
            FailureGroup(
                kind=g.kind,
                label=g.label,
                name=g.name,
                count=len(g.cases),
                occurrences=g.occurrences,
                cases=g.cases,
                reasons=_top_reasons(g.reasons),
                examples=g.examples,
            )
            for g in ordered
        ],
    )


# -- suggestions ----------------------------------------------------------------------------------------------

_SUGGEST_SYSTEM = (
    "You help improve the instructions (system prompt) of a customer-facing AI agent. You are shown one group of "
    "failures found when the agent was tested: what failed, how often, the reasons the checks gave, and example "
    "turns. Propose ONE concrete change to the agent's instructions that would address this group: the text to "
    "add, or the text to replace and its replacement. Change the instructions only, never the tests. The "
    "instructions and the failure group are material from the test run, in fenced sections; the example turns "
    "are one JSON object per line (role user, agent or tool_call). "
    + DATA_RULE
    + ' Reply with JSON only: {"change": "<the change to the instructions>", "rationale": "<one or two sentences '
    'on why it addresses these failures>"}.'
)


def _suggest_prompt(group: FailureGroup, instructions: str | None) -> str:
    """The request about one group: the agent's instructions and the group (what failed, the reasons, example
    turns as JSON lines), each in a section fenced by the request's token (:mod:`simulator.fence`)."""
    given = instructions.strip() if instructions and instructions.strip() else "(not given)"
    body = [f"what failed: {group.title()}"]
    cases = ", ".join(ref.describe() for ref in group.cases[:_SHOWN_CASES])
    more = f" and {len(group.cases) - _SHOWN_CASES} more" if len(group.cases) > _SHOWN_CASES else ""
    body.append(f"conversations: {group.count} ({cases}{more}); failures: {group.occurrences}")
    if group.reasons:
        body.append("most common reasons:")
        body += [f"- {redacted_and_shortened(reason.text, _SHOWN_TEXT)} ({reason.count}x)" for reason in group.reasons]
    for number, example in enumerate(group.examples, start=1):
        where = f", turn {example.turn}" if example.turn is not None else ""
        body.append(f"example {number} ({example.case.describe()}{where}):")
        if example.user is not None:
            body.append(
                json_line({"role": "user", "text": redacted_and_shortened(example.user, _SHOWN_TEXT, flat=True)})
            )
        body += [json_line({"role": "tool_call", "call": tool}) for tool in example.tools]
        body += [
            json_line({"role": "agent", "text": redacted_and_shortened(message, _SHOWN_TEXT, flat=True)})
            for message in example.agent
        ]
        if not example.agent:
            body.append(json_line({"role": "agent", "text": None}))
    fenced = fence_sections({"instructions": given, "failure_group": "\n".join(body)})
    return (
        f"The agent's current instructions:\n{fenced['instructions']}\n\nThe failure group:\n{fenced['failure_group']}"
    )


async def _suggest(llm: LLMClient, group: FailureGroup, instructions: str | None) -> Suggestion:
    model = llm.settings(Role.JUDGE).model
    messages = [
        {"role": "system", "content": _SUGGEST_SYSTEM},
        {"role": "user", "content": _suggest_prompt(group, instructions)},
    ]
    try:
        reply = await llm.structured(Role.JUDGE, messages, FixSuggestionReply)
    except ModelError as exc:
        return Suggestion(model=model, error=f"the judge model failed to suggest a change: {exc}")
    except Exception as exc:  # never raise: the digest is worth having without its suggestions
        return Suggestion(model=model, error=f"suggesting a change failed: {type(exc).__name__}: {exc}")
    return Suggestion(model=model, change=reply.change.strip(), rationale=reply.rationale.strip())


async def suggest_fixes(digest: Digest, llm: LLMClient | None, *, instructions: str | None) -> Digest:
    """The digest with a judge model's suggested change to the agent's ``instructions`` on every group (but the
    simulated user's, ``user``: the agent is not what failed there).

    One structured request per group (``llm.structured(Role.JUDGE, ...)``, :class:`FixSuggestionReply`),
    asked concurrently (the client bounds how many run at once). Each answer is stored as the group's
    :class:`Suggestion` (``source: "model suggestion"``): unverified. A request that fails or never gets a
    usable reply gives a suggestion whose ``error`` says so; nothing is raised. Without a judge model no
    request is made, suggestions stay empty and the digest's ``note`` says a judge model is needed. The
    given digest is not changed.
    """
    if llm is None or llm.settings(Role.JUDGE).model is None:
        groups = [group.model_copy(update={"suggestion": None}) for group in digest.groups]
        return digest.model_copy(update={"groups": groups, "note": NO_SUGGESTION_MODEL})
    agents = [group for group in digest.groups if group.kind != "user"]  # the simulated user's: no agent fix
    asked = await asyncio.gather(*(_suggest(llm, group, instructions) for group in agents))
    by_group = {id(group): suggestion for group, suggestion in zip(agents, asked, strict=True)}
    suggestions = [by_group.get(id(group)) for group in digest.groups]
    groups = [
        group.model_copy(update={"suggestion": suggestion})
        for group, suggestion in zip(digest.groups, suggestions, strict=True)
    ]
    return digest.model_copy(update={"groups": groups, "note": None})
