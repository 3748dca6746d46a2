"""The public API is exactly what ``simulator.__all__`` says, sorted, and every name is documented."""

from __future__ import annotations

import inspect

import simulator

# What users may import from ``simulator``: adding or removing a name is a decision, made here on purpose.
PUBLIC_NAMES = [
    "DEFAULT_CONCURRENCY", "MODEL_ROLES", "YAML_SUFFIXES", "AgentError", "Case", "CaseResult", "Comparison",
    "ConfigError", "ConfigErrors", "CostLimitReached", "Digest", "ErrorEvent", "GoldenCase", "HtmlParts",
    "ImportedRun", "ImportedSuite", "InputError", "JudgeCheckReport", "JudgeError", "Linted", "LoadedSuite",
    "MergedRun", "ModalityRuns", "ModelError", "ModelOptions", "ModelRole", "OverviewText", "Persona",
    "PersonaList", "PlanItem", "PlannedRun", "Progress", "Report", "ResumeCheck", "Review", "ReviewTarget",
    "ReviewedResult", "RunCoverage", "RunCoverageReport", "RunListing", "RunOutcome", "RunOverview", "RunRecord",
    "RunResults", "RunReviews", "RunSettings", "RunStarted", "RunState", "ScenarioCase", "SimulationCase",
    "SimulationPlan", "SimulatorError", "Step", "StoreError", "StoredResult", "Suite", "Unreadable",
    "ValidationReport", "__version__", "add_review", "audio_file",
    "case_lines", "check_number", "check_repeat", "check_resume",
    "code_it_runs", "combine", "compare_runs", "comparison_page", "conversation_page", "count_results", "counts",
    "delete_run", "digest_page", "digest_run", "digest_run_async", "disk_trouble", "export_cases", "export_results",
    "export_review_labels", "export_run", "find_run", "get_run", "golden_from_run", "html_text", "import_csv",
    "import_run", "installed_plugins", "iter_result_rows", "json_safe", "json_schema", "judge_check",
    "judge_check_async", "judge_check_reviews", "lint", "lint_async", "list_personas", "list_run_listings",
    "list_runs", "load_personas", "load_suite", "merge_runs", "modality_lines", "not_judged", "note_run",
    "one_line", "page_asset", "pair_plan", "percent", "persona_fidelity", "plan", "plan_modalities",
    "plan_simulation", "plugin_groups", "printable", "read_model_file", "read_run", "redact", "render_comparison",
    "render_digest", "render_overview", "render_report", "repeat", "repeat_async", "replay", "replay_async",
    "report_formats", "rerun", "rerun_async", "result_lines", "resume", "resume_async", "resume_command",
    "review_targets", "reviewed_runs", "reviews", "run", "run_async", "run_command", "run_coverage",
    "run_modalities", "run_modalities_async", "run_overview", "run_page", "run_report", "run_reviews", "run_state",
    "search_results", "simulate", "simulate_async", "stop_run", "store_path", "terminal_safe", "transcript_lines",
    "validate", "validate_paths", "view", "write_export", "write_file", "write_reports", "yaml_kind",
]  # fmt: skip


def test_all_is_exactly_the_public_names() -> None:
    assert simulator.__all__ == PUBLIC_NAMES


def test_import_simulator_stays_light() -> None:
    """The run API is served lazily: importing the package loads no model or graph library."""
    import subprocess
    import sys

    code = (
        "import sys, simulator; "
        "heavy = sorted(m for m in ('litellm', 'langgraph', 'simulator.runner') if m in sys.modules); "
        "print(heavy)"
    )
    output = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert output.strip() == "[]"


def _isort_style(name: str) -> tuple[int, str]:
    """The order ruff keeps ``__all__`` in: CONSTANTS, then Classes, then everything else, each alphabetical."""
    if name.isupper():
        return 0, name
    return (1, name) if name[:1].isupper() else (2, name)


def test_all_is_sorted_and_complete() -> None:
    assert simulator.__all__ == sorted(simulator.__all__, key=_isort_style)
    # Submodules become attributes once imported anywhere; only non-module names are API.
    public = {
        name for name, value in vars(simulator).items() if not name.startswith("_") and not inspect.ismodule(value)
    }
    assert public <= set(simulator.__all__)


def test_every_exported_name_exists_and_has_a_docstring() -> None:
    for name in simulator.__all__:
        member = getattr(simulator, name)
        if name == "__version__":
            assert isinstance(member, str)
            continue
        if inspect.isclass(member) or inspect.isfunction(member):
            assert inspect.getdoc(member), f"{name} has no docstring"


def test_error_tree() -> None:
    for error in (
        simulator.ConfigError,
        simulator.ConfigErrors,
        simulator.AgentError,
        simulator.ModelError,
        simulator.JudgeError,
        simulator.StoreError,
    ):
        assert issubclass(error, simulator.SimulatorError)
