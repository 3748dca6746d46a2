"""Finding the claims in a reply: the sentences that say a tool did something or returned something.

A claim is a verb of the word lists (or of a tool's name) in a frame that states it happened, inside one clause
of a sentence that is not a question and has no condition before it ("once", "wenn", ...):

* an **action** (a verb that changes something): first person perfect or past ("I have blocked", "we
  cancelled", "Ihre Karte habe ich gesperrt"), a passive ("has been paid", "wurde storniert", "ist gesperrt
  worden"), a state with "now" ("is now frozen", "ist jetzt gesperrt"), or a completion of its noun ("Your
  refund is complete", "Die Stornierung ist abgeschlossen"). A negated action is no claim ("I have not
  blocked"), nor is a passive action dated in the past ("was cancelled on 3 May" reads a record);
* a **result**: the same frames with a lookup verb ("I've checked", "ich habe nachgesehen") or a finding verb
  ("I found no ...", "habe ich keine ... gefunden": a negation does not take a finding back), a lookup noun
  with a result verb ("the lookup shows", "Der Feiertagsabruf ... liefert"), "according to"/"laut" + a lookup
  noun, or an absence in the customer's things ("there are no invoices in your account").

An offer, a plan or a future is never one of these frames ("I can block", "I will block", "soll ich ...?"), and a
modal inside a frame ("I would have cancelled", "ich habe vor, ... zu stornieren") undoes it. A passive or a
state after a report marker in its sentence ("I see that your order has been cancelled", "laut ... wurde")
is a result: it says what a record shows. An action done in the reply itself ("the details below") is none.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

from simulator.judges._claim_text import DATE, Clause, Sentence, Word
from simulator.judges._claim_tools import Vocabulary
from simulator.judges._claim_words import GAP, Meaning, Sense

ClaimKind = Literal["action", "result", "use"]
_KIND: dict[Sense, ClaimKind] = {"action": "action", "lookup": "result", "find": "result", "use": "use"}
_PRIORITY: tuple[Sense, ...] = ("action", "find", "lookup", "use")
_BEFORE_RESULT_VERB = 6  # how far a lookup noun may stand before its result verb
_AFTER_RESULT_VERB = 3  # ... or after it ("liefert der Feiertagsabruf")
_AFTER_ACCORDING = 5
_BEFORE_COMPLETION = 4
_SUBJECT_WORDS = 4  # how far back a quote looks for the determiner of a passive's subject


@dataclass(frozen=True)
class Claim:
    """A claim as written (``text``, at ``start`` in the reply), its kind, its verb as written and as listed
    (``base``, folded), and the folded words of its clause, which say which tool it names. ``reported``: a
    passive or a state ("has been cancelled"), which may report what a record says rather than what the
    agent did; "I have cancelled" is not."""

    text: str
    start: int
    kind: ClaimKind
    verb: str
    base: str
    clause: frozenset[str]
    reported: bool = False


@dataclass(frozen=True)
class _Found:
    first: int
    last: int
    kind: ClaimKind
    verb: str
    base: str
    reported: bool = False


def find_claims(text: str, parsed: Sequence[Sentence], vocabulary: Vocabulary) -> list[Claim]:
    """Every claim in a reply (``parsed`` its sentences, see :func:`~simulator.judges._claim_text.sentences`),
    in reading order."""
    found: list[Claim] = []
    for sentence in parsed:
        if not sentence.question:
            found.extend(_claims_in(sentence, text, vocabulary))
    return found


def _claims_in(sentence: Sentence, text: str, vocabulary: Vocabulary) -> list[Claim]:
    lex = vocabulary.lexicon
    condition_at = _place(lex.conditionals.find(sentence.words), sentence)
    report_at = _place(lex.report_markers.find(sentence.words), sentence)
    found: list[Claim] = []
    for clause in sentence.clauses:
        own = lex.self_references.find(clause.words) is not None
        for claim in _Clause(clause, vocabulary).claims():
            start = clause.words[claim.first].start
            if (condition_at is not None and condition_at < start) or (own and claim.kind == "action"):
                continue
            kind = claim.kind
            if claim.reported and report_at is not None and report_at < start:
                kind = "result"  # "I see that your order has been cancelled": what the record says
            keys = frozenset(word.key for word in clause.words)
            quote = text[start : clause.words[claim.last].end]
            found.append(Claim(quote, start, kind, claim.verb, claim.base, keys, claim.reported))
    found.sort(key=lambda claim: claim.start)
    return found


def _place(place: tuple[int, int] | None, sentence: Sentence) -> int | None:
    return sentence.words[place[0]].start if place is not None else None


class _Clause:
    """The frames of one clause, each claim found by its first and last word."""

    def __init__(self, clause: Clause, vocabulary: Vocabulary) -> None:
        self.words: Sequence[Word] = clause.words
        self.keys = [word.key for word in clause.words]
        self.vocabulary = vocabulary
        self.lex = vocabulary.lexicon
        self.dated = bool(DATE.search(clause.text)) or any(key in self.lex.time_words for key in self.keys)

    def claims(self) -> list[_Found]:
        found: list[_Found] = []
        subject_at: int | None = None  # where a first-person claim of this clause began, for "... and cancelled"
        for index, key in enumerate(self.keys):
            if key in self.vocabulary.verbs.past or key in self.vocabulary.verbs.present:
                claim = self._verb_claim(index, subject_at)
                if claim is not None:
                    found.append(claim)
                    subject_at = claim.first if self._first_person_at(claim.first) else subject_at
            if key in self.lex.completion:
                found.extend(self._completion(index))
            if key in self.lex.result_verbs:
                found.extend(self._result(index))
        found.extend(self._according())
        found.extend(self._absence())
        return found

    # -- verbs in a frame -------------------------------------------------------------------------------------

    def _verb_claim(self, index: int, subject_at: int | None) -> _Found | None:
        key = self.keys[index]
        past = self._meaning(self.vocabulary.verbs.past.get(key, ()), index)
        present = self._meaning(self.vocabulary.verbs.present.get(key, ()), index)
        for meaning, frames in ((past, (self._perfect, self._simple_past, self._passive, self._state)),
                                (present, (self._did,))):  # fmt: skip
            if meaning is None:
                continue
            for frame in frames:
                found = frame(index)
                if found is not None:
                    passive, state = frame == self._passive, frame == self._state
                    return self._judged(found, index, meaning, dated=passive, reported=passive or state)
            if meaning is past and subject_at is not None and self._joined(index):
                return self._judged((subject_at, False), index, meaning, dated=False, reported=False)
        return None

    def _judged(
        self, frame: tuple[int, bool], index: int, meaning: Meaning, *, dated: bool, reported: bool
    ) -> _Found | None:
        start, negated = frame
        if negated and meaning.sense != "find":
            return None
        if dated and self.dated and meaning.sense != "find":
            return None
        if meaning.sense == "find" and not self.lex.finding_exceptions.isdisjoint(self.keys[start : index + 4]):
            return None  # "I have found a solution for you", "eine Lösung gefunden": nothing a search returned
        return _Found(start, self._end(index, meaning), _KIND[meaning.sense], self.keys[index], meaning.verb, reported)

    def _meaning(self, meanings: Sequence[Meaning], index: int) -> Meaning | None:
        """The verb's meaning here: one whose particle follows it ("looked it up"), the most telling first."""
        usable = [m for m in meanings if m.particle is None or m.particle in self.keys[index + 1 : index + 4]]
        return min(usable, key=lambda m: _PRIORITY.index(m.sense), default=None)

    def _end(self, index: int, meaning: Meaning) -> int:
        if meaning.particle is not None:
            return self.keys.index(meaning.particle, index + 1)
        return index

    def _perfect(self, index: int) -> tuple[int, bool] | None:
        """ "I have blocked", "habe ich ... gesperrt": a perfect auxiliary next to a first-person subject."""
        for at in range(index - 1, max(-1, index - GAP - 3), -1):
            gap = self.lex.perfect.get(self.keys[at])
            if gap is None or self.keys[at] in self.lex.did:
                continue
            if at > 0 and self.keys[at - 1] in self.lex.first_person:
                return self._gap(at - 1, at + 1, index, gap)
            if at + 1 < index and self.keys[at + 1] in self.lex.first_person:
                return self._gap(at, at + 2, index, gap)
            return None
        return None

    def _did(self, index: int) -> tuple[int, bool] | None:
        """ "I did not find", "we did check": "did" with the base form."""
        for at in range(index - 1, max(-1, index - 4), -1):
            if self.keys[at] in self.lex.did:
                if at > 0 and self.keys[at - 1] in self.lex.first_person:
                    return self._gap(at - 1, at + 1, index, 0)
                return None
        return None

    def _simple_past(self, index: int) -> tuple[int, bool] | None:
        """ "I blocked", "we also cancelled", "ich fand keine": the subject right before (adverbs between)."""
        at = index - 1
        negated = False
        while (
            at >= 0 and index - at <= 3 and (self.keys[at] in self.lex.adverbs or self.keys[at] in self.lex.negations)
        ):
            negated = negated or self.keys[at] in self.lex.negations
            at -= 1
        if at >= 0 and self.keys[at] in self.lex.first_person and not self._modal_before(at):
            return at, negated
        return None

    def _passive(self, index: int) -> tuple[int, bool] | None:
        """ "has been paid", "wurde ... storniert", "ist ... gesperrt worden"."""
        worden = index + 1 < len(self.keys) and self.keys[index + 1] in self.lex.passive_after
        table = self.lex.state if worden else self.lex.passive
        for at in range(index - 1, max(-1, index - GAP - 2), -1):
            gap = table.get(self.keys[at])
            if gap is None:
                continue
            if self._modal_before(at):
                return None
            found = self._gap(at, at + 1, index, gap)
            return None if found is None else (self._subject_start(at), found[1])
        return None

    def _state(self, index: int) -> tuple[int, bool] | None:
        """ "is now frozen", "ist jetzt gesperrt": a state is news only with "now"."""
        for at in range(index - 1, max(-1, index - GAP - 2), -1):
            gap = self.lex.state.get(self.keys[at])
            if gap is None:
                continue
            between = self.keys[at + 1 : index]
            if not any(key in self.lex.state_adverbs for key in between) or self._modal_before(at):
                return None
            found = self._gap(at, at + 1, index, gap)
            return None if found is None else (self._subject_start(at), found[1])
        return None

    def _gap(self, start: int, after: int, index: int, allowed: int) -> tuple[int, bool] | None:
        """The frame from ``start`` if the words between ``after`` and the verb fit: adverbs and negations, and
        at most ``allowed`` others; no modal ("zu", "will")."""
        between = self.keys[after:index]
        if any(key in self.lex.modals for key in between):
            return None
        others = [key for key in between if key not in self.lex.adverbs and key not in self.lex.negations]
        if len(others) > allowed:
            return None
        return start, any(key in self.lex.negations for key in between)

    def _joined(self, index: int) -> bool:
        """ "I have blocked your card and cancelled ...": the verb follows "and" (adverbs between)."""
        at = index - 1
        while at >= 0 and self.keys[at] in self.lex.adverbs and self.keys[at] not in self.lex.conjunctions:
            at -= 1
        return at >= 0 and self.keys[at] in self.lex.conjunctions

    def _first_person_at(self, at: int) -> bool:
        return self.keys[at] in self.lex.first_person or (
            at + 1 < len(self.keys) and self.keys[at + 1] in self.lex.first_person
        )

    def _modal_before(self, at: int) -> bool:
        """A modal just before the frame: "could have been", "will have", "would I"."""
        return any(key in self.lex.modals for key in self.keys[max(0, at - 2) : at])

    def _subject_start(self, at: int) -> int:
        """Where a quote of a passive starts: the determiner of its subject ("the invoice has been paid")."""
        for back in range(at - 1, max(-1, at - _SUBJECT_WORDS - 1), -1):
            if self.keys[back] in self.lex.determiners:
                return back
        return max(0, at - 1)

    # -- completion, results, sources, absences ---------------------------------------------------------------

    def _completion(self, index: int) -> list[_Found]:
        """ "Your refund is complete", "Die Stornierung ist abgeschlossen": an action's noun, then done."""
        at = index - 1
        while at >= 0 and (self.keys[at] in self.lex.adverbs or self.keys[at] in self.lex.state_adverbs):
            at -= 1
        auxiliaries = {*self.lex.state, *self.lex.passive, *self.lex.perfect}
        if at < 0 or self.keys[at] not in auxiliaries or self._modal_before(at) or self.dated:
            return []
        if any(key in self.lex.negations for key in self.keys[at:index]):
            return []
        for noun_at in range(at - 1, max(-1, at - _BEFORE_COMPLETION - 1), -1):
            for meaning in self.vocabulary.verbs.nouns.get(self.keys[noun_at], ()):
                if meaning.sense == "action":
                    start = self._subject_start(noun_at + 1)
                    return [_Found(start, index, "action", self.keys[noun_at], meaning.verb, reported=True)]
        return []

    def _result(self, index: int) -> list[_Found]:
        """ "the lookup shows", "Unser System zeigt", "liefert der Feiertagsabruf": a lookup noun and a result verb."""
        for at in range(index - 1, max(-1, index - _BEFORE_RESULT_VERB - 1), -1):
            if self.vocabulary.is_lookup_noun(self.keys[at]):
                if any(key in self.lex.modals for key in self.keys[at + 1 : index]):
                    return []
                return [_Found(self._subject_start(at + 1), index, "result", self.keys[index], self.keys[index])]
        # German puts the verb second: "Für Bayern liefert der Feiertagsabruf ..." (a determiner right after it).
        if index + 1 < len(self.keys) and self.keys[index + 1] in self.lex.determiners:
            for at in range(index + 2, min(len(self.keys), index + _AFTER_RESULT_VERB + 1)):
                if self.vocabulary.is_lookup_noun(self.keys[at]):
                    return [_Found(index, at, "result", self.keys[index], self.keys[index])]
        return []

    def _according(self) -> list[_Found]:
        """ "according to our delivery system", "laut Feiertagsabfrage"."""
        place = self.lex.according.find(self.words)
        if place is None:
            return []
        start, end = place
        for at in range(end + 1, min(len(self.keys), end + _AFTER_ACCORDING + 1)):
            if self.vocabulary.is_lookup_noun(self.keys[at]):
                return [_Found(start, at, "result", self.keys[at], self.keys[at])]
        return []

    def _absence(self) -> list[_Found]:
        """ "there are no invoices in your account", "In Ihrem Postfach gibt es keine Preisliste"."""
        place = self.lex.absence.find(self.words)
        if place is None or self.lex.absence_exceptions.find(self.words) is not None:
            return []
        start, end = place
        if self.keys[end] in self.lex.determiners and end + 1 < len(self.keys):
            end += 1  # the quote goes on to the place: "... in your account"
        return [_Found(start, end, "result", self.keys[start], self.keys[start])]
