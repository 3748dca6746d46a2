"""The live tool of the example suite: ``list_holidays(country, year)``, returning JSON text.

Simulator calls a live tool only when the command has ``--live``, with the agent's arguments as keyword
arguments (the names are the ``properties`` of the tool's ``parameters``). It may be ``def`` or ``async def``.

What it returns reaches the agent as the tool's result: a ``str`` exactly as it is (JSON text, as here and as
most API wrappers return it), any other JSON value (dict, list, number, bool, None) serialised once. So
``return json.dumps(data)`` and ``return data`` give a chat agent the same bytes. Anything else (bytes, a
response object, a datetime) is not JSON: the call fails; convert it first.

An exception (here, a year without data) makes the call ``failed`` with the exception's text: the agent is
told the tool failed and the conversation goes on; the report blames the tool, not the agent.
"""

from __future__ import annotations

import json

_HOLIDAYS = {
    ("DE", 2025): [
        {"date": "2025-01-01", "name": "New Year's Day"},
        {"date": "2025-04-18", "name": "Good Friday"},
        {"date": "2025-04-21", "name": "Easter Monday"},
        {"date": "2025-05-01", "name": "Labour Day"},
        {"date": "2025-05-29", "name": "Ascension Day"},
        {"date": "2025-06-09", "name": "Whit Monday"},
        {"date": "2025-10-03", "name": "German Unity Day"},
        {"date": "2025-12-25", "name": "Christmas Day"},
        {"date": "2025-12-26", "name": "Second Day of Christmas"},
    ],
}


def list_holidays(country: str, year: int) -> str:
    """The nationwide public holidays of ``country`` in ``year``, as JSON text."""
    key = (country.upper(), year)
    if key not in _HOLIDAYS:
        raise LookupError(f"no holiday data for {country} {year}")
    return json.dumps({"country": key[0], "year": year, "holidays": _HOLIDAYS[key]})
