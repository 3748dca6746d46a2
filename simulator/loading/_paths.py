"""Where the loader looks for files, and how it names them to a person."""

from __future__ import annotations

from pathlib import Path

YAML_SUFFIXES = (".yaml", ".yml")
AGENT_FILE_NAMES = ("agent.yaml", "agent.yml")
PERSONAS_DIR = "personas"


def display_path(file: str) -> str:
    """A path as the person would type it: relative to the working folder when inside it."""
    path = Path(file)
    if not path.is_absolute():
        return file
    try:
        return str(path.relative_to(Path.cwd()))
    except ValueError:
        return file
