"""What every adapter for the agent under test provides, and what it is given each turn."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Protocol

from pydantic import JsonValue

from simulator.models import EventSpec
from simulator.tools import ToolHandle

#: OpenAI chat-completions style messages: {"role": "user" | "assistant" | "tool" | "system", "content": ...}.
#: An event appears as a user message whose content reads ``[event: NAME] {payload}`` and which carries the
#: event itself under the extra key ``"event"`` (adapters that talk to remote APIs drop that key).
Message = dict[str, Any]


@dataclass
class AgentInput:
    """Everything the agent gets for one turn."""

    messages: list[Message]
    session: dict[str, JsonValue]
    tools: ToolHandle
    event: EventSpec | None = None
    case: str = ""
    turn: int = 0


@dataclass
class AgentReply:
    """The agent's answer to one turn. Tool calls are not here: the tool handle records them as they happen."""

    messages: list[str] = field(default_factory=list)
    handoff: str | None = None
    variables: dict[str, JsonValue] = field(default_factory=dict)


class AgentAdapter(Protocol):
    """One conversation's connection to the agent under test. Made fresh for every conversation."""

    async def respond(self, request: AgentInput) -> AgentReply:
        """The agent's reply to the conversation so far (and the event, if one was sent)."""
        ...

    async def aclose(self) -> None:
        """Release what the adapter holds (HTTP clients, threads)."""
        ...


def turn_timeout(adapter: AgentAdapter, timeout: float) -> float:
    """How long the engine lets one turn of ``adapter`` take, given the agent's ``timeout``.

    That is ``timeout`` itself, unless the adapter bounds each of its own requests by ``timeout`` and retries
    them (http, litellm): its ``turn_timeout`` then covers every attempt and every wait between them.
    """
    budget = getattr(adapter, "turn_timeout", None)
    return float(budget) if isinstance(budget, int | float) and not isinstance(budget, bool) else timeout


def event_message(event: EventSpec) -> Message:
    """The chat message that stands for an event in the conversation history."""
    import json

    payload = f" {json.dumps(event.payload, ensure_ascii=False)}" if event.payload else ""
    return {"role": "user", "content": f"[event: {event.name}]{payload}", "event": event.model_dump()}


def wire_messages(messages: list[Message]) -> list[Message]:
    """Messages as a remote chat API accepts them: only standard keys."""
    allowed = {"role", "content", "tool_calls", "tool_call_id", "name"}
    return [{key: value for key, value in message.items() if key in allowed} for message in messages]


def normalize_reply(value: Any) -> AgentReply:
    """Accept what agent code naturally returns: text, a list of texts, a mapping, or an AgentReply."""
    if isinstance(value, AgentReply):
        return value
    if value is None:
        return AgentReply()
    if isinstance(value, str):
        return AgentReply(messages=[value])
    if isinstance(value, list) and all(isinstance(item, str) for item in value):
        return AgentReply(messages=list(value))
    if isinstance(value, dict):
        content = value.get("messages", value.get("content"))
        if content is None:
            messages: list[str] = []
        elif isinstance(content, str):
            messages = [content]
        elif isinstance(content, list) and all(isinstance(item, str) for item in content):
            messages = list(content)
        else:
            raise TypeError("`content` / `messages` must be text or a list of texts")
        handoff = value.get("handoff")
        variables = value.get("variables") or {}
        if handoff is not None and not isinstance(handoff, str):
            raise TypeError("`handoff` must be text: 'human' or the name of an agent")
        if not isinstance(variables, dict):
            raise TypeError("`variables` must be a mapping")
        unknown = set(value) - {"messages", "content", "handoff", "variables", "role"}
        if unknown:
            raise TypeError(f"unknown keys in the reply: {', '.join(sorted(unknown))}")
        return AgentReply(messages=messages, handoff=handoff, variables=variables)
    raise TypeError(
        "an agent returns text, a list of texts, a mapping with `content`, or an AgentReply; "
        f"got {type(value).__name__}"
    )
