"""A run's page in ``simulator view`` holds its cases without their conversations: results read light (without
their transcripts' events), a closed card as its summary line, an open one without its transcript, world and
scores, each part loaded when the card is opened, and the page's text search answered by the server. Tried on a
real offline run of the demo suite: what the light page leaves out is exactly what the parts bring back, the
server's search finds what a search of every stored text finds, and reviews count the same either way."""

from __future__ import annotations

import json
import re
import sqlite3
from collections.abc import Iterator
from pathlib import Path

import pytest
from starlette.testclient import TestClient

import simulator
from simulator.models.run import StoredResult
from simulator.reports.html import CasePart
from simulator.store import RunStore, Unreadable
from simulator.viewer import create_app
from tests.factories import make_result

ROOT = Path(__file__).resolve().parents[2]
LOCAL = "http://127.0.0.1:8710"


@pytest.fixture(scope="module")
def demo(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    """A store holding one offline run of the demo suite, plus one result of hostile and non-ASCII text."""
    db = tmp_path_factory.mktemp("lazy") / "runs.db"
    run = simulator.run(str(ROOT / "suites" / "demo"), db=db, checkpoints=False, cache=False, seed=1)
    record = simulator.find_run(run.id, db=db)[1]
    assert record is not None
    with RunStore(db) as store:
        odd = make_result(
            record, 0, "odd-case", "fail", kind="scenario", key="0:odd-case:-:9", reasons=['Die "Überweisung" fehlt']
        )
        store.save_result(odd)
    return db, run.id


@pytest.fixture(scope="module")
def full(demo: tuple[Path, str]) -> list[StoredResult]:
    db, run = demo
    with RunStore(db) as store:
        return store.results(run)


@pytest.fixture
def client(demo: tuple[Path, str]) -> Iterator[TestClient]:
    with TestClient(create_app(demo[0]), base_url=LOCAL) as test_client:
        yield test_client


def _without_events(stored: StoredResult) -> dict[str, object]:
    data = stored.model_dump(mode="json")
    data["result"]["transcript"].pop("events")
    return data


def test_light_results_leave_out_the_events_and_nothing_else(demo: tuple[Path, str], full: list[StoredResult]) -> None:
    db, run = demo
    with RunStore(db) as store:
        light = store.results(run, light=True)
    assert [stored.key for stored in light] == [stored.key for stored in full]
    assert any(stored.result.transcript.events for stored in full)
    assert all(not stored.result.transcript.events for stored in light)
    assert [_without_events(stored) for stored in light] == [_without_events(stored) for stored in full]


def test_a_damaged_result_is_reported_when_read_light(tmp_path: Path, demo: tuple[Path, str]) -> None:
    db = tmp_path / "runs.db"
    db.write_bytes(demo[0].read_bytes())
    with sqlite3.connect(db) as conn:
        conn.execute(
            "INSERT INTO results (run_id, key, suite, case_name, repeat, outcome, duration_s, finished, result) "
            "VALUES (?, 'broken', 0, 'broken', 0, 'pass', 0, '2026-01-01T00:00:00Z', '{not json')",
            (demo[1],),
        )
    skipped: list[Unreadable] = []
    with RunStore(db) as store:
        light = store.results(demo[1], light=True, skipped=skipped)
    assert len(skipped) == 1
    assert "'broken'" in skipped[0].cause or "broken" in skipped[0].cause
    assert "broken" not in {stored.key for stored in light}


def _words(full: list[StoredResult]) -> list[str]:
    """Words to search for, taken from the conversations themselves (the light page does not hold them)."""
    found: list[str] = []
    for stored in full:
        for event in stored.result.transcript.events:
            for text in getattr(event, "messages", None) or [getattr(event, "text", "")]:
                found.extend(word for word in re.findall(r"[A-Za-z]{6,}", text) if word not in found)
    return found[:40]


def _every_text(value: object) -> Iterator[str]:
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for item in value.values():
            yield from _every_text(item)
    elif isinstance(value, list):
        for item in value:
            yield from _every_text(item)


def _brute_force(demo: tuple[Path, str], full: list[StoredResult], text: str) -> list[str]:
    """The keys whose texts hold every word: every string of the whole stored result, its case, persona and
    outcome, its suite's name and its case's tags and description."""
    record = simulator.find_run(demo[1], db=demo[0])[1]
    assert record is not None
    words = text.casefold().split()
    keys = []
    for stored in full:
        suite = record.snapshot[stored.suite].suite
        case = next((case for case in suite.cases if case.name == stored.case), None)
        extra = [suite.name, *(case.tags if case else []), (case.description or "") if case else ""]
        texts = [stored.case, stored.persona or "", stored.outcome, *extra]
        texts += _every_text(stored.result.model_dump(mode="json"))
        haystack = "\n".join(texts).casefold()
        if all(word in haystack for word in words):
            keys.append(stored.key)
    return keys


def test_the_server_search_finds_what_a_search_of_every_text_finds(
    demo: tuple[Path, str], full: list[StoredResult]
) -> None:
    queries = _words(full)
    assert len(queries) >= 10
    queries += [query.upper() for query in queries[:5]]  # any case, for ASCII the SQL pre-filter's own lower-casing
    queries += [f"{a} {b}" for a, b in zip(queries[:10], queries[5:15], strict=True)]  # every word in one result
    queries += ["überweisung", "ÜBERWEISUNG", '"überweisung"', "fail", "pass", "odd-case", "zzzzzz", "", "   "]
    for query in queries:
        expected = _brute_force(demo, full, query)
        found = simulator.search_results(demo[1], query, db=demo[0])
        assert sorted(found) == sorted(expected), query
    assert simulator.search_results(demo[1], '"Überweisung"', db=demo[0]) == ["0:odd-case:-:9"]


def test_the_light_page_holds_summaries_and_the_open_cards_bodies(
    demo: tuple[Path, str], full: list[StoredResult]
) -> None:
    db, run = demo
    light = simulator.run_page(run, db=db, details=False)
    whole = simulator.run_page(run, db=db)
    assert json.loads(light.data)["lazy"] is True
    assert "lazy" not in json.loads(whole.data)
    opened = re.findall(r"<details class='case [^']*' id='(case-\d+)' data-outcome='[^']*' open>", light.body)
    closed = re.findall(r"<details class='case [^']*' id='(case-\d+)' data-outcome='[^']*'>", light.body)
    assert opened
    assert closed
    assert light.body.count("data-pending='detail'") == len(opened)
    assert light.body.count("data-pending='body'") == len(closed)
    assert "<div class='transcript'>" not in light.body
    assert "<div class='transcript'>" in whole.body
    # Everything above the cases is the same page.
    assert light.body.split("<section id='cases'>")[0] == whole.body.split("<section id='cases'>")[0]


def test_the_parts_bring_back_what_the_light_page_left_out(demo: tuple[Path, str]) -> None:
    db, run = demo
    light = simulator.run_page(run, db=db, details=False)
    whole = simulator.run_page(run, db=db).body
    cases = json.loads(light.data)["cases"]
    pending = list(re.finditer(r"<div class='case-detail' data-pending='(\w+)'>.*?</p></div>", light.body, re.S))
    assert len(pending) == len(cases)  # one a card, in the page's order
    rebuilt, end = [], 0
    for info, slot in zip(cases, pending, strict=True):
        number = int(info["id"].removeprefix("case-"))
        part: CasePart = "body" if slot.group(1) == "body" else "detail"
        loaded = simulator.conversation_page(run, info["key"], db=db, number=number, part=part)
        assert loaded is not None
        rebuilt += [light.body[end : slot.start()], loaded.body]
        end = slot.end()
    assert "".join(rebuilt) + light.body[end:] == whole


def test_reviews_count_the_same_on_the_light_page(tmp_path: Path, demo: tuple[Path, str]) -> None:
    db = tmp_path / "runs.db"
    db.write_bytes(demo[0].read_bytes())
    run = demo[1]
    targets = {}
    for stored in simulator.read_run(run, db=db).results:
        found = simulator.review_targets(run, stored.key, db=db)
        targets.update({(stored.key, target.target): target for target in found if target.kind != "result"})
    (key, target), chosen = next(iter(targets.items()))
    other = next(v for v in chosen.verdicts if v != chosen.judged)
    simulator.add_review(run, key, target=target, verdict=other, reason="read it again", reviewer="Ana", db=db)
    passed = next(stored.key for stored in simulator.read_run(run, db=db).results if stored.outcome == "pass")
    simulator.add_review(run, passed, target="result", verdict="fail", reason="wrong", reviewer="Ana", db=db)

    def reviewed(body: str) -> list[str]:
        return re.findall(
            r"<span class='reviewed'>[^<]*</span>|Correctness as reviewed</span>|"
            r"<span class='value'>[^<]*</span><span class='label'>Correctness as reviewed",
            body,
        )

    light = simulator.run_page(run, db=db, details=False).body
    whole = simulator.run_page(run, db=db).body
    assert len(reviewed(whole)) >= 3
    assert reviewed(light) == reviewed(whole)


def test_the_app_serves_each_part_of_a_card(client: TestClient, demo: tuple[Path, str]) -> None:
    run = demo[1]
    key = "0:odd-case:-:9"
    body = client.get(f"/runs/{run}/conversation", params={"part": "body", "key": key, "n": "7"})
    assert body.status_code == 200
    assert body.text.startswith("<p class='case-meta'>")
    assert "<html" not in body.text
    assert "&quot;Überweisung&quot;" in body.text  # escaped as every page is
    assert body.headers["content-security-policy"].startswith("default-src 'none';")
    detail = client.get(f"/runs/{run}/conversation", params={"part": "detail", "key": key, "n": "7"})
    assert detail.text.startswith("<h4>Transcript</h4>")


@pytest.mark.parametrize(
    ("params", "status", "said"),
    [
        ({"part": "all", "key": "0:odd-case:-:9", "n": "1"}, 400, "part must be body or detail"),
        ({"part": "body", "key": "0:odd-case:-:9", "n": "x"}, 400, "n must be the case's number"),
        ({"part": "body", "key": "0:odd-case:-:9", "n": "0"}, 400, "n must be"),
        ({"part": "body", "key": "<b>no such</b>", "n": "1"}, 404, "no conversation &lt;b&gt;no such&lt;/b&gt;"),
    ],
)
def test_a_part_that_cannot_be_served_says_why(
    client: TestClient, demo: tuple[Path, str], params: dict[str, str], status: int, said: str
) -> None:
    response = client.get(f"/runs/{demo[1]}/conversation", params=params)
    assert response.status_code == status
    assert said in response.text


def test_the_app_answers_the_page_s_search(client: TestClient, demo: tuple[Path, str]) -> None:
    run = demo[1]
    answer = client.get(f"/runs/{run}/search", params={"q": "ÜBERWEISUNG fehlt"})
    assert answer.json() == {"keys": ["0:odd-case:-:9"]}
    assert client.get("/runs/20990101-000000-ffffff/search", params={"q": "x"}).status_code == 404
    page = client.get(f"/runs/{run}").text
    assert '"lazy": true' in page
    assert "data-pending='body'" in page


def test_the_parts_and_the_search_need_the_token_off_loopback(demo: tuple[Path, str]) -> None:
    app = create_app(demo[0], token="s3cret", loopback=False)
    with TestClient(app, base_url="http://10.0.0.5:8710") as guarded:
        for path in (f"/runs/{demo[1]}/search?q=x", f"/runs/{demo[1]}/conversation?part=body&key=k&n=1"):
            assert guarded.get(path).status_code == 401
            assert guarded.get(path, headers={"x-simulator-token": "s3cret"}).status_code in {200, 404}
