"""The documentation builds without a warning, and its generated reference matches the code it was read from."""

from __future__ import annotations

import importlib.util
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[2]


def _load_generator() -> Any:
    spec = importlib.util.spec_from_file_location("gen_reference", ROOT / "docs" / "gen_reference.py")
    assert spec
    assert spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


gen_reference = _load_generator()


@pytest.mark.parametrize("page", sorted(gen_reference.pages(), key=str), ids=lambda path: path.name)
def test_the_generated_reference_matches_the_code(page: Path) -> None:
    committed = page.read_text("utf-8") if page.exists() else ""
    assert committed == gen_reference.pages()[page], f"{page} is stale: run python docs/gen_reference.py"


def test_a_changed_option_makes_the_reference_stale(monkeypatch: pytest.MonkeyPatch) -> None:
    from simulator.cli import _reference

    text = _reference.cli_reference()
    monkeypatch.setattr(_reference, "_clean", lambda text: text.upper())
    assert _reference.cli_reference() != text


def test_the_site_builds_strictly(tmp_path: Path) -> None:
    mkdocs = shutil.which("mkdocs", path=str(Path(sys.executable).parent)) or shutil.which("mkdocs")
    assert mkdocs, "mkdocs is part of the test extra: pip install -e '.[test]'"
    env = {**os.environ, "NO_MKDOCS_2_WARNING": "1"}
    done = subprocess.run(
        [mkdocs, "build", "--strict", "-q", "-f", str(ROOT / "mkdocs.yml"), "-d", str(tmp_path / "site")],
        capture_output=True,
        text=True,
        env=env,
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert (tmp_path / "site" / "architecture" / "index.html").exists()


QUOTE = re.compile(r"<!-- quote: (?P<path>\S+) -->\n```[a-z]*\n(?P<text>.*?)```", re.DOTALL)


def quoted_blocks(page: str) -> list[tuple[str, str]]:
    """The code blocks of a page that quote a file of the repository (marked ``<!-- quote: PATH -->``)."""
    return [(found["path"], found["text"]) for found in QUOTE.finditer(page)]


@pytest.mark.parametrize("page", sorted((ROOT / "docs").glob("*.md")), ids=lambda path: path.name)
def test_what_a_page_quotes_from_the_repository_is_there_word_for_word(page: Path) -> None:
    for path, text in quoted_blocks(page.read_text("utf-8")):
        assert text in (ROOT / path).read_text("utf-8"), f"{page.name} quotes {path}, which no longer says:\n{text}"


def test_the_extending_page_quotes_the_example_plugin() -> None:
    quoted = quoted_blocks((ROOT / "docs" / "extending.md").read_text("utf-8"))
    assert {path for path, _ in quoted} == {
        "tests/data/plugin/pyproject.toml",
        "tests/data/plugin/simulator_example_plugin/__init__.py",
    }
    assert all(text.strip() for _, text in quoted)
    changed = [(path, text.replace("polite", "courteous")) for path, text in quoted]
    assert any(text not in (ROOT / path).read_text("utf-8") for path, text in changed)
