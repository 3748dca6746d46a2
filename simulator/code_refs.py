"""Importing the code a suite names: ``module:attribute`` references of python agents, graphs and live tools.

Where a module is looked for, in this order:

1. the folders of the files that name it: the suite's folder, then the agent file's folder. When the module's
   top-level name is there (``holiday_tools.py``, or a ``holiday_tools/`` package), it is loaded from there;
2. otherwise as Python would: the working folder (as for ``python -m``), then the installed packages.

A module found in a suite's (or agent file's) folder is loaded once per folder, under a private package name
(``_simulator_code.f_<folder hash>.holiday_tools``), never under its plain name: two suites that each have a
``holiday_tools.py`` each get their own, and ``sys.path`` is left as it was. While such a module is being
loaded, its folder is first on ``sys.path``, so it can import the modules beside it by their plain names
(``import helpers``); those are ordinary modules, shared by the whole process like any other import, so give
them distinctive names (or put them in a package) when several suites have helpers of the same name.

Nothing here calls the code: :func:`resolve` imports a module (which runs its top-level statements) and looks
up the attribute; every failure is a :class:`CodeRefError` whose message says what was wrong and how to fix it.
"""

from __future__ import annotations

import difflib
import hashlib
import importlib
import importlib.machinery
import os
import sys
import threading
import traceback
import types
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from simulator.errors import SimulatorError

#: The private package under which modules found in a suite's folder are loaded.
PRIVATE_ROOT = "_simulator_code"

_LOCK = threading.RLock()


class CodeRefError(SimulatorError):
    """A ``module:attribute`` reference that cannot be imported, or names something unusable."""


def code_folders(*files: Path | None) -> tuple[Path, ...]:
    """The folders of ``files`` (the suite file, the agent file), in that order, each once."""
    folders: list[Path] = []
    for file in files:
        if file is not None and (folder := file.resolve().parent) not in folders:
            folders.append(folder)
    return tuple(folders)


def resolve(ref: str, *, what: str, folders: Sequence[Path] = ()) -> Any:
    """The object ``module:attribute`` names, looked for in ``folders`` first (see the module's docstring).

    ``what`` names the reference in messages ("agent", "graph", "tool function").
    """
    module_name, _, attribute = ref.partition(":")
    module = _import(ref, module_name, what, [Path(folder) for folder in folders])
    target: Any = module
    for part in attribute.split("."):
        try:
            target = getattr(target, part)
        except AttributeError:
            names = [name for name in dir(target) if not name.startswith("_")]
            near = difflib.get_close_matches(part, names, n=1, cutoff=0.75)
            hint = f"; did you mean {near[0]!r}?" if near else ""
            where = _source(module)
            raise CodeRefError(
                f"cannot import {what} {ref!r}: module {module_name!r} has no {part!r}{where}{hint}"
            ) from None
    return target


def resolve_callable(ref: str, *, what: str, folders: Sequence[Path] = ()) -> Any:
    """Like :func:`resolve`, and the object must be callable (a function, an async function, a class...)."""
    target = resolve(ref, what=what, folders=folders)
    if not callable(target):
        raise CodeRefError(
            f"{what} {ref!r} is not callable: it is {_a(type(target).__name__)}; name a function "
            "(`def ...` or `async def ...`)"
        )
    return target


def _import(ref: str, module_name: str, what: str, folders: list[Path]) -> types.ModuleType:
    for folder in folders:
        private = f"{_folder_package(folder, create=False)}.{module_name}"
        if private in sys.modules:
            return sys.modules[private]
        if _has_module(folder, module_name):
            return _import_guarded(ref, module_name, what, folders, folder)
    return _import_guarded(ref, module_name, what, folders, None)


def _import_guarded(
    ref: str, module_name: str, what: str, folders: list[Path], folder: Path | None
) -> types.ModuleType:
    """Import from ``folder`` (or as Python would, without one); whatever that raises becomes a CodeRefError
    that says which part failed."""
    try:
        return _import_from(folder, module_name) if folder is not None else _import_plain(module_name)
    except ModuleNotFoundError as exc:
        missing = _public_name(exc.name or "")
        if not missing or not (module_name == missing or module_name.startswith(f"{missing}.")):
            # Found, but a module it imports is missing: the module's own problem.
            raise CodeRefError(_raised(ref, module_name, what, exc)) from None
        if folder is not None:
            looked = f"{module_name.partition('.')[0]} is in {_display(folder)}, but {missing!r} is not"
        else:
            cwd = Path.cwd()
            places = "".join(f"{_display(f)}, " for f in folders if f.resolve() != cwd)
            looked = f"looked in {places}the working folder and the installed packages"
        raise CodeRefError(
            f"cannot import {what} {ref!r}: ModuleNotFoundError: no module named {missing!r} ({looked}). "
            "Check the module path; a module of your own goes beside the suite file or the agent file, "
            f"as {missing.replace('.', '/')}.py"
        ) from None
    except (Exception, SystemExit) as exc:
        raise CodeRefError(_raised(ref, module_name, what, exc)) from None


def _raised(ref: str, module_name: str, what: str, exc: BaseException) -> str:
    """The message for a module that was found but failed while loading (its own error, or a missing import)."""
    place, text, hint = "", str(exc), ""
    if isinstance(exc, SyntaxError) and exc.filename:
        place, text = f" at {_display(Path(exc.filename))}:{exc.lineno}", exc.msg
    else:
        frames = [frame for frame in traceback.extract_tb(exc.__traceback__) if not frame.filename.startswith("<")]
        if frames:
            place = f" at {_display(Path(frames[-1].filename))}:{frames[-1].lineno}"
    if isinstance(exc, ModuleNotFoundError):
        hint = " (install it where simulator is installed, or fix the import)"
    return (
        f"cannot import {what} {ref!r}: loading module {module_name!r} raised {type(exc).__name__}{place}: {text}{hint}"
    )


def _public_name(name: str) -> str:
    """A module name as the person wrote it: without the private package of its folder."""
    if name.startswith(f"{PRIVATE_ROOT}."):
        return name.split(".", 2)[2] if name.count(".") >= 2 else ""
    return name


def _import_plain(module_name: str) -> types.ModuleType:
    """Import as Python would, with the working folder importable (as it is for ``python -m``)."""
    cwd = os.getcwd()
    if cwd not in sys.path:
        sys.path.insert(0, cwd)
    return importlib.import_module(module_name)


def _import_from(folder: Path, module_name: str) -> types.ModuleType:
    """Import ``module_name`` from ``folder`` under the folder's private package, never its plain name."""
    with _LOCK:
        package = _folder_package(folder, create=True)
        entry = str(folder)
        sys.path.insert(0, entry)
        try:
            return importlib.import_module(f"{package}.{module_name}")
        finally:
            # Remove exactly the entry added above, even if the module changed sys.path meanwhile.
            for index, value in enumerate(sys.path):
                if value is entry:
                    del sys.path[index]
                    break


def _folder_package(folder: Path, *, create: bool) -> str:
    """The private package name for ``folder``; with ``create``, the package exists in ``sys.modules``."""
    key = hashlib.sha256(str(folder).encode("utf-8")).hexdigest()[:16]
    name = f"{PRIVATE_ROOT}.f_{key}"
    if create and name not in sys.modules:
        if PRIVATE_ROOT not in sys.modules:
            root = types.ModuleType(PRIVATE_ROOT, "Modules found beside suites and agent files (simulator.code_refs).")
            root.__path__ = []
            sys.modules[PRIVATE_ROOT] = root
        package = types.ModuleType(name, f"Modules of {folder}")
        package.__path__ = [str(folder)]
        sys.modules[name] = package
    return name


def _has_module(folder: Path, module_name: str) -> bool:
    """Whether the module's top-level name is a module or package in ``folder`` (a plain folder of the same
    name counts only when it holds the dotted module: it may just be a folder of data)."""
    parts = module_name.split(".")
    for attempt in range(2):
        if attempt:
            # A module written moments ago (tests, editors) may be missing from the finder's cached listing.
            importlib.invalidate_caches()
        spec = importlib.machinery.PathFinder.find_spec(parts[0], [str(folder)])
        if spec is None:
            continue
        if spec.origin not in (None, "namespace"):
            return True
        inner = folder.joinpath(*parts)
        return len(parts) > 1 and (inner.is_dir() or inner.with_suffix(".py").is_file())
    return False


def _source(module: types.ModuleType) -> str:
    file = getattr(module, "__file__", None)
    return f" (in {_display(Path(file))})" if file else ""


def _display(path: Path) -> str:
    """A path as the person would type it: relative to the working folder when inside it."""
    try:
        relative = path.resolve().relative_to(Path.cwd())
    except ValueError:
        return str(path)
    return str(relative) if str(relative) != "." else "the working folder"


def _a(noun: str) -> str:
    return f"an {noun}" if noun[:1].lower() in "aeiou" else f"a {noun}"
