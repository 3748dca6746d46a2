"""No switch on a case's kind outside ``simulator.kinds``, no switch on an agent's type outside its config model.

What differs between golden, scenario and simulation cases is asked of their ``Kind`` (``simulator.kinds``); what
differs between agent types is asked of the agent config (``simulator.models.agent``) or the adapter registry
(``simulator.agents``). A new comparison with a kind's or a built-in agent type's name, or an ``isinstance`` of a
case or agent config class, anywhere else in the package fails here, with the place to move it.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

import simulator
from simulator.kinds import KINDS
from simulator.models.agent import BUILTIN_AGENT_TYPES

PACKAGE = Path(simulator.__file__).parent
CASE_CLASSES = frozenset({"GoldenCase", "ScenarioCase", "SimulationCase"})
AGENT_CLASSES = frozenset(
    {"PythonAgent", "HttpAgent", "LitellmAgent", "LanggraphAgent", "RealtimeAgent", "PluginAgent"}
)
#: Where the kinds and the agent configs are defined: the one place that may tell them apart.
ALLOWED = ("kinds.py", "models/")


def _names(node: ast.expr, names: frozenset[str]) -> bool:
    """Whether ``node`` is one of ``names`` as a literal string, or a tuple, list or set holding one."""
    if isinstance(node, ast.Constant):
        return node.value in names
    if isinstance(node, (ast.Tuple, ast.List, ast.Set)):
        return any(_names(element, names) for element in node.elts)
    return False


def _classes(node: ast.expr, names: frozenset[str]) -> bool:
    """Whether ``node`` (isinstance's second argument) names one of the classes ``names``."""
    if isinstance(node, ast.Name):
        return node.id in names
    if isinstance(node, ast.Attribute):
        return node.attr in names
    if isinstance(node, ast.Tuple):
        return any(_classes(element, names) for element in node.elts)
    if isinstance(node, ast.BinOp):
        return _classes(node.left, names) or _classes(node.right, names)
    return False


def _is_type_field(node: ast.expr) -> bool:
    return isinstance(node, ast.Attribute) and node.attr == "type"


def kind_switches(tree: ast.AST) -> list[int]:
    """The lines of ``tree`` that tell case kinds apart: a comparison with a kind's name, an ``isinstance`` of a
    case class, a dict keyed by two or more kind names, or a ``match`` on a kind's name."""
    kinds = frozenset(KINDS)
    found: list[int] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Compare):
            hit = any(_names(side, kinds) for side in (node.left, *node.comparators))
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "isinstance":
            hit = len(node.args) == 2 and _classes(node.args[1], CASE_CLASSES)
        elif isinstance(node, ast.Dict):
            hit = sum(1 for key in node.keys if key is not None and _names(key, kinds)) >= 2
        elif isinstance(node, ast.MatchValue):
            hit = _names(node.value, kinds)
        else:
            continue
        if hit:
            found.append(node.lineno)
    return sorted(found)


def agent_type_switches(tree: ast.AST) -> list[int]:
    """The lines of ``tree`` that tell agent types apart: a ``.type`` compared with a built-in type's name or the
    list of them, an ``isinstance`` of an agent config class, or a ``match`` on a built-in type's name."""
    types = frozenset(BUILTIN_AGENT_TYPES)
    found: list[int] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Compare):
            sides = (node.left, *node.comparators)
            listed = any(isinstance(side, ast.Name) and side.id == "BUILTIN_AGENT_TYPES" for side in sides)
            hit = any(_is_type_field(side) for side in sides) and (listed or any(_names(s, types) for s in sides))
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "isinstance":
            hit = len(node.args) == 2 and _classes(node.args[1], AGENT_CLASSES)
        elif isinstance(node, ast.MatchValue):
            hit = _names(node.value, types)
        else:
            continue
        if hit:
            found.append(node.lineno)
    return sorted(found)


def _modules(skip: tuple[str, ...]) -> list[tuple[str, ast.AST]]:
    found: list[tuple[str, ast.AST]] = []
    for path in sorted(PACKAGE.rglob("*.py")):
        name = path.relative_to(PACKAGE).as_posix()
        if not name.startswith(skip):
            found.append((name, ast.parse(path.read_text(encoding="utf-8"), filename=name)))
    return found


def test_no_module_outside_the_kinds_tells_case_kinds_apart() -> None:
    found = [f"simulator/{name}:{line}" for name, tree in _modules(ALLOWED) for line in kind_switches(tree)]
    assert not found, (
        "these places tell case kinds apart: ask the case's Kind instead (simulator.kinds: kind_of(case), "
        "kind_named(transcript.kind)), adding a method or attribute named for the question if none answers it: "
        + ", ".join(found)
    )


def test_no_module_outside_the_agent_configs_tells_agent_types_apart() -> None:
    found = [f"simulator/{name}:{line}" for name, tree in _modules(ALLOWED) for line in agent_type_switches(tree)]
    assert not found, (
        "these places tell agent types apart: ask the agent config (simulator.models.agent: AgentBase and its "
        "types) or the adapter registry (simulator.agents) instead: " + ", ".join(found)
    )


@pytest.mark.parametrize(
    ("source", "kind", "agent"),
    [
        ('if case.kind == "golden": pass', [1], []),
        ('x = transcript.kind != "simulation"', [1], []),
        ('x = case.kind in ("scenario", "simulation")', [1], []),
        ("x = isinstance(case, SimulationCase)", [1], []),
        ("x = isinstance(case, (GoldenCase, models.ScenarioCase))", [1], []),
        ('x = {"golden": 0, "scenario": 1}', [1], []),
        ('match case.kind:\n    case "scenario":\n        pass', [2], []),
        ('if agent.type == "litellm": pass', [], [1]),
        ("x = agent.type not in BUILTIN_AGENT_TYPES", [], [1]),
        ("x = isinstance(agent, HttpAgent)", [], [1]),
        ('match agent.type:\n    case "http":\n        pass', [], [2]),
        # What is not a switch: naming a kind to look it up, one state key, other types and schemes.
        ('kind = kind_named("golden")', [], []),
        ('state = {"golden": [], "step": 0}', [], []),
        ('x = url.scheme in ("http", "https")', [], []),
        ('x = tool.kind == "lookup"', [], []),
        ("x = agent.from_plugin", [], []),
    ],
)
def test_the_scan_finds_each_way_of_telling_kinds_or_types_apart(
    source: str, kind: list[int], agent: list[int]
) -> None:
    tree = ast.parse(source)
    assert (kind_switches(tree), agent_type_switches(tree)) == (kind, agent)
