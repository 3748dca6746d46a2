"""``simulator view`` in a real headless chromium, driven through its DevTools protocol (``_devtools``): the runs
list, the note edited in place, a running run's page following the run, a comparison. On every page visited:
no console error or uncaught exception, no request anywhere but the app, and a screenshot kept.

The app is served by uvicorn on a free loopback port over a store holding two offline runs of the demo suite;
without chromium every test skips, saying how to install it."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import quote

import pytest

import simulator
from simulator.models.run import Plan, PlanItem
from simulator.store import RunStore
from simulator.viewer import create_app
from tests.factories import make_result, make_run
from tests.view._devtools import Chromium, Page, chromium_binary, serving, wait_until

pytestmark = pytest.mark.browser

ROOT = Path(__file__).resolve().parents[2]
LIVE = "20260102-000000-bbbbbb"


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("view-store") / "runs.db"
    simulator.run(str(ROOT / "suites" / "demo"), db=path, agent_version="v1", note="baseline")
    simulator.run(str(ROOT / "suites" / "demo"), db=path, agent_version="v2")
    return path


@pytest.fixture(scope="module")
def address(store: Path) -> Iterator[str]:
    with serving(create_app(store)) as served:
        yield served


@pytest.fixture(scope="module")
def browser(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Chromium]:
    binary = chromium_binary()
    with Chromium(binary, tmp_path_factory.mktemp("chromium-profile")) as running:
        yield running


@pytest.fixture
def page(browser: Chromium, address: str) -> Iterator[Page]:
    opened = browser.new_page()
    yield opened
    opened.close()
    assert not opened.errors, "the pages logged errors:\n" + "\n".join(opened.errors)
    outside = [url for url in opened.requests if not url.startswith((address + "/", "data:"))]
    assert not outside, f"requests left the app ({address}): {outside}"


def _run_ids(store: Path) -> list[str]:
    return [record.id for record in simulator.list_runs(db=store, limit=None)]


def _demo_runs(store: Path) -> tuple[str, str]:
    """The demo suite's two runs: the baseline (agent version v1) and the new one (v2)."""
    versions = {record.agent_version: record.id for record in simulator.list_runs(db=store, limit=None)}
    return versions["v1"], versions["v2"]


def test_the_runs_list_shows_every_run(page: Page, address: str, store: Path, tmp_path: Path) -> None:
    page.goto(address + "/")
    page.wait_for("document.querySelectorAll('table.runs tbody tr').length > 0", "the runs table")
    shown = page.evaluate("[...document.querySelectorAll('table.runs tbody tr')].map(row => row.dataset.run)")
    stored = _run_ids(store)
    assert sorted(shown) == sorted(stored)
    assert page.text("output") == f"Showing {len(stored)} of {len(stored)} runs"
    page.screenshot(tmp_path, "view-runs")


def test_the_note_edited_in_place_persists(page: Page, address: str, store: Path, tmp_path: Path) -> None:
    run = _demo_runs(store)[0]
    note = "judge too strict on refunds <b>not bold</b> 'quoted' & \"double\""
    field = f"tr[data-run='{run}'] .note-form input[name=note]"
    page.goto(address + "/")
    page.fill(field, note)
    before = page.loads
    page.click(f"tr[data-run='{run}'] .note-form button")
    wait_until(lambda: page.loads > before, "the runs list after saving the note")
    assert page.evaluate(f"document.querySelector({field!r}).value") == note
    page.screenshot(tmp_path, "view-note-saved")
    page.reload()
    assert page.evaluate(f"document.querySelector({field!r}).value") == note
    assert page.evaluate("document.querySelectorAll('table.runs b').length") == 0  # shown as text, not markup
    assert next(record for record in simulator.list_runs(db=store, limit=None) if record.id == run).note == note


def test_a_note_with_a_bidi_mark_survives_being_saved_again(page: Page, address: str, store: Path) -> None:
    run = _demo_runs(store)[1]
    note = "refunds \u202eright to left\u202c done"
    simulator.note_run(run, note, db=store)
    form = f"tr[data-run='{run}'] .note-form"
    page.goto(address + "/")
    before = page.loads
    page.click(form + " button")  # saved untouched, as when a person saves after reading it
    wait_until(lambda: page.loads > before, "the runs list after saving the note")
    assert next(record for record in simulator.list_runs(db=store, limit=None) if record.id == run).note == note


def _plan(*cases: str) -> Plan:
    return Plan([PlanItem(key=f"0:{case}:-:0", suite=0, case=case) for case in cases])


def test_a_running_run_s_page_follows_it_without_a_reload(
    page: Page, address: str, store: Path, tmp_path: Path
) -> None:
    with RunStore(store) as runs:
        record = make_run(LIVE, "support", plan=_plan("greet", "bye"))
        runs.create_run(record)
        runs.save_result(make_result(record, 0, "greet", "pass", kind="scenario"))
        lease = runs.acquire(LIVE)  # run by this very process, as a runner holds it
        page.goto(f"{address}/runs/{LIVE}")
        assert "1 of 2 conversations stored" in page.text(".live")
        assert page.text("h1 .status").lower() == "running"
        page.screenshot(tmp_path, "view-run-live")
        opened = page.loads
        # What the reader did on the page: a mark on the window (gone on a reload), a filter, a case closed.
        page.evaluate("window.readerWasHere = true")
        page.fill("#filters input[name=q]", "greet")
        page.wait_for("location.hash.indexOf('q=greet') > 0", "the filter in the address")
        greet = page.evaluate("document.querySelector('details.case').id")
        page.evaluate(f"document.getElementById('{greet}').open = true")

        runs.save_result(make_result(record, 0, "bye", "fail", kind="scenario"))
        page.wait_for("(document.querySelector('.live') || {}).innerText?.includes('2 of 2')", "the second result")
        runs.finish(lease, "completed")
        page.wait_for("!document.querySelector('.live')", "the run's end")
    assert page.loads == opened, "the page reloaded itself"
    assert page.evaluate("window.readerWasHere") is True
    assert page.text("h1 .status").lower() == "completed"
    assert page.evaluate("document.querySelectorAll('[data-outcome]').length") >= 2
    # The filter still applies to the newer content, and the case opened is open in it.
    assert page.evaluate("document.querySelector('#filters input[name=q]').value") == "greet"
    assert page.text("#shown").startswith("Showing 1 of 2")
    greet_now = page.evaluate(
        "(function () { var data = JSON.parse(document.getElementById('simulator-report-data').textContent);"
        " return data.cases.filter(function (c) { return c.case === 'greet'; })[0].id; })()"
    )
    assert page.evaluate(f"document.getElementById('{greet_now}').open") is True
    # The newer page's outcome bar is drawn: a pass and a fail.
    assert page.evaluate("document.querySelectorAll('.bar rect').length") == 2
    page.screenshot(tmp_path, "view-run-finished")


def test_a_comparison_picked_in_the_form_shows_both_runs(page: Page, address: str, store: Path, tmp_path: Path) -> None:
    baseline, new = _demo_runs(store)
    page.goto(address + "/compare")
    page.evaluate(
        f"document.querySelector('select[name=a]').value = {baseline!r};"
        f"document.querySelector('select[name=b]').value = {new!r}"
    )
    before = page.loads
    page.click("form[action='/compare'] button")
    wait_until(lambda: page.loads > before, "the comparison to load")
    assert page.evaluate("location.search") == f"?a={baseline}&b={new}"
    assert page.text("h1") == f"Run comparison: {new} against {baseline}"
    differ = page.evaluate(
        "[...document.querySelectorAll('tr')].map(row => [...row.cells].map(cell => cell.innerText.trim()))"
    )
    assert ["agent version", "v1", "v2"] in differ
    assert "McNemar" in page.text()
    page.screenshot(tmp_path, "view-compare")


def test_a_run_page_opens_each_conversation(page: Page, address: str, store: Path, tmp_path: Path) -> None:
    run = _demo_runs(store)[0]
    page.goto(f"{address}/runs/{run}")
    links = page.wait_for(
        "document.querySelectorAll('a.open-conversation:not(.review-conversation)').length", "the conversation links"
    )
    assert links == simulator.run_state(run, db=store).stored
    page.screenshot(tmp_path, "view-run")
    before = page.loads
    page.evaluate("document.querySelector('a.open-conversation').click()")
    wait_until(lambda: page.loads > before, "the conversation page")
    assert page.evaluate("location.pathname") == f"/runs/{run}/conversation"
    assert page.evaluate("document.querySelectorAll('[data-outcome]').length") == 1
    page.screenshot(tmp_path, "view-conversation")


def test_the_checks_see_console_errors_and_requests_elsewhere(browser: Chromium) -> None:
    opened = browser.new_page()
    try:
        opened.evaluate("console.error('broken'); setTimeout(() => { throw new Error('uncaught') }, 0)")
        opened.evaluate("new Image().src = 'http://127.0.0.2:9/pixel.png'")
        wait_until(lambda: len(opened.errors) >= 2 and opened.requests, "the error, the exception and the request")
    finally:
        opened.close()
    assert any("broken" in error for error in opened.errors)
    assert any("uncaught" in error for error in opened.errors)
    assert "http://127.0.0.2:9/pixel.png" in opened.requests


def test_a_review_changes_the_reviewed_correctness_and_not_the_judged(
    page: Page, address: str, store: Path, tmp_path: Path
) -> None:
    # A run of its own (the demo's planted failure alone), so the other pages keep their figures.
    scenarios = str(ROOT / "suites" / "demo" / "scenarios.yaml")
    outcome = simulator.run(scenarios, db=store, cases=["express_delivery_date_is_made_up"], note="to review")
    (failed,) = outcome.results()
    assert failed.outcome == "fail"
    page.goto(f"{address}/runs/{outcome.id}/conversation?key={quote(failed.key, safe='')}#review")
    form = "form.review-form[data-review-kind='result']"
    page.wait_for(f"!!document.querySelector({form!r})", "the result's review form")
    page.click(f"{form} input[name='verdict'][value='pass']")
    page.fill(f"{form} input[name='reason']", "the date is in the order data")
    page.fill(f"{form} input[name='reviewer']", "ann")
    before = page.loads
    page.click(f"{form} button[type='submit']")
    wait_until(lambda: page.loads > before, "the page after the review")
    assert "reviewer: pass" in page.text(form)
    page.screenshot(tmp_path, "view-reviewed")
    (review,) = simulator.reviews(outcome.id, db=store)
    assert (review.target, review.verdict, review.reviewer) == ("result", "pass", "ann")
    page.goto(f"{address}/runs/{outcome.id}")
    body = page.wait_for("document.body.innerText", "the run page")
    assert "correctness as reviewed" in body.casefold()
    # The judge's verdict and the stored figures are as they were.
    record = simulator.get_run(outcome.id, db=store).record
    assert record.totals is not None
    assert (record.totals.passed, record.totals.failed) == (0, 1)
    assert simulator.run_state(outcome.id, db=store).counts == {"fail": 1}


def test_a_closed_case_loads_its_conversation_when_opened_and_search_reaches_it(
    page: Page, address: str, store: Path, tmp_path: Path
) -> None:
    run = _demo_runs(store)[0]
    closed = next(stored for stored in simulator.read_run(run, db=store).results if stored.outcome == "pass")
    message = next(event for event in closed.result.transcript.agent_events() if event.messages)
    word = max(message.messages[0].split(), key=len).strip(".,!?:;'\"").lower()
    page.goto(f"{address}/runs/{run}")
    page.wait_for("document.documentElement.getAttribute('data-report-ready')", "the page's script")
    card = page.evaluate(
        "(function () { var data = JSON.parse(document.getElementById('simulator-report-data').textContent);"
        f" return data.cases.filter(function (c) {{ return c.key === {json.dumps(closed.key)}; }})[0].id; }})()"
    )
    assert page.evaluate(f"document.getElementById('{card}').open") is False
    assert page.evaluate(f"!!document.querySelector('#{card} .transcript')") is False
    page.evaluate(f"document.getElementById('{card}').open = true")
    page.wait_for(f"!!document.querySelector('#{card} .transcript')", "the transcript loaded into the card")
    assert word in page.text(f"#{card} .transcript").lower()
    # The search finds results by what only their conversations hold, which the page does not have.
    page.evaluate(f"document.getElementById('{card}').open = false")
    page.fill("#filters input[name=q]", word)
    expected = len(simulator.search_results(run, word, db=store))
    page.wait_for(
        f"document.getElementById('shown').textContent.indexOf('Showing {expected} of') === 0", "the search's answer"
    )
    assert page.evaluate(f"document.getElementById('{card}').hidden") is False
    page.screenshot(tmp_path, "view-run-search")
