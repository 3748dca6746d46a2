"""What a run runs: suite snapshots, the plan of cases x personas x repeats, and the run record.

Persona choice per case (``--persona``):
  * default: the personas the case names (or, if it names none, the suite's ``personas``), each one; when
    neither names any, one persona picked at random per case from those available, with the run's seed;
  * ``all``: every persona available to the suite; ``random``: one at random per case; a name: that persona.
Golden cases replay fixed turns: there is no simulated user to play a persona, so they run once (per repeat)
without one, whatever ``--persona`` says, and the plan says so (:func:`plan_notes`).
Repeats: ``--repeat K`` if given, else the case's ``repeats``, else the suite's.
The seed is recorded in the run's settings (a random one when none was given), so the plan and every scripted
user's perturbations can be reproduced.

Shards (``--shard K/N``): the whole plan is built, then each item goes to the part given by a SHA-256 of its
suite's content (not its path: equal on every machine and checkout), case, persona and repeat, modulo N. Every
shard of one plan so agrees without talking, and the N parts hold every item exactly once. The run records its
part (``settings.shard``) and the hash of the whole plan (``settings.plan_hash``), which ``runs merge`` checks.
"""

from __future__ import annotations

import hashlib
import json
import platform
import random
import re
from collections.abc import Callable, Iterator, Sequence
from datetime import UTC, datetime
from importlib import metadata
from pathlib import Path
from typing import Any, Final

from simulator._version import __version__
from simulator.errors import ConfigError, ConfigErrors, InputError
from simulator.kinds import expectation_questions, kind_of
from simulator.loading import LoadedSuite, did_you_mean, read_judge_prompts
from simulator.models import Case, Persona
from simulator.models.run import Plan, PlanItem, RunRecord, RunSettings, SuiteSnapshot


def snapshot_of(loaded: LoadedSuite, path_as_given: str) -> SuiteSnapshot:
    """The suite as it is now, with its agent resolved and the personas it can use."""
    agent_path = str(loaded.agent_path.resolve()) if loaded.agent_path and loaded.agent_path != loaded.path else None
    from simulator.runner._case import load_prompt_overrides

    return SuiteSnapshot(
        path=path_as_given,
        suite=loaded.suite,
        personas=dict(loaded.personas),
        hosted_format=loaded.hosted_format,
        agent_path=agent_path,
        # Checked now, so a prompt that uses a placeholder its question does not fill fails before the run.
        prompt_overrides=load_prompt_overrides(loaded),
    )


def restore(snapshot: SuiteSnapshot) -> LoadedSuite:
    """A snapshot as a loaded suite again, to run exactly what the run recorded (not the files as they are now)."""
    path = Path(snapshot.path).resolve()
    prompts = dict(snapshot.prompt_overrides)
    if set(snapshot.suite.judge_prompts) - set(prompts):
        # A run stored before snapshots kept the prompts' text: its overrides can only be read from the files.
        prompts = read_judge_prompts(path, snapshot.suite)
    return LoadedSuite(
        suite=snapshot.suite,
        path=path,
        # The agent file's folder is searched for the code the agent names, as in the run it repeats.
        agent_path=Path(snapshot.agent_path) if snapshot.agent_path else None,
        personas=dict(snapshot.personas),
        hosted_format=snapshot.hosted_format,
        judge_prompts=prompts,
    )


def suite_hash(snapshots: Sequence[SuiteSnapshot]) -> str:
    """A short hash of what was run (suites, agents, personas), equal for equal content wherever it lives."""
    # Without overrides the field is left out, so a run hashes as it did before snapshots kept prompt texts.
    canonical = json.dumps(
        [
            s.model_dump(mode="json", exclude={"path"} if s.prompt_overrides else {"path", "prompt_overrides"})
            for s in snapshots
        ],
        sort_keys=True,
        ensure_ascii=False,
    )
    return hashlib.sha256(canonical.encode("utf-8")).hexdigest()[:16]


def versions() -> dict[str, str]:
    """The versions that can change a result: Simulator, Python and the libraries that reach models."""
    found = {"simulator": __version__, "python": platform.python_version()}
    for package in ("litellm", "langgraph", "pydantic"):
        try:
            found[package] = metadata.version(package)
        except metadata.PackageNotFoundError:
            continue
    return found


def _personas_for(case: Case, loaded: LoadedSuite, settings: RunSettings, rng: random.Random) -> list[Persona | None]:
    if not kind_of(case).plays_persona:
        return [None]  # a replay has no simulated user: eleven personas would be eleven identical runs
    available = loaded.personas
    choice = settings.persona
    if choice == "all":
        return [available[name] for name in sorted(available)] or [None]
    if choice == "random":
        return [available[rng.choice(sorted(available))]] if available else [None]
    if choice:
        if choice not in available:
            known = ", ".join(sorted(available)) or "none"
            raise ConfigErrors(
                [
                    ConfigError(
                        loaded.path,
                        1,
                        1,
                        "personas",
                        f"--persona {choice!r} is not a persona of this suite{did_you_mean(choice, available)} "
                        f"(known: {known}; or use all / random)",
                    )
                ]
            )
        return [available[choice]]
    named = case.personas or loaded.suite.personas
    if named:
        return [available[name] for name in named if name in available]
    return [available[rng.choice(sorted(available))]] if available else [None]


def build_plan(suites: Sequence[LoadedSuite], settings: RunSettings) -> Plan:
    """Every conversation the run will hold, in a stable order, each with a unique key and its own seed."""
    return Plan(_planned(suites, settings))


def _planned(suites: Sequence[LoadedSuite], settings: RunSettings) -> Iterator[PlanItem]:
    """The items of :func:`build_plan` one by one (each is kept in the plan's columns, then let go)."""
    rng = random.Random(settings.seed)
    for index, loaded in enumerate(suites):
        for case in loaded.suite.cases:
            if settings.cases and case.name not in settings.cases:
                continue
            if settings.tags and not set(settings.tags) & set(case.tags):
                continue
            repeats = settings.repeat if settings.repeat > 1 else (case.repeats or loaded.suite.repeats)
            for persona in _personas_for(case, loaded, settings, rng):
                name = persona.name if persona else None
                for repeat in range(repeats):
                    key = f"{index}:{case.name}:{name or '-'}:{repeat}"
                    seed = int(hashlib.sha256(f"{settings.seed}:{key}".encode()).hexdigest()[:8], 16)
                    yield PlanItem(key=key, suite=index, case=case.name, persona=name, repeat=repeat, seed=seed)


#: Settings that change how a plan runs, not what it runs (where, how fast, what bar, which part): the shards
#: of one plan may differ in them. ``live`` changes what runs, but each command decides it anew (a repeat or
#: resume says its own), so it is left out of the plan hash and compared apart by ``runs merge``.
HOW_IT_RUNS: Final = frozenset(
    {
        "paths",
        "concurrency",
        "fail_under",
        "fail_under_coverage",
        "cache",
        "checkpoints",
        "record",
        "shard",
        "plan_hash",
        "executor",
        "ray_address",
        "trace",
        "ray_workers",
        "max_cost",
        "paired_with",
    }
)
_SHARD = re.compile(r"\s*(\d+)\s*/\s*(\d+)\s*")


def what_runs(settings: RunSettings) -> dict[str, Any]:
    """The settings that change what a plan runs or how it is judged, as JSON data (see :data:`HOW_IT_RUNS`).

    Settings left at their defaults are left out, here and in :func:`suite_identity`: a setting or suite field
    that a later version adds (with a default) does not change the hash of a plan that does not use it."""
    return settings.model_dump(mode="json", exclude=set(HOW_IT_RUNS), exclude_defaults=True)


def suite_identity(snapshot: SuiteSnapshot) -> str:
    """A hash of one suite's content (suite, personas, prompts), equal wherever its files live: the suite part
    of a shard's hash."""
    data = snapshot.model_dump(mode="json", exclude={"path", "agent_path"}, exclude_defaults=True)
    return hashlib.sha256(json.dumps(data, sort_keys=True, ensure_ascii=False).encode("utf-8")).hexdigest()[:16]


def plan_hash(snapshots: Sequence[SuiteSnapshot], settings: RunSettings, items: Sequence[PlanItem]) -> str:
    """A hash of a whole plan: its suites' content, the settings that change what runs (``live`` apart) and
    every item with its seed. Equal for every shard of one plan, on any machine.

    The hash is of ``json.dumps({"plan": [...], "settings": ..., "suites": [...]}, sort_keys=True,
    ensure_ascii=False)``, fed to it an item at a time: the text of a whole plan is never held at once."""
    digest = hashlib.sha256(b'{"plan": [')
    for number, item in enumerate(items):
        text = json.dumps(item.model_dump(mode="json"), sort_keys=True, ensure_ascii=False)
        digest.update(f"{', ' if number else ''}{text}".encode())
    rest = json.dumps(
        {
            "settings": {key: value for key, value in what_runs(settings).items() if key != "live"},
            "suites": [suite_identity(snapshot) for snapshot in snapshots],
        },
        sort_keys=True,
        ensure_ascii=False,
    )
    digest.update(f"], {rest[1:]}".encode())
    return digest.hexdigest()[:16]


def parse_shard(text: str) -> tuple[int, int]:
    """``K/N`` as (K, N), with 1 <= K <= N; anything else is an InputError naming ``--shard`` and the fix."""
    found = _SHARD.fullmatch(text)
    if found is None:
        raise InputError(f"--shard {text!r}: write it K/N, e.g. --shard 2/4 for the 2nd of 4 parts of the plan")
    index, count = int(found.group(1)), int(found.group(2))
    if count < 1:
        raise InputError(f"--shard {text!r}: N, the number of shards, must be at least 1")
    if not 1 <= index <= count:
        raise InputError(f"--shard {text!r}: K must be between 1 and N ({count}); shards are counted from 1")
    return index, count


def shard_of(identity: str, item: PlanItem, count: int) -> int:
    """Which of ``count`` shards (1-based) holds ``item`` of the suite whose :func:`suite_identity` is
    ``identity``: a SHA-256 of suite, case, persona and repeat (never Python's ``hash()``, which changes from
    one process to the next)."""
    text = json.dumps([identity, item.case, item.persona, item.repeat], ensure_ascii=False)
    return int(hashlib.sha256(text.encode("utf-8")).hexdigest()[:16], 16) % count + 1


def shard_part(snapshots: Sequence[SuiteSnapshot], items: Sequence[PlanItem], index: int, count: int) -> Plan:
    """The items of shard ``index`` of ``count``, in plan order."""
    identities = [suite_identity(snapshot) for snapshot in snapshots]
    return Plan(item for item in items if shard_of(identities[item.suite], item, count) == index)


def unknown_case_filters(suites: Sequence[LoadedSuite], settings: RunSettings) -> list[str]:
    """Names given with --case that no suite has (so a typo is an error, not an empty run)."""
    names = {case.name for loaded in suites for case in loaded.suite.cases}
    return [name for name in settings.cases if name not in names]


def new_record(
    run_id: str,
    snapshots: list[SuiteSnapshot],
    settings: RunSettings,
    plan: Sequence[PlanItem],
    *,
    agent_version: str | None = None,
    note: str = "",
    repeat_of: str | None = None,
    imported_from: str | None = None,
    replay_of: str | None = None,
) -> RunRecord:
    """A run record for a plan about to run: ``running`` (it reads ``interrupted`` until a process takes its
    lease, and again if that process dies)."""
    return RunRecord(
        id=run_id,
        created=datetime.now(UTC),
        status="running",
        agent_version=agent_version,
        note=note,
        suite_hash=suite_hash(snapshots),
        snapshot=snapshots,
        settings=settings,
        versions=versions(),
        plan=plan,
        repeat_of=repeat_of,
        replay_of=replay_of,
        imported_from=imported_from,
    )


def judge_questions(case: Case) -> list[str]:
    """What in ``case`` only a judge model can decide, in words (one entry per check): success criteria,
    expectations written in words, expected messages (semantic match) and reference answers."""
    found = kind_of(case).judge_questions(case)
    for spec in case.expectations:
        found += expectation_questions("expectation", spec)
    return found


def plan_notes(
    suites: Sequence[LoadedSuite], planned: set[tuple[int, str]], has_judge: Callable[[LoadedSuite], bool]
) -> list[str]:
    """What a person should know before the plan runs: golden cases that run without a persona, and how many
    checks need a judge model their suite does not have (they will be ``unsure``, never guessed). ``planned``
    holds (suite index, case name) of every case in the plan."""
    notes: list[str] = []
    golden = [
        case.name
        for index, loaded in enumerate(suites)
        for case in loaded.suite.cases
        if not kind_of(case).plays_persona and (index, case.name) in planned
    ]
    if golden:
        notes.append(
            f"{len(golden)} golden case(s) run once per repeat, without a persona: a replay of fixed turns has no "
            "simulated user to play one."
        )
    unjudged: list[str] = []
    cases = 0
    for index, loaded in enumerate(suites):
        if has_judge(loaded):
            continue
        for case in loaded.suite.cases:
            if (index, case.name) not in planned:
                continue
            questions = judge_questions(case)
            if questions:
                cases += 1
                unjudged.extend(questions)
    if unjudged:
        kinds = sorted({question.split(": ", 1)[-1] for question in unjudged})
        notes.append(
            f"{len(unjudged)} check(s) in {cases} case(s) need a judge model ({', '.join(kinds)}); without one they "
            "are reported as not judged, and a case that nothing else decides is `unsure`: pass --judge-model "
            "(any litellm model, e.g. openai/gpt-4o-mini) or set "
            "`models: {judge: ...}` in the suite."
        )
    return notes
