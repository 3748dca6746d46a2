"""Rules on facts: a check or criterion that needs a fact nobody in the conversation gives."""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass

from pydantic import JsonValue

from simulator.kinds import kind_of
from simulator.loading._yaml import DataPath, format_path
from simulator.loading.lint._facts import Fact, Knowledge, _persona_knowledge, find_facts
from simulator.loading.lint._rule import Hit, SuiteView, rule
from simulator.models import (
    Case,
    ExpectationSpec,
)
from simulator.models.case import TurnExpectation


def _texts_of_check(check: ExpectationSpec | TurnExpectation, base: DataPath) -> Iterator[tuple[DataPath, str]]:
    """The parts of a check that can need a fact, each at its path: terms, message, arguments, values."""
    for index, term in enumerate(check.must_contain or []):
        mode = check.match if isinstance(term, str) else (term.mode or check.match)
        if mode != "regex":
            yield (*base, "must_contain", index), term if isinstance(term, str) else term.term
    if check.message is not None:
        yield (*base, "message"), check.message
    if isinstance(check, ExpectationSpec):
        if check.tool_call is not None:
            for name, value in (check.tool_call.arguments or {}).items():
                rule_ = check.tool_call.argument_rules.get(name)
                if rule_ is None or rule_.mode == "exact":
                    yield (*base, "tool_call", "arguments", name), _as_text(value)
        if check.variable is not None:
            yield (*base, "variable", "value"), _as_text(check.variable.value)
        if check.text is not None and not _deterministic(check):
            yield (*base, "text"), check.text
    else:
        for call_index, call in enumerate(check.tool_calls):
            for name, value in (call.arguments or {}).items():
                rule_ = call.argument_rules.get(name)
                if rule_ is None or rule_.mode == "exact":
                    yield (*base, "tool_calls", call_index, "arguments", name), _as_text(value)
        for name, value in check.variables.items():
            yield (*base, "variables", name), _as_text(value)
        if check.reference_answer is not None:
            yield (*base, "reference_answer"), check.reference_answer.answer


def _as_text(value: JsonValue) -> str:
    if isinstance(value, float) and value.is_integer() and abs(value) < 1e15:
        return f"{value:.2f}"  # 129.0 as written (129.00) is an amount, not a count
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)


def _deterministic(check: ExpectationSpec) -> bool:
    return any(
        getattr(check, name) is not None
        for name in ("must_contain", "must_not_contain", "tool_call", "variable", "handoff")
    )


@dataclass
class _Needs:
    """A text that needs facts, where it is written, and what the user and the agent know there."""

    path: DataPath
    text: str
    user: Knowledge
    what: str


def _needs(base: DataPath, case: Case) -> Iterator[_Needs]:
    """Every text of ``case`` that can need a fact, with what the user knows at that point."""
    everything = Knowledge()
    for stage in kind_of(case).stages(case):
        everything.add(stage.told)
        known = everything.copy()
        if stage.success_criteria:
            yield _Needs((*base, *stage.where, "success_criteria"), stage.success_criteria, known, stage.label)
        for where, check in stage.checks:
            for path, text in _texts_of_check(check, (*base, *where)):
                yield _Needs(path, text, known, stage.label)
    for e, expectation in enumerate(case.expectations):
        for path, text in _texts_of_check(expectation, (*base, "expectations", e)):
            yield _Needs(path, text, everything, "the case")


def _fact_rule(path: DataPath, fact: Fact) -> str:
    """Which rule reports a fact no one gives: see the three rules below."""
    if fact.kind == "name":
        return "unknown-name"
    passed_on = "arguments" in path or "variable" in path or "variables" in path
    return "unknown-fact" if passed_on or fact.kind in ("id", "email") else "unknown-value"


def missing_facts(view: SuiteView) -> list[tuple[_Needs, Fact, list[str]]]:
    """Every fact a text of a case needs that no one gives, with the personas that lack it (see
    :func:`_missing_facts`); found once per suite for the three rules that report them."""
    found: list[tuple[_Needs, Fact, list[str]]] | None = view.memo.get("missing_facts")
    if found is None:
        found = view.memo["missing_facts"] = list(_missing_facts(view))
    return found


def _missing_facts(view: SuiteView) -> Iterator[tuple[_Needs, Fact, list[str]]]:
    """Each fact a text needs that no one gives: the place, the fact, and the personas that lack it."""
    names = view.loaded.suite.language.split("-")[0] == "en"
    for base, case in view.cases():
        agent = view.agent_side(case)
        known_by = {p.name: _persona_knowledge(p) for p in view.personas_of(case)}
        for need in _needs(base, case):
            facts = list(dict.fromkeys(find_facts(need.text, names=names)))  # each fact once per text
            for fact in facts:
                if need.user.knows(fact) or agent.knows(fact):
                    continue
                without = [name for name, knowledge in known_by.items() if not knowledge.knows(fact)]
                if without or not known_by:
                    yield need, fact, without


#: Facts a finding names; the others are counted.
_LISTED = 5


def _fact_hits(view: SuiteView, rule_id: str, unless: str = "") -> Iterator[Hit]:
    by_place: dict[DataPath, tuple[_Needs, list[Fact], set[str]]] = {}
    for need, fact, without in missing_facts(view):
        if _fact_rule(need.path, fact) == rule_id:
            entry = by_place.setdefault(need.path, (need, [], set()))
            entry[1].append(fact)
            entry[2].update(without)
    for need, facts, lacking in by_place.values():
        more = f" and {len(facts) - _LISTED} more" if len(facts) > _LISTED else ""
        listed = ", ".join(f.describe() for f in facts[:_LISTED]) + more
        keys = ("checks", "expect", "expectations", "success_criteria")
        starts = [i for i, part in enumerate(need.path) if part in keys]
        field_name = format_path(need.path[starts[-1] :]) if starts else format_path(need.path)
        personas = f"; personas {', '.join(sorted(lacking))} do not know it either" if lacking else ""
        golden = need.what.startswith("turn")
        told = "the user turns up to it" if golden else "the goal, response_guide, say lines or earlier steps"
        message = (
            f"{field_name} of {need.what} needs {listed}, which neither the simulated user nor the agent is given: "
            f"not in {told}, the session parameters, the tool fakes or the agent's description"
            f"{personas}{unless}"
        )
        fix = (
            "give the fact to the simulated user (a response_guide entry or a persona fact) or to the agent (a "
            "session parameter or a tool fake that returns it), or take it out of what is checked"
        )
        yield Hit(need.path, message, fix)


@rule("unknown-fact", "error")
def unknown_fact(view: SuiteView) -> Iterator[Hit]:
    """Checks need an id or email, or an expected argument or variable a value, that no one is given.

    The fact must appear in what the simulated user is told up to that step (goals, response guides, say
    lines, static utterances and event payloads of this and earlier steps; the persona) or in what the agent
    can find without the user (session parameters, what tool fakes answer, its description or instructions,
    the behaviour its simulated tools are played from).
    An agent does not make up an order number, an email or the value it passes to a tool: only a lucky guess
    meets the check, the case is unwinnable.
    """
    yield from _fact_hits(view, "unknown-fact")


@rule("unknown-value", "warning")
def unknown_value(view: SuiteView) -> Iterator[Hit]:
    """What the agent must say holds a date or amount that no one is given.

    Like ``unknown-fact``, for dates and amounts in criteria, terms and expected messages: an agent may compute
    them (a delivery date from today, a total, a discount), so this is a warning; if it does not, the case is
    unwinnable.
    """
    yield from _fact_hits(view, "unknown-value", " (unless the agent computes it)")


@rule("unknown-name", "warning")
def unknown_name(view: SuiteView) -> Iterator[Hit]:
    """Criteria or checks name a person, place or product (a capitalised name) that no one is given.

    Like ``unknown-fact`` for proper names, which are found less surely (a capitalised word in the middle of a
    sentence), hence a warning; English suites only (German capitalises every noun).
    """
    yield from _fact_hits(view, "unknown-name")
