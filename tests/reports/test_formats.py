"""The Markdown, JSON, CSV, Excel and JUnit reports of one fixed run.

Every test renders the same run record (built below, with fixed timestamps): two suites; a passing
simulation; a failing simulation with a blocked step, a faked and a not-executed tool call; a golden case; an
errored case; an unsure scenario; a scenario repeated three times with one failure. Agent text carries an
XSS payload, Markdown injection and spreadsheet formulas, which every format must show as text only.

Snapshots: the Markdown, JSON, CSV and JUnit outputs are compared byte for byte with the files in
``tests/reports/snapshots/``. After an intended change of a format, rewrite them with::

    UPDATE_SNAPSHOTS=1 .venv/bin/pytest tests/reports/test_formats.py

and review the diff of the snapshot files before committing them.

The JUnit file is checked against ``tests/reports/junit.xsd`` (the Jenkins / Surefire format) and the
Jenkins / Ant schema in ``tests/data/junit/`` with ``xmlschema``, and against the first also with the small
structural checker below, which reads the element declarations, attributes and simple types of that XSD and
checks the document against them.
"""

from __future__ import annotations

import csv
import importlib
import io
import json
import math
import os
import re
import xml.etree.ElementTree as ET
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from importlib import resources
from pathlib import Path
from typing import Any

import pytest

from simulator.metrics import case_metrics, case_outcome, run_summary
from simulator.models.persona import Persona
from simulator.models.run import (
    PlanItem,
    RunRecord,
    RunSettings,
    StoredResult,
    SuiteSnapshot,
)
from simulator.models.scores import CaseResult, Score
from simulator.models.suite import Suite
from simulator.models.summary import RunSummary
from simulator.models.transcript import (
    AgentEvent,
    CaseKind,
    CheckDetail,
    CheckEvent,
    ErrorEvent,
    GoldenTurnRecord,
    StepOutcome,
    StopReason,
    ToolCallRecord,
    Transcript,
    TranscriptEvent,
    Usage,
    UserEvent,
)
from simulator.reports.html import render_html
from simulator.reports.json_export import (
    SCHEMA_FILE,
    RunReport,
    render_json,
    run_report_schema,
    run_report_schema_text,
)
from simulator.reports.junit import render_junit
from simulator.reports.markdown import escape, escape_lines, render_markdown
from simulator.reports.tabular import case_table, neutralise, render_csv, render_xlsx, step_table
from simulator.reports.transcript_text import transcript_lines
from tests import factories

HERE = Path(__file__).resolve().parent
SNAPSHOTS = HERE / "snapshots"
JUNIT_XSD = HERE / "junit.xsd"
JENKINS_XSD = HERE.parent / "data" / "junit" / "jenkins-junit.xsd"

T0 = datetime(2025, 3, 14, 9, 26, 53, tzinfo=UTC)
XSS = "<script>alert(1)</script><img src=x onerror=alert(1)>"
FORMULA = '=HYPERLINK("http://evil","x")'
AT_FORMULA = "@SUM(1+1)"
INJECTION = "# Injected heading\n[click me](http://evil.example/phish) ![img](http://evil.example/x.png)"
XML_TROUBLE = "HTTP 503 from agent\x00\x07: body ]]> <oops> & \ufffe done"
DANGEROUS_START = ("=", "+", "-", "@", "\t", "\r")


# -- the fixture run ------------------------------------------------------------------------------------


def at(seconds: float) -> datetime:
    return T0 + timedelta(seconds=seconds)


def user(turn: int, text: str, step: int | None = 0, t: float = 0.0) -> UserEvent:
    return UserEvent(turn=turn, step=step, text=text, source="scripted", at=at(t))


def agent(
    turn: int, *messages: str, step: int | None = 0, t: float = 0.0, calls: Sequence[ToolCallRecord] = ()
) -> AgentEvent:
    return AgentEvent(turn=turn, step=step, messages=list(messages), tool_calls=list(calls), latency_ms=120.0, at=at(t))


def check(turn: int, verdict: str, rationale: str, step: int | None = 0, t: float = 0.0) -> CheckEvent:
    return CheckEvent.model_validate(
        {"turn": turn, "step": step, "verdict": verdict, "rationale": rationale, "at": at(t)}
    )


def usage(
    agent_tokens: tuple[int, int], user_tokens: tuple[int, int], judge_tokens: tuple[int, int]
) -> dict[str, Usage]:
    return {
        "agent": Usage(prompt_tokens=agent_tokens[0], completion_tokens=agent_tokens[1], calls=2, cost=0.0004),
        "user": Usage(prompt_tokens=user_tokens[0], completion_tokens=user_tokens[1], calls=2, cost=0.0001),
        # One of the judge's answers came from the request cache: it cost nothing now, 0.0004 when first asked.
        "judge": Usage(
            prompt_tokens=judge_tokens[0],
            completion_tokens=judge_tokens[1],
            calls=3,
            cost=0.0009,
            cached_calls=1,
            cached_cost=0.0004,
        ),
    }


def goal(metric_step: int, label: str, verdict: str, reason: str, *, scenario: bool = False) -> Score:
    return Score.model_validate(
        {
            "metric": "goal_achievement",
            "check": "goal: " + label if scenario else f"step {metric_step + 1}: {label}",
            "source": "engine",
            "verdict": verdict,
            "value": 1.0 if verdict == "met" else 0.0,
            "reason": reason,
            "step": metric_step,
        }
    )


def hallucination(turn: int, verdict: str = "met", reason: str = "every claim is supported") -> Score:
    return Score.model_validate(
        {
            "metric": "hallucination",
            "check": f"turn {turn}: hallucination",
            "source": "deterministic",
            "verdict": verdict,
            "value": 1.0 if verdict == "not_met" else 0.0,
            "reason": reason,
            "turn": turn,
        }
    )


def satisfaction(verdict: str, reason: str) -> Score:
    value = {"met": 1.0, "not_met": 0.0, "unsure": -1.0}[verdict]
    return Score.model_validate(
        {
            "metric": "goal_satisfaction",
            "check": "user goal satisfied",
            "source": "judge",
            "verdict": verdict,
            "value": value,
            "reason": reason,
        }
    )


@dataclass
class Conversation:
    suite: int
    case: str
    kind: CaseKind
    events: list[TranscriptEvent]
    scores: list[Score]
    duration: float
    persona: str | None = None
    repeat: int = 0
    steps: Sequence[StepOutcome] = ()
    golden: Sequence[GoldenTurnRecord] = ()
    stop: StopReason = "completed"
    error: str | None = None
    used: dict[str, Usage] | None = None

    @property
    def key(self) -> str:
        return f"{self.suite}:{self.case}:{self.persona or '-'}:{self.repeat}"

    def stored(self, finished: float) -> StoredResult:
        turns = max((e.turn for e in self.events), default=0)
        transcript = Transcript(
            case=self.case,
            kind=self.kind,
            persona=self.persona,
            seed=1000 + self.repeat,
            events=self.events,
            steps=list(self.steps),
            golden_turns=list(self.golden),
            stop_reason=self.stop,
            error=self.error,
            turns=turns,
            usage=self.used if self.used is not None else usage((100, 20), (60, 15), (240, 30)),
            started_at=at(finished - self.duration),
            finished_at=at(finished),
        )
        outcome, reasons = case_outcome(transcript, self.scores)
        result = CaseResult(
            case=self.case,
            kind=self.kind,
            persona=self.persona,
            repeat=self.repeat,
            outcome=outcome,
            reasons=reasons,
            transcript=transcript,
            scores=self.scores,
            metrics=case_metrics(transcript, self.scores),
        )
        return factories.make_result(
            RUN_ID,
            self.suite,
            self.case,
            outcome,
            persona=self.persona,
            repeat=self.repeat,
            key=self.key,
            duration_s=self.duration,
            finished=at(finished),
            result=result,
        )


RUN_ID = "20250314-092653-ab12cd"

SHOP = Suite.model_validate(
    {
        "name": "shop",
        "cases": [
            {
                "kind": "simulation",
                "name": "greeting",
                "steps": [
                    {"goal": "Say hello", "success_criteria": "The agent greets back."},
                    {"goal": "Ask for the opening hours", "success_criteria": "The agent gives the hours."},
                ],
            },
            {
                "kind": "simulation",
                "name": "refund",
                "personas": ["angry-customer"],
                "steps": [
                    {"name": "Give the order number", "goal": "Give order number A1"},
                    {"goal": "Insist on a refund", "success_criteria": "The agent confirms a refund was issued."},
                    {"goal": "Ask for a confirmation email", "success_criteria": "The agent promises an email."},
                ],
            },
            {
                "kind": "golden",
                "name": "order_status",
                "turns": [
                    {
                        "user": "Where is order A1?",
                        "expect": {
                            "message": "Order A1 has shipped.",
                            "tool_calls": [{"name": "lookup_order", "arguments": {"order_id": "A1"}}],
                        },
                    }
                ],
            },
            {"kind": "scenario", "name": "faq", "goal": "Find out the return policy", "repeats": 3},
        ],
    }
)
SUPPORT = Suite.model_validate(
    {
        "name": "support",
        "cases": [
            {"kind": "scenario", "name": "escalate", "goal": "Reach a human"},
            {"kind": "simulation", "name": "outage", "steps": [{"goal": "Report the outage"}]},
        ],
    }
)
ANGRY = Persona(name="angry-customer", personality="Short-tempered; wants things fixed now.")


def _greeting() -> Conversation:
    steps = [
        StepOutcome(
            index=0,
            label="Say hello",
            status="complete",
            turns_used=1,
            completed_at_turn=1,
            verdict="met",
            rationale="The agent greeted the user back.",
        ),
        StepOutcome(
            index=1,
            label="Ask for the opening hours",
            status="complete",
            turns_used=1,
            completed_at_turn=2,
            verdict="met",
            rationale="The agent said it is open 9:00-17:00 on weekdays.",
        ),
    ]
    events: list[TranscriptEvent] = [
        user(1, "Hello!", t=1),
        agent(1, "Hi! How can I help you today?", t=1.5),
        check(1, "met", "The agent greeted the user back.", t=1.6),
        user(2, "When are you open?", step=1, t=2),
        agent(2, "We are open 9:00-17:00, Monday to Friday.", step=1, t=2.5),
        check(2, "met", "The agent gave the opening hours.", step=1, t=2.6),
    ]
    scores = [
        goal(0, "Say hello", "met", steps[0].rationale),
        goal(1, "Ask for the opening hours", "met", steps[1].rationale),
        hallucination(1),
        hallucination(2),
        satisfaction("met", "The user learned the opening hours."),
    ]
    return Conversation(0, "greeting", "simulation", events, scores, 2.25, steps=steps)


def _refund() -> Conversation:
    lookup = ToolCallRecord(
        id="call_1",
        name="lookup_order",
        arguments={"order_id": "A1"},
        status="faked",
        result={"status": "delivered", "total": 42.5},
        fake="case tool_fakes[0]",
        duration_ms=1.0,
    )
    refund = ToolCallRecord(
        id="call_2",
        name="issue_refund",
        arguments={"order_id": "A1", "note": XSS},
        status="not_executed",
        result="not executed in test mode: no fake matches issue_refund",
        duration_ms=0.5,
    )
    rationale = "The agent said the refund was issued, but issue_refund was not executed in test mode."
    steps = [
        StepOutcome(
            index=0,
            label="Give the order number",
            status="complete",
            turns_used=1,
            completed_at_turn=1,
            verdict="met",
            rationale="The user gave order number A1 and the agent found it.",
        ),
        StepOutcome(
            index=1,
            label="Insist on a refund",
            status="incomplete",
            turns_used=3,
            verdict="not_met",
            rationale=rationale,
        ),
        StepOutcome(
            index=2,
            label="Ask for a confirmation email",
            status="blocked",
            blocked_by=1,
            blocked_by_goal="Insist on a refund",
            rationale="Not started: step 2 was not completed.",
        ),
    ]
    events: list[TranscriptEvent] = [
        user(1, "My order number is A1.", t=10),
        agent(1, "Thanks, I found order A1.", t=10.5, calls=[lookup]),
        check(1, "met", "The order number was given.", t=10.6),
        user(2, "I want a refund. NOW.", step=1, t=11),
        agent(2, f"Refund issued! {XSS}", INJECTION, step=1, t=11.5, calls=[refund]),
        CheckEvent(
            turn=2,
            step=1,
            verdict="not_met",
            rationale="No refund tool call succeeded.",
            at=at(11.6),
            details=[
                CheckDetail(
                    check="judge: success_criteria",
                    verdict="not_met",
                    evidence=f"issue_refund was not executed; the reply says {XSS}",
                )
            ],
        ),
        user(3, "So is it refunded or not?", step=1, t=12),
        agent(3, "It is refunded, trust me.", step=1, t=12.5),
        check(3, "not_met", "Still no executed refund.", step=1, t=12.6),
        user(4, "Prove it.", step=1, t=13),
        agent(4, FORMULA, step=1, t=13.5),
        check(4, "not_met", "The agent answered with a formula, not a refund.", step=1, t=13.6),
    ]
    scores = [
        goal(0, "Give the order number", "met", steps[0].rationale),
        goal(1, "Insist on a refund", "not_met", rationale),
        goal(2, "Ask for a confirmation email", "not_met", "blocked by step 2 (Insist on a refund)"),
        hallucination(1),
        hallucination(2, "not_met", f"claims a refund was issued; issue_refund was not executed. Reply: {XSS}"),
        hallucination(3, "not_met", "claims the order is refunded without any tool result"),
        satisfaction("not_met", "The user did not get a refund."),
    ]
    return Conversation(
        0,
        "refund",
        "simulation",
        events,
        scores,
        6.5,
        persona="angry-customer",
        steps=steps,
        stop="step_failed",
        used=usage((400, 90), (150, 40), (900, 120)),
    )


def _order_status() -> Conversation:
    lookup = ToolCallRecord(
        id="call_1",
        name="lookup_order",
        arguments={"order_id": "A1"},
        status="simulated",
        result={"status": "shipped"},
        simulated_by="user model 'fake/tools'",
    )
    events: list[TranscriptEvent] = [
        user(1, "Where is order A1?", step=None, t=20),
        agent(1, "Order A1 has shipped & arrives <Friday>.", step=None, t=20.5, calls=[lookup]),
    ]
    golden = [
        GoldenTurnRecord(
            index=0,
            user="Where is order A1?",
            expected_message="Order A1 has shipped.",
            expected_tools=["lookup_order"],
            actual_messages=["Order A1 has shipped & arrives <Friday>."],
            actual_tools=["lookup_order"],
        ),
    ]
    scores = [
        Score(
            metric="semantic_match",
            check="turn 1: semantic match",
            source="judge",
            verdict="met",
            value=4.0,
            threshold=3.0,
            reason="Same meaning.",
            turn=1,
        ),
        Score(
            metric="tool_call_correctness",
            check="turn 1: tool-call correctness",
            source="deterministic",
            verdict="met",
            value=1.0,
            threshold=1.0,
            reason="1 of 1 expected calls matched",
            turn=1,
        ),
        hallucination(1),
    ]
    return Conversation(0, "order_status", "golden", events, scores, 1.125, golden=golden)


def _faq(repeat: int, passed: bool) -> Conversation:
    label = "Find out the return policy"
    start = 30 + 5 * repeat
    if passed:
        steps = [
            StepOutcome(
                index=0,
                label=label,
                status="complete",
                turns_used=1,
                completed_at_turn=1,
                verdict="met",
                rationale="The agent explained the 30-day return policy.",
            )
        ]
        events: list[TranscriptEvent] = [
            user(1, "What is your return policy?", t=start),
            agent(1, "You can return items within 30 days.", t=start + 0.5),
            check(1, "met", "The policy was given.", t=start + 0.6),
        ]
        scores = [
            goal(0, label, "met", steps[0].rationale, scenario=True),
            hallucination(1),
            satisfaction("met", "The user learned the policy."),
        ]
        return Conversation(
            0, "faq", "scenario", events, scores, 1.5 if repeat == 0 else 1.25, repeat=repeat, steps=steps
        )
    steps = [
        StepOutcome(
            index=0,
            label=label,
            status="incomplete",
            turns_used=2,
            verdict="not_met",
            rationale="The agent never stated the policy.",
        )
    ]
    events = [
        user(1, "What is your return policy?", t=start),
        agent(1, "Let me check that for you.", t=start + 0.5),
        check(1, "not_met", "No policy yet.", t=start + 0.6),
        user(2, "Well?", t=start + 1),
        agent(2, AT_FORMULA, t=start + 1.5),
        check(2, "not_met", "The agent answered with a formula.", t=start + 1.6),
    ]
    scores = [
        goal(0, label, "not_met", steps[0].rationale, scenario=True),
        hallucination(1),
        hallucination(2),
        satisfaction("not_met", "The user never learned the policy."),
    ]
    return Conversation(0, "faq", "scenario", events, scores, 3.75, repeat=repeat, steps=steps, stop="user_ended")


def _escalate() -> Conversation:
    label = "Reach a human"
    reason = "The agent promised a call back but did not hand off; cannot tell whether the user reached a human."
    steps = [StepOutcome(index=0, label=label, status="incomplete", turns_used=1, verdict="unsure", rationale=reason)]
    events: list[TranscriptEvent] = [
        user(1, "+1 555 0100 is my number, get me a human", t=50),
        agent(1, f"{XSS} A colleague will call you back.", t=50.5),
        check(1, "unsure", reason, t=50.6),
    ]
    scores = [goal(0, label, "unsure", reason, scenario=True), hallucination(1), satisfaction("unsure", reason)]
    return Conversation(1, "escalate", "scenario", events, scores, 2.0, steps=steps, stop="user_ended")


def _outage() -> Conversation:
    events: list[TranscriptEvent] = [
        user(1, "Is the service down?", t=60),
        ErrorEvent(turn=1, step=0, where="agent", message=XML_TROUBLE, at=at(60.2)),
    ]
    steps = [
        StepOutcome(
            index=0,
            label="Report the outage",
            status="incomplete",
            turns_used=1,
            rationale="The conversation stopped with an error.",
        )
    ]
    used = {"user": Usage(prompt_tokens=30, completion_tokens=8, calls=1, cost=None)}
    return Conversation(
        1, "outage", "simulation", events, [], 0.5, steps=steps, stop="error", error=XML_TROUBLE, used=used
    )


CONVERSATIONS = [
    _greeting(),
    _refund(),
    _order_status(),
    _faq(0, True),
    _faq(1, False),
    _faq(2, True),
    _escalate(),
    _outage(),
]


def _totals(results: Sequence[StoredResult], record: RunRecord) -> RunSummary:
    """The run summary as the runner stores it (the results in plan order), with the run's coverage."""
    return run_summary(results, math.fsum(stored.duration_s for stored in results) + 1.75, record)


def make_run() -> tuple[RunRecord, list[StoredResult]]:
    """The fixed run every test renders."""
    results = [c.stored(finished=10.0 * (i + 1)) for i, c in enumerate(CONVERSATIONS)]
    plan = [
        PlanItem(key=c.key, suite=c.suite, case=c.case, persona=c.persona, repeat=c.repeat, seed=1000 + c.repeat)
        for c in CONVERSATIONS
    ]
    record = factories.make_run(
        RUN_ID,
        SuiteSnapshot(path="suites/shop.yaml", suite=SHOP, personas={"angry-customer": ANGRY}),
        SuiteSnapshot(path="suites/support.yaml", suite=SUPPORT),
        created=T0,
        finished=at(95),
        status="completed",
        agent_version="shop-bot 1.4.2",
        note="nightly | <b>check</b> the refund flow",
        suite_hash="sha256:0123456789abcdef",
        settings=RunSettings(paths=["suites/shop.yaml", "suites/support.yaml"], seed=7),
        versions={"simulator": "0.1.0", "python": "3.11.9", "pydantic": "2.9.2"},
        plan=plan,
    )
    return record.model_copy(update={"totals": _totals(results, record)}), results


@pytest.fixture(scope="module")
def run() -> tuple[RunRecord, list[StoredResult]]:
    record, results = make_run()
    return record, list(reversed(results))  # the store's order is not the plan's: reports must sort


# -- snapshots ------------------------------------------------------------------------------------------


def assert_snapshot(name: str, text: str) -> None:
    """``text`` equals ``snapshots/<name>`` byte for byte; with UPDATE_SNAPSHOTS=1 the file is rewritten."""
    path = SNAPSHOTS / name
    data = text.encode("utf-8")
    if os.environ.get("UPDATE_SNAPSHOTS") == "1":
        SNAPSHOTS.mkdir(exist_ok=True)
        path.write_bytes(data)
        return
    assert path.is_file(), f"no snapshot {path}: run with UPDATE_SNAPSHOTS=1 to write it"
    expected = path.read_bytes().decode("utf-8")
    assert text == expected, f"{name} differs from its snapshot: run with UPDATE_SNAPSHOTS=1 and review the diff"


@pytest.mark.parametrize(
    ("name", "render"),
    [
        ("run.md", render_markdown),
        ("run.json", render_json),
        ("run.csv", render_csv),
        ("run.junit.xml", render_junit),
    ],
)
def test_snapshot(run: tuple[RunRecord, list[StoredResult]], name: str, render: Any) -> None:
    record, results = run
    assert_snapshot(name, render(record, results))


def test_a_simulated_tool_call_is_shown_as_simulated_in_every_view(run: tuple[RunRecord, list[StoredResult]]) -> None:
    """A model's answer never reads as the tool's own: each view says simulated, and by which model."""
    record, results = run
    markdown = render_markdown(record, results)
    assert (
        "**SIMULATED** by user model 'fake/tools' (test mode: a model played the tool, which did not run)" in markdown
    )
    page = render_html(record, results)
    assert "<div class='tool tool-simulated'><span class='tool-status'>SIMULATED</span>" in page
    assert "played by the user model &#x27;fake/tools&#x27;; the tool did not run" in page
    calls = [
        call
        for stored in json.loads(render_json(record, results))["results"]
        for event in stored["result"]["transcript"]["events"]
        for call in event.get("tool_calls", [])
    ]
    assert {(call["status"], call["simulated_by"]) for call in calls if call["name"] == "lookup_order"} == {
        ("faked", None),
        ("simulated", "user model 'fake/tools'"),
    }
    order_status = next(stored for stored in results if stored.case == "order_status")
    lines = transcript_lines(order_status.result.transcript)
    terminal = [line for line in lines if line.text.strip().startswith("tool lookup_order")]
    assert [(line.style, line.text.strip()) for line in terminal] == [
        (
            "tool",
            """tool lookup_order({"order_id": "A1"}) [simulated by user model 'fake/tools'] → {"status": "shipped"}""",
        )
    ]


@pytest.mark.parametrize("render", [render_markdown, render_json, render_csv, render_junit, render_xlsx])
def test_reports_are_pure_and_ignore_result_order(run: tuple[RunRecord, list[StoredResult]], render: Any) -> None:
    record, results = run
    first = render(record, results)
    assert render(record, list(reversed(results))) == first
    assert render(record, sorted(results, key=lambda r: r.case)) == first


@pytest.mark.parametrize("render", [render_markdown, render_json, render_csv, render_junit, render_xlsx])
def test_an_empty_run_renders(render: Any) -> None:
    record = RunRecord(id="empty", created=T0, suite_hash="h", snapshot=[], settings=RunSettings())
    assert render(record, [])


# -- Markdown -------------------------------------------------------------------------------------------


def test_markdown_shows_untrusted_text_only_escaped(run: tuple[RunRecord, list[StoredResult]]) -> None:
    markdown = render_markdown(*run)
    for raw in ("<script", "<img", "</script>", "<b>", "<oops>", "<Friday>"):
        assert raw not in markdown
    assert "&lt;script&gt;alert(1)&lt;/script&gt;&lt;img src=x onerror=alert(1)&gt;" in markdown
    assert "&lt;b&gt;check&lt;/b&gt;" in markdown  # the note is escaped too
    # No injected heading, link or image: headings are the report's own, brackets are escaped.
    assert "Injected heading" in markdown
    assert not any(line.lstrip().startswith("# Injected") for line in markdown.splitlines())
    assert not re.search(r"(?<!\\)\]\(", markdown)  # no unescaped "](" anywhere
    assert "\\[click me\\]" in markdown
    assert "http\\://evil.example/phish" in markdown
    headings = [line for line in markdown.splitlines() if line.startswith("#")]
    assert all(re.match(r"^#{1,4} \S", line) for line in headings)
    assert not any("Injected" in line for line in headings)
    # A table cell cannot be split by a pipe in the text.
    assert "nightly \\| &lt;b&gt;" in markdown


def test_markdown_goal_by_goal(run: tuple[RunRecord, list[StoredResult]]) -> None:
    markdown = render_markdown(*run)
    lines = markdown.splitlines()
    cases = [line for line in lines if line.startswith("### ")]
    assert [line.split(":", 1)[0] for line in cases] == [
        "### ! error",
        "### ✗ fail",
        "### ✗ fail",
        "### ? unsure",
        "### ✓ pass",
        "### ✓ pass",
        "### ✓ pass",
        "### ✓ pass",
    ]
    assert cases[1] == "### ✗ fail: shop › refund [angry-customer] #1"
    refund = markdown[markdown.index(cases[1]) : markdown.index(cases[2])]
    assert "#### Goals (1/3)" in refund
    assert "1. ✓ **Give the order number** (step 1) — complete at turn 1" in refund
    assert "2. ✗ **Insist on a refund** (step 2) — **not complete** after 3 turns (last check: not_met)" in refund
    assert "3. ⊘ **Ask for a confirmation email** (step 3) — blocked by step 2 (Insist on a refund)" in refund
    # The incomplete step is expanded with its checks and their evidence.
    assert "   - ✗ check after turn 4: not_met — The agent answered with a formula, not a refund." in refund
    assert "     - ✗ judge: success\\_criteria: not_met — issue\\_refund was not executed" in refund
    assert "**NOT EXECUTED** (test mode: no fake answered this call)" in refund
    assert "tool **lookup\\_order**" in refund
    assert "faked by case tool\\_fakes\\[0\\]" in refund
    assert "#### Scores that did not pass" in refund
    assert "| ✗ not_met | step 2: Insist on a refund | engine | 0 |" in refund
    assert "#### Transcript" in refund
    assert "repeats:" not in refund
    error = markdown[markdown.index(cases[0]) : markdown.index(cases[1])]
    assert "> **⚠️ Error:** the run could not finish this case (stopped: error)." in error
    assert "\x00" not in markdown
    assert "\x07" not in markdown
    faq = markdown[markdown.index(cases[2]) : markdown.index(cases[3])]
    assert "repeats: **flaky** (2/3 passed)" in faq
    assert "\\@SUM(1+1)" in faq
    golden = next(line for line in cases if "order\\_status" in line)
    assert "#### Turns (1/1)" in markdown[markdown.index(golden) :]


def test_markdown_header(run: tuple[RunRecord, list[StoredResult]]) -> None:
    markdown = render_markdown(*run)
    head = markdown[: markdown.index("## Metrics")]
    assert head.startswith("# Simulator run 20250314-092653-ab12cd\n")
    assert "- **Suites:** shop (suites/shop.yaml), support (suites/support.yaml)" in head
    assert "- **Agent version:** shop-bot 1.4.2" in head
    assert "- **Correctness:** 50.0% (4 of 8)" in head
    assert "- **Outcomes:** 4 passed, 2 failed, 1 error, 1 unsure (8 of 8 planned)" in head
    assert "**Cost:** unknown" in head  # one call of unknown price makes the total unknown
    assert "| agent | 14 | 0 | 14 | 1,000 | 210 | $0.0028 | – |" in head
    assert "| user | 15 | 0 | 15 | 540 | 138 | unknown | – |" in head
    # Answers from the request cache are counted apart, with what they cost when first asked.
    assert "| judge | 21 | 7 | 14 | 2,340 | 300 | $0.0063 | $0.0028 |" in head
    assert "**From the request cache:** 7 of 50 answers (would-be cost $0.0028)" in head
    assert "- **Seed:** 7" in head
    assert "- **Versions:** pydantic 2.9.2, python 3.11.9, simulator 0.1.0" in head
    assert "- **Note:** nightly \\| &lt;b&gt;check&lt;/b&gt; the refund flow" in head
    assert "| faq | - | 2/3 | 0 | 1 | 0.21–0.94 | **flaky** |" in markdown
    assert "| goal\\_achievement | 9 | 5 | 3 | 1 | 0 | 0 | 0.556 (of 9) |" in markdown


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("plain text", "plain text"),
        ("<b>x</b> & y", "&lt;b&gt;x&lt;/b&gt; &amp; y"),
        ("# heading", "\\# heading"),
        ("a | b", "a \\| b"),
        ("`code` *em* _em_ ~s~ $x$", "\\`code\\` \\*em\\* \\_em\\_ \\~s\\~ \\$x\\$"),
        ("[a](b) ![c](d)", "\\[a\\](b) !\\[c\\](d)"),
        ("see https://x.example or www.x.example", "see https\\://x.example or www\\.x.example"),
        ("@user #12", "\\@user \\#12"),
        ("    indented", "indented"),
        ("back\\slash", "back\\\\slash"),
        ("&lt;", "&amp;lt;"),
        ("one\ntwo", "one two"),
        ("- inline after other text: 1. and 2.9.2 stay", "- inline after other text: 1. and 2.9.2 stay"),
    ],
)
def test_escape(text: str, expected: str) -> None:
    assert escape(text) == expected


@pytest.mark.parametrize(
    ("line", "expected"),
    [
        ("- item", "\\- item"),
        ("+ item", "\\+ item"),
        ("1. item", "1\\. item"),
        ("2) item", "2\\) item"),
        ("===", "\\==="),
        ("---", "\\---"),
        ("> quote", "&gt; quote"),
        ("```", "\\`\\`\\`"),
        ("  # heading", "\\# heading"),
    ],
)
def test_escape_lines_at_the_start_of_a_line(line: str, expected: str) -> None:
    assert escape_lines(line) == [expected]
    assert escape_lines("first\n" + line, first_at_start=False) == ["first", expected]


def test_escape_lines_keeps_lines_and_shows_control_characters_escaped() -> None:
    assert escape_lines("one\r\ntwo\x00\x1b\n\n> three") == ["one", "two\\\\x00\\\\x1b", "", "&gt; three"]


# -- JSON -----------------------------------------------------------------------------------------------


def test_json_envelope_round_trips(run: tuple[RunRecord, list[StoredResult]]) -> None:
    record, results = run
    text = render_json(record, results)
    document = json.loads(text)
    assert list(document) == ["format", "version", "run", "results"]
    assert document["format"] == "simulator.run-report"
    assert document["version"] == 1
    report = RunReport.model_validate_json(text)
    assert report.run == record
    assert [r.key for r in report.results] == [item.key for item in record.plan]
    assert sorted(report.results, key=lambda r: r.key) == sorted(results, key=lambda r: r.key)


def test_committed_run_report_schema_is_current() -> None:
    committed = resources.files("simulator.schemas").joinpath(SCHEMA_FILE).read_text(encoding="utf-8")
    assert committed == run_report_schema_text(), (
        f"simulator/schemas/{SCHEMA_FILE} is stale: run `python -m simulator.reports.json_export` and commit it"
    )


def test_json_validates_against_the_published_schema(run: tuple[RunRecord, list[StoredResult]]) -> None:
    from jsonschema import Draft202012Validator

    schema = json.loads(resources.files("simulator.schemas").joinpath(SCHEMA_FILE).read_text(encoding="utf-8"))
    Draft202012Validator.check_schema(schema)
    assert schema == run_report_schema()
    assert schema["$schema"] == "https://json-schema.org/draft/2020-12/schema"
    validator = Draft202012Validator(schema)
    document = json.loads(render_json(*run))
    assert list(validator.iter_errors(document)) == []
    for broken in ({**document, "version": 2}, {**document, "format": "other"}, {"format": document["format"]}):
        assert list(validator.iter_errors(broken)), broken
    bad_outcome = json.loads(json.dumps(document))
    bad_outcome["results"][0]["outcome"] = "maybe"
    assert list(validator.iter_errors(bad_outcome))


# -- CSV and Excel --------------------------------------------------------------------------------------


EXPECTED_HEADER = [
    "suite",
    "case",
    "kind",
    "persona",
    "repeat",
    "outcome",
    "goals",
    "turns",
    "prompt",
    "final_output",
    "metric:goal_achievement",
    "metric:hallucination",
    "metric:goal_satisfaction",
    "metric:semantic_match",
    "metric:tool_call_correctness",
    "reasons",
    "duration_s",
    "agent_tokens",
    "user_tokens",
    "judge_tokens",
    "cost_usd",
    "cached_answers",
    "cached_cost_usd",
]


def _rows_by_case(rows: list[list[str]]) -> dict[str, list[str]]:
    return {f"{row[1]}#{row[4]}": row for row in rows}


def test_csv_rows_and_columns(run: tuple[RunRecord, list[StoredResult]]) -> None:
    text = render_csv(*run)
    assert text.endswith("\r\n")
    header, *rows = list(csv.reader(io.StringIO(text, newline="")))
    assert header == EXPECTED_HEADER
    assert [(row[1], row[4]) for row in rows] == [
        ("greeting", "1"),
        ("refund", "1"),
        ("order_status", "1"),
        ("faq", "1"),
        ("faq", "2"),
        ("faq", "3"),
        ("escalate", "1"),
        ("outage", "1"),
    ]
    by_case = _rows_by_case(rows)
    refund = dict(zip(header, by_case["refund#1"], strict=True))
    assert refund["suite"] == "shop"
    assert refund["persona"] == "angry-customer"
    assert refund["outcome"] == "fail"
    assert refund["goals"] == "1/3"
    assert refund["prompt"] == "My order number is A1."
    assert refund["metric:goal_achievement"] == "met=1 not_met=2"
    assert refund["metric:hallucination"] == "met=1 not_met=2"
    assert refund["metric:semantic_match"] == ""
    assert refund["reasons"].splitlines()[0] == (
        "step 2: Insist on a refund: The agent said the refund was issued, but issue_refund was not executed in "
        "test mode."
    )
    assert (refund["agent_tokens"], refund["user_tokens"], refund["judge_tokens"]) == ("490", "190", "1020")
    assert refund["cost_usd"] == "0.0014"
    assert refund["duration_s"] == "6.5"
    golden = dict(zip(header, by_case["order_status#1"], strict=True))
    assert golden["goals"] == ""
    assert golden["metric:semantic_match"] == "met=1"
    outage = dict(zip(header, by_case["outage#1"], strict=True))
    assert outage["outcome"] == "error"
    assert outage["cost_usd"] == ""  # unknown, not zero


def test_csv_neutralises_formulas(run: tuple[RunRecord, list[StoredResult]]) -> None:
    header, *rows = list(csv.reader(io.StringIO(render_csv(*run), newline="")))
    by_case = _rows_by_case(rows)
    final = header.index("final_output")
    prompt = header.index("prompt")
    assert by_case["refund#1"][final] == "'" + FORMULA
    assert by_case["faq#2"][final] == "'" + AT_FORMULA
    assert by_case["escalate#1"][prompt] == "'+1 555 0100 is my number, get me a human"
    assert by_case["escalate#1"][final].startswith(XSS)  # CSV is not HTML: text is kept as it is
    for row in [header, *rows]:
        for cell in row:
            assert not cell.startswith(DANGEROUS_START), cell


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("=1+1", "'=1+1"),
        ("+1", "'+1"),
        ("-1", "'-1"),
        ("@SUM(A1)", "'@SUM(A1)"),
        ("\t=1", "'\t=1"),
        ("\r=1", "'\r=1"),
        ("  =1", "'  =1"),
        ("a=1", "a=1"),
        ("", ""),
        ("plain", "plain"),
    ],
)
def test_neutralise(text: str, expected: str) -> None:
    assert neutralise(text) == expected


def _workbook(data: bytes) -> Any:
    openpyxl = importlib.import_module("openpyxl")
    return openpyxl.load_workbook(io.BytesIO(data))


def test_xlsx_read_back(run: tuple[RunRecord, list[StoredResult]]) -> None:
    record, results = run
    data = render_xlsx(record, results)
    assert data[:2] == b"PK"
    book = _workbook(data)
    assert book.sheetnames == ["Summary", "Cases", "Steps", "Coverage"]

    summary = {row[0]: row[1] for row in book["Summary"].iter_rows(values_only=True) if row and row[0]}
    assert summary["run id"] == RUN_ID
    assert summary["status"] == "completed"
    assert summary["correctness"] == 0.5
    assert (summary["passed"], summary["failed"], summary["error"], summary["unsure"]) == (4, 2, 1, 1)
    assert summary["agent prompt tokens"] == 1000
    assert summary["user cost_usd"] is None
    assert summary["total cost_usd"] is None
    assert summary["seed"] == 7
    assert summary["agent version"] == "shop-bot 1.4.2"
    assert summary["metric"] == "scores"  # the metric table's header row

    cases = book["Cases"]
    rows = list(cases.iter_rows(values_only=True))
    header, body = list(rows[0]), rows[1:]
    assert header == EXPECTED_HEADER
    assert header == case_table(record, results)[0]
    assert len(body) == len(results)
    assert cases.freeze_panes == "A2"
    assert cases.auto_filter.ref == f"A1:W{len(results) + 1}"
    assert cases.column_dimensions["I"].width >= 20  # the prompt column is wide
    by_case = {f"{row[1]}#{row[4]}": dict(zip(header, row, strict=True)) for row in body}
    # The workbook shows formula-like text as it is (no visible quote): a string cell with Excel's quote prefix.
    assert by_case["refund#1"]["final_output"] == FORMULA
    assert by_case["faq#2"]["final_output"] == AT_FORMULA
    assert by_case["escalate#1"]["prompt"] == "+1 555 0100 is my number, get me a human"
    row_number = 2 + next(i for i, row in enumerate(body) if f"{row[1]}#{row[4]}" == "refund#1")
    final = cases.cell(row=row_number, column=header.index("final_output") + 1)
    assert (final.value, final.data_type, final.quotePrefix) == (FORMULA, "s", True)
    assert not cases["A1"].quotePrefix  # plain text keeps the default style
    assert by_case["refund#1"]["repeat"] == 1
    assert by_case["refund#1"]["duration_s"] == 6.5
    assert by_case["refund#1"]["agent_tokens"] == 490
    assert by_case["outage#1"]["cost_usd"] is None
    assert "\x00" not in by_case["outage#1"]["reasons"]
    for sheet in book.worksheets:
        for row in sheet.iter_rows():
            for cell in row:
                assert cell.data_type != "f", (sheet.title, cell.coordinate, cell.value)
                if isinstance(cell.value, str) and cell.value.lstrip(" ").startswith(DANGEROUS_START):
                    assert cell.quotePrefix, (sheet.title, cell.coordinate, cell.value)

    steps = book["Steps"]
    step_rows = list(steps.iter_rows(values_only=True))
    assert list(step_rows[0]) == [
        "suite",
        "case",
        "persona",
        "repeat",
        "step",
        "goal",
        "status",
        "blocked_by",
        "rationale",
    ]
    assert len(step_rows) - 1 == len(step_table(record, results)[1]) == 10
    blocked = next(row for row in step_rows if row[6] == "blocked")
    assert blocked[:8] == (
        "shop",
        "refund",
        "angry-customer",
        1,
        3,
        "Ask for a confirmation email",
        "blocked",
        "step 2: Insist on a refund",
    )
    assert steps.freeze_panes == "A2"


def test_xlsx_does_not_depend_on_the_clock(run: tuple[RunRecord, list[StoredResult]]) -> None:
    import zipfile

    record, results = run
    data = render_xlsx(record, results)
    with zipfile.ZipFile(io.BytesIO(data)) as archive:
        assert {info.date_time for info in archive.infolist()} == {(2025, 3, 14, 9, 28, 28)}
        core = archive.read("docProps/core.xml").decode()
    assert "2025-03-14T09:26:53Z" in core
    assert "2025-03-14T09:28:28Z" in core
    assert _workbook(data).properties.creator == "simulator"


# -- JUnit ----------------------------------------------------------------------------------------------


XS = "{http://www.w3.org/2001/XMLSchema}"


@dataclass(frozen=True)
class _Particle:
    names: frozenset[str]
    min: int
    max: int | None


@dataclass(frozen=True)
class _Declaration:
    attributes: dict[str, tuple[str, bool]]
    children: tuple[_Particle, ...] | None  # None: text only (simple content)


def _occurs(node: ET.Element) -> tuple[int, int | None]:
    high = node.get("maxOccurs", "1")
    return int(node.get("minOccurs", "1")), None if high == "unbounded" else int(high)


def _read_xsd(path: Path) -> tuple[dict[str, _Declaration], dict[str, ET.Element]]:
    """The global element declarations and named simple types of the (small) XSD used here."""
    schema = ET.parse(path).getroot()
    types = {node.attrib["name"]: node for node in schema.findall(f"{XS}simpleType")}
    elements: dict[str, _Declaration] = {}
    for node in schema.findall(f"{XS}element"):
        complex_type = node.find(f"{XS}complexType")
        if complex_type is None:  # a simple type: text only, no attributes
            elements[node.attrib["name"]] = _Declaration({}, None)
            continue
        attributes = {
            a.attrib["name"]: (a.get("type", "xs:string"), a.get("use") == "required")
            for a in complex_type.iter(f"{XS}attribute")
        }
        sequence = complex_type.find(f"{XS}sequence")
        if sequence is None:
            elements[node.attrib["name"]] = _Declaration(
                attributes, None if complex_type.find(f"{XS}simpleContent") is not None else ()
            )
            continue
        particles = []
        for item in sequence:
            low, high = _occurs(item)
            if item.tag == f"{XS}element":
                particles.append(_Particle(frozenset([item.attrib["ref"]]), low, high))
            elif item.tag == f"{XS}choice":
                particles.append(_Particle(frozenset(e.attrib["ref"] for e in item), low, high))
        elements[node.attrib["name"]] = _Declaration(attributes, tuple(particles))
    return elements, types


def _check_value(value: str, type_name: str, types: dict[str, ET.Element], where: str) -> None:
    if type_name in types:
        restriction = types[type_name].find(f"{XS}restriction")
        assert restriction is not None
        _check_value(value, restriction.attrib["base"], types, where)
        for pattern in restriction.findall(f"{XS}pattern"):
            assert re.fullmatch(pattern.attrib["value"], value), f"{where}: {value!r} does not match {type_name}"
        for minimum in restriction.findall(f"{XS}minInclusive"):
            assert float(value) >= float(minimum.attrib["value"]), f"{where}: {value!r} below minimum"
        return
    if type_name == "xs:nonNegativeInteger":
        assert re.fullmatch(r"\d+", value), f"{where}: {value!r} is not a non-negative integer"
    elif type_name == "xs:decimal":
        assert re.fullmatch(r"[+-]?(\d+(\.\d*)?|\.\d+)", value), f"{where}: {value!r} is not a decimal"
    else:
        assert type_name == "xs:string", f"{where}: type {type_name} is not supported by this checker"


def _check_element(
    element: ET.Element, elements: dict[str, _Declaration], types: dict[str, ET.Element], where: str
) -> None:
    assert element.tag in elements, f"{where}: <{element.tag}> is not declared"
    declaration = elements[element.tag]
    for name, value in element.attrib.items():
        assert name in declaration.attributes, f"{where}: <{element.tag}> has undeclared attribute {name}"
        _check_value(value, declaration.attributes[name][0], types, f"{where}@{name}")
    for name, (_, required) in declaration.attributes.items():
        assert not required or name in element.attrib, f"{where}: <{element.tag}> lacks {name}"
    children = list(element)
    if declaration.children is None:
        assert not children, f"{where}: <{element.tag}> holds text only"
        return
    assert not (element.text or "").strip(), f"{where}: <{element.tag}> has text"
    position = 0
    for particle in declaration.children:
        count = 0
        while position < len(children) and children[position].tag in particle.names:
            if particle.max is not None and count == particle.max:
                break
            count += 1
            position += 1
        assert count >= particle.min, f"{where}: <{element.tag}> needs {sorted(particle.names)}"
    assert position == len(children), f"{where}: <{children[position].tag}> is not allowed here"
    for index, child in enumerate(children):
        assert not (child.tail or "").strip(), f"{where}: text after <{child.tag}>"
        _check_element(child, elements, types, f"{where}/{child.tag}[{index}]")


def validate_junit(xml: str) -> None:
    """``xml`` is valid against tests/reports/junit.xsd and the Jenkins / Ant schema kept in
    tests/data/junit/ (by xmlschema, a test dependency) and against junit.xsd by the structural checker here;
    any failing raises AssertionError."""
    xmlschema = importlib.import_module("xmlschema")
    for xsd in (JUNIT_XSD, JENKINS_XSD):
        try:
            xmlschema.XMLSchema(str(xsd)).validate(io.StringIO(xml))
        except xmlschema.XMLSchemaValidationError as exc:
            raise AssertionError(f"not valid against {xsd.name}: {exc.reason}") from exc
    elements, types = _read_xsd(JUNIT_XSD)
    root = ET.fromstring(xml)
    _check_element(root, elements, types, root.tag)


def test_the_structural_checker_rejects_invalid_junit() -> None:
    valid = '<testsuites><testsuite name="s" tests="1"><testcase name="c" time="1.5"/></testsuite></testsuites>'
    validate_junit(valid)
    for invalid in (
        "<testsuite/>",  # lacks name and tests
        '<testsuites><testcase name="c"/></testsuites>',  # testcase outside a testsuite
        '<testsuites><testsuite name="s" tests="x"/></testsuites>',  # not a number
        '<testsuites><testsuite name="s" tests="1"><testcase name="c"><failure/><error/></testcase>'
        "</testsuite></testsuites>",  # two outcomes
        '<testsuites><testsuite name="s" tests="1"><testcase name="c" speed="1"/></testsuite></testsuites>',
        '<testsuites timestamp="2025-03-14 09:26"/>',
        '<testsuites><testsuite name="s" tests="1"><testcase name="c"/><properties><property name="a" value="b"/>'
        "</properties></testsuite></testsuites>",  # properties come first
    ):
        with pytest.raises(AssertionError):
            validate_junit(invalid)


def test_junit_is_valid_and_escaped(run: tuple[RunRecord, list[StoredResult]]) -> None:
    xml = render_junit(*run)
    assert xml.startswith('<?xml version="1.0" encoding="UTF-8"?>\n<testsuites ')
    validate_junit(xml)
    for raw in ("<script", "<img", "<oops>", "]]>", "\x00", "\x07", "\ufffe"):
        assert raw not in xml, raw
    assert "&lt;script&gt;alert(1)&lt;/script&gt;&lt;img src=x onerror=alert(1)&gt;" in xml
    root = ET.fromstring(xml)
    assert root.attrib == {
        "name": f"simulator run {RUN_ID}",
        "tests": "8",
        "failures": "2",
        "errors": "1",
        "time": "18.875",
    }
    suites = root.findall("testsuite")
    assert [(s.get("name"), s.get("tests"), s.get("failures"), s.get("errors"), s.get("skipped")) for s in suites] == [
        ("shop", "6", "2", "0", "0"),
        ("support", "2", "0", "1", "1"),
    ]
    properties = {p.get("name"): p.get("value") for p in suites[0].iter("property")}
    assert properties["run_id"] == RUN_ID
    assert properties["agent_version"] == "shop-bot 1.4.2"
    assert properties["seed"] == "7"
    cases = {case.get("name"): case for case in root.iter("testcase")}
    assert list(cases) == [
        "greeting #1",
        "refund [angry-customer] #1",
        "order_status #1",
        "faq #1",
        "faq #2",
        "faq #3",
        "escalate #1",
        "outage #1",
    ]
    refund = cases["refund [angry-customer] #1"]
    assert refund.get("classname") == "shop"
    assert refund.get("time") == "6.500"
    failure = refund.find("failure")
    assert failure is not None
    stored = next(r for r in run[1] if r.case == "refund")
    assert failure.get("message") == stored.result.reasons[0]
    body = failure.text or ""
    assert "  ✗ step 2: Insist on a refund: not complete" in body
    assert "  ⊘ step 3: Ask for a confirmation email: blocked by step 2 (Insist on a refund)" in body
    assert "  ✗ [not_met, deterministic] turn 2: hallucination = 1" in body
    assert XSS in body  # as text: the parser unescaped it, the file holds it escaped
    assert cases["greeting #1"].find("failure") is None
    assert cases["greeting #1"].find("skipped") is None
    skipped = cases["escalate #1"].find("skipped")
    assert skipped is not None
    assert (skipped.get("message") or "").startswith("unsure: goal: Reach a human")
    error = cases["outage #1"].find("error")
    assert error is not None
    assert error.get("message") == "HTTP 503 from agent\\x00\\x07: body ]]> <oops> & \\ufffe done"
    system_out = cases["refund [angry-customer] #1"].find("system-out")
    assert system_out is not None
    assert "[not_executed]" in (system_out.text or "")
    simulated = cases["order_status #1"].find("system-out")
    assert simulated is not None
    assert "[simulated by user model 'fake/tools']" in (simulated.text or "")


# -- coverage ------------------------------------------------------------------------------------------------

COVERAGE_HEADLINE = "Coverage 88.9%: cells 6/6, steps 5/6, expectations 5/6"


def test_every_format_shows_the_coverage(run: tuple[RunRecord, list[StoredResult]]) -> None:
    """The fixed run: refund's step 3 is blocked in its one conversation, so never reached, and the success
    criteria written on it never evaluated; its agent declares no tools."""
    record, results = run
    markdown = render_markdown(record, results)
    assert f"## Coverage\n\n{COVERAGE_HEADLINE}\n" in markdown
    assert "| shop › refund › step 3: Ask for a confirmation email | 0/1 | 0 | 0 | 0 | 1 | 0 |" in markdown
    page = render_html(record, results)
    assert f"<section id='coverage'><h2>Coverage</h2><p><strong>{COVERAGE_HEADLINE}</strong>" in page
    assert "<h3>Steps never reached (1)</h3><ul><li>shop › refund › step 3: Ask for a confirmation email</li>" in page
    coverage = json.loads(render_json(record, results))["run"]["totals"]["coverage"]
    assert coverage["percent"] == pytest.approx(800 / 9)
    assert coverage["steps_ratio"] == {"covered": 5, "total": 6}
    sheet = _workbook(render_xlsx(record, results))["Coverage"]
    rows = list(sheet.iter_rows(values_only=True))
    assert rows[0][:2] == ("coverage %", round(800 / 9, 3))
    assert rows[2][:3] == ("steps covered / total", 5, 6)
    assert any(row[0] == "shop › refund › step 3: Ask for a confirmation email" and row[2] == 0 for row in rows)


def test_a_run_without_coverage_renders_without_it(run: tuple[RunRecord, list[StoredResult]]) -> None:
    record, results = run
    assert record.totals is not None
    old = record.model_copy(update={"totals": record.totals.model_copy(update={"coverage": None})})
    assert "## Coverage" not in render_markdown(old, results)
    assert "id='coverage'" not in render_html(old, results)
    assert _workbook(render_xlsx(old, results)).sheetnames == ["Summary", "Cases", "Steps"]
