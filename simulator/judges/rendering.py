"""A conversation as the judge reads it: one JSON object per event, one event per line.

Roles: ``user`` (text), ``agent`` (one message: text), ``tool_call`` (name, arguments, status, and result or
error), ``event`` (name, payload), ``handoff`` (to), and, in the view of a turn to judge, ``variables`` (the
session variables the agent set: values). An event of a turn to judge carries ``"judge": true``.

Every string is a JSON string (:func:`simulator.fence.json_line`): a newline, a quotation mark or a line
separator in an agent's message stays inside that message, so nothing the agent writes can end its event or
pass for another one. The lines go into a fenced section of the request (:mod:`simulator.fence`).
"""

from __future__ import annotations

import json
from collections.abc import Collection, Sequence
from typing import Any

from pydantic import JsonValue

from simulator.fence import json_line
from simulator.models.transcript import AgentEvent, InputEvent, ToolCallRecord, TranscriptEvent, UserEvent

__all__ = ["event_records", "render_conversation"]


def render_conversation(
    events: Sequence[TranscriptEvent],
    *,
    marked: Collection[TranscriptEvent] = (),
    variables: bool = False,
) -> str:
    """``events`` as JSON lines; the events in ``marked`` (by identity) carry ``"judge": true`` and, for an
    agent turn, the variables it set. ``variables`` shows them for every agent turn."""
    judged = {id(event) for event in marked}
    lines: list[str] = []
    for event in events:
        mark = id(event) in judged
        lines.extend(json_line(record) for record in event_records(event, judge=mark, variables=variables or mark))
    return "\n".join(lines)


def event_records(event: TranscriptEvent, *, judge: bool = False, variables: bool = False) -> list[dict[str, Any]]:
    """The JSON objects of one event (none for the engine's own check and error events)."""
    records: list[dict[str, Any]] = []
    if isinstance(event, UserEvent):
        records.append({"turn": event.turn, "role": "user", "text": event.text})
    elif isinstance(event, InputEvent):
        records.append({"turn": event.turn, "role": "event", "name": event.name, "payload": event.payload})
    elif isinstance(event, AgentEvent):
        records.extend(_call_record(event.turn, call) for call in event.tool_calls)
        records.extend({"turn": event.turn, "role": "agent", "text": message} for message in event.messages)
        if event.handoff:
            records.append({"turn": event.turn, "role": "handoff", "to": event.handoff})
        if variables and event.variables:
            records.append({"turn": event.turn, "role": "variables", "values": event.variables})
    if judge:
        for record in records:
            record["judge"] = True
    return records


def _call_record(turn: int, call: ToolCallRecord) -> dict[str, Any]:
    record: dict[str, Any] = {
        "turn": turn,
        "role": "tool_call",
        "name": call.name,
        "arguments": call.arguments,
        "status": call.status,
    }
    if call.arguments_error:
        record["arguments_error"] = call.arguments_error
    if call.error:
        record["error"] = call.error
    else:
        record["result"] = _as_got(call.result)
    return record


def _as_got(result: JsonValue) -> JsonValue:
    """A tool's result as the agent got it: JSON text that a tool returned as a string is shown as that JSON
    (an object or a list), not as a string literal with every quotation mark escaped."""
    if isinstance(result, str) and result.lstrip()[:1] in ("{", "["):
        try:
            parsed: JsonValue = json.loads(result)
        except ValueError:
            return result
        return parsed
    return result
