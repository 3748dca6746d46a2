"""Runs and results as rows of the store: the columns read, how values are written (secrets redacted) and
read back, and what is reported of a row that cannot be read."""

from __future__ import annotations

import json
import sqlite3
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, Final, NamedTuple, get_args

from pydantic import BaseModel, TypeAdapter, ValidationError

from simulator.errors import StoreError
from simulator.models.run import (
    RunStatus,
    SuiteSnapshot,
)
from simulator.models.summary import RunSummary
from simulator.safety import redact

_STATUSES: Final[tuple[str, ...]] = get_args(RunStatus)
_SNAPSHOT: Final = TypeAdapter(list[SuiteSnapshot])
_VERSIONS: Final = TypeAdapter(dict[str, str])


def _time_text(moment: datetime) -> str:
    """ISO 8601 with microseconds; aware times in UTC, so stored times sort as text."""
    if moment.tzinfo is not None:
        moment = moment.astimezone(UTC)
    return moment.isoformat(timespec="microseconds")


def _json_text(model: BaseModel) -> str:
    return model.model_dump_json()


def _stored(row: tuple[Any, ...]) -> tuple[Any, ...]:
    """A row as it may be written: every text with the secrets the process knows redacted (``simulator.safety``).

    Every write of text that came from outside (a run, its note, a result) goes through here, so no secret
    reaches the file, nor its write-ahead log.
    """
    return tuple(redact(value) if isinstance(value, str) else value for value in row)


def _compose(fields: dict[str, Any], raw: dict[str, str | None]) -> str:
    """A JSON object from plain values and from JSON texts already stored (inserted as they are)."""
    plain = json.dumps(fields)  # one call for the plain values: a result page reads a thousand rows
    parts = [f"{json.dumps(name)}:{'null' if text is None else text}" for name, text in raw.items()]
    if not parts:
        return plain
    return plain[:-1] + ("," if fields else "") + ",".join(parts) + "}"


def _first_problem(exc: ValidationError) -> str:
    error = exc.errors()[0]
    where = ".".join(str(part) for part in error["loc"]) or "(root)"
    return f"{exc.error_count()} problem(s), first at {where}: {error['msg']}"


def _not_a_database(exc: sqlite3.Error) -> bool:
    name = getattr(exc, "sqlite_errorname", "")
    return name == "SQLITE_NOTADB" or "not a database" in str(exc)


_RUN_COLUMNS: Final = (
    "id, created, finished, status, agent_version, note, suite_hash, snapshot, settings, versions, plan, totals, "
    "repeat_of"
)
_RESULT_COLUMNS: Final = 'run_id, "key", suite, case_name, persona, "repeat", outcome, duration_s, finished, result'
#: :data:`_RESULT_COLUMNS` with each result's transcript events left out (by SQLite, before Python reads the
#: text): what a page that shows a result's goals, reasons and scores but not its conversation needs. A result
#: whose JSON is damaged is read as it is, so it is reported as damaged, not silently changed.
_LIGHT_RESULT_COLUMNS: Final = (
    'run_id, "key", suite, case_name, persona, "repeat", outcome, duration_s, finished, '
    "CASE WHEN json_valid(result) AND json_type(result, '$.transcript.events') IS NOT NULL "
    "THEN json_remove(result, '$.transcript.events') ELSE result END AS result"
)
_ROW_COLUMNS: Final = 'run_id, "key", suite, case_name, persona, "repeat", outcome, duration_s'
#: The terminal table's order: errors, failures, user errors, unsure, passes; then case, persona ("" for none),
#: repeat.
_TABLE_ORDER: Final = (
    "CASE outcome WHEN 'error' THEN 0 WHEN 'fail' THEN 1 WHEN 'user_error' THEN 2 WHEN 'unsure' THEN 3 ELSE 4 END, "
    "case_name, COALESCE(persona, ''), \"repeat\""
)
_NEWEST_FIRST: Final = "ORDER BY runs.created DESC, runs.id DESC"
_LEASE_COLUMNS: Final = ("pid", "host", "token", "started", "heartbeat")
_LEASE_MIGRATION: Final = "m004_leases"
_REPLAY_MIGRATION: Final = "m005_cassettes"
_REVIEW_MIGRATION: Final = "m006_reviews"


@dataclass(frozen=True)
class ResultRow:
    """A stored result without its transcript and scores: what a row of a table or of ``run --json`` shows."""

    run_id: str
    key: str
    suite: int
    case: str
    persona: str | None
    repeat: int
    outcome: str
    duration_s: float
    reasons: list[str]


class SearchRow(NamedTuple):
    """A stored result as a text search reads it: its row's columns and its JSON as stored."""

    key: str
    suite: int
    case: str
    persona: str | None
    outcome: str
    result: str


def _row(row: sqlite3.Row) -> ResultRow:
    reasons = json.loads(row["reasons"]) if row["reasons"] else []
    return ResultRow(
        run_id=str(row["run_id"]),
        key=str(row["key"]),
        suite=int(row["suite"]),
        case=str(row["case_name"]),
        persona=None if row["persona"] is None else str(row["persona"]),
        repeat=int(row["repeat"]),
        outcome=str(row["outcome"]),
        duration_s=float(row["duration_s"]),
        reasons=[str(reason) for reason in reasons] if isinstance(reasons, list) else [],
    )


@dataclass(frozen=True)
class Unreadable:
    """A stored run or result that cannot be read (changed by hand, or written by another version of Simulator):
    left out of what is shown, and named with its cause and the fix."""

    run_id: str
    #: What cannot be read, where, and why.
    cause: str
    fix: str

    def describe(self) -> str:
        """One line: what cannot be read, why, and what to do."""
        return f"{self.cause}; {self.fix}"


class UnreadableRunError(StoreError):
    """The record of a stored run cannot be read; ``run_id`` names it, so it can still be deleted."""

    def __init__(self, message: str, run_id: str) -> None:
        super().__init__(message)
        self.run_id = run_id


def _status_update(
    status: RunStatus, totals: RunSummary | None, finished: datetime | None
) -> tuple[list[str], list[str]]:
    """The ``SET`` clauses and values of a status change (with totals and finishing time when given)."""
    if status not in _STATUSES:
        raise StoreError(f"{status!r} is not a run status (one of: {', '.join(_STATUSES)})")
    sets = ["status = ?"]
    values: list[str] = [status]
    if totals is not None:
        sets.append("totals = ?")
        values.append(_json_text(totals))
    if finished is not None:
        sets.append("finished = ?")
        values.append(_time_text(finished))
    return sets, values


def _result_name(row: sqlite3.Row) -> str:
    """A stored result as a person knows it: its case, persona and repeat (and its key, which is unique)."""
    persona = "" if row["persona"] is None else f" [{row['persona']}]"
    return f"the result of case {str(row['case_name'])!r}{persona} #{row['repeat']} (key {row['key']})"


def _unreadable_result(row: sqlite3.Row, cause: str) -> Unreadable:
    """A result row that cannot be read, with the fix: the run's other results are still read."""
    run_id = str(row["run_id"])
    fix = (
        f"run that case again (`simulator simulate SUITE --case {str(row['case_name'])!r}`, or the whole run as a "
        f"new one with `simulator runs repeat {run_id}`), or delete the run with `simulator runs delete {run_id}`"
    )
    return Unreadable(run_id, cause, fix)


def _parse_time(text: str) -> datetime:
    moment = datetime.fromisoformat(text)
    return moment if moment.tzinfo is not None else moment.replace(tzinfo=UTC)


def _explain(exc: sqlite3.Error) -> str:
    """An sqlite3 error in words, with a hint for the ones a person can do something about."""
    text = str(exc)
    if "locked" in text or "busy" in text:
        return f"{text}: another process kept the database busy for too long; try again when it has finished"
    if "readonly" in text or "read-only" in text:
        return f"{text}: the file or its folder cannot be written"
    return text
