"""The simulated user's fidelity in every view: findings under their user turn (terminal, Markdown, HTML, JSON),
fidelity per persona (Markdown, HTML), and the ``user_error`` outcome counted apart (terminal totals, Markdown,
HTML, CSV, xlsx, JUnit skipped with its reason)."""

from __future__ import annotations

import csv
import io
import json
from datetime import UTC, datetime

from simulator.metrics import run_summary
from simulator.models import Suite
from simulator.models.run import PlanItem, RunRecord, RunSettings, StoredResult, SuiteSnapshot
from simulator.models.scores import CaseResult, FidelityFinding, Outcome, Score
from simulator.models.transcript import AgentEvent, StepOutcome, Transcript, UserEvent
from simulator.reports.html import render_html
from simulator.reports.json_export import render_json
from simulator.reports.junit import render_junit
from simulator.reports.markdown import render_markdown
from simulator.reports.run_text import totals_lines
from simulator.reports.tabular import render_csv
from simulator.reports.transcript_text import case_lines
from tests import factories
from tests.reports.test_formats import assert_snapshot

T0 = datetime(2026, 3, 1, tzinfo=UTC)
SUITE = Suite.model_validate(
    {
        "name": "shop",
        "cases": [
            {
                "name": "refund",
                "kind": "simulation",
                "steps": [{"goal": "Get a refund for order A1.", "checks": [{"must_contain": ["refund started"]}]}],
            }
        ],
    }
)
BROKE = FidelityFinding(
    turn=2,
    step=0,
    kind="broke_character",
    evidence="How can I help you today?",
    rule="talks like the support agent (offers help)",
)
#: A finding at a turn with no user message of its own (an ending without a closing message) is still shown.
LATE = FidelityFinding(turn=3, step=0, kind="invented_fact", evidence="ORD-99", rule="states a fact", source="judge")


def _result(persona: str, outcome: Outcome, findings: list[FidelityFinding], reasons: list[str]) -> StoredResult:
    events = [
        UserEvent(turn=1, step=0, text="I want a refund for order A1.", source="scripted", at=T0),
        AgentEvent(turn=1, step=0, messages=["Which order?"], at=T0),
        UserEvent(
            turn=2, step=0, text="Sure! How can I help you today?" if findings else "Order A1.", source="llm", at=T0
        ),
        AgentEvent(turn=2, step=0, messages=["Refund started." if not findings else "Sorry?"], at=T0),
    ]
    status = "complete" if outcome == "pass" else "incomplete"
    step = StepOutcome(index=0, label="Get a refund for order A1.", status=status, turns_used=2)
    transcript = Transcript(
        case="refund", kind="simulation", persona=persona, events=events, steps=[step], turns=2, started_at=T0
    )
    verdict = "met" if outcome == "pass" else "not_met"
    scores = [Score(metric="goal_achievement", check="step 1", source="engine", verdict=verdict, step=0)]
    result = CaseResult(
        case="refund",
        kind="simulation",
        persona=persona,
        outcome=outcome,
        reasons=reasons,
        transcript=transcript,
        scores=scores,
        fidelity=findings,
        user_turns_checked=1,
    )
    return factories.make_result(
        "r1", 0, "refund", outcome, persona=persona, result=result, finished=T0, duration_s=1.0
    )


def make_run() -> tuple[RunRecord, list[StoredResult]]:
    why = "simulated user, turn 2: broke_character: “How can I help you today?” (talks like the support agent)"
    results = [
        _result("pleaser", "user_error", [BROKE, LATE], [why, "step 1: not met within 3 turns"]),
        _result("calm", "pass", [], []),
    ]
    plan = [PlanItem(key=r.key, suite=0, case=r.case, persona=r.persona) for r in results]
    record = factories.make_run(
        "r1",
        SuiteSnapshot(path="suites/shop.yaml", suite=SUITE),
        created=T0,
        finished=T0,
        status="completed",
        settings=RunSettings(paths=["suites/shop.yaml"]),
        versions={"simulator": "0.1.0"},
        plan=plan,
        totals=run_summary(results, 2.0),
    )
    return record, results


def test_markdown_snapshot_marks_findings_per_turn_and_counts_user_errors_apart() -> None:
    record, results = make_run()
    text = render_markdown(record, results)
    assert_snapshot("user_error.md", text)
    assert "- **Correctness:** 100.0% (1 of 1; 1 user error left out)" in text
    assert "0 unsure, 1 user error (2 of 2 planned)" in text
    assert "| pleaser | 1 | 2 | -100.0% |" not in text  # the rate is never below 0
    assert "| pleaser | 1 | 2 | 0.0% | broke\\_character 1, invented\\_fact 1 | 1 |" in text
    assert "| calm | 1 | 0 | 100.0% | none | 0 |" in text
    user_line = text.index("- 🧑 **user** (turn 2)")
    assert text.index("⚑ **user fidelity** (turn 2): broke_character", user_line) > user_line
    assert "### ⚑ user_error: shop › refund [pleaser] #1" in text


def test_html_shows_the_group_findings_and_fidelity_table() -> None:
    record, results = make_run()
    page = render_html(record, results)
    assert "User errors (the simulated user failed; not counted against the agent) (1)" in page
    assert "<span class='badge user_error'>USER_ERROR</span>" in page
    assert "user fidelity, turn 2: <strong>broke_character</strong> “How can I help you today?”" in page
    assert "user fidelity, turn 3: <strong>invented_fact</strong>" in page
    assert "<section id='fidelity'><h2>Simulated user fidelity</h2>" in page
    assert "value='user_error' checked> user_error (1)" in page


def test_junit_skips_a_user_error_with_its_reason() -> None:
    record, results = make_run()
    xml = render_junit(record, results)
    assert_snapshot("user_error.junit.xml", xml)
    assert 'tests="2" failures="0" errors="0" skipped="1"' in xml
    assert '<skipped message="user_error: simulated user, turn 2: broke_character' in xml


def test_terminal_csv_and_json_say_user_error() -> None:
    record, results = make_run()
    lines = [line.text for line in case_lines(results[0].result)]
    turn_two = lines.index("  [2] user: Sure! How can I help you today?")
    assert lines[turn_two + 1] == (
        "      ⚑ [2] user fidelity: broke_character: “How can I help you today?” "
        "(talks like the support agent (offers help))"
    )
    assert "      ⚑ [3] user fidelity: invented_fact: “ORD-99” (states a fact)" in lines
    assert "Outcome: user_error" in lines
    assert totals_lines(record)[0] == (
        "Correctness 100.0%: 1 passed, 0 failed, 0 error, 0 unsure, 1 user error (left out of correctness) of 2 "
        "(of 2 planned)"
    )
    rows = list(csv.DictReader(io.StringIO(render_csv(record, results))))
    assert [row["outcome"] for row in rows] == ["user_error", "pass"]
    document = json.loads(render_json(record, results))
    assert document["run"]["totals"]["user_error"] == 1
    assert [f["kind"] for f in document["results"][0]["result"]["fidelity"]] == ["broke_character", "invented_fact"]
