"""``simulator view``'s app, endpoint by endpoint, through Starlette's TestClient: pages and JSON, downloads,
the token and same-origin rules, the CSP on every answer, hostile strings, a store a run is writing, and the run
actions (note, stop through the lease, resume and repeat as processes of their own)."""

from __future__ import annotations

import signal
import sqlite3
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any, ClassVar

import pytest
from starlette.testclient import TestClient
from typer.testing import CliRunner

from simulator.cli import app as cli_app
from simulator.models.run import Plan, PlanItem
from simulator.store import RunStore
from simulator.viewer import EXTRA_HINT, create_app
from tests.factories import make_result, make_run

LOCAL = "http://127.0.0.1:8710"
HOSTILE = "<script>alert(1)</script>\u202eevil\x1b[31m"
DONE, RUNNING, OLD = "20260101-000000-aaaaaa", "20260102-000000-bbbbbb", "20260103-000000-cccccc"


def _plan(*cases: str) -> Plan:
    return Plan([PlanItem(key=f"0:{case}:-:0", suite=0, case=case) for case in cases])


@pytest.fixture
def db(tmp_path: Path) -> Path:
    path = tmp_path / "runs.db"
    with RunStore(path) as store:
        done = make_run(DONE, "billing", status="completed", note=HOSTILE, plan=_plan("refund", HOSTILE))
        store.create_run(done)
        store.save_result(make_result(done, 0, "refund", "pass", kind="scenario"))
        store.save_result(make_result(done, 0, HOSTILE, "fail", kind="scenario", reasons=[HOSTILE]))
        running = make_run(RUNNING, "support", plan=_plan("greet", "bye"))
        store.create_run(running)
        store.save_result(make_result(running, 0, "greet", "unsure", kind="scenario"))
        store.acquire(RUNNING, pid=4242, host="worker.example")  # run by a live process on another machine
        old = make_run(OLD, "billing", status="interrupted", agent_version="v2", plan=_plan("refund"))
        store.create_run(old)
    return path


@pytest.fixture
def client(db: Path) -> Iterator[TestClient]:
    with TestClient(create_app(db), base_url=LOCAL) as test_client:
        yield test_client


def _same_origin() -> dict[str, str]:
    return {"origin": LOCAL}


PAGES = [
    "/",
    f"/runs/{DONE}",
    f"/runs/{RUNNING}",
    f"/runs/{DONE}/conversation?key=0:refund:-:0",
    "/compare",
    f"/compare?a={OLD}&b={DONE}",
    f"/runs/{DONE}/digest",
]


@pytest.mark.parametrize("path", PAGES)
def test_every_page_answers_with_a_strict_csp(client: TestClient, path: str) -> None:
    response = client.get(path)
    assert response.status_code == 200
    assert response.headers["content-type"].startswith("text/html")
    policy = response.headers["content-security-policy"]
    assert policy.startswith("default-src 'none';")
    assert "script-src 'self';" in policy
    assert "unsafe-inline" not in policy
    assert response.headers["x-content-type-options"] == "nosniff"
    # No inline script (the report's data block is JSON, not run), no asset from anywhere but the app.
    assert "<script>" not in response.text
    assert "<style" not in response.text
    assert "http://" not in response.text.replace(LOCAL, "")
    assert "https://" not in response.text


def test_no_page_needs_a_style_attribute(client: TestClient) -> None:
    for path in PAGES:
        response = client.get(path)
        assert "style=" not in response.text, path
        assert "style-src 'self';" in response.headers["content-security-policy"]
    assert "<svg class='bar'" in client.get(f"/runs/{DONE}").text  # the outcome bar, drawn without one


@pytest.mark.parametrize(
    ("path", "status"),
    [
        (f"/runs/{DONE}", 200),
        ("/runs/20990101-000000-ffffff", 404),
        ("/runs/20990101-000000-ffffff/digest", 404),
        ("/runs/20990101-000000-ffffff/conversation?key=x", 404),
        (f"/runs/{DONE}/conversation?key=no-such-key", 404),
        (f"/runs/{DONE}/report.exe", 404),
        ("/compare?a=nope&b=nada", 404),
        ("/nowhere", 404),
        ("/static/secret.py", 404),
        ("/api/runs/20990101-000000-ffffff/status", 404),
    ],
)
def test_status_codes(client: TestClient, path: str, status: int) -> None:
    response = client.get(path)
    assert response.status_code == status
    assert response.headers["content-security-policy"].startswith("default-src 'none';")


def test_the_runs_list_shows_every_run_with_its_figures(client: TestClient) -> None:
    page = client.get("/").text
    for run_id in (DONE, RUNNING, OLD):
        assert f"/runs/{run_id}'" in page
    payload = client.get("/api/runs").json()
    assert [row["id"] for row in payload["runs"]] == [OLD, RUNNING, DONE]
    done = next(row for row in payload["runs"] if row["id"] == DONE)
    assert (done["passed"], done["failed"], done["correctness"], done["planned"]) == (1, 1, 0.5, 2)
    assert done["note"] == HOSTILE  # JSON carries the text as it is; pages escape it
    running = next(row for row in payload["runs"] if row["id"] == RUNNING)
    assert (running["status"], running["unsure"]) == ("running", 1)


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        ("status=running", [RUNNING]),
        ("q=V2", [OLD]),
        ("q=billing&sort=id&order=asc", [DONE, OLD]),
        ("sort=correctness&order=desc", [DONE, RUNNING, OLD]),
        ("sort=planned", [OLD, RUNNING, DONE]),  # not a column: newest first
    ],
)
def test_the_runs_list_filters_and_sorts_on_the_server(client: TestClient, query: str, expected: list[str]) -> None:
    assert [row["id"] for row in client.get(f"/api/runs?{query}").json()["runs"]] == expected
    page = client.get(f"/?{query}").text
    assert sorted(expected, key=page.find) == expected


def test_run_status_endpoint(client: TestClient) -> None:
    state = client.get(f"/api/runs/{RUNNING}/status").json()
    assert state.pop("running_by").startswith("pid 4242 on worker.example")
    assert state == {
        "id": RUNNING,
        "status": "running",
        "planned": 2,
        "stored": 1,
        "counts": {"unsure": 1},
    }


def test_a_running_run_page_follows_the_run(client: TestClient) -> None:
    page = client.get(f"/runs/{RUNNING}").text
    assert f"class='live' data-run='{RUNNING}' data-stored='1' data-status='running'" in page
    assert "src='/static/view.js'" in page
    assert "class='live'" not in client.get(f"/runs/{DONE}").text


@pytest.mark.parametrize(
    ("fmt", "media"),
    [
        ("md", "text/markdown"),
        ("html", "text/html"),
        ("json", "application/json"),
        ("csv", "text/csv"),
        ("xlsx", "application/vnd.openxmlformats"),
        ("junit", "application/xml"),
    ],
)
def test_downloads_in_every_format(client: TestClient, fmt: str, media: str) -> None:
    response = client.get(f"/runs/{DONE}/report.{fmt}")
    assert response.status_code == 200
    assert response.headers["content-type"].startswith(media)
    assert response.headers["content-disposition"].startswith("attachment; filename*=UTF-8''simulator-")
    assert f"/runs/{DONE}/report.{fmt}" in client.get(f"/runs/{DONE}").text


@pytest.mark.parametrize("name", ["report.css", "report.js", "compare.css", "view.css", "view.js"])
def test_assets_are_served_by_the_app(client: TestClient, name: str) -> None:
    response = client.get(f"/static/{name}")
    assert response.status_code == 200
    assert response.text.strip()


@pytest.mark.parametrize(
    "path",
    [
        "/",
        f"/runs/{DONE}",
        f"/runs/{DONE}/conversation?key=0:refund:-:0",
        f"/compare?a={OLD}&b={DONE}",
        f"/runs/{DONE}/digest",
    ],
)
def test_hostile_strings_are_escaped(client: TestClient, path: str) -> None:
    text = client.get(path).text
    assert "<script>alert" not in text
    assert "\u202e" not in text
    assert "\x1b" not in text
    if "conversation" not in path:
        assert "&lt;script&gt;alert(1)&lt;/script&gt;\\u202eevil\\x1b[31m" in text


def test_json_carries_text_as_it_is_never_as_html(client: TestClient) -> None:
    response = client.get("/api/runs")
    assert response.headers["content-type"] == "application/json"
    assert response.headers["x-content-type-options"] == "nosniff"
    assert next(row for row in response.json()["runs"] if row["id"] == DONE)["note"] == HOSTILE


def test_the_conversation_page_shows_one_result_open(client: TestClient) -> None:
    key = f"0:{HOSTILE}:-:0"
    response = client.get(f"/runs/{DONE}/conversation", params={"key": key})
    assert response.status_code == 200
    assert "<details class='case" in response.text
    assert " open" in response.text
    assert "class='review-section'" in response.text  # the review forms
    assert "<script>alert" not in response.text


# -- the token rule --------------------------------------------------------------------------------------------


@pytest.fixture
def guarded(db: Path) -> Iterator[TestClient]:
    with TestClient(create_app(db, token="s3cret", loopback=False), base_url="http://10.0.0.5:8710") as test_client:
        yield test_client


@pytest.mark.parametrize(
    ("headers", "query", "status"),
    [
        ({}, "", 401),
        ({"x-simulator-token": "wrong"}, "", 401),
        ({}, "?token=wrong", 401),
        ({"x-simulator-token": "s3cret"}, "", 200),
        ({"cookie": "simulator_view_token=s3cret"}, "", 200),
        ({"cookie": "simulator_view_token=nope"}, "", 401),
    ],
)
@pytest.mark.parametrize("path", ["/", "/api/runs", f"/runs/{DONE}", "/static/view.js"])
def test_every_request_needs_the_token_off_loopback(
    guarded: TestClient, path: str, headers: dict[str, str], query: str, status: int
) -> None:
    response = guarded.get(path + query, headers=headers)
    assert response.status_code == status
    assert "content-security-policy" in response.headers


def test_the_token_in_the_address_becomes_a_cookie(guarded: TestClient) -> None:
    response = guarded.get("/?token=s3cret&status=running", follow_redirects=False)
    assert response.status_code == 303
    assert response.headers["location"] == "/?status=running"
    cookie = response.headers["set-cookie"]
    for part in ("simulator_view_token=s3cret", "HttpOnly", "SameSite=strict"):
        assert part in cookie
    assert guarded.get("/api/runs").status_code == 200  # the client keeps the cookie


def test_a_write_with_the_cookie_still_needs_the_same_origin(guarded: TestClient) -> None:
    guarded.cookies.set("simulator_view_token", "s3cret")
    refused = guarded.post(f"/runs/{DONE}/note", data={"note": "x"}, headers={"origin": "http://evil.example"})
    assert refused.status_code == 403
    allowed = guarded.post(
        f"/runs/{DONE}/note", data={"note": "x"}, headers={"origin": "http://10.0.0.5:8710"}, follow_redirects=False
    )
    assert allowed.status_code == 303


@pytest.mark.parametrize("host", ["evil.example", "evil.example:8710", "192.168.1.9:8710"])
def test_on_loopback_only_loopback_names_are_answered(client: TestClient, host: str) -> None:
    assert client.get("/", headers={"host": host}).status_code == 403


# -- the same-origin rule for writes ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("headers", "status"),
    [
        ({}, 403),
        ({"origin": "http://evil.example"}, 403),
        ({"origin": "http://127.0.0.1:9999"}, 403),
        ({"origin": "null"}, 403),
        ({"referer": "http://evil.example/"}, 403),
        ({"origin": LOCAL}, 303),
        ({"referer": f"{LOCAL}/?q=x"}, 303),
    ],
)
def test_a_note_is_written_only_from_the_same_origin(
    client: TestClient, db: Path, headers: dict[str, str], status: int
) -> None:
    response = client.post(f"/runs/{DONE}/note", data={"note": "checked"}, headers=headers, follow_redirects=False)
    assert response.status_code == status
    with RunStore(db) as store:
        assert (store.get_run(DONE).note == "checked") is (status == 303)


def test_a_note_persists_and_is_shown_escaped(client: TestClient, db: Path) -> None:
    note = "<b>new</b> \u2066note"
    response = client.post(f"/runs/{OLD}/note", data={"note": note}, headers=_same_origin(), follow_redirects=False)
    assert (response.status_code, response.headers["location"]) == (303, "/")
    with RunStore(db) as store:
        assert store.get_run(OLD).note == note
    assert "value='&lt;b&gt;new&lt;/b&gt; \\u2066note'" in client.get("/").text


@pytest.mark.parametrize(
    ("body", "content_type"),
    [('{"note": "x"}', "application/json"), ("note=%FF", "application/x-www-form-urlencoded")],
)
def test_a_note_that_is_not_a_form_is_refused(client: TestClient, body: str, content_type: str) -> None:
    headers = {**_same_origin(), "content-type": content_type}
    assert client.post(f"/runs/{DONE}/note", content=body, headers=headers).status_code == 400


def test_the_token_header_allows_a_write_without_an_origin(db: Path) -> None:
    with TestClient(create_app(db, token="s3cret"), base_url=LOCAL) as test_client:
        response = test_client.post(
            f"/runs/{DONE}/note", data={"note": "by script"}, headers={"x-simulator-token": "s3cret"},
            follow_redirects=False,
        )  # fmt: skip
    assert response.status_code == 303


# -- a store a run is writing ----------------------------------------------------------------------------------


def test_a_store_being_written_is_read_without_waiting(client: TestClient, db: Path) -> None:
    writer = sqlite3.connect(db, isolation_level=None)
    try:
        writer.execute("BEGIN IMMEDIATE")  # a running run holds the write lock mid-transaction
        writer.execute("UPDATE runs SET note = 'in flight' WHERE id = ?", (RUNNING,))
        for path in ("/", f"/runs/{RUNNING}", f"/api/runs/{RUNNING}/status"):
            assert client.get(path).status_code == 200
        assert "in flight" not in client.get("/api/runs").text  # the last committed state
    finally:
        writer.execute("ROLLBACK")
        writer.close()


# -- run actions -----------------------------------------------------------------------------------------------


def test_stop_sends_sigterm_to_the_process_the_lease_names(client: TestClient, db: Path) -> None:
    child = subprocess.Popen([sys.executable, "-c", "import sys; sys.stdin.read()"], stdin=subprocess.PIPE)
    here = "20260105-000000-eeeeee"
    try:
        with RunStore(db) as store:
            store.create_run(make_run(here, "support", plan=_plan("greet")))
            store.acquire(here, pid=child.pid)
        response = client.post(f"/runs/{here}/stop", headers=_same_origin())
        assert response.status_code == 200
        assert f"sent SIGTERM to pid {child.pid}" in response.text
        assert child.wait(timeout=30) == -signal.SIGTERM
    finally:
        if child.poll() is None:
            child.kill()
            child.wait()
        assert child.stdin is not None
        child.stdin.close()


@pytest.mark.parametrize(
    ("run_id", "said"),
    [
        (RUNNING, "runs on another host (pid 4242 on worker.example"),
        (DONE, "nothing to stop"),
        (OLD, "nothing to stop"),
    ],
)
def test_stop_says_when_it_cannot(client: TestClient, run_id: str, said: str) -> None:
    response = client.post(f"/runs/{run_id}/stop", headers=_same_origin())
    assert response.status_code == 409
    assert said in response.text


class _FakePopen:
    started: ClassVar[list[list[str]]] = []

    def __init__(self, words: list[str], **options: Any) -> None:
        type(self).started.append(words)
        assert options["start_new_session"] is True
        self.pid = 12345


@pytest.mark.parametrize(("action", "run_id"), [("repeat", DONE), ("resume", OLD)])
def test_resume_and_repeat_start_a_process_of_their_own(
    client: TestClient, db: Path, monkeypatch: pytest.MonkeyPatch, action: str, run_id: str
) -> None:
    _FakePopen.started = []
    monkeypatch.setattr(subprocess, "Popen", _FakePopen)
    response = client.post(f"/runs/{run_id}/{action}", headers=_same_origin())
    assert response.status_code == 200
    assert f"simulator runs {action} {run_id} started (pid 12345)" in response.text
    assert _FakePopen.started == [[sys.executable, "-m", "simulator", "runs", action, run_id, "--db", str(db)]]


@pytest.mark.parametrize(
    ("path", "status", "said"),
    [
        (f"/runs/{DONE}/resume", 409, "only an interrupted or failed run is resumed"),
        (f"/runs/{DONE}/delete", 404, "no action"),
        ("/runs/20990101-000000-ffffff/repeat", 404, "20990101-000000-ffffff"),
    ],
)
def test_actions_that_are_not_started(
    client: TestClient, monkeypatch: pytest.MonkeyPatch, path: str, status: int, said: str
) -> None:
    _FakePopen.started = []
    monkeypatch.setattr(subprocess, "Popen", _FakePopen)
    response = client.post(path, headers=_same_origin())
    assert (response.status_code, _FakePopen.started) == (status, [])
    assert said in response.text


def test_an_imported_run_is_not_started_from_the_app(
    client: TestClient, db: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with RunStore(db) as store:
        store.create_run(make_run("20260104-000000-dddddd", "billing", status="completed", imported_from="x"))
    monkeypatch.setattr(subprocess, "Popen", _FakePopen)
    response = client.post("/runs/20260104-000000-dddddd/repeat", headers=_same_origin())
    assert response.status_code == 409
    assert "--yes" in response.text


# -- the command -----------------------------------------------------------------------------------------------


def test_without_the_extra_the_command_says_what_to_install(monkeypatch: pytest.MonkeyPatch, db: Path) -> None:
    import importlib.util

    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name: None if name == "uvicorn" else real(name))
    result = CliRunner().invoke(cli_app, ["view", "--db", str(db), "--no-open"])
    assert result.exit_code == 2
    assert result.output.strip() == f"error: {EXTRA_HINT}"


def test_the_command_refuses_a_store_that_is_not_there(tmp_path: Path) -> None:
    result = CliRunner().invoke(cli_app, ["view", "--db", str(tmp_path / "none.db"), "--no-open"])
    assert result.exit_code == 2
    assert "no run store at" in result.output
    assert not (tmp_path / "none.db").exists()


def test_the_digest_page_groups_the_failures_and_is_linked_from_the_run(client: TestClient) -> None:
    page = client.get(f"/runs/{DONE}").text
    assert f"href='/runs/{DONE}/digest'" in page
    digest = client.get(f"/runs/{DONE}/digest").text
    assert f"Failure digest of run {DONE}" in digest
    assert "1 of 2 conversations did not pass" in digest
    assert "id='cause-1'" in digest
