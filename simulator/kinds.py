"""One behaviour object per kind of case: everything that differs between golden, scenario and simulation.

The engine, the scorer, the planner, the loader and the reports ask :func:`kind_of` instead of testing the
case's class, so how a kind speaks, is checked, counted, labelled, scored and shown reads in one class here:

* :class:`GoldenKind`: fixed user turns replayed in order; nothing is checked while it runs (each turn is
  recorded), every turn is scored afterwards against its ``expect``; no persona, no simulated user;
* :class:`ScenarioKind`: one open goal (one "step", labelled ``goal``); the simulated user may end it; a goal
  with neither ``success_criteria`` nor ``checks`` is *open*: the engine cannot decide it, the judge's goal
  satisfaction does;
* :class:`SimulationKind`: ordered steps; the simulated user works on the current step only; a step not met
  within its turns stops the conversation (later steps are blocked by it).

Imports only ``simulator.models`` (its row in the module table of ``docs/architecture.md``), so every layer may use it.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, ClassVar, Generic, Literal, TypeVar

from pydantic import JsonValue

from simulator.models import (
    Case,
    EventSpec,
    ExpectationSpec,
    GoldenCase,
    ScenarioCase,
    SimulationCase,
    Step,
    TurnExpectation,
)
from simulator.models.transcript import AgentEvent, GoldenTurnRecord, StopReason
from simulator.models.world import StateExpectation

__all__ = [
    "KINDS",
    "ExpectationScope",
    "GoldenKind",
    "Kind",
    "Part",
    "ScenarioKind",
    "ScriptedInput",
    "SimulationKind",
    "Stage",
    "StepCriteria",
    "UserBrief",
    "WrittenCriterion",
    "expectation_questions",
    "kind_named",
    "kind_of",
]

C = TypeVar("C", GoldenCase, ScenarioCase, SimulationCase)
#: A place in a case as written (keys and list indexes), for errors the loader locates in the YAML file.
Where = tuple[str | int, ...]
#: The part of a conversation something is checked on: ``("step", index)``, ``("goal", 0)`` or ``("turn", number)``.
Part = tuple[Literal["step", "goal", "turn"], int]


@dataclass(frozen=True)
class Stage:
    """One stage of a case as written, in the order the user lives them (a simulation's step, a scenario's goal, a
    golden turn): what the spec lint reads of it. Places are relative to the case."""

    where: Where
    #: How messages name it: ``step 2``, ``the goal``, ``turn 3``.
    label: str
    #: What the user is told at this stage, on top of what it was told at the stages before.
    told: Sequence[Any]
    #: The checks that decide it (a golden turn's ``expect``), each with its place.
    checks: Sequence[tuple[Where, ExpectationSpec | TurnExpectation]] = ()
    #: The case expectations it refers to (scored on its replies).
    references: Sequence[str] = ()
    goal: str | None = None
    success_criteria: str | None = None
    say: Sequence[str] = ()
    max_turns: int = 0
    #: How messages name whose ``say`` lines these are: ``step 2``, ``the scenario``.
    script_label: str = ""
    #: Whether a goal with neither success criteria nor checks is met by any reply (a simulation's step); a
    #: scenario's open goal is decided by the judge instead.
    needs_criteria: bool = False


@dataclass(frozen=True)
class ScriptedInput:
    """What the user side sends without a simulated user: a fixed text, or a named event."""

    text: str | None = None
    event: EventSpec | None = None
    source: Literal["golden", "static"] = "static"


@dataclass(frozen=True)
class UserBrief:
    """What the simulated user is told for the current step: never its success criteria."""

    goal: str | None
    response_guide: str | dict[str, JsonValue] | None
    say: Sequence[str]


@dataclass(frozen=True)
class StepCriteria:
    """What decides the current step after an agent reply: its goal, criteria in words and checks."""

    goal: str | None
    criteria: str | None
    checks: Sequence[ExpectationSpec]
    #: What the conversation's world must look like for the step to be met (a simulation step's ``expect_state``).
    state: StateExpectation | None = None


@dataclass(frozen=True)
class ExpectationScope:
    """Expectations a step or golden turn refers to (by text), checked on that step's or turn's replies only."""

    step: int | None
    turn: int | None
    references: Sequence[str]

    @property
    def label(self) -> str:
        """``step N`` or ``turn N``, as the scores' checks are prefixed."""
        return f"step {self.step + 1}" if self.step is not None else f"turn {self.turn}"


@dataclass(frozen=True)
class WrittenCriterion:
    """One thing a kind's own fields expect of the agent, where it is written and the part of the conversation it
    is checked on: success criteria in words, a deterministic check, or a golden turn's ``expect`` (one is set)."""

    where: Where
    part: Part
    criteria: str | None = None
    check: ExpectationSpec | None = None
    expect: TurnExpectation | None = None


class Kind(ABC, Generic[C]):
    """How one kind of case behaves; one instance per kind, found with :func:`kind_of`."""

    #: The case's ``kind:`` as written in YAML and stored on transcripts.
    name: ClassVar[str]
    #: When a case of this kind passes (the kinds table in ``docs/architecture.md``), made exact by the required
    #: scores of the scorers that apply to the kind (``simulator.judges.scorers``) and the rules below
    #: (:meth:`has_open_goal`).
    passes_when: ClassVar[str]
    #: Whether a simulated user plays a persona (a replay of fixed turns has none to play).
    plays_persona: ClassVar[bool] = True
    #: Whether the agent's replies are checked while the conversation runs (golden turns are scored after it).
    checks_replies: ClassVar[bool] = True
    #: Whether the simulated user's "done" signal may end the conversation (it never decides a step).
    user_can_end: ClassVar[bool] = False
    #: Why the conversation stops when the current step is not met within its turns.
    out_of_turns_stop: ClassVar[StopReason] = "step_failed"
    #: Whether events carry the step index (a scenario's single goal is not numbered).
    numbers_steps: ClassVar[bool] = True
    #: Whether the simulated user is given one step's goal at a time, and told to work on it only (rather than the
    #: conversation's whole goal).
    one_step_at_a_time: ClassVar[bool] = False
    #: Whether coverage counts how far the conversations got through each step (a scenario's goal and golden turns
    #: are covered through their expectations instead).
    covers_steps: ClassVar[bool] = False
    #: The key only a case of this kind writes: a case without ``kind:`` that has it is told to add this kind.
    identifying_key: ClassVar[str]
    #: The heading a report's list of step outcomes has.
    steps_heading: ClassVar[str] = "Steps"

    # -- the user side ----------------------------------------------------------------------------------

    def initiator(self, case: C) -> Literal["user", "agent"]:
        """Who speaks first."""
        return "user"

    @abstractmethod
    def scripted_input(self, case: C, index: int) -> ScriptedInput | None:
        """What the user side sends in step ``index`` without a simulated user, or None: the simulated user speaks."""

    def user_brief(self, case: C, index: int) -> UserBrief:
        """What the simulated user works on in step ``index`` (only asked when :meth:`scripted_input` is None)."""
        raise NotImplementedError(f"a {self.name} case has no simulated user")

    # -- steps: counted, labelled, checked ---------------------------------------------------------------

    @abstractmethod
    def step_count(self, case: C) -> int:
        """Steps of a simulation, turns of a golden case, 1 for a scenario (its goal)."""

    @abstractmethod
    def step_label(self, case: C, index: int) -> str:
        """A step's goal or label, as reports and "blocked by" name it."""

    def step(self, case: C, index: int) -> Step | None:
        """The simulation step at ``index`` (None for other kinds)."""
        return None

    def step_number(self, index: int) -> int | None:
        """The step index recorded on the conversation's events."""
        return index if self.numbers_steps else None

    def max_turns(self, case: C, index: int) -> int:
        """User turns allowed for a step; a golden turn, static utterance or event is sent once."""
        return 1

    def min_turns(self, case: C, index: int) -> int:
        """User turns before the step may be judged."""
        return 1

    def criteria(self, case: C, index: int) -> StepCriteria:
        """What is checked after each agent reply in step ``index``."""
        raise NotImplementedError(f"a {self.name} case is not checked while it runs")

    def replays_expected_history(self, case: C) -> bool:
        """Whether the agent is shown the expected history instead of its own replies (golden ``stable``)."""
        return False

    def expected_reply(self, case: C, index: int) -> str | None:
        """The reply step ``index`` expects of the agent, shown in its place when the expected history is replayed."""
        return None

    def turn_record(self, case: C, index: int, last: AgentEvent | None) -> GoldenTurnRecord:
        """What a kind that does not check replies records of turn ``index`` instead."""
        raise NotImplementedError(f"a {self.name} case checks its replies; it records no turns")

    def has_open_goal(self, case: C) -> bool:
        """A goal with nothing the engine can check (the judge's goal satisfaction decides it)."""
        return False

    def stop_when_decided(self, case: C, index: int, *, met: bool) -> StopReason | None:
        """The stop reason once step ``index`` is decided (met, or unsure at its max turns); None: next step."""
        return "completed" if index + 1 >= self.step_count(case) else None

    # -- scoring: what is scored and what must pass -------------------------------------------------------

    def outcome_label(self, index: int) -> str:
        """How a step's goal-achievement score names it: ``step N`` (``goal`` for a scenario)."""
        return f"step {index + 1}"

    def expectation_scopes(self, case: C) -> list[ExpectationScope]:
        """The steps or turns that refer to expectations, in order."""
        return []

    def goal_description(self, case: C) -> str | None:
        """The user's goal as the goal-satisfaction judge reads it (None: the kind has no user goal)."""
        return None

    def judge_questions(self, case: C) -> list[str]:
        """What only a judge model can decide in this kind's own fields (the case's expectations aside)."""
        return []

    # -- loading and reports -----------------------------------------------------------------------------

    def checks_written(self, case: C) -> list[tuple[Where, ExpectationSpec]]:
        """Every deterministic check written in the kind's own fields, with where it is written."""
        return []

    def criteria_written(self, case: C) -> list[WrittenCriterion]:
        """Everything the kind's own fields expect of the agent, in the order written (the case's expectations
        aside)."""
        return []

    def references_written(self, case: C) -> list[tuple[Where, str]]:
        """Every reference to an expectation's text, with where it is written."""
        return []

    def tool_names_written(self, case: C) -> list[tuple[Where, str]]:
        """Tool names the kind's own fields expect the agent to call, with where they are written."""
        return []

    def variables_written(self, case: C) -> list[tuple[Where, str]]:
        """Session variable names the kind's own fields expect the agent to set, with where they are written."""
        return []

    def report_label(self, index: int) -> str:
        """A step's heading in a report."""
        return f"Step {index + 1}"

    def report_criteria(self, case: C, index: int) -> str | None:
        """The success criteria a report shows beside step ``index``."""
        return None

    def report_goal(self, case: C) -> str | None:
        """The goal a report shows when the conversation recorded no step."""
        return None

    # -- spec lint -------------------------------------------------------------------------------------------

    #: How a message names what two cases share when they are near-identical: their steps, turns or goal.
    parts_word: ClassVar[str]

    @abstractmethod
    def stages(self, case: C) -> list[Stage]:
        """The case's stages in the order the user lives them."""

    @abstractmethod
    def script_parts(self, case: C) -> list[Any]:
        """What the case asks, as written (goals, lines, events, criteria): two cases alike in these are alike."""

    def turn_expectations(self, case: C) -> list[TurnExpectation | None]:
        """Each golden turn's ``expect`` (None where it has none)."""
        return []


def expectation_questions(where: str, spec: ExpectationSpec) -> list[str]:
    """What in one expectation only a judge model can decide: its expected message, or its words."""
    deterministic = any(
        getattr(spec, name) is not None
        for name in ("must_contain", "must_not_contain", "tool_call", "variable", "handoff")
    )
    if spec.message is not None:
        return [f"{where}: expected message (semantic match)"]
    return [] if deterministic else [f"{where}: expectation in words"]


class GoldenKind(Kind[GoldenCase]):
    """Fixed user turns replayed in order; every turn is scored after the conversation against its ``expect``."""

    name = "golden"
    identifying_key = "turns"
    passes_when = (
        "every turn meets its thresholds (semantic match, tool-call correctness, no hallucination) and no "
        "unexpected tool call happened"
    )
    plays_persona = False
    checks_replies = False

    def scripted_input(self, case: GoldenCase, index: int) -> ScriptedInput:
        """The golden turn's message or event."""
        turn = case.turns[index]
        return ScriptedInput(text=turn.user, event=turn.event, source="golden")

    def step_count(self, case: GoldenCase) -> int:
        """Its turns."""
        return len(case.turns)

    def step_label(self, case: GoldenCase, index: int) -> str:
        """``turn N``."""
        return f"turn {index + 1}"

    def replays_expected_history(self, case: GoldenCase) -> bool:
        """``replay: stable``."""
        return case.replay == "stable"

    def expected_reply(self, case: GoldenCase, index: int) -> str | None:
        """The turn's expected message."""
        expect = case.turns[index].expect
        return expect.message if expect is not None else None

    def turn_record(self, case: GoldenCase, index: int, last: AgentEvent | None) -> GoldenTurnRecord:
        """The turn as written beside what the agent did in it (``last``: its reply)."""
        turn = case.turns[index]
        return GoldenTurnRecord(
            index=index,
            user=turn.user,
            event=turn.event.name if turn.event else None,
            expected_message=turn.expect.message if turn.expect else None,
            expected_tools=[call.name for call in turn.expect.tool_calls] if turn.expect else [],
            actual_messages=list(last.messages) if last else [],
            actual_tools=[call.name for call in last.tool_calls] if last else [],
            history="expected" if case.replay == "stable" else "actual",
        )

    def expectation_scopes(self, case: GoldenCase) -> list[ExpectationScope]:
        """Each turn's ``expectations:``."""
        return [ExpectationScope(None, i + 1, turn.expectations) for i, turn in enumerate(case.turns)]

    def judge_questions(self, case: GoldenCase) -> list[str]:
        """Expected messages (semantic match) and reference answers of the turns."""
        found: list[str] = []
        for number, turn in enumerate(case.turns, 1):
            if turn.expect is not None and turn.expect.message is not None:
                found.append(f"turn {number}: expected message (semantic match)")
            if turn.expect is not None and turn.expect.reference_answer is not None:
                found.append(f"turn {number}: reference answer")
        return found

    def references_written(self, case: GoldenCase) -> list[tuple[Where, str]]:
        """``turns[t].expectations[i]``."""
        return [
            (("turns", t, "expectations", i), ref)
            for t, turn in enumerate(case.turns)
            for i, ref in enumerate(turn.expectations)
        ]

    def criteria_written(self, case: GoldenCase) -> list[WrittenCriterion]:
        """Each turn's ``expect``, checked on that turn."""
        return [
            WrittenCriterion(("turns", t, "expect"), ("turn", t + 1), expect=turn.expect)
            for t, turn in enumerate(case.turns)
            if turn.expect is not None
        ]

    def tool_names_written(self, case: GoldenCase) -> list[tuple[Where, str]]:
        """``turns[t].expect.tool_calls[c].name``."""
        return [
            (("turns", t, "expect", "tool_calls", c, "name"), call.name)
            for t, turn in enumerate(case.turns)
            if turn.expect
            for c, call in enumerate(turn.expect.tool_calls)
        ]

    def variables_written(self, case: GoldenCase) -> list[tuple[Where, str]]:
        """``turns[t].expect.variables.<name>``."""
        return [
            (("turns", t, "expect", "variables", name), name)
            for t, turn in enumerate(case.turns)
            if turn.expect
            for name in turn.expect.variables
        ]

    parts_word = "turns"

    def stages(self, case: GoldenCase) -> list[Stage]:
        """Each turn: the user's line and event payload, its ``expect``."""
        return [
            Stage(
                where=("turns", index),
                label=f"turn {index + 1}",
                told=[turn.user, turn.event.payload if turn.event else None],
                checks=[(("turns", index, "expect"), turn.expect)] if turn.expect is not None else [],
                references=turn.expectations,
            )
            for index, turn in enumerate(case.turns)
        ]

    def script_parts(self, case: GoldenCase) -> list[Any]:
        """Each turn's line and event."""
        return [[turn.user, turn.event] for turn in case.turns]

    def turn_expectations(self, case: GoldenCase) -> list[TurnExpectation | None]:
        """Each turn's ``expect``."""
        return [turn.expect for turn in case.turns]


class ScenarioKind(Kind[ScenarioCase]):
    """One open goal, improvised by the simulated user, who may end it."""

    name = "scenario"
    passes_when = (
        "user goal satisfied AND no hallucination AND all expectations met; an open goal (no criteria, no "
        "checks) is decided by the judge's goal satisfaction alone"
    )
    user_can_end = True
    out_of_turns_stop = "max_turns"
    numbers_steps = False
    identifying_key = "goal"
    steps_heading = "Goal"

    def initiator(self, case: ScenarioCase) -> Literal["user", "agent"]:
        """As the case says."""
        return case.initiator

    def scripted_input(self, case: ScenarioCase, index: int) -> ScriptedInput | None:
        """The simulated user always speaks."""
        return None

    def user_brief(self, case: ScenarioCase, index: int) -> UserBrief:
        """The case's goal, response guide and lines."""
        return UserBrief(case.goal, case.response_guide, case.say)

    def step_count(self, case: ScenarioCase) -> int:
        """One: the goal."""
        return 1

    def step_label(self, case: ScenarioCase, index: int) -> str:
        """The goal."""
        return case.goal

    def max_turns(self, case: ScenarioCase, index: int) -> int:
        """The case's ``max_turns``."""
        return case.max_turns

    def criteria(self, case: ScenarioCase, index: int) -> StepCriteria:
        """The case's goal, success criteria and checks."""
        return StepCriteria(case.goal, case.success_criteria, list(case.checks))

    def has_open_goal(self, case: ScenarioCase) -> bool:
        """Neither success criteria nor checks."""
        return case.success_criteria is None and not case.checks

    def stop_when_decided(self, case: ScenarioCase, index: int, *, met: bool) -> StopReason:
        """The goal is the whole conversation: it ends either way."""
        return "completed" if met else "max_turns"

    def outcome_label(self, index: int) -> str:
        """``goal``."""
        return "goal"

    def goal_description(self, case: ScenarioCase) -> str:
        """The goal, with the success criteria that define it."""
        return _goal_text([(case.goal, case.success_criteria)])

    def judge_questions(self, case: ScenarioCase) -> list[str]:
        """Its success criteria and checks in words."""
        found = ["success criteria"] if case.success_criteria else []
        for check in case.checks:
            found += expectation_questions("check", check)
        return found

    def checks_written(self, case: ScenarioCase) -> list[tuple[Where, ExpectationSpec]]:
        """``checks[c]``."""
        return [(("checks", c), check) for c, check in enumerate(case.checks)]

    def criteria_written(self, case: ScenarioCase) -> list[WrittenCriterion]:
        """The success criteria, then the checks, all checked on the goal."""
        found = [WrittenCriterion(("success_criteria",), ("goal", 0), criteria=case.success_criteria)]
        return (found if case.success_criteria else []) + [
            WrittenCriterion(where, ("goal", 0), check=check) for where, check in self.checks_written(case)
        ]

    def report_label(self, index: int) -> str:
        """``Goal``."""
        return "Goal"

    def report_criteria(self, case: ScenarioCase, index: int) -> str | None:
        """The goal's success criteria."""
        return case.success_criteria if index == 0 else None

    def report_goal(self, case: ScenarioCase) -> str:
        """The goal."""
        return case.goal

    parts_word = "goal"

    def stages(self, case: ScenarioCase) -> list[Stage]:
        """The one goal, with what the user is told of it."""
        return [
            Stage(
                where=(),
                label="the goal",
                told=[case.goal, case.response_guide, case.say],
                checks=[(("checks", index), check) for index, check in enumerate(case.checks)],
                goal=case.goal,
                success_criteria=case.success_criteria,
                say=case.say,
                max_turns=case.max_turns,
                script_label="the scenario",
            )
        ]

    def script_parts(self, case: ScenarioCase) -> list[Any]:
        """The goal, its criteria, the lines and the response guide."""
        return [case.goal, case.success_criteria, case.say, case.response_guide]


class SimulationKind(Kind[SimulationCase]):
    """Ordered steps; the simulated user works on the current one; a failed step blocks the later ones."""

    name = "simulation"
    passes_when = "every step completed, plus the scenario conditions"
    one_step_at_a_time = True
    covers_steps = True
    identifying_key = "steps"

    def initiator(self, case: SimulationCase) -> Literal["user", "agent"]:
        """As the case says."""
        return case.initiator

    def scripted_input(self, case: SimulationCase, index: int) -> ScriptedInput | None:
        """A static utterance or an event step; a goal step is the simulated user's."""
        step = self.step(case, index)
        if step is not None and step.static_utterance is not None:
            return ScriptedInput(text=step.static_utterance, source="static")
        if step is not None and step.event is not None:
            return ScriptedInput(event=step.event, source="static")
        return None

    def user_brief(self, case: SimulationCase, index: int) -> UserBrief:
        """The current step's goal, response guide and lines (never its success criteria)."""
        step = case.steps[index]
        return UserBrief(step.goal, step.response_guide, step.say)

    def step_count(self, case: SimulationCase) -> int:
        """Its steps."""
        return len(case.steps)

    def step(self, case: SimulationCase, index: int) -> Step | None:
        """The step at ``index``, None past the last."""
        return case.steps[index] if index < len(case.steps) else None

    def step_label(self, case: SimulationCase, index: int) -> str:
        """The step's name, goal, utterance or event."""
        return case.steps[index].label()

    def max_turns(self, case: SimulationCase, index: int) -> int:
        """A goal step's ``max_turns``; a static utterance or event is sent once."""
        step = self.step(case, index)
        return 1 if step is None or step.goal is None else step.max_turns

    def min_turns(self, case: SimulationCase, index: int) -> int:
        """A goal step's ``min_turns``."""
        step = self.step(case, index)
        return step.min_turns if step is not None and step.goal is not None else 1

    def criteria(self, case: SimulationCase, index: int) -> StepCriteria:
        """The step's goal, success criteria and checks."""
        step = case.steps[index]
        return StepCriteria(step.goal, step.success_criteria, list(step.checks), step.expect_state)

    def expectation_scopes(self, case: SimulationCase) -> list[ExpectationScope]:
        """Each step's ``expectations:``."""
        return [ExpectationScope(i, None, step.expectations) for i, step in enumerate(case.steps)]

    def goal_description(self, case: SimulationCase) -> str | None:
        """Every goal step's goal, with its success criteria."""
        return _goal_text([(step.goal, step.success_criteria) for step in case.steps if step.goal]) or None

    def judge_questions(self, case: SimulationCase) -> list[str]:
        """Each step's success criteria and checks in words."""
        found: list[str] = []
        for number, step in enumerate(case.steps, 1):
            if step.success_criteria:
                found.append(f"step {number}: success criteria")
            for check in step.checks:
                found += expectation_questions(f"step {number}: check", check)
        return found

    def checks_written(self, case: SimulationCase) -> list[tuple[Where, ExpectationSpec]]:
        """``steps[s].checks[c]``."""
        return [
            (("steps", s, "checks", c), check)
            for s, step in enumerate(case.steps)
            for c, check in enumerate(step.checks)
        ]

    def criteria_written(self, case: SimulationCase) -> list[WrittenCriterion]:
        """Each step's success criteria, then its checks, checked on that step."""
        found: list[WrittenCriterion] = []
        for s, step in enumerate(case.steps):
            if step.success_criteria:
                found.append(WrittenCriterion(("steps", s, "success_criteria"), ("step", s), step.success_criteria))
            found += [
                WrittenCriterion(("steps", s, "checks", c), ("step", s), check=check)
                for c, check in enumerate(step.checks)
            ]
        return found

    def references_written(self, case: SimulationCase) -> list[tuple[Where, str]]:
        """``steps[s].expectations[i]``."""
        return [
            (("steps", s, "expectations", i), ref)
            for s, step in enumerate(case.steps)
            for i, ref in enumerate(step.expectations)
        ]

    def report_criteria(self, case: SimulationCase, index: int) -> str | None:
        """The step's success criteria."""
        return case.steps[index].success_criteria if 0 <= index < len(case.steps) else None

    parts_word = "steps"

    def stages(self, case: SimulationCase) -> list[Stage]:
        """Each step, with what the user is told at it (event payloads reach the agent too)."""
        return [
            Stage(
                where=("steps", index),
                label=f"step {index + 1}",
                told=[
                    step.goal,
                    step.response_guide,
                    step.say,
                    step.static_utterance,
                    step.event.payload if step.event else None,
                ],
                checks=[(("steps", index, "checks", c), check) for c, check in enumerate(step.checks)],
                references=step.expectations,
                goal=step.goal,
                success_criteria=step.success_criteria,
                say=step.say,
                max_turns=step.max_turns,
                script_label=f"step {index + 1}",
                needs_criteria=True,
            )
            for index, step in enumerate(case.steps)
        ]

    def script_parts(self, case: SimulationCase) -> list[Any]:
        """Each step's goal, line, event, criteria, response guide and lines."""
        return [
            [step.goal, step.static_utterance, step.event, step.success_criteria, step.response_guide, step.say]
            for step in case.steps
        ]


def _goal_text(parts: Sequence[tuple[str | None, str | None]]) -> str:
    # A red-team user "wins" when the agent refuses as the criteria say: the judge needs the criteria too.
    return "; ".join((goal or "") + (f" (satisfied when: {criteria})" if criteria else "") for goal, criteria in parts)


#: Every kind by its ``kind:`` name.
KINDS: dict[str, Kind[Any]] = {kind.name: kind for kind in (GoldenKind(), ScenarioKind(), SimulationKind())}


def kind_of(case: Case) -> Kind[Any]:
    """The behaviour of ``case``'s kind."""
    return KINDS[case.kind]


def kind_named(name: str) -> Kind[Any]:
    """The behaviour of the kind called ``name`` (as stored on a transcript)."""
    return KINDS[name]
