"""Reading what people write: YAML suites, hosted evals files, agent files, personas, CSV imports."""

from simulator.loading._env_check import env_problems
from simulator.loading._json import json_position, parse_json
from simulator.loading._limits import EXPORT_EXTRA_DEPTH, ReadProblem, text_too_large, too_large
from simulator.loading._limits import read_text as read_bounded_text
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
from simulator.loading._paths import YAML_SUFFIXES
from simulator.loading._schema import SCHEMA_FILES, did_you_mean, load_schema, tool_parameter_problems
from simulator.loading._yaml import DataPath, format_path, parse_yaml, read_text
from simulator.loading._yaml_out import export_yaml

__all__ = [
    "EXPORT_EXTRA_DEPTH",
    "SCHEMA_FILES",
    "YAML_SUFFIXES",
    "DataPath",
    "LoadedSuite",
    "ReadProblem",
    "ValidationReport",
    "classify",
    "collect_yaml_files",
    "config_error_at",
    "did_you_mean",
    "env_problems",
    "export_yaml",
    "find_upwards",
    "format_path",
    "json_position",
    "load_model_file",
    "load_personas",
    "load_schema",
    "load_suite",
    "parse_json",
    "parse_yaml",
    "read_bounded_text",
    "read_judge_prompts",
    "read_text",
    "text_too_large",
    "too_large",
    "tool_parameter_problems",
    "validate_paths",
]
