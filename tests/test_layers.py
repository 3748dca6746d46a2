"""Import layers of the module table in ``docs/architecture.md`` that the code must keep, checked on the source
(AST), not by importing.

The table as a whole is checked by import-linter (``lint-imports``, contracts in pyproject.toml). Here: what
reports/ may import, as an allow-list (a contract can only forbid what it names), and that every module of the
package has a place in the layers contract.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "simulator"

#: What a module under simulator/reports/ may import from simulator: the data models, its own modules,
#: simulator.safety (escaping text for a terminal, and JSON that is safe to embed) and simulator.kinds (how each
#: kind of case is labelled and shown; it imports only models), and simulator.plugins (report formats that
#: installed packages add; it imports only the errors).
REPORTS_MAY_IMPORT = (
    "simulator.models",
    "simulator.reports",
    "simulator.safety",
    "simulator.kinds",
    "simulator.plugins",
)


def _module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _imports(path: Path) -> list[tuple[int, str]]:
    """Every module the file ``path`` imports (see :func:`_imports_of`)."""
    module = _module_name(path)
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    return _imports_of(path.read_text(encoding="utf-8"), package)


def _imports_of(source: str, package: str) -> list[tuple[int, str]]:
    """Every module ``source`` (a module of ``package``) imports, by line, at any depth: in functions and
    ``TYPE_CHECKING`` blocks too. ``from simulator import x`` counts as ``simulator.x``; a relative import is
    resolved against ``package``."""
    found: list[tuple[int, str]] = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            found += [(node.lineno, alias.name) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parts = package.split(".")
                base = ".".join([*parts[: len(parts) - (node.level - 1)], *([base] if base else [])])
            found += [(node.lineno, f"{base}.{alias.name}" if base == "simulator" else base) for alias in node.names]
    return found


def _within(name: str, allowed: tuple[str, ...]) -> bool:
    return any(name == prefix or name.startswith(prefix + ".") for prefix in allowed)


REPORT_MODULES = sorted((PACKAGE / "reports").rglob("*.py"))


def test_the_reports_package_has_modules() -> None:
    assert len(REPORT_MODULES) > 5


@pytest.mark.parametrize("path", REPORT_MODULES, ids=lambda path: path.name)
def test_reports_import_only_models_reports_and_safety(path: Path) -> None:
    wrong = [
        f"{path.relative_to(PACKAGE.parent)}:{line}: {name}"
        for line, name in _imports(path)
        if (name == "simulator" or name.startswith("simulator.")) and not _within(name, REPORTS_MAY_IMPORT)
    ]
    assert not wrong, (
        "reports/ may import only simulator.models, simulator.reports and simulator.safety:\n" + "\n".join(wrong)
    )


def test_the_check_sees_imports_in_functions_relative_and_from_the_package() -> None:
    # The walk must find every way of importing, or the test above proves nothing.
    source = (
        "import simulator.llm\n"
        "from simulator import store\n"
        "def f():\n"
        "    from simulator.metrics import counts\n"
        "    from ..engine import simulate\n"
        "    from . import markdown\n"
    )
    names = [name for _, name in _imports_of(source, "simulator.reports")]
    assert names == ["simulator.llm", "simulator.store", "simulator.metrics", "simulator.engine", "simulator.reports"]
    assert [name for name in names if not _within(name, REPORTS_MAY_IMPORT)] == names[:4]


#: Top-level parts of the package that are no layer: the package's own entry points, the demo agent (named by
#: suites as code to run, imported by nothing) and the shipped JSON Schema files.
OUTSIDE_THE_LAYERS = {"__init__", "__main__", "demo", "schemas"}


def test_every_module_of_the_package_has_a_place_in_the_layers_contract() -> None:
    # import-linter checks only the modules a contract names: a new module left out would import anything.
    import tomllib

    config = tomllib.loads((PACKAGE.parent / "pyproject.toml").read_text(encoding="utf-8"))
    contracts = config["tool"]["importlinter"]["contracts"]
    (layers,) = [contract["layers"] for contract in contracts if contract["type"] == "layers"]
    placed = {name.strip().removeprefix("simulator.") for layer in layers for name in layer.split("|")}
    present = {
        path.stem if path.is_file() else path.name
        for path in PACKAGE.iterdir()
        if (path.suffix == ".py" or (path / "__init__.py").is_file())
    }
    missing = sorted(present - placed - OUTSIDE_THE_LAYERS)
    assert not missing, f"add {missing} to the layers contract in pyproject.toml ([tool.importlinter])"
    assert not placed - present, "the layers contract names modules that do not exist"
