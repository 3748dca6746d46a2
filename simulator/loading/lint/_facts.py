"""Facts in a text (ids, amounts, dates, emails, names) and whether what someone knows holds them."""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any, Literal

from simulator.models import (
    Persona,
)


def _words(text: str) -> frozenset[str]:
    """The words of ``text``: long word lists written as text."""
    return frozenset(text.split())


_MONTH_NAMES = (
    "january february march april may june july august september october november december",
    "januar februar märz april mai juni juli august september oktober november dezember",
    "jan feb mar apr may jun jul aug sep oct nov dec",
)
_MONTHS = {name: number for names in _MONTH_NAMES for number, name in enumerate(names.split(), 1)} | {"sept": 9}
_MONTH = "|".join(sorted(_MONTHS, key=len, reverse=True))
#: Dates as written: 2026-12-03, 03.12.2026, 3 December 2026, 3. Dezember, December 3, 2026.
_DATE_PATTERNS: tuple[re.Pattern[str], ...] = (
    re.compile(r"\b(?P<y>\d{4})-(?P<m>\d{1,2})-(?P<d>\d{1,2})\b"),
    re.compile(r"\b(?P<d>\d{1,2})\.(?P<m>\d{1,2})\.(?P<y>\d{4})\b"),
    re.compile(
        rf"\b(?P<d>\d{{1,2}})(?:st|nd|rd|th|\.)?\s+(?:of\s+)?(?P<m>{_MONTH})\.?(?:,?\s+(?P<y>\d{{4}}))?\b", re.I
    ),
    re.compile(rf"\b(?P<m>{_MONTH})\.?\s+(?P<d>\d{{1,2}})(?:st|nd|rd|th)?\b(?:,?\s+(?P<y>\d{{4}}))?", re.I),
)
_EMAIL = re.compile(r"[\w.+-]+@[\w-]+(?:\.[\w-]+)+")
# A token of letters and digits that names something: ORD-10042, cus_4821, RF-5512, #12345, 1Z999AA1012.
_TOKEN = re.compile(r"#?[A-Za-z0-9_-]*\d[A-Za-z0-9_-]*")
_NUMBER = re.compile(r"(?<![\w.,])(?P<num>\d+(?:[.,]\d+)?)(?![\w])")
_CURRENCY_BEFORE = re.compile(r"[$€£¥]\s*$")
_CURRENCY_AFTER = re.compile(r"\s*(?:usd|eur|gbp|chf|dollars?|euros?|pounds?|[$€£])", re.I)
_APPROXIMATE = re.compile(
    r"(?:about|around|approximately|approx\.?|roughly|circa|ca\.|~|etwa|ungefähr)\s*[$€£]?\s*$", re.I
)
_NAME_WORD = re.compile(r"[A-ZÄÖÜ][^\W\d_]*(?:['’&-][^\W\d_]+)*")
_PUNCTUATION = ".,;:!?()[]\"“”'"
_SHORT_ID = re.compile(r"[A-Za-z]{1,6}(?:[-_]\d+|\d{2,})")
#: Capitalised words that are not names of a person, place, product or company.
_NOT_NAMES = _words(
    """i ai ok okay faq id ids url pdf api sms the a an yes no usd eur gbp chf monday tuesday wednesday thursday
    friday saturday sunday today tomorrow pin iban bic vat gdpr sku cvv otp eta tos sla kyc 2fa"""
) | set(_MONTHS)


@dataclass(frozen=True)
class Fact:
    """A concrete fact a text needs: its words as written and what kind it is."""

    text: str
    kind: Literal["id", "email", "amount", "date", "name"]
    #: A date as (year or 0, month, day); an amount as its value.
    value: tuple[int, int, int] | float | None = None

    def describe(self) -> str:
        """``'ORD-10042' (an id)``."""
        article = {"id": "an id", "email": "an email", "amount": "a number", "date": "a date", "name": "a name"}
        return f"{self.text!r} ({article[self.kind]})"


def _date_value(match: re.Match[str]) -> tuple[int, int, int] | None:
    month_text = match.group("m")
    month = int(month_text) if month_text.isdigit() else _MONTHS.get(month_text.lower(), 0)
    day = int(match.group("d"))
    year = int(match.group("y")) if match.group("y") else 0
    if not (1 <= month <= 12 and 1 <= day <= 31):
        return None
    return (year, month, day)


def _number_value(text: str) -> float:
    if "," in text and "." not in text:
        text = text.replace(",", ".")
    return float(text.replace(",", ""))


class _Taken:
    """The characters of a text already read as a fact (so a date's digits are not also an amount)."""

    def __init__(self, text: str) -> None:
        self._marks = bytearray(len(text))

    def free(self, start: int, end: int) -> bool:
        return not any(self._marks[start:end])

    def take(self, start: int, end: int) -> None:
        self._marks[start:end] = b"\x01" * (end - start)


def find_facts(text: str, *, names: bool = True) -> list[Fact]:
    """The concrete facts ``text`` mentions: dates, emails, ids, amounts and (with ``names``) proper names.

    Linear in the length of the text (a criterion can be as long as a file may be)."""
    facts: list[Fact] = []
    taken = _Taken(text)

    def keep(match: re.Match[str], fact: Fact) -> None:
        taken.take(*match.span())
        facts.append(fact)

    for pattern in _DATE_PATTERNS:
        for match in pattern.finditer(text):
            value = _date_value(match)
            if value is not None and taken.free(*match.span()):
                keep(match, Fact(match.group(0), "date", value))
    for match in _EMAIL.finditer(text):
        if taken.free(*match.span()):
            keep(match, Fact(match.group(0), "email"))
    for match in _TOKEN.finditer(text):
        token = match.group(0).strip("-_")
        digits = sum(c.isdigit() for c in token)
        letters = sum(c.isalpha() for c in token)
        named = (letters and digits >= 3) or _SHORT_ID.fullmatch(token) or token.startswith("#")
        if named and digits and taken.free(*match.span()):
            keep(match, Fact(token, "id"))
    for match in _NUMBER.finditer(text):
        start, end = match.span()
        raw = match.group("num")
        if not taken.free(start, end) or _APPROXIMATE.search(text, max(0, start - 16), start):
            continue  # "about 25 USD": a computed amount, not one to be given
        money = bool(_CURRENCY_BEFORE.search(text, max(0, start - 2), start) or _CURRENCY_AFTER.match(text, end))
        decimal = bool(re.search(r"[.,]\d{1,2}$", raw))
        whole = raw.isdigit() and len(raw) >= 3 and not (len(raw) == 4 and 1900 <= int(raw) <= 2100)
        if money or decimal or whole:
            keep(match, Fact(raw, "amount", _number_value(raw)))
    if names:
        facts.extend(_names(text, taken))
    return facts


def _names(text: str, taken: _Taken) -> list[Fact]:
    """Runs of capitalised words that do not start a sentence: Jane Doe, Royal Mail, PayPal."""
    found: list[Fact] = []
    run: list[re.Match[str]] = []

    def close() -> None:
        if run:
            found.append(Fact(text[run[0].start() : run[-1].end()].strip(_PUNCTUATION), "name"))
            run.clear()

    previous = ""
    for match in re.finditer(r"\S+", text):
        written = match.group(0)
        word = written.strip(_PUNCTUATION)
        sentence_start = not previous or previous[-1] in ".!?:;" or written[0] in "\"“'(["
        previous = written
        if (
            _NAME_WORD.fullmatch(word)
            and not sentence_start
            and taken.free(*match.span())
            and word.casefold() not in _NOT_NAMES
        ):
            run.append(match)
            if written[-1] in ".,;:!?)":
                close()
        else:
            close()
    close()
    return found


def _flatten(value: Any) -> Iterator[str]:
    if value is None:
        return
    if isinstance(value, dict):
        for key, item in value.items():
            yield str(key)
            yield from _flatten(item)
    elif isinstance(value, list):
        for item in value:
            yield from _flatten(item)
    else:
        yield str(value)


@dataclass
class Knowledge:
    """What someone is told: its text (folded), and the dates and amounts in it."""

    texts: list[str] = field(default_factory=list)
    dates: set[tuple[int, int, int]] = field(default_factory=set)
    amounts: set[float] = field(default_factory=set)
    _blob: str | None = field(default=None, repr=False, compare=False)

    def add(self, value: Any) -> None:
        """Learn ``value``: text, or any JSON data (keys and values)."""
        self._blob = None
        for text in _flatten(value):
            self.texts.append(text.casefold())
            if not any(c.isdigit() for c in text):
                continue
            for pattern in _DATE_PATTERNS:
                self.dates.update(d for m in pattern.finditer(text) if (d := _date_value(m)) is not None)
            for match in _NUMBER.finditer(text):
                self.amounts.add(_number_value(match.group("num")))

    def copy(self) -> Knowledge:
        """What is known now, apart from what is learnt later."""
        return Knowledge(list(self.texts), set(self.dates), set(self.amounts))

    def merged(self, other: Knowledge) -> Knowledge:
        """What both know."""
        return Knowledge([*self.texts, *other.texts], self.dates | other.dates, self.amounts | other.amounts)

    def knows(self, fact: Fact) -> bool:
        """Whether ``fact`` is in what was learnt (a date in any spelling, an amount by value)."""
        if fact.kind == "date" and isinstance(fact.value, tuple):
            year, month, day = fact.value
            return any(m == month and d == day and (not year or not y or y == year) for y, m, d in self.dates)
        if fact.kind == "amount" and isinstance(fact.value, float) and fact.value in self.amounts:
            return True
        # As a whole word or id: ORD-1 is not known because ORD-10042 is.
        words = fact.text.split() if fact.kind == "name" else [fact.text.lstrip("#")]
        if self._blob is None:
            self._blob = "\n".join(self.texts)
        blob = self._blob
        return all(re.search(rf"(?<![\w-]){re.escape(word.casefold())}(?![\w-])", blob) for word in words)


def _persona_knowledge(persona: Persona) -> Knowledge:
    knowledge = Knowledge()
    knowledge.add(persona.model_dump(mode="json", exclude={"style"}))
    return knowledge
