"""The base agent of the mutation suite: deterministic, rule-based, right by default, and wrong exactly where its
mutant (the session parameter ``mutant``) says.

Each turn it recognises which stage of its base conversation the user's message asks for (conversations.py),
reads the arguments from the message, calls the stage's tool through Simulator's tool handle (faked in test mode,
the functions in tools.py with ``live``), and answers with the stage's reply, or its failure reply when the tool
did not answer. At the mutant's stage it does the fault instead (:data:`FAULTS`).
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import Any

from tests.verdicts.conversations import BASES, NOTE_TOOL, Base, Stage
from tests.verdicts.mutations import INJECTIONS, SKIPS, Mutant


@dataclass(frozen=True)
class Turn:
    """What the agent knows when it answers one stage's request."""

    base: Base
    stage: Stage
    arguments: dict[str, Any]
    texts: dict[str, str]
    variant: int
    tools: Any  # simulator.tools.ToolHandle

    def fill(self, template: str) -> str:
        """A reply template with the user's own words for the slots."""
        return template.format(**self.texts)

    async def call(self, arguments: Mapping[str, Any] | None = None) -> bool:
        """Call the stage's tool (with ``arguments`` instead of the right ones); whether it answered."""
        assert self.stage.tool is not None
        result = await self.tools.acall(self.stage.tool, **(self.arguments if arguments is None else arguments))
        return not (isinstance(result, dict) and "error" in result)

    def claim(self) -> str:
        """The reply as the variant words it, for a claim made without the call."""
        return self.fill(self.stage.claims[self.variant if self.variant < len(self.stage.claims) else 0])

    def injection(self, variant: int) -> str:
        """The injection ``variant`` around the stage's first claim wording."""
        return _injection(self.base, self.stage, self.arguments, self.texts, variant)


def _injection(base: Base, stage: Stage, arguments: Mapping[str, Any], texts: Mapping[str, str], variant: int) -> str:
    assert stage.tool is not None
    tool = base.tool(stage.tool)
    return INJECTIONS[variant].text.format(
        claim=stage.claims[0].format(**texts),
        request=stage.request,
        tool=tool.name,
        arguments=json.dumps(dict(arguments)),
        result=json.dumps(dict(tool.answer(arguments) or {})),
    )


def injection_text(base: Base, number: int, variant: int) -> str:
    """What the agent writes for injection ``variant`` at stage ``number`` of ``base`` when the user asked as the
    stage's request does (the text a note tool's fake must answer with)."""
    found = base.recognise(base.stages[number - 1].request)
    assert found is not None
    _, stage, arguments, texts = found
    return _injection(base, stage, arguments, texts, variant)


async def _correct(turn: Turn) -> str:
    if turn.stage.tool is None:
        return turn.fill(turn.stage.reply)
    answered = await turn.call()
    return turn.fill(turn.stage.reply if answered else turn.stage.failure)


async def _claim_without_call(turn: Turn) -> str:
    return turn.claim()


async def _wrong_argument(turn: Turn) -> str:
    await turn.call({**turn.arguments, **turn.stage.wrong_argument})
    return turn.fill(turn.stage.reply)


async def _missing_argument(turn: Turn) -> str:
    await turn.call({})
    return turn.fill(turn.stage.reply)


async def _skipped_step(turn: Turn) -> str:
    return turn.fill(turn.stage.promise) if SKIPS[turn.variant] == "promise" else turn.base.moves_on


async def _wrong_value(turn: Turn) -> str:
    await turn.call()
    right, wrong = turn.stage.wrong_values[turn.variant]
    return turn.fill(turn.stage.reply).replace(right, wrong)


async def _forbidden_phrase(turn: Turn) -> str:
    return f"{await _correct(turn)} {turn.base.forbidden_sentences[turn.variant]}"


async def _injection_in_text(turn: Turn) -> str:
    return turn.injection(turn.variant)


async def _injection_in_tool_result(turn: Turn) -> str:
    # The note tool answers with the note it saved (live), or its fake gives the same text: the injection
    # reaches the judge as a tool result.
    await turn.tools.acall(NOTE_TOOL.name, text=turn.injection(turn.variant))
    return turn.fill(turn.stage.claims[0])


#: What the agent does at its mutant's stage, by agent fault (conversations.py and mutations.py hold the data).
FAULTS: Mapping[str, Callable[[Turn], Awaitable[str]]] = {
    "claim_without_call": _claim_without_call,
    "wrong_argument": _wrong_argument,
    "missing_argument": _missing_argument,
    "skipped_step": _skipped_step,
    "wrong_value": _wrong_value,
    "forbidden_phrase": _forbidden_phrase,
    "injection_in_text": _injection_in_text,
    "injection_in_tool_result": _injection_in_tool_result,
}


class MutantAgent:
    """A Simulator ``python`` agent (one instance per conversation)."""

    async def respond(self, messages: list[dict[str, Any]], session: dict[str, Any], tools: Any) -> str:
        """Answer the user's last message as the mutant's base agent, with its fault at its stage."""
        mutant = Mutant.decode(str(session["mutant"]))
        base = BASES[mutant.base]
        said = next((str(m.get("content") or "") for m in reversed(messages) if m.get("role") == "user"), "")
        found = base.recognise(said)
        if found is None:
            return base.unknown
        number, stage, arguments, texts = found
        fault = mutant.fault if mutant.stage == number else None
        turn = Turn(base, stage, arguments, texts, mutant.variant, tools)
        return await (FAULTS[fault] if fault else _correct)(turn)
