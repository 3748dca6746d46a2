"""A LangGraph graph's own tool calls, routed through Simulator's tool router (test mode means no side effects).

A compiled graph usually runs its tools itself, in a ``ToolNode``. Without ``--live`` none of them may run, so:

* **ToolNode is intercepted.** The adapter runs a private copy of the graph (the user's graph object is not
  changed: conversations run concurrently and share it) in which every ``ToolNode``, also inside compiled
  subgraphs added as nodes, has an interceptor (ToolNode's own ``awrap_tool_call`` hook, put innermost, so a
  wrapper the graph already had still runs around it). The interceptor reads the conversation's
  :class:`~simulator.tools.ToolHandle` from ``config["configurable"]["simulator_tools"]`` and asks its router:
  in test mode a fake answers the call, or it is ``not_executed``, and the tool never runs; in live mode a tool
  with ``requires_approval`` is not run and stops the case, any other runs as the graph would run it, and the
  call is recorded either way.
* **Custom nodes can route their calls** through the same handle: ``config["configurable"]["simulator_tools"]``,
  with ``await tools.acall(name, **arguments)`` (``tools.call`` in a sync node).
* **Anything else is refused in test mode.** A langchain tool started anywhere else (a hand-written tool node,
  a subgraph invoked from inside a node) is stopped *before its body runs* by a callback (:func:`tool_guard`),
  and the conversation ends in an error that says why and what to do. A graph that answers a tool call with a
  tool message that did not come through the router (a node calling a plain function) cannot be stopped
  before the fact: the conversation ends in the same error, and the graph is refused in test mode for the rest
  of the process (:func:`refuse`, :func:`refusal`), so it does not happen again.

LangGraph is not imported here (only ``simulator/engine/`` does): a ``ToolNode`` and a compiled graph are
recognised by their class names and attributes, and langchain-core (which every LangGraph graph has loaded
already) is imported when a graph is first run.
"""

from __future__ import annotations

import asyncio
import copy
import functools
import json
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import Any

from simulator.agents._chat import text_of
from simulator.tools import ToolHandle, ToolRouter

#: Where a graph's nodes find the conversation's tool handle: ``config["configurable"][TOOLS_KEY]``.
TOOLS_KEY = "simulator_tools"

#: What to do instead, said by every refusal.
REMEDY = (
    "without --live Simulator lets no tool run: use langgraph's ToolNode for the graph's tools (Simulator "
    f"answers their calls from tool_fakes), or route the calls through config['configurable']['{TOOLS_KEY}'] "
    "(`await tools.acall(name, **arguments)`), or run with --live"
)

_COPIES: dict[int, tuple[Any, Any]] = {}
_REFUSED: dict[int, tuple[Any, str]] = {}


def intercepted(graph: Any) -> Any:
    """The graph to run instead of ``graph``: a copy whose ToolNodes route through the tool router (made once
    per graph object), or ``graph`` itself when it has none that can be intercepted."""
    cached = _COPIES.get(id(graph))
    if cached is not None and cached[0] is graph:
        return cached[1]
    result = _copy_graph(graph)
    _COPIES[id(graph)] = (graph, result)
    return result


def refuse(graph: Any, reason: str) -> None:
    """Remember that ``graph`` ran a tool Simulator could not route: it is refused in test mode from now on."""
    _REFUSED[id(graph)] = (graph, reason)


def refusal(graph: Any) -> str | None:
    """Why ``graph`` may not run in test mode, if an earlier conversation found out."""
    found = _REFUSED.get(id(graph))
    return found[1] if found is not None and found[0] is graph else None


# -- finding and wrapping ToolNodes ----------------------------------------------------------------------------


def _is_tool_node(value: Any) -> bool:
    """LangGraph's prebuilt ``ToolNode`` (or a subclass): by name and by the hooks the interception uses."""
    named = any(cls.__name__ in ("ToolNode", "_ToolNode") for cls in type(value).__mro__)
    return named and all(hasattr(value, name) for name in ("_awrap_tool_call", "_wrap_tool_call", "_afunc", "_func"))


def _is_graph(value: Any) -> bool:
    return isinstance(getattr(value, "nodes", None), Mapping) and callable(getattr(value, "copy", None))


def _copy_graph(graph: Any) -> Any:
    """``graph`` with intercepting copies of its ToolNodes (recursively into compiled subgraphs used as nodes);
    ``graph`` itself if nothing changed."""
    if not _is_graph(graph):
        return graph
    nodes: Mapping[str, Any] = graph.nodes
    changed: dict[str, Any] = {}
    for name, node in nodes.items():
        bound = getattr(node, "bound", None)
        if _is_tool_node(bound):
            replacement = _intercepting_tool_node(bound)
        elif _is_graph(bound):
            replacement = _copy_graph(bound)
        else:
            continue
        if replacement is not bound and callable(getattr(node, "copy", None)):
            changed[name] = node.copy({"bound": replacement})
    if not changed:
        return graph
    return graph.copy({"nodes": {**nodes, **changed}})


def _intercepting_tool_node(node: Any) -> Any:
    """A copy of ``node`` whose tool calls go through :func:`_route`; ``node`` itself if its functions are not
    the standard ones (a subclass that runs tools its own way: the tool guard still stops those)."""
    if node.afunc != node._afunc or (node.func is not None and node.func != node._func):
        return node
    clone = copy.copy(node)
    clone.func = clone._func
    clone.afunc = clone._afunc
    clone._awrap_tool_call = _wrapper(node._wrap_tool_call, node._awrap_tool_call)
    return clone


Execute = Callable[[Any], Awaitable[Any]]


def _wrapper(user_wrap: Any, user_awrap: Any) -> Callable[[Any, Execute], Awaitable[Any]]:
    """ToolNode's ``awrap_tool_call``: the graph's own wrapper (if any) around Simulator's routing."""

    async def awrap(request: Any, execute: Execute) -> Any:
        handle = _handle_of(request)

        async def route(req: Any) -> Any:
            return await _route(handle, req, execute) if handle is not None else await execute(req)

        if user_awrap is not None:
            return await user_awrap(request, route)
        if user_wrap is not None:
            # A sync wrapper gets a sync `execute`: it runs in a worker thread, routing goes back to the loop.
            loop = asyncio.get_running_loop()

            def sync_route(req: Any) -> Any:
                return asyncio.run_coroutine_threadsafe(route(req), loop).result()

            return await asyncio.to_thread(user_wrap, request, sync_route)
        return await route(request)

    return awrap


def _handle_of(request: Any) -> ToolHandle | None:
    runtime = getattr(request, "runtime", None)
    config = getattr(runtime, "config", None) or {}
    handle = (config.get("configurable") or {}).get(TOOLS_KEY)
    return handle if isinstance(handle, ToolHandle) else None


async def _route(handle: ToolHandle, request: Any, execute: Execute) -> Any:
    """One ToolNode call: answered by the router (test mode, or a tool that needs approval), or run by the
    graph's ToolNode and recorded (live mode)."""
    call = request.tool_call
    name, arguments, call_id = str(call["name"]), call.get("args"), call.get("id")
    router = handle.router
    declaration = router.declared.get(name)
    if router.mode == "test" or (declaration is not None and declaration.requires_approval):
        record = await router.route(name, arguments, call_id=call_id)
        return _tool_message()(
            content=record.answer_text,
            name=name,
            tool_call_id=str(call_id or record.id),
            status="success" if record.answered else "error",
        )
    result = await execute(request)
    _record_result(router, name, arguments, call_id, result)
    return result


def _record_result(router: ToolRouter, name: str, arguments: Any, call_id: Any, result: Any) -> None:
    """Record what the graph's own tool gave (live mode): its tool message's text, or its failure."""
    message = _tool_message_in(result, call_id)
    if message is None:
        router.record_external(name, arguments, None, call_id=call_id)
        return
    text = text_of(_field(message, "content"))
    error = (text or "the tool failed") if _field(message, "status") == "error" else None
    router.record_external(name, arguments, text, call_id=call_id, error=error)


def _tool_message_in(value: Any, call_id: Any, depth: int = 0) -> Any:
    """The tool message for ``call_id`` in what a tool returned (a message, a Command's update, a list)."""
    if depth > 4 or value is None:
        return None
    if _field(value, "type") == "tool" and _field(value, "tool_call_id") == call_id:
        return value
    update = getattr(value, "update", None)
    if update is not None and not callable(update):
        return _tool_message_in(update, call_id, depth + 1)
    items = value.values() if isinstance(value, Mapping) else value if isinstance(value, list | tuple) else ()
    for item in items:
        found = _tool_message_in(item, call_id, depth + 1)
        if found is not None:
            return found
    return None


@functools.cache
def _tool_message() -> Any:
    from langchain_core.messages import ToolMessage

    return ToolMessage


# -- tools run anywhere else -----------------------------------------------------------------------------------


class ToolRefused(BaseException):
    """Raised in a tool's start callback so that its body never runs.

    A ``BaseException`` on purpose: a node's ``except Exception`` cannot swallow it, ToolNode's error handling
    does not turn it into a message for the model, and langchain does not log it as a broken callback.
    """


@dataclass
class Refused:
    """A tool the guard stopped: its name, its arguments, its call id and the node that started it."""

    name: str
    arguments: dict[str, Any] | str | None
    call_id: str | None
    node: str
    approval: bool


def tool_guard(router: ToolRouter) -> Any:
    """A callback handler for the graph's run config: a tool started outside an intercepted ToolNode is stopped
    before it runs (in test mode every such tool; in live mode a tool that requires approval), and noted in
    ``.refused``."""
    return _guard_class()(router)


@functools.cache
def _guard_class() -> type:
    from langchain_core.callbacks import BaseCallbackHandler

    class _ToolGuard(BaseCallbackHandler):
        raise_error = True
        run_inline = True
        ignore_llm = True
        ignore_chain = True
        ignore_retriever = True
        ignore_chat_model = True
        ignore_custom_event = True

        def __init__(self, router: ToolRouter) -> None:
            self.router = router
            self.refused: list[Refused] = []

        def on_tool_start(
            self,
            serialized: dict[str, Any],
            input_str: str,
            *,
            metadata: dict[str, Any] | None = None,
            inputs: dict[str, Any] | None = None,
            **kwargs: Any,
        ) -> None:
            name = str((serialized or {}).get("name") or kwargs.get("name") or "unknown")
            live = self.router.mode == "live"
            declaration = self.router.declared.get(name)
            if live and (declaration is None or not declaration.requires_approval):
                return
            call_id = kwargs.get("tool_call_id")
            arguments: dict[str, Any] | str | None = inputs if inputs is not None else input_str
            self.refused.append(Refused(name, arguments, call_id, node_path(metadata), approval=live))
            raise ToolRefused(name)

    return _ToolGuard


def node_path(metadata: Mapping[str, Any] | None) -> str:
    """The node a callback came from, with its parent graphs' nodes: ``outer/tools``."""
    metadata = metadata or {}
    namespace = str(metadata.get("langgraph_checkpoint_ns") or "")
    parts = [part.split(":", 1)[0] for part in namespace.split("|") if part]
    return "/".join(parts) or str(metadata.get("langgraph_node") or "?")


def describe_call(name: str, arguments: Any) -> str:
    """``refund(order_id='A1')`` for a message."""
    if isinstance(arguments, str):
        try:
            arguments = json.loads(arguments)
        except ValueError:
            return f"{name}({arguments})"
    if isinstance(arguments, Mapping):
        return f"{name}({', '.join(f'{key}={value!r}' for key, value in arguments.items())})"
    return f"{name}()"


def _field(value: Any, name: str) -> Any:
    if isinstance(value, Mapping):
        return value.get(name)
    return getattr(value, name, None)
