"""Budgets: what one conversation of the agent may take (its latency per turn and in all, its tokens and cost,
the number of turns; in a voice conversation, how soon its audio starts and ends), checked as deterministic scores
once the conversation ends.

A suite sets ``budgets:`` for every case; a case's ``budgets:`` replaces the suite's figures one by one (a figure
the case leaves out keeps the suite's). Latencies are the agent's own time, in seconds as every other time a
suite sets (``timeout``); tokens and cost are the agent's usage as it reports it.
"""

from __future__ import annotations

from typing import Annotated

from pydantic import Field, model_validator

from simulator.models._base import StrictModel


def _unset(value: object) -> bool:
    """A figure the budgets leave out is left out of what is stored: a suite hashes as it did before."""
    return value is None


#: A number of seconds a budget allows (a whole number is read as seconds too).
BudgetSeconds = Annotated[float, Field(gt=0, le=86_400)]


class Budgets(StrictModel):
    """What one conversation of the agent may take. Each figure set is a required check (metric ``budget``):
    met within it, not met over it, naming the figure and the budget."""

    turn_seconds: BudgetSeconds | None = Field(
        default=None,
        description="Seconds the agent may take to answer one user turn (its reply, tool calls included).",
        exclude_if=_unset,
    )
    conversation_seconds: BudgetSeconds | None = Field(
        default=None,
        description="Seconds the agent may take over the whole conversation (its replies added up; the simulated "
        "user's and the judge's time are not counted).",
        exclude_if=_unset,
    )
    tokens: int | None = Field(
        default=None,
        ge=1,
        description="Tokens (prompt + completion) the agent may use over the conversation, as it reports them "
        "(litellm agents do; an agent that reports none leaves the check unsure).",
        exclude_if=_unset,
    )
    cost: float | None = Field(
        default=None,
        gt=0,
        description="US dollars the agent's model calls may cost over the conversation, as litellm prices them "
        "(an agent that reports no usage, or a model litellm cannot price, leaves the check unsure).",
        exclude_if=_unset,
    )
    turns: int | None = Field(
        default=None,
        ge=1,
        le=100,
        description="User turns the conversation may take (a check, not a cap: max_turns caps it).",
        exclude_if=_unset,
    )
    first_audio_seconds: BudgetSeconds | None = Field(
        default=None,
        description="Voice: seconds from the end of the user's audio to the agent's first audio, each turn (how "
        "long the caller waits in silence); n/a in a chat conversation.",
        exclude_if=_unset,
    )
    end_audio_seconds: BudgetSeconds | None = Field(
        default=None,
        description="Voice: seconds from the end of the user's audio to the end of the agent's audio, each turn (a "
        "turn the user interrupted ended when the user cut in: it counts only when over the budget by then); n/a in "
        "a chat conversation.",
        exclude_if=_unset,
    )

    @model_validator(mode="after")
    def _sets_something(self) -> Budgets:
        if self.is_empty():
            raise ValueError(
                "budgets sets no figure: give turn_seconds, conversation_seconds, tokens, cost, turns, "
                "first_audio_seconds or end_audio_seconds (or remove it)"
            )
        return self

    def over(self, base: Budgets | None) -> Budgets:
        """These budgets laid over ``base`` (a suite's): each figure set here replaces the base's, the others
        are kept."""
        if base is None:
            return self
        mine = {name: value for name, value in self if value is not None}
        return base.model_copy(update=mine)

    def is_empty(self) -> bool:
        """Whether no figure is set (nothing to check)."""
        return all(value is None for _, value in self)
