"""Compare compares like with like: a case judged in one run only, or defined differently, is not comparable
(never a regression or an improvement, left out of correctness and McNemar), and the runs' settings that differ
are said before the cases."""

from __future__ import annotations

import json
import textwrap
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from simulator.analysis.compare import NOT_THE_SAME, Comparison, compare_runs
from simulator.cli import EXIT_BELOW_BAR, EXIT_OK, app
from simulator.judges.step import NO_JUDGE
from simulator.llm import FakeScript
from simulator.models import Suite
from simulator.models.run import RunRecord, RunSettings, StoredResult
from simulator.models.scores import CaseResult, Outcome, Score, ScoreSource, ScoreVerdict
from simulator.models.transcript import CheckDetail, CheckEvent, ErrorEvent, StepStatus, Transcript
from simulator.reports.compare_report import render_compare_html, render_compare_markdown
from simulator.reports.compare_text import render_comparison_text
from tests.factories import make_result, make_run, make_step

runner = CliRunner()

# -- the rule, on stored results --------------------------------------------------------------------------------

NOT_ASKED = "not judged: this judge request changed since the recording; give a judge model to judge it"


def score(
    check: str, verdict: ScoreVerdict, source: ScoreSource, reason: str = "seen", *, required: bool = True
) -> Score:
    metric = {"deterministic": "keywords", "judge": "expectation", "engine": "goal_achievement"}[source]
    return Score(metric=metric, check=check, source=source, verdict=verdict, reason=reason, required=required)


# A judge question as a run without a judge model leaves it, and as one with a judge answers it.
UNJUDGED = score("expectation: stays polite", "unsure", "judge", NO_JUDGE)
POLITE = score("expectation: stays polite", "met", "judge")
RUDE = score("expectation: stays polite", "not_met", "judge", "the agent blamed the customer")
JUDGE_FAILED = score("expectation: stays polite", "error", "judge", "the judge model gave no usable reply")
REPLAYED = score("expectation: stays polite", "unsure", "judge", NOT_ASKED)
# Asked of every case; without a judge it does not hold the case.
NO_HALLUCINATION_CHECK = score("turn 1: hallucination", "unsure", "judge", NO_JUDGE, required=False)
NO_HALLUCINATION = score("turn 1: hallucination", "n/a", "judge", "no claim")
HALLUCINATED = score("turn 1: hallucination", "not_met", "judge", "claims a refund nobody gave")
KEYWORD = score("must_contain: refund", "met", "deterministic")
NO_KEYWORD = score("must_contain: refund", "not_met", "deterministic", "missing 'refund'")

RUN_A = make_run("run-a", "s")
RUN_B = make_run("run-b", "s")


def result(
    run: RunRecord, outcome: Outcome, scores: Sequence[Score], *, error: str | None = None, case: str = "c"
) -> StoredResult:
    events = [ErrorEvent(turn=1, where="agent", message=error)] if error else []
    transcript = Transcript(case=case, kind="scenario", events=events)
    return make_result(
        run, "s", case, outcome,
        result=CaseResult(case=case, kind="scenario", outcome=outcome, transcript=transcript, scores=list(scores)),
    )  # fmt: skip


@pytest.mark.parametrize(
    ("a", "b", "change", "why"),
    [
        # No judge in A, a judge in B that says the expectation is not met: B judged what A never asked.
        (("pass", [KEYWORD, UNJUDGED]), ("fail", [KEYWORD, RUDE]), "not_comparable", "judged in B only"),
        (("unsure", [KEYWORD, UNJUDGED]), ("pass", [KEYWORD, POLITE]), "not_comparable", "judged in B only"),
        # The other way round: the baseline had the judge.
        (("pass", [KEYWORD, POLITE]), ("unsure", [KEYWORD, UNJUDGED]), "not_comparable", "judged in A only"),
        (("fail", [KEYWORD, RUDE]), ("pass", [KEYWORD, UNJUDGED]), "not_comparable", "judged in A only"),
        # A replay whose changed question had no judge to go to.
        (("pass", [KEYWORD, POLITE]), ("unsure", [KEYWORD, REPLAYED]), "not_comparable", "judged in A only"),
        # A judge that failed in B where A had none: asked in B only.
        (("pass", [KEYWORD, UNJUDGED]), ("error", [KEYWORD, JUDGE_FAILED]), "not_comparable", "judged in B only"),
        # The hallucination question only B's judge answered.
        (
            ("pass", [KEYWORD, NO_HALLUCINATION_CHECK]),
            ("fail", [KEYWORD, HALLUCINATED]),
            "not_comparable",
            "turn 1: hallucination",
        ),
        # Real changes: a deterministic check fails too, or both runs judged the question, or the agent failed.
        (("pass", [KEYWORD, UNJUDGED]), ("fail", [NO_KEYWORD, RUDE]), "regressed", ""),
        (("pass", [KEYWORD, POLITE]), ("fail", [KEYWORD, RUDE]), "regressed", ""),
        (("fail", [KEYWORD, RUDE]), ("pass", [KEYWORD, POLITE]), "improved", ""),
        (("pass", [KEYWORD, NO_HALLUCINATION]), ("fail", [KEYWORD, HALLUCINATED]), "regressed", ""),
        (("pass", [KEYWORD]), ("fail", [NO_KEYWORD]), "regressed", ""),
        # Passing in both or in neither is no change, judged alike or not.
        (("pass", [KEYWORD, UNJUDGED]), ("pass", [KEYWORD, POLITE]), "unchanged", ""),
        (("unsure", [KEYWORD, UNJUDGED]), ("fail", [KEYWORD, RUDE]), "unchanged", ""),
    ],
)
def test_a_change_that_rests_only_on_judging_in_one_run_is_not_comparable(
    a: tuple[Outcome, list[Score]], b: tuple[Outcome, list[Score]], change: str, why: str
) -> None:
    comparison = compare_runs(RUN_A, [result(RUN_A, *a)], RUN_B, [result(RUN_B, *b)])
    (diff,) = comparison.cases
    assert diff.change == change
    assert why in diff.not_comparable
    assert bool(diff.not_comparable) == (change == "not_comparable")
    if change == "not_comparable":
        assert diff.would_be in ("regressed", "improved")
        assert not comparison.has_regressions
        assert comparison.mcnemar.n == 0


def test_an_agent_error_beside_a_one_sided_judge_question_is_a_real_regression() -> None:
    a = result(RUN_A, "pass", [KEYWORD, UNJUDGED])
    b = result(RUN_B, "error", [KEYWORD, RUDE], error="agent down: connection refused")
    (diff,) = compare_runs(RUN_A, [a], RUN_B, [b]).cases
    assert (diff.change, diff.not_comparable) == ("regressed", "")


def test_every_repeat_that_did_not_pass_must_rest_on_judging_alone() -> None:
    a = [result(RUN_A, "pass", [KEYWORD, UNJUDGED])]
    one_sided = result(RUN_B, "fail", [KEYWORD, RUDE])
    real = result(RUN_B, "fail", [NO_KEYWORD, POLITE]).model_copy(update={"repeat": 1, "key": "0:c:-:1"})
    (diff,) = compare_runs(RUN_A, a, RUN_B, [one_sided, real]).cases
    assert diff.change == "regressed"
    (diff,) = compare_runs(RUN_A, a, RUN_B, [one_sided]).cases
    assert diff.change == "not_comparable"


def _step_result(run: RunRecord, outcome: Outcome, status: StepStatus, detail: CheckDetail) -> StoredResult:
    """A simulation whose one step was decided by a keyword check and a success criterion (``detail``)."""
    keyword = CheckDetail(check="must_contain: refund", verdict="met", evidence="found 'refund'")
    verdict = "met" if status == "complete" else "not_met"
    check = CheckEvent(turn=1, step=0, verdict=verdict, rationale="", details=[keyword, detail])
    step = make_step(0, "ask for a refund", status, detail.evidence)
    transcript = Transcript(case="c", kind="simulation", events=[check], steps=[step])
    goal = score("goal: ask for a refund", "met" if status == "complete" else "not_met", "engine")
    goal = goal.model_copy(update={"step": 0})
    stored = CaseResult(case="c", kind="simulation", outcome=outcome, transcript=transcript, scores=[goal])
    return make_result(run, "s", "c", outcome, result=stored)


CRITERION = "judge: success_criteria: gives the refund number"


def test_a_step_only_a_judge_decided_in_one_run_is_not_comparable() -> None:
    a = _step_result(RUN_A, "pass", "complete", CheckDetail(check=CRITERION, verdict="unsure", evidence=NO_JUDGE))
    b = _step_result(RUN_B, "fail", "incomplete", CheckDetail(check=CRITERION, verdict="not_met", evidence="no"))
    comparison = compare_runs(RUN_A, [a], RUN_B, [b])
    (diff,) = comparison.cases
    assert (diff.change, diff.would_be) == ("not_comparable", "regressed")
    assert "judged in B only (step 1: judge: success_criteria: gives the refund number)" in diff.not_comparable
    (step,) = diff.steps
    assert (step.change, step.would_be) == ("not_comparable", "regressed")
    assert "not comparable" in render_compare_markdown(comparison)
    text = render_comparison_text(comparison)
    assert "      step 1 (ask for a refund) not comparable: complete 1/1 -> 0/1 (would be regressed) — judged in " \
        "B only (step 1: judge: success_criteria: gives the refund number)" in text  # fmt: skip
    # Judged in both runs, the same step is a real regression.
    judged = _step_result(RUN_A, "pass", "complete", CheckDetail(check=CRITERION, verdict="met", evidence="yes"))
    (diff,) = compare_runs(RUN_A, [judged], RUN_B, [b]).cases
    assert diff.change == "regressed"
    assert [step.change for step in diff.steps] == ["regressed"]


def test_a_case_defined_differently_is_not_comparable_and_left_out_of_correctness() -> None:
    before = Suite.model_validate(
        {"name": "s", "cases": [{"name": "c", "kind": "scenario", "goal": "say hello"},
                                {"name": "d", "kind": "scenario", "goal": "say goodbye"}]}
    )  # fmt: skip
    after = before.model_copy(
        update={"cases": [before.cases[0].model_copy(update={"goal": "say hello twice"}), before.cases[1]]}
    )
    run_a, run_b = make_run("run-a", before), make_run("run-b", after)
    a = [make_result(run_a, "s", "c", "pass"), make_result(run_a, "s", "d", "pass")]
    b = [make_result(run_b, "s", "c", "fail"), make_result(run_b, "s", "d", "fail")]
    comparison = compare_runs(run_a, a, run_b, b)
    assert [(d.case, d.change, d.would_be, d.not_comparable) for d in comparison.cases] == [
        ("d", "regressed", None, ""),
        ("c", "not_comparable", "regressed", NOT_THE_SAME),
    ]
    assert (comparison.mcnemar.b, comparison.mcnemar.c) == (1, 0)
    assert (comparison.correctness_a.total, comparison.correctness_b.total) == (1, 1)


def test_the_settings_that_differ_are_said_before_the_cases_in_every_view() -> None:
    settings_b = RunSettings(judge_model="fake/judge", models={"judge": {"api_base": "http://judge.local/v1"}})
    run_a = make_run("run-a", "s", versions={"simulator": "1.0"})
    run_b = make_run(
        "run-b", "s", settings=settings_b.model_copy(update={"live": True, "seed": 3}), suite_hash="other",
        versions={"simulator": "1.1"}, replay_of="run-0",
    )  # fmt: skip
    comparison = compare_runs(run_a, [make_result(run_a, "s", "c")], run_b, [make_result(run_b, "s", "c")])
    rows = {d.setting: (d.a, d.b) for d in comparison.settings}
    assert rows == {
        "judge model": ("none", "fake/judge"),
        "judge api_base": ("none", "http://judge.local/v1"),
        "tools": ("test mode (fakes)", "live (--live)"),
        "agent": ("live", "played back from the recording of run-0"),
        "suite hash": ("hash", "other"),
        "seed": ("0", "3"),
        "simulator version": ("1.0", "1.1"),
    }
    text = render_comparison_text(comparison)
    assert text[1:4] == [
        "Settings that differ (A -> B):",
        "  judge model: none -> fake/judge",
        "  judge api_base: none -> http://judge.local/v1",
    ]
    assert text.index("  simulator version: 1.0 -> 1.1") < next(i for i, t in enumerate(text) if "Correct" in t)
    markdown = render_compare_markdown(comparison)
    assert "| judge model | none | fake/judge |" in markdown
    assert markdown.index("## Settings that differ") < markdown.index("## Regressed")
    page = render_compare_html(comparison)
    assert "<tr><td>judge model</td><td>none</td><td>fake/judge</td></tr>" in page
    assert page.index("id='settings'") < page.index("id='regressed'")
    assert Comparison.model_validate_json(comparison.model_dump_json()) == comparison


def test_a_not_comparable_case_reads_apart_in_every_view() -> None:
    comparison = compare_runs(
        RUN_A, [result(RUN_A, "pass", [KEYWORD, UNJUDGED])], RUN_B, [result(RUN_B, "fail", [KEYWORD, RUDE])]
    )
    text = render_comparison_text(comparison)
    assert "NOT COMPARABLE (1), never counted as regressed or improved:" in text
    assert "  ~ s / c: ✓ pass 1/1 -> ✗ fail 0/1 (would be regressed)" in text
    assert "      not comparable: judged in B only (expectation: stays polite)" in text
    assert "No regressed cases." in text
    markdown = render_compare_markdown(comparison)
    assert "## Not comparable (never counted as regressed or improved) (1)" in markdown
    assert "Not comparable: judged in B only (expectation: stays polite)" in markdown
    page = render_compare_html(comparison)
    assert "id='not_comparable'" in page
    assert "NOT COMPARABLE" in page


# -- the command: one run without a judge, one with a fake judge, the same suite ---------------------------------

AGENT = """
def respond(messages):
    text = messages[-1]["content"] if messages else ""
    return f"Sure: {text} Your refund number is RF-1."
"""
CHANGED_AGENT = """
def respond(messages):
    return "Your refund number is RF-1."
"""
SUITE = """\
name: toy
agent: agent.yaml
judging: {batch: false}
cases:
  - kind: simulation
    name: criteria
    steps:
      - static_utterance: I want a refund.
        checks:
          - must_contain: [refund]
        success_criteria: The agent gives the refund number.
  - kind: simulation
    name: echo
    steps:
      - static_utterance: Hello there.
        checks:
          - must_contain: [hello there]
"""


def judge(messages: list[dict[str, Any]]) -> dict[str, Any]:
    """A judge that finds no claim in a turn, and the criterion and the goal met by the refund number."""
    prompt = str(messages[0]["content"])
    if prompt.startswith("You check one turn"):
        return {"verdict": "no_claim", "claim": "", "reason": "the turn states no fact"}
    quote = "Your refund number is RF-1."
    if prompt.startswith("You decide whether a conversation"):
        return {"satisfied": True, "quote": quote, "reason": "the refund number was given"}
    return {"verdict": "met", "quote": quote, "reason": "the refund number was given"}


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    (tmp_path / ".git").mkdir()
    (tmp_path / "toy_agent.py").write_text(textwrap.dedent(AGENT), encoding="utf-8")
    (tmp_path / "agent.yaml").write_text("type: python\ncallable: toy_agent:respond\n", encoding="utf-8")
    (tmp_path / "suite.yaml").write_text(SUITE, encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    return tmp_path


def _run(*options: str) -> str:
    with FakeScript().enqueue("judge", judge, times=100).active():
        result = runner.invoke(app, ["run", "suite.yaml", "--db", "runs.db", "--seed", "1", "--json", *options])
    return str(json.loads(result.stdout)["run"]["id"])


def _compare(a: str, b: str, *options: str) -> Any:
    return runner.invoke(app, ["compare", a, b, "--db", "runs.db", "--fail-on-regression", *options])


def test_adding_a_judge_makes_no_regression_and_a_real_one_still_fails(project: Path) -> None:
    unjudged = _run()
    judged = _run("--judge-model", "fake/judge")
    result = _compare(unjudged, judged)
    assert result.exit_code == EXIT_OK, result.output
    assert "  judge model: none -> fake/judge" in result.stdout
    assert "No regressed cases." in result.stdout
    # Unjudged, the criterion left the case unsure; judged, it passes: no improvement either.
    assert "  ~ toy / criteria: ? unsure 0/1 -> ✓ pass 1/1 (would be improved)" in result.stdout
    assert "judged in B only" in result.stdout
    document = json.loads(_compare(unjudged, judged, "--json").stdout)
    criteria = next(case for case in document["cases"] if case["case"] == "criteria")
    assert (criteria["change"], criteria["would_be"]) == ("not_comparable", "improved")
    # Taking the judge away is no regression.
    back = _compare(judged, unjudged)
    assert back.exit_code == EXIT_OK
    assert "  ~ toy / criteria: ✓ pass 1/1 -> ? unsure 0/1 (would be regressed)" in back.stdout
    assert "No shared case changed" in back.stdout

    # The agent changes: the echo case fails its keyword check in the judged run, a regression however judged.
    (project / "changed_agent.py").write_text(textwrap.dedent(CHANGED_AGENT), encoding="utf-8")
    (project / "agent.yaml").write_text("type: python\ncallable: changed_agent:respond\n", encoding="utf-8")
    changed = _run("--judge-model", "fake/judge")
    result = _compare(unjudged, changed)
    assert result.exit_code == EXIT_BELOW_BAR, result.output
    assert "REGRESSED (1):" in result.stdout
    assert "  ! toy / echo: ✓ pass 1/1 -> ✗ fail 0/1" in result.stdout
    assert "  ~ toy / criteria: ? unsure 0/1 -> ✓ pass 1/1 (would be improved)" in result.stdout
    assert "Correctness on the 1 comparable case in both runs: 100.0% (1/1) -> 0.0% (0/1)" in result.stdout
