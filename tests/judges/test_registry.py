"""The scorer registry: every check and judge question is a named scorer, run in a fixed order per kind."""

from __future__ import annotations

from importlib import resources

import pytest

from simulator.judges._registry import ScoringInput, registered_scorers, scorer
from simulator.judges.fidelity import PROMPTS as FIDELITY_PROMPTS
from simulator.judges.llm_judges import PROMPT_PLACEHOLDERS
from simulator.judges.step import STEP_PROMPT, step_prompt
from simulator.models.scores import Score

CASE_SCORERS = [
    "engine", "expectations", "state", "golden_turns", "hallucination", "goal_satisfaction", "budgets",
    "spoken_formatting",
]  # fmt: skip
TURN_SCORERS = ["semantic_match", "reference_answer", "keywords", "tool_calls", "handoff", "variables"]


def test_the_registry_lists_exactly_the_known_scorers_in_order() -> None:
    assert [s.name for s in registered_scorers(scope="case")] == CASE_SCORERS
    assert [s.name for s in registered_scorers(scope="turn")] == TURN_SCORERS


@pytest.mark.parametrize(
    ("kind", "names"),
    [
        (
            "golden",
            ["engine", "expectations", "state", "golden_turns", "hallucination", "budgets", "spoken_formatting"],
        ),
        (
            "scenario",
            ["engine", "expectations", "state", "hallucination", "goal_satisfaction", "budgets", "spoken_formatting"],
        ),
        (
            "simulation",
            ["engine", "expectations", "state", "hallucination", "goal_satisfaction", "budgets", "spoken_formatting"],
        ),
    ],
)
def test_each_kind_is_scored_by_its_scorers(kind: str, names: list[str]) -> None:
    assert [s.name for s in registered_scorers(scope="case", kind=kind)] == names


def test_every_judge_prompt_is_a_file_asked_by_a_scorer() -> None:
    # The simulated user's fidelity check asks its own prompt (after the scorers, for failing conversations).
    asked = {prompt for entry in registered_scorers() for prompt in entry.prompts} | set(FIDELITY_PROMPTS)
    assert asked == set(PROMPT_PLACEHOLDERS)
    folder = resources.files("simulator.judges").joinpath("prompts")
    for name in [*asked, STEP_PROMPT]:
        assert folder.joinpath(f"{name}.md").is_file(), name


def test_the_step_judge_prompt_comes_from_its_file_without_header_or_doubled_braces() -> None:
    text = step_prompt()
    assert text.startswith("You check one success criterion")
    assert '{"verdict": "met" | "not_met" | "unsure"' in text
    assert "<!--" not in text
    assert "{{" not in text


async def _nothing(target: ScoringInput) -> list[Score]:
    return []


def test_a_name_is_registered_once() -> None:
    with pytest.raises(ValueError, match="already registered"):
        scorer("engine")(_nothing)


def test_a_scorer_names_known_kinds_only() -> None:
    with pytest.raises(ValueError, match="unknown case kinds"):
        scorer("mine", kinds={"goldn"})
