"""The agent of the live-tools example: a rule-based holiday helper, so the example runs without a model.

It reads a country and a year from the user's last message, calls ``list_holidays`` through the tool handle
Simulator gives it (so the call is faked in test mode and runs the live function with ``--live``), and lists
the dates it got back.
"""

from __future__ import annotations

import json
import re
from typing import Any

_COUNTRIES = {"germany": "DE", "german": "DE", "de": "DE"}


def respond(messages: list[dict[str, Any]], tools: Any) -> str:
    """Answer the last user message."""
    text = str(messages[-1].get("content") or "")
    year = re.search(r"\b(20\d\d)\b", text)
    country = next((code for word, code in _COUNTRIES.items() if re.search(rf"\b{word}\b", text, re.I)), None)
    if year is None or country is None:
        return "Which country and year would you like the public holidays for?"
    result = tools.call("list_holidays", country=country, year=int(year.group(1)))
    # A call that failed (or did not run) comes back as {"error": ..., "status": ...}.
    if isinstance(result, dict) and "error" in result:
        return f"Sorry, I could not look up the holidays: {result['error']}"
    # A tool that returns JSON text gives a Python agent that text; one that returns data gives the data.
    data = json.loads(result) if isinstance(result, str) else result
    days = "; ".join(f"{day['date']} {day['name']}" for day in data["holidays"])
    return f"Public holidays in {data['country']} {data['year']}: {days}."
