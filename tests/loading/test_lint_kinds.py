"""The spec lint asks a case's kind (``simulator.kinds``) what differs between kinds; it never tests the case's
class or its ``kind:`` itself, so a new kind of case needs no edit of the rules."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

LINT = Path(__file__).resolve().parents[2] / "simulator" / "loading" / "lint"
CASE_CLASSES = {"GoldenCase", "ScenarioCase", "SimulationCase"}
KIND_NAMES = {"golden", "scenario", "simulation"}


def kind_switches(source: str) -> list[int]:
    """Lines of ``source`` that test a case's class or compare with a kind's name."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "isinstance":
            names = {n.id for n in ast.walk(node.args[1]) if isinstance(n, ast.Name)} if len(node.args) > 1 else set()
            if names & CASE_CLASSES:
                found.append(node.lineno)
        elif isinstance(node, ast.Compare):
            values = {c.value for c in [node.left, *node.comparators] if isinstance(c, ast.Constant)}
            if values & KIND_NAMES:
                found.append(node.lineno)
    return found


@pytest.mark.parametrize("path", sorted(LINT.glob("*.py")), ids=lambda path: path.name)
def test_the_lint_rules_ask_the_kind(path: Path) -> None:
    lines = kind_switches(path.read_text(encoding="utf-8"))
    assert not lines, f"{path.name} switches on the kind of case at lines {lines}: ask kind_of(case) instead"


@pytest.mark.parametrize(
    ("source", "expected"),
    [
        ("if isinstance(case, SimulationCase):\n    pass", [1]),
        ("x = isinstance(case, (GoldenCase, ScenarioCase))", [1]),
        ("x = case.kind == 'golden'", [1]),
        ("x = 'scenario' != kind", [1]),
        ("x = kind_of(case).checks_replies\ny = isinstance(check, ExpectationSpec)", []),
        ("x = fact.kind == 'name'", []),
    ],
)
def test_kind_switches_are_found(source: str, expected: list[int]) -> None:
    assert kind_switches(source) == expected
