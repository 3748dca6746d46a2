"""``simulate(setup) -> Transcript``: run one conversation through the graph and assemble its transcript."""

from __future__ import annotations

from typing import Any

from simulator.agents import engine_untraced
from simulator.engine._checkpoint import registered
from simulator.engine._conversation import Conversation, ConversationSetup
from simulator.engine._graph import State, applied, compiled_graph, step, turn_node
from simulator.engine._imports import graph_loaded
from simulator.llm import metering
from simulator.models.transcript import AgentEvent, Transcript, utc_now
from simulator.models.voice import TranscriptVoice
from simulator.world import apply_changes

# Graph steps per user turn (one: user, agent and check run as one step) plus the begin/finish steps, with room.
_STEPS_PER_TURN = 1
_FIXED_STEPS = 8


async def simulate(setup: ConversationSetup, *, checkpointer: Any = None, thread_id: str | None = None) -> Transcript:
    """Run one conversation of ``setup.case`` and return its transcript.

    Failures of the agent, the simulated user or the judge do not raise: the transcript ends with stop reason
    ``error`` and an error event naming whose failure it was. The agent adapter is closed at the end.

    A new conversation's first user turn runs before its graph is built, as the graph's first step would (see
    ``simulator.engine._imports``); the graph goes on from the state it leaves.

    With a LangGraph ``checkpointer`` and a ``thread_id``, every node step is saved before the next one runs
    (``durability="sync"``: the only mode that resumed at the right turn after a SIGKILL; the first turn is in
    the graph's input checkpoint, a crash during it leaves none and the conversation starts over); if the
    thread already has an unfinished conversation it continues from its last completed step instead of
    starting again, and a finished one is returned as it ended, without running anything. The caller deletes
    the thread's checkpoints (:func:`forget`) once it has stored the result: deleted earlier, a crash between
    the end of the conversation and the stored result would run the whole conversation again.
    """
    started = utc_now()
    conversation = Conversation.start(setup)
    initial: State = {
        "turn": 0,
        "step": 0,
        "step_turns": 0,
        "step_first_event": 0,
        "events": [],
        "outcomes": [],
        "golden": [],
        "variables": dict(conversation.session),
        "pending_event": None,
        "last_verdict": None,
        "stop": None,
        "error": None,
        "started_at": started,
    }
    configurable: dict[str, Any] = {"conversation": conversation}
    if checkpointer is not None:
        if not thread_id:
            raise ValueError("a checkpointer needs a thread_id")
        configurable["thread_id"] = thread_id
    config: dict[str, Any] = {
        "configurable": configurable,
        "recursion_limit": setup.turn_cap * _STEPS_PER_TURN + _FIXED_STEPS,
    }
    try:
        with metering() as meter:
            final = await _run(conversation, initial, config, checkpointer, thread_id)
    finally:
        await setup.agent.aclose()
    case = setup.case
    voice = setup.voice
    return Transcript(
        case=case.name,
        kind=case.kind,
        persona=setup.persona.name if setup.persona else None,
        seed=setup.seed,
        session_parameters=conversation.session,
        events=final["events"],
        steps=sorted(final.get("outcomes", []), key=lambda outcome: outcome.index),
        golden_turns=final.get("golden", []),
        stop_reason=final.get("stop") or "completed",
        user_ended_reason=final.get("user_reason"),
        error=final.get("error"),
        turns=final["turn"],
        usage={role.value: usage for role, usage in meter.by_role.items()},
        world=conversation.world.trace() if conversation.world is not None else None,
        voice=TranscriptVoice(
            synthesizer=voice.synthesizer.name, recognizer=voice.recognizer.name, min_confidence=voice.min_confidence
        )
        if voice is not None
        else None,
        started_at=final.get("started_at", started),
        finished_at=utc_now(),
    )


async def _run(
    conversation: Conversation, initial: State, config: Any, checkpointer: Any, thread_id: str | None
) -> State:
    """The conversation's final state."""
    # A new thread (every conversation of a new run) has no checkpoint: one read says so, without LangGraph's
    # restoring of a state snapshot.
    fresh = checkpointer is None or not await _has_checkpoint(checkpointer, thread_id)
    if fresh and conversation.initiator() == "user":
        # The first turn runs before the graph, as the graph's first step would: a run's first conversations talk
        # while LangGraph loads (see simulator.engine._imports). The graph goes on from the state the turn leaves
        # (its input checkpoint holds that turn, so a crash in the second turn resumes there).
        update, ended = await step(turn_node, initial, config)
        initial = applied(initial, update)
        if ended:
            return initial
    await graph_loaded()
    # Ambient LangSmith settings would send the graph's runs (the conversation's text) off this machine.
    with engine_untraced():
        return await _through_graph(conversation, initial, config, checkpointer, fresh)


async def _through_graph(
    conversation: Conversation, initial: State, config: Any, checkpointer: Any, fresh: bool
) -> State:
    """The conversation's final state, the rest of it run through the graph."""
    graph = compiled_graph(checkpointer)
    if checkpointer is None:
        final: State = await graph.ainvoke(initial, config=config)
        return final
    saved = None if fresh else await graph.aget_state(config)
    earlier = [
        call
        for event in (saved.values.get("events", []) if saved is not None and saved.values else [])
        if isinstance(event, AgentEvent)
        for call in event.tool_calls
    ]
    if conversation.world is not None:
        # The world is rebuilt from the seed and what the recorded calls changed: no tool runs again.
        apply_changes(conversation.world, (change for call in earlier if call.world for change in call.world.changes))
    if saved is not None and saved.values and not saved.next:
        # Finished before a crash, its result not stored yet: the transcript is here, run nothing again.
        done: State = saved.values
        return done
    resume = saved is not None and bool(saved.next)
    if resume:
        # Simulated tools answer consistently with the calls made before the crash.
        conversation.router.remember(earlier)
    resumed: State = await graph.ainvoke(None if resume else initial, config=config, durability="sync")
    return resumed


async def _has_checkpoint(checkpointer: Any, thread_id: str | None) -> bool:
    has = getattr(checkpointer, "has_thread", None)
    if has is not None:
        return bool(has(thread_id))
    # Another checkpointer: read through the copy that knows the state's types (see registered).
    return await registered(checkpointer, State).aget_tuple({"configurable": {"thread_id": thread_id}}) is not None


async def forget(checkpointer: Any, thread_id: str) -> None:
    """Delete a finished conversation's checkpoints (each holds the whole state: they grow with the square of
    the conversation's length). Call it once the conversation's result is stored."""
    await checkpointer.adelete_thread(thread_id)
