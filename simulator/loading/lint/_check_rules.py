"""Rules on checks: checks that contradict each other, tools no agent declares, cases that repeat another."""

from __future__ import annotations

import difflib
import json
import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any

from pydantic import JsonValue

from simulator.kinds import kind_of
from simulator.loading._yaml import DataPath, format_path
from simulator.loading.lint._facts import _flatten, find_facts
from simulator.loading.lint._rule import Hit, SuiteView, rule
from simulator.models import (
    Case,
    ExpectationSpec,
    normalize_reference,
)
from simulator.models.case import KeywordChecks, KeywordTerm


@dataclass(frozen=True)
class _Check:
    """A check as contradictions see it: where it is written and what it requires or forbids."""

    path: DataPath
    spec: KeywordChecks
    variable: tuple[str, JsonValue] | None = None


def _literal_terms(spec: KeywordChecks, key: str) -> list[tuple[str, str]]:
    terms: list[tuple[str, str]] = []
    for term in getattr(spec, key) or []:
        text, mode = (term, spec.match) if isinstance(term, str) else (term.term, term.mode or spec.match)
        if isinstance(term, KeywordTerm) and term.normalize:
            return []  # normalised matching (dates, accents) is beyond a literal comparison: no claim
        terms.append((text, mode))
    return terms


def _forbids(forbidden: tuple[str, str], required: str) -> bool:
    """Whether every text containing ``required`` (as written) contains the forbidden term."""
    word, mode = forbidden
    if mode == "substring":
        return word.casefold() in required.casefold()
    if mode in ("word", "stem"):
        return re.search(rf"(?<!\w){re.escape(word.casefold())}(?!\w)", required.casefold()) is not None
    return False


def _conflict(first: _Check, second: _Check) -> str | None:
    """Why no reply can meet both checks, or None."""
    for required, forbidding in ((first, second), (second, first)):
        needed = [t for t, mode in _literal_terms(required.spec, "must_contain") if mode != "regex"]
        banned = _literal_terms(forbidding.spec, "must_not_contain")
        if not needed or not banned:
            continue
        clashing = [(n, b) for n in needed if (b := next((f for f in banned if _forbids(f, n)), None))]
        all_clash = len(clashing) == len(needed) if required.spec.contain == "any" else bool(clashing)
        if all_clash and len(needed) == len(_literal_terms(required.spec, "must_contain")):
            term, ban = clashing[0]
            return f"{term!r} must be said, but it holds the forbidden {ban[0]!r}"
    if first.variable and second.variable:
        (name, one), (other_name, other) = first.variable, second.variable
        if name == other_name and one != other:
            return f"variable {name!r} must be {one!r} and {other!r} at the same time"
    return None


def _as_check(path: DataPath, spec: KeywordChecks) -> _Check:
    variable = None
    if isinstance(spec, ExpectationSpec) and spec.variable is not None:
        variable = (spec.variable.name, spec.variable.value)
    return _Check(path, spec, variable)


def _step_scopes(base: DataPath, case: Case) -> list[tuple[int, list[_Check], list[_Check]]]:
    """Per step (or scenario goal, golden turn): the checks that decide it, and the case expectations scored
    on the same replies (those it refers to)."""
    by_text = {normalize_reference(e.text): (i, e) for i, e in enumerate(case.expectations) if e.text}

    def referenced(refs: Sequence[str]) -> list[_Check]:
        found = [by_text.get(normalize_reference(r)) for r in refs]
        return [_as_check((*base, "expectations", i), e) for i, e in (f for f in found if f)]

    return [
        (index, [_as_check((*base, *where), check) for where, check in stage.checks], referenced(stage.references))
        for index, stage in enumerate(kind_of(case).stages(case))
    ]


def _whole_conversation(base: DataPath, case: Case) -> list[_Check]:
    """Case expectations no step or turn refers to: scored on every reply of the conversation."""
    refs = {normalize_reference(r) for scope in kind_of(case).expectation_scopes(case) for r in scope.references}
    return [
        _as_check((*base, "expectations", i), e)
        for i, e in enumerate(case.expectations)
        if not (e.text and normalize_reference(e.text) in refs)
    ]


def _pairs(checks: Sequence[_Check]) -> list[tuple[_Check, _Check]]:
    """Every pair of ``checks``, each check with itself too (one check can hold must_contain and must_not_contain)."""
    return [(first, second) for i, first in enumerate(checks) for second in checks[i:]]


@rule("unreachable-step", "error")
def unreachable_step(view: SuiteView) -> Iterator[Hit]:
    """A step's own checks contradict each other, so it is never met and every later step is never reached.

    A step's checks all read the same replies (the step's own): one that must contain a text and one that
    must not contain a part of it cannot both be met, nor two values of one variable.
    """
    for base, case in view.cases():
        kind = kind_of(case)
        if not kind.checks_replies:  # a golden turn is scored afterwards: see contradicting-checks
            continue
        count = kind.step_count(case)
        labels = [stage.label for stage in kind.stages(case)]
        for index, deciding, _ in _step_scopes(base, case):
            for first, second in _pairs(deciding):
                why = _conflict(first, second)
                if why is None:
                    continue
                what = labels[index]
                later = (
                    f"steps {index + 2}-{count} are never reached"
                    if index + 2 < count
                    else f"step {count} is never reached"
                    if index + 2 == count
                    else "the case can never pass"
                )
                other = "itself" if first is second else f"the check at {format_path(first.path)}"
                yield Hit(
                    second.path,
                    f"{what} can never be met: this check contradicts {other} on the same replies (the step's): "
                    f"{why}; {later}",
                    "remove or correct one of the two checks",
                )


@rule("contradicting-checks", "error")
def contradicting_checks(view: SuiteView) -> Iterator[Hit]:
    """Two checks that read the same replies contradict each other, so the case can never pass.

    Pairs across scopes: a case expectation scored on the whole conversation against any check, an expectation
    a step or golden turn refers to against that step's (turn's) checks, and a golden turn's own ``expect``.
    """
    for base, case in view.cases():
        whole = _whole_conversation(base, case)
        pairs = _pairs(whole)
        for _, deciding, referenced in _step_scopes(base, case):
            pairs += [(w, c) for w in whole for c in [*deciding, *referenced]]
            pairs += [(r, d) for r in referenced for d in deciding] + _pairs(referenced)
            if not kind_of(case).checks_replies:
                pairs += [(turn, turn) for turn in deciding]  # a golden turn has one `expect`: its own keys
        seen: set[tuple[DataPath, DataPath]] = set()
        for first, second in pairs:
            why = _conflict(first, second)
            if why is None or (first.path, second.path) in seen:
                continue
            seen.add((first.path, second.path))
            other = "itself" if first.path == second.path else f"the check at {format_path(first.path)}"
            yield Hit(
                second.path,
                f"this check contradicts {other} on the same replies: {why}; the case can never pass",
                "remove or correct one of the two checks, or scope the expectation to another step",
            )


# -- tools and duplicates ------------------------------------------------------------------------------------


def _tool_names(base: DataPath, case: Case) -> Iterator[tuple[DataPath, str]]:
    kind = kind_of(case)
    checks = [((*base, "expectations", i), e) for i, e in enumerate(case.expectations)]
    checks += [((*base, *at), check) for at, check in kind.checks_written(case)]
    for where, check in checks:
        if check.tool_call is not None:
            yield (*where, "tool_call", "name"), check.tool_call.name
        if check.after is not None:
            yield (*where, "after"), check.after
    for at, name in kind.tool_names_written(case):
        yield (*base, *at), name


@rule("undeclared-tool", "error")
def undeclared_tool(view: SuiteView) -> Iterator[Hit]:
    """An expected tool call names a tool the agent under test does not declare.

    The agent is offered only its declared tools (a litellm or http agent never sees another), and a call of
    an undeclared tool is recorded as such: the expectation cannot be met. (``validate`` already rejects a name
    that is not among an agent's declared tools; this rule also catches agents that declare none.)
    """
    declared = view.declared_tools()
    if declared is None or declared:
        return
    agent = view.loaded.agent
    name = agent.name if agent is not None else "agent"
    for base, case in view.cases():
        for path, tool in _tool_names(base, case):
            yield Hit(
                path,
                f"tool {tool!r} is expected, but agent {name!r} declares no tools",
                f"declare {tool} under `tools:` in the agent's file, or remove the expectation",
            )


def _case_text(case: Case) -> str:
    """What a case asks, as one text: two cases that differ only in wording are near-identical."""
    parts = kind_of(case).script_parts(case)
    return " ".join(" ".join(_flatten(_plain(parts))).casefold().split())


def _case_checks(case: Case) -> Any:
    """What a case checks, which near-duplicates share exactly (another check is another test)."""
    kind = kind_of(case)
    return _plain([[check for _, check in kind.checks_written(case)], kind.turn_expectations(case), case.expectations])


def _plain(value: Any) -> Any:
    """Models in ``value`` as plain data (what was written)."""
    if isinstance(value, list):
        return [_plain(item) for item in value]
    if hasattr(value, "model_dump"):
        return value.model_dump(mode="json", exclude_defaults=True)
    return value


#: How alike two cases' goals and steps must be (difflib's ratio of their words) to count as near-duplicates.
DUPLICATE_RATIO = 0.9
#: Shared words over all words below which two texts cannot reach DUPLICATE_RATIO (a cheap first test).
_JACCARD_BOUND = 0.75
#: Cases of more words than this are compared for equality only.
_LONGEST_COMPARED = 2000


@rule("duplicate-case", "warning")
def duplicate_case(view: SuiteView) -> Iterator[Hit]:
    """Two cases of the same kind with (nearly) the same goals or steps, the same checks, personas and session
    parameters.

    They cost twice and test once; a failing pair doubles one failure in the report. Cases that differ in
    checks, persona, session parameters or the facts they name (another order number, amount or date) are
    variations on purpose and are not reported.
    """
    # Cases are grouped by what must be equal, and cheap bounds come before difflib's ratio, so a suite of a
    # thousand similar cases does not cost a million full comparisons.
    groups: dict[str, list[tuple[DataPath, Case, list[str], frozenset[str]]]] = {}
    for base, case in view.cases():
        text = _case_text(case)
        facts = sorted(fact.text.casefold() for fact in find_facts(text, names=False))
        equal = [case.kind, case.personas, case.session_parameters, facts, _case_checks(case)]
        key = json.dumps(equal, sort_keys=True, default=str)
        # Compared word by word: a changed word in a short goal is another goal, a changed full stop is not.
        words = re.findall(r"\w+", text)
        vocabulary = frozenset(words)
        for other_base, other, other_words, other_vocabulary in groups.setdefault(key, []):
            shared = len(vocabulary & other_vocabulary)
            if not words or shared < _JACCARD_BOUND * len(vocabulary | other_vocabulary):
                continue
            if max(len(words), len(other_words)) > _LONGEST_COMPARED:
                ratio = 1.0 if words == other_words else 0.0  # difflib's ratio is quadratic at worst
            else:
                matcher = difflib.SequenceMatcher(None, other_words, words, autojunk=False)
                ratio = matcher.ratio() if matcher.quick_ratio() >= DUPLICATE_RATIO else 0.0
            if ratio >= DUPLICATE_RATIO:
                line = view.located.position((*other_base, "name")).line
                same = "the same" if ratio == 1.0 else f"nearly the same ({int(ratio * 100)}% alike)"
                what = kind_of(case).parts_word
                yield Hit(
                    (*base, "name"),
                    f"case {case.name!r} has {same} {what} as case {other.name!r} (line {line}), with the same "
                    "checks, personas and session parameters",
                    "remove one, or make them differ in what they test (goal, facts, persona)",
                )
                break
        groups[key].append((base, case, words, vocabulary))
