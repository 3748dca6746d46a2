"""Keyword matching for ``must_contain`` / ``must_not_contain``, with its surprises documented.

Modes:
  ``substring`` (default, what hosted tools do): case-insensitive substring. Literal, so "nicht gesendet"
      contains the forbidden "gesendet", and "Entwurf" does not match "Antwortentwürfe" (ü vs u).
  ``word``: the term as whole words ("refund" does not match "refunded").
  ``stem``: the words of the term and the text reduced by the Snowball stemmer of the suite's language, so
      inflected forms match ("refunds", "refunded" match "refund"; "Entwürfe" matches "Entwurf"); in German a
      compound matches its last part ("Antwortentwürfe" matches "Entwurf").
  ``regex``: a Python regular expression, case-insensitive.
Normalisations (opt-in per term): ``unicode`` (NFKC, accents folded: "é" = "e"), ``whitespace`` (runs of
spaces and line breaks as one space), ``dates`` (numeric and written dates read as one form, so
"01.12.2026" matches "1. Dezember 2026" and "December 1, 2026").
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass
from functools import cache
from typing import Any

from simulator.models import KeywordTerm

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
    # English and German month names (and common abbreviations) -> month number.
    "january": 1, "jan": 1, "januar": 1, "jänner": 1, "february": 2, "feb": 2, "februar": 2, "march": 3,
    "mar": 3, "märz": 3, "maerz": 3, "april": 4, "apr": 4, "may": 5, "mai": 5, "june": 6, "jun": 6, "juni": 6,
    "july": 7, "jul": 7, "juli": 7, "august": 8, "aug": 8, "september": 9, "sep": 9, "sept": 9, "october": 10,
    "oct": 10, "oktober": 10, "okt": 10, "november": 11, "nov": 11, "december": 12, "dec": 12, "dezember": 12,
    "dez": 12,
}  # fmt: skip
_MONTH_NAMES = "|".join(sorted(_MONTHS, key=len, reverse=True))
_NUMERIC_DATE = re.compile(r"\b(\d{1,2})[./](\d{1,2})[./](\d{4})\b|\b(\d{4})-(\d{2})-(\d{2})\b")
_DAY_MONTH_YEAR = re.compile(rf"\b(\d{{1,2}})\.?\s+({_MONTH_NAMES})\.?\s+(\d{{4}})\b", re.IGNORECASE)
_MONTH_DAY_YEAR = re.compile(rf"\b({_MONTH_NAMES})\.?\s+(\d{{1,2}})(?:st|nd|rd|th)?,?\s+(\d{{4}})\b", re.IGNORECASE)


@dataclass(frozen=True)
class KeywordHit:
    """Whether a term was found, and where (the matched text, for the evidence)."""

    found: bool
    excerpt: str = ""


def as_term(term: str | KeywordTerm, default_mode: str) -> tuple[str, str, tuple[str, ...]]:
    """A term's text, mode and normalisations, with the expectation's mode as the default."""
    if isinstance(term, str):
        return term, default_mode, ()
    return term.term, term.mode or default_mode, tuple(term.normalize)


def normalize(text: str, normalizations: tuple[str, ...] | list[str]) -> str:
    """Apply the requested normalisations (see the module docstring)."""
    if "unicode" in normalizations:
        decomposed = unicodedata.normalize("NFKD", text)
        text = "".join(ch for ch in decomposed if not unicodedata.combining(ch))
        text = unicodedata.normalize("NFKC", text)
    if "whitespace" in normalizations:
        text = " ".join(text.split())
    if "dates" in normalizations:
        text = _canonical_dates(text)
    return text


def _canonical_dates(text: str) -> str:
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

    text = _NUMERIC_DATE.sub(numeric, text)
    text = _DAY_MONTH_YEAR.sub(day_month, text)
    return _MONTH_DAY_YEAR.sub(month_day, text)


def _iso(year: int, month: int, day: int, original: str) -> str:
    if not (1 <= month <= 12 and 1 <= day <= 31):
        return original
    return f"{year:04d}-{month:02d}-{day:02d}"


@cache
def _stemmer(language: str) -> Any:
    import snowballstemmer

    name = _SNOWBALL.get(language.split("-", maxsplit=1)[0].lower(), "english")
    return snowballstemmer.stemmer(name)


def _stems(text: str, language: str) -> list[str]:
    words = [w.casefold() for w in _WORD.findall(text)]
    return list(_stemmer(language).stemWords(words))


def find_term(
    text: str, term: str, mode: str, *, language: str = "en", normalizations: tuple[str, ...] = ()
) -> KeywordHit:
    """Whether ``term`` occurs in ``text`` under ``mode`` (see the module docstring)."""
    text = normalize(text, normalizations)
    term = normalize(term, normalizations)
    if mode == "substring":
        index = text.casefold().find(term.casefold())
        return KeywordHit(index >= 0, _excerpt(text, index, len(term)) if index >= 0 else "")
    if mode == "word":
        match = re.search(rf"(?<!\w){re.escape(term)}(?!\w)", text, re.IGNORECASE)
        return KeywordHit(match is not None, _excerpt(text, match.start(), len(match.group(0))) if match else "")
    if mode == "regex":
        match = re.search(term, text, re.IGNORECASE)
        return KeywordHit(match is not None, _excerpt(text, match.start(), len(match.group(0))) if match else "")
    if mode == "stem":
        return _find_stems(text, term, language)
    raise ValueError(f"unknown match mode {mode!r}")


def _find_stems(text: str, term: str, language: str) -> KeywordHit:
    wanted = _stems(term, language)
    if not wanted:
        return KeywordHit(False)
    words = _WORD.findall(text)
    have = _stems(text, language)
    compounding = language.split("-", maxsplit=1)[0].lower() in _COMPOUNDING
    for start in range(len(have) - len(wanted) + 1):
        window = have[start : start + len(wanted)]
        if window == wanted or (
            compounding and window[:-1] == wanted[:-1] and len(wanted[-1]) >= 4 and window[-1].endswith(wanted[-1])
        ):
            return KeywordHit(True, " ".join(words[start : start + len(wanted)]))
    return KeywordHit(False)


def _excerpt(text: str, index: int, length: int, margin: int = 30) -> str:
    start = max(0, index - margin)
    end = min(len(text), index + length + margin)
    prefix = "…" if start else ""
    suffix = "…" if end < len(text) else ""
    return f"{prefix}{text[start:end]}{suffix}"
