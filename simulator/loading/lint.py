"""Spec lint: what makes a valid suite unwinnable or meaningless, found before any model is called.

:func:`lint_paths` validates the files as ``validate`` does, then runs every rule of :data:`RULES` over each
suite that loaded (a suite, or a hosted ``evals:`` file). A rule is one function registered with
:func:`rule`: its id, its severity and its docstring (what it finds and why it matters); it reads a
:class:`SuiteView` and yields :class:`Hit` s, each at a key path of the file, which the loader's line-aware tree
turns into ``file:line:col``. Rules are deterministic and conservative: a rule that does not apply to a kind of
case skips it, and each hit says how to fix what it found.

Where each check looks, as the engine and the scorers do it (so a contradiction is only one when the two checks
read the same replies):

* a step's ``checks`` decide the step, on that step's replies only (``simulator.engine``: replies since the
  step began); a scenario's ``checks`` decide its goal on its replies;
* a case expectation that a step (or golden turn) refers to is scored on that step's (turn's) replies; every
  other case expectation on the whole conversation (``simulator.judges.scorers.expectations``);
* a golden turn's ``expect`` is scored on that turn's reply.

So an earlier step's ``must_not_contain`` does not forbid what a later step must contain (other replies), but a
case expectation over the whole conversation does.
"""

from __future__ import annotations

import difflib
import functools
import json
import re
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from pydantic import JsonValue
from yaml.nodes import ScalarNode, SequenceNode

from simulator.errors import ConfigError, InputError
from simulator.kinds import kind_of
from simulator.loading._load import LoadedSuite, _display_path, validate_paths
from simulator.loading._schema import did_you_mean
from simulator.loading._yaml import DataPath, Located, format_path, parse_yaml, read_text
from simulator.models import (
    Case,
    ExpectationSpec,
    GoldenCase,
    Persona,
    ScenarioCase,
    SimulationCase,
    normalize_reference,
)
from simulator.models.case import KeywordChecks, KeywordTerm, TurnExpectation
from simulator.safety import one_line

__all__ = [
    "RULES",
    "Fact",
    "Finding",
    "Hit",
    "Knowledge",
    "LintReport",
    "Rule",
    "Severity",
    "SuiteView",
    "find_facts",
    "lint_paths",
    "lint_suite",
    "rule",
    "suite_view",
]

Severity = Literal["error", "warning", "info"]
SEVERITIES: tuple[Severity, ...] = ("error", "warning", "info")


@dataclass(frozen=True)
class Finding:
    """One problem of a suite at one place: the rule that found it, how bad it is, what it is and the fix.

    ``source`` is ``rule`` for the deterministic rules and ``model`` for a judge model's suggestion (always of
    severity ``info``: a model's reading is a hint, never a verdict)."""

    rule: str
    severity: Severity
    file: str
    line: int
    column: int
    key_path: str
    message: str
    fix: str
    source: Literal["rule", "model"] = "rule"

    def render(self) -> str:
        """``FILE:LINE:COL: severity rule: message``, the shape editors and CI logs recognise (the file name and
        key path on one line: a line break in them cannot forge another finding)."""
        label = f"{self.rule} (model suggestion)" if self.source == "model" else self.rule
        where = f"{one_line(self.file)}:{self.line}:{self.column}"
        return f"{where}: {self.severity} {label}: {one_line(self.key_path)}: {self.message}"

    def as_dict(self) -> dict[str, Any]:
        """The finding as plain JSON data."""
        return {
            "file": self.file,
            "line": self.line,
            "column": self.column,
            "key": self.key_path,
            "severity": self.severity,
            "rule": self.rule,
            "message": self.message,
            "fix": self.fix,
            "source": self.source,
        }

    def sort_key(self) -> tuple[str, int, int, str, str]:
        """Order findings by file, then position, then rule."""
        return (self.file, self.line, self.column, self.key_path, self.rule)


@dataclass(frozen=True)
class Hit:
    """What a rule found: where (a key path in the file), what, and how to fix it."""

    path: DataPath
    message: str
    fix: str


@dataclass(frozen=True)
class Rule:
    """A registered lint rule."""

    id: str
    severity: Severity
    check: Callable[[SuiteView], Iterable[Hit]]

    @property
    def summary(self) -> str:
        """The first line of the rule's docstring."""
        return (self.check.__doc__ or "").strip().splitlines()[0]


#: Every rule by its id, in the order they run.
RULES: dict[str, Rule] = {}


def rule(rule_id: str, severity: Severity) -> Callable[[Callable[[SuiteView], Iterable[Hit]]], Callable[..., Any]]:
    """Register a rule function under ``rule_id`` with ``severity``."""

    def register(check: Callable[[SuiteView], Iterable[Hit]]) -> Callable[[SuiteView], Iterable[Hit]]:
        if rule_id in RULES:
            raise ValueError(f"lint rule {rule_id!r} is registered twice")
        RULES[rule_id] = Rule(rule_id, severity, check)
        return check

    return register


@dataclass
class SuiteView:
    """What the rules read: a loaded suite, where its keys are written, and what each case's user can know."""

    loaded: LoadedSuite
    located: Located
    file: str
    #: The file's text, as the rules' positions refer to it.
    text: str

    @property
    def cases_key(self) -> str:
        """``cases`` in a suite, ``evals`` in a hosted evals file."""
        return "evals" if self.loaded.hosted_format else "cases"

    def cases(self) -> Iterator[tuple[DataPath, Case]]:
        """Every case with the path it is written at."""
        for index, case in enumerate(self.loaded.suite.cases):
            yield (self.cases_key, index), case

    def personas_of(self, case: Case) -> list[Persona]:
        """The personas the case is run with by default (those it names, else the suite's), that exist."""
        if not kind_of(case).plays_persona:
            return []
        names = case.personas or self.loaded.suite.personas
        return [self.loaded.personas[name] for name in names if name in self.loaded.personas]

    def agent_side(self, case: Case) -> Knowledge:
        """What the agent can learn without the user: session parameters, tool fakes, its own description."""
        knowledge = Knowledge()
        knowledge.add(case.session_parameters)
        # A fake's arguments tell the agent nothing (it must know them to make the call); its answer does.
        knowledge.add([[fake.result, fake.error] for fake in case.tool_fakes])
        return knowledge.merged(self._suite_side)

    @functools.cached_property
    def _suite_side(self) -> Knowledge:
        """What the agent of every case knows: the suite's tool fakes, the agent's description, and what its
        simulated tools answer from (the model playing one is given the behaviour, else the description)."""
        knowledge = Knowledge()
        knowledge.add([[fake.result, fake.error] for fake in self.loaded.suite.tool_fakes])
        agent = self.loaded.agent
        if agent is not None:
            knowledge.add(agent.description)
            knowledge.add(getattr(agent, "instructions", None))
            knowledge.add({name: v.default for name, v in agent.variables.items()})
            knowledge.add([[tool.simulate.behaviour, tool.description] for tool in agent.tools if tool.simulate])
        return knowledge

    @functools.cached_property
    def missing_facts(self) -> list[tuple[_Needs, Fact, list[str]]]:
        """Every fact a text of a case needs that no one gives, with the personas that lack it (see
        :func:`_missing_facts`); found once for the three rules that report them."""
        return list(_missing_facts(self))

    def declared_tools(self) -> list[str] | None:
        """The agent's declared tools, or None when there is no agent to ask."""
        agent = self.loaded.agent
        return None if agent is None else [tool.name for tool in agent.tools]


def _place(view: SuiteView, path: DataPath) -> tuple[int, int]:
    # A key's own position when the path ends in a key (`success_criteria:`), an item's when in an index.
    position = view.located.position(path, key=bool(path) and isinstance(path[-1], str))
    return position.line, position.column


# ------------------------------------------------------------------------------------------------------------
# Facts: ids, amounts, dates, emails and names in a text, and whether what someone knows holds them.


def _words(text: str) -> frozenset[str]:
    """The words of ``text``: long word lists written as text."""
    return frozenset(text.split())


_MONTH_NAMES = (
    "january february march april may june july august september october november december",
    "januar februar märz april mai juni juli august september oktober november dezember",
    "jan feb mar apr may jun jul aug sep oct nov dec",
)
_MONTHS = {name: number for names in _MONTH_NAMES for number, name in enumerate(names.split(), 1)} | {"sept": 9}
_MONTH = "|".join(sorted(_MONTHS, key=len, reverse=True))
#: Dates as written: 2026-12-03, 03.12.2026, 3 December 2026, 3. Dezember, December 3, 2026.
_DATE_PATTERNS: tuple[re.Pattern[str], ...] = (
    re.compile(r"\b(?P<y>\d{4})-(?P<m>\d{1,2})-(?P<d>\d{1,2})\b"),
    re.compile(r"\b(?P<d>\d{1,2})\.(?P<m>\d{1,2})\.(?P<y>\d{4})\b"),
    re.compile(
        rf"\b(?P<d>\d{{1,2}})(?:st|nd|rd|th|\.)?\s+(?:of\s+)?(?P<m>{_MONTH})\.?(?:,?\s+(?P<y>\d{{4}}))?\b", re.I
    ),
    re.compile(rf"\b(?P<m>{_MONTH})\.?\s+(?P<d>\d{{1,2}})(?:st|nd|rd|th)?\b(?:,?\s+(?P<y>\d{{4}}))?", re.I),
)
_EMAIL = re.compile(r"[\w.+-]+@[\w-]+(?:\.[\w-]+)+")
# A token of letters and digits that names something: ORD-10042, cus_4821, RF-5512, #12345, 1Z999AA1012.
_TOKEN = re.compile(r"#?[A-Za-z0-9_-]*\d[A-Za-z0-9_-]*")
_NUMBER = re.compile(r"(?<![\w.,])(?P<num>\d+(?:[.,]\d+)?)(?![\w])")
_CURRENCY_BEFORE = re.compile(r"[$€£¥]\s*$")
_CURRENCY_AFTER = re.compile(r"\s*(?:usd|eur|gbp|chf|dollars?|euros?|pounds?|[$€£])", re.I)
_APPROXIMATE = re.compile(
    r"(?:about|around|approximately|approx\.?|roughly|circa|ca\.|~|etwa|ungefähr)\s*[$€£]?\s*$", re.I
)
_NAME_WORD = re.compile(r"[A-ZÄÖÜ][^\W\d_]*(?:['’&-][^\W\d_]+)*")
_PUNCTUATION = ".,;:!?()[]\"“”'"
_SHORT_ID = re.compile(r"[A-Za-z]{1,6}(?:[-_]\d+|\d{2,})")
#: Capitalised words that are not names of a person, place, product or company.
_NOT_NAMES = _words(
    """i ai ok okay faq id ids url pdf api sms the a an yes no usd eur gbp chf monday tuesday wednesday thursday
    friday saturday sunday today tomorrow pin iban bic vat gdpr sku cvv otp eta tos sla kyc 2fa"""
) | set(_MONTHS)


@dataclass(frozen=True)
class Fact:
    """A concrete fact a text needs: its words as written and what kind it is."""

    text: str
    kind: Literal["id", "email", "amount", "date", "name"]
    #: A date as (year or 0, month, day); an amount as its value.
    value: tuple[int, int, int] | float | None = None

    def describe(self) -> str:
        """``'ORD-10042' (an id)``."""
        article = {"id": "an id", "email": "an email", "amount": "a number", "date": "a date", "name": "a name"}
        return f"{self.text!r} ({article[self.kind]})"


def _date_value(match: re.Match[str]) -> tuple[int, int, int] | None:
    month_text = match.group("m")
    month = int(month_text) if month_text.isdigit() else _MONTHS.get(month_text.lower(), 0)
    day = int(match.group("d"))
    year = int(match.group("y")) if match.group("y") else 0
    if not (1 <= month <= 12 and 1 <= day <= 31):
        return None
    return (year, month, day)


def _number_value(text: str) -> float:
    if "," in text and "." not in text:
        text = text.replace(",", ".")
    return float(text.replace(",", ""))


class _Taken:
    """The characters of a text already read as a fact (so a date's digits are not also an amount)."""

    def __init__(self, text: str) -> None:
        self._marks = bytearray(len(text))

    def free(self, start: int, end: int) -> bool:
        return not any(self._marks[start:end])

    def take(self, start: int, end: int) -> None:
        self._marks[start:end] = b"\x01" * (end - start)


def find_facts(text: str, *, names: bool = True) -> list[Fact]:
    """The concrete facts ``text`` mentions: dates, emails, ids, amounts and (with ``names``) proper names.

    Linear in the length of the text (a criterion can be as long as a file may be)."""
    facts: list[Fact] = []
    taken = _Taken(text)

    def keep(match: re.Match[str], fact: Fact) -> None:
        taken.take(*match.span())
        facts.append(fact)

    for pattern in _DATE_PATTERNS:
        for match in pattern.finditer(text):
            value = _date_value(match)
            if value is not None and taken.free(*match.span()):
                keep(match, Fact(match.group(0), "date", value))
    for match in _EMAIL.finditer(text):
        if taken.free(*match.span()):
            keep(match, Fact(match.group(0), "email"))
    for match in _TOKEN.finditer(text):
        token = match.group(0).strip("-_")
        digits = sum(c.isdigit() for c in token)
        letters = sum(c.isalpha() for c in token)
        named = (letters and digits >= 3) or _SHORT_ID.fullmatch(token) or token.startswith("#")
        if named and digits and taken.free(*match.span()):
            keep(match, Fact(token, "id"))
    for match in _NUMBER.finditer(text):
        start, end = match.span()
        raw = match.group("num")
        if not taken.free(start, end) or _APPROXIMATE.search(text, max(0, start - 16), start):
            continue  # "about 25 USD": a computed amount, not one to be given
        money = bool(_CURRENCY_BEFORE.search(text, max(0, start - 2), start) or _CURRENCY_AFTER.match(text, end))
        decimal = bool(re.search(r"[.,]\d{1,2}$", raw))
        whole = raw.isdigit() and len(raw) >= 3 and not (len(raw) == 4 and 1900 <= int(raw) <= 2100)
        if money or decimal or whole:
            keep(match, Fact(raw, "amount", _number_value(raw)))
    if names:
        facts.extend(_names(text, taken))
    return facts


def _names(text: str, taken: _Taken) -> list[Fact]:
    """Runs of capitalised words that do not start a sentence: Jane Doe, Royal Mail, PayPal."""
    found: list[Fact] = []
    run: list[re.Match[str]] = []

    def close() -> None:
        if run:
            found.append(Fact(text[run[0].start() : run[-1].end()].strip(_PUNCTUATION), "name"))
            run.clear()

    previous = ""
    for match in re.finditer(r"\S+", text):
        written = match.group(0)
        word = written.strip(_PUNCTUATION)
        sentence_start = not previous or previous[-1] in ".!?:;" or written[0] in "\"“'(["
        previous = written
        if (
            _NAME_WORD.fullmatch(word)
            and not sentence_start
            and taken.free(*match.span())
            and word.casefold() not in _NOT_NAMES
        ):
            run.append(match)
            if written[-1] in ".,;:!?)":
                close()
        else:
            close()
    close()
    return found


def _flatten(value: Any) -> Iterator[str]:
    if value is None:
        return
    if isinstance(value, dict):
        for key, item in value.items():
            yield str(key)
            yield from _flatten(item)
    elif isinstance(value, list):
        for item in value:
            yield from _flatten(item)
    else:
        yield str(value)


@dataclass
class Knowledge:
    """What someone is told: its text (folded), and the dates and amounts in it."""

    texts: list[str] = field(default_factory=list)
    dates: set[tuple[int, int, int]] = field(default_factory=set)
    amounts: set[float] = field(default_factory=set)
    _blob: str | None = field(default=None, repr=False, compare=False)

    def add(self, value: Any) -> None:
        """Learn ``value``: text, or any JSON data (keys and values)."""
        self._blob = None
        for text in _flatten(value):
            self.texts.append(text.casefold())
            if not any(c.isdigit() for c in text):
                continue
            for pattern in _DATE_PATTERNS:
                self.dates.update(d for m in pattern.finditer(text) if (d := _date_value(m)) is not None)
            for match in _NUMBER.finditer(text):
                self.amounts.add(_number_value(match.group("num")))

    def copy(self) -> Knowledge:
        """What is known now, apart from what is learnt later."""
        return Knowledge(list(self.texts), set(self.dates), set(self.amounts))

    def merged(self, other: Knowledge) -> Knowledge:
        """What both know."""
        return Knowledge([*self.texts, *other.texts], self.dates | other.dates, self.amounts | other.amounts)

    def knows(self, fact: Fact) -> bool:
        """Whether ``fact`` is in what was learnt (a date in any spelling, an amount by value)."""
        if fact.kind == "date" and isinstance(fact.value, tuple):
            year, month, day = fact.value
            return any(m == month and d == day and (not year or not y or y == year) for y, m, d in self.dates)
        if fact.kind == "amount" and isinstance(fact.value, float) and fact.value in self.amounts:
            return True
        # As a whole word or id: ORD-1 is not known because ORD-10042 is.
        words = fact.text.split() if fact.kind == "name" else [fact.text.lstrip("#")]
        if self._blob is None:
            self._blob = "\n".join(self.texts)
        blob = self._blob
        return all(re.search(rf"(?<![\w-]){re.escape(word.casefold())}(?![\w-])", blob) for word in words)


def _persona_knowledge(persona: Persona) -> Knowledge:
    knowledge = Knowledge()
    knowledge.add(persona.model_dump(mode="json", exclude={"style"}))
    return knowledge


# ------------------------------------------------------------------------------------------------------------
# Rules


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
    if isinstance(case, SimulationCase):
        for index, step in enumerate(case.steps):
            # What the user is told up to this step: its own and earlier steps' (event payloads reach the agent).
            everything.add([step.goal, step.response_guide, step.say, step.static_utterance])
            everything.add(step.event.payload if step.event else None)
            known = everything.copy()
            where = (*base, "steps", index)
            if step.success_criteria:
                yield _Needs((*where, "success_criteria"), step.success_criteria, known, f"step {index + 1}")
            for c, check in enumerate(step.checks):
                for path, text in _texts_of_check(check, (*where, "checks", c)):
                    yield _Needs(path, text, known, f"step {index + 1}")
    elif isinstance(case, ScenarioCase):
        everything.add([case.goal, case.response_guide, case.say])
        if case.success_criteria:
            yield _Needs((*base, "success_criteria"), case.success_criteria, everything, "the goal")
        for c, check in enumerate(case.checks):
            for path, text in _texts_of_check(check, (*base, "checks", c)):
                yield _Needs(path, text, everything, "the goal")
    else:
        for index, turn in enumerate(case.turns):
            everything.add([turn.user, turn.event.payload if turn.event else None])
            if turn.expect is not None:
                known = everything.copy()
                for path, text in _texts_of_check(turn.expect, (*base, "turns", index, "expect")):
                    yield _Needs(path, text, known, f"turn {index + 1}")
    for e, expectation in enumerate(case.expectations):
        for path, text in _texts_of_check(expectation, (*base, "expectations", e)):
            yield _Needs(path, text, everything, "the case")


def _fact_rule(path: DataPath, fact: Fact) -> str:
    """Which rule reports a fact no one gives: see the three rules below."""
    if fact.kind == "name":
        return "unknown-name"
    passed_on = "arguments" in path or "variable" in path or "variables" in path
    return "unknown-fact" if passed_on or fact.kind in ("id", "email") else "unknown-value"


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
    for need, fact, without in view.missing_facts:
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


_REQUEST_VERBS = _words(
    """ask request get find cancel change update book order buy purchase return refund exchange reset check track
    schedule reschedule report open close upgrade downgrade apply subscribe unsubscribe add remove delete transfer
    pay reserve renew register sign log obtain arrange move redeem claim dispute compare enquire inquire verify
    activate deactivate block unblock"""
    # German: infinitives end a clause ("die Bestellung stornieren"), imperatives start it.
    """ fragen erfragen stornieren ändern buchen bestellen kaufen zurückgeben erstatten kündigen prüfen verfolgen
    reklamieren umtauschen beantragen anmelden abmelden frage storniere ändere buche bestelle kaufe kündige prüfe
    beantrage"""
)
_JOINERS = re.compile(r"\s*(?:,?\s+(?:and then|and also|and|then|und dann|und|dann|sowie)\s+|;\s*)", re.I)
_LEADING = {"also", "then", "please", "bitte", "auch", "dann", "to"}


def _request_clause(clause: str) -> bool:
    words = [w.strip(".,!?;:\"'").casefold() for w in clause.split()]
    words = [w for w in words if w]
    while words and words[0] in _LEADING:
        words = words[1:]
    if not words:
        return False
    # English imperatives start the clause; German infinitives end it.
    return words[0] in _REQUEST_VERBS or words[-1] in _REQUEST_VERBS


def _two_requests(goal: str) -> str | None:
    questions = [q for q in re.split(r"(?<=\?)", goal) if q.strip().endswith("?")]
    if len(questions) >= 2:
        return f"asks {len(questions)} questions"
    clauses = _JOINERS.split(goal)
    requests = [c.strip() for c in clauses if _request_clause(c)]
    if len(requests) >= 2:
        return "asks for " + " and ".join(_quoted(c.rstrip(".")) for c in requests[:3])
    return None


@rule("two-goals", "warning")
def two_goals(view: SuiteView) -> Iterator[Hit]:
    """A goal asks for two things at once: two questions, or two requests joined by and / then / und.

    The simulated user works on one goal at a time and the check decides it once: with two requests one gets
    lost, or the step is decided on the half that happened first.
    """
    for base, case in view.cases():
        goals: list[tuple[DataPath, str]] = []
        if isinstance(case, ScenarioCase):
            goals.append(((*base, "goal"), case.goal))
        elif isinstance(case, SimulationCase):
            goals += [((*base, "steps", i, "goal"), s.goal) for i, s in enumerate(case.steps) if s.goal]
        for path, goal in goals:
            found = _two_requests(goal)
            if found:
                yield Hit(
                    path,
                    f"the goal {found}: the simulated user pursues one thing at a time",
                    "split it into two steps, each with its own goal and success criteria",
                )


_VAGUE_WORDS = _words(
    # who, and glue
    """agent assistant bot chatbot user customer caller person they them it the a an is are be was were to of and
    or in with for their his her its that this all any some s by on well has have does do so as way manner
    overall who"""
    # saying anything
    """ responds respond response responses replies reply replied answers answer answered says say said something
    talks communicates reacts engages acknowledges acknowledge interacts handles handle handled deals addresses
    address addressed request requests question questions query queries message messages input conversation
    interaction need needs issue concern concerns inquiry topic provides provide gives give offers information
    info assistance help helps support supports resolves solution"""
    # praise
    """ helpful helpfully polite politely friendly nice good great appropriate appropriately properly proper
    correct correctly adequate adequately reasonable reasonably relevant useful satisfactory satisfied satisfies
    satisfy happy successfully successful accurately accurate clearly clear professional professionally courteous
    courteously respectful respectfully effectively effective sensible sensibly meaningful meaningfully fine okay
    ok kind empathetic"""
)


def _quoted(text: str, limit: int = 80) -> str:
    """``text`` in quotes, shortened to ``limit`` characters for a message."""
    return repr(text if len(text) <= limit else text[: limit - 1] + "…")


def _vague(text: str) -> bool:
    words = re.findall(r"[a-zäöüß']+", text.casefold())
    return bool(words) and all(w.strip("'") in _VAGUE_WORDS for w in words)


@rule("vague-criteria", "warning")
def vague_criteria(view: SuiteView) -> Iterator[Hit]:
    """Criteria any reply meets: no deterministic check and only vague words, or nothing to check at all.

    "The agent responds helpfully" is met by whatever the agent says; a goal step with neither
    ``success_criteria`` nor ``checks`` is complete after the agent's first reply. Either way the step tests
    nothing.
    """
    fix = "say what the agent must do or say (a fact, an action, a tool call), or add a deterministic check"
    for base, case in view.cases():
        places: list[tuple[DataPath, str | None, list[ExpectationSpec], str]] = []
        if isinstance(case, SimulationCase):
            places += [
                ((*base, "steps", i), s.success_criteria, s.checks, f"step {i + 1}")
                for i, s in enumerate(case.steps)
                if s.goal is not None
            ]
        elif isinstance(case, ScenarioCase):
            places.append((base, case.success_criteria, case.checks, "the goal"))
        for where, criteria, checks, what in places:
            if any(_deterministic(check) for check in checks):
                continue
            if criteria is None and not checks:
                if isinstance(case, SimulationCase):
                    yield Hit(
                        (*where, "goal"),
                        f"{what} has neither success_criteria nor checks: it is complete after any reply",
                        "add success_criteria or checks that say when the step is reached",
                    )
                continue
            if criteria is not None and _vague(criteria):
                yield Hit(
                    (*where, "success_criteria"),
                    f"the success criteria of {what} ({_quoted(criteria)}) are met by almost any reply",
                    fix,
                )
            for c, check in enumerate(checks):
                if check.text and _vague(check.text):
                    yield Hit((*where, "checks", c), f"the check {_quoted(check.text)} is met by almost any reply", fix)
        for e, expectation in enumerate(case.expectations):
            if not _deterministic(expectation) and expectation.message is None and _vague(expectation.text or ""):
                yield Hit(
                    (*base, "expectations", e),
                    f"the expectation {_quoted(expectation.text or '')} is met by almost any reply",
                    fix,
                )


@rule("say-beyond-max-turns", "error")
def say_beyond_max_turns(view: SuiteView) -> Iterator[Hit]:
    """``max_turns`` is lower than the number of scripted ``say`` lines of the same step (or scenario).

    The user says one line per turn, so the lines after ``max_turns`` are never said: the step ends (failed,
    or unsure) before its own script is over.
    """
    for base, case in view.cases():
        places: list[tuple[DataPath, int, int, str]] = []
        if isinstance(case, SimulationCase):
            places += [
                ((*base, "steps", i), s.max_turns, len(s.say), f"step {i + 1}")
                for i, s in enumerate(case.steps)
                if s.goal is not None
            ]
        elif isinstance(case, ScenarioCase):
            places.append((base, case.max_turns, len(case.say), "the scenario"))
        for where, max_turns, lines, what in places:
            if lines > max_turns:
                given = "max_turns" in _raw(view, where)
                yield Hit(
                    (*where, "max_turns") if given else (*where, "say"),
                    f"{what} has {lines} say lines but max_turns is {max_turns}"
                    + ("" if given else " (the default)")
                    + f": {_line_range(max_turns + 1, lines)} never said",
                    f"set max_turns to at least {lines}, or drop the lines that are not needed",
                )


@rule("say-split-by-comma", "warning")
def say_split_by_comma(view: SuiteView) -> Iterator[Hit]:
    """A ``say`` list written in brackets whose commas cut a sentence into lines.

    In ``[...]`` a comma separates items: ``say: ["Yes", block it please]`` is two lines, said in two turns, not
    one sentence. Found when an unquoted line of words in lower case follows a one-word line ("yes", "sure",
    "hello"), as the rest of its sentence; lines each in quotes are taken as meant.
    """
    for base, case in view.cases():
        places: list[DataPath] = []
        if isinstance(case, SimulationCase):
            places += [(*base, "steps", i, "say") for i, step in enumerate(case.steps) if len(step.say) > 1]
        elif isinstance(case, ScenarioCase) and len(case.say) > 1:
            places.append((*base, "say"))
        for where in places:
            node = view.located.node(where)
            if not isinstance(node, SequenceNode) or not node.flow_style:
                continue
            items = [item for item in node.value if isinstance(item, ScalarNode)]
            cut = next((i for i in range(1, len(items)) if _continues(items[i - 1].value, items[i])), None)
            if cut is None:
                continue
            lines = [item.value for item in items]
            meant = [*lines[: cut - 1], f"{lines[cut - 1]}, {lines[cut]}", *lines[cut + 1 :]]
            yield Hit(
                where,
                f"say is {len(lines)} lines ({', '.join(_quoted(line) for line in lines)}), said one per turn: "
                "in [...] a comma separates the lines",
                f"if one sentence was meant, write it whole in quotes: say: [{', '.join(map(json.dumps, meant))}]; "
                "if these are separate lines, put each in quotes",
            )


def _continues(before: str, item: ScalarNode) -> bool:
    """Whether the unquoted ``item`` reads as the rest of a sentence that ``before`` (one word, such as "yes",
    "sure" or "hello") starts: words in lower case."""
    words = before.strip().split()
    return not item.style and item.value[:1].islower() and " " in item.value.strip() and len(words) == 1


def _line_range(first: int, last: int) -> str:
    return f"line {first} is" if first == last else f"lines {first}-{last} are"


def _raw(view: SuiteView, where: DataPath) -> Any:
    current: Any = view.located.data
    for part in where:
        try:
            current = current[part]
        except (KeyError, IndexError, TypeError):
            return {}
    return current if isinstance(current, dict) else {}


# -- contradictions ------------------------------------------------------------------------------------------


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

    if isinstance(case, SimulationCase):
        return [
            (
                i,
                [_as_check((*base, "steps", i, "checks", c), check) for c, check in enumerate(step.checks)],
                referenced(step.expectations),
            )
            for i, step in enumerate(case.steps)
        ]
    if isinstance(case, ScenarioCase):
        return [(0, [_as_check((*base, "checks", c), check) for c, check in enumerate(case.checks)], [])]
    return [
        (
            i,
            [_as_check((*base, "turns", i, "expect"), turn.expect)] if turn.expect else [],
            referenced(turn.expectations),
        )
        for i, turn in enumerate(case.turns)
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
        if isinstance(case, GoldenCase):
            continue
        count = kind_of(case).step_count(case)
        for index, deciding, _ in _step_scopes(base, case):
            for first, second in _pairs(deciding):
                why = _conflict(first, second)
                if why is None:
                    continue
                what = f"step {index + 1}" if isinstance(case, SimulationCase) else "the goal"
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
            if isinstance(case, GoldenCase):
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
    if isinstance(case, ScenarioCase):
        parts: list[Any] = [case.goal, case.success_criteria, case.say, case.response_guide]
    elif isinstance(case, SimulationCase):
        parts = [[s.goal, s.static_utterance, s.event, s.success_criteria, s.response_guide, s.say] for s in case.steps]
    else:
        parts = [[t.user, t.event] for t in case.turns]
    return " ".join(" ".join(_flatten(_plain(parts))).casefold().split())


def _case_checks(case: Case) -> Any:
    """What a case checks, which near-duplicates share exactly (another check is another test)."""
    kind = kind_of(case)
    golden = [t.expect for t in case.turns] if isinstance(case, GoldenCase) else []
    return _plain([[check for _, check in kind.checks_written(case)], golden, case.expectations])


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
                what = (
                    "steps" if isinstance(case, SimulationCase) else "turns" if isinstance(case, GoldenCase) else "goal"
                )
                yield Hit(
                    (*base, "name"),
                    f"case {case.name!r} has {same} {what} as case {other.name!r} (line {line}), with the same "
                    "checks, personas and session parameters",
                    "remove one, or make them differ in what they test (goal, facts, persona)",
                )
                break
        groups[key].append((base, case, words, vocabulary))


# ------------------------------------------------------------------------------------------------------------
# Running the rules


@dataclass
class LintReport:
    """What ``lint`` found: the files read, the suites linted, validation errors and findings."""

    files: list[Path] = field(default_factory=list)
    suites: list[LoadedSuite] = field(default_factory=list)
    errors: list[ConfigError] = field(default_factory=list)
    findings: list[Finding] = field(default_factory=list)

    def counts(self) -> dict[str, int]:
        """Findings per severity."""
        return {severity: sum(f.severity == severity for f in self.findings) for severity in SEVERITIES}

    def exit_code(self, *, strict: bool = False) -> int:
        """2 for invalid files, 1 for an error finding (or a warning with ``strict``), else 0."""
        if self.errors:
            return 2
        failing = ("error", "warning") if strict else ("error",)
        return 1 if any(f.severity in failing for f in self.findings) else 0


def suite_view(loaded: LoadedSuite) -> SuiteView | None:
    """The view the rules read of a loaded suite (None if its file no longer parses)."""
    text, _ = read_text(loaded.path)
    located = parse_yaml(text, str(loaded.path))[0] if text is not None else None
    if located is None:
        return None
    return SuiteView(loaded, located, _display_path(str(loaded.path)), text or "")


def lint_suite(loaded: LoadedSuite, rules: Iterable[Rule] | None = None) -> list[Finding]:
    """Run ``rules`` (default: all) over one loaded suite; findings sorted by place."""
    view = suite_view(loaded)
    if view is None:
        return []
    findings: list[Finding] = []
    for entry in RULES.values() if rules is None else rules:
        for hit in entry.check(view):
            line, column = _place(view, hit.path)
            findings.append(
                Finding(entry.id, entry.severity, view.file, line, column, format_path(hit.path), hit.message, hit.fix)
            )
    return sorted(set(findings), key=Finding.sort_key)


def lint_paths(paths: Iterable[str | Path], *, ignore: Iterable[str] = ()) -> LintReport:
    """Validate the files under ``paths`` (as ``validate`` does) and lint every suite that loaded with every
    rule but those in ``ignore`` (rule ids; an unknown one is an :class:`InputError`)."""
    skipped = set(ignore)
    unknown = sorted(skipped - set(RULES))
    if unknown:
        hint = did_you_mean(unknown[0], list(RULES))
        raise InputError(f"no lint rule {unknown[0]!r}{hint}; the rules are {', '.join(RULES)}")
    rules = [entry for entry in RULES.values() if entry.id not in skipped]
    validation = validate_paths(paths)
    report = LintReport(files=validation.files, suites=validation.suites, errors=validation.errors)
    for loaded in validation.suites:
        report.findings.extend(lint_suite(loaded, rules))
    return report
