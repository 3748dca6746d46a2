"""What one conversation needs besides its graph state: the case, the agent, the user, the checker, the tools.

The graph state (``State`` in ``_graph.py``) holds only what changes turn by turn, so that it can be checkpointed; this
object holds the collaborators and answers the questions the nodes ask about the case.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol

from pydantic import JsonValue

from simulator.agents import AgentAdapter, BuiltTurns
from simulator.kinds import Kind, kind_of
from simulator.models import AgentConfig, Case, ExpectationSpec, Persona, Step, ToolFake, ToolFault
from simulator.models.transcript import AgentEvent, StepVerdict, TranscriptEvent
from simulator.models.world import StateExpectation
from simulator.tool_faults import fault_entries
from simulator.tools import ToolHandle, ToolMode, ToolRouter, ToolSimulator
from simulator.user import SimulatedUser
from simulator.voice import VoiceConversation
from simulator.world import SeededWorld, World

#: The whole conversation is capped at this many user turns (a simulation rule: ``docs/architecture.md``).
TURN_CAP = 100


class StepChecker(Protocol):
    """Decides whether the current step's success criteria are met (the judges provide one)."""

    async def check_step(
        self,
        *,
        goal: str | None,
        criteria: str | None,
        checks: Sequence[ExpectationSpec],
        replies: list[AgentEvent],
        events: Sequence[TranscriptEvent],
        variables: dict[str, JsonValue],
        state: StateExpectation | None = None,
        world: World | None = None,
    ) -> StepVerdict:
        """Check the step against the conversation so far; ``replies`` are the agent's replies in this step;
        ``state`` is checked against ``world``, the conversation's world as it is now."""
        ...


@dataclass
class ConversationSetup:
    """Everything needed to run one conversation of one case with one persona.

    ``agent`` is a fresh adapter for this conversation (it is closed at the end). Tool fakes are tried case
    first, then suite. ``tool_simulator`` plays the tools that declare ``simulate`` (test mode only). ``seed``
    makes the scripted user's perturbations and any random choice reproducible.
    """

    case: Case
    agent: AgentAdapter
    user: SimulatedUser
    checker: StepChecker
    agent_config: AgentConfig | None = None
    persona: Persona | None = None
    suite_fakes: Sequence[ToolFake] = ()
    #: The suite's ``faults:`` (the case's and each tool's come from the case and the agent config).
    suite_faults: Sequence[ToolFault] = ()
    tool_mode: ToolMode = "test"
    tool_functions: dict[str, Any] = field(default_factory=dict)
    tool_simulator: ToolSimulator | None = None
    seed: int = 0
    language: str = "en"
    turn_cap: int = TURN_CAP
    agent_timeout: float | None = None
    #: The case's seeded world (suite and case ``world:`` merged); the conversation works on its own copy.
    world: SeededWorld | None = None
    #: The Python functions of the agent's world tools, by tool name (``simulator.tools.world_functions``).
    world_functions: dict[str, Any] = field(default_factory=dict)
    #: A voice case: the unwrapped voice adapter (``agent`` is it, or wraps it): the engine speaks each user turn
    #: through it and records how each reply was heard. None: a chat case.
    voice: VoiceConversation | None = None


@dataclass
class Conversation:
    """The live collaborators of one conversation, reached by the graph's nodes through the run config."""

    setup: ConversationSetup
    router: ToolRouter
    tools: ToolHandle
    session: dict[str, JsonValue]
    #: The agent's turns as chat messages, built once each (see ``conversation_history``).
    built_turns: BuiltTurns = field(default_factory=dict)
    #: This conversation's own copy of the case's world (None: the case has none).
    world: World | None = None

    @classmethod
    def start(cls, setup: ConversationSetup) -> Conversation:
        """Wire the tool router and the session for ``setup`` (call inside the running event loop)."""
        case = setup.case
        declared = setup.agent_config.tools if setup.agent_config else []
        fakes = [(f"case tool_fakes[{i}]", fake) for i, fake in enumerate(case.tool_fakes)]
        fakes += [(f"suite tool_fakes[{i}]", fake) for i, fake in enumerate(setup.suite_fakes)]
        timeout = setup.agent_timeout or (setup.agent_config.timeout if setup.agent_config else 60.0)
        # Every conversation its own copy: repeats, personas and concurrent conversations never share changes.
        world = setup.world.copy() if setup.world is not None else None
        router = ToolRouter(
            declared=declared,
            fakes=fakes,
            mode=setup.tool_mode,
            functions=setup.tool_functions,
            timeout=timeout,
            # Live mode runs the real tool (or says there is none): a model never plays a tool there.
            simulator=setup.tool_simulator if setup.tool_mode == "test" else None,
            world=world,
            world_functions=setup.world_functions,
            faults=fault_entries(case.faults, setup.suite_faults, declared),
            seed=setup.seed,
        )
        tools = ToolHandle(router, asyncio.get_running_loop(), timeout=timeout)
        session: dict[str, JsonValue] = {}
        if setup.agent_config is not None:
            session = {
                name: declaration.default
                for name, declaration in setup.agent_config.variables.items()
                if declaration.default is not None
            }
        session.update(case.session_parameters)
        return cls(setup=setup, router=router, tools=tools, session=session, world=world)

    @property
    def case(self) -> Case:
        """The case being run."""
        return self.setup.case

    @property
    def agent_timeout(self) -> float:
        """Seconds one agent reply may take."""
        if self.setup.agent_timeout is not None:
            return self.setup.agent_timeout
        return self.setup.agent_config.timeout if self.setup.agent_config else 60.0

    @property
    def kind(self) -> Kind[Any]:
        """How the case's kind behaves (``simulator.kinds``)."""
        return kind_of(self.setup.case)

    def step_count(self) -> int:
        """Steps of a simulation, turns of a golden case, 1 for a scenario (its goal)."""
        return self.kind.step_count(self.case)

    def initiator(self) -> Literal["user", "agent"]:
        """Who speaks first."""
        return self.kind.initiator(self.case)

    def step(self, index: int) -> Step | None:
        """The simulation step at ``index`` (None for other kinds)."""
        return self.kind.step(self.case, index)

    def step_label(self, index: int) -> str:
        """A step's goal or label, as reports and "blocked by" name it."""
        return self.kind.step_label(self.case, index)

    def max_turns(self, index: int) -> int:
        """User turns allowed for a step; a static utterance or event is sent once."""
        return self.kind.max_turns(self.case, index)

    def min_turns(self, index: int) -> int:
        """User turns before the step may be judged."""
        return self.kind.min_turns(self.case, index)
