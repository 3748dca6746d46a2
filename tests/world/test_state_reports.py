"""A state check's diff and a conversation's world in every report: terminal, Markdown, HTML, JUnit, Excel and
JSON show the diff line by line, and odd field values (markup, line breaks, quotes) stay text."""

from __future__ import annotations

import importlib
import io
import json
import xml.etree.ElementTree as ET
from typing import Any

from simulator.metrics import case_outcome
from simulator.models.scores import CaseResult, Score
from simulator.models.transcript import AgentEvent, Transcript, UserEvent
from simulator.models.world import StateExpectation, WorldSpec
from simulator.reports.formats import render
from simulator.reports.transcript_text import case_lines, result_lines, transcript_lines
from simulator.world import SeededWorld, check_state
from tests.factories import make_result, make_run, scenario_suite

ODD = "<b>x</b>\nnext | *y*"
SEED: dict[str, Any] = {
    "orders": {"1001": {"status": "placed", "note": "ok"}, "1002": {"status": "placed", "note": "ok"}},
    "cards": {"c-2": {"blocked": False}},
}
EXPECT = StateExpectation.model_validate(
    {
        "records": [{"collection": "orders", "id": "1001", "fields": {"status": "cancelled", "note": "ok"}}],
        "nothing_else_changed": True,
    }
)
#: What the conversation did: the wrong order cancelled, a card blocked, an odd note written.
DIFF_LINES = [
    "cards/c-2 changed: blocked false -> true",
    "orders/1002 changed: status 'placed' -> 'cancelled', note 'ok' -> '<b>x</b>\\nnext | *y*'",
]
RECORD_LINE = "orders/1001 status: expected 'cancelled', is 'placed' (seeded 'placed', not changed)"


def stored_result() -> Any:
    world = SeededWorld(WorldSpec(collections=SEED)).copy()
    world.update("orders", "1002", {"status": "cancelled", "note": ODD})
    world.update("cards", "c-2", {"blocked": True})
    scores = [
        Score(
            metric="state",
            check=r.check,
            source="deterministic",
            verdict="met" if r.met else "not_met",
            reason=r.evidence,
        )
        for r in check_state(EXPECT, world)
    ]
    transcript = Transcript(
        case="cancel",
        kind="scenario",
        events=[
            UserEvent(turn=1, text="Cancel order 1001", source="scripted"),
            AgentEvent(turn=1, messages=["Done."]),
        ],
        turns=1,
        world=world.trace(),
    )
    outcome, reasons = case_outcome(transcript, scores)
    result = CaseResult(
        case="cancel", kind="scenario", outcome=outcome, reasons=reasons, transcript=transcript, scores=scores
    )
    record = make_run("r1", scenario_suite("shop", "cancel"))
    return record, make_result(record, 0, "cancel", outcome, result=result)


def report(fmt: str) -> str:
    record, stored = stored_result()
    return render(fmt, record, [stored]).decode("utf-8-sig")


def test_the_evidence_itself_is_one_line_per_record() -> None:
    _, stored = stored_result()
    reasons = stored.result.reasons
    assert reasons == [f"state: orders/1001: {RECORD_LINE}", "state: nothing else changed: " + "\n".join(DIFF_LINES)]


def test_terminal_shows_the_diff_lines_indented_and_the_world() -> None:
    _, stored = stored_result()
    texts = [line.text for line in result_lines(stored.result)]
    index = texts.index(f"  why: state: nothing else changed: {DIFF_LINES[0]}")
    assert texts[index + 1] == " " * len("  why: ") + DIFF_LINES[1]
    shown = [line.text for line in transcript_lines(stored.result.transcript)]
    assert shown[-3:] == ["World: 2 records changed (3 records seeded)", f"  {DIFF_LINES[0]}", f"  {DIFF_LINES[1]}"]
    brief = [line.text for line in case_lines(stored.result)]
    assert "World: 2 records changed (3 records seeded)" in brief
    assert " " * len("  why: ") + DIFF_LINES[1] in brief


def test_markdown_shows_the_world_and_keeps_odd_values_as_text() -> None:
    text = report("md")
    assert (
        "#### World\n\n2 records changed (3 records seeded)\n\n- cards/c-2 changed: blocked false -&gt; true\n" in text
    )
    assert (
        "- orders/1002 changed: status 'placed' -&gt; 'cancelled', note 'ok' -&gt; '&lt;b&gt;x&lt;/b&gt;\\\\nnext \\| "
        "\\*y\\*'\n" in text
    )
    # In the table of scores the diff's lines stay apart, each escaped.
    row = next(line for line in text.splitlines() if line.startswith("| ✗ not_met | state: nothing else changed"))
    assert "true<br>orders/1002 changed" in row
    assert "<b>" not in text


def test_html_shows_the_world_and_escapes_odd_values() -> None:
    text = report("html")
    assert "<h4>World</h4><p class='muted'>2 records changed (3 records seeded)</p>" in text
    assert "<li><code>cards/c-2 changed: blocked false -&gt; true</code></li>" in text
    assert "&lt;b&gt;x&lt;/b&gt;" in text
    assert "<b>x</b>" not in text
    assert "white-space: pre-line" in text


def test_junit_carries_the_diff_in_the_failure() -> None:
    root = ET.fromstring(report("junit"))
    failure = root.find(".//failure")
    assert failure is not None
    assert failure.get("message") == f"state: orders/1001: {RECORD_LINE}"
    body = failure.text or ""
    assert f"  - state: nothing else changed: {DIFF_LINES[0]}\n    {DIFF_LINES[1]}\n" in body


def test_xlsx_holds_the_diff_in_the_reasons_cell() -> None:
    openpyxl = importlib.import_module("openpyxl")
    sheet = openpyxl.load_workbook(io.BytesIO(render("xlsx", *stored_result_list())))["Cases"]
    header = [cell.value for cell in sheet[1]]
    reasons = sheet.cell(row=2, column=header.index("reasons") + 1).value
    assert reasons == f"state: orders/1001: {RECORD_LINE}\nstate: nothing else changed: " + "\n".join(DIFF_LINES)


def stored_result_list() -> tuple[Any, list[Any]]:
    record, stored = stored_result()
    return record, [stored]


def test_json_keeps_the_scores_diff_and_the_world() -> None:
    data = json.loads(report("json"))
    (case,) = data["results"]
    scores = [score for score in case["result"]["scores"] if score["metric"] == "state"]
    assert [score["reason"] for score in scores] == [RECORD_LINE, "\n".join(DIFF_LINES)]
    changes = case["result"]["transcript"]["world"]["changes"]
    assert [change["id"] for change in changes] == ["c-2", "1002"]
