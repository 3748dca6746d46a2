"""The airline's refund rule, as a Python world tool: logic a declarative operation cannot say.

The agent file declares it as ``world: {function: fares:refund_booking}``. Simulator calls it with the
conversation's own world as ``world`` and the call's arguments by name; what it returns is the tool's result. It
reads and changes the world only through the world's methods (``get``, ``find``, ``update``, ``insert``,
``delete``), so every read and change is recorded with the call and the seeded world is never touched.
"""

from __future__ import annotations

from typing import Any

from simulator.world import World

#: What a saver fare's refund keeps back, in EUR.
SAVER_FEE = 60.0


def refund_amount(fare: float, fare_type: str) -> float | None:
    """What a cancelled booking's refund comes to: flex in full, saver less the fee (never below 0), basic none
    (None: not refundable)."""
    if fare_type == "flex":
        return round(fare, 2)
    if fare_type == "saver":
        return round(max(fare - SAVER_FEE, 0.0), 2)
    return None


def refund_booking(world: World, booking_id: str) -> dict[str, Any]:
    """Refund a cancelled booking by its fare's rule: file the refund and mark the booking refunded.

    A booking that is not found, not cancelled, already refunded or on a basic fare changes nothing, and the
    answer says why (as the airline's real backend would).
    """
    booking = world.get("bookings", booking_id)
    if booking is None:
        return {"error": f"there is no booking {booking_id}"}
    if booking.get("status") != "cancelled":
        return {"error": f"booking {booking_id} is {booking.get('status')}: only a cancelled booking is refunded"}
    if booking.get("refunded"):
        return {"error": f"booking {booking_id} has already been refunded"}
    fare, fare_type = booking.get("fare"), str(booking.get("fare_type"))
    if not isinstance(fare, (int, float)):
        return {"error": f"booking {booking_id} has no fare to refund"}
    amount = refund_amount(fare, fare_type)
    if amount is None:
        return {"error": f"booking {booking_id} is on a {fare_type} fare, which is not refundable"}
    refund_id = world.insert("refunds", {"booking": booking_id, "amount": amount, "currency": "EUR"})
    world.update("bookings", booking_id, {"refunded": True})
    fee = round(fare - amount, 2)
    return {"refund_id": refund_id, "amount": amount, "currency": "EUR", "fare": fare, "fee": fee}
