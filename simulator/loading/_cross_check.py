"""The checks that span a suite's keys and files: declared variables, expectation references, personas, unique
case names, tools, and the code the files name."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from simulator.code_refs import CodeRefError, resolve, resolve_callable
from simulator.errors import ConfigError
from simulator.kinds import kind_of
from simulator.loading._adapters import adapter, try_model
from simulator.loading._paths import PERSONAS_DIR, display_path
from simulator.loading._schema import closest, describe_value, did_you_mean, tool_parameter_problems
from simulator.loading._yaml import DataPath, Located, format_path
from simulator.models import (
    AgentConfig,
    GoldenCase,
    Persona,
    ScenarioCase,
    SimulationCase,
    Suite,
    ToolFake,
    normalize_reference,
)
from simulator.models.agent import BUILTIN_AGENT_TYPES, json_type_matches
from simulator.models.case import ExpectationSpec
from simulator.models.faults import ToolFault
from simulator.plugins import plugins
from simulator.safety import one_line


def _uninstalled_plugins(agent: AgentConfig | None) -> list[tuple[DataPath, str]]:
    """What ``agent`` names that is not installed here, at its key inside the agent: a type that is neither built
    in nor an agent plugin's, a tool backend that no tool plugin provides."""
    if agent is None:
        return []
    found: list[tuple[DataPath, str]] = []
    if agent.from_plugin and agent.type not in plugins("agents"):
        names = [*sorted(BUILTIN_AGENT_TYPES), *plugins("agents")]
        found.append(
            (
                ("type",),
                f"type must be one of {', '.join(names)} or an installed agent plugin, got "
                f"{describe_value(agent.type)}{did_you_mean(agent.type, names)}",
            )
        )
    for index, tool in enumerate(agent.tools):
        if tool.backend is not None and tool.backend not in plugins("tools"):
            installed = ", ".join(plugins("tools")) or "none"
            found.append(
                (
                    ("tools", index, "backend"),
                    f"no tool plugin named {tool.backend!r} is installed{did_you_mean(tool.backend, plugins('tools'))}"
                    f" (installed: {installed}): install the package that provides it (simulator plugins lists "
                    "what is installed)",
                )
            )
    return found


@dataclass
class _SuiteParts:
    """What the cross-checks need of a suite; from a valid suite, or salvaged from one with errors."""

    agent: AgentConfig | str | None
    personas: list[str]
    scorers: list[str]
    tool_fakes: list[tuple[int, ToolFake]]
    cases: list[tuple[int, GoldenCase | ScenarioCase | SimulationCase]]
    faults: list[tuple[int, ToolFault]] = field(default_factory=list)

    @classmethod
    def of(cls, suite: Suite) -> _SuiteParts:
        return cls(
            suite.agent,
            suite.personas,
            suite.scorers,
            list(enumerate(suite.tool_fakes)),
            list(enumerate(suite.cases)),
            list(enumerate(suite.faults)),
        )

    @classmethod
    def salvage(cls, data: dict[str, Any], cases_key: str) -> _SuiteParts:
        case_adapter = adapter("simulation" if cases_key == "evals" else "case")
        raw_cases = data.get(cases_key)
        raw_fakes = data.get("tool_fakes")
        raw_personas = data.get("personas")
        raw_scorers = data.get("scorers")
        return cls(
            # An inline agent with broken tool parameters is not salvaged, as one the models reject is not.
            agent=try_model(adapter("agent_or_path"), data["agent"])
            if data.get("agent") is not None and not tool_parameter_problems(data["agent"])
            else None,
            personas=[p for p in raw_personas if isinstance(p, str)] if isinstance(raw_personas, list) else [],
            scorers=[p for p in raw_scorers if isinstance(p, str)] if isinstance(raw_scorers, list) else [],
            tool_fakes=[
                (i, fake)
                for i, raw in enumerate(raw_fakes if isinstance(raw_fakes, list) else [])
                if (fake := try_model(adapter("fake"), raw)) is not None
            ],
            cases=[
                (i, case)
                for i, raw in enumerate(raw_cases if isinstance(raw_cases, list) else [])
                if (case := try_model(case_adapter, raw)) is not None
            ],
        )


class _CrossCheck:
    """Rules that span keys and files: declared variables, references, personas, names, tools."""

    def __init__(  # noqa: PLR0917 - one private call site, every argument named there
        self,
        errors: list[ConfigError],
        path: Path,
        located: Located,
        parts: _SuiteParts,
        cases_key: str,
        agent: AgentConfig | None,
        agent_path: Path | None,
        personas: dict[str, Persona],
        personas_dir: Path | None,
    ) -> None:
        self.errors = errors
        self.path = path
        self.located = located
        self.parts = parts
        self.cases_key = cases_key
        self.agent = agent
        self.agent_path = agent_path
        self.personas = personas
        self.personas_dir = personas_dir

    def error(self, path: DataPath, message: str, *, key: bool = False) -> None:
        if self.located.is_flagged(path):
            return
        position = self.located.position(path, key=key)
        self.errors.append(ConfigError(self.path, position.line, position.column, format_path(path), message))

    def run(self) -> None:
        agent_given = isinstance(self.located.data, dict) and "agent" in self.located.data  # its errors say why
        if self.agent is None and self.agent_path is None and self.parts.cases and not agent_given:
            # Every conversation would end in an error: say so now, before anything runs or is stored.
            self.error(
                (),
                "no agent to test: add `agent:` to this file (a mapping, or the path of an agent file), "
                "or put an agent.yaml beside it or in a folder above",
            )
        inline = self.parts.agent if not isinstance(self.parts.agent, str) else None
        for where, problem in _uninstalled_plugins(inline):
            self.error(("agent", *where), problem)
        self._personas(("personas",), self.parts.personas)
        self._scorers(("scorers",), self.parts.scorers)
        self._tool_fakes(("tool_fakes",), self.parts.tool_fakes)
        self._faults(("faults",), self.parts.faults)
        self._unique_names()
        for index, case in self.parts.cases:
            base: DataPath = (self.cases_key, index)
            self._personas((*base, "personas"), case.personas)
            self._scorers((*base, "scorers"), case.scorers)
            self._session_parameters(base, case.session_parameters)
            self._tool_fakes((*base, "tool_fakes"), list(enumerate(case.tool_fakes)))
            self._faults((*base, "faults"), list(enumerate(case.faults)))
            self._expectations(base, case)

    def _unique_names(self) -> None:
        # Checked on the raw data, so that cases with other errors still count.
        raw_cases = self.located.data.get(self.cases_key)
        first_line: dict[str, int] = {}
        for index, raw in enumerate(raw_cases if isinstance(raw_cases, list) else []):
            name = raw.get("name") if isinstance(raw, dict) else None
            if not isinstance(name, str):
                continue
            where: DataPath = (self.cases_key, index, "name")
            if name in first_line:
                self.error(
                    where,
                    f"case name {name!r} is used twice (first on line {first_line[name]}): "
                    "case names must be unique in a suite",
                )
            else:
                first_line[name] = self.located.position(where).line

    def _personas(self, base: DataPath, names: list[str]) -> None:
        for index, name in enumerate(names):
            if name in self.personas:
                continue
            if self.personas_dir is None:
                self.error(
                    (*base, index),
                    f"unknown persona {name!r}: no {PERSONAS_DIR}/ folder found beside this file or above it",
                )
            else:
                known = ", ".join(sorted(self.personas)) or "none"
                hint = did_you_mean(name, self.personas)
                folder = one_line(display_path(str(self.personas_dir)))
                self.error((*base, index), f"unknown persona {name!r}{hint} (personas in {folder}: {known})")

    def _scorers(self, base: DataPath, names: list[str]) -> None:
        installed = plugins("scorers")
        for index, name in enumerate(names):
            if name not in installed:
                known = ", ".join(sorted(installed)) or "none"
                self.error(
                    (*base, index),
                    f"no scorer plugin named {name!r} is installed{did_you_mean(name, installed)} (installed: "
                    f"{known}): install the package that provides it (simulator plugins lists what is installed)",
                )

    def _session_parameters(self, base: DataPath, parameters: dict[str, Any]) -> None:
        for name, value in parameters.items():
            where = (*base, "session_parameters", name)
            if self.agent is None:
                if self.located.data.get("agent") is not None and self.agent_path is None:
                    continue  # the suite's own `agent:` has errors, which say why
                source = "its agent file has errors" if self.agent_path else "no agent config was found"
                self.error(
                    where,
                    f"session parameter {name!r} cannot be checked against the agent's variables: {source} "
                    f"(add `agent:` to the suite, or an agent.yaml beside this file declaring variables: {name}: ...)",
                    key=True,
                )
                continue
            declared = self.agent.variables
            if name not in declared:
                names = ", ".join(sorted(declared)) or "none"
                self.error(
                    where,
                    f"session parameter {name!r} is not a variable declared by agent {self.agent.name!r}"
                    f"{did_you_mean(name, declared)} (declared: {names}); "
                    f"declare it under `variables:` in {one_line(display_path(str(self.agent_path)))}",
                    key=True,
                )
                continue
            expected = declared[name].type
            if not json_type_matches(value, expected):
                self.error(where, f"variable {name!r} is declared as {expected}, got {describe_value(value)}")

    def _declared_tools(self) -> list[str] | None:
        if self.agent is None or not self.agent.tools:
            return None
        return [tool.name for tool in self.agent.tools]

    def _tool_name(self, where: DataPath, name: str) -> None:
        tools = self._declared_tools()
        if tools is not None and name not in tools:
            self.error(
                where,
                f"tool {name!r} is not declared by agent {self.agent.name if self.agent else ''!r}"
                f"{did_you_mean(name, tools)} (declared: {', '.join(tools)})",
            )

    def _tool_fakes(self, base: DataPath, fakes: list[tuple[int, ToolFake]]) -> None:
        for index, fake in fakes:
            self._tool_name((*base, index, "tool"), fake.tool)

    def _faults(self, base: DataPath, faults: list[tuple[int, ToolFault]]) -> None:
        for index, fault in faults:
            if fault.tool != "*":
                self._tool_name((*base, index, "tool"), fault.tool)

    def _expectations(self, base: DataPath, case: GoldenCase | ScenarioCase | SimulationCase) -> None:
        texts = {normalize_reference(e.text): e.text for e in case.expectations if e.text}
        for index, expectation in enumerate(case.expectations):
            self._expectation_tools((*base, "expectations", index), expectation)
        kind = kind_of(case)
        for at, check in kind.checks_written(case):
            self._expectation_tools((*base, *at), check)
        for at, name in kind.tool_names_written(case):
            self._tool_name((*base, *at), name)
        for at, name in kind.variables_written(case):
            self._variable_name((*base, *at), name)
        references = [((*base, *at), ref) for at, ref in kind.references_written(case)]
        for where, ref in references:
            if normalize_reference(ref) in texts:
                continue
            if texts:
                near = closest(normalize_reference(ref), list(texts))
                hint = f"; did you mean {texts[near]!r}?" if near else ""
                listed = "; ".join(repr(t) for t in texts.values())
                message = f"no expectation of this case has the text {ref!r}{hint} (expectations: {listed})"
            else:
                message = f"no expectation of this case has the text {ref!r}: this case has no `expectations:`"
            self.error(where, message)

    def _variable_name(self, where: DataPath, name: str) -> None:
        # Only against agents that declare variables: an undeclared agent may set any.
        if self.agent is None or not self.agent.variables or name in self.agent.variables:
            return
        declared = self.agent.variables
        self.error(
            where,
            f"variable {name!r} is not declared by agent {self.agent.name!r}{did_you_mean(name, declared)} "
            f"(declared: {', '.join(sorted(declared))})",
        )

    def _expectation_tools(self, where: DataPath, expectation: ExpectationSpec) -> None:
        if expectation.variable is not None:
            self._variable_name((*where, "variable", "name"), expectation.variable.name)
        if expectation.tool_call is not None:
            self._tool_name((*where, "tool_call", "name"), expectation.tool_call.name)
        if expectation.after is not None:
            self._tool_name((*where, "after"), expectation.after)


def _code_problem(ref: str, what: str, folders: Sequence[Path]) -> str | None:
    """What is wrong with the code reference ``ref`` (imported, not called), or None when it is usable."""
    try:
        if what == "graph":
            graph = resolve(ref, what=what, folders=folders)
            if not callable(getattr(graph, "ainvoke", None)):
                return (
                    f"{ref!r} is not a compiled LangGraph graph (it has no `ainvoke`): point `graph` at the result "
                    "of `builder.compile()`"
                )
        else:
            resolve_callable(ref, what=what, folders=folders)
    except CodeRefError as exc:
        return str(exc)
    return None
