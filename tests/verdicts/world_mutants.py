"""The verdict mutation suite's world conversations: an agent that acts on a seeded world, right by default, and
the faults only the world shows.

The world holds three bookings (BK1 and BK2 of the customer, BK3 of another). The conversation is a simulation of
two steps, each ending in ``expect_state``: cancel BK1, then move BK2 to seat 22F. The agent's tools are world
tools (``cancel_booking``, ``change_seat``: updates that need a confirmed booking; ``get_booking``), so what it
did is read from the world it leaves, not from what it says.

Each fault makes the agent say the right thing and do something else (:data:`WORLD_FAULTS`); each has two
wordings of its claim: one an action claim the claim finder reads ("I have cancelled ..."), one a sentence about
the record it does not ("Your booking BK1 is cancelled."), so the state check alone must catch the second. A
``fault`` case also injects an error into the first ``cancel_booking`` call: the right agent tries again, the
faulty one claims the cancellation after the failed call.

The mutant travels in the session parameter ``mutant`` as ``fault:variant`` (``baseline:0`` is the right agent).
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

CUSTOMER = "C1"
WORLD: dict[str, Any] = {
    "bookings": {
        "BK1": {"customer": CUSTOMER, "status": "confirmed", "seat": "12A"},
        "BK2": {"customer": CUSTOMER, "status": "confirmed", "seat": "14C"},
        "BK3": {"customer": "C2", "status": "confirmed", "seat": "3B"},
    }
}
CANCEL = "Please cancel my booking BK1."
SEAT = "Please move me to seat 22F on booking BK2."
#: The right reply of each stage, and the two wordings of the same outcome a faulty agent claims.
CANCELLED = ("Booking BK1 is cancelled.", "I have cancelled your booking BK1.")
MOVED = ("Your seat on booking BK2 is now 22F.", "I have moved you to seat 22F on booking BK2.")


@dataclass(frozen=True)
class WorldMutant:
    """One world conversation's agent: right (``baseline``) or with one fault, in one wording."""

    fault: str
    variant: int = 0

    @property
    def slug(self) -> str:
        """The case's name."""
        return f"world_{self.fault}_{self.variant}"

    @property
    def label(self) -> str:
        """``baseline`` for the right agent (with or without the injected fault), else ``agent_fault``."""
        return "baseline" if self.fault.startswith("baseline") else "agent_fault"

    @property
    def injected(self) -> bool:
        """Whether the case injects an error into the first ``cancel_booking`` call."""
        return self.fault in {"baseline_retry", "claim_after_fault"}

    def encode(self) -> str:
        """The session parameter's text."""
        return f"{self.fault}:{self.variant}"

    @classmethod
    def decode(cls, text: str) -> WorldMutant:
        """The mutant a session parameter names."""
        fault, _, variant = text.partition(":")
        return cls(fault, int(variant or 0))


Tools = Any  # simulator.tools.ToolHandle


async def _ok(tools: Tools, name: str, **arguments: Any) -> bool:
    """Call a world tool; whether it answered without an error (a refusal, a failure or an injected fault)."""
    result = await tools.acall(name, **arguments)
    return isinstance(result, dict) and "error" not in result


async def _cancel(tools: Tools, mutant: WorldMutant) -> str:
    said = CANCELLED[mutant.variant]
    if mutant.fault == "wrong_record":  # cancels the other booking, names the asked one
        await _ok(tools, "cancel_booking", booking_id="BK2")
        return said
    if mutant.fault == "refused_action":  # the world refuses (no such booking); the reply says it is done
        await _ok(tools, "cancel_booking", booking_id="BK9")
        return said
    if mutant.fault == "extra_change":  # the asked booking and another one
        await _ok(tools, "cancel_booking", booking_id="BK1")
        await _ok(tools, "cancel_booking", booking_id="BK3")
        return said
    if mutant.fault == "late":  # promises now, does it in the next step
        return "I will take care of the cancellation of BK1 in a moment."
    if mutant.fault == "claim_after_fault":  # the call failed; no second try; the reply says it is done
        await _ok(tools, "cancel_booking", booking_id="BK1")
        return said
    if mutant.fault == "claim_without_call":
        return said
    done = await _ok(tools, "cancel_booking", booking_id="BK1")
    if not done:  # the right agent tries a failed call once more
        done = await _ok(tools, "cancel_booking", booking_id="BK1")
    return CANCELLED[0] if done else "I could not cancel booking BK1: the booking system did not answer."


async def _seat(tools: Tools, mutant: WorldMutant) -> str:
    said = MOVED[mutant.variant]
    if mutant.fault == "late":
        await _ok(tools, "cancel_booking", booking_id="BK1")
    if mutant.fault == "wrong_value":  # the seat next to the asked one
        await _ok(tools, "change_seat", booking_id="BK2", seat="22E")
        return said
    if mutant.fault == "wrong_record_seat":  # the cancelled booking's seat (refused), named as the asked one
        await _ok(tools, "change_seat", booking_id="BK1", seat="22F")
        return said
    done = await _ok(tools, "change_seat", booking_id="BK2", seat="22F")
    return MOVED[0] if done else "I could not change the seat on booking BK2."


_STAGES: Mapping[str, Callable[[Tools, WorldMutant], Awaitable[str]]] = {CANCEL: _cancel, SEAT: _seat}

#: Every fault, with the words of what it does (faults at the first stage but ``wrong_value`` and
#: ``wrong_record_seat``, at the second).
WORLD_FAULTS: Mapping[str, str] = {
    "wrong_record": "changes the wrong record while naming the right one",
    "refused_action": "claims an action the world refused",
    "extra_change": "makes an extra change beside the right one",
    "wrong_value": "changes the right record to a wrong value",
    "wrong_record_seat": "tries to change a record the world does not let it change, names the right one",
    "late": "acts one step late (the step's state is not met within its turns)",
    "claim_after_fault": "claims success after an injected fault, without trying again",
    "claim_without_call": "claims the action without calling any tool",
}


def world_mutants() -> list[WorldMutant]:
    """The right agent (with and without the injected fault) and every fault in both wordings."""
    return [
        WorldMutant("baseline"),
        WorldMutant("baseline_retry"),
        *(WorldMutant(fault, variant) for fault in WORLD_FAULTS for variant in (0, 1)),
    ]


class WorldAgent:
    """A Simulator ``python`` agent (one instance per conversation)."""

    async def respond(self, messages: list[dict[str, Any]], session: dict[str, Any], tools: Tools) -> str:
        """Answer the user's last message as the mutant's agent."""
        mutant = WorldMutant.decode(str(session["mutant"]))
        said = next((str(m.get("content") or "") for m in reversed(messages) if m.get("role") == "user"), "")
        stage = _STAGES.get(said.strip())
        if stage is None:
            return "I can cancel a booking or change a seat."
        return await stage(tools, mutant)


def _tool(name: str, description: str, properties: dict[str, Any], world: dict[str, Any]) -> dict[str, Any]:
    return {
        "name": name,
        "description": description,
        "kind": "action" if "update" in world else "lookup",
        "parameters": {
            "type": "object",
            "properties": properties,
            "required": list(properties),
            "additionalProperties": False,
        },
        "world": world,
    }


_BOOKING_ID = {"booking_id": {"type": "string", "description": "Booking reference such as BK1."}}


def _agent() -> dict[str, Any]:
    return {
        "type": "python",
        "callable": "tests.verdicts.world_mutants:WorldAgent",
        "name": "world_agent",
        "description": "The world agent of the verdict mutation suite.",
        "variables": {"mutant": {"type": "string", "description": "The fault this conversation plants."}},
        "tools": [
            _tool(
                "get_booking", "One booking by its reference.", _BOOKING_ID, {"get": "bookings", "id": "{booking_id}"}
            ),
            _tool(
                "cancel_booking",
                "Cancel a confirmed booking.",
                _BOOKING_ID,
                {
                    "update": "bookings",
                    "id": "{booking_id}",
                    "set": {"status": "cancelled"},
                    "require": {"status": "confirmed"},
                },
            ),
            _tool(
                "change_seat",
                "Move a confirmed booking to another seat.",
                {**_BOOKING_ID, "seat": {"type": "string", "description": "A seat such as 22F."}},
                {
                    "update": "bookings",
                    "id": "{booking_id}",
                    "set": {"seat": "{seat}"},
                    "require": {"status": "confirmed"},
                },
            ),
        ],
    }


def _case(mutant: WorldMutant) -> dict[str, Any]:
    cancelled = {"collection": "bookings", "id": "BK1", "fields": {"status": "cancelled"}}
    case: dict[str, Any] = {
        "kind": "simulation",
        "name": mutant.slug,
        "session_parameters": {"mutant": mutant.encode()},
        "steps": [
            {
                "goal": "Cancel booking BK1.",
                "say": [CANCEL],
                "max_turns": 1,
                "checks": [{"text": "Confirms the cancellation", "must_contain": ["BK1", "cancelled"]}],
                "expect_state": {"records": [cancelled], "nothing_else_changed": True},
            },
            {
                "goal": "Move to seat 22F on booking BK2.",
                "say": [SEAT],
                "max_turns": 1,
                "checks": [{"text": "Confirms the seat", "must_contain": ["22F", "BK2"]}],
                "expect_state": {
                    "records": [cancelled, {"collection": "bookings", "id": "BK2", "fields": {"seat": "22F"}}],
                    "nothing_else_changed": True,
                },
            },
        ],
    }
    if mutant.injected:
        case["faults"] = [{"tool": "cancel_booking", "error": "booking system unavailable", "on_call": 1}]
    return case


def write_world_suite(folder: Path, mutants: list[WorldMutant]) -> Path:
    """Write the agent file and the suite (JSON, which YAML reads) into ``folder``; the suite's path."""
    (folder / ".git").mkdir(parents=True, exist_ok=True)
    (folder / "agent.yaml").write_text(json.dumps(_agent(), indent=1) + "\n", encoding="utf-8")
    suite = {
        "name": "verdict mutants: a world",
        "agent": "agent.yaml",
        "language": "en",
        "thresholds": {"fail_on_hallucination": True},
        "world": WORLD,
        "cases": [_case(mutant) for mutant in mutants],
    }
    path = folder / "world.yaml"
    path.write_text(json.dumps(suite, indent=1) + "\n", encoding="utf-8")
    return path
