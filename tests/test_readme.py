"""The README and the user guide say what is true: the set-up commands are the ones CI and newcomers run, the
walkthrough's commands run as written against the stand-in agent, and every Python example runs."""

from __future__ import annotations

import re
import shlex
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

ROOT = Path(__file__).resolve().parent.parent
README_MAX_LINES = 250
# Each page's Python examples run in one namespace, in order; these names must come out of them as the text says.
PYTHON_EXAMPLES: dict[str, tuple[str, ...]] = {
    "docs/python.md": ("outcome", "again", "report", "results"),
    "docs/compare.md": ("recorded", "replayed"),
    "docs/tools.md": ("list_holidays", "orders"),
    "docs/worlds.md": ("block_card", "answer", "refund_booking"),
    "docs/verdicts.md": ("fidelity_run", "stored"),
    "docs/agents.md": ("run_tools",),
    "docs/pytest.md": ("test_golden_conversations",),
    "docs/extending.md": ("EchoAgent", "make_echo_agent", "polite", "render_txt"),
}


def _readme() -> str:
    return (ROOT / "README.md").read_text(encoding="utf-8")


def _blocks(text: str, language: str) -> list[str]:
    return [block.strip() for block in re.findall(rf"```{language}\n(.*?)```", text, flags=re.S)]


def _bash_blocks() -> list[str]:
    return _blocks(_readme(), "bash")


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


def test_the_readme_is_a_front_door() -> None:
    """Short, with the venv activated and the way to test your own agent on its first screen."""
    text = _readme()
    assert len(text.splitlines()) <= README_MAX_LINES, f"the README has {len(text.splitlines())} lines"
    first_screen = "\n".join(text.splitlines()[:40])
    assert "source .venv/bin/activate" in first_screen
    assert "## Test your own agent" in first_screen


def test_every_page_the_readme_links_exists() -> None:
    links = re.findall(r"\]\(((?:docs/)[^)#]+)", _readme())
    assert links
    assert [link for link in links if not (ROOT / link).exists()] == []


class _StandIn:
    """``examples/agent_server.py`` in a process of its own, on a free port."""

    def __init__(self) -> None:
        self.process: subprocess.Popen[str] | None = None
        self.port = 0

    def start(self, *args: str) -> None:
        self.stop()
        command = [sys.executable, str(ROOT / "examples" / "agent_server.py"), "--port", "0", *args]
        self.process = subprocess.Popen(command, stdout=subprocess.PIPE, text=True)
        assert self.process.stdout is not None
        banner = self.process.stdout.readline()  # "agent on http://127.0.0.1:PORT/v1 (v1)"
        found = re.search(r":(\d+)/v1", banner)
        assert found, banner
        self.port = int(found[1])

    def stop(self) -> None:
        if self.process is not None:
            self.process.terminate()
            self.process.wait(timeout=10)
            if self.process.stdout is not None:
                self.process.stdout.close()
            self.process = None


@pytest.fixture
def stand_in() -> Iterator[_StandIn]:
    server = _StandIn()
    yield server
    server.stop()


def _walkthrough() -> str:
    return _readme().split("## Test your own agent", 1)[1].split("\n## ", 1)[0]


def test_the_walkthrough_runs_as_written(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, stand_in: _StandIn) -> None:
    """Its files are written where it says, and every command of its bash blocks runs with the exit code it
    announces (the stand-in agent started and restarted as the blocks do), ending in the regression it shows."""
    from simulator.cli import app

    section = _walkthrough()
    files = re.findall(r"Write `(my-tests/[\w.]+)`[^`]*?```yaml\n(.*?)```", section, flags=re.S)
    assert [name for name, _ in files] == ["my-tests/agent.yaml", "my-tests/orders.yaml"]
    shutil.copytree(ROOT / "personas", tmp_path / "personas")
    shutil.copytree(ROOT / "simulator" / "schemas", tmp_path / "simulator" / "schemas")
    monkeypatch.chdir(tmp_path)
    runner = CliRunner()
    outputs: list[Any] = []
    for block in _blocks(section, "bash"):
        for line in block.splitlines():
            command, _, comment = line.partition("#")
            if "examples/agent_server.py" in command:
                stand_in.start(*(["--v2"] if "--v2" in command else []))
                for name, text in files:
                    (tmp_path / name).parent.mkdir(exist_ok=True)
                    (tmp_path / name).write_text(text.replace(":8000/", f":{stand_in.port}/"), encoding="utf-8")
                continue
            args = shlex.split(command)
            assert args[0] == "simulator", line
            result = runner.invoke(app, args[1:])
            announced = re.search(r"exit (\d)", comment)
            assert result.exit_code == (int(announced[1]) if announced else 0), (line, result.output)
            outputs.append(result)
    assert "REGRESSED (1)" in outputs[-1].stdout
    assert "missing 'ORD-12345'" in outputs[-1].stdout
    assert (tmp_path / "report.html").exists()


def _python_example_pages() -> list[Path]:
    pages = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]
    return [page for page in pages if "```python\n" in page.read_text(encoding="utf-8")]


def test_every_page_with_a_python_example_is_run() -> None:
    assert sorted(str(page.relative_to(ROOT)) for page in _python_example_pages()) == sorted(PYTHON_EXAMPLES)


@pytest.mark.parametrize("page", sorted(PYTHON_EXAMPLES))
def test_every_python_example_in_the_docs_runs(page: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Each page's examples run as written, in order, offline, in a copy of the shipped suites."""
    blocks = _blocks((ROOT / page).read_text(encoding="utf-8"), "python")
    assert blocks, f"{page} shows no Python example"
    shutil.copytree(ROOT / "suites", tmp_path / "suites")
    shutil.copytree(ROOT / "personas", tmp_path / "personas")
    monkeypatch.chdir(tmp_path)
    namespace: dict[str, Any] = {}
    for block in blocks:
        exec(compile(block, page, "exec"), namespace)
    assert [name for name in PYTHON_EXAMPLES[page] if name not in namespace] == []
    if page == "docs/python.md":
        outcome, again = namespace["outcome"], namespace["again"]
        assert outcome.record.status == "completed"
        assert again.record.repeat_of == outcome.id
        assert namespace["report"].startswith(b"# ")
    if page == "docs/tools.md":  # simulated tools, offline: the fake model played lookup_order twice
        orders = namespace["orders"]
        assert orders.outcome == "pass"
        assert [call.status for call in orders.transcript.tool_calls()] == ["simulated", "simulated"]
    if page == "docs/compare.md":
        recorded, replayed = namespace["recorded"], namespace["replayed"]
        assert [r.outcome for r in replayed.results()] == [r.outcome for r in recorded.results()]
