"""Tool routing for the agent under test: every call recorded, answered by a fake (test mode) or run (live).

Test mode is the default. A call that no fake matches is NOT answered with a silent success: the agent gets
an explicit "not executed in test mode" result and the record says ``not_executed``, so an agent that then
invents data is visible in the report (hosted tools' silent successes hid exactly that).

A tool that declares ``simulate`` (opt-in) is, in test mode only, played by a model when no fake matches
the call and the tool has no fake at all: a :class:`ToolSimulator` (``simulator.simulated_tools``) answers with a
plausible result, consistent with the tool's earlier calls in the conversation, recorded as ``simulated`` (never
``executed``). A simulation that fails is recorded as ``failed`` with the reason, and
:attr:`ToolRouter.simulation_error` tells the engine to end the case as an error: a tool nobody answered is never a
silent success.

A tool that declares ``world:`` is answered from the conversation's own copy of the case's world (test and live
mode alike: it touches nothing else), by one declarative operation or by a Python function given the world, and
recorded as ``executed`` with what it read and changed (shown as ``executed (world)``). A tool fake that matches
the call still wins in test mode: it is the person's explicit answer. A world tool in a case without a world is
``failed``, with the reason.

Live mode (``--live``, never the default) runs the Python functions the agent config names (``function:
module:callable``, looked for beside the suite and the agent file first: :mod:`simulator.code_refs`); a tool
with ``requires_approval`` is not run: the call is recorded as ``needs_approval`` and the case stops there.
A live function that cannot be imported, raises, or returns something that is not JSON is the tool's failure,
not the agent's: the call is recorded as ``failed`` with the reason, the agent is told, and the conversation
goes on.

What the agent gets as a tool's result (the same for every adapter, for live functions and for fakes): a
``str`` exactly as it is (most tool wrappers return JSON text already); any other JSON value serialised once
(:func:`~simulator.models.transcript.tool_content`); an unsuccessful call an ``{"error": ..., "status": ...}`` object.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import functools
import inspect
import json
import time
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import Any, Literal, Protocol, cast

from pydantic import JsonValue

from simulator.code_refs import CodeRefError, resolve_callable
from simulator.models import ToolDeclaration, ToolFake
from simulator.models.transcript import ToolCallRecord
from simulator.plugins import PluginError, load_plugin
from simulator.tool_faults import FaultEntry, FaultInjector, inject
from simulator.world import World, WorldError, apply_changes, run_operation

ToolMode = Literal["test", "live"]

NOT_EXECUTED = "not executed in test mode"


def _describe_call(name: str, arguments: dict[str, Any]) -> str:
    args = ", ".join(f"{key}={value!r}" for key, value in arguments.items())
    return f"{name}({args})"


def json_result(value: Any) -> tuple[JsonValue, str | None]:
    """A tool's result as Simulator keeps it, or why it cannot be used.

    A ``str`` is kept exactly as it is (it reaches the agent unchanged); any other JSON value is kept as JSON
    data (serialised once, when it reaches a chat agent); anything else (bytes, an object, NaN) is not JSON and
    makes the call fail, with the reason as the second item.
    """
    if isinstance(value, str):
        return value, None
    try:
        text = json.dumps(value, ensure_ascii=False, allow_nan=False)
    except (TypeError, ValueError) as exc:
        return None, (
            f"the tool returned {type(value).__name__}, which is not JSON ({exc}): return a str (given to the agent "
            "as it is) or JSON data (a dict, list, number, bool or None)"
        )
    return json.loads(text), None


class LiveFunction:
    """A tool's ``function: module:callable``, imported when the tool is first called in live mode.

    ``folders`` are searched first (the suite's and the agent file's folders). A reference that cannot be
    imported, or is not callable, raises :class:`~simulator.code_refs.CodeRefError` when called, which the
    router records as the call's failure.
    """

    def __init__(self, ref: str, folders: Sequence[Path] = ()) -> None:
        self.ref = ref
        self.folders = tuple(folders)
        self._target: Callable[..., Any] | None = None

    def resolve(self) -> Callable[..., Any]:
        """The function itself (imported once)."""
        if self._target is None:
            self._target = resolve_callable(self.ref, what="tool function", folders=self.folders)
        return self._target

    def __call__(self, **arguments: Any) -> Any:
        return self.resolve()(**arguments)


def live_functions(declared: Sequence[ToolDeclaration], folders: Sequence[Path] = ()) -> dict[str, Callable[..., Any]]:
    """The live functions of the tools that name one, by tool name, looked for in ``folders`` first."""
    return {tool.name: LiveFunction(tool.function, folders) for tool in declared if tool.function is not None}


def world_functions(declared: Sequence[ToolDeclaration], folders: Sequence[Path] = ()) -> dict[str, Callable[..., Any]]:
    """The Python functions of the world tools that name one (``world: {function: module:callable}``), by tool
    name, looked for in ``folders`` first."""
    return {
        tool.name: LiveFunction(tool.world.function, folders)
        for tool in declared
        if tool.world is not None and tool.world.function is not None
    }


def fake_matches(fake: ToolFake, name: str, arguments: dict[str, Any]) -> bool:
    """Whether a fake answers this call: same tool, and the arguments it lists (all of them, for ``exact``)."""
    if fake.tool != name:
        return False
    if fake.arguments is None:
        return True
    if fake.match == "exact":
        return fake.arguments == arguments
    return all(key in arguments and arguments[key] == value for key, value in fake.arguments.items())


class ToolSimulator(Protocol):
    """Plays the tools that declare ``simulate``, in test mode (``simulator.simulated_tools`` has the model one)."""

    @property
    def label(self) -> str:
        """Who plays the tools, as records and errors name it, e.g. ``user model openai/gpt-4o-mini``."""
        ...

    async def simulate(
        self, tool: ToolDeclaration, arguments: dict[str, JsonValue], earlier: Sequence[ToolCallRecord]
    ) -> JsonValue:
        """The tool's result for this call, consistent with ``earlier`` (this tool's earlier simulated calls in the
        conversation, oldest first). Raises when no usable result could be had."""
        ...


class PluginToolBackend:
    """A tool backend from an installed plugin (entry point ``simulator.tools``): a function given the tool's
    declaration, the call's arguments and the tool's earlier answered calls of the conversation, returning the
    result (sync or async). It plays the tool in test mode like a simulator, and is recorded as one."""

    def __init__(self, name: str) -> None:
        self.name = name

    @property
    def label(self) -> str:
        """``tool plugin 'NAME'``."""
        return f"tool plugin {self.name!r}"

    async def simulate(
        self, tool: ToolDeclaration, arguments: dict[str, Any], earlier: list[ToolCallRecord]
    ) -> JsonValue:
        """The backend's answer to one call."""
        backend = load_plugin("tools", self.name)
        if not callable(backend):
            raise PluginError(f"the tool plugin {self.name!r} is not a function (tool, arguments, earlier)")
        answer = backend(tool, arguments, earlier)
        if inspect.isawaitable(answer):
            answer = await answer
        return cast(JsonValue, answer)


class ToolRouter:
    """Answers the agent's tool calls for one conversation and records each of them.

    ``fakes`` are tried in order (put the case's fakes before the suite's): the first that matches answers.
    ``simulator`` plays the declared tools that opt in with ``simulate``, in test mode, when no fake answers.
    """

    def __init__(
        self,
        *,
        declared: Sequence[ToolDeclaration] = (),
        fakes: Sequence[tuple[str, ToolFake]] = (),
        mode: ToolMode = "test",
        functions: dict[str, Callable[..., Any]] | None = None,
        timeout: float | None = None,
        simulator: ToolSimulator | None = None,
        world: World | None = None,
        world_functions: dict[str, Callable[..., Any]] | None = None,
        faults: Sequence[FaultEntry] = (),
        seed: int = 0,
    ) -> None:
        self.declared = {tool.name: tool for tool in declared}
        #: The conversation's own world (None: the case has none); world tools read and change only this.
        self.world = world
        self._world_functions = dict(world_functions or {})
        # A Python world function runs in a worker thread: one call at a time keeps each call's access its own.
        self._world_lock = asyncio.Lock()
        self.fakes = list(fakes)
        self.mode = mode
        self._functions = dict(functions or {})
        #: How long a live tool may take (the agent's ``timeout``); None: no limit.
        self.timeout = timeout
        #: The live tools running right now, and those stopped at the bound since the last drain: a turn that
        #: times out meanwhile was waiting for them.
        self.in_flight: list[str] = []
        self.timed_out: list[str] = []
        self.records: list[ToolCallRecord] = []
        self._counter = 0
        self.simulator = simulator
        #: Every simulated call of the conversation by tool, oldest first: what keeps the next answer consistent.
        self._simulated: dict[str, list[ToolCallRecord]] = {}
        #: Set when a simulated tool could not be played: the case must end as an error naming who played it.
        self.simulation_error: str | None = None
        #: The faults injected on purpose (``faults:``), with each tool's call count.
        self.faults = FaultInjector(faults, seed)

    @property
    def needs_approval(self) -> bool:
        """Whether a call needed a person's approval (live mode): the case must stop."""
        return any(record.status == "needs_approval" for record in self.records)

    def drain(self) -> list[ToolCallRecord]:
        """The calls recorded since the last drain (one agent turn's calls)."""
        records, self.records = self.records, []
        self.timed_out = []
        return records

    def stuck_tools(self) -> list[str]:
        """The live tools a turn was waiting for: running now, or stopped at the bound since the last drain."""
        return list(dict.fromkeys([*self.in_flight, *self.timed_out]))

    async def call(self, name: str, arguments: dict[str, Any] | str | None, *, call_id: str | None = None) -> JsonValue:
        """Route one call and return what the agent sees as the tool's result."""
        return (await self.route(name, arguments, call_id=call_id)).answer

    async def route(
        self, name: str, arguments: dict[str, Any] | str | None, *, call_id: str | None = None
    ) -> ToolCallRecord:
        """Route one call and return its full record (also kept in :attr:`records`)."""
        started = time.perf_counter()
        record = self._new_record(name, arguments, call_id)
        number = self.faults.next_call(record.name)
        # Before anything else may answer: a fault answers the call whatever would have (fake, model, world).
        fault = self._fault(record, number) if record.arguments_error is None else None
        if record.arguments_error is not None:
            record.status = "failed"
            record.error = f"the arguments are not valid JSON ({record.arguments_error}): the tool was not run"
        elif fault is not None:
            inject(record, fault)
        elif self.mode == "test":
            if self._answer_from_fakes(record):
                pass
            elif self._is_world_tool(record.name):
                await self._run_world(record)
            elif self._simulates(record.name):
                await self._simulate(record)
        elif self._is_world_tool(record.name):
            await self._run_world(record)
        else:
            await self._run_live(record)
        record.duration_ms = (time.perf_counter() - started) * 1000
        self.records.append(record)
        return record

    def record_external(
        self,
        name: str,
        arguments: dict[str, Any] | str | None,
        result: Any,
        *,
        call_id: str | None = None,
        error: str | None = None,
    ) -> ToolCallRecord:
        """Record a call the agent ran itself (a LangGraph graph's own tool node): nothing is routed or faked.

        The record says ``executed`` with ``result``, or ``failed`` with ``error`` when one is given (or when
        ``result`` is not JSON, see :func:`json_result`).
        """
        record = self._new_record(name, arguments, call_id)
        if error is None:
            record.result, error = json_result(result)
        record.status = "executed" if error is None else "failed"
        record.error = error
        self.records.append(record)
        return record

    def replayed(self, record: ToolCallRecord) -> None:
        """Record a call as a recording holds it (``simulator replay``): nothing is routed, faked or run; what a
        world tool's call changed is made again on the conversation's world, so it ends as the recording did."""
        if self.world is not None and record.world is not None:
            # A recording made on another seed: its calls are shown, the world keeps what it can.
            with contextlib.suppress(WorldError):
                apply_changes(self.world, record.world.changes)
        self.records.append(record)

    def _new_record(self, name: str, arguments: dict[str, Any] | str | None, call_id: str | None) -> ToolCallRecord:
        self._counter += 1
        parsed, arguments_error = _parse_arguments(arguments)
        return ToolCallRecord(
            id=call_id or f"call_{self._counter}",
            name=name,
            arguments=parsed,
            arguments_error=arguments_error,
            status="not_executed",
        )

    def remember(self, records: Iterable[ToolCallRecord]) -> None:
        """Calls made earlier in this conversation (a resumed one): the simulated ones keep later answers
        consistent with them, and the ids made up from now on are not theirs again."""
        for record in records:
            self._counter += 1
            self.faults.remember([record.name])
            if record.status == "simulated":
                self._simulated.setdefault(record.name, []).append(record)

    def _fault(self, record: ToolCallRecord, number: int) -> FaultEntry | None:
        """The fault that answers this call: in test mode any tool's; in live mode only a world tool's (it touches
        nothing real), never a real tool's."""
        declaration = self.declared.get(record.name)
        if self.mode == "live" and (declaration is None or declaration.world is None):
            return None
        return self.faults.pick(record.name, number, record.arguments)

    def _simulates(self, name: str) -> bool:
        """Whether a call of ``name`` that no fake answered is played by the simulator or a plugin's tool backend:
        the tool opts in (``simulate`` with a simulator, or ``backend``), and no fake at all names the tool (a fake
        is the person's own answer; nothing else may answer the calls it does not match)."""
        declaration = self.declared.get(name)
        if declaration is None or any(fake.tool == name for _, fake in self.fakes):
            return False
        return declaration.backend is not None or (declaration.simulate is not None and self.simulator is not None)

    async def _simulate(self, record: ToolCallRecord) -> None:
        declaration = self.declared[record.name]
        player = PluginToolBackend(declaration.backend) if declaration.backend is not None else self.simulator
        assert player is not None
        earlier = self._simulated.setdefault(record.name, [])
        record.simulated_by = player.label
        try:
            result = await player.simulate(declaration, record.arguments, list(earlier))
        except Exception as exc:
            record.status = "failed"
            record.error = (
                f"the simulation of tool {record.name!r} failed, so the tool did not run and has no result: "
                f"{player.label} gave no usable answer ({type(exc).__name__}: {exc})"
            )
            self.simulation_error = self.simulation_error or record.error
            return
        record.result, error = json_result(result)
        record.status = "simulated" if error is None else "failed"
        record.error = error
        if error is None:
            earlier.append(record)

    def _answer_from_fakes(self, record: ToolCallRecord) -> bool:
        """Answer from the first fake that matches (True), or record the call as not executed (False)."""
        for label, fake in self.fakes:
            if fake_matches(fake, record.name, record.arguments):
                record.fake = label
                record.status = "faked"
                if fake.error is not None:
                    record.error = fake.error
                else:
                    record.result = fake.result
                return True
        known = "" if not self.declared or record.name in self.declared else " (the agent declares no such tool)"
        declaration = self.declared.get(record.name)
        has_fakes = any(fake.tool == record.name for _, fake in self.fakes)
        if declaration is not None and declaration.simulate is not None and has_fakes:
            known = " (the tool declares `simulate`, but a tool that has fakes is never simulated)"
        record.status = "not_executed"
        record.error = (
            f"{NOT_EXECUTED}: no tool fake matches {_describe_call(record.name, record.arguments)}{known}; "
            "add a `tool_fakes` entry for it, or run with --live"
        )
        return False

    def _is_world_tool(self, name: str) -> bool:
        declaration = self.declared.get(name)
        return declaration is not None and declaration.world is not None

    async def _run_world(self, record: ToolCallRecord) -> None:
        """Answer a world tool's call from the conversation's world (``executed``, with what it read and changed),
        or record why it could not run (``failed``)."""
        operation = self.declared[record.name].world
        assert operation is not None
        record.error = None
        if self.world is None:
            record.status = "failed"
            record.error = (
                f"{record.name} is a world tool, but this case has no world: add `world:` to the suite or the case"
            )
            return
        if operation.function is None:
            outcome = run_operation(self.world, operation, record.arguments)
            record.status, record.result, record.world = "executed", outcome.result, outcome.access
            return
        function = self._world_functions.get(record.name) or LiveFunction(operation.function)
        self._world_functions[record.name] = function
        world = self.world
        async with self._world_lock:
            world.begin_access()
            bound = asyncio.timeout(self.timeout)
            try:
                async with bound:
                    result = await _call_off_the_loop(function, {**record.arguments, "world": world})
            except TimeoutError as exc:
                record.status = "failed"
                record.error = (
                    f"the world function did not return within {self.timeout:g} s (the agent's `timeout`)"
                    if bound.expired()
                    else f"{type(exc).__name__}: {exc}"
                )
                return
            except CodeRefError as exc:
                record.status, record.error = "failed", str(exc)
                return
            except Exception as exc:
                record.status, record.error = "failed", f"{type(exc).__name__}: {exc}"
                return
            finally:
                # What it changed before failing is kept: the world did change.
                record.world = world.end_access()
        record.result, error = json_result(result)
        record.status = "executed" if error is None else "failed"
        record.error = error

    async def _run_live(self, record: ToolCallRecord) -> None:
        declaration = self.declared.get(record.name)
        if declaration is not None and declaration.requires_approval:
            record.status = "needs_approval"
            record.error = f"{record.name} requires approval: not run; the case stops here for a person to decide"
            return
        function = self._function(record.name, declaration)
        if function is None:
            record.status = "not_executed"
            record.error = f"no live function for tool {record.name!r}: set `function: module:callable` on the tool"
            return
        # Whatever goes wrong from here on is the tool's failure, not the agent's: recorded, and the agent is told.
        bound = asyncio.timeout(self.timeout)
        self.in_flight.append(record.name)
        try:
            async with bound:
                result = await _call_off_the_loop(function, record.arguments)
        except TimeoutError as exc:
            record.status = "failed"
            record.error = (
                f"the tool did not return within {self.timeout:g} s (the agent's `timeout`); it was left running"
                if bound.expired()
                else f"{type(exc).__name__}: {exc}"  # the tool's own timeout
            )
            if bound.expired():
                self.timed_out.append(record.name)
            return
        except CodeRefError as exc:
            record.status = "failed"
            record.error = str(exc)
            return
        except Exception as exc:
            record.status = "failed"
            record.error = f"{type(exc).__name__}: {exc}"
            return
        finally:
            self.in_flight.remove(record.name)
        record.result, error = json_result(result)
        record.status = "executed" if error is None else "failed"
        record.error = error

    def _function(self, name: str, declaration: ToolDeclaration | None) -> Callable[..., Any] | None:
        if name in self._functions:
            return self._functions[name]
        if declaration is None or declaration.function is None:
            return None
        # Without folders from the runner: the working folder and the installed packages only.
        self._functions[name] = LiveFunction(declaration.function)
        return self._functions[name]


async def _call_off_the_loop(function: Callable[..., Any], arguments: dict[str, Any]) -> Any:
    """Call a live tool function in a worker thread (a plain ``def`` that blocks, or never returns, must not
    stop every other conversation); an ``async def`` one is awaited here. During a run the loop's default
    executor has daemon threads (``simulator.agents.free_agent_threads``): a stuck tool never holds the exit."""
    call = functools.partial(contextvars.copy_context().run, function, **arguments)
    result = await asyncio.get_running_loop().run_in_executor(None, call)
    if inspect.isawaitable(result):
        result = await result
    return result


class ToolHandle:
    """What an agent gets to call its tools with; both sync (from a worker thread) and async."""

    def __init__(self, router: ToolRouter, loop: asyncio.AbstractEventLoop, timeout: float = 60.0) -> None:
        self._router = router
        self._loop = loop
        self._timeout = timeout

    async def acall(self, name: str, /, **arguments: Any) -> JsonValue:
        """Call a tool from async agent code; returns its result or an ``{"error": ...}`` mapping."""
        return await self._router.call(name, arguments)

    def call(self, name: str, /, **arguments: Any) -> JsonValue:
        """Call a tool from sync agent code (which Simulator runs in a worker thread)."""
        if _running_loop() is self._loop:
            raise RuntimeError("ToolHandle.call() is for sync agents; async agents use `await tools.acall(...)`")
        future = asyncio.run_coroutine_threadsafe(self._router.call(name, arguments), self._loop)
        return future.result(self._timeout)

    @property
    def router(self) -> ToolRouter:
        """The router behind this handle: adapters route calls with the model's call ids and raw arguments."""
        return self._router

    @property
    def declared(self) -> list[str]:
        """Names of the tools the agent declares."""
        return list(self._router.declared)


def _running_loop() -> asyncio.AbstractEventLoop | None:
    try:
        return asyncio.get_running_loop()
    except RuntimeError:
        return None


def _parse_arguments(arguments: dict[str, Any] | str | None) -> tuple[dict[str, Any], str | None]:
    if arguments is None or arguments == "":
        return {}, None
    if isinstance(arguments, dict):
        return _jsonable(arguments), None  # type: ignore[return-value]
    try:
        parsed = json.loads(arguments)
    except json.JSONDecodeError as exc:
        return {"_raw": arguments}, str(exc)
    if not isinstance(parsed, dict):
        return {"_raw": arguments}, "arguments must be a JSON object"
    return parsed, None


def _jsonable(value: Any) -> JsonValue:
    """Arguments a Python agent passed as JSON data; a value that is not JSON becomes its string form (the call
    is still recorded as the agent made it)."""
    try:
        return json.loads(json.dumps(value, default=str))  # type: ignore[no-any-return]
    except (TypeError, ValueError):
        return str(value)
