"""``airline_support``: a rule-based support agent of a small airline, the agent under test of this example.

It needs no model: keyword rules work out what the customer wants, and every fact it states comes from a tool.
Its tools are world tools (see ``agent.yaml``): in a run they read and change the conversation's own copy of
``world.json``, so the suite can check what the agent actually changed, not only what it said.

It keeps no state between turns: each turn it re-reads the conversation, like an agent behind an HTTP endpoint.
It has ONE PLANTED BUG (see ``_cancel_by_city``): it says the right thing and changes the wrong record, which
only the suite's state check catches.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from simulator.tools import ToolHandle

_BOOKING = re.compile(r"\bBK\d{4}\b", re.IGNORECASE)
_KILOS = re.compile(r"\b(\d{1,2})\s?kg\b", re.IGNORECASE)
_CAPABILITIES = "I can tell you when your flight leaves, cancel a booking, refund a cancelled one, or add a bag."


def respond(messages: list[dict[str, Any]], *, session: dict[str, Any], tools: ToolHandle) -> str:
    """Answer the customer's latest message, calling the airline's tools where needed."""
    said = [str(m.get("content") or "") for m in messages if m.get("role") in ("user", "assistant")]
    text = next((str(m.get("content") or "") for m in reversed(messages) if m.get("role") == "user"), "")
    lower = text.lower()
    customer = str(session.get("customer_id") or "")
    booking_id = _latest_booking(text) or _latest_booking(" ".join(said))
    if re.search(r"\b(thanks|thank you|bye)\b", lower):
        return "You're welcome. Have a good flight!"
    if re.search(r"\b(refund|money back)\b", lower):
        return _refund(booking_id, customer, tools) if booking_id else "Which booking should I refund?"
    if "cancel" in lower:
        if _latest_booking(text):
            return _cancel(str(_latest_booking(text)), customer, tools)
        return _cancel_by_city(lower, customer, tools)
    if "bag" in lower and booking_id:
        kilos = _KILOS.search(lower)
        return _add_bag(booking_id, int(kilos.group(1)) if kilos else 23, customer, tools)
    if re.search(r"\b(when|leave|depart|departure)\b", lower) and booking_id:
        return _departure(booking_id, customer, tools)
    return f"Hello! {_CAPABILITIES} How can I help?"


def _latest_booking(text: str) -> str | None:
    found = _BOOKING.findall(text)
    return found[-1].upper() if found else None


def _own_booking(booking_id: str, customer: str, tools: ToolHandle) -> dict[str, Any] | str:
    """The customer's booking, or (as the reply) why it cannot be used: another customer's booking is not theirs."""
    booking = tools.call("get_booking", booking_id=booking_id)
    if not isinstance(booking, dict) or "error" in booking or booking.get("customer") != customer:
        return f"I cannot find booking {booking_id} under your name. Please check the booking reference."
    return booking


def _flight(flight_id: str, tools: ToolHandle) -> dict[str, Any]:
    flight = tools.call("get_flight", flight_id=flight_id)
    return flight if isinstance(flight, dict) and "error" not in flight else {}


def _cancel(booking_id: str, customer: str, tools: ToolHandle) -> str:
    booking = _own_booking(booking_id, customer, tools)
    if isinstance(booking, str):
        return booking
    # The tool itself refuses a booking that is not confirmed (its `require:`), and says why.
    result = tools.call("cancel_booking", booking_id=booking_id)
    if isinstance(result, dict) and "status=cancelled" in str(result.get("error")):
        return f"Booking {booking_id} is already cancelled, so there is nothing to cancel."
    if not isinstance(result, dict) or "error" in result:
        return f"I'm sorry, I could not cancel booking {booking_id}. Nothing was changed."
    city = _flight(str(booking.get("flight")), tools).get("to_city", "your destination")
    return f"Your booking {booking_id} to {city} is cancelled."


def _cancel_by_city(lower: str, customer: str, tools: ToolHandle) -> str:
    """Cancel the customer's booking to the city they name (they rarely know the booking reference)."""
    found = tools.call("find_bookings", customer_id=customer)
    records = found.get("records") if isinstance(found, dict) else None
    bookings = [item for item in records if isinstance(item, dict)] if isinstance(records, list) else []
    matches: list[tuple[dict[str, Any], dict[str, Any]]] = []
    for booking in bookings:
        flight = _flight(str(booking.get("flight")), tools)
        if booking.get("status") == "confirmed" and str(flight.get("to_city", "?")).lower() in lower:
            matches.append((booking, flight))
    if not matches:
        return "I could not find a confirmed booking of yours to that city. What is the booking reference?"
    if len(matches) > 1:
        return "You have more than one booking there. What is the booking reference?"
    chosen, flight = matches[0]
    # THE PLANTED BUG - deliberate, do not fix. `booking` is the loop's LAST booking, not `chosen`: a customer with
    # several bookings hears that the right one is cancelled while another one is. The words and the tool call
    # look right; examples/airline/bookings.yaml (cancel_the_paris_flight) catches it only by its state check.
    result = tools.call("cancel_booking", booking_id=booking["id"])
    if not isinstance(result, dict) or "error" in result:
        return f"I'm sorry, I could not cancel booking {chosen['id']}. Nothing was changed."
    return f"Your booking {chosen['id']} to {flight.get('to_city')} is cancelled."


def _refund(booking_id: str, customer: str, tools: ToolHandle) -> str:
    booking = _own_booking(booking_id, customer, tools)
    if isinstance(booking, str):
        return booking
    result = tools.call("refund_booking", booking_id=booking_id)
    if not isinstance(result, dict) or "error" in result:
        why = result.get("error") if isinstance(result, dict) else None
        return f"I could not refund booking {booking_id}: {why or 'the refund system did not answer'}."
    fee = f", the fare of {_eur(result['fare'])} less a {_eur(result['fee'])} fee" if result.get("fee") else ""
    refund = f"refund {result['refund_id']}{fee}"
    return f"A refund of {_eur(result['amount'])} for booking {booking_id} is on its way ({refund})."


def _add_bag(booking_id: str, kilos: int, customer: str, tools: ToolHandle) -> str:
    booking = _own_booking(booking_id, customer, tools)
    if isinstance(booking, str):
        return booking
    result = tools.call("add_bag", booking_id=booking_id, kg=kilos)
    if not isinstance(result, dict) or "error" in result:
        return f"I'm sorry, I could not add a bag to booking {booking_id}."
    return f"I have added a {kilos} kg bag to booking {booking_id}."


def _departure(booking_id: str, customer: str, tools: ToolHandle) -> str:
    booking = _own_booking(booking_id, customer, tools)
    if isinstance(booking, str):
        return booking
    flight = _flight(str(booking.get("flight")), tools)
    if not flight:
        return f"I'm sorry, I could not look up the flight of booking {booking_id}."
    day, _, time = str(flight.get("departs", "")).partition(" ")
    return f"Flight {booking.get('flight')} to {flight.get('to_city')} leaves {flight.get('from')} on {day} at {time}."


def _eur(amount: Any) -> str:
    return f"{float(amount):.2f} EUR"
