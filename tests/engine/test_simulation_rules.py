"""Every routing rule of the engine, with a scripted user and a scripted agent (no model anywhere)."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

import pytest
from pydantic import TypeAdapter

from simulator.agents import AgentInput, AgentReply
from simulator.engine import ConversationSetup, simulate
from simulator.judges import StepJudge
from simulator.models import AgentConfig, Case, Persona, ToolFake
from simulator.models.transcript import AgentEvent, CheckEvent, ErrorEvent, InputEvent, Transcript, UserEvent
from simulator.user import UserReply, UserTurnRequest

CASE: TypeAdapter[Any] = TypeAdapter(Case)
AGENT: TypeAdapter[Any] = TypeAdapter(AgentConfig)


class ScriptAgent:
    """An agent that answers with ``reply(request)``; records what it was sent."""

    def __init__(self, reply: Callable[[AgentInput], Any]) -> None:
        self.reply = reply
        self.requests: list[AgentInput] = []
        self.closed = False

    async def respond(self, request: AgentInput) -> AgentReply:
        self.requests.append(request)
        result = self.reply(request)
        if asyncio.iscoroutine(result):
            result = await result
        return result if isinstance(result, AgentReply) else AgentReply(messages=[result])

    async def aclose(self) -> None:
        self.closed = True


class LineUser:
    """A user that says numbered lines (``u1``, ``u2`` ...) or what ``say`` returns; records the requests."""

    def __init__(self, say: Callable[[UserTurnRequest], UserReply] | None = None) -> None:
        self.say = say
        self.requests: list[UserTurnRequest] = []

    async def next_message(self, request: UserTurnRequest) -> UserReply:
        self.requests.append(request)
        if self.say is not None:
            return self.say(request)
        return UserReply(text=f"u{len(self.requests)}")


def case(data: dict[str, Any]) -> Any:
    return CASE.validate_python(data)


def run(
    case_data: dict[str, Any],
    agent: ScriptAgent,
    user: LineUser | None = None,
    **options: Any,
) -> Transcript:
    setup = ConversationSetup(
        case=case(case_data), agent=agent, user=user or LineUser(), checker=StepJudge(), **options
    )
    return asyncio.run(simulate(setup))


def says(text: str) -> Callable[[AgentInput], str]:
    return lambda request: text


def texts(transcript: Transcript, kind: type) -> list[str]:
    out: list[str] = []
    for event in transcript.events:
        if isinstance(event, kind) and isinstance(event, UserEvent):
            out.append(event.text)
        elif isinstance(event, kind) and isinstance(event, AgentEvent):
            out.extend(event.messages)
    return out


def contains(*terms: str) -> dict[str, Any]:
    return {"must_contain": list(terms), "contain": "any"}


def sim(*steps: dict[str, Any], **extra: Any) -> dict[str, Any]:
    return {"kind": "simulation", "name": "sim", "steps": list(steps), **extra}


# -- simulations ------------------------------------------------------------------------------------------


def test_met_steps_advance_and_the_case_completes() -> None:
    agent = ScriptAgent(lambda r: f"reply {r.turn}")
    transcript = run(
        sim({"goal": "a", "checks": [contains("reply 1")]}, {"goal": "b", "checks": [contains("reply 2")]}), agent
    )
    assert transcript.stop_reason == "completed"
    assert [(s.status, s.completed_at_turn) for s in transcript.steps] == [("complete", 1), ("complete", 2)]
    assert transcript.turns == 2
    assert agent.closed


def test_a_step_not_met_within_max_turns_stops_and_blocks_the_rest() -> None:
    transcript = run(
        sim(
            {"goal": "get a refund", "checks": [contains("refund")], "max_turns": 2},
            {"goal": "say thanks"},
            {"static_utterance": "bye"},
        ),
        ScriptAgent(says("I cannot help")),
    )
    assert transcript.stop_reason == "step_failed"
    assert transcript.turns == 2
    first, second, third = transcript.steps
    assert first.status == "incomplete"
    assert first.verdict == "not_met"
    assert first.rationale.startswith("not met within 2 turns; last check: not_met: ")
    assert (second.status, second.blocked_by, second.blocked_by_goal) == ("blocked", 0, "get a refund")
    assert (third.status, third.blocked_by) == ("blocked", 0)
    assert "blocked: step 1 (get a refund) was not completed" in third.rationale


def test_max_turns_defaults_to_three() -> None:
    transcript = run(sim({"goal": "x", "checks": [contains("never")]}), ScriptAgent(says("no")))
    assert transcript.turns == 3
    assert transcript.steps[0].turns_used == 3


def test_a_met_step_is_never_reopened() -> None:
    # Step 1 is met on turn 1; later replies that would fail its check do not touch it.
    replies = iter(["yes refund", "nothing", "done"])
    transcript = run(
        sim({"goal": "a", "checks": [contains("refund")]}, {"goal": "b", "checks": [contains("done")]}),
        ScriptAgent(lambda r: next(replies)),
    )
    assert transcript.stop_reason == "completed"
    checks = [e for e in transcript.events if isinstance(e, CheckEvent)]
    assert [(c.step, c.verdict) for c in checks] == [(0, "met"), (1, "not_met"), (1, "met")]
    assert transcript.steps[0].completed_at_turn == 1


def test_the_user_works_on_the_current_step_only_and_sees_its_guide() -> None:
    user = LineUser()
    run(
        sim(
            {"goal": "first goal", "response_guide": {"order number": "A1"}, "checks": [contains("1")]},
            {"goal": "second goal", "response_guide": "be brief", "checks": [contains("2")]},
        ),
        ScriptAgent(lambda r: f"r{r.turn}"),
        user,
    )
    assert [(r.goal, r.response_guide, r.turn_in_step) for r in user.requests] == [
        ("first goal", {"order number": "A1"}, 0),
        ("second goal", "be brief", 0),
    ]


def test_the_response_guide_never_reaches_the_agent() -> None:
    agent = ScriptAgent(says("ok"))
    run(sim({"goal": "g", "response_guide": "SECRET-GUIDE", "max_turns": 1}), agent)
    seen = repr([(r.messages, r.session) for r in agent.requests])
    assert "SECRET-GUIDE" not in seen


def test_min_turns_delays_the_check() -> None:
    transcript = run(
        sim({"goal": "g", "checks": [contains("ok")], "min_turns": 2, "max_turns": 3}), ScriptAgent(says("ok"))
    )
    checks = [e for e in transcript.events if isinstance(e, CheckEvent)]
    assert [c.turn for c in checks] == [2]
    assert transcript.steps[0].completed_at_turn == 2


def test_static_utterance_sends_its_exact_text_and_events_reach_the_agent() -> None:
    agent = ScriptAgent(lambda r: f"got {r.event.name if r.event else r.messages[-1]['content']}")
    transcript = run(
        sim(
            {"static_utterance": "I want to check my balance."},
            {"event": {"name": "photo_uploaded", "payload": {"n": 1}}},
        ),
        agent,
    )
    assert texts(transcript, UserEvent) == ["I want to check my balance."]
    inputs = [e for e in transcript.events if isinstance(e, InputEvent)]
    assert [(e.name, e.payload) for e in inputs] == [("photo_uploaded", {"n": 1})]
    assert agent.requests[1].event is not None
    assert agent.requests[1].messages[-1]["content"] == '[event: photo_uploaded] {"n": 1}'
    assert transcript.stop_reason == "completed"


def test_a_step_without_criteria_completes_once_the_agent_replied() -> None:
    transcript = run(sim({"goal": "chat"}), ScriptAgent(says("hi")))
    assert transcript.steps[0].status == "complete"
    assert "sets no success criteria" in transcript.steps[0].rationale


def test_the_whole_conversation_is_capped() -> None:
    steps = [{"goal": f"g{i}", "checks": [contains(f"r{i}")], "max_turns": 100} for i in range(3)]
    transcript = run(sim(*steps), ScriptAgent(says("never")), turn_cap=5)
    assert transcript.stop_reason == "turn_cap"
    assert transcript.turns == 5
    assert transcript.steps[0].status == "incomplete"
    assert "hit the cap of 5 turns" in transcript.steps[0].rationale
    assert [s.status for s in transcript.steps[1:]] == ["blocked", "blocked"]


def test_the_default_cap_is_100_turns() -> None:
    transcript = run(
        sim({"goal": "g", "checks": [contains("never")], "max_turns": 100}, {"goal": "h"}), ScriptAgent(says("no"))
    )
    # max_turns 100 on the first step: the step fails at 100 turns, the cap is not exceeded.
    assert transcript.turns == 100


def test_agent_first_when_the_agent_initiates() -> None:
    agent = ScriptAgent(lambda r: "Welcome!" if not r.messages else "ok")
    transcript = run(sim({"goal": "g", "checks": [contains("ok")]}, initiator="agent"), agent)
    assert agent.requests[0].messages == []
    assert isinstance(transcript.events[0], AgentEvent)
    assert transcript.events[0].messages == ["Welcome!"]
    assert transcript.steps[0].completed_at_turn == 1


# -- tools ------------------------------------------------------------------------------------------------


def _tool_agent(request: AgentInput) -> Any:
    async def act() -> AgentReply:
        result = await request.tools.acall("lookup_order", order_id="A1")
        return AgentReply(messages=[f"result: {result}"])

    return act()


SHOP = AGENT.validate_python(
    {
        "type": "python",
        "callable": "x:y",
        "tools": [
            {"name": "lookup_order", "parameters": {"type": "object", "properties": {"order_id": {"type": "string"}}}},
            {"name": "refund_order", "requires_approval": True},
        ],
    }
)


def test_tool_fakes_answer_and_every_call_is_recorded() -> None:
    fake = ToolFake(tool="lookup_order", arguments={"order_id": "A1"}, result={"status": "shipped"})
    transcript = run(
        sim({"goal": "g", "max_turns": 1}), ScriptAgent(_tool_agent), agent_config=SHOP, suite_fakes=[fake]
    )
    [call] = transcript.tool_calls()
    assert (call.name, call.status, call.result, call.fake) == (
        "lookup_order",
        "faked",
        {"status": "shipped"},
        "suite tool_fakes[0]",
    )
    assert "shipped" in texts(transcript, AgentEvent)[0]


def test_an_unmatched_tool_call_says_plainly_it_did_not_run() -> None:
    transcript = run(sim({"goal": "g", "max_turns": 1}), ScriptAgent(_tool_agent), agent_config=SHOP)
    [call] = transcript.tool_calls()
    assert call.status == "not_executed"
    assert call.error is not None
    assert call.error.startswith("not executed in test mode: no tool fake matches lookup_order(order_id='A1')")
    # The agent saw the same explicit answer, never a silent success.
    assert "not executed in test mode" in texts(transcript, AgentEvent)[0]


def test_live_mode_stops_the_case_on_a_tool_that_needs_approval() -> None:
    def refund(request: AgentInput) -> Any:
        async def act() -> AgentReply:
            await request.tools.acall("refund_order", order_id="A1")
            return AgentReply(messages=["refund done"])

        return act()

    transcript = run(sim({"goal": "g"}, {"goal": "h"}), ScriptAgent(refund), agent_config=SHOP, tool_mode="live")
    assert transcript.stop_reason == "needs_approval"
    [call] = transcript.tool_calls()
    assert call.status == "needs_approval"
    # Waiting for a person is not the agent's failure: the step is unsure with that reason, the rest not reached.
    assert [s.status for s in transcript.steps] == ["unsure", "not_reached"]
    assert "waiting for a person's approval of" in transcript.steps[0].rationale


def test_live_mode_runs_registered_tool_functions() -> None:
    calls: list[str] = []

    def lookup_order(order_id: str) -> dict[str, str]:
        calls.append(order_id)
        return {"status": "delivered"}

    transcript = run(
        sim({"goal": "g", "max_turns": 1}),
        ScriptAgent(_tool_agent),
        agent_config=SHOP,
        tool_mode="live",
        tool_functions={"lookup_order": lookup_order},
    )
    [call] = transcript.tool_calls()
    assert (call.status, call.result, calls) == ("executed", {"status": "delivered"}, ["A1"])


# -- failures ---------------------------------------------------------------------------------------------


def test_an_agent_timeout_ends_the_case_as_error_naming_case_and_turn() -> None:
    async def slow(request: AgentInput) -> str:
        await asyncio.sleep(5)
        return "late"

    transcript = run(sim({"goal": "g"}), ScriptAgent(slow), agent_timeout=0.05)
    assert transcript.stop_reason == "error"
    assert transcript.error == "the agent did not answer within 0.05 s (case 'sim', turn 1)"
    assert isinstance(transcript.events[-1], ErrorEvent)
    assert transcript.events[-1].where == "agent"
    assert transcript.steps[0].status == "not_reached"


def test_an_agent_exception_is_an_error_case_not_a_crash() -> None:
    def broken(request: AgentInput) -> str:
        raise KeyError("order")

    transcript = run(sim({"goal": "g"}), ScriptAgent(broken))
    assert transcript.stop_reason == "error"
    assert transcript.error == "the agent failed on turn 1 of case 'sim': KeyError: 'order'"


# -- scenarios --------------------------------------------------------------------------------------------


def test_scenario_ends_when_the_user_signals_done() -> None:
    user = LineUser(
        lambda r: (
            UserReply(text=None, done=True, reason="goal_reached: got it") if r.conversation else UserReply(text="hi")
        )
    )
    transcript = run({"kind": "scenario", "name": "s", "goal": "get help"}, ScriptAgent(says("here you go")), user)
    assert transcript.stop_reason == "user_ended"
    assert transcript.turns == 1
    assert user.requests[0].can_end
    [outcome] = transcript.steps
    # The user's "done" ends the conversation but decides nothing: an open goal goes to the judge.
    assert (outcome.status, outcome.verdict) == ("unsure", None)
    assert outcome.rationale.startswith("the simulated user ended the conversation (goal_reached: got it)")


def test_scenario_runs_out_of_turns() -> None:
    transcript = run({"kind": "scenario", "name": "s", "goal": "g", "max_turns": 4}, ScriptAgent(says("hm")))
    assert transcript.stop_reason == "max_turns"
    assert transcript.turns == 4
    assert transcript.steps[0].status == "unsure"  # an open goal: the judge's goal satisfaction decides


def test_scenario_checks_complete_the_goal() -> None:
    replies = iter(["hm", "your refund is approved"])
    transcript = run(
        {"kind": "scenario", "name": "s", "goal": "g", "checks": [contains("approved")]},
        ScriptAgent(lambda r: next(replies)),
    )
    assert transcript.stop_reason == "completed"
    assert transcript.steps[0].completed_at_turn == 2


def test_scenario_initiated_by_the_agent() -> None:
    agent = ScriptAgent(lambda r: "Hello, how can I help?" if not r.messages else "ok")
    user = LineUser()
    run({"kind": "scenario", "name": "s", "goal": "g", "initiator": "agent", "max_turns": 1}, agent, user)
    assert user.requests[0].conversation == [("agent", "Hello, how can I help?")]


def test_persona_and_seed_reach_the_user() -> None:
    user = LineUser()
    persona = Persona(name="terse", personality="Short.", language="de")
    run(
        {"kind": "scenario", "name": "s", "goal": "g", "max_turns": 1},
        ScriptAgent(says("ok")),
        user,
        persona=persona,
        seed=7,
    )
    assert (user.requests[0].persona, user.requests[0].language, user.requests[0].seed) == (persona, "de", 7)


# -- golden -----------------------------------------------------------------------------------------------

GOLDEN_TURNS = [
    {"user": "one", "expect": {"message": "expected one"}},
    {"user": "two", "expect": {"message": "expected two", "tool_calls": [{"name": "lookup_order"}]}},
    {"event": "hangup"},
]


def test_golden_simple_replay_continues_from_the_actual_replies() -> None:
    agent = ScriptAgent(lambda r: f"actual {r.turn}")
    transcript = run({"kind": "golden", "name": "g", "turns": GOLDEN_TURNS}, agent)
    assert transcript.stop_reason == "completed"
    assert [m["content"] for m in agent.requests[2].messages] == [
        "one",
        "actual 1",
        "two",
        "actual 2",
        "[event: hangup]",
    ]
    records = transcript.golden_turns
    assert [(r.user, r.expected_message, r.actual_messages, r.history) for r in records[:2]] == [
        ("one", "expected one", ["actual 1"], "actual"),
        ("two", "expected two", ["actual 2"], "actual"),
    ]
    assert records[1].expected_tools == ["lookup_order"]
    assert records[2].event == "hangup"


def test_golden_stable_replay_shows_the_expected_history() -> None:
    agent = ScriptAgent(lambda r: f"actual {r.turn}")
    transcript = run({"kind": "golden", "name": "g", "replay": "stable", "turns": GOLDEN_TURNS}, agent)
    assert [m["content"] for m in agent.requests[2].messages] == [
        "one",
        "expected one",
        "two",
        "expected two",
        "[event: hangup]",
    ]
    assert [r.actual_messages for r in transcript.golden_turns] == [["actual 1"], ["actual 2"], ["actual 3"]]
    assert transcript.golden_turns[0].history == "expected"


def test_transcript_round_trips_through_json() -> None:
    transcript = run(
        sim({"goal": "a", "checks": [contains("x")], "max_turns": 1}, {"goal": "b"}), ScriptAgent(says("x"))
    )
    again = Transcript.model_validate_json(transcript.model_dump_json())
    assert again == transcript


@pytest.mark.parametrize("kind", ["golden", "scenario", "simulation"])
def test_every_kind_records_its_kind(kind: str) -> None:
    data: dict[str, dict[str, Any]] = {
        "golden": {"kind": "golden", "name": "c", "turns": [{"user": "hi"}]},
        "scenario": {"kind": "scenario", "name": "c", "goal": "g", "max_turns": 1},
        "simulation": sim({"goal": "g", "max_turns": 1}),
    }
    assert run(data[kind], ScriptAgent(says("ok"))).kind == kind


def test_a_closing_message_with_the_done_signal_is_recorded() -> None:
    user = LineUser(
        lambda r: (
            UserReply(text="Thanks, bye!", done=True, reason="goal_reached") if r.conversation else UserReply(text="hi")
        )
    )
    transcript = run({"kind": "scenario", "name": "s", "goal": "g"}, ScriptAgent(says("done")), user)
    assert texts(transcript, UserEvent) == ["hi", "Thanks, bye!"]
    assert transcript.stop_reason == "user_ended"
    assert transcript.turns == 1


def test_a_failing_simulated_user_ends_the_case_as_error_with_the_reason() -> None:
    from simulator.errors import ModelError

    def broken(request: UserTurnRequest) -> UserReply:
        raise ModelError("user model 'fake/user' gave no valid UserMove JSON in 3 attempts")

    transcript = run(sim({"goal": "g"}), ScriptAgent(says("ok")), LineUser(broken))
    assert transcript.stop_reason == "error"
    assert (
        transcript.error
        == "the simulated user failed: user model 'fake/user' gave no valid UserMove JSON in 3 attempts"
    )
    assert isinstance(transcript.events[-1], ErrorEvent)
    assert transcript.events[-1].where == "user"
