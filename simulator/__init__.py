"""Simulator: an offline-first evaluator for conversational agents.

The public API is what this module exports; everything else is internal and may change. Run suites from
Python as the command line does::

    import simulator

    outcome = simulator.run(["suites/demo"], repeat=2, db="/tmp/runs.db")
    print(outcome.id, outcome.record.status, outcome.correctness)
    for stored in outcome.iter_results():  # a few at a time: flat memory
        print(stored.case, stored.persona, stored.outcome, stored.result.reasons)

The run API (:func:`run`, :func:`resume`, :func:`repeat`, :func:`simulate`, their ``*_async`` twins,
:func:`plan`, :func:`get_run`, :func:`delete_run`, :func:`merge_runs`) is imported on first use:
``import simulator`` stays light (no model or graph library), so the command line's ``--help`` and ``validate``
stay fast.
"""

import typing as _typing

from simulator.errors import (
    AgentError,
    ConfigError,
    ConfigErrors,
    InputError,
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
from simulator.models.run import PlanItem, RunRecord, RunSettings, StoredResult
from simulator.models.scores import CaseResult

if _typing.TYPE_CHECKING:
    from simulator.merge import MergedRun, merge_runs
    from simulator.reports.formats import render as render_report
    from simulator.runner import (
        PlannedRun,
        Progress,
        RunOutcome,
        RunStarted,
        delete_run,
        get_run,
        plan,
        repeat,
        repeat_async,
        replay,
        replay_async,
        rerun,
        rerun_async,
        resume,
        resume_async,
        run,
        run_async,
        simulate,
        simulate_async,
    )

__version__ = "0.1.0"

# Names served lazily from the module that owns them (see the module docstring).
_LAZY = {
    "PlannedRun": "simulator.runner",
    "Progress": "simulator.runner",
    "RunOutcome": "simulator.runner",
    "RunStarted": "simulator.runner",
    "delete_run": "simulator.runner",
    "get_run": "simulator.runner",
    "plan": "simulator.runner",
    "repeat": "simulator.runner",
    "repeat_async": "simulator.runner",
    "replay": "simulator.runner",
    "replay_async": "simulator.runner",
    "rerun": "simulator.runner",
    "rerun_async": "simulator.runner",
    "resume": "simulator.runner",
    "resume_async": "simulator.runner",
    "run": "simulator.runner",
    "run_async": "simulator.runner",
    "simulate": "simulator.runner",
    "simulate_async": "simulator.runner",
    "MergedRun": "simulator.merge",
    "merge_runs": "simulator.merge",
    "render_report": "simulator.reports.formats:render",
}


def __getattr__(name: str) -> _typing.Any:
    target = _LAZY.get(name)
    if target is None:
        raise AttributeError(f"module 'simulator' has no attribute {name!r}")
    import importlib

    module_name, _, attribute = target.partition(":")
    value = getattr(importlib.import_module(module_name), attribute or name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})


__all__ = [
    "AgentError",
    "Case",
    "CaseResult",
    "ConfigError",
    "ConfigErrors",
    "GoldenCase",
    "InputError",
    "JudgeError",
    "LoadedSuite",
    "MergedRun",
    "ModelError",
    "Persona",
    "PlanItem",
    "PlannedRun",
    "Progress",
    "RunOutcome",
    "RunRecord",
    "RunSettings",
    "RunStarted",
    "ScenarioCase",
    "SimulationCase",
    "SimulatorError",
    "Step",
    "StoreError",
    "StoredResult",
    "Suite",
    "ValidationReport",
    "__version__",
    "delete_run",
    "get_run",
    "load_personas",
    "load_suite",
    "merge_runs",
    "plan",
    "render_report",
    "repeat",
    "repeat_async",
    "replay",
    "replay_async",
    "rerun",
    "rerun_async",
    "resume",
    "resume_async",
    "run",
    "run_async",
    "simulate",
    "simulate_async",
    "validate_paths",
]
