"""State checks: each item of an ``expect_state`` decided on a world, met or not met, with its exact evidence."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import pytest
from pydantic import TypeAdapter

from simulator.judges import StepJudge
from simulator.judges.llm_judges import LLMJudge
from simulator.judges.scoring import ScoringContext, score_transcript
from simulator.judges.step import NO_WORLD
from simulator.metrics import case_metrics, case_outcome, state_correctness
from simulator.models import Case
from simulator.models.case import Expectation
from simulator.models.scores import Score, ScoreVerdict
from simulator.models.transcript import AgentEvent, StepVerdict, Transcript
from simulator.models.world import StateExpectation, WorldSpec, show_value
from simulator.world import SeededWorld, World, check_state
from tests.factories import run

SEED: dict[str, Any] = {
    "orders": {
        "1001": {"status": "placed", "total": 50},
        "1002": {"status": "placed", "total": 20},
        "1003": {"status": "shipped", "total": 5},
    },
    "cards": {"c-1": {"blocked": False, "limit": 500}, "c-2": {"blocked": False, "limit": 100}},
    "tickets": {"t-1": {"order": "1002", "status": "open"}},
}

Change = Callable[[World], object]


def nothing(world: World) -> None:
    """The conversation changed nothing."""


def cancel_1001(world: World) -> None:
    world.update("orders", "1001", {"status": "cancelled"})


def cancel_1002(world: World) -> None:
    world.update("orders", "1002", {"status": "cancelled"})


def refund_1001(world: World) -> None:
    world.update("orders", "1001", {"status": "refunded"})


def block_c2(world: World) -> None:
    world.update("cards", "c-2", {"blocked": True})


def open_ticket(world: World) -> None:
    world.insert("tickets", {"order": "1001", "status": "open"}, "t-2")


def open_two_tickets(world: World) -> None:
    world.insert("tickets", {"order": "1001", "status": "open"}, "t-2")
    world.insert("tickets", {"order": "1001", "status": "open"}, "t-3")


def delete_1003(world: World) -> None:
    world.delete("orders", "1003")


def world_after(*changes: Change) -> World:
    world = SeededWorld(WorldSpec(collections=SEED)).copy()
    for change in changes:
        change(world)
    return world


def results(expect: dict[str, Any], *changes: Change) -> list[tuple[str, str, bool, str]]:
    found = check_state(StateExpectation.model_validate(expect), world_after(*changes))
    return [(r.item, r.check, r.met, r.evidence) for r in found]


RECORD_CASES = [
    pytest.param(
        {"id": 1001, "fields": {"status": "cancelled"}},
        cancel_1001,
        ("state: orders/1001", True, "orders/1001: status 'cancelled' as expected"),
        id="fields-met",
    ),
    pytest.param(
        {"id": "1001", "fields": {"status": "cancelled"}},
        nothing,
        (
            "state: orders/1001",
            False,
            "orders/1001 status: expected 'cancelled', is 'placed' (seeded 'placed', not changed)",
        ),
        id="fields-not-changed",
    ),
    pytest.param(
        {"id": "1001", "fields": {"status": "cancelled"}},
        refund_1001,
        ("state: orders/1001", False, "orders/1001 status: expected 'cancelled', is 'refunded' (seeded 'placed')"),
        id="fields-changed-wrongly",
    ),
    pytest.param(
        {"id": "1001", "fields": {"status": "cancelled", "refund": 50}},
        cancel_1001,
        ("state: orders/1001", False, "orders/1001 refund: expected 50, is missing (not seeded)"),
        id="field-missing",
    ),
    pytest.param(
        {"id": "1001"},
        nothing,
        ("state: orders/1001", True, "orders/1001: exists"),
        id="exists-met",
    ),
    pytest.param(
        {"id": "1003"},
        delete_1003,
        ("state: orders/1003", False, "orders/1003: expected to exist, was deleted"),
        id="exists-deleted",
    ),
    pytest.param(
        {"id": "9999"},
        nothing,
        ("state: orders/9999", False, "orders/9999: expected to exist, there is none (not seeded, not created)"),
        id="exists-never",
    ),
    pytest.param(
        {"id": "1003", "exists": False},
        delete_1003,
        ("state: orders/1003 absent", True, "orders/1003: absent (deleted by the conversation)"),
        id="absent-met",
    ),
    pytest.param(
        {"id": "1003", "exists": False},
        nothing,
        ("state: orders/1003 absent", False, "orders/1003: expected absent, exists (seeded, not deleted)"),
        id="absent-not-deleted",
    ),
]


@pytest.mark.parametrize(("record", "change", "expected"), RECORD_CASES)
def test_a_record_by_id_is_checked_field_by_field(
    record: dict[str, Any], change: Change, expected: tuple[str, bool, str]
) -> None:
    (result,) = results({"records": [{"collection": "orders", **record}]}, change)
    assert result[1:] == expected


WHERE_CASES = [
    pytest.param(
        nothing,
        (False, "tickets where order=1001: no record matches (1 record in tickets)"),
        id="none-match",
    ),
    pytest.param(open_ticket, (True, "tickets/t-2: status 'open' as expected"), id="one-matches"),
    pytest.param(
        open_two_tickets,
        (False, "tickets where order=1001: 2 records match (t-2, t-3), expected exactly one"),
        id="two-match",
    ),
]


@pytest.mark.parametrize(("change", "expected"), WHERE_CASES)
def test_a_record_found_by_where_must_be_the_only_match(change: Change, expected: tuple[bool, str]) -> None:
    expect = {"records": [{"collection": "tickets", "where": {"order": "1001"}, "fields": {"status": "open"}}]}
    (result,) = results(expect, change)
    assert result == ("record", "state: tickets where order=1001", *expected)


def test_a_record_found_by_where_that_must_not_exist() -> None:
    expect = {"records": [{"collection": "tickets", "where": {"order": "1001"}, "exists": False}]}
    assert results(expect, nothing)[0][2:] == (True, "tickets where order=1001: no record matches")
    assert results(expect, open_ticket)[0][2:] == (False, "tickets where order=1001: expected none, found t-2")


UNCHANGED_CASES = [
    pytest.param({"collection": "cards"}, nothing, ("state: cards unchanged", True, "cards: as seeded (2 records)")),
    pytest.param(
        {"collection": "cards"}, block_c2, ("state: cards unchanged", False, "cards/c-2 changed: blocked false -> true")
    ),
    pytest.param(
        {"collection": "orders", "id": "1002"},
        cancel_1001,
        ("state: orders/1002 unchanged", True, "orders/1002: as seeded"),
    ),
    pytest.param(
        {"collection": "orders", "id": "1002"},
        cancel_1002,
        ("state: orders/1002 unchanged", False, "orders/1002 changed: status 'placed' -> 'cancelled'"),
    ),
    pytest.param(
        {"collection": "orders", "id": "1002", "fields": ["total"]},
        cancel_1002,
        ("state: orders/1002 (total) unchanged", True, "orders/1002 (total): as seeded"),
    ),
    pytest.param(
        {"collection": "orders", "id": "1003", "fields": ["total"]},
        delete_1003,
        ("state: orders/1003 (total) unchanged", False, "orders/1003 deleted"),
    ),
    pytest.param(
        {"collection": "tickets"},
        open_ticket,
        (
            "state: tickets unchanged",
            False,
            'tickets/t-2 inserted: {"order": "1001", "status": "open"}',
        ),
    ),
    pytest.param(
        {"collection": "invoices"},
        nothing,
        (
            "state: invoices unchanged",
            False,
            "invoices: the seeded world has no collection 'invoices' (nothing to keep as seeded)",
        ),
    ),
]


@pytest.mark.parametrize(("unchanged", "change", "expected"), UNCHANGED_CASES)
def test_unchanged_names_every_change(
    unchanged: dict[str, Any], change: Change, expected: tuple[str, bool, str]
) -> None:
    (result,) = results({"unchanged": [unchanged]}, change)
    assert result == ("unchanged", *expected)


COUNT_CASES = [
    pytest.param(
        {"where": {"status": "open"}, "count": 1}, nothing, (True, "tickets where status=open: 1 as expected")
    ),
    pytest.param(
        {"where": {"status": "open"}, "count": 1}, open_ticket, (False, "tickets where status=open: expected 1, is 2")
    ),
    pytest.param({"count": 0}, nothing, (False, "tickets: expected 0, is 1")),
]


@pytest.mark.parametrize(("count", "change", "expected"), COUNT_CASES)
def test_counts(count: dict[str, Any], change: Change, expected: tuple[bool, str]) -> None:
    (result,) = results({"counts": [{"collection": "tickets", **count}]}, change)
    assert result[0] == "count"
    assert result[2:] == expected


def test_a_count_of_a_collection_the_world_lacks_is_zero_and_says_so() -> None:
    (result,) = results({"counts": [{"collection": "refunds", "count": 1}]}, nothing)
    assert result[2:] == (
        False,
        "refunds: expected 1, is 0 (the world has no collection 'refunds' (it has: cards, orders, tickets))",
    )


NOTHING_ELSE_CASES = [
    pytest.param((cancel_1001,), (True, "no record other than those named changed"), id="only-the-named-one"),
    pytest.param(
        (cancel_1001, block_c2, delete_1003),
        (False, "cards/c-2 changed: blocked false -> true\norders/1003 deleted"),
        id="two-others",
    ),
    pytest.param(
        (cancel_1002,),
        (False, "orders/1002 changed: status 'placed' -> 'cancelled'"),
        id="the-wrong-record",
    ),
]


@pytest.mark.parametrize(("changes", "expected"), NOTHING_ELSE_CASES)
def test_nothing_else_changed_lists_every_other_change(changes: tuple[Change, ...], expected: tuple[bool, str]) -> None:
    expect = {
        "records": [{"collection": "orders", "id": "1001", "fields": {"status": "cancelled"}}],
        "nothing_else_changed": True,
    }
    last = results(expect, *changes)[-1]
    assert last[:2] == ("nothing_else_changed", "state: nothing else changed")
    assert last[2:] == expected


def test_nothing_else_changed_excludes_a_record_found_by_where() -> None:
    expect = {"records": [{"collection": "tickets", "where": {"order": "1001"}}], "nothing_else_changed": True}
    assert [r[2] for r in results(expect, open_ticket)] == [True, True]


def test_one_result_per_item_in_the_order_written() -> None:
    expect = {
        "records": [
            {"collection": "orders", "id": "1001", "fields": {"status": "cancelled"}},
            {"collection": "orders", "id": "1002", "fields": {"status": "placed"}},
        ],
        "unchanged": [{"collection": "cards"}],
        "counts": [{"collection": "tickets", "count": 1}],
        "nothing_else_changed": True,
    }
    found = results(expect, cancel_1002)
    assert [(r[0], r[2]) for r in found] == [
        ("record", False),
        ("record", False),
        ("unchanged", True),
        ("count", True),
        ("nothing_else_changed", True),
    ]


def test_not_met_only_because_nothing_happened_is_marked_missing() -> None:
    expect = StateExpectation.model_validate(
        {"records": [{"collection": "orders", "id": "1001", "fields": {"status": "cancelled"}}]}
    )
    (untouched,) = check_state(expect, world_after(nothing))
    (wrong,) = check_state(expect, world_after(refund_1001))
    assert (untouched.missing, wrong.missing) == (True, False)
    assert untouched.detail().verdict == "not_met"


def test_the_check_reads_without_changing_the_world_or_recording_reads() -> None:
    world = world_after(cancel_1001)
    world.begin_access()
    check_state(
        StateExpectation.model_validate({"records": [{"collection": "tickets", "where": {"order": "1002"}}]}), world
    )
    assert world.end_access().read == []
    assert [c.label() for c in world.diff()] == ["orders/1001"]


@pytest.mark.parametrize(
    ("value", "shown"),
    [
        ("placed", "'placed'"),
        ("it's", "'it\\'s'"),
        ("two\nlines", "'two\\nlines'"),
        (True, "true"),
        (None, "null"),
        (50, "50"),
        ({"b": 1, "a": [1, 2]}, '{"a": [1, 2], "b": 1}'),
        ("x" * 100, "'" + "x" * 78 + "…"),
    ],
)
def test_values_are_shown_on_one_line(value: Any, shown: str) -> None:
    assert show_value(value) == shown


# -- the case's expect_state as scores, a step's as check details -------------------------------------------------

CASE: TypeAdapter[Any] = TypeAdapter(Case)
CANCEL_1001 = {"records": [{"collection": "orders", "id": "1001", "fields": {"status": "cancelled"}}]}


def state_scores(expect_state: dict[str, Any] | None, world: World | None) -> list[Score]:
    data: dict[str, Any] = {"name": "c", "kind": "scenario", "goal": "cancel order 1001"}
    if expect_state is not None:
        data["expect_state"] = expect_state
    case = CASE.validate_python(data)
    transcript = Transcript(case="c", kind="scenario")
    scores = run(score_transcript(case, transcript, ScoringContext(world=world), LLMJudge(None)))
    return [score for score in scores if score.metric == "state"]


@pytest.mark.parametrize(
    ("change", "verdict", "reason"),
    [
        (cancel_1001, "met", "orders/1001: status 'cancelled' as expected"),
        (
            cancel_1002,
            "not_met",
            "orders/1001 status: expected 'cancelled', is 'placed' (seeded 'placed', not changed)",
        ),
    ],
)
def test_the_case_state_is_a_required_deterministic_score(change: Change, verdict: str, reason: str) -> None:
    (score,) = state_scores(CANCEL_1001, world_after(change))
    assert (score.check, score.source, score.verdict, score.reason, score.required) == (
        "state: orders/1001",
        "deterministic",
        verdict,
        reason,
        True,
    )


def test_a_failed_state_fails_the_case_with_the_diff_as_its_reason() -> None:
    scores = state_scores(CANCEL_1001, world_after(cancel_1002))
    outcome, reasons = case_outcome(Transcript(case="c", kind="scenario"), scores)
    assert (outcome, reasons) == (
        "fail",
        ["state: orders/1001: orders/1001 status: expected 'cancelled', is 'placed' (seeded 'placed', not changed)"],
    )
    assert case_metrics(Transcript(case="c", kind="scenario"), scores)["state_correctness"] == 0.0


def test_a_state_with_no_world_to_read_is_an_error_not_a_pass() -> None:
    (score,) = state_scores(CANCEL_1001, None)
    assert (score.verdict, score.reason, score.required) == ("error", NO_WORLD, True)
    assert case_outcome(Transcript(case="c", kind="scenario"), [score])[0] == "error"


def test_a_case_without_expect_state_has_no_state_score() -> None:
    assert state_scores(None, world_after(cancel_1001)) == []


@pytest.mark.parametrize(
    ("verdicts", "expected"),
    [((), None), (("met", "not_met", "met", "met"), 0.75), (("error",), None), (("met",), 1.0)],
)
def test_state_correctness_is_the_share_of_items_met(
    verdicts: tuple[ScoreVerdict, ...], expected: float | None
) -> None:
    scores = [
        Score(metric="state", check=f"state: {i}", source="deterministic", verdict=v) for i, v in enumerate(verdicts)
    ]
    assert state_correctness(scores) == expected


def step_verdict(state: dict[str, Any] | None, world: World | None, checks: Sequence[Any] = ()) -> StepVerdict:
    reply = AgentEvent(turn=1, messages=["Order 1001 is cancelled."])
    return run(
        StepJudge().check_step(
            goal="cancel the order",
            criteria=None,
            checks=[TypeAdapter(Expectation).validate_python(c) for c in checks],
            replies=[reply],
            events=[reply],
            variables={},
            state=StateExpectation.model_validate(state) if state is not None else None,
            world=world,
        )
    )


def test_a_step_state_is_met_when_the_world_shows_it() -> None:
    verdict = step_verdict(CANCEL_1001, world_after(cancel_1001), [{"must_contain": ["cancelled"]}])
    assert verdict.verdict == "met"
    assert [(d.check, d.verdict) for d in verdict.details] == [
        ("must_contain (all, substring): 'cancelled'", "met"),
        ("state: orders/1001", "met"),
    ]


def test_a_step_state_not_met_makes_the_step_not_met_with_the_diff() -> None:
    verdict = step_verdict(CANCEL_1001, world_after(cancel_1002), [{"must_contain": ["cancelled"]}])
    assert verdict.verdict == "not_met"
    assert verdict.rationale == (
        "state: orders/1001: orders/1001 status: expected 'cancelled', is 'placed' (seeded 'placed', not changed)"
    )
    assert verdict.details[-1].missing


def test_a_step_state_without_a_world_is_not_decided() -> None:
    verdict = step_verdict(CANCEL_1001, None)
    assert (verdict.verdict, verdict.settled) == ("unsure", False)
    assert [(d.check, d.verdict, d.evidence) for d in verdict.details] == [("state", "unsure", NO_WORLD)]
