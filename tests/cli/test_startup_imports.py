"""What the everyday commands import, each in a fresh process: ``--help`` and ``validate`` pay for no model,
graph or HTTP library, and ``--help`` not even for pydantic or the data models.

Not a timed test: it pins the import graph that the timings in ``bench/startup.py`` follow from.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

# Libraries no command that only reads suites needs; each costs from 0.05 s (httpx) to seconds (litellm).
HEAVY = (
    "litellm", "openai", "httpx", "httpcore", "langgraph", "langgraph_sdk", "langchain_core", "langsmith",
    "openpyxl", "simulator.runner", "simulator.engine", "simulator.store", "simulator.llm", "simulator.judges",
    "simulator.reports",
)  # fmt: skip
# What --help has no use for either: the command line's help is built from the commands' signatures alone.
MODELS = ("yaml", "jsonschema", "simulator.models", "simulator.loading", "simulator.kinds")
# A command's own --help imports pydantic all the same: typer builds a pydantic adapter for each option it parses.
PYDANTIC = ("pydantic", "pydantic_core")

PROBE = """
import atexit, sys
atexit.register(lambda: print("LOADED", " ".join(sorted(sys.modules)), file=sys.stderr))
sys.argv = ["simulator", *sys.argv[1:]]
from simulator.cli import main
main()
"""


def _loaded_by(*args: str) -> set[str]:
    """The modules a fresh ``simulator ARGS`` process had imported when it exited (it must exit 0)."""
    done = subprocess.run(
        [sys.executable, "-c", PROBE, *args], cwd=ROOT, capture_output=True, text=True, timeout=120, check=False
    )
    assert done.returncode == 0, done.stdout + done.stderr
    line = next(line for line in done.stderr.splitlines() if line.startswith("LOADED "))
    return set(line.split()[1:])


def _among(loaded: set[str], packages: tuple[str, ...]) -> list[str]:
    return sorted(m for m in loaded if any(m == p or m.startswith(p + ".") for p in packages))


def test_help_imports_no_library_beyond_the_command_line() -> None:
    loaded = _loaded_by("--help")
    assert _among(loaded, HEAVY + MODELS + PYDANTIC) == []
    assert "typer" in loaded  # the probe did run the command line


@pytest.mark.parametrize("command", ["run", "validate", "report"])
def test_a_commands_help_imports_no_data_model(command: str) -> None:
    loaded = _loaded_by(command, "--help")
    assert _among(loaded, HEAVY + MODELS) == []
    assert "simulator.cli.run" in loaded


def test_validate_imports_the_loading_side_only() -> None:
    loaded = _loaded_by("validate", "suites/demo")
    assert _among(loaded, HEAVY) == []
    assert "simulator.loading" in loaded  # the probe did validate
