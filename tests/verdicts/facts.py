"""The facts a sentence states (ids, dates, amounts), normalised so that "3 December 2026", "3. Dezember 2026" and
"2026-12-03" are one fact, and "1250.40" and 1250.4 another. The stub judge compares them to see whether a claim
is backed by a tool call, and whether the simulated user said something its brief never gave it; the agent reads
dates written in words into the ISO dates its tools take."""

from __future__ import annotations

import json
import re
from typing import Any

_MONTHS = {
    **{m: i for i, m in enumerate(["january", "february", "march", "april", "may", "june", "july"], 1)},
    **{m: i for i, m in enumerate(["august", "september", "october", "november", "december"], 8)},
    **{m: i for i, m in enumerate(["januar", "februar", "märz", "april", "mai", "juni", "juli"], 1)},
    **{m: i for i, m in enumerate(["august", "september", "oktober", "november", "dezember"], 8)},
}
_MONTH = "|".join(sorted(_MONTHS, key=len, reverse=True))
#: Each kind of fact, tried in this order; a matched span is not read again by a later kind.
_KINDS: list[tuple[str, re.Pattern[str]]] = [
    ("date", re.compile(r"\b(\d{4})-(\d{2})-(\d{2})\b")),
    ("date", re.compile(rf"\b(\d{{1,2}})\.? ({_MONTH}) (\d{{4}})\b", re.IGNORECASE)),
    ("id", re.compile(r"\b[A-Z]{1,4}-\d{2,6}\b")),
    ("number", re.compile(r"(?<![\w.])\d+(?:\.\d+)?(?![\w])")),
]


def _normal(kind: str, match: re.Match[str]) -> str:
    if kind == "date" and match.re is _KINDS[0][1]:
        return match.group(0)
    if kind == "date":
        day, month, year = match.groups()
        return f"{int(year):04d}-{_MONTHS[month.casefold()]:02d}-{int(day):02d}"
    if kind == "id":
        return match.group(0).casefold()
    return f"{float(match.group(0)):g}"


def facts_of(text: str) -> dict[str, str]:
    """The facts ``text`` states: each normalised fact mapped to the words that state it (first occurrence)."""
    found: dict[str, str] = {}
    remaining = text
    for kind, pattern in _KINDS:
        for match in pattern.finditer(remaining):
            found.setdefault(_normal(kind, match), match.group(0))
        # Blank what was read, so "C-1234" is not read again as the number 1234, nor a date's year alone.
        remaining = pattern.sub(lambda m: " " * len(m.group(0)), remaining)
    return found


def facts_of_data(value: Any) -> set[str]:
    """The facts in tool arguments or a tool result (any JSON value, or JSON text)."""
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
    return set(facts_of(text))


def iso_date(text: str) -> str:
    """A date written in words ("2. Oktober 2025", "3 December 2026") as ``YYYY-MM-DD``; ``text`` itself when it
    is no such date."""
    dates = [fact for fact in facts_of(text) if re.fullmatch(r"\d{4}-\d{2}-\d{2}", fact)]
    return dates[0] if dates else text
