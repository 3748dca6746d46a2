"""The four states look the same in every run view: ✓ met, ✗ not met, ? unsure or not
judged, ⊘ blocked or not reached (``simulator/reports/_states.py``).

One small run holds every step status (complete, incomplete, unsure, blocked, not_reached and the older
not_attempted) and a golden case whose second turn was not judged; each renderer is checked against one
table of what it must show. The digest and the comparison have their own tests (tests/test_digest.py,
tests/test_compare.py).
"""

from __future__ import annotations

import csv
import io
import json
import xml.etree.ElementTree as ET
from collections.abc import Callable
from datetime import UTC, datetime
from importlib import resources

import pytest

from simulator.metrics import case_outcome
from simulator.models import Suite
from simulator.models.run import PlanItem, RunRecord, RunSettings, StoredResult, SuiteSnapshot
from simulator.models.scores import CaseResult, Score
from simulator.models.transcript import (
    AgentEvent,
    CheckEvent,
    GoldenTurnRecord,
    StepOutcome,
    Transcript,
    TranscriptEvent,
    UserEvent,
)
from simulator.reports._states import (
    MARK,
    golden_turn_states,
    outcome_mark,
    step_mark,
    step_name,
    step_words,
    verdict_mark,
)
from simulator.reports.html import render_html
from simulator.reports.json_export import SCHEMA_FILE, render_json
from simulator.reports.junit import render_junit
from simulator.reports.markdown import render_markdown
from simulator.reports.run_text import case_rows
from simulator.reports.tabular import render_xlsx, step_table
from simulator.reports.transcript_text import transcript_lines
from tests import factories

T0 = datetime(2026, 5, 4, 8, 0, tzinfo=UTC)
NOT_JUDGED = "not judged: no judge model is configured (set models.judge in the suite or pass --judge-model)"

SUITE = Suite.model_validate(
    {
        "name": "states",
        "cases": [
            {
                "name": "four_states",
                "kind": "simulation",
                "steps": [
                    {"goal": "say hello"},
                    {"goal": "ask about fees"},
                    {"goal": "give the order number"},
                    {"goal": "confirm the refund"},
                ],
            },
            {
                "name": "cut_short",
                "kind": "simulation",
                "steps": [{"goal": "say hello"}, {"goal": "ask for the invoice"}, {"goal": "say goodbye"}],
            },
            {
                "name": "golden_unsure",
                "kind": "golden",
                "turns": [
                    {"user": "hi", "expect": {"must_contain": ["hello"]}},
                    {"user": "what are the fees?", "expect": {"message": "The fee is 2 EUR."}},
                ],
            },
        ],
    }
)


def _step(index: int, label: str, status: str, **extra: object) -> StepOutcome:
    return StepOutcome.model_validate({"index": index, "label": label, "status": status, **extra})


def _score(check: str, verdict: str, reason: str, *, turn: int | None = None, step: int | None = None) -> Score:
    metric = "goal_achievement" if step is not None else "semantic_match"
    source = "engine" if step is not None else "judge"
    return Score.model_validate(
        {"metric": metric, "check": check, "source": source, "verdict": verdict, "reason": reason, "turn": turn}
        | ({"step": step} if step is not None else {})
    )


def _stored(
    index: int,
    case: str,
    kind: str,
    events: list[TranscriptEvent],
    scores: list[Score],
    *,
    steps: list[StepOutcome] | None = None,
    golden: list[GoldenTurnRecord] | None = None,
    stop: str = "completed",
) -> StoredResult:
    transcript = Transcript.model_validate(
        {
            "case": case,
            "kind": kind,
            "events": events,
            "steps": steps or [],
            "golden_turns": golden or [],
            "stop_reason": stop,
            "error": "judge down after 3 retries" if stop == "error" else None,
            "turns": max((event.turn for event in events), default=0),
        }
    )
    outcome, reasons = case_outcome(transcript, scores)
    result = CaseResult(
        case=case, kind=transcript.kind, outcome=outcome, reasons=reasons, transcript=transcript, scores=scores
    )
    return factories.make_result("states-run", 0, case, outcome, result=result, finished=T0)


def make_run() -> tuple[RunRecord, list[StoredResult]]:
    four = _stored(
        0,
        "four_states",
        "simulation",
        [
            UserEvent(turn=1, step=0, text="Hello", source="scripted", at=T0),
            AgentEvent(turn=1, step=0, messages=["Hi!"], at=T0),
            CheckEvent(turn=1, step=0, verdict="met", rationale="greeted", at=T0),
            UserEvent(turn=2, step=1, text="Any fees?", source="scripted", at=T0),
            AgentEvent(turn=2, step=1, messages=["Some."], at=T0),
            CheckEvent(turn=2, step=1, verdict="unsure", rationale=NOT_JUDGED, at=T0),
            UserEvent(turn=3, step=2, text="It is A1.", source="scripted", at=T0),
            AgentEvent(turn=3, step=2, messages=["Which order?"], at=T0),
            CheckEvent(turn=3, step=2, verdict="not_met", rationale="the agent ignored the number", at=T0),
        ],
        [
            _score("step 1: say hello", "met", "greeted", step=0),
            _score("step 2: ask about fees", "unsure", NOT_JUDGED, step=1),
            _score("step 3: give the order number", "not_met", "the agent ignored the number", step=2),
            _score("step 4: confirm the refund", "not_met", "blocked by step 3", step=3),
        ],
        steps=[
            _step(0, "say hello", "complete", turns_used=1, completed_at_turn=1, verdict="met"),
            _step(1, "ask about fees", "unsure", turns_used=3, verdict="unsure", rationale=NOT_JUDGED),
            _step(2, "give the order number", "incomplete", turns_used=3, verdict="not_met"),
            _step(3, "confirm the refund", "blocked", blocked_by=2, blocked_by_goal="give the order number"),
        ],
        stop="step_failed",
    )
    cut = _stored(
        1,
        "cut_short",
        "simulation",
        [
            UserEvent(turn=1, step=0, text="Hello", source="scripted", at=T0),
            AgentEvent(turn=1, step=0, messages=["Hi!"], at=T0),
        ],
        [_score("step 1: say hello", "met", "greeted", step=0)],
        steps=[
            _step(0, "say hello", "complete", turns_used=1, completed_at_turn=1, verdict="met"),
            _step(1, "ask for the invoice", "not_reached"),
            _step(2, "say goodbye", "not_attempted"),
        ],
        stop="error",
    )
    golden = _stored(
        2,
        "golden_unsure",
        "golden",
        [
            UserEvent(turn=1, text="hi", source="scripted", at=T0),
            AgentEvent(turn=1, messages=["hello there"], at=T0),
            UserEvent(turn=2, text="what are the fees?", source="scripted", at=T0),
            AgentEvent(turn=2, messages=["It costs 2 EUR."], at=T0),
        ],
        [
            _score("turn 1: must_contain: hello", "met", "found", turn=1),
            _score("turn 2: semantic match", "unsure", NOT_JUDGED, turn=2),
        ],
        golden=[
            GoldenTurnRecord(index=0, user="hi", actual_messages=["hello there"]),
            GoldenTurnRecord(
                index=1,
                user="what are the fees?",
                expected_message="The fee is 2 EUR.",
                actual_messages=["It costs 2 EUR."],
            ),
        ],
    )
    results = [four, cut, golden]
    record = factories.make_run(
        "states-run",
        SuiteSnapshot(path="suites/states.yaml", suite=SUITE),
        created=T0,
        finished=T0,
        status="completed",
        suite_hash="h",
        settings=RunSettings(paths=["suites/states.yaml"]),
        plan=[PlanItem(key=r.key, suite=0, case=r.case, repeat=0, seed=0) for r in results],
    )
    return record, results


RUN = make_run()


def _result(case: str) -> StoredResult:
    return next(stored for stored in RUN[1] if stored.case == case)


# -- the map --------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("status", "mark", "name"),
    [
        ("complete", "✓", "complete"),
        ("incomplete", "✗", "incomplete"),
        ("unsure", "?", "unsure"),
        ("blocked", "⊘", "blocked"),
        ("not_reached", "⊘", "not_reached"),
        ("not_attempted", "⊘", "not_reached"),
    ],
)
def test_every_step_status_has_its_mark(status: str, mark: str, name: str) -> None:
    assert step_mark(status) == mark  # type: ignore[arg-type]
    assert step_name(status) == name  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("verdict", "reason", "mark"),
    [
        ("met", "", "✓"),
        ("not_met", "wrong amount", "✗"),
        ("not_met", NOT_JUDGED, "?"),
        ("unsure", "", "?"),
        ("n/a", "", "–"),
        ("n/a", "Not judged: the turn has no message", "?"),
        ("error", "judge down", "!"),
    ],
)
def test_verdict_marks_read_not_judged_as_unsure(verdict: str, reason: str, mark: str) -> None:
    assert verdict_mark(verdict, reason) == mark  # type: ignore[arg-type]


@pytest.mark.parametrize(("outcome", "mark"), [("pass", "✓"), ("fail", "✗"), ("unsure", "?"), ("error", "!")])
def test_outcome_marks(outcome: str, mark: str) -> None:
    assert outcome_mark(outcome) == mark  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("verdicts", "state"),
    [
        ([], "met"),
        (["met"], "met"),
        (["met", "unsure"], "unsure"),
        (["met", "not_met", "unsure"], "not_met"),
        (["not_met", "error"], "error"),
    ],
)
def test_a_golden_turn_is_as_bad_as_its_worst_required_score(verdicts: list[str], state: str) -> None:
    scores = [_score("turn 1: check", verdict, "", turn=1) for verdict in verdicts]
    scores.append(Score(metric="x", check="not required", source="judge", verdict="not_met", required=False, turn=1))
    assert golden_turn_states([GoldenTurnRecord(index=0)], scores) == {0: state}


def test_step_words() -> None:
    steps = {step.status: step for step in _result("four_states").result.transcript.steps}
    assert step_words(steps["blocked"]) == "blocked by step 3 (give the order number)"
    assert step_words(steps["unsure"]) == "unsure"
    assert step_words(steps["incomplete"]) == "not complete"
    assert [step_words(s) for s in _result("cut_short").result.transcript.steps][1:] == ["not reached"] * 2


# -- every renderer -------------------------------------------------------------------------------------------


def _terminal(record: RunRecord, results: list[StoredResult]) -> str:
    return "\n".join(
        line.text for stored in results for line in transcript_lines(stored.result.transcript, stored.result)
    )


def _run_table(record: RunRecord, results: list[StoredResult]) -> str:
    return "\n".join(" | ".join(row) for row in case_rows(results))


def _steps_sheet(record: RunRecord, results: list[StoredResult]) -> str:
    _, rows = step_table(record, results)
    out = io.StringIO()
    csv.writer(out, lineterminator="\n").writerows(rows)
    return out.getvalue()


def _junit_failure(record: RunRecord, results: list[StoredResult]) -> str:
    root = ET.fromstring(render_junit(record, results))
    return "\n".join((element.text or "") for element in root.iter("failure"))


VIEWS: list[tuple[str, Callable[[RunRecord, list[StoredResult]], str], list[str], list[str]]] = [
    (
        "terminal",
        _terminal,
        [
            "  ✓ step 1: say hello — complete at turn 1",
            "  ? step 2: ask about fees — unsure",
            "  ✗ step 3: give the order number — not complete",
            "  ⊘ step 4: confirm the refund — blocked by step 3 (give the order number)",
            "  ⊘ step 2: ask for the invoice — not reached",
            "  ⊘ step 3: say goodbye — not reached",
            f"      ? check step 2: unsure — {NOT_JUDGED}",
            "  ✓ turn 1: expected: (no expected message)",
            "  ? turn 2: expected: The fee is 2 EUR.",
            "four_states (simulation): stopped step_failed after 3 turns, Goals (1/4, 1 unsure)",
        ],
        ["  ✗ turn 2", "not_attempted"],
    ),
    (
        "markdown",
        render_markdown,
        [
            "1. ✓ **say hello** (step 1) — complete at turn 1",
            "2. ? **ask about fees** (step 2) — unsure after 3 turns: the conversation moved on",
            "3. ✗ **give the order number** (step 3) — **not complete** after 3 turns (last check: not_met)",
            "4. ⊘ **confirm the refund** (step 4) — blocked by step 3 (give the order number)",
            "2. ⊘ **ask for the invoice** (step 2) — not reached",
            "3. ⊘ **say goodbye** (step 3) — not reached",
            "#### Goals (1/4, 1 unsure)",
            "| ✗ fail | states › four\\_states #1 | simulation | 1/4, 1 unsure | 3 |",
            "   - ? check after turn 2: unsure — not judged",
            "#### Turns (1/2, 1 unsure)",
            "1. ✓ user: hi",
            "2. ? user: what are the fees?",
            "### ? unsure: states › golden\\_unsure #1",
        ],
        ["❌", "✅", "⛔", "❔", "not attempted"],
    ),
    (
        "html",
        render_html,
        [
            "<span class='ok' title='complete'>✓</span> <strong>Step 1:</strong>",
            "<span class='warn' title='unsure'>?</span> <strong>Step 2:</strong>",
            "<span class='bad' title='not complete'>✗</span> <strong>Step 3:</strong>",
            "<span class='muted' title='blocked by step 3 (give the order number)'>⊘</span> <strong>Step 4:</strong>",
            "<span class='muted' title='not reached'>⊘</span> <strong>Step 2:</strong> ask for the invoice",
            "<li class='step step-not_reached'>",
            "Goals (1/4, 1 unsure)",
            "Golden turns (1/2, 1 unsure)",
            "<span class='bad'>Goals (1/4, 1 unsure)</span>",
            "<tr class='turn-unsure'><td class='num'>2</td><td><span class='warn' title='unsure'>?</span> unsure</td>",
        ],
        ["step-not_attempted", "not attempted"],
    ),
    (
        "terminal run table",
        _run_table,
        [
            "four_states | - | 1 | fail | 1/4, 1 unsure | 3 |",
            "cut_short | - | 1 | error | 1/3 | 1 |",
            "golden_unsure | - | 1 | unsure | - | 2 |",
        ],
        [],
    ),
    (
        "xlsx steps",
        _steps_sheet,
        [
            "states,four_states,,1,1,say hello,complete,,",
            "states,four_states,,1,2,ask about fees,unsure,,",
            "states,four_states,,1,3,give the order number,incomplete,,",
            "states,four_states,,1,4,confirm the refund,blocked,step 3: give the order number,",
            "states,cut_short,,1,2,ask for the invoice,not_reached,,",
            "states,cut_short,,1,3,say goodbye,not_reached,,",
        ],
        ["not_attempted"],
    ),
    (
        "junit failure",
        _junit_failure,
        [
            "  ? step 2: ask about fees: unsure",
            "  ✗ step 3: give the order number: not complete",
            "  ⊘ step 4: confirm the refund: blocked by step 3 (give the order number)",
            "  ? [unsure, engine] step 2: ask about fees",
        ],
        [],
    ),
]


@pytest.mark.parametrize(("view", "render", "shown", "absent"), VIEWS, ids=[view[0] for view in VIEWS])
def test_every_view_shows_the_four_states(
    view: str, render: Callable[[RunRecord, list[StoredResult]], str], shown: list[str], absent: list[str]
) -> None:
    text = render(*RUN)
    for expected in shown:
        assert expected in text, f"{view}: {expected!r} not shown"
    for unexpected in absent:
        assert unexpected not in text, f"{view}: {unexpected!r} shown"


def test_an_unsure_golden_turn_is_not_counted_as_failed() -> None:
    golden = _result("golden_unsure")
    assert golden.outcome == "unsure"
    markdown = render_markdown(RUN[0], [golden])
    assert "#### Turns (1/2, 1 unsure)" in markdown
    assert "2. ? user: what are the fees?" in markdown
    assert "✗" not in markdown.split("#### Turns")[1].split("####")[0]


def test_junit_reports_the_unsure_golden_case_as_skipped() -> None:
    root = ET.fromstring(render_junit(*RUN))
    cases = {case.get("name"): case for case in root.iter("testcase")}
    assert cases["golden_unsure #1"].find("skipped") is not None
    assert cases["golden_unsure #1"].find("failure") is None


def test_the_xlsx_steps_sheet_holds_the_words() -> None:
    from openpyxl import load_workbook

    book = load_workbook(io.BytesIO(render_xlsx(*RUN)))
    statuses = [row[6] for row in book["Steps"].iter_rows(min_row=2, values_only=True)]
    assert statuses == [
        "complete",
        "unsure",
        "incomplete",
        "blocked",
        "complete",
        "not_reached",
        "not_reached",
    ]


def test_the_json_report_with_every_status_validates_against_the_schema() -> None:
    from jsonschema import Draft202012Validator

    schema = json.loads(resources.files("simulator.schemas").joinpath(SCHEMA_FILE).read_text(encoding="utf-8"))
    document = json.loads(render_json(*RUN))
    assert list(Draft202012Validator(schema).iter_errors(document)) == []
    statuses = {step["status"] for result in document["results"] for step in result["result"]["transcript"]["steps"]}
    # JSON keeps the raw status: the older not_attempted stays as stored.
    assert statuses == {"complete", "unsure", "incomplete", "blocked", "not_reached", "not_attempted"}
    status = schema["$defs"]["StepOutcome"]["properties"]["status"]["enum"]
    assert {"unsure", "not_reached"} <= set(status)


def test_marks_are_one_map() -> None:
    assert MARK == {"met": "✓", "not_met": "✗", "unsure": "?", "not_reached": "⊘", "error": "!", "n/a": "–"}


def test_a_case_whose_only_open_steps_are_unsure_is_not_marked_failed_in_html() -> None:
    four = _result("four_states")
    steps = [
        step.model_copy(update={"status": "complete"}) if step.index > 1 else step
        for step in four.result.transcript.steps
    ]
    transcript = four.result.transcript.model_copy(update={"steps": steps})
    unsure = four.model_copy(update={"result": four.result.model_copy(update={"transcript": transcript})})
    assert "<span class='warn'>Goals (3/4, 1 unsure)</span>" in render_html(RUN[0], [unsure])
