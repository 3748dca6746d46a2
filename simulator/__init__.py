"""Simulator: an offline-first evaluator for conversational agents.

The public API is what this module exports; everything else is internal and may change. Run suites from
Python as the command line does::

    import simulator

    outcome = simulator.run(["suites/demo"], repeat=2, db="/tmp/runs.db")
    print(outcome.id, outcome.record.status, outcome.correctness)
    for stored in outcome.iter_results():  # a few at a time: flat memory
        print(stored.case, stored.persona, stored.outcome, stored.result.reasons)

Every name but the errors is imported on first use: ``import simulator`` stays light (no model, graph or
pydantic library, no data model built), so the command line's ``--help`` stays fast and ``validate`` imports only
the loading side.
"""

import typing as _typing

from simulator._version import __version__
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

if _typing.TYPE_CHECKING:
    from simulator.loading import LoadedSuite, ValidationReport, load_personas, load_suite, validate_paths
    from simulator.merge import MergedRun, merge_runs
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


# Names served lazily from the module that owns them (see the module docstring).
_LAZY = {
    "LoadedSuite": "simulator.loading",
    "ValidationReport": "simulator.loading",
    "load_personas": "simulator.loading",
    "load_suite": "simulator.loading",
    "validate_paths": "simulator.loading",
    "Case": "simulator.models",
    "GoldenCase": "simulator.models",
    "Persona": "simulator.models",
    "ScenarioCase": "simulator.models",
    "SimulationCase": "simulator.models",
    "Step": "simulator.models",
    "Suite": "simulator.models",
    "PlanItem": "simulator.models.run",
    "RunRecord": "simulator.models.run",
    "RunSettings": "simulator.models.run",
    "StoredResult": "simulator.models.run",
    "CaseResult": "simulator.models.scores",
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
