"""Suite files checked before anything runs: validated (with the providers of the models they name), linted
(and reviewed by a judge model when one is named), their personas listed, their JSON Schemas, and what kind of
YAML file a path holds."""

from __future__ import annotations

import asyncio
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from simulator.errors import ConfigError
    from simulator.loading import LoadedSuite, ValidationReport
    from simulator.loading.lint import LintReport, Rule
    from simulator.models import Persona

PathLike = str | Path
ModelSettings = Mapping[Any, Mapping[str, Any]]


def validate(paths: Sequence[PathLike]) -> ValidationReport:
    """Check suites, hosted evals files, agent files and personas in ``paths`` (files or folders): every problem
    with its file, line, column and key, including a model whose provider is not known."""
    from simulator.loading import validate_paths

    report = validate_paths(paths)
    report.errors.extend(_model_errors(report.suites))
    return report


def _model_errors(suites: list[LoadedSuite]) -> list[ConfigError]:
    """The suites' model strings whose provider litellm does not know, each at its place."""
    errors: list[ConfigError] = []
    if not any(_names_a_provider(loaded) for loaded in suites):
        return errors  # validate of fake or openai models stays clear of the model client's imports
    from simulator.llm import suite_model_problems
    from simulator.loading import config_error_at

    for loaded in suites:
        for path, message in suite_model_problems(loaded.suite):
            if path[0] == "agent" and loaded.agent_path is not None and loaded.agent_path != loaded.path:
                errors.append(config_error_at(loaded.agent_path, path[1:], message))
            else:
                errors.append(config_error_at(loaded.path, path, message))
    return errors


def _names_a_provider(loaded: LoadedSuite) -> bool:
    """Whether a suite writes a model whose provider prefix is neither Simulator's own (``fake``, ``openai``) nor
    absent: only then is there something to look up in litellm's provider list."""
    from simulator.models.run import MODEL_ROLES

    suite = loaded.suite
    models = [getattr(suite.models, role).model for role in MODEL_ROLES]
    agent = loaded.agent
    if agent is not None and agent.own_model is not None:
        models.append(agent.own_model)
    return any(model and "/" in model and model.partition("/")[0] not in ("fake", "openai") for model in models)


@dataclass
class Linted:
    """What :func:`lint` found: the lint report (files, suites, findings, errors, exit code) and, when the judge
    model's review could not be had, why (the rules' findings stand)."""

    report: LintReport
    model_error: str | None = None

    @property
    def rules(self) -> Mapping[str, Rule]:
        """Every lint rule by id, with its severity and summary."""
        from simulator.loading.lint import RULES

        return RULES

    def exit_code(self, *, strict: bool = False) -> int:
        """0 clean, 1 an error finding (``strict``: a warning too), 2 invalid files, 3 the review failed."""
        return 3 if self.model_error else self.report.exit_code(strict=strict)


async def lint_async(
    paths: Sequence[PathLike],
    *,
    ignore: Sequence[str] = (),
    judge_model: str | None = None,
    models: ModelSettings | None = None,
) -> Linted:
    """Find what makes a simulation unwinnable or meaningless before any model is called (facts the user is never
    given, goals that ask two things, criteria any reply meets, unreachable steps, ...), skipping the rules in
    ``ignore``. With a judge model (``judge_model``, or the judge in ``models``) that model also reviews each
    suite where it is ambiguous; its findings are labelled model suggestions. Without it nothing is sent."""
    from simulator.errors import ModelError
    from simulator.loading.lint import lint_paths
    from simulator.models.run import ModelOptions

    report = lint_paths(paths, ignore=ignore)
    settings = {role: dict(values) for role, values in (models or {}).items()}
    given = ModelOptions.model_validate({"judge_model": judge_model, "models": settings})
    linted = Linted(report)
    if given.named_judge and not report.errors and report.suites:
        from simulator.judges.spec_review import review_suites

        try:
            report.findings += await review_suites(
                report.suites, report.findings, judge_model=given.judge_model, models=given.models
            )
        except ModelError as exc:
            linted.model_error = f"the review by {given.named_judge} failed: {exc}"
        report.findings.sort(key=lambda f: f.sort_key())
    return linted


def lint(
    paths: Sequence[PathLike],
    *,
    ignore: Sequence[str] = (),
    judge_model: str | None = None,
    models: ModelSettings | None = None,
) -> Linted:
    """:func:`lint_async`, blocking until done (from async code use ``lint_async``)."""
    return asyncio.run(lint_async(paths, ignore=ignore, judge_model=judge_model, models=models))


@dataclass(frozen=True)
class PersonaList:
    """The personas of a folder by name, and the folder."""

    directory: Path
    personas: dict[str, Persona] = field(default_factory=dict)


def list_personas(directory: PathLike | None = None) -> PersonaList:
    """The personas in ``directory`` (default: the nearest ``personas/`` folder here or above), or an
    InputError when there is no such folder."""
    from simulator.errors import InputError
    from simulator.loading import find_upwards, load_personas

    if directory is None:
        found = find_upwards(Path.cwd(), "personas", want_dir=True)
        if found is None:
            raise InputError("no personas/ folder here or above: pass --dir FOLDER")
    else:
        found = Path(directory)
        if not found.is_dir():
            raise InputError(f"{found}: no such folder")
    return PersonaList(found, load_personas(found))


def json_schema(kind: str = "suite") -> str:
    """The JSON Schema of a kind of file (``suite``, ``persona``, ``agent``, ``evals``, ...), for editors."""
    from importlib import resources

    from simulator.errors import InputError
    from simulator.loading import SCHEMA_FILES

    if kind not in SCHEMA_FILES:
        raise InputError(f"no schema for {kind!r}: choose one of {', '.join(SCHEMA_FILES)}")
    return resources.files("simulator.schemas").joinpath(SCHEMA_FILES[kind]).read_text(encoding="utf-8")


def yaml_kind(path: PathLike) -> str:
    """What a YAML file holds, told as :func:`validate` tells it (``suite``, ``evals``, ``agent``, ``persona``,
    ``personas`` or ``unknown``), or ``unreadable`` when it cannot be read or parsed (loading it says why). Reads
    the file with the loader's limits on size, depth and aliases."""
    from simulator.loading import classify, parse_yaml, read_text

    file = Path(path)
    text, _ = read_text(file)
    if text is None:
        return "unreadable"
    located, _ = parse_yaml(text, str(file))
    if located is None:
        return "unreadable"
    return classify(file, located.data)


def read_model_file(path: PathLike) -> dict[str, dict[str, Any]]:
    """The per-role model settings of a models file (YAML like a suite's ``models:``: agent/user/judge with
    model, api_base, api_key_env, backend, timeout, ...), only the keys it sets, so they override a suite's key
    by key. A bad file, or a model whose provider is not known, is a ConfigErrors naming the place."""
    from simulator.errors import ConfigErrors
    from simulator.llm import provider_problem
    from simulator.loading import config_error_at, load_model_file
    from simulator.models import ModelRoles

    file = Path(path)
    overrides: dict[str, dict[str, Any]] = load_model_file(file, ModelRoles).model_dump(exclude_unset=True)
    errors = []
    for role, values in overrides.items():
        model = values.get("model")
        problem = provider_problem(model, values.get("backend", "auto")) if model else None
        if problem is not None:
            errors.append(config_error_at(file, (role, "model"), f"{role} model {problem}"))
    if errors:
        raise ConfigErrors(errors)
    return overrides
