"""OpenTelemetry spans of a run, built after each conversation from its stored transcript and timings.

One trace per run: a ``simulator run`` span, a ``conversation`` span per conversation under it, a ``turn`` span per
turn, and under each turn the agent's reply (``invoke_agent``, its tool calls ``execute_tool`` under it) and the
model calls made meanwhile (``chat``: the simulated user, the judge, a litellm agent). Judge calls made after the
last turn (scoring) sit under the conversation. Names and attributes follow the OpenTelemetry GenAI semantic
conventions (``gen_ai.operation.name``, ``gen_ai.request.model``, ``gen_ai.usage.input_tokens``,
``gen_ai.tool.name`` ...); Simulator's own facts (case, persona, outcome) are ``simulator.*`` attributes.

Spans are plain data in the OTLP/JSON mapping of ``ExportTraceServiceRequest`` (ids in hex, times as strings of
nanoseconds since the epoch). Every text is redacted, then shortened (:func:`simulator.safety.redacted_and_shortened`);
the exporter redacts the whole request once more. Nothing here runs while a conversation does.
"""

from __future__ import annotations

import hashlib
import json
import secrets
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from simulator._version import __version__
from simulator.llm import ModelCall
from simulator.models.run import RunRecord, StoredResult
from simulator.models.transcript import AgentEvent, ErrorEvent, InputEvent, Transcript, UserEvent
from simulator.safety import redacted_and_shortened

#: The longest text kept in one attribute (a message, a tool's arguments or result), after redaction.
TEXT_LIMIT = 8000
#: OTLP span kinds.
INTERNAL, CLIENT = 1, 3
#: OTLP status codes.
STATUS_ERROR = 2


def trace_id(run_id: str) -> str:
    """The run's trace id (32 hex digits), the same for every process that runs part of it."""
    return hashlib.sha256(f"simulator run {run_id}".encode()).hexdigest()[:32]


def new_span_id() -> str:
    """A fresh span id (16 hex digits)."""
    return secrets.token_hex(8)


def nanos(moment: datetime) -> int:
    """``moment`` in nanoseconds since the epoch."""
    return int(moment.timestamp()) * 1_000_000_000 + moment.microsecond * 1000


def _text(value: str) -> str:
    return redacted_and_shortened(value, TEXT_LIMIT)


def _value(value: Any) -> dict[str, Any]:
    """An attribute value as OTLP/JSON's ``AnyValue``."""
    if isinstance(value, bool):
        return {"boolValue": value}
    if isinstance(value, int):
        return {"intValue": str(value)}
    if isinstance(value, float):
        return {"doubleValue": value}
    if isinstance(value, list | tuple):
        return {"arrayValue": {"values": [_value(item) for item in value]}}
    return {"stringValue": _text(str(value))}


def attributes(values: dict[str, Any]) -> list[dict[str, Any]]:
    """Attributes as OTLP/JSON's ``KeyValue`` list; ``None`` values are left out."""
    return [{"key": key, "value": _value(value)} for key, value in values.items() if value is not None]


@dataclass
class Span:
    """One span before it is written as OTLP/JSON."""

    trace: str
    id: str
    parent: str | None
    name: str
    start: int
    end: int
    attrs: dict[str, Any]
    kind: int = INTERNAL
    error: str | None = None
    events: list[dict[str, Any]] | None = None

    def otlp(self) -> dict[str, Any]:
        """The span in the OTLP/JSON mapping."""
        data: dict[str, Any] = {
            "traceId": self.trace,
            "spanId": self.id,
            "name": _text(self.name),
            "kind": self.kind,
            "startTimeUnixNano": str(self.start),
            "endTimeUnixNano": str(max(self.start, self.end)),
            "attributes": attributes(self.attrs),
        }
        if self.parent is not None:
            data["parentSpanId"] = self.parent
        if self.events:
            data["events"] = self.events
        if self.error is not None:
            data["status"] = {"code": STATUS_ERROR, "message": _text(self.error)}
        return data


def export_request(spans: Iterable[dict[str, Any]]) -> dict[str, Any]:
    """An ``ExportTraceServiceRequest`` (OTLP/JSON) holding ``spans``, from the ``simulator`` service."""
    return {
        "resourceSpans": [
            {
                "resource": {"attributes": attributes({"service.name": "simulator"})},
                "scopeSpans": [{"scope": {"name": "simulator", "version": __version__}, "spans": list(spans)}],
            }
        ]
    }


def run_span(record: RunRecord, span_id: str, start: int, end: int, status: str) -> dict[str, Any]:
    """The span of the run (or of the part of it this process ran)."""
    return Span(
        trace=trace_id(record.id), id=span_id, parent=None, name=f"simulator run {record.id}", start=start, end=end,
        attrs={
            "simulator.run.id": record.id,
            "simulator.run.status": status,
            "simulator.run.planned": len(record.plan),
            "simulator.suites": [snapshot.suite.name for snapshot in record.snapshot],
            "simulator.agent_version": record.agent_version,
        },
        error=None if status == "completed" else f"run {status}",
    ).otlp()  # fmt: skip


@dataclass(frozen=True)
class AgentInfo:
    """What the spans say about the agent under test."""

    name: str
    model: str | None = None


def _provider(model: str) -> str | None:
    provider, slash, _ = model.partition("/")
    return provider if slash else None


def _messages(role: str, texts: Sequence[str], finish: str | None = None) -> str:
    """Messages in the GenAI conventions' JSON form (``gen_ai.input.messages`` / ``gen_ai.output.messages``)."""
    message: dict[str, Any] = {"role": role, "parts": [{"type": "text", "content": _text(text)} for text in texts]}
    if finish is not None:
        message["finish_reason"] = finish
    return json.dumps([message], ensure_ascii=False)


def conversation_spans(
    stored: StoredResult, run_span_id: str, agent: AgentInfo, calls: Sequence[ModelCall] = ()
) -> list[dict[str, Any]]:
    """The spans of one stored conversation: the conversation, its turns, the agent's replies, tool calls and
    model calls (``calls``: those logged while it ran; none for a conversation run elsewhere)."""
    transcript = stored.result.transcript
    trace = trace_id(stored.run_id)
    conversation_id = f"{stored.run_id}:{stored.key}"
    start = nanos(transcript.started_at)
    end = max(nanos(transcript.finished_at or stored.finished), nanos(stored.finished))
    start = min([start, *(call.started_ns for call in calls)])
    end = max([end, *(call.ended_ns for call in calls)])
    usage = transcript.usage
    conversation = Span(
        trace=trace, id=new_span_id(), parent=run_span_id, name=f"conversation {stored.case}", start=start, end=end,
        attrs={
            "gen_ai.conversation.id": conversation_id,
            "simulator.case": stored.case,
            "simulator.kind": transcript.kind,
            "simulator.persona": stored.persona,
            "simulator.repeat": stored.repeat,
            "simulator.outcome": stored.outcome,
            "simulator.reasons": list(stored.result.reasons) or None,
            "simulator.stop_reason": transcript.stop_reason,
            "simulator.turns": transcript.turns,
            "gen_ai.usage.input_tokens": sum(role.prompt_tokens for role in usage.values()),
            "gen_ai.usage.output_tokens": sum(role.completion_tokens for role in usage.values()),
        },
        error=transcript.error if stored.outcome == "error" else None,
    )  # fmt: skip
    spans = [conversation]
    windows: list[Span] = []  # the turns and agent replies, innermost last within a turn: where model calls go
    for turn_span, agent_spans, tool_spans in _turns(transcript, trace, conversation, agent):
        spans.append(turn_span)
        windows.append(turn_span)
        spans.extend(agent_spans)
        windows.extend(agent_spans)
        spans.extend(tool_spans)
    for call in calls:
        parent = _innermost(windows, call.started_ns) or conversation
        spans.append(_call_span(call, trace, parent.id, conversation_id))
    return [span.otlp() for span in spans]


def _innermost(windows: Sequence[Span], moment: int) -> Span | None:
    """The last-opened span whose time holds ``moment`` (an agent reply within its turn wins over the turn)."""
    found = None
    for window in windows:
        if window.start <= moment <= window.end:
            found = window
    return found


def _turns(
    transcript: Transcript, trace: str, conversation: Span, agent: AgentInfo
) -> Iterable[tuple[Span, list[Span], list[Span]]]:
    """Each turn's span, its agent replies' spans and their tool calls' spans, in order. A turn runs from the end
    of the one before (the conversation's start for the first) to its last event: the user model's call for the
    turn falls inside it."""
    by_turn: dict[int, list[Any]] = {}
    for event in transcript.events:
        by_turn.setdefault(event.turn, []).append(event)
    previous_end = conversation.start
    conversation_id = conversation.attrs["gen_ai.conversation.id"]
    for turn in sorted(by_turn):
        events = by_turn[turn]
        end = max([previous_end, *(nanos(event.at) for event in events)])
        errors = [event for event in events if isinstance(event, ErrorEvent)]
        turn_span = Span(
            trace=trace, id=new_span_id(), parent=conversation.id, name=f"turn {turn}", start=previous_end, end=end,
            attrs={"gen_ai.conversation.id": conversation_id, "simulator.turn": turn},
            error=f"{errors[0].where}: {errors[0].message}" if errors else None,
            events=[
                {
                    "timeUnixNano": str(nanos(event.at)),
                    "name": "exception",
                    "attributes": attributes({"exception.message": event.message, "simulator.where": event.where}),
                }
                for event in errors
            ] or None,
        )  # fmt: skip
        previous_end = end
        said: list[str] = []
        agent_spans: list[Span] = []
        tool_spans: list[Span] = []
        for event in events:
            if isinstance(event, UserEvent):
                said.append(event.text)
            elif isinstance(event, InputEvent):
                said.append(f"[event {event.name}] {json.dumps(event.payload, ensure_ascii=False)}")
            elif isinstance(event, AgentEvent):
                reply = _agent_span(event, said, trace, turn_span, agent)
                agent_spans.append(reply)
                tool_spans.extend(_tool_spans(event, trace, reply))
                said = []
        yield turn_span, agent_spans, tool_spans


def _agent_span(event: AgentEvent, said: Sequence[str], trace: str, turn: Span, agent: AgentInfo) -> Span:
    end = nanos(event.at)
    start = max(turn.start, end - int(event.latency_ms * 1_000_000))
    return Span(
        trace=trace, id=new_span_id(), parent=turn.id, name=f"invoke_agent {agent.name}", start=start, end=end,
        kind=CLIENT,
        attrs={
            "gen_ai.operation.name": "invoke_agent",
            "gen_ai.agent.name": agent.name,
            "gen_ai.conversation.id": turn.attrs["gen_ai.conversation.id"],
            "gen_ai.request.model": agent.model,
            "gen_ai.provider.name": _provider(agent.model) if agent.model else None,
            "gen_ai.input.messages": _messages("user", said) if said else None,
            "gen_ai.output.messages": _messages("assistant", event.messages, "stop") if event.messages else None,
            "simulator.handoff": event.handoff,
        },
    )  # fmt: skip


def _tool_spans(event: AgentEvent, trace: str, reply: Span) -> list[Span]:
    """The reply's tool calls, one after the other from its start (the transcript keeps each call's duration,
    not its start)."""
    spans: list[Span] = []
    at = reply.start
    for call in event.tool_calls:
        took = int(call.duration_ms * 1_000_000)
        spans.append(
            Span(
                trace=trace, id=new_span_id(), parent=reply.id, name=f"execute_tool {call.name}", start=at,
                end=min(reply.end, at + took),
                attrs={
                    "gen_ai.operation.name": "execute_tool",
                    "gen_ai.tool.name": call.name,
                    "gen_ai.tool.call.id": call.id,
                    "gen_ai.tool.type": "function",
                    "gen_ai.tool.call.arguments": call.arguments_json,
                    "gen_ai.tool.call.result": call.answer_text,
                    "simulator.tool.status": call.status,
                },
                error=None if call.answered else (call.error or call.status),
            )
        )  # fmt: skip
        at = min(reply.end, at + took)
    return spans


def _call_span(call: ModelCall, trace: str, parent: str, conversation_id: str) -> Span:
    return Span(
        trace=trace, id=new_span_id(), parent=parent, name=f"chat {call.model}", start=call.started_ns,
        end=call.ended_ns, kind=CLIENT,
        attrs={
            "gen_ai.operation.name": "chat",
            "gen_ai.provider.name": _provider(call.model),
            "gen_ai.request.model": call.model,
            "gen_ai.conversation.id": conversation_id,
            "gen_ai.usage.input_tokens": call.usage.prompt_tokens,
            "gen_ai.usage.output_tokens": call.usage.completion_tokens,
            "gen_ai.response.finish_reasons": [call.finish_reason] if call.finish_reason else None,
            "simulator.role": call.role,
            "simulator.cached": call.cached,
        },
    )  # fmt: skip
