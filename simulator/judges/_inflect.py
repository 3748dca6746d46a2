"""A small inflector for the claim check: the forms an English or German verb or noun takes in a reply.

It generates forms instead of reducing words to stems, so the claim check compares plain words: "block" gives
block, blocks, blocked, blocking; "sperren" gives gesperrt, sperrte, Sperre, Sperrung. It has no dictionary:
it over-generates (both "cancelled" and "canceled", both "abgeruft" and "abgerufen") because a form that no
one writes costs nothing, and it leaves vowel changes ("gefunden", "frozen") to the word lists' ``irregular``
entries. Every form is folded (:func:`fold`): lower case, "ä" as "ae", "ß" as "ss", no hyphens, so "prüfen",
"pruefen" and "PRÜFEN" are one word, as tool names (ASCII identifiers) write them.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

_FOLDS = str.maketrans({"ä": "ae", "ö": "oe", "ü": "ue", "ß": "ss", "-": "", "’": "'"})
_VOWELS = set("aeiou")
#: A German weak participle of a stem ending so takes "-et": "erstattet", "gesendet", "geöffnet".
_ET_ENDINGS = ("t", "d", "chn", "ffn", "dm", "gn", "tm")
#: German noun endings dropped to find a noun's stem inside a compound: "Feiertage" -> "feiertag".
_NOUN_ENDINGS = ("en", "e", "n", "s")
_MIN_STEM = 4


def fold(word: str) -> str:
    """A word as the claim check compares it: case-folded, umlauts as two letters, no hyphens."""
    return word.casefold().translate(_FOLDS)


def english_verb(
    base: str, irregular: Mapping[str, Iterable[str]] | None = None, nouns: Mapping[str, Iterable[str]] | None = None
) -> VerbForms:
    """The forms of an English verb: ``block`` -> blocked (past), block/blocks (present), blocking, block (noun).

    Past forms add "-ed" ("-d" after "e", "-ied" after a consonant and "y") and, because spelling doubles the
    last consonant of many short verbs ("stopped", British "cancelled"), also the doubled form. An irregular
    verb's forms come from ``irregular``, also for a prefixed verb: "resend" gets "resent" from "send"."""
    word = fold(base)
    present = {word, english_plural(word)}
    past = {word + "d"} if word.endswith("e") else {word + "ed"}
    ing = {word[:-1] + "ing"} if word.endswith("e") and not word.endswith("ee") else {word + "ing"}
    if len(word) > 2 and word[-1] not in _VOWELS | {"w", "x", "y"} and word[-2] in _VOWELS:
        past.add(word + word[-1] + "ed")
        ing.add(word + word[-1] + "ing")
    if len(word) > 1 and word.endswith("y") and word[-2] not in _VOWELS:
        past = {word[:-1] + "ied"}
    for listed, forms in (irregular or {}).items():
        known = fold(listed)
        if word == known or (word.endswith(known) and len(word) - len(known) in (2, 3)):
            past |= {word[: len(word) - len(known)] + fold(form) for form in forms}
    extra = {fold(noun) for noun in (nouns or {}).get(base, ())}
    return VerbForms(past=frozenset(past), present=frozenset(present), nouns=frozenset({word, *ing, *extra}))


def english_plural(word: str) -> str:
    """A noun's plural, or a verb's third person: "search" -> searches, "query" -> queries."""
    word = fold(word)
    if word.endswith(("s", "sh", "ch", "x", "z")):
        return word + "es"
    if len(word) > 1 and word.endswith("y") and word[-2] not in _VOWELS:
        return word[:-1] + "ies"
    return word + "s"


def english_noun(word: str) -> frozenset[str]:
    """Singular and plural of an English noun, either given: "holidays" -> holiday, holidays."""
    word = fold(word)
    forms = {word, english_plural(word)}
    if word.endswith("ies"):
        forms.add(word[:-3] + "y")
    elif word.endswith("es"):
        forms |= {word[:-2], word[:-1]}
    elif word.endswith("s"):
        forms.add(word[:-1])
    return frozenset(forms)


def german_verb(
    infinitive: str,
    *,
    separable: Iterable[str],
    inseparable: Iterable[str],
    irregular: Mapping[str, Iterable[str]] | None = None,
    nouns: Mapping[str, Iterable[str]] | None = None,
) -> VerbForms:
    """The forms of a German verb, from its infinitive.

    Past forms are the participles and the weak preterite: ``sperren`` -> gesperrt, sperrte; ``stornieren`` ->
    storniert (no "ge-" for "-ieren" verbs and after an inseparable prefix: ``bezahlen`` -> bezahlt); a
    separable prefix goes in front of the "ge-": ``abrufen`` -> abgerufen, ``nachsehen`` -> nachgesehen. A
    prefix that is separable or not ("durch", "über") gives both: durchsucht, durchgesucht. Nouns are the
    stem, stem + "e" and stem + "ung": Abruf, Abfrage, Sperre, Sperrung, Stornierung."""
    word = fold(infinitive)
    past: set[str] = set()
    nouns_found: set[str] = {fold(noun) for noun in (nouns or {}).get(infinitive, ())}
    splits = [("", word)] + [(p, word[len(p) :]) for p in map(fold, separable) if word.startswith(p)]
    inseparable = tuple(map(fold, inseparable))
    folded_irregular = {fold(k): [fold(v) for v in vs] for k, vs in (irregular or {}).items()}
    for prefix, rest in splits:
        if len(rest) < 3:
            continue
        stem = rest[:-2] if rest.endswith("en") else rest[:-1] if rest.endswith("n") else rest
        plain = rest.endswith("ieren") or rest.startswith(inseparable)
        ge = "" if plain else "ge"
        weak = stem + ("et" if stem.endswith(_ET_ENDINGS) else "t")
        past.add(prefix + ge + weak)
        if not prefix:  # the preterite: "sperrte" (a separable verb's, "rief ... ab", stands apart)
            past |= {stem + "te", stem + "ten", stem + "ete"}
        if prefix or ge:
            past.add(prefix + ge + rest)  # the strong participle, "abgerufen" (without "ge-" it is the infinitive)
        if prefix:
            past.add(prefix + weak)  # "durchsucht": the prefix is not separated after all
        for base, forms in folded_irregular.items():
            if rest == base or rest.endswith(base):
                head = rest[: len(rest) - len(base)]
                for form in forms:
                    past.add(prefix + head + (form[2:] if (head or plain) and form.startswith("ge") else form))
        nouns_found |= {prefix + stem, prefix + stem + "e", prefix + stem + "ung"}
    stem = word[:-2] if word.endswith("en") else word[:-1] if word.endswith("n") else word
    present = {word, stem + ("et" if stem.endswith(_ET_ENDINGS) else "t")}  # "sperrt": a description's verb
    return VerbForms(past=frozenset(past), present=frozenset(present), nouns=frozenset(nouns_found))


def german_noun(word: str) -> frozenset[str]:
    """A German noun with the endings of its plural and cases: "Feiertag" -> Feiertage, Feiertagen, Feiertags."""
    stem = noun_stem(word)
    return frozenset({fold(word), stem, *(stem + ending for ending in ("e", "en", "n", "s", "es", "er"))})


def noun_stem(word: str) -> str:
    """A noun without its German plural or case ending, kept at least four letters: "Feiertage" -> "feiertag"."""
    word = fold(word)
    for ending in _NOUN_ENDINGS:
        if word.endswith(ending) and len(word) - len(ending) >= _MIN_STEM:
            return word[: -len(ending)]
    return word


class VerbForms:
    """A verb's forms: ``past`` (participles and preterite: what a claim of having done it uses), ``present``
    (the base form among them: "did not find") and ``nouns`` (the noun the verb forms: "refund", "Sperrung")."""

    __slots__ = ("nouns", "past", "present")

    def __init__(self, *, past: frozenset[str], present: frozenset[str], nouns: frozenset[str]) -> None:
        self.past = past
        self.present = present
        self.nouns = nouns

    def __or__(self, other: VerbForms) -> VerbForms:
        return VerbForms(
            past=self.past | other.past, present=self.present | other.present, nouns=self.nouns | other.nouns
        )
