"""Terminal output written for a person: each fact once, repeated reasons counted, the "no judge model" advice
once at the end; ``-v`` shows everything as the full record has it."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from simulator.cli import EXIT_BELOW_BAR, app
from simulator.judges.step import NO_JUDGE
from simulator.reports.transcript_text import NO_JUDGE_ADVICE

runner = CliRunner()
ROOT = Path(__file__).resolve().parents[2]
MISSED = "lookup_order was not called (no tool calls)"


def _simulate(*args: str) -> str:
    result = runner.invoke(app, ["simulate", "suites/demo/scenarios.yaml", *args])
    assert result.exit_code == EXIT_BELOW_BAR, result.stdout + result.stderr
    return result.stdout


def test_the_advice_is_the_judges_own_words() -> None:
    assert NO_JUDGE.endswith(NO_JUDGE_ADVICE)


def test_simulate_says_each_fact_once(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(ROOT)
    text = _simulate("-c", "express_delivery_date_is_made_up")
    lines = text.splitlines()
    assert text.count(MISSED) == 1  # in the step's outcome; the checks and the reasons point to it
    assert "      ✗ check goal: not_met" in lines
    assert "  why: goal: Find out when your express order ORD-90011 will arrive. (see above)" in lines
    assert (
        "  why: turn 1: hallucination; turn 2: hallucination: claims “according to our delivery system” but no tool "
        "was called in the conversation × 2"
    ) in lines
    verbose = _simulate("-c", "express_delivery_date_is_made_up", "-v")
    assert verbose.count(MISSED) > 3  # the full record: every check, the step, the reason and the score


def test_simulate_counts_a_repeated_reason_and_gives_the_advice_once(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(ROOT)
    text = _simulate()
    assert NO_JUDGE_ADVICE not in text
    assert "      not judged: no judge model is configured × 3" in text.splitlines()
    assert text.count("set models.judge in the suite") == 1
    assert text.splitlines()[-1].startswith("Unsure cases have checks only a judge model can decide")
    assert _simulate("--verbose").count(NO_JUDGE_ADVICE) > 10


def test_the_run_table_shows_whole_reasons_failures_first(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(ROOT)
    db = str(tmp_path / "runs.db")
    result = runner.invoke(app, ["run", "suites/demo", "--db", db])
    assert result.exit_code == EXIT_BELOW_BAR
    rows = [line for line in result.stdout.splitlines() if line.startswith("│")]
    assert "express_delivery_date_is_made_up" in rows[0]  # the failure first
    why = " ".join(row.rsplit("│", 2)[1].strip() for row in rows)
    assert "missing '4 December 2026' (+3 more)" in why  # whole, wrapped, never cut with …
    assert "…" not in why
    assert NO_JUDGE_ADVICE not in result.stdout
    assert result.stdout.count("models.judge in the suite") == 1
    shown = runner.invoke(app, ["runs", "show", "latest", "--db", db]).stdout
    assert shown.splitlines()[-1].startswith("Not judged in 12 conversation(s): no judge model is configured.")
    verbose = runner.invoke(app, ["runs", "show", "latest", "--db", db, "-v"]).stdout
    assert "Not judged in" not in verbose  # every reason as stored, the advice with it
    assert "missing '4 December 2026' (+3 more)" not in verbose  # the reason whole, not shortened


def test_help_imports_neither_litellm_nor_langgraph() -> None:
    # The console script, in its own process, timed by Python's import clock: the heavy libraries never load.
    done = subprocess.run(
        [sys.executable, "-X", "importtime", "-m", "simulator", "--help"], capture_output=True, text=True, check=False
    )
    assert done.returncode == 0, done.stderr
    assert "simulate" in done.stdout
    imported = {line.rsplit("|", 1)[-1].strip().split(".")[0] for line in done.stderr.splitlines() if "|" in line}
    assert "typer" in imported  # the clock did run
    assert not imported & {"litellm", "langgraph"}


def test_a_large_run_off_the_terminal_prints_its_failures_and_a_bounded_progress() -> None:
    """10,000 conversations printed 10,035 lines into a CI log; now failures and a line every twentieth."""
    from simulator.cli._progress import EVERY_LINE_UP_TO, _progress_line_shown

    small = [_progress_line_shown(done, EVERY_LINE_UP_TO, "pass") for done in range(1, EVERY_LINE_UP_TO + 1)]
    assert all(small)
    total = 10_000
    passed = [done for done in range(1, total + 1) if _progress_line_shown(done, total, "pass")]
    assert passed == list(range(500, total + 1, 500))
    assert all(_progress_line_shown(7, total, outcome) for outcome in ("fail", "error", "user_error"))
    assert not _progress_line_shown(7, total, "unsure")
