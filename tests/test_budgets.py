"""Budgets as checks: each figure a suite or case sets is one required score of metric ``budget``, met within it,
not met over it (naming the figure and the budget), unsure when the run could not measure it; a case's figures
replace the suite's one by one."""

from __future__ import annotations

import textwrap
from pathlib import Path
from typing import Any

import pytest

import simulator
from simulator.errors import ConfigErrors
from simulator.judges.budgets import budget_scores
from simulator.llm import FakeScript
from simulator.loading import load_suite
from simulator.metrics import case_outcome
from simulator.models import Budgets, Suite
from simulator.models.transcript import AgentEvent, ReportedUsage, Transcript, Usage, UserEvent


def conversation(
    *latencies_s: float, usage: Usage | None = None, reported: list[ReportedUsage | None] | None = None
) -> Transcript:
    """A conversation whose agent took these seconds per turn, with the agent's usage as Simulator counted it (a
    litellm agent) or as each reply reported it (an http agent), or none."""
    events: list[Any] = []
    for turn, seconds in enumerate(latencies_s, start=1):
        events.append(UserEvent(turn=turn, text="hi", source="scripted"))
        said = reported[turn - 1] if reported else None
        events.append(AgentEvent(turn=turn, messages=["hello"], latency_ms=seconds * 1000, usage=said))
    return Transcript(
        case="c", kind="scenario", events=events, turns=len(latencies_s), usage={"agent": usage} if usage else {}
    )


USED = Usage(prompt_tokens=300, completion_tokens=100, calls=2, cost=0.004)


@pytest.mark.parametrize(
    ("budgets", "transcript", "verdict", "reason"),
    [
        (
            {"turn_seconds": 2},
            conversation(0.5, 1.2),
            "met",
            "every reply within 2 s (the slowest, turn 2, took 1.2 s)",
        ),
        (
            {"turn_seconds": 2},
            conversation(0.5, 2.4, 3.0),
            "not_met",
            "turn 2: the agent took 2.4 s, the budget is 2 s; turn 3: the agent took 3.0 s, the budget is 2 s",
        ),
        ({"turn_seconds": 2}, conversation(), "n/a", "the agent never replied: no turn to time"),
        (
            {"conversation_seconds": 5},
            conversation(2, 2.5),
            "met",
            "the agent took 4.5 s over the conversation, the budget is 5 s",
        ),
        (
            {"conversation_seconds": 5},
            conversation(2, 2.5, 1),
            "not_met",
            "the agent took 5.5 s over the conversation, the budget is 5 s",
        ),
        ({"tokens": 400}, conversation(1, usage=USED), "met", "the agent used 400 tokens, the budget is 400"),
        ({"tokens": 399}, conversation(1, usage=USED), "not_met", "the agent used 400 tokens, the budget is 399"),
        ({"cost": 0.01}, conversation(1, usage=USED), "met", "the agent cost $0.0040, the budget is $0.01"),
        ({"cost": 0.001}, conversation(1, usage=USED), "not_met", "the agent cost $0.0040, the budget is $0.001"),
        (
            {"tokens": 400},
            conversation(1, 1, reported=[ReportedUsage(prompt_tokens=200), ReportedUsage(prompt_tokens=150)]),
            "met",
            "the agent used 350 tokens (as its responses reported them, 2 of 2 replies), the budget is 400",
        ),
        (
            {"tokens": 300},
            conversation(1, 1, reported=[ReportedUsage(prompt_tokens=200), None]),
            "unsure",
            "the budget of 300 tokens cannot be checked: the agent reported 200 tokens for 1 of its 2 replies and "
            "nothing for the others",
        ),
        (
            {"tokens": 100},
            conversation(1, 1, reported=[ReportedUsage(prompt_tokens=200), None]),
            "not_met",
            "the agent used 200 tokens (as its responses reported them, 1 of 2 replies), the budget is 100",
        ),
        (
            {"cost": 0.5},
            conversation(1, reported=[ReportedUsage(prompt_tokens=200)]),
            "unsure",
            "the budget of $0.5 cannot be checked: the agent reported its tokens but not their price (Simulator did "
            "not make its model calls)",
        ),
        ({"turns": 2}, conversation(1, 1), "met", "the conversation took 2 turns, the budget is 2"),
        ({"turns": 2}, conversation(1, 1, 1), "not_met", "the conversation took 3 turns, the budget is 2"),
    ],
)
def test_each_budget_is_met_within_it_and_not_met_over_it(
    budgets: dict[str, Any], transcript: Transcript, verdict: str, reason: str
) -> None:
    [score] = budget_scores(transcript, Budgets.model_validate(budgets))
    [name] = budgets
    assert (score.metric, score.check, score.source, score.verdict, score.reason, score.required) == (
        "budget", f"budget: {name}", "deterministic", verdict, reason, True,
    )  # fmt: skip


@pytest.mark.parametrize(
    ("budgets", "usage", "words"),
    [
        ({"tokens": 100}, None, "the budget of 100 tokens cannot be checked: the agent reported no usage"),
        ({"cost": 0.5}, None, "the budget of $0.5 cannot be checked: the agent reported no usage"),
        (
            {"cost": 0.5},
            Usage(prompt_tokens=10, completion_tokens=5, calls=1, cost=None),
            "the budget of $0.5 cannot be checked: litellm does not know the price of the agent's model",
        ),
    ],
)
def test_a_budget_the_run_could_not_measure_is_unsure_never_passed_nor_failed(
    budgets: dict[str, Any], usage: Usage | None, words: str
) -> None:
    transcript = conversation(1, usage=usage)
    [score] = budget_scores(transcript, Budgets.model_validate(budgets))
    assert score.verdict == "unsure"
    assert score.reason.startswith(words)
    assert case_outcome(transcript, [score]) == ("unsure", [f"budget: {next(iter(budgets))}: {score.reason}"])


def test_every_figure_set_is_checked_in_order_and_a_breach_fails_the_case() -> None:
    transcript = conversation(1, 3, usage=USED)
    budgets = Budgets(turn_seconds=2, conversation_seconds=10, tokens=1000, cost=1.0, turns=5)
    scores = budget_scores(transcript, budgets)
    assert [(s.check, s.verdict) for s in scores] == [
        ("budget: turn_seconds", "not_met"),
        ("budget: conversation_seconds", "met"),
        ("budget: tokens", "met"),
        ("budget: cost", "met"),
        ("budget: turns", "met"),
    ]
    assert case_outcome(transcript, scores) == (
        "fail", ["budget: turn_seconds: turn 2: the agent took 3.0 s, the budget is 2 s"],
    )  # fmt: skip
    assert budget_scores(transcript, None) == []


def test_a_cases_budgets_replace_the_suites_figure_by_figure() -> None:
    suite = Suite.model_validate(
        {
            "name": "s",
            "budgets": {"turn_seconds": 2, "turns": 4},
            "cases": [
                {"kind": "scenario", "name": "own", "goal": "g", "budgets": {"turn_seconds": 5, "tokens": 10}},
                {"kind": "scenario", "name": "inherits", "goal": "g"},
            ],
        }
    )
    own, inherits = suite.cases
    assert own.budgets is not None
    assert own.budgets.over(suite.budgets) == Budgets(turn_seconds=5, turns=4, tokens=10)
    assert inherits.budgets is None
    # Unused, budgets are left out of what is stored: suites hash as they did before.
    assert "budgets" not in inherits.model_dump(mode="json")
    assert suite.model_dump(mode="json")["budgets"] == {"turn_seconds": 2.0, "turns": 4}


AGENT = """
def respond(messages):
    return "Your refund is approved."
"""

SUITE = """\
name: budgets
agent: agent.yaml
budgets:
  turns: 1
  tokens: 50
cases:
  - kind: simulation
    name: one_turn
    steps:
      - static_utterance: I want a refund.
        checks: [{must_contain: [approved]}]
  - kind: simulation
    name: two_turns
    budgets: {turns: 2}
    steps:
      - static_utterance: I want a refund.
      - static_utterance: Thanks.
  - kind: simulation
    name: too_many_turns
    steps:
      - static_utterance: I want a refund.
      - static_utterance: Thanks.
"""


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    (tmp_path / ".git").mkdir()
    (tmp_path / "toy_agent.py").write_text(textwrap.dedent(AGENT), encoding="utf-8")
    (tmp_path / "agent.yaml").write_text("type: python\ncallable: toy_agent:respond\n", encoding="utf-8")
    (tmp_path / "suite.yaml").write_text(SUITE, encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    return tmp_path


def test_a_run_scores_the_suites_and_cases_budgets(project: Path) -> None:
    outcome = simulator.run("suite.yaml", db=project / "runs.db", seed=1)
    results = {stored.case: stored.result for stored in outcome.iter_results()}
    budgets = {
        name: [(score.check, score.verdict) for score in result.scores if score.metric == "budget"]
        for name, result in results.items()
    }
    # A python agent reports no usage: its token budget is unsure, never passed; its turns are counted.
    assert budgets == {
        "one_turn": [("budget: tokens", "unsure"), ("budget: turns", "met")],
        "two_turns": [("budget: tokens", "unsure"), ("budget: turns", "met")],
        "too_many_turns": [("budget: tokens", "unsure"), ("budget: turns", "not_met")],
    }
    assert {name: result.outcome for name, result in results.items()} == {
        "one_turn": "unsure", "two_turns": "unsure", "too_many_turns": "fail",
    }  # fmt: skip
    assert "budget: turns: the conversation took 2 turns, the budget is 1" in results["too_many_turns"].reasons


LITELLM_SUITE = """\
name: budgets
agent: {type: litellm, model: fake/agent, instructions: You approve refunds.}
budgets: {tokens: 20, cost: 0.05}
cases:
  - kind: simulation
    name: refund
    steps:
      - static_utterance: I want a refund.
        checks: [{must_contain: [approved]}]
"""


@pytest.mark.parametrize(
    ("price", "verdicts", "outcome"),
    [(0.01, ["met", "met"], "pass"), (0.1, ["met", "not_met"], "fail")],
)
def test_a_litellm_agents_tokens_and_cost_are_held_to_their_budgets(
    project: Path, price: float, verdicts: list[str], outcome: str
) -> None:
    (project / "suite.yaml").write_text(LITELLM_SUITE, encoding="utf-8")
    script = FakeScript().enqueue("agent", "Your refund is approved.").price("agent", prompt=0.0, completion=price)
    with script.active():
        run = simulator.run("suite.yaml", db=project / "runs.db", seed=1)
    [result] = [stored.result for stored in run.iter_results()]
    assert [score.verdict for score in result.scores if score.metric == "budget"] == verdicts
    assert result.outcome == outcome


@pytest.mark.parametrize(
    ("budgets", "message"),
    [
        ("{turn_seconds: 0}", "cases[0].budgets.turn_seconds: must be more than 0, got 0"),
        ("{tokens: 0}", "cases[0].budgets.tokens: must be at least 1, got 0"),
        ("{turns: 1.5}", "cases[0].budgets.turns: expected a whole number, got the number 1.5"),
        ("{cost: -1}", "cases[0].budgets.cost: must be more than 0, got -1"),
        ("{turn_second: 2}", "cases[0].budgets.turn_second: unknown key 'turn_second'; did you mean 'turn_seconds'?"),
        ("{}", "cases[0].budgets: budgets sets no figure: give turn_seconds, conversation_seconds, tokens, cost"),
    ],
)
def test_a_bad_budget_is_a_located_error(tmp_path: Path, budgets: str, message: str) -> None:
    path = tmp_path / "suite.yaml"
    path.write_text(
        "name: s\nagent: {type: python, callable: m:f}\n"
        f"cases:\n  - kind: scenario\n    name: c\n    goal: g\n    budgets: {budgets}\n",
        encoding="utf-8",
    )
    with pytest.raises(ConfigErrors) as raised:
        load_suite(path)
    rendered = "\n".join(error.render() for error in raised.value.errors)
    assert "suite.yaml:7:" in rendered  # the line of the case's budgets
    assert message in rendered
