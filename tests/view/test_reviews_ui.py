"""Human review in ``simulator view``, through Starlette's TestClient: the forms on a conversation's page (the
result, each step, each check), the review endpoints (JSON and plain forms, their errors, the write rules), the
reviews beside the judge's verdicts, and correctness as judged and as reviewed on the run page and the runs list."""

from __future__ import annotations

import re
import sqlite3
from collections.abc import Iterator
from contextlib import closing
from pathlib import Path
from typing import Any
from urllib.parse import quote

import pytest
from starlette.testclient import TestClient

import simulator
from simulator.viewer import create_app

ROOT = Path(__file__).resolve().parents[2]
DEMO = ROOT / "suites" / "demo"
LOCAL = "http://127.0.0.1:8710"
FAILS = "express_delivery_date_is_made_up"  # fails: one step, deterministic checks
PASSES = "refund_journey_with_a_reason"  # passes: five steps
CHECK = "turn 1: hallucination"
HOSTILE = "<script>alert(1)</script>\u202eevil\x1b[31m"


@pytest.fixture(scope="module")
def demo(tmp_path_factory: pytest.TempPathFactory) -> simulator.RunOutcome:
    return simulator.run([DEMO], db=tmp_path_factory.mktemp("demo") / "runs.db", cases=[FAILS, PASSES], seed=0)


@pytest.fixture
def db(demo: simulator.RunOutcome, tmp_path: Path) -> Path:
    """A copy of the demo store, so each test's reviews are its own."""
    copy = tmp_path / "runs.db"
    with closing(sqlite3.connect(demo.store_path)) as source, closing(sqlite3.connect(copy)) as target:
        source.backup(target)
    return copy


@pytest.fixture
def client(db: Path) -> Iterator[TestClient]:
    with TestClient(create_app(db), base_url=LOCAL) as test_client:
        yield test_client


def key_of(demo: simulator.RunOutcome, case: str) -> str:
    return next(r.key for r in demo.results() if r.case == case)


def conversation(demo: simulator.RunOutcome, case: str) -> str:
    return f"/runs/{demo.id}/conversation?key={quote(key_of(demo, case), safe='')}"


def review(key: str, target: str, verdict: str, **more: str) -> dict[str, str]:
    return {"key": key, "target": target, "verdict": verdict, "reason": "looked again", "reviewer": "ann", **more}


def post(client: TestClient, demo: simulator.RunOutcome, body: dict[str, str], **headers: str) -> Any:
    return client.post(f"/api/runs/{demo.id}/reviews", json=body, headers={"origin": LOCAL, **headers})


@pytest.mark.parametrize("case", [FAILS, PASSES])
def test_each_form_is_beside_what_it_reviews(client: TestClient, demo: simulator.RunOutcome, case: str) -> None:
    page = client.get(conversation(demo, case)).text
    result = next(r for r in demo.results() if r.case == case)
    # The whole result's form first, above the goals and the transcript.
    assert page.index("id='review'") < page.index("<h4>Transcript</h4>")
    if result.result.transcript.steps:
        assert page.index("id='review'") < page.index("<h4>Goals")
    # Each step's form inside that step.
    steps = re.findall(r"<li class='step [^']*'>.*?</li>", page, re.S)
    assert len(steps) == len(result.result.transcript.steps)
    for number, step in enumerate(steps, start=1):
        assert f"name='target' value='step {number}'" in step
    # Each check's form right under its first score row.
    checks = dict.fromkeys(s.check for s in result.result.scores if s.check.strip())
    assert checks
    for check in checks:
        target = f"name='target' value='{simulator.html_text(check)}'"
        beside = re.search(rf"<tr class='beside'><td colspan='8'>(?:(?!</tr>).)*{re.escape(target)}", page, re.S)
        assert beside is not None, check
        row = page[: beside.start()].rsplit("<tr class='verdict-", 1)[1]
        assert f"<td>{simulator.html_text(check)}</td>" in row


@pytest.mark.parametrize(
    ("case", "target", "kind"), [(FAILS, "result", "result"), (PASSES, "step 3", "step"), (FAILS, CHECK, "check")]
)
def test_the_conversation_page_has_a_review_form_per_result_step_and_check(
    client: TestClient, demo: simulator.RunOutcome, case: str, target: str, kind: str
) -> None:
    verdicts = ("pass", "fail") if kind == "result" else ("met", "not_met")
    page = client.get(conversation(demo, case)).text
    # A step's or a check's form is folded under the line that says the judge's verdict and the review.
    forms = re.findall(
        r"(?:<details class='review-beside'><summary>(?:(?!</summary>).)*</summary>)?"
        r"<form method='post' action='/api/runs/[^']+/reviews' class='review-form'.*?</form>",
        page,
    )
    mine = [form for form in forms if f"name='target' value='{simulator.html_text(target)}'" in form]
    assert len(mine) == 1, forms[:3]
    form = mine[0]
    assert f"data-review-kind='{kind}'" in form
    assert [v for v in verdicts if f"value='{v}'" in form] == list(verdicts)
    assert "name='reason'" in form
    assert "name='reviewer'" in form
    assert "judge: " in form
    assert "not reviewed" in form
    assert "<script src='/static/view.js' defer></script>" in page  # the script that sends the form as JSON


def test_a_review_is_recorded_and_shown_beside_the_judges_verdict(
    client: TestClient, demo: simulator.RunOutcome, db: Path
) -> None:
    key = key_of(demo, PASSES)
    response = post(client, demo, review(key, "step 3", "not_met", reason="refunded before checking"))
    assert response.status_code == 201, response.text
    assert response.json()["target"] == "step 3"
    [stored] = simulator.reviews(demo.id, db=db)
    assert (stored.key, stored.target, stored.verdict, stored.reviewer) == (key, "step 3", "not_met", "ann")
    page = client.get(conversation(demo, PASSES)).text
    assert "judge: met · reviewer: not_met — refunded before checking (ann)" in page
    listed = client.get(f"/api/runs/{demo.id}/reviews").json()
    assert [(item["target"], item["verdict"]) for item in listed] == [("step 3", "not_met")]


def test_a_review_that_passes_a_failing_case_changes_the_reviewed_correctness_only(
    client: TestClient, demo: simulator.RunOutcome, db: Path
) -> None:
    before = client.get(f"/runs/{demo.id}").text
    assert "Correctness as reviewed" not in before
    [row] = client.get("/api/runs").json()["runs"]
    assert (row["correctness"], row["reviewed"]) == (0.5, None)
    assert "<td class='num'></td>" in client.get("/").text  # the reviewed column is blank without reviews

    response = post(client, demo, review(key_of(demo, FAILS), "result", "pass", reason="the date was looked up"))
    assert response.status_code == 201, response.text

    [row] = client.get("/api/runs").json()["runs"]
    assert (row["correctness"], row["reviewed"]) == (0.5, 1.0)  # judged unchanged, reviewed up
    assert "<td class='num'>100.0%</td>" in client.get("/").text
    page = client.get(f"/runs/{demo.id}").text
    assert "Correctness as reviewed" in page
    assert "judge: fail · reviewer: pass — the date was looked up (ann)" in page
    totals = simulator.read_run(demo.id, db=db).record.totals
    assert totals is not None
    assert totals.correctness == 0.5  # the judge's figures stay


def test_a_plain_form_post_records_the_review_and_returns_to_the_conversation(
    client: TestClient, demo: simulator.RunOutcome, db: Path
) -> None:
    key = key_of(demo, FAILS)
    response = client.post(
        f"/api/runs/{demo.id}/reviews",
        data=review(key, CHECK, "met"),
        headers={"origin": LOCAL},
        follow_redirects=False,
    )
    assert response.status_code == 303
    assert response.headers["location"] == conversation(demo, FAILS) + "#review"
    assert [(r.target, r.verdict) for r in simulator.reviews(demo.id, db=db)] == [(CHECK, "met")]


@pytest.mark.parametrize(
    ("body", "message"),
    [
        (review("no-such-key", "result", "pass"), "has no result with key 'no-such-key'"),
        ({**review("", "step 9", "met"), "key": "KEY"}, "has no step 'step 9'"),
        ({**review("", "tone", "met"), "key": "KEY"}, "has no target 'tone'"),
        ({**review("", "result", "met"), "key": "KEY"}, "verdict 'met' does not fit the whole result"),
        ({**review("", "result", "pass", reason="  "), "key": "KEY"}, "a review needs a reason"),
        ({**review("", "result", "pass", reviewer=""), "key": "KEY"}, "a review needs a reviewer"),
    ],
)
def test_a_review_that_does_not_fit_is_a_400_with_the_apis_message(
    client: TestClient, demo: simulator.RunOutcome, db: Path, body: dict[str, str], message: str
) -> None:
    if body["key"] == "KEY":
        body = {**body, "key": key_of(demo, FAILS)}
    response = post(client, demo, body)
    assert response.status_code == 400
    assert message in response.json()["error"]
    # a plain form gets the same message on a page
    page = client.post(f"/api/runs/{demo.id}/reviews", data=body, headers={"origin": LOCAL})
    assert page.status_code == 400
    assert simulator.html_text(message) in page.text
    assert simulator.reviews(demo.id, db=db) == []


@pytest.mark.parametrize(
    ("content", "content_type"),
    [
        ("[1, 2]", "application/json"),
        ('{"key": 3}', "application/json"),
        ("\xff", "text/plain"),
        ("{", "application/json"),
    ],
)
def test_a_body_that_is_not_a_review_is_a_400_saying_what_to_send(
    client: TestClient, demo: simulator.RunOutcome, content: str, content_type: str
) -> None:
    response = client.post(
        f"/api/runs/{demo.id}/reviews", content=content, headers={"origin": LOCAL, "content-type": content_type}
    )
    assert response.status_code == 400
    assert "send a review as a JSON object or a URL-encoded form" in response.text


def test_reviews_of_an_unknown_run_are_a_404(client: TestClient) -> None:
    assert client.get("/api/runs/20990101-000000-ffffff/reviews").status_code == 404
    response = client.post(
        "/api/runs/20990101-000000-ffffff/reviews", json=review("k", "result", "pass"), headers={"origin": LOCAL}
    )
    assert response.status_code == 404
    assert "20990101-000000-ffffff" in response.json()["error"]


@pytest.mark.parametrize(
    "headers",
    [{}, {"origin": "http://evil.example"}, {"origin": "null"}, {"referer": "http://127.0.0.1:9999/runs"}],
)
def test_a_review_from_another_origin_is_refused(
    client: TestClient, demo: simulator.RunOutcome, db: Path, headers: dict[str, str]
) -> None:
    body = review(key_of(demo, FAILS), "result", "pass")
    response = client.post(f"/api/runs/{demo.id}/reviews", json=body, headers=headers)
    assert response.status_code == 403
    assert simulator.reviews(demo.id, db=db) == []
    assert post(client, demo, body).status_code == 201  # the same review from the app's own page is recorded


def test_with_a_token_a_review_needs_it(demo: simulator.RunOutcome, db: Path) -> None:
    body = review(key_of(demo, FAILS), "result", "pass")
    url = f"/api/runs/{demo.id}/reviews"
    with TestClient(create_app(db, token="s3cret", loopback=False), base_url="http://10.0.0.5:8710") as remote:
        assert remote.post(url, json=body, headers={"origin": "http://10.0.0.5:8710"}).status_code == 401
        assert remote.get(url).status_code == 401
        assert remote.post(url, json=body, headers={"x-simulator-token": "s3cret"}).status_code == 201
        assert remote.get(url, headers={"x-simulator-token": "s3cret"}).json()[0]["verdict"] == "pass"


def test_hostile_reasons_and_names_are_escaped_on_every_page(client: TestClient, demo: simulator.RunOutcome) -> None:
    response = post(client, demo, review(key_of(demo, FAILS), "result", "pass", reason=HOSTILE, reviewer=HOSTILE))
    assert response.status_code == 201, response.text
    shown = simulator.html_text(HOSTILE)
    assert shown == "&lt;script&gt;alert(1)&lt;/script&gt;\\u202eevil\\x1b[31m"
    for path in (conversation(demo, FAILS), f"/runs/{demo.id}"):
        page = client.get(path)
        assert f"reviewer: pass — {shown} ({shown})" in page.text
        assert "<script>alert" not in page.text
        assert "\u202e" not in page.text
        assert "\x1b" not in page.text
        policy = page.headers["content-security-policy"]
        assert policy.startswith("default-src 'none';")
        assert "script-src 'self';" in policy
        assert "unsafe-inline" not in policy
