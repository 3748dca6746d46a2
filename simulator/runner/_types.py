"""What the run API takes and gives back: the suites it accepts, the events it reports while a run runs
(:class:`RunStarted`, then one :class:`Progress` per finished conversation), a checked plan (:class:`PlannedRun`)
and a stored run (:class:`RunOutcome`), and the wrapper that gives each ``*_async`` function its blocking twin."""

from __future__ import annotations

import asyncio
import functools
from collections.abc import Callable, Coroutine, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ParamSpec, TypeVar

from simulator.loading import LoadedSuite
from simulator.models.ranges import check_numbers
from simulator.models.run import PlanItem, RunRecord, RunSettings, StoredResult, SuiteSnapshot
from simulator.models.summary import Counts
from simulator.runner._case import (
    model_limits,
    simulated_tools,
)
from simulator.runner._execute import Progress
from simulator.store import RunStore

P = ParamSpec("P")
T = TypeVar("T")
PathLike = str | Path
Suites = PathLike | LoadedSuite | Sequence[PathLike | LoadedSuite]


@dataclass(frozen=True)
class RunStarted:
    """The run is stored and about to run: its record, what is already done (a resumed run), and the request cache
    its user and judge answers are replayed from (``None``: no cache, every answer is asked of the model)."""

    record: RunRecord
    store_path: Path
    already_done: int
    estimate_s: float | None = None
    cache_path: Path | None = None
    #: What a person should read before it runs (a cost limit that cannot be enforced).
    notes: tuple[str, ...] = ()


RunEvent = RunStarted | Progress
EventHandler = Callable[[RunEvent], None]


@dataclass(frozen=True)
class PlannedRun:
    """What a run will run, checked and expanded, before anything is stored: the loaded suites, the settings
    (with the seed fixed), the plan items, the suite snapshots, and notes a person should read first."""

    suites: list[LoadedSuite]
    settings: RunSettings
    items: Sequence[PlanItem]
    snapshots: list[SuiteSnapshot]
    notes: list[str] = field(default_factory=list)

    @property
    def cases(self) -> int:
        """How many distinct cases the plan runs."""
        return len({(item.suite, item.case) for item in self.items})

    @property
    def model_limits(self) -> dict[str, list[int]]:
        """Model calls in flight at once per role that has a model, as the run will apply them (a suite's own
        ``models.<role>.concurrency``, else the run's concurrency): the distinct limits across the suites."""
        limits: dict[str, list[int]] = {}
        for loaded in self.suites:
            for role, limit in model_limits(loaded, self.settings).items():
                if limit not in limits.setdefault(role, []):
                    limits[role].append(limit)
        return {role: sorted(values) for role, values in limits.items()}

    @property
    def simulated_tools(self) -> list[str]:
        """The tools a model plays in this run (they declare ``simulate``; test mode only), each name once."""
        planned: dict[int, set[str]] = {}
        for item in self.items:
            planned.setdefault(item.suite, set()).add(item.case)
        names = [
            name
            for index, loaded in enumerate(self.suites)
            if index in planned
            for name in simulated_tools(loaded, self.settings, planned[index])
        ]
        return list(dict.fromkeys(names))


@dataclass(frozen=True)
class RunOutcome:
    """A run as stored after it ran: its record (status, totals, settings, snapshot) and where it is stored.
    Results are read from the store on demand, so a large run is never held in memory whole."""

    record: RunRecord
    store_path: Path

    @property
    def id(self) -> str:
        """The run id (``runs show ID``, ``report ID``)."""
        return self.record.id

    @property
    def completed(self) -> bool:
        """Whether every planned conversation finished and was stored."""
        return self.record.status == "completed" and self.record.totals is not None

    @property
    def passed(self) -> bool:
        """Whether the run completed and every case passed, leaving out the failures the simulated user caused
        (``user_error``); a run whose every case is a user error shows nothing about the agent: not passed."""
        totals = self.record.totals
        if not self.completed or totals is None:
            return False
        judged = totals.total - totals.user_error
        return totals.passed == judged and (judged > 0 or totals.total == 0)

    @property
    def correctness(self) -> float | None:
        """Passed / (total - user errors) (errors count as failures), or None before anything finished."""
        return self.record.totals.correctness if self.record.totals else None

    def results(self) -> list[StoredResult]:
        """Every stored result of the run, in plan order, in one list (for a large run, :meth:`iter_results`)."""
        with RunStore(self.store_path) as store:
            return store.results(self.record.id)

    def iter_results(self) -> Iterator[StoredResult]:
        """Every stored result of the run, in plan order, read from the store a few at a time: memory stays flat
        whatever the run's size. The store is open while the iteration runs (closed when it ends or the
        iterator is closed)."""
        with RunStore(self.store_path) as store:
            yield from store.iter_results(self.record.id)

    @property
    def coverage(self) -> float | None:
        """The run's coverage in % (:class:`simulator.models.coverage.RunCoverage`), or None before it finished."""
        totals = self.record.totals
        return totals.coverage.percent if totals is not None and totals.coverage is not None else None

    def exit_code(
        self,
        fail_under: float | None = None,
        fail_under_coverage: float | None = None,
        *,
        reviewed: Counts | None = None,
    ) -> int:
        """What the command line exits with for this run: 0 pass (or correctness at least ``fail_under`` %),
        1 below the bar (or coverage below ``fail_under_coverage`` %: a run with nothing to cover counts as
        0%), 3 when the run did not complete. A bar outside 0-100 is an InputError. ``reviewed``: the run's
        counts as people's reviews make them (:attr:`simulator.RunReviews.reviewed`), held to the bar instead of
        the judged ones."""
        check_numbers({"fail_under": fail_under, "fail_under_coverage": fail_under_coverage})
        if not self.completed or self.record.totals is None:
            return 3
        if fail_under_coverage is not None and (self.coverage or 0.0) < fail_under_coverage:
            return 1
        counts: Counts = self.record.totals if reviewed is None else reviewed
        if fail_under is not None:
            return 0 if (counts.correctness or 0.0) * 100 >= fail_under else 1
        if reviewed is None:
            return 0 if self.passed else 1
        judged = reviewed.total - reviewed.user_error
        return 0 if reviewed.passed == judged and (judged > 0 or reviewed.total == 0) else 1


def blocking(function: Callable[P, Coroutine[Any, Any, T]]) -> Callable[P, T]:
    """``function`` run to completion on an event loop of its own: the API for callers without one."""

    @functools.wraps(function)
    def blocking(*args: P.args, **kwargs: P.kwargs) -> T:
        return asyncio.run(function(*args, **kwargs))

    blocking.__name__ = blocking.__qualname__ = function.__name__.removesuffix("_async")
    blocking.__doc__ = f"{function.__doc__}\n\n    Blocks until done; from async code use ``{function.__name__}``."
    return blocking
