"""What stored runs say: two runs compared, a run's failures digested (with fixes a judge model suggests),
its coverage, how well the simulated user played each persona, and how well a judge model agrees with labels."""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from simulator.api._store import PathLike, open_store

if TYPE_CHECKING:
    from simulator.analysis.compare import Comparison
    from simulator.analysis.digest import Digest
    from simulator.analysis.judge_check import JudgeCheckReport
    from simulator.models.coverage import RunCoverage
    from simulator.models.run import ModelOptions, RunRecord
    from simulator.models.summary import PersonaFidelity
    from simulator.store import Unreadable

ModelSettings = Mapping[Any, Mapping[str, Any]]


def compare_runs(
    run_a: str,
    run_b: str,
    *,
    db: PathLike | None = None,
    skipped: list[Unreadable] | None = None,
    reviewed: bool = False,
) -> Comparison:
    """Compare two stored runs case by case and step by step (``run_a`` the baseline): the settings that differ,
    regressed, improved, new, removed and not comparable cases, correctness and McNemar's test. Render it with
    :func:`simulator.render_comparison`. ``reviewed``: each result's outcome as people reviewed it
    (:func:`simulator.add_review`) instead of as judged."""
    from simulator.analysis.compare import compare_runs as compare
    from simulator.analysis.reviewed import as_reviewed

    with open_store(db) as store:
        a, b = store.get_run(run_a), store.get_run(run_b)
        results_a, results_b = store.results(a.id, skipped=skipped), store.results(b.id, skipped=skipped)
        if reviewed:
            a, results_a = as_reviewed(a, results_a, store.list_reviews(a.id))
            b, results_b = as_reviewed(b, results_b, store.list_reviews(b.id))
        return compare(a, results_a, b, results_b)


async def digest_run_async(
    run_ref: str,
    *,
    judge_model: str | None = None,
    user_model: str | None = None,
    models: ModelSettings | None = None,
    db: PathLike | None = None,
    skipped: list[Unreadable] | None = None,
) -> Digest:
    """A stored run's failures grouped by step, criterion and check, most common first, with example turns; with
    a judge model, changes to the agent's instructions it suggests (labelled as model suggestions). The judge is
    the one the run was judged by (its suite's ``models.judge`` with the run's own options), with ``judge_model``,
    ``user_model`` and ``models`` (per-role settings as :func:`simulator.run` takes them) laid over it; a run
    judged by no model gets no suggestions unless these name one."""
    from simulator.analysis.digest import build_digest, suggest_fixes
    from simulator.llm import LLMClient
    from simulator.models import ModelRoles
    from simulator.models.run import resolved_models

    given = _model_options(judge_model, user_model, models)
    with open_store(db) as store:
        record = store.get_run(run_ref)
        results = store.results(record.id, skipped=skipped)
    found = build_digest(results)
    suite = record.snapshot[0].suite if record.snapshot else None
    agent = suite.agent if suite is not None and not isinstance(suite.agent, str) else None
    instructions = agent.judge_instructions if agent is not None else None
    judge = resolved_models(suite, given.over(record.settings)).judge if suite is not None else None
    llm = LLMClient(ModelRoles(judge=judge)) if judge is not None and judge.model else None
    return await suggest_fixes(found, llm, instructions=instructions)


def digest_run(
    run_ref: str,
    *,
    judge_model: str | None = None,
    user_model: str | None = None,
    models: ModelSettings | None = None,
    db: PathLike | None = None,
    skipped: list[Unreadable] | None = None,
) -> Digest:
    """:func:`digest_run_async`, blocking until done (from async code use ``digest_run_async``)."""
    return asyncio.run(
        digest_run_async(run_ref, judge_model=judge_model, user_model=user_model, models=models, db=db, skipped=skipped)
    )


def _model_options(judge_model: str | None, user_model: str | None, models: ModelSettings | None) -> ModelOptions:
    """The model options given to a call, checked."""
    from simulator.models.run import ModelOptions

    settings = {role: dict(values) for role, values in (models or {}).items()}
    return ModelOptions.model_validate({"user_model": user_model, "judge_model": judge_model, "models": settings})


@dataclass(frozen=True)
class RunCoverageReport:
    """A stored run's coverage with the run it is of (its record summarized, for the names coverage refers to)."""

    record: RunRecord
    coverage: RunCoverage
    fail_under: float | None = None

    @property
    def below(self) -> bool:
        """Whether the coverage is below the ``fail_under`` bar asked for (a run with nothing to cover: 0%)."""
        return self.fail_under is not None and (self.coverage.percent or 0.0) < self.fail_under

    def text(self) -> str:
        """The coverage as ``simulator coverage`` prints it: the percentage, the persona x case matrix, steps
        reached, tools never called, personas never used and expectations never evaluated."""
        from simulator.reports.coverage_view import coverage_text

        return "\n".join(coverage_text(self.record, self.coverage)) + "\n"


def run_coverage(
    run_ref: str,
    *,
    fail_under: float | None = None,
    db: PathLike | None = None,
    skipped: list[Unreadable] | None = None,
) -> RunCoverageReport:
    """What a stored run exercised of what its suites declare. The percentage is the mean of: cases x personas
    run / planned, steps reached at least once / steps, declared tools called / declared, expectations evaluated
    at least once / written, world collections read or changed / seeded (with a world). Stored with the run's
    summary; computed here, a few results at a time, for a run stored without it. ``fail_under`` (a percentage,
    0-100, checked first) is the bar its ``below`` compares with."""
    from simulator.metrics import summarized
    from simulator.models.ranges import check_number

    check_number("fail_under_coverage", fail_under)

    with open_store(db) as store:
        record = store.get_run(run_ref)
        record = summarized(record, store.iter_results(record.id, skipped=skipped))
    found = record.totals.coverage if record.totals is not None else None
    assert found is not None, "summarized always gives a summary with coverage"
    return RunCoverageReport(record, found, fail_under)


def persona_fidelity(
    run_ref: str, *, db: PathLike | None = None, skipped: list[Unreadable] | None = None
) -> tuple[str, list[PersonaFidelity]]:
    """How well the simulated user played each persona in a stored run: the run's id and, per persona, the
    fidelity rate (user turns without a finding / turns the user model wrote), findings by kind and user errors."""
    from simulator.metrics import persona_fidelity as fidelity

    with open_store(db) as store:
        record = store.get_run(run_ref)
        return record.id, fidelity(stored.result for stored in store.iter_results(record.id, skipped=skipped))


async def judge_check_async(
    file: PathLike,
    *,
    judge_model: str | None = None,
    models: ModelSettings | None = None,
) -> JudgeCheckReport:
    """Score labelled transcripts (a YAML file, see ``judge_labels/demo.yaml``) with the judge model and report
    its agreement with the person who labelled them: accuracy and Cohen's kappa per question, and every
    disagreement with the judge's reason. The judge is the first item's suite's, with ``judge_model`` and
    ``models`` laid over it. A missing file is an InputError; a label file the judge cannot score a JudgeError."""
    from simulator.analysis.judge_check import judge_check as check
    from simulator.errors import InputError

    if not Path(file).is_file():
        raise InputError(f"{file}: no such file")
    given = _model_options(judge_model, None, models)
    return await check(Path(file), judge_model=given.judge_model, models=given.models)


def judge_check(
    file: PathLike, *, judge_model: str | None = None, models: ModelSettings | None = None
) -> JudgeCheckReport:
    """:func:`judge_check_async`, blocking until done (from async code use ``judge_check_async``)."""
    return asyncio.run(judge_check_async(file, judge_model=judge_model, models=models))
