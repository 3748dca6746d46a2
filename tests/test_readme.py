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
    ci_lines = [
        line.strip()
        for line in (ROOT / ".ci" / "run").read_text(encoding="utf-8").splitlines()
        if line.strip() and not line.startswith("#") and not line.startswith(("set ", "cd "))
    ]
    assert ci_lines == [test_command]
    assert "LITELLM_OFFLINE_MODE=true" in test_command


def test_readme_main_command_validates_the_shipped_files() -> None:
    main_command = _bash_blocks()[0]
    assert main_command.startswith("python3 -m venv .venv && .venv/bin/pip install -e . && ")
    assert "pytest" not in main_command
