"""The example suites, agent file and personas shipped in the repository must always load cleanly."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from simulator.errors import ConfigError
from simulator.loading import load_suite, validate_paths
from simulator.models import SimulationCase

ROOT = Path(__file__).resolve().parent.parent
SHIPPED_DIRS = ("suites", "personas")
SCHEMA_LINE = re.compile(r"^# yaml-language-server: \$schema=(\S+)\s*$")
HOSTED_EVALS = ROOT / "suites" / "examples" / "hosted_evals.yaml"

#: The hosted agent builders' example, which must stay in the file byte for byte.
HOSTED_EXAMPLE = """\
evals:
  - name: "billing_refund_request"
    tags:
      - "billing"
    session_parameters:
      product_id: "prod_123"
    steps:
      - goal: "Greet the agent and ask for a refund for product_id."
        success_criteria: "Agent asks for the reason for the refund."
        max_turns: 3
      - goal: "Provide the reason and insist on the refund."
        success_criteria: "Agent agrees to process the refund or escalates."
      - static_utterance: "I want to check my balance."
"""


def _shipped_yaml_files() -> list[Path]:
    return sorted(
        path
        for directory in SHIPPED_DIRS
        for path in (ROOT / directory).rglob("*")
        if path.is_file() and path.suffix in (".yaml", ".yml")
    )


SHIPPED_FILES = _shipped_yaml_files()


def _file_id(path: Path) -> str:
    return path.relative_to(ROOT).as_posix()


def _rendered(errors: list[ConfigError]) -> str:
    return "\n".join(error.render() for error in errors)


def test_there_are_shipped_files() -> None:
    assert any(p.is_relative_to(ROOT / "suites") for p in SHIPPED_FILES)
    assert any(p.is_relative_to(ROOT / "personas") for p in SHIPPED_FILES)


def test_everything_shipped_validates() -> None:
    report = validate_paths([ROOT / directory for directory in SHIPPED_DIRS])
    assert report.ok, "shipped files have errors:\n" + _rendered(report.errors)
    assert report.suites, "no suites found"


@pytest.mark.parametrize("path", SHIPPED_FILES, ids=_file_id)
def test_each_file_validates_on_its_own(path: Path) -> None:
    report = validate_paths([path])
    assert report.ok, f"{_file_id(path)} has errors:\n" + _rendered(report.errors)


def test_personas() -> None:
    report = validate_paths([ROOT / "personas"])
    assert report.ok, _rendered(report.errors)
    personas = report.personas
    assert len(personas) >= 10
    assert len({persona.name for persona in personas.values()}) == len(personas)
    assert any(persona.language == "de" for persona in personas.values())


@pytest.mark.parametrize("path", sorted((ROOT / "personas").glob("*.yaml")), ids=_file_id)
def test_persona_file_is_named_after_its_persona(path: Path) -> None:
    report = validate_paths([path])
    assert path.stem in report.personas


def test_shipped_suites_use_all_three_kinds() -> None:
    report = validate_paths([ROOT / "suites"])
    assert report.ok, _rendered(report.errors)
    counts = report.case_counts()
    assert all(counts[kind] > 0 for kind in ("golden", "scenario", "simulation")), counts


def test_hosted_evals_file_loads_as_simulation_cases() -> None:
    loaded = load_suite(HOSTED_EVALS)
    assert loaded.hosted_format
    cases = loaded.suite.cases
    assert len(cases) >= 2
    assert all(isinstance(case, SimulationCase) for case in cases)
    first = cases[0]
    assert isinstance(first, SimulationCase)
    assert first.name == "billing_refund_request"
    assert first.tags == ["billing"]
    assert first.session_parameters == {"product_id": "prod_123"}
    assert len(first.steps) == 3
    assert [step.max_turns for step in first.steps[:2]] == [3, 3]
    assert "max_turns" not in first.steps[1].model_fields_set  # 3 is the default, not written
    assert first.steps[0].goal is not None
    assert first.steps[0].success_criteria == "Agent asks for the reason for the refund."
    assert first.steps[2].static_utterance == "I want to check my balance."
    assert first.steps[2].goal is None


def test_hosted_evals_example_is_unchanged() -> None:
    assert HOSTED_EXAMPLE in HOSTED_EVALS.read_text(encoding="utf-8")


@pytest.mark.parametrize("path", SHIPPED_FILES, ids=_file_id)
def test_file_starts_with_schema_line(path: Path) -> None:
    first_line = path.read_text(encoding="utf-8").split("\n", 1)[0]
    match = SCHEMA_LINE.match(first_line)
    assert match, f"{_file_id(path)} must start with '# yaml-language-server: $schema=...', got {first_line!r}"
    schema = (path.parent / match.group(1)).resolve()
    assert schema.is_file(), f"{_file_id(path)}: schema {match.group(1)} not found (resolved to {schema})"
    assert schema.is_relative_to(ROOT / "simulator" / "schemas")
