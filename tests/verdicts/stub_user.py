"""The stub user model (``fake/user``): a :class:`~simulator.llm.FakeScript` callable that plays the user as its
prompt says, and plays it badly where its mutant (read from the session facts in its prompt) has a user fault.

It follows its prompt: in a simulation it sends the step's goal (each goal is a request of the base
conversation); in a scenario its goal lists the requests one per line, and it sends the next one each turn and
ends the conversation (goal reached) once all were sent and answered.
"""

from __future__ import annotations

import re
from typing import Any

from tests.verdicts.conversations import BASES, Base
from tests.verdicts.mutations import Mutant

_SESSION = re.compile(r"^- mutant: (.+)$", re.MULTILINE)
_STEP_GOAL = re.compile(r"^Your goal right now: (.+)$", re.MULTILINE)
_GOAL = re.compile(r"^Your goal: (.+?)(?=\n#|\n\n|\Z)", re.MULTILINE | re.DOTALL)
_GUIDE = re.compile(r"^# Private guidance \(never quote it\)\n(.+?)(?=\n\n#|\Z)", re.MULTILINE | re.DOTALL)
_ITEM = re.compile(r"^\s*\d+\)\s*")


def scenario_goal(base: Base) -> str:
    """A scenario's goal for the stub user: the base's requests, one numbered line each."""
    return "\n".join(f"{number}) {stage.request}" for number, stage in enumerate(base.stages, 1))


def _move(message: str, *, done: bool = False, reason: str = "") -> dict[str, Any]:
    return {"message": message, "done": done, "reason": reason or "asks for the next thing"}


def user_reply(messages: list[dict[str, Any]]) -> dict[str, Any]:
    """The user's next move (a ``UserMove`` as JSON) for the user model's ``messages``."""
    # The system prompt, and in a simulation the step's goal and guide in a last system message after the chat.
    system = "\n".join(str(message["content"]) for message in messages if message["role"] == "system")
    found = _SESSION.search(system)
    if found is None:
        raise ValueError("the stub user's prompt names no mutant in its session facts")
    mutant = Mutant.decode(found.group(1).strip())
    base = BASES[mutant.base]
    sent = sum(1 for message in messages[1:] if message["role"] == "assistant")
    step_goal = _STEP_GOAL.search(system)
    if step_goal is not None:
        request = step_goal.group(1).strip()
        number = next(n for n, stage in enumerate(base.stages, 1) if stage.request == request)
    else:
        goal = _GOAL.search(system)
        requests = [_ITEM.sub("", line) for line in (goal.group(1) if goal else "").splitlines() if line.strip()]
        if sent >= len(requests):
            return _move("", done=True, reason="goal_reached: every request was answered")
        number, request = sent + 1, requests[sent]
    if mutant.user and mutant.user_stage == number:
        guide = _GUIDE.search(system)
        return _slip(mutant, base, number, request, guide.group(1).strip() if guide else "")
    return _move(request)


def _slip(mutant: Mutant, base: Base, number: int, request: str, guide: str) -> dict[str, Any]:
    """The user's fault at this stage, instead of the request or along with it."""
    stage = base.stages[number - 1]
    along = mutant.user_style == "along"
    if mutant.user == "ended_early":
        return _move(base.farewells[mutant.user_variant], done=True, reason="goal_reached: the agent helped")
    if mutant.user == "broke_character":
        line = base.broke_character[mutant.user_variant]
        return _move(f"{request} {line}" if along else line)
    if mutant.user == "invented_fact":
        right, invented = stage.invented
        return _move(f"{request} {base.invented_aside}" if along else request.replace(right, invented))
    if mutant.user == "leaked_guide":
        return _move(f"{request} {guide}" if along else guide)
    raise ValueError(f"unknown user fault {mutant.user!r}")
