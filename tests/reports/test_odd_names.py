"""Names with control characters and bidi marks in every report format.

A case name, tag, persona or transcript line may hold a bidi override (U+202E shows "evil" as "live"), a bidi
mark or isolate, or a control character. No report shows such a character raw: each is written as the terminal
writes it (``\\u202e``, ``\\x01``), so nothing reorders the page and two names that differ only by such a
character stay two names in every format (JSON keeps the raw text: its own escapes say it exactly, see
tests/test_terminal_escaping.py).
"""

from __future__ import annotations

import csv
import io
import json
import re
import xml.etree.ElementTree as ET
import zipfile

import pytest

from simulator.metrics import summarized
from simulator.models import Suite
from simulator.models.run import RunRecord, StoredResult, SuiteSnapshot
from simulator.models.transcript import AgentEvent, Transcript, UserEvent
from simulator.reports.formats import render
from simulator.safety import terminal_safe
from tests.factories import make_result, make_run

#: Each odd character after "a": a bidi override, an isolate, the marks, a C0 and a C1 control, DEL, U+FFFE.
ODD = ["\u202e", "\u2066", "\u200e", "\u200f", "\u061c", "\x01", "\x1b", "\x9b", "\x7f", "\ufffe"]
NAMES = ["ab", *(f"a{char}b" for char in ODD)]
#: Any character that must not reach a report raw.
RAW = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069\ufffe\uffff]")


def _run() -> tuple[RunRecord, list[StoredResult]]:
    suite = Suite.model_validate(
        {
            "name": "odd",
            "cases": [
                {"name": name, "kind": "scenario", "goal": f"say {name}", "tags": [f"tag{name}"]} for name in NAMES
            ],
        }
    )
    record = make_run("20260101-000000-abcdef", SuiteSnapshot(path="odd.yaml", suite=suite))
    results = []
    for name in NAMES:
        transcript = Transcript(
            case=name,
            kind="scenario",
            events=[
                UserEvent(turn=1, text=f"user says {name}", source="scripted"),
                AgentEvent(turn=1, messages=[f"agent says {name}"]),
            ],
        )
        results.append(make_result(record, 0, name, "fail", transcript=transcript, reasons=[f"reason {name}"]))
    return summarized(record, results), results


def _xlsx_text(data: bytes) -> str:
    with zipfile.ZipFile(io.BytesIO(data)) as archive:
        parts = [archive.read(name).decode("utf-8") for name in archive.namelist() if name.endswith(".xml")]
    return "\n".join(parts)


def _names_in(fmt: str, data: bytes) -> set[str]:
    """The case names as the format's own reader reads them back (where it has one)."""
    if fmt == "junit":
        return {case.attrib["name"] for case in ET.fromstring(data).iter("testcase")}
    if fmt == "csv":
        return {row["case"] for row in csv.DictReader(io.StringIO(data.decode("utf-8-sig")))}
    if fmt == "xlsx":
        import openpyxl

        sheet = openpyxl.load_workbook(io.BytesIO(data))["Cases"]
        rows = list(sheet.iter_rows(values_only=True))
        column = list(rows[0]).index("case")
        return {str(row[column]) for row in rows[1:]}
    raise AssertionError(fmt)


def _shown(fmt: str, name: str) -> str:
    """How ``name`` must appear in ``fmt``: escaped as the terminal does (and Markdown's own escape for ``\\``)."""
    visible = terminal_safe(name)
    return visible.replace("\\", "\\\\") if fmt == "md" else visible


@pytest.mark.parametrize("fmt", ["md", "html", "junit", "csv", "xlsx"])
def test_odd_characters_are_shown_escaped_and_names_stay_distinct(fmt: str) -> None:
    record, results = _run()
    data = render(fmt, record, results)
    text = _xlsx_text(data) if fmt == "xlsx" else data.decode("utf-8")
    raw = sorted({f"U+{ord(char):04X}" for char in RAW.findall(text)})
    assert not raw, f"raw characters in the {fmt} report: {raw}"
    for name in NAMES:
        assert _shown(fmt, name) in text, f"{name!r} is not shown as {_shown(fmt, name)!r} in the {fmt} report"
    if fmt in ("junit", "csv", "xlsx"):
        names = _names_in(fmt, data)
        if fmt == "junit":
            names = {name.removesuffix(" #1") for name in names}
        assert names == {terminal_safe(name) for name in NAMES}
        assert len(names) == len(NAMES)  # distinct, none stripped into another


def test_html_filters_tags_and_transcripts_show_the_escapes() -> None:
    record, results = _run()
    page = render("html", record, results).decode("utf-8")
    data = json.loads(re.search(r"id='simulator-report-data'>(.*?)</script>", page, re.S).group(1))  # type: ignore[union-attr]
    tags = {tag for case in data["cases"] for tag in case["tags"]}
    assert tags == {f"tag{terminal_safe(name)}" for name in NAMES}  # the filter's values, as its options show them
    for name in NAMES:
        assert f"<option value='tag{terminal_safe(name)}'" in page or f'value="tag{terminal_safe(name)}"' in page
        assert f"user says {terminal_safe(name)}" in page
        assert f"agent says {terminal_safe(name)}" in page
