"""Answers served by the request cache are labelled as such in every view of a run, and the plan line says
whether the cache is on: a run that asked no model must never read like one that did."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from simulator.cli import app
from simulator.llm import FakeScript
from simulator.store import RunStore
from tests.factories import agent_said, judged_turns, review_reply

runner = CliRunner()

SUITE = """\
name: cached
agent:
  type: python
  callable: simulator.demo.shop:respond
cases:
  - kind: scenario
    name: greet
    goal: Say hello.
    max_turns: 1
    expectations: [The agent greets back.]
"""
#: Dollars per prompt and per completion token (words, for the fake) of the fake judge.
PROMPT_PRICE, COMPLETION_PRICE = 0.0001, 0.0002


def judge(messages: list[dict[str, Any]]) -> dict[str, Any]:
    """A fake judge that answers every question the suite asks (goal, expectation, hallucination), by its prompt."""
    prompt = str(messages[0]["content"]).lower()
    if prompt.startswith("you judge one finished conversation"):  # the goal and the turns in one request
        said = agent_said(str(messages[-1]["content"]))[-1]
        turns = [{"turn": n, "verdict": "no_claim", "claim": "", "reason": "a greeting claims nothing"}
                 for n in judged_turns(str(messages[0]["content"]), "agent")]  # fmt: skip
        goal = {"satisfied": True, "reason": "the user got what they came for", "quote": said}
        return review_reply({"goal": goal, "turns": turns})
    if "hallucination" in prompt:
        return {"verdict": "no_claim", "claim": "", "reason": "a greeting claims nothing"}
    said = agent_said(str(messages[-1]["content"]))[-1]  # a pass quotes the agent's words
    if "satisfied the user's goal" in prompt:
        return {"satisfied": True, "reason": "the user got what they came for", "quote": said}
    return {"verdict": "met", "reason": "the agent greeted back", "quote": said}


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    (tmp_path / ".git").mkdir()
    (tmp_path / "suite.yaml").write_text(SUITE, encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    return tmp_path


def _run(script: FakeScript, *options: str) -> Any:
    with script.active():
        result = runner.invoke(
            app, ["run", "suite.yaml", "--judge-model", "fake/judge", "--db", "r.db", "--seed", "1", *options]
        )
    assert result.exit_code == 0, result.stdout + result.stderr
    return result


def _script() -> FakeScript:
    script = FakeScript().enqueue("judge", judge, times=100)
    return script.price("judge", prompt=PROMPT_PRICE, completion=COMPLETION_PRICE)


def _judge_line(stdout: str) -> str:
    [line] = [line.strip() for line in stdout.splitlines() if line.strip().startswith("judge:")]
    return line


def test_a_second_run_shows_every_judge_answer_as_cached_with_its_would_be_cost(project: Path) -> None:
    script = _script()
    first = _run(script)
    asked = len(script.requests)
    assert asked > 0
    line = _judge_line(first.stdout)
    assert line.startswith(f"judge: {asked} answer")
    assert f", {asked} request{'s' if asked != 1 else ''} sent," in line
    assert "from the request cache" not in line
    [cost] = re.findall(r"\$(\d+\.\d{4})$", line)
    assert float(cost) > 0

    second = _run(script, "--json", "--report", "md", "--report-dir", "reports")
    assert len(script.requests) == asked  # nothing was sent: every judge answer came from the cache
    document = json.loads(second.stdout)
    assert document["usage"]["judge"] == {
        "answers": asked,
        "from_cache": asked,
        "would_be_cost": pytest.approx(float(cost), abs=5e-5),
        "requests_sent": 0,
        "prompt_tokens": document["usage"]["judge"]["prompt_tokens"],
        "completion_tokens": document["usage"]["judge"]["completion_tokens"],
        "cost": 0.0,
        # The fake judge plays no provider prompt cache.
        "prompt_cache_read_tokens": 0,
        "prompt_cache_write_tokens": 0,
        "prompt_cache_saved": 0.0,
    }

    # The terminal summary of the stored run (`runs show`) says the same, from what the store kept.
    shown = runner.invoke(app, ["runs", "show", document["run"]["id"], "--db", "r.db"])
    assert shown.exit_code == 0, shown.stdout
    assert _judge_line(shown.stdout).startswith(
        f"judge: {asked} answer{'s' if asked != 1 else ''} ({asked} from the request cache, would-be ${cost}), "
        "0 requests sent,"
    )
    assert _judge_line(shown.stdout).endswith(", $0.0000")

    [report] = (project / "reports").glob("*.md")
    markdown = report.read_text(encoding="utf-8")
    [row] = [line for line in markdown.splitlines() if line.startswith("| judge |")]
    cells = [cell.strip() for cell in row.strip("|").split("|")]
    assert cells[:4] == ["judge", str(asked), str(asked), "0"]
    assert (cells[6], cells[7]) == ("$0.0000", f"${cost}")
    assert f"**From the request cache:** {asked} of {asked} answers (would-be cost ${cost})" in markdown


def test_the_run_record_keeps_the_cached_answers_per_role(project: Path) -> None:
    script = _script()
    ids = [_run(script).stdout.split(":")[0].removeprefix("Run ") for _ in range(2)]
    with RunStore(project / "r.db") as store:
        first, second = (store.get_run(run_id) for run_id in ids)
        assert first.totals is not None
        assert second.totals is not None
        before, after = first.totals.usage["judge"], second.totals.usage["judge"]
        assert (before.cached_calls, before.requests) == (0, before.calls)
        assert (after.cached_calls, after.requests, after.cost) == (after.calls, 0, 0.0)
        assert after.cached_cost == pytest.approx(before.cost)
        [stored] = store.results(second.id)
        assert stored.result.transcript.usage["judge"].cached_calls == after.calls


@pytest.mark.parametrize(
    ("options", "said"),
    [
        ((), "request cache on (cache.db: user and judge answers to requests asked before are replayed, not sent; "
             "--no-cache turns it off)"),
        (("--no-cache",), "request cache off (--no-cache): every answer is asked of the models"),
    ],
    ids=["on", "off"],
)  # fmt: skip
def test_the_plan_line_says_whether_the_request_cache_is_on(project: Path, options: tuple[str, ...], said: str) -> None:
    result = _run(_script(), *options)
    plan_line = result.stdout.splitlines()[0]
    assert plan_line.startswith("Run ")
    assert f"; {said}; " in plan_line


def test_without_the_cache_a_second_run_asks_the_models_again(project: Path) -> None:
    script = _script()
    _run(script, "--no-cache")
    asked = len(script.requests)
    second = _run(script, "--no-cache")
    assert len(script.requests) == 2 * asked
    assert "from the request cache" not in _judge_line(second.stdout)
    assert f"{asked} request{'s' if asked != 1 else ''} sent" in _judge_line(second.stdout)
