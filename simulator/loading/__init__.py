"""Reading what people write: YAML suites, hosted evals files, agent files, personas, CSV imports."""

from simulator.loading._load import (
    LoadedSuite,
    ValidationReport,
    classify,
    collect_yaml_files,
    config_error_at,
    find_upwards,
    load_model_file,
    load_personas,
    load_suite,
    read_judge_prompts,
    validate_paths,
)
from simulator.loading._schema import SCHEMA_FILES, load_schema

__all__ = [
    "SCHEMA_FILES",
    "LoadedSuite",
    "ValidationReport",
    "classify",
    "collect_yaml_files",
    "config_error_at",
    "find_upwards",
    "load_model_file",
    "load_personas",
    "load_schema",
    "load_suite",
    "read_judge_prompts",
    "validate_paths",
]
