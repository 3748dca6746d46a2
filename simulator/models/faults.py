"""Faults on purpose: tool calls made to fail, time out or return something else, to see whether the agent holds up.

A fault is declared on a tool (``tools[i].faults`` in the agent config) or on a suite or a case (``faults:``, each
entry naming its ``tool:``, or ``"*"`` for every tool). An entry has one effect (``error``, ``timeout`` or
``result``) and says when it fires: at a seeded ``rate`` (the same seed fires on the same calls), on the tool's
Nth call of the conversation (``on_call``), or on every call; ``arguments`` narrows it to matching calls, as tool
fakes match them. Faults are injected in test mode only, and on world tools (which touch nothing real) in live mode
too: a real tool run with ``--live`` is never faulted.
"""

from __future__ import annotations

import json
from typing import Literal

from pydantic import Field, JsonValue, model_validator

from simulator.models._base import Identifier, StrictModel, Text, located_error

#: What a fault does to the call.
FaultEffect = Literal["error", "timeout", "result"]


def _unset(value: object) -> bool:
    return value is None


class Fault(StrictModel):
    """A fault on one tool: what happens to the call, and on which calls."""

    error: Text | None = Field(
        default=None,
        description="The call fails with this message (the agent gets it as the tool's error).",
        exclude_if=_unset,
    )
    timeout: Literal[True] | None = Field(
        default=None,
        description="The call is reported as timed out, at once (nothing waits): the agent is told the tool did "
        "not answer in time.",
        exclude_if=_unset,
    )
    result: JsonValue = Field(
        default=None, description="The tool returns this instead of its own answer (a wrong or odd result)."
    )
    rate: float | None = Field(
        default=None,
        ge=0,
        le=1,
        description="Share of the matching calls that fail (0 to 1), decided from the conversation's seed, the "
        "tool's name and the call's number: the same seed faults the same calls. Unset (and no on_call): every call.",
        exclude_if=_unset,
    )
    on_call: int | None = Field(
        default=None,
        ge=1,
        description="Fault only the tool's Nth call in the conversation (from 1).",
        exclude_if=_unset,
    )
    arguments: dict[str, JsonValue] | None = Field(
        default=None,
        description="Arguments a call must have to be faulted, matched as tool fakes match them; unset: any call.",
        exclude_if=_unset,
    )
    match: Literal["exact", "subset"] = Field(
        default="subset",
        description="subset: the listed arguments must be equal, others may be present; exact: all must be equal.",
    )

    @property
    def effect(self) -> FaultEffect:
        """Which effect the fault has."""
        if self.error is not None:
            return "error"
        return "timeout" if self.timeout else "result"

    def describe(self) -> str:
        """The fault in a few words, as reports name it: ``error 'database down'``, ``timeout``, ``result {...}``."""
        if self.error is not None:
            return f"error {self.error!r}"
        if self.timeout:
            return "timeout"
        return f"result {_short_json(self.result)}"

    def when(self) -> str:
        """When the fault fires, in words: ``rate 0.3``, ``call 2``, ``every call``, and the arguments it needs."""
        parts = []
        if self.rate is not None:
            parts.append(f"rate {self.rate:g}")
        if self.on_call is not None:
            parts.append(f"call {self.on_call}")
        if not parts:
            parts.append("every call")
        if self.arguments is not None:
            parts.append(f"arguments {_short_json(self.arguments)}")
        return ", ".join(parts)

    @model_validator(mode="after")
    def _one_effect(self) -> Fault:
        given = [key for key in ("error", "timeout") if getattr(self, key) is not None]
        # A stored fault carries `result: null` beside its other effect: only a result set on its own is the effect.
        if "result" in self.model_fields_set and (self.result is not None or not given):
            given.append("result")
        if not given:
            raise ValueError(
                "a fault needs one effect: `error: TEXT` (the call fails), `timeout: true` (the call times out) or "
                "`result: ...` (the tool returns this instead)"
            )
        if len(given) > 1:
            raise located_error(f"a fault has one effect; this one sets {' and '.join(given)}: keep one", given[1])
        if self.rate is not None and self.on_call is not None:
            raise located_error("a fault fires at a `rate` or `on_call`, not both: keep one", "on_call")
        return self


class ToolFault(Fault):
    """A fault declared on a suite or a case: it names the tool it applies to, or ``"*"`` for every tool."""

    tool: Identifier | Literal["*"] = Field(description="The tool whose calls are faulted, or '*' for every tool.")

    def applies_to(self, name: str) -> bool:
        """Whether calls of ``name`` may be faulted by this entry."""
        return self.tool in ("*", name)


def _short_json(value: JsonValue) -> str:
    text = json.dumps(value, ensure_ascii=False, sort_keys=True)
    return text if len(text) <= 60 else text[:59] + "…"
