"""An example plugin: the ``echo`` agent type, the ``polite`` scorer, the ``txt`` report format and the ``orders``
tool backend.

Everything it uses of Simulator is public: ``simulator.agents`` (the adapter's input and reply),
``simulator.judges`` (what a scorer reads), ``simulator.models.scores`` (what it returns) and
``simulator.models.run`` (what a report renders).
"""

from __future__ import annotations

from typing import Any

from simulator.agents import AgentInput, AgentReply
from simulator.judges import ScoringInput
from simulator.models.run import RunRecord, StoredResult
from simulator.models.scores import Score


class EchoAgent:
    """Answers every user message with the message itself, after a prefix from the agent's ``options``."""

    def __init__(self, prefix: str) -> None:
        self.prefix = prefix

    async def respond(self, request: AgentInput) -> AgentReply:
        """The last user message, echoed; a message naming an order (``ORD-...``) is looked up first."""
        said = next((m.get("content") or "" for m in reversed(request.messages) if m.get("role") == "user"), "")
        order = next((word for word in said.split() if word.startswith("ORD-")), None)
        if order is not None and "lookup_order" in request.tools.declared:
            found = await request.tools.acall("lookup_order", order_id=order)
            return AgentReply(messages=[f"{self.prefix}{order} is {found}"])
        return AgentReply(messages=[f"{self.prefix}{said}"])

    async def aclose(self) -> None:
        """Nothing to release."""


def make_echo_agent(config: Any, *, llm: Any, code_folders: Any) -> EchoAgent:
    """The factory Simulator calls for ``agent: {type: echo, options: {prefix: ...}}``."""
    return EchoAgent(str(config.options.get("prefix", "")))


async def polite(target: ScoringInput) -> list[Score]:
    """Met when every reply of the agent says "please"; the evidence is the first reply that does not."""
    rude = [text for reply in target.replies for text in reply.messages if "please" not in text.lower()]
    return [
        Score(
            metric="polite",
            check="every reply says please",
            source="deterministic",
            verdict="not_met" if rude else "met",
            reason=f"this reply does not: {rude[0]!r}" if rude else "every reply says please",
        )
    ]


def orders(tool: Any, arguments: dict[str, Any], earlier: list[Any]) -> dict[str, Any]:
    """A stand-in order service for test mode: every order is shipped, except ORD-0 which does not exist."""
    if arguments.get("order_id") == "ORD-0":
        return {"error": "no such order"}
    return {"order_id": arguments.get("order_id"), "status": "shipped"}


def render_txt(record: RunRecord, results: list[StoredResult]) -> str:
    """One line per conversation: case, persona, outcome."""
    lines = [f"run {record.id}"]
    lines += [f"{stored.case} | {stored.persona or '-'} | {stored.outcome}" for stored in results]
    return "\n".join(lines) + "\n"


render_txt.suffix = "txt"  # type: ignore[attr-defined]
