"""A reply cut into what the claim check reads: sentences, their clauses, and words with their place in the text.

Words are compared folded (see :func:`~simulator.judges._inflect.fold`); each keeps where it stands in the
reply, so a finding quotes the reply as written. Contractions are split the way the word lists write them:
"I've" -> "i" + "'ve", "haven't" -> "have" + "n't", "can't" -> "can" + "n't".
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from simulator.judges._inflect import fold

_WORD = re.compile(r"\w+(?:['\-]\w+)*|'\w+", re.UNICODE)
# A sentence ends at "!" or "?", or at "." unless a digit stands before it ("am 24.12. bis", "3. Mai"), where
# it is part of a date or number more often than an end; and at a line break.
_SENTENCE_END = re.compile(r"[!?]+(?=\s|$)|(?<!\d)\.+(?=\s|$)|\n+")
_CLAUSE_BREAK = re.compile(r"[,;:()\[\]\"“”„«»–—]|\s-\s")
_NEGATED_HEADS = {"ca": "can", "wo": "will", "sha": "shall"}
#: A numeric date or year: "01.12.", "3.5.2026", "2026-12-01", "12/03", "2026".
DATE = re.compile(r"\b\d{1,2}\.\d{1,2}\.|\b\d{4}-\d{2}-\d{2}\b|\b\d{1,2}/\d{1,2}\b|\b(?:19|20)\d{2}\b")


@dataclass(frozen=True)
class Word:
    """A word of a reply: ``key`` folded for comparing, ``start``/``end`` its place in the reply."""

    key: str
    start: int
    end: int


@dataclass(frozen=True)
class Clause:
    """A stretch of a sentence between punctuation: the words a claim's frame must stand in."""

    words: tuple[Word, ...]
    text: str


@dataclass(frozen=True)
class Sentence:
    """A sentence of a reply (its ``text`` as written) and its clauses, in order."""

    text: str
    start: int
    question: bool
    clauses: tuple[Clause, ...]

    @property
    def words(self) -> tuple[Word, ...]:
        """Every word of the sentence, clause after clause."""
        return tuple(word for clause in self.clauses for word in clause.words)


def words(text: str, offset: int = 0) -> list[Word]:
    """The words of ``text``, contractions split, each placed at ``offset`` + its position."""
    found: list[Word] = []
    for match in _WORD.finditer(text):
        raw, start = match.group(0), offset + match.start()
        lowered = raw.lower()
        apostrophe = lowered.find("'")
        if lowered.endswith("n't") and len(lowered) > 3:
            head = lowered[:-3]
            found.append(Word(fold(_NEGATED_HEADS.get(head, head)), start, start + len(head)))
            found.append(Word("n't", start + len(head), start + len(raw)))
        elif apostrophe > 0:
            found.append(Word(fold(lowered[:apostrophe]), start, start + apostrophe))
            found.append(Word(fold(lowered[apostrophe:]), start + apostrophe, start + len(raw)))
        else:
            found.append(Word(fold(lowered), start, start + len(raw)))
    return found


def sentences(text: str) -> list[Sentence]:
    """The sentences of a reply, each with its clauses; a sentence ending in "?" is marked a question."""
    found: list[Sentence] = []
    start = 0
    for end_match in [*_SENTENCE_END.finditer(text), None]:
        end = end_match.end() if end_match is not None else len(text)
        raw = text[start:end]
        if raw.strip():
            found.append(_sentence(raw, start))
        start = end
    return found


def _sentence(raw: str, offset: int) -> Sentence:
    clauses: list[Clause] = []
    position = 0
    for piece in [*_CLAUSE_BREAK.finditer(raw), None]:
        stop = piece.start() if piece is not None else len(raw)
        part = raw[position:stop]
        clause_words = tuple(words(part, offset + position))
        if clause_words:
            clauses.append(Clause(clause_words, part))
        position = piece.end() if piece is not None else len(raw)
    stripped = raw.strip()
    return Sentence(stripped, offset + raw.find(stripped[:1]), stripped.endswith("?"), tuple(clauses))
