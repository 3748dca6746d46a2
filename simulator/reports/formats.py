"""Every report format behind one name: ``render(fmt, record, results)``. Pure; the CLI writes the bytes.

Formats are registered by name (:data:`REGISTRY`): each with the file suffix its reports are written with and
where its renderer lives, imported on first use (the Excel writer pulls in openpyxl, which a Markdown report
does not need).

A CSV report written to a file starts with the UTF-8 byte order mark (:func:`file_bytes`): without it Excel, on
Windows above all, reads the file in the local code page and garbles every non-ASCII character; spreadsheet
programs, pandas, R and most CSV readers skip the mark. On stdout (piped into a program) it has none.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from types import MappingProxyType
from typing import Final, Literal, cast

from simulator.models.run import RunRecord, StoredResult
from simulator.plugins import PluginError, load_plugin, plugins

ReportFormat = Literal["md", "html", "json", "csv", "xlsx", "junit"]
#: The UTF-8 byte order mark, which tells spreadsheet programs that a CSV file is UTF-8.
UTF8_BOM = "\ufeff".encode()
Renderer = Callable[[RunRecord, list[StoredResult]], str | bytes]


@dataclass(frozen=True)
class FormatSpec:
    """One report format: its file suffix and its renderer (``module:function``, imported when used)."""

    suffix: str
    renderer: str
    #: What a file of this format starts with, before the report (see :func:`file_bytes`).
    file_prefix: bytes = b""

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
        "csv": FormatSpec("csv", "simulator.reports.tabular:render_csv", file_prefix=UTF8_BOM),
        "xlsx": FormatSpec("xlsx", "simulator.reports.tabular:render_xlsx"),
        "junit": FormatSpec("xml", "simulator.reports.junit:render_junit"),
    }
)
FORMATS: tuple[ReportFormat, ...] = tuple(REGISTRY)
EXTENSIONS: dict[ReportFormat, str] = {name: spec.suffix for name, spec in REGISTRY.items()}


#: The formats a person reads whole, which say in their header which stored results could not be read.
_NAMES_LEFT_OUT: Final = ("md", "html")


def report_formats() -> tuple[str, ...]:
    """Every report format a command accepts: the built-in ones, then those installed report plugins add."""
    return (*FORMATS, *(name for name in plugins("reports") if name not in REGISTRY))


def format_spec(fmt: str) -> FormatSpec:
    """The format ``fmt``: built in, else the installed report plugin of that name (its renderer imported now to
    read its file suffix: the renderer's ``suffix`` attribute, else the format's name)."""
    spec = REGISTRY.get(cast(ReportFormat, fmt))
    if spec is not None:
        return spec
    if fmt not in plugins("reports"):
        raise ValueError(f"unknown report format {fmt!r}: choose one of {', '.join(report_formats())}")
    renderer = load_plugin("reports", fmt)
    if not callable(renderer):
        raise PluginError(
            f"the report plugin {plugins('reports')[fmt].describe()} is not a renderer: it must be a function "
            "taking (record, results) and returning text or bytes"
        )
    return FormatSpec(str(getattr(renderer, "suffix", fmt)), plugins("reports")[fmt].value)


def render(fmt: str, record: RunRecord, results: list[StoredResult], *, left_out: Sequence[str] = ()) -> bytes:
    """The report in ``fmt`` as bytes (UTF-8 for the text formats). ``left_out`` describes the stored results
    that could not be read (each with its fix): the Markdown and HTML reports list them under their header."""
    renderer = format_spec(fmt).load()
    output: str | bytes
    if left_out and fmt in _NAMES_LEFT_OUT:
        output = cast(Callable[..., str], renderer)(record, results, left_out=left_out)
    else:
        output = renderer(record, results)
    if not isinstance(output, str | bytes):
        raise PluginError(f"the report format {fmt!r} returned {type(output).__name__}, not text or bytes")
    return output.encode("utf-8") if isinstance(output, str) else output


def file_bytes(fmt: str, data: bytes) -> bytes:
    """A report rendered by :func:`render` as the bytes of its file: a CSV starts with the UTF-8 byte order mark,
    so a spreadsheet opens it as UTF-8."""
    return format_spec(fmt).file_prefix + data


def default_filename(record: RunRecord, fmt: str) -> str:
    """``simulator-<run id>.<suffix>``."""
    return f"simulator-{record.id}.{format_spec(fmt).suffix}"
