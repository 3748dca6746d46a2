"""The run page's text search, on the server: which results of a run hold every word of a search.

The static report searches the text of each case's card in the browser. A page whose cards load their
conversations only when opened (``simulator view``) cannot, so it asks the server, which looks in the same
texts: every text of the stored result (messages, tool calls and their results, reasons, rationales, evidence,
findings), its case, persona and outcome, and from the run's suites its suite's name and its case's tags and
description. Words are separated by white space and matched in any case (casefolded), anywhere in a text, all
of them in one result, as the page's own search does.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass, field

from simulator.models.run import RunRecord

__all__ = ["RunSearch"]


def _strings(value: object) -> Iterator[str]:
    """Every string in a JSON value (not the names of its fields)."""
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for item in value.values():
            yield from _strings(item)
    elif isinstance(value, list):
        for item in value:
            yield from _strings(item)


@dataclass
class RunSearch:
    """One search over one run's results."""

    record: RunRecord
    text: str
    words: list[str] = field(init=False)
    #: Per suite (by index), per case name: the suite's name and the case's tags and description, casefolded.
    _case_texts: list[dict[str, str]] = field(init=False)

    def __post_init__(self) -> None:
        self.words = [word for word in self.text.casefold().split() if word]
        self._case_texts = [
            {
                case.name: "\n".join((snapshot.suite.name, *case.tags, case.description or "")).casefold()
                for case in snapshot.suite.cases
            }
            for snapshot in self.record.snapshot
        ]

    @property
    def in_json(self) -> list[str]:
        """The words every matching result's stored JSON must hold: those no suite name, tag or description of
        the run holds (a word found only there is not in the result's JSON)."""
        elsewhere = "\n".join(text for texts in self._case_texts for text in texts.values())
        return [word for word in self.words if word not in elsewhere]

    def matches(self, suite: int, case: str, persona: str | None, outcome: str, result_json: str) -> bool:
        """Whether a stored result (its row's columns and its JSON as stored) holds every word."""
        if not self.words:
            return True
        try:
            texts = list(_strings(json.loads(result_json)))
        except ValueError:
            texts = [result_json]  # a damaged result is still searched, as text
        cases = self._case_texts[suite] if 0 <= suite < len(self._case_texts) else {}
        haystack = "\n".join((case, persona or "", outcome, cases.get(case, ""), *texts)).casefold()
        return all(word in haystack for word in self.words)
