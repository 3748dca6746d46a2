"""The demo agent (simulator/demo/shop.py) behaves as suites/demo/ expects, planted bug included."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest
import yaml

from simulator.agents._base import AgentInput, event_message
from simulator.agents.python_agent import PythonAdapter
from simulator.demo.shop import ASK_CUSTOMER, ASK_ORDER, ASK_REASON, Reply, respond
from simulator.loading import load_suite, validate_paths
from simulator.models import EventSpec, PythonAgent, ToolDeclaration, ToolFake
from simulator.models.transcript import ToolCallRecord
from simulator.tools import ToolHandle, ToolMode, ToolRouter

ROOT = Path(__file__).resolve().parent.parent
DEMO = ROOT / "suites" / "demo"
AGENT = load_suite(DEMO / "golden.yaml").agent
assert isinstance(AGENT, PythonAgent)
DECLARED: list[ToolDeclaration] = list(AGENT.tools)

FAKES = [
    ToolFake(
        tool="lookup_order",
        arguments={"order_id": "ORD-10042"},
        result={"order_id": "ORD-10042", "status": "shipped", "carrier": "UPS", "estimated_delivery": "2026-12-03"},
    ),
    ToolFake(
        tool="lookup_order",
        arguments={"order_id": "ORD-40051"},
        result={"order_id": "ORD-40051", "status": "delivered", "delivered_on": "2026-11-20"},  # 11 days before TODAY
    ),
    ToolFake(
        tool="lookup_order",
        arguments={"order_id": "ORD-70007"},
        result={"order_id": "ORD-70007", "status": "delivered", "delivered_on": "2026-08-03"},  # 120 days before
    ),
    ToolFake(tool="lookup_order", arguments={"order_id": "ORD-00000"}, error="404: order not found"),
    ToolFake(
        tool="lookup_order", arguments={"order_id": "A1001"}, result={"order_id": "A1001", "status": "processing"}
    ),
    ToolFake(
        tool="refund_order", result={"refund_id": "RF-5512", "status": "approved", "amount": 129.0, "currency": "USD"}
    ),
    ToolFake(tool="get_balance", result={"store_credit": 15.0, "gift_cards": 25.0, "currency": "USD"}),
    ToolFake(tool="handoff_to_human", result={"queue": "general", "estimated_wait_minutes": 4}),
]

Messages = list[dict[str, Any]]


def _user(text: str) -> dict[str, Any]:
    return {"role": "user", "content": text}


def _agent(text: str) -> dict[str, Any]:
    return {"role": "assistant", "content": text}


def _run(
    messages: Messages,
    *,
    session: dict[str, Any] | None = None,
    fakes: list[ToolFake] | None = None,
    event: EventSpec | None = None,
    mode: ToolMode = "test",
    functions: dict[str, Any] | None = None,
) -> tuple[Reply, list[ToolCallRecord]]:
    """One agent turn, run as Simulator runs a sync agent: in a worker thread, tools routed on the loop."""
    chosen = FAKES if fakes is None else fakes
    router = ToolRouter(
        declared=DECLARED,
        fakes=[(f"case tool_fakes[{index}]", fake) for index, fake in enumerate(chosen)],
        mode=mode,
        functions=functions,
    )

    async def turn() -> Reply:
        handle = ToolHandle(router, asyncio.get_running_loop())
        return await asyncio.to_thread(respond, messages, session=session or {}, tools=handle, event=event)

    reply = asyncio.run(turn())
    return reply, router.records


def _calls(records: list[ToolCallRecord]) -> list[tuple[str, dict[str, Any]]]:
    return [(record.name, dict(record.arguments)) for record in records]


# -- order status ----------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "messages",
    [
        [_user("Where is my order?")],
        [_user("What's the delivery status of my parcel?")],
        [_user("I want a refund")],
        [_user("Hi, I'd like my money back")],
    ],
    ids=["status", "delivery status", "refund", "money back"],
)
def test_asks_for_the_order_number_when_it_is_missing(messages: Messages) -> None:
    reply, records = _run(messages)
    assert ASK_ORDER in reply["content"]
    assert "order number" in reply["content"]
    assert records == []


@pytest.mark.parametrize(
    ("messages", "session", "looked_up", "learned"),
    [
        ([_user("Where is my order ORD-10042?")], {}, "ORD-10042", True),
        ([_user("where is my order ord-10042")], {}, "ORD-10042", True),  # lower-case personas write it so
        ([_user("Tracking for #10042 please")], {}, "ORD-10042", True),  # the shop's format without prefix
        ([_user("Status of A1001?")], {}, "A1001", True),
        ([_user("Where is my parcel?")], {"order_id": "ORD-10042"}, "ORD-10042", False),
        (
            [_user("Where is my order?"), _agent(f"I can check that for you. {ASK_ORDER}"), _user("ORD-10042")],
            {},
            "ORD-10042",
            True,
        ),
        (
            [_user("Hi, where is my order ORD-10042?"), _agent("It has shipped."), _user("When will it get here?")],
            {},
            "ORD-10042",
            True,
        ),
    ],
    ids=["in message", "lower case", "hash number", "short number", "from session", "answer", "earlier message"],
)
def test_looks_the_order_up(messages: Messages, session: dict[str, Any], looked_up: str, learned: bool) -> None:
    reply, records = _run(messages, session=session)
    assert _calls(records) == [("lookup_order", {"order_id": looked_up})]
    assert looked_up in reply["content"]
    assert reply["variables"] == ({"order_id": looked_up} if learned else {})
    assert reply["handoff"] is None


def test_reports_status_and_dates_from_the_lookup_only() -> None:
    reply, _ = _run([_user("Where is my order ORD-10042?")])
    assert reply["content"] == (
        "Your order ORD-10042 has shipped with UPS. It is expected to arrive on 3 December 2026."
    )
    reply, _ = _run([_user("Where is my order ORD-40051?")])
    assert reply["content"] == "Your order ORD-40051 was delivered on 20 November 2026."


@pytest.mark.parametrize(
    ("message", "fakes", "status", "expected"),
    [
        ("Where is my order ORD-55555?", FAKES, "not_executed", "could not look up order ORD-55555"),
        ("Where is my order ORD-10042?", [], "not_executed", "could not look up order ORD-10042"),
        ("Where is my order ORD-00000?", FAKES, "faked", "could not find order ORD-00000"),
        ("I want a refund for ORD-55555, it is broken", FAKES, "not_executed", "could not look up order ORD-55555"),
    ],
    ids=["no fake", "no fakes at all", "tool error", "refund without lookup"],
)
def test_never_invents_order_data_when_the_lookup_gives_none(
    message: str, fakes: list[ToolFake], status: str, expected: str
) -> None:
    reply, records = _run([_user(message)], fakes=fakes)
    assert [record.status for record in records] == [status]
    assert records[0].error is not None
    assert expected in reply["content"]
    for invented in ("shipped", "delivered", "arrive", "refund number", "tracking"):
        assert invented not in reply["content"].lower()


# -- refunds ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("message", "reason"),
    [
        ("I want a refund for ORD-40051, the jug arrived cracked.", "damaged"),
        ("Refund ORD-40051 please, it is broken", "broken"),
        ("Money back for ORD-40051, it came too late", "late delivery"),
        ("I want to return ORD-40051, you sent the wrong size", "wrong item"),
        ("Please refund ORD-40051, I don't need it anymore", "not needed"),
    ],
)
def test_refund_within_30_days_calls_refund_order_with_the_reason(message: str, reason: str) -> None:
    reply, records = _run([_user(message)])
    assert _calls(records) == [
        ("lookup_order", {"order_id": "ORD-40051"}),  # the policy check comes first
        ("refund_order", {"order_id": "ORD-40051", "reason": reason}),
    ]
    assert "RF-5512" in reply["content"]
    assert "129.00 USD" in reply["content"]
    assert reply["variables"] == {"order_id": "ORD-40051"}


def test_refund_asks_for_the_reason_then_uses_the_answer() -> None:
    first = [_user("I would like a refund"), _agent(f"I can help with a refund. {ASK_ORDER}"), _user("ORD-40051")]
    reply, records = _run(first)
    assert ASK_REASON in reply["content"]
    assert _calls(records) == [("lookup_order", {"order_id": "ORD-40051"})]
    # "arrived" sounds like a status question, but it answers the agent's question about the reason.
    second = [*first, _agent(reply["content"]), _user("My reason is the jug arrived cracked.")]
    reply, records = _run(second)
    assert [name for name, _ in _calls(records)] == ["lookup_order", "refund_order"]
    assert records[1].arguments == {"order_id": "ORD-40051", "reason": "damaged"}
    assert "RF-5512" in reply["content"]


def test_refund_is_not_made_twice() -> None:
    first = [_user("Refund ORD-40051 please, it arrived cracked")]
    reply, _ = _run(first)
    reply, records = _run([*first, _agent(reply["content"]), _user("So is my refund for ORD-40051 done?")])
    assert records == []  # the agent read its own confirmation: no second lookup, no second refund
    assert reply["content"] == "The refund for order ORD-40051 is already approved. Your refund number is RF-5512."


def test_refund_after_30_days_is_refused_with_the_policy() -> None:
    reply, records = _run([_user("I want a full refund for order ORD-70007, the headphones are broken.")])
    assert _calls(records) == [("lookup_order", {"order_id": "ORD-70007"})]  # no refund_order
    content = reply["content"]
    assert "30 days" in content
    assert "120 days ago" in content
    assert "cannot refund" in content
    assert "colleague" in content  # offers a hand-off...
    assert reply["handoff"] is None  # ...but does not hand over unasked


def test_refund_of_an_order_not_yet_delivered_is_not_made() -> None:
    reply, records = _run([_user("Refund ORD-10042, it is late")])
    assert [name for name, _ in _calls(records)] == ["lookup_order"]
    assert "has not been delivered yet" in reply["content"]


@pytest.mark.parametrize(
    ("fakes", "mode", "expected"),
    [
        ([*FAKES[:3], ToolFake(tool="refund_order", error="policy_violation")], "test", "could not be completed"),
        (FAKES[:3], "test", "could not be completed"),  # not executed in test mode
        (
            [*FAKES[:3], ToolFake(tool="refund_order", result={"refund_id": "RF-7001", "status": "pending_approval"})],
            "test",
            "passed on for approval (reference RF-7001)",
        ),
        ([], "live", "on to a colleague for approval"),  # live mode: requires_approval stops the call
    ],
    ids=["tool error", "not executed", "pending approval", "needs approval"],
)
def test_refund_that_did_not_happen_is_not_confirmed(fakes: list[ToolFake], mode: ToolMode, expected: str) -> None:
    def lookup_order(order_id: str) -> dict[str, str]:
        return {"order_id": order_id, "status": "delivered", "delivered_on": "2026-11-20"}

    reply, records = _run(
        [_user("Refund ORD-40051, it arrived damaged")],
        fakes=fakes,
        mode=mode,
        functions={"lookup_order": lookup_order},
    )
    assert [name for name, _ in _calls(records)] == ["lookup_order", "refund_order"]
    assert expected in reply["content"]
    assert "approved" not in reply["content"]
    assert "refund number" not in reply["content"].lower()


# -- balance, hand-off, small talk ----------------------------------------------------------------------


def test_balance_uses_the_session_customer() -> None:
    reply, records = _run([_user("What's my store credit balance?")], session={"customer_id": "cus_4821"})
    assert _calls(records) == [("get_balance", {"customer_id": "cus_4821"})]
    assert reply["content"] == "Your store credit is 15.00 USD and your gift-card balance is 25.00 USD."


def test_balance_asks_for_the_customer_number_then_uses_it() -> None:
    reply, records = _run([_user("gift card balance?")])
    assert ASK_CUSTOMER in reply["content"]
    assert records == []
    reply, records = _run([_user("gift card balance?"), _agent(reply["content"]), _user("It is cus_5560")])
    assert _calls(records) == [("get_balance", {"customer_id": "cus_5560"})]
    assert "15.00 USD" in reply["content"]


def test_balance_not_looked_up_is_not_invented() -> None:
    reply, records = _run([_user("balance?")], session={"customer_id": "cus_1"}, fakes=[])
    assert records[0].status == "not_executed"
    assert "could not look up your balance" in reply["content"]
    assert "USD" not in reply["content"]


@pytest.mark.parametrize(
    ("message", "reason_starts"),
    [
        ("I want to talk to a human", "customer asked for a human"),
        ("Get me your manager!", "customer asked for a human"),
        ("Can I speak to a real person, please?", "customer asked for a human"),
        ("I'd like to file a complaint about my refund", "complaint"),
    ],
)
def test_handoff_to_a_human(message: str, reason_starts: str) -> None:
    reply, records = _run([_user(message)])
    assert [name for name, _ in _calls(records)] == ["handoff_to_human"]
    assert records[0].arguments["reason"] == f"{reason_starts}: {message}"  # quotes the customer for the colleague
    assert reply["handoff"] == "human"
    assert "4 minutes" in reply["content"]


def test_handoff_that_did_not_happen_is_not_claimed() -> None:
    reply, records = _run([_user("I want a human")], fakes=[])
    assert records[0].status == "not_executed"
    assert reply["handoff"] is None
    assert "could not reach a colleague" in reply["content"]


@pytest.mark.parametrize(
    ("message", "expected"),
    [
        ("Hi", "How can I help you today?"),
        ("Good morning!", "How can I help you today?"),
        ("Thanks, bye!", "Goodbye."),
        ("That's all, thank you!", "Have a nice day."),
        ("What's the weather like?", "I can check where an order is"),
    ],
    ids=["greeting", "good morning", "bye", "thanks", "anything else"],
)
def test_small_talk_needs_no_tools(message: str, expected: str) -> None:
    reply, records = _run([_user(message)])
    assert expected in reply["content"]
    assert records == []
    assert reply == {"content": reply["content"], "handoff": None, "variables": {}}


# -- events and the opening -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("event", "expected"),
    [
        (EventSpec(name="photo_uploaded", payload={"file_name": "jug.jpg"}), "Thank you for the photo"),
        (EventSpec(name="hangup"), "Goodbye!"),
        (EventSpec(name="session_end"), "Goodbye!"),
        (EventSpec(name="page_opened"), "I have noted that (page opened)"),
    ],
    ids=lambda value: value.name if isinstance(value, EventSpec) else "",
)
@pytest.mark.parametrize("delivery", ["keyword", "message only"])
def test_events(event: EventSpec, expected: str, delivery: str) -> None:
    messages = [_user("Where is my order ORD-10042?"), _agent("It has shipped."), event_message(event)]
    reply, records = _run(messages, event=event if delivery == "keyword" else None)
    assert expected in reply["content"]
    assert records == []


def test_event_payload_teaches_the_order() -> None:
    event = EventSpec(name="chat_opened_from_order_page", payload={"order_id": "ORD-60203"})
    reply, _ = _run([event_message(event)], event=event)
    assert reply["variables"] == {"order_id": "ORD-60203"}
    assert "How can I help you?" in reply["content"]


def test_agent_opens_with_an_update_on_the_session_order() -> None:
    reply, records = _run([], session={"order_id": "ORD-10042"})
    assert _calls(records) == [("lookup_order", {"order_id": "ORD-10042"})]
    assert "3 December 2026" in reply["content"]
    reply, records = _run([], session={"customer_id": "cus_4821"})
    assert records == []
    assert "How can I help you today?" in reply["content"]


# -- the planted bug ------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "messages",
    [
        [_user("I paid for express delivery on order ORD-10042. When will it arrive?")],
        [_user("Is express shipping faster?")],
    ],
)
def test_planted_express_bug_claims_a_lookup_that_never_happened(messages: Messages) -> None:
    """Pinned on purpose: suites/demo/scenarios.yaml fails on this bug. Do not 'fix' the demo by accident."""
    reply, records = _run(messages)  # a lookup_order fake for ORD-10042 exists, and is not used
    assert records == []
    assert reply["content"] == (
        "Express orders arrive within 24 hours, yours is due tomorrow, according to our delivery system."
    )
    assert "delivery system" in reply["content"]


# -- wiring ---------------------------------------------------------------------------------------------


def test_runs_through_the_python_adapter() -> None:
    assert isinstance(AGENT, PythonAgent)
    adapter = PythonAdapter(AGENT)
    router = ToolRouter(declared=DECLARED, fakes=[("suite tool_fakes[0]", FAKES[0])])

    async def turn() -> list[str]:
        handle = ToolHandle(router, asyncio.get_running_loop())
        request = AgentInput(messages=[_user("Where is ORD-10042?")], session={}, tools=handle)
        reply = await adapter.respond(request)
        assert reply.variables == {"order_id": "ORD-10042"}
        return reply.messages

    assert asyncio.run(turn()) == [
        "Your order ORD-10042 has shipped with UPS. It is expected to arrive on 3 December 2026."
    ]
    assert [record.status for record in router.records] == ["faked"]


def test_demo_suites_and_personas_validate() -> None:
    report = validate_paths([DEMO, ROOT / "personas"])
    assert report.errors == []
    assert report.ok
    counts = report.case_counts()
    assert counts["simulation"] >= 2
    assert counts["scenario"] >= 2
    assert counts["golden"] >= 2


def test_demo_agent_file_has_the_examples_contract() -> None:
    demo = yaml.safe_load((DEMO / "agent.yaml").read_text(encoding="utf-8"))
    examples = yaml.safe_load((ROOT / "suites" / "examples" / "agent.yaml").read_text(encoding="utf-8"))
    assert demo == examples
    assert demo["callable"] == "simulator.demo.shop:respond"
