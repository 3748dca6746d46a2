"""``simulator view`` in a real headless chromium, driven through its DevTools protocol (``_devtools``): the runs
list, the note edited in place, a running run's page following the run, a comparison. On every page visited:
no console error or uncaught exception, no request anywhere but the app, and a screenshot kept.

The app is served by uvicorn on a free loopback port over a store holding two offline runs of the demo suite;
without chromium every test skips, saying how to install it."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

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
    outside = [url for url in opened.requests if not (url.startswith(address + "/") or url.startswith("data:"))]
    assert not outside, f"requests left the app ({address}): {outside}"


def _run_ids(store: Path) -> list[str]:
    return [record.id for record in simulator.list_runs(db=store, limit=None)]


def test_the_runs_list_shows_every_run(page: Page, address: str, store: Path, tmp_path: Path) -> None:
    page.goto(address + "/")
    page.wait_for("document.querySelectorAll('table.runs tbody tr').length > 0", "the runs table")
    shown = page.evaluate("[...document.querySelectorAll('table.runs tbody tr')].map(row => row.dataset.run)")
    stored = _run_ids(store)
    assert sorted(shown) == sorted(stored)
    assert page.text("output") == f"Showing {len(stored)} of {len(stored)} runs"
    page.screenshot(tmp_path, "view-runs")


def test_the_note_edited_in_place_persists(page: Page, address: str, store: Path, tmp_path: Path) -> None:
    run = _run_ids(store)[-1]
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


@pytest.mark.xfail(
    strict=True,
    reason="the note's input shows a bidi or control character as its visible escape, so saving it again stores "
    "the escape's letters instead of the character",
)
def test_a_note_with_a_bidi_mark_survives_being_saved_again(page: Page, address: str, store: Path) -> None:
    run = _run_ids(store)[0]
    note = "refunds \u202eright to left\u202c done"
    simulator.note_run(run, note, db=store)
    form = f"tr[data-run='{run}'] .note-form"
    page.goto(address + "/")
    before = page.loads
    page.click(form + " button")  # saved untouched, as when a person saves after reading it
    wait_until(lambda: page.loads > before, "the runs list after saving the note")
    assert next(record for record in simulator.list_runs(db=store, limit=None) if record.id == run).note == note
