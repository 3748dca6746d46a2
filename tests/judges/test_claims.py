"""Claims of tool use checked against the tool calls that really happened: what is flagged, and why.

Each row is a list of agent turns (built directly, no engine) and the findings expected, with the exact
reason text. A flag is a deterministic ``not_met`` hallucination in the case's scores (see
``test_scoring.py``), so a false flag fails an honest turn with no judge to overrule it; a turn that is not
flagged still goes to the judge model (or stays ``unsure`` without one).
"""

from __future__ import annotations

from collections.abc import Sequence

import pytest

from simulator.judges.claims import ClaimFinding, find_unsupported_claims
from simulator.models.transcript import AgentEvent, ToolCallRecord, ToolStatus

DECLARED = ("lookup_order", "lookup_holidays", "issue_refund", "feiertage_abfragen", "lager_pruefen")


def call(name: str, status: ToolStatus = "faked", *, error: str | None = None) -> ToolCallRecord:
    return ToolCallRecord(id=f"c-{name}", name=name, status=status, result={"ok": True}, error=error)


def turn(number: int, *messages: str, calls: Sequence[ToolCallRecord] = ()) -> AgentEvent:
    return AgentEvent(turn=number, messages=list(messages), tool_calls=list(calls))


def no_tool(claim: str) -> str:
    return f"claims “{claim}” but no tool was called in the conversation"


def not_this_turn(claim: str) -> str:
    return f"claims “{claim}” but no tool was called in this turn"


def did_not_run(*statuses: str) -> str:
    return f"states results although its tool calls did not run ({', '.join(statuses)}) and does not say so"


def findings(replies: Sequence[AgentEvent], declared: Sequence[str] = DECLARED) -> list[tuple[int, str, str]]:
    return [(f.turn, f.claim, f.reason) for f in find_unsupported_claims(replies, declared)]


# -- flagged --------------------------------------------------------------------------------------------------

FLAGGED = [
    # A claim of tool use while no tool was called at all, English and German.
    pytest.param(
        [turn(1, "According to our delivery system, your parcel arrives on Monday.")],
        [(1, "According to our delivery system", no_tool("According to our delivery system"))],
        id="en: according to our delivery system",
    ),
    pytest.param(
        [turn(1, "I've checked your order: it left the warehouse yesterday.")],
        [(1, "I've checked", no_tool("I've checked"))],
        id="en: I've checked your order",
    ),
    pytest.param(
        [turn(1, "Our records show that you paid twice.")],
        [(1, "Our records show", no_tool("Our records show"))],
        id="en: our records show",
    ),
    pytest.param(
        [turn(1, "I have refunded the second payment.")],
        [(1, "I have refunded", no_tool("I have refunded"))],
        id="en: I have refunded",
    ),
    pytest.param(
        [turn(1, "Laut unserem Liefersystem kommt Ihr Paket am Montag.")],
        [(1, "Laut unserem Liefersystem", no_tool("Laut unserem Liefersystem"))],
        id="de: laut unserem Liefersystem",
    ),
    pytest.param(
        [turn(1, "Laut Feiertagsabfrage ist der 24.12. kein Liefertag.")],
        [(1, "Laut Feiertagsabfrage", no_tool("Laut Feiertagsabfrage"))],
        id="de: laut without an article",
    ),
    pytest.param(
        [
            turn(1, "Ihre Bestellung ist unterwegs.", calls=[call("feiertage_abfragen", "not_executed")]),
            turn(2, "Laut Feiertagsabfrage kommt das Paket am 28.12.2026.", calls=[call("lager_pruefen")]),
        ],
        [
            (
                2,
                "Laut Feiertagsabfrage",
                "claims “Laut Feiertagsabfrage” but feiertage_abfragen never ran (feiertage_abfragen [not_executed])",
            )
        ],
        id="de: a compound names the tool feiertage_abfragen",
    ),
    pytest.param(
        [turn(1, "Ich habe nachgesehen: Ihre Bestellung ist unterwegs.")],
        [(1, "Ich habe nachgesehen", no_tool("Ich habe nachgesehen"))],
        id="de: ich habe nachgesehen",
    ),
    pytest.param(
        [turn(1, "Unser System zeigt eine offene Rechnung über 23,60 €.")],
        [(1, "Unser System zeigt", no_tool("Unser System zeigt"))],
        id="de: unser System zeigt",
    ),
    pytest.param(
        [turn(1, "Hello!", "Our records show that you paid twice.")],
        [(1, "Our records show", no_tool("Our records show"))],
        id="a claim in the second message of a turn",
    ),
    pytest.param(
        [turn(1, "Hello! What is your order number?"), turn(2, "I have refunded order A1.")],
        [(2, "I have refunded", no_tool("I have refunded"))],
        id="only the turn that claims is flagged",
    ),
    # A claim naming a declared tool that was never called, although another tool ran.
    pytest.param(
        [
            turn(1, "Your order A1 ships today.", calls=[call("lookup_order")]),
            turn(2, "According to the holiday lookup, Monday is a public holiday."),
        ],
        [
            (
                2,
                "According to the holiday lookup",
                "claims “According to the holiday lookup” but lookup_holidays was never called",
            )
        ],
        id="names lookup_holidays, only lookup_order ran",
    ),
    # Tools were called, but none has ever returned anything.
    pytest.param(
        [
            turn(1, "Sorry, I could not look that up.", calls=[call("lookup_order", "not_executed")]),
            turn(2, "Our records show a refund on 3 May."),
        ],
        [(2, "Our records show", not_this_turn("Our records show"))],
        id="claim after calls that never ran",
    ),
    # A claim is backed by a call of its own turn: an earlier call backs only a claim naming its tool.
    pytest.param(
        [
            turn(1, "One moment please.", calls=[call("lookup_order", "executed")]),
            turn(2, "I checked the order: it left the warehouse yesterday."),
        ],
        [(2, "I checked", not_this_turn("I checked"))],
        id="I checked the order at turn 2, after a lookup at turn 1",
    ),
    pytest.param(
        [
            turn(1, "One moment please.", calls=[call("lookup_order", "faked")]),
            turn(2, "According to our delivery system, your parcel arrives on Monday."),
        ],
        [(2, "According to our delivery system", not_this_turn("According to our delivery system"))],
        id="claim after a faked call in an earlier turn",
    ),
    pytest.param(
        [
            turn(1, "One moment please.", calls=[call("lookup_order", "executed")]),
            turn(2, "Ich habe nachgesehen: Ihre Bestellung ist unterwegs."),
        ],
        [(2, "Ich habe nachgesehen", not_this_turn("Ich habe nachgesehen"))],
        id="claim after an executed call in an earlier turn (German)",
    ),
    pytest.param(
        [turn(1, calls=[call("lookup_order")]), turn(2, "Our records show that order A1 was paid.")],
        [(2, "Our records show", not_this_turn("Our records show"))],
        id="calls of an earlier turn without a message do not back a claim naming no tool",
    ),
    pytest.param(
        [
            turn(1, "Order A1 ships today.", calls=[call("lookup_order"), call("lookup_holidays", "not_executed")]),
            turn(2, "According to the holiday lookup, Monday is a public holiday."),
        ],
        [
            (
                2,
                "According to the holiday lookup",
                "claims “According to the holiday lookup” but lookup_holidays never ran "
                "(lookup_holidays [not_executed])",
            )
        ],
        id="the named tool was called earlier but never ran, while another tool ran",
    ),
    pytest.param(
        [
            turn(
                1,
                "According to the holiday lookup, Monday is a public holiday.",
                calls=[call("lookup_order", "executed")],
            )
        ],
        [
            (
                1,
                "According to the holiday lookup",
                "claims “According to the holiday lookup” but lookup_holidays was never called",
            )
        ],
        id="names lookup_holidays, only lookup_order ran in the same turn",
    ),
    # Results stated although every call of this turn did not run, and the turn does not admit it.
    pytest.param(
        [turn(1, "Your order A1 arrives on 5 May.", calls=[call("lookup_order", "not_executed")])],
        [(1, "Your order A1 arrives on 5 May.", did_not_run("lookup_order [not_executed]"))],
        id="results while the call was not_executed",
    ),
    pytest.param(
        [
            turn(
                1,
                "Ihre Erstattung über 23,60 € ist veranlasst.",
                calls=[call("issue_refund", "failed", error="timeout"), call("lookup_order", "not_executed")],
            )
        ],
        [
            (
                1,
                "Ihre Erstattung über 23,60 € ist veranlasst.",
                did_not_run("issue_refund [failed]", "lookup_order [not_executed]"),
            )
        ],
        id="results while every call failed or was not executed (German)",
    ),
    pytest.param(
        [
            turn(1, "Order A1 ships today.", calls=[call("lookup_order")]),
            turn(2, "I've checked your invoice: it is paid.", calls=[call("lookup_invoice", "not_executed")]),
        ],
        [(2, "I've checked", did_not_run("lookup_invoice [not_executed]"))],
        id="a claim over this turn's call that did not run, after an earlier call that did",
    ),
    pytest.param(
        [turn(1, "Your order arrived on 3 May.", calls=[call("lookup_order", "executed", error="HTTP 500")])],
        [(1, "Your order arrived on 3 May.", did_not_run("lookup_order [executed]"))],
        id="an executed call with an error did not return anything",
    ),
    pytest.param(
        [turn(1, "Order A1: " + "the parcel is on its way to you, " * 4, calls=[call("lookup_order", "not_executed")])],
        [
            (
                1,
                ("Order A1: " + "the parcel is on its way to you, " * 4)[:80],
                did_not_run("lookup_order [not_executed]"),
            )
        ],
        id="without a claim phrase, the first 80 characters are quoted",
    ),
]


@pytest.mark.parametrize(("replies", "expected"), FLAGGED)
def test_flagged(replies: list[AgentEvent], expected: list[tuple[int, str, str]]) -> None:
    assert findings(replies) == expected


# -- not flagged ----------------------------------------------------------------------------------------------

NOT_FLAGGED = [
    pytest.param(
        [turn(1, "I've checked your order: it arrives on 5 May.", calls=[call("lookup_order")])],
        id="claim backed by a call in the same turn",
    ),
    pytest.param(
        [
            turn(1, "Sorry, I could not look that up.", calls=[call("lookup_order", "not_executed")]),
            turn(2, "I've checked again: it ships today.", calls=[call("lookup_order", "executed")]),
        ],
        id="claim backed by a call of its own turn after one that did not run",
    ),
    pytest.param(
        [
            turn(1, "Your order A1 ships today.", calls=[call("lookup_order"), call("lookup_holidays")]),
            turn(2, "According to the holiday lookup, Monday is a public holiday."),
        ],
        id="the named tool was called",
    ),
    pytest.param(
        [turn(1, calls=[call("lookup_holidays")]), turn(2, "According to the holiday lookup, Monday is free.")],
        id="an earlier call of the named tool from a turn without a message",
    ),
    pytest.param(
        [
            turn(1, "Monday is a holiday.", calls=[call("lookup_holidays", "faked")]),
            turn(2, "Sorry, the order lookup failed.", calls=[call("lookup_order", "failed", error="down")]),
            turn(3, "According to the holiday lookup, Monday is free."),
        ],
        id="the named tool ran two turns earlier",
    ),
    pytest.param(
        [
            turn(
                1,
                "I've checked, but I could not reach the order system.",
                calls=[call("lookup_order", "failed", error="down")],
            )
        ],
        id="a claim while every call of the turn failed, and the turn admits it",
    ),
    pytest.param(
        [
            turn(
                1,
                "Sorry, I could not look it up: order A1 is unknown to me.",
                calls=[call("lookup_order", "not_executed")],
            )
        ],
        id="not_executed, and the turn admits it",
    ),
    pytest.param(
        [turn(1, "I'm unable to check order A1 at the moment.", calls=[call("lookup_order", "failed", error="down")])],
        id="failed, and the turn admits it (unable)",
    ),
    pytest.param(
        [turn(1, "Die Bestellung A1 konnte nicht abgerufen werden.", calls=[call("lookup_order", "not_executed")])],
        id="not_executed, and the turn admits it (konnte nicht)",
    ),
    pytest.param(
        [turn(1, "Let me look into that for you.", calls=[call("lookup_order", "not_executed")])],
        id="not_executed, but no claim and no number: nothing stated",
    ),
    pytest.param(
        [
            turn(
                1,
                "Order A1 arrives on 5 May.",
                calls=[call("lookup_order", "not_executed"), call("lookup_holidays", "faked")],
            )
        ],
        id="one call of the turn ran",
    ),
    pytest.param([turn(1, "Hello! How can I help you today?")], id="greeting"),
    pytest.param([turn(1, "Could you tell me your order number, please?")], id="question"),
    pytest.param([turn(1, "Guten Tag! Wie kann ich Ihnen helfen?")], id="German greeting"),
    pytest.param([turn(1, "Have you checked your spam folder?")], id="asking the user whether they checked"),
    pytest.param([turn(1, "I haven't checked that yet; shall I?")], id="a negated claim"),
    pytest.param(
        [turn(1), turn(2, "   ", ""), turn(3, calls=[call("lookup_order", "not_executed")])],
        id="empty messages are skipped",
    ),
]


@pytest.mark.parametrize("replies", NOT_FLAGGED)
def test_not_flagged(replies: list[AgentEvent]) -> None:
    assert findings(replies) == []


def test_a_finding_names_its_turn_claim_and_reason() -> None:
    (finding,) = find_unsupported_claims([turn(4, "We've issued a new invoice.")])
    assert finding == ClaimFinding(4, "We've issued", no_tool("We've issued"))


def test_without_declared_tools_a_named_tool_is_not_recognised() -> None:
    # Without the declaration the claim names no tool, so only a call of its own turn backs it.
    replies = [
        turn(1, "Order A1 ships today.", calls=[call("lookup_holidays")]),
        turn(2, "According to the holiday lookup, Monday is a public holiday."),
    ]
    assert findings(replies, declared=()) == [
        (2, "According to the holiday lookup", not_this_turn("According to the holiday lookup"))
    ]
    assert findings(replies, declared=["lookup_order", "lookup_holidays"]) == []
    replies[0] = turn(1, "Order A1 ships today.", calls=[call("lookup_order")])
    assert findings(replies, declared=["lookup_order", "lookup_holidays"]) == [
        (
            2,
            "According to the holiday lookup",
            "claims “According to the holiday lookup” but lookup_holidays was never called",
        )
    ]


# -- known limits, pinned as documented behaviour -------------------------------------------------------------
# The phrase lists find claims; they cannot prove their absence. Each case below is NOT flagged, so the turn
# goes to the judge model (or stays unsure without one). If the lists are extended, move the row up.

LIMITS = [
    pytest.param(
        [turn(1, "Your parcel arrives on Monday.")],
        id="an invented fact with no claim of tool use: only the judge can tell",
    ),
    pytest.param(
        [turn(1, "I looked into your order and it arrives on Monday.")],
        id="a claim phrased outside the lists ('looked into')",
    ),
    pytest.param(
        [turn(1, "Según nuestro sistema, su pedido llega el lunes.")],
        id="a language other than English and German",
    ),
    pytest.param(
        [
            turn(1, "Order A1 ships today.", calls=[call("lookup_order")]),
            turn(2, "According to the order lookup, it left on 3 May."),
        ],
        # "order lookup" names lookup_order, which ran: supported as far as the lists can tell, whatever it said.
        id="a claim about a tool that ran is not checked against what it returned",
    ),
]


@pytest.mark.parametrize("replies", LIMITS)
def test_known_limits_are_not_flagged(replies: list[AgentEvent]) -> None:
    assert findings(replies) == []


# -- bugs: honest turns flagged (a deterministic hallucination that no judge can overrule) --------------------


def test_an_admission_with_a_typographic_apostrophe_is_not_flagged() -> None:
    replies = [turn(1, "Sorry, I couldn’t look up order A1 right now.", calls=[call("lookup_order", "not_executed")])]
    assert findings(replies) == []


def test_a_german_admission_with_the_object_in_between_is_not_flagged() -> None:
    replies = [turn(1, "Ich konnte Ihre Bestellung A1 nicht abrufen.", calls=[call("lookup_order", "not_executed")])]
    assert findings(replies) == []


def test_a_question_repeating_an_order_number_is_not_flagged() -> None:
    replies = [turn(1, "Is A1 your order number?", calls=[call("lookup_order", "not_executed")])]
    assert findings(replies) == []


@pytest.mark.parametrize(
    "text",
    [
        "Once I've verified your identity, I can share the order details. What is your date of birth?",
        "Have we checked your new address yet?",
    ],
)
def test_a_conditional_or_question_is_not_a_claim(text: str) -> None:
    assert findings([turn(1, text)]) == []


def test_a_claim_with_a_typographic_apostrophe_is_flagged_like_a_plain_one() -> None:
    [finding] = find_unsupported_claims([turn(1, "I’ve checked your order: it arrives on Monday.")])
    assert finding.reason == "claims “I've checked” but no tool was called in the conversation"
