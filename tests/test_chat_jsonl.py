"""``export run --format jsonl``: one conversation a line in the OpenAI chat-messages shape, verdicts beside it.

The reader here is what another tool would do with the file: parse each line as JSON, check the messages against
the OpenAI SDK's own message types, and follow each tool call to its result by id.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

import simulator
from simulator.cli import app
from simulator.llm import FakeScript
from tests.test_cassettes import judge

ROOT = Path(__file__).resolve().parent.parent
CANARY = "canary-jsonl-7c8d9e0f1a2b"
runner = CliRunner()


@pytest.fixture
def demo(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    (tmp_path / ".git").mkdir()
    shutil.copytree(ROOT / "suites" / "demo", tmp_path / "suites" / "demo")
    shutil.copytree(ROOT / "personas", tmp_path / "personas")
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("ACME_API_KEY", CANARY)
    return tmp_path


def _run(demo: Path) -> simulator.RunOutcome:
    script = FakeScript().enqueue(
        "user", {"message": f"It's ORD-10042, and my key is {CANARY}.", "done": False, "reason": ""}
    )
    script.enqueue("judge", judge, times=200)
    with script.active():
        return simulator.run(
            ["suites/demo/simulations.yaml", "suites/demo/golden.yaml"], db=demo / "runs.db", seed=1,
            user_model="fake/user", judge_model="fake/judge",
        )  # fmt: skip


def _read(path: Path) -> list[dict[str, Any]]:
    """The file as a JSON Lines reader takes it: one JSON object per line, nothing else."""
    text = path.read_text(encoding="utf-8")
    assert text.endswith("\n")
    return [json.loads(line) for line in text.splitlines()]


def _check_openai_shape(messages: list[dict[str, Any]]) -> None:
    """Valid chat messages as the OpenAI API takes them, every tool message answering a call made before it."""
    pytest.importorskip("openai")  # installed with litellm; its message types are the shape's definition
    from openai.types.chat import ChatCompletionMessageParam
    from pydantic import TypeAdapter

    TypeAdapter(list[ChatCompletionMessageParam]).validate_python(messages)
    allowed = {
        "user": {"role", "content"},
        "assistant": {"role", "content", "tool_calls"},
        "tool": {"role", "content", "tool_call_id"},
    }
    called: set[str] = set()
    answered: set[str] = set()
    for message in messages:
        assert set(message) <= allowed[message["role"]], message
        if message["role"] == "tool":
            assert message["tool_call_id"] in called - answered, message
            assert isinstance(message["content"], str)
            answered.add(message["tool_call_id"])
        else:
            assert isinstance(message["content"], str) or message.get("tool_calls"), message
        for call in message.get("tool_calls") or []:
            assert call["type"] == "function"
            json.loads(call["function"]["arguments"])  # the arguments are JSON text, as the API sends them
            called.add(call["id"])
    assert called == answered


def test_each_conversation_is_one_line_of_openai_chat_messages_with_its_verdicts(demo: Path) -> None:
    outcome = _run(demo)
    output = demo / "conversations.jsonl"
    result = runner.invoke(
        app, ["export", "run", outcome.id, "--format", "jsonl", "-o", str(output), "--db", str(demo / "runs.db")]
    )
    assert result.exit_code == 0, result.output
    lines = _read(output)
    stored = {item.key: item for item in outcome.results()}
    assert [line["key"] for line in lines] == [item.key for item in outcome.record.plan]
    for line in lines:
        _check_openai_shape(line["messages"])
        item = stored[line["key"]]
        assert (line["run_id"], line["case"], line["persona"], line["repeat"], line["outcome"]) == (
            outcome.id, item.case, item.persona, item.repeat, item.outcome,
        )  # fmt: skip
        assert line["reasons"] == item.result.reasons
        assert [step["status"] for step in line["steps"]] == [step.status for step in item.result.transcript.steps]
    tool_lines = [line for line in lines if any(message["role"] == "tool" for message in line["messages"])]
    assert tool_lines  # the demo's agent calls tools: the export carries them
    order = next(line for line in lines if line["case"] == "order_status_needs_the_order_number")
    assert any(step["verdict"] for step in order["steps"])
    raw = output.read_bytes()
    assert CANARY.encode() not in raw
    assert b"[redacted:ACME_API_KEY]" in raw


def test_jsonl_to_stdout_is_the_same_lines(demo: Path) -> None:
    outcome = _run(demo)
    result = runner.invoke(app, ["export", "run", outcome.id, "--format", "jsonl", "--db", str(demo / "runs.db")])
    assert result.exit_code == 0, result.output
    lines = [json.loads(line) for line in result.stdout.splitlines()]
    assert len(lines) == len(outcome.record.plan)
    assert CANARY not in result.stdout
