"""Every report format behind one name: ``render(fmt, record, results)``. Pure; the CLI writes the bytes.

Formats are registered by name (:data:`REGISTRY`): each with the file suffix its reports are written with and
where its renderer lives, imported on first use (the Excel writer pulls in openpyxl, which a Markdown report
does not need).
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from types import MappingProxyType
from typing import Final, Literal, cast

from simulator.models.run import RunRecord, StoredResult

ReportFormat = Literal["md", "html", "json", "csv", "xlsx", "junit"]
Renderer = Callable[[RunRecord, list[StoredResult]], str | bytes]


@dataclass(frozen=True)
class FormatSpec:
    """One report format: its file suffix and its renderer (``module:function``, imported when used)."""

    suffix: str
    renderer: str

    def load(self) -> Renderer:
        """The renderer function."""
        module, _, name = self.renderer.partition(":")
        return cast(Renderer, getattr(importlib.import_module(module), name))


#: Every report format by name, in the order they are listed to a person.
REGISTRY: MappingProxyType[ReportFormat, FormatSpec] = MappingProxyType(
    {
        "md": FormatSpec("md", "simulator.reports.markdown:render_markdown"),
        "html": FormatSpec("html", "simulator.reports.html:render_html"),
        "json": FormatSpec("json", "simulator.reports.json_export:render_json"),
        "csv": FormatSpec("csv", "simulator.reports.tabular:render_csv"),
        "xlsx": FormatSpec("xlsx", "simulator.reports.tabular:render_xlsx"),
        "junit": FormatSpec("xml", "simulator.reports.junit:render_junit"),
    }
)
FORMATS: tuple[ReportFormat, ...] = tuple(REGISTRY)
EXTENSIONS: dict[ReportFormat, str] = {name: spec.suffix for name, spec in REGISTRY.items()}


#: The formats a person reads whole, which say in their header which stored results could not be read.
_NAMES_LEFT_OUT: Final = ("md", "html")


def render(fmt: ReportFormat, record: RunRecord, results: list[StoredResult], *, left_out: Sequence[str] = ()) -> bytes:
    """The report in ``fmt`` as bytes (UTF-8 for the text formats). ``left_out`` describes the stored results
    that could not be read (each with its fix): the Markdown and HTML reports list them under their header."""
    spec = REGISTRY.get(fmt)
    if spec is None:
        raise ValueError(f"unknown report format {fmt!r}: choose one of {', '.join(FORMATS)}")
    renderer = spec.load()
    output: str | bytes
    if left_out and fmt in _NAMES_LEFT_OUT:
        output = cast(Callable[..., str], renderer)(record, results, left_out=left_out)
    else:
        output = renderer(record, results)
    return output.encode("utf-8") if isinstance(output, str) else output


def default_filename(record: RunRecord, fmt: ReportFormat) -> str:
    """``simulator-<run id>.<suffix>``."""
    return f"simulator-{record.id}.{REGISTRY[fmt].suffix}"
