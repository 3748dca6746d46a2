"""Documents made of stored runs: a run's report in any format (built-in or a plugin's), the overview the
command line prints after a run, and comparisons, digests and coverage as text, Markdown, HTML or JSON."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Literal

from simulator.api._store import PathLike, open_store

if TYPE_CHECKING:
    from simulator.analysis.compare import Comparison
    from simulator.analysis.digest import Digest
    from simulator.models.review import Review, RunReviews
    from simulator.models.run import RunRecord, StoredResult
    from simulator.runner import RunOutcome
    from simulator.store import Lease, RunStore, Unreadable


def report_formats() -> tuple[str, ...]:
    """The report formats: the built-in ones (md, html, json, csv, xlsx, junit) and the installed plugins'."""
    from simulator.reports.formats import report_formats as formats

    return formats()


@dataclass(frozen=True)
class Report:
    """A stored run's report: its bytes, the format, and the file name it is written to by default."""

    data: bytes
    fmt: str
    filename: str
    #: Files the report points at, to be written beside it: (path relative to the report's folder, the file), e.g.
    #: an HTML report's voice conversations' audio (``simulator-audio/RUN/KEY.wav``).
    attachments: tuple[tuple[str, Path], ...] = ()

    @property
    def text(self) -> str | None:
        """The report as text, or None for a binary one (an Excel workbook, a plugin's)."""
        try:
            return self.data.decode("utf-8")
        except UnicodeDecodeError:
            return None

    def write(self, path: PathLike | None = None) -> Path:
        """Write the report to ``path`` (default: its file name in the current folder), and its attachments beside
        it; returns the path."""
        from simulator._files import write_error, write_file
        from simulator.reports.formats import file_bytes

        target = Path(path) if path is not None else Path(self.filename)
        for relative, source in self.attachments:
            copy = target.parent / relative
            if copy.is_file() and copy.stat().st_size == source.stat().st_size:
                continue  # audio files never change once written: the copy of an earlier report is this one
            try:
                copy.parent.mkdir(parents=True, exist_ok=True)
            except OSError as exc:
                raise write_error(copy.parent, exc) from None
            write_file(copy, source.read_bytes())
        return write_file(target, file_bytes(self.fmt, self.data))


def _report(
    fmt: str,
    record: RunRecord,
    results: list[StoredResult],
    left_out: Sequence[str] = (),
    reviews: Sequence[Review] = (),
    *,
    store: RunStore | None = None,
) -> Report:
    from simulator.metrics import summarized
    from simulator.reports.formats import default_filename, render

    summary = summarized(record, results)
    if reviews and fmt != "junit":  # JUnit reports the judged outcomes only
        from simulator.analysis.reviewed import run_reviews, with_reviews

        summary, results = with_reviews(summary, results, run_reviews(summary, results, reviews))
    attachments = _audio_files(store, results) if fmt == "html" and store is not None else ()
    return Report(render(fmt, summary, results, left_out=left_out), fmt, default_filename(summary, fmt), attachments)


def _audio_files(store: RunStore, results: Sequence[StoredResult]) -> tuple[tuple[str, Path], ...]:
    """The voice conversations' audio files the HTML report plays, where the report puts them."""
    from simulator.reports.html import AUDIO_FOLDER

    found: list[tuple[str, Path]] = []
    for stored in results:
        voice = stored.result.transcript.voice
        path = store.audio_path(voice.audio) if voice is not None and voice.audio is not None else None
        if voice is not None and voice.audio is not None and path is not None:
            found.append((f"{AUDIO_FOLDER}/{voice.audio}", path))
    return tuple(found)


def run_report(
    run_ref: str, fmt: str = "md", *, db: PathLike | None = None, skipped: list[Unreadable] | None = None
) -> Report:
    """A stored run's report in ``fmt`` (see :func:`report_formats`); results that cannot be read are left out,
    said in the report, and added to ``skipped``. People's reviews (:func:`simulator.add_review`) are shown
    beside the judge's verdicts, with correctness as reviewed beside as judged (JUnit: judged only)."""
    collected: list[Unreadable] = []
    with open_store(db) as store:
        record = store.get_run(run_ref)
        results = store.results(record.id, skipped=collected)
        reviews = store.list_reviews(record.id)
        report = _report(fmt, record, results, [item.describe() for item in collected], reviews, store=store)
    if skipped is not None:
        skipped.extend(collected)
    return report


def write_reports(outcome: RunOutcome, formats: Sequence[str], directory: PathLike) -> list[Path]:
    """Write a run's reports, one file per format, into ``directory``; returns the paths. The results are read
    once for every format."""
    results = outcome.results()
    written: list[Path] = []
    with open_store(outcome.store_path) as store:
        for fmt in formats:  # one report in memory at a time
            report = _report(fmt, outcome.record, results, store=store)
            written.append(report.write(Path(directory) / report.filename))
    return written


@dataclass(frozen=True)
class RunOverview:
    """What the command line shows of a run: the record with a current summary, the process running it now,
    its outcome counts, the rows shown (every failure up to a limit, then unsure, then a few passes; a small run
    whole), how many results say no judge model was set, and where it is stored."""

    record: RunRecord
    owner: Lease | None
    counts: dict[str, int]
    failing: list[StoredResult]
    shown: list[StoredResult]
    not_judged: int
    store_path: Path
    skipped: list[Unreadable] = field(default_factory=list)
    #: What people's reviews make of the run (None when it has none).
    reviews: RunReviews | None = None


def run_overview(run_ref: str, *, db: PathLike | None = None) -> RunOverview:
    """The overview of a stored run (:class:`RunOverview`), reading only the rows it shows; results that cannot
    be read are in its ``skipped`` (each once)."""
    from simulator.reports.run_text import FAILING, OTHERS, rows_shown
    from simulator.reports.transcript_text import NO_JUDGE_ADVICE

    skipped: list[Unreadable] = []
    with open_store(db) as store:
        record = _current(store, store.get_run(run_ref), skipped)
        owner = store.owner(record.id) if record.status == "running" else None
        counts = store.outcome_counts(record.id)
        failing_limit, others_limit = rows_shown(counts)
        failing = store.first_results(record.id, FAILING, failing_limit, skipped=skipped)
        shown = failing + store.first_results(record.id, OTHERS, others_limit, skipped=skipped)
        mentions = store.count_mentioning(record.id, NO_JUDGE_ADVICE)
        found = store.list_reviews(record.id)
        reviewed = None
        if found:
            from simulator.analysis.reviewed import run_reviews

            reviewed = run_reviews(record, store.iter_results(record.id, skipped=skipped), found)
        # Once each: the summary and the rows may both have met the same result.
        once = list({item.cause: item for item in skipped}.values())
        return RunOverview(record, owner, counts, failing, shown, mentions, store.path, once, reviewed)


def _current(store: RunStore, record: RunRecord, skipped: list[Unreadable]) -> RunRecord:
    """``record`` with a current summary: its own, else one computed streaming over the stored results (a run
    stored by an older version, or still running), keeping the record's duration."""
    if record.totals is not None and record.totals.current and record.totals.coverage is not None:
        return record
    from simulator.metrics import run_summary, summarized

    results = store.iter_results(record.id, skipped=skipped)
    if record.totals is not None and record.totals.current:
        return summarized(record, results)  # only the coverage is missing: computed alone
    duration = record.totals.duration_s if record.totals is not None else 0.0
    # iter_results reads in plan order, a few at a time: the summary never holds the run's results at once.
    return record.model_copy(update={"totals": run_summary(results, duration, record)})


@dataclass(frozen=True)
class OverviewText:
    """A run overview as text: lines before the table, the table's columns and rows (each row's outcome in
    column 4), and lines after it."""

    header: list[str]
    columns: Sequence[str]
    rows: list[list[str]]
    footer: list[str]


def render_overview(overview: RunOverview, *, verbose: bool = False) -> OverviewText:
    """The overview as text: header, one row per result shown, what was left out with the command that reports
    the whole run, repeat and totals lines, coverage; by default each reason whole and the "no judge model"
    advice once at the end, with ``verbose`` every reason of every row."""
    from simulator.api.runs import run_command
    from simulator.reports.coverage_view import coverage_summary_lines
    from simulator.reports.run_text import (
        CASE_COLUMNS,
        case_rows,
        fault_lines,
        judge_advice_for,
        more_lines,
        repeat_lines,
        run_header,
        totals_lines,
    )

    record = overview.record
    header = list(run_header(record))
    if overview.owner is not None:
        header.append(f"Running now: {overview.owner.describe()}.")
    report = run_command("report", record.id, overview.store_path)
    footer = [*more_lines(overview.counts, len(overview.failing), len(overview.shown), report)]
    footer += [*repeat_lines(record), *fault_lines(record), *totals_lines(record)]
    if overview.reviews is not None:
        footer.append(reviewed_line(overview.reviews))
    if record.totals is not None and record.totals.coverage is not None:
        command = run_command("coverage", record.id, overview.store_path)
        footer += coverage_summary_lines(record, record.totals.coverage, command)
    advice = None if verbose else judge_advice_for(overview.not_judged)
    if advice:
        footer.append(advice)
    rows = [list(row) for row in case_rows(overview.shown, verbose=verbose)]
    return OverviewText(header, CASE_COLUMNS, rows, footer)


def reviewed_line(reviews: RunReviews) -> str:
    """``Correctness as reviewed 66.7% (as judged 58.3%; 3 results reviewed, 4 reviews)``."""
    from simulator.reports.figures import percent

    return (
        f"Correctness as reviewed {percent(reviews.reviewed.correctness)} (as judged "
        f"{percent(reviews.judged.correctness)}; {len(reviews.results)} result(s) reviewed, "
        f"{len(reviews.reviews)} review(s): simulator reviews {reviews.run_id})"
    )


def render_comparison(comparison: Comparison, fmt: Literal["text", "md", "html", "json"] = "text") -> str:
    """A comparison of two runs (:func:`simulator.compare_runs`) as a document."""
    if fmt == "json":
        return comparison.model_dump_json(indent=2) + "\n"
    if fmt == "md":
        from simulator.reports.compare_report import render_compare_markdown

        return render_compare_markdown(comparison)
    if fmt == "html":
        from simulator.reports.compare_report import render_compare_html

        return render_compare_html(comparison)
    from simulator.reports.compare_text import render_comparison_text

    return "\n".join(render_comparison_text(comparison)) + "\n"


def render_digest(digest: Digest, fmt: Literal["text", "md", "json"] = "text") -> str:
    """A digest of a run's failures (:func:`simulator.digest_run`) as a document."""
    if fmt == "json":
        return digest.model_dump_json(indent=2) + "\n"
    from simulator.reports.digest_report import render_digest_markdown, render_digest_text

    return render_digest_markdown(digest) if fmt == "md" else "\n".join(render_digest_text(digest)) + "\n"
