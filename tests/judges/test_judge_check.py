"""judge-check: the shipped labelled set, scored through the fake provider, and its agreement figures."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from simulator.analysis.judge_check import judge_check
from simulator.errors import ConfigErrors, JudgeError
from simulator.llm import FakeScript, LLMClient, StaticReply
from simulator.models import ModelRoles
from tests.factories import agent_said

ROOT = Path(__file__).resolve().parents[2]
LABELS = ROOT / "judge_labels" / "demo.yaml"


def supported() -> dict[str, Any]:
    return {"verdict": "supported", "claim": "", "reason": "backed by the lookup"}


def no_claim() -> dict[str, Any]:
    return {"verdict": "no_claim", "claim": "", "reason": "a question only"}


def unsupported(claim: str) -> dict[str, Any]:
    return {"verdict": "unsupported", "claim": claim, "reason": f"no tool returned: {claim}"}


def last_agent_message(messages: list[dict[str, Any]]) -> str:
    """The evidence of a pass: the last agent message of the conversation the judge was shown."""
    return agent_said(str(messages[0]["content"]))[-1]


def goal(satisfied: bool) -> Callable[[list[dict[str, Any]]], dict[str, Any]]:
    def answer(messages: list[dict[str, Any]]) -> dict[str, Any]:
        quote = last_agent_message(messages) if satisfied else ""
        return {"satisfied": satisfied, "reason": "as the transcript shows", "quote": quote}

    return answer


def met(reason: str) -> Callable[[list[dict[str, Any]]], dict[str, Any]]:
    return lambda messages: {"verdict": "met", "reason": reason, "quote": last_agent_message(messages)}


# The judge's answers, in the order judge-check asks (items in order; per item the labelled turns ascending,
# then the goal, then the expectations). Two answers differ from the person's labels: item 2 turn 4 (the
# photo "added to your case" claim, which this judge accepts) and item 5's goal.
ANSWERS: list[StaticReply | Callable[[list[dict[str, Any]]], dict[str, Any]]] = [
    no_claim(), supported(), goal(True),
    no_claim(), supported(), supported(), supported(), no_claim(), goal(True),
    no_claim(), supported(), no_claim(), goal(True),
    unsupported("due tomorrow"), unsupported("due tomorrow"), goal(False),
    supported(), goal(False), met("polite throughout"),
    supported(), goal(True),
    supported(),
    supported(), supported(),
]  # fmt: skip


def fake_client(script: FakeScript) -> LLMClient:
    async def no_wait(delay: float) -> None:
        return None

    return LLMClient(ModelRoles.model_validate({"judge": "fake/judge"}), fake_script=script, sleep=no_wait)


def test_the_shipped_labels_scored_by_a_scripted_judge(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(ROOT)
    script = FakeScript().enqueue("judge", *ANSWERS)
    report = asyncio.run(judge_check(LABELS, llm=fake_client(script)))
    assert script.pending() == 0
    assert len(report.judgements) == 24
    assert report.overall is not None
    assert report.overall.accuracy == pytest.approx(22 / 24)
    hallucination = report.by_question["hallucination"]
    assert hallucination.n == 17
    assert hallucination.accuracy == pytest.approx(16 / 17)
    assert report.by_question["goal_satisfaction"].accuracy == pytest.approx(5 / 6)
    assert report.by_question["expectation"].accuracy == 1.0
    assert [(d.item, d.question, d.human, d.judge) for d in report.disagreements] == [
        (1, "hallucination turn 4", "1", "0"),
        (4, "goal_satisfaction", "1", "0"),
    ]
    # The judge saw the same context the scorer gives it: the tool calls and their results.
    first_hallucination_of_item_2 = script.requests[4].messages[-1]["content"]
    assert "lookup_order" in first_hallucination_of_item_2


def test_without_a_judge_model_it_says_how_to_set_one(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(ROOT)
    with pytest.raises(JudgeError, match="pass --judge-model MODEL"):
        asyncio.run(judge_check(LABELS))


def test_label_file_errors_name_the_place(tmp_path: Path) -> None:
    (tmp_path / "labels.yaml").write_text(
        "items:\n  - transcript: missing.json\n    suite: nowhere.yaml\n    labels:\n      hallucination: {one: 1}\n",
        encoding="utf-8",
    )
    with pytest.raises(ConfigErrors) as caught:
        asyncio.run(judge_check(tmp_path / "labels.yaml", llm=fake_client(FakeScript())))
    [error] = caught.value.errors
    assert (error.line, error.key_path) == (5, "items[0].labels.hallucination")
    assert "keyed by agent turn number, got 'one'" in error.message


def test_a_missing_transcript_is_reported_at_its_key(tmp_path: Path) -> None:
    (tmp_path / "labels.yaml").write_text(
        "items:\n  - transcript: missing.json\n    labels: {goal_satisfaction: 1}\n", encoding="utf-8"
    )
    with pytest.raises(ConfigErrors) as caught:
        asyncio.run(judge_check(tmp_path / "labels.yaml", llm=fake_client(FakeScript())))
    [error] = caught.value.errors
    assert (error.line, error.column, error.key_path) == (2, 17, "items[0].transcript")
    assert error.message.startswith("cannot read 'missing.json'")
