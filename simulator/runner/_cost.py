"""A run's cost limit (``--max-cost``): what its models cost so far, added up as each conversation is stored,
and the notes a person reads before a limited run starts.

The cost counted is every model role's (the agent's when Simulator calls its model, the simulated user's, the
judge's, simulated tools'), as the stored results keep it: a resumed run counts what the processes before it
stored too, so the limit is the whole run's. It is checked as each conversation is stored: the conversations in
flight when the limit is reached are stopped as by SIGTERM (a resume continues them).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from simulator.llm import has_price
from simulator.loading import LoadedSuite
from simulator.models.run import MODEL_ROLES, RunSettings
from simulator.models.scores import CaseResult
from simulator.runner._case import model_roles

__all__ = ["CostAccount", "cost_notes"]


class CostAccount:
    """What a run's models cost so far against its limit. ``spent`` is None once a conversation's cost is
    unknown (a model litellm cannot price): the limit can no longer be told reached."""

    def __init__(self, limit: float, results: Iterable[CaseResult] = ()) -> None:
        self.limit = limit
        self.spent: float | None = 0.0
        for result in results:
            self.add(result)

    def add(self, result: CaseResult) -> None:
        """Count one stored conversation's cost (every role's)."""
        for usage in result.transcript.usage.values():
            self.spent = None if self.spent is None or usage.cost is None else self.spent + usage.cost

    @property
    def reached(self) -> bool:
        """Whether what was spent reached the limit (never when it is unknown)."""
        return self.spent is not None and self.spent >= self.limit


def cost_notes(suites: Sequence[LoadedSuite], settings: RunSettings) -> list[str]:
    """What a person should know before a run with a cost limit starts: the models whose price litellm does not
    know, whose cost the limit cannot count (said, never ignored in silence)."""
    if settings.max_cost is None:
        return []
    unpriced: dict[str, None] = {}
    for loaded in suites:
        roles = model_roles(loaded, settings)
        for role in MODEL_ROLES:
            model = getattr(roles, role).model
            if model and has_price(model) is False:
                unpriced[f"{model} ({role})"] = None
    if not unpriced:
        return []
    return [
        f"--max-cost ${settings.max_cost:g} cannot be enforced: litellm's price list has no price for "
        f"{', '.join(unpriced)}, so the run's cost is unknown once it is called; the run will not stop on cost"
    ]
