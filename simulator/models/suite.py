"""Suites: a set of cases with the agent they test and the settings they run with."""

from __future__ import annotations

from pydantic import Field, JsonValue

from simulator.models._base import Slug, StrictModel, Text
from simulator.models.agent import AgentConfig, ToolFake
from simulator.models.budgets import Budgets
from simulator.models.case import Case, SimulationCase
from simulator.models.faults import ToolFault
from simulator.models.settings import JudgingSettings, ModelRoles, Thresholds
from simulator.models.voice import Modality, SuiteVoice
from simulator.models.world import WorldSetting


class Suite(StrictModel):
    """A suite file: cases plus the agent under test and the settings they share.

    ``agent`` is the agent's configuration, or the path (relative to this file) of a YAML file holding it.
    Without it, the loader looks for ``agent.yaml`` beside the file and in its parent folders.
    """

    name: Text = Field(description="Name of the suite, shown in reports.")
    description: str = ""
    language: str = Field(
        default="en",
        pattern=r"^[a-z]{2,3}(-[A-Za-z0-9]{2,8})*$",
        description="Language of the conversations (BCP 47), used by stem matching and the judge.",
    )
    agent: AgentConfig | Text | None = Field(default=None, description="Agent config, or path to an agent YAML file.")
    models: ModelRoles = Field(default_factory=ModelRoles)
    thresholds: Thresholds = Field(default_factory=Thresholds)
    judging: JudgingSettings = Field(
        default_factory=JudgingSettings,
        description="How the judge model is asked (batch: one request per turn or not).",
    )
    personas: list[Slug] = Field(default_factory=list, description="Personas for cases that name none.")
    scorers: list[Slug] = Field(
        default_factory=list,
        description="Scorers of installed plugins (entry point simulator.scorers) that score every case of the suite.",
        exclude_if=lambda names: not names,  # left out of snapshots unused: a suite hashes as it did before
    )
    repeats: int = Field(default=1, ge=1, le=1000, description="Runs of each case.")
    seed: int | None = Field(default=None, description="Seed for persona choice and scripted-user perturbations.")
    tool_fakes: list[ToolFake] = Field(default_factory=list, description="Canned tool results for every case.")
    faults: list[ToolFault] = Field(
        default_factory=list,
        description="Faults injected on purpose into tool calls of every case (each names its tool, or '*'): an "
        "error, a timeout or another result, at a seeded rate, on the Nth call or on every call. Test mode only.",
        exclude_if=lambda faults: not faults,  # left out of snapshots unused: a suite hashes as it did before
    )
    world: WorldSetting = Field(
        default=None,
        description="A seeded world for every case: collections of records by id, inline or a YAML/JSON file beside "
        "the suite. Each conversation gets its own copy; world tools read and change it.",
        exclude_if=lambda world: world is None,  # left out of snapshots unused: a suite hashes as it did before
    )
    budgets: Budgets | None = Field(
        default=None,
        description="What one conversation of the agent may take (latency per turn and in all, tokens, cost, "
        "turns), for every case: each figure set is a required check. A case's budgets replace these one by one.",
        exclude_if=lambda budgets: budgets is None,  # left out of snapshots unused: a suite hashes as it did before
    )
    modality: Modality | None = Field(
        default=None,
        description="How the suite's cases talk to the agent: chat (text, the default) or voice (the user's turns "
        "are spoken, the agent's audio is transcribed); a case's own `modality` wins.",
        exclude_if=lambda modality: modality is None,  # left out of snapshots unused: a suite hashes as it did before
    )
    voice: SuiteVoice | None = Field(
        default=None,
        description="How voice cases are heard: the recognition confidence below which a failure is unsure, and "
        "the speech backends.",
        exclude_if=lambda voice: voice is None,  # left out of snapshots unused: a suite hashes as it did before
    )
    metadata: dict[str, JsonValue] = Field(default_factory=dict, description="Free data kept with the run.")
    judge_prompts: dict[Slug, Text] = Field(
        default_factory=dict,
        description="Override a judge prompt: prompt name (e.g. hallucination, semantic_match) -> path of a text "
        "file, relative to this suite, that replaces the built-in prompt.",
    )
    cases: list[Case] = Field(min_length=1)


class HostedEvalsFile(StrictModel):
    """The hosted agent builders' evaluation format: a root ``evals:`` list of simulation cases, and the model
    per role as a suite sets it (``models:``)."""

    models: ModelRoles = Field(default_factory=ModelRoles)
    evals: list[SimulationCase] = Field(min_length=1)
