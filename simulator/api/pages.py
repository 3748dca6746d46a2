"""Stored runs as the parts of web pages (title, body, the data its script reads), the very ones the static HTML
reports are made of, for a front end that serves them with its own assets; and the control of a run from
outside its process: its state while it runs, and stopping it through its lease."""

from __future__ import annotations

import os
import signal
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from simulator.api._store import PathLike, open_store

if TYPE_CHECKING:
    from simulator.models.review import Review
    from simulator.models.run import RunRecord, StoredResult
    from simulator.reports.html import CasePart, HtmlParts


def _reviewed(
    record: RunRecord, results: list[StoredResult], reviews: list[Review]
) -> tuple[RunRecord, list[StoredResult]]:
    if not reviews:
        return record, results
    from simulator.analysis.reviewed import run_reviews, with_reviews

    return with_reviews(record, results, run_reviews(record, results, reviews))


def run_page(
    run_ref: str, *, db: PathLike | None = None, details: bool = True, audio_base: str | None = None
) -> HtmlParts:
    """A stored run's report page as parts: the same header, summaries, coverage and cases, failures first, as
    ``simulator report -f html`` writes (results that cannot be read are listed on it; people's reviews beside
    the judge's verdicts, correctness as reviewed beside as judged).

    ``details=False``: a case that starts closed holds only its summary line, one that starts open all but its
    transcript, world and scores; the page loads the rest when a case is opened (:func:`conversation_page` with
    ``part``; its text search asks :func:`search_results`), and the results are read without their transcripts'
    events: a run of a thousand results renders in a fraction of the time. ``audio_base``: the address the
    voice conversations' audio files are served under (their names appended; :func:`audio_file` finds one)."""
    from simulator.api.reports import _current
    from simulator.reports.html import opened_at_first, render_html_parts
    from simulator.store import Unreadable

    skipped: list[Unreadable] = []
    with open_store(db) as store:
        record = store.get_run(run_ref)
        results = store.results(record.id, skipped=skipped, light=not details)
        record = _current(store, record, [])
        reviews = store.list_reviews(record.id)
        if not details:
            # Read whole: the cards shown open (their goals link into the transcript) and the reviewed results
            # (an outcome as reviewed is decided again from the whole transcript).
            whole = set(opened_at_first(results)) | {review.key for review in reviews}
            results = [
                (store.result(record.id, stored.key) or stored) if stored.key in whole else stored for stored in results
            ]
    record, results = _reviewed(record, results, reviews)
    left_out = [item.describe() for item in skipped]
    return render_html_parts(record, results, left_out=left_out, details=details, audio_base=audio_base)


def conversation_page(
    run_ref: str,
    key: str,
    *,
    db: PathLike | None = None,
    number: int = 1,
    part: CasePart | None = None,
    beside: Mapping[str, str] | None = None,
    audio_base: str | None = None,
) -> HtmlParts | None:
    """One conversation of a stored run (the result stored under ``key``: :attr:`StoredResult.key`) as its
    report shows it, open (with its reviews); None when the run has no such result. Only that result is read.
    ``number`` and ``part`` (``body`` or ``detail``): see :func:`simulator.reports.html.render_case_parts` (the
    part a run page of :func:`run_page` with ``details=False`` loads into its case number ``number``); ``beside``:
    HTML to show beside the result, a step or a check, by review target (a front end's review forms);
    ``audio_base``: as for :func:`run_page`."""
    from simulator.api.reports import _current
    from simulator.reports.html import render_case_parts

    with open_store(db) as store:
        record = store.get_run(run_ref)
        stored = store.result(record.id, key)
        if stored is None:
            return None
        if part is None:
            # Only the whole card shows the run's summary (its repeats); a running run's is made by reading every
            # result, which a part, loaded each time a card is opened, does not need.
            record = _current(store, record, [])
        reviews = [review for review in store.list_reviews(record.id) if review.key == key]
    record, results = _reviewed(record, [stored], reviews)
    return render_case_parts(record, results[0], number=number, part=part, beside=beside, audio_base=audio_base)


def audio_file(name: str, *, db: PathLike | None = None) -> Path | None:
    """The audio file of a voice conversation, by the name its transcript gives it (``transcript.voice.audio``);
    None when the store has no such file (or the name points outside the store's audio folder)."""
    with open_store(db) as store:
        return store.audio_path(name)


def search_results(run_ref: str, text: str, *, db: PathLike | None = None) -> list[str]:
    """The keys of a stored run's results that contain every word of ``text`` (any case), in store order: in any
    text of the result (messages, tool calls and results, reasons, rationales, evidence, ...), its case, persona,
    outcome and suite, or its case's tags and description. What a run page of :func:`run_page` with
    ``details=False`` searches, since its cards do not hold their conversations. An empty ``text`` matches
    every result."""
    from simulator.reports.search import RunSearch

    with open_store(db) as store:
        record = store.get_run(run_ref)
        search = RunSearch(record, text)
        return [
            row.key
            for row in store.result_texts(record.id, search.in_json)
            if search.matches(row.suite, row.case, row.persona, row.outcome, row.result)
        ]


def comparison_page(run_a: str, run_b: str, *, db: PathLike | None = None) -> HtmlParts:
    """The comparison of two stored runs (``run_a`` the baseline) as parts, as ``simulator compare -f html``
    writes it."""
    from simulator.api.analysis import compare_runs
    from simulator.reports.compare_report import render_compare_parts

    return render_compare_parts(compare_runs(run_a, run_b, db=db))


def digest_page(run_ref: str, *, db: PathLike | None = None) -> HtmlParts:
    """A stored run's failure digest as page parts: its causes most frequent first, each with its cases, reasons
    and examples. No model is asked for suggestions (``simulator digest`` with a judge model does that): opening a
    page never sends anything."""
    from simulator.analysis.digest import build_digest
    from simulator.reports.digest_report import render_digest_html

    with open_store(db) as store:
        record = store.get_run(run_ref)
        digest = build_digest(store.iter_results(record.id))
    return render_digest_html(digest, f"Failure digest of run {record.id}")


def page_asset(name: str) -> str:
    """The text of a page asset: ``report.css`` and ``report.js`` (a run's page), ``compare.css`` (a
    comparison's). KeyError for any other name."""
    if name == "compare.css":
        from simulator.reports.compare_report import compare_css

        return compare_css()
    from simulator.reports.html import asset_text

    return asset_text(name)


def html_text(value: object) -> str:
    """Any value as HTML text or attribute content, as the reports write it: escaped, with control characters
    and bidi marks and overrides shown as visible escapes (``\\u202e``)."""
    from simulator.reports.html import html_text as text

    return text(value)


def store_path(db: PathLike | None = None) -> Path:
    """The run store a call with ``db`` opens: ``db`` itself, else ``$SIMULATOR_DB`` or ``.simulator/runs.db``."""
    from simulator.store import default_db_path

    return Path(db) if db is not None else default_db_path()


@dataclass(frozen=True)
class RunState:
    """Where a stored run is now: its status, how many conversations it planned and has stored, the count of
    each outcome, and the process running it (``pid N on HOST ...``; empty when none does)."""

    id: str
    status: str
    planned: int
    stored: int
    counts: dict[str, int]
    running_by: str


def run_state(run_ref: str, *, db: PathLike | None = None) -> RunState:
    """A stored run's :class:`RunState`, read without its results (cheap enough to poll)."""
    with open_store(db) as store:
        record = store.get_run(run_ref)
        counts = store.outcome_counts(record.id)
        owner = store.owner(record.id) if record.status == "running" else None
    return RunState(
        record.id,
        record.status,
        len(record.plan),
        sum(counts.values()),
        counts,
        owner.describe() if owner is not None else "",
    )


def stop_run(run_ref: str, *, db: PathLike | None = None) -> str:
    """Stop a running run the way SIGTERM does (it ends cleanly, ``interrupted``, and can be resumed): the signal
    goes to the process its lease names, which must run on this host. Returns what was done; raises
    :class:`simulator.InputError` when no live process runs it or that process runs on another host."""
    from simulator.errors import InputError
    from simulator.store import HOST

    with open_store(db) as store:
        record = store.get_run(run_ref)
        owner = store.owner(record.id)
    if owner is None:
        raise InputError(f"run {record.id} is not being run by any live process ({record.status}): nothing to stop")
    if owner.host != HOST:
        raise InputError(
            f"run {record.id} runs on another host ({owner.describe()}): stop it there with kill -TERM {owner.pid}"
        )
    try:
        os.kill(owner.pid, signal.SIGTERM)
    except ProcessLookupError:
        raise InputError(f"run {record.id}: its process {owner.pid} has just ended: nothing to stop") from None
    except PermissionError:
        raise InputError(
            f"run {record.id} is run by pid {owner.pid}, which this user may not signal: stop it as its owner"
        ) from None
    return f"sent SIGTERM to pid {owner.pid} running {record.id}: it stops cleanly, and runs resume continues it"
