"""The conversation so far as a production chat client would send it, rebuilt from the transcript's events.

Each earlier agent turn comes back as the adapter itself built it within the turn: every assistant message that
asked for tools (OpenAI form: ``tool_calls`` with the recorded ids and the arguments' JSON text as sent), one
``tool`` message per call with exactly the content the agent got back (a result, a failure, the "not executed in
test mode" answer), then the turn's text messages. Rebuilt every turn rather than kept: the events hold it all, and
a checkpoint stores the state once.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from simulator.agents._base import Message, event_message
from simulator.models import EventSpec
from simulator.models.transcript import AgentEvent, InputEvent, ToolCallRecord, ToolRound, TranscriptEvent, UserEvent

#: Each agent event's messages as built (by the event's ``id``, with the event itself, so the id is not reused while
#: the entry lives): one conversation's, kept by the conversation.
BuiltTurns = dict[int, tuple[AgentEvent, list[Message]]]


def conversation_history(events: Iterable[TranscriptEvent], built: BuiltTurns | None = None) -> list[Message]:
    """What the agent has seen so far, as chat messages: the user's messages and events, and its own turns.

    ``built`` keeps each agent turn's messages from one call to the next (events are never changed once made), and
    later histories share them: an adapter reads them, and copies what it changes or hands to agent code
    (:func:`copied`): cheaper than copying every history, or serialising every earlier result again, each turn.
    """
    built = {} if built is None else built
    messages: list[Message] = []
    for event in events:
        if isinstance(event, UserEvent):
            messages.append({"role": "user", "content": event.text})
        elif isinstance(event, InputEvent):
            messages.append(event_message(EventSpec(name=event.name, payload=event.payload)))
        elif isinstance(event, AgentEvent):
            entry = built.get(id(event))
            if entry is None or entry[0] is not event:
                entry = built[id(event)] = (
                    event,
                    turn_messages(event.turn, event.messages, event.tool_calls, event.tool_rounds),
                )
            messages += entry[1]
    return messages


def copied(message: Message) -> Message:
    """A copy of ``message`` that agent code may change without changing the history: its tool calls copied too
    (the rest of a history message is text, or an event made afresh each turn)."""
    calls = message.get("tool_calls")
    if not isinstance(calls, list):
        return dict(message)
    return {
        **message,
        "tool_calls": [
            {**call, "function": dict(call["function"])} if isinstance(call.get("function"), dict) else dict(call)
            for call in calls
            if isinstance(call, dict)
        ],
    }


def turn_messages(
    turn: int, texts: Sequence[str], calls: Sequence[ToolCallRecord], rounds: Sequence[ToolRound] | None
) -> list[Message]:
    """One agent turn as chat messages: ``rounds`` say which calls each message asking for tools made (and whether
    it had text); calls no round names (``rounds`` None: all of them) go in one message without text. Then the
    texts no round took, one assistant message each."""
    ids = [call.id or f"call_{turn}_{index}" for index, call in enumerate(calls)]
    left = list(range(len(calls)))
    said = iter(texts)
    messages: list[Message] = []
    for round_ in rounds or ():
        taken = [index for wanted in round_.calls if (index := _take(left, ids, wanted)) is not None]
        content = next(said, "") if round_.content == "text" else "" if round_.content == "empty" else None
        if taken:
            _add_round(messages, content, [(ids[index], calls[index]) for index in taken])
        elif content:
            messages.append({"role": "assistant", "content": content})
    if left:
        _add_round(messages, None, [(ids[index], calls[index]) for index in left])
    messages.extend({"role": "assistant", "content": text} for text in said)
    return messages


def _take(left: list[int], ids: list[str], wanted: str) -> int | None:
    """The first call not yet placed whose id is ``wanted`` (removed from ``left``)."""
    for position, index in enumerate(left):
        if ids[index] == wanted:
            del left[position]
            return index
    return None


def _add_round(messages: list[Message], content: str | None, calls: list[tuple[str, ToolCallRecord]]) -> None:
    messages.append(
        {
            "role": "assistant",
            "content": content,
            "tool_calls": [
                {"id": id_, "type": "function", "function": {"name": call.name, "arguments": call.arguments_json}}
                for id_, call in calls
            ],
        }
    )
    messages.extend({"role": "tool", "tool_call_id": id_, "content": call.answer_text} for id_, call in calls)
