"""The garbage collector during a run: old objects frozen out of full collections, young ones collected less often.

A run holds tens of thousands of objects alive for its whole length (the plan, the modules, the conversations in
flight); the collector's default settings walk them again and again and stop the event loop while they do.
"""

from __future__ import annotations

import gc
import threading
from collections.abc import Iterator
from contextlib import contextmanager

__all__ = ["YOUNG_COLLECTION_THRESHOLD", "old_objects_frozen", "rarer_young_collections", "young_collections_rarer"]


class _Frozen:
    """Whether the objects alive are frozen out of the garbage collector for the run (see old_objects_frozen)."""

    def __init__(self, active: bool) -> None:
        self.active = active
        self.lock = threading.Lock()

    def freeze_more(self) -> None:
        """Freeze the objects made since (LangGraph's, imported in a thread while the run goes), while the run's
        freeze holds: never after it is given back."""
        with self.lock:
            if self.active:
                gc.freeze()


@contextmanager
def old_objects_frozen() -> Iterator[_Frozen]:
    """While the block runs, the objects alive when it starts (imported modules, LangGraph's and pydantic's
    classes, the plan) are left out of the garbage collector's full collections, each of which otherwise
    stopped the event loop, every conversation waiting. Given back afterwards. Nothing
    when objects are frozen already (an application's own ``gc.freeze``): they stay as they are."""
    if gc.get_freeze_count():
        yield _Frozen(active=False)
        return
    gc.freeze()
    frozen = _Frozen(active=True)
    try:
        yield frozen
    finally:
        with frozen.lock:
            frozen.active = False
            gc.unfreeze()


#: Allocations between two collections of the garbage collector's youngest generation during a run (Python's
#: default: 700).
YOUNG_COLLECTION_THRESHOLD = 50_000


@contextmanager
def rarer_young_collections() -> Iterator[None]:
    """While the block runs, the youngest generation is collected every :data:`YOUNG_COLLECTION_THRESHOLD`
    allocations instead of every 700 (a threshold set higher already is left as it is, and so is a collector
    turned off). The conversations in flight hold tens of thousands of young objects that every collection
    walks again (``bench/run.py``; figures in docs/performance.md). Given back afterwards."""
    before = young_collections_rarer()
    try:
        yield
    finally:
        if before is not None:
            gc.set_threshold(*before)


def young_collections_rarer() -> tuple[int, ...] | None:
    """Raise the youngest generation's threshold to :data:`YOUNG_COLLECTION_THRESHOLD` unless it is that high
    already or the collector is off; the thresholds before, if they were changed."""
    before = gc.get_threshold()
    if not gc.isenabled() or before[0] >= YOUNG_COLLECTION_THRESHOLD:
        return None
    gc.set_threshold(YOUNG_COLLECTION_THRESHOLD, *before[1:])
    return before
