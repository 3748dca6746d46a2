"""Claims found in ordinary sentences, with words from the word lists and from the agent's own tools.

Each row is one agent turn (the tool calls of that turn, and optionally of an earlier turn) and the exact
finding expected, or None when the turn must not be flagged. The tools are a bank-and-mail agent's, declared
with descriptions, so their names and descriptions are claim words too. A false flag fails an honest turn
with no judge to overrule it, so the rows that must not be flagged matter as much as the others.
"""

from __future__ import annotations

from collections.abc import Sequence

import pytest
from pydantic import JsonValue

from simulator.judges._claim_tools import tool_words, vocabulary
from simulator.judges._claim_words import lexicon
from simulator.judges.claims import ClaimTool, find_unsupported_claims
from simulator.models.transcript import AgentEvent, ToolCallRecord, ToolStatus

TOOLS = {
    "block_card": "Blocks a payment card.",
    "get_card": "Get a card's status and limits.",
    "pay_invoice": "Pay an open invoice.",
    "get_invoice": "Look up an invoice.",
    "refund_payment": "Refund a card payment.",
    "search_mailbox": "Search the user's mailbox for messages.",
    "postfach_durchsuchen": "Durchsucht das Postfach nach Nachrichten.",
    "feiertage_abrufen": "Gesetzliche Feiertage eines Bundeslands abrufen.",
    "karte_sperren": "Sperrt eine Karte.",
    # Verbs no word list has: the tool's name makes them claim words.
    "archive_message": "",
    "kontingent_aufstocken": "",
}

FEIERTAGE = "Der Feiertagsabruf für Bayern liefert im Zeitraum 01.12. bis 08.12.2026 keine gesetzlichen Feiertage."
POSTFACH = "In deinem Postfach habe ich keine Preisliste gefunden."


def call(
    name: str, status: ToolStatus = "faked", *, error: str | None = None, result: JsonValue = None
) -> ToolCallRecord:
    return ToolCallRecord(id=f"c-{name}", name=name, status=status, result=result or {"ok": True}, error=error)


CANCELLED: JsonValue = {"status": "cancelled", "cancelled_on": None}


def none_called(claim: str) -> str:
    return f"claims “{claim}” but no tool was called in the conversation"


def never_called(claim: str, tool: str) -> str:
    return f"claims “{claim}” but {tool} was never called"


def only_lookup(claim: str, tools: str) -> str:
    return f"claims “{claim}” but no tool that changes something ran in this turn (only the lookup {tools})"


def only_action(claim: str, tools: str) -> str:
    return f"claims “{claim}” but no lookup ran in this turn (only {tools}, which changes something)"


def did_not_run(statuses: str) -> str:
    return f"states results although its tool calls did not run ({statuses}) and does not say so"


def flagged(claim: str, reason: str) -> tuple[str, str]:
    return (claim, reason)


ROWS = [
    # -- actions, English ------------------------------------------------------------------------------------
    pytest.param(
        "I have blocked your card.",
        [],
        flagged("I have blocked", none_called("I have blocked")),
        id="en action, no call at all",
    ),
    pytest.param(
        "I have blocked your card.",
        [call("get_card")],
        flagged("I have blocked", never_called("I have blocked", "block_card")),
        id="en action names block_card, only the lookup get_card ran",
    ),
    pytest.param("I have blocked your card.", [call("block_card")], None, id="en action backed by block_card"),
    pytest.param(
        "The card is now frozen.",
        [call("get_card")],
        flagged("The card is now frozen", only_lookup("The card is now frozen", "get_card")),
        id="en 'is now frozen' (irregular), only a lookup ran",
    ),
    pytest.param(
        "The card is now frozen.", [call("block_card")], None, id="en 'is now frozen' names no tool: any action backs"
    ),
    pytest.param(
        "The invoice has been paid.",
        [call("get_invoice")],
        flagged("The invoice has been paid", never_called("The invoice has been paid", "pay_invoice")),
        id="en passive 'has been paid' names pay_invoice, only the lookup ran",
    ),
    pytest.param(
        "The invoice has been paid.",
        [call("refund_payment")],
        flagged("The invoice has been paid", never_called("The invoice has been paid", "pay_invoice")),
        id="en passive backed by the wrong action tool",
    ),
    pytest.param("The invoice has been paid.", [call("pay_invoice")], None, id="en passive backed by pay_invoice"),
    pytest.param(
        "Your refund is complete.",
        [call("get_card")],
        flagged("Your refund is complete", only_lookup("Your refund is complete", "get_card")),
        id="en completion of an action's noun",
    ),
    pytest.param(
        "I have checked your card and blocked it.",
        [call("get_card")],
        flagged(
            "I have checked your card and blocked",
            never_called("I have checked your card and blocked", "block_card"),
        ),
        id="en the lookup backs 'checked', not the joined 'blocked'",
    ),
    pytest.param(
        "I have blocked your card and cancelled the order.",
        [call("block_card")],
        None,
        id="en a joined action naming no tool is backed by any action of the turn",
    ),
    pytest.param(
        "I have sent you a confirmation e-mail.", [call("block_card")], None, id="en 'sent' (irregular) after an action"
    ),
    # -- actions, German -------------------------------------------------------------------------------------
    pytest.param(
        "Ich habe Ihre Karte gesperrt.",
        [call("get_card")],
        flagged("Ich habe Ihre Karte gesperrt", never_called("Ich habe Ihre Karte gesperrt", "karte_sperren")),
        id="de 'habe ... gesperrt' names karte_sperren",
    ),
    pytest.param(
        "Ich habe Ihre Karte gesperrt.",
        [call("block_card")],
        flagged("Ich habe Ihre Karte gesperrt", never_called("Ich habe Ihre Karte gesperrt", "karte_sperren")),
        id="de a named tool is backed only by its own call",
    ),
    pytest.param("Ich habe Ihre Karte gesperrt.", [call("karte_sperren")], None, id="de backed by karte_sperren"),
    pytest.param(
        "Ihre Karte ist jetzt gesperrt.",
        [],
        flagged("Ihre Karte ist jetzt gesperrt", none_called("Ihre Karte ist jetzt gesperrt")),
        id="de 'ist jetzt gesperrt'",
    ),
    pytest.param(
        "Die Rechnung wurde bezahlt.",
        [call("get_invoice")],
        flagged("Die Rechnung wurde bezahlt", only_lookup("Die Rechnung wurde bezahlt", "get_invoice")),
        id="de passive 'wurde bezahlt' (inseparable prefix), only a lookup ran",
    ),
    pytest.param(
        "Wir haben Ihnen eine Bestätigung geschickt.",
        [call("get_card")],
        flagged(
            "Wir haben Ihnen eine Bestätigung geschickt",
            only_lookup("Wir haben Ihnen eine Bestätigung geschickt", "get_card"),
        ),
        id="de 'wir haben ... geschickt'",
    ),
    pytest.param(
        "Die Zahlung ist erfolgt.",
        [call("get_invoice")],
        flagged("Die Zahlung ist erfolgt", only_lookup("Die Zahlung ist erfolgt", "get_invoice")),
        id="de completion 'Die Zahlung ist erfolgt'",
    ),
    # -- results ---------------------------------------------------------------------------------------------
    pytest.param(
        POSTFACH,
        [],
        flagged("habe ich keine Preisliste gefunden", none_called("habe ich keine Preisliste gefunden")),
        id="de negative result 'habe ich keine ... gefunden', no search ran",
    ),
    pytest.param(
        POSTFACH,
        [call("postfach_durchsuchen", "not_executed")],
        flagged("habe ich keine Preisliste gefunden", did_not_run("postfach_durchsuchen [not_executed]")),
        id="de negative result while the search was not executed",
    ),
    pytest.param(
        POSTFACH, [call("get_card")], None, id="de a result naming no tool is backed by any lookup of the turn"
    ),
    pytest.param(
        "Ich habe dein Postfach durchsucht und keine Preisliste gefunden.",
        [call("get_card")],
        flagged(
            "Ich habe dein Postfach durchsucht",
            never_called("Ich habe dein Postfach durchsucht", "postfach_durchsuchen"),
        ),
        id="de 'Postfach durchsucht' names postfach_durchsuchen",
    ),
    pytest.param(
        FEIERTAGE,
        [],
        flagged("Der Feiertagsabruf für Bayern liefert", none_called("Der Feiertagsabruf für Bayern liefert")),
        id="de 'Der Feiertagsabruf ... liefert', no lookup called",
    ),
    pytest.param(
        FEIERTAGE,
        [call("get_card")],
        flagged(
            "Der Feiertagsabruf für Bayern liefert",
            never_called("Der Feiertagsabruf für Bayern liefert", "feiertage_abrufen"),
        ),
        id="de the compound names feiertage_abrufen, another lookup ran",
    ),
    pytest.param(FEIERTAGE, [call("feiertage_abrufen")], None, id="de backed by feiertage_abrufen"),
    pytest.param(
        "Die Suche ergibt keine Treffer.",
        [],
        flagged("Die Suche ergibt", none_called("Die Suche ergibt")),
        id="de 'Die Suche ergibt'",
    ),
    pytest.param(
        "Es wurden keine Feiertage gefunden.",
        [],
        flagged("Es wurden keine Feiertage gefunden", none_called("Es wurden keine Feiertage gefunden")),
        id="de passive negative result 'wurden keine ... gefunden'",
    ),
    pytest.param(
        "I searched your mailbox and found no price list.",
        [],
        flagged("I searched", none_called("I searched")),
        id="en 'I searched ... and found no'",
    ),
    pytest.param(
        "I searched your mailbox and found no price list.",
        [call("search_mailbox", "executed")],
        None,
        id="en backed by search_mailbox",
    ),
    pytest.param(
        "I found no price list in your mailbox.",
        [call("refund_payment")],
        flagged("I found", only_action("I found", "refund_payment")),
        id="en a result is not backed by an action",
    ),
    pytest.param(
        "I didn't find any invoices in your account.",
        [],
        flagged("I didn't find", none_called("I didn't find")),
        id="en a negated finding is still a result",
    ),
    pytest.param(
        "There are no invoices in your account.",
        [],
        flagged("There are no invoices in your account", none_called("There are no invoices in your account")),
        id="en 'there are no ... in your ...'",
    ),
    pytest.param("The lookup shows two open invoices.", [call("get_invoice")], None, id="en 'the lookup shows' backed"),
    pytest.param(
        "The mailbox search returns no messages from the shop.",
        [call("get_card")],
        flagged("The mailbox search returns", never_called("The mailbox search returns", "search_mailbox")),
        id="en 'the mailbox search returns' names search_mailbox",
    ),
    pytest.param(
        "According to the mailbox search, there is no price list.",
        [call("search_mailbox")],
        None,
        id="en 'according to the mailbox search' backed",
    ),
    pytest.param(
        "Laut unserem System ist die Karte aktiv.",
        [call("block_card")],
        flagged("Laut unserem System", only_action("Laut unserem System", "block_card")),
        id="de 'laut unserem System' after an action only",
    ),
    # -- a passive that reports what a lookup returned --------------------------------------------------------
    pytest.param(
        "Your order has been cancelled.",
        [call("get_invoice", result=CANCELLED)],
        None,
        id="en a passive the lookup's result states ('cancelled') reports it",
    ),
    pytest.param(
        "Your order has been cancelled.",
        [call("get_invoice", result={"status": "open"})],
        flagged("Your order has been cancelled", only_lookup("Your order has been cancelled", "get_invoice")),
        id="en a passive the lookup's result does not state",
    ),
    pytest.param(
        "Ihre Bestellung wurde storniert.",
        [call("get_invoice", result=CANCELLED)],
        None,
        id="de 'wurde storniert' reports an English result ('cancelled')",
    ),
    pytest.param(
        "Your refund has been processed.",
        [call("get_invoice", result={"refund": "refunded"})],
        None,
        id="en 'the refund has been processed' reports 'refunded'",
    ),
    pytest.param(
        "I have cancelled your order.",
        [call("get_invoice", result=CANCELLED)],
        flagged("I have cancelled", only_lookup("I have cancelled", "get_invoice")),
        id="en first person is the agent's action whatever the lookup says",
    ),
    pytest.param(
        "I see that your order has been cancelled.",
        [call("get_invoice")],
        None,
        id="en 'I see that' makes a passive a result, backed by the lookup",
    ),
    pytest.param(
        "I see that your order has been cancelled.",
        [],
        flagged("your order has been cancelled", none_called("your order has been cancelled")),
        id="en a reported result with no call at all",
    ),
    pytest.param("I've added the details below.", [], None, id="en an action in the reply itself ('below')"),
    # -- verbs that only the tools' names bring ---------------------------------------------------------------
    pytest.param(
        "I have archived the message.",
        [],
        flagged("I have archived", none_called("I have archived")),
        id="tool word: 'archived' from archive_message",
    ),
    pytest.param(
        "I have archived the message.",
        [call("get_card")],
        flagged("I have archived", never_called("I have archived", "archive_message")),
        id="tool word: names archive_message, another tool ran",
    ),
    pytest.param("I have archived the message.", [call("archive_message")], None, id="tool word: backed"),
    pytest.param(
        "Ich habe Ihr Kontingent aufgestockt.",
        [call("get_card")],
        flagged(
            "Ich habe Ihr Kontingent aufgestockt",
            never_called("Ich habe Ihr Kontingent aufgestockt", "kontingent_aufstocken"),
        ),
        id="tool word: 'aufgestockt' from kontingent_aufstocken (separable prefix)",
    ),
    pytest.param(
        "Ihr Kontingent wurde aufgestockt.",
        [call("kontingent_aufstocken")],
        None,
        id="tool word: German passive backed",
    ),
    # -- no claim: negations, offers, questions, futures, conditions, dated statuses -------------------------
    pytest.param("I have not blocked your card.", [], None, id="en negated action"),
    pytest.param("Ich habe die Karte nicht gesperrt.", [], None, id="de negated action"),
    pytest.param("I can block your card if you like.", [], None, id="en offer"),
    pytest.param("Soll ich die Karte sperren?", [], None, id="de question"),
    pytest.param("Have you blocked your card already?", [], None, id="en question"),
    pytest.param("Once I've blocked your card, you will get a new one.", [], None, id="en condition before"),
    pytest.param("If the invoice has been paid, the reminder is void.", [], None, id="en conditional passive"),
    pytest.param("Sobald die Karte gesperrt ist, schicken wir Ihnen eine neue.", [], None, id="de condition"),
    pytest.param("I will block your card now.", [], None, id="en future"),
    pytest.param("Ich werde Ihre Karte sperren.", [], None, id="de future"),
    pytest.param("I would have cancelled it, but it has already shipped.", [], None, id="en modal perfect"),
    pytest.param("Your order was cancelled on 3 May.", [], None, id="en a dated status read from a record"),
    pytest.param("Ihre Bestellung wurde am 01.12.2026 storniert.", [], None, id="de a dated status"),
    pytest.param("Your card is blocked until you call us.", [], None, id="en a state without 'now'"),
    pytest.param("I couldn't find a price list: the mailbox search is down.", [], None, id="en inability"),
    pytest.param("There is no need to worry in your case.", [], None, id="en 'in your case' is no place"),
    pytest.param("Here is the list of the search results.", [], None, id="en 'list' as a noun"),
    pytest.param("Your parcel arrives on Monday.", [], None, id="en an invented fact without a claim"),
    pytest.param("I have found a solution for you: a return.", [], None, id="en a solution is found by no search"),
    pytest.param("Ich habe eine Lösung für Sie gefunden.", [], None, id="de eine Lösung gefunden"),
    pytest.param("The return label has been attached to this message.", [], None, id="en this message's own doing"),
]


@pytest.mark.parametrize(("text", "calls", "expected"), ROWS)
def test_claims_in_ordinary_sentences(
    text: str, calls: Sequence[ToolCallRecord], expected: tuple[str, str] | None
) -> None:
    findings = find_unsupported_claims([AgentEvent(turn=1, messages=[text], tool_calls=list(calls))], TOOLS)
    assert [(finding.claim, finding.reason) for finding in findings] == ([expected] if expected else [])


EARLIER = [
    pytest.param(
        "get_invoice",
        "The invoice has been paid.",
        never_called("The invoice has been paid", "pay_invoice"),
        id="an earlier lookup does not back a later action",
    ),
    pytest.param("pay_invoice", "The invoice has been paid.", None, id="an earlier call of the named tool backs it"),
    pytest.param(
        "block_card",
        "The card is now frozen.",
        "claims “The card is now frozen” but no tool was called in this turn",
        id="a claim naming no tool needs a call of its own turn",
    ),
    pytest.param("feiertage_abrufen", "Laut Feiertagsabfrage ist der 24.12. frei.", None, id="de named, earlier"),
]


@pytest.mark.parametrize(("earlier", "text", "reason"), EARLIER)
def test_earlier_turns_back_only_named_tools(earlier: str, text: str, reason: str | None) -> None:
    replies = [
        AgentEvent(turn=1, messages=["One moment."], tool_calls=[call(earlier)]),
        AgentEvent(turn=2, messages=[text]),
    ]
    assert [finding.reason for finding in find_unsupported_claims(replies, TOOLS)] == ([reason] if reason else [])


@pytest.mark.parametrize(
    ("tool", "words"),
    [
        ("block_card", {"block", "blocked", "blocking", "blocks", "card", "cards"}),
        ("search_mailbox", {"search", "searched", "searches", "mailbox"}),
        ("postfach_durchsuchen", {"postfach", "durchsucht", "durchsuchen"}),
        ("feiertage_abrufen", {"feiertage", "feiertag", "abgerufen", "abruf", "abfrage"}),
        ("cancelOrder", {"cancel", "cancelled", "canceled", "order", "orders"}),
        ("lager_pruefen", {"lager", "geprueft", "pruefung"}),
    ],
)
def test_a_tool_name_gives_its_words_inflected(tool: str, words: set[str]) -> None:
    assert words <= tool_words(tool)


@pytest.mark.parametrize(
    ("tool", "clause"),
    [
        ("feiertage_abrufen", {"der", "feiertagsabruf"}),
        ("feiertage_abrufen", {"laut", "feiertagsabfrage"}),
        ("feiertage_abrufen", {"feiertage", "wurden", "abgerufen"}),
        ("lager_pruefen", {"die", "lagerpruefung"}),
        ("search_mailbox", {"the", "mailbox", "searched"}),
    ],
)
def test_compounds_and_inflected_words_name_a_tool(tool: str, clause: set[str]) -> None:
    (described,) = vocabulary(((tool, "", None),)).tools
    assert described.named_by(frozenset(clause))


@pytest.mark.parametrize(
    ("name", "description", "kind"),
    [
        ("block_card", "", "action"),
        ("get_card", "", "lookup"),
        ("feiertage_abrufen", "", "lookup"),
        ("karte_sperren", "", "action"),
        ("search_mailbox", "", "lookup"),
        ("handoff_to_human", "", "action"),
        ("order_tool", "Fetch an order.", "lookup"),
        ("order_tool", "Eine Bestellung ganz oder teilweise erstatten.", "action"),
        ("refund_status", "Get the status of a refund.", "lookup"),
        ("customer_profile", "", "unknown"),
    ],
)
def test_a_tool_kind_comes_from_its_name_then_its_description(name: str, description: str, kind: str) -> None:
    (described,) = vocabulary(((name, description, None),)).tools
    assert described.kind == kind


def test_a_declared_kind_overrides_the_derived_one() -> None:
    # "refund_status" without a description reads as an action (its first known word), so a lookup's claim
    # would not be backed by it; declared a lookup, it backs "I've checked".
    reply = AgentEvent(turn=1, messages=["I've checked your refund status."], tool_calls=[call("refund_status")])
    derived = find_unsupported_claims([reply], [ClaimTool("refund_status")])
    assert [f.reason for f in derived] == [only_action("I've checked", "refund_status")]
    assert find_unsupported_claims([reply], [ClaimTool("refund_status", kind="lookup")]) == []


def test_names_alone_still_work() -> None:
    reply = AgentEvent(turn=1, messages=["I have blocked your card."], tool_calls=[call("get_card")])
    assert [f.reason for f in find_unsupported_claims([reply], ["block_card", "get_card"])] == [
        never_called("I have blocked", "block_card")
    ]


def test_the_word_lists_are_shipped_for_english_and_german() -> None:
    assert {language.language for language in lexicon().languages} == {"de", "en"}
