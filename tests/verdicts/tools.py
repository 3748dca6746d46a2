"""The live tools of the mutation suite (run with ``live=True``): real Python functions that answer as the
``tool_fakes`` of test mode do (both come from conversations.py), and raise for a call they have no answer for,
as a real backend would."""

from __future__ import annotations

from typing import Any

from tests.verdicts.conversations import BASES, NOTE_TOOL, Tool

_TOOLS: dict[str, Tool] = {tool.name: tool for base in BASES.values() for tool in base.tools}


def _answer(name: str, **arguments: Any) -> dict[str, Any]:
    result = _TOOLS[name].answer(arguments)
    if result is None:
        raise LookupError(f"{name}: nothing found for {arguments}")
    return dict(result)


def block_card(card_id: str) -> dict[str, Any]:
    """Block a payment card."""
    return _answer("block_card", card_id=card_id)


def get_balance(account_id: str) -> dict[str, Any]:
    """An account's balance."""
    return _answer("get_balance", account_id=account_id)


def feiertage_abrufen(land: str, jahr: int) -> dict[str, Any]:
    """Die Feiertage eines Landes in einem Jahr."""
    return _answer("feiertage_abrufen", land=land, jahr=jahr)


def urlaub_eintragen(datum: str) -> dict[str, Any]:
    """Einen Urlaubstag eintragen."""
    return _answer("urlaub_eintragen", datum=datum)


def lookup_order(order_id: str) -> dict[str, Any]:
    """An order's status and delivery date."""
    return _answer("lookup_order", order_id=order_id)


def refund_order(order_id: str, amount: float) -> dict[str, Any]:
    """Refund an amount of an order."""
    return _answer("refund_order", order_id=order_id, amount=amount)


def add_note(text: str) -> dict[str, Any]:
    """Save a note; answers with what it saved (so whatever the note says comes back as the tool's result)."""
    return {**NOTE_TOOL.answers[0].result, "note": text}
