"""The comparison report in Markdown and HTML: regressions first, steps side by side, everything escaped."""

from __future__ import annotations

import html
from html.parser import HTMLParser
from typing import Any

import pytest

from simulator.analysis.compare import Comparison, compare_runs
from simulator.models.run import RunRecord, StoredResult
from simulator.models.scores import Outcome
from simulator.reports.compare_report import CONTENT_SECURITY_POLICY, render_compare_html, render_compare_markdown
from tests.factories import make_result, make_run, scenario_suite
from tests.factories import make_step as step

XSS = "<script>alert(1)</script>"
XSS_IMG = "<img src=x onerror=alert(2)>"


def result(run: RunRecord, case: str, outcome: Outcome, **fields: Any) -> StoredResult:
    """A result in the one suite of the runs here."""
    return make_result(run, 0, case, outcome, **fields)


SUITE = scenario_suite("billing", "p", "hi")


RUN_A = make_run("run-a", SUITE)
RUN_B = make_run("run-b", SUITE)
RESET_A: tuple[Outcome, ...] = ("fail", "fail", "pass")
RESET_B: tuple[Outcome, ...] = ("pass", "fail", "pass")


@pytest.fixture
def comparison() -> Comparison:
    a = [
        result(RUN_A, "refund", "pass", steps=[step(0, "greet", "complete"), step(1, "give order number", "complete")]),
        result(RUN_A, "lookup", "pass"),
        result(RUN_A, "cancel", "fail", steps=[step(0, "cancel", "incomplete", "never cancelled")], reasons=["no"]),
        result(RUN_A, "legacy", "pass"),
        result(RUN_A, "greeting", "pass"),
        *[result(RUN_A, "reset", o, repeat=r) for r, o in enumerate(RESET_A)],
        result(RUN_A, f"xss {XSS_IMG} | *bold*", "pass", steps=[step(0, f"step {XSS_IMG}", "complete")]),
    ]
    b = [
        result(
            RUN_B,
            "refund",
            "fail",
            steps=[
                step(0, "greet", "complete"),
                step(1, "give order number", "incomplete", "the agent never asked for the order number"),
            ],
            reasons=["step 2: give order number: the agent never asked for the order number"],
        ),
        result(RUN_B, "lookup", "error", reasons=["agent down: connection refused"]),
        result(RUN_B, "cancel", "pass", steps=[step(0, "cancel", "complete", "cancelled")]),
        result(RUN_B, "new-flow", "fail", reasons=["the user gave up"]),
        result(RUN_B, "greeting", "pass"),
        *[result(RUN_B, "reset", o, repeat=r) for r, o in enumerate(RESET_B)],
        result(
            RUN_B,
            f"xss {XSS_IMG} | *bold*",
            "fail",
            steps=[step(0, f"step {XSS_IMG}", "incomplete", f"the agent replied {XSS} | `code` [x](http://e.vil)")],
            reasons=[f"judge: {XSS}"],
        ),
    ]
    return compare_runs(RUN_A, a, RUN_B, b)


# -- Markdown -------------------------------------------------------------------------------------------------


def test_markdown_header(comparison: Comparison) -> None:
    lines = render_compare_markdown(comparison).splitlines()
    # Correctness counts the repeats of the cases in both runs (not new-flow, only in B, nor legacy, only in A).
    assert lines[:12] == [
        "# Run comparison: run-b against run-a",
        "",
        "- **Run A (baseline):** run-a",
        "- **Run B (new):** run-b",
        "- **Correctness on the 6 comparable cases in both runs, A -> B:** 62.5% (5/8) -> 50.0% (4/8) (-12.5 points)",
        "- **McNemar on the comparable cases:** b = 3 (passed in A, not in B), c = 1 (passed in B, not in A), "
        "n = 4, exact two-sided p = 0.625",
        "- **Significance:** Not significant at 0.05: p = 0.625 >= 0.05. With only 4 discordant pairs, no "
        "difference can be significant (at least 6 are needed).",
        "",
        "## Settings",
        "",
        "The settings are the same in both runs.",
        "",
    ]


def test_markdown_lists_regressions_first_with_step_tables(comparison: Comparison) -> None:
    text = render_compare_markdown(comparison)
    headings = [line for line in text.splitlines() if line.startswith("## ")]
    assert headings == [
        "## Settings",
        "## Regressed (3)",
        "## Improved (1)",
        "## New (only in B) (1)",
        "## Removed (only in A) (1)",
        "## Unchanged (2)",
    ]
    regressed = text[text.index("## Regressed") : text.index("## Improved")]
    assert regressed.index("### billing / lookup") < regressed.index("### billing / refund")
    assert (
        "### billing / refund\n\n✓ pass 1/1 -> ✗ fail 0/1\n\n"
        "| step | A | B | B's rationale |\n"
        "|---|---|---|---|\n"
        "| 2. give order number | ✓ complete (1/1) | ✗ not complete (0/1) "
        "| the agent never asked for the order number |\n"
        "\nWhy B did not pass:\n\n- step 2: give order number: the agent never asked for the order number\n"
    ) in regressed
    # A regressed case with no step to compare still says why.
    assert (
        "### billing / lookup\n\n✓ pass 1/1 -> ✗ fail 0/1 (1 error)\n\nNo step changed between the runs.\n\n"
        "Why B did not pass:\n\n- agent down: connection refused\n"
    ) in regressed
    improved = text[text.index("## Improved") : text.index("## New")]
    assert "| 1. cancel | ✗ not complete (0/1) | ✓ complete (1/1) | — |" in improved
    assert "- billing / new-flow: ✗ fail 0/1 (only in B)\n  - why: the user gave up" in text
    assert "- billing / legacy: ✓ pass 1/1 (only in A)" in text
    unchanged = text[text.index("## Unchanged") :]
    assert unchanged.startswith("## Unchanged (2)\n\n2 cases unchanged, 1 with a changed pass rate or steps.\n")
    assert "### billing / reset\n\n✗ fail 1/3 -> ✗ fail 2/3 (pass rate +33.3 points)" in unchanged
    assert text.endswith("(pass rate +33.3 points)\n")


def test_markdown_escapes_run_text(comparison: Comparison) -> None:
    text = render_compare_markdown(comparison)
    assert "<script" not in text
    assert "<img" not in text
    assert (
        "| 1. step &lt;img src=x onerror=alert(2)&gt; | ✓ complete (1/1) | ✗ not complete (0/1) "
        "| the agent replied &lt;script&gt;alert(1)&lt;/script&gt; \\| \\`code\\` \\[x\\](http\\://e.vil) |"
    ) in text
    assert "### billing / xss &lt;img src=x onerror=alert(2)&gt; \\| \\*bold\\*" in text
    # Every table row keeps its four cells: no text added a cell.
    for line in text.splitlines():
        if line.startswith("| "):
            assert line.replace("\\|", "").count("|") == 5, line


def test_markdown_without_regressions_says_so() -> None:
    same = [result(RUN_B, "refund", "pass")]
    text = render_compare_markdown(compare_runs(RUN_A, [result(RUN_A, "refund", "pass")], RUN_B, same))
    assert "## Regressed (0)\n\nNo regressed cases.\n\n## Unchanged (1)\n\n1 case unchanged.\n" in text
    assert "## Improved" not in text


# -- HTML -----------------------------------------------------------------------------------------------------


class _Structure(HTMLParser):
    """Collects the section ids in order, checks that every element is closed, and records scripts."""

    VOID = frozenset({"meta", "link", "br", "hr", "img", "input"})

    def __init__(self) -> None:
        super().__init__()
        self.stack: list[str] = []
        self.sections: list[str] = []
        self.tags: set[str] = set()
        self.attributes: list[tuple[str, str | None]] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.add(tag)
        self.attributes += attrs
        if tag == "section":
            self.sections.append(dict(attrs).get("id") or "")
        if tag not in self.VOID:
            self.stack.append(tag)

    def handle_endtag(self, tag: str) -> None:
        assert self.stack, f"</{tag}> closes nothing"
        assert self.stack.pop() == tag


def parse(page: str) -> _Structure:
    parser = _Structure()
    parser.feed(page)
    parser.close()
    assert parser.stack == []
    return parser


def test_html_is_self_contained_and_ordered(comparison: Comparison) -> None:
    page = render_compare_html(comparison)
    assert page.startswith("<!DOCTYPE html>")
    csp = html.escape(CONTENT_SECURITY_POLICY, quote=True)
    assert f"<meta http-equiv='Content-Security-Policy' content=\"{csp}\">" in page
    assert "default-src 'none'" in CONTENT_SECURITY_POLICY
    assert "script-src" not in CONTENT_SECURITY_POLICY  # no script may run at all
    structure = parse(page)
    assert structure.sections == ["settings", "regressed", "improved", "new", "removed", "unchanged"]
    assert "script" not in structure.tags
    assert "img" not in structure.tags
    # Nothing is loaded from anywhere: the only link is the empty data: icon.
    links = [value or "" for name, value in structure.attributes if name in ("src", "href")]
    assert [link for link in links if not link.startswith("#")] == ["data:,"]
    assert "<style>" in page
    assert ".badge" in page  # the run report's stylesheet, embedded
    assert render_compare_html(comparison) == page  # pure


def test_html_header_and_step_table(comparison: Comparison) -> None:
    page = render_compare_html(comparison)
    assert "<h1>Run comparison: <code>run-b</code> against <code>run-a</code></h1>" in page
    assert (
        "<dt>Correctness on the 6 comparable cases in both runs, A → B</dt>"
        "<dd>62.5% (5/8) -&gt; 50.0% (4/8) (-12.5 points)</dd>"
    ) in page
    assert "b = 3 (passed in A, not in B), c = 1 (passed in B, not in A), n = 4, exact two-sided p = 0.625" in page
    assert "Not significant at 0.05: p = 0.625 &gt;= 0.05." in page
    assert (
        "<thead><tr><th>Step</th><th>A</th><th>B</th><th>B's rationale</th></tr></thead>"
        "<tbody><tr class='step-regressed'><td>2. give order number</td><td class='ok'>✓ complete (1/1)</td>"
        "<td class='bad'>✗ not complete (0/1)</td>"
        "<td class='rationale'>the agent never asked for the order number</td></tr></tbody>"
    ) in page
    assert page.index("change-regressed") < page.index("change-improved") < page.index("change-new")
    assert "<td class='bad'>✗ not complete (0/1)</td><td class='ok'>✓ complete (1/1)</td>" in page
    assert "<p>2 cases unchanged, 1 with a changed pass rate or steps.</p>" in page


def test_unsure_and_not_reached_steps_and_repeats_from_1() -> None:
    a = [
        result(RUN_A, "fees", "pass", repeat=r, steps=[step(0, "ask", "complete"), step(1, "bye", "complete")])
        for r in range(2)
    ]
    b = [
        result(RUN_B, "fees", "pass", repeat=0, steps=[step(0, "ask", "complete"), step(1, "bye", "complete")]),
        result(
            RUN_B,
            "fees",
            "unsure",
            repeat=1,
            steps=[step(0, "ask", "unsure", "not judged"), step(1, "bye", "not_attempted")],
        ),
    ]
    comparison = compare_runs(RUN_A, a, RUN_B, b)
    markdown = render_compare_markdown(comparison)
    assert "| 1. ask | ✓ complete (2/2) | ? unsure (1/2), first in repeat 2 | not judged |" in markdown
    assert "| 2. bye | ✓ complete (2/2) | ⊘ not reached (1/2), first in repeat 2 | — |" in markdown
    page = render_compare_html(comparison)
    assert "<td class='warn'>? unsure (1/2), first in repeat 2</td>" in page
    assert "<td class='muted'>⊘ not reached (1/2), first in repeat 2</td>" in page
    improved = render_compare_markdown(compare_runs(RUN_B, b, RUN_A, a))
    assert "| 1. ask | ? unsure (1/2) | ✓ complete (2/2) | — |" in improved


def test_html_escapes_a_script_in_a_rationale(comparison: Comparison) -> None:
    page = render_compare_html(comparison)
    assert XSS not in page
    assert XSS_IMG not in page
    assert (
        "<td class='rationale'>the agent replied &lt;script&gt;alert(1)&lt;/script&gt; | `code` [x](http://e.vil)</td>"
    ) in page
    assert "<li>judge: &lt;script&gt;alert(1)&lt;/script&gt;</li>" in page
    assert "xss &lt;img src=x onerror=alert(2)&gt; | *bold*" in page


def test_html_escapes_run_ids() -> None:
    run_a, run_b = make_run("a'\"<b>", SUITE), make_run("b&<i>", SUITE)
    page = render_compare_html(compare_runs(run_a, [], run_b, []))
    assert "<b>" not in page
    assert "<i>" not in page
    assert "<code>b&amp;&lt;i&gt;</code> against <code>a&#x27;&quot;&lt;b&gt;</code>" in page
    assert "<p class='ok'>No regressed cases.</p>" in page
    parse(page)
