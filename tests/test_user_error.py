"""``user_error``: a failure the simulated user caused, end to end with a fake user model that breaks character.
Counted apart and left out of correctness; ``--count-user-errors`` counts it as the agent's fail; shown apart in
the terminal, JUnit and the pytest plugin; ``personas list --run``; runs stored before it still load."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

import simulator
from simulator.cli import app
from simulator.llm import FakeScript
from simulator.metrics import correctness, counts, persona_fidelity, repeat_stats
from simulator.models.run import StoredResult
from simulator.models.scores import CaseResult
from simulator.models.summary import Counts
from simulator.reports.junit import render_junit
from simulator.store import RunStore
from tests.factories import events_in, judged_turns, review_reply, run

ROOT = Path(__file__).resolve().parent.parent
DEMO = ROOT / "suites" / "demo" / "simulations.yaml"
CASE = "order_status_needs_the_order_number"
#: What the fake user model says every turn: the support agent's line, never the order number.
BAD_LINE = "Thanks for reaching out! How can I help you today?"


def bad_user() -> FakeScript:
    return FakeScript().enqueue("user", {"message": BAD_LINE, "done": False, "reason": "helping"}, times=20)


def run_with_bad_user(db: Path, **options: Any) -> simulator.RunOutcome:
    with bad_user().active():
        return simulator.run(DEMO, cases=[CASE], user_model="fake/user", db=db, seed=0, **options)


def only(outcome: simulator.RunOutcome) -> StoredResult:
    [stored] = outcome.results()
    return stored


def test_a_failure_the_user_caused_is_user_error_with_the_finding(tmp_path: Path) -> None:
    outcome = run_with_bad_user(tmp_path / "runs.db")
    stored = only(outcome)
    result = stored.result
    assert stored.outcome == result.outcome == "user_error"
    # Step 1 is a scripted line (not checked); the model speaks from turn 2 on, breaking character each time.
    assert result.user_turns_checked == result.transcript.turns - 1 >= 2
    # Each model turn breaks character; from its second one on, it also repeats itself.
    model_turns = range(2, result.transcript.turns + 1)
    broke = [(f.turn, f.evidence) for f in result.fidelity if f.kind == "broke_character"]
    assert broke == [(turn, "How can I help you today?") for turn in model_turns]
    assert [f.turn for f in result.fidelity if f.kind == "repeated_itself"] == list(model_turns)[1:]
    assert result.reasons[0] == (
        "simulated user, turn 2: broke_character: “How can I help you today?” "
        "(talks like the support agent (offers help))"
    )
    assert any("step 2" in reason for reason in result.reasons[1:])  # the agent's failed step is still said
    assert result.metrics["task_completion"] is None
    totals = outcome.record.totals
    assert totals is not None
    assert (totals.total, totals.failed, totals.user_error, totals.correctness) == (1, 0, 1, None)
    assert not outcome.passed
    assert outcome.exit_code() == 1


def test_count_user_errors_keeps_the_fail_and_says_why(tmp_path: Path) -> None:
    outcome = run_with_bad_user(tmp_path / "runs.db", count_user_errors=True)
    stored = only(outcome)
    assert stored.outcome == "fail"
    assert stored.result.fidelity  # the findings are kept either way
    assert stored.result.reasons[-1].startswith(
        "counted as the agent's failure (--count-user-errors): simulated user, turn 2: broke_character"
    )
    assert outcome.record.settings.count_user_errors
    assert outcome.record.totals is not None
    assert outcome.record.totals.correctness == 0.0


def test_a_passing_conversation_with_a_judge_asks_no_fidelity_question_of_its_own(tmp_path: Path) -> None:
    """The user's invented-fact question rides in the hallucination request; a passing conversation keeps no
    finding from its answer (only a failure the user could have caused uses it)."""
    script = FakeScript().enqueue("user", {"message": "It's ORD-10042.", "done": False, "reason": "answer"})

    def judge(messages: list[dict[str, Any]]) -> dict[str, Any]:
        # Every question answered met / satisfied / supported: the conversation passes. The user "invented"
        # its order number (the judge says so), which is kept only for a failure.
        prompt = messages[-1]["content"]
        numbers = judged_turns(prompt, "agent")
        turns = [{"turn": n, "verdict": "supported", "claim": "", "reason": "the lookup"} for n in numbers]
        users = [
            {"turn": n, "invented": True, "fact": "ORD-10042", "reason": "not in its brief"}
            for n in judged_turns(prompt, "user")
        ]
        said = [event["text"] for event in events_in(prompt) if event["role"] == "agent"]
        passed = {"verdict": "met", "reason": "yes", "satisfied": True, "quote": said[-1]}
        # One reply for every question: the review's shape ("claims", "invented") beside the others' keys.
        review = review_reply({"turns": turns, "user_turns": users})
        return {**review, **passed, "goal": passed, "turns": turns, "user_turns": users, "claim": ""}

    script.enqueue("judge", judge, times=30)
    with script.active():
        outcome = simulator.run(
            DEMO, cases=[CASE], user_model="fake/user", judge_model="fake/judge", db=tmp_path / "r", seed=0
        )
    stored = only(outcome)
    assert stored.outcome == "pass", stored.result.reasons
    assert not any(finding.kind == "invented_fact" for finding in stored.result.fidelity)
    prompts = [r.messages[-1]["content"] for r in script.requests if r.role is not None and r.role.value == "judge"]
    asked_about_user = [prompt for prompt in prompts if "<user_brief-" in prompt]
    assert len(asked_about_user) == 1
    assert judged_turns(asked_about_user[0], "agent")  # in the hallucination request, not one of its own


def test_a_failing_conversation_gets_its_fidelity_answer_from_the_hallucination_request(tmp_path: Path) -> None:
    script = bad_user()

    def judge(messages: list[dict[str, Any]]) -> dict[str, Any]:
        prompt = messages[-1]["content"]
        if "<user_brief-" in prompt:
            users = [{"turn": 2, "invented": False, "fact": "", "reason": "nothing stated"}]
            goal = {"satisfied": False, "reason": "cannot tell"}
            return review_reply({"goal": goal, "turns": [], "user_turns": users})
        # The expectation in words is left undecided: one the judge found unmet would be the agent's own fault.
        return {"verdict": "unsure", "reason": "cannot tell", "satisfied": False, "turns": [], "claim": ""}

    script.enqueue("judge", judge, times=40)
    with script.active():
        outcome = simulator.run(
            DEMO, cases=[CASE], user_model="fake/user", judge_model="fake/judge", db=tmp_path / "r", seed=0
        )
    assert only(outcome).outcome == "user_error"
    asked = [r for r in script.requests if "<user_brief-" in r.messages[-1]["content"]]
    assert len(asked) == 1
    assert judged_turns(asked[0].messages[-1]["content"], "agent")


# -- counting ----------------------------------------------------------------------------------------------------


def test_user_errors_are_counted_apart_and_left_out_of_correctness() -> None:
    tally = counts(["pass", "fail", "user_error", "user_error"])
    assert (tally.total, tally.passed, tally.failed, tally.user_error) == (4, 1, 1, 2)
    assert tally.correctness == 0.5
    assert correctness(["user_error"]) is None
    assert Counts(passed=1, user_error=3).correctness == 1.0
    stats = repeat_stats(["pass", "user_error", "pass"])
    assert (stats.k, stats.passes, stats.label) == (2, 2, "stable")


def test_a_run_stored_before_user_error_loads_and_counts_as_before() -> None:
    old_counts = {"total": 3, "passed": 2, "failed": 1, "error": 0, "unsure": 0, "correctness": 0.6667}
    loaded = Counts.model_validate(old_counts)
    assert (loaded.user_error, loaded.total, loaded.correctness) == (0, 3, 2 / 3)
    old_result = {
        "case": "c",
        "kind": "scenario",
        "outcome": "fail",
        "transcript": {"case": "c", "kind": "scenario", "stop_reason": "user_ended"},
    }
    result = CaseResult.model_validate(old_result)
    assert (result.fidelity, result.user_turns_checked, result.transcript.user_ended_reason) == ([], 0, None)
    assert persona_fidelity([result])[0].rate is None


# -- where it shows --------------------------------------------------------------------------------------------


def test_the_terminal_junit_and_personas_list_show_it_apart(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    db = tmp_path / "runs.db"
    outcome = run_with_bad_user(db)
    runner = CliRunner()
    shown = runner.invoke(app, ["runs", "show", outcome.id, "--db", str(db)])
    assert shown.exit_code == 0, shown.output
    assert "1 user error (left out of correctness)" in shown.output
    assert "user_error" in shown.output

    xml = render_junit(outcome.record, outcome.results())
    assert 'skipped="1"' in xml
    assert 'failures="0"' in xml
    assert '<skipped message="user_error: simulated user, turn 2: broke_character' in xml

    listed = runner.invoke(app, ["personas", "list", "--run", outcome.id, "--db", str(db), "--json"])
    assert listed.exit_code == 0, listed.output
    [persona] = json.loads(listed.output)["personas"]
    turns = persona["user_turns"]
    assert persona == {
        "persona": "impatient",
        "conversations": 1,
        "user_turns": turns,
        "flagged_turns": turns,
        "rate": 0.0,
        "findings": {"broke_character": turns, "repeated_itself": turns - 1},
        "user_errors": 1,
    }
    table = runner.invoke(app, ["personas", "list", "--run", outcome.id, "--db", str(db)])
    assert "impatient" in table.output
    assert "0.0%" in table.output
    assert f"broke_character {turns}" in table.output

    with RunStore(db) as store:
        assert store.outcome_counts(outcome.id) == {"user_error": 1}


def test_the_cli_run_counts_user_errors_as_fails_when_asked(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(ROOT)
    args = [
        "run",
        str(DEMO),
        "--case",
        CASE,
        "--user-model",
        "fake/user",
        "--db",
        str(tmp_path / "r.db"),
        "--seed",
        "0",
        "--json",
    ]
    with bad_user().active():
        apart = CliRunner().invoke(app, args)
    with bad_user().active():
        counted = CliRunner().invoke(app, [*args, "--count-user-errors"])
    assert (apart.exit_code, counted.exit_code) == (1, 1)
    assert json.loads(apart.stdout)["counts"]["user_error"] == 1
    assert json.loads(counted.stdout)["counts"] | {"planned": 0} == {
        "planned": 0,
        "total": 1,
        "passed": 0,
        "failed": 1,
        "error": 0,
        "unsure": 0,
        "user_error": 0,
    }


def test_the_docs_example_shows_a_user_error_offline(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import shutil

    page = (ROOT / "docs" / "verdicts.md").read_text(encoding="utf-8")
    section = page.split("## Is it the agent or the simulated user?", 1)[1].split("\n## ", 1)[0]
    [block] = re.findall(r"```python\n(.*?)```", section, flags=re.S)
    shutil.copytree(ROOT / "suites", tmp_path / "suites")
    shutil.copytree(ROOT / "personas", tmp_path / "personas")
    monkeypatch.chdir(tmp_path)
    namespace: dict[str, Any] = {}
    exec(compile(block, "docs/verdicts.md", "exec"), namespace)
    assert namespace["stored"].outcome == "user_error"
    assert namespace["stored"].result.reasons[0].startswith("simulated user, turn 2: broke_character")


def test_the_digest_groups_a_user_error_apart_and_suggests_no_agent_fix(tmp_path: Path) -> None:
    from simulator.analysis.digest import build_digest, suggest_fixes
    from simulator.llm import LLMClient
    from simulator.models import ModelRoles

    outcome = run_with_bad_user(tmp_path / "runs.db")
    digest = build_digest(outcome.results())
    [group] = digest.groups
    assert (group.kind, group.label, group.count) == ("user", "broke_character", 1)
    assert group.title().startswith("Simulated user (user_error, not the agent's failure)")
    judge = FakeScript()
    llm = LLMClient(ModelRoles.model_validate({"judge": "fake/judge"}), fake_script=judge)
    suggested = run(suggest_fixes(digest, llm, instructions=None))
    assert judge.requests == []
    assert suggested.groups[0].suggestion is None
