"""The ``langgraph`` adapter: a compiled LangGraph graph whose state holds a list of chat messages.

Each turn the whole conversation is sent as ``{messages_key: [{"role", "content"}, ...]}``: graphs without a
checkpointer (the common case) remember nothing between calls, so the history must come with every call. Earlier
tool calls come as assistant messages with ``tool_calls`` in langchain's form and ``tool`` messages with the
results (``AIMessage`` and ``ToolMessage`` once ``add_messages`` has read them), as a ``ToolNode`` left them.
Each call runs on a fresh ``thread_id`` (``<conversation>-<turn>``), so a graph compiled *with* a checkpointer
does not append the resent history to the state it saved for the previous turn. The run config carries the
session parameters as ``config["configurable"]["session"]`` and the conversation's tool handle as
``config["configurable"]["simulator_tools"]``, where any node can read them.

The graph's own tools go through the tool router like every other adapter's (:mod:`simulator.agents._graph_tools`):
its ``ToolNode`` calls are answered by fakes or ``not_executed`` in test mode, approval stops the case in live
mode, and every call is recorded. A tool the graph runs some other way is refused in test mode, before it runs
when it is a langchain tool, and the conversation ends in an error that says why.

The reply is read back from the output state: the messages after the ones sent. AI messages with text become
the reply's messages. Tool calls the router did not see (live mode: a node that runs tools itself) are recorded
from the messages as ``executed`` (or ``failed``), so the transcript and the judges still see them. A tool
message's text is recorded as it is, not parsed (the rule for every tool result: a ``str`` stays unchanged, see
:mod:`simulator.tools`).

LangGraph itself is not imported here (only ``simulator/engine/`` does): messages are read by duck typing,
as langchain message objects (``.type``, ``.content``, ``.tool_calls``, ``.tool_call_id``) or plain dicts.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from simulator.agents import agent_type
from simulator.agents._base import AgentInput, AgentReply
from simulator.agents._chat import text_of, tool_round
from simulator.agents._code import import_ref
from simulator.agents._graph_tools import (
    REMEDY,
    TOOLS_KEY,
    Refused,
    ToolRefused,
    describe_call,
    intercepted,
    refusal,
    refuse,
    tool_guard,
)
from simulator.agents._tracing import users_tracing
from simulator.errors import AgentError
from simulator.models import LanggraphAgent
from simulator.models.transcript import ToolCallRecord
from simulator.tools import ToolRouter

_SENT_ROLES = frozenset({"system", "user", "assistant", "tool"})

if TYPE_CHECKING:
    from simulator.llm import LLMClient


@agent_type("langgraph")
def _langgraph(
    config: LanggraphAgent, *, llm: LLMClient | None = None, code_folders: Sequence[Path] = ()
) -> LanggraphAdapter:
    return LanggraphAdapter(config, code_folders=code_folders)


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
        router = request.tools.router
        testing = router.mode == "test"
        reason = refusal(self._graph) if testing else None
        if reason is not None:
            raise AgentError(reason)
        key = self.config.messages_key
        sent = _graph_messages(request.messages)
        self._calls += 1
        guard = tool_guard(router)
        run_config = {
            "configurable": {
                "thread_id": f"{self._conversation}-{self._calls}",
                "session": request.session,
                TOOLS_KEY: request.tools,
            },
            "callbacks": [guard],
        }
        before = len(router.records)
        run = _Run()
        failure: Exception | None = None
        try:
            state = await self._invoke({key: sent}, run_config, run)
        except ToolRefused:
            state = None
        except Exception as exc:
            state, failure = None, exc
        refused: list[Refused] = guard.refused
        if refused and testing:
            self._refuse(
                refused[0].node, f"{describe_call(refused[0].name, refused[0].arguments)} was stopped before it ran"
            )
        for stopped in refused:
            # Live mode: a tool that needs a person's approval was stopped; the case stops there.
            await router.route(stopped.name, stopped.arguments, call_id=stopped.call_id)
        if failure is not None and not refused:
            raise AgentError(f"graph {self.config.graph!r} raised {type(failure).__name__}: {failure}") from failure
        if state is None:
            return AgentReply()
        output = state.get(key) if isinstance(state, Mapping) else None
        if not isinstance(output, list):
            raise AgentError(
                f"graph {self.config.graph!r} returned no {key!r} list in its state (got {type(state).__name__}); "
                "set `messages_key` to the state key that holds the messages"
            )
        reply, foreign = _read_new_messages(output[len(sent) :], router, router.records[before:], record=not testing)
        if foreign and testing:
            call_id, name, arguments = foreign[0]
            node = run.answered_in.get(call_id)
            self._refuse(node, f"it answered {describe_call(name, arguments)} itself, so the tool may have run")
        return reply

    def _refuse(self, node: str | None, what: str) -> None:
        """Refuse the graph in test mode, now and for the rest of the process."""
        where = f" in node {node!r}" if node else ""
        reason = f"graph {self.config.graph!r} runs tools{where} that Simulator cannot route ({what}); {REMEDY}"
        refuse(self._graph, reason)
        raise AgentError(reason)

    async def _invoke(self, state: dict[str, Any], config: dict[str, Any], run: _Run) -> Any:
        """Run the graph (its intercepted copy); note which node answered each tool call."""
        with users_tracing():  # the engine's graph is never traced; the user's follows the user's settings
            return await self._run(state, config, run)

    async def _run(self, state: dict[str, Any], config: dict[str, Any], run: _Run) -> Any:
        graph = intercepted(self._graph)
        if not callable(getattr(graph, "astream", None)) or not isinstance(getattr(graph, "nodes", None), Mapping):
            return await graph.ainvoke(state, config=config)
        latest: Any = None
        # What `ainvoke` does inside, plus the updates: they say which node wrote each tool message.
        async for mode, payload in graph.astream(state, config=config, stream_mode=["updates", "values"]):
            if mode == "values":
                latest = payload
            elif isinstance(payload, Mapping):
                for node, update in payload.items():
                    for call_id in _tool_message_ids(update):
                        run.answered_in.setdefault(call_id, str(node))
        return latest

    async def aclose(self) -> None:
        """Nothing to release: the graph is shared and owns its own resources."""


def _graph_messages(messages: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """The conversation as a graph's state takes it: ``{"role", "content"}`` dicts (text content, as langchain's
    message conversion wants it), an assistant message's tool calls in langchain's form (``name``, ``args``,
    ``id``: what ``add_messages`` makes an ``AIMessage``'s ``tool_calls`` of), and each tool result as a ``tool``
    message with its call's id and the tool's name (a ``ToolMessage``)."""
    sent: list[dict[str, Any]] = []
    names: dict[str, str] = {}
    for message in messages:
        role = message.get("role")
        if role not in _SENT_ROLES:
            continue
        converted: dict[str, Any] = {"role": role, "content": text_of(message.get("content"))}
        if role == "assistant" and message.get("tool_calls"):
            calls = [_langchain_call(call) for call in message["tool_calls"]]
            names.update((call["id"], call["name"]) for call in calls)
            converted["tool_calls"] = calls
        elif role == "tool":
            call_id = str(message.get("tool_call_id") or "")
            converted["tool_call_id"] = call_id
            if call_id in names:
                converted["name"] = names[call_id]
        sent.append(converted)
    return sent


def _langchain_call(call: Mapping[str, Any]) -> dict[str, Any]:
    """An OpenAI-form tool call as langchain writes one; arguments that are not a JSON object are kept as the
    router records them (``{"_raw": text}``), since langchain's ``args`` must be one."""
    function = call.get("function") or {}
    raw = function.get("arguments")
    try:
        args = json.loads(raw) if isinstance(raw, str) and raw.strip() else {}
    except ValueError:
        args = None
    if not isinstance(args, dict):
        args = {"_raw": raw}
    return {"name": str(function.get("name") or ""), "args": args, "id": str(call.get("id") or ""), "type": "tool_call"}


@dataclass
class _Run:
    """What one graph run showed besides its output: the node that wrote each tool message, by call id."""

    answered_in: dict[str, str] = field(default_factory=dict)


def _tool_message_ids(value: Any, depth: int = 0) -> list[str]:
    """The call ids of the tool messages in a node's update."""
    if depth > 4 or value is None or isinstance(value, str | bytes):
        return []
    if _kind(value) == "tool":
        return [str(_field(value, "tool_call_id") or "")]
    if isinstance(value, Mapping):
        items: Any = value.values()
    elif isinstance(value, list | tuple):
        items = value
    else:
        update = getattr(value, "update", None)  # a Command
        items = [update] if update is not None and not callable(update) else []
    return [call_id for item in items for call_id in _tool_message_ids(item, depth + 1)]


def _read_new_messages(
    messages: list[Any], router: ToolRouter, routed: Sequence[ToolCallRecord], *, record: bool = True
) -> tuple[AgentReply, list[tuple[str, str, dict[str, Any] | str | None]]]:
    """The reply texts of the new messages (with the tool rounds of its AI messages), and the tool calls the
    graph answered without the router.

    Calls the router already recorded (``routed``: by call id, or by name and arguments for calls a node routed
    through the tool handle) are not recorded again. The others are recorded on ``router`` when ``record`` is
    true (live mode); in test mode the answered ones are returned, since they should not have run.
    """
    texts: list[str] = []
    rounds: list[tuple[list[str], Any]] = []
    #: A call a node routed through the tool handle is recorded under an id of the router's.
    recorded_as: dict[str, str] = {}
    pending: dict[str, tuple[str, dict[str, Any] | str | None]] = {}
    foreign: list[tuple[str, str, dict[str, Any] | str | None]] = []
    calls = [call for message in messages if _kind(message) == "ai" for call in _field(message, "tool_calls") or []]
    call_ids = {_tool_call(call)[0] for call in calls}
    by_id = {item.id: item for item in routed if item.id in call_ids}
    by_call = [item for item in routed if item.id not in call_ids]

    def seen(call_id: str, name: str, arguments: dict[str, Any] | str | None) -> bool:
        if by_id.pop(call_id, None) is not None:
            return True
        normalized = _normalized(arguments)
        for index, item in enumerate(by_call):
            if item.name == name and item.arguments == normalized:
                del by_call[index]
                recorded_as[call_id] = item.id
                return True
        return False

    for message in messages:
        kind = _kind(message)
        if kind == "ai":
            content = _field(message, "content")
            text = text_of(content)
            if text:
                texts.append(text)
            asked = [*(_field(message, "tool_calls") or []), *(_field(message, "invalid_tool_calls") or [])]
            if asked:
                rounds.append(([_tool_call(call)[0] for call in asked], content))
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
            if seen(call_id, name, arguments):
                continue
            if not record:
                foreign.append((call_id, name, arguments))
                continue
            text = text_of(_field(message, "content"))
            if _field(message, "status") == "error":
                router.record_external(name, arguments, None, call_id=call_id or None, error=text or "the tool failed")
            else:
                router.record_external(name, arguments, text, call_id=call_id or None)
    for call_id, (name, arguments) in pending.items():
        if call_id in by_id:
            continue  # routed (a tool that needs approval, or a Command without a tool message)
        router.record_external(
            name,
            arguments,
            None,
            call_id=call_id or None,
            error="the graph finished without a result for this tool call",
        )
    tool_rounds = [tool_round([recorded_as.get(id_, id_) for id_ in ids], content) for ids, content in rounds]
    return AgentReply(messages=texts, tool_rounds=tool_rounds or None), foreign


def _normalized(arguments: dict[str, Any] | str | None) -> Any:
    """Arguments as the router records them (JSON data), to compare a call with a record."""
    if isinstance(arguments, str):
        try:
            return json.loads(arguments) if arguments else {}
        except ValueError:
            return {"_raw": arguments}
    if arguments is None:
        return {}
    return json.loads(json.dumps(arguments, default=str))


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
