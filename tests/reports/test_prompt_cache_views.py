"""Every view of a run shows what a provider's prompt cache did (prompt tokens read and written, what it saved)
beside, and worded apart from, the request cache's answers; a run without one shows no such column."""

from __future__ import annotations

import csv
import io
import json
from typing import Any

import pytest

from simulator.metrics import run_summary
from simulator.models.run import RunRecord, StoredResult
from simulator.models.transcript import Transcript, Usage
from simulator.reports.html import render_html
from simulator.reports.json_export import render_json
from simulator.reports.markdown import render_markdown
from simulator.reports.run_text import totals_lines
from simulator.reports.tabular import render_csv, render_xlsx
from tests import factories

CACHED = {
    "user": Usage(
        prompt_tokens=1000, completion_tokens=50, calls=4, cost=0.0012, cache_read_tokens=600, cache_savings=0.0009
    ),
    "judge": Usage(
        prompt_tokens=400, completion_tokens=40, calls=1, cost=0.0006, cache_write_tokens=300, cache_savings=-0.0001
    ),
    # An answer from the request cache: no request, so nothing spent or saved now.
    "agent": Usage(prompt_tokens=100, completion_tokens=10, calls=1, cost=0.0, cached_calls=1, cached_cost=0.0002),
}
PLAIN = {"user": Usage(prompt_tokens=1000, completion_tokens=50, calls=4, cost=0.0012)}


def a_run(usage: dict[str, Usage]) -> tuple[RunRecord, list[StoredResult]]:
    record = factories.make_run("run-prompt-cache", "shop", status="completed")
    transcript = Transcript(case="refund", kind="scenario", usage=usage)
    results = [factories.make_result(record, 0, "refund", transcript=transcript)]
    return record.model_copy(update={"totals": run_summary(results, 1.0, record)}), results


def csv_rows(text: str) -> list[dict[str, str]]:
    return list(csv.DictReader(io.StringIO(text)))


def test_the_run_summary_adds_up_the_prompt_cache() -> None:
    record, _ = a_run(CACHED)
    assert record.totals is not None
    user, judge = record.totals.usage["user"], record.totals.usage["judge"]
    assert (user.cache_read_tokens, user.cache_write_tokens, user.cache_savings) == (600, 0, 0.0009)
    assert (judge.cache_read_tokens, judge.cache_write_tokens, judge.cache_savings) == (0, 300, -0.0001)


def _terminal(record: RunRecord, results: list[StoredResult]) -> str:
    return "\n".join(totals_lines(record))


def _csv(record: RunRecord, results: list[StoredResult]) -> str:
    [row] = csv_rows(render_csv(record, results))
    return " ".join(f"{key}={value}" for key, value in row.items())


def _json(record: RunRecord, results: list[StoredResult]) -> str:
    usage = json.loads(render_json(record, results))["run"]["totals"]["usage"]
    return json.dumps(usage, sort_keys=True)


@pytest.mark.parametrize(
    ("view", "expected"),
    [
        (
            _terminal,
            [
                "user: 4 answers, 4 requests sent, 1000 prompt + 50 completion tokens, $0.0012; provider prompt "
                "cache: 600 of 1,000 prompt tokens read (60.0%), saved $0.0009",
                "judge: 1 answer, 1 request sent, 400 prompt + 40 completion tokens, $0.0006; provider prompt cache: "
                "0 of 400 prompt tokens read (0.0%), 300 written, saved -$0.0001",
                "agent: 1 answer (1 from the request cache, would-be $0.0002), 0 requests sent",
            ],
        ),
        (
            render_markdown,
            [
                "- **Provider prompt cache:** 600 of 1,500 prompt tokens read (40.0%), 300 written, saved $0.0008",
                "| role | answers | from request cache | requests sent | prompt tokens | completion tokens | cost | "
                "would-be cost of cached | prompt cache read | prompt cache written | saved by prompt cache |",
                "| user | 4 | 0 | 4 | 1,000 | 50 | $0.0012 | – | 600 | 0 | $0.0009 |",
                "| judge | 1 | 0 | 1 | 400 | 40 | $0.0006 | – | 0 | 300 | -$0.0001 |",
                "| agent | 1 | 1 | 0 | 100 | 10 | $0.0000 | $0.0002 | 0 | 0 | – |",
            ],
        ),
        (
            render_html,
            [
                "Provider prompt cache (600 of 1,500 prompt tokens read, saved $0.0008)",
                "<th class='num'>From request cache</th>",
                "<th class='num'>Prompt cache read</th><th class='num'>Prompt cache written</th>"
                "<th class='num'>Saved by prompt cache</th>",
                "<td class='num'>600</td><td class='num'>0</td><td class='num'>$0.0009</td>",
                "600 prompt tokens from the provider&#x27;s prompt cache",
            ],
        ),
        (_csv, ["prompt_cache_read_tokens=600 prompt_cache_write_tokens=300 prompt_cache_saved_usd=0.0008"]),
        (
            _json,
            ['"cache_read_tokens": 600, "cache_savings": 0.0009', '"cache_savings": -0.0001, "cache_write_tokens"'],
        ),
    ],
)
def test_every_view_shows_the_provider_prompt_cache(view: Any, expected: list[str]) -> None:
    text = view(*a_run(CACHED))
    for part in expected:
        assert part in text


@pytest.mark.parametrize("view", [_terminal, render_markdown, render_html, _csv, _json])
def test_a_run_without_a_provider_prompt_cache_shows_none(view: Any) -> None:
    text = view(*a_run(PLAIN)).lower()
    assert "prompt cache" not in text
    assert "prompt_cache" not in text
    assert "cache_read" not in text


def test_the_workbook_has_the_prompt_cache_in_its_summary_and_cases() -> None:
    from openpyxl import load_workbook

    book = load_workbook(io.BytesIO(render_xlsx(*a_run(CACHED))))
    summary = {row[0]: row[1] for row in book["Summary"].iter_rows(values_only=True) if row and row[0]}
    assert summary["user prompt cache read tokens"] == 600
    assert summary["judge prompt cache write tokens"] == 300
    assert summary["judge prompt cache saved_usd"] == -0.0001
    header, row = list(book["Cases"].iter_rows(values_only=True))[:2]
    cells = dict(zip(header, row, strict=True))
    assert (cells["prompt_cache_read_tokens"], cells["prompt_cache_write_tokens"]) == (600, 300)
    assert cells["prompt_cache_saved_usd"] == pytest.approx(0.0008)
