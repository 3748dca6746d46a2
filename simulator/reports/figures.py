"""How every report writes a rate: one decimal of a percentage (``94.6%``), ``n/a`` when there is none."""

from __future__ import annotations

__all__ = ["percent"]


def percent(rate: float | None) -> str:
    """``rate`` (0 to 1) as a percentage with one decimal, ``94.6%``; ``n/a`` for None (nothing to divide by)."""
    return "n/a" if rate is None else f"{rate * 100:.1f}%"
