"""The word lists of the claim check (``claim_words/*.yaml``, one file per language) and what is built from them.

Each file is read into :class:`ClaimWords` (unknown keys are errors, placed in the file), and all of them into
one :class:`Lexicon`: every language is applied to every reply, because an agent may answer in another
language than the suite's. Adding a language is adding a file (``inflection`` says whose rules inflect it).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import cache
from importlib import resources
from typing import Literal

from pydantic import Field

from simulator.judges._claim_text import Word, words
from simulator.judges._inflect import VerbForms, english_plural, english_verb, fold, german_verb
from simulator.models import StrictModel

#: What a verb claims: an ``action`` changes something, a ``lookup`` reads something, ``find`` is a lookup's
#: result (a negation does not take it back), ``use`` a tool of unknown kind was used.
Sense = Literal["action", "lookup", "find", "use"]
Phrase = tuple[frozenset[str] | None, ...]  # None: up to GAP words
GAP = 6


class ClaimWords(StrictModel):
    """One language's word lists (see the comments in ``claim_words/en.yaml`` for what each list does)."""

    language: str
    inflection: Literal["english", "german"]
    first_person: list[str]
    perfect_auxiliaries: list[str]
    did_auxiliaries: list[str] = Field(default_factory=list)
    gap: int = Field(ge=0, le=GAP)
    passive_auxiliaries: list[str]
    passive_after: list[str] = Field(default_factory=list)
    state_auxiliaries: list[str]
    state_adverbs: list[str]
    adverbs: list[str]
    conjunctions: list[str]
    negations: list[str]
    modals: list[str]
    conditionals: list[str]
    report_markers: list[str]
    self_references: list[str]
    time_words: list[str]
    admissions: list[str]
    action_verbs: list[str]
    lookup_verbs: list[str]
    finding_verbs: list[str]
    finding_exceptions: list[str] = Field(default_factory=list)
    action_tool_words: list[str]
    lookup_tool_words: list[str]
    tool_stopwords: list[str]
    optional_tool_words: list[str]
    separable_prefixes: list[str] = Field(default_factory=list)
    inseparable_prefixes: list[str] = Field(default_factory=list)
    irregular: dict[str, list[str]] = Field(default_factory=dict)
    nouns: dict[str, list[str]] = Field(default_factory=dict)
    equivalents: list[list[str]] = Field(default_factory=list)
    translations: dict[str, list[str]] = Field(default_factory=dict)
    lookup_nouns: list[str]
    result_verbs: list[str]
    according: list[str]
    determiners: list[str]
    absence: list[str]
    absence_exceptions: list[str]
    completion: list[str]

    def inflect(self, verb: str) -> tuple[VerbForms, str | None]:
        """A verb's forms by this language's rules, and its particle ("look up" -> forms of "look", "up")."""
        head, _, particle = verb.partition(" ")
        if self.inflection == "english":
            return english_verb(head, self.irregular, {head: self.nouns.get(verb, [])}), fold(particle) or None
        forms = german_verb(
            verb,
            separable=self.separable_prefixes,
            inseparable=self.inseparable_prefixes,
            irregular=self.irregular,
            nouns=self.nouns,
        )
        return forms, None


@dataclass(frozen=True)
class Meaning:
    """What a word form says: the verb it is a form of, what that verb claims, and the particle it needs."""

    verb: str
    sense: Sense
    particle: str | None = None


@dataclass
class VerbIndex:
    """Verb forms to their meanings: ``past`` (claims), ``present`` (after "did"), ``nouns`` (completion)."""

    past: dict[str, list[Meaning]] = field(default_factory=dict)
    present: dict[str, list[Meaning]] = field(default_factory=dict)
    nouns: dict[str, list[Meaning]] = field(default_factory=dict)

    def add(self, forms: VerbForms, meaning: Meaning) -> None:
        """Index the forms of one verb under one meaning."""
        for table, keys in ((self.past, forms.past), (self.present, forms.present), (self.nouns, forms.nouns)):
            for key in keys:
                if meaning not in table.setdefault(key, []):
                    table[key].append(meaning)

    def merged(self, other: VerbIndex) -> VerbIndex:
        """This index with another's meanings added (the tool set's verbs on top of the word lists')."""
        result = VerbIndex()
        for index in (self, other):
            for table, theirs in ((result.past, index.past), (result.present, index.present),
                                  (result.nouns, index.nouns)):  # fmt: skip
                for key, meanings in theirs.items():
                    mine = table.setdefault(key, [])
                    mine.extend(meaning for meaning in meanings if meaning not in mine)
        return result


@dataclass(frozen=True, eq=False)
class Lexicon:
    """Every language's word lists, folded and merged, with the generic verbs indexed."""

    languages: tuple[ClaimWords, ...]
    verbs: VerbIndex
    first_person: frozenset[str]
    #: An auxiliary and how many other words may stand between it and the verb (its language's ``gap``).
    perfect: Mapping[str, int]
    did: frozenset[str]
    passive: Mapping[str, int]
    passive_after: frozenset[str]
    state: Mapping[str, int]
    state_adverbs: frozenset[str]
    adverbs: frozenset[str]
    conjunctions: frozenset[str]
    negations: frozenset[str]
    modals: frozenset[str]
    time_words: frozenset[str]
    completion: frozenset[str]
    finding_exceptions: frozenset[str]
    determiners: frozenset[str]
    result_verbs: frozenset[str]
    lookup_nouns: frozenset[str]
    tool_stopwords: frozenset[str]
    optional_tool_words: frozenset[str]
    #: A word of a tool's name or description that tells the tool's kind.
    tool_kinds: Mapping[str, Literal["action", "lookup"]]
    #: Verbs that name each other: a folded verb -> the folded verbs of its group.
    equivalents: Mapping[str, frozenset[str]]
    #: Verbs that mean the same in another language, both ways: "stornieren" <-> "cancel".
    translations: Mapping[str, frozenset[str]]
    conditionals: Phrases
    report_markers: Phrases
    self_references: Phrases
    admissions: Phrases
    according: Phrases
    absence: Phrases
    absence_exceptions: Phrases


def phrase(text: str) -> Phrase:
    """A phrase of a word list as slots: words (a slot of "a|b" is either), "..." a gap of up to six words."""
    slots: list[frozenset[str] | None] = []
    for part in text.split():
        if part == "...":
            slots.append(None)
        elif "|" in part:
            slots.append(frozenset(word.key for choice in part.split("|") for word in words(choice)))
        else:
            slots.extend(frozenset({word.key}) for word in words(part))
    return tuple(slots)


class Phrases:
    """Phrases compiled into one pattern over a clause's folded words, written one after another with a space
    after each: the leftmost place where any of them stands is one search."""

    def __init__(self, phrases: Iterable[Phrase]) -> None:
        alternatives = ["".join(_slot_pattern(slot) for slot in slots) for slots in phrases if slots]
        self._pattern = re.compile("(?<![^ ])(?:" + "|".join(alternatives) + ")") if alternatives else None

    def find(self, found: Sequence[Word]) -> tuple[int, int] | None:
        """The first place (index of its first and last word) where one of the phrases stands in ``found``."""
        if self._pattern is None or not found:
            return None
        text = "".join(word.key + " " for word in found)
        match = self._pattern.search(text)
        if match is None:
            return None
        return text.count(" ", 0, match.start()), text.count(" ", 0, match.end()) - 1


def _slot_pattern(slot: frozenset[str] | None) -> str:
    if slot is None:
        return f"(?:[^ ]+ ){{0,{GAP}}}"
    return "(?:" + "|".join(re.escape(word) for word in sorted(slot, key=len, reverse=True)) + ") "


def noun_forms(language: ClaimWords, noun: str) -> frozenset[str]:
    """A noun with its plural and case endings, by the language's rules: "record" -> records; "Abfrage" ->
    Abfragen. Endings are only added, never taken off: "result" of "results" (as in "as a result") and "date"
    of "Daten" are other words."""
    word = fold(noun)
    if language.inflection == "english":
        return frozenset({word, english_plural(word)})
    return frozenset(word + ending for ending in ("", "e", "n", "en", "s", "es"))


@cache
def lexicon() -> Lexicon:
    """The word lists shipped in ``simulator/judges/claim_words/``, read once per process."""
    from simulator.loading import load_model_file

    folder = resources.files("simulator.judges").joinpath("claim_words")
    languages = []
    for entry in sorted(folder.iterdir(), key=lambda item: item.name):
        if entry.name.endswith(".yaml"):
            with resources.as_file(entry) as path:
                languages.append(load_model_file(path, ClaimWords))
    return build_lexicon(languages)


def build_lexicon(languages: Sequence[ClaimWords]) -> Lexicon:
    """One lexicon from the word lists of several languages."""
    verbs = VerbIndex()
    tool_kinds: dict[str, Literal["action", "lookup"]] = {}
    equivalents: dict[str, frozenset[str]] = {}
    translations: dict[str, frozenset[str]] = {}
    for words_ in languages:
        for sense, listed in (("action", words_.action_verbs), ("lookup", words_.lookup_verbs),
                              ("find", words_.finding_verbs)):  # fmt: skip
            for verb in listed:
                forms, particle = words_.inflect(verb)
                verbs.add(forms, Meaning(fold(verb), sense, particle))  # type: ignore[arg-type]
                kind: Literal["action", "lookup"] = "action" if sense == "action" else "lookup"
                for key in {fold(verb).replace(" ", ""), *forms.present, *forms.nouns}:
                    tool_kinds.setdefault(key, kind)
        for word in words_.action_tool_words:
            tool_kinds.setdefault(fold(word), "action")
        for word in words_.lookup_tool_words:
            tool_kinds.setdefault(fold(word), "lookup")
        for group in words_.equivalents:
            members = frozenset(fold(verb).replace(" ", "") for verb in group)
            for verb in members:
                equivalents[verb] = equivalents.get(verb, frozenset()) | members
        for verb, meanings in words_.translations.items():
            for meaning in meanings:
                translations[fold(verb)] = translations.get(fold(verb), frozenset()) | {fold(meaning)}
                translations[fold(meaning)] = translations.get(fold(meaning), frozenset()) | {fold(verb)}

    def folded(name: str) -> frozenset[str]:
        return frozenset(fold(word) for lang in languages for word in getattr(lang, name))

    def gaps(name: str) -> dict[str, int]:
        return {fold(word): lang.gap for lang in languages for word in getattr(lang, name)}

    def phrases(name: str) -> Phrases:
        return Phrases(phrase(text) for lang in languages for text in getattr(lang, name))

    return Lexicon(
        languages=tuple(languages),
        verbs=verbs,
        first_person=folded("first_person"),
        perfect={**gaps("perfect_auxiliaries"), **dict.fromkeys(folded("did_auxiliaries"), 0)},
        did=folded("did_auxiliaries"),
        passive=gaps("passive_auxiliaries"),
        passive_after=folded("passive_after"),
        state=gaps("state_auxiliaries"),
        state_adverbs=folded("state_adverbs"),
        adverbs=folded("adverbs"),
        conjunctions=folded("conjunctions"),
        negations=folded("negations"),
        modals=folded("modals"),
        time_words=folded("time_words"),
        completion=folded("completion"),
        finding_exceptions=folded("finding_exceptions"),
        determiners=folded("determiners"),
        result_verbs=folded("result_verbs"),
        lookup_nouns=frozenset(
            form for lang in languages for noun in lang.lookup_nouns for form in noun_forms(lang, noun)
        ),
        tool_stopwords=folded("tool_stopwords"),
        optional_tool_words=folded("optional_tool_words"),
        tool_kinds=tool_kinds,
        equivalents=equivalents,
        translations=translations,
        conditionals=phrases("conditionals"),
        report_markers=phrases("report_markers"),
        self_references=phrases("self_references"),
        admissions=phrases("admissions"),
        according=phrases("according"),
        absence=phrases("absence"),
        absence_exceptions=phrases("absence_exceptions"),
    )
