"""The README's set-up commands are the ones CI and newcomers run: keep them true."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def _bash_blocks() -> list[str]:
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    return [block.strip() for block in re.findall(r"```bash\n(.*?)```", text, flags=re.S)]


def test_ci_runs_exactly_the_readme_test_command() -> None:
    test_command = next(b for b in _bash_blocks() if "pytest" in b)
    lines = [line.strip() for line in (ROOT / ".ci" / "run").read_text(encoding="utf-8").splitlines() if line.strip()]
    # Prerequisites may come first (chromium for the browser test); the command itself is the last line.
    assert lines[-1] == test_command
    assert sum("pytest" in line for line in lines) == 1
    assert "LITELLM_OFFLINE_MODE=true" in test_command


def test_readme_main_command_runs_the_offline_demo() -> None:
    main_command = _bash_blocks()[0]
    assert main_command.startswith("python3 -m venv .venv && .venv/bin/pip install -e . && ")
    assert "simulator run suites/demo" in main_command
    assert "pytest" not in main_command
