"""Every report format behind one name: ``render(fmt, record, results)``. Pure; the CLI writes the bytes."""

from __future__ import annotations

from collections.abc import Callable
from typing import Literal

from simulator.models.run import RunRecord, StoredResult

ReportFormat = Literal["md", "html", "json", "csv", "xlsx", "junit"]
FORMATS: tuple[ReportFormat, ...] = ("md", "html", "json", "csv", "xlsx", "junit")
EXTENSIONS: dict[ReportFormat, str] = {
    "md": "md", "html": "html", "json": "json", "csv": "csv", "xlsx": "xlsx", "junit": "xml",
}  # fmt: skip


def _renderer(fmt: ReportFormat) -> Callable[[RunRecord, list[StoredResult]], str | bytes]:
    # Imported per format: the Excel writer pulls in openpyxl, which a Markdown report does not need.
    if fmt == "md":
        from simulator.reports.markdown import render_markdown

        return render_markdown
    if fmt == "html":
        from simulator.reports.html import render_html

        return render_html
    if fmt == "json":
        from simulator.reports.json_export import render_json

        return render_json
    if fmt == "csv":
        from simulator.reports.tabular import render_csv

        return render_csv
    if fmt == "xlsx":
        from simulator.reports.tabular import render_xlsx

        return render_xlsx
    from simulator.reports.junit import render_junit

    return render_junit


def render(fmt: ReportFormat, record: RunRecord, results: list[StoredResult]) -> bytes:
    """The report in ``fmt`` as bytes (UTF-8 for the text formats)."""
    if fmt not in FORMATS:
        raise ValueError(f"unknown report format {fmt!r}: choose one of {', '.join(FORMATS)}")
    output = _renderer(fmt)(record, results)
    return output.encode("utf-8") if isinstance(output, str) else output


def default_filename(record: RunRecord, fmt: ReportFormat) -> str:
    """``simulator-<run id>.<ext>``."""
    return f"simulator-{record.id}.{EXTENSIONS[fmt]}"
