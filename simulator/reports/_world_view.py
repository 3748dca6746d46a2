"""A conversation's world as every report shows it: a one-line summary and one line per record it left changed
(the net diff: inserted, fields before -> after, deleted), in the words of the state checks' evidence."""

from __future__ import annotations

from simulator.models.world import WorldTrace


def world_summary(trace: WorldTrace) -> str:
    """``2 records changed (40 records seeded)`` or ``nothing changed (40 records seeded)``."""
    seeded = f"{trace.records} record{'s' * (trace.records != 1)} seeded"
    if not trace.changes:
        return f"nothing changed ({seeded})"
    changed = len(trace.changes)
    return f"{changed} record{'s' * (changed != 1)} changed ({seeded})"


def change_lines(trace: WorldTrace) -> list[str]:
    """One line per changed record, e.g. ``orders/1001 changed: status 'placed' -> 'cancelled'``."""
    return [change.describe() for change in trace.changes]
