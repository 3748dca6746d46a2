"""Keyword matching for ``must_contain`` / ``must_not_contain``, with its surprises documented.

Modes (every mode ignores case; substring, word and stem compare ``str.casefold()``-ed text, so "STRASSE"
matches "Straße"; regex uses ``re.IGNORECASE``, which does not fold "ß" to "ss"):
  ``substring`` (default, what hosted tools do): literal, so "nicht gesendet" contains the forbidden
      "gesendet", "Entwurf" does not match "Antwortentwürfe" (ü vs u), and "23,60" is found in "123,60".
  ``word``: the term as whole words ("refund" does not match "refunded"; "23,60" not in "123,60").
  ``stem``: the words of the term and the text reduced by the Snowball stemmer of the suite's language, so
      inflected forms match ("refunds", "refunded", "refunding" and, by Snowball, "refundable" match
      "refund"; "Entwürfe" matches "Entwurf"). In compounding languages (German, Dutch, the Nordic ones) a
      word also matches when its stem *ends with* the term's last stem (at least 4 letters), so a compound
      matches its head ("Antwortentwürfe" matches "Entwurf"). That rule has false positives ("Wort" matches
      "Antwort") and lucky hits ("senden" matches "gesendet" only because its stem "gesend" ends with
      "send"). Snowball has no dictionary: strong forms ("gesandt") and many participles ("storniert" ->
      "storniert" vs "stornieren" -> "storni"; "bestellt" vs "bestellen") do not match. List such forms.
  ``regex``: a Python regular expression, case-insensitive.
Normalisations (opt-in per term, applied to term and text alike): ``unicode`` (NFKC, accents folded:
"é" = "e"), ``whitespace`` (runs of spaces and line breaks as one space), ``dates`` (valid numeric and
written dates in English or German read as one form, so "01.12.2026" matches "1. Dezember 2026",
"1 December 2026", "December 1, 2026", "2026-12-01" and "1.12.2026"; numeric dates with "." or "/" are read
day first; impossible dates such as "32.13.2026" or "31.02.2026" stay as written).

Evidence quotes the *original* text: matching happens on the normalised text, and every normalised
character remembers which original characters it came from, so an excerpt shows "3 December 2026" even
when the match was found as "2026-12-03".

What a keyword check cannot see: meaning. Negation is the common trap: "Die Nachricht wurde nicht gesendet."
contains the forbidden "gesendet" in substring, word and stem mode alike, and "not refunded" contains
"refunded". A rule about what the agent *claims* ("never says the message was sent") needs an expectation
in words for the judge model (e.g. ``- The agent does not claim that the message was sent.``), not a keyword.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import date
from functools import cache
from typing import Any

from simulator.models import KeywordTerm
from simulator.safety import redact

_SNOWBALL = {
    "ar": "arabic", "ca": "catalan", "cs": "czech", "da": "danish", "de": "german", "el": "greek",
    "en": "english", "es": "spanish", "et": "estonian", "eu": "basque", "fi": "finnish", "fr": "french",
    "ga": "irish", "hi": "hindi", "hu": "hungarian", "hy": "armenian", "id": "indonesian", "it": "italian",
    "lt": "lithuanian", "ne": "nepali", "nl": "dutch", "no": "norwegian", "nb": "norwegian", "pl": "polish",
    "pt": "portuguese", "ro": "romanian", "ru": "russian", "sr": "serbian", "sv": "swedish", "ta": "tamil",
    "tr": "turkish", "yi": "yiddish", "fa": "persian",
}  # fmt: skip
#: Languages whose compounds are written as one word with the head last ("Antwort|entwurf").
_COMPOUNDING = {"de", "nl", "sv", "da", "no", "nb", "fi"}
_WORD = re.compile(r"\w+", re.UNICODE)

_MONTHS = {
    # English and German month names (and common abbreviations) -> month number. "marz"/"janner" because
    # the unicode normalisation folds "März"/"Jänner" before the dates are read.
    "january": 1, "jan": 1, "januar": 1, "jänner": 1, "janner": 1, "jaenner": 1, "february": 2, "feb": 2,
    "februar": 2, "march": 3, "mar": 3, "märz": 3, "marz": 3, "maerz": 3, "april": 4, "apr": 4, "may": 5,
    "mai": 5, "june": 6, "jun": 6, "juni": 6, "july": 7, "jul": 7, "juli": 7, "august": 8, "aug": 8,
    "september": 9, "sep": 9, "sept": 9, "october": 10, "oct": 10, "oktober": 10, "okt": 10, "november": 11,
    "nov": 11, "december": 12, "dec": 12, "dezember": 12, "dez": 12,
}  # fmt: skip
_MONTH_NAMES = "|".join(sorted(_MONTHS, key=len, reverse=True))
_NUMERIC_DATE = re.compile(r"\b(\d{1,2})[./](\d{1,2})[./](\d{4})\b|\b(\d{4})-(\d{2})-(\d{2})\b")
_DAY_MONTH_YEAR = re.compile(rf"\b(\d{{1,2}})(?:\.|st|nd|rd|th)?\s+({_MONTH_NAMES})\.?\s+(\d{{4}})\b", re.IGNORECASE)
_MONTH_DAY_YEAR = re.compile(rf"\b({_MONTH_NAMES})\.?\s+(\d{{1,2}})(?:st|nd|rd|th)?,?\s+(\d{{4}})\b", re.IGNORECASE)


@dataclass(frozen=True)
class KeywordHit:
    """Whether a term was found, and where: an excerpt of the original text around the match (for the
    evidence) and the match's ``span`` (start, end) in the original text."""

    found: bool
    excerpt: str = ""
    span: tuple[int, int] | None = None


def as_term(term: str | KeywordTerm, default_mode: str) -> tuple[str, str, tuple[str, ...]]:
    """A term's text, mode and normalisations, with the expectation's mode as the default."""
    if isinstance(term, str):
        return term, default_mode, ()
    return term.term, term.mode or default_mode, tuple(term.normalize)


# -- normalisation with an offset map -------------------------------------------------------------------


@dataclass(frozen=True)
class _Mapped:
    """A normalised text that remembers, for each of its characters, the span of original text it came from.

    Normalising changes lengths ("ß" casefolds to "ss", a date becomes ISO, a line break run becomes one
    space), so an index into the normalised text is not an index into the original: the map translates.
    """

    text: str
    spans: tuple[tuple[int, int], ...]
    original_length: int

    @classmethod
    def of(cls, text: str) -> _Mapped:
        return cls(text, tuple((i, i + 1) for i in range(len(text))), len(text))

    def original_span(self, start: int, end: int) -> tuple[int, int]:
        """The original span of the normalised characters ``[start, end)``."""
        if start < end:
            return self.spans[start][0], self.spans[end - 1][1]
        # An empty match (a regex can match nothing): a point between two original characters.
        point = self.spans[start][0] if start < len(self.spans) else self.original_length
        return point, point

    def per_char(self, change: Callable[[str], str]) -> _Mapped:
        """Replace each character by ``change(character)``; the replacement keeps the character's span."""
        chars: list[str] = []
        spans: list[tuple[int, int]] = []
        for char, span in zip(self.text, self.spans, strict=True):
            replacement = change(char)
            if replacement:
                chars.append(replacement)
                spans.extend([span] * len(replacement))
            elif spans:
                # A dropped character (a combining accent) belongs to the one before it, so an excerpt that
                # ends on "e" still quotes the whole "é".
                spans[-1] = (spans[-1][0], span[1])
        return _Mapped("".join(chars), tuple(spans), self.original_length)

    def substitute(self, pattern: re.Pattern[str], replace: Callable[[re.Match[str]], str]) -> _Mapped:
        """``pattern.sub(replace, text)``, where a replaced piece maps to the whole span of what it replaced."""
        chars: list[str] = []
        spans: list[tuple[int, int]] = []
        done = 0
        for match in pattern.finditer(self.text):
            start, end = match.span()
            replacement = replace(match)
            if replacement == match.group(0) or start == end:
                continue
            chars.append(self.text[done:start])
            spans.extend(self.spans[done:start])
            chars.append(replacement)
            spans.extend([self.original_span(start, end)] * len(replacement))
            done = end
        chars.append(self.text[done:])
        spans.extend(self.spans[done:])
        return _Mapped("".join(chars), tuple(spans), self.original_length)


_WHITESPACE_RUN = re.compile(r"\s+")


def _fold_accents(char: str) -> str:
    decomposed = unicodedata.normalize("NFKD", char)
    return unicodedata.normalize("NFKC", "".join(c for c in decomposed if not unicodedata.combining(c)))


def _normalized(text: str, normalizations: Sequence[str]) -> _Mapped:
    mapped = _Mapped.of(text)
    if "unicode" in normalizations:
        mapped = mapped.per_char(_fold_accents)
    if "whitespace" in normalizations:
        stripped = mapped.text.strip()
        if stripped != mapped.text:
            lead = len(mapped.text) - len(mapped.text.lstrip())
            mapped = _Mapped(stripped, mapped.spans[lead : lead + len(stripped)], mapped.original_length)
        mapped = mapped.substitute(_WHITESPACE_RUN, lambda _: " ")
    if "dates" in normalizations:
        mapped = _canonical_dates(mapped)
    return mapped


def normalize(text: str, normalizations: tuple[str, ...] | list[str]) -> str:
    """Apply the requested normalisations (see the module docstring)."""
    return _normalized(text, normalizations).text


def _canonical_dates(mapped: _Mapped) -> _Mapped:
    def numeric(match: re.Match[str]) -> str:
        if match.group(1):
            day, month, year = int(match.group(1)), int(match.group(2)), int(match.group(3))
        else:
            year, month, day = int(match.group(4)), int(match.group(5)), int(match.group(6))
        return _iso(year, month, day, match.group(0))

    def day_month(match: re.Match[str]) -> str:
        month = _MONTHS[match.group(2).lower()]
        return _iso(int(match.group(3)), month, int(match.group(1)), match.group(0))

    def month_day(match: re.Match[str]) -> str:
        month = _MONTHS[match.group(1).lower()]
        return _iso(int(match.group(3)), month, int(match.group(2)), match.group(0))

    mapped = mapped.substitute(_NUMERIC_DATE, numeric)
    mapped = mapped.substitute(_DAY_MONTH_YEAR, day_month)
    return mapped.substitute(_MONTH_DAY_YEAR, month_day)


def _iso(year: int, month: int, day: int, original: str) -> str:
    # Only real calendar dates are rewritten: "32.13.2026" is more likely a typo or a code than a date.
    try:
        return date(year, month, day).isoformat()
    except ValueError:
        return original


# -- matching --------------------------------------------------------------------------------------------


@cache
def _stemmer(language: str) -> Any:
    import snowballstemmer

    name = _SNOWBALL.get(language.split("-", maxsplit=1)[0].lower(), "english")
    return snowballstemmer.stemmer(name)


def _stems(words: list[str], language: str) -> list[str]:
    return list(_stemmer(language).stemWords([w.casefold() for w in words]))


def find_term(
    text: str, term: str, mode: str, *, language: str = "en", normalizations: tuple[str, ...] = ()
) -> KeywordHit:
    """Whether ``term`` occurs in ``text`` under ``mode`` (see the module docstring).

    Term and text are normalised alike; the hit's excerpt and span refer to the original ``text``.
    """
    mapped = _normalized(text, normalizations)
    term = _normalized(term, normalizations).text
    if mode == "regex":
        match = re.search(term, mapped.text, re.IGNORECASE)
        return _hit(text, mapped, match.span()) if match else KeywordHit(False)
    if mode == "stem":
        return _find_stems(text, mapped, term, language)
    # Casefold rather than re.IGNORECASE: it also equates "ß" with "ss" (and the map keeps the excerpt right
    # although "ß" becomes two characters).
    folded = mapped.per_char(str.casefold)
    wanted = term.casefold()
    if mode == "substring":
        index = folded.text.find(wanted)
        return _hit(text, folded, (index, index + len(wanted))) if index >= 0 else KeywordHit(False)
    if mode == "word":
        match = re.search(rf"(?<!\w){re.escape(wanted)}(?!\w)", folded.text)
        return _hit(text, folded, match.span()) if match else KeywordHit(False)
    raise ValueError(f"unknown match mode {mode!r}")


def _hit(original: str, mapped: _Mapped, span: tuple[int, int]) -> KeywordHit:
    start, end = mapped.original_span(*span)
    return KeywordHit(True, _excerpt(original, start, end - start), (start, end))


def _find_stems(original: str, mapped: _Mapped, term: str, language: str) -> KeywordHit:
    wanted = _stems(_WORD.findall(term), language)
    if not wanted:
        return KeywordHit(False)
    matches = list(_WORD.finditer(mapped.text))
    have = _stems([m.group(0) for m in matches], language)
    compounding = language.split("-", maxsplit=1)[0].lower() in _COMPOUNDING
    for start in range(len(have) - len(wanted) + 1):
        window = have[start : start + len(wanted)]
        if window == wanted or (
            compounding and window[:-1] == wanted[:-1] and len(wanted[-1]) >= 4 and window[-1].endswith(wanted[-1])
        ):
            return _hit(original, mapped, (matches[start].start(), matches[start + len(wanted) - 1].end()))
    return KeywordHit(False)


def _excerpt(text: str, index: int, length: int, margin: int = 30) -> str:
    start = max(0, index - margin)
    end = min(len(text), index + length + margin)
    prefix = "…" if start else ""
    suffix = "…" if end < len(text) else ""
    # The cut end may hold the start of a secret: redact sees it at the end of the excerpt.
    return redact(f"{prefix}{text[start:end]}{suffix}")
