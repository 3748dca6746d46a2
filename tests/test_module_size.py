"""No module of the package is over 800 lines: a module that big holds more than one thing, and is split along its
concerns (a package of small modules, the old import path kept by its ``__init__``)."""

from __future__ import annotations

from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "simulator"
MAX_LINES = 800

MODULES = sorted(PACKAGE.rglob("*.py"))


def _lines(path: Path) -> int:
    return len(path.read_text(encoding="utf-8").splitlines())


def test_the_package_has_modules() -> None:
    assert len(MODULES) > 100


@pytest.mark.parametrize("path", MODULES, ids=lambda path: path.relative_to(PACKAGE).as_posix())
def test_no_module_is_over_the_limit(path: Path) -> None:
    name = path.relative_to(PACKAGE).as_posix()
    assert _lines(path) <= MAX_LINES, (
        f"simulator/{name} has {_lines(path)} lines (at most {MAX_LINES}): split it along its concerns"
    )
