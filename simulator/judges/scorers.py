"""The built-in scorers, registered in the order their scores are stored (see ``scoring.py`` for what each
kind of case is held to). Deterministic checks come from ``checks.py`` and ``claims.py``; the questions only a
model can answer are the judge's (``llm_judges.py``), each with its prompt file under ``prompts/``.

Case scorers: ``engine`` (step outcomes, turn cap, approval), ``expectations``, ``state`` (the case's
``expect_state`` on its final world), ``golden_turns`` (runs the turn scorers per golden turn), ``hallucination``,
``goal_satisfaction``, ``budgets`` (``budgets.py``), ``spoken_formatting`` (``spoken.py``: flags, not required).
Turn scorers (golden): ``semantic_match``, ``reference_answer`` (with its side claims), ``keywords``,
``tool_calls``, ``handoff``, ``variables``.

The judge questions a scorer asks run concurrently (:func:`gather_in_order`), its scores in the order above.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Sequence
from dataclasses import dataclass
from typing import cast

from simulator.judges._gather import gather_in_order
from simulator.judges._registry import ScoringInput, TurnInput, registered_scorers, scorer
from simulator.judges.budgets import budget_scores
from simulator.judges.checks import (
    check_expectation,
    check_keywords,
    check_tools_called,
    describe_call,
    tool_call_correctness,
)
from simulator.judges.claims import ClaimFinding, ClaimTool, contradicted_by_state, find_unsupported_claims
from simulator.judges.fidelity import invented_fact_question
from simulator.judges.llm_judges import Reviewed, UserTurns
from simulator.judges.spoken import formatting_flags
from simulator.judges.step import NO_JUDGE, NO_WORLD, render_conversation
from simulator.kinds import kind_of
from simulator.models import ExpectationSpec, GoldenCase
from simulator.models.case import normalize_reference
from simulator.models.scores import Score, ScoreVerdict
from simulator.models.transcript import AgentEvent, CheckDetail, CheckEvent, Transcript, TranscriptEvent
from simulator.world import check_state

# -- case scorers, in the order of the stored scores ------------------------------------------------------------


@scorer("engine")
async def engine_outcomes(target: ScoringInput) -> list[Score]:
    """The engine's step outcomes (``goal_achievement``), and a conversation stopped by the turn cap or for
    approval."""
    transcript, case = target.transcript, target.case
    kind = kind_of(case)
    open_goal = kind.has_open_goal(case)
    scores: list[Score] = []
    for outcome in transcript.steps:
        verdict = _STEP_VERDICT[outcome.status]
        scores.append(
            Score(
                metric="goal_achievement",
                check=f"{kind.outcome_label(outcome.index)}: {outcome.label}",
                source="engine",
                verdict=verdict,
                # Undecided steps (unsure, not reached) have no value: they say nothing about the agent.
                value={"met": 1.0, "not_met": 0.0}.get(verdict),
                reason=outcome.rationale,
                # An open goal has nothing the engine could check: goal satisfaction decides it.
                required=not (open_goal and outcome.status != "complete" and verdict != "met"),
                step=outcome.index,
            )
        )
    if transcript.stop_reason == "turn_cap":
        scores.append(
            Score(
                metric="run",
                check="turn cap",
                source="engine",
                verdict="not_met",
                reason=f"the conversation hit the cap of {transcript.turns} turns",
            )
        )
    if transcript.stop_reason == "needs_approval":
        waiting = [c.name for c in transcript.tool_calls() if c.status == "needs_approval"]
        scores.append(
            Score(
                metric="run",
                check="approval",
                source="engine",
                verdict="unsure",
                reason=f"stopped for a person's approval of {', '.join(waiting)}: nothing after it was tested",
            )
        )
    return scores


@scorer("expectations", prompts=("semantic_match", "expectation"))
async def expectations(target: ScoringInput) -> list[Score]:
    """The case's expectations: those a step or golden turn refers to on that step's or turn's replies first,
    then the others on the whole conversation."""
    case = target.case
    by_text = {normalize_reference(e.text): e for e in case.expectations if e.text}
    used: set[int] = set()
    questions: list[Awaitable[Score]] = []
    for scope in kind_of(case).expectation_scopes(case):
        step, turn = scope.step, scope.turn
        replies = [r for r in target.replies if (r.step == step if step is not None else r.turn == turn)]
        for ref in scope.references:
            expectation = by_text.get(normalize_reference(ref))
            if expectation is None:
                continue
            used.add(id(expectation))
            questions.append(_expectation(target, expectation, replies, f"{scope.label}: ", step=step, turn=turn))
    for expectation in case.expectations:
        if id(expectation) not in used:
            questions.append(_expectation(target, expectation, target.replies, ""))
    return await gather_in_order(questions)


async def _expectation(
    target: ScoringInput,
    expectation: ExpectationSpec,
    replies: list[AgentEvent],
    prefix: str,
    *,
    step: int | None = None,
    turn: int | None = None,
) -> Score:
    view = target.view(replies)
    detail = check_expectation(expectation, view)
    if detail is not None:
        return _from_detail("expectation", detail, prefix, step=step, turn=turn)
    if expectation.message is not None and turn is not None:
        events = before_reply(target.transcript.events, turn)
    else:
        events = target.scope_events(step=step, turn=turn)
    if expectation.message is not None:
        threshold = expectation.threshold if expectation.threshold is not None else target.thresholds.semantic_match
        score = await target.judge.semantic_match(
            expected=expectation.message,
            actual=view.text(),
            context=render_conversation(events),
            threshold=threshold,
            turn=turn or 0,
        )
    else:
        score = await target.judge.expectation(
            text=expectation.text or "",
            conversation=events,
            replies=target.replies,
            declared_tools=claim_tools(target),
        )
    return score.model_copy(update={"check": prefix + score.check, "step": step, "turn": turn})


@scorer("state")
async def state(target: ScoringInput) -> list[Score]:
    """The case's ``expect_state`` against the world the conversation left: one required score per item, met or
    not met with the diff as its reason (no model). Without a world to read, one error score says why: a state
    nobody could check is never a pass."""
    expectation = target.case.expect_state
    if expectation is None:
        return []
    world = target.context.world
    if world is None:
        return [
            Score(
                metric="state",
                check="state",
                source="engine",
                verdict="error",
                reason=NO_WORLD,
            )
        ]
    return [
        Score(
            metric="state",
            check=result.check,
            source="deterministic",
            verdict="met" if result.met else "not_met",
            reason=result.evidence,
            missing=result.missing,
        )
        for result in check_state(expectation, world)
    ]


@scorer("golden_turns", kinds={"golden"})
async def golden_turns(target: ScoringInput) -> list[Score]:
    """Every golden turn with an ``expect``: the turn scorers in order, or ``not_met`` for a turn never reached."""
    case = cast(GoldenCase, target.case)  # registered for golden cases only
    turn_scorers = registered_scorers(scope="turn", kind="golden")
    parts: list[Awaitable[list[Score]]] = []
    for index, turn in enumerate(case.turns):
        number = index + 1
        if turn.expect is None:
            continue
        replies = [r for r in target.replies if r.turn == number]
        if not replies:
            not_reached = Score(
                metric="golden_turn",
                check=f"turn {number}: reply",
                source="engine",
                verdict="not_met",
                reason="the conversation ended before this turn",
                turn=number,
            )
            parts.append(_ready([not_reached]))
            continue
        conversation = render_conversation(before_reply(target.transcript.events, number))
        narrowed = target.for_turn(TurnInput(number, turn, replies, conversation))
        parts.extend(entry.run(narrowed) for entry in turn_scorers)
    return [score for scores in await gather_in_order(parts) for score in scores]


def before_reply(events: Sequence[TranscriptEvent], turn: int) -> list[TranscriptEvent]:
    """The conversation a reply of turn ``turn`` is judged with: every earlier turn and this turn's own user
    message or event, never this turn's reply nor anything said after it (a later turn is no context for it)."""
    earlier: list[TranscriptEvent] = []
    for event in events:
        if event.turn > turn or (event.turn == turn and isinstance(event, AgentEvent)):
            break
        earlier.append(event)
    return earlier


async def _ready(scores: list[Score]) -> list[Score]:
    return scores


@scorer(
    "hallucination",
    prompts=(
        "hallucination",
        "hallucination_batch",
        "hallucination_fidelity_batch",
        "conversation_review",
        "conversation_review_fidelity",
    ),
)
async def hallucination(target: ScoringInput) -> list[Score]:
    """Per agent turn with a message: a claim of tool use no call supports, or in the last reply a claimed action
    the case's ``expect_state`` finds undone (deterministic), else the judge:
    the turns left for it in one request (``hallucination_batch``), or one request per turn when the suite
    says ``judging: {batch: false}`` (see :func:`_batched`). One score per turn either way, in turn order.

    The batched request also carries the simulated user's ``invented_fact`` question when the user model
    wrote turns (``hallucination_fidelity_batch``, see :func:`_user_question`): the judge keeps that answer
    for the fidelity check, which needs it only if the conversation fails, so no later request waits for it.
    In a scenario or simulation with a goal, the goal question rides in the same request too
    (``conversation_review``, see :func:`_review`): a conversation costs one judge request after it ends."""
    plan = _turns_plan(target)
    scores, asked, judged, user = plan.scores, plan.asked, plan.judged, plan.user
    transcript, instructions = target.transcript, target.context.instructions
    reviewed = await _review(target)
    if reviewed is not None:
        verdicts = reviewed.hallucinations
    elif user is not None or _batched(target, asked):
        verdicts = await target.judge.hallucinations(
            turns=asked,
            events=transcript.events,
            context=_known_from_start(transcript, instructions),
            required=judged,
            user=user,
        )
    else:
        verdicts = await gather_in_order(
            target.judge.hallucination(
                turn=reply, context=hallucination_context(transcript, reply, instructions), required=judged
            )
            for reply in asked
        )
    answers = iter(verdicts)
    return [score if score is not None else next(answers) for score in scores]


@dataclass(frozen=True)
class _TurnsPlan:
    """The hallucination scorer's turns: a score per agent turn with a message, the deterministic ones given
    and None where the judge's verdict goes; the turns it asks the judge about (in that order); whether those
    verdicts are required; and the simulated user's question to ask with them."""

    scores: list[Score | None]
    asked: list[AgentEvent]
    judged: bool
    user: UserTurns | None


def _turns_plan(target: ScoringInput) -> _TurnsPlan:
    """The hallucination scorer's plan (:class:`_TurnsPlan`), worked out once per conversation: the goal
    scorer needs it too when the two questions share a request (:func:`_review`)."""
    found = target.shared.get("turns_plan")
    if isinstance(found, _TurnsPlan):
        return found
    required = target.thresholds.fail_on_hallucination
    flagged = {f.turn: f for f in find_unsupported_claims(target.replies, claim_tools(target))}
    for contradicted in _state_contradictions(target):
        flagged.setdefault(contradicted.turn, contradicted)
    scores: list[Score | None] = []
    asked: list[AgentEvent] = []
    for reply in target.replies:
        if not any(message.strip() for message in reply.messages):
            continue
        finding = flagged.get(reply.turn)
        if finding is None:
            asked.append(reply)
            scores.append(None)  # the judge's verdict, filled in by the scorer
        else:
            scores.append(
                Score(
                    metric="hallucination",
                    check=f"turn {reply.turn}: hallucination",
                    source="deterministic",
                    verdict="not_met",
                    value=1.0,
                    reason=finding.reason,
                    required=required,
                    turn=reply.turn,
                    step=reply.step,
                )
            )
    # The per-turn question is asked of every case automatically, so without a judge model it is
    # reported (unsure, not judged) but does not hold the case: the deterministic claim check above
    # still does. Checks the author wrote (expectations) stay required either way.
    judged = required and target.judge.has_model
    user = _user_question(target, asked, failed_already=required and bool(flagged))
    plan = _TurnsPlan(scores, asked, judged, user)
    target.shared["turns_plan"] = plan
    return plan


#: The kinds of case the goal question is asked of (the ``goal_satisfaction`` scorer's).
_GOAL_KINDS = frozenset({"scenario", "simulation"})
#: The prompts each combined review stands for: a suite that replaced one of them but not the review keeps
#: its own wording, asked apart.
_REVIEW_PARTS = {
    "conversation_review": ("goal_satisfaction", "hallucination", "hallucination_batch"),
    "conversation_review_fidelity": (
        "goal_satisfaction",
        "hallucination",
        "hallucination_batch",
        "hallucination_fidelity_batch",
        "user_fidelity",
    ),
}


async def _review(target: ScoringInput) -> Reviewed | None:
    """The goal question and the hallucination question (with the user's, when it is asked) in one judge
    request for the conversation, shared by the ``hallucination`` and ``goal_satisfaction`` scorers: the first
    to need it asks, the other awaits the same answer. None when the questions are asked apart: the suite
    says ``judging: {batch: false}``, there is no judge model, goal or turn to ask about, the suite replaced
    the wording of one of the questions but not the review's, or the replayed recording asked them apart."""
    if "review" not in target.shared:
        target.shared["review"] = asyncio.ensure_future(_ask_review(target))
    reviewed: Reviewed | None = await target.shared["review"]
    return reviewed


async def _ask_review(target: ScoringInput) -> Reviewed | None:
    case, judge = target.case, target.judge
    goal = kind_of(case).goal_description(case) if case.kind in _GOAL_KINDS else None
    if not target.context.judging.batch or not judge.has_model or goal is None or not goal.strip():
        return None
    plan = _turns_plan(target)
    if not plan.asked or len({reply.turn for reply in plan.asked}) != len(plan.asked):
        return None
    name = "conversation_review_fidelity" if plan.user is not None and plan.user.turns else "conversation_review"
    if not judge.overrides(name) and any(judge.overrides(part) for part in _REVIEW_PARTS[name]):
        return None
    return await judge.review(
        goal=goal,
        events=target.transcript.events,
        turns=plan.asked,
        context=_known_from_start(target.transcript, target.context.instructions),
        required=plan.judged,
        user=plan.user,
        replies=target.replies,
        declared_tools=claim_tools(target),
    )


def _state_contradictions(target: ScoringInput) -> list[ClaimFinding]:
    """Action claims the world contradicts: in the agent's last reply, when the case's ``expect_state`` finds a
    record not as expected in the world the conversation left; and in a step's last reply, when the step's
    ``expect_state`` found one so at the step's last check (its evidence is on that check)."""
    tools = claim_tools(target)
    found: list[ClaimFinding] = []
    expectation, world = target.case.expect_state, target.context.world
    if expectation is not None and world is not None:
        unmet = [r.evidence for r in check_state(expectation, world) if r.item == "record" and not r.met]
        finding = contradicted_by_state(target.replies, tools, unmet)
        if finding is not None:
            found.append(finding)
    kind = kind_of(target.case)
    for index in range(kind.step_count(target.case)):
        step = kind.step(target.case, index)
        if step is None or step.expect_state is None:
            continue
        number = kind.step_number(index)
        records = {f"state: {item.label()}" + ("" if item.exists else " absent") for item in step.expect_state.records}
        checks = [e for e in target.transcript.events if isinstance(e, CheckEvent) and e.step == number]
        if not checks:
            continue
        unmet = [d.evidence for d in checks[-1].details if d.check in records and d.verdict == "not_met"]
        replies = [reply for reply in target.replies if reply.step == number]
        finding = contradicted_by_state(replies, tools, unmet)
        if finding is not None:
            found.append(finding)
    return found


def claim_tools(target: ScoringInput) -> list[ClaimTool]:
    """The agent's declared tools as the claim check reads them (name, description, declared kind): for the
    hallucination scorer, and for the judge's passes, which a flagged claim overrules."""
    context = target.context
    return [
        ClaimTool(name, context.tool_descriptions.get(name, ""), context.tool_kinds.get(name))
        for name in context.declared_tools
    ]


def _batched(target: ScoringInput, asked: list[AgentEvent]) -> bool:
    """Whether the turns ``asked`` go to the judge in one request: unless the suite says
    ``judging: {batch: false}``; not for a single turn (one request either way, and the per-turn question
    is the simpler one); not when the suite replaced the per-turn prompt but not the batched one (its own
    wording is then used, per turn); and not for turns that share a number (an imported transcript)."""
    judge = target.judge
    return (
        target.context.judging.batch
        and len(asked) > 1
        and judge.has_model
        and (judge.overrides("hallucination_batch") or not judge.overrides("hallucination"))
        and len({reply.turn for reply in asked}) == len(asked)
    )


def _user_question(target: ScoringInput, asked: list[AgentEvent], *, failed_already: bool) -> UserTurns | None:
    """The simulated user's ``invented_fact`` question to ask in the batched request about the turns ``asked``,
    or None: only when the suite batches, a judge model answers, the user model wrote turns and there are turns
    to ask about (their numbers distinct, as :func:`_batched` needs); not when a claim of tool use already
    failed the conversation (``failed_already``: a hallucination is never the user's, so the answer would not
    be used); and not when the suite replaced the wording of one of the two questions but not the combined
    prompt (its own wording is then asked, apart)."""
    judge = target.judge
    parts = ("hallucination", "hallucination_batch", "user_fidelity")
    if (
        not target.context.judging.batch
        or not judge.has_model
        or not asked
        or failed_already
        or (not judge.overrides("hallucination_fidelity_batch") and any(judge.overrides(name) for name in parts))
        or len({reply.turn for reply in asked}) != len(asked)
    ):
        return None
    return invented_fact_question(target.case, target.transcript, target.context.persona)


@scorer(
    "goal_satisfaction",
    kinds=_GOAL_KINDS,
    prompts=("goal_satisfaction", "conversation_review", "conversation_review_fidelity"),
)
async def goal_satisfaction(target: ScoringInput) -> list[Score]:
    """Whether the user's goal was satisfied (judge model). Without one, the engine's step outcomes stand for
    the goal; an open goal stays unsure unless the user reached it."""
    case = target.case
    kind = kind_of(case)
    reviewed = await _review(target)
    if reviewed is not None:
        score = reviewed.goal
    else:
        score = await target.judge.goal_satisfaction(
            goal=kind.goal_description(case),
            conversation=target.transcript.events,
            replies=target.replies,
            declared_tools=claim_tools(target),
        )
    if score.verdict == "unsure" and score.reason == NO_JUDGE:
        reached = any(o.status == "complete" for o in target.transcript.steps)
        score = score.model_copy(update={"required": kind.has_open_goal(case) and not reached})
    return [score]


@scorer("budgets")
async def budgets(target: ScoringInput) -> list[Score]:
    """The case's budgets (the suite's, with the case's figures laid over them): one required score per figure,
    from the transcript alone (``budgets.py``)."""
    own = target.case.budgets
    return budget_scores(target.transcript, own.over(target.context.budgets) if own else target.context.budgets)


@scorer("spoken_formatting")
async def spoken_formatting(target: ScoringInput) -> list[Score]:
    """Chat-only formatting (markdown, links, addresses, code, emoji) in a voice agent's turns: one flag per turn
    that has any, never required (``spoken.py``)."""
    return formatting_flags(target.transcript)


# -- turn scorers (golden), in the order of the stored scores per turn ---------------------------------------------


def _turn(target: ScoringInput) -> TurnInput:
    assert target.turn is not None, "a turn scorer runs on one golden turn"
    return target.turn


@scorer("semantic_match", kinds={"golden"}, scope="turn", prompts=("semantic_match",))
async def semantic_match(target: ScoringInput) -> list[Score]:
    """The turn's reply against its expected message (0-4, met at the threshold)."""
    turn = _turn(target)
    expect = turn.turn.expect
    if expect is None or expect.message is None:
        return []
    score = await target.judge.semantic_match(
        expected=expect.message,
        actual=target.view(turn.replies).text(),
        context=turn.conversation,
        threshold=target.thresholds.semantic_match,
        turn=turn.number,
    )
    return [score.model_copy(update={"check": turn.prefix + score.check, "turn": turn.number})]


@scorer("reference_answer", kinds={"golden"}, scope="turn", prompts=("reference_answer", "side_claim"))
async def reference_answer(target: ScoringInput) -> list[Score]:
    """The turn's reply against its reference answer (0-100), then each ``must_not_state`` claim on its own."""
    turn = _turn(target)
    expect = turn.turn.expect
    if expect is None or expect.reference_answer is None:
        return []
    question = turn.turn.user or (turn.turn.event.name if turn.turn.event else "")
    scores = await target.judge.reference_answer(
        question=question,
        answer=target.view(turn.replies).text(),
        reference=expect.reference_answer,
        threshold=target.thresholds.reference_answer,
        turn=turn.number,
    )
    return [score.model_copy(update={"check": turn.prefix + score.check, "turn": turn.number}) for score in scores]


@scorer("keywords", kinds={"golden"}, scope="turn")
async def keywords(target: ScoringInput) -> list[Score]:
    """The turn's ``must_contain`` / ``must_not_contain`` terms."""
    turn = _turn(target)
    if turn.turn.expect is None:
        return []
    details = check_keywords(turn.turn.expect, target.view(turn.replies))
    return [_from_detail("keywords", detail, turn.prefix, turn=turn.number) for detail in details]


@scorer("tool_calls", kinds={"golden"}, scope="turn")
async def tool_calls(target: ScoringInput) -> list[Score]:
    """A golden turn's tool calls: tool-call correctness, the order check, and the calls no spec took.

    Other calls are always reported (``unexpected_tool_call``, naming them). They fail the turn only where
    it allows none, ``tool_order: exact`` (the hosted builders' golden rule: an unexpected call fails the
    evaluation but does not lower tool-call correctness); with ``any`` or ``in_order`` they are allowed,
    so the score is ``n/a`` and not required.
    """
    turn = _turn(target)
    expect = turn.turn.expect
    if expect is None:
        return []
    specs, order, prefix, number = expect.tool_calls, expect.tool_order, turn.prefix, turn.number
    calls = target.view(turn.replies).calls()
    correctness = tool_call_correctness(specs, calls)
    threshold = target.thresholds.tool_call_correctness
    scores: list[Score] = []
    if correctness.value is not None:
        scores.append(
            Score(
                metric="tool_call_correctness",
                check=f"{prefix}tool-call correctness",
                source="deterministic",
                verdict="met" if correctness.value >= threshold else "not_met",
                value=correctness.value,
                threshold=threshold,
                reason=_correctness_reason(correctness.describe(), correctness.value, threshold),
                turn=number,
            )
        )
    if specs or order == "exact":
        # The threshold governs the turn's tool check as a whole: the argument mismatch it lets pass for
        # correctness does not fail the order check either (the evidence names what it allowed).
        allowed = correctness.value is not None and threshold <= correctness.value < 1.0
        called = check_tools_called(specs, order, calls, allowed_by=threshold if allowed else None)
        scores.append(_from_detail("tool_order", called, prefix, turn=number))
    if not correctness.extra:
        return scores
    extra = ", ".join(describe_call(call) for call in correctness.extra)
    strict = order == "exact"
    scores.append(
        Score(
            metric="unexpected_tool_call",
            check=f"{prefix}{'no unexpected tool call' if strict else 'other tool calls'}",
            source="deterministic",
            verdict="not_met" if strict else "n/a",
            reason=f"called {extra}, which this turn does not expect (tool_order: exact allows no other call)"
            if strict
            else f"also called {extra}: allowed by tool_order: {order} (tool_order: exact would fail the turn)",
            required=strict,
            turn=number,
        )
    )
    return scores


def _correctness_reason(described: str, value: float, threshold: float) -> str:
    if threshold < 1.0 and threshold <= value < 1.0:
        return f"{described}; met at the threshold {threshold:g}, which allows the mismatches named"
    return described


@scorer("handoff", kinds={"golden"}, scope="turn")
async def handoff(target: ScoringInput) -> list[Score]:
    """The hand-off the turn expects."""
    turn = _turn(target)
    expect = turn.turn.expect
    if expect is None or expect.handoff is None:
        return []
    detail = check_expectation(ExpectationSpec(handoff=expect.handoff), target.view(turn.replies))
    assert detail is not None
    return [_from_detail("handoff", detail, turn.prefix, turn=turn.number)]


@scorer("variables", kinds={"golden"}, scope="turn")
async def variables(target: ScoringInput) -> list[Score]:
    """The session variables the agent must have set by the end of the turn."""
    turn = _turn(target)
    expect = turn.turn.expect
    if expect is None:
        return []
    scores: list[Score] = []
    for name, value in expect.variables.items():
        spec = ExpectationSpec.model_validate({"variable": {"name": name, "value": value}})
        detail = check_expectation(spec, target.view(turn.replies, up_to_turn=turn.number))
        assert detail is not None
        scores.append(_from_detail("variable", detail, turn.prefix, turn=turn.number))
    return scores


def hallucination_context(transcript: Transcript, reply: AgentEvent, instructions: str | None = None) -> str:
    """What the agent knew when it wrote ``reply``: its instructions, the session variables, and the
    conversation up to and including that turn (tool calls and their results included)."""
    # Everything before the reply (its own user message included), never the reply itself: the claim under
    # test must not count as its own support. The reply's own tool calls are shown with the turn.
    position = next((i for i, event in enumerate(transcript.events) if event is reply), len(transcript.events))
    earlier = transcript.events[:position]
    lines = [_known_from_start(transcript, instructions)] if instructions or transcript.session_parameters else []
    lines.append(render_conversation(earlier))
    return "\n".join(lines)


def _known_from_start(transcript: Transcript, instructions: str | None) -> str:
    """What the agent knew before the conversation: its instructions and the session variables (the part of
    :func:`hallucination_context` every turn shares, sent once by the batched question)."""
    lines = []
    if instructions:
        lines.append(f"AGENT INSTRUCTIONS: {instructions}")
    if transcript.session_parameters:
        lines.append(f"SESSION VARIABLES: {transcript.session_parameters}")
    return "\n".join(lines)


#: A step's status as the verdict of its goal-achievement score (the four states): a step that is unsure
#: or was never reached (the conversation stopped for approval, or ended) is not the agent's failure.
_STEP_VERDICT: dict[str, ScoreVerdict] = {
    "complete": "met",
    "incomplete": "not_met",
    "blocked": "not_met",
    "unsure": "unsure",
    "not_reached": "unsure",
    "not_attempted": "unsure",
}


def _from_detail(
    metric: str, detail: CheckDetail, prefix: str, *, step: int | None = None, turn: int | None = None
) -> Score:
    return Score(
        metric=metric,
        check=prefix + detail.check,
        source="deterministic",
        verdict=detail.verdict,
        reason=detail.evidence,
        step=step,
        turn=turn,
        missing=detail.missing,
    )
