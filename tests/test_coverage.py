"""Coverage of a known run, pinned number by number; stored with the summary, recomputed for older runs; the
``simulator coverage`` command and the ``--fail-under-coverage`` gates.

The run (built below, no model): a suite whose agent declares three tools (``get_balance`` is never called)
and which has three personas (``terse`` is planned once but never finishes, so never played):

* ``refund`` (simulation, 3 steps) with ``angry`` and ``calm``, 2 repeats each: step 2 fails twice (step 3
  blocked in those), is unsure once; only the first conversation had a judge model answer;
* ``escalate`` (simulation, 2 steps) with ``angry``, once: step 1 fails, so step 2 is never reached;
* ``status`` (golden, 2 turns) once: the conversation errors before turn 2.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import get_args

import pytest
from typer.testing import CliRunner

from simulator.cli import app
from simulator.coverage import run_coverage
from simulator.metrics import run_summary, summarized
from simulator.models.coverage import ToolUse
from simulator.models.persona import Persona
from simulator.models.run import PlanItem, RunRecord, StoredResult, SuiteSnapshot
from simulator.models.scores import CaseResult, Outcome, Score
from simulator.models.suite import Suite
from simulator.models.summary import RunSummary
from simulator.models.transcript import AgentEvent, StepOutcome, StepStatus, ToolCallRecord, Transcript
from simulator.reports.coverage_view import coverage_summary_lines
from simulator.store import RunStore
from tests import factories

runner = CliRunner()
ROOT = Path(__file__).resolve().parents[1]
NOT_JUDGED = "not judged: no judge model is configured"

SUITE = Suite.model_validate(
    {
        "name": "shop",
        "agent": {
            "type": "python",
            "callable": "shop:respond",
            "tools": [{"name": "lookup_order"}, {"name": "refund_order"}, {"name": "get_balance"}],
        },
        "cases": [
            {
                "name": "refund",
                "kind": "simulation",
                "expectations": ["The agent is polite."],
                "steps": [
                    {"goal": "give the order number", "checks": [{"must_contain": ["ORD"]}]},
                    {
                        "goal": "ask for a refund",
                        "success_criteria": "The agent refunds the order.",
                        "checks": [{"tool_call": {"name": "refund_order"}}],
                    },
                    {"goal": "ask for an email", "checks": [{"must_contain": ["email"]}]},
                ],
            },
            {
                "name": "escalate",
                "kind": "simulation",
                "steps": [
                    {"goal": "demand a human", "checks": [{"must_contain": ["human"]}]},
                    {"goal": "wait", "checks": [{"must_contain": ["transfer"]}]},
                ],
            },
            {
                "name": "status",
                "kind": "golden",
                "turns": [
                    {
                        "user": "Where is ORD-10042?",
                        "expect": {"must_contain": ["shipped"], "tool_calls": [{"name": "lookup_order"}]},
                    },
                    {"user": "Thanks", "expect": {"must_not_contain": ["sorry"]}},
                ],
            },
        ],
    }
)
PERSONAS = {name: Persona(name=name, personality=f"{name} customer") for name in ("angry", "calm", "terse")}
PLAN = [
    ("refund", "angry", 0),
    ("refund", "angry", 1),
    ("refund", "calm", 0),
    ("refund", "calm", 1),
    ("refund", "terse", 0),
    ("escalate", "angry", 0),
    ("status", None, 0),
]


def _steps(*statuses: StepStatus) -> list[StepOutcome]:
    return [factories.make_step(i, f"step {i + 1}", status) for i, status in enumerate(statuses)]


def _reply(turn: int, *tools: str) -> AgentEvent:
    calls = [ToolCallRecord(id=f"c{turn}{i}", name=name, status="faked") for i, name in enumerate(tools)]
    return AgentEvent(turn=turn, messages=["ok"], tool_calls=calls)


def _stored(
    record: RunRecord,
    conversation: tuple[str, str | None, int],
    outcome: Outcome,
    steps: Sequence[StepOutcome],
    replies: Sequence[AgentEvent],
    *,
    judged: bool,
) -> StoredResult:
    case, persona, repeat = conversation
    kind = "golden" if case == "status" else "simulation"
    transcript = Transcript(case=case, kind=kind, persona=persona, steps=list(steps), events=list(replies))
    reason = "the judge said so" if judged else NOT_JUDGED
    scores = [Score(metric="expectation", check="expectation", source="judge", verdict="unsure", reason=reason)]
    result = CaseResult(
        case=case, kind=kind, persona=persona, repeat=repeat, outcome=outcome, transcript=transcript, scores=scores
    )
    return factories.make_result(record, 0, case, outcome, persona=persona, repeat=repeat, result=result)


def known_run() -> tuple[RunRecord, list[StoredResult]]:
    """The run of the module docstring, with its summary as the runner stores it (coverage included)."""
    plan = [
        PlanItem(key=f"0:{case}:{persona or '-'}:{repeat}", suite=0, case=case, persona=persona, repeat=repeat)
        for case, persona, repeat in PLAN
    ]
    record = factories.make_run(
        "run-cov", SuiteSnapshot(path="shop.yaml", suite=SUITE, personas=PERSONAS), plan=plan, status="completed"
    )
    results = [
        _stored(record, ("refund", "angry", 0), "pass", _steps("complete", "complete", "complete"),
                [_reply(1), _reply(2, "refund_order"), _reply(3)], judged=True),
        _stored(record, ("refund", "angry", 1), "fail", _steps("complete", "incomplete", "blocked"),
                [_reply(1), _reply(2)], judged=False),
        _stored(record, ("refund", "calm", 0), "fail", _steps("complete", "incomplete", "blocked"),
                [_reply(1), _reply(2)], judged=False),
        _stored(record, ("refund", "calm", 1), "unsure", _steps("complete", "unsure", "complete"),
                [_reply(1), _reply(2, "refund_order"), _reply(3)], judged=False),
        _stored(record, ("escalate", "angry", 0), "fail", _steps("incomplete", "blocked"), [_reply(1)], judged=False),
        _stored(record, ("status", None, 0), "error", [], [_reply(1, "lookup_order")], judged=False),
    ]  # fmt: skip
    totals = run_summary(results, 12.5, record)
    return record.model_copy(update={"totals": totals}), results


def test_the_known_run_is_pinned_number_by_number() -> None:
    record, results = known_run()
    coverage = run_coverage(record, iter(results))

    assert {name: (r.covered, r.total) for name, r in coverage.ratios().items()} == {
        "cells": (4, 5),
        "steps": (4, 5),
        "tools": (2, 3),
        "expectations": (8, 10),
    }
    assert coverage.percent == pytest.approx((80 + 80 + 200 / 3 + 80) / 4)  # 76.67

    cells = {(c.case, c.persona): (c.planned, c.runs, c.label) for c in coverage.cells}
    assert cells == {
        ("refund", "angry"): (2, 2, "1/2 pass"),
        ("refund", "calm"): (2, 2, "0/2 pass"),
        ("refund", "terse"): (1, 0, "not run"),
        ("escalate", "angry"): (1, 1, "0/1 pass"),
        ("status", None): (1, 1, "0/1 pass"),
    }
    calm = next(c for c in coverage.cells if c.persona == "calm")
    assert calm.outcomes == {"pass": 0, "fail": 1, "error": 0, "unsure": 1, "user_error": 0}
    # Every outcome the model knows is a count in every cell (a new outcome is one more key, nothing else).
    assert all(list(cell.outcomes) == list(get_args(Outcome)) for cell in coverage.cells)

    steps = {
        (s.case, s.index): (s.conversations, s.reached, s.complete, s.incomplete, s.unsure, s.blocked, s.not_reached)
        for s in coverage.steps
    }
    assert steps == {
        ("refund", 0): (4, 4, 4, 0, 0, 0, 0),
        ("refund", 1): (4, 4, 1, 2, 1, 0, 0),
        ("refund", 2): (4, 2, 2, 0, 0, 2, 0),
        ("escalate", 0): (1, 1, 0, 1, 0, 0, 0),
        ("escalate", 1): (1, 0, 0, 0, 0, 1, 0),
    }
    assert [(s.case, s.label) for s in coverage.unreached_steps()] == [("escalate", "wait")]

    assert [(t.name, t.calls) for t in coverage.tools] == [("get_balance", 0), ("lookup_order", 1), ("refund_order", 2)]
    assert [t.name for t in coverage.unused_tools()] == ["get_balance"]
    assert [(p.name, p.conversations) for p in coverage.personas] == [("angry", 3), ("calm", 2), ("terse", 0)]
    assert [p.name for p in coverage.unused_personas()] == ["terse"]

    expectations = {
        (e.case, e.where): (e.scope, e.needs_judge, e.evaluated, e.conversations) for e in coverage.expectations
    }
    assert expectations == {
        ("refund", "expectations[0]"): ("conversation", True, 1, 4),
        ("refund", "steps[0].checks[0]"): ("step 1", False, 4, 4),
        ("refund", "steps[1].success_criteria"): ("step 2", True, 1, 4),
        ("refund", "steps[1].checks[0]"): ("step 2", False, 4, 4),
        ("refund", "steps[2].checks[0]"): ("step 3", False, 2, 4),
        ("escalate", "steps[0].checks[0]"): ("step 1", False, 1, 1),
        ("escalate", "steps[1].checks[0]"): ("step 2", False, 0, 1),
        ("status", "turns[0].expect.must_contain"): ("turn 1", False, 1, 1),
        ("status", "turns[0].expect.tool_calls"): ("turn 1", False, 1, 1),
        ("status", "turns[1].expect.must_not_contain"): ("turn 2", False, 0, 1),
    }
    assert [(e.label, e.reason) for e in coverage.unevaluated_expectations()] == [
        ("must_contain: 'transfer'", "step 2 was never reached"),
        ("must_not_contain: 'sorry'", "turn 2 was never reached"),
    ]


def test_an_expectation_only_a_judge_decides_is_not_evaluated_without_one() -> None:
    record, results = known_run()
    unjudged = [r for r in results if not (r.case == "refund" and r.persona == "angry" and r.repeat == 0)]
    coverage = run_coverage(record, unjudged)
    never = {e.where: e.reason for e in coverage.unevaluated_expectations() if e.case == "refund"}
    advice = "needs a judge model, and none answered: set models.judge or pass --judge-model"
    assert never == {"expectations[0]": advice, "steps[1].success_criteria": advice}


def test_the_summary_holds_the_coverage_computed_in_the_same_pass() -> None:
    record, results = known_run()
    assert record.totals is not None
    assert record.totals.coverage == run_coverage(record, results)


def test_a_summary_stored_without_coverage_still_loads_and_gets_it_when_read() -> None:
    record, results = known_run()
    assert record.totals is not None
    stored = record.totals.model_dump(mode="json", exclude={"coverage"})
    old = record.model_copy(update={"totals": RunSummary.model_validate(stored)})
    assert old.totals is not None
    assert old.totals.coverage is None

    read: list[str] = []

    def counted() -> Iterator[StoredResult]:
        for stored_result in results:
            read.append(stored_result.key)
            yield stored_result

    again = summarized(old, counted())
    assert again.totals is not None
    assert again.totals.coverage == record.totals.coverage
    assert again.totals.model_dump(exclude={"coverage"}) == old.totals.model_dump(exclude={"coverage"})
    assert len(read) == len(results)


def test_the_compact_view_is_bounded() -> None:
    record, _ = known_run()
    assert record.totals is not None
    assert record.totals.coverage is not None
    lines = coverage_summary_lines(record, record.totals.coverage, "simulator coverage run-cov")
    assert lines == [
        "Coverage 76.7%: cells 4/5, steps 4/5, tools 2/3, expectations 8/10",
        "  cases x personas not run (1):",
        "    refund [terse]",
        "  steps never reached (1):",
        "    escalate › step 2: wait",
        "  tools never called (1):",
        "    get_balance",
        "  personas never used (1):",
        "    terse",
        "  expectations never evaluated (2):",
        "    escalate › steps[1].checks[0]: must_contain: 'transfer' (step 2 was never reached)",
        "    status › turns[1].expect.must_not_contain: must_not_contain: 'sorry' (turn 2 was never reached)",
    ]
    many = record.totals.coverage.model_copy(update={"tools": [ToolUse(name=f"tool_{i}") for i in range(5)]})
    lines = coverage_summary_lines(record, many, "simulator coverage run-cov")
    assert lines[5:9] == ["  tools never called (5):", "    tool_0", "    tool_1", "    tool_2 (+2 more)"]
    assert lines[-1] == "  the whole coverage: simulator coverage run-cov"


def test_the_compact_view_says_a_shared_reason_once() -> None:
    record, _ = known_run()
    assert record.totals is not None
    assert record.totals.coverage is not None
    coverage = record.totals.coverage
    judged = [e.model_copy(update={"reason": "needs a judge model"}) if e.reason else e for e in coverage.expectations]
    lines = coverage_summary_lines(record, coverage.model_copy(update={"expectations": judged}), "simulator coverage")
    assert lines[-3:] == [
        "    escalate › steps[1].checks[0]: must_contain: 'transfer'",
        "    status › turns[1].expect.must_not_contain: must_not_contain: 'sorry'",
        "    why: needs a judge model (2)",
    ]


# -- the command line ------------------------------------------------------------------------------------------


def _store_run(db: Path, record: RunRecord, results: Sequence[StoredResult]) -> None:
    with RunStore(db) as store:
        store.create_run(record)
        for stored in results:
            store.save_result(stored)


@pytest.fixture
def known_db(tmp_path: Path) -> Path:
    db = tmp_path / "runs.db"
    _store_run(db, *known_run())
    return db


def test_coverage_command_prints_the_whole_view(known_db: Path) -> None:
    result = runner.invoke(app, ["coverage", "run-cov", "--db", str(known_db)])
    assert result.exit_code == 0, result.stderr
    text = result.stdout
    assert "Coverage 76.7%: cells 4/5, steps 4/5, tools 2/3, expectations 8/10" in text
    assert "refund › step 3: ask for an email" in text
    assert "Tools never called (1):\n  get_balance" in text
    assert "Personas never used (1):\n  terse" in text


def test_coverage_command_json(known_db: Path) -> None:
    result = runner.invoke(app, ["coverage", "run-cov", "--db", str(known_db), "--json"])
    assert result.exit_code == 0, result.stderr
    payload = json.loads(result.stdout)
    assert payload["percent"] == pytest.approx(76.6667, abs=1e-3)
    assert payload["tools_ratio"] == {"covered": 2, "total": 3}


@pytest.mark.parametrize(("bar", "code"), [("76", 0), ("76.7", 1), ("100", 1)])
def test_coverage_command_gate(known_db: Path, bar: str, code: int) -> None:
    result = runner.invoke(app, ["coverage", "run-cov", "--db", str(known_db), "--fail-under-coverage", bar])
    assert result.exit_code == code, result.stderr
    below = f"coverage 76.7% is below --fail-under-coverage {bar}%"
    assert (below in result.stderr) is (code == 1)


def test_coverage_command_rejects_a_bar_out_of_range(known_db: Path) -> None:
    result = runner.invoke(app, ["coverage", "run-cov", "--db", str(known_db), "--fail-under-coverage", "120"])
    assert result.exit_code == 2
    assert "--fail-under-coverage" in result.stderr


def test_a_run_stored_without_coverage_still_reports_it(tmp_path: Path) -> None:
    record, results = known_run()
    assert record.totals is not None
    old = record.model_copy(update={"totals": record.totals.model_copy(update={"coverage": None})})
    db = tmp_path / "old.db"
    _store_run(db, old, results)
    with RunStore(db) as store:
        store.finish(store.acquire("run-cov"), "completed", totals=old.totals)
        assert store.get_run("run-cov").totals.coverage is None  # type: ignore[union-attr]

    shown = runner.invoke(app, ["coverage", "run-cov", "--db", str(db)])
    assert shown.exit_code == 0, shown.stderr
    assert "Coverage 76.7%" in shown.stdout
    report = runner.invoke(app, ["report", "run-cov", "--db", str(db)])
    assert report.exit_code == 0, report.stderr
    assert "## Coverage\n\nCoverage 76.7%: cells 4/5" in report.stdout
    runs_show = runner.invoke(app, ["runs", "show", "run-cov", "--db", str(db)])
    assert runs_show.exit_code == 0, runs_show.stderr
    assert "Coverage 76.7%" in runs_show.stdout


@pytest.mark.parametrize(
    ("bars", "code", "message"),
    [
        (["--fail-under", "0", "--fail-under-coverage", "99"], 1, "is below --fail-under-coverage 99%"),
        (["--fail-under", "0", "--fail-under-coverage", "50"], 0, None),
        (["--fail-under", "100", "--fail-under-coverage", "50"], 1, "is below --fail-under 100%"),
    ],
)
def test_run_gates_on_coverage(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, bars: list[str], code: int, message: str | None
) -> None:
    """The demo's golden cases: an expected message no judge model decides, so coverage is below 100%."""
    monkeypatch.chdir(ROOT)
    db = str(tmp_path / "runs.db")
    result = runner.invoke(app, ["run", "suites/demo/golden.yaml", "--db", db, "--seed", "1", *bars])
    assert result.exit_code == code, result.stdout + result.stderr
    assert "Coverage " in result.stdout
    if message is None:
        assert "is below" not in result.stderr
    else:
        assert message in result.stderr
    with RunStore(db) as store:
        stored = store.get_run("latest")
    assert stored.totals is not None
    assert stored.totals.coverage is not None
    assert stored.settings.fail_under_coverage == float(bars[3])


def test_run_json_holds_the_coverage(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(ROOT)
    db = str(tmp_path / "runs.db")
    result = runner.invoke(app, ["run", "suites/demo/golden.yaml", "--db", db, "--seed", "1", "--json"])
    document = json.loads(result.stdout)
    shown = runner.invoke(app, ["coverage", "latest", "--db", db, "--json"])
    assert document["coverage"] == json.loads(shown.stdout)["percent"]
    assert 0 < document["coverage"] < 100  # an expected message no judge model decides
