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

import json
import re
from array import array
from collections.abc import Iterable, Iterator, Sequence
from datetime import datetime
from typing import Any, Final, Literal, get_args, overload

from pydantic import Field, GetCoreSchemaHandler, field_validator
from pydantic_core import CoreSchema, core_schema

from simulator.models._base import DataModel
from simulator.models.persona import Persona
from simulator.models.review import Review
from simulator.models.scores import CaseResult, Outcome
from simulator.models.settings import ModelRoles
from simulator.models.suite import Suite
from simulator.models.summary import RunSummary
from simulator.models.voice import Modality

RunStatus = Literal["running", "completed", "interrupted", "failed"]
#: Statuses written by earlier versions, and what they mean now: nothing is running such a run.
LEGACY_STATUSES: dict[str, RunStatus] = {"incomplete": "interrupted", "pending": "interrupted"}
PersonaMode = Literal["default", "all", "random", "named"]
#: A model role, as the per-role settings of a command name it.
ModelRole = Literal["agent", "user", "judge", "voice", "transcriber"]
#: Conversations in flight at once when a run does not say (``--concurrency``), and each model role's limit on
#: calls in flight when neither the run nor the suite sets one.
DEFAULT_CONCURRENCY: Final = 8
#: Every model role, in the order reports and checks list them.
MODEL_ROLES: tuple[ModelRole, ...] = get_args(ModelRole)
#: The roles of voice conversations (text to speech, speech to text): a usage table lists them only where used.
SPEECH_ROLES: tuple[ModelRole, ...] = ("voice", "transcriber")


def listed_roles(used: Iterable[str]) -> list[str]:
    """The roles a usage table lists, in order: every model role but the speech roles, which only where ``used``
    names them (a run without voice reads as before), then any other role ``used`` names."""
    named = set(used)
    listed: list[str] = [role for role in MODEL_ROLES if role not in SPEECH_ROLES or role in named]
    return [*listed, *sorted(named - set(MODEL_ROLES))]


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
    models: dict[ModelRole, dict[str, Any]] = Field(
        default_factory=dict,
        description="Model settings per role given to the command (--models FILE, --judge-api-base, ...): "
        "each key given overrides the suite's. --user-model / --judge-model win over these.",
    )
    concurrency: int = DEFAULT_CONCURRENCY
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
    max_cost: float | None = Field(
        default=None,
        description="--max-cost: the run stops cleanly (interrupted, resumable) once what its models cost so far, "
        "every role and every process that ran it, reaches this many US dollars; none: no limit.",
        exclude_if=lambda value: value is None,  # left out unused: stored settings read as they did before
    )
    trace: Literal["otlp"] | None = Field(
        default=None,
        description="--trace otlp: spans of the run, its conversations, turns and model, agent and tool calls were "
        "exported to an OpenTelemetry collector (OTLP/HTTP JSON, redacted); none: nothing was exported. The "
        "collector's address and headers are not kept.",
    )
    modality: Modality | None = Field(
        default=None,
        description="--modality chat or voice: every case ran in this modality, whatever its suite or case says "
        "(a resume or repeat keeps it); none: each case's own.",
        exclude_if=lambda value: value is None,  # left out unused: stored settings and plan hashes read as before
    )
    paired_with: str | None = Field(
        default=None,
        description="--modality chat,voice: the run of the other modality this run was compared with, case by case "
        "(the second run names the first). A repeat is paired with nothing.",
        exclude_if=lambda value: value is None,
    )


class ModelOptions(DataModel):
    """The model options one command was given: ``--user-model``, ``--judge-model`` and the per-role settings of
    ``--models FILE`` and ``--judge-api-base`` / ``--user-api-base`` / ``--agent-api-base`` (only the keys given).
    :func:`resolved_models` lays them over a suite's ``models:``; :meth:`over` over a stored run's settings."""

    user_model: str | None = None
    judge_model: str | None = None
    models: dict[ModelRole, dict[str, Any]] = Field(default_factory=dict)

    def gives(self, role: ModelRole) -> bool:
        """Whether any of the options sets something of ``role``."""
        named = {"user": self.user_model, "judge": self.judge_model}.get(role)
        return bool(named or self.models.get(role))

    @property
    def named_judge(self) -> str | None:
        """The judge model the options name: ``--judge-model``, else the judge's ``model`` in ``--models``."""
        named = self.judge_model or self.models.get("judge", {}).get("model")
        return str(named) if named else None

    def over(self, settings: RunSettings) -> RunSettings:
        """``settings`` (a stored run's) with these options laid over them: each key given here wins over the
        stored one, role by role, and a model named here (``--judge-model``, or ``model`` in ``--models``) wins
        over the stored run's ``--judge-model`` / ``--user-model``."""
        models = {role: dict(values) for role, values in settings.models.items()}
        for role, values in self.models.items():
            models.setdefault(role, {}).update(values)
        update: dict[str, Any] = {"models": models}
        for role, name in (("user", self.user_model), ("judge", self.judge_model)):
            if name:
                update[f"{role}_model"] = name
            elif "model" in self.models.get(role, {}):
                update[f"{role}_model"] = None
        return settings.model_copy(update=update)


def resolved_models(suite: Suite, options: RunSettings | ModelOptions) -> ModelRoles:
    """The suite's model settings with a command's overrides: the per-role settings (``options.models``) key by
    key, then ``--user-model`` / ``--judge-model``; a litellm agent's model fills the agent role when nothing
    else sets one. Each role's concurrency is left as the suite has it."""
    roles = suite.models
    if options.models:
        roles = roles.model_copy(
            update={
                role: getattr(roles, role).model_copy(update=dict(values))
                for role, values in options.models.items()
                if values
            }
        )
    update = {}
    if options.user_model:
        update["user"] = roles.user.model_copy(update={"model": options.user_model})
    if options.judge_model:
        update["judge"] = roles.judge.model_copy(update={"model": options.judge_model})
    agent = suite.agent
    own_model = agent.own_model if agent is not None and not isinstance(agent, str) else None
    if own_model is not None and roles.agent.model is None:
        update["agent"] = roles.agent.model_copy(update={"model": own_model})
    return roles.model_copy(update=update) if update else roles


class PlanItem(DataModel):
    """One conversation to run: a case of a suite, with a persona, the n-th repeat. ``key`` is unique in a run."""

    key: str
    suite: int = Field(description="Index of the suite in the run's snapshot.")
    case: str
    persona: str | None = None
    repeat: int = 0
    seed: int = 0


def derived_key(suite: int, case: str, persona: str | None, repeat: int) -> str:
    """The key planning gives a conversation (:func:`~simulator.runner._plan.build_plan`)."""
    return f"{suite}:{case}:{persona or '-'}:{repeat}"


_UNSIGNED = "I"  # suite, repeat and name indexes: 4 bytes each
_SIGNED = "q"  # seeds: 8 bytes
_UNSIGNED_MAX = 2**32
_SIGNED_RANGE = range(-(2**63), 2**63)
_JSON = json.JSONDecoder()
_BLANK = re.compile(r"[ \t\n\r]*")


class Plan(Sequence[PlanItem]):
    """A run's plan: its conversations in order, held in compact columns, not as a PlanItem object each.

    A few bytes a conversation (the case and persona names once each), so memory stays flat in the size of the
    plan; a PlanItem is built when an item is read.
    The key of an item is not kept when it is the one planning gives it (:func:`derived_key`); an item that
    does not fit the columns (another key, a number out of their range: an imported or hand-made run) is kept
    whole. A plan never changes once built. As a field of a :class:`RunRecord` it validates from, and
    serialises to, a list of PlanItems: the JSON of the store and of exports is the same as a list's.
    """

    __slots__ = ("_cases", "_names", "_odd", "_personas", "_repeats", "_seeds", "_suites")

    def __init__(self, items: Iterable[PlanItem] = ()) -> None:
        self._suites = array(_UNSIGNED)
        self._cases = array(_UNSIGNED)
        self._personas = array(_UNSIGNED)  # 0: no persona, else the name's index + 1
        self._repeats = array(_UNSIGNED)
        self._seeds = array(_SIGNED)
        self._odd: dict[int, PlanItem] = {}
        names: dict[str, int] = {}
        for item in items:
            self._append(item, names)
        self._names = tuple(names)

    def _append(self, item: PlanItem, names: dict[str, int]) -> None:
        fits = (
            0 <= item.suite < _UNSIGNED_MAX
            and 0 <= item.repeat < _UNSIGNED_MAX
            and item.seed in _SIGNED_RANGE
            and item.key == derived_key(item.suite, item.case, item.persona, item.repeat)
        )
        if not fits:
            self._odd[len(self._suites)] = item
            item = PlanItem(key="", suite=0, case="", persona=None, repeat=0, seed=0)  # a placeholder row
        self._suites.append(item.suite)
        self._cases.append(names.setdefault(item.case, len(names)))
        self._personas.append(0 if item.persona is None else names.setdefault(item.persona, len(names)) + 1)
        self._repeats.append(item.repeat)
        self._seeds.append(item.seed)

    @classmethod
    def from_json(cls, text: str) -> Plan:
        """A plan from the JSON text of a list of PlanItems, read one item at a time: the whole list is never
        parsed into objects at once. A ValueError (a ValidationError among them) when the text is not one."""
        return cls(PlanItem.model_validate(data) for data in _json_items(text))

    def to_json(self) -> str:
        """The plan as the JSON text of a list of PlanItems (what :meth:`from_json` reads)."""
        return "[" + ",".join(item.model_dump_json() for item in self) + "]"

    def item_keys(self) -> Iterator[str]:
        """The key of every item, in order, without building the items."""
        for index in range(len(self._suites)):
            odd = self._odd.get(index)
            if odd is not None:
                yield odd.key
                continue
            persona = self._personas[index]
            yield derived_key(
                self._suites[index],
                self._names[self._cases[index]],
                self._names[persona - 1] if persona else None,
                self._repeats[index],
            )

    def _item(self, index: int) -> PlanItem:
        odd = self._odd.get(index)
        if odd is not None:
            return odd
        suite, case, repeat = self._suites[index], self._names[self._cases[index]], self._repeats[index]
        persona = self._personas[index]
        name = self._names[persona - 1] if persona else None
        return PlanItem(
            key=derived_key(suite, case, name, repeat), suite=suite, case=case, persona=name, repeat=repeat,
            seed=self._seeds[index],
        )  # fmt: skip

    def __len__(self) -> int:
        return len(self._suites)

    @overload
    def __getitem__(self, index: int) -> PlanItem: ...
    @overload
    def __getitem__(self, index: slice) -> Plan: ...
    def __getitem__(self, index: int | slice) -> PlanItem | Plan:
        if isinstance(index, slice):
            return Plan(self._item(position) for position in range(*index.indices(len(self))))
        size = len(self)
        if not -size <= index < size:
            raise IndexError(f"plan index {index} out of range (the plan has {size} item(s))")
        return self._item(index % size)

    def __iter__(self) -> Iterator[PlanItem]:
        for index in range(len(self)):
            yield self._item(index)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Sequence) or isinstance(other, str | bytes):
            return NotImplemented
        return len(self) == len(other) and all(mine == theirs for mine, theirs in zip(self, other, strict=True))

    __hash__ = None  # type: ignore[assignment]  # equal to lists, which are not hashable either

    def __repr__(self) -> str:
        return f"Plan({len(self)} item(s))"

    @classmethod
    def __get_pydantic_core_schema__(cls, source: Any, handler: GetCoreSchemaHandler) -> CoreSchema:
        items = handler.generate_schema(list[PlanItem])
        from_items = core_schema.no_info_after_validator_function(cls, items)
        return core_schema.json_or_python_schema(
            json_schema=from_items,
            python_schema=core_schema.union_schema([core_schema.is_instance_schema(cls), from_items]),
            serialization=core_schema.plain_serializer_function_ser_schema(list, return_schema=items),
        )


def _json_items(text: str) -> Iterator[Any]:
    """The elements of the JSON array ``text``, each parsed when it is reached."""
    at = _BLANK.match(text).end()  # type: ignore[union-attr]  # matches the empty string
    if not text.startswith("[", at):
        raise ValueError(f"a plan is a JSON list, not {text[at : at + 20]!r}")
    at = _BLANK.match(text, at + 1).end()  # type: ignore[union-attr]
    more = not text.startswith("]", at)
    while more:
        value, at = _JSON.raw_decode(text, at)
        yield value
        at = _BLANK.match(text, at).end()  # type: ignore[union-attr]
        more = text.startswith(",", at)
        if more:
            at = _BLANK.match(text, at + 1).end()  # type: ignore[union-attr]
    if not text.startswith("]", at) or text[at + 1 :].strip():
        raise ValueError(f"a plan is a JSON list; found {text[at : at + 20]!r} at character {at}")


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
    plan: Plan = Field(default_factory=Plan)
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
    reviews: list[Review] = Field(
        default_factory=list,
        description="People's reviews of this result that count (the newest of each target), as a report shows "
        "them; never stored with the result (reviews have their own table).",
        exclude_if=lambda reviews: not reviews,  # a result without reviews dumps as before
    )
    reviewed_outcome: Outcome | None = Field(
        default=None,
        description="The outcome as reviewed, beside the judged one, when the result has reviews (reports only).",
        exclude_if=lambda outcome: outcome is None,
    )

    @property
    def counted_outcome(self) -> Outcome:
        """The outcome the run's totals count: :attr:`outcome`, or for a result kept as imported with ``--trust``
        the one its own evidence decides (an outcome taken on trust never moves correctness)."""
        return self.result.trusted.derived if self.result.trusted is not None else self.outcome
