"""The ``langgraph`` adapter: a compiled LangGraph graph whose state holds a list of chat messages.

Each turn the whole conversation is sent as ``{messages_key: [{"role", "content"}, ...]}``: graphs without a
checkpointer (the common case) remember nothing between calls, so the history must come with every call.
Each call runs on a fresh ``thread_id`` (``<conversation>-<turn>``), so a graph compiled *with* a checkpointer
does not append the resent history to the state it saved for the previous turn. The session parameters are
passed in the run config, as ``config["configurable"]["session"]``, where any node can read them.

The reply is read back from the output state: the messages after the ones sent. AI messages with text become
the reply's messages. The graph runs its own tools, so they cannot be faked; their calls and results are
recorded on the tool router as ``executed`` (or ``failed``), so the transcript and the judges still see them.
A tool message's text is recorded as it is, not parsed (the rule for every tool result: a ``str`` stays
unchanged, see :mod:`simulator.tools`).

LangGraph itself is not imported here (only ``simulator/engine/`` does): messages are read by duck typing,
as langchain message objects (``.type``, ``.content``, ``.tool_calls``, ``.tool_call_id``) or plain dicts.
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from simulator.agents._base import AgentInput, AgentReply
from simulator.agents._chat import text_of
from simulator.agents.python_agent import import_ref
from simulator.errors import AgentError
from simulator.models import LanggraphAgent
from simulator.tools import ToolRouter

_SENT_ROLES = frozenset({"system", "user", "assistant"})


class LanggraphAdapter:
    """Invokes one compiled graph for one conversation."""

    def __init__(self, config: LanggraphAgent, *, code_folders: Sequence[Path] = ()) -> None:
        self.config = config
        graph = import_ref(config.graph, what="graph", folders=code_folders)
        if not callable(getattr(graph, "ainvoke", None)):
            raise AgentError(
                f"{config.graph!r} is not a compiled LangGraph graph (it has no `ainvoke`); point the agent config "
                "at the result of `builder.compile()`, not at the StateGraph builder"
            )
        self._graph: Any = graph
        self._conversation = uuid.uuid4().hex
        self._calls = 0

    async def respond(self, request: AgentInput) -> AgentReply:
        """Run the graph on the whole conversation and read back what it added."""
        key = self.config.messages_key
        # Tool messages of earlier turns are not in the engine's history, and a remote-style "tool" message
        # without its assistant tool call would be rejected by the graph's message conversion.
        sent = [
            {"role": message["role"], "content": text_of(message.get("content"))}
            for message in request.messages
            if message.get("role") in _SENT_ROLES
        ]
        self._calls += 1
        run_config = {"configurable": {"thread_id": f"{self._conversation}-{self._calls}", "session": request.session}}
        try:
            state = await self._graph.ainvoke({key: sent}, config=run_config)
        except Exception as exc:
            raise AgentError(f"graph {self.config.graph!r} raised {type(exc).__name__}: {exc}") from exc
        output = state.get(key) if isinstance(state, Mapping) else None
        if not isinstance(output, list):
            raise AgentError(
                f"graph {self.config.graph!r} returned no {key!r} list in its state (got {type(state).__name__}); "
                "set `messages_key` to the state key that holds the messages"
            )
        return _read_new_messages(output[len(sent) :], request.tools.router)

    async def aclose(self) -> None:
        """Nothing to release: the graph is shared and owns its own resources."""


def _read_new_messages(messages: list[Any], router: ToolRouter) -> AgentReply:
    """The reply texts of the new messages; their tool calls and results are recorded on ``router``."""
    texts: list[str] = []
    pending: dict[str, tuple[str, dict[str, Any] | str | None]] = {}
    for message in messages:
        kind = _kind(message)
        if kind == "ai":
            text = text_of(_field(message, "content"))
            if text:
                texts.append(text)
            for call in _field(message, "tool_calls") or []:
                call_id, name, arguments = _tool_call(call)
                pending[call_id] = (name, arguments)
            for call in _field(message, "invalid_tool_calls") or []:
                # langchain keeps calls with unparsable arguments apart; the graph cannot have run them.
                call_id, name, arguments = _tool_call(call)
                error = _field(call, "error") or "the arguments are not valid JSON: the tool was not run"
                router.record_external(name, arguments, None, call_id=call_id or None, error=str(error))
        elif kind == "tool":
            call_id = str(_field(message, "tool_call_id") or "")
            name, arguments = pending.pop(call_id, (str(_field(message, "name") or "unknown"), None))
            text = text_of(_field(message, "content"))
            if _field(message, "status") == "error":
                router.record_external(name, arguments, None, call_id=call_id or None, error=text or "the tool failed")
            else:
                router.record_external(name, arguments, text, call_id=call_id or None)
    for call_id, (name, arguments) in pending.items():
        router.record_external(
            name,
            arguments,
            None,
            call_id=call_id or None,
            error="the graph finished without a result for this tool call",
        )
    return AgentReply(messages=texts)


def _field(value: Any, name: str) -> Any:
    """``value.name`` for message objects, ``value[name]`` for dicts."""
    if isinstance(value, Mapping):
        return value.get(name)
    return getattr(value, name, None)


def _tool_call(call: Any) -> tuple[str, str, dict[str, Any] | str | None]:
    """Id, name and arguments of a tool call in langchain form (name, args) or OpenAI form (function)."""
    function = _field(call, "function")
    if function is not None:
        name, arguments = _field(function, "name"), _field(function, "arguments")
    else:
        name, arguments = _field(call, "name"), _field(call, "args")
    if not isinstance(arguments, dict | str):
        arguments = None
    return str(_field(call, "id") or ""), str(name or "unknown"), arguments


def _kind(message: Any) -> str:
    """``ai``, ``tool``, ``human``, ``system``: a message object's ``type``, or a dict's role in those terms."""
    kind = _field(message, "type")
    if isinstance(kind, str):
        return kind
    role = str(_field(message, "role"))
    return {"assistant": "ai", "user": "human"}.get(role, role)

