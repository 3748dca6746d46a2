"""``--trace otlp``: a run's spans reach an OpenTelemetry collector (OTLP/HTTP JSON), shaped by the GenAI semantic
conventions, redacted, and only when asked for.

A capture server on 127.0.0.1 plays the collector and keeps every request it gets. The demo suite runs with a fake
simulated user (who says a secret out loud) and a fake judge, so the trace holds every kind of span: the run, the
conversation, its turns, the agent's replies, its tool call and the user's and judge's model calls.
"""

from __future__ import annotations

import json
import logging
import shutil
import socket
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

import simulator
from simulator.cli import app
from simulator.errors import InputError
from simulator.llm import FakeScript
from simulator.store import RunStore
from tests.test_cassettes import judge

ROOT = Path(__file__).resolve().parent.parent
CASE = "order_status_needs_the_order_number"
CANARY = "canary-otel-5e6f7a8b9c0d"
HEADER_CANARY = "canary-otelheader-1b2c3d4e"
runner = CliRunner()


@dataclass
class Collector:
    """What the capture server got: each request's path, headers and JSON body."""

    url: str
    requests: list[dict[str, Any]] = field(default_factory=list)

    def spans(self) -> list[dict[str, Any]]:
        """Every span of every request."""
        return [
            span
            for request in self.requests
            for resource in request["body"]["resourceSpans"]
            for scope in resource["scopeSpans"]
            for span in scope["spans"]
        ]


@pytest.fixture
def collector() -> Iterator[Collector]:
    got = Collector(url="")

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            raw = self.rfile.read(int(self.headers.get("Content-Length") or 0))
            got.requests.append({"path": self.path, "headers": dict(self.headers), "raw": raw, "body": json.loads(raw)})
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", "2")
            self.end_headers()
            self.wfile.write(b"{}")

        def log_message(self, format: str, *args: Any) -> None:
            """Quiet: the test reads what was got."""

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    got.url = f"http://127.0.0.1:{server.server_address[1]}"
    try:
        yield got
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=5)


@pytest.fixture
def demo(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The demo suites in a fresh working folder, a secret in the environment, no OTLP settings of the machine."""
    (tmp_path / ".git").mkdir()
    shutil.copytree(ROOT / "suites" / "demo", tmp_path / "suites" / "demo")
    shutil.copytree(ROOT / "personas", tmp_path / "personas")
    monkeypatch.chdir(tmp_path)
    for name in ("ENDPOINT", "TRACES_ENDPOINT", "HEADERS", "TRACES_HEADERS", "PROTOCOL", "TRACES_PROTOCOL"):
        monkeypatch.delenv(f"OTEL_EXPORTER_OTLP_{name}", raising=False)
    monkeypatch.setenv("ACME_API_KEY", CANARY)
    return tmp_path


def _script() -> FakeScript:
    """A user who gives the order number and the secret, then a judge that says met."""
    script = FakeScript().enqueue(
        "user", {"message": f"It's ORD-10042, and my key is {CANARY}.", "done": False, "reason": ""}
    )
    return script.enqueue("judge", judge, times=50)


def _attrs(span: dict[str, Any]) -> dict[str, Any]:
    return {item["key"]: next(iter(item["value"].values())) for item in span["attributes"]}


def _by_operation(spans: list[dict[str, Any]], operation: str) -> list[dict[str, Any]]:
    return [span for span in spans if _attrs(span).get("gen_ai.operation.name") == operation]


def test_a_traced_run_sends_one_trace_of_genai_spans_redacted(demo: Path, collector: Collector) -> None:
    with _script().active():
        outcome = simulator.run(
            "suites/demo/simulations.yaml", cases=[CASE], db=demo / "runs.db", seed=1, user_model="fake/user",
            judge_model="fake/judge", trace="otlp", trace_endpoint=collector.url,
        )  # fmt: skip
    assert outcome.completed
    assert {request["path"] for request in collector.requests} == {"/v1/traces"}
    assert {request["headers"]["Content-Type"] for request in collector.requests} == {"application/json"}
    spans = collector.spans()
    by_id = {span["spanId"]: span for span in spans}
    assert len(by_id) == len(spans)
    assert len({span["traceId"] for span in spans}) == 1

    [root] = [span for span in spans if "parentSpanId" not in span]
    assert root["name"] == f"simulator run {outcome.id}"
    assert _attrs(root)["simulator.run.status"] == "completed"
    [conversation] = [span for span in spans if span.get("parentSpanId") == root["spanId"]]
    assert _attrs(conversation)["simulator.case"] == CASE
    assert _attrs(conversation)["simulator.outcome"] == outcome.results()[0].outcome
    below = [span for span in spans if span.get("parentSpanId") == conversation["spanId"]]
    turns = [span for span in below if span["name"].startswith("turn ")]
    assert len(turns) == outcome.results()[0].result.transcript.turns >= 2

    agents = _by_operation(spans, "invoke_agent")
    assert agents
    assert {by_id[span["parentSpanId"]]["name"][:5] for span in agents} == {"turn "}
    [tool] = _by_operation(spans, "execute_tool")
    assert by_id[tool["parentSpanId"]] in agents
    assert _attrs(tool)["gen_ai.tool.name"] == "lookup_order"
    assert json.loads(_attrs(tool)["gen_ai.tool.call.arguments"]) == {"order_id": "ORD-10042"}
    chats = _by_operation(spans, "chat")
    models = {_attrs(span)["gen_ai.request.model"] for span in chats}
    assert models == {"fake/user", "fake/judge"}
    for span in chats:
        assert int(_attrs(span)["gen_ai.usage.input_tokens"]) >= 0
        assert by_id[span["parentSpanId"]]["name"].startswith(("turn ", "conversation ", "invoke_agent "))
    user_chat = next(span for span in chats if _attrs(span)["simulator.role"] == "user")
    assert by_id[user_chat["parentSpanId"]] in turns  # the user's move is made within its turn

    raw = b"".join(request["raw"] for request in collector.requests)
    assert CANARY.encode() not in raw
    assert b"[redacted:ACME_API_KEY]" in raw  # the secret was in what the user said, and was redacted
    assert outcome.record.settings.trace == "otlp"


def test_the_standard_variables_name_the_collector_and_its_headers_which_are_not_stored(
    demo: Path, collector: Collector, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", collector.url)
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_HEADERS", f"x-honeycomb-team={HEADER_CANARY},x-tenant=shop%20one")
    result = runner.invoke(
        app, ["run", "suites/demo/golden.yaml", "--db", str(demo / "runs.db"), "--seed", "0", "--trace", "otlp"]
    )
    assert result.exit_code in (0, 1), result.output
    assert collector.requests
    assert {request["headers"]["x-honeycomb-team"] for request in collector.requests} == {HEADER_CANARY}
    assert {request["headers"]["x-tenant"] for request in collector.requests} == {"shop one"}
    assert _by_operation(collector.spans(), "invoke_agent")
    for path in demo.glob("runs*"):
        assert HEADER_CANARY.encode() not in path.read_bytes()
    with RunStore(demo / "runs.db") as store:
        record = store.get_run("latest")
    assert record.settings.trace == "otlp"
    assert collector.url not in record.model_dump_json()


def test_without_trace_nothing_is_sent(demo: Path, collector: Collector, monkeypatch: pytest.MonkeyPatch) -> None:
    """The collector is named in the environment (as on a machine set up for other traced services), but the run
    did not ask to be traced."""
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", collector.url)
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", f"{collector.url}/v1/traces")
    result = runner.invoke(app, ["run", "suites/demo/golden.yaml", "--db", str(demo / "runs.db")])
    assert result.exit_code in (0, 1), result.output
    assert collector.requests == []
    with RunStore(demo / "runs.db") as store:
        assert store.get_run("latest").settings.trace is None


def test_an_unreachable_collector_warns_once_and_the_run_goes_on(demo: Path, caplog: pytest.LogCaptureFixture) -> None:
    with socket.socket() as free:
        free.bind(("127.0.0.1", 0))
        port = free.getsockname()[1]  # closed again: nothing listens there
    with caplog.at_level(logging.WARNING, logger="simulator.trace"):
        outcome = simulator.run(
            "suites/demo/golden.yaml", db=demo / "runs.db", seed=0, trace="otlp",
            trace_endpoint=f"http://127.0.0.1:{port}",
        )  # fmt: skip
    assert outcome.completed
    warnings = [record for record in caplog.records if record.name == "simulator.trace"]
    assert len(warnings) == 1
    assert "could not send spans" in warnings[0].getMessage()


@pytest.mark.parametrize(
    ("args", "environment", "message"),
    [
        (["--trace-endpoint", "http://127.0.0.1:4318"], {}, "--trace-endpoint only applies to a traced run"),
        (["--trace", "otlp", "--trace-endpoint", "localhost:4318"], {}, "--trace-endpoint: 'localhost:4318/v1/traces'"),
        (["--trace", "otlp"], {"OTEL_EXPORTER_OTLP_PROTOCOL": "grpc"}, "OTEL_EXPORTER_OTLP_PROTOCOL='grpc'"),
        (["--trace", "otlp"], {"OTEL_EXPORTER_OTLP_HEADERS": "api-key"}, "OTEL_EXPORTER_OTLP_HEADERS: entry 1"),
        (["--trace", "jaeger"], {}, "'jaeger' is not one of 'otlp'"),
    ],
)
def test_bad_trace_settings_are_refused_before_anything_is_stored(
    args: list[str], environment: dict[str, str], message: str, demo: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    for name, value in environment.items():
        monkeypatch.setenv(name, value)
    result = runner.invoke(app, ["run", "suites/demo/golden.yaml", "--db", str(demo / "runs.db"), *args])
    assert result.exit_code == 2, result.output
    assert message in " ".join(result.output.split())
    if (demo / "runs.db").exists():
        with RunStore(demo / "runs.db") as store:
            assert store.list_runs() == []


def test_the_api_refuses_an_unknown_trace_kind(demo: Path) -> None:
    with pytest.raises(InputError, match="trace: Input should be 'otlp'"):
        simulator.run("suites/demo/golden.yaml", db=demo / "runs.db", trace="zipkin")
