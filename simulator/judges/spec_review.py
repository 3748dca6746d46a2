"""The optional second pass of spec lint: a judge model reads a suite and suggests where it is ambiguous.

One structured request per suite (prompt ``prompts/spec_review.md``), holding the suite's YAML text (secrets
redacted) and the deterministic findings, so the model does not repeat them, each in a section fenced by the
request's token (:mod:`simulator.fence`): the suite's texts are what is reviewed, never instructions. Each
suggestion becomes a :class:`~simulator.loading.lint.Finding` of rule ``model-review``, severity ``info`` and
source ``model``, placed at the case, step and field it names (the case's name if the field is not written): a
model's reading is a hint for the author, never a verdict, so it never fails ``lint``. Nothing is sent
without a judge model.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Mapping, Sequence
from importlib import resources
from typing import Any, Literal

from pydantic import BaseModel, Field

from simulator.fence import fence_sections
from simulator.llm import LLMClient, Role
from simulator.loading import DataPath, LoadedSuite, format_path
from simulator.loading.lint import Finding, suite_view
from simulator.models import ModelRoles
from simulator.models.run import ModelOptions, ModelRole, resolved_models
from simulator.safety import redact

__all__ = [
    "MODEL_RULE",
    "SPEC_REVIEW_PROMPT",
    "SpecReviewReply",
    "SpecSuggestion",
    "review_suite",
    "review_suites",
    "spec_review_prompt",
]

#: The rule id of every model suggestion.
MODEL_RULE = "model-review"
#: The review's prompt, a file under ``prompts/`` like the judge questions' (not overridable by a suite).
SPEC_REVIEW_PROMPT = "spec_review"
_HEADER = re.compile(r"\A\s*<!--.*?-->\s*", re.DOTALL)


class SpecSuggestion(BaseModel):
    """One place of the suite the model finds ambiguous, and what to do about it."""

    case: str
    step: int | None
    field: Literal["goal", "success_criteria", "response_guide", "checks", "expectations", "turns", "case"]
    problem: str = Field(min_length=1)
    fix: str = Field(min_length=1)


class SpecReviewReply(BaseModel):
    """The model's suggestions for one suite (none for a clear suite)."""

    suggestions: list[SpecSuggestion]


@functools.cache
def spec_review_prompt() -> str:
    """The system message: ``prompts/spec_review.md`` without its header comment."""
    text = (
        resources.files("simulator.judges").joinpath("prompts", f"{SPEC_REVIEW_PROMPT}.md").read_text(encoding="utf-8")
    )
    return _HEADER.sub("", text, count=1).rstrip("\n").format()


def _place(loaded: LoadedSuite, suggestion: SpecSuggestion) -> DataPath | None:
    """Where a suggestion points in the file, or None when it names no case of the suite."""
    cases_key = "evals" if loaded.hosted_format else "cases"
    index = next((i for i, case in enumerate(loaded.suite.cases) if case.name == suggestion.case), None)
    if index is None:
        return None
    case = loaded.suite.cases[index]
    base: DataPath = (cases_key, index)
    steps = getattr(case, "steps", None)
    if suggestion.step is not None and steps is not None and 1 <= suggestion.step <= len(steps):
        base = (*base, "steps", suggestion.step - 1)
        target = steps[suggestion.step - 1]
    else:
        target = case
    if suggestion.field != "case" and getattr(target, suggestion.field, None):
        return (*base, suggestion.field)
    return (*base, "name") if len(base) == 2 else base


async def review_suite(loaded: LoadedSuite, llm: LLMClient, findings: Sequence[Finding] = ()) -> list[Finding]:
    """Ask the judge model of ``llm`` about one suite; its suggestions as ``info`` findings of source ``model``."""
    view = suite_view(loaded)
    if view is None:
        return []
    known = "\n".join(f"- {f.key_path}: {f.rule}: {f.message}" for f in findings) or "(none)"
    # Redacted before fencing: the token is a hash of the text the model is sent.
    fenced = fence_sections({"suite": redact(view.text), "findings": redact(known)})
    content = f"The suite file {loaded.path.name}:\n{fenced['suite']}\n\nDeterministic findings:\n{fenced['findings']}"
    messages = [{"role": "system", "content": spec_review_prompt()}, {"role": "user", "content": content}]
    reply = await llm.structured(Role.JUDGE, messages, SpecReviewReply)
    found: list[Finding] = []
    for suggestion in reply.suggestions:
        path = _place(loaded, suggestion)
        where = path if path is not None else ()
        line, column = view.located.position(where, key=bool(where) and isinstance(where[-1], str))
        unknown = "" if path is not None else f" (case {suggestion.case!r} is not in this suite)"
        found.append(
            Finding(
                MODEL_RULE,
                "info",
                view.file,
                line,
                column,
                format_path(where),
                suggestion.problem + unknown,
                suggestion.fix,
                source="model",
            )
        )
    return sorted(found, key=Finding.sort_key)


async def review_suites(
    suites: Sequence[LoadedSuite],
    findings: Sequence[Finding],
    *,
    judge_model: str | None = None,
    models: Mapping[ModelRole, Mapping[str, Any]] | None = None,
    llm: LLMClient | None = None,
) -> list[Finding]:
    """Review every suite, one request each, with its own judge settings, the judge settings of ``models``
    (per-role settings as ``run`` takes them: ``api_base``, ``backend``, ...) laid over them and ``judge_model``
    over both. A suite left without a judge model is not reviewed."""
    given = ModelOptions(
        judge_model=judge_model, models={role: dict(values) for role, values in (models or {}).items()}
    )
    found: list[Finding] = []
    for loaded in suites:
        view = suite_view(loaded)
        own = [f for f in findings if view is not None and f.file == view.file]
        if llm is not None:
            found += await review_suite(loaded, llm, own)
            continue
        settings = resolved_models(loaded.suite, given).judge
        if settings.model is None:
            continue
        client = LLMClient(ModelRoles(judge=settings))
        try:
            found += await review_suite(loaded, client, own)
        finally:
            await client.aclose()
    return found
