"""Every metric definition in simulator/metrics.py, pinned with its edge cases (table-driven)."""

from __future__ import annotations

import math
from datetime import UTC, datetime
from fractions import Fraction
from typing import Any

import pytest

from simulator.metrics import (
    Z_95,
    Agreement,
    MetricSummary,
    RepeatStats,
    SummaryBuilder,
    agreement,
    case_metrics,
    case_outcome,
    correctness,
    counts,
    goal_achievement,
    metric_summary,
    pass_at_k_estimate,
    pass_hat_k_estimate,
    repeat_stats,
    run_summary,
    summarized,
    task_completion,
    wilson_interval,
)
from simulator.models.run import RunRecord, StoredResult
from simulator.models.scores import CaseResult, Outcome, Score, ScoreVerdict
from simulator.models.summary import Counts, RunSummary
from simulator.models.transcript import CaseKind, StepOutcome, StepStatus, StopReason, Transcript, Usage

# -- builders -------------------------------------------------------------------------------------------------


def score(
    verdict: ScoreVerdict,
    check: str = "check",
    reason: str = "",
    *,
    required: bool = True,
    metric: str = "m",
    value: float | None = None,
) -> Score:
    return Score(
        metric=metric, check=check, source="judge", verdict=verdict, reason=reason, required=required, value=value
    )


def transcript(
    kind: CaseKind = "simulation",
    steps: list[StepOutcome] | None = None,
    stop_reason: StopReason = "completed",
    error: str | None = None,
) -> Transcript:
    return Transcript(case="c", kind=kind, steps=steps or [], stop_reason=stop_reason, error=error)


def step(
    index: int,
    status: StepStatus,
    rationale: str = "",
    blocked_by: int | None = None,
    blocked_by_goal: str | None = None,
) -> StepOutcome:
    return StepOutcome(
        index=index,
        label=f"goal {index + 1}",
        status=status,
        rationale=rationale,
        blocked_by=blocked_by,
        blocked_by_goal=blocked_by_goal,
    )


def result(outcome: Outcome, scores: list[Score] | None = None) -> CaseResult:
    return CaseResult(case="c", kind="simulation", outcome=outcome, transcript=transcript(), scores=scores or [])


# -- goal achievement -----------------------------------------------------------------------------------------

BLOCKED_RATIONALE = "blocked: step 2 (goal 2) was not completed (step_failed)"


@pytest.mark.parametrize(
    ("kind", "steps", "counts", "label", "rate"),
    [
        pytest.param(
            "simulation",
            [
                step(0, "complete", "greeted"),
                step(1, "incomplete", "not met within 3 turns"),
                step(2, "blocked", BLOCKED_RATIONALE, blocked_by=1, blocked_by_goal="goal 2"),
                step(3, "blocked", BLOCKED_RATIONALE, blocked_by=1, blocked_by_goal="goal 2"),
            ],
            (1, 4),
            "Goals (1/4)",
            0.25,
            id="simulation-blocked-steps-count-in-total",
        ),
        pytest.param(
            "simulation",
            [step(0, "complete"), step(1, "complete"), step(2, "complete")],
            (3, 3),
            "Goals (3/3)",
            1.0,
            id="simulation-all-complete",
        ),
        pytest.param(
            "simulation",
            [step(0, "complete"), step(1, "not_attempted")],
            (1, 2),
            "Goals (1/2)",
            0.5,
            id="simulation-not-attempted-is-not-complete",
        ),
        pytest.param("scenario", [step(0, "complete", "refund issued")], (1, 1), "Goals (1/1)", 1.0, id="scenario-met"),
        pytest.param(
            "scenario", [step(0, "incomplete", "gave up")], (0, 1), "Goals (0/1)", 0.0, id="scenario-goal-is-one-step"
        ),
        pytest.param("golden", [], (0, 0), "Goals (0/0)", None, id="golden-has-no-steps"),
    ],
)
def test_goal_achievement(
    kind: CaseKind, steps: list[StepOutcome], counts: tuple[int, int], label: str, rate: float | None
) -> None:
    goals = goal_achievement(transcript(kind, steps))
    assert ((goals.complete, goals.total), goals.label, goals.rate) == (counts, label, rate)
    assert goals.steps == steps


def test_goal_achievement_sorts_steps_and_describes_each() -> None:
    steps = [
        step(2, "blocked", BLOCKED_RATIONALE, blocked_by=1, blocked_by_goal="goal 2"),
        step(0, "complete", "greeted"),
        step(1, "incomplete", "not met within 3 turns"),
        step(3, "not_attempted"),
    ]
    goals = goal_achievement(transcript("simulation", steps))
    assert [s.index for s in goals.steps] == [0, 1, 2, 3]
    assert goals.lines() == [
        "1. goal 1: complete — greeted",
        "2. goal 2: not complete — not met within 3 turns",
        f"3. goal 3: blocked by step 2 (goal 2) — {BLOCKED_RATIONALE}",
        "4. goal 4: not complete (not attempted)",
    ]


# -- case outcome ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("trans", "scores", "outcome", "reasons"),
    [
        pytest.param(transcript(), [], "pass", [], id="no-scores-pass"),
        pytest.param(transcript(), [score("met"), score("met")], "pass", [], id="all-met-pass"),
        pytest.param(transcript(), [score("met"), score("n/a", "h", "no claim")], "pass", [], id="n/a-ignored"),
        pytest.param(
            transcript(),
            [score("met"), score("not_met", "x", "bad", required=False), score("error", "y", "boom", required=False)],
            "pass",
            [],
            id="non-required-ignored",
        ),
        pytest.param(
            transcript(),
            [score("met"), score("unsure", "goal", "cannot tell")],
            "unsure",
            ["goal: cannot tell"],
            id="unsure",
        ),
        pytest.param(
            transcript(),
            [score("unsure", "goal", "cannot tell"), score("not_met", "keywords", "missing 'refund'")],
            "fail",
            ["keywords: missing 'refund'"],
            id="fail-over-unsure",
        ),
        pytest.param(
            transcript(),
            [
                score("not_met", "keywords", "missing 'refund'"),
                score("not_met", "tool", "lookup_order not called"),
                score("not_met", "keywords", "missing 'refund'"),
                score("not_met", "empty reason"),
            ],
            "fail",
            ["keywords: missing 'refund'", "tool: lookup_order not called", "empty reason"],
            id="fail-reasons-in-order-deduplicated",
        ),
        pytest.param(
            transcript(),
            [score("not_met", "keywords", "missing"), score("error", "hallucination turn 2", "invalid JSON")],
            "error",
            ["hallucination turn 2: judge error: invalid JSON"],
            id="required-score-error-over-fail",
        ),
        pytest.param(
            transcript(),
            [score("error", "goal", ""), score("error", "goal", "")],
            "error",
            ["goal: judge error"],
            id="score-error-without-reason-deduplicated",
        ),
        pytest.param(
            transcript(stop_reason="error", error="agent down: connection refused"),
            [score("met"), score("not_met", "k", "missing"), score("error", "goal", "timeout")],
            "error",
            ["agent down: connection refused", "goal: judge error: timeout"],
            id="transcript-error-first",
        ),
        pytest.param(
            transcript(stop_reason="error"),
            [],
            "error",
            ["the run stopped with an error"],
            id="transcript-error-without-message",
        ),
        pytest.param(
            transcript(stop_reason="step_failed"),
            [score("met")],
            "pass",
            [],
            id="other-stop-reasons-decided-by-scores",
        ),
    ],
)
def test_case_outcome(trans: Transcript, scores: list[Score], outcome: Outcome, reasons: list[str]) -> None:
    assert case_outcome(trans, scores) == (outcome, reasons)


# -- task completion ------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("outcome", "expected"),
    [
        pytest.param("pass", 1, id="pass"),
        pytest.param("fail", 0, id="fail"),
        pytest.param("error", None, id="error-is-not-the-agents-failure"),
        pytest.param("unsure", None, id="unsure-unknown"),
    ],
)
def test_task_completion(outcome: Outcome, expected: int | None) -> None:
    assert task_completion(result(outcome)) == expected


@pytest.mark.parametrize(
    ("trans", "scores", "expected"),
    [
        pytest.param(
            transcript("simulation", [step(0, "complete"), step(1, "incomplete"), step(2, "blocked", blocked_by=1)]),
            [
                score("met", metric="goal_achievement", value=1.0),
                score("not_met", metric="goal_achievement", value=0.0),
                score("met", metric="tool_call_correctness", value=1.0),
                score("not_met", metric="tool_call_correctness", value=0.5),
                score("not_met", metric="hallucination", value=1.0, required=False),
                score("met", metric="hallucination", value=0.0, required=False),
                score("n/a", metric="hallucination"),
            ],
            {
                "goals_complete": 1.0,
                "goals_total": 3.0,
                "goal_achievement": 1 / 3,  # from the transcript, not the mean of the scores' values
                "task_completion": 0.0,
                "hallucinations": 1.0,
                "turns": 0.0,
                "tool_call_correctness": 0.75,
                "hallucination": 0.5,
            },
            id="simulation",
        ),
        pytest.param(
            transcript("golden"),
            [score("unsure", metric="semantic_match", value=2.0)],
            {
                "goals_complete": 0.0,
                "goals_total": 0.0,
                "goal_achievement": None,
                "task_completion": None,
                "hallucinations": 0.0,
                "turns": 0.0,
                "semantic_match": 2.0,
            },
            id="golden-unsure",
        ),
    ],
)
def test_case_metrics(trans: Transcript, scores: list[Score], expected: dict[str, float | None]) -> None:
    assert case_metrics(trans, scores) == expected


# -- breakdown and correctness --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("outcomes", "breakdown", "value"),
    [
        pytest.param([], Counts(), None, id="empty-run"),
        pytest.param(["pass", "pass"], Counts(passed=2), 1.0, id="all-pass"),
        pytest.param(["pass", "fail", "fail", "pass"], Counts(passed=2, failed=2), 0.5, id="half"),
        pytest.param(["pass", "error"], Counts(passed=1, error=1), 0.5, id="error-counts-as-failure"),
        pytest.param(["pass", "unsure", "unsure", "unsure"], Counts(passed=1, unsure=3), 0.25, id="unsure-not-passed"),
        pytest.param(
            ["pass", "fail", "error", "unsure", "pass"],
            Counts(passed=2, failed=1, error=1, unsure=1),
            0.4,
            id="mixed",
        ),
        pytest.param(["error"], Counts(error=1), 0.0, id="only-errors"),
    ],
)
def test_breakdown_and_correctness(outcomes: list[Outcome], breakdown: Counts, value: float | None) -> None:
    counted = counts(outcomes)
    assert counted == breakdown
    assert counted.total == len(outcomes)
    assert counted.correctness == value
    assert correctness(outcomes) == value


def test_breakdown_rejects_unknown_outcome() -> None:
    with pytest.raises(ValueError, match="unknown outcome 'passed'"):
        counts(["pass", "passed"])  # type: ignore[list-item]


# -- metric summary -------------------------------------------------------------------------------------------


def test_metric_summary_counts_and_means() -> None:
    results = [
        result(
            "fail",
            [
                score("met", metric="semantic_match", value=4.0),
                score("not_met", metric="semantic_match", value=1.0),
                score("n/a", metric="hallucination"),
                score("met", metric="hallucination", value=1.0),
            ],
        ),
        result(
            "error",
            [
                score("unsure", metric="semantic_match", value=2.5),
                score("error", metric="goal"),
                score("not_met", metric="hallucination", value=0.0, required=False),
            ],
        ),
        result("pass"),
    ]
    assert metric_summary(results) == {
        "semantic_match": MetricSummary(
            metric="semantic_match", count=3, met=1, not_met=1, unsure=1, mean=2.5, values=3
        ),
        "hallucination": MetricSummary(
            metric="hallucination", count=3, met=1, not_met=1, not_applicable=1, mean=0.5, values=2
        ),
        "goal": MetricSummary(metric="goal", count=1, error=1, mean=None, values=0),
    }
    assert list(metric_summary(results)) == ["semantic_match", "hallucination", "goal"]


@pytest.mark.parametrize(
    ("results", "expected"),
    [
        pytest.param([], {}, id="empty-run"),
        pytest.param([result("pass")], {}, id="no-scores"),
        pytest.param(
            [result("pass", [score("n/a", metric="h"), score("n/a", metric="h")])],
            {"h": MetricSummary(metric="h", count=2, not_applicable=2, mean=None, values=0)},
            id="all-values-none",
        ),
    ],
)
def test_metric_summary_edges(results: list[CaseResult], expected: dict[str, MetricSummary]) -> None:
    assert metric_summary(results) == expected


# -- repeats --------------------------------------------------------------------------------------------------

# Wilson by hand, z² = 3.841459: 8/10 -> p = 0.8, 1 + z²/10 = 1.384146, centre = (0.8 + 0.192073) / 1.384146
# = 0.716739, half = 1.959964 / 1.384146 · sqrt(0.016 + 0.009604) = 0.226577 -> (0.490, 0.943).
# 3/3 -> p = 1: sqrt(p(1-p)/k + z²/4k²) = z/2k, so low = k / (k + z²) = 3 / 6.841459 = 0.438503, high = 1.
# 5/10 -> centre 0.5, half = 1.959964 / 1.384146 · sqrt(0.025 + 0.009604) = 0.263407 -> (0.237, 0.763).


def _stats(*fields: object) -> RepeatStats:
    """A RepeatStats from its fields in order (k, passes, pass_rate, pass_at_k, pass_hat_k, wilson, label)."""
    return RepeatStats.model_validate(dict(zip(RepeatStats.model_fields, fields, strict=True)))


@pytest.mark.parametrize(
    ("outcomes", "expected"),
    [
        pytest.param([], _stats(0, 0, None, None, None, None, None), id="k0-nothing-to-measure"),
        pytest.param(["pass"], _stats(1, 1, 1.0, 1.0, 1.0, (0.207, 1.0), "stable"), id="k1-pass-stable"),
        pytest.param(["fail"], _stats(1, 0, 0.0, 0.0, 0.0, (0.0, 0.793), "broken"), id="k1-fail-broken"),
        pytest.param(["error"], _stats(1, 0, 0.0, 0.0, 0.0, (0.0, 0.793), "broken"), id="k1-error-broken"),
        pytest.param(["unsure"], _stats(1, 0, 0.0, 0.0, 0.0, (0.0, 0.793), "broken"), id="k1-unsure-broken"),
        pytest.param(["pass", "pass", "pass"], _stats(3, 3, 1.0, 1.0, 1.0, (0.439, 1.0), "stable"), id="k3-stable"),
        pytest.param(
            ["pass", "error", "pass"],
            _stats(3, 2, 2 / 3, 1.0, 0.0, (0.208, 0.939), "flaky"),
            id="k3-error-is-failure-flaky",
        ),
        pytest.param(["fail", "unsure", "error"], _stats(3, 0, 0.0, 0.0, 0.0, (0.0, 0.561), "broken"), id="k3-broken"),
        pytest.param(
            ["pass"] * 8 + ["fail", "error"],
            _stats(10, 8, 0.8, 1.0, 0.0, (0.490, 0.943), "flaky"),
            id="k10-8-of-10",
        ),
        pytest.param(["pass", "fail"] * 5, _stats(10, 5, 0.5, 1.0, 0.0, (0.237, 0.763), "flaky"), id="k10-5-of-10"),
        pytest.param(["pass"] * 10, _stats(10, 10, 1.0, 1.0, 1.0, (0.722, 1.0), "stable"), id="k10-stable"),
    ],
)
def test_repeat_stats(outcomes: list[Outcome], expected: RepeatStats) -> None:
    stats = repeat_stats(outcomes)
    assert (stats.k, stats.passes, stats.label) == (expected.k, expected.passes, expected.label)
    assert (stats.pass_rate, stats.pass_at_k, stats.pass_hat_k) == (
        expected.pass_rate,
        expected.pass_at_k,
        expected.pass_hat_k,
    )
    if expected.wilson is None:
        assert stats.wilson is None
    else:
        assert stats.wilson is not None
        assert [round(bound, 3) for bound in stats.wilson] == list(expected.wilson)


def test_repeat_stats_rejects_unknown_outcome() -> None:
    with pytest.raises(ValueError, match="unknown outcome 'ok'"):
        repeat_stats(["pass", "ok"])  # type: ignore[list-item]


@pytest.mark.parametrize(
    ("passes", "k", "expected"),
    [
        pytest.param(8, 10, (0.4901624715366418, 0.9433178485456248), id="8-of-10"),
        pytest.param(3, 3, (3 / (3 + Z_95**2), 1.0), id="all-pass-low-is-k-over-k-plus-z2"),
        pytest.param(0, 3, (0.0, 1 - 3 / (3 + Z_95**2)), id="none-pass-mirrors-all-pass"),
        pytest.param(10, 10, (10 / (10 + Z_95**2), 1.0), id="high-exactly-one"),
    ],
)
def test_wilson_interval(passes: int, k: int, expected: tuple[float, float]) -> None:
    interval = wilson_interval(passes, k)
    assert interval is not None
    assert interval == pytest.approx(expected, abs=1e-12)
    assert 0.0 <= interval[0] <= passes / k <= interval[1] <= 1.0


def test_wilson_interval_exact_edges_and_k0() -> None:
    assert wilson_interval(0, 0) is None
    low, _ = wilson_interval(0, 7) or (math.nan, math.nan)
    _, high = wilson_interval(7, 7) or (math.nan, math.nan)
    assert (low, high) == (0.0, 1.0)


@pytest.mark.parametrize(
    ("passes", "k"),
    [
        pytest.param(-1, 3, id="negative-passes"),
        pytest.param(4, 3, id="passes-over-k"),
        pytest.param(0, -1, id="neg-k"),
    ],
)
def test_wilson_interval_rejects(passes: int, k: int) -> None:
    with pytest.raises(ValueError, match=r"passes must be within 0\.\.k"):
        wilson_interval(passes, k)


# -- estimators -----------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("n", "c", "k", "expected"),
    [
        pytest.param(10, 3, 1, 0.3, id="k1-is-pass-rate"),  # 1 - C(7,1)/C(10,1) = 1 - 7/10
        pytest.param(5, 5, 3, 1.0, id="all-pass"),  # n - c = 0 < k
        pytest.param(10, 0, 5, 0.0, id="none-pass"),
        pytest.param(10, 3, 2, 8 / 15, id="n10-c3-k2"),  # 1 - C(7,2)/C(10,2) = 1 - 21/45 = 24/45
        pytest.param(10, 3, 8, 1.0, id="fewer-failures-than-k"),  # n - c = 7 < 8
        pytest.param(10, 3, 7, 1 - 1 / 120, id="n-minus-c-equals-k"),  # 1 - C(7,7)/C(10,7) = 1 - 1/120
        pytest.param(4, 1, 4, 1.0, id="k-equals-n"),
    ],
)
def test_pass_at_k_estimate(n: int, c: int, k: int, expected: float) -> None:
    assert pass_at_k_estimate(n, c, k) == expected


@pytest.mark.parametrize(
    ("n", "c", "k", "expected"),
    [
        pytest.param(10, 3, 2, 1 / 15, id="n10-c3-k2"),  # C(3,2)/C(10,2) = 3/45
        pytest.param(10, 3, 1, 0.3, id="k1-is-pass-rate"),
        pytest.param(10, 3, 4, 0.0, id="fewer-passes-than-k"),
        pytest.param(5, 5, 3, 1.0, id="all-pass"),
        pytest.param(10, 0, 1, 0.0, id="none-pass"),
        pytest.param(10, 8, 5, float(Fraction(56, 252)), id="n10-c8-k5"),  # C(8,5)/C(10,5)
    ],
)
def test_pass_hat_k_estimate(n: int, c: int, k: int, expected: float) -> None:
    assert pass_hat_k_estimate(n, c, k) == expected


@pytest.mark.parametrize(
    ("n", "c", "k", "message"),
    [
        pytest.param(3, 1, 4, r"k \(the sampling budget\) cannot exceed n \(runs\) \(got k=4, n=3\)", id="k-over-n"),
        pytest.param(-1, 0, 1, r"must not be negative \(got n=-1, c=0, k=1\)", id="negative-n"),
        pytest.param(5, -1, 1, r"must not be negative \(got n=5, c=-1, k=1\)", id="negative-c"),
        pytest.param(5, 1, -2, r"must not be negative \(got n=5, c=1, k=-2\)", id="negative-k"),
        pytest.param(5, 6, 1, r"c \(passing runs\) cannot exceed n \(runs\) \(got c=6, n=5\)", id="c-over-n"),
        pytest.param(5, 1, 0, r"k \(the sampling budget\) must be at least 1", id="k-zero"),
        pytest.param(0, 0, 1, r"cannot exceed n", id="no-runs"),
    ],
)
def test_estimators_reject(n: int, c: int, k: int, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        pass_at_k_estimate(n, c, k)
    with pytest.raises(ValueError, match=message):
        pass_hat_k_estimate(n, c, k)


def test_estimators_match_brute_force_enumeration() -> None:
    # Over every subset of k runs from n (c of them passing): the fraction with any pass / all passes.
    from itertools import combinations

    for n in range(1, 7):
        for c in range(n + 1):
            runs = [True] * c + [False] * (n - c)
            for k in range(1, n + 1):
                draws = list(combinations(runs, k))
                assert pass_at_k_estimate(n, c, k) == pytest.approx(sum(any(d) for d in draws) / len(draws))
                assert pass_hat_k_estimate(n, c, k) == pytest.approx(sum(all(d) for d in draws) / len(draws))


# -- judge agreement ------------------------------------------------------------------------------------------

# Classic 2x2 (50 items): human yes & judge yes 20, yes/no 5, no/yes 10, no/no 15.
# p_o = 35/50 = 0.7; human yes 25/50, judge yes 30/50 -> p_e = 0.5·0.6 + 0.5·0.4 = 0.5; kappa = 0.2/0.5 = 0.4.
CLASSIC = [("yes", "yes")] * 20 + [("yes", "no")] * 5 + [("no", "yes")] * 10 + [("no", "no")] * 15


@pytest.mark.parametrize(
    ("pairs", "accuracy", "kappa"),
    [
        pytest.param([], None, None, id="empty"),
        pytest.param([("met", "met"), ("not_met", "not_met"), ("unsure", "unsure")], 1.0, 1.0, id="perfect"),
        pytest.param(CLASSIC, 0.7, 0.4, id="classic-2x2"),
        # p_o = 0, p_e = 0.5·0.5 + 0.5·0.5 = 0.5 -> kappa = -0.5/0.5 = -1.
        pytest.param([("met", "not_met"), ("not_met", "met")], 0.0, -1.0, id="total-disagreement"),
        # Every item labelled "met" by both: p_e = 1 -> degenerate, p_o = 1 -> 1.0.
        pytest.param([("met", "met")] * 4, 1.0, 1.0, id="all-same-label-degenerate"),
        # A judge that always says "met": p_o = 3/4, p_e = 3/4·1 = 3/4 -> kappa 0 (chance level).
        pytest.param([("met", "met")] * 3 + [("not_met", "met")], 0.75, 0.0, id="constant-judge-is-chance"),
        # Judge uses a label humans never use: union {met, not_met, unsure}; p_o = 1/2,
        # p_e = (1/2·1/4) + (1/2·1/4) + 0 = 1/4 -> kappa = (1/2 - 1/4) / (3/4) = 1/3.
        pytest.param(
            [("met", "met"), ("met", "unsure"), ("not_met", "not_met"), ("not_met", "unsure")],
            0.5,
            1 / 3,
            id="judge-only-category",
        ),
    ],
)
def test_agreement(pairs: list[tuple[str, str]], accuracy: float | None, kappa: float | None) -> None:
    result = agreement(pairs)
    assert result.n == len(pairs)
    assert result.accuracy == accuracy
    if kappa is None:
        assert result.cohen_kappa is None
    else:
        assert result.cohen_kappa == pytest.approx(kappa, abs=1e-12)


def test_agreement_confusion_and_disagreements() -> None:
    pairs = [("met", "met"), ("met", "not_met"), ("not_met", "not_met"), ("met", "not_met"), ("unsure", "met")]
    assert agreement(pairs) == Agreement(
        n=5,
        accuracy=0.4,
        # h: met 3, not_met 1, unsure 1; j: met 2, not_met 3 -> Σ h_c j_c = 6 + 3 = 9;
        # kappa = (5·2 - 9) / (25 - 9) = 1/16.
        cohen_kappa=1 / 16,
        confusion={("met", "met"): 1, ("met", "not_met"): 2, ("not_met", "not_met"): 1, ("unsure", "met"): 1},
        disagreements=[1, 3, 4],
    )
    assert list(agreement(pairs).confusion) == [
        ("met", "met"),
        ("met", "not_met"),
        ("not_met", "not_met"),
        ("unsure", "met"),
    ]
    assert agreement(CLASSIC).confusion == {("yes", "yes"): 20, ("yes", "no"): 5, ("no", "yes"): 10, ("no", "no"): 15}
    assert agreement([]).confusion == {}
    assert agreement([]).disagreements == []


# -- the run summary ------------------------------------------------------------------------------------------


def _stored(key: str, outcome: Outcome, *, suite: int = 0, case: str = "c", repeat: int = 0) -> StoredResult:
    scores = [score("met" if outcome == "pass" else "not_met", metric="goal", value=1.0 if outcome == "pass" else 0.0)]
    trans = transcript().model_copy(update={"usage": {"judge": Usage(calls=1, prompt_tokens=10, cost=0.1)}})
    return StoredResult(
        run_id="r",
        key=key,
        suite=suite,
        case=case,
        repeat=repeat,
        outcome=outcome,
        duration_s=0.5,
        finished=datetime(2026, 1, 1, tzinfo=UTC),
        result=CaseResult(case=case, kind="simulation", outcome=outcome, transcript=trans, scores=scores),
    )


def test_run_summary_is_every_aggregate_once() -> None:
    results = [
        _stored("a0", "pass"),
        _stored("a1", "fail", repeat=1),
        _stored("b0", "error", suite=1, case="b"),
        _stored("a2", "pass", repeat=2),
    ]
    summary = run_summary(iter(results), 12.0)  # read once, one at a time
    assert (summary.total, summary.passed, summary.failed, summary.error, summary.correctness) == (4, 2, 1, 1, 0.5)
    assert summary.current
    assert summary.duration_s == 12.0
    assert summary.conversations_s == 2.0
    assert summary.usage == {"judge": Usage(calls=4, prompt_tokens=40, cost=0.4)}
    assert summary.metrics == metric_summary(r.result for r in results)
    assert [(c.suite, c.case, c.outcomes) for c in summary.cases] == [
        (0, "c", ["pass", "fail", "pass"]),
        (1, "b", ["error"]),
    ]
    assert summary.cases[0].stats == repeat_stats(["pass", "fail", "pass"])
    assert [(s.suite, s.total, s.passed, s.duration_s) for s in summary.suites] == [(0, 3, 2, 1.5), (1, 1, 0, 0.5)]


def test_results_added_in_any_order_with_their_plan_positions_give_the_summary_of_the_plan_order() -> None:
    def varied(key: str, outcome: Outcome, roles: list[str], metrics: list[str], **where: Any) -> StoredResult:
        stored = _stored(key, outcome, **where)
        stored.result.transcript.usage = {role: Usage(calls=1, cost=0.1) for role in roles}
        stored.result.scores = [score("met", metric=metric, value=1.0) for metric in metrics]
        return stored

    in_plan_order = [
        varied("a0", "pass", ["judge"], ["goal"]),
        varied("b0", "fail", ["user", "judge"], ["goal", "tone"], case="b"),
        varied("a1", "error", ["agent", "user"], ["hallucination"], repeat=1),
        varied("c0", "pass", [], ["tone", "extra"], suite=1, case="c"),
    ]
    together = SummaryBuilder()
    for stored in in_plan_order:
        together.add(stored)
    shuffled = SummaryBuilder()
    for position in (3, 1, 2, 0):
        shuffled.add(in_plan_order[position], position)
    expected, got = together.build(5.0), shuffled.build(5.0)
    assert got.model_dump_json() == expected.model_dump_json()  # key order included
    assert list(got.usage) == ["judge", "user", "agent"]
    assert list(got.metrics) == ["goal", "tone", "hallucination", "extra"]
    assert [(case.suite, case.case, case.outcomes) for case in got.cases] == [
        (0, "c", ["pass", "error"]),
        (0, "b", ["fail"]),
        (1, "c", ["pass"]),
    ]


def test_an_unknown_cost_stays_unknown_and_counts_follow_the_outcomes() -> None:
    unknown = _stored("x", "pass")
    unknown.result.transcript.usage["judge"] = Usage(calls=1, cost=None)
    assert run_summary([unknown, _stored("y", "pass")], 0.0).usage["judge"].cost is None
    # total and correctness are derived: a stored file that says otherwise cannot make a reader believe it
    assert Counts(total=30, passed=1, failed=1, correctness=100.0) == Counts(passed=1, failed=1)


@pytest.mark.parametrize(
    ("cached", "expected"),
    [
        ([Usage(calls=2, cost=0.0, cached_calls=2, cached_cost=0.25), Usage(calls=1, cost=0.5)], (3, 2, 1, 0.25)),
        # One cached answer whose first cost was unknown makes the would-be total unknown, never a guess.
        ([Usage(calls=1, cost=0.0, cached_calls=1, cached_cost=None), Usage(calls=1, cost=0.0, cached_calls=1)],
         (2, 2, 0, None)),
    ],
    ids=["known", "unknown"],
)  # fmt: skip
def test_the_summary_counts_answers_from_the_cache_and_their_would_be_cost(
    cached: list[Usage], expected: tuple[int, int, int, float | None]
) -> None:
    results = []
    for index, used in enumerate(cached):
        stored = _stored(f"k{index}", "pass", repeat=index)
        stored.result.transcript.usage = {"judge": used}
        results.append(stored)
    judge = run_summary(results, 0.0).usage["judge"]
    assert (judge.calls, judge.cached_calls, judge.requests, judge.cached_cost) == expected
    assert judge == sum(cached, Usage())  # the run's summary and adding usages up agree


def test_an_older_summary_is_read_and_recomputed_from_the_results() -> None:
    older = {"total": 1, "passed": 1, "correctness": 1.0, "duration_s": 3.0, "usage": {"judge": {"calls": 2}}}
    summary = RunSummary.model_validate(older)
    assert not summary.current
    assert summary.usage["judge"].calls == 2
    record = RunRecord.model_validate(
        {
            "id": "r",
            "created": "2026-01-01T00:00:00Z",
            "suite_hash": "h",
            "snapshot": [],
            "settings": {},
            "plan": [{"key": "a1", "suite": 0, "case": "c", "repeat": 1}, {"key": "a0", "suite": 0, "case": "c"}],
            "totals": older,
        }
    )
    results = [_stored("a0", "pass"), _stored("a1", "fail", repeat=1)]
    again = summarized(record, results)
    assert again.totals is not None
    assert again.totals.current
    assert (again.totals.total, again.totals.passed, again.totals.duration_s) == (2, 1, 3.0)
    assert summarized(again, []) is again  # a current summary is kept
    assert summarized(record.model_copy(update={"totals": None}), results).totals == run_summary(
        [results[1], results[0]], 0.0, record
    )  # plan order, duration unknown, with the run's coverage
