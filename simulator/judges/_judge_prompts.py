"""The judge's prompts: the built-in ones, the placeholders each may use, and the checks an override must pass."""

from __future__ import annotations

import functools
import re
import string
import types
from collections.abc import Mapping
from importlib import resources

from simulator.errors import JudgeError

#: Every judge prompt by name, with the placeholders its question fills (an override may use any of them).
PROMPT_PLACEHOLDERS: Mapping[str, frozenset[str]] = types.MappingProxyType(
    {
        "reference_answer": frozenset({"question", "answer", "reference", "threshold"}),
        "side_claim": frozenset({"question", "answer", "claim"}),
        "semantic_match": frozenset({"expected", "actual", "context"}),
        "hallucination": frozenset({"turn", "context"}),
        "hallucination_batch": frozenset({"context", "conversation", "turns"}),
        "goal_satisfaction": frozenset({"goal", "conversation"}),
        "expectation": frozenset({"expectation", "conversation"}),
        "user_fidelity": frozenset({"brief", "conversation", "turns"}),
        "hallucination_fidelity_batch": frozenset({"context", "brief", "conversation", "turns", "user_turns"}),
        "conversation_review": frozenset({"context", "goal", "conversation", "turns"}),
        "conversation_review_fidelity": frozenset({"context", "brief", "goal", "conversation", "turns", "user_turns"}),
    }
)

#: The placeholders of each question that hold text (from the conversation or the test) by the name of the fenced
#: section they are filled with: ``{conversation}`` becomes ``<conversation-TOKEN>`` ... ``</conversation-TOKEN>``.
#: The others (turn numbers, the pass mark) are written by Simulator and filled as they are.
SECTIONS: Mapping[str, Mapping[str, str]] = types.MappingProxyType(
    {
        "reference_answer": {"question": "question", "answer": "agent_answer", "reference": "reference_answer"},
        "side_claim": {"question": "question", "answer": "agent_answer", "claim": "claim"},
        "semantic_match": {
            "expected": "expected_message",
            "actual": "actual_message",
            "context": "conversation_before",
        },
        "hallucination": {"turn": "agent_turn", "context": "context"},
        "hallucination_batch": {"context": "context", "conversation": "conversation"},
        "goal_satisfaction": {"goal": "user_goal", "conversation": "conversation"},
        "expectation": {"expectation": "expectation", "conversation": "conversation"},
        "user_fidelity": {"brief": "user_brief", "conversation": "conversation"},
        "hallucination_fidelity_batch": {"context": "context", "brief": "user_brief", "conversation": "conversation"},
        "conversation_review": {"context": "context", "goal": "user_goal", "conversation": "conversation"},
        "conversation_review_fidelity": {
            "context": "context",
            "brief": "user_brief",
            "goal": "user_goal",
            "conversation": "conversation",
        },
    }
)


# Prompts

_HEADER = re.compile(r"\A\s*<!--.*?-->\s*", re.DOTALL)
_FIELD_BASE = re.compile(r"[.\[]")


def builtin_prompt(name: str) -> str:
    """The text of the built-in prompt ``name``, header comment included (as shipped in ``prompts/``)."""
    if name not in PROMPT_PLACEHOLDERS:
        raise JudgeError(_unknown_prompt(name))
    return resources.files("simulator.judges").joinpath("prompts", f"{name}.md").read_text(encoding="utf-8")


def check_prompt(name: str, text: str, *, origin: str = "override") -> str:
    """Check a prompt template for question ``name`` and return it without its header comment.

    Raises :class:`JudgeError` for an unknown prompt name, an empty template, unbalanced braces, positional
    ``{}`` fields, or a placeholder the question does not fill (naming it and the ones it may use).
    """
    if name not in PROMPT_PLACEHOLDERS:
        raise JudgeError(_unknown_prompt(name))
    allowed = PROMPT_PLACEHOLDERS[name]
    where = f"judge prompt {name!r} ({origin})"
    template = _HEADER.sub("", text, count=1)
    if not template.strip():
        raise JudgeError(f"{where} is empty")
    try:
        fields = [field for _, field, _, _ in string.Formatter().parse(template) if field is not None]
    except ValueError as exc:
        raise JudgeError(f"{where} is not a valid template ({exc}); write literal braces as {{{{ and }}}}") from None
    for field in fields:
        base = _FIELD_BASE.split(field, maxsplit=1)[0]
        if not base or base.isdigit():
            raise JudgeError(
                f"{where} has a positional placeholder {{{field}}}; use the named placeholders "
                f"{_names(allowed)}, and write literal braces as {{{{ and }}}}"
            )
        if not base.isidentifier():
            raise JudgeError(
                f"{where} has {{{field}}}, which is not a placeholder: write literal braces as {{{{ and }}}} "
                f"(the placeholders are {_names(allowed)})"
            )
        if base not in allowed:
            raise JudgeError(_not_filled(where, base, allowed))
    return template


@functools.cache
def builtin_template(name: str) -> str:
    """The built-in prompt ``name``, checked as an override would be."""
    return check_prompt(name, builtin_prompt(name), origin="built-in")


#: The prompts whose older layout a replay may still find in a recording (``prompts/older/``).
OLDER_LAYOUTS = frozenset({"conversation_review", "conversation_review_fidelity"})


@functools.cache
def older_template(name: str) -> str:
    """The built-in prompt ``name`` as recordings made before its current layout hold it (``prompts/older/``),
    without its header comment: asked only by a replay that does not find the current request."""
    if name not in OLDER_LAYOUTS:
        raise JudgeError(f"judge prompt {name!r} has no older layout")
    folder = resources.files("simulator.judges").joinpath("prompts", "older")
    return check_prompt(name, folder.joinpath(f"{name}.md").read_text(encoding="utf-8"), origin="built-in, older")


def _unknown_prompt(name: str) -> str:
    return f"there is no judge prompt {name!r}; the judge prompts are {', '.join(sorted(PROMPT_PLACEHOLDERS))}"


def _names(placeholders: frozenset[str]) -> str:
    return ", ".join(f"{{{name}}}" for name in sorted(placeholders))


def _not_filled(where: str, placeholder: str, allowed: frozenset[str]) -> str:
    return f"{where} uses the placeholder {{{placeholder}}}, which its question does not fill: use {_names(allowed)}"


class PromptValues(dict[str, str]):
    """The values a template is filled with; a placeholder without one is a JudgeError naming it."""

    def __init__(self, where: str, values: Mapping[str, str]) -> None:
        super().__init__(values)
        self.where = where

    def __missing__(self, key: str) -> str:
        raise JudgeError(_not_filled(self.where, key, frozenset(self)))
