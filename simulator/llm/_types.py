"""The client's result types: roles, replies, tool calls, and the error for unusable structured output."""

from __future__ import annotations

import json
from enum import StrEnum
from typing import Any

from pydantic import BaseModel, ConfigDict

from simulator.errors import ModelError
from simulator.models.transcript import Usage

__all__ = ["Completion", "Role", "StructuredOutputError", "ToolCallRequest", "Usage"]


class Role(StrEnum):
    """The roles that call models; each has its own settings, concurrency limit and account. ``voice`` and
    ``transcriber`` are the speech roles of voice conversations: text to speech and speech to text."""

    AGENT = "agent"
    USER = "user"
    JUDGE = "judge"
    VOICE = "voice"
    TRANSCRIBER = "transcriber"


class ToolCallRequest(BaseModel):
    """One tool call the model asked for.

    ``arguments`` is the parsed JSON object. When the model sent arguments that are not a JSON object, they are
    kept in ``raw_arguments``, ``arguments`` is empty and ``arguments_error`` says what was wrong, so a judge can
    count the call as malformed instead of the run crashing.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    id: str
    name: str
    arguments: dict[str, Any]
    raw_arguments: str
    arguments_error: str | None = None

    @property
    def malformed(self) -> bool:
        """True when the arguments were not a valid JSON object."""
        return self.arguments_error is not None

    @classmethod
    def parse(cls, id: str, name: str, raw_arguments: str | None) -> ToolCallRequest:
        """Build from the provider's fields; never raises on bad arguments."""
        raw = raw_arguments or ""
        if not raw.strip():
            # Some providers send "" for a tool without parameters: that is an empty object, not an error.
            return cls(id=id, name=name, arguments={}, raw_arguments=raw)
        try:
            parsed = json.loads(raw)
        except json.JSONDecodeError as exc:
            return cls(id=id, name=name, arguments={}, raw_arguments=raw, arguments_error=f"not valid JSON: {exc}")
        if not isinstance(parsed, dict):
            error = f"expected a JSON object, got {type(parsed).__name__}"
            return cls(id=id, name=name, arguments={}, raw_arguments=raw, arguments_error=error)
        return cls(id=id, name=name, arguments=parsed, raw_arguments=raw)


class Completion(BaseModel):
    """A model's reply to one :meth:`~simulator.llm.LLMClient.complete` call.

    ``content`` is the text (``None`` when the model only called tools); ``raw_text`` is the same text as
    received but never ``None`` (empty when there was none), for code that quotes or parses the reply.
    ``model`` is the model string configured for the role. ``usage`` covers this call only.

    ``cached`` is True when the reply came from the :class:`~simulator.llm.RequestCache` instead of the model:
    then no request was made, ``cost`` and ``usage.cost`` are 0.0 (nothing was spent), the token counts are
    those of the call that was stored, and ``usage.cached_calls`` is 1 with ``usage.cached_cost`` the stored
    call's cost (what the reply cost to produce the first time).
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    content: str | None
    tool_calls: list[ToolCallRequest]
    finish_reason: str | None
    usage: Usage
    model: str
    cost: float | None
    raw_text: str
    cached: bool = False


class UnrecordedRequest(ModelError):
    """A replayed conversation made a model request its cassette does not hold, and no model may answer it
    (``simulator replay`` without ``--judge-model``): the question is not judged, which is never a failure."""


class StructuredOutputError(ModelError):
    """The model did not produce valid structured output within the allowed attempts.

    ``raw`` is the text of the last reply, kept for the report; ``error`` is why it was rejected.
    """

    def __init__(self, message: str, *, raw: str, error: str) -> None:
        super().__init__(message)
        self.raw = raw
        self.error = error
