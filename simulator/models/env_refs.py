"""Environment references in the fields that say where a service is: ``${VAR}`` and ``${VAR:-default}``.

An http agent's ``base_url`` and a model role's ``api_base`` may name environment variables, so a CI job that
starts its agent on a free port sets ``AGENT_PORT`` instead of rewriting the YAML::

    base_url: http://127.0.0.1:${AGENT_PORT:-8000}/v1

The files, the models built from them and every stored snapshot keep the reference as written; the value is
filled in only where the service is reached (:func:`expand`). ``${VAR}`` needs the variable set and not empty;
``${VAR:-default}`` uses the default when it is unset or empty, as a shell does. A ``$`` not followed by ``{``
is kept as it is.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from typing import Annotated

from pydantic import AfterValidator

from simulator.errors import InputError

__all__ = ["UnsetVariable", "WithEnvReferences", "expand", "reference_problem", "unset_variables", "well_formed"]

_OPENING = "${"
_INSIDE = re.compile(r"(?P<name>[A-Za-z_][A-Za-z0-9_]*)(?::-(?P<default>[^}]*))?")


class UnsetVariable(InputError):
    """A ``${VAR}`` whose variable is not set (and that gives no default)."""

    def __init__(self, variable: str, text: str) -> None:
        self.variable = variable
        super().__init__(
            f"{text!r} names the environment variable {variable}, which is not set: set it "
            f"(export {variable}=...) or give a default: ${{{variable}:-...}}"
        )


def _references(text: str) -> list[tuple[int, int, str, str | None]]:
    """Each well-formed reference in ``text``: its start and end, the variable and the default (None without)."""
    found: list[tuple[int, int, str, str | None]] = []
    start = text.find(_OPENING)
    while start != -1:
        end = text.find("}", start)
        if end == -1:
            break
        match = _INSIDE.fullmatch(text, start + 2, end)
        if match is not None:
            found.append((start, end + 1, match.group("name"), match.group("default")))
        start = text.find(_OPENING, end + 1)
    return found


def reference_problem(text: str) -> str | None:
    """What is wrong with the ``${...}`` references in ``text`` (a ``${`` without ``}``, a bad name), or None."""
    start = text.find(_OPENING)
    while start != -1:
        end = text.find("}", start)
        if end == -1:
            return f"`${{` at character {start + 1} has no closing `}}`: write ${{NAME}} or ${{NAME:-default}}"
        if _INSIDE.fullmatch(text, start + 2, end) is None:
            return (
                f"`{text[start : end + 1]}` is not an environment reference: write ${{NAME}} or ${{NAME:-default}} "
                "(NAME of letters, digits and _, not starting with a digit)"
            )
        start = text.find(_OPENING, end + 1)
    return None


def unset_variables(text: str, environ: Mapping[str, str] | None = None) -> list[str]:
    """The variables ``text`` needs that are unset or empty (a reference with a default needs none)."""
    env = os.environ if environ is None else environ
    missing = [name for _, _, name, default in _references(text) if default is None and not env.get(name)]
    return list(dict.fromkeys(missing))


def expand(text: str, environ: Mapping[str, str] | None = None) -> str:
    """``text`` with each ``${VAR}`` / ``${VAR:-default}`` filled in from the environment; raises
    :class:`UnsetVariable` for a variable that is needed and not set."""
    if _OPENING not in text:
        return text
    env = os.environ if environ is None else environ
    parts: list[str] = []
    last = 0
    for start, end, name, default in _references(text):
        value = env.get(name) or default
        if value is None:
            raise UnsetVariable(name, text)
        parts += [text[last:start], value]
        last = end
    parts.append(text[last:])
    return "".join(parts)


def well_formed(text: str) -> str:
    """``text`` itself when its references are well formed; a ValueError saying what is wrong otherwise (a
    pydantic validator)."""
    problem = reference_problem(text)
    if problem is not None:
        raise ValueError(problem)
    return text


#: A string field that may hold ``${VAR}`` / ``${VAR:-default}`` references, checked for their form here; kept
#: as written, filled in by :func:`expand` where it is used.
WithEnvReferences = Annotated[str, AfterValidator(well_formed)]
