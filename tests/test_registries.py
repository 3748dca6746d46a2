"""The registries of agent types and report formats list exactly the known names."""

from __future__ import annotations

import typing

import pytest

from simulator.agents import agent_type, agent_types
from simulator.models import AgentConfig
from simulator.models.agent import BUILTIN_AGENT_TYPES
from simulator.reports.formats import EXTENSIONS, FORMATS, REGISTRY, ReportFormat


def _config_types() -> set[str]:
    union = typing.get_args(AgentConfig)[0]
    members = [typing.get_args(member)[0] for member in typing.get_args(union)]
    literal = [typing.get_args(model.model_fields["type"].annotation) for model in members]
    return {values[0] for values in literal if values}


def test_every_agent_type_of_the_config_has_exactly_one_adapter() -> None:
    assert (
        set(agent_types())
        == _config_types()
        == set(BUILTIN_AGENT_TYPES)
        == {"python", "http", "litellm", "langgraph", "realtime"}
    )


def test_an_agent_type_is_registered_once() -> None:
    with pytest.raises(ValueError, match="already registered"):
        agent_type("python")(agent_types()["http"])


def test_the_report_formats_are_exactly_the_known_ones_with_their_suffixes() -> None:
    assert FORMATS == typing.get_args(ReportFormat) == ("md", "html", "json", "csv", "xlsx", "junit")
    assert EXTENSIONS == {"md": "md", "html": "html", "json": "json", "csv": "csv", "xlsx": "xlsx", "junit": "xml"}
    for spec in REGISTRY.values():
        assert callable(spec.load())
