"""What every adapter for the agent under test provides, and what it is given each turn."""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextvars
import functools
import threading
import time
import weakref
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Protocol

from pydantic import JsonValue

from simulator.models import EventSpec
from simulator.models.transcript import ReportedUsage, ToolRound
from simulator.tools import ToolHandle

#: OpenAI chat-completions style messages: {"role": "user" | "assistant" | "tool" | "system", "content": ...}; an
#: assistant message that called tools has ``tool_calls``, each result is a ``tool`` message with its
#: ``tool_call_id`` (:mod:`simulator.agents._history`). An event appears as a user message whose content reads
#: ``[event: NAME] {payload}`` and which carries the event itself under the extra key ``"event"`` (adapters that
#: talk to remote APIs drop that key).
Message = dict[str, Any]


@dataclass
class AgentInput:
    """Everything the agent gets for one turn.

    ``messages`` share their earlier agent turns with the histories of later turns: an adapter reads them, and
    copies what it changes or hands to agent code.
    """

    messages: list[Message]
    session: dict[str, JsonValue]
    tools: ToolHandle
    event: EventSpec | None = None
    case: str = ""
    turn: int = 0


@dataclass
class AgentReply:
    """The agent's answer to one turn. Tool calls are not here: the tool handle records them as they happen.

    ``tool_rounds`` is for adapters that send the agent its tool results as messages (http, litellm, langgraph):
    which of the turn's calls each of its messages made, so the next turn's history shows them the same way.
    """

    messages: list[str] = field(default_factory=list)
    handoff: str | None = None
    variables: dict[str, JsonValue] = field(default_factory=dict)
    tool_rounds: list[ToolRound] | None = None
    #: Tokens the agent reported for the turn (an http agent's responses' ``usage``), None when it reported none.
    usage: ReportedUsage | None = None


class AgentAdapter(Protocol):
    """One conversation's connection to the agent under test. Made fresh for every conversation."""

    async def respond(self, request: AgentInput) -> AgentReply:
        """The agent's reply to the conversation so far (and the event, if one was sent)."""
        ...

    async def aclose(self) -> None:
        """Release what the adapter holds (HTTP clients, threads)."""
        ...


class DaemonThreadExecutor(concurrent.futures.ThreadPoolExecutor):
    """Runs each job in a new daemon thread, so a job that never returns cannot keep the process alive.

    Sync agent code runs here instead of ``asyncio.to_thread``: when an agent blocks past its ``timeout``, its
    turn ends as ``error`` but its thread keeps running, and a thread of the default executor is waited for
    when ``asyncio.run`` finishes and again when the interpreter exits, forever. A daemon thread is not: the
    run ends and the process exits with its exit code whatever the thread does. (A ``ThreadPoolExecutor`` only
    in name, because ``loop.set_default_executor`` takes nothing else; none of its pool is used.)

    :meth:`shutdown` (called by ``asyncio.run`` when this is a loop's default executor) waits at most ``grace``
    seconds for jobs still running, so a store write in flight finishes while a stuck call is left behind.
    """

    def __init__(self, *, name: str = "simulator-worker", grace: float = 1.0) -> None:
        super().__init__(max_workers=1, thread_name_prefix=name)
        self._name = name
        self._grace = grace
        self._lock = threading.Lock()
        self._running: set[threading.Thread] = set()
        self._count = 0
        self._shut = False

    def submit(self, fn: Callable[..., Any], /, *args: Any, **kwargs: Any) -> concurrent.futures.Future[Any]:
        """Start ``fn(*args, **kwargs)`` in a new daemon thread; its future."""
        future: concurrent.futures.Future[Any] = concurrent.futures.Future()
        with self._lock:
            if self._shut:
                raise RuntimeError("cannot schedule new jobs after shutdown")
            self._count += 1
            thread = threading.Thread(
                target=self._work, args=(future, fn, args, kwargs), name=f"{self._name}-{self._count}", daemon=True
            )
            self._running.add(thread)
        thread.start()
        return future

    def _work(self, future: concurrent.futures.Future[Any], fn: Callable[..., Any], args: Any, kwargs: Any) -> None:
        try:
            if not future.set_running_or_notify_cancel():
                return
            try:
                result = fn(*args, **kwargs)
            except BaseException as exc:  # handed to the waiting side, as an executor does
                if not isinstance(exc, Exception):
                    # sys.exit() or a KeyboardInterrupt raised by the agent ends its turn, not the run.
                    exc = RuntimeError(f"the code raised {type(exc).__name__}: {exc}")
                future.set_exception(exc)
            else:
                future.set_result(result)
        finally:
            with self._lock:
                self._running.discard(threading.current_thread())

    def shutdown(self, wait: bool = True, *, cancel_futures: bool = False) -> None:
        """No new jobs; with ``wait``, give running ones up to ``grace`` seconds, then leave them behind."""
        with self._lock:
            self._shut = True
            running = list(self._running)
        if not wait:
            return
        deadline = time.monotonic() + self._grace
        for thread in running:
            thread.join(max(0.0, deadline - time.monotonic()))


#: Where sync agent code runs (see :class:`DaemonThreadExecutor`); never shut down.
AGENT_THREADS = DaemonThreadExecutor(name="simulator-agent")

_FREED: weakref.WeakSet[asyncio.AbstractEventLoop] = weakref.WeakSet()


def free_agent_threads() -> None:
    """Make the running loop's default executor a :class:`DaemonThreadExecutor` (once per loop).

    Agent code the adapters do not run themselves ends up there: LangGraph runs a graph's plain ``def`` nodes
    with ``run_in_executor(None, ...)``. A node stuck past the agent's ``timeout`` then cannot keep
    ``asyncio.run`` (and the process) from ending either.
    """
    loop = asyncio.get_running_loop()
    if loop not in _FREED:
        loop.set_default_executor(DaemonThreadExecutor(name="simulator-default"))
        _FREED.add(loop)


async def in_agent_thread(function: Callable[..., Any], /, *args: Any, **kwargs: Any) -> Any:
    """``asyncio.to_thread`` for agent code, on :data:`AGENT_THREADS`: same context variables, and a call
    that never returns keeps neither the event loop's shutdown nor the process's exit waiting."""
    loop = asyncio.get_running_loop()
    call = functools.partial(contextvars.copy_context().run, function, *args, **kwargs)
    return await loop.run_in_executor(AGENT_THREADS, call)


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
