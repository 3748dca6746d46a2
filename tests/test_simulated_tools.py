"""Simulated tools (opt-in): a model plays a tool that declares ``simulate``, in test mode, when no fake answers.

Pinned here: the answer is recorded as ``simulated`` (never executed) and counted under the user role; the second
call's request carries the first call's result; a tool with any fake, and live mode, are never simulated; a model
that fails ends the case as ``error`` naming the role; a run without a user model is refused at the tool's key;
``simulate:`` values that make no sense are located errors; the request cache replays simulations.
"""

from __future__ import annotations

import asyncio
import json
import textwrap
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

import simulator
from simulator.cli import app
from simulator.errors import ConfigErrors
from simulator.llm import FakeScript, fake_bad_request
from simulator.loading import validate_paths
from simulator.models import ToolDeclaration, ToolFake
from simulator.models.scores import CaseResult
from simulator.models.transcript import ToolCallRecord
from simulator.runner import plan_simulation
from simulator.tools import ToolRouter
from tests.factories import events_in

ROOT = Path(__file__).resolve().parent.parent
EXAMPLE = ROOT / "suites" / "examples" / "simulated_tools" / "orders.yaml"

ORDER = {"order_id": "ORD-10042", "status": "shipped", "carrier": "UPS", "estimated_delivery": "2026-12-03"}

SUITE = """\
name: orders
agent:
  type: python
  callable: simulator.demo.shop:respond
  tools:
    - name: lookup_order
      description: Fetch an order.
      parameters: {{type: object, properties: {{order_id: {{type: string}}}}, required: [order_id]}}
      {simulate}
      {function}
{fakes}
cases:
  - name: status_twice
    kind: golden
    turns:
      - user: Hi, where is my order ORD-10042?
      - user: And when will it get here?
"""


def write_suite(
    folder: Path, *, simulate: str = "simulate: {behaviour: ORD-10042 is shipped with UPS}", fakes: str = ""
) -> Path:
    (folder / ".git").mkdir(parents=True, exist_ok=True)  # the search for agent.yaml and personas stops here
    path = folder / "orders.yaml"
    path.write_text(SUITE.format(simulate=simulate, function="", fakes=fakes), encoding="utf-8")
    return path


def answer(*results: Any) -> FakeScript:
    """The fake user model: each simulated call gets the next result, as the JSON text the reply schema wants."""
    return FakeScript().enqueue("tools", *({"result_json": json.dumps(result)} for result in results))


def lookups(result: CaseResult) -> list[ToolCallRecord]:
    return [call for call in result.transcript.tool_calls() if call.name == "lookup_order"]


def simulate_offline(suite: Path, script: FakeScript, **options: Any) -> CaseResult:
    with script.active():
        (result,) = simulator.simulate(suite, user_model="fake/tools", **options)
    return result


def test_a_simulated_tool_is_answered_by_the_user_model_and_recorded_as_simulated(tmp_path: Path) -> None:
    script = answer(ORDER, ORDER)
    result = simulate_offline(write_suite(tmp_path), script)
    assert result.transcript.stop_reason == "completed", result.transcript.error
    calls = lookups(result)
    assert [(call.status, call.result, call.simulated_by, call.error) for call in calls] == [
        ("simulated", ORDER, "user model 'fake/tools'", None),
        ("simulated", ORDER, "user model 'fake/tools'", None),
    ]
    # The agent got the model's answer as the tool's result.
    assert "shipped" in result.transcript.events[1].text  # type: ignore[union-attr]
    assert [request.role for request in script.requests] == ["user", "user"]
    # Counted in the conversation's usage under the role whose model played the tool.
    assert result.transcript.usage["user"].calls == 2
    assert script.pending() == 0


def declared(request: str) -> Any:
    """The tool as the request to the model playing it declares it (the JSON before the fenced calls)."""
    return json.loads(request.removeprefix("The tool:\n").split("\n\nThe calls:\n", 1)[0])


def test_the_request_gives_the_tool_and_the_earlier_calls_with_their_results(tmp_path: Path) -> None:
    script = answer({"status": "shipped", "carrier": "UPS"}, {"status": "shipped", "carrier": "UPS", "eta": "soon"})
    simulate_offline(write_suite(tmp_path), script)
    first, second = (request.messages[-1]["content"] for request in script.requests)
    tool = declared(first)
    assert tool["tool"] == "lookup_order"
    assert tool["behaviour"] == "ORD-10042 is shipped with UPS"
    assert tool["parameters_schema"]["required"] == ["order_id"]
    # The calls are the agent's words: in their fenced section, one JSON object per line, this call last.
    assert events_in(first, "calls") == [{"this_call": {"arguments": {"order_id": "ORD-10042"}}}]
    # The second call is asked with the first one's arguments and result: the answers stay consistent.
    assert events_in(second, "calls") == [
        {"earlier_call": {"arguments": {"order_id": "ORD-10042"}, "result": {"status": "shipped", "carrier": "UPS"}}},
        {"this_call": {"arguments": {"order_id": "ORD-10042"}}},
    ]
    assert script.requests[0].params["response_format"]["json_schema"]["name"] == "SimulatedToolReply"


def test_simulate_true_uses_the_tool_description(tmp_path: Path) -> None:
    script = answer(ORDER, ORDER)
    simulate_offline(write_suite(tmp_path, simulate="simulate: true"), script)
    assert declared(script.requests[0].messages[-1]["content"])["behaviour"] == "Fetch an order."


@pytest.mark.parametrize(
    "fakes",
    [
        # A fake for other arguments: this call has no matching fake, and still the model is never asked.
        "tool_fakes:\n  - {tool: lookup_order, arguments: {order_id: ORD-99999}, result: {status: delivered}}",
        "tool_fakes:\n  - {tool: lookup_order, error: down for maintenance}",
    ],
    ids=["a fake for other arguments", "a fake that fails"],
)
def test_a_tool_with_any_fake_is_never_simulated(tmp_path: Path, fakes: str) -> None:
    script = FakeScript()
    result = simulate_offline(write_suite(tmp_path, fakes=fakes), script)
    assert script.requests == []
    statuses = {call.status for call in lookups(result)}
    assert "simulated" not in statuses
    if "other arguments" in fakes:
        assert statuses == {"not_executed"}
        assert "a tool that has fakes is never simulated" in (lookups(result)[0].error or "")


def test_live_mode_never_simulates(tmp_path: Path) -> None:
    script = FakeScript()
    result = simulate_offline(write_suite(tmp_path), script, live=True)
    assert script.requests == []
    # No function to run: live mode says so, it does not ask a model.
    assert {call.status for call in lookups(result)} == {"not_executed"}
    assert "no live function for tool 'lookup_order'" in (lookups(result)[0].error or "")


def test_a_router_in_live_mode_ignores_a_simulator() -> None:
    class Simulator:
        label = "test simulator"

        async def simulate(self, tool: ToolDeclaration, arguments: dict[str, Any], earlier: Any) -> Any:
            raise AssertionError("a live router must not simulate")

    declared = [ToolDeclaration.model_validate({"name": "lookup", "simulate": "finds everything"})]
    router = ToolRouter(declared=declared, mode="live", simulator=Simulator())
    record = asyncio.run(router.route("lookup", {}))
    assert record.status == "not_executed"


@pytest.mark.parametrize(
    ("replies", "why"),
    [
        ([fake_bad_request("the provider refused the request")], "the provider rejected the request"),
        (["not json", "still not json", "{nope"], "gave no valid SimulatedToolReply JSON in 3 attempts"),
    ],
    ids=["provider error", "no valid reply"],
)
def test_a_failed_simulation_ends_the_case_as_error_naming_the_role(
    tmp_path: Path, replies: list[Any], why: str
) -> None:
    script = FakeScript().enqueue("tools", *replies)
    result = simulate_offline(write_suite(tmp_path), script)
    assert result.outcome == "error"
    (call,) = lookups(result)  # the conversation stopped after the turn whose tool could not be played
    assert call.status == "failed"
    assert call.error is not None
    assert call.error.startswith(
        "the simulation of tool 'lookup_order' failed, so the tool did not run and has no result: "
        "user model 'fake/tools' gave no usable answer"
    )
    assert why in call.error
    assert result.reasons == [call.error]
    error = result.transcript.events[-1]
    assert (error.type, error.where) == ("error", "tool")  # type: ignore[union-attr]
    # The agent was told the tool gave nothing: it did not state order data.
    assert "could not look up order ORD-10042" in result.transcript.events[1].text  # type: ignore[union-attr]


def test_a_run_without_a_user_model_is_refused_at_the_tools_simulate_key(tmp_path: Path) -> None:
    suite = write_suite(tmp_path)
    with pytest.raises(ConfigErrors) as caught:
        simulator.plan(suite)
    (error,) = caught.value.errors
    assert (error.line, error.key_path) == (9, "agent.tools[0].simulate")
    assert "tool 'lookup_order' is simulated, which needs a model to play it (the user role's)" in error.message
    assert "--user-model" in error.message
    # Live mode plays nothing: no model is needed.
    assert simulator.plan(suite, live=True).simulated_tools == []
    # The command line says the same, as invalid input, before anything is stored.
    outcome = CliRunner().invoke(app, ["run", str(suite), "--db", str(tmp_path / "runs.db")])
    assert outcome.exit_code == 2
    assert f"{suite}:9:17: agent.tools[0].simulate: tool 'lookup_order' is simulated" in outcome.output
    assert not (tmp_path / "runs.db").exists()


def test_a_run_counts_its_simulated_tools_and_replays_them_from_the_cache(tmp_path: Path) -> None:
    suite = write_suite(tmp_path)
    db = tmp_path / "store" / "runs.db"
    planned = simulator.plan(suite, user_model="fake/tools")
    assert planned.simulated_tools == ["lookup_order"]
    with answer(ORDER, ORDER).active():
        first = simulator.run(planned, db=db)
    # The same requests again: answered from the request cache, no model request at all.
    empty = FakeScript()
    with empty.active():
        again = simulator.run(simulator.plan(suite, user_model="fake/tools"), db=db)
    assert empty.requests == []
    for outcome in (first, again):
        (stored,) = outcome.results()
        assert [call.status for call in lookups(stored.result)] == ["simulated", "simulated"]
    assert again.record.totals is not None
    assert again.record.totals.usage["user"].calls == 2


def test_the_run_line_says_how_many_tools_are_simulated(tmp_path: Path) -> None:
    suite = write_suite(tmp_path)
    with answer(ORDER, ORDER).active():
        outcome = CliRunner().invoke(
            app, ["run", str(suite), "--user-model", "fake/tools", "--db", str(tmp_path / "runs.db"), "--no-cache"]
        )
    assert outcome.exit_code == 0, outcome.output
    assert ", 1 tool(s) simulated by the user model (lookup_order); " in outcome.output


def test_the_simulate_command_notes_the_simulated_tools(tmp_path: Path) -> None:
    suite = write_suite(tmp_path)
    with answer(ORDER, ORDER).active():
        outcome = CliRunner().invoke(app, ["simulate", str(suite), "--user-model", "fake/tools"])
    assert outcome.exit_code == 0, outcome.output
    assert "note: 1 tool(s) simulated by the user model (lookup_order)" in outcome.stderr
    assert "[simulated by user model 'fake/tools']" in outcome.stdout


def test_a_resumed_conversation_remembers_the_simulated_calls_before_it() -> None:
    seen: list[list[ToolCallRecord]] = []

    class Simulator:
        label = "test simulator"

        async def simulate(self, tool: ToolDeclaration, arguments: dict[str, Any], earlier: Any) -> Any:
            seen.append(list(earlier))
            return {"found": True}

    declared = [ToolDeclaration.model_validate({"name": "lookup", "simulate": "finds everything"})]
    router = ToolRouter(declared=declared, simulator=Simulator())
    before = ToolCallRecord(id="call_1", name="lookup", arguments={"id": 1}, status="simulated", result={"found": 1})
    other = ToolCallRecord(id="call_2", name="lookup", status="faked", result=None)
    router.remember([before, other])
    record = asyncio.run(router.route("lookup", {"id": 2}))
    assert record.status == "simulated"
    assert seen == [[before]]


@pytest.mark.parametrize(
    ("value", "message"),
    [
        ("3", "expected true or false or text or a mapping (key: value), got the number 3"),
        ('""', "must not be empty"),
        ("[x]", "expected true or false or text or a mapping (key: value), got a list"),
        ("{behavior: x}", "unknown key 'behavior'; did you mean 'behaviour'?"),
        ("{}", "a simulated tool needs its behaviour in words"),
    ],
)
def test_a_bad_simulate_value_is_a_located_error(tmp_path: Path, value: str, message: str) -> None:
    (tmp_path / ".git").mkdir()
    path = tmp_path / "suite.yaml"
    path.write_text(
        textwrap.dedent(
            f"""\
            name: s
            agent:
              type: python
              callable: simulator.demo.shop:respond
              tools:
                - name: lookup_order
                  simulate: {value}
            cases:
              - {{name: c, kind: scenario, goal: hi}}
            """
        ),
        encoding="utf-8",
    )
    (error,) = validate_paths([path]).errors
    assert (error.line, error.key_path) == (7, "agent.tools[0].simulate" + (".behavior" if "behavior" in value else ""))
    assert message in error.message


def test_the_shipped_example_runs_offline_with_the_fake_model() -> None:
    script = answer(ORDER, ORDER)
    result = simulate_offline(EXAMPLE, script)
    assert result.outcome == "pass", result.reasons
    assert [call.status for call in lookups(result)] == ["simulated", "simulated"]


def test_a_fake_in_a_router_wins_over_the_simulator() -> None:
    declared = [ToolDeclaration.model_validate({"name": "lookup", "simulate": "finds everything"})]
    fake = ToolFake.model_validate({"tool": "lookup", "arguments": {"id": 1}, "result": "from the fake"})

    class Simulator:
        label = "test simulator"

        async def simulate(self, tool: ToolDeclaration, arguments: dict[str, Any], earlier: Any) -> Any:
            return "from the model"

    router = ToolRouter(declared=declared, fakes=[("case tool_fakes[0]", fake)], simulator=Simulator())
    assert asyncio.run(router.call("lookup", {"id": 1})) == "from the fake"
    assert asyncio.run(router.call("lookup", {"id": 2})) == {
        "error": "not executed in test mode: no tool fake matches lookup(id=2) (the tool declares `simulate`, but a "
        "tool that has fakes is never simulated); add a `tool_fakes` entry for it, or run with --live",
        "status": "not_executed",
    }


def test_only_the_suites_a_run_keeps_need_a_model_for_their_simulated_tools(tmp_path: Path) -> None:
    write_suite(tmp_path)
    (tmp_path / "other.yaml").write_text(
        "name: other\nagent: {type: python, callable: simulator.demo.shop:respond}\n"
        "cases:\n  - {name: hello, kind: scenario, goal: say hello, tags: [smoke]}\n",
        encoding="utf-8",
    )
    planned = simulator.plan(tmp_path, tags=["smoke"])
    assert [item.case for item in planned.items] == ["hello"]
    assert planned.simulated_tools == []


def test_a_conversation_resumed_after_a_crash_keeps_its_simulated_calls_in_the_context(tmp_path: Path) -> None:
    from langgraph.checkpoint.sqlite.aio import AsyncSqliteSaver
    from pydantic import TypeAdapter

    from simulator.agents import AgentInput, AgentReply
    from simulator.engine import ConversationSetup, simulate
    from simulator.judges import StepJudge
    from simulator.models import AgentConfig, Case
    from simulator.user import UserReply, UserTurnRequest

    class Crash(BaseException):
        """The process dying: not an Exception, so nothing in the engine catches it."""

    class Agent:
        def __init__(self, crash_on_turn: int | None = None) -> None:
            self.crash_on_turn = crash_on_turn

        async def respond(self, request: AgentInput) -> AgentReply:
            if request.turn == self.crash_on_turn:
                raise Crash
            found = await request.tools.acall("lookup", turn=request.turn)
            return AgentReply(messages=[json.dumps(found)])

        async def aclose(self) -> None:
            return None

    class User:
        async def next_message(self, request: UserTurnRequest) -> UserReply:
            return UserReply(text="again")

    class Simulator:
        label = "test simulator"

        def __init__(self) -> None:
            self.earlier: list[list[Any]] = []

        async def simulate(self, tool: ToolDeclaration, arguments: dict[str, Any], earlier: Any) -> Any:
            self.earlier.append([call.arguments["turn"] for call in earlier])
            return {"turn": arguments["turn"]}

    case = TypeAdapter(Case).validate_python({"kind": "scenario", "name": "lookups", "goal": "look", "max_turns": 3})
    config = TypeAdapter(AgentConfig).validate_python(
        {"type": "python", "callable": "x:y", "tools": [{"name": "lookup", "simulate": "echoes the turn"}]}
    )

    def setup(agent: Agent, simulator: Simulator) -> ConversationSetup:
        return ConversationSetup(
            case=case, agent=agent, user=User(), checker=StepJudge(), agent_config=config, tool_simulator=simulator
        )

    async def crash_then_resume() -> Simulator:
        async with AsyncSqliteSaver.from_conn_string(str(tmp_path / "checkpoints.db")) as saver:
            with pytest.raises(Crash):
                await simulate(setup(Agent(crash_on_turn=3), Simulator()), checkpointer=saver, thread_id="t")
        async with AsyncSqliteSaver.from_conn_string(str(tmp_path / "checkpoints.db")) as saver:
            resumed = Simulator()
            await simulate(setup(Agent(), resumed), checkpointer=saver, thread_id="t")
            return resumed

    # The resumed process asks about turn 3 with the calls of turns 1 and 2, made before the crash.
    assert asyncio.run(crash_then_resume()).earlier == [[1, 2]]


TWO_CASES = """\
name: orders
agent:
  type: python
  callable: simulator.demo.shop:respond
  tools:
    - name: lookup_order
      description: Fetch an order.
      simulate: {{behaviour: ORD-10042 is shipped with UPS}}
{suite_fakes}
cases:
  - name: first
    kind: golden
    turns: [{{user: Where is my order ORD-10042?}}]
{first_fakes}
  - name: second
    kind: golden
    turns: [{{user: Where is my order ORD-10042?}}]
{second_fakes}
"""
SUITE_FAKE = "tool_fakes: [{tool: lookup_order, result: {status: shipped}}]"
CASE_FAKE = "    tool_fakes: [{tool: lookup_order, result: {status: shipped}}]"


@pytest.mark.parametrize(
    ("fakes", "cases"),
    [
        ({"suite_fakes": SUITE_FAKE}, ()),
        ({"first_fakes": CASE_FAKE, "second_fakes": CASE_FAKE}, ()),
        ({"first_fakes": CASE_FAKE}, ("first",)),
    ],
    ids=["suite fake", "a fake in every case", "a fake in the only case run"],
)
def test_a_tool_faked_in_every_conversation_is_not_called_simulated(
    tmp_path: Path, fakes: dict[str, str], cases: tuple[str, ...]
) -> None:
    (tmp_path / ".git").mkdir()
    suite = tmp_path / "orders.yaml"
    text = TWO_CASES.format(**{"suite_fakes": "", "first_fakes": "", "second_fakes": "", **fakes})
    suite.write_text(text, encoding="utf-8")
    assert simulator.plan(suite, cases=list(cases), user_model="fake/tools").simulated_tools == []
    for plan in (
        plan_simulation(suite, cases=list(cases), user_model="fake/tools"),
        plan_simulation(suite, cases=list(cases)),
    ):
        assert not any("simulated by" in note for note in plan.notes)
    # No model is needed to play it.
    assert simulator.plan(suite, cases=list(cases)).simulated_tools == []
    if cases == ("first",):  # the other case has no fake: the tool is simulated there
        assert simulator.plan(suite, cases=["second"], user_model="fake/tools").simulated_tools == ["lookup_order"]
