"""A run as JSON: the whole run record with every result, under a versioned envelope. Pure functions, no I/O.

The document is::

    {"format": "simulator.run-report", "version": 1, "run": <RunRecord>, "results": [<StoredResult>, ...]}

``run`` and each result are the stored models exactly as pydantic dumps them to JSON (timestamps in ISO 8601,
every field present, non-finite numbers as null), results in plan order. A reader checks ``format`` and
``version`` first: the version goes up whenever a field is removed or changes meaning (adding a field does not
change it). The JSON Schema of the document is :func:`run_report_schema`, published as
``simulator/schemas/run-report.schema.json``; regenerate that file with
``python -m simulator.reports.json_export`` (a test fails while it is stale).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any, Literal

from pydantic import Field
from pydantic.json_schema import GenerateJsonSchema

from simulator.models import DataModel
from simulator.models.run import RunRecord, StoredResult
from simulator.reports.tabular import ordered_results
from simulator.safety import json_safe

__all__ = [
    "REPORT_FORMAT",
    "REPORT_VERSION",
    "SCHEMA_FILE",
    "RunReport",
    "render_json",
    "run_report_schema",
    "run_report_schema_text",
]

REPORT_FORMAT = "simulator.run-report"
REPORT_VERSION = 1
#: The schema's file name in ``simulator/schemas/``.
SCHEMA_FILE = "run-report.schema.json"
_SCHEMA_DIALECT = "https://json-schema.org/draft/2020-12/schema"
_SCHEMA_ID = "urn:simulator:schema:run-report"


class RunReport(DataModel):
    """The JSON report of a run: a format name and version, the run record, and its results."""

    format: Literal["simulator.run-report"] = Field(
        default="simulator.run-report", description="Always 'simulator.run-report'."
    )
    version: Literal[1] = Field(default=1, description="The report format's version.")
    run: RunRecord
    results: list[StoredResult] = Field(default_factory=list, description="Every stored result, in plan order.")


def render_json(record: RunRecord, results: Sequence[StoredResult]) -> str:
    """The run and its results as a JSON document (indented, UTF-8 text, ends with a newline)."""
    report = RunReport(run=record, results=ordered_results(record, results))
    # C1 controls and bidi overrides as \u escapes (the same values), so the file cannot drive a terminal.
    return json_safe(report.model_dump_json(indent=2)) + "\n"


class _ReportSchema(GenerateJsonSchema):
    """Field titles repeat the field names; leave them out, as the other published schemas do."""

    def field_title_should_be_set(self, schema: Any) -> bool:
        return False


def run_report_schema() -> dict[str, Any]:
    """The JSON Schema (draft 2020-12) of what :func:`render_json` writes, generated from :class:`RunReport`."""
    body = RunReport.model_json_schema(schema_generator=_ReportSchema, mode="serialization")
    body = {key: value for key, value in body.items() if key != "title"}
    body["required"] = ["format", "version", "run", "results"]
    return {"$schema": _SCHEMA_DIALECT, "$id": _SCHEMA_ID, "title": "Simulator run report", **body}


def run_report_schema_text() -> str:
    """The text of ``simulator/schemas/run-report.schema.json``, as it must be committed."""
    return json.dumps(run_report_schema(), indent=2, ensure_ascii=False) + "\n"


if __name__ == "__main__":  # pragma: no cover - developer tool: python -m simulator.reports.json_export
    from pathlib import Path

    target = Path(__file__).resolve().parent.parent / "schemas" / SCHEMA_FILE
    target.write_text(run_report_schema_text(), encoding="utf-8")
    print(f"wrote {target}")
