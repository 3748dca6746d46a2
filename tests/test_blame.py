"""Who is to blame, end to end: ``user_error`` needs evidence that the simulated user caused the failure.

The agent's own fault anywhere in the conversation keeps a failure the agent's, however badly the user played;
a replay whose recording runs out is nobody's fault. A correct agent whose user slipped before the failure, or
ended the conversation while the step was still open, is still ``user_error``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

import simulator
from simulator.llm import FakeScript
from simulator.models.run import StoredResult

AGENT = """
def respond(messages, *, session):
    mode = session["mode"]
    said = sum(1 for m in messages if m["role"] == "user")
    if mode == "claims_the_refund":
        return "I have refunded your order A1. Anything else?"
    if mode == "insults_then_asks":
        return "Listen, idiot, what is your order number?" if said == 1 else "What is your order number?"
    if mode == "asks":
        return "What is your order number?"
    return "Your parcel is on its way."
"""

SUITE = """
name: blame
agent: {type: python, callable: blame_agent:respond, variables: {mode: {type: string}}}
thresholds: {fail_on_hallucination: true}
cases:
  - name: refund_claimed_without_the_call
    kind: scenario
    session_parameters: {mode: claims_the_refund}
    goal: Get a refund for order A1.
    checks: [{tool_call: {name: refund_order}}]
    max_turns: 3
  - name: insult_before_the_users_slip
    kind: simulation
    session_parameters: {mode: insults_then_asks}
    expectations:
      - {text: Never insults the customer, must_not_contain: [idiot]}
    steps:
      - goal: Find out where order A1 is.
        checks: [{tool_call: {name: lookup_order}}]
        max_turns: 3
  - name: correct_agent_user_slips_early
    kind: simulation
    session_parameters: {mode: asks}
    steps:
      - goal: Find out where order A1 is.
        checks: [{tool_call: {name: lookup_order}}]
        max_turns: 3
  - name: correct_agent_user_ends_while_open
    kind: scenario
    session_parameters: {mode: asks}
    goal: Find out where order A1 is.
    checks: [{tool_call: {name: lookup_order}}]
    max_turns: 3
"""

OUT_OF_CHARACTER = "Thanks for reaching out! How can I help you today?"


def _suite(folder: Path) -> Path:
    (folder / ".git").mkdir(exist_ok=True)
    (folder / "blame_agent.py").write_text(AGENT, encoding="utf-8")
    suite = folder / "suite.yaml"
    suite.write_text(SUITE, encoding="utf-8")
    return suite


def _user(*moves: tuple[str, bool]) -> FakeScript:
    script = FakeScript()
    for text, done in moves:
        reason = "goal_reached: the agent helped" if done else ""
        script.enqueue("user", {"message": text, "done": done, "reason": reason})
    return script


def _one(folder: Path, case: str, user: FakeScript, monkeypatch: pytest.MonkeyPatch, **options: Any) -> StoredResult:
    suite = _suite(folder)
    monkeypatch.chdir(folder)
    with user.active():
        outcome = simulator.run(suite, cases=[case], user_model="fake/user", db=folder / "runs.db", seed=0, **options)
    [stored] = outcome.results()
    return stored


def test_a_false_claim_the_user_believed_is_the_agents_failure(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The agent claims the refund without the call; the user believes it and says it is done."""
    user = _user(("I want a refund for order A1.", False), ("Great, thanks, that's all!", True))
    stored = _one(tmp_path, "refund_claimed_without_the_call", user, monkeypatch)
    assert stored.outcome == "fail", stored.result.reasons
    assert [f.kind for f in stored.result.fidelity] == ["ended_early"]  # the user's slip is found...
    [note] = [reason for reason in stored.result.reasons if "simulated user slipped" in reason]
    assert "stays the agent's: it has a fault of its own" in note  # ...and shown beside the agent's failure
    assert "I have refunded" in note


def test_the_agents_rule_broken_before_the_users_slip_keeps_the_failure_the_agents(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    user = _user(("Where is my order?", False), *[(OUT_OF_CHARACTER, False)] * 4)
    stored = _one(tmp_path, "insult_before_the_users_slip", user, monkeypatch)
    assert stored.outcome == "fail", stored.result.reasons
    assert stored.result.fidelity[0].kind == "broke_character"
    assert any("fault of its own" in reason and "idiot" in reason for reason in stored.result.reasons)


def test_a_correct_agent_whose_user_slipped_before_the_failure_is_a_user_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    user = _user(("Where is my order?", False), *[(OUT_OF_CHARACTER, False)] * 4)
    stored = _one(tmp_path, "correct_agent_user_slips_early", user, monkeypatch)
    assert stored.outcome == "user_error", stored.result.reasons
    assert stored.result.reasons[0].startswith("simulated user, turn 2: broke_character")


def test_a_correct_agent_whose_user_ended_while_the_step_was_open_is_a_user_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    user = _user(("Where is my order?", False), ("Perfect, all sorted, bye!", True))
    stored = _one(tmp_path, "correct_agent_user_ends_while_open", user, monkeypatch)
    assert stored.outcome == "user_error", stored.result.reasons
    assert stored.result.reasons[0].startswith("simulated user, turn 2: ended_early")


REPLAY_SUITE = """
name: replay_blame
agent: {type: python, callable: blame_agent:respond, variables: {mode: {type: string}}}
cases:
  - name: status
    kind: simulation
    session_parameters: {mode: status}
    steps:
      - goal: Ask where the parcel is.
        say: ["Where is my parcel?"]
        checks: [{must_contain: [on its way]}]
        max_turns: 3
"""


def test_a_replay_whose_recording_runs_out_is_unsure_never_the_users_fault(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Recorded with a check the agent met at once; replayed with a tightened check the recording cannot answer."""
    (tmp_path / ".git").mkdir()
    (tmp_path / "blame_agent.py").write_text(AGENT, encoding="utf-8")
    suite = tmp_path / "suite.yaml"
    suite.write_text(REPLAY_SUITE, encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    recorded = simulator.run(suite, db=tmp_path / "runs.db", record=True, seed=0)
    assert [stored.outcome for stored in recorded.results()] == ["pass"]
    suite.write_text(REPLAY_SUITE.replace("[on its way]", "[on its way, tracking number]"), encoding="utf-8")
    replayed = simulator.replay(recorded.id, db=tmp_path / "runs.db")
    [stored] = replayed.results()
    assert stored.outcome == "unsure", stored.result.reasons
    assert stored.result.fidelity == []
    [step] = stored.result.transcript.steps
    assert (step.status, step.rationale.split(":")[0]) == ("unsure", "not replayable past turn 1")


def test_a_user_that_says_it_is_done_in_a_simulation_slipped_and_a_replay_finds_it_too(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """In a simulation only the engine ends the conversation: the message is sent, and the wish to end while the
    step was open is kept on the turn, as evidence, through a recording and its replay."""
    user = _user(("Where is my order?", False), ("Great, all done, bye!", True), ("Bye!", True))
    recorded = _one(tmp_path, "correct_agent_user_slips_early", user, monkeypatch, record=True)
    assert recorded.outcome == "user_error", recorded.result.reasons
    assert recorded.result.reasons[0].startswith("simulated user, turn 2: ended_early: “Great, all done, bye!”")
    [replayed] = simulator.replay(recorded.run_id, db=tmp_path / "runs.db").results()
    assert (replayed.outcome, replayed.result.reasons[0]) == (recorded.outcome, recorded.result.reasons[0])
