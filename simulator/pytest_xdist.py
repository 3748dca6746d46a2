"""The pytest plugin under pytest-xdist: every conversation runs once, on the worker xdist gives its item to, and
the session's results end in ONE stored run.

xdist hands items to its workers as it likes (``load``, ``loadscope``, ``loadfile``, ``loadgroup``,
``worksteal``) and may move an item queued on one worker to another, so which conversations a worker runs is
known only item by item. The controller chooses the run's id before the workers start and gives it to each
(``workerinput``). Every worker plans the same selection (xdist checks that all collected the same items), so
the first of them to run a conversation stores the run's record under that id, with the whole selection as its
plan; each conversation is then run on its own, as a part run noted as a part of that run, and its result read
from there. When the workers are done the controller copies the parts' results into the run, removes the
parts, and adds up the summary: the run is ``completed``, or ``interrupted`` when some conversations never ran
(``-x``, a crashed worker), so that ``simulator runs resume`` runs them.

``--dist each`` gives every item to every worker, which would run every conversation once per worker: refused.
"""

from __future__ import annotations

import dataclasses
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING

from simulator.errors import StoreError, StoreInputError
from simulator.metrics import run_summary
from simulator.runner import RunOutcome, new_record, run
from simulator.store import RunStore, default_db_path, new_run_id

if TYPE_CHECKING:
    from simulator.models.run import PlanItem, StoredResult
    from simulator.runner import PlannedRun

RUN_ID_KEY = "simulator_run_id"  # in each worker's workerinput
DIST_KEY = "simulator_dist"  # the controller's --dist, in each worker's workerinput
EACH_REFUSED = (
    "pytest-xdist --dist each gives every item to every worker, so each conversation would run once per worker "
    "(and be paid for as often): run the suites with --dist load (the default of -n), or without -n"
)


def choose_run_id() -> str:
    """The id of the session's one stored run, chosen by the controller before any worker starts."""
    return new_run_id()


def part_note(run_id: str) -> str:
    """The note of a part run: the conversation of one item, kept until the controller merges it into ``run_id``."""
    return f"pytest-xdist part of run {run_id}"


def run_item(db: Path | None, run_id: str, selection: PlannedRun, item: PlanItem) -> StoredResult | None:
    """Run one conversation of the session's ``selection`` in a part run of ``run_id`` (storing the run's record
    first if no worker has yet), and return its stored result (None when the part stored none)."""
    with RunStore(db if db is not None else default_db_path()) as store:
        try:
            store.get_run(run_id)
        except StoreInputError:
            record = new_record(
                run_id, selection.snapshots, selection.settings, selection.items, note="pytest (pytest-xdist)"
            )
            try:
                store.create_run(record)
            except StoreError:
                store.get_run(run_id)  # another worker stored it first: it is there now, or the error stands
    part = run(dataclasses.replace(selection, items=[item]), db=db, note=part_note(run_id))
    return next(iter(part.results()), None)


def merge_parts(db: Path | None, run_id: str, duration_s: float) -> RunOutcome | None:
    """Copy the results of ``run_id``'s part runs into it, remove the parts, and store its summary and status;
    None when no worker ran a conversation (the run was never stored)."""
    path = db if db is not None else default_db_path()
    if not path.exists():
        return None  # no worker ran a conversation: a session of Python tests alone leaves no store behind
    with RunStore(path) as store:
        try:
            record = store.get_run(run_id)
        except StoreInputError:
            return None
        parts = [part for part in store.list_runs(limit=None) if part.note == part_note(run_id)]
        lease = store.acquire(run_id)
        try:
            left = set(record.plan.item_keys())
            for part in reversed(parts):  # oldest first: a conversation run again (a rerun plugin) keeps its first
                for stored in store.iter_results(part.id):
                    if stored.key in left:
                        left.discard(stored.key)
                        store.save_result(stored.model_copy(update={"run_id": run_id}))
            totals = run_summary(store.iter_results(run_id), duration_s)
        except BaseException:
            store.finish(lease, "interrupted")
            raise
        complete = store.result_count(run_id) == len(record.plan)
        store.finish(
            lease, "completed" if complete else "interrupted", totals=totals,
            finished=datetime.now(UTC) if complete else None,
        )  # fmt: skip
        for part in parts:
            store.delete_run(part.id)
        return RunOutcome(store.get_run(run_id), store.path)
