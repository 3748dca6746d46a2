"""Keyword matching: the traps met in practice, pinned so a change of behaviour is a conscious one."""

from __future__ import annotations

import pytest

from simulator.judges.checks import ConversationView, check_keywords
from simulator.judges.keywords import find_term, normalize
from simulator.models.case import KeywordChecks
from simulator.models.transcript import AgentEvent


def found(text: str, term: str, mode: str, *, language: str = "en", normalize: tuple[str, ...] = ()) -> bool:
    return find_term(text, term, mode, language=language, normalizations=normalize).found


# -- negation: a keyword cannot see it -------------------------------------------------------------------


@pytest.mark.parametrize("mode", ["substring", "word", "stem"])
def test_a_negated_forbidden_word_is_still_found(mode: str) -> None:
    # The classic trap: must_not_contain "gesendet" fails on a correct "not sent" reply. No keyword mode can
    # tell "nicht gesendet" from "gesendet"; a rule about what the agent claims needs an LLM expectation.
    assert found("Die Nachricht wurde nicht gesendet.", "gesendet", mode, language="de")


def test_the_keywords_module_sends_negation_rules_to_the_judge() -> None:
    # The limit is documented where users of the modes look, with the way out.
    import simulator.judges.keywords as module

    assert module.__doc__ is not None
    assert "nicht gesendet" in module.__doc__
    assert "judge model" in module.__doc__


# -- compounds and inflection ----------------------------------------------------------------------------

DRAFTS = "Drei Antwortentwürfe liegen bereit"


@pytest.mark.parametrize(
    ("mode", "expected"),
    [
        # Literal: "entwürf" is not "entwurf" (umlaut), so a required "Entwurf" fails a correct reply.
        ("substring", False),
        # Whole words: the word is "Antwortentwürfe", not "Entwurf".
        ("word", False),
        # Snowball German folds ü to u and strips the plural; the compound rule then finds the head.
        ("stem", True),
    ],
)
def test_a_german_compound_plural_only_matches_by_stem(mode: str, expected: bool) -> None:
    assert found(DRAFTS, "Entwurf", mode, language="de") is expected


def test_folding_accents_lets_a_substring_find_the_compound() -> None:
    # The cheaper way out for this one case: unicode normalisation makes "entwürfe" "entwurfe".
    assert found(DRAFTS, "Entwurf", "substring", normalize=("unicode",))


def test_an_inflected_form_matches_by_stem() -> None:
    assert found("Die Entwürfe sind fertig.", "Entwurf", "stem", language="de")
    assert not found("Die Entwürfe sind fertig.", "Entwurf", "word", language="de")


# What Snowball does, pinned: (language, term, text word, matches in stem mode, why).
STEM_TABLE = [
    ("en", "refund", "refund", True, "same word"),
    ("en", "refund", "refunds", True, "plural"),
    ("en", "refund", "refunded", True, "past tense"),
    ("en", "refund", "refunding", True, "-ing"),
    ("en", "refund", "refundable", True, "Snowball English strips -able: 'refundable' stems to 'refund'"),
    ("en", "cancel", "cancelled", True, "British doubling"),
    ("en", "cancel", "cancellation", True, "'cancellation' stems to 'cancel'"),
    ("en", "ship", "shipped", True, "doubling undone"),
    ("en", "ship", "shipment", False, "'shipment' stays 'shipment'"),
    ("de", "senden", "senden", True, "same word"),
    ("de", "senden", "sendet", True, "'sendet' stems to 'send'"),
    ("de", "senden", "sendete", True, "'sendete' stems to 'send'"),
    (
        "de",
        "senden",
        "gesendet",
        True,
        "'gesendet' stems to 'gesend', not 'send': it matches only because the compound rule accepts a stem "
        "that ends with 'send' (luck, not grammar)",
    ),
    ("de", "senden", "versendet", True, "'versend' ends with 'send' (compound rule)"),
    ("de", "senden", "gesandt", False, "strong form: 'gesandt' shares no stem with 'send'"),
    ("de", "senden", "Versand", False, "noun with ablaut"),
    ("de", "Entwurf", "Entwürfe", True, "ü folded, plural stripped"),
    ("de", "Erstattung", "erstattet", True, "both stem to 'erstatt'"),
    ("de", "Erstattung", "Rückerstattung", True, "compound head"),
    ("de", "stornieren", "storniert", False, "'storniert' keeps its -t; 'stornieren' stems to 'storni'"),
    ("de", "bestellen", "bestellt", False, "'bestellt' keeps its -t; 'bestellen' stems to 'bestell'"),
    ("de", "Bestellung", "Bestellungen", True, "plural"),
    ("de", "Wort", "Antwort", True, "false positive of the compound rule: 'antwort' ends with 'wort'"),
]


@pytest.mark.parametrize(("language", "term", "word", "expected", "why"), STEM_TABLE)
def test_stem_table(language: str, term: str, word: str, expected: bool, why: str) -> None:
    assert found(f"Status: {word}.", term, "stem", language=language) is expected, why


def test_word_mode_does_not_match_inflections() -> None:
    assert not found("It was refunded.", "refund", "word")
    assert found("A refund is on its way.", "refund", "word")


# -- numbers ---------------------------------------------------------------------------------------------


def test_an_amount_is_one_term() -> None:
    # "23,60" is searched as it is written: found in the total, and not assembled from "23" and "60".
    assert found("Gesamt: 23,60 €", "23,60", "substring")
    assert not found("23 Artikel, 60 Stück", "23,60", "substring")
    assert not found("23 Artikel, 60 Stück", "23,60", "word")


def test_a_substring_amount_is_found_inside_a_bigger_one_a_word_is_not() -> None:
    # "123,60" contains "23,60": substring mode says yes, word mode (whole tokens) says no.
    assert found("Gesamt: 123,60 €", "23,60", "substring")
    assert not found("Gesamt: 123,60 €", "23,60", "word")


# -- case, unicode, whitespace ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "term", "mode", "expected"),
    [
        ("Ihre Lieferadresse: Hauptstraße 5", "HAUPTSTRASSE", "substring", True),  # casefold: ß -> ss
        ("Ihre Lieferadresse: Hauptstraße 5", "hauptstrasse", "word", True),
        ("Ihre Lieferadresse: HAUPTSTRASSE 5", "Hauptstraße", "substring", True),
        # re.IGNORECASE does not fold ß to ss: a regex must spell it out ("stra(ß|ss)e").
        ("Ihre Lieferadresse: Hauptstraße 5", "HAUPTSTRASSE", "regex", False),
        ("Ihre Lieferadresse: Hauptstraße 5", "HAUPTSTRA(ß|SS)E", "regex", True),
        ("YOUR REFUND", "your refund", "substring", True),
        ("YOUR REFUND", "your refund", "word", True),
        ("Order A-17 confirmed", r"order a-\d+", "regex", True),  # regex is case-insensitive too
    ],
)
def test_case_is_ignored(text: str, term: str, mode: str, expected: bool) -> None:
    assert found(text, term, mode) is expected


def test_accents_only_fold_when_asked() -> None:
    assert not found("Treffen im Café", "Cafe", "substring")
    assert found("Treffen im Café", "Cafe", "substring", normalize=("unicode",))
    # Both ways, and for a decomposed é (e + combining accent) as well.
    assert found("Treffen im Cafe", "Café", "substring", normalize=("unicode",))
    assert found("Treffen im Cafe\u0301", "Café", "word", normalize=("unicode",))


def test_line_breaks_only_count_as_spaces_when_asked() -> None:
    text = "Bitte\n  bestätigen Sie die Bestellung."
    assert not found(text, "bitte bestätigen", "substring")
    assert found(text, "bitte bestätigen", "substring", normalize=("whitespace",))
    # Stem mode compares words, so line breaks never mattered there.
    assert found(text, "bitte bestätigen", "stem", language="de")


# -- dates -----------------------------------------------------------------------------------------------

DATE_FORMS = ["1. Dezember 2026", "1 December 2026", "December 1, 2026", "2026-12-01", "1.12.2026", "01/12/2026"]


@pytest.mark.parametrize("written", DATE_FORMS)
def test_dates_match_in_any_form_with_the_dates_normalisation(written: str) -> None:
    assert found(f"Lieferung am {written}.", "01.12.2026", "substring", normalize=("dates",))
    assert found(f"Lieferung am {written}.", "01.12.2026", "word", normalize=("dates",))


@pytest.mark.parametrize("written", [form for form in DATE_FORMS if form != "01/12/2026"])
def test_dates_do_not_match_across_forms_without_it(written: str) -> None:
    assert not found(f"Lieferung am {written}.", "01.12.2026", "substring")


def test_numeric_dates_are_read_day_first() -> None:
    # 01/12/2026 is the first of December here, never January 12th (the suite languages write day first).
    assert normalize("01/12/2026", ["dates"]) == "2026-12-01"


@pytest.mark.parametrize("text", ["32.13.2026", "31.02.2026", "0. Mai 2026", "May 32, 2026"])
def test_impossible_dates_stay_as_written(text: str) -> None:
    # A number that looks like a date but is none (a code, a typo) is not turned into something else.
    assert normalize(text, ["dates"]) == text


def test_month_names_survive_accent_folding() -> None:
    # unicode runs before dates, so "März" arrives as "Marz" and must still be read as March.
    assert normalize("3. März 2026", ["unicode", "dates"]) == "2026-03-03"


# -- evidence quotes the original text -------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "term", "mode", "normalizations", "quoted"),
    [
        # The date was matched as "2026-12-03"; the evidence shows what the agent wrote.
        ("Wir liefern am 3 December 2026 aus.", "03.12.2026", "substring", ("dates",), "3 December 2026"),
        ("Wir liefern am 3. Dezember 2026 aus.", "2026-12-03", "word", ("dates",), "3. Dezember 2026"),
        # Casefolding makes "ß" two characters: the offsets after it must not shift.
        ("Große Straße, Lieferung bestätigt", "bestätigt", "substring", (), "bestätigt"),
        ("Große Straße 5", "STRASSE", "word", (), "Straße"),
        # Collapsed line breaks are quoted as they were.
        ("Bitte\n\n  bestätigen", "bitte bestätigen", "substring", ("whitespace",), "Bitte\n\n  bestätigen"),
        # A folded accent: the excerpt keeps the accent, including a combining one.
        ("im Cafe\u0301 um 9", "cafe", "substring", ("unicode",), "Cafe\u0301"),
        ("Drei Antwortentwürfe liegen bereit", "Entwurf", "stem", (), "Antwortentwürfe"),
        ("Paid 12.01.2026, shipped 1 Feb 2026", r"2026-02-0\d", "regex", ("dates",), "1 Feb 2026"),
    ],
)
def test_the_match_maps_back_to_the_original_text(
    text: str, term: str, mode: str, normalizations: tuple[str, ...], quoted: str
) -> None:
    hit = find_term(text, term, mode, language="de", normalizations=normalizations)
    assert hit.found
    assert hit.span is not None
    assert text[hit.span[0] : hit.span[1]] == quoted
    assert quoted in hit.excerpt


def test_the_excerpt_is_the_original_text_around_the_match() -> None:
    text = "Guten Tag! " * 5 + "Ihre Lieferung kommt am 3 December 2026 bei Ihnen an. " + "Danke! " * 6
    hit = find_term(text, "2026-12-03", "substring", normalizations=("dates", "whitespace"))
    # 30 original characters either side of the original date, not of its ISO form.
    assert hit.excerpt == "… Tag! Ihre Lieferung kommt am 3 December 2026 bei Ihnen an. Danke! Danke! D…"
    assert "2026-12-03" not in hit.excerpt


def test_check_keywords_quotes_the_original_text_as_evidence() -> None:
    view = ConversationView(replies=[AgentEvent(turn=1, messages=["Zustellung am 3. Dezember 2026."])], language="de")
    checks = KeywordChecks.model_validate(
        {"must_contain": [{"term": "03.12.2026", "normalize": ["dates"]}], "must_not_contain": ["gesendet"]}
    )
    contain, forbid = check_keywords(checks, view)
    assert contain.verdict == "met"
    assert contain.evidence == "found '03.12.2026' in “Zustellung am 3. Dezember 2026.”"
    assert forbid.verdict == "met"


def test_an_empty_regex_match_has_a_point_span() -> None:
    hit = find_term("abc", "x*$", "regex")
    assert (hit.found, hit.span) == (True, (3, 3))


def test_an_unknown_mode_is_an_error() -> None:
    with pytest.raises(ValueError, match="unknown match mode"):
        find_term("text", "t", "fuzzy")
