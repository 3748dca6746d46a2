"""One behaviour object per kind of case (``simulator.kinds``): what differs between the kinds, in one place."""

from __future__ import annotations

from typing import Any

import pytest

from simulator.kinds import KINDS, GoldenKind, ScenarioKind, ScriptedInput, SimulationKind, kind_named, kind_of
from simulator.models import EventSpec, GoldenCase, ScenarioCase, SimulationCase


def golden(**extra: Any) -> GoldenCase:
    turns = [{"user": "Hi"}, {"event": "opened", "expect": {"message": "Hello", "tool_calls": [{"name": "look"}]}}]
    return GoldenCase.model_validate({"kind": "golden", "name": "g", "turns": turns, **extra})


def scenario(**extra: Any) -> ScenarioCase:
    return ScenarioCase.model_validate({"kind": "scenario", "name": "s", "goal": "Get a refund", **extra})


def simulation() -> SimulationCase:
    steps = [
        {"goal": "Ask for the order", "success_criteria": "the agent asks", "max_turns": 4, "min_turns": 2},
        {"static_utterance": "It is 42."},
        {"event": "timeout"},
    ]
    return SimulationCase.model_validate({"kind": "simulation", "name": "m", "steps": steps, "initiator": "agent"})


def test_there_is_one_kind_per_case_kind_found_by_name() -> None:
    assert sorted(KINDS) == ["golden", "scenario", "simulation"]
    assert isinstance(kind_of(golden()), GoldenKind)
    assert isinstance(kind_of(scenario()), ScenarioKind)
    assert isinstance(kind_of(simulation()), SimulationKind)
    assert kind_named("scenario") is kind_of(scenario())
    assert all(kind.passes_when for kind in KINDS.values())


def test_golden_replays_its_turns_without_a_persona_and_checks_nothing_while_it_runs() -> None:
    case, kind = golden(replay="stable"), kind_of(golden())
    assert (kind.plays_persona, kind.checks_replies, kind.user_can_end) == (False, False, False)
    assert kind.step_count(case) == 2
    assert kind.initiator(case) == "user"
    assert kind.scripted_input(case, 0) == ScriptedInput(text="Hi", source="golden")
    assert kind.scripted_input(case, 1) == ScriptedInput(event=EventSpec(name="opened"), source="golden")
    assert kind.step_label(case, 1) == "turn 2"
    assert kind.replays_expected_history(case)
    assert not kind.replays_expected_history(golden())
    assert kind.judge_questions(case) == ["turn 2: expected message (semantic match)"]
    assert kind.tool_names_written(case) == [(("turns", 1, "expect", "tool_calls", 0, "name"), "look")]
    assert kind.goal_description(case) is None
    record = kind.turn_record(case, 1, None)
    assert (record.event, record.expected_tools, record.history) == ("opened", ["look"], "expected")


def test_a_scenario_is_one_goal_the_user_may_end() -> None:
    case, kind = scenario(max_turns=5), kind_of(scenario())
    assert (kind.plays_persona, kind.checks_replies, kind.user_can_end) == (True, True, True)
    assert kind.step_count(case) == 1
    assert kind.scripted_input(case, 0) is None
    assert kind.user_brief(case, 0).goal == "Get a refund"
    assert kind.max_turns(case, 0) == 5
    assert kind.step_number(0) is None
    assert (kind.outcome_label(0), kind.report_label(0)) == ("goal", "Goal")
    assert kind.out_of_turns_stop == "max_turns"
    assert kind.stop_when_decided(case, 0, met=True) == "completed"
    assert kind.stop_when_decided(case, 0, met=False) == "max_turns"
    assert kind.report_goal(case) == "Get a refund"


@pytest.mark.parametrize(
    ("extra", "open_goal"),
    [({}, True), ({"success_criteria": "refunded"}, False), ({"checks": [{"must_contain": ["refund"]}]}, False)],
)
def test_a_scenario_goal_is_open_when_nothing_can_check_it(extra: dict[str, Any], open_goal: bool) -> None:
    assert kind_of(scenario()).has_open_goal(scenario(**extra)) is open_goal


def test_a_simulation_works_step_by_step() -> None:
    case, kind = simulation(), kind_of(simulation())
    assert kind.initiator(case) == "agent"
    assert kind.step_count(case) == 3
    assert kind.scripted_input(case, 0) is None
    assert kind.scripted_input(case, 1) == ScriptedInput(text="It is 42.")
    assert kind.scripted_input(case, 2) == ScriptedInput(event=EventSpec(name="timeout"))
    assert (kind.max_turns(case, 0), kind.min_turns(case, 0)) == (4, 2)
    assert (kind.max_turns(case, 1), kind.min_turns(case, 1)) == (1, 1)
    assert kind.step_label(case, 2) == "event: timeout"
    # The user never sees the success criteria; the check does.
    assert "the agent asks" not in str(kind.user_brief(case, 0))
    assert kind.criteria(case, 0).criteria == "the agent asks"
    assert kind.stop_when_decided(case, 0, met=True) is None
    assert kind.stop_when_decided(case, 2, met=True) == "completed"
    assert kind.out_of_turns_stop == "step_failed"
    assert kind.goal_description(case) == "Ask for the order (satisfied when: the agent asks)"
    assert kind.judge_questions(case) == ["step 1: success criteria"]
    assert kind.report_criteria(case, 0) == "the agent asks"
    assert kind.report_criteria(case, 7) is None


@pytest.mark.parametrize(
    ("kind", "one_step", "covers_steps", "key", "heading"),
    [
        (GoldenKind(), False, False, "turns", "Steps"),
        (ScenarioKind(), False, False, "goal", "Goal"),
        (SimulationKind(), True, True, "steps", "Steps"),
    ],
)
def test_each_kind_answers_the_questions_other_modules_used_to_ask_of_its_name(
    kind: Any, one_step: bool, covers_steps: bool, key: str, heading: str
) -> None:
    assert (kind.one_step_at_a_time, kind.covers_steps, kind.identifying_key, kind.steps_heading) == (
        one_step,
        covers_steps,
        key,
        heading,
    )


def test_what_each_kind_expects_of_the_agent_is_listed_in_the_order_written_with_the_part_checked_on() -> None:
    check = {"must_contain": ["refund"]}
    steps = [{"goal": "Ask", "success_criteria": "asked", "checks": [check]}, {"static_utterance": "ok"}]
    sim = SimulationCase.model_validate({"kind": "simulation", "name": "m", "steps": steps})
    found = [(c.where, c.part, c.criteria, c.check is not None) for c in kind_of(sim).criteria_written(sim)]
    assert found == [
        (("steps", 0, "success_criteria"), ("step", 0), "asked", False),
        (("steps", 0, "checks", 0), ("step", 0), None, True),
    ]
    goal = scenario(success_criteria="refunded", checks=[check])
    written = [(c.where, c.part, c.criteria) for c in kind_of(goal).criteria_written(goal)]
    assert written == [(("success_criteria",), ("goal", 0), "refunded"), (("checks", 0), ("goal", 0), None)]
    turns = golden()
    assert [(c.where, c.part) for c in kind_of(turns).criteria_written(turns)] == [
        (("turns", 1, "expect"), ("turn", 2))
    ]
    assert [kind_of(turns).expected_reply(turns, i) for i in range(2)] == [None, "Hello"]
