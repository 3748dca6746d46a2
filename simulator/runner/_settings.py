"""The options a run API call takes, checked before anything runs: run settings laid over stored ones, the
executor (Ray installed and reachable), per-role model settings against the suite's ``models:`` schema, and where
a traced run sends its spans."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from contextlib import AbstractContextManager, nullcontext
from typing import Any, Final, cast

from pydantic import ValidationError

from simulator.errors import InputError
from simulator.models import ModelRoles
from simulator.models.ranges import check_numbers
from simulator.models.run import ModelOptions, ModelRole, RunSettings
from simulator.models.voice import Modality
from simulator.runner._otlp import OtlpTarget, otlp_target


def checked_settings(settings: RunSettings | None, options: Mapping[str, Any]) -> RunSettings:
    """``settings`` with ``options`` laid over it, validated: an unknown or ill-typed option, or a number out of
    its range (:mod:`simulator.models.ranges`), is an InputError naming it, before anything runs."""
    data = settings.model_dump() if settings is not None else {}
    data.update(options)
    data["modality"] = one_modality(data.get("modality"))
    if isinstance(data.get("models"), Mapping):
        data["models"] = role_settings(data["models"])
    check_numbers(data)  # before pydantic, which would read True as 1 and "3" as 3
    try:
        chosen = RunSettings.model_validate(data)
    except ValidationError as exc:
        problems = "; ".join(
            f"{'.'.join(str(part) for part in error['loc']) or 'settings'}: {error['msg']}" for error in exc.errors()
        )
        raise InputError(f"invalid run settings: {problems}") from None
    check_executor(chosen)
    # RunSettings keeps per-role overrides as plain data: checked here against the models' schema, so a misspelt
    # key is an error before the run, not a field silently set on a role.
    return chosen.model_copy(update={"models": role_overrides(chosen.models)}) if chosen.models else chosen


#: The modalities a run can be given, in the order a side-by-side run takes them when asked for both.
MODALITIES: Final = ("chat", "voice")


def modalities_given(value: str | Sequence[str]) -> tuple[Modality, ...]:
    """``--modality`` as the modalities it names, in its order (``chat``, ``voice``, ``chat,voice``, or a list of
    them), or an InputError naming the option and the values it takes."""
    parts = [part.strip() for part in value.split(",")] if isinstance(value, str) else [str(part) for part in value]
    unknown = [part for part in parts if part not in MODALITIES]
    if unknown or not parts or len(set(parts)) != len(parts):
        shown = value if isinstance(value, str) else ",".join(parts)
        raise InputError(f"--modality {shown!r}: give chat, voice, or chat,voice (each once)")
    return tuple(cast("Modality", part) for part in parts)


def one_modality(value: object) -> Modality | None:
    """A run's ``modality`` setting, which names one modality: both are two runs (:func:`simulator.run_modalities`);
    anything else is an InputError saying so."""
    if value is None:
        return None
    if not isinstance(value, str | list | tuple):
        raise InputError(f"invalid run settings: modality: give chat or voice, not {value!r}")
    given = modalities_given(value)
    if len(given) > 1:
        raise InputError(
            "modality: one run takes one modality; chat and voice side by side are two runs: call "
            "simulator.run_modalities (the command line: --modality chat,voice)"
        )
    return given[0]


def check_executor(settings: RunSettings) -> None:
    """The executor options fit together, Ray is installed when the run asks for it and something answers at its
    ``ray_address`` (before anything is stored), or an InputError saying what to change."""
    if settings.executor == "local":
        given = [option for option, value in (("--ray-address", settings.ray_address),
                                               ("--ray-workers", settings.ray_workers)) if value]  # fmt: skip
        if given:
            raise InputError(f"{' and '.join(given)} only apply to Ray runs: add --executor ray, or leave them out")
        return
    import importlib.util

    if importlib.util.find_spec("ray") is None:
        raise InputError(
            "--executor ray needs Ray, which is not installed: pip install 'simulator[ray]' (or run with "
            "--executor local). Ray has wheels for CPython on Linux x86_64/aarch64, macOS arm64 and Windows x86_64 "
            "(macOS x86_64 up to Python 3.13); elsewhere the extra installs nothing"
        )
    from simulator.runner._ray import check_reachable, named_cluster

    named = named_cluster(settings)  # --ray-address, else Ray's own RAY_ADDRESS
    if named is not None:
        check_reachable(*named)  # before the run is stored: Ray would retry for minutes


def on_cluster(settings: RunSettings) -> AbstractContextManager[None]:
    """The run's Ray cluster connected to (or a local one started) for the block, when it runs on Ray: entered
    before the run is stored, so a cluster that refuses this process (an address where nobody answers, a token
    it does not take) leaves no empty failed run behind."""
    if settings.executor != "ray":
        return nullcontext()
    from simulator.runner._ray import cluster

    return cluster(settings)


def role_settings(models: Mapping[Any, Any]) -> dict[Any, Any]:
    """A role given as a model string (``{"user": "ollama/llama3.1"}``) is that model, as in a suite's ``models:``."""
    return {role: {"model": values} if isinstance(values, str) else values for role, values in models.items()}


def role_overrides(models: Mapping[Any, Mapping[str, Any] | str]) -> dict[ModelRole, dict[str, Any]]:
    """Per-role model settings given to a command (``--models FILE``, ``--judge-api-base`` ...), checked
    against the suite's own ``models:`` schema: only the keys given, so they override the suite's field by
    field; a role given as a model string is that model. An unknown role or key is an InputError naming it."""
    try:
        roles = ModelRoles.model_validate(
            {role: dict(values) for role, values in role_settings(models).items()}, strict=False
        )
    except ValidationError as exc:
        problems = "; ".join(
            f"{'.'.join(str(part) for part in error['loc'])}: {error['msg']}" for error in exc.errors()
        )
        raise InputError(f"invalid model settings: {problems}") from None
    return cast("dict[ModelRole, dict[str, Any]]", roles.model_dump(exclude_unset=True))


def model_options(
    user_model: str | None, judge_model: str | None, models: Mapping[Any, Mapping[str, Any]] | None
) -> ModelOptions:
    """A command's model options, the per-role settings checked (:func:`role_overrides`)."""
    return ModelOptions(user_model=user_model, judge_model=judge_model, models=role_overrides(models or {}))


def trace_target(settings: RunSettings, endpoint: str | None = None) -> OtlpTarget | None:
    """Where a run with these settings sends its spans (``trace="otlp"``), or None when it is not traced; an
    InputError for an endpoint given to a run that is not traced, or one that is not a collector's URL."""
    if settings.trace is None:
        if endpoint is not None:
            raise InputError("--trace-endpoint only applies to a traced run: add --trace otlp, or leave it out")
        return None
    return otlp_target(endpoint)
