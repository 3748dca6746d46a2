"""One earlier agent turn as chat messages (``turn_messages``), and the same history in a LangGraph graph's form."""

from __future__ import annotations

import json
from typing import Any

import pytest

from simulator.agents import turn_messages
from simulator.agents.langgraph_agent import _graph_messages
from simulator.models.transcript import ToolCallRecord, ToolRound

LOOKUP = ToolCallRecord(id="a", name="lookup", arguments={"id": 1}, status="faked", result={"ok": True})
TEXT_RESULT = ToolCallRecord(id="b", name="lookup", arguments={"id": 2}, status="executed", result='{"ok":1}')
NOT_RUN = ToolCallRecord(id="c", name="refund", status="not_executed", error="not executed in test mode: no fake")
MALFORMED = ToolCallRecord(
    id="d", name="lookup", arguments={"_raw": '{"id": '}, arguments_error="bad", status="failed", error="not JSON"
)
AS_SENT = ToolCallRecord(id="e", name="lookup", arguments={"id": 1}, arguments_text='{"id":1}', status="faked")
NO_ID = ToolCallRecord(id="", name="lookup", status="faked", result="x")


def call(record: ToolCallRecord, arguments: str, id_: str | None = None) -> dict[str, Any]:
    return {"id": id_ or record.id, "type": "function", "function": {"name": record.name, "arguments": arguments}}


def result(id_: str, content: str) -> dict[str, Any]:
    return {"role": "tool", "tool_call_id": id_, "content": content}


def said(text: str | None, *calls: dict[str, Any]) -> dict[str, Any]:
    return {"role": "assistant", "content": text, **({"tool_calls": list(calls)} if calls else {})}


NOT_RUN_CONTENT = json.dumps({"error": "not executed in test mode: no fake", "status": "not_executed"})


@pytest.mark.parametrize(
    ("texts", "calls", "rounds", "expected"),
    [
        pytest.param(["hi", "bye"], [], None, [said("hi"), said("bye")], id="texts only"),
        pytest.param(
            ["done"],
            [LOOKUP, NOT_RUN],
            None,
            [
                said(None, call(LOOKUP, '{"id": 1}'), call(NOT_RUN, "{}")),
                result("a", '{"ok": true}'),
                result("c", NOT_RUN_CONTENT),
                said("done"),
            ],
            id="no rounds: one message with every call, then the texts",
        ),
        pytest.param(
            ["Let me check.", "Found it.", "done"],
            [LOOKUP, TEXT_RESULT],
            [ToolRound(calls=["a"], content="text"), ToolRound(calls=["b"], content="text")],
            [
                said("Let me check.", call(LOOKUP, '{"id": 1}')),
                result("a", '{"ok": true}'),
                said("Found it.", call(TEXT_RESULT, '{"id": 2}')),
                result("b", '{"ok":1}'),  # a str result exactly as the agent got it
                said("done"),
            ],
            id="two rounds, each with its text",
        ),
        pytest.param(
            [],
            [MALFORMED, AS_SENT],
            [ToolRound(calls=["e", "d"], content="empty")],
            [
                said("", call(AS_SENT, '{"id":1}'), call(MALFORMED, '{"id": ')),
                result("e", "null"),
                result("d", json.dumps({"error": "not JSON", "status": "failed"})),
            ],
            id="arguments as sent, in the round's order; empty content",
        ),
        pytest.param(
            ["Hmm.", "done"],
            [NO_ID, LOOKUP],
            [ToolRound(calls=["gone"], content="text")],
            [
                said("Hmm."),
                said(None, call(NO_ID, "{}", "call_4_0"), call(LOOKUP, '{"id": 1}')),
                result("call_4_0", "x"),
                result("a", '{"ok": true}'),
                said("done"),
            ],
            id="a call without id, and a round whose calls are not recorded",
        ),
    ],
)
def test_turn_messages(
    texts: list[str], calls: list[ToolCallRecord], rounds: list[ToolRound] | None, expected: list[dict[str, Any]]
) -> None:
    assert turn_messages(4, texts, calls, rounds) == expected


def test_a_graph_gets_tool_calls_in_langchain_form_and_tool_messages_with_their_tool_name() -> None:
    history = [
        {"role": "user", "content": "hi", "event": {"name": "x"}},
        said(None, call(LOOKUP, '{"id": 1}'), call(MALFORMED, '{"id": '), call(NO_ID, "", "n")),
        result("a", '{"ok": true}'),
        result("d", "failed"),
        result("n", "x"),
        said("done"),
    ]
    assert _graph_messages(history) == [
        {"role": "user", "content": "hi"},
        {
            "role": "assistant",
            "content": "",
            "tool_calls": [
                {"name": "lookup", "args": {"id": 1}, "id": "a", "type": "tool_call"},
                {"name": "lookup", "args": {"_raw": '{"id": '}, "id": "d", "type": "tool_call"},
                {"name": "lookup", "args": {}, "id": "n", "type": "tool_call"},
            ],
        },
        {"role": "tool", "content": '{"ok": true}', "tool_call_id": "a", "name": "lookup"},
        {"role": "tool", "content": "failed", "tool_call_id": "d", "name": "lookup"},
        {"role": "tool", "content": "x", "tool_call_id": "n", "name": "lookup"},
        {"role": "assistant", "content": "done"},
    ]
