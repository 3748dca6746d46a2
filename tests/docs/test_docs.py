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


IMAGE = re.compile(r"!\[[^\]]*\]\((?P<markdown>[^)\s]+)|<img\b[^>]*\bsrc=[\"'](?P<html>[^\"']+)")
PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"
VIEW_SCREENSHOTS = ["view-runs.png", "view-run.png", "view-conversation.png", "view-compare.png"]


def images(page: Path) -> list[str]:
    """What a page shows as images (markdown ``![alt](src)`` and HTML ``<img src>``), as written."""
    return [found["markdown"] or found["html"] for found in IMAGE.finditer(page.read_text("utf-8"))]


def image_problems(page: Path) -> list[str]:
    """Each image of the page that is not a PNG file beside the docs (missing, elsewhere, or another format)."""
    problems = []
    for source in images(page):
        path = page.parent / source
        if not path.is_file():
            problems.append(f"{page.name} shows {source}, which is not in the repository")
        elif path.read_bytes()[: len(PNG_SIGNATURE)] != PNG_SIGNATURE:
            problems.append(f"{page.name} shows {source}, which is not a PNG")
    return problems


@pytest.mark.parametrize("page", sorted((ROOT / "docs").glob("*.md")), ids=lambda path: path.name)
def test_every_image_a_page_shows_is_a_png_in_the_repository(page: Path) -> None:
    assert image_problems(page) == []


@pytest.mark.parametrize(
    ("markdown", "files", "problem"),
    [
        ("![the runs](images/runs.png)", {}, "which is not in the repository"),
        ('<img alt="the runs" src="images/runs.png">', {}, "which is not in the repository"),
        ("![the runs](https://example.com/runs.png)", {}, "which is not in the repository"),
        ("![the runs](images/runs.png)", {"images/runs.png": b"\xff\xd8\xff\xe0 a JPEG"}, "which is not a PNG"),
        ("![the runs](images/runs.png)", {"images/runs.png": PNG_SIGNATURE + b"..."}, None),
    ],
)
def test_an_image_that_is_missing_or_not_a_png_is_named(
    tmp_path: Path, markdown: str, files: dict[str, bytes], problem: str | None
) -> None:
    for name, data in files.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_bytes(data)
    page = tmp_path / "page.md"
    page.write_text(f"# A page\n\n{markdown}\n", encoding="utf-8")
    found = image_problems(page)
    if problem is None:
        assert found == []
    else:
        assert len(found) == 1
        assert problem in found[0]


def test_the_view_page_shows_the_four_screenshots() -> None:
    shown = images(ROOT / "docs" / "view.md")
    assert sorted(shown) == sorted(f"images/{name}" for name in VIEW_SCREENSHOTS)
