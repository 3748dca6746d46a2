"""The canary scan: a run configured with secrets in every place a secret can be configured leaves no piece of
any of them in any file or output, whether it finishes or is killed (``kill -9``) with conversations in flight.

The secrets (canaries, fresh for each test): the judge's key, read through ``api_key_env`` under a name no name
rule calls secret; the password in the model roles' ``api_base`` (``http://bob:PASSWORD@127.0.0.1:PORT``), which
the model client sends as HTTP Basic auth; an HTTP agent's ``api_key_env`` and ``headers_from_env`` values, also
under ordinary names; and a provider key (``OPENAI_API_KEY``). A local server plays the agent under test and the
models of the user and the judge, and echoes every one of them, in every form (the value, ``user:password``, the
Basic header, its base64), in every reply, from the first: before the judge is ever called, the simulated user's
reply is cached and the agent's first turn checkpointed. Each run is its own process, as a user's run is, so
what it knows is what it was configured with. The scan (``tests/_canary_scan.py``) reads every file left beside
the store, the store's and the cache's WAL, the checkpoints, every report format (the xlsx unzipped), ``export
run`` output, and everything printed.
"""

from __future__ import annotations

import base64
import gzip
import json
import os
import sqlite3
import subprocess
import sys
import threading
import zipfile
import zlib
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from simulator.cli import app
from simulator.runner import _api
from simulator.safety import is_secret_name, redact
from tests._canary_scan import PREFIX, canary, forms, scan_files, scan_outputs

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="needs POSIX signals")

#: Seconds any wait here may take before the test fails (never reached when things work).
LIMIT = 90.0
USER = "bob"  # the api_base's user name: not a secret itself, so short enough that no canary starts with it
#: Variables named so that no name rule takes them for secrets: only the configuration says they are.
JUDGE_VAR = "JUDGE_ACCESS"
AGENT_VAR = "SHOP_BACKEND"
HEADER_VAR = "SHOP_HEADER_VALUE"
FORMATS = ("md", "html", "json", "csv", "xlsx", "junit")


@dataclass
class Secrets:
    """This test's canaries, and what the environment and the server say of them."""

    judge: str = field(default_factory=lambda: canary("judge"))
    password: str = field(default_factory=lambda: canary("pw"))
    agent: str = field(default_factory=lambda: canary("agent"))
    header: str = field(default_factory=lambda: canary("header"))
    openai: str = field(default_factory=lambda: f"sk-{canary('openai')}")
    #: Whether the server knows the api_base's password (see the resume in the kill test).
    tells_password: bool = True

    def canaries(self) -> dict[str, str]:
        """What must never be found, by name (the Basic pair too: its base64 is the header's credential)."""
        return {
            "judge key": self.judge, "api_base password": self.password, "user:password": f"{USER}:{self.password}",
            "agent key": self.agent, "agent header": self.header, "OPENAI_API_KEY": self.openai,
        }  # fmt: skip

    def environment(self) -> dict[str, str]:
        """The run's environment: the test process's, without its own store, with the canaries."""
        env = {key: value for key, value in os.environ.items() if key != "SIMULATOR_DB"}
        env.update(
            {
                "LITELLM_OFFLINE_MODE": "true", "OPENAI_API_KEY": self.openai, JUDGE_VAR: self.judge,
                AGENT_VAR: self.agent, HEADER_VAR: f"Token {self.header}",
            }
        )  # fmt: skip
        return env

    def echo(self, handler: BaseHTTPRequestHandler) -> str:
        """Every secret, in every form, and the credentials as received: what a careless server says."""
        basic = base64.b64encode(f"{USER}:{self.password}".encode()).decode()
        password = f"password {self.password} as {USER}:{self.password} (Basic {basic}, {basic}); "
        return (
            f"judge {self.judge}; {password if self.tells_password else ''}"
            f"agent {self.agent}; header {self.header}; openai {self.openai}; got Authorization="
            f"{handler.headers.get('Authorization')} X-Shop={handler.headers.get('X-Shop')}"
        )


class _Server(ThreadingHTTPServer):
    secrets: Secrets
    #: Set when the agent got a message saying "hold"; that request waits for ``release``.
    held: threading.Event
    release: threading.Event
    #: The Authorization headers the model endpoint received (the Basic auth must really be sent).
    model_auth: list[str]


class _Handler(BaseHTTPRequestHandler):
    server: _Server

    def log_message(self, format: str, *args: Any) -> None:
        return None

    def _reply(self, content: str) -> None:
        body = {
            "id": "chatcmpl-1", "object": "chat.completion", "created": 0, "model": "stub",
            "choices": [{"index": 0, "message": {"role": "assistant", "content": content}, "finish_reason": "stop"}],
            "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2},
        }  # fmt: skip
        data = json.dumps(body).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers.get("Content-Length") or 0)) or b"{}")
        messages = body.get("messages") or [{}]
        echo = self.server.secrets.echo(self)
        if self.path.startswith("/agent/"):
            if "hold" in str(messages[-1].get("content")):
                self.server.held.set()
                self.server.release.wait(LIMIT)
            self._reply(f"Echo: {echo}")
            return
        self.server.model_auth.append(str(self.headers.get("Authorization")))
        if body.get("model") == "stub-user":
            self._reply(json.dumps({"message": f"here is everything: {echo}", "done": True, "reason": echo}))
        else:  # the judge
            self._reply(json.dumps({"satisfied": False, "reason": f"not yet: {echo}", "quote": echo}))


@pytest.fixture
def server() -> Iterator[_Server]:
    httpd = _Server(("127.0.0.1", 0), _Handler)
    httpd.secrets = Secrets()
    httpd.held = threading.Event()
    httpd.release = threading.Event()
    httpd.model_auth = []
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    try:
        yield httpd
    finally:
        httpd.release.set()
        httpd.shutdown()
        httpd.server_close()


def _project(root: Path, server: _Server, *, scenario: bool) -> list[Path]:
    """The suite and agent files (they name the variables and hold the api_base, so the scan skips them)."""
    base = f"http://127.0.0.1:{server.server_address[1]}"
    api_base = f"http://{USER}:{server.secrets.password}@127.0.0.1:{server.server_address[1]}/model/v1"
    (root / ".git").mkdir()
    agent = root / "agent.yaml"
    agent.write_text(
        f"type: http\nbase_url: {base}/agent\napi_key_env: {AGENT_VAR}\nheaders_from_env: {{X-Shop: {HEADER_VAR}}}\n"
        "retries: 0\n",
        encoding="utf-8",
    )

    def role(name: str, extra: str = "") -> str:
        return f"{{model: openai/stub-{name}, api_base: '{api_base}', max_retries: 0{extra}}}"

    cases = "  - kind: golden\n    name: two_turns\n    turns:\n      - user: Hello\n      - user: hold on please\n"
    if scenario:
        cases += "  - kind: scenario\n    name: talk\n    goal: Ask about the order.\n    max_turns: 1\n"
    suite = root / "suite.yaml"
    suite.write_text(
        "name: canaries\nagent: agent.yaml\nmodels:\n"
        f"  user: {role('user')}\n  judge: {role('judge', f', api_key_env: {JUDGE_VAR}')}\n"
        f"cases:\n{cases}",
        encoding="utf-8",
    )
    return [agent, suite]


def _simulator(root: Path, server: _Server, *args: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-m", "simulator", *args],
        cwd=root, env=server.secrets.environment(), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip


def _read_back(root: Path, db: Path) -> dict[str, str]:
    """What every command that reads the stored run prints or writes (in this process, which knows no canary:
    whatever it shows came from the files)."""
    runner = CliRunner()
    outputs: dict[str, str] = {}
    folder = root / "read" / str(len(list(root.glob("read/*"))))  # each reading its own files

    def cli(*args: str) -> None:
        result = runner.invoke(app, [*args, "--db", str(db)])
        outputs[" ".join(args)] = result.stdout + result.stderr
        assert result.exit_code in (0, 1), f"{args}: exit {result.exit_code}\n{result.stdout}{result.stderr}"

    cli("runs", "show", "latest", "--json")
    cli("runs", "list")
    for fmt in FORMATS:
        cli("report", "latest", "-f", fmt, "-o", str(folder / f"report.{fmt}"))
    cli("report", "latest", "-f", "md")
    for fmt in ("json", "yaml"):
        cli("export", "run", "latest", "-f", fmt, "-o", str(folder / f"run.{fmt}"))
        cli("export", "results", "latest", "-f", fmt)
    return outputs


def _assert_no_canary(root: Path, server: _Server, outputs: dict[str, str], skip: list[Path]) -> None:
    canaries = server.secrets.canaries()
    printed = scan_outputs(outputs, canaries)
    assert not printed, f"canaries printed: {printed}"
    files = scan_files(root, canaries, skip=skip)
    assert not files, f"canaries in files: {files}"


def test_no_canary_anywhere_after_a_run(tmp_path: Path, server: _Server) -> None:
    secrets = server.secrets
    assert not any(is_secret_name(name) for name in (JUDGE_VAR, AGENT_VAR, HEADER_VAR))
    skip = _project(tmp_path, server, scenario=True)
    server.release.set()  # nothing waits in this run
    db = tmp_path / "store" / "runs.db"
    reports = ["--report-dir", str(tmp_path / "store" / "reports"), *[a for f in FORMATS for a in ("--report", f)]]
    run = _simulator(tmp_path, server, "run", "suite.yaml", "--db", str(db), "--seed", "1", "--record", *reports)
    out, errors = run.communicate(timeout=LIMIT)
    assert run.returncode in (0, 1), out + errors
    outputs = {"run: stdout": out, "run: stderr": errors, **_read_back(tmp_path, db)}
    _assert_no_canary(tmp_path, server, outputs, skip)

    # The canaries reached the run: the model client sent the Basic credential, the agent's replies and the
    # user's move quoted every secret, and the run stored and cached them (redacted).
    assert f"Basic {base64.b64encode(f'{USER}:{secrets.password}'.encode()).decode()}" in server.model_auth
    stored = json.loads(outputs["runs show latest --json"])
    assert {result["case"] for result in stored["results"]} == {"two_turns", "talk"}
    text = json.dumps(stored)
    for label in (JUDGE_VAR, AGENT_VAR, HEADER_VAR, "OPENAI_API_KEY", "models.user.api_base"):
        assert f"[redacted:{label}]" in text, label
    cache = b"".join(path.read_bytes() for path in (tmp_path / "store").glob("cache.db*"))
    assert f"[redacted:{JUDGE_VAR}]".encode() in cache  # the user's reply, cached before the judge's first call


def test_no_canary_anywhere_after_kill_9_mid_run(
    tmp_path: Path, server: _Server, monkeypatch: pytest.MonkeyPatch
) -> None:
    skip = _project(tmp_path, server, scenario=False)
    db = tmp_path / "store" / "runs.db"
    run = _simulator(tmp_path, server, "run", "suite.yaml", "--db", str(db), "--seed", "1")
    # The conversation's first turn is answered and checkpointed; its second waits at the agent.
    if not server.held.wait(LIMIT):
        run.kill()
        raise AssertionError(f"the agent was never reached: {run.communicate()}")
    run.kill()  # SIGKILL: nothing of the process runs after this
    out, errors = run.communicate(timeout=LIMIT)
    assert run.returncode == -9
    outputs = {"run: stdout": out, "run: stderr": errors}
    left = sorted(path.name for path in (tmp_path / "store").iterdir())
    assert "runs-checkpoints.db" in left, left
    # The checkpoint of the first turn holds the agent's echo, redacted.
    checkpoints = b"".join(path.read_bytes() for path in (tmp_path / "store").glob("runs-checkpoints.db*"))
    assert b"[redacted:" in checkpoints
    _assert_no_canary(tmp_path, server, outputs, skip)

    # Resumed (here, in a process that learns the secrets only from the stored run and its environment): the
    # rest of the conversation quotes them again. All but the api_base's password: the stored run keeps that URL
    # with its credentials redacted, so the resumed run never has the password, and nothing it talks to is told.
    server.secrets.tells_password = False
    server.release.set()
    for name, value in server.secrets.environment().items():
        monkeypatch.setenv(name, value)
    monkeypatch.chdir(tmp_path)
    known: dict[str, bool] = {}  # which secrets the resumed run knew as it started
    execute = _api._execute

    async def starting(*args: Any, **kwargs: Any) -> Any:
        known.update({name: redact(value) != value for name, value in server.secrets.canaries().items()})
        return await execute(*args, **kwargs)

    monkeypatch.setattr(_api, "_execute", starting)
    resumed = CliRunner().invoke(app, ["runs", "resume", "latest", "--db", str(db)])
    assert resumed.exit_code in (0, 1), resumed.stdout + resumed.stderr
    outputs["resume"] = resumed.stdout + resumed.stderr
    assert known == {name: "password" not in name for name in server.secrets.canaries()}, known
    for name in server.secrets.environment():
        monkeypatch.delenv(name)
    read = _read_back(tmp_path, db)
    _assert_no_canary(tmp_path, server, {**outputs, **read}, skip)
    assert json.loads(read["runs show latest --json"])["run"]["status"] == "completed"


# --- what planning registers, place by place -------------------------------------------------------------------


def _planned_with(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, where: str, secret: str, entry: str) -> None:
    """Plan (store nothing, call nothing) a suite whose only secret is ``secret``, configured at ``where``."""
    from simulator import plan
    from simulator.runner import plan_simulation

    agent: dict[str, Any] = {"type": "http", "base_url": "http://127.0.0.1:9/agent"}
    models: dict[str, Any] = {"user": {"model": "fake/user"}, "judge": {"model": "fake/judge"}}
    options: dict[str, Any] = {}
    if where in ("judge api_key_env", "user api_key_env"):
        role = where.split(maxsplit=1)[0]
        monkeypatch.setenv("PLAIN_SETTING", secret)
        models[role]["api_key_env"] = "PLAIN_SETTING"
    elif where == "agent api_key_env":
        monkeypatch.setenv("PLAIN_SETTING", secret)
        agent["api_key_env"] = "PLAIN_SETTING"
    elif where == "agent header":
        monkeypatch.setenv("PLAIN_SETTING", f"Bearer {secret}")
        agent["headers_from_env"] = {"X-Anything": "PLAIN_SETTING"}
    elif where == "agent base_url":
        agent["base_url"] = f"http://{USER}:{secret}@127.0.0.1:9/agent"
    elif where == "judge api_base":
        models["judge"]["api_base"] = f"http://{USER}:{secret}@127.0.0.1:9/v1"
    elif where == "judge api_base from ${VAR}":
        monkeypatch.setenv("PLAIN_SETTING", secret)
        models["judge"]["api_base"] = f"http://{USER}:${{PLAIN_SETTING}}@127.0.0.1:9/v1"
    elif where == "api_base given to the run":
        options["models"] = {"user": {"api_base": f"http://{USER}:{secret}@127.0.0.1:9/v1"}}
    elif where == "a URL in the environment":
        monkeypatch.setenv("OPENAI_BASE_URL", f"https://{USER}:{secret}@proxy.example/v1")
    else:  # a provider key, by its variable's name
        monkeypatch.setenv("ACME_API_KEY", secret)
    suite = tmp_path / "suite.yaml"
    suite.write_text(
        json.dumps(
            {
                "name": "planned", "agent": agent, "models": models,
                "cases": [{"kind": "golden", "name": "hello", "turns": [{"user": "Hello"}]}],
            }
        ),
        encoding="utf-8",
    )  # fmt: skip
    if entry == "plan":
        plan([suite], **options)
    else:
        plan_simulation(suite, **options)
    # Gone from the environment (a library, or the agent's own code, may unset it): still a secret.
    for variable in ("PLAIN_SETTING", "OPENAI_BASE_URL", "ACME_API_KEY"):
        monkeypatch.delenv(variable, raising=False)


@pytest.mark.parametrize("entry", ["plan", "plan_simulation"])
@pytest.mark.parametrize(
    ("where", "forms"),
    [
        ("judge api_key_env", ["{s}"]),
        ("user api_key_env", ["{s}"]),
        ("agent api_key_env", ["{s}"]),
        ("agent header", ["{s}", "Bearer {s}"]),
        ("agent base_url", ["{s}", "{u}:{s}", "Basic {b}", "{b}"]),
        ("judge api_base", ["{s}", "{u}:{s}", "Basic {b}", "{b}"]),
        ("judge api_base from ${VAR}", ["{s}", "{u}:{s}", "Basic {b}", "{b}"]),
        ("api_base given to the run", ["{s}", "{u}:{s}", "Basic {b}", "{b}"]),
        ("a URL in the environment", ["{s}", "{u}:{s}", "Basic {b}", "{b}"]),
        ("a provider key", ["{s}"]),
    ],
)
def test_planning_makes_every_configured_secret_known(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, where: str, forms: list[str], entry: str
) -> None:
    from simulator.safety import redact

    secret = canary("planned")
    _planned_with(tmp_path, monkeypatch, where, secret, entry)
    basic = base64.b64encode(f"{USER}:{secret}".encode()).decode()
    for form in forms:
        text = f"the server said: {form.format(s=secret, u=USER, b=basic)} (end)"
        redacted = redact(text)
        assert "[redacted:" in redacted, redacted
        assert scan_outputs({"text": redacted}, {"secret": secret}) == {}, redacted


@pytest.mark.parametrize(
    ("url", "secrets", "kept"),
    [
        # Percent-encoded in the URL, decoded by the HTTP client that sends it: both are secrets.
        ("http://bob:p%40ss-Zq4Wk81x@host/v1", ["p%40ss-Zq4Wk81x", "p@ss-Zq4Wk81x", "bob:p@ss-Zq4Wk81x"], []),
        # A user without a password is a token (sent as Basic base64("token:")).
        ("https://tok-Zq5Wk82xab@host/v1", ["tok-Zq5Wk82xab", base64.b64encode(b"tok-Zq5Wk82xab:").decode()], []),
        # No credentials, or no URL a client could send: nothing is registered, the host stays readable.
        ("http://127.0.0.1:8080/v1", [], ["127.0.0.1:8080"]),
        ("ssh://git@host/repo", [], ["git", base64.b64encode(b"git:").decode()]),
        # A URL as a stored run keeps it (a resumed run plans from it): the label stays as it is.
        ("http://[redacted:url]@host/v1", [], ["http://[redacted:url]@host/v1", "[redacted:url]"]),
        ("http://[::1/v1 user:Zq6Wk83xpw", [], ["user:Zq6Wk83xpw"]),
    ],
)
def test_url_credentials_are_secrets_in_every_form(url: str, secrets: list[str], kept: list[str]) -> None:
    from simulator.safety import redact, register_url_credentials

    register_url_credentials("models.judge.api_base", url)
    for secret in secrets:
        assert redact(f"echo {secret} echo") == "echo [redacted:models.judge.api_base] echo", secret
    for text in kept:
        assert redact(text) == text


# --- the scan itself finds what it looks for -------------------------------------------------------------------


def _sqlite_wal_with_blob(path: Path, data: bytes) -> Any:
    """A database whose only copy of ``data`` is a zlib BLOB in its WAL; the open writer is returned (closing it
    would move the page into the database file)."""
    writer = sqlite3.connect(path)
    writer.execute("PRAGMA journal_mode=WAL")
    writer.execute("PRAGMA wal_autocheckpoint=0")
    writer.execute("CREATE TABLE t (b BLOB)")
    writer.execute("INSERT INTO t VALUES (?)", (zlib.compress(data),))
    writer.commit()
    return writer


@pytest.mark.parametrize(
    ("kind", "form"),
    [
        ("plain", "value"),
        ("plain", "value prefix"),
        ("plain", "base64"),
        ("xlsx", "value"),
        ("gzip", "base64 prefix"),
        ("sqlite wal blob", "value"),
    ],
)
def test_the_scan_finds_a_canary_in_every_kind_of_file(tmp_path: Path, kind: str, form: str) -> None:
    value = canary("scan")
    data = forms(value)[form]
    planted = b"before " + data + b" after"
    path = tmp_path / f"left.{kind.split(maxsplit=1)[0]}"
    if kind == "plain":
        path.write_bytes(planted)
    elif kind == "xlsx":
        with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as archive:
            archive.writestr("xl/sharedStrings.xml", planted)
    elif kind == "gzip":
        path.write_bytes(gzip.compress(planted))
    writer = _sqlite_wal_with_blob(path, planted) if kind == "sqlite wal blob" else None
    try:
        found = scan_files(tmp_path, {"the canary": value})
        assert form in " ".join(found.get(path.name, [])), found
        assert scan_files(tmp_path, {"another": canary("other")}) == {}
        assert len(forms(value)["value prefix"]) == PREFIX
    finally:
        if writer is not None:
            writer.close()
