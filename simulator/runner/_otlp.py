"""Sending a run's spans to an OpenTelemetry collector (``simulator run --trace otlp``): OTLP over HTTP, JSON.

Where to: ``--trace-endpoint`` (a collector's base URL, ``/v1/traces`` added, or the full traces URL), else the
standard variables ``OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`` (the full URL) and ``OTEL_EXPORTER_OTLP_ENDPOINT`` (the
base URL), else ``http://localhost:4318`` as OpenTelemetry's exporters default. Headers come from
``OTEL_EXPORTER_OTLP_TRACES_HEADERS`` / ``OTEL_EXPORTER_OTLP_HEADERS`` (``key=value,key2=value2``, values
URL-encoded); their values are registered as secrets, so they are redacted wherever they might show.

The spans of each conversation are built once it is stored (:mod:`simulator.runner._spans`) and sent in batches
in the background; the run never waits for the collector, and a collector that cannot be reached or refuses the
spans gives one warning (``logging``, on stderr) and no further attempt: tracing never fails a run. Every request
body passes :func:`simulator.safety.redact_data` before it leaves.
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import unquote, urlsplit

from simulator.errors import InputError
from simulator.llm import ModelCall
from simulator.models.run import RunRecord, StoredResult
from simulator.runner._spans import AgentInfo, conversation_spans, export_request, new_span_id, run_span
from simulator.safety import redact, redact_data, register_secret

_log = logging.getLogger("simulator.trace")

DEFAULT_ENDPOINT = "http://localhost:4318"
TRACES_PATH = "/v1/traces"
#: Spans sent in one request.
BATCH = 512
#: Seconds one request may take before the collector counts as unreachable.
TIMEOUT_S = 10.0


@dataclass(frozen=True)
class OtlpTarget:
    """Where spans go: the traces URL and the headers sent with them."""

    url: str
    headers: dict[str, str] = field(default_factory=dict)


def _env(environ: Mapping[str, str], *names: str) -> tuple[str, str] | None:
    """The first of ``names`` set to something in ``environ``, with its value."""
    for name in names:
        value = environ.get(name, "").strip()
        if value:
            return name, value
    return None


def _headers(environ: Mapping[str, str]) -> dict[str, str]:
    found = _env(environ, "OTEL_EXPORTER_OTLP_TRACES_HEADERS", "OTEL_EXPORTER_OTLP_HEADERS")
    if found is None:
        return {}
    name, text = found
    headers: dict[str, str] = {}
    for number, pair in enumerate(text.split(","), start=1):
        if not pair.strip():
            continue
        key, equals, value = pair.partition("=")
        if not equals or not key.strip():
            raise InputError(
                f"{name}: entry {number} is not key=value (write it as key1=value1,key2=value2, values URL-encoded)"
            )
        headers[unquote(key.strip())] = unquote(value.strip())
    for key, value in headers.items():
        register_secret(f"{name} {key}", value)
    return headers


def otlp_target(endpoint: str | None = None, environ: Mapping[str, str] | None = None) -> OtlpTarget:
    """Where ``--trace otlp`` sends spans (see the module doc); an InputError naming the setting to fix when the
    address is not an http(s) URL or the standard variables ask for a protocol other than OTLP/HTTP."""
    env = os.environ if environ is None else environ
    protocol = _env(env, "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL", "OTEL_EXPORTER_OTLP_PROTOCOL")
    if protocol is not None and protocol[1] not in ("http/json", "http/protobuf"):
        raise InputError(
            f"{protocol[0]}={protocol[1]!r}: Simulator sends OTLP over HTTP (JSON); point it at the collector's "
            "HTTP port (4318 by default) and set the variable to http/json, or unset it"
        )
    if endpoint is not None:
        where, url = "--trace-endpoint", endpoint.strip()
        url = url if url.rstrip("/").endswith(TRACES_PATH) else url.rstrip("/") + TRACES_PATH
    elif (full := _env(env, "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT")) is not None:
        where, url = full
    elif (base := _env(env, "OTEL_EXPORTER_OTLP_ENDPOINT")) is not None:
        where, url = base[0], base[1].rstrip("/") + TRACES_PATH
    else:
        where, url = "the default endpoint", DEFAULT_ENDPOINT + TRACES_PATH
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise InputError(
            f"{where}: {redact(url)!r} is not an http(s) URL of an OpenTelemetry collector, e.g. http://localhost:4318"
        )
    return OtlpTarget(url=url, headers=_headers(env))


class OtlpExporter:
    """Sends span batches to one collector in the background; after one failure it warns once and stops."""

    def __init__(self, target: OtlpTarget, *, batch: int = BATCH) -> None:
        self.target = target
        self.batch = batch
        self.failed = False
        self._pending: list[dict[str, Any]] = []
        self._sending: set[asyncio.Task[None]] = set()
        self._client: Any = None

    def add(self, spans: list[dict[str, Any]]) -> None:
        """Queue ``spans``; a full batch starts on its way (on the running event loop)."""
        if self.failed:
            return
        self._pending.extend(spans)
        if len(self._pending) >= self.batch:
            self._send_pending()

    def _send_pending(self) -> None:
        spans, self._pending = self._pending, []
        if spans and not self.failed:
            task = asyncio.get_running_loop().create_task(self._post(spans))
            self._sending.add(task)
            task.add_done_callback(self._sending.discard)

    async def _post(self, spans: list[dict[str, Any]]) -> None:
        if self.failed:
            return
        from simulator._http import async_client

        if self._client is None:
            self._client = async_client(timeout=TIMEOUT_S)
        body = json.dumps(redact_data(export_request(spans)), ensure_ascii=False).encode()
        try:
            response = await self._client.post(
                self.target.url, content=body, headers={**self.target.headers, "Content-Type": "application/json"}
            )
            problem = None if response.is_success else f"it answered HTTP {response.status_code}"
        except Exception as exc:  # tracing never fails a run: any failure to send is the one warning
            problem = f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__
        if problem is not None and not self.failed:
            self.failed = True
            _log.warning(
                "tracing: could not send spans to %s (%s); the run goes on without tracing",
                redact(self.target.url), redact(problem),
            )  # fmt: skip

    async def close(self) -> None:
        """Send what is queued, wait for every request in flight, close the connection."""
        self._send_pending()
        if self._sending:
            await asyncio.gather(*self._sending, return_exceptions=True)
        if self._client is not None:
            await self._client.aclose()
            self._client = None


class RunTracer:
    """The spans of one process's share of a run: one per stored conversation as it is stored, and the run's own
    span when the process is done with the run."""

    def __init__(self, record: RunRecord, exporter: OtlpExporter, agents: Callable[[int], AgentInfo]) -> None:
        self.record = record
        self.exporter = exporter
        self.agents = agents
        self.span_id = new_span_id()
        self.started = time.time_ns()

    def conversation(self, stored: StoredResult, calls: list[ModelCall] | None) -> None:
        """Queue the spans of one stored conversation."""
        try:
            self.exporter.add(conversation_spans(stored, self.span_id, self.agents(stored.suite), calls or ()))
        except Exception as exc:  # a span that cannot be built must not cost the run its result
            _log.warning("tracing: no spans for conversation %s (%s)", stored.key, redact(str(exc)))

    async def finish(self, status: str) -> None:
        """Queue the run's span and send everything left."""
        try:
            self.exporter.add([run_span(self.record, self.span_id, self.started, time.time_ns(), status)])
            await self.exporter.close()
        except Exception as exc:  # the run is stored and ended: tracing cannot change that
            _log.warning("tracing: the last spans were not sent (%s)", redact(str(exc)))
