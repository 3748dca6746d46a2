"""The data models as pydantic type adapters, built on first use (each costs tens of milliseconds to build)."""

from __future__ import annotations

from functools import cache
from typing import Any

from pydantic import TypeAdapter, ValidationError

from simulator.models import AgentConfig, Case, SimulationCase, Text, ToolFake


@cache
def adapter(kind: str) -> TypeAdapter[Any]:
    """The adapter of ``kind``: agent, case, simulation, agent_or_path (an inline agent or its file) or fake."""
    # Built on first use: each costs tens of milliseconds, and most runs of `validate` need few of them.
    target: Any = {
        "agent": AgentConfig,
        "case": Case,
        "simulation": SimulationCase,
        "agent_or_path": AgentConfig | Text,
        "fake": ToolFake,
    }[kind]
    return TypeAdapter(target)


def try_model(adapter: TypeAdapter[Any], value: Any) -> Any:
    """``value`` as ``adapter``'s model, or None when it is not valid."""
    try:
        return adapter.validate_python(value)
    except ValidationError:
        return None
