"""Helpers shared by the adapters that speak the chat-completions message format (http, litellm, langgraph)."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Mapping, Sequence
from typing import Any, Literal

from pydantic import JsonValue

from simulator.agents._base import Message
from simulator.errors import AgentError
from simulator.models import ToolDeclaration
from simulator.models.transcript import ToolRound
from simulator.tools import ToolHandle

#: Tool rounds allowed in one turn; an agent that keeps calling tools past this is stuck in a loop.
MAX_TOOL_ROUNDS = 10


def function_tools(declared: Sequence[ToolDeclaration]) -> list[dict[str, Any]]:
    """The declared tools as OpenAI function tools."""
    return [
        {
            "type": "function",
            "function": {"name": tool.name, "description": tool.description, "parameters": tool.parameters},
        }
        for tool in declared
    ]


def session_text(session: Mapping[str, JsonValue]) -> str:
    """How session parameters are shown to a model: one line of JSON, keys sorted so requests are stable."""
    return f"Session parameters: {json.dumps(session, ensure_ascii=False, sort_keys=True)}"


async def answer_tool_call(
    tools: ToolHandle,
    call_id: str,
    name: str,
    arguments: dict[str, Any] | str | None,
    *,
    sent: str,
    timeout: float | None = None,
) -> Message:
    """Route one tool call and return the ``tool`` message that carries its result back to the model.

    The router is called with the raw arguments and the model's call id (not through ``ToolHandle.acall``):
    malformed JSON must be recorded as such rather than fail here, and the record's id must match the
    ``tool_call_id`` the model sees. The content is the record's
    :attr:`~simulator.models.transcript.ToolCallRecord.answer_text`: a ``str`` result as it is, any other JSON
    value serialised exactly once (so a tool returning JSON text and one returning the same data give the agent
    the same bytes). ``sent`` is the arguments' text in the model's tool call: the record keeps it when it is
    not the arguments written out again, so the next turn's history shows the call as the model made it.

    A live tool is bounded by the router (the agent's ``timeout``: past it the call is ``failed``, the tool is
    left running in its thread and the agent is told). A router without a bound (built outside a conversation)
    gets ``timeout`` here: the adapters that retry their own requests give the engine a turn bound long enough
    for the retries, so the tool needs its own; past it the turn ends as an error.
    """
    bound = timeout if tools.router.timeout is None else None
    try:
        record = await asyncio.wait_for(tools.router.route(name, arguments, call_id=call_id), bound)
    except TimeoutError:
        raise AgentError(f"the tool {name!r} did not return within {timeout:g} s (the agent's `timeout`)") from None
    if sent != record.arguments_json:
        record.arguments_text = sent
    return {"role": "tool", "tool_call_id": call_id, "content": record.answer_text}


def tool_round(ids: Sequence[str], content: Any) -> ToolRound:
    """How one assistant message that asked for tools is kept: its calls' ids and what its ``content`` was (text,
    ``""`` or ``None``; content parts count as their text, which is the reply's message)."""
    kind: Literal["text", "empty", "null"] = "null" if content is None else "text" if text_of(content) else "empty"
    return ToolRound(calls=list(ids), content=kind)


def text_of(content: Any) -> str:
    """Message content as text: a string, or the text parts of a list of content parts, joined."""
    if isinstance(content, str):
        return content
    if not isinstance(content, list):
        return ""
    texts: list[str] = []
    for part in content:
        if isinstance(part, str):
            texts.append(part)
        elif isinstance(part, Mapping) and part.get("type", "text") == "text" and isinstance(part.get("text"), str):
            texts.append(part["text"])
    return "".join(texts)
