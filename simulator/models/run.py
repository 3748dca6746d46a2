"""Runs: what was run (suite snapshot, settings, versions, the plan) and how it went. Pure data, no I/O.

A run is immutable once created, except its note, its status and its summary (``totals``): the suites it ran are
kept as a snapshot (not re-read from disk), so a run can be repeated exactly and its results read against what
it ran.

A run's status is one of :data:`RunStatus`: ``running`` (a live process holds the run's lease in the store),
``completed`` (every planned conversation is stored), ``interrupted`` (Ctrl-C, SIGTERM, or the process that ran
it is gone: resume it) and ``failed`` (it stopped for another reason, e.g. the store could not be written;
resume it once the cause is fixed). Older stores said ``incomplete`` and ``pending``: both read as
``interrupted``.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any, Literal

from pydantic import Field, field_validator

from simulator.models._base import DataModel
from simulator.models.persona import Persona
from simulator.models.scores import CaseResult, Outcome
from simulator.models.suite import Suite
from simulator.models.summary import RunSummary

RunStatus = Literal["running", "completed", "interrupted", "failed"]
#: Statuses written by earlier versions, and what they mean now: nothing is running such a run.
LEGACY_STATUSES: dict[str, RunStatus] = {"incomplete": "interrupted", "pending": "interrupted"}
PersonaMode = Literal["default", "all", "random", "named"]


class SuiteSnapshot(DataModel):
    """One suite as it was run: the file it came from, the suite with its agent resolved, its personas."""

    path: str = Field(description="The suite file, as given on the command line.")
    suite: Suite
    personas: dict[str, Persona] = Field(default_factory=dict)
    hosted_format: bool = False
    agent_path: str | None = Field(
        default=None,
        description="The agent file the suite's agent came from (its folder is searched for the code it names).",
    )
    prompt_overrides: dict[str, str] = Field(
        default_factory=dict,
        description="The text of each judge prompt override the suite names (judge_prompts), by prompt name, as "
        "read when the run was planned: repeating or resuming the run scores with these, not the files as they "
        "are then. Runs stored before this field have none here (their overrides are read from the files).",
    )


class RunSettings(DataModel):
    """How the run was asked for: everything that changes what runs or how it is judged."""

    paths: list[str] = Field(default_factory=list)
    persona: str | None = Field(default=None, description="--persona: a name, 'all', 'random', or none.")
    repeat: int = 1
    tags: list[str] = Field(default_factory=list)
    cases: list[str] = Field(default_factory=list)
    live: bool = Field(
        default=False,
        description="Whether --live was given to the command that ran it. Never carried over: a repeat or a resume "
        "runs real tool functions only when its own command says --live.",
    )
    user_model: str | None = None
    judge_model: str | None = None
    models: dict[Literal["agent", "user", "judge"], dict[str, Any]] = Field(
        default_factory=dict,
        description="Model settings per role given to the command (--models FILE, --judge-api-base, ...): "
        "each key given overrides the suite's. --user-model / --judge-model win over these.",
    )
    concurrency: int = 8
    fail_under: float | None = None
    fail_under_coverage: float | None = Field(
        default=None, description="--fail-under-coverage: exit 1 when the run's coverage (%) is below this."
    )
    count_user_errors: bool = Field(
        default=False,
        description="--count-user-errors: a failure that coincides with a fidelity problem of the simulated user "
        "stays `fail` (counted against the agent) instead of becoming `user_error`.",
    )
    seed: int = 0
    cache: bool = True
    checkpoints: bool = Field(
        default=True,
        description="Checkpoint conversations step by step, so a resumed run continues them mid-way.",
    )
    shard: str | None = Field(
        default=None,
        description="--shard K/N: the run holds the K-th of N parts of the plan (each item's part is chosen by a "
        "stable hash of its suite, case, persona and repeat, so every shard agrees without talking); none: the "
        "whole plan. `simulator runs merge` puts the N parts back together.",
    )
    plan_hash: str | None = Field(
        default=None,
        description="Set by planning: a hash of the whole plan (before --shard took its part), the suite snapshot "
        "and the settings that change what runs; every shard of one plan has the same. None for runs stored "
        "before it was recorded.",
    )
    record: bool = Field(
        default=False,
        description="--record: keep a cassette of every exchange of each conversation (agent, tools, simulated "
        "user, judge), for `simulator replay` and `simulator rerun`. A recorded run is not checkpointed mid-"
        "conversation: a resumed conversation starts over, so that its cassette is whole.",
    )
    executor: Literal["local", "ray"] = Field(
        default="local",
        description="Where the conversations run: local (this process) or ray (on a Ray cluster; this process "
        "plans and stores). A resume runs on the executor stored here unless told otherwise.",
    )
    ray_address: str | None = Field(
        default=None, description="--ray-address: the Ray cluster to connect to; none starts a local one."
    )
    ray_workers: int | None = Field(
        default=None,
        ge=1,
        le=1000,
        description="--ray-workers: worker processes running conversations on the cluster; none means 2 on a "
        "local cluster, one per CPU of a cluster connected to.",
    )


class PlanItem(DataModel):
    """One conversation to run: a case of a suite, with a persona, the n-th repeat. ``key`` is unique in a run."""

    key: str
    suite: int = Field(description="Index of the suite in the run's snapshot.")
    case: str
    persona: str | None = None
    repeat: int = 0
    seed: int = 0


class RunRecord(DataModel):
    """A stored run."""

    id: str
    created: datetime
    finished: datetime | None = None
    status: RunStatus = "running"
    agent_version: str | None = None
    note: str = ""
    suite_hash: str
    snapshot: list[SuiteSnapshot]
    settings: RunSettings
    versions: dict[str, str] = Field(default_factory=dict, description="simulator, python, litellm, langgraph, ...")
    plan: list[PlanItem] = Field(default_factory=list)
    totals: RunSummary | None = Field(
        default=None,
        description="The run summary (counts, usage per role, metric and repeat summaries), computed once when its "
        "results are stored; None until then.",
    )
    repeat_of: str | None = Field(default=None, description="The run this one repeats, if any.")
    imported_from: str | None = Field(
        default=None,
        description="The id the run had where it came from, when it came from `simulator import run` (kept by its "
        "repeats): its snapshot names code (agents, graphs, tool functions) that was not loaded from this "
        "machine's files, so repeating or resuming it needs --yes.",
    )

    replay_of: str | None = Field(
        default=None,
        description="The recorded run this one plays back (`simulator replay`) or reruns from its first divergence "
        "(`simulator rerun`), if any.",
    )

    @field_validator("status", mode="before")
    @classmethod
    def _legacy_status(cls, value: object) -> object:
        return LEGACY_STATUSES.get(value, value) if isinstance(value, str) else value


class StoredResult(DataModel):
    """One finished conversation of a run, as stored."""

    run_id: str
    key: str
    suite: int
    case: str
    persona: str | None = None
    repeat: int = 0
    outcome: Outcome
    duration_s: float = 0.0
    finished: datetime
    result: CaseResult
