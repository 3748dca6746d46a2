"""Seeded worlds at run time: one cheap copy per conversation, the operations world tools run on it, the net
diff it ends with, and the state checks that read it.

:class:`SeededWorld` is the suite's world, read once and never changed; :meth:`SeededWorld.copy` gives a
conversation its own :class:`World`, which keeps only the records the conversation changed (copy on write), so a
copy costs nothing whatever the world's size and the diff is what the copy holds. :func:`check_state` decides an
``expect_state`` against a world, item by item, with a field-by-field diff as evidence.
"""

from simulator.world._operations import OperationOutcome, run_operation
from simulator.world._state import StateResult, check_state
from simulator.world._world import SeededWorld, World, WorldError, apply_changes

__all__ = [
    "OperationOutcome",
    "SeededWorld",
    "StateResult",
    "World",
    "WorldError",
    "apply_changes",
    "check_state",
    "run_operation",
]
