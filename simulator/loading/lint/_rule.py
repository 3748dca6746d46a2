"""Lint rules and what they read: a rule is a function registered with :func:`rule`, reading a :class:`SuiteView`
and yielding :class:`Hit` s that become :class:`Finding` s."""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any, Literal

from simulator.kinds import kind_of
from simulator.loading._load import LoadedSuite
from simulator.loading._yaml import DataPath, Located
from simulator.loading.lint._facts import Knowledge
from simulator.models import (
    Case,
    Persona,
)
from simulator.safety import one_line

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
    #: What rules found once for all of them, by name (the facts nobody gives: three rules report them).
    memo: dict[str, Any] = field(default_factory=dict, repr=False, compare=False)

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
            knowledge.add(agent.judge_instructions)
            knowledge.add({name: v.default for name, v in agent.variables.items()})
            knowledge.add([[tool.simulate.behaviour, tool.description] for tool in agent.tools if tool.simulate])
        return knowledge

    def declared_tools(self) -> list[str] | None:
        """The agent's declared tools, or None when there is no agent to ask."""
        agent = self.loaded.agent
        return None if agent is None else [tool.name for tool in agent.tools]


def _place(view: SuiteView, path: DataPath) -> tuple[int, int]:
    # A key's own position when the path ends in a key (`success_criteria:`), an item's when in an index.
    position = view.located.position(path, key=bool(path) and isinstance(path[-1], str))
    return position.line, position.column
