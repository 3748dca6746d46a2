"""A run's coverage: what the run exercised of what its suites declare, and what it never touched. Pure data.

:mod:`simulator.coverage` computes it once, when a run's results are stored, streaming over them; it is kept
with the run summary (:attr:`simulator.models.summary.RunSummary.coverage`) and every report reads it from
there. Five views:

* the persona x case matrix (:class:`CoverageCell`): each planned (case, persona) pair with its outcome counts
  over the repeats and a label such as ``2/3 pass``;
* per-step reach of simulation cases (:class:`StepReach`): how often each step was reached, completed, failed,
  unsure, blocked or not reached, over all personas and repeats;
* the tools the agent declares, with how often each was called (:class:`ToolUse`);
* the personas available to the run's suites, with how often each was played (:class:`PersonaUse`);
* every expectation written in a case (case expectations, step checks and success criteria, golden turn
  expectations), with how often it was evaluated (:class:`ExpectationUse`);
* the collections of the run's seeded worlds, with the records and fields its conversations read and changed
  and the fields ``expect_state`` checks (:class:`WorldCollectionUse`), for runs whose suites declare a world.

The single figure for gating is :attr:`RunCoverage.percent`, the mean of the :class:`CoverageRatio` figures a
run has (see its docstring for the exact definition).
"""

from __future__ import annotations

from pydantic import Field, model_validator

from simulator.models._base import DataModel
from simulator.models.scores import Outcome

#: The version of what :class:`RunCoverage` holds.
COVERAGE_VERSION = 1


class CoverageRatio(DataModel):
    """``covered`` of ``total`` things; ``percent`` = 100 x covered / total, None when there is nothing to cover."""

    covered: int = 0
    total: int = 0

    @property
    def percent(self) -> float | None:
        """100 x covered / total, or None when total is 0."""
        return 100.0 * self.covered / self.total if self.total else None


class CoverageCell(DataModel):
    """One (case, persona) pair the run planned, over its repeats: how many conversations were planned, how
    many finished with each outcome, and a label (``2/3 pass``; ``1/2 pass, 1 not run``; ``not run``)."""

    suite: int
    case: str
    persona: str | None = None
    planned: int = 0
    outcomes: dict[Outcome, int] = Field(default_factory=dict, description="Finished conversations per outcome.")
    label: str = ""

    @property
    def runs(self) -> int:
        """Conversations of this cell that finished (any outcome)."""
        return sum(self.outcomes.values())


class StepReach(DataModel):
    """One step of a simulation case over every conversation of the case (all personas and repeats).

    ``reached`` = ``complete`` + ``incomplete`` + ``unsure`` (the step was worked on); ``blocked`` counts the
    conversations where an earlier step failed; ``not_reached`` those that ended before it for another reason
    (an error, a stop for approval, the turn cap). The five counts add up to ``conversations``.
    """

    suite: int
    case: str
    index: int
    label: str
    conversations: int = 0
    reached: int = 0
    complete: int = 0
    incomplete: int = 0
    unsure: int = 0
    blocked: int = 0
    not_reached: int = 0


class ToolUse(DataModel):
    """A tool an agent of the run declares: the suites whose agent declares it, and how often it was called
    (every call counts, whatever answered it: a fake, the live tool, or "not executed")."""

    name: str
    suites: list[int] = Field(default_factory=list)
    calls: int = 0


class PersonaUse(DataModel):
    """A persona available to the run's suites (as the run saw them): the suites, and how many conversations
    played it."""

    name: str
    suites: list[int] = Field(default_factory=list)
    conversations: int = 0


class ExpectationUse(DataModel):
    """One expectation written in a case, and how many of the case's conversations evaluated it.

    ``where`` is its place in the case as written (``expectations[0]``, ``steps[2].checks[1]``,
    ``steps[0].success_criteria``, ``turns[1].expect.tool_calls``); ``scope`` what it is checked on (``step 3``,
    ``turn 2``, ``goal``, ``conversation``). A conversation evaluated it when it reached that scope and, for an
    expectation only a judge model can decide (``needs_judge``), a judge model answered in that conversation.
    ``reason`` says why it was never evaluated (None when it was).
    """

    suite: int
    case: str
    where: str
    label: str
    scope: str
    needs_judge: bool = False
    conversations: int = 0
    evaluated: int = 0
    reason: str | None = None


class WorldCollectionUse(DataModel):
    """A collection of the run's seeded worlds (or one a conversation created), over every conversation.

    ``records`` counts the records seeded (distinct ids over the worlds of the run's cases), ``fields`` the fields
    its records have (seeded, or written by a conversation). ``read`` and ``changed`` count distinct records that
    world tools read (``WorldAccess.read``) and changed (inserted, updated, deleted); ``fields_read`` are the
    fields those reads returned (a read without ``fields:`` returns them all), ``fields_changed`` those an update
    set or an insert wrote. ``checked`` says whether an ``expect_state`` of a planned case looks at the collection
    (by name, or through ``nothing_else_changed``), ``fields_checked`` the fields it names.
    """

    name: str
    suites: list[int] = Field(default_factory=list)
    seeded: bool = Field(default=True, description="False: no world of the run seeds it (a conversation created it).")
    records: int = 0
    fields: list[str] = Field(default_factory=list)
    conversations: int = Field(default=0, description="Conversations that read or changed a record of it.")
    read: int = 0
    changed: int = 0
    fields_read: list[str] = Field(default_factory=list)
    fields_changed: list[str] = Field(default_factory=list)
    checked: bool = False
    fields_checked: list[str] = Field(default_factory=list)

    @property
    def touched(self) -> bool:
        """Whether any conversation read or changed a record of it."""
        return self.conversations > 0

    def untouched_fields(self) -> list[str]:
        """Fields of its records no conversation read or changed."""
        seen = {*self.fields_read, *self.fields_changed}
        return [name for name in self.fields if name not in seen]


class RunCoverage(DataModel):
    """What a run exercised of what its suites declare (see the module docstring), with one percentage.

    ``percent`` is the mean, in %, of those of the ratios whose total is not 0 (None when none has one):

    * ``cells``: (case, persona) pairs with at least one finished conversation / pairs planned;
    * ``steps``: simulation steps reached at least once / simulation steps of the planned cases;
    * ``tools``: declared tools called at least once / tools the run's agents declare;
    * ``expectations``: expectations evaluated at least once / expectations written in the planned cases;
    * ``world``: collections of the planned cases' seeded worlds read or changed at least once / those collections
      (only in runs with a world).

    Personas never played are listed (``personas``) but not counted: which personas a run plays is chosen
    with ``--persona``.
    """

    version: int = COVERAGE_VERSION
    percent: float | None = None
    cells_ratio: CoverageRatio = Field(default_factory=CoverageRatio)
    steps_ratio: CoverageRatio = Field(default_factory=CoverageRatio)
    tools_ratio: CoverageRatio = Field(default_factory=CoverageRatio)
    expectations_ratio: CoverageRatio = Field(default_factory=CoverageRatio)
    cells: list[CoverageCell] = Field(default_factory=list, description="Planned (case, persona) pairs, plan order.")
    steps: list[StepReach] = Field(default_factory=list, description="Steps of the planned simulation cases.")
    tools: list[ToolUse] = Field(default_factory=list, description="Declared tools, by name.")
    personas: list[PersonaUse] = Field(default_factory=list, description="Available personas, by name.")
    expectations: list[ExpectationUse] = Field(default_factory=list, description="Expectations, in case order.")
    # Left out when the run has no world, so a run without one stores and shows what it did before.
    world_ratio: CoverageRatio = Field(default_factory=CoverageRatio, exclude_if=lambda ratio: not ratio.total)
    world: list[WorldCollectionUse] = Field(
        default_factory=list,
        description="Collections of the run's worlds, by name (seeded ones, then those conversations created).",
        exclude_if=lambda collections: not collections,
    )

    @model_validator(mode="after")
    def _derived(self) -> RunCoverage:
        # Always the mean of the ratios, so a reader can trust the stored figure.
        figures = [p for ratio in self.ratios().values() if (p := ratio.percent) is not None]
        self.percent = sum(figures) / len(figures) if figures else None
        return self

    def ratios(self) -> dict[str, CoverageRatio]:
        """The ratios by name, in the order the percentage lists them (``world`` only in a run with a world)."""
        ratios = {
            "cells": self.cells_ratio,
            "steps": self.steps_ratio,
            "tools": self.tools_ratio,
            "expectations": self.expectations_ratio,
        }
        if self.world_ratio.total:
            ratios["world"] = self.world_ratio
        return ratios

    def unreached_steps(self) -> list[StepReach]:
        """Steps no conversation reached."""
        return [step for step in self.steps if step.reached == 0]

    def unused_tools(self) -> list[ToolUse]:
        """Declared tools never called."""
        return [tool for tool in self.tools if tool.calls == 0]

    def unused_personas(self) -> list[PersonaUse]:
        """Available personas never played."""
        return [persona for persona in self.personas if persona.conversations == 0]

    def unevaluated_expectations(self) -> list[ExpectationUse]:
        """Expectations no conversation evaluated."""
        return [expectation for expectation in self.expectations if expectation.evaluated == 0]

    def cells_not_run(self) -> list[CoverageCell]:
        """Planned (case, persona) pairs with no finished conversation."""
        return [cell for cell in self.cells if cell.runs == 0]

    def untouched_collections(self) -> list[WorldCollectionUse]:
        """Seeded collections no conversation read or changed."""
        return [collection for collection in self.world if collection.seeded and not collection.touched]

    def untouched_fields(self) -> list[tuple[WorldCollectionUse, list[str]]]:
        """Per collection some conversation touched, the fields of its records none read or changed."""
        found = [(collection, collection.untouched_fields()) for collection in self.world if collection.touched]
        return [(collection, fields) for collection, fields in found if fields]
