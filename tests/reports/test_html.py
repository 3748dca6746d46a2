"""The HTML report: one self-contained page, failures first, goal by goal, every piece of text escaped.

The fixture run below has several suites, cases, personas and repeats, with a failing case, blocked and
incomplete steps, an errored case, an unsure case, a tool call that was not executed, and agent output
full of HTML/JS injection payloads. The last tests load the page in a real headless Chromium when one is
installed.
"""

from __future__ import annotations

import json
import shutil
import struct
import subprocess
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from html.parser import HTMLParser
from pathlib import Path
from urllib.parse import urlencode

import pytest

from simulator.metrics import run_summary, summarized
from simulator.models import Suite
from simulator.models.run import (
    PlanItem,
    RunRecord,
    RunSettings,
    StoredResult,
    SuiteSnapshot,
)
from simulator.models.scores import CaseResult, Outcome, Score
from simulator.models.transcript import (
    AgentEvent,
    CheckEvent,
    ErrorEvent,
    GoldenTurnRecord,
    InputEvent,
    StepOutcome,
    StopReason,
    ToolCallRecord,
    Transcript,
    TranscriptEvent,
    Usage,
    UserEvent,
)
from simulator.reports.html import CONTENT_SECURITY_POLICY, OPEN_LIMIT, OUTCOME_ORDER, render_html
from tests.factories import make_result, make_run

ROOT = Path(__file__).resolve().parents[2]
T0 = datetime(2026, 3, 1, 9, 30, tzinfo=UTC)

XSS_SCRIPT = "<script>alert(1)</script>"
XSS_BREAKOUT = "</script><script>alert(2)</script>"
XSS_IMG = "<img src=x onerror=alert(3)>"
XSS_ATTR = '"onmouseover="alert(4)'
XSS_CASE = f"xss {XSS_IMG} {XSS_ATTR}"
PAYLOADS = (XSS_SCRIPT, XSS_BREAKOUT, XSS_IMG, XSS_ATTR)

BILLING = Suite.model_validate(
    {
        "name": "billing",
        "agent": {"type": "python", "callable": "demo.agent:reply", "name": "demo-agent"},
        "cases": [
            {
                "name": "refund",
                "kind": "simulation",
                "tags": ["billing", "refund"],
                "steps": [
                    {"goal": "say hello", "success_criteria": "The agent greets the user."},
                    {"goal": "give the order number", "success_criteria": "The agent looks the order up."},
                    {"goal": "confirm the refund", "success_criteria": "The agent confirms the refund."},
                ],
            },
            {
                "name": "balance",
                "kind": "scenario",
                "tags": ["billing"],
                "goal": "learn the account balance",
                "success_criteria": "The agent states the balance.",
            },
            {
                "name": "greeting",
                "kind": "golden",
                "tags": ["smoke"],
                "turns": [{"user": "hi", "expect": {"message": "Hello! How can I help?"}}],
            },
            {
                "name": XSS_CASE,
                "kind": "simulation",
                "tags": [XSS_SCRIPT, XSS_ATTR],
                "description": XSS_BREAKOUT,
                "steps": [{"goal": XSS_SCRIPT, "success_criteria": XSS_IMG}],
            },
        ],
    }
)
SUPPORT = Suite.model_validate(
    {
        "name": "support",
        "cases": [
            {"name": "escalate", "kind": "scenario", "tags": ["support"], "goal": "reach a human"},
            {
                "name": "reset password",
                "kind": "simulation",
                "tags": ["support", "account"],
                "steps": [{"goal": "ask for a password reset"}],
            },
        ],
    }
)


def step(
    index: int,
    label: str,
    status: str,
    rationale: str = "",
    *,
    blocked_by: int | None = None,
    blocked_by_goal: str | None = None,
    turns_used: int = 1,
) -> StepOutcome:
    return StepOutcome.model_validate(
        {
            "index": index,
            "label": label,
            "status": status,
            "rationale": rationale,
            "turns_used": turns_used,
            "completed_at_turn": turns_used if status == "complete" else None,
            "verdict": "met" if status == "complete" else None,
            "blocked_by": blocked_by,
            "blocked_by_goal": blocked_by_goal,
        }
    )


def user(turn: int, text: str, step_index: int | None = 0) -> UserEvent:
    return UserEvent(turn=turn, step=step_index, text=text, source="scripted", at=T0)


def agent(turn: int, *messages: str, tools: Sequence[ToolCallRecord] = (), step_index: int | None = 0) -> AgentEvent:
    return AgentEvent(turn=turn, step=step_index, messages=list(messages), tool_calls=list(tools), at=T0)


def check(turn: int, verdict: str, rationale: str, step_index: int = 0) -> CheckEvent:
    return CheckEvent.model_validate(
        {"turn": turn, "step": step_index, "verdict": verdict, "rationale": rationale, "at": T0}
    )


def score(metric: str, verdict: str, reason: str = "", *, source: str = "judge", check_text: str = "") -> Score:
    return Score.model_validate(
        {"metric": metric, "check": check_text or metric, "source": source, "verdict": verdict, "reason": reason}
    )


@dataclass
class Case:
    """One result to build: where it belongs and what happened."""

    suite: int
    name: str
    kind: str
    outcome: Outcome
    persona: str | None = None
    repeat: int = 0
    events: list[TranscriptEvent] = field(default_factory=list)
    steps: list[StepOutcome] = field(default_factory=list)
    scores: list[Score] = field(default_factory=list)
    reasons: list[str] = field(default_factory=list)
    golden: list[GoldenTurnRecord] = field(default_factory=list)
    stop_reason: StopReason = "completed"
    error: str | None = None


def stored(run_id: str, c: Case) -> StoredResult:
    turns = max((e.turn for e in c.events), default=0)
    transcript = Transcript.model_validate(
        {
            "case": c.name,
            "kind": c.kind,
            "persona": c.persona,
            "seed": 7,
            "events": [e.model_dump() for e in c.events],
            "steps": [s.model_dump() for s in c.steps],
            "golden_turns": [g.model_dump() for g in c.golden],
            "stop_reason": c.stop_reason,
            "error": c.error,
            "turns": turns,
            "usage": {"agent": Usage(prompt_tokens=120, completion_tokens=40, calls=turns, cost=0.0012).model_dump()},
            "started_at": T0,
        }
    )
    return make_result(
        run_id,
        c.suite,
        c.name,
        c.outcome,
        persona=c.persona,
        repeat=c.repeat,
        duration_s=1.5,
        finished=T0 + timedelta(minutes=2),
        result=CaseResult.model_validate(
            {
                "case": c.name,
                "kind": c.kind,
                "persona": c.persona,
                "repeat": c.repeat,
                "outcome": c.outcome,
                "reasons": c.reasons,
                "transcript": transcript,
                "scores": [s.model_dump() for s in c.scores],
            }
        ),
    )


#: The outcomes of the three runs of "reset password": a flaky case.
REPEATED: tuple[Outcome, ...] = ("fail", "fail", "pass")


def fixture_cases() -> list[Case]:
    order_lookup = ToolCallRecord(
        id="t1", name="lookup_order", arguments={"order": "A-17"}, status="faked", result={"total": 30}, fake="case"
    )
    refund = ToolCallRecord(
        id="t2",
        name="issue_refund",
        arguments={"order": "A-17"},
        status="not_executed",
        result="not executed in test mode",
    )
    xss_tool = ToolCallRecord(
        id="t3", name="save_note", arguments={"note": XSS_BREAKOUT}, status="executed", result=XSS_IMG
    )
    return [
        Case(
            0,
            "refund",
            "simulation",
            "pass",
            persona="polite",
            events=[
                user(1, "Hello there"),
                agent(1, "Hi! How can I help?"),
                check(1, "met", "The agent greeted the user."),
                user(2, "My order is A-17", 1),
                agent(2, "Found it.", tools=[order_lookup], step_index=1),
                user(3, "Please refund it", 2),
                agent(3, "Done.", step_index=2),
            ],
            steps=[
                step(0, "say hello", "complete", "Greeted at turn 1."),
                step(1, "give the order number", "complete", "Order looked up."),
                step(2, "confirm the refund", "complete", "Refund confirmed."),
            ],
            scores=[score("goal", "met", "all steps complete", source="engine")],
        ),
        Case(
            0,
            "refund",
            "simulation",
            "fail",
            persona="impatient",
            events=[
                user(1, "hi"),
                agent(1, "Hello!"),
                check(1, "met", "Greeted."),
                InputEvent(turn=2, step=1, name="button_press", payload={"id": "refund"}, at=T0),
                agent(
                    2,
                    "Your refund is issued, see https://example.com/refund",
                    tools=[refund],
                    step_index=1,
                ),
                check(2, "not_met", "The order number was never given.", 1),
            ],
            steps=[
                step(0, "say hello", "complete", "Greeted at turn 1."),
                step(1, "give the order number", "incomplete", "The user never gave the order number.", turns_used=3),
                step(
                    2,
                    "confirm the refund",
                    "blocked",
                    "blocked: step 2 failed",
                    blocked_by=1,
                    blocked_by_goal="give the order number",
                    turns_used=0,
                ),
            ],
            scores=[
                score("hallucination", "not_met", "claims a refund that was never executed", check_text="turn 2"),
                score("step", "not_met", "give the order number: not met", source="deterministic"),
            ],
            reasons=["turn 2: claims a refund that was never executed", "step 2: not met"],
        ),
        Case(
            0,
            "balance",
            "scenario",
            "unsure",
            events=[user(1, "What is my balance?"), agent(1, "It is around 40."), check(1, "unsure", "Vague.")],
            steps=[step(0, "learn the account balance", "incomplete", "The judge could not tell.")],
            scores=[score("goal", "unsure", "the answer is vague")],
            reasons=["goal: the answer is vague"],
        ),
        Case(
            0,
            "greeting",
            "golden",
            "pass",
            events=[user(1, "hi", None), agent(1, "Hello! How can I help?", step_index=None)],
            golden=[
                GoldenTurnRecord(
                    index=0,
                    user="hi",
                    expected_message="Hello! How can I help?",
                    actual_messages=["Hello! How can I help?"],
                )
            ],
            scores=[score("semantic_match", "met", "same meaning")],
        ),
        Case(
            0,
            XSS_CASE,
            "simulation",
            "fail",
            persona="polite",
            events=[
                user(1, f"please repeat {XSS_SCRIPT}"),
                agent(1, XSS_SCRIPT, XSS_BREAKOUT, XSS_IMG, f"<a title=''{XSS_ATTR}>x</a>", tools=[xss_tool]),
                check(1, "not_met", XSS_ATTR),
            ],
            steps=[step(0, XSS_SCRIPT, "incomplete", XSS_BREAKOUT)],
            scores=[score("step", "not_met", XSS_IMG, check_text=XSS_BREAKOUT)],
            reasons=[f"{XSS_SCRIPT}: not met"],
        ),
        Case(
            1,
            "escalate",
            "scenario",
            "error",
            events=[
                user(1, "Get me a human"),
                ErrorEvent(turn=1, step=0, where="agent", message="connection refused", at=T0),
            ],
            steps=[step(0, "reach a human", "not_attempted")],
            stop_reason="error",
            error="AgentError: http://localhost:9/v1 refused the connection",
            reasons=["AgentError: http://localhost:9/v1 refused the connection"],
        ),
        *[
            Case(
                1,
                "reset password",
                "simulation",
                outcome,
                repeat=repeat,
                events=[user(1, "reset my password"), agent(1, "Sent a link." if outcome == "pass" else "Sorry?")],
                steps=[step(0, "ask for a password reset", "complete" if outcome == "pass" else "incomplete")],
                scores=[score("step", "met" if outcome == "pass" else "not_met", source="deterministic")],
                reasons=[] if outcome == "pass" else ["step 1: not met"],
            )
            for repeat, outcome in enumerate(REPEATED)
        ],
    ]


def make_record(run_id: str, results: Sequence[StoredResult], *, totals: bool = True) -> RunRecord:
    return make_run(
        run_id,
        SuiteSnapshot(path="suites/billing.yaml", suite=BILLING),
        SuiteSnapshot(path="suites/support.yaml", suite=SUPPORT),
        created=T0,
        finished=T0 + timedelta(minutes=3),
        status="completed",
        agent_version="v1.2.3",
        note=f"nightly {XSS_SCRIPT}",
        suite_hash="abc123",
        settings=RunSettings(paths=["suites"], repeat=3, seed=42, user_model="openai/gpt-4o-mini"),
        versions={"simulator": "0.1.0", "python": "3.11.7", "litellm": "1.70.0"},
        plan=[PlanItem(key=r.key, suite=r.suite, case=r.case, persona=r.persona, repeat=r.repeat) for r in results],
        totals=run_summary(results, 180.0).model_copy(
            update={
                "usage": {
                    "agent": Usage(calls=12, prompt_tokens=1200, completion_tokens=400, cost=0.0123),
                    "user": Usage(
                        calls=10,
                        prompt_tokens=900,
                        completion_tokens=150,
                        cost=0.004,
                        cached_calls=4,
                        cached_cost=0.0016,
                    ),
                    "judge": Usage(calls=8, prompt_tokens=2000, completion_tokens=300, cost=None),
                }
            }
        )
        if totals
        else None,
    )


RUN_ID = "run-20260301-abc"
RESULTS = [stored(RUN_ID, c) for c in fixture_cases()]
RECORD = make_record(RUN_ID, RESULTS)


# -- a small DOM, built with the standard library's parser ------------------------------------------------------

VOID = {"area", "base", "br", "col", "embed", "hr", "img", "input", "link", "meta", "source", "track", "wbr"}


@dataclass
class Node:
    tag: str
    attrs: dict[str, str | None]
    children: list[Node | str] = field(default_factory=list)

    def iter(self) -> Iterator[Node]:
        yield self
        for child in self.children:
            if isinstance(child, Node):
                yield from child.iter()

    def text(self) -> str:
        return "".join(child if isinstance(child, str) else child.text() for child in self.children)

    def words(self) -> str:
        """The text with every run of whitespace, and every element boundary, as one space."""
        parts = (child if isinstance(child, str) else child.words() for child in self.children)
        return " ".join(" ".join(parts).split())

    def classes(self) -> set[str]:
        return set((self.attrs.get("class") or "").split())

    def find(self, element_id: str) -> Node:
        for node in self.iter():
            if node.attrs.get("id") == element_id:
                return node
        raise AssertionError(f"no element with id {element_id!r}")

    def by_class(self, name: str) -> list[Node]:
        return [node for node in self.iter() if name in node.classes()]


class Tree(HTMLParser):
    """Every start tag as the browser's tokenizer sees it, and the elements as a tree."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.root = Node("#document", {})
        self.stack = [self.root]
        self.start_tags: list[tuple[str, list[tuple[str, str | None]]]] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.start_tags.append((tag, attrs))
        node = Node(tag, dict(attrs))
        self.stack[-1].children.append(node)
        if tag not in VOID:
            self.stack.append(node)

    def handle_startendtag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.start_tags.append((tag, attrs))
        self.stack[-1].children.append(Node(tag, dict(attrs)))

    def handle_endtag(self, tag: str) -> None:
        for depth in range(len(self.stack) - 1, 0, -1):
            if self.stack[depth].tag == tag:
                del self.stack[depth:]
                return

    def handle_data(self, data: str) -> None:
        self.stack[-1].children.append(data)


def parse(page: str) -> Tree:
    tree = Tree()
    tree.feed(page)
    tree.close()
    return tree


def case_nodes(tree: Tree) -> list[Node]:
    return [node for node in tree.root.iter() if node.tag == "details" and "case" in node.classes()]


PAGE = render_html(RECORD, RESULTS)
TREE = parse(PAGE)


# -- escaping -------------------------------------------------------------------------------------------------


def test_payloads_appear_only_escaped() -> None:
    lowered = PAGE.lower()
    assert "<script>alert" not in lowered
    assert "<img" not in lowered
    assert "onerror=alert(3)>" not in lowered
    assert '"onmouseover="' not in lowered
    for payload in PAYLOADS:
        assert payload not in PAGE
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in PAGE
    assert "&lt;/script&gt;&lt;script&gt;alert(2)&lt;/script&gt;" in PAGE
    assert "&lt;img src=x onerror=alert(3)&gt;" in PAGE
    assert "&quot;onmouseover=&quot;alert(4)" in PAGE
    # Decoded by a parser, the payloads are text of the page (shown to the reader), never markup.
    assert XSS_CASE in TREE.root.text()
    assert XSS_BREAKOUT in TREE.root.text()


def test_the_only_scripts_are_the_reports_own_and_no_element_has_event_handlers() -> None:
    scripts = [dict(attrs) for tag, attrs in TREE.start_tags if tag == "script"]
    assert scripts == [
        {"type": "application/json", "id": "simulator-report-data"},
        {"id": "simulator-report-script"},
    ]
    for tag, attrs in TREE.start_tags:
        assert tag not in ("img", "iframe", "object", "embed", "a") or all(n != "src" for n, _ in attrs)
        for name, _ in attrs:
            assert not name.lower().startswith("on"), f"<{tag}> has an event handler attribute {name!r}"


def test_the_filter_data_is_json_that_cannot_close_its_script_element() -> None:
    start = PAGE.index("<script type='application/json' id='simulator-report-data'>")
    block = PAGE[start:].split(">", 1)[1].split("</script>", 1)[0]
    assert "<" not in block
    assert ">" not in block
    assert "&" not in block
    data = json.loads(block)
    assert data["run"] == RUN_ID
    names = {case["case"] for case in data["cases"]}
    assert XSS_CASE in names
    xss = next(case for case in data["cases"] if case["case"] == XSS_CASE)
    assert xss["tags"] == [XSS_SCRIPT, XSS_ATTR]
    assert xss["persona"] == "polite"
    # Every entry points at a case element of the page.
    assert [case["id"] for case in data["cases"]] == [node.attrs["id"] for node in case_nodes(TREE)]


def test_attribute_values_decode_to_the_original_text() -> None:
    tag_options = [node.attrs["value"] for node in TREE.root.iter() if node.tag == "option" and node.attrs.get("value")]
    assert XSS_ATTR in tag_options
    assert XSS_SCRIPT in tag_options


# -- no network -----------------------------------------------------------------------------------------------


def test_the_page_loads_nothing_from_anywhere() -> None:
    meta = [n for n in TREE.root.iter() if n.tag == "meta" and n.attrs.get("http-equiv") == "Content-Security-Policy"]
    assert len(meta) == 1
    policy = meta[0].attrs["content"] or ""
    assert policy == CONTENT_SECURITY_POLICY
    for directive in ("default-src 'none'", "style-src 'unsafe-inline'", "script-src 'unsafe-inline'", "img-src data:"):
        assert directive in policy
    for node in TREE.root.iter():
        assert "src" not in node.attrs, f"<{node.tag}> loads {node.attrs['src']!r}"
        href = node.attrs.get("href")
        if href is not None:
            assert href.startswith(("#", "data:")), f"<{node.tag}> links to {href!r}"
        for name, value in node.attrs.items():
            assert "http://" not in (value or ""), (node.tag, name, value)
            assert "https://" not in (value or ""), (node.tag, name, value)
    # Inside the style and script elements there are no addresses at all.
    for node in TREE.root.iter():
        if node.tag in ("style", "script"):
            text = node.text()
            for forbidden in ("http://", "https://", "@import", "url("):
                assert forbidden not in text
    # The addresses the page does contain are text: an agent's message and an error.
    assert "https://example.com/refund" in TREE.root.text()
    assert "http://localhost:9/v1" in TREE.root.text()


# -- order and content ----------------------------------------------------------------------------------------


def test_failures_come_before_passes() -> None:
    outcomes = [node.attrs["data-outcome"] for node in case_nodes(TREE)]
    assert len(outcomes) == len(RESULTS)
    ranks = [OUTCOME_ORDER.index(o) for o in outcomes]
    assert ranks == sorted(ranks)
    assert outcomes[0] == "error"
    assert outcomes[-1] == "pass"
    assert PAGE.index("data-outcome='fail'") < PAGE.index("data-outcome='pass'")
    # Cases that did not pass are open; passes are closed (the page reads the same without JavaScript).
    for node in case_nodes(TREE):
        assert ("open" in node.attrs) == (node.attrs["data-outcome"] != "pass")


def case_by(name: str, persona: str | None = None, repeat: int = 0) -> Node:
    data = json.loads(TREE.root.find("simulator-report-data").text())
    for entry in data["cases"]:
        if entry["case"] == name and entry["persona"] == persona and entry["repeat"] == repeat:
            return TREE.root.find(entry["id"])
    raise AssertionError(f"no case {name!r}")


def test_goal_by_goal_view_of_a_failing_case() -> None:
    node = case_by("refund", "impatient")
    text = node.words()
    assert "Goals (1/3)" in text
    steps = [li for li in node.iter() if li.tag == "li" and "step" in li.classes()]
    assert [s.classes() - {"step"} for s in steps] == [{"step-complete"}, {"step-incomplete"}, {"step-blocked"}]
    details = [next(d for d in s.iter() if d.tag == "details") for s in steps]
    assert ["open" in d.attrs for d in details] == [False, True, True]
    assert ["✓" in s.text() for s in steps] == [True, False, False]
    assert ["✗" in s.text() for s in steps] == [False, True, False]
    assert ["⊘" in s.text() for s in steps] == [False, False, True]
    assert "The user never gave the order number." in steps[1].text()
    assert "blocked by step 2: give the order number" in steps[2].text()
    assert "Success criteria: The agent looks the order up." in steps[1].text()
    # The not-executed tool call stands out.
    tools = node.by_class("tool-not_executed")
    assert len(tools) == 1
    assert "NOT EXECUTED" in tools[0].text()
    assert "issue_refund" in tools[0].text()
    # Scores with their source and reason; the reasons the case failed.
    rows = [r for r in node.iter() if r.tag == "tr" and "verdict-not_met" in r.classes()]
    assert any("judge" in r.text() and "claims a refund that was never executed" in r.text() for r in rows)
    assert "Why it did not pass" in text
    assert "button_press" in text


def test_errored_unsure_golden_and_repeated_cases() -> None:
    errored = case_by("escalate")
    cards = errored.by_class("error-card")
    assert len(cards) == 1
    assert "http://localhost:9/v1 refused the connection" in cards[0].text()
    assert "connection refused" in errored.text()
    unsure = case_by("balance")
    assert "UNSURE" in unsure.text()
    assert "Goals (0/1)" in unsure.text()
    golden = case_by("greeting")
    assert "Golden turns (1/1)" in golden.text()
    assert not golden.by_class("error-card")
    flaky = case_by("reset password", repeat=2)
    assert "flaky" in flaky.text()
    assert "run 3 of 3" in flaky.text()
    repeats = TREE.root.find("repeats").words()
    assert "reset password" in repeats
    assert "1/3" in repeats
    assert "flaky" in repeats


def test_run_header_totals_and_metrics() -> None:
    header = next(n for n in TREE.root.iter() if n.tag == "header").words()
    for expected in (RUN_ID, "completed", "billing", "support", "suites/billing.yaml", "v1.2.3", "demo-agent"):
        assert expected in header
    assert f"nightly {XSS_SCRIPT}" in header
    assert "Seed 42" in header
    assert "litellm 1.70.0" in header
    totals = TREE.root.find("totals").words()
    assert "33.3% Correctness" in totals
    for count in ("3 Passed", "4 Failed", "1 Error", "1 Unsure", "9 of 9 Total"):
        assert count in totals
    for role in ("agent", "user", "judge"):
        assert role in totals
    assert "1,200" in totals  # agent prompt tokens
    assert "unknown" in totals  # the judge's cost is unknown, and so is the total
    # Answers from the request cache are told apart from requests sent, with what they cost when first asked.
    assert "4 of 30 From request cache (would-be $0.0016)" in totals
    assert "Requests sent" in totals
    assert "user 10 4 6 900 150 1,050 $0.0040 $0.0016" in totals
    metrics = TREE.root.find("metrics").words()
    for metric in ("goal", "hallucination", "step", "semantic_match"):
        assert metric in metrics


def test_filters_offer_tags_personas_suites_kinds_and_search() -> None:
    form = TREE.root.find("filters")
    assert "hidden" in form.attrs  # shown by the script; without JavaScript there is nothing to fiddle with
    names = {n.attrs.get("name") for n in form.iter() if n.tag in ("input", "select")}
    assert names == {"outcome", "tag", "persona", "suite", "kind", "q"}
    options = {
        (select.attrs["name"], option.attrs["value"])
        for select in form.iter()
        if select.tag == "select"
        for option in select.iter()
        if option.tag == "option"
    }
    assert {("tag", "billing"), ("tag", "refund"), ("tag", "support"), ("tag", "smoke")} <= options
    assert {("persona", "polite"), ("persona", "impatient"), ("persona", "-")} <= options
    assert {("suite", "0"), ("suite", "1")} <= options
    kinds = {value for name, value in options if name == "kind"}
    assert kinds == {""} | {stored.result.transcript.kind for stored in RESULTS}


def test_rendering_is_pure_and_handles_an_empty_run() -> None:
    assert render_html(RECORD, RESULTS) == PAGE
    empty = render_html(make_record("empty", [], totals=False), [])
    assert "No results yet." in empty
    assert "Correctness" in empty
    assert not case_nodes(parse(empty))


def test_totals_come_from_the_results_when_the_run_has_none() -> None:
    # A run stored without a summary (still running, or by an older version) gets one from its results.
    page = render_html(summarized(make_record(RUN_ID, RESULTS, totals=False), RESULTS), RESULTS)
    totals = parse(page).root.find("totals").words()
    assert "3 Passed" in totals
    assert "agent" in totals  # usage summed from the transcripts


def many_results(run_id: str, n: int) -> list[StoredResult]:
    outcomes: tuple[Outcome, ...] = ("pass", "pass", "fail", "pass", "error", "pass", "unsure")
    cases = [
        Case(
            i % 2,
            f"generated case {i:03d}",
            "simulation",
            outcomes[i % len(outcomes)],
            persona=("polite", "impatient", None)[i % 3],
            events=[
                user(1, f"message {i} with {XSS_SCRIPT}"),
                agent(1, f"reply {i}", tools=[ToolCallRecord(id=f"t{i}", name="lookup", status="not_executed")]),
                check(1, "met", "ok"),
                user(2, "thanks", 1),
                agent(2, f"bye {XSS_BREAKOUT}", step_index=1),
            ],
            steps=[step(0, "ask", "complete", "asked"), step(1, "close", "incomplete", "not closed")],
            scores=[score("step", "not_met", "not closed", source="deterministic")],
            reasons=["step 2: not met"],
        )
        for i in range(n)
    ]
    return [stored(run_id, c) for c in cases]


def test_a_page_with_300_cases() -> None:
    results = many_results("big", 300)
    page = render_html(make_record("big", results), results)
    assert isinstance(page, str)
    tree = parse(page)
    nodes = case_nodes(tree)
    assert len(nodes) == 300
    assert len({node.attrs["id"] for node in nodes}) == 300
    ranks = [OUTCOME_ORDER.index(node.attrs["data-outcome"]) for node in nodes]
    assert ranks == sorted(ranks)
    assert "<script>alert" not in page
    # More failures than OPEN_LIMIT: every case starts closed, so the summary lines read as a list.
    assert sum(1 for node in nodes if node.attrs["data-outcome"] != "pass") > OPEN_LIMIT
    assert not [node for node in nodes if "open" in node.attrs]


# -- a real browser -------------------------------------------------------------------------------------------

SKIP_NO_CHROMIUM = "chromium is not installed: apt-get install chromium (the CI script installs it)"
#: Set by the test pages before the report: an injected script that calls alert() marks the document.
ALERT_HOOK = (
    "<script>window.alert = function (m) { document.documentElement.setAttribute('data-xss', String(m)); };</script>"
)


def chromium() -> str:
    for candidate in ("/usr/bin/chromium", shutil.which("chromium"), shutil.which("chromium-browser")):
        if candidate and Path(candidate).exists():
            return candidate
    pytest.skip(SKIP_NO_CHROMIUM)


def run_chromium(binary: str, tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    profile = tmp_path / f"profile-{len(list(tmp_path.glob('profile-*')))}"
    command = [
        binary,
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        "--disable-quic",
        "--no-first-run",
        f"--user-data-dir={profile}",
        *args,
    ]
    try:
        return subprocess.run(command, capture_output=True, text=True, timeout=120, check=False)
    except subprocess.TimeoutExpired as exc:
        pytest.fail(f"chromium did not finish in {exc.timeout} s: {' '.join(command)}")


def with_alert_hook(page: str) -> str:
    return page.replace("<head>\n", "<head>\n" + ALERT_HOOK + "\n", 1)


def dump_dom(binary: str, tmp_path: Path, url: str) -> Tree:
    done = run_chromium(binary, tmp_path, "--dump-dom", url)
    assert done.returncode == 0, done.stderr[-2000:]
    assert "<html" in done.stdout, done.stderr[-2000:]
    return parse(done.stdout)


def html_element(tree: Tree) -> Node:
    return next(node for node in tree.root.iter() if node.tag == "html")


def png_size(path: Path) -> tuple[int, int]:
    data = path.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    width, height = struct.unpack(">II", data[16:24])
    return width, height


def test_in_headless_chromium(tmp_path: Path) -> None:
    binary = chromium()
    page = tmp_path / "report.html"
    page.write_text(with_alert_hook(PAGE), encoding="utf-8")

    shot = tmp_path / "report.png"
    done = run_chromium(binary, tmp_path, f"--screenshot={shot}", "--window-size=1280,2000", page.as_uri())
    assert done.returncode == 0, done.stderr[-2000:]
    assert shot.exists(), done.stderr[-2000:]
    assert shot.stat().st_size > 20_000
    assert png_size(shot) == (1280, 2000)
    artifacts = ROOT / "test-artifacts"
    artifacts.mkdir(exist_ok=True)
    shutil.copyfile(shot, artifacts / "html-report.png")

    dom = dump_dom(binary, tmp_path, page.as_uri())
    root = html_element(dom)
    assert root.attrs.get("data-report-ready") == str(len(RESULTS)), "the report's script did not run"
    assert "data-xss" not in root.attrs, f"an injected script ran: alert({root.attrs.get('data-xss')})"
    assert len(case_nodes(dom)) == len(RESULTS)
    assert "hidden" not in dom.root.find("filters").attrs  # the script showed the filter bar
    assert not [n for n in dom.root.iter() if n.tag in ("img", "iframe", "object", "embed")]
    for node in dom.root.iter():
        assert not any(name.startswith("on") for name in node.attrs)
    scripts = [n.attrs.get("id") for n in dom.root.iter() if n.tag == "script"]
    assert scripts == [None, "simulator-report-data", "simulator-report-script"]  # the hook, then the report's
    assert XSS_CASE in dom.root.text()


def test_the_alert_hook_catches_a_script_that_runs(tmp_path: Path) -> None:
    """The control for the test above: a script that does run is caught by the hook."""
    binary = chromium()
    page = tmp_path / "control.html"
    page.write_text(with_alert_hook(PAGE).replace("</body>", "<script>alert(5)</script></body>", 1), encoding="utf-8")
    root = html_element(dump_dom(binary, tmp_path, page.as_uri()))
    assert root.attrs.get("data-xss") == "5"


def test_filters_in_headless_chromium(tmp_path: Path) -> None:
    binary = chromium()
    page = tmp_path / "report.html"
    page.write_text(PAGE, encoding="utf-8")
    url = page.as_uri() + "#?" + urlencode({"outcome": "fail,error", "tag": "billing"})
    dom = dump_dom(binary, tmp_path, url)
    visible = [node for node in case_nodes(dom) if "hidden" not in node.attrs]
    assert [node.attrs["data-outcome"] for node in visible] == ["fail"]
    assert "impatient" in visible[0].text()
    assert "Showing 1 of 9 cases" in dom.root.find("shown").text()
    # Search: every word must occur in the case.
    dom = dump_dom(binary, tmp_path, page.as_uri() + "#?" + urlencode({"q": "REFUND impatient"}))
    visible = [node for node in case_nodes(dom) if "hidden" not in node.attrs]
    assert len(visible) == 1
    assert "impatient" in visible[0].text()
    # Kind: only the cases of that kind.
    for kind in sorted({stored.result.transcript.kind for stored in RESULTS}):
        dom = dump_dom(binary, tmp_path, page.as_uri() + "#?" + urlencode({"kind": kind}))
        visible = [node for node in case_nodes(dom) if "hidden" not in node.attrs]
        assert len(visible) == sum(1 for stored in RESULTS if stored.result.transcript.kind == kind), kind
