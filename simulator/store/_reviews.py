"""The review methods of the run store: a person's verdicts on stored results, kept in their own table."""

from __future__ import annotations

import secrets
import sqlite3

from pydantic import ValidationError

from simulator.errors import StoreError, StoreInputError
from simulator.models.review import Review
from simulator.store._base import StoreParts
from simulator.store._rows import _first_problem, _stored, _time_text

_COLUMNS = 'id, run_id, "key", target, verdict, reason, reviewer, created_at'


class ReviewMethods(StoreParts):
    """Adding and reading reviews (:class:`~simulator.models.review.Review`), on the store's file and connection.

    A review is one short insert: a running run's store is never held up by it. Reviews are insert-only: a later
    review of the same target is stored beside the earlier ones, and readers take the newest as the one that
    counts (:func:`simulator.reviews`)."""

    #: Whether the file has the reviews table (a store opened read-only may predate it).
    _reviews: bool

    def new_review_id(self) -> str:
        """A fresh review id: random, so two reviewers writing at once never collide."""
        return secrets.token_hex(8)

    def add_review(self, review: Review) -> None:
        """Store a review (its run must exist); committed at once, in one short transaction."""
        action = f"store a review of {review.key} of run {review.run_id}"
        self.require_writable(action)
        if not self._reviews:
            raise StoreError(f"cannot {action}: the run store {self.path} predates reviews; open it writable once")
        row = _stored((
            review.id, review.run_id, review.key, review.target, review.verdict, review.reason, review.reviewer,
            _time_text(review.created_at),
        ))  # fmt: skip
        with self._sql(action) as conn:
            try:
                conn.execute(f"INSERT INTO reviews ({_COLUMNS}) VALUES ({', '.join('?' * len(row))})", row)
            except sqlite3.IntegrityError as exc:
                if "FOREIGN KEY" in str(exc):
                    raise StoreInputError(self._unknown(review.run_id)) from exc
                raise StoreError(f"a review with id {review.id} is already stored in {self.path}") from exc

    def list_reviews(self, run_id: str) -> list[Review]:
        """Every review of the run, oldest first (none in a store that predates reviews)."""
        if not self._reviews:
            return []
        with self._sql(f"read the reviews of run {run_id}") as conn:
            rows = conn.execute(
                f"SELECT {_COLUMNS} FROM reviews WHERE run_id = ? ORDER BY created_at, rowid", (run_id,)
            ).fetchall()
        found = []
        for row in rows:
            try:
                found.append(Review.model_validate(dict(zip(Review.model_fields, tuple(row), strict=True))))
            except ValidationError as exc:
                raise StoreError(
                    f"review {row[0]} of run {run_id} in {self.path} cannot be read ({_first_problem(exc)}); it was "
                    "changed by hand or by another version of Simulator"
                ) from exc
        return found

    def reviewed_run_ids(self) -> set[str]:
        """The ids of the runs that have at least one review (one indexed query, for a list of runs)."""
        if not self._reviews:
            return set()
        with self._sql("read which runs have reviews") as conn:
            return {row[0] for row in conn.execute("SELECT DISTINCT run_id FROM reviews").fetchall()}
