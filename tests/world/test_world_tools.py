"""World tools through real runs: each declarative operation and Python world functions answer from the
conversation's own world, recorded as executed (world) with what they read and changed; the transcript keeps the
net diff, scoring gets the final world, and a replay ends with the same world."""

from __future__ import annotations

import asyncio
import json
import textwrap
from pathlib import Path
from typing import Any

import pytest

import simulator
from simulator.llm import LLMClient
from simulator.loading import load_suite
from simulator.models import ToolDeclaration, ToolFake
from simulator.models.run import RunSettings
from simulator.models.transcript import ToolCallRecord, Transcript
from simulator.reports.transcript_text import transcript_lines
from simulator.runner import final_world, model_roles, run_case
from simulator.tools import ToolRouter

AGENT_PY = """\
    import asyncio
    import json

    def respond(messages, tools):
        # The user's message names the tool and its arguments: the agent calls it and says what came back.
        asked = json.loads(messages[-1]["content"])
        return json.dumps(tools.call(asked["tool"], **asked["args"]))

    def refund(world, order_id):
        order = world.get("orders", order_id)
        if order is None:
            raise LookupError(f"no order {order_id}")
        world.update("orders", order_id, {"refunded": order["total"]})
        return {"refunded": order["total"]}

    async def fee(world, order_id):
        await asyncio.sleep(0)
        return {"fee": world.get("orders", order_id)["total"] // 10}

    def opaque(world):
        return object()

    def never_called(order_id):
        raise AssertionError("a world tool's live function is not run: the world answers")
"""

SUITE_YAML = """\
    name: shop
    world:
      orders:
        1001: {customer: c1, status: placed, total: 20}
        1002: {customer: c1, status: shipped, total: 50}
      cards:
        card-a: {owner: c1, blocked: false}
    agent:
      type: python
      callable: shop_agent:respond
      tools:
        - name: find_orders
          parameters: {type: object, properties: {customer: {type: string}}}
          world: {find: orders, where: {customer: "{customer}"}, fields: [status]}
        - name: get_order
          parameters: {type: object, properties: {order_id: {type: string}}}
          world: {get: orders, id: "{order_id}"}
        - name: cancel_order
          parameters: {type: object, properties: {order_id: {type: string}}}
          function: shop_agent:never_called
          world: {update: orders, id: "{order_id}", set: {status: cancelled}, require: {status: placed}}
        - name: open_ticket
          parameters: {type: object, properties: {order_id: {type: string}, text: {type: string}}}
          world: {insert: tickets, record: {order: "{order_id}", text: "{text}", status: open}}
        - name: forget_card
          parameters: {type: object, properties: {card: {type: string}}}
          world: {delete: cards, id: "{card}"}
        - name: refund
          world: {function: shop_agent:refund}
        - name: fee
          world: {function: shop_agent:fee}
        - name: opaque
          world: {function: shop_agent:opaque}
    cases:
      - name: ask
        kind: golden
        turns:
          - user: "{}"
"""


@pytest.fixture
def shop(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The shop suite in a folder of its own, run from another folder (modules are found beside the suite)."""
    folder = tmp_path / "shop"
    folder.mkdir()
    (tmp_path / ".git").mkdir()
    (folder / "shop_agent.py").write_text(textwrap.dedent(AGENT_PY), encoding="utf-8")
    (folder / "suite.yaml").write_text(textwrap.dedent(SUITE_YAML), encoding="utf-8")
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)
    return folder / "suite.yaml"


def converse(suite: Path, tool: str, live: bool = False, fakes: list[Any] | None = None, **args: Any) -> Transcript:
    """One conversation whose user asks the agent to call ``tool`` with ``args``."""
    loaded = load_suite(suite)
    [case] = loaded.suite.cases
    turn = case.turns[0].model_copy(update={"user": json.dumps({"tool": tool, "args": args})})  # type: ignore[union-attr]
    case = case.model_copy(update={"turns": [turn], "tool_fakes": [ToolFake.model_validate(f) for f in fakes or []]})
    options = RunSettings(live=live)
    llm = LLMClient(model_roles(loaded, options))
    transcript = asyncio.run(run_case(loaded, case, persona=None, llm=llm, options=options))
    assert transcript.error is None, transcript.error
    return transcript


def the_call(transcript: Transcript) -> ToolCallRecord:
    [call] = transcript.tool_calls()
    return call


def changed(transcript: Transcript) -> list[tuple[str, str]]:
    assert transcript.world is not None
    return [(change.label(), change.action) for change in transcript.world.changes]


@pytest.mark.parametrize(
    ("tool", "args", "result", "touched"),
    [
        (
            "find_orders", {"customer": "c1"},
            {"records": [{"id": "1001", "status": "placed"}, {"id": "1002", "status": "shipped"}], "count": 2},
            (["orders/1001", "orders/1002"], []),
        ),
        ("get_order", {"order_id": "1002"}, {"id": "1002", "customer": "c1", "status": "shipped", "total": 50},
         (["orders/1002"], [])),
        ("cancel_order", {"order_id": "1001"}, {"id": "1001", "customer": "c1", "status": "cancelled", "total": 20},
         ([], [("orders/1001", "update")])),
        ("cancel_order", {"order_id": "1002"},
         {"error": "orders/1002 has status=shipped, not placed: nothing was changed"}, (["orders/1002"], [])),
        ("open_ticket", {"order_id": "1001", "text": "late"},
         {"id": "1", "order": "1001", "text": "late", "status": "open"}, ([], [("tickets/1", "insert")])),
        ("forget_card", {"card": "card-a"}, {"deleted": "card-a", "record": {"id": "card-a", "owner": "c1",
         "blocked": False}}, ([], [("cards/card-a", "delete")])),
        ("refund", {"order_id": "1002"}, {"refunded": 50}, (["orders/1002"], [("orders/1002", "update")])),
        ("fee", {"order_id": "1002"}, {"fee": 5}, (["orders/1002"], [])),
    ],
)  # fmt: skip
def test_each_world_tool_answers_from_the_conversations_world(
    shop: Path, tool: str, args: dict[str, Any], result: Any, touched: tuple[list[str], list[tuple[str, str]]]
) -> None:
    read, changes = touched
    transcript = converse(shop, tool, **args)
    call = the_call(transcript)
    assert (call.status, call.status_label, call.error, call.result) == ("executed", "executed (world)", None, result)
    assert call.world is not None
    assert call.world.read == read
    assert [(change.label(), change.action) for change in call.world.changes] == changes
    assert changed(transcript) == changes  # the transcript keeps the net diff
    # The agent got the result as the tool's answer.
    [reply] = transcript.agent_events()
    assert json.loads(reply.messages[0]) == result


def test_a_world_tool_is_answered_from_the_world_in_live_mode_too(shop: Path) -> None:
    # cancel_order also names a live function that does not exist: the world answers, the function is never run.
    transcript = converse(shop, "cancel_order", live=True, order_id="1001")
    assert the_call(transcript).status_label == "executed (world)"
    assert changed(transcript) == [("orders/1001", "update")]


def test_a_tool_fake_that_matches_wins_over_the_world(shop: Path) -> None:
    fake = {"tool": "cancel_order", "arguments": {"order_id": "1001"}, "result": {"ok": "faked"}}
    transcript = converse(shop, "cancel_order", fakes=[fake], order_id="1001")
    call = the_call(transcript)
    assert (call.status, call.result, call.world) == ("faked", {"ok": "faked"}, None)
    assert changed(transcript) == []
    # A fake that does not match leaves the call to the world.
    transcript = converse(shop, "cancel_order", fakes=[fake], order_id="1002")
    assert the_call(transcript).status_label == "executed (world)"


@pytest.mark.parametrize(
    ("tool", "args", "error"),
    [
        ("refund", {"order_id": "404"}, "LookupError: no order 404"),
        ("opaque", {}, "the tool returned object, which is not JSON"),
    ],
)
def test_a_world_function_that_raises_or_returns_no_json_is_the_calls_failure(
    shop: Path, tool: str, args: dict[str, Any], error: str
) -> None:
    transcript = converse(shop, tool, **args)
    call = the_call(transcript)
    assert call.status == "failed"
    assert call.error is not None
    assert call.error.startswith(error)
    assert call.status_label == "failed"


def test_a_world_tool_without_a_world_fails_with_the_reason() -> None:
    tool = ToolDeclaration.model_validate({"name": "get_order", "world": {"get": "orders", "id": "{order_id}"}})
    router = ToolRouter(declared=[tool])
    record = asyncio.run(router.route("get_order", {"order_id": "1"}))
    assert (record.status, record.error) == (
        "failed",
        "get_order is a world tool, but this case has no world: add `world:` to the suite or the case",
    )


def test_scoring_gets_the_final_world_and_the_terminal_shows_the_world_call(shop: Path) -> None:
    transcript = converse(shop, "cancel_order", order_id="1001")
    loaded = load_suite(shop)
    world = final_world(loaded, loaded.suite.cases[0], transcript)
    assert world is not None
    assert world.current("orders", "1001") == {"customer": "c1", "status": "cancelled", "total": 20}
    assert world.current("orders", "1002") == {"customer": "c1", "status": "shipped", "total": 50}
    text = "\n".join(line.text for line in transcript_lines(transcript))
    assert "[executed (world)] →" in text
    assert "(changed orders/1001 (status: placed -> cancelled))" in text


def test_a_replay_ends_with_the_same_world_without_running_a_tool(shop: Path, tmp_path: Path) -> None:
    db = tmp_path / "runs.db"
    suite = shop.parent / "replayed.yaml"
    text = textwrap.dedent(SUITE_YAML)
    asks = [{"tool": "cancel_order", "args": {"order_id": "1001"}}, {"tool": "open_ticket", "args": {"order_id":
            "1001", "text": "late"}}, {"tool": "refund", "args": {"order_id": "1001"}}]  # fmt: skip
    turns = "".join(f"      - user: '{json.dumps(ask)}'\n" for ask in asks)
    suite.write_text(text.replace('      - user: "{}"\n', turns), encoding="utf-8")
    recorded = simulator.run(str(suite), db=db, record=True, seed=3)
    (shop.parent / "shop_agent.py").write_text("raise ImportError('a replay imports no agent')\n", encoding="utf-8")
    replayed = simulator.replay(recorded.id, db=db)
    [before], [after] = recorded.results(), replayed.results()
    assert before.result.transcript.error is None, before.result.transcript.error
    assert before.result.transcript.world is not None
    assert after.result.transcript.world is not None
    assert [c.label() for c in before.result.transcript.world.changes] == ["orders/1001", "tickets/1"]
    assert after.result.transcript.world.changes == before.result.transcript.world.changes
    assert [call.status_label for call in after.result.transcript.tool_calls()] == ["executed (world)"] * 3
