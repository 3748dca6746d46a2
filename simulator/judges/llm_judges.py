"""The LLM judge: the questions only a model can answer about a transcript, each one verdict with its reason.

Design
  * One verdict per criterion. Every question asks the judge model for one small, explicit JSON reply
    (a pydantic schema, validated by :meth:`LLMClient.structured`, which re-asks on malformed replies), and
    becomes one :class:`~simulator.models.scores.Score` with ``source="judge"``, the model's reason and,
    where the metric has one, its number.
  * Side errors are asked separately. A judge grading the core of an answer against a reference overlooks a
    wrong side remark ("...and you can return it within 90 days"), so each ``must_not_state`` claim of a
    reference answer is its own request naming exactly that claim, and its own ``side_claim`` score.
  * Contradictions are ``unsure``. A reference judge that says "pass" with a score below the pass mark (or
    "fail" with a score at or above it) contradicted itself; neither half is trusted, and the score says so.
  * One request for the turns of a conversation. The per-turn hallucination question is asked about every
    turn of a conversation in one request (:meth:`LLMJudge.hallucinations`, prompt ``hallucination_batch``):
    the shared context and the conversation are sent once, each turn to judge is marked, and the reply gives a
    verdict per turn. Each verdict becomes the same Score the per-turn question gives (:meth:`hallucination`);
    a turn the reply leaves out, or gives contradicting verdicts for, is ``unsure``, never passed. When the
    simulated user's turns are to be checked for invented facts too, that question rides in the same request
    (prompt ``hallucination_fidelity_batch``, :class:`UserTurns`); its answer is kept, and
    :meth:`LLMJudge.invented_facts` about the same turns is answered from it without a second request.
  * Quotes are evidence, so they are checked. A quote the judge gives of the judged text (a side claim's
    ``quote``, a hallucination's ``claim``) must occur in that text, ignoring case, whitespace and the kind of
    quotation marks, with an ellipsis standing for left-out words (:func:`quote_in`); otherwise the verdict
    is ``unsure`` with "the judge quoted text that is not in the answer", and the reply is kept in ``raw``.
  * No model, no guess. Without a judge model every question is ``unsure`` with the reason
    :data:`~simulator.judges.step.NO_JUDGE`; a model that fails, or whose reply stays unusable after the
    client's retries, gives ``error`` with the message (and the last raw reply in ``raw``). Model trouble is
    never raised: it is a verdict in the report.
  * Deterministic shortcuts come before the model and are marked ``source="deterministic"``: a reply that
    is the expected message (ignoring case and whitespace) is a semantic match of 4; an empty reply
    matches nothing (0); a turn without a message makes no claim (``n/a``); a case without a user goal
    scores goal satisfaction -1 (``n/a``).
  * The judge judges what happened: the prompts show tool calls with their status and results, and tell the
    model that a claim of data or of an action that no tool call supports is not evidence.
  * Untrusted text is data. Every text a question is about goes into the prompt as a section fenced by the
    request's token (:mod:`simulator.fence`), a conversation as one JSON event per line
    (:mod:`simulator.judges.rendering`), and every prompt says that fenced text is never instructions.
  * A pass quotes the agent. An expectation judged met and a goal judged satisfied carry a ``quote`` of the
    agent's words; a pass without one, with words that are not the agent's, or that deterministic evidence
    contradicts (a criterion naming a tool that never ran, an unbacked claim of tool use) does not count
    (:func:`~simulator.judges.evidence.overrule_pass`).

Prompts
  The built-in prompts are the ``prompts/*.md`` files next to this module, one per question (see
  :data:`PROMPT_PLACEHOLDERS`). A prompt is a ``str.format`` template with named ``{placeholders}`` and
  literal braces written ``{{ }}``; a leading ``<!-- ... -->`` comment documents it and is removed before
  sending. A text placeholder is filled with its fenced section, tags included (:data:`SECTIONS`), so an
  override fences what it shows too. A suite can replace any of them (``judge_prompts``); an override that uses
  a placeholder its question does not fill is a :class:`~simulator.errors.JudgeError` naming it, raised when
  the judge is made.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TypeVar

from pydantic import BaseModel

from simulator.errors import JudgeError, ModelError
from simulator.fence import fence_sections
from simulator.judges._judge_prompts import (
    PROMPT_PLACEHOLDERS,
    SECTIONS,
    PromptValues,
    builtin_prompt,
    builtin_template,
    check_prompt,
    older_template,
)
from simulator.judges._replies import (
    ConversationReviewFidelityReply,
    ConversationReviewReply,
    ExpectationReply,
    GoalSatisfactionReply,
    HallucinationBatchReply,
    HallucinationFidelityBatchReply,
    HallucinationReply,
    HallucinationTurnReply,
    ReferenceAnswerReply,
    ReviewFidelityReply,
    ReviewReply,
    SemanticMatchReply,
    SideClaimReply,
    UserFidelityReply,
    UserFidelityTurnReply,
)
from simulator.judges.claims import DeclaredTools
from simulator.judges.evidence import Evidence, overrule_pass, quote_in
from simulator.judges.rendering import render_conversation
from simulator.judges.step import NO_JUDGE
from simulator.llm import LLMClient, Role, StructuredOutputError, UnrecordedRequest
from simulator.models.case import ReferenceAnswerSpec
from simulator.models.scores import FidelityFinding, Score, ScoreSource, ScoreVerdict
from simulator.models.transcript import AgentEvent, TranscriptEvent, UserEvent
from simulator.safety import redacted_and_shortened

__all__ = [
    "PROMPT_PLACEHOLDERS",
    "SECTIONS",
    "ConversationReviewFidelityReply",
    "ConversationReviewReply",
    "ExpectationReply",
    "GoalSatisfactionReply",
    "HallucinationBatchReply",
    "HallucinationFidelityBatchReply",
    "HallucinationReply",
    "HallucinationTurnReply",
    "LLMJudge",
    "ReferenceAnswerReply",
    "ReviewFidelityReply",
    "ReviewReply",
    "Reviewed",
    "SemanticMatchReply",
    "SideClaimReply",
    "UserFidelityReply",
    "UserFidelityTurnReply",
    "UserTurns",
    "builtin_prompt",
    "check_prompt",
    "quote_in",
]

R = TypeVar("R", bound=BaseModel)
#: How much of a text a check's name or a verdict quotes, and of the judge's quote a misquote shows.
_SHOWN_CHARS = 80
_QUOTE_CHARS = 200


# --------------------------------------------------------------------------------------------------------------
# The judge


@dataclass(frozen=True)
class _Failed:
    """The judge model gave no usable verdict: why, and its last reply when it had one."""

    reason: str
    raw: str | None = None
    #: Not asked at all (a replay's changed question with no judge model to send it to): unsure, not an error.
    unasked: bool = False


@dataclass(frozen=True)
class UserTurns:
    """The simulated user's turns to check for invented facts, and everything it was given (``brief``, as
    :func:`simulator.judges.fidelity.user_brief_text` writes it)."""

    brief: str
    turns: Sequence[UserEvent]


@dataclass(frozen=True)
class Reviewed:
    """What :meth:`LLMJudge.review` found: the goal's score and a hallucination score per turn, in turn order."""

    goal: Score
    hallucinations: list[Score]


class LLMJudge:
    """Asks the judge model the questions deterministic checks cannot answer; every answer is a Score.

    ``prompts`` maps a prompt name (a key of :data:`PROMPT_PLACEHOLDERS`) to the text of a template that
    replaces the built-in one; it is checked here, so a bad override fails before any conversation runs.
    """

    def __init__(self, llm: LLMClient | None, *, prompts: Mapping[str, str] | None = None) -> None:
        self._llm = llm
        self._overrides = {name: check_prompt(name, text) for name, text in (prompts or {}).items()}
        #: The invented-fact findings answered with a batched hallucination question, by question
        #: (:func:`_invented_key`): :meth:`invented_facts` about the same turns asks nothing more.
        self._invented: dict[str, list[FidelityFinding]] = {}

    @property
    def has_model(self) -> bool:
        """Whether a judge model is configured (without one, every question is ``unsure``)."""
        return self._llm is not None and self._llm.settings(Role.JUDGE).model is not None

    def overrides(self, name: str) -> bool:
        """Whether the suite replaced the built-in prompt ``name``."""
        return name in self._overrides

    def prompt(self, name: str) -> str:
        """The template used for question ``name``: the override if one was given, else the built-in one."""
        if name in self._overrides:
            return self._overrides[name]
        return builtin_template(name)

    # -- questions -------------------------------------------------------------------------------------------

    async def reference_answer(
        self,
        *,
        question: str,
        answer: str,
        reference: ReferenceAnswerSpec,
        threshold: float,
        turn: int | None = None,
    ) -> list[Score]:
        """Score ``answer`` against the reference (0-100, metric ``reference_answer``), then ask about each
        ``must_not_state`` claim on its own (metric ``side_claim``). The core score comes first."""
        core = _Question(
            "reference_answer",
            f"reference answer: {redacted_and_shortened(reference.answer, _SHOWN_CHARS, flat=True)}",
            threshold,
            turn,
        )
        claims = [
            _Question("side_claim", f"must not state: {redacted_and_shortened(c, _SHOWN_CHARS, flat=True)}", turn=turn)
            for c in reference.must_not_state
        ]
        if not self.has_model:
            return [question.unjudged() for question in (core, *claims)]
        core_task = self._ask(
            "reference_answer",
            {"question": question, "answer": answer, "reference": reference.answer, "threshold": _number(threshold)},
            ReferenceAnswerReply,
        )
        claim_tasks = asyncio.gather(
            *(
                self._ask("side_claim", {"question": question, "answer": answer, "claim": claim}, SideClaimReply)
                for claim in reference.must_not_state
            )
        )
        core_reply, claim_replies = await asyncio.gather(core_task, claim_tasks)
        scores = [_reference_score(core, core_reply, threshold)]
        scores.extend(_side_claim_score(q, reply, answer) for q, reply in zip(claims, claim_replies, strict=True))
        return scores

    async def semantic_match(
        self, *, expected: str, actual: str, context: str, threshold: float, turn: int | None = None
    ) -> Score:
        """How far ``actual`` means the same as ``expected``: 0 (contradiction) to 4 (fully consistent);
        met at ``threshold`` or above. Identical texts (ignoring case and whitespace) score 4 without a model."""
        q = _Question(
            "semantic_match",
            f"semantic match with: {redacted_and_shortened(expected, _SHOWN_CHARS, flat=True)}",
            threshold,
            turn,
        )
        if _normalise(expected) == _normalise(actual):
            reason = "the reply is the expected message (same text, ignoring case and whitespace)"
            return q.score("met", reason, value=4, source="deterministic")
        if not actual.strip():
            return q.score("not_met", "the agent sent no message", value=0, source="deterministic")
        if not self.has_model:
            return q.unjudged()
        reply = await self._ask(
            "semantic_match", {"expected": expected, "actual": actual, "context": context}, SemanticMatchReply
        )
        if isinstance(reply, _Failed):
            return q.failed(reply)
        return q.score("met" if reply.score >= threshold else "not_met", reply.reason, value=reply.score)

    async def hallucination(self, *, turn: AgentEvent, context: str, required: bool = True) -> Score:
        """Whether ``turn`` claims something ``context`` and its own tool results do not support: value 1
        (``not_met``), 0 (``met``), or ``n/a`` when it makes no factual claim. ``required`` is the suite's
        ``fail_on_hallucination``."""
        q = _hallucination_question(turn, required)
        if not turn.text.strip():
            return _no_message(q)
        if not self.has_model:
            return q.unjudged()
        reply = await self._ask("hallucination", {"turn": _render_turn(turn), "context": context}, HallucinationReply)
        return _hallucination_score(q, reply, turn.text)

    async def hallucinations(
        self,
        *,
        turns: Sequence[AgentEvent],
        events: Sequence[TranscriptEvent],
        context: str,
        required: bool = True,
        user: UserTurns | None = None,
    ) -> list[Score]:
        """The per-turn hallucination question about every turn of ``turns`` in one request: the same Score
        per turn, in the order of ``turns``, that :meth:`hallucination` gives.

        ``events`` is the conversation the turns are part of (by identity), from its start to at least the
        last of them; ``context`` is what the agent knew from the start (instructions, session variables). A
        turn the reply leaves out, or gives two different verdicts for, is ``unsure``; a failed request makes
        every turn ``error``, as failed per-turn requests would. Turn numbers must be unique.

        With ``user``, the same request also asks which of the simulated user's turns state a fact it was
        never given (prompt ``hallucination_fidelity_batch``); the answer is kept for :meth:`invented_facts`.
        A replay whose recording asked the two questions apart (the combined request is not in it) asks them
        as they were recorded: the hallucination question now, the user's when :meth:`invented_facts` is
        called."""
        if len({turn.turn for turn in turns}) != len(turns):
            raise ValueError("the turns of a batched hallucination question must have distinct numbers")
        questions = [_hallucination_question(turn, required) for turn in turns]
        pending = [turn for turn in turns if turn.text.strip()]
        if not pending or not self.has_model:
            return [
                q.unjudged() if turn.text.strip() else _no_message(q) for q, turn in zip(questions, turns, strict=True)
            ]
        values = {
            "context": context,
            "conversation": _render_marked(pending, events),
            "turns": ", ".join(str(turn.turn) for turn in pending),
        }
        reply: HallucinationBatchReply | HallucinationFidelityBatchReply | _Failed
        if user is not None and user.turns:
            reply = await self._ask_with_user(values, pending, events, user)
        else:
            reply = await self._ask("hallucination_batch", values, HallucinationBatchReply)
        return [
            _hallucination_score(q, _verdict_of(reply, turn.turn), turn.text) if turn.text.strip() else _no_message(q)
            for q, turn in zip(questions, turns, strict=True)
        ]

    async def goal_satisfaction(
        self,
        *,
        goal: str | None,
        conversation: Sequence[TranscriptEvent],
        replies: Sequence[AgentEvent] | None = None,
        declared_tools: DeclaredTools = (),
    ) -> Score:
        """Whether the ``conversation`` satisfied the user's ``goal``: 1 (``met``) or 0 (``not_met``); -1 and
        ``n/a`` when there is no goal (no model is asked). A "satisfied" stands only as
        :func:`~simulator.judges.evidence.overrule_pass` allows (``replies``: every agent reply of the
        conversation, by default those in it; ``declared_tools``: the agent's tools)."""
        if goal is None or not goal.strip():
            return _Question("goal_satisfaction", "user goal").score(
                "n/a", "no user goal was given", value=-1, source="deterministic"
            )
        q = _Question("goal_satisfaction", f"user goal: {redacted_and_shortened(goal, _SHOWN_CHARS, flat=True)}")
        if not self.has_model:
            return q.unjudged()
        reply = await self._ask(
            "goal_satisfaction",
            {"goal": goal, "conversation": render_conversation(conversation)},
            GoalSatisfactionReply,
        )
        return _goal_score(q, reply, goal, Evidence(conversation, replies, declared_tools))

    async def review(
        self,
        *,
        goal: str,
        events: Sequence[TranscriptEvent],
        turns: Sequence[AgentEvent],
        context: str,
        required: bool = True,
        user: UserTurns | None = None,
        replies: Sequence[AgentEvent] | None = None,
        declared_tools: DeclaredTools = (),
    ) -> Reviewed | None:
        """The goal question (:meth:`goal_satisfaction`) and the per-turn hallucination question about ``turns``
        (:meth:`hallucinations`) in one request (prompt ``conversation_review``), with the user's invented-fact
        question too when ``user`` has turns (``conversation_review_fidelity``; the answer is kept for
        :meth:`invented_facts`, as :meth:`hallucinations` keeps it). The same Scores as those methods give for the
        same answers: a failed request makes every question ``error``; a turn the reply leaves out is ``unsure``;
        a "satisfied" stands only as :func:`~simulator.judges.evidence.overrule_pass` allows.

        ``events`` is the whole conversation; the other arguments are those of the two methods. None, with no
        request, when there is nothing to combine (no model, no goal, no turn with a message) and when the
        combined request was not asked (a replay of a recording that asked the questions apart): the caller
        then asks them as those methods do."""
        if len({turn.turn for turn in turns}) != len(turns):
            raise ValueError("the turns of a conversation review must have distinct numbers")
        pending = [turn for turn in turns if turn.text.strip()]
        if not self.has_model or not goal.strip() or not pending:
            return None
        users = user.turns if user is not None else ()
        values = {
            "context": context,
            "goal": goal,
            "conversation": render_conversation(events, marked=[*pending, *users]),
            "turns": ", ".join(str(turn.turn) for turn in pending),
        }
        name = "conversation_review"
        schema: type[ReviewReply] = ReviewReply
        older: type[ConversationReviewReply] = ConversationReviewReply
        if user is not None and users:
            values = {**values, "brief": user.brief, "user_turns": ", ".join(str(turn.turn) for turn in users)}
            name, schema, older = "conversation_review_fidelity", ReviewFidelityReply, ConversationReviewFidelityReply
        reply: ReviewReply | ConversationReviewReply | _Failed = await self._ask(name, values, schema)
        if isinstance(reply, _Failed) and reply.unasked:
            # A replay of a recording that holds this request in its older layout: asked as it was recorded.
            reply = await self._ask(name, values, older, older_layout=True)
        if isinstance(reply, _Failed) and reply.unasked:
            return None
        if user is not None and users and not isinstance(reply, _Failed):
            given = _user_verdicts(reply)
            self._invented[_invented_key(user.brief, users, events)] = _invented_findings(given, users)
        q = _Question("goal_satisfaction", f"user goal: {redacted_and_shortened(goal, _SHOWN_CHARS, flat=True)}")
        evidence = Evidence(events, replies, declared_tools)
        goal_score = _goal_score(q, reply if isinstance(reply, _Failed) else reply.goal, goal, evidence)
        scores = [
            _hallucination_score(_hallucination_question(turn, required), _verdict_of(reply, turn.turn), turn.text)
            if turn.text.strip()
            else _no_message(_hallucination_question(turn, required))
            for turn in turns
        ]
        return Reviewed(goal_score, scores)

    async def expectation(
        self,
        *,
        text: str,
        conversation: Sequence[TranscriptEvent],
        replies: Sequence[AgentEvent] | None = None,
        declared_tools: DeclaredTools = (),
        turn: int | None = None,
        step: int | None = None,
    ) -> Score:
        """Whether ``conversation`` (the events of the expectation's scope) meets the expectation ``text``
        (words): met, not_met or unsure. A met stands only as :func:`~simulator.judges.evidence.overrule_pass`
        allows (``replies``: every agent reply of the conversation, by default those in scope)."""
        q = _Question(
            "expectation", f"expectation: {redacted_and_shortened(text, _SHOWN_CHARS, flat=True)}", turn=turn, step=step
        )
        if not self.has_model:
            return q.unjudged()
        values = {"expectation": text, "conversation": render_conversation(conversation)}
        reply = await self._ask("expectation", values, ExpectationReply)
        if isinstance(reply, _Failed):
            return q.failed(reply)
        if reply.verdict == "met":
            evidence = Evidence(conversation, replies, declared_tools)
            overruled = overrule_pass(reply.quote, text, reply.reason, evidence)
            if overruled is not None:
                return q.score(overruled.verdict, overruled.reason, raw=reply.model_dump_json())
        return q.score(reply.verdict, reply.reason)

    async def invented_facts(
        self, *, brief: str, events: Sequence[TranscriptEvent], turns: Sequence[UserEvent]
    ) -> list[FidelityFinding]:
        """The simulated user's turns (``turns``, part of ``events``) that state a fact ``brief`` never gave it,
        asked in one request: an ``invented_fact`` finding per such turn whose quote is in that turn. No model,
        a failed request or an unusable reply gives no finding (fidelity is a diagnosis, never a verdict)."""
        if not turns or not self.has_model:
            return []
        answered = self._invented.get(_invented_key(brief, turns, events))
        if answered is not None:
            return list(answered)  # asked with the hallucination question (:meth:`hallucinations`)
        values = {
            "brief": brief,
            "conversation": _render_marked((), events, turns),
            "turns": ", ".join(str(turn.turn) for turn in turns),
        }
        reply = await self._ask("user_fidelity", values, UserFidelityReply)
        if isinstance(reply, _Failed):
            return []
        return _invented_findings(reply.turns, turns)

    # -- asking ----------------------------------------------------------------------------------------------

    async def _ask_with_user(
        self,
        values: Mapping[str, str],
        pending: Sequence[AgentEvent],
        events: Sequence[TranscriptEvent],
        user: UserTurns,
    ) -> HallucinationFidelityBatchReply | HallucinationBatchReply | _Failed:
        """The batched hallucination question with the user's invented-fact question in the same request."""
        both = {
            **values,
            "brief": user.brief,
            "conversation": _render_marked(pending, events, user.turns),
            "user_turns": ", ".join(str(turn.turn) for turn in user.turns),
        }
        reply = await self._ask("hallucination_fidelity_batch", both, HallucinationFidelityBatchReply)
        if isinstance(reply, _Failed) and reply.unasked:
            # A replay of a recording that asked the questions apart: this one as it was recorded.
            return await self._ask("hallucination_batch", values, HallucinationBatchReply)
        if not isinstance(reply, _Failed):
            # A failed request keeps nothing: the user's question is then asked on its own if it is needed.
            self._invented[_invented_key(user.brief, user.turns, events)] = _invented_findings(
                reply.user_turns, user.turns
            )
        return reply

    def _render(self, name: str, values: Mapping[str, str], *, older_layout: bool = False) -> str:
        origin = "override" if name in self._overrides else "built-in"
        template = self.prompt(name)
        if older_layout and name not in self._overrides:
            template, origin = older_template(name), "built-in, older"
        # A blank value would leave an empty section that a model may read as missing input: say it is empty.
        texts = {key: value if value.strip() else "(empty)" for key, value in values.items()}
        sections = SECTIONS[name]
        fenced = fence_sections({sections[key]: text for key, text in texts.items() if key in sections})
        texts = {key: fenced[sections[key]] if key in sections else text for key, text in texts.items()}
        filled = PromptValues(f"judge prompt {name!r} ({origin})", texts)
        try:
            return template.format_map(filled)
        except (ValueError, IndexError, AttributeError, TypeError) as exc:
            raise JudgeError(f"judge prompt {name!r} ({origin}) could not be filled: {exc}") from None

    async def _ask(
        self, name: str, values: Mapping[str, str], schema: type[R], *, older_layout: bool = False
    ) -> R | _Failed:
        assert self._llm is not None
        messages = [{"role": "user", "content": self._render(name, values, older_layout=older_layout)}]
        try:
            return await self._llm.structured(Role.JUDGE, messages, schema)
        except StructuredOutputError as exc:
            return _Failed(f"the judge model gave no usable reply: {exc}", exc.raw)
        except UnrecordedRequest as exc:
            return _Failed(str(exc), unasked=True)
        except ModelError as exc:
            return _Failed(f"the judge model failed: {exc}")


# --------------------------------------------------------------------------------------------------------------
# Turning replies into scores


@dataclass(frozen=True)
class _Question:
    """What one score is about; makes the Score for each way the question can end."""

    metric: str
    check: str
    threshold: float | None = None
    turn: int | None = None
    step: int | None = None
    required: bool = True

    def score(
        self,
        verdict: ScoreVerdict,
        reason: str,
        *,
        value: float | None = None,
        source: ScoreSource = "judge",
        raw: str | None = None,
    ) -> Score:
        return Score(
            metric=self.metric,
            check=self.check,
            source=source,
            verdict=verdict,
            value=value,
            threshold=self.threshold,
            reason=reason,
            required=self.required,
            turn=self.turn,
            step=self.step,
            raw=raw,
        )

    def unjudged(self) -> Score:
        """No judge model: not guessed."""
        return self.score("unsure", NO_JUDGE)

    def failed(self, failure: _Failed) -> Score:
        """The judge model failed or never gave a usable reply (unsure when it was never asked)."""
        return self.score("unsure" if failure.unasked else "error", failure.reason, raw=failure.raw)


def _reference_score(q: _Question, reply: ReferenceAnswerReply | _Failed, threshold: float) -> Score:
    if isinstance(reply, _Failed):
        return q.failed(reply)
    passed = reply.score >= threshold
    mark = _number(threshold)
    if reply.verdict == "pass" and not passed:
        reason = (
            f"the judge contradicted itself: it said pass but scored {reply.score}, below the pass mark {mark}; "
            f"its reason: {reply.reason}"
        )
        return q.score("unsure", reason, value=reply.score)
    if reply.verdict == "fail" and passed:
        reason = (
            f"the judge contradicted itself: it said fail but scored {reply.score}, at or above the pass mark "
            f"{mark}; its reason: {reply.reason}"
        )
        return q.score("unsure", reason, value=reply.score)
    verdict: ScoreVerdict = "unsure" if reply.verdict == "unsure" else "met" if passed else "not_met"
    return q.score(verdict, reply.reason, value=reply.score)


def _side_claim_score(q: _Question, reply: SideClaimReply | _Failed, answer: str) -> Score:
    if isinstance(reply, _Failed):
        return q.failed(reply)
    if not quote_in(reply.quote, answer):
        return _misquoted(q, reply.quote, reply.stated, reply.reason, reply)
    if reply.stated == "yes":
        return q.score("not_met", f"the answer states it: “{reply.quote.strip()}”: {reply.reason}")
    if reply.stated == "no":
        return q.score("met", reply.reason)
    return q.score("unsure", reply.reason)


def _goal_score(q: _Question, reply: GoalSatisfactionReply | _Failed, goal: str, evidence: Evidence) -> Score:
    if isinstance(reply, _Failed):
        return q.failed(reply)
    if not reply.satisfied:
        return q.score("not_met", reply.reason, value=0)
    overruled = overrule_pass(reply.quote, goal, reply.reason, evidence)
    if overruled is not None:
        value = 0 if overruled.verdict == "not_met" else None
        return q.score(overruled.verdict, overruled.reason, value=value, raw=reply.model_dump_json())
    return q.score("met", reply.reason, value=1)


def _hallucination_question(turn: AgentEvent, required: bool) -> _Question:
    check = f"turn {turn.turn}: hallucination"
    return _Question("hallucination", check, turn=turn.turn, step=turn.step, required=required)


def _no_message(q: _Question) -> Score:
    return q.score("n/a", "the turn has no message to the user, so it makes no claim", source="deterministic")


def _hallucination_score(
    q: _Question, reply: HallucinationReply | HallucinationTurnReply | _Failed | _Unjudged, text: str
) -> Score:
    if isinstance(reply, _Failed):
        return q.failed(reply)
    if isinstance(reply, _Unjudged):
        return q.score("unsure", reply.reason, raw=reply.raw)
    if not quote_in(reply.claim, text):
        return _misquoted(q, reply.claim, reply.verdict, reply.reason, reply)
    if reply.verdict == "unsupported":
        return q.score("not_met", f"unsupported claim: “{reply.claim.strip()}”: {reply.reason}", value=1)
    if reply.verdict == "supported":
        return q.score("met", reply.reason, value=0)
    return q.score("n/a", reply.reason)


LEFT_OUT = "the judge's reply gave no verdict for this turn (not judged)"


@dataclass(frozen=True)
class _Unjudged:
    """The judge answered, but gave no usable verdict for one turn of a batched question."""

    reason: str
    raw: str


def _verdict_of(
    reply: HallucinationBatchReply | HallucinationFidelityBatchReply | ConversationReviewReply | ReviewReply | _Failed,
    number: int,
) -> HallucinationTurnReply | _Failed | _Unjudged:
    """Turn ``number``'s verdict in a batched reply: left out, or given twice with different verdicts, it is
    not judged (a contradiction is not evidence either way)."""
    if isinstance(reply, _Failed):
        return reply
    verdicts = reply.turn_replies() if isinstance(reply, ReviewReply) else reply.turns
    given = [verdict for verdict in verdicts if verdict.turn == number]
    if not given:
        return _Unjudged(LEFT_OUT, reply.model_dump_json())
    if any((other.verdict, other.claim.strip()) != (given[0].verdict, given[0].claim.strip()) for other in given[1:]):
        said = "; ".join(f"{v.verdict} (“{redacted_and_shortened(v.claim, _SHOWN_CHARS, flat=True)}”)" for v in given)
        return _Unjudged(f"the judge gave this turn contradicting verdicts: {said}", reply.model_dump_json())
    return given[0]


MISQUOTED = "the judge quoted text that is not in the answer"


def _misquoted(q: _Question, quote: str, said: str, reason: str, reply: BaseModel) -> Score:
    """The judge's evidence is not in the text it judged: its verdict is not trusted."""
    return q.score(
        "unsure",
        f"{MISQUOTED}: “{redacted_and_shortened(quote, _QUOTE_CHARS, flat=True)}”; it said {said}: {reason}",
        raw=reply.model_dump_json(),
    )


def _render_turn(turn: AgentEvent) -> str:
    """The turn as the judge sees it: its tool calls with results, its messages, hand-off, variables set."""
    return render_conversation([turn], variables=True)


def _render_marked(
    turns: Sequence[AgentEvent], events: Sequence[TranscriptEvent], users: Sequence[UserEvent] = ()
) -> str:
    """The conversation up to the last of ``turns`` (and ``users``), every event of each of them marked
    ``"judge": true`` (an agent turn also shows the variables it set, as :func:`_render_turn` does); every
    other event as the conversation shows it. Later events are left out: nothing said after a turn is
    evidence for it."""
    marked = {id(turn) for turn in (*turns, *users)}
    last = max((i for i, event in enumerate(events) if id(event) in marked), default=len(events) - 1)
    return render_conversation(events[: last + 1], marked=[*turns, *users])


def _user_verdicts(reply: ReviewReply | ConversationReviewReply) -> list[UserFidelityTurnReply]:
    """The user-turn verdicts of a conversation review that asked about the simulated user (none otherwise)."""
    if isinstance(reply, ReviewFidelityReply):
        return reply.user_replies()
    if isinstance(reply, ConversationReviewFidelityReply):
        return reply.user_turns
    return []


def _invented_key(brief: str, turns: Sequence[UserEvent], events: Sequence[TranscriptEvent]) -> str:
    """What identifies one invented-fact question: the brief and the conversation with the turns marked."""
    return f"{brief}\n\0{_render_marked((), events, turns)}"


def _invented_findings(verdicts: Sequence[UserFidelityTurnReply], turns: Sequence[UserEvent]) -> list[FidelityFinding]:
    """An ``invented_fact`` finding per verdict that says invented and quotes words of its own turn (a verdict
    for a turn not asked about, or whose quote is not in the turn, is no finding)."""
    by_number = {turn.turn: turn for turn in turns}
    findings: list[FidelityFinding] = []
    for verdict in verdicts:
        turn = by_number.get(verdict.turn)
        fact = verdict.fact.strip()
        if turn is None or not verdict.invented or not fact or not quote_in(fact, turn.text):
            continue
        findings.append(
            FidelityFinding(
                turn=turn.turn,
                step=turn.step,
                kind="invented_fact",
                evidence=fact,
                rule=f"states a fact its goal, guide, persona and session never gave it: {verdict.reason}",
                source="judge",
            )
        )
    return findings


def _normalise(text: str) -> str:
    return " ".join(text.split()).casefold()


def _number(value: float) -> str:
    return f"{value:g}"
