"""``shop_support``: a rule-based customer-support agent of an online shop, used by the demo suites.

It reads the conversation (OpenAI-style messages), works out what the customer wants with keyword rules,
calls its tools through ``tools.call(...)`` and answers in English. It never invents order data: what it
says about an order, a refund or a balance comes from a tool result, and when a tool gives none (an error,
or "not executed in test mode") it says so plainly. The one exception is THE PLANTED BUG (see
``_express_delivery``), kept on purpose so the demo shows a case that fails for a visible reason.

The agent keeps no state between turns: each turn it re-reads the conversation, like an agent behind a
stateless HTTP endpoint would.
"""

from __future__ import annotations

import json
import re
from datetime import date
from typing import TYPE_CHECKING, Any, Literal, TypedDict

if TYPE_CHECKING:
    from simulator.models import EventSpec
    from simulator.tools import ToolHandle

#: The demo's calendar is frozen, so the 30-day policy gives the same verdicts on any day the suites run.
TODAY = date(2026, 12, 1)
RETURN_WINDOW_DAYS = 30

# The agent's questions. The scripted user answers a question from a step's `response_guide` when the
# fact's key words ("order number", "reason", "customer number") appear in it, so keep these wordings.
ASK_ORDER = "What is your order number?"
ASK_REASON = "What is the reason for the refund?"
ASK_CUSTOMER = "What is your customer number?"
_REFUND_DONE = "Your refund number is"

Intent = Literal["express", "handoff", "refund", "balance", "status", "thanks", "greeting"]

# Checked in this order: the first match wins, so "a human, about my refund" is a hand-off and
# "thanks, where is my order?" is a status question.
_INTENTS: list[tuple[Intent, re.Pattern[str]]] = [
    ("express", re.compile(r"\bexpress\b")),
    ("handoff", re.compile(r"\b(human|agent|person|manager|complaint|complain)\b")),
    ("refund", re.compile(r"\b(refund|money back|return|reimburse)")),
    ("balance", re.compile(r"\b(balance|store credit|gift ?cards?|credit)\b")),
    (
        "status",
        re.compile(
            r"\b(where is|where's|status|track|tracking|delivery|deliver|shipped|shipping|arrive|"
            r"parcel|package|get here|when will)"
        ),
    ),
    ("thanks", re.compile(r"\b(thanks|thank you|thx|bye|goodbye|that's all|that is all|that's everything)\b")),
    ("greeting", re.compile(r"^\W*(hi|hello|hey|good (morning|afternoon|evening))\b")),
]
# Intents a pending question can be about; the other ones are small talk or must always win.
_TOPICS: tuple[Intent, ...] = ("refund", "status", "balance")
_REASONS: list[tuple[str, re.Pattern[str]]] = [
    ("damaged", re.compile(r"\b(damaged?|cracked|crack|dented|scratched|smashed)\b")),
    ("broken", re.compile(r"\b(broken|broke|faulty|defective|bad|not working|(does not|doesn't) work)\b")),
    ("late delivery", re.compile(r"\b(late|delayed|too long)\b")),
    ("wrong item", re.compile(r"\bwrong\b|\bnot what i ordered\b")),
    ("not needed", re.compile(r"\b(not needed|(do not|don't|no longer) need|changed my mind)\b")),
]
# Order numbers as customers write them: ORD-40051, #12345 (the shop's own format without prefix), A1001.
_ORDER_ID = re.compile(r"\b(ORD-\d{5})\b|#(\d{5})\b|\b([A-Z]\d{4})\b", re.IGNORECASE)
_CUSTOMER_ID = re.compile(r"\bcus_\w+\b", re.IGNORECASE)
_EVENT_TEXT = re.compile(r"^\[event: ([\w.-]+)\]\s*(.*)$", re.DOTALL)
_STATUS_PHRASES = {
    "shipped": "has shipped",
    "delivered": "was delivered",
    "processing": "is being prepared",
    "delivery_failed": "could not be delivered",
    "cancelled": "was cancelled",
}
_DATE_SENTENCES = [
    ("estimated_delivery", "It is expected to arrive on {}."),
    ("ships_on", "It ships on {}."),
    ("next_attempt", "The next delivery attempt is on {}."),
]
_MONTHS = (
    "January",
    "February",
    "March",
    "April",
    "May",
    "June",
    "July",
    "August",
    "September",
    "October",
    "November",
    "December",
)
_CAPABILITIES = (
    "I can check where an order is, help with a refund or return, tell you your store credit and gift-card "
    "balance, or pass you to a human colleague."
)


class Reply(TypedDict):
    """What the agent returns each turn (Simulator accepts this mapping as the agent's reply)."""

    content: str
    handoff: str | None
    variables: dict[str, str]


def respond(
    messages: list[dict[str, Any]], *, session: dict[str, Any], tools: ToolHandle, event: EventSpec | None = None
) -> Reply:
    """Answer the latest user message (or event) of the conversation, calling tools where needed."""
    texts = [str(m.get("content") or "") for m in messages if m.get("role") == "user"]
    if event is None and texts and (found := _EVENT_TEXT.match(texts[-1])):
        event_name, event_payload = found.group(1), _json_object(found.group(2))
    elif event is not None:
        event_name, event_payload = event.name, dict(event.payload)
    else:
        event_name, event_payload = None, {}
    if event_name is not None:
        return _on_event(event_name, event_payload)

    spoken = [t for t in texts if not t.startswith("[event:")]
    if not spoken:  # the agent opens the conversation (initiator: agent)
        return _opening(session, tools)
    text = spoken[-1].lower()
    order_id, learned = _find_order_id(spoken, session, texts)
    said = [str(m.get("content") or "") for m in messages if m.get("role") == "assistant"]
    intent = _intent(text, spoken[:-1], said[-1] if said else "")
    reply = _dispatch(intent, text=text, spoken=spoken, said=said, order_id=order_id, session=session, tools=tools)
    if learned and order_id is not None:
        reply["variables"]["order_id"] = order_id  # tell the caller what we learned, so it can keep it
    return reply


def _dispatch(
    intent: Intent | None,
    *,
    text: str,
    spoken: list[str],
    said: list[str],
    order_id: str | None,
    session: dict[str, Any],
    tools: ToolHandle,
) -> Reply:
    """One intent's answer; every fact in it comes from a tool result (except the planted bug)."""
    if intent == "express":
        return _express_delivery()
    if intent == "handoff":
        return _handoff(spoken[-1], tools)
    if intent == "refund":
        return _refund(order_id, spoken, said, tools)
    if intent == "status":
        if order_id is None:
            return _reply(f"I can check that for you. {ASK_ORDER}")
        order = _lookup(order_id, tools)
        return _reply(order if isinstance(order, str) else _describe_order(order_id, order))
    if intent == "balance":
        return _balance(session, spoken, tools)
    if intent == "thanks":
        return _reply("You're welcome! Have a nice day. Goodbye.")
    if intent == "greeting":
        return _reply("Hello! I'm the shop's support assistant. How can I help you today?")
    return _reply(f"Sorry, I'm not sure I understood. {_CAPABILITIES} What would you like to do?")


def _intent(text: str, earlier: list[str], last_agent: str) -> Intent | None:
    """What the customer wants now; an answer to the agent's own question continues the earlier topic."""
    explicit = next((intent for intent, pattern in _INTENTS if pattern.search(text)), None)
    if explicit in ("express", "handoff"):
        return explicit
    pending = _pending_topic(earlier, last_agent)
    answers_it = (
        (ASK_ORDER in last_agent and _ORDER_ID.search(text) is not None)
        or (ASK_REASON in last_agent and _reason(text) is not None)
        or (ASK_CUSTOMER in last_agent and _CUSTOMER_ID.search(text) is not None)
    )
    # "My reason is it arrived cracked" answers the refund question, although "arrived" sounds like status.
    if pending is not None and (answers_it or explicit is None):
        return pending
    if explicit in (None, "greeting") and re.search(r"\border\b", text):
        return "status"  # "about my order" with nothing else is most likely a status question
    return explicit


def _pending_topic(earlier: list[str], last_agent: str) -> Intent | None:
    """The topic of the agent's open question (if its last message asked one), from the earlier messages."""
    if not any(question in last_agent for question in (ASK_ORDER, ASK_REASON, ASK_CUSTOMER)):
        return None
    for text in reversed(earlier):
        intent = next((i for i, pattern in _INTENTS if pattern.search(text.lower())), None)
        if intent in _TOPICS:
            return intent
    return None


def _express_delivery() -> Reply:
    # THE DEMO'S PLANTED BUG - deliberate, do not fix. A real agent would call lookup_order; this one
    # answers with a made-up date and claims it came from "our delivery system", although no tool was
    # called. suites/demo/scenarios.yaml (express_delivery_date_is_made_up) fails on it, and
    # tests/test_demo_agent.py pins it, so that the demo always shows a failing case for a visible reason.
    return _reply("Express orders arrive within 24 hours, yours is due tomorrow, according to our delivery system.")


def _refund(order_id: str | None, spoken: list[str], said: list[str], tools: ToolHandle) -> Reply:
    """Refund policy: look the order up, refuse outside 30 days after delivery, else refund with a reason."""
    if order_id is None:
        return _reply(f"I can help with a refund. {ASK_ORDER}")
    # The agent keeps no state, so it re-reads its own replies: asked again, it must not refund twice.
    done = next((m for m in said if f"for order {order_id} (" in m and _REFUND_DONE in m), None)
    if done is not None:
        return _reply(f"The refund for order {order_id} is already approved. {done[done.index(_REFUND_DONE) :]}")
    order = _lookup(order_id, tools)
    if isinstance(order, str):
        return _reply(order)
    delivered = _parse_date(order.get("delivered_on"))
    if delivered is None:
        return _reply(
            f"Order {order_id} has not been delivered yet, so it cannot be refunded. Once it arrives, you can "
            f"return it within {RETURN_WINDOW_DAYS} days of delivery."
        )
    days = (TODAY - delivered).days
    if days > RETURN_WINDOW_DAYS:
        return _reply(
            f"I'm sorry, order {order_id} was delivered on {_nice_date(delivered)}, {days} days ago. Our return "
            f"policy allows refunds within {RETURN_WINDOW_DAYS} days of delivery, so I cannot refund this order. "
            "If you like, I can pass you to a human colleague who can look at your case."
        )
    reason = next((r for t in reversed(spoken) if (r := _reason(t.lower())) is not None), None)
    if reason is None:
        return _reply(
            f"Order {order_id} was delivered on {_nice_date(delivered)}, within our {RETURN_WINDOW_DAYS}-day "
            f"return window. {ASK_REASON}"
        )
    result = tools.call("refund_order", order_id=order_id, reason=reason)
    if not isinstance(result, dict) or "error" in result:
        if isinstance(result, dict) and result.get("status") == "needs_approval":
            return _reply(f"I have passed your refund request for order {order_id} on to a colleague for approval.")
        return _reply(f"I'm sorry, the refund for order {order_id} could not be completed. Please try again later.")
    refund_id = result.get("refund_id", "")
    if result.get("status") not in (None, "approved", "refunded"):  # e.g. pending_approval: not done yet
        return _reply(f"Your refund request for order {order_id} was passed on for approval (reference {refund_id}).")
    amount = f" of {_money(result['amount'])} {result.get('currency', '')}".rstrip() if "amount" in result else ""
    return _reply(f"Done: the refund{amount} for order {order_id} ({reason}) is approved. {_REFUND_DONE} {refund_id}.")


def _balance(session: dict[str, Any], spoken: list[str], tools: ToolHandle) -> Reply:
    """Store credit and gift cards of the signed-in customer (or the customer number they give)."""
    customer_id = session.get("customer_id")
    if not isinstance(customer_id, str) or not customer_id:
        found = next((m.group(0) for t in reversed(spoken) if (m := _CUSTOMER_ID.search(t))), None)
        if found is None:
            return _reply(f"I can check your balance. {ASK_CUSTOMER}")
        customer_id = found.lower()
    result = tools.call("get_balance", customer_id=customer_id)
    if not isinstance(result, dict) or "error" in result:
        return _reply("I'm sorry, I could not look up your balance right now, so I cannot tell you the amount.")
    currency = str(result.get("currency", ""))
    parts = [
        f"{label} is {_money(result[key])} {currency}".rstrip()
        for key, label in (("store_credit", "store credit"), ("gift_cards", "gift-card balance"))
        if key in result
    ]
    return _reply(f"Your {' and your '.join(parts)}." if parts else "I could not read your balance from our system.")


def _handoff(text: str, tools: ToolHandle) -> Reply:
    """Transfer to a human; the reply says so only when the transfer tool confirmed it."""
    # The reason quotes the customer, so the colleague who takes over knows what it is about.
    why = "complaint" if "complain" in text.lower() else "customer asked for a human"
    result = tools.call("handoff_to_human", reason=f"{why}: {text.strip()[:200]}")
    if not isinstance(result, dict) or "error" in result:
        # Never claim a transfer that did not happen.
        return _reply("I'm sorry, I could not reach a colleague right now. Please try again in a few minutes.")
    wait = result.get("estimated_wait_minutes")
    wait_text = f" The expected wait is about {wait} minutes." if wait is not None else ""
    return {"content": f"I'm passing you to a human colleague now.{wait_text}", "handoff": "human", "variables": {}}


def _on_event(name: str, payload: dict[str, Any]) -> Reply:
    """Non-speech input: a photo upload, the end of the session, or anything else (acknowledged)."""
    if name in ("photo_uploaded", "attachment_uploaded"):
        # Only thanks: saying it was "added to your case" would claim an action no tool performed.
        reply = _reply("Thank you for the photo.")
    elif name in ("hangup", "session_end", "chat_closed"):
        reply = _reply("Goodbye!")
    else:
        reply = _reply(f"Thanks, I have noted that ({name.replace('_', ' ')}). How can I help you?")
    if isinstance(payload.get("order_id"), str):
        reply["variables"]["order_id"] = payload["order_id"]
    return reply


def _opening(session: dict[str, Any], tools: ToolHandle) -> Reply:
    """The agent speaks first: with a known order it gives an update, otherwise it greets."""
    order_id = session.get("order_id")
    if not isinstance(order_id, str) or not order_id:
        return _reply("Hello! I'm the shop's support assistant. How can I help you today?")
    order = _lookup(order_id, tools)
    update = order if isinstance(order, str) else _describe_order(order_id, order)
    return _reply(f"Hello! This is the shop's support assistant with an update on your order. {update}")


def _lookup(order_id: str, tools: ToolHandle) -> dict[str, Any] | str:
    """The order from lookup_order, or (as text for the customer) why it could not be looked up."""
    result = tools.call("lookup_order", order_id=order_id)
    if isinstance(result, dict) and "error" not in result:
        return result
    if isinstance(result, dict) and "not found" in str(result.get("error", "")).lower():
        return f"I could not find order {order_id}. Please check the order number."
    return f"I'm sorry, I could not look up order {order_id} right now, so I cannot tell you anything about it yet."


def _describe_order(order_id: str, order: dict[str, Any]) -> str:
    """Status and dates, only as the lookup result gives them."""
    status = str(order.get("status", "unknown"))
    sentence = f"Your order {order_id} {_STATUS_PHRASES.get(status, 'has the status ' + status.replace('_', ' '))}"
    if order.get("carrier"):
        sentence += f" with {order['carrier']}"
    if delivered := _parse_date(order.get("delivered_on")):
        sentence += f" on {_nice_date(delivered)}"
    sentences = [sentence + "."]
    if order.get("tracking_number"):
        sentences.append(f"The tracking number is {order['tracking_number']}.")
    sentences += [
        template.format(_nice_date(d)) for key, template in _DATE_SENTENCES if (d := _parse_date(order.get(key)))
    ]
    return " ".join(sentences)


def _find_order_id(spoken: list[str], session: dict[str, Any], texts: list[str]) -> tuple[str | None, bool]:
    """The order being discussed, and whether it was learned from the conversation (not the session)."""
    if found := _order_id_in(spoken[-1]):
        return found, True
    if isinstance(session.get("order_id"), str) and session["order_id"]:
        return str(session["order_id"]), False
    found = next((o for t in reversed(texts[:-1]) if (o := _order_id_in(t))), None)
    return found, found is not None


def _order_id_in(text: str) -> str | None:
    match = _ORDER_ID.search(text)
    if match is None:
        return None
    full, digits, short = match.groups()
    return (full or (f"ORD-{digits}" if digits else short)).upper()


def _reason(text: str) -> str | None:
    return next((reason for reason, pattern in _REASONS if pattern.search(text)), None)


def _reply(content: str) -> Reply:
    return {"content": content, "handoff": None, "variables": {}}


def _json_object(text: str) -> dict[str, Any]:
    try:
        value = json.loads(text) if text else {}
    except json.JSONDecodeError:
        return {}
    return value if isinstance(value, dict) else {}


def _parse_date(value: Any) -> date | None:
    try:
        return date.fromisoformat(value) if isinstance(value, str) else None
    except ValueError:
        return None


def _nice_date(value: date) -> str:
    # "3 December 2026": unambiguous for customers everywhere (and not subject to the process's locale).
    return f"{value.day} {_MONTHS[value.month - 1]} {value.year}"


def _money(value: Any) -> str:
    return f"{value:.2f}" if isinstance(value, int | float) else str(value)
