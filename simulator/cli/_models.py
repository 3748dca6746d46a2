"""The model options every command that asks a model takes, declared once: ``--user-model``, ``--judge-model``,
``--models FILE`` and ``--judge-api-base`` / ``--user-api-base`` / ``--agent-api-base``, and the one function that
turns them into :class:`~simulator.models.run.ModelOptions` (laid over a suite's ``models:`` for a new run, over
the stored run's settings for a command on a stored run)."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

import simulator

if TYPE_CHECKING:
    from simulator import ModelOptions, ModelRole


__all__ = [
    "AgentApiBaseOption",
    "JudgeApiBaseOption",
    "JudgeModelOption",
    "ModelsFileOption",
    "UserApiBaseOption",
    "UserModelOption",
    "_model_overrides",
    "model_options",
    "note_unused_roles",
]

UserModelOption = Annotated[
    str | None,
    typer.Option(
        "--user-model",
        help="litellm model for the simulated user; overrides the suite's models.user (and, on a stored run, the "
        "run's).",
    ),
]
JudgeModelOption = Annotated[
    str | None,
    typer.Option(
        "--judge-model",
        help="litellm model for the judge; overrides the suite's models.judge (and, on a stored run, the run's).",
    ),
]
ModelsFileOption = Annotated[
    Path | None,
    typer.Option(
        "--models",
        help="YAML file of model settings per role, like a suite's `models:` (agent/user/judge: model, api_base, "
        "api_key_env, backend, timeout, ...); what it sets overrides the suite (and, on a stored run, the run's).",
    ),
]
JudgeApiBaseOption = Annotated[
    str | None, typer.Option("--judge-api-base", help="Base URL of the judge model's endpoint.")
]
UserApiBaseOption = Annotated[
    str | None, typer.Option("--user-api-base", help="Base URL of the simulated user's model endpoint.")
]
AgentApiBaseOption = Annotated[
    str | None, typer.Option("--agent-api-base", help="Base URL of a litellm agent's model endpoint.")
]


def _model_overrides(
    models_file: Path | None, judge_api_base: str | None, user_api_base: str | None, agent_api_base: str | None
) -> dict[str, dict[str, Any]]:
    """Per-role model settings from ``--models FILE`` (the suite's ``models:`` mapping, as YAML) and the
    ``--*-api-base`` options (which win over the file)."""
    overrides: dict[str, dict[str, Any]] = {}
    if models_file is not None:
        overrides = simulator.read_model_file(models_file)  # only what it sets: it overrides key by key
    for role, base in (("judge", judge_api_base), ("user", user_api_base), ("agent", agent_api_base)):
        if base is not None:
            overrides.setdefault(role, {})["api_base"] = base
    return overrides


def model_options(
    *,
    user_model: str | None,
    judge_model: str | None,
    models_file: Path | None,
    judge_api_base: str | None,
    user_api_base: str | None,
    agent_api_base: str | None,
) -> ModelOptions:
    """The model options of a command line, the file read and checked (a bad file is an error naming its place)."""
    overrides = _model_overrides(models_file, judge_api_base, user_api_base, agent_api_base)
    return simulator.ModelOptions.model_validate(
        {"user_model": user_model, "judge_model": judge_model, "models": overrides}
    )


_ROLE_OPTIONS: dict[str, str] = {
    "user": "--user-model / --user-api-base / the user in --models",
    "agent": "--agent-api-base / the agent in --models",
}


def note_unused_roles(options: ModelOptions, command: str, asks: Sequence[ModelRole] = ("judge",)) -> str | None:
    """The note to print when the options set a role ``command`` never asks (it asks only ``asks``), else None."""
    unused = [_ROLE_OPTIONS[role] for role in ("user", "agent") if role not in asks and options.gives(role)]
    if not unused:
        return None
    return f"{command} asks only the {' and '.join(asks)} model: {'; '.join(unused)} not used here"
