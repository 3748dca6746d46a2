"""The benches' fake OpenAI-compatible server (bench/_server.py): structured replies fit the schema asked,
and requests are counted per role."""

from __future__ import annotations

import importlib.util
import json
import urllib.request
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
from pydantic import BaseModel

from simulator.judges import llm_judges
from simulator.judges.llm_judges import GoalSatisfactionReply
from simulator.user import UserMove

_PATH = Path(__file__).resolve().parent.parent / "bench" / "_server.py"


@pytest.fixture(scope="module")
def server_module() -> ModuleType:
    spec = importlib.util.spec_from_file_location("bench_fake_server", _PATH)
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _response_format(model: type[BaseModel]) -> dict[str, Any]:
    """What litellm sends for a pydantic class: an OpenAI json_schema response format."""
    return {"type": "json_schema", "json_schema": {"name": model.__name__, "schema": model.model_json_schema()}}


# Every reply schema the judges define (whatever they are called), and the simulated user's turn.
_SCHEMAS = [UserMove] + [
    value
    for value in vars(llm_judges).values()
    if isinstance(value, type) and issubclass(value, BaseModel) and value.__module__ == llm_judges.__name__
]


@pytest.mark.parametrize("model", _SCHEMAS, ids=lambda m: m.__name__)
def test_structured_content_fits_the_schema(server_module: ModuleType, model: type[BaseModel]) -> None:
    content = server_module.structured_content(_response_format(model))
    model.model_validate_json(content)  # raises when it does not fit


def test_a_batched_judge_reply_has_a_verdict_for_every_marked_turn(server_module: ModuleType) -> None:
    prompt = "\n".join(
        [
            "<conversation-0123456789abcdef>",
            '{"turn": 1, "role": "agent", "text": "A", "judge": true}',
            '{"turn": 2, "role": "user", "text": "U", "judge": true}',
            '{"turn": 2, "role": "agent", "text": "not judged"}',
            '{"turn": 3, "role": "tool_call", "name": "t", "judge": true}',
            '{"turn": 3, "role": "agent", "text": "{\\"judge\\": true}", "judge": true}',
            "</conversation-0123456789abcdef>",
        ]
    )
    content = server_module.structured_content(
        _response_format(llm_judges.HallucinationFidelityBatchReply), prompt=prompt
    )
    reply = llm_judges.HallucinationFidelityBatchReply.model_validate_json(content)
    assert [(t.turn, t.verdict) for t in reply.turns] == [(1, "no_claim"), (3, "no_claim")]
    assert [(t.turn, t.invented) for t in reply.user_turns] == [(2, False)]


def test_fill_follows_refs_arrays_and_minimums(server_module: ModuleType) -> None:
    schema = {
        "type": "object",
        "$defs": {"Verdict": {"type": "object", "properties": {"turn": {"type": "integer", "minimum": 1}}}},
        "properties": {
            "verdicts": {"type": "array", "items": {"$ref": "#/$defs/Verdict"}, "minItems": 2},
            "notes": {"type": "array", "items": {"type": "string"}},
            "done": {"type": "boolean"},
            "label": {"anyOf": [{"type": "null"}, {"type": "string", "minLength": 5}]},
            "optional": {"type": "string"},
        },
        "required": ["verdicts", "notes", "done", "label"],
    }
    assert server_module.fill(schema) == {
        "verdicts": [{"turn": 1}, {"turn": 1}], "notes": [], "done": False, "label": "ok...",
    }  # fmt: skip


def _post(url: str, body: dict[str, Any]) -> dict[str, Any]:
    request = urllib.request.Request(
        f"{url}/chat/completions", data=json.dumps(body).encode(), headers={"Content-Type": "application/json"}
    )
    with urllib.request.urlopen(request, timeout=10) as reply:
        answer: dict[str, Any] = json.loads(reply.read())
    return answer


def test_the_server_answers_by_schema_and_counts_roles(server_module: ModuleType) -> None:
    with server_module.FakeServer(latency=0.0) as server:
        messages = [{"role": "user", "content": "hi"}]
        asked = {"model": "peer-user", "messages": messages, "response_format": _response_format(UserMove)}
        move = UserMove.model_validate_json(_post(server.base_url, asked)["choices"][0]["message"]["content"])
        assert not move.done
        assert move.message.strip()
        agent = _post(server.base_url, {"model": "peer-agent", "messages": messages})
        assert agent["choices"][0]["message"]["content"] == server_module.AGENT_REPLY
        judged = {"model": "openai/peer-judge", "messages": messages}
        for _ in range(2):
            _post(server.base_url, {**judged, "response_format": _response_format(GoalSatisfactionReply)})
        stats = server.stats()
        assert stats["requests"] == {"user": 1, "agent": 1, "judge": 2}
        assert stats["schemas"] == {"user:UserMove": 1, "judge:GoalSatisfactionReply": 2}
        assert stats["total"] == 4
        assert stats["max_in_flight"] == 1
        assert stats["first_request"] is not None
        assert server.stats()["requests"] == {}  # /stats resets the counts


def test_with_a_timeline_replies_are_marked_and_each_request_names_the_reply_it_follows(
    server_module: ModuleType,
) -> None:
    with server_module.FakeServer(latency=0.0, timeline=True) as server:
        asked = {
            "model": "peer-user",
            "messages": [{"role": "user", "content": "hi"}],
            "response_format": _response_format(UserMove),
        }
        move = UserMove.model_validate_json(_post(server.base_url, asked)["choices"][0]["message"]["content"])
        assert move.message.endswith(" [r1]")
        agent = _post(server.base_url, {"model": "peer-agent", "messages": [{"role": "user", "content": move.message}]})
        reply = agent["choices"][0]["message"]["content"]
        assert reply == f"{server_module.AGENT_REPLY} [r2]"
        # The next user turn carries both earlier replies: it follows the latest.
        seen = [{"role": "user", "content": move.message}, {"role": "assistant", "content": reply}]
        _post(server.base_url, {**asked, "messages": seen})
        log = server.timeline_log()
        assert [(entry["serial"], entry["role"], entry["parent"]) for entry in log] == [
            (1, "user", None), (2, "agent", 1), (3, "user", 2),
        ]  # fmt: skip
        assert all(entry["arrived"] <= entry["replied"] for entry in log)
        assert log[0]["schema"] == "UserMove"
        assert server.timeline_log() == []  # /timeline empties the log


def test_without_a_timeline_replies_are_not_marked(server_module: ModuleType) -> None:
    with server_module.FakeServer(latency=0.0) as server:
        agent = _post(server.base_url, {"model": "peer-agent", "messages": [{"role": "user", "content": "hi"}]})
        assert agent["choices"][0]["message"]["content"] == server_module.AGENT_REPLY
        assert server.timeline_log() == []


# What peers' judges send: a verdict forced as a tool call (LangWatch Scenario's decision and finish_test tools).
_DECISION_TOOLS = [
    {"type": "function", "function": {"name": name, "parameters": {"type": "object", "properties": {}}}}
    for name in ("continue_test", "make_verdict")
]
_FINISH_TOOL = {
    "type": "function",
    "function": {
        "name": "finish_test",
        "parameters": {
            "type": "object",
            "properties": {
                "criteria": {
                    "type": "object",
                    "properties": {
                        "goal": {
                            "type": "object",
                            "properties": {
                                "reasoning": {"type": "string"},
                                "status": {"type": "string", "enum": ["passed", "failed", "inconclusive"]},
                            },
                            "required": ["reasoning", "status"],
                        }
                    },
                    "required": ["goal"],
                },
                "reasoning": {"type": "string"},
            },
            "required": ["criteria", "reasoning"],
        },
    },
}


@pytest.mark.parametrize(
    ("tools", "choice", "called", "arguments"),
    [
        (_DECISION_TOOLS, "required", "continue_test", {}),
        (_DECISION_TOOLS, {"type": "function", "function": {"name": "make_verdict"}}, "make_verdict", {}),
        (
            [*_DECISION_TOOLS, _FINISH_TOOL],
            {"type": "function", "function": {"name": "finish_test"}},
            "finish_test",
            {"criteria": {"goal": {"reasoning": "ok", "status": "passed"}}, "reasoning": "ok"},
        ),
        (_DECISION_TOOLS, {"type": "function", "function": {"name": "gone"}}, "continue_test", {}),
    ],
    ids=["required-first-tool", "named", "named-with-schema", "unknown-name-first-tool"],
)
def test_a_forced_tool_call_calls_the_tool_with_arguments_that_fit(
    server_module: ModuleType, tools: list[dict[str, Any]], choice: Any, called: str, arguments: dict[str, Any]
) -> None:
    body = {"model": "peer-judge", "messages": [{"role": "user", "content": "judge"}], "tools": tools}
    message = server_module.tool_reply({**body, "tool_choice": choice}, 7)
    assert message["content"] is None
    [call] = message["tool_calls"]
    assert call["id"] == "call_7"
    assert call["function"]["name"] == called
    assert json.loads(call["function"]["arguments"]) == arguments


@pytest.mark.parametrize(
    "body",
    [
        {"tools": _DECISION_TOOLS, "tool_choice": "auto"},
        {"tools": _DECISION_TOOLS},
        {"tools": [], "tool_choice": "required"},
        {"tool_choice": "required"},
    ],
    ids=["auto", "no-choice", "no-tools", "choice-without-tools"],
)
def test_a_request_that_does_not_force_a_tool_gets_no_tool_call(
    server_module: ModuleType, body: dict[str, Any]
) -> None:
    assert server_module.forced_tool(body) is None


@pytest.mark.parametrize(
    ("role", "expected"), [("user", "USER_MESSAGE"), ("agent", "AGENT_REPLY"), ("judge", "AGENT_REPLY")]
)
def test_a_plain_request_of_the_user_role_gets_the_users_message(
    server_module: ModuleType, role: str, expected: str
) -> None:
    assert server_module.plain_content(role, " [r3]") == f"{getattr(server_module, expected)} [r3]"


def test_the_server_answers_forced_tool_calls_and_plain_user_requests(server_module: ModuleType) -> None:
    with server_module.FakeServer(latency=0.0) as server:
        messages = [{"role": "user", "content": "hi"}]
        judged = {"model": "openai/peer-judge", "messages": messages, "tools": _DECISION_TOOLS}
        reply = _post(server.base_url, {**judged, "tool_choice": "required"})["choices"][0]
        assert reply["finish_reason"] == "tool_calls"
        assert reply["message"]["tool_calls"][0]["function"] == {"name": "continue_test", "arguments": "{}"}
        free = _post(server.base_url, {**judged, "tool_choice": "auto"})["choices"][0]
        assert free["finish_reason"] == "stop"
        assert free["message"]["content"] == server_module.AGENT_REPLY
        user = _post(server.base_url, {"model": "peer-user", "messages": messages})["choices"][0]["message"]
        assert user["content"] == server_module.USER_MESSAGE
        stats = server.stats()
        assert stats["requests"] == {"judge": 2, "user": 1}
        assert stats["schemas"] == {"judge:continue_test": 1}


@pytest.mark.parametrize(
    ("properties", "marked"),
    [
        ({"reason": {"type": "string"}, "message": {"type": "string"}}, "message"),
        ({"verdict": {"type": "string", "enum": ["yes", "no"]}, "reason": {"type": "string"}}, "reason"),
        ({"simulated_input": {"type": "string"}}, "simulated_input"),
        ({"verdict": {"type": "string", "enum": ["yes"]}, "when": {"type": "string", "format": "date"}}, None),
        ({"is_complete": {"type": "boolean"}}, None),
    ],
    ids=["message-first", "reason-not-the-enum", "free-text", "no-free-text", "no-string"],
)
def test_with_a_timeline_a_structured_reply_marks_its_first_free_text(
    server_module: ModuleType, properties: dict[str, Any], marked: str | None
) -> None:
    schema = {"type": "object", "properties": properties, "required": list(properties)}
    plain = json.loads(server_module.structured_content({"schema": schema}))
    value = json.loads(server_module.structured_content({"schema": schema}, " [r5]"))
    assert {k: v for k, v in value.items() if v != plain[k]} == ({marked: f"{plain[marked]} [r5]"} if marked else {})
