"""The README's set-up commands are the ones CI and newcomers run: keep them true."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

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


def test_every_python_example_in_the_readme_runs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The public-API examples run as written, offline, in a copy of the shipped suites."""
    import shutil

    text = (ROOT / "README.md").read_text(encoding="utf-8")
    blocks = [block for block in re.findall(r"```python\n(.*?)```", text, flags=re.S) if "import simulator\n" in block]
    assert blocks, "the README shows the Python API"
    shutil.copytree(ROOT / "suites", tmp_path / "suites")
    shutil.copytree(ROOT / "personas", tmp_path / "personas")
    monkeypatch.chdir(tmp_path)
    namespace: dict[str, object] = {}
    for block in blocks:
        exec(compile(block, "README.md", "exec"), namespace)
    outcome, again = namespace["outcome"], namespace["again"]
    assert outcome.record.status == "completed"  # type: ignore[attr-defined]
    assert again.record.repeat_of == outcome.id  # type: ignore[attr-defined]
    assert namespace["report"].startswith(b"# ")  # type: ignore[attr-defined]
    # Simulated tools, offline: the fake model played lookup_order twice.
    orders = namespace["orders"]
    assert orders.outcome == "pass"  # type: ignore[attr-defined]
    assert [call.status for call in orders.transcript.tool_calls()] == ["simulated", "simulated"]  # type: ignore[attr-defined]
