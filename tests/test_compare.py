"""Comparing two runs: case and step changes, correctness, McNemar's exact test, the text report."""

from __future__ import annotations

from collections.abc import Sequence

import pytest

from simulator.analysis.compare import (
    CaseDiff,
    Comparison,
    compare_runs,
    mcnemar_exact,
)
from simulator.models.run import RunRecord, StoredResult
from simulator.models.scores import Outcome
from simulator.models.transcript import StepStatus
from simulator.reports.compare_text import render_comparison_text
from tests.factories import make_result, make_run
from tests.factories import make_step as step


def repeats(
    run: RunRecord, suite: str, case: str, outcomes: Sequence[Outcome], *, persona: str | None = None
) -> list[StoredResult]:
    return [make_result(run, suite, case, o, persona=persona, repeat=i) for i, o in enumerate(outcomes)]


# Run A lists the suites billing, support; run B lists them the other way round, so suite indices differ.
RUN_A = make_run("run-a", "billing", "support")
RUN_B = make_run("run-b", "support", "billing")

GREET_A = step(0, "greet", "complete")
ORDER_A = step(1, "give order number", "complete")
CONFIRM_A = step(2, "confirm refund", "complete")


def results_a() -> list[StoredResult]:
    a = RUN_A
    return [
        make_result(a, "billing", "refund", "pass", steps=[GREET_A, ORDER_A, CONFIRM_A]),
        *[
            make_result(
                a, "billing", "refund", "pass", persona="impatient", repeat=r, steps=[step(0, "ask", "complete")]
            )
            for r in range(3)
        ],
        make_result(
            a,
            "billing",
            "cancel",
            "fail",
            steps=[step(0, "cancel", "incomplete", "never cancelled"), step(1, "old label", "incomplete")],
            reasons=["cancel: not met"],
        ),
        *repeats(a, "support", "reset", ["fail", "fail", "pass"]),
        make_result(a, "support", "greeting", "pass"),
        make_result(a, "support", "escalate", "error", reasons=["agent down"]),
        make_result(a, "billing", "legacy", "pass"),
        make_result(a, "support", "lookup", "pass", steps=[step(0, "look up", "complete")]),
    ]


def results_b() -> list[StoredResult]:
    b = RUN_B
    return [
        make_result(
            b,
            "billing",
            "refund",
            "fail",
            steps=[
                GREET_A,
                step(1, "give order number", "incomplete", "the agent never asked for the order number"),
                step(2, "confirm refund", "blocked", "blocked: step 2 was not completed"),
            ],
            reasons=["give order number: not met"],
        ),
        make_result(b, "billing", "refund", "pass", persona="impatient", repeat=0, steps=[step(0, "ask", "complete")]),
        make_result(
            b,
            "billing",
            "refund",
            "fail",
            persona="impatient",
            repeat=1,
            steps=[step(0, "ask", "incomplete", "the user gave up after 3 turns")],
            reasons=["ask: not met"],
        ),
        make_result(
            b,
            "billing",
            "refund",
            "fail",
            persona="impatient",
            repeat=2,
            steps=[step(0, "ask", "incomplete", "a later failure")],
        ),
        make_result(
            b,
            "billing",
            "cancel",
            "pass",
            steps=[step(0, "cancel", "complete", "cancelled"), step(1, "new label", "complete")],
        ),
        *repeats(b, "support", "reset", ["pass", "fail", "pass"]),
        make_result(b, "support", "greeting", "pass"),
        make_result(b, "support", "escalate", "unsure", reasons=["judge unsure"]),
        make_result(b, "support", "new-flow", "pass"),
        make_result(b, "support", "lookup", "error", reasons=["agent down: connection refused"]),
    ]


@pytest.fixture
def comparison() -> Comparison:
    # Results are given out of repeat order on purpose: grouping sorts them by repeat.
    return compare_runs(RUN_A, results_a(), RUN_B, list(reversed(results_b())))


def ids(diffs: Sequence[CaseDiff]) -> list[tuple[str, str, str | None]]:
    return [(d.suite, d.case, d.persona) for d in diffs]


def find(comparison: Comparison, suite: str, case: str, persona: str | None = None) -> CaseDiff:
    return next(d for d in comparison.cases if (d.suite, d.case, d.persona) == (suite, case, persona))


# -- classification -------------------------------------------------------------------------------------------


def test_cases_are_classified_and_regressions_listed_first(comparison: Comparison) -> None:
    assert [(d.change, d.suite, d.case, d.persona) for d in comparison.cases] == [
        ("regressed", "billing", "refund", None),
        ("regressed", "billing", "refund", "impatient"),
        ("regressed", "support", "lookup", None),
        ("improved", "billing", "cancel", None),
        ("new", "support", "new-flow", None),
        ("removed", "billing", "legacy", None),
        ("unchanged", "support", "escalate", None),
        ("unchanged", "support", "greeting", None),
        ("unchanged", "support", "reset", None),
    ]
    assert comparison.has_regressions
    assert ids(comparison.regressed) == [
        ("billing", "refund", None),
        ("billing", "refund", "impatient"),
        ("support", "lookup", None),
    ]
    assert ids(comparison.improved) == [("billing", "cancel", None)]
    assert ids(comparison.new) == [("support", "new-flow", None)]
    assert ids(comparison.removed) == [("billing", "legacy", None)]
    assert ids(comparison.unchanged) == [
        ("support", "escalate", None),
        ("support", "greeting", None),
        ("support", "reset", None),
    ]
    assert (comparison.run_a, comparison.run_b) == ("run-a", "run-b")


def test_case_status_and_pass_rates_over_repeats(comparison: Comparison) -> None:
    impatient = find(comparison, "billing", "refund", "impatient")
    assert impatient.a is not None
    assert impatient.b is not None
    assert (impatient.a.status, impatient.a.passes, impatient.a.repeats, impatient.a.pass_rate) == ("pass", 3, 3, 1.0)
    assert impatient.b.outcomes == ["pass", "fail", "fail"]
    assert (impatient.b.status, impatient.b.passes, impatient.b.repeats) == ("fail", 1, 3)
    assert impatient.pass_rate_change == pytest.approx(1 / 3 - 1)
    assert impatient.b_reasons == ["ask: not met"]  # the first B repeat that did not pass

    reset = find(comparison, "support", "reset")
    assert reset.a is not None
    assert reset.b is not None
    assert (reset.a.status, reset.b.status) == ("fail", "fail")
    assert reset.a.pass_rate == pytest.approx(1 / 3)
    assert reset.b.pass_rate == pytest.approx(2 / 3)
    assert reset.pass_rate_change == pytest.approx(1 / 3)
    assert reset.change == "unchanged"

    # error -> unsure: neither passes, so unchanged, though the status moved.
    escalate = find(comparison, "support", "escalate")
    assert escalate.a is not None
    assert escalate.b is not None
    assert (escalate.a.status, escalate.b.status, escalate.change) == ("fail", "unsure", "unchanged")
    assert escalate.pass_rate_change == 0.0

    lookup = find(comparison, "support", "lookup")
    assert lookup.b is not None
    assert lookup.b.status == "fail"  # an error is a failure
    assert lookup.b_reasons == ["agent down: connection refused"]
    assert lookup.steps == []  # B recorded no steps: nothing to compare step by step

    new = find(comparison, "support", "new-flow")
    assert (new.a, new.pass_rate_change, new.steps) == (None, None, [])
    assert new.b is not None
    assert new.b.status == "pass"
    removed = find(comparison, "billing", "legacy")
    assert (removed.b, removed.pass_rate_change) == (None, None)
    assert removed.a is not None
    assert removed.a.status == "pass"


@pytest.mark.parametrize(
    ("outcomes", "status"),
    [
        (["pass", "pass"], "pass"),
        (["pass", "fail"], "fail"),
        (["pass", "error"], "fail"),
        (["unsure", "error"], "fail"),
        (["pass", "unsure"], "unsure"),
        (["unsure"], "unsure"),
        (["user_error", "user_error"], "user_error"),
        (["user_error", "pass"], "pass"),
        (["user_error", "fail"], "fail"),
    ],
)
def test_case_status_definition(outcomes: list[Outcome], status: str) -> None:
    run_b = make_run("run-b", "s")
    diff = compare_runs(make_run("run-a", "s"), [], run_b, repeats(run_b, "s", "c", outcomes)).cases[0]
    assert diff.change == "new"
    assert diff.b is not None
    assert diff.b.status == status


def test_a_case_the_simulated_user_spoiled_in_one_run_is_not_a_change_of_the_agent() -> None:
    run_a, run_b = make_run("run-a", "s"), make_run("run-b", "s")
    diff = compare_runs(
        run_a, repeats(run_a, "s", "c", ["pass"]), run_b, repeats(run_b, "s", "c", ["user_error"])
    ).cases[0]
    assert diff.change == "unchanged"
    assert diff.b is not None
    assert (diff.b.status, diff.b.repeats, diff.b.outcomes) == ("user_error", 0, ["user_error"])


# -- steps ----------------------------------------------------------------------------------------------------


def test_step_regressions_carry_the_b_rationale(comparison: Comparison) -> None:
    refund = find(comparison, "billing", "refund")
    assert [(s.index, s.label, s.change) for s in refund.steps] == [
        (1, "give order number", "regressed"),
        (2, "confirm refund", "regressed"),
    ]
    order = refund.steps[0]
    assert (order.complete_a, order.recorded_a, order.complete_b, order.recorded_b) == (1, 1, 0, 1)
    assert (order.b_status, order.b_rationale, order.b_repeat) == (
        "incomplete",
        "the agent never asked for the order number",
        0,
    )
    assert refund.steps[1].b_status == "blocked"
    assert refund.regressed_steps == refund.steps
    assert refund.improved_steps == []
    assert refund.b_reasons == ["give order number: not met"]


def test_step_counts_over_repeats_and_first_failing_b_repeat(comparison: Comparison) -> None:
    (ask,) = find(comparison, "billing", "refund", "impatient").steps
    assert ask.change == "regressed"
    assert (ask.complete_a, ask.recorded_a, ask.complete_b, ask.recorded_b) == (3, 3, 1, 3)
    assert (ask.b_repeat, ask.b_rationale) == (1, "the user gave up after 3 turns")


def test_step_improvements_and_steps_matched_by_index_and_label(comparison: Comparison) -> None:
    cancel = find(comparison, "billing", "cancel")
    # Step 1 was renamed ("old label" -> "new label"): not the same step, so not compared.
    assert [(s.index, s.label, s.change) for s in cancel.steps] == [(0, "cancel", "improved")]
    improved = cancel.steps[0]
    assert (improved.complete_a, improved.complete_b) == (0, 1)
    assert (improved.b_status, improved.b_rationale, improved.b_repeat) == (None, "", None)
    assert cancel.improved_steps == cancel.steps


def test_step_complete_only_when_complete_in_every_repeat() -> None:
    run_a, run_b = make_run("run-a", "s"), make_run("run-b", "s")
    flaky = [step(0, "go", "complete"), step(0, "go", "incomplete", "no")]
    a = [make_result(run_a, "s", "c", "fail", repeat=r, steps=[flaky[r]]) for r in range(2)]
    b = [make_result(run_b, "s", "c", "fail", repeat=r, steps=[step(0, "go", "incomplete", "no")]) for r in range(2)]
    # 1/2 -> 0/2: not complete in A, so not a step regression (as a flaky case is not a case regression).
    assert compare_runs(run_a, a, run_b, b).cases[0].steps == []
    # 0/2 -> 1/2: not complete in B either, so not an improvement.
    assert compare_runs(run_b, b, run_a, a).cases[0].steps == []


@pytest.mark.parametrize(
    ("a_statuses", "b_statuses", "line"),
    [
        (["complete"], ["unsure"], "      step 1 (go) regressed: complete 1/1 -> 0/1; ? unsure in B"),
        (["complete"], ["not_reached"], "      step 1 (go) regressed: complete 1/1 -> 0/1; ⊘ not reached in B"),
        (["complete"], ["not_attempted"], "      step 1 (go) regressed: complete 1/1 -> 0/1; ⊘ not reached in B"),
        (["complete"], ["blocked"], "      step 1 (go) regressed: complete 1/1 -> 0/1; ⊘ blocked in B"),
        (["unsure"], ["complete"], "      step 1 (go) improved: complete 0/1 -> 1/1; ? unsure in A"),
        (
            ["complete", "complete"],
            ["complete", "unsure"],
            "      step 1 (go) regressed: complete 2/2 -> 1/2; ? unsure in B repeat 2",
        ),
    ],
)
def test_steps_read_with_the_marks_of_every_view(
    a_statuses: list[StepStatus], b_statuses: list[StepStatus], line: str
) -> None:
    run_a, run_b = make_run("run-a", "s"), make_run("run-b", "s")

    def results(run: RunRecord, statuses: list[StepStatus]) -> list[StoredResult]:
        return [
            make_result(
                run, "s", "c", "pass" if status == "complete" else "unsure", repeat=r, steps=[step(0, "go", status)]
            )
            for r, status in enumerate(statuses)
        ]

    comparison = compare_runs(run_a, results(run_a, a_statuses), run_b, results(run_b, b_statuses))
    assert line in render_comparison_text(comparison)
    (diff,) = comparison.cases[0].steps
    if diff.change == "regressed":
        assert diff.b_repeat == len(b_statuses) - 1  # stored from 0
    else:
        assert diff.a_status == a_statuses[0]


# -- correctness and McNemar ----------------------------------------------------------------------------------


def test_correctness_of_both_runs_counts_the_cases_in_both(comparison: Comparison) -> None:
    # Every repeat of the cases in both runs: billing / legacy (only in A) and support / new-flow (only in B) are
    # left out, as a case not comparable would be.
    a, b = comparison.correctness_a, comparison.correctness_b
    assert (a.passed, a.failed, a.error, a.unsure, a.total) == (7, 3, 1, 0, 11)
    assert (b.passed, b.failed, b.error, b.unsure, b.total) == (5, 4, 1, 1, 11)
    assert a.correctness == pytest.approx(7 / 11)
    assert b.correctness == pytest.approx(5 / 11)
    assert comparison.correctness_change == pytest.approx(-2 / 11)


def test_mcnemar_of_the_comparison(comparison: Comparison) -> None:
    test = comparison.mcnemar
    assert (test.b, test.c, test.n) == (3, 1, 4)
    assert test.p_value == 2 * (1 + 4) / 16  # 0.625
    assert not test.significant


@pytest.mark.parametrize(
    ("b", "c", "p", "significant"),
    [
        (5, 0, 2 / 32, False),
        (0, 5, 2 / 32, False),
        (10, 1, 2 * (1 + 11) / 2048, True),
        (1, 10, 0.01171875, True),
        (0, 0, 1.0, False),
        (6, 0, 2 / 64, True),
        (3, 3, 1.0, False),
        (1, 0, 1.0, False),
        (7, 2, 2 * (1 + 9 + 36) / 512, False),
    ],
)
def test_mcnemar_exact_hand_computed(b: int, c: int, p: float, significant: bool) -> None:
    test = mcnemar_exact(b, c)
    assert (test.b, test.c, test.n) == (b, c, b + c)
    assert test.p_value == p
    assert test.significant is significant


def test_mcnemar_sentences() -> None:
    assert mcnemar_exact(0, 0).sentence() == (
        "Not significant at 0.05: p = 1 >= 0.05. No shared case changed between passing and not passing."
    )
    assert mcnemar_exact(5, 0).sentence() == (
        "Not significant at 0.05: p = 0.0625 >= 0.05. With only 5 discordant pairs, no difference can be "
        "significant (at least 6 are needed)."
    )
    assert mcnemar_exact(10, 1).sentence() == (
        "Significant at 0.05: p = 0.01172 < 0.05; B is worse than A on the shared cases."
    )
    assert mcnemar_exact(1, 10).sentence().endswith("B is better than A on the shared cases.")
    with pytest.raises(ValueError, match="must not be negative"):
        mcnemar_exact(-1, 0)


def test_mcnemar_over_many_shared_cases() -> None:
    run_a, run_b = make_run("run-a", "s"), make_run("run-b", "s")
    a: list[StoredResult] = []
    b: list[StoredResult] = []
    table: list[tuple[Outcome, Outcome, int]] = [("pass", "fail", 10), ("fail", "pass", 1), ("pass", "pass", 4)]
    table.append(("error", "unsure", 2))
    for outcome_a, outcome_b, count in table:
        for i in range(count):
            name = f"{outcome_a}-{outcome_b}-{i}"
            a.append(make_result(run_a, "s", name, outcome_a))
            b.append(make_result(run_b, "s", name, outcome_b))
    test = compare_runs(run_a, a, run_b, b).mcnemar
    assert (test.b, test.c, test.p_value, test.significant) == (10, 1, 0.01171875, True)


# -- edges ----------------------------------------------------------------------------------------------------


def test_identical_runs_have_no_regressions_and_round_trip_as_json() -> None:
    run_b = make_run("run-b", "billing", "support")
    same = [r.model_copy(update={"run_id": "run-b"}) for r in results_a()]
    comparison = compare_runs(RUN_A, results_a(), run_b, same)
    assert not comparison.has_regressions
    assert {d.change for d in comparison.cases} == {"unchanged"}
    assert comparison.correctness_change == 0.0
    assert (comparison.mcnemar.n, comparison.mcnemar.p_value) == (0, 1.0)
    assert Comparison.model_validate_json(comparison.model_dump_json()) == comparison


def test_comparison_json_round_trips(comparison: Comparison) -> None:
    dumped = comparison.model_dump(mode="json")
    assert dumped["cases"][0]["change"] == "regressed"
    assert dumped["mcnemar"] == {"b": 3, "c": 1, "n": 4, "p_value": 0.625, "significant": False}
    assert Comparison.model_validate_json(comparison.model_dump_json()) == comparison


def test_empty_runs() -> None:
    comparison = compare_runs(make_run("run-a", "s"), [], make_run("run-b", "s"), [])
    assert comparison.cases == []
    assert comparison.correctness_a.correctness is None
    assert comparison.correctness_change is None
    assert "Correctness on the 0 comparable cases in both runs: n/a (0/0) -> n/a (0/0)" in render_comparison_text(
        comparison
    )


def test_results_of_another_run_or_a_missing_suite_are_errors() -> None:
    with pytest.raises(ValueError, match="belongs to run 'run-a', not to run 'run-b'"):
        compare_runs(RUN_A, [], RUN_B, results_a())
    bad = make_result(RUN_B, "support", "c", "pass").model_copy(update={"suite": 5})
    with pytest.raises(ValueError, match="names suite 5"):
        compare_runs(RUN_A, [], RUN_B, [bad])


# -- text -----------------------------------------------------------------------------------------------------


def test_text_rendering(comparison: Comparison) -> None:
    assert render_comparison_text(comparison) == [
        "Comparing run run-b (B, new) against run run-a (A, baseline)",
        "Settings: the same in both runs.",
        "Correctness on the 7 comparable cases in both runs: 63.6% (7/11) -> 45.5% (5/11) (-18.2 points)",
        "McNemar on the comparable cases: b = 3 (passed in A, not in B), c = 1 (passed in B, not in A), n = 4, "
        "exact two-sided p = 0.625",
        "Not significant at 0.05: p = 0.625 >= 0.05. With only 4 discordant pairs, no difference can be "
        "significant (at least 6 are needed).",
        "REGRESSED (3):",
        "  ! billing / refund: ✓ pass 1/1 -> ✗ fail 0/1",
        "      step 2 (give order number) regressed: complete 1/1 -> 0/1; ✗ not complete in B — the agent never "
        "asked for the order number",
        "      step 3 (confirm refund) regressed: complete 1/1 -> 0/1; ⊘ blocked in B — blocked: step 2 was not "
        "completed",
        "      why: give order number: not met",
        "  ! billing / refund [persona impatient]: ✓ pass 3/3 -> ✗ fail 1/3 (pass rate -66.7 points)",
        # The second repeat (stored as repeat 1) is shown as repeat 2: repeats count from 1 in every view.
        "      step 1 (ask) regressed: complete 3/3 -> 1/3; ✗ not complete in B repeat 2 — the user gave up after 3 "
        "turns",
        "      why: ask: not met",
        "  ! support / lookup: ✓ pass 1/1 -> ✗ fail 0/1 (1 error)",
        "      why: agent down: connection refused",
        "IMPROVED (1):",
        "  + billing / cancel: ✗ fail 0/1 -> ✓ pass 1/1",
        "      step 1 (cancel) improved: complete 0/1 -> 1/1; ✗ not complete in A",
        "NEW (only in B) (1):",
        "  * support / new-flow: ✓ pass 1/1",
        "REMOVED (only in A) (1):",
        "  - billing / legacy: ✓ pass 1/1",
        "Unchanged: 3, 1 with a changed pass rate or steps",
        "  = support / reset: ✗ fail 1/3 -> ✗ fail 2/3 (pass rate +33.3 points)",
    ]


def test_text_without_regressions_says_so() -> None:
    run_b = make_run("run-b", "billing", "support")
    same = [r.model_copy(update={"run_id": "run-b"}) for r in results_a()]
    lines = render_comparison_text(compare_runs(RUN_A, results_a(), run_b, same))
    assert lines[5:] == ["No regressed cases.", "Unchanged: 8"]
