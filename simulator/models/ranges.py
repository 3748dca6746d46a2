"""The allowed range of every number a run takes, given to the Python API (``concurrency=8``) or on the command
line (``--concurrency 8``) alike: one table (:data:`RANGES`) and one check (:func:`check_number`), called by the
run API before anything is planned or stored and by the commands whose numbers reach no API call.

A number out of range is an :class:`~simulator.errors.InputError` naming the option, the keyword, the value and
the range, e.g. ``--concurrency 0 (concurrency=0): conversations in flight at once must be a whole number from 1
to 1000``. ``None`` (an option not given) is always allowed; ``True`` and ``False`` are not numbers here.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Final

from simulator.errors import InputError

__all__ = ["RANGES", "NumberRange", "check_number", "check_numbers"]


@dataclass(frozen=True)
class NumberRange:
    """One number a run takes: its API keyword (a :class:`~simulator.models.run.RunSettings` field or an
    argument of the run API), its command-line option, what it counts in words, and its bounds (inclusive).
    ``whole``: an integer; otherwise any finite number."""

    keyword: str
    option: str
    what: str
    low: int
    high: int
    whole: bool = True

    def words(self) -> str:
        """The range in words: ``a whole number from 1 to 1000``."""
        return f"{'a whole number' if self.whole else 'a number'} from {self.low} to {self.high}"


RANGES: Final[Mapping[str, NumberRange]] = {
    found.keyword: found
    for found in (
        NumberRange("repeat", "--repeat", "runs of each case", 1, 1000),
        # Each lane of the executor is a pair of workers that live for the whole run, and each model role's
        # limit defaults to this (the judge's to twice this): a bound keeps a typo from holding a million tasks.
        NumberRange("concurrency", "--concurrency", "conversations in flight at once", 1, 1000),
        # Negative seeds would seed the persona choice as their absolute value does; the top is SQLite's integer.
        NumberRange("seed", "--seed", "the seed", 0, 2**63 - 1),
        NumberRange("cache_size_mb", "--cache-size", "the request cache's limit in MB", 1, 1024 * 1024),
        NumberRange("fail_under", "--fail-under", "the correctness bar in %", 0, 100, whole=False),
        NumberRange("fail_under_coverage", "--fail-under-coverage", "the coverage bar in %", 0, 100, whole=False),
        NumberRange("ray_workers", "--ray-workers", "Ray worker processes", 1, 1024),
        NumberRange("max_cost", "--max-cost", "the run's cost limit in US dollars", 0, 1_000_000, whole=False),
    )
}


def check_number(keyword: str, value: object, *, option: str | None = None) -> None:
    """``value`` for ``keyword`` (a key of :data:`RANGES`) is ``None`` or within its range, or an InputError
    naming ``option`` (the range's command-line option by default), the keyword, the value and the range."""
    found = RANGES[keyword]
    if value is None:
        return
    if isinstance(value, bool):
        ok = False
    elif found.whole:
        ok = isinstance(value, int) and found.low <= value <= found.high
    else:
        ok = isinstance(value, int | float) and math.isfinite(value) and found.low <= value <= found.high
    if not ok:
        raise InputError(
            f"{option or found.option} {value!r} ({keyword}={value!r}): {found.what} must be {found.words()}"
        )


def check_numbers(values: Mapping[str, object]) -> None:
    """:func:`check_number` of each value whose key is in :data:`RANGES` (other keys are not numbers)."""
    for keyword, value in values.items():
        if keyword in RANGES:
            check_number(keyword, value)
