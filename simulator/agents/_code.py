"""A python agent's code: its ``module:callable`` imported from the suite's folders first, a class instantiated
with the config's options, and what kind of callable it is (the text and the voice python agents share this)."""

from __future__ import annotations

import inspect
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from simulator.code_refs import CodeRefError, resolve
from simulator.errors import AgentError
from simulator.models import PythonAgent

__all__ = ["AgentCode", "agent_code", "import_ref"]


def import_ref(ref: str, *, what: str, folders: Sequence[Path] = ()) -> Any:
    """Import ``module:attribute``, from ``folders`` first (the suite's and the agent file's), then from the
    working folder (as for ``python -m``) and the installed packages; an AgentError says why it cannot."""
    try:
        return resolve(ref, what=what, folders=folders)
    except CodeRefError as exc:
        raise AgentError(str(exc)) from None


@dataclass(frozen=True)
class AgentCode:
    """A python agent's callable, ready to call: the function (a class's instance's ``respond``, or the
    instance), whether it keeps state between turns (a class), and whether it is a coroutine function."""

    function: Callable[..., Any]
    stateful: bool
    is_async: bool


def agent_code(config: PythonAgent, *, code_folders: Sequence[Path] = (), what: str = "agent") -> AgentCode:
    """Import ``config.callable`` (see :func:`import_ref`); a class is instantiated with the config's ``options``
    (once per conversation: it may keep state). An AgentError says why it cannot be called."""
    target = import_ref(config.callable, what=what, folders=code_folders)
    stateful = inspect.isclass(target)
    if stateful:
        try:
            target = target(**config.options)
        except Exception as exc:
            raise AgentError(f"could not create {what} {config.callable!r}: {type(exc).__name__}: {exc}") from exc
        target = getattr(target, "respond", target)
    if not callable(target):
        raise AgentError(f"{what} {config.callable!r} is not callable")
    is_async = inspect.iscoroutinefunction(target) or (
        not inspect.isroutine(target) and inspect.iscoroutinefunction(type(target).__call__)
    )
    return AgentCode(target, stateful, is_async)
