"""Faults on purpose: which call a declared fault answers, and how the call's record says so.

The router asks :class:`FaultInjector` about every call before anything else answers it (a fake, a simulation, a
world tool). Entries are tried case first, then suite, then the tool's own; the first that fires answers. A
``rate`` is decided from the conversation's seed, the tool's name, the call's number and the entry, never from a
shared random generator, so concurrent conversations (and repeats, shards, workers) fault exactly the calls the
same seed faults anywhere.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from simulator.models.agent import ToolDeclaration
from simulator.models.faults import Fault, ToolFault
from simulator.models.transcript import ToolCallRecord

__all__ = ["FaultEntry", "FaultInjector", "fault_entries", "fault_fires", "inject"]


@dataclass(frozen=True)
class FaultEntry:
    """One declared fault, where it was declared (``label``) and the tool it applies to (``"*"``: every tool)."""

    label: str
    tool: str
    fault: Fault

    def describe(self) -> str:
        """Which entry and what it does, as the call's record keeps it."""
        return f"{self.label}: {self.fault.describe()} ({self.fault.when()})"


def fault_entries(
    case_faults: Sequence[ToolFault] = (),
    suite_faults: Sequence[ToolFault] = (),
    declared: Sequence[ToolDeclaration] = (),
) -> list[FaultEntry]:
    """Every fault of a conversation in the order they are tried: the case's, the suite's, then each tool's own."""
    entries = [FaultEntry(f"case faults[{i}]", fault.tool, fault) for i, fault in enumerate(case_faults)]
    entries += [FaultEntry(f"suite faults[{i}]", fault.tool, fault) for i, fault in enumerate(suite_faults)]
    for tool in declared:
        entries += [
            FaultEntry(f"tool {tool.name} faults[{i}]", tool.name, fault) for i, fault in enumerate(tool.faults)
        ]
    return entries


def _arguments_match(fault: Fault, arguments: dict[str, Any]) -> bool:
    if fault.arguments is None:
        return True
    if fault.match == "exact":
        return fault.arguments == arguments
    return all(key in arguments and arguments[key] == value for key, value in fault.arguments.items())


def fault_fires(entry: FaultEntry, *, seed: int, name: str, number: int, arguments: dict[str, Any]) -> bool:
    """Whether ``entry`` faults the ``number``-th call (from 1) of tool ``name`` with these arguments."""
    if entry.tool not in ("*", name) or not _arguments_match(entry.fault, arguments):
        return False
    if entry.fault.on_call is not None:
        return number == entry.fault.on_call
    if entry.fault.rate is None:
        return True
    digest = hashlib.sha256(f"{seed}:{name}:{number}:{entry.label}".encode()).digest()
    return int.from_bytes(digest[:8], "big") / 2**64 < entry.fault.rate


def inject(record: ToolCallRecord, entry: FaultEntry) -> None:
    """Answer the call as the fault says, and mark the record as faulted on purpose."""
    fault = entry.fault
    record.fault = entry.describe()
    if fault.error is not None:
        record.status = "failed"
        record.error = fault.error
    elif fault.timeout:
        record.status = "failed"
        record.error = f"the tool {record.name!r} did not answer in time (timed out)"
    else:
        record.status = "faked"
        record.result = fault.result


class FaultInjector:
    """The faults of one conversation and the number of calls each tool has had in it."""

    def __init__(self, entries: Sequence[FaultEntry], seed: int = 0) -> None:
        self.entries = list(entries)
        self.seed = seed
        self._calls: dict[str, int] = {}

    def next_call(self, name: str) -> int:
        """Count a call of ``name``: its number in the conversation, from 1."""
        self._calls[name] = self._calls.get(name, 0) + 1
        return self._calls[name]

    def remember(self, names: Iterable[str]) -> None:
        """Calls made earlier in the conversation (a resumed one): later calls keep their numbers."""
        for name in names:
            self.next_call(name)

    def pick(self, name: str, number: int, arguments: dict[str, Any]) -> FaultEntry | None:
        """The first entry that faults this call, or None."""
        for entry in self.entries:
            if fault_fires(entry, seed=self.seed, name=name, number=number, arguments=arguments):
                return entry
        return None
