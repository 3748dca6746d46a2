"""The conversation state machine: ``user ▶ agent ▶ check ▶ route``, one LangGraph graph for every case kind.

Each user turn (user, agent, check) is one graph step, ``turn``, so a checkpointed conversation writes one
checkpoint per turn.

Simulation rules (the product: kept exact here, and in docs and tests):
  * the simulated user works on the current step only; ``response_guide`` goes to the user, never the agent;
  * after each agent reply the current step's success criteria are checked (not before ``min_turns``);
    a met step is complete and is never reopened;
  * a step not met within its ``max_turns`` stops the conversation; later steps are blocked by it;
  * a step still unsure at its ``max_turns`` (no judge model, or the judge said unsure) is ``unsure`` and the
    conversation moves on; so is, at once, a step whose checks are met while its criteria cannot be judged
    (no judge model): a pass needs every check decided; a judge, user or agent that fails ends the case as an
    error naming it;
  * the user's "done" ends the conversation; it never decides a step: only checks and the judge do;
  * the whole conversation is capped at 100 user turns;
  * every attempted step ends with a written rationale.
The whole table is :data:`STEP_RULES`. A scenario is one open goal: the user may end it (an explicit signal),
its checks may complete it, or it runs out of turns. A golden case replays its turns; ``stable`` replay shows
the agent the expected history.
"""

from __future__ import annotations

import asyncio
import operator
from datetime import datetime
from functools import cache
from typing import TYPE_CHECKING, Annotated, Any, Literal, TypedDict

from pydantic import JsonValue

from simulator.agents import AgentInput, Message, conversation_history, event_message, turn_messages, turn_timeout
from simulator.engine._checkpoint import registered
from simulator.engine._conversation import Conversation
from simulator.engine._voice import silence_of, spoken
from simulator.errors import SimulatorError
from simulator.models import EventSpec
from simulator.models.transcript import (
    AgentEvent,
    CheckEvent,
    ErrorEvent,
    GoldenTurnRecord,
    InputEvent,
    StepOutcome,
    StepStatus,
    StepVerdict,
    StopReason,
    ToolRound,
    TranscriptEvent,
    UserEvent,
)
from simulator.user import RECORDING_ENDS, UserTurnRequest
from simulator.voice import SpeechBackendError

if TYPE_CHECKING:
    from langchain_core.runnables import RunnableConfig
    from langgraph.types import Command

# LangGraph itself (``langgraph.graph``, with langchain_core's runnables and langsmith: most of the engine's import
# time) is imported when the first graph is built: the nodes are plain functions, and a conversation's first turn
# runs before its graph (see ``simulator.engine._simulate``) while LangGraph loads (``simulator.engine._imports``).


class State(TypedDict, total=False):
    """What changes turn by turn (and what a checkpoint must hold to resume a conversation)."""

    turn: int
    step: int
    step_turns: int
    step_first_event: int
    events: Annotated[list[TranscriptEvent], operator.add]
    outcomes: Annotated[list[StepOutcome], operator.add]
    golden: Annotated[list[GoldenTurnRecord], operator.add]
    variables: dict[str, JsonValue]
    pending_event: EventSpec | None
    last_verdict: StepVerdict | None
    user_reason: str | None
    stop: StopReason | None
    error: str | None
    started_at: datetime


def _conversation(config: RunnableConfig) -> Conversation:
    conversation: Conversation = config["configurable"]["conversation"]
    return conversation


# -- nodes ------------------------------------------------------------------------------------------------


async def user_node(state: State, config: RunnableConfig) -> State:
    """The user side speaks: a golden turn, a static utterance, an event, or the simulated user."""
    conv = _conversation(config)
    turn, index = state["turn"], state["step"]
    if turn >= conv.setup.turn_cap:
        return {"stop": "turn_cap"}
    case, kind = conv.case, conv.kind
    number = turn + 1
    event: EventSpec | None = None
    text: str | None = None
    ending: str | None = None
    misreport: str | None = None
    source: Literal["llm", "scripted", "static", "golden"] = "golden"
    scripted = kind.scripted_input(case, index)
    silence = silence_of(conv, index) if scripted is None else None
    if scripted is not None:
        text, event, source = scripted.text, scripted.event, scripted.source
    elif silence:
        text, source = "", "scripted"  # the user says nothing: no simulated user is asked
    else:
        try:
            reply = await conv.setup.user.next_message(_user_request(conv, state))
        except SimulatorError as exc:
            return _failure(state, "user", f"the simulated user failed: {exc}")
        if (reply.done or reply.text is None) and not any(isinstance(e, AgentEvent) for e in state["events"]):
            # Nothing happened that the agent could be held to: the simulated user failed, not the agent.
            said = f" ({reply.reason})" if reply.reason else ""
            message = f"the simulated user ended the conversation before the agent replied{said}"
            return _failure(state, "user", message)
        if reply.done or reply.text is None:
            # The user's "done" ends the conversation; it never decides a step (only checks and the judge do).
            ended: State = {"stop": "user_ended", "user_reason": reply.reason}
            if reply.text:
                # A closing message ("Thanks, bye!") is part of the conversation, though no reply follows.
                ended["events"] = [
                    UserEvent(turn=turn + 1, step=kind.step_number(index), text=reply.text, source=reply.source)
                ]
            return ended
        text, source, ending, misreport = reply.text, reply.source, reply.ending, reply.misreport
    update: State = {"turn": number, "step_turns": state["step_turns"] + 1, "pending_event": event}
    if event is not None:
        update["events"] = [
            InputEvent(turn=number, step=kind.step_number(index), name=event.name, payload=event.payload)
        ]
    else:
        assert text is not None
        try:
            voice = await spoken(conv, text, turn=number, index=index, silence=silence)
        except Exception as exc:  # the synthesizer is Simulator's tool: its failure is an error, never the agent's
            return _failure(state, "engine", f"speaking the user's turn {number} failed: {type(exc).__name__}: {exc}")
        update["events"] = [
            UserEvent(
                turn=number,
                step=kind.step_number(index),
                text=text,
                source=source,
                ending=ending,
                misreport=misreport,
                voice=voice,
            )
        ]
    return update


async def agent_node(state: State, config: RunnableConfig) -> State:
    """The agent replies (one or several messages; its tool calls are routed and recorded meanwhile)."""
    conv = _conversation(config)
    messages = (
        _stable_history(conv, state) if _is_stable(conv) else conversation_history(state["events"], conv.built_turns)
    )
    request = AgentInput(
        messages=messages,
        session=dict(state["variables"]),
        tools=conv.tools,
        event=state.get("pending_event"),
        case=conv.case.name,
        turn=state["turn"],
    )
    started = asyncio.get_running_loop().time()
    # An adapter that bounds and retries its own requests (http, litellm) gets the time its retries need.
    limit = conv.agent_timeout
    if conv.setup.agent_timeout is None:
        limit = turn_timeout(conv.setup.agent, limit)
    try:
        # In this task (``wait_for`` made one per turn: two more trips through the event loop, which a busy run
        # waits for).
        async with asyncio.timeout(limit):
            reply = await conv.setup.agent.respond(request)
    except Exception as exc:  # the agent's own bug, or a timeout, must end this case, not the run
        stuck = conv.router.stuck_tools()
        conv.router.drain()
        where = f"(case {conv.case.name!r}, turn {state['turn']})"
        if isinstance(exc, SpeechBackendError):
            return _failure(state, "engine", f"{exc} {where}")
        if stuck and isinstance(exc, TimeoutError):
            # The agent was waiting for a live tool (the turn's bound, or the tool handle's, ran out first):
            # the tool's failure, not the agent's.
            names = ", ".join(repr(name) for name in stuck)
            message = f"the live tool {names} did not return within {limit:g} s, so the agent could not answer {where}"
            return _failure(state, "tool", message)
        if isinstance(exc, TimeoutError) and not str(exc):
            return _failure(state, "agent", f"the agent did not answer within {limit:g} s {where}")
        return _failure(
            state,
            "agent",
            f"the agent failed on turn {state['turn']} of case {conv.case.name!r}: {type(exc).__name__}: {exc}",
        )
    latency = (asyncio.get_running_loop().time() - started) * 1000
    calls = conv.router.drain()
    event = AgentEvent(
        turn=state["turn"],
        step=conv.kind.step_number(state["step"]),
        messages=reply.messages,
        tool_calls=calls,
        tool_rounds=reply.tool_rounds,
        handoff=reply.handoff,
        variables=reply.variables,
        latency_ms=latency,
        usage=reply.usage,
        voice=conv.setup.voice.take() if conv.setup.voice is not None else None,
    )
    update: State = {
        "events": [event],
        "variables": {**state["variables"], **reply.variables},
        "pending_event": None,
    }
    if conv.router.needs_approval or any(call.status == "needs_approval" for call in calls):
        update["stop"] = "needs_approval"
    if conv.router.simulation_error is not None:
        # The turn is kept (its calls are the evidence), then the case ends: a tool no one could answer is
        # Simulator's failure, not the agent's, and never a silent success.
        failure = _failure(state, "tool", conv.router.simulation_error)
        update["events"] = [event, *failure["events"]]
        update["stop"], update["error"] = failure["stop"], failure["error"]
    return update


async def check_node(state: State, config: RunnableConfig) -> State:
    """Check the current step after the agent's reply and decide: next step, another turn, or stop.

    The verdict decides (see :data:`STEP_RULES`): ``met`` completes the step; at the step's max turns
    ``not_met`` fails it (the conversation stops, later steps are blocked) and ``unsure`` leaves it unsure
    (the conversation moves on: the agent did not demonstrably fail); a judge that fails is an error.
    """
    conv = _conversation(config)
    case, kind = conv.case, conv.kind
    index, step_turns, turn = state["step"], state["step_turns"], state["turn"]
    if not kind.checks_replies:
        return _golden_record(conv, state)
    if step_turns < conv.min_turns(index):
        return {} if step_turns < conv.max_turns(index) else {"stop": "step_failed"}
    wanted = kind.criteria(case, index)
    goal, criteria, checks = wanted.goal, wanted.criteria, list(wanted.checks)
    if kind.has_open_goal(case):
        # An open goal with nothing to check: the turns run out (or the user ends it); the judge's goal
        # satisfaction decides it after the conversation.
        return {"stop": "max_turns"} if step_turns >= conv.max_turns(index) else {}
    events = state["events"]
    replies = [e for e in events[state["step_first_event"] :] if isinstance(e, AgentEvent)]
    try:
        verdict = await conv.setup.checker.check_step(
            goal=goal,
            criteria=criteria,
            checks=checks,
            replies=replies,
            events=events,
            variables=state["variables"],
            state=wanted.state,
            world=conv.world,
        )
    except Exception as exc:
        return _failure(state, "judge", f"the judge failed checking step {index + 1}: {type(exc).__name__}: {exc}")
    record = CheckEvent(
        turn=turn,
        step=kind.step_number(index),
        verdict=verdict.verdict,
        rationale=verdict.rationale,
        details=verdict.details,
    )
    update: State = {"events": [record], "last_verdict": verdict}
    out_of_turns = step_turns >= conv.max_turns(index)
    settled = verdict.verdict == "unsure" and verdict.settled
    if verdict.verdict == "met" or settled or (verdict.verdict == "unsure" and out_of_turns):
        met = verdict.verdict == "met"
        if met:
            rationale = verdict.rationale
        else:
            rationale = f"{_UNSURE_SETTLED if settled else _UNSURE_AT_MAX}: {verdict.rationale}"
        outcome = StepOutcome(
            index=index,
            label=conv.step_label(index),
            status="complete" if met else "unsure",
            turns_used=step_turns,
            completed_at_turn=turn if met else None,
            verdict=verdict.verdict,
            rationale=rationale,
        )
        update["outcomes"] = [outcome]
        # A settled step goes on as a met one would (its checks are met), only its status stays unsure.
        stop = kind.stop_when_decided(case, index, met=met or settled)
        if stop is not None:
            update["stop"] = stop
        else:
            update["step"] = index + 1
            update["step_turns"] = 0
            update["step_first_event"] = len(events) + 1  # after the check event this node adds
            update["last_verdict"] = None
    elif out_of_turns:
        update["stop"] = kind.out_of_turns_stop
    return update


_UNSURE_AT_MAX = "unsure after its max turns (the conversation moved on)"
_UNSURE_SETTLED = "unsure: its checks are met but not every criterion could be judged (the conversation moved on)"


async def finish_node(state: State, config: RunnableConfig) -> State:
    """Write the outcome of every step that has none yet, by :data:`STEP_RULES`: the step the conversation
    stopped in, then the later ones (blocked by a failed step, or not reached)."""
    conv = _conversation(config)
    if not conv.kind.checks_replies:
        return {}  # a golden case's turns are recorded, and scored after the conversation
    done = {outcome.index for outcome in state.get("outcomes", [])}
    stop = state.get("stop") or "completed"
    index = state["step"]
    outcomes: list[StepOutcome] = []
    current: StepOutcome | None = None
    if index not in done and index < conv.step_count():
        current = _unfinished(conv, state, index, stop)
        outcomes.append(current)
    blocker = conv.step_label(index) if index < conv.step_count() else ""
    for later in range(index + 1, conv.step_count()):
        if later in done:
            continue
        blocked = current is not None and current.status == "incomplete"
        outcomes.append(
            StepOutcome(
                index=later,
                label=conv.step_label(later),
                status="blocked" if blocked else "not_reached",
                rationale=f"blocked: step {index + 1} ({blocker}) was not completed ({stop})"
                if blocked
                else f"not reached: {_STOPPED[stop]} in step {index + 1} ({blocker})",
                blocked_by=index if blocked else None,
                blocked_by_goal=blocker if blocked else None,
            )
        )
    return {"outcomes": outcomes}


#: Why a conversation stopped, in words, for steps it never reached.
_STOPPED: dict[str, str] = {
    "completed": "the conversation ended",
    "step_failed": "the conversation stopped",
    "max_turns": "the conversation ran out of turns",
    "turn_cap": "the conversation hit the turn cap",
    "user_ended": "the simulated user ended the conversation",
    "needs_approval": "the conversation stopped waiting for a person's approval",
    "error": "the conversation stopped with an error",
}


# -- super-steps: a whole user turn is one graph step, so one checkpoint is written per turn ------------------

#: State keys whose updates add to the list (``operator.add`` in :class:`State`); any other key replaces.
_ADDED = ("events", "outcomes", "golden")


def _merge(state: State, update: State, into: dict[str, Any]) -> State:
    """``state`` with ``update`` applied as the graph would apply it; ``into`` (the turn's update so far) gets
    ``update`` as well."""
    merged: dict[str, Any] = dict(state)
    for key, value in update.items():
        if key in _ADDED:
            merged[key] = [*merged.get(key, []), *value]  # type: ignore[misc]
            into[key] = [*into.get(key, []), *value]  # type: ignore[misc]
        else:
            merged[key] = into[key] = value
    return merged  # type: ignore[return-value]


async def _parts(state: State, config: RunnableConfig, parts: tuple[Any, ...]) -> State:
    """Run ``parts`` (node functions) one after another on the state each leaves, until one stops the
    conversation; their updates, merged, are one graph step's."""
    update: dict[str, Any] = {}
    for part in parts:
        state = _merge(state, await part(state, config), update)
        if state.get("stop"):
            break
    return update  # type: ignore[return-value]


async def begin_node(state: State, config: RunnableConfig) -> State:
    """The agent's greeting, checked, when the agent speaks first (so every later step is one whole user turn);
    :func:`_entry` comes here only then (a checkpoint of an earlier version may come here in any case)."""
    if _conversation(config).initiator() == "agent":
        return await _parts(state, config, (agent_node, check_node))
    return {}


async def turn_node(state: State, config: RunnableConfig) -> State:
    """One user turn: the user speaks, the agent replies, the step is checked. One graph step, so one
    checkpoint per turn (the parts as separate steps wrote three, which was most of the checkpoints' cost); a
    conversation resumed after a crash reruns the turn that was in flight, never a finished one."""
    return await _parts(state, config, (user_node, agent_node, check_node))


def _routed(node: Any) -> Any:
    """A node that also picks the next node (a Command), instead of a separate conditional edge: one runnable
    per step instead of two. The step that stops the conversation also writes its outcomes
    (:func:`finish_node`) and ends the graph: a step, and its checkpoint, fewer per conversation."""

    from langgraph.graph import END
    from langgraph.types import Command

    async def routed(state: State, config: RunnableConfig) -> Command[str]:
        update, ended = await step(node, state, config)
        return Command(update=update, goto=END if ended else "turn")

    routed.__name__ = node.__name__
    return _typed(routed)


def _typed(function: Any) -> Any:
    """``function`` with its annotations as objects, for LangGraph, which reads them (``config: RunnableConfig``
    is how it knows to pass the config) where this module's names are only strings (``RunnableConfig`` is imported
    for type checking only, see above)."""
    from langchain_core.runnables import RunnableConfig
    from langgraph.types import Command

    names = {"State": State, "RunnableConfig": RunnableConfig, "Command[str]": Command[str], "str": str}
    annotations = function.__annotations__.items()
    function.__annotations__ = {key: names[value] if isinstance(value, str) else value for key, value in annotations}
    return function


async def step(node: Any, state: State, config: RunnableConfig) -> tuple[State, bool]:
    """One step of the graph: ``node``'s update, and whether it ended the conversation (the update then holds the
    outcomes too). What the graph's ``turn`` step does, without LangGraph: a conversation's first turn runs so."""
    update = await node(state, config)
    if not (update.get("stop") or state.get("stop")):
        return update, False
    ended: dict[str, Any] = {}
    merged = _merge(state, update, ended)
    _merge(merged, await finish_node(merged, config), ended)
    return ended, True  # type: ignore[return-value]


def applied(state: State, update: State) -> State:
    """``state`` with a step's ``update`` applied as the graph applies it."""
    return _merge(state, update, {})


def _entry(state: State, config: RunnableConfig) -> str:
    """Where a conversation starts: the agent's greeting when the agent speaks first, else the first user turn
    (no step of its own)."""
    return "begin" if _conversation(config).initiator() == "agent" else "turn"


def compiled_graph(checkpointer: Any = None) -> Any:
    """The compiled graph conversations run through (collaborators come in through the config); one per
    checkpointer, since a checkpointer is bound at compile time."""
    if checkpointer is None:
        return _plain_graph()
    key = id(checkpointer)
    if key not in _WITH_CHECKPOINTER or _WITH_CHECKPOINTER[key][0] is not checkpointer:
        # The checkpointer restores the state's own types without LangGraph's "unregistered type" warning.
        compiled = _build_graph().compile(checkpointer=registered(checkpointer, State))
        _WITH_CHECKPOINTER[key] = (checkpointer, compiled)
    return _WITH_CHECKPOINTER[key][1]


_WITH_CHECKPOINTER: dict[int, tuple[Any, Any]] = {}


@cache
def _plain_graph() -> Any:
    return _build_graph().compile()


def _build_graph() -> Any:
    from langgraph.graph import END, START, StateGraph

    graph = StateGraph(State)
    graph.add_node("begin", _routed(begin_node), destinations=("turn", END))
    graph.add_node("turn", _routed(turn_node), destinations=("turn", END))
    # Reached only from a checkpoint written by an earlier version, which ran it as a step of its own.
    graph.add_node("finish", _typed(finish_node))
    graph.add_conditional_edges(START, _typed(_entry), ["begin", "turn"])
    graph.add_edge("finish", END)
    return graph


# -- helpers ----------------------------------------------------------------------------------------------


def _failure(state: State, where: Literal["agent", "user", "judge", "tool", "engine"], message: str) -> State:
    event = ErrorEvent(turn=state.get("turn", 0), step=state.get("step"), where=where, message=message)
    return {"events": [event], "stop": "error", "error": message}


def _user_request(conv: Conversation, state: State) -> UserTurnRequest:
    case = conv.case
    conversation: list[tuple[Literal["user", "agent"], str]] = []
    for event in state["events"]:
        if isinstance(event, UserEvent):
            conversation.append(("user", event.text))
        elif isinstance(event, AgentEvent):
            conversation.extend(("agent", message) for message in event.messages)
    brief = conv.kind.user_brief(case, state["step"])
    return UserTurnRequest(
        case_name=case.name,
        case_kind=case.kind,
        goal=brief.goal,
        response_guide=brief.response_guide,
        say=list(brief.say),
        turn_in_step=state["step_turns"],
        session=dict(conv.session),
        persona=conv.setup.persona,
        conversation=conversation,
        language=conv.setup.persona.language if conv.setup.persona else conv.setup.language,
        seed=conv.setup.seed,
        can_end=conv.kind.user_can_end,
    )


def _is_stable(conv: Conversation) -> bool:
    return conv.kind.replays_expected_history(conv.case)


def _stable_history(conv: Conversation, state: State) -> list[Message]:
    """Stable replay: earlier turns as written, then this turn's input. An earlier turn shows the expected message
    where it gives one, else the agent's replies; and the tool calls the agent made in it, with their results
    (a case writes no results, so none are made up)."""
    case, kind = conv.case, conv.kind
    index = state["step"]
    replies = {event.turn: event for event in state["events"] if isinstance(event, AgentEvent)}
    history: list[Message] = []
    for earlier in range(index + 1):
        sent = kind.scripted_input(case, earlier)
        assert sent is not None  # a replay of the expected history sends only scripted turns
        history.append(event_message(sent.event) if sent.event else {"role": "user", "content": sent.text})
        if earlier == index:
            break
        reply = replies.get(earlier + 1)  # the golden turn at index i is user turn i + 1
        expected = kind.expected_reply(case, earlier)
        if reply is None:
            if expected is not None:
                history.append({"role": "assistant", "content": expected})
        elif expected is None:
            history.extend(turn_messages(reply.turn, reply.messages, reply.tool_calls, reply.tool_rounds))
        else:
            history.extend(turn_messages(reply.turn, [expected], reply.tool_calls, _silent(reply.tool_rounds)))
    return history


def _silent(rounds: list[ToolRound] | None) -> list[ToolRound] | None:
    """``rounds`` without their texts: an expected message stands for everything the agent said in the turn."""
    if rounds is None:
        return None
    return [ToolRound(calls=r.calls, content="null") if r.content == "text" else r for r in rounds]


def _golden_record(conv: Conversation, state: State) -> State:
    index = state["step"]
    last = next((e for e in reversed(state["events"]) if isinstance(e, AgentEvent)), None)
    update: State = {"golden": [conv.kind.turn_record(conv.case, index, last)], "step": index + 1, "step_turns": 0}
    if index + 1 >= conv.step_count():
        update["stop"] = "completed"
    return update


def _unfinished(conv: Conversation, state: State, index: int, stop: StopReason) -> StepOutcome:
    """The outcome of the step a conversation stopped in, by :data:`STEP_RULES`."""
    verdict = state.get("last_verdict")
    label = conv.step_label(index)
    turns = state["step_turns"]
    last = f"; last check: {verdict.verdict}: {verdict.rationale}" if verdict else ""

    def outcome(status: StepStatus, rationale: str) -> StepOutcome:
        return StepOutcome(
            index=index,
            label=label,
            status=status,
            turns_used=turns,
            verdict=verdict.verdict if verdict else None,
            rationale=rationale,
        )

    if stop == "error":
        return outcome("not_reached", f"not decided: {state.get('error') or 'the conversation stopped with an error'}")
    if stop == "needs_approval":
        waiting = _waiting_for_approval(state)
        return outcome("unsure", f"waiting for a person's approval of {waiting}: nothing after it was tested")
    if stop == "user_ended" and state.get("user_reason") == RECORDING_ENDS:
        # A replay whose recording has no further user move: nobody ended the step, a live run would go on.
        return outcome(
            "unsure",
            f"not replayable past turn {state['turn']}: {RECORDING_ENDS} while this step was open"
            f" (`simulator rerun` goes on live){last}",
        )
    if stop == "user_ended":
        said = state.get("user_reason")
        ended = "the simulated user ended the conversation" + (f" ({said})" if said else "")
        if conv.kind.has_open_goal(conv.case):
            return outcome("unsure", f"{ended}; {_OPEN_GOAL}")
        if verdict is None:
            return outcome("unsure", f"{ended} before this step was checked: nothing was met or failed")
        if verdict.verdict == "not_met":
            return outcome("incomplete", f"{ended}; {verdict.rationale}")
        return outcome("unsure", f"{ended}; {verdict.rationale}")
    if stop == "max_turns" and conv.kind.has_open_goal(conv.case):
        return outcome("unsure", _OPEN_GOAL)
    if stop in ("step_failed", "max_turns"):
        limit = conv.max_turns(index)
        return outcome("incomplete", f"not met within {limit} turn{'s' if limit != 1 else ''}{last}")
    if stop == "turn_cap":
        return outcome("incomplete", f"the conversation hit the cap of {conv.setup.turn_cap} turns{last}")
    return outcome("not_reached", f"the conversation stopped ({stop}) before this step was decided{last}")


_OPEN_GOAL = "an open goal with nothing to check: the judge's goal satisfaction decides"


def _waiting_for_approval(state: State) -> str:
    last = next((e for e in reversed(state["events"]) if isinstance(e, AgentEvent)), None)
    names = [call.name for call in last.tool_calls if call.status == "needs_approval"] if last else []
    return ", ".join(names) or "a tool call"


#: The four states (``docs/architecture.md``), as the engine applies them to the step a conversation is in. Each row:
#: (what the checks said, how the conversation got there) -> (the step's status, what happens next).
#: ``tests/engine/test_truth_table.py`` pins every row, with the case outcome the scorer gives.
STEP_RULES: tuple[tuple[str, str, str, str], ...] = (
    ("met", "any turn after min_turns", "complete", "the next step starts"),
    ("not_met", "at max turns", "incomplete", "stop; later steps blocked by it; case fail"),
    ("unsure / not judged", "at max turns", "unsure", "the next step starts; case unsure unless something fails"),
    (
        "checks met, criteria not judged (no judge model)",
        "any turn after min_turns",
        "unsure",
        "the next step starts; case unsure unless something fails",
    ),
    ("not_met", "the user ended", "incomplete", "stop; later steps blocked; case fail"),
    ("unsure / not judged", "the user ended", "unsure", "stop; later steps not reached; case unsure"),
    ("not checked yet", "the user ended before min_turns", "unsure", "stop; case unsure"),
    ("nothing to check", "the user ended before the agent replied", "not_reached", "stop; case error (user)"),
    ("judge / user / agent failed", "any", "not_reached", "stop; later steps not reached; case error (role named)"),
    ("waiting for approval", "any", "unsure", "stop; later steps not reached; case unsure (approval)"),
)
