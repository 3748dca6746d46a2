"""The agent's tools as the claim check sees them: their kind, the words that name them, the verbs they add.

A tool's name is split into words (``block_card`` -> block, card; ``feiertageAbrufen`` -> feiertage, abrufen).
Its kind comes from an explicit override (``kind:`` of the tool's declaration), else from the first word of its
name that the word lists know (``block`` is an action, ``get``/``abrufen`` a lookup); when the name has words of
neither kind or of both ("refund_status"), its description's first or last word decides ("Get the status of a
refund", "Eine Bestellung erstatten"); else it is ``unknown`` (it backs any claim, as every tool did before).
Its verb (the word that told its kind; failing that, a German name's last word in -en, an English name's
first) is inflected by every language's rules and becomes a claim verb; every word gets the forms that name it
(block, blocked, blocking, blocks; Feiertage, Feiertags; abgerufen, Abruf, Abfrage) and, for compounds, the
stems a word can contain ("Feiertagsabruf" holds feiertag + abruf).

Everything here is built once per tool set (:func:`vocabulary` caches it by the tuple of tools).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from functools import cache, lru_cache
from typing import Literal

from simulator.judges._claim_text import words
from simulator.judges._claim_words import Lexicon, Meaning, Sense, VerbIndex, lexicon
from simulator.judges._inflect import VerbForms, english_noun, fold, german_noun, noun_stem

ToolKind = Literal["action", "lookup", "unknown"]
#: A tool as the check gets it: name, description, and the kind it declares (None: derive it).
ToolEntry = tuple[str, str, ToolKind | None]

_NAME_PARTS = re.compile(r"[A-Z]?[a-z\u00df-\u00ff]+|[A-Z]+(?![a-z])|\d+")
_MIN_PART = 3  # shorter name parts ("to", "of", "id") name nothing
_MIN_STEM = 4
_SENSE_OF_KIND: dict[ToolKind, Sense] = {"action": "action", "lookup": "lookup", "unknown": "use"}


@dataclass(frozen=True)
class Part:
    """A word of a tool's name: the words that name it (``forms``) and the stems a compound may contain."""

    word: str
    forms: frozenset[str]
    stems: frozenset[str]
    optional: bool
    verb: bool


@dataclass(frozen=True)
class Tool:
    """A tool's kind and the words of its name."""

    name: str
    kind: ToolKind
    parts: tuple[Part, ...]

    def named_by(self, keys: frozenset[str]) -> bool:
        """Whether a clause with these (folded) words names this tool: every required word of its name is in
        it, as one of its forms or inside a compound that holds two of them ("Feiertagsabfrage"), and at
        least two of them are (one for a one-word name)."""
        if not self.parts:
            return False
        matched = {index for index, part in enumerate(self.parts) if part.forms & keys}
        for key in keys:
            if len(key) >= 2 * _MIN_STEM:
                inside = {index for index, part in enumerate(self.parts) if any(stem in key for stem in part.stems)}
                if len(inside) >= 2:
                    matched |= inside
        required = {index for index, part in enumerate(self.parts) if not part.optional}
        return required <= matched and len(matched) >= min(2, len(self.parts))

    def does(self, verb: str) -> bool:
        """Whether ``verb`` (a folded word of a claim) is a form of this tool's verb, or it has none."""
        verbs = [part for part in self.parts if part.verb]
        return not verbs or any(verb in part.forms for part in verbs)


@dataclass(frozen=True)
class Vocabulary:
    """The word lists with a tool set's words added: what the claim finder and the backing rule read."""

    lexicon: Lexicon
    verbs: VerbIndex
    tools: tuple[Tool, ...]
    #: Nouns of lookups (the word lists' and the lookup tools' own: "abruf" of feiertage_abrufen).
    lookup_nouns: frozenset[str]
    #: A compound ending in one of them: "liefersystem", "feiertagsabfrage".
    lookup_compound: re.Pattern[str]

    def kind_of(self, name: str) -> ToolKind:
        """The kind of a called tool: as declared, or derived from its name alone."""
        for tool in self.tools:
            if tool.name == name:
                return tool.kind
        return _undeclared(name).kind

    def is_lookup_noun(self, key: str) -> bool:
        """A lookup noun, or a compound ending in one ("liefersystem", "feiertagsabfrage")."""
        return key in self.lookup_nouns or self.lookup_compound.search(key) is not None


def name_parts(name: str) -> list[str]:
    """A tool name's words: snake_case, kebab-case and camelCase split, folded."""
    return [fold(part) for piece in re.split(r"[_\-\s.]+", name) for part in _NAME_PARTS.findall(piece)]


@lru_cache(maxsize=64)
def vocabulary(tools: tuple[ToolEntry, ...]) -> Vocabulary:
    """The vocabulary of a tool set (cached: the check runs on every agent turn with the same tools)."""
    lex = lexicon()
    described = tuple(_describe(name, description, kind, lex) for name, description, kind in tools)
    added = VerbIndex()
    lookup_nouns = set(lex.lookup_nouns)
    for tool in described:
        for part in tool.parts:
            if part.verb and part.word not in lex.tool_stopwords:
                forms = _verb_forms(part.word, lex)
                added.add(forms, Meaning(part.word, _SENSE_OF_KIND[tool.kind]))
                if tool.kind == "lookup":
                    lookup_nouns |= {noun for noun in forms.nouns if len(noun) >= _MIN_STEM}
    heads = sorted((noun for noun in lookup_nouns if len(noun) >= _MIN_STEM), key=len, reverse=True)
    compound = re.compile(f"^.{{{_MIN_STEM - 1},}}(?:{'|'.join(map(re.escape, heads))})$")
    return Vocabulary(lex, lex.verbs.merged(added), described, frozenset(lookup_nouns), compound)


@cache
def reported_forms(verb: str) -> frozenset[str]:
    """The past forms of a listed verb (folded) and of its translations: the words a tool's result uses for the
    state it reports ("cancelled", "storniert" for "stornieren")."""
    lex = lexicon()
    return frozenset(form for each in {verb, *lex.translations.get(verb, ())} for form in _verb_forms(each, lex).past)


@cache
def _undeclared(name: str) -> Tool:
    return _describe(name, "", None, lexicon())


def tool_words(name: str, description: str = "") -> frozenset[str]:
    """Every word that names a part of the tool (for the documentation and tests of what a tool adds)."""
    tool = _describe(name, description, None, lexicon())
    return frozenset(form for part in tool.parts for form in part.forms)


def _describe(name: str, description: str, kind: ToolKind | None, lex: Lexicon) -> Tool:
    raw = [part for part in name_parts(name) if len(part) >= _MIN_PART]
    parts = [part for part in raw if part not in lex.tool_stopwords or part in lex.optional_tool_words]
    verb_at, found = _kind_from(parts, lex)
    described = [word.key for word in words(description)]
    if found is None or _conflicting(parts, lex):
        # A name of both kinds ("refund_status") or of neither: the description's verb decides, which stands
        # first in English ("Get the status of a refund") and last in German ("Eine Bestellung erstatten").
        _, from_description = _kind_from(described[:1] + described[-1:], lex)
        found = from_description or found
        if found is not None:
            verb_at = next((at for at, part in enumerate(parts) if lex.tool_kinds.get(part) == found), verb_at)
    if verb_at is None and len(parts) >= 2:
        # No word the lists know: German names end in the verb (feiertage_abrufen), English ones start with it.
        verb_at = len(parts) - 1 if parts[-1].endswith("en") else 0
    alternatives = _description_verbs(description, kind or found, lex)
    built = tuple(
        _part(word, lex, verb=index == verb_at, optional=word in lex.optional_tool_words, extra=alternatives)
        for index, word in enumerate(parts)
    )
    return Tool(name, kind or found or "unknown", built)


def _kind_from(candidates: Iterable[str], lex: Lexicon) -> tuple[int | None, Literal["action", "lookup"] | None]:
    for index, word in enumerate(candidates):
        if word in lex.tool_kinds:
            return index, lex.tool_kinds[word]
    return None, None


def _conflicting(parts: Sequence[str], lex: Lexicon) -> bool:
    return len({lex.tool_kinds[part] for part in parts if part in lex.tool_kinds}) > 1


def _description_verbs(description: str, kind: ToolKind | None, lex: Lexicon) -> tuple[str, ...]:
    """The verbs of a tool's description that are of its kind ("Blocks (freezes) a card" -> block, freeze)."""
    found: list[str] = []
    if kind is None or kind == "unknown":
        return ()
    for word in words(description):
        for meaning in lex.verbs.present.get(word.key, ()):
            same = (meaning.sense == "action") == (kind == "action")
            if same and meaning.verb not in found:
                found.append(meaning.verb)
    return tuple(found)


def _part(word: str, lex: Lexicon, *, verb: bool, optional: bool, extra: tuple[str, ...]) -> Part:
    if not verb:
        noun_stems = frozenset(stem for stem in {noun_stem(word), *english_noun(word)} if len(stem) >= _MIN_STEM)
        return Part(word, english_noun(word) | german_noun(word), noun_stems, optional, verb=False)
    verbs = {word, *lex.equivalents.get(word, ()), *(fold(v).replace(" ", "") for v in extra)}
    forms = VerbForms(past=frozenset(), present=frozenset(), nouns=frozenset())
    for each in verbs:
        forms = forms | _verb_forms(each, lex)
    named = forms.past | forms.present | forms.nouns | {word}
    stems = {noun for noun in forms.nouns | {noun_stem(word)} if len(noun) >= _MIN_STEM}
    return Part(word, frozenset(named), frozenset(stems), optional, verb=True)


@cache
def _verb_forms(verb: str, lex: Lexicon) -> VerbForms:
    """A verb's forms by every language's rules (a tool name does not say its language), with the word lists'
    own forms of it (irregulars, nouns) when it is one of theirs. A verb with a particle ("look up") is taken
    as the one word a name writes ("lookup"): "looked" alone does not name lookup_order."""
    forms = VerbForms(past=frozenset(), present=frozenset(), nouns=frozenset())
    for language in lex.languages:
        listed = [*language.action_verbs, *language.lookup_verbs, *language.finding_verbs]
        spelled = next((v for v in listed if fold(v) == verb), verb)
        inflected, _ = language.inflect(spelled)
        forms = forms | inflected
    return forms
