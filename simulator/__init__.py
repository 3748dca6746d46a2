"""Simulator: an offline-first evaluator for conversational agents.

The public API is what this module exports; everything else is internal and may change.
"""

from simulator.errors import (
    AgentError,
    ConfigError,
    ConfigErrors,
    JudgeError,
    ModelError,
    SimulatorError,
    StoreError,
)
from simulator.loading import LoadedSuite, ValidationReport, load_personas, load_suite, validate_paths
from simulator.models import (
    Case,
    GoldenCase,
    Persona,
    ScenarioCase,
    SimulationCase,
    Step,
    Suite,
)

__version__ = "0.1.0"

__all__ = [
    "AgentError",
    "Case",
    "ConfigError",
    "ConfigErrors",
    "GoldenCase",
    "JudgeError",
    "LoadedSuite",
    "ModelError",
    "Persona",
    "ScenarioCase",
    "SimulationCase",
    "SimulatorError",
    "Step",
    "StoreError",
    "Suite",
    "ValidationReport",
    "__version__",
    "load_personas",
    "load_suite",
    "validate_paths",
]
