"""Tool-call checks: the order check (any / in_order / exact) and the graded tool-call correctness."""

from __future__ import annotations

from typing import Any, Literal

import pytest
from pydantic import JsonValue

from simulator.judges.checks import check_tools_called, tool_call_correctness
from simulator.models import ToolCallSpec
from simulator.models.transcript import ToolCallRecord, ToolStatus


def spec(name: str, arguments: dict[str, JsonValue] | None = None, **options: Any) -> ToolCallSpec:
    return ToolCallSpec.model_validate({"name": name, "arguments": arguments, **options})


def call(id_: str, name: str, status: ToolStatus = "faked", **arguments: JsonValue) -> ToolCallRecord:
    return ToolCallRecord(id=id_, name=name, arguments=arguments, status=status)


LOOKUP = spec("lookup_order", {"order_id": "A1"})
REFUND = spec("refund", {"order_id": "A1", "amount": 23.6, "reason": "damaged"})
NOTIFY = spec("notify")
A_NUMBER = {"mode": "regex", "pattern": r"^A\d+$"}


# -- tool-call correctness: the definition, pinned -------------------------------------------------------

CORRECTNESS = [
    pytest.param([LOOKUP], [call("c1", "lookup_order", order_id="A1")], 1.0, id="all arguments match"),
    pytest.param(
        [REFUND],
        [call("c1", "refund", order_id="A1", amount=23.6, reason="other")],
        2 / 3,
        id="partial arguments: 2 of 3 match -> 0.667",
    ),
    pytest.param([LOOKUP], [], 0.0, id="missed call scores 0"),
    pytest.param([LOOKUP], [call("c1", "lookup_customer", order_id="A1")], 0.0, id="another tool is no match"),
    pytest.param(
        [LOOKUP, REFUND],
        [call("c1", "refund", order_id="A1", amount=23.6, reason="damaged")],
        0.5,
        id="two expected, one missed -> mean of 0 and 1",
    ),
    pytest.param(
        [LOOKUP, REFUND],
        [call("c1", "lookup_order", order_id="A1"), call("c2", "refund", order_id="A1", amount=1, reason="x")],
        (1 + 1 / 3) / 2,
        id="mean over expected calls",
    ),
    pytest.param([NOTIFY], [call("c1", "notify", to="x")], 1.0, id="no arguments expected: called is enough"),
    pytest.param([spec("notify", {})], [call("c1", "notify", to="x")], 1.0, id="empty arguments: called is enough"),
    pytest.param(
        [spec("lookup_order", {"order_id": "A1"}, match="ignore")],
        [call("c1", "lookup_order", order_id="ZZZ")],
        1.0,
        id="match ignore: name only",
    ),
    pytest.param(
        [spec("lookup_order", {"order_id": "A1"}, argument_rules={"order_id": A_NUMBER})],
        [call("c1", "lookup_order", order_id="A99")],
        1.0,
        id="regex rule matches",
    ),
    pytest.param(
        [spec("lookup_order", {"order_id": "A1"}, argument_rules={"order_id": A_NUMBER})],
        [call("c1", "lookup_order", order_id="B1")],
        0.0,
        id="regex rule fails",
    ),
    pytest.param(
        [spec("refund", {"amount": 23.6}, argument_rules={"amount": {"mode": "tolerance", "tolerance": 0.01}})],
        [call("c1", "refund", amount=23.605)],
        1.0,
        id="tolerance 0.01: 23.605 for 23.6",
    ),
    pytest.param(
        [spec("refund", {"amount": 23.6}, argument_rules={"amount": {"mode": "tolerance", "tolerance": 0.01}})],
        [call("c1", "refund", amount=23.62)],
        0.0,
        id="tolerance 0.01: 23.62 is too far",
    ),
    pytest.param(
        [spec("refund", {"amount": 23.6}, argument_rules={"amount": {"mode": "tolerance", "tolerance": 0.01}})],
        [call("c1", "refund", amount="23.60")],
        1.0,
        id="tolerance reads numbers sent as strings",
    ),
    pytest.param(
        [spec("refund", {"order_id": "A1", "note": "x"}, argument_rules={"note": {"mode": "ignore"}})],
        [call("c1", "refund", order_id="A1")],
        1.0,
        id="ignore rule: counts as matched even when absent",
    ),
    pytest.param(
        [spec("lookup_order", {"order_id": "A1"}, match="subset")],
        [call("c1", "lookup_order", order_id="A1", verbose=True)],
        1.0,
        id="subset: extra arguments allowed",
    ),
    pytest.param(
        [spec("lookup_order", {"order_id": "A1"}, match="exact")],
        [call("c1", "lookup_order", order_id="A1", verbose=True)],
        1.0,
        id="exact: extra arguments do not lower the score (listed as mismatches)",
    ),
    pytest.param(
        [LOOKUP],
        [call("c1", "lookup_order", order_id="A2"), call("c2", "lookup_order", order_id="A1")],
        1.0,
        id="best of two calls of the same tool is taken",
    ),
    pytest.param(
        [LOOKUP],
        [call("c1", "lookup_order", order_id="A1"), call("c2", "cancel"), call("c3", "lookup_order", order_id="A1")],
        1.0,
        id="extra and repeated calls do not change the value",
    ),
    pytest.param(
        [LOOKUP, LOOKUP], [call("c1", "lookup_order", order_id="A1")], 0.5, id="one call serves one expected call"
    ),
    pytest.param(
        [LOOKUP], [call("c1", "lookup_order", "not_executed", order_id="A1")], 1.0, id="not_executed still counts"
    ),
    pytest.param([LOOKUP], [call("c1", "lookup_order", "failed", order_id="A1")], 1.0, id="failed still counts"),
]


@pytest.mark.parametrize(("expected", "calls", "value"), CORRECTNESS)
def test_tool_call_correctness_definition(
    expected: list[ToolCallSpec], calls: list[ToolCallRecord], value: float
) -> None:
    assert tool_call_correctness(expected, calls).value == pytest.approx(value, abs=1e-9)


def test_two_thirds_reads_as_0_667() -> None:
    result = tool_call_correctness([REFUND], [call("c1", "refund", order_id="A1", amount=23.6, reason="other")])
    assert result.value is not None
    assert round(result.value, 3) == 0.667
    assert result.calls[0].mismatches == ["reason: 'other' (expected 'damaged')"]


def test_no_expected_call_has_no_value() -> None:
    # Nothing to score: None, not 1.0 (which would read as "all correct") nor 0.0.
    result = tool_call_correctness([], [call("c1", "lookup_order", order_id="A1")])
    assert result.value is None
    assert [c.id for c in result.extra] == ["c1"]


def test_per_call_details_name_the_matched_call_and_what_differed() -> None:
    calls = [
        call("c1", "lookup_order", order_id="A2"),
        call("c2", "lookup_order", order_id="A1"),
        call("c3", "refund", order_id="A1", amount=20, reason="damaged"),
    ]
    result = tool_call_correctness([LOOKUP, REFUND, NOTIFY], calls)
    assert [(p.expected.name, p.call_id, round(p.score, 3)) for p in result.calls] == [
        ("lookup_order", "c2", 1.0),  # the better of the two lookups, though it came second
        ("refund", "c3", 0.667),
        ("notify", None, 0.0),
    ]
    assert result.calls[1].mismatches == ["amount: 20 (expected 23.6)"]
    assert result.calls[2].mismatches == ["not called"]
    assert result.missed == ["notify"]
    assert [c.id for c in result.extra] == ["c1"]
    assert result.duplicates == []
    assert result.describe() == (
        "0.56 = mean of lookup_order 1.00 (call c2), refund 0.67 (call c3: amount: 20 (expected 23.6)), "
        'notify 0.00 (not called); missed: notify; extra: lookup_order({"order_id": "A2"}) [faked]'
    )


def test_duplicates_and_extras_are_reported() -> None:
    calls = [
        call("c1", "lookup_order", order_id="A1"),
        call("c2", "lookup_order", order_id="A1"),  # the same call again
        call("c3", "lookup_order", order_id="A1"),  # and again
        call("c4", "cancel_order", order_id="A1"),  # never expected
    ]
    result = tool_call_correctness([LOOKUP], calls)
    assert result.value == 1.0
    assert [c.id for c in result.duplicates] == ["c2", "c3"]
    assert [c.id for c in result.extra] == ["c2", "c3", "c4"]
    assert "repeated: " in result.describe()


def test_exact_match_lists_unexpected_arguments_as_mismatches() -> None:
    exact = spec("lookup_order", {"order_id": "A1"}, match="exact")
    result = tool_call_correctness([exact], [call("c1", "lookup_order", order_id="A1", verbose=True)])
    assert result.calls[0].mismatches == ["unexpected argument 'verbose'"]
    two = tool_call_correctness([exact], [call("c1", "lookup_order", order_id="A1", verbose=True, page=2)])
    assert two.calls[0].mismatches == ["unexpected arguments 'page', 'verbose'"]


def test_a_tie_prefers_the_call_that_fully_satisfies_an_exact_spec() -> None:
    exact = spec("lookup_order", {"order_id": "A1"}, match="exact")
    calls = [call("c1", "lookup_order", order_id="A1", verbose=True), call("c2", "lookup_order", order_id="A1")]
    result = tool_call_correctness([exact], calls)
    assert (result.calls[0].call_id, result.calls[0].mismatches) == ("c2", [])


def test_an_equal_score_tie_goes_to_the_earlier_call() -> None:
    calls = [call("c1", "lookup_order", order_id="B1"), call("c2", "lookup_order", order_id="C1")]
    assert tool_call_correctness([LOOKUP], calls).calls[0].call_id == "c1"


def test_expected_calls_choose_greedily_in_listed_order() -> None:
    # Pinned on purpose (the definition is greedy, not an optimal assignment): the loose first spec takes
    # the earliest lookup, which is the one the strict second spec wanted.
    loose = spec("lookup_order")
    calls = [call("c1", "lookup_order", order_id="A1"), call("c2", "lookup_order", order_id="B7")]
    result = tool_call_correctness([loose, LOOKUP], calls)
    assert [p.call_id for p in result.calls] == ["c1", "c2"]
    assert result.value == 0.5


def test_unparsable_arguments_are_said_so() -> None:
    broken = ToolCallRecord(id="c1", name="lookup_order", arguments_error="Expecting value", status="not_executed")
    result = tool_call_correctness([LOOKUP], [broken])
    assert result.value == 0.0
    assert result.calls[0].mismatches == [
        "order_id: missing (expected 'A1')",
        "arguments were not valid JSON (Expecting value)",
    ]


# -- the order check -------------------------------------------------------------------------------------

A = call("c1", "lookup_order", order_id="A1")
B = call("c2", "refund", order_id="A1", amount=23.6, reason="damaged")
C = call("c3", "notify", to="customer")
X = call("c4", "log_event", event="x")

Order = Literal["any", "in_order", "exact"]

ORDER_TABLE: list[Any] = [
    # (order, expected, calls, met)
    pytest.param("any", [LOOKUP, REFUND], [B, A], True, id="any: reversed is fine"),
    pytest.param("any", [LOOKUP, REFUND], [A, X, B], True, id="any: other calls allowed"),
    pytest.param("any", [LOOKUP, REFUND], [A], False, id="any: one missing"),
    pytest.param("any", [LOOKUP, LOOKUP], [A], False, id="any: listed twice needs two calls"),
    pytest.param("any", [LOOKUP, LOOKUP], [A, A], True, id="any: two calls for two listings"),
    pytest.param("any", [], [A], True, id="any: nothing expected"),
    pytest.param("in_order", [LOOKUP, REFUND], [A, B], True, id="in_order: in order"),
    pytest.param("in_order", [LOOKUP, REFUND], [X, A, C, B, X], True, id="in_order: interleaved calls allowed"),
    pytest.param("in_order", [LOOKUP, REFUND], [B, A], False, id="in_order: reversed"),
    pytest.param("in_order", [LOOKUP, REFUND], [B, A, B], True, id="in_order: a later repeat restores order"),
    pytest.param("in_order", [LOOKUP, REFUND], [A], False, id="in_order: one missing"),
    pytest.param("exact", [LOOKUP, REFUND], [A, B], True, id="exact: exactly these"),
    pytest.param("exact", [LOOKUP, REFUND], [B, A], False, id="exact: wrong order"),
    pytest.param("exact", [LOOKUP, REFUND], [A, B, X], False, id="exact: an extra call"),
    pytest.param("exact", [LOOKUP, REFUND], [A, X, B], False, id="exact: an extra call between"),
    pytest.param("exact", [LOOKUP, REFUND], [A], False, id="exact: one missing"),
    pytest.param("exact", [], [], True, id="exact empty: no call, as required"),
    pytest.param("exact", [], [A], False, id="exact empty: any call fails"),
    pytest.param(
        "exact",
        [LOOKUP],
        [call("c1", "lookup_order", "not_executed", order_id="A1")],
        True,
        id="exact: a not_executed call counts as made",
    ),
    pytest.param(
        "exact",
        [],
        [call("c1", "lookup_order", "failed", order_id="A1")],
        False,
        id="exact empty: a failed call was still made",
    ),
    pytest.param(
        "any",
        [spec("lookup_order", {"order_id": "A1"}, match="exact")],
        [call("c1", "lookup_order", order_id="A1", verbose=True)],
        False,
        id="argument match exact: an extra argument fails",
    ),
    pytest.param(
        "any",
        [spec("lookup_order", {"order_id": "A1"}, match="subset")],
        [call("c1", "lookup_order", order_id="A1", verbose=True)],
        True,
        id="argument match subset: an extra argument is fine",
    ),
    pytest.param("any", [LOOKUP], [call("c1", "lookup_order", order_id="A2")], False, id="wrong argument value"),
    pytest.param(
        "any",
        [spec("lookup_order"), LOOKUP],
        [call("c1", "lookup_order", order_id="A1"), call("c2", "lookup_order", order_id="B7")],
        True,
        id="any: the loose spec does not steal the strict one's call",
    ),
]


@pytest.mark.parametrize(("order", "expected", "calls", "met"), ORDER_TABLE)
def test_tools_called(order: Order, expected: list[ToolCallSpec], calls: list[ToolCallRecord], met: bool) -> None:
    detail = check_tools_called(expected, order, calls)
    assert detail.verdict == ("met" if met else "not_met"), detail.evidence


def test_evidence_quotes_the_calls_seen_when_met() -> None:
    detail = check_tools_called([LOOKUP], "any", [A])
    assert detail.check == "tool_calls (any): lookup_order"
    assert detail.evidence == 'calls seen: lookup_order({"order_id": "A1"}) [faked]'


def test_evidence_says_what_is_missing_and_how_the_closest_call_differs() -> None:
    detail = check_tools_called([LOOKUP, NOTIFY], "any", [call("c1", "lookup_order", order_id="A2")])
    assert detail.evidence == (
        'missing lookup_order({"order_id": "A1"}): closest was lookup_order({"order_id": "A2"}) [faked]: '
        "order_id: 'A2' (expected 'A1'); "
        "missing notify(any arguments): not called; "
        'calls seen: lookup_order({"order_id": "A2"}) [faked]'
    )


def test_evidence_says_a_tool_was_called_too_few_times() -> None:
    detail = check_tools_called([LOOKUP, LOOKUP], "any", [A])
    assert "lookup_order was called fewer times than expected" in detail.evidence


def test_evidence_says_what_came_out_of_order() -> None:
    detail = check_tools_called([LOOKUP, REFUND], "in_order", [B, A])
    assert detail.evidence.startswith(
        'out of order: refund({"amount": 23.6, "order_id": "A1", "reason": "damaged"}) [faked] came before '
        'lookup_order({"order_id": "A1"}) [faked], but refund is listed after it'
    )


def test_exact_evidence_names_extra_calls_and_order() -> None:
    extra = check_tools_called([LOOKUP], "exact", [A, X])
    assert extra.evidence.startswith('extra: log_event({"event": "x"}) [faked]')
    swapped = check_tools_called([LOOKUP, REFUND], "exact", [B, A])
    assert swapped.evidence.startswith("out of order: expected lookup_order, refund; called refund, lookup_order")
    nothing = check_tools_called([], "exact", [A])
    assert nothing.check == "tool_calls (exact): no tool call"
    assert nothing.evidence.startswith('no tool call was allowed, extra: lookup_order({"order_id": "A1"}) [faked]')


def test_exact_quotes_a_wrong_call_once_not_also_as_extra() -> None:
    detail = check_tools_called([LOOKUP], "exact", [call("c1", "lookup_order", order_id="A2")])
    problems = detail.evidence.split("; calls seen:")[0]
    assert problems.startswith("missing lookup_order")
    assert "extra:" not in problems


def test_an_unknown_order_is_an_error() -> None:
    with pytest.raises(ValueError, match="unknown tool order"):
        check_tools_called([LOOKUP], "sorted", [A])  # type: ignore[arg-type]
