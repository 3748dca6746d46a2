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
    from simulator.analysis.compare import Comparison
    from simulator.analysis.digest import Digest
    from simulator.analysis.judge_check import JudgeCheckReport
    from simulator.api.analysis import (
        RunCoverageReport,
        compare_runs,
        digest_run,
        digest_run_async,
        judge_check,
        judge_check_async,
        persona_fidelity,
        run_coverage,
    )
    from simulator.api.exchange import (
        ImportedRun,
        ImportedSuite,
        export_cases,
        export_results,
        export_run,
        golden_from_run,
        import_csv,
        import_run,
        write_export,
    )
    from simulator.api.plugins import installed_plugins, plugin_groups
    from simulator.api.reports import (
        OverviewText,
        Report,
        RunOverview,
        render_comparison,
        render_digest,
        render_overview,
        report_formats,
        run_overview,
        run_report,
        write_reports,
    )
    from simulator.api.runs import (
        RunResults,
        count_results,
        find_run,
        iter_result_rows,
        list_runs,
        note_run,
        read_run,
        resume_command,
        run_command,
    )
    from simulator.api.suites import (
        Linted,
        PersonaList,
        json_schema,
        lint,
        lint_async,
        list_personas,
        read_model_file,
        validate,
        yaml_kind,
    )
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
    from simulator.models.coverage import RunCoverage
    from simulator.models.run import (
        ModelOptions,
        PlanItem,
        RunRecord,
        RunSettings,
        StoredResult,
    )
    from simulator.models.scores import CaseResult
    from simulator.reports.formats import render as render_report
    from simulator.runner import (
        PlannedRun,
        Progress,
        ResumeCheck,
        RunOutcome,
        RunStarted,
        SimulationPlan,
        check_repeat,
        check_resume,
        code_it_runs,
        combine,
        delete_run,
        get_run,
        plan,
        plan_simulation,
        printable,
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
    from simulator.store import Unreadable


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
    "Comparison": "simulator.analysis.compare",
    "Digest": "simulator.analysis.digest",
    "Unreadable": "simulator.store",
    "RunCoverage": "simulator.models.coverage",
    "JudgeCheckReport": "simulator.analysis.judge_check",
    "installed_plugins": "simulator.api.plugins",
    "plugin_groups": "simulator.api.plugins",
    "RunResults": "simulator.api.runs",
    "count_results": "simulator.api.runs",
    "find_run": "simulator.api.runs",
    "iter_result_rows": "simulator.api.runs",
    "list_runs": "simulator.api.runs",
    "note_run": "simulator.api.runs",
    "read_run": "simulator.api.runs",
    "resume_command": "simulator.api.runs",
    "run_command": "simulator.api.runs",
    "OverviewText": "simulator.api.reports",
    "Report": "simulator.api.reports",
    "RunOverview": "simulator.api.reports",
    "render_comparison": "simulator.api.reports",
    "render_digest": "simulator.api.reports",
    "render_overview": "simulator.api.reports",
    "report_formats": "simulator.api.reports",
    "run_overview": "simulator.api.reports",
    "run_report": "simulator.api.reports",
    "write_reports": "simulator.api.reports",
    "RunCoverageReport": "simulator.api.analysis",
    "compare_runs": "simulator.api.analysis",
    "digest_run": "simulator.api.analysis",
    "digest_run_async": "simulator.api.analysis",
    "judge_check": "simulator.api.analysis",
    "judge_check_async": "simulator.api.analysis",
    "persona_fidelity": "simulator.api.analysis",
    "run_coverage": "simulator.api.analysis",
    "ImportedRun": "simulator.api.exchange",
    "ImportedSuite": "simulator.api.exchange",
    "export_cases": "simulator.api.exchange",
    "export_results": "simulator.api.exchange",
    "export_run": "simulator.api.exchange",
    "golden_from_run": "simulator.api.exchange",
    "import_csv": "simulator.api.exchange",
    "import_run": "simulator.api.exchange",
    "write_export": "simulator.api.exchange",
    "Linted": "simulator.api.suites",
    "PersonaList": "simulator.api.suites",
    "json_schema": "simulator.api.suites",
    "lint": "simulator.api.suites",
    "lint_async": "simulator.api.suites",
    "list_personas": "simulator.api.suites",
    "read_model_file": "simulator.api.suites",
    "validate": "simulator.api.suites",
    "yaml_kind": "simulator.api.suites",
    "ResumeCheck": "simulator.runner",
    "SimulationPlan": "simulator.runner",
    "check_repeat": "simulator.runner",
    "check_resume": "simulator.runner",
    "code_it_runs": "simulator.runner",
    "combine": "simulator.runner",
    "plan_simulation": "simulator.runner",
    "printable": "simulator.runner",
    "ModelOptions": "simulator.models.run",
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
    "Comparison",
    "ConfigError",
    "ConfigErrors",
    "Digest",
    "GoldenCase",
    "ImportedRun",
    "ImportedSuite",
    "InputError",
    "JudgeCheckReport",
    "JudgeError",
    "Linted",
    "LoadedSuite",
    "MergedRun",
    "ModelError",
    "ModelOptions",
    "OverviewText",
    "Persona",
    "PersonaList",
    "PlanItem",
    "PlannedRun",
    "Progress",
    "Report",
    "ResumeCheck",
    "RunCoverage",
    "RunCoverageReport",
    "RunOutcome",
    "RunOverview",
    "RunRecord",
    "RunResults",
    "RunSettings",
    "RunStarted",
    "ScenarioCase",
    "SimulationCase",
    "SimulationPlan",
    "SimulatorError",
    "Step",
    "StoreError",
    "StoredResult",
    "Suite",
    "Unreadable",
    "ValidationReport",
    "__version__",
    "check_repeat",
    "check_resume",
    "code_it_runs",
    "combine",
    "compare_runs",
    "count_results",
    "delete_run",
    "digest_run",
    "digest_run_async",
    "export_cases",
    "export_results",
    "export_run",
    "find_run",
    "get_run",
    "golden_from_run",
    "import_csv",
    "import_run",
    "installed_plugins",
    "iter_result_rows",
    "json_schema",
    "judge_check",
    "judge_check_async",
    "lint",
    "lint_async",
    "list_personas",
    "list_runs",
    "load_personas",
    "load_suite",
    "merge_runs",
    "note_run",
    "persona_fidelity",
    "plan",
    "plan_simulation",
    "plugin_groups",
    "printable",
    "read_model_file",
    "read_run",
    "render_comparison",
    "render_digest",
    "render_overview",
    "render_report",
    "repeat",
    "repeat_async",
    "replay",
    "replay_async",
    "report_formats",
    "rerun",
    "rerun_async",
    "resume",
    "resume_async",
    "resume_command",
    "run",
    "run_async",
    "run_command",
    "run_coverage",
    "run_overview",
    "run_report",
    "simulate",
    "simulate_async",
    "validate",
    "validate_paths",
    "write_export",
    "write_reports",
    "yaml_kind",
]
