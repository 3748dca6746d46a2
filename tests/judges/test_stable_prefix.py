"""Requests built stable-prefix-first: in one conversation, every request of the simulated user after the first,
and every step-judge question after the first, repeats the earlier request of its role byte for byte up to
what is new (the turns since, and the tail that changes each turn: the step's goal, criterion, guide), so a
provider's prompt cache can serve that prefix. Measured through the runner with the fake models."""

from __future__ import annotations

import asyncio
import itertools
import json
from pathlib import Path
from typing import Any

import pytest

from simulator.llm import FakeRequest, FakeScript, LLMClient, Role
from simulator.loading import load_suite
from simulator.models.run import RunSettings
from simulator.runner import find_case, model_roles, run_case, score_case

REPLY = "Your order ORD-1 has shipped."
SUITE = """\
name: s
agent:
  type: litellm
  model: fake/agent
  instructions: You answer order questions.
cases:
  - kind: simulation
    name: two steps
    steps:
      - goal: Find out where order ORD-1 is.
        success_criteria: The agent says where the order is.
        response_guide: {order_number: ORD-1}
        max_turns: 3
      - goal: Ask when ORD-1 arrives.
        success_criteria: The agent gives a date.
        response_guide: Be patient.
        max_turns: 3
"""


async def no_wait(delay: float) -> None:
    return None


def _requests(tmp_path: Path) -> list[FakeRequest]:
    (tmp_path / ".git").mkdir()
    (tmp_path / "suite.yaml").write_text(SUITE, encoding="utf-8")
    loaded = load_suite(tmp_path / "suite.yaml")
    asked = iter(range(1000))

    def judge(messages: list[dict[str, Any]]) -> dict[str, Any]:
        if "success criterion" not in str(messages[0]["content"]):  # the questions after the conversation
            return {
                "goal": {"satisfied": True, "reason": "ok", "quote": REPLY},
                "turns": [],
                "satisfied": True,
                "reason": "ok",
                "quote": REPLY,
            }
        # Each step takes two turns: not yet met on its first, met on its second.
        met = next(asked) % 2 == 1
        return {"verdict": "met" if met else "not_met", "reason": "ok", "quote": REPLY if met else ""}

    script = FakeScript()
    script.enqueue("user", {"message": "Where is ORD-1?", "done": False, "reason": "asking"}, times=20)
    script.enqueue("agent", REPLY, times=20)
    script.enqueue("judge", judge, times=40)
    options = RunSettings(user_model="fake/user", judge_model="fake/judge", cache=False)
    llm = LLMClient(model_roles(loaded, options), fake_script=script, sleep=no_wait)
    case = find_case(loaded, "two steps")

    async def go() -> None:
        transcript = await run_case(loaded, case, persona=None, llm=llm, options=options)
        await score_case(loaded, case, transcript, llm=llm, options=options)

    asyncio.run(go())
    return list(script.requests)


def _text(messages: list[dict[str, Any]]) -> str:
    """A request as a provider's prompt cache reads it: its messages in order."""
    return "".join(json.dumps(m, ensure_ascii=False) for m in messages)


def _common(a: str, b: str) -> int:
    n = 0
    for x, y in zip(a, b, strict=False):
        if x != y:
            break
        n += 1
    return n


def _user_stable(messages: list[dict[str, Any]]) -> str:
    """A user request without its tail: the trailing system note (the step's goal and guide) and the trailing
    placeholder that stands for a reply not given yet."""
    kept = list(messages)
    while len(kept) > 1 and (kept[-1]["role"] == "system" or str(kept[-1]["content"]).startswith("(")):
        kept.pop()
    return _text(kept)[:-1]  # the last message's closing brace: the next request's same message goes on


def _judge_stable(messages: list[dict[str, Any]]) -> str:
    """A step-judge question up to the end of its conversation's last event (the next question adds events)."""
    text = _text(messages)
    return text[: text.index("\\n</conversation-")]


@pytest.mark.parametrize("role", [Role.USER, Role.JUDGE])
def test_each_request_repeats_the_previous_one_of_its_role_up_to_what_is_new(tmp_path: Path, role: Role) -> None:
    requests = [r for r in _requests(tmp_path) if r.role == role]
    if role == Role.JUDGE:
        requests = [r for r in requests if "success criterion" in str(r.messages[0]["content"])]
        stable = _judge_stable
    else:
        stable = _user_stable
    assert len(requests) >= 4  # two steps, two turns each: pairs within a step and across the step change
    for earlier, later in itertools.pairwise(requests):
        prefix = stable(earlier.messages)
        shared = _common(_text(earlier.messages), _text(later.messages))
        assert shared >= len(prefix), (role, _text(earlier.messages)[shared - 80 : shared + 80])
