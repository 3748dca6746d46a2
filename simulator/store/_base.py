"""What the run store's method groups (leases, reviews) need of the store they are part of: its file and its
connection helpers, declared once."""

from __future__ import annotations

import sqlite3
from abc import abstractmethod
from contextlib import AbstractContextManager
from pathlib import Path


class StoreParts:
    """The store's file and connection, as :class:`~simulator.store.RunStore` provides them to its method groups."""

    path: Path

    @abstractmethod
    def require_writable(self, action: str) -> None:
        """Refuse ``action`` on a store opened read-only."""

    @abstractmethod
    def _sql(self, action: str) -> AbstractContextManager[sqlite3.Connection]:
        """The connection, with sqlite3 errors turned into store errors naming ``action``."""

    @abstractmethod
    def _unknown(self, run_id: str) -> str:
        """The message for a run the store does not hold."""
