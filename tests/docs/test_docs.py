"""The documentation builds without a warning, and its generated reference matches the code it was read from."""

from __future__ import annotations

import importlib.util
import os
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
