"""Every run as a list shows it, read without its record: a run's snapshot, plan and summary are tens of KB of
JSON each (a 500-conversation plan alone 70 KB), and reading a whole record validates all of it, about 12 ms a
run. SQLite's JSON functions take out only the suite names, the plan's length and the summary's counts, usage
and duration, so a list of a hundred runs is read in milliseconds."""

from __future__ import annotations

import json
import sqlite3
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Final

from pydantic import TypeAdapter, ValidationError

from simulator.models.run import LEGACY_STATUSES, RunStatus
from simulator.models.summary import Counts
from simulator.models.transcript import Usage
from simulator.store._leases import _lease
from simulator.store._rows import _LEASE_COLUMNS, UnreadableRunError, _first_problem

_USAGE: Final = TypeAdapter(dict[str, Usage])
#: The summary's parts a list shows, in the order of the JSON array ``json_extract`` gives for them.
_TOTALS_PATHS: Final = ("passed", "failed", "error", "unsure", "user_error", "duration_s", "usage")


@dataclass(frozen=True)
class RunListing:
    """A stored run as a runs list shows it: its status (``running`` only while a live process runs it, as in
    :meth:`RunStore.get_run`), when it was made, version, suites, note, how many conversations it planned, and
    from its summary (None while it has none: it is running, or it never finished) the counts, usage and
    wall-clock seconds."""

    id: str
    status: RunStatus
    created: datetime
    agent_version: str | None
    note: str
    suites: list[str]
    planned: int
    counts: Counts | None
    usage: dict[str, Usage]
    duration_s: float


def listing_query(*, leases: bool) -> str:
    """The SELECT of every run's listing, newest first; ``leases``: the store has the leases table."""
    totals = ", ".join(f"'$.{path}'" for path in _TOTALS_PATHS)
    lease = (
        ", ".join(f"leases.{name} AS lease_{name}" for name in _LEASE_COLUMNS)
        if leases
        else ", ".join(f"NULL AS lease_{name}" for name in _LEASE_COLUMNS)
    )
    return (
        "SELECT runs.id AS id, runs.created AS created, runs.status AS status, "
        "runs.agent_version AS agent_version, runs.note AS note, "
        "CASE WHEN json_valid(runs.snapshot) AND json_type(runs.snapshot) = 'array' THEN "
        "(SELECT json_group_array(json_extract(value, '$.suite.name')) FROM json_each(runs.snapshot)) END AS suites, "
        "CASE WHEN json_valid(runs.plan) AND json_type(runs.plan) = 'array' THEN json_array_length(runs.plan) END "
        "AS planned, "
        f"CASE WHEN json_valid(runs.totals) THEN json_extract(runs.totals, {totals}) END AS totals, "
        f"runs.totals IS NULL AS no_totals, {lease} "
        "FROM runs" + (" LEFT JOIN leases ON leases.run_id = runs.id" if leases else "") + " "
        "ORDER BY runs.created DESC, runs.id DESC"
    )


def read_status(row: sqlite3.Row) -> RunStatus:
    """The status of the run in ``row`` (with its lease columns): a ``running`` run that no live process holds
    is ``interrupted`` (killed, or its machine went down)."""
    status: Any = LEGACY_STATUSES.get(row["status"], row["status"])
    if status == "running":
        lease = None
        if row["lease_token"] is not None:
            lease = _lease(row["id"], [row[f"lease_{name}"] for name in _LEASE_COLUMNS])
        if lease is None or not lease.alive():
            status = "interrupted"
    return status  # type: ignore[no-any-return]


def listing(row: sqlite3.Row, where: str) -> RunListing:
    """The listing of the run in ``row`` (of :func:`listing_query`); :class:`UnreadableRunError` naming the
    part that cannot be read (``where``: the store's path)."""
    run_id = str(row["id"])

    def damaged(problem: str) -> UnreadableRunError:
        return UnreadableRunError(
            f"run {run_id} in {where} cannot be read ({problem}); it was written by another version of Simulator "
            "or changed by hand",
            run_id,
        )

    suites = json.loads(row["suites"]) if row["suites"] is not None else None
    if not isinstance(suites, list) or not all(isinstance(name, str) for name in suites):
        raise damaged("its suites have no names")
    if row["planned"] is None:
        raise damaged("its plan is not a list")
    counts: Counts | None = None
    usage: dict[str, Usage] = {}
    duration = 0.0
    if not row["no_totals"]:
        parts = json.loads(row["totals"]) if row["totals"] is not None else None
        if not isinstance(parts, list) or len(parts) != len(_TOTALS_PATHS):
            raise damaged("its summary is not a JSON object")
        found = dict(zip(_TOTALS_PATHS, parts, strict=True))
        try:
            counts = Counts.model_validate({name: found[name] or 0 for name in _TOTALS_PATHS[:5]})
            usage = _USAGE.validate_python(found["usage"] or {})
        except ValidationError as exc:
            raise damaged(f"its summary: {_first_problem(exc)}") from exc
        duration_value = found["duration_s"] or 0.0
        if not isinstance(duration_value, int | float):
            raise damaged("its summary's duration is not a number")
        duration = float(duration_value)
    try:
        created = datetime.fromisoformat(str(row["created"]))
    except ValueError as exc:
        raise damaged(f"its creation time {row['created']!r} is not a time") from exc
    return RunListing(
        run_id,
        read_status(row),
        created,
        row["agent_version"],
        str(row["note"] or ""),
        suites,
        int(row["planned"]),
        counts,
        usage,
        duration,
    )
