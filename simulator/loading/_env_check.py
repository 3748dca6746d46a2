"""Environment references of a file checked where they are written: each ``${VAR}`` an agent's ``base_url`` or a
model role's ``api_base`` needs is set, and a ``base_url`` filled in is still a URL (:func:`env_problems`).

The loader reports each at its line, when the file is validated, not when the first conversation calls the service.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from typing import Any

from simulator.loading._yaml import DataPath
from simulator.models import ModelRoles
from simulator.models.agent import AgentBase
from simulator.models.env_refs import expand, unset_variables
from simulator.models.run import MODEL_ROLES

_URL = re.compile(r"^https?://\S+$")


def _fields(built: Any) -> Iterator[tuple[DataPath, str, bool]]:
    """Each field of ``built`` that may hold references: where, its text, and whether it must be a URL."""
    roles = built if isinstance(built, ModelRoles) else getattr(built, "models", None)
    base: DataPath = () if isinstance(built, ModelRoles) else ("models",)
    if isinstance(roles, ModelRoles):
        for role in MODEL_ROLES:
            api_base = getattr(roles, role).api_base
            if api_base is not None:
                yield (*base, role, "api_base"), api_base, False
    agent = built if isinstance(built, AgentBase) else getattr(built, "agent", None)
    if isinstance(agent, AgentBase):
        at: DataPath = () if agent is built else ("agent",)
        for where, url in agent.urls():
            yield (*at, *where), url, True


def env_problems(built: Any, environ: Mapping[str, str] | None = None) -> list[tuple[DataPath, str]]:
    """What is wrong with the environment references of ``built`` (a suite, hosted evals file, agent config or
    models file), each at the key path of its field."""
    problems: list[tuple[DataPath, str]] = []
    for where, text, url in _fields(built):
        missing = unset_variables(text, environ)
        if missing:
            names = ", ".join(missing)
            problems.append(
                (
                    where,
                    f"{text!r} needs the environment variable{'s' if len(missing) > 1 else ''} {names}, which "
                    f"{'are' if len(missing) > 1 else 'is'} not set: set {'them' if len(missing) > 1 else 'it'} "
                    f"(export {missing[0]}=...) or give a default: ${{{missing[0]}:-...}}",
                )
            )
            continue
        # The value filled in is not quoted back: the variable may hold credentials.
        if url and "${" in text and not _URL.match(expand(text, environ)):
            problems.append(
                (
                    where,
                    f"{text!r} is not an http(s) URL once filled in from the environment: the value must start "
                    "with http:// or https://",
                )
            )
    return problems
