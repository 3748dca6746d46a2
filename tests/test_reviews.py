"""Human review: a person's verdict on a result, a step or a check, stored apart (never changing the judge's),
shown beside the judge's in every report, counted as reviewed correctness beside the judged one, and used as the
judge's calibration set (`judge-check --from-reviews`, the labels export)."""

from __future__ import annotations

import csv
import io
import json
import sqlite3
from collections.abc import Iterator
from contextlib import closing
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

import simulator
from simulator.cli import EXIT_BELOW_BAR, EXIT_INVALID, app
from simulator.models.scores import Score
from simulator.reports.formats import render
from simulator.store import MIGRATIONS, RunStore, migrate, migration_name

ROOT = Path(__file__).resolve().parents[1]
DEMO = ROOT / "suites" / "demo"
runner = CliRunner()

FAILS = "express_delivery_date_is_made_up"  # fails on deterministic checks
PASSES = "refund_journey_with_a_reason"  # a simulation that passes: five steps
UNSURE = "status_then_delivery_date"
OPTIONS: dict[str, Any] = {"cases": [FAILS, PASSES, UNSURE], "seed": 0}
HOSTILE = "<script>alert(1)</script> \x1b[31mred\x1b[0m \u202egnp.exe | *bold* [x](javascript:1)"


@pytest.fixture(scope="module")
def demo(tmp_path_factory: pytest.TempPathFactory) -> simulator.RunOutcome:
    outcome = simulator.run([DEMO], db=tmp_path_factory.mktemp("demo") / "runs.db", **OPTIONS)
    assert {r.case: r.outcome for r in outcome.results()} == {FAILS: "fail", PASSES: "pass", UNSURE: "unsure"}
    return outcome


@pytest.fixture
def db(demo: simulator.RunOutcome, tmp_path: Path) -> Path:
    """A copy of the demo store, so each test's reviews are its own."""
    copy = tmp_path / "runs.db"
    with closing(sqlite3.connect(demo.store_path)) as source, closing(sqlite3.connect(copy)) as target:
        source.backup(target)
    return copy


def key_of(demo: simulator.RunOutcome, case: str) -> str:
    return next(r.key for r in demo.results() if r.case == case)


def review(db: Path, key: str, target: str, verdict: str, **more: str) -> simulator.Review:
    given = {"reason": "because", "reviewer": "ann", **more}
    return simulator.add_review("latest", key, target=target, verdict=verdict, db=db, **given)


# --- the store


def test_reviews_are_stored_apart_listed_oldest_first_and_go_with_their_run(
    demo: simulator.RunOutcome, db: Path
) -> None:
    key = key_of(demo, PASSES)
    first = review(db, key, "step 2", "not_met")
    second = review(db, key, "step 2", "met", reviewer="bob")
    assert [r.id for r in simulator.reviews("latest", db=db)] == [first.id, second.id]
    summary = simulator.run_reviews("latest", db=db)
    assert summary.current(key) == [second]  # history kept, the newest of a target counts
    # the judge's verdicts are untouched
    assert [r.model_dump() for r in simulator.read_run("latest", db=db).results] == [
        r.model_dump() for r in demo.results()
    ]
    with RunStore(db) as store:
        store.delete_run(demo.id)
    with closing(sqlite3.connect(db)) as conn:
        assert conn.execute("SELECT COUNT(*) FROM reviews").fetchone()[0] == 0


def test_an_old_store_gets_the_reviews_table_and_keeps_its_runs(demo: simulator.RunOutcome, db: Path) -> None:
    with closing(sqlite3.connect(db, isolation_level=None)) as conn:
        conn.execute("DROP TABLE reviews")
        conn.execute("DELETE FROM migrations WHERE name = 'm006_reviews'")
    with RunStore(db) as store:
        assert store.list_reviews(demo.id) == []
        assert store.get_run(demo.id).id == demo.id
    with closing(sqlite3.connect(db, isolation_level=None)) as conn:
        names = [str(row[0]) for row in conn.execute("SELECT name FROM migrations ORDER BY name")]
        assert names == [migration_name(m) for m in MIGRATIONS]
        assert migrate(conn, db) == []
    review(db, key_of(demo, FAILS), "result", "pass")
    assert len(simulator.reviews(demo.id, db=db)) == 1


# --- the API's errors


@pytest.mark.parametrize(
    "row",
    [
        (None, "result", "pass", {}, "has no result with key 'nope'; its results: "),
        (PASSES, "step 9", "met", {}, "has no step 'step 9'; choose one of: result; step 1; step 2;"),
        (PASSES, "turn 1: hallucinations", "met", {}, "has no target 'turn 1: hallucinations'; choose one of: result"),
        (PASSES, "result", "met", {}, "verdict 'met' does not fit the whole result: give pass or fail"),
        (PASSES, "step 1", "pass", {}, "verdict 'pass' does not fit step 'step 1': give met or not_met"),
        (PASSES, "result", "pass", {"reason": "  "}, "a review needs a reason"),
        (PASSES, "result", "pass", {"reviewer": ""}, "a review needs a reviewer"),
    ],
)
def test_a_review_that_does_not_fit_is_an_input_error_naming_the_choices(
    demo: simulator.RunOutcome, db: Path, row: tuple[str | None, str, str, dict[str, str], str]
) -> None:
    case, target, verdict, more, expected = row
    key = "nope" if case is None else key_of(demo, case)
    with pytest.raises(simulator.InputError) as caught:
        review(db, key, target, verdict, **more)
    assert expected in str(caught.value)
    if case is None:
        assert all(r.key in str(caught.value) for r in demo.results())
    assert simulator.reviews("latest", db=db) == []


# --- correctness as judged and as reviewed


def test_a_check_review_flips_a_case_and_only_the_reviewed_figures_move(demo: simulator.RunOutcome, db: Path) -> None:
    key = key_of(demo, PASSES)
    check = "step 2: Remembers the order"  # a required expectation the run found met
    review(db, key, check, "not_met")
    summary = simulator.run_reviews("latest", db=db)
    assert summary.results[key].judged == "pass"
    assert summary.results[key].reviewed == "fail"
    assert (summary.judged.passed, summary.reviewed.passed) == (1, 0)
    assert summary.judged.correctness == demo.record.totals.correctness  # type: ignore[union-attr]
    # a later review of the same check puts it back
    review(db, key, check, "met", reviewer="bob")
    assert simulator.run_reviews("latest", db=db).results[key].reviewed == "pass"


def test_a_result_review_decides_the_result_and_a_step_review_counts_as_the_steps_verdict(
    demo: simulator.RunOutcome, db: Path
) -> None:
    review(db, key_of(demo, FAILS), "result", "pass")
    review(db, key_of(demo, PASSES), "step 3", "not_met")
    summary = simulator.run_reviews("latest", db=db)
    assert summary.results[key_of(demo, FAILS)].reviewed == "pass"
    assert summary.results[key_of(demo, PASSES)].reviewed == "fail"
    assert (summary.judged.passed, summary.judged.failed) == (1, 1)
    assert (summary.reviewed.passed, summary.reviewed.failed) == (1, 1)


def test_compare_and_fail_under_use_the_judged_figures_unless_asked_for_the_reviewed(
    demo: simulator.RunOutcome, db: Path
) -> None:
    baseline = simulator.run([DEMO], db=db, **OPTIONS).id  # the same run again: nothing changed as judged
    simulator.add_review(
        demo.id, key_of(demo, FAILS), target="result", verdict="pass", reason="fine", reviewer="ann", db=db
    )
    judged = simulator.compare_runs(baseline, demo.id, db=db)
    reviewed = simulator.compare_runs(baseline, demo.id, db=db, reviewed=True)
    assert [c.case for c in judged.improved] == []
    assert [c.case for c in reviewed.improved] == [FAILS]
    text = runner.invoke(app, ["compare", baseline, demo.id, "--db", str(db), "--reviewed"]).output
    assert FAILS in text
    bar = ["reviews", demo.id, "--db", str(db), "--fail-under", "60"]
    assert runner.invoke(app, bar).exit_code == EXIT_BELOW_BAR  # as judged: 1 of 3
    assert runner.invoke(app, [*bar, "--reviewed"]).exit_code == 0  # as reviewed: 2 of 3


@pytest.mark.parametrize(
    ("reviews", "judged_exit", "reviewed_exit"),
    [
        ([], EXIT_BELOW_BAR, EXIT_BELOW_BAR),  # no reviews: the same as judged
        ([(FAILS, "result", "pass")], EXIT_BELOW_BAR, EXIT_BELOW_BAR),  # the unsure case still stands
        ([(FAILS, "result", "pass"), (UNSURE, "result", "pass")], EXIT_BELOW_BAR, 0),  # every case passes
        ([(PASSES, "result", "fail")], EXIT_BELOW_BAR, EXIT_BELOW_BAR),
    ],
)
def test_resume_exits_on_the_reviewed_figures_when_asked(
    demo: simulator.RunOutcome,
    db: Path,
    reviews: list[tuple[str, str, str]],
    judged_exit: int,
    reviewed_exit: int,
) -> None:
    for case, target, verdict in reviews:
        review(db, key_of(demo, case), target, verdict)
    resume = ["runs", "resume", demo.id, "--db", str(db)]
    judged = runner.invoke(app, resume)
    assert "nothing to resume" in judged.output
    assert judged.exit_code == judged_exit
    assert runner.invoke(app, [*resume, "--reviewed"]).exit_code == reviewed_exit


def test_exit_code_holds_the_reviewed_counts_to_the_bar(demo: simulator.RunOutcome, db: Path) -> None:
    review(db, key_of(demo, FAILS), "result", "pass")
    outcome = simulator.get_run(demo.id, db=db)
    counts = simulator.run_reviews(demo.id, db=db).reviewed
    assert (outcome.exit_code(60), outcome.exit_code(60, reviewed=counts)) == (EXIT_BELOW_BAR, 0)  # 1/3, 2/3
    assert outcome.exit_code(70, reviewed=counts) == EXIT_BELOW_BAR


# --- judge-check --from-reviews and the labels export


def _judged_run(demo: simulator.RunOutcome, db: Path, verdicts: list[tuple[str, str, str]]) -> str:
    """A copy of the demo run whose PASSES result has one judge score per (metric, check, judge verdict)."""
    with RunStore(db) as store:
        run_id = store.new_run_id()
        store.create_run(demo.record.model_copy(update={"id": run_id, "status": "completed"}))
        for stored in demo.results():
            scores = list(stored.result.scores)
            if stored.case == PASSES:
                scores += [
                    Score(metric=metric, check=check, source="judge", verdict=verdict, required=False)
                    for metric, check, verdict in verdicts
                ]
            result = stored.result.model_copy(update={"scores": scores})
            store.save_result(stored.model_copy(update={"run_id": run_id, "result": result}))
    return run_id


def test_judge_check_from_reviews_gives_cohens_kappa_per_metric(demo: simulator.RunOutcome, db: Path) -> None:
    judge = ["met", "met", "not_met", "not_met", "met", "not_met"]
    human = ["met", "not_met", "not_met", "not_met", "met", "met"]
    checks = [("expectation", f"expectation: rule {n}", verdict) for n, verdict in enumerate(judge)]
    run_id = _judged_run(demo, db, [*checks, ("hallucination", "turn 9: hallucination", "not_met")])
    key = key_of(demo, PASSES)
    for (_, check, _), verdict in zip(checks, human, strict=True):
        simulator.add_review(run_id, key, target=check, verdict=verdict, reason="r", reviewer="ann", db=db)
    simulator.add_review(
        run_id, key, target="turn 9: hallucination", verdict="not_met", reason="r", reviewer="a", db=db
    )
    # a deterministic check is not the judge's: left out
    simulator.add_review(run_id, key, target="step 1", verdict="not_met", reason="r", reviewer="a", db=db)
    report = simulator.judge_check_reviews([run_id], db=db)
    # expectation: 4 of 6 agree; each side says met 3 times of 6, so p_e = 1/2 and kappa = (2/3 - 1/2) / (1/2)
    assert report.by_question["expectation"].n == 6
    assert report.by_question["expectation"].cohen_kappa == pytest.approx(1 / 3)
    # overall: 5 of 7 agree; met 3 and not_met 4 on each side: p_e = 25/49, kappa = (35 - 25) / (49 - 25)
    assert report.overall is not None
    assert report.overall.cohen_kappa == pytest.approx(10 / 24)
    assert len(report.disagreements) == 2
    out = runner.invoke(app, ["judge-check", "--from-reviews", run_id, "--db", str(db)])
    assert out.exit_code == 0, out.output
    assert "expectation" in out.output
    assert "0.33" in out.output
    assert "2 disagreement(s)" in out.output


def test_reviews_export_as_a_labels_file_that_judge_check_reads_back(
    demo: simulator.RunOutcome, db: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(ROOT)  # the suites are named as the run was given them
    key = key_of(demo, FAILS)
    review(db, key, "turn 2: hallucination", "met")
    review(db, key, "expectation: The agent only states delivery dates that a tool returned.", "not_met")
    review(db, key, "result", "fail")  # no place in a labels file: said, left out
    labels = tmp_path / "labels.yaml"
    out = runner.invoke(app, ["reviews", demo.id, "--db", str(db), "--export", str(labels)])
    assert out.exit_code == 0, out.output
    assert "left out" in out.output
    assert "result" in out.output
    report = simulator.judge_check(labels, judge_model="fake/judge")  # no script: the judge errs, labels read
    assert sorted((j.question, j.human) for j in report.judgements) == [
        ("expectation: The agent only states delivery dates that a tool returned.", "not_met"),
        ("hallucination turn 2", "0"),
    ]


# --- every report shows a review; hostile text stays text


@pytest.fixture
def reviewed(demo: simulator.RunOutcome, db: Path) -> Path:
    review(db, key_of(demo, FAILS), "result", "pass", reason=HOSTILE, reviewer=HOSTILE)
    return db


@pytest.mark.parametrize("fmt", ["md", "html", "json", "csv", "xlsx"])
def test_every_report_format_shows_a_review_beside_the_judged_outcome(reviewed: Path, fmt: str) -> None:
    report = simulator.run_report("latest", fmt, db=reviewed)
    if fmt in ("csv", "xlsx"):
        rows = _table(report.data, fmt)
        column = rows[0].index("reviewed_outcome")
        (found,) = [row for row in rows[1:] if row[column]]
        assert found[rows[0].index("outcome")] == "fail"
        assert found[column] == "pass"
        assert str(found[rows[0].index("reviews")]).startswith("result: pass — ")
        return
    text = report.text or ""
    if fmt == "json":
        data = json.loads(text)
        assert data["run"]["totals"]["reviewed"]["passed"] == 2
        (found,) = [r for r in data["results"] if r.get("reviews")]
        assert (found["outcome"], found["reviewed_outcome"]) == ("fail", "pass")
        return
    assert "reviewer: pass" in text
    assert "judge: fail" in text


def _table(data: bytes, fmt: str) -> list[list[Any]]:
    if fmt == "csv":
        return list(csv.reader(io.StringIO(data.decode("utf-8"))))
    from openpyxl import load_workbook

    sheet = load_workbook(io.BytesIO(data))["Cases"]
    return [[cell.value or "" for cell in row] for row in sheet.iter_rows()]


def test_junit_reports_the_judged_outcomes_only(demo: simulator.RunOutcome, reviewed: Path) -> None:
    assert simulator.run_report("latest", "junit", db=reviewed).data == render("junit", *_summarized(demo))


def _summarized(demo: simulator.RunOutcome) -> Iterator[Any]:
    from simulator.metrics import summarized

    results = demo.results()
    yield summarized(demo.record, results)
    yield results


@pytest.mark.parametrize("fmt", ["md", "html"])
def test_hostile_reasons_and_names_are_escaped_in_reports(reviewed: Path, fmt: str) -> None:
    text = simulator.run_report("latest", fmt, db=reviewed).text or ""
    assert "<script>alert" not in text
    assert "\x1b" not in text
    assert "\u202e" not in text
    if fmt == "html":
        assert "&lt;script&gt;alert(1)&lt;/script&gt;" in text
    else:
        assert "\\<script\\>" in text or "&lt;script&gt;" in text


def test_hostile_reasons_and_names_are_escaped_in_the_terminal(reviewed: Path) -> None:
    for args in (["reviews", "latest"], ["runs", "show", "latest"]):
        out = runner.invoke(app, [*args, "--db", str(reviewed)])
        assert out.exit_code == 0, out.output
        assert "\x1b" not in out.output
        assert "\u202e" not in out.output
    listed = runner.invoke(app, ["reviews", "latest", "--db", str(reviewed)]).output
    assert "\\x1b[31mred" in listed
    assert "Correctness as judged" in listed
    assert "Correctness as reviewed" in runner.invoke(app, ["runs", "show", "latest", "--db", str(reviewed)]).output


def test_the_review_command_records_and_refuses_with_a_clear_line(demo: simulator.RunOutcome, db: Path) -> None:
    key = key_of(demo, FAILS)
    args = ["review", "latest", key, "--db", str(db), "--reason", "ok", "--reviewer", "ann"]
    assert runner.invoke(app, [*args, "--target", "result", "--verdict", "pass"]).exit_code == 0
    bad = runner.invoke(app, [*args, "--target", "step 7", "--verdict", "met"])
    assert bad.exit_code == EXIT_INVALID
    assert "has no step 'step 7'; choose one of: result; step 1" in bad.output
    assert "Traceback" not in bad.output
