"""Claims backed or contradicted by the world: a world call that changed records backs an action claim, one the
world refused (nothing changed) contradicts it, and an action claimed in the last reply is contradicted when the
case's ``expect_state`` finds a record not as expected."""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import TypeAdapter

from simulator.judges.claims import contradicted_by_state, find_unsupported_claims
from simulator.judges.llm_judges import LLMJudge
from simulator.judges.scoring import ScoringContext, score_transcript
from simulator.models import Case
from simulator.models.scores import Score
from simulator.models.transcript import AgentEvent, CheckEvent, ToolCallRecord, Transcript, UserEvent
from simulator.models.world import StateExpectation, WorldOperation, WorldSpec
from simulator.world import SeededWorld, World, check_state, run_operation
from tests.factories import run

SEED = SeededWorld(
    WorldSpec(
        collections={
            "orders": {"1001": {"status": "placed"}, "1002": {"status": "placed"}, "1003": {"status": "shipped"}}
        }
    )
)
CANCEL = WorldOperation.model_validate(
    {"update": "orders", "id": "{order_id}", "set": {"status": "cancelled"}, "require": {"status": "placed"}}
)
LOOKUP = WorldOperation.model_validate({"get": "orders", "id": "{order_id}"})
TOOLS = ("cancel_order", "lookup_order")
REFUSED_1003 = "orders/1003 has status=shipped, not placed: nothing was changed"


def world_call(world: World, name: str, operation: WorldOperation, order_id: str) -> ToolCallRecord:
    outcome = run_operation(world, operation, {"order_id": order_id})
    return ToolCallRecord(
        id=f"c-{name}-{order_id}",
        name=name,
        arguments={"order_id": order_id},
        status="executed",
        result=outcome.result,
        world=outcome.access,
    )


def reply(text: str, *calls: ToolCallRecord, turn: int = 1) -> AgentEvent:
    return AgentEvent(turn=turn, messages=[text], tool_calls=list(calls))


def findings(text: str, *calls: tuple[str, WorldOperation, str]) -> list[tuple[str, str]]:
    world = SEED.copy()
    made = [world_call(world, *call) for call in calls]
    return [(f.claim, f.reason) for f in find_unsupported_claims([reply(text, *made)], TOOLS)]


def nothing_changed(claim: str, tool: str, answer: str) -> list[tuple[str, str]]:
    return [(claim, f"claims “{claim}” but the world shows nothing changed ({tool} answered: {answer})")]


CALL_CASES = [
    pytest.param("I have cancelled your order.", [("cancel_order", CANCEL, "1001")], [], id="changed: backed"),
    pytest.param("Your order has been cancelled.", [("cancel_order", CANCEL, "1001")], [], id="passive: backed"),
    pytest.param(
        "I have cancelled your order.",
        [("cancel_order", CANCEL, "1003")],
        nothing_changed("I have cancelled", "cancel_order", REFUSED_1003),
        id="refused: contradicted",
    ),
    pytest.param(
        "Your order has been cancelled.",
        [("cancel_order", CANCEL, "1003")],
        nothing_changed("Your order has been cancelled", "cancel_order", REFUSED_1003),
        id="passive, refused: contradicted",
    ),
    pytest.param(
        "Ich habe Ihre Bestellung storniert.",
        [("cancel_order", CANCEL, "1003")],
        nothing_changed("Ich habe Ihre Bestellung storniert", "cancel_order", REFUSED_1003),
        id="de, refused: contradicted",
    ),
    pytest.param(
        "I have cancelled your order.",
        [("cancel_order", CANCEL, "1003"), ("cancel_order", CANCEL, "1001")],
        [],
        id="refused, then changed: backed",
    ),
    pytest.param(
        "Done: I cancelled it.",
        [("lookup_order", LOOKUP, "9")],
        [
            (
                "I cancelled",
                "claims “I cancelled” but no tool that changes something ran in this turn "
                "(only the lookup lookup_order)",
            )
        ],
        id="a lookup's refusal is no action's",
    ),
    pytest.param(
        "I've checked your order: there is none with that number.",
        [("lookup_order", LOOKUP, "9")],
        [],
        id="a lookup that found nothing backs its result",
    ),
]


@pytest.mark.parametrize(("text", "calls", "expected"), CALL_CASES)
def test_a_world_call_backs_an_action_only_when_it_changed_something(
    text: str, calls: list[tuple[str, WorldOperation, str]], expected: list[tuple[str, str]]
) -> None:
    assert findings(text, *calls) == expected


def test_an_error_result_without_a_world_backs_as_before() -> None:
    call = ToolCallRecord(id="c1", name="cancel_order", status="faked", result={"error": "not allowed"})
    assert find_unsupported_claims([reply("I have cancelled your order.", call)], TOOLS) == []


# -- the case's expect_state and the last reply --------------------------------------------------------------------

CASE: TypeAdapter[Any] = TypeAdapter(Case)
EXPECT_1001 = {"records": [{"collection": "orders", "id": "1001", "fields": {"status": "cancelled"}}]}
UNMET_1001 = "orders/1001 status: expected 'cancelled', is 'placed' (seeded 'placed', not changed)"


def test_the_last_reply_claiming_an_action_is_contradicted_by_an_unmet_record() -> None:
    found = contradicted_by_state(
        [reply("Which order?"), reply("I have cancelled order 1001.", turn=2)], TOOLS, [UNMET_1001]
    )
    assert found is not None
    assert (found.turn, found.claim, found.reason) == (
        2,
        "I have cancelled",
        f"claims “I have cancelled” but the world does not show it ({UNMET_1001})",
    )


@pytest.mark.parametrize(
    ("replies", "unmet"),
    [
        ([reply("I have cancelled order 1001.")], []),
        ([reply("Order 1001 is still placed, I can't change it.")], [UNMET_1001]),
        ([reply("I have cancelled order 1001."), reply("Anything else?", turn=2)], [UNMET_1001]),
    ],
    ids=["state met", "no action claimed", "the claim is not in the last reply"],
)
def test_nothing_is_contradicted_without_an_unmet_record_and_a_claimed_action(
    replies: list[AgentEvent], unmet: list[str]
) -> None:
    assert contradicted_by_state(replies, TOOLS, unmet) is None


def hallucination_scores(order_id: str) -> list[Score]:
    """The agent cancels ``order_id`` and says it cancelled order 1001; the case expects 1001 cancelled."""
    world = SEED.copy()
    call = world_call(world, "cancel_order", CANCEL, order_id)
    case = CASE.validate_python(
        {"name": "c", "kind": "scenario", "goal": "cancel order 1001", "expect_state": EXPECT_1001}
    )
    events = [
        UserEvent(turn=1, text="Please cancel order 1001.", source="scripted"),
        reply("I have cancelled your order 1001.", call),
    ]
    transcript = Transcript(case="c", kind="scenario", events=events, turns=1)
    context = ScoringContext(world=world, declared_tools=list(TOOLS))
    scores = run(score_transcript(case, transcript, context, LLMJudge(None)))
    return [score for score in scores if score.metric == "hallucination"]


def test_the_wrong_record_changed_contradicts_the_claim_with_the_diff() -> None:
    (score,) = hallucination_scores("1002")
    assert (score.source, score.verdict, score.reason) == (
        "deterministic",
        "not_met",
        f"claims “I have cancelled” but the world does not show it ({UNMET_1001})",
    )


def test_the_right_record_changed_leaves_the_turn_to_the_judge() -> None:
    (score,) = hallucination_scores("1001")
    assert (score.source, score.verdict) == ("judge", "unsure")


@pytest.mark.parametrize(("order_id", "contradicted"), [("1002", True), ("1001", False)])
def test_a_steps_unmet_state_contradicts_the_action_its_last_reply_claims(order_id: str, contradicted: bool) -> None:
    world = SEED.copy()
    call = world_call(world, "cancel_order", CANCEL, order_id)
    case = CASE.validate_python(
        {
            "name": "c",
            "kind": "simulation",
            "steps": [
                {"goal": "cancel order 1001", "expect_state": EXPECT_1001},
                {"goal": "say thanks"},
            ],
        }
    )
    details = [
        result.detail() for result in check_state(TypeAdapter(StateExpectation).validate_python(EXPECT_1001), world)
    ]
    events = [
        UserEvent(turn=1, step=0, text="Please cancel order 1001.", source="scripted"),
        AgentEvent(turn=1, step=0, messages=["I have cancelled your order 1001."], tool_calls=[call]),
        CheckEvent(
            turn=1,
            step=0,
            verdict="met" if all(d.verdict == "met" for d in details) else "not_met",
            rationale="",
            details=details,
        ),
    ]
    transcript = Transcript(case="c", kind="simulation", events=events, turns=1)
    # The final world is not what decides a step's claim: the step's own last check is.
    context = ScoringContext(world=SEED.copy(), declared_tools=list(TOOLS))
    scores = run(score_transcript(case, transcript, context, LLMJudge(None)))
    (score,) = [score for score in scores if score.metric == "hallucination"]
    if contradicted:
        assert (score.source, score.verdict) == ("deterministic", "not_met")
        assert score.reason == f"claims “I have cancelled” but the world does not show it ({UNMET_1001})"
    else:
        assert (score.source, score.verdict) == ("judge", "unsure")
