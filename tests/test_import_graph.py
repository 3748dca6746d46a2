"""The package's import graph: no circle between its modules, and no private module used from outside its package.

A circle (two modules of one package count as much as two packages) means neither module can be read, tested or
moved without the other; import-linter's layers catch circles between layers only. A private module
(``simulator.llm._client``) is its package's business: code elsewhere imports what the package's ``__init__``
makes public, so the package can rearrange its insides.
"""

from __future__ import annotations

import ast
from pathlib import Path

import grimp
import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "simulator"

#: Modules that may still import private modules of other packages: the command line and the pytest plugin move
#: onto the public API of ``simulator`` as a whole, not onto each package's.
PRIVATE_IMPORTS_ALLOWED_IN = ("simulator.cli", "simulator.pytest_plugin")


def circles(graph: grimp.ImportGraph) -> list[list[str]]:
    """The groups of modules of ``graph`` that import each other round a circle (each sorted; largest first).

    Tarjan's strongly connected components, iterative: each group of more than one module, or a module that
    imports itself, is a circle."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    on_stack: set[str] = set()
    stack: list[str] = []
    found: list[list[str]] = []
    for root in sorted(graph.modules):
        if root in index:
            continue
        work = [(root, iter(sorted(graph.find_modules_directly_imported_by(root))))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            module, imported = work[-1]
            for other in imported:
                if other not in index:
                    index[other] = low[other] = len(index)
                    stack.append(other)
                    on_stack.add(other)
                    work.append((other, iter(sorted(graph.find_modules_directly_imported_by(other)))))
                    break
                if other in on_stack:
                    low[module] = min(low[module], index[other])
            else:
                work.pop()
                if work:
                    parent = work[-1][0]
                    low[parent] = min(low[parent], low[module])
                if low[module] == index[module]:
                    group = []
                    while True:
                        member = stack.pop()
                        on_stack.discard(member)
                        group.append(member)
                        if member == module:
                            break
                    if len(group) > 1 or graph.direct_import_exists(importer=module, imported=module):
                        found.append(sorted(group))
    return sorted(found, key=lambda group: (-len(group), group))


def _described(graph: grimp.ImportGraph, group: list[str]) -> str:
    lines = []
    for importer in group:
        for imported in sorted(set(graph.find_modules_directly_imported_by(importer)) & set(group)):
            details = graph.get_import_details(importer=importer, imported=imported)
            where = ", ".join(str(detail["line_number"]) for detail in details)
            lines.append(f"  {importer} -> {imported} (line {where})")
    return "\n".join(lines)


def test_no_module_of_the_package_is_in_an_import_circle() -> None:
    graph = grimp.build_graph("simulator", cache_dir=None)
    found = circles(graph)
    assert not found, "modules that import each other round a circle:\n" + "\n\n".join(
        _described(graph, group) for group in found
    )


@pytest.mark.parametrize(
    ("imports", "expected"),
    [
        ([("a.x", "a.y"), ("a.y", "a.z")], []),
        ([("a.x", "a.y"), ("a.y", "a.x")], [["a.x", "a.y"]]),
        ([("a.x", "a.y"), ("a.y", "a.z"), ("a.z", "a.x"), ("a.z", "a.w")], [["a.x", "a.y", "a.z"]]),
        ([("a", "a.x"), ("a.x", "a")], [["a", "a.x"]]),
        ([("a.x", "a.y"), ("a.y", "a.x"), ("b.p", "b.q"), ("b.q", "b.p")], [["a.x", "a.y"], ["b.p", "b.q"]]),
    ],
)
def test_circles_are_found(imports: list[tuple[str, str]], expected: list[list[str]]) -> None:
    # The check above proves nothing unless it finds the circles there are.
    graph = grimp.ImportGraph()
    for importer, imported in imports:
        graph.add_import(importer=importer, imported=imported)
    assert circles(graph) == expected


def _module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def private_imports(source: str, module: str, *, is_package: bool = False) -> list[tuple[int, str]]:
    """The private modules ``source`` (the code of ``module``) imports from outside their package, by line: at any
    depth (in functions and ``TYPE_CHECKING`` blocks too), relative imports resolved. A module is private when a
    part of its dotted name starts with one underscore; its package is the part of the name before that."""
    package = module if is_package else module.rpartition(".")[0]
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parts = package.split(".")
                base = ".".join([*parts[: len(parts) - (node.level - 1)], *([base] if base else [])])
            # ``from simulator.loading import _limits`` imports the module simulator.loading._limits.
            names = [base, *(f"{base}.{alias.name}" for alias in node.names if _is_module(f"{base}.{alias.name}"))]
        else:
            continue
        for name in names:
            owner = _owner(name)
            if owner is not None and module != owner and not module.startswith(owner + "."):
                found.append((node.lineno, name))
    return found


def _is_module(name: str) -> bool:
    path = PACKAGE.parent.joinpath(*name.split("."))
    return path.with_suffix(".py").is_file() or (path / "__init__.py").is_file()


def _private(part: str) -> bool:
    return part.startswith("_") and not part.startswith("__")


def _owner(name: str) -> str | None:
    """The package that owns the private module ``name`` (None: ``name`` is no private module of simulator)."""
    parts = name.split(".")
    if parts[0] != "simulator":
        return None
    for position, part in enumerate(parts):
        if _private(part):
            return ".".join(parts[:position])
    return None


MODULES = sorted(
    (path for path in PACKAGE.rglob("*.py") if not _module_name(path).startswith(PRIVATE_IMPORTS_ALLOWED_IN)),
    key=_module_name,
)


def test_the_package_has_modules() -> None:
    assert len(MODULES) > 100


@pytest.mark.parametrize("path", MODULES, ids=_module_name)
def test_no_private_module_is_imported_from_outside_its_package(path: Path) -> None:
    module = _module_name(path)
    wrong = [
        f"{path.relative_to(PACKAGE.parent)}:{line}: {name}"
        for line, name in private_imports(
            path.read_text(encoding="utf-8"), module, is_package=path.name == "__init__.py"
        )
    ]
    assert not wrong, (
        "a private module is its package's own: import the name from the package (add it to the package's "
        "__init__ and __all__):\n" + "\n".join(wrong)
    )


@pytest.mark.parametrize(
    ("source", "module", "expected"),
    [
        ("from simulator.llm._client import LLMClient", "simulator.runner._case", ["simulator.llm._client"]),
        ("from simulator.llm import _client", "simulator.runner._case", ["simulator.llm._client"]),
        ("import simulator.loading._yaml", "simulator.exchange", ["simulator.loading._yaml"]),
        ("def f():\n    from ..loading._json import parse_json", "simulator.analysis.x", ["simulator.loading._json"]),
        ("from simulator._files import write_file", "simulator.runner._case", []),  # inside simulator
        ("from simulator.llm._client import LLMClient", "simulator.llm.cache", []),  # its own package
        ("from ._load import LoadedSuite", "simulator.loading.lint", []),
        ("from simulator.llm import LLMClient, __version__", "simulator.runner._case", []),
        ("from simulator.judges.checks import _helper", "simulator.runner._case", []),  # a name, not a module
    ],
)
def test_private_imports_are_found(source: str, module: str, expected: list[str]) -> None:
    assert [name for _, name in private_imports(source, module)] == expected
