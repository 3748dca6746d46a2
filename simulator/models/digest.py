"""A failure digest as data: the conversations that did not pass, grouped by cause. Pure data.

Built by :func:`simulator.analysis.digest.build_digest` (where the grouping rules are), rendered by
:mod:`simulator.reports.digest_report`.
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from simulator.models._base import DataModel
from simulator.models.scores import Outcome

__all__ = [
    "NO_SUGGESTION_MODEL",
    "SUGGESTIONS_HEADING",
    "CaseRef",
    "Digest",
    "Example",
    "FailureGroup",
    "FailureKind",
    "ReasonCount",
    "Suggestion",
]

#: The heading model suggestions are shown under, in every rendering.
SUGGESTIONS_HEADING = "Model suggestions (not verified)"
#: The digest's note when no judge model is configured.
NO_SUGGESTION_MODEL = (
    "no suggestions: suggesting changes to the agent's instructions needs a judge model "
    "(set models.judge in the suite or pass --judge-model)"
)

#: What kind of cause a group is (see the module docstring).
FailureKind = Literal["error", "step", "score", "unsure", "reason", "user"]

#: Each kind's heading; a group's title starts with it.
_KIND_TITLE: dict[FailureKind, str] = {
    "error": "Error",
    "step": "Step not completed",
    "score": "Check failed",
    "unsure": "Not judged / unsure",
    "reason": "Reason",
    "user": "Simulated user (user_error, not the agent's failure)",
}


class CaseRef(DataModel):
    """One stored conversation: which run, case, persona and repeat."""

    run_id: str
    key: str
    suite: int
    case: str
    persona: str | None = None
    repeat: int = 0
    outcome: Outcome

    def describe(self) -> str:
        """``"<case> [persona <p>] (repeat <r>)"``, the repeat counted from 1 as in every view (``repeat`` is
        stored from 0)."""
        persona = f" [persona {self.persona}]" if self.persona is not None else ""
        return f"{self.case}{persona} (repeat {self.repeat + 1})"


class ReasonCount(DataModel):
    """A reason a group's failures gave, and how many of them gave it."""

    text: str
    count: int


class Example(DataModel):
    """One turn that shows a group's failure: the user message before it and the agent's message(s)."""

    case: CaseRef
    turn: int | None = None
    step: int | None = None
    user: str | None = Field(default=None, description="The user message (or '[event <name>]') before the reply.")
    agent: list[str] = Field(default_factory=list, description="The agent's messages in that turn.")
    tools: list[str] = Field(default_factory=list, description="Tool calls of the turn, as 'name [status]'.")


class Suggestion(DataModel):
    """A judge model's proposed change to the agent's instructions for one group: never verified."""

    source: Literal["model suggestion"] = "model suggestion"
    model: str | None = None
    change: str = ""
    rationale: str = ""
    error: str | None = Field(default=None, description="Set when the model gave no usable suggestion.")

    @property
    def failed(self) -> bool:
        """Whether asking the model failed."""
        return self.error is not None


class FailureGroup(DataModel):
    """Failures with one cause: how many, in which conversations, why, examples, and maybe a suggestion."""

    kind: FailureKind
    label: str
    name: str
    count: int = Field(description="Conversations with this cause.")
    occurrences: int = Field(description="Causes counted (a conversation can have several, e.g. turns).")
    cases: list[CaseRef] = Field(default_factory=list)
    reasons: list[ReasonCount] = Field(default_factory=list)
    examples: list[Example] = Field(default_factory=list)
    suggestion: Suggestion | None = None

    @property
    def key(self) -> tuple[FailureKind, str, str]:
        """``(kind, label, name)``: what the failures were grouped by."""
        return self.kind, self.label, self.name

    def title(self) -> str:
        """The group in words, e.g. ``"Step not completed: give the order number (goal_achievement)"``."""
        name = "" if self.name == self.kind else f" ({self.name})"
        return f"{_KIND_TITLE[self.kind]}: {self.label}{name}"


class Digest(DataModel):
    """The results that did not pass, grouped by cause (see the module docstring)."""

    results: int = Field(description="Stored results read.")
    not_passed: int = Field(description="Of those, results whose outcome is fail, error or unsure.")
    groups: list[FailureGroup] = Field(default_factory=list)
    note: str | None = None
