"""No secret the process knows appears in any stored, printed or exported text.

Canaries stand in for every kind of secret: a provider key litellm reads from the environment
(``OPENAI_API_KEY``), the variables named by ``api_key_env`` (of an HTTP agent and of the judge role) and by
``headers_from_env`` (a ``Bearer`` header), and credentials in URLs. The variables the suite names are called
something no name rule would catch, so only reading them makes them secrets. A local OpenAI-compatible
server plays the agent under test (it echoes every credential it got in its replies, and in a 401 body) and
the model provider of the user and judge roles (it echoes the key in a 401 body, or in the simulated user's
message). Then every command that stores, prints or exports runs, and no canary may be in any output, nor
anywhere in the bytes of the files left beside the store (the store, its WAL and shared memory, the
checkpoint and request-cache databases, the reports, the exports).
"""

from __future__ import annotations

import json
import threading
import zipfile
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from simulator.cli import app
from simulator.safety import (
    contains_secret,
    is_secret_name,
    redact,
    redact_data,
    redacted_and_shortened,
    register_secret,
)

runner = CliRunner()

OPENAI_KEY = "sk-canary-openai-4f1d2c3b5a69"
AGENT_KEY = "canary-agentkey-8e7d6c5b"  # the HTTP agent's api_key_env
HEADER = "canary-header-1a2b3c4d"  # an HTTP agent header, sent as "Bearer <HEADER>"
JUDGE_KEY = "canary-judgekey-9f8e7d6c"  # the judge role's api_key_env
URL_TOKEN = "canary-urltoken-3c4d5e6f"  # ?access_token= in a URL
URL_PASSWORD = "canary-urlpass-7a8b9c0d"  # user:password@ in a URL
CANARIES = (OPENAI_KEY, AGENT_KEY, HEADER, JUDGE_KEY, URL_TOKEN, URL_PASSWORD)
# What a leak would contain even if a prefix or a quote were cut off.
CORES = tuple(canary.split("canary-", 1)[1] for canary in CANARIES)

# Variable names no rule recognises as secret: only reading them (api_key_env, headers_from_env) tells.
AGENT_KEY_VAR = "SHOPPING_BACKEND"
HEADER_VAR = "SHOP_HEADER_VALUE"
JUDGE_KEY_VAR = "JUDGE_HOLDER"


def _echo(handler: BaseHTTPRequestHandler) -> str:
    """Everything secret the server knows of, as a careless server would quote it."""
    return (
        f"authorization={handler.headers.get('Authorization')} x-shop-auth={handler.headers.get('X-Shop-Auth')} "
        f"provider key {OPENAI_KEY}; files at https://shop:{URL_PASSWORD}@files.example.com/export"
        f"?user=me&access_token={URL_TOKEN}&page=2"
    )


class _Handler(BaseHTTPRequestHandler):
    def log_message(self, format: str, *args: Any) -> None:
        return None

    def _send(self, status: int, body: dict[str, Any]) -> None:
        data = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def _reply(self, content: str) -> None:
        self._send(
            200,
            {
                "id": "chatcmpl-1",
                "object": "chat.completion",
                "created": 0,
                "model": "stub",
                "choices": [
                    {"index": 0, "message": {"role": "assistant", "content": content}, "finish_reason": "stop"}
                ],
                "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2},
            },
        )

    def _refuse(self) -> None:
        message = f"Incorrect API key provided: {self.headers.get('Authorization')}. {_echo(self)}"
        self._send(401, {"error": {"message": message, "type": "invalid_request_error", "code": "invalid_api_key"}})

    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers.get("Content-Length") or 0)) or b"{}")
        text = json.dumps(body.get("messages", []))
        if self.path.startswith("/agent/"):
            if "please fail" in text:
                self._refuse()
            else:
                self._reply(f"Echo: {_echo(self)}")
        elif "AUTH-FAIL" in text or body.get("model") == "stub-judge":
            self._refuse()
        else:  # the simulated user: says the key out loud
            move = {"message": f"here is everything: {_echo(self)}", "done": False, "reason": ""}
            self._reply(json.dumps(move))


@pytest.fixture
def server() -> Iterator[str]:
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{httpd.server_address[1]}"
    finally:
        httpd.shutdown()
        httpd.server_close()


def _project(root: Path, base: str) -> Path:
    (root / ".git").mkdir()
    (root / "personas").mkdir()
    (root / "personas" / "plain.yaml").write_text(
        "name: plain\npersonality: Says what is needed.\nlanguage: en\n", encoding="utf-8"
    )
    suites = root / "suites"
    suites.mkdir()
    (suites / "agent.yaml").write_text(
        f"type: http\nbase_url: {base}/agent\napi_key_env: {AGENT_KEY_VAR}\n"
        f"headers_from_env: {{X-Shop-Auth: {HEADER_VAR}}}\n",
        encoding="utf-8",
    )
    (suites / "echo.yaml").write_text(
        "name: echo\npersonas: [plain]\ncases:\n"
        "  - kind: golden\n    name: echoes\n    turns:\n"
        "      - user: Hello, what do you know about me?\n"
        "        expect: {must_contain: [Echo]}\n"
        "  - kind: golden\n    name: refused\n    turns:\n"
        "      - user: please fail\n",
        encoding="utf-8",
    )
    (suites / "llm_user.yaml").write_text(
        f"name: llm_user\npersonas: [plain]\nmodels:\n"
        f"  user: {{model: openai/stub-user, api_base: '{base}/model/v1', max_retries: 0}}\n"
        f"  judge: {{model: openai/stub-judge, api_base: '{base}/model/v1', api_key_env: {JUDGE_KEY_VAR}, "
        "max_retries: 0}\n"
        "cases:\n"
        "  - kind: scenario\n    name: talkative_user\n    goal: Ask about the order.\n    max_turns: 1\n"
        "  - kind: scenario\n    name: user_refused\n    goal: AUTH-FAIL now.\n    max_turns: 1\n",
        encoding="utf-8",
    )
    return root


def _leaks(text: str | bytes) -> list[str]:
    data = text.encode("utf-8", "surrogateescape") if isinstance(text, str) else text
    return [core for core in CORES if core.encode() in data]


def _file_leaks(root: Path) -> dict[str, list[str]]:
    found: dict[str, list[str]] = {}
    for path in sorted(root.rglob("*")):
        if not path.is_file():
            continue
        data = path.read_bytes()
        if zipfile.is_zipfile(path):
            with zipfile.ZipFile(path) as archive:
                data += b"".join(archive.read(name) for name in archive.namelist())
        leaks = _leaks(data)
        if leaks:
            found[str(path.relative_to(root))] = leaks
    return found


def test_no_canary_in_the_store_the_terminal_reports_or_exports(
    tmp_path: Path, server: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = _project(tmp_path, server)
    monkeypatch.chdir(root)
    monkeypatch.setenv("OPENAI_API_KEY", OPENAI_KEY)
    monkeypatch.setenv(AGENT_KEY_VAR, AGENT_KEY)
    monkeypatch.setenv(HEADER_VAR, f"Bearer {HEADER}")
    monkeypatch.setenv(JUDGE_KEY_VAR, JUDGE_KEY)
    assert not any(is_secret_name(name) for name in (AGENT_KEY_VAR, HEADER_VAR, JUDGE_KEY_VAR))
    db = str(root / "store" / "runs.db")
    reports = root / "store" / "reports"
    formats = ["md", "html", "json", "csv", "xlsx", "junit"]

    outputs: dict[str, str] = {}

    def cli(*args: str) -> str:
        result = runner.invoke(app, list(args))
        text = result.stdout + result.stderr
        outputs[" ".join(args)] = text
        assert result.exit_code in (0, 1), f"{args}: exit {result.exit_code}\n{text}"
        return text

    run_args = ["run", "suites", "--db", db, "--seed", "1", "--report-dir", str(reports)]
    cli(*run_args, *[part for fmt in formats for part in ("--report", fmt)])
    shown = json.loads(cli("runs", "show", "latest", "--db", db, "--json"))
    cli("runs", "show", "latest", "--db", db)
    cli("runs", "list", "--db", db)
    cli("runs", "list", "--db", db, "--json")
    for fmt in formats:
        if fmt == "xlsx":
            cli("report", "latest", "--db", db, "-f", fmt, "-o", str(root / "out" / "run.xlsx"))
        else:
            cli("report", "latest", "--db", db, "-f", fmt)
    for fmt in ("json", "yaml"):
        cli("export", "run", "latest", "--db", db, "-f", fmt)
        cli("export", "results", "latest", "--db", db, "-f", fmt)
    cli("export", "run", "latest", "--db", db, "-o", str(root / "out" / "run.json"))
    cli("golden", "from-run", "latest", "echoes", "--db", db, "-o", str(root / "out" / "golden.yaml"))
    cli("digest", "latest", "--db", db)
    cli("runs", "compare", "latest", "latest", "--db", db)
    cli("simulate", "suites/echo.yaml")
    cli("simulate", "suites/llm_user.yaml")
    cli("simulate", "suites/echo.yaml", "--json")
    cli("simulate", "suites/llm_user.yaml", "--json")

    # The canaries did reach everything: the agent's replies, its refusal, both roles' failures.
    results = {r["case"]: r for r in shown["results"]}
    assert set(results) == {"echoes", "refused", "talkative_user", "user_refused"}
    stored = json.dumps(shown)
    assert "[redacted:OPENAI_API_KEY]" in stored
    assert f"[redacted:{AGENT_KEY_VAR}]" in stored
    assert f"[redacted:{HEADER_VAR}]" in stored
    assert "[redacted:url]" in stored
    assert results["refused"]["outcome"] == "error"
    assert results["user_refused"]["outcome"] == "error"
    assert "redacted" in outputs["simulate suites/echo.yaml"]

    leaked = {command: _leaks(text) for command, text in outputs.items() if _leaks(text)}
    assert not leaked, f"canaries printed: {leaked}"
    files = _file_leaks(root)
    assert not files, f"canaries in files: {files}"
    assert (root / "store" / "runs.db").exists()
    assert (root / "store" / "cache.db").exists()
    assert (root / "store" / "runs-checkpoints.db").exists()


def test_secret_names_cover_the_provider_variables_litellm_reads() -> None:
    for name in (
        "OPENAI_API_KEY", "ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN", "AZURE_API_KEY", "AZURE_OPENAI_API_KEY",
        "AZURE_AD_TOKEN", "AZURE_CLIENT_SECRET", "AZURE_PASSWORD", "AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY",
        "AWS_SESSION_TOKEN", "AWS_BEARER_TOKEN_BEDROCK", "GEMINI_API_KEY", "VERTEXAI_CREDENTIALS", "HF_TOKEN",
        "HUGGINGFACE_API_KEY", "WATSONX_APIKEY", "WATSONX_ZENAPIKEY", "REPLICATE_API_TOKEN", "DATABRICKS_CLIENT_SECRET",
        "SNOWFLAKE_JWT", "GITHUB_COPILOT_TOKEN", "LITELLM_MASTER_KEY", "REDIS_PASSWORD", "my_service_token",
    ):  # fmt: skip
        assert is_secret_name(name), name
    for name in (
        "OPENAI_API_BASE", "AZURE_API_VERSION", "AWS_REGION_NAME", "AWS_WEB_IDENTITY_TOKEN_FILE", "GIGACHAT_AUTH_URL",
        "DISABLE_KEY_NAME", "LITELLM_KEY_ROTATION_ENABLED", "PWD", "HOME", "PATH", "VALKEY_HOST", "TERM_SESSION_ID",
        "KEYBOARD_LAYOUT",
    ):  # fmt: skip
        assert not is_secret_name(name), name


def test_redact_replaces_known_secrets_and_url_credentials(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ACME_API_KEY", "sk-acme-0123456789")
    monkeypatch.setenv("ACME_DEBUG_TOKEN", "short")  # too short to be a secret: "short" stays everywhere
    register_secret("ACME_HEADER_VAR", "Bearer acme-bearer-credential")
    text = (
        "401: key sk-acme-0123456789 rejected; header Bearer acme-bearer-credential; token acme-bearer-credential; "
        "short; see https://bob:hunter2hunter2@db.example/x?a=1&api_key=abcdefghijk&page=2 and "
        "https://example.com/search?key=shoes"
    )
    assert redact(text) == (
        "401: key [redacted:ACME_API_KEY] rejected; header [redacted:ACME_HEADER_VAR]; token "
        "[redacted:ACME_HEADER_VAR]; short; see https://[redacted:url]@db.example/x?a=1&api_key=[redacted:url]"
        "&page=2 and https://example.com/search?key=shoes"
    )
    untouched = "nothing secret here"
    assert redact(untouched) is untouched
    # Inside JSON text, a secret with a quote in it is matched as JSON writes it.
    monkeypatch.setenv("QUOTED_SECRET", 'abc"defghij')
    assert redact(json.dumps({"v": 'x abc"defghij y'})) == '{"v": "x [redacted:QUOTED_SECRET] y"}'
    monkeypatch.delenv("ACME_API_KEY")
    assert "sk-acme-0123456789" in redact("sk-acme-0123456789")  # the environment is read again when it changes


def test_redact_data_copies_only_what_holds_a_secret(monkeypatch: pytest.MonkeyPatch) -> None:
    from simulator.models.transcript import AgentEvent

    monkeypatch.setenv("ACME_API_KEY", "sk-acme-0123456789")
    event = AgentEvent(turn=1, messages=["the key is sk-acme-0123456789"])
    clean = AgentEvent(turn=2, messages=["fine"])
    data: dict[str, Any] = {"events": [event, clean], "note": ("ok", "sk-acme-0123456789")}
    redacted = redact_data(data)
    assert redacted["events"][0].messages == ["the key is [redacted:ACME_API_KEY]"]
    assert redacted["events"][1] is clean
    assert redacted["note"] == ("ok", "[redacted:ACME_API_KEY]")
    assert event.messages == ["the key is sk-acme-0123456789"]  # the original is not changed
    assert redact_data(clean) is clean
    assert contains_secret(b"\x92\xa5sk-acme-0123456789")
    assert not contains_secret(b"\x92\xa5clean")


class _Crash(BaseException):
    """Stands for the process dying mid-conversation (not an Exception: nothing in the engine catches it)."""


class _EchoingAgent:
    def __init__(self, crash_on_turn: int | None = None) -> None:
        self.crash_on_turn = crash_on_turn

    async def respond(self, request: Any) -> Any:
        from simulator.agents import AgentReply

        if request.turn == self.crash_on_turn:
            raise _Crash
        return AgentReply(messages=[f"r{request.turn - 1}: your key is {OPENAI_KEY}"])

    async def aclose(self) -> None:
        return None


class _User:
    async def next_message(self, request: Any) -> Any:
        from simulator.user import UserReply

        return UserReply(text=f"please {request.goal}")


def test_checkpoints_of_an_interrupted_conversation_hold_no_secret(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A killed run leaves its conversations' checkpoints in the file: they are written redacted, and a
    resume reads them back."""
    import asyncio

    from pydantic import TypeAdapter

    from simulator.engine import ConversationSetup, open_checkpointer, simulate
    from simulator.judges import StepJudge
    from simulator.models import Case
    from simulator.models.transcript import AgentEvent

    monkeypatch.setenv("OPENAI_API_KEY", OPENAI_KEY)
    case = TypeAdapter(Case).validate_python(
        {
            "kind": "simulation",
            "name": "long",
            "steps": [{"goal": f"g{i}", "checks": [{"must_contain": [f"r{i}"]}], "max_turns": 2} for i in range(3)],
        }
    )
    db = tmp_path / "runs-checkpoints.db"

    async def crash_then_resume() -> Any:
        async with open_checkpointer(db) as saver:
            setup = ConversationSetup(case=case, agent=_EchoingAgent(3), user=_User(), checker=StepJudge())
            with pytest.raises(_Crash):
                await simulate(setup, checkpointer=saver, thread_id="run:long")
            # The process is "dead" here: what it left in the file is all a reader finds.
            left = b"".join(path.read_bytes() for path in tmp_path.iterdir())
            assert _leaks(left) == []
            assert b"[redacted:OPENAI_API_KEY]" in left
        async with open_checkpointer(db) as saver:
            setup = ConversationSetup(case=case, agent=_EchoingAgent(), user=_User(), checker=StepJudge())
            return await simulate(setup, checkpointer=saver, thread_id="run:long")

    transcript = asyncio.run(crash_then_resume())
    replies = [event.messages[0] for event in transcript.events if isinstance(event, AgentEvent)]
    assert replies[:2] == ["r0: your key is [redacted:OPENAI_API_KEY]", "r1: your key is [redacted:OPENAI_API_KEY]"]
    assert [step.status for step in transcript.steps] == ["complete"] * 3


# --- a secret cut short is still a secret ------------------------------------------------------------------

CUT_KEY = "zq7AgentKey-5f1e9c3b7d"  # the HTTP agent's api_key_env
CUT_HEADER = "zq8HeaderVal-2b4d6f8a0c"  # an HTTP agent header value
CUT_MODEL_KEY = "zq9ModelKey-3e5a7c9b1d"  # the user role's api_key_env
CUT_TOKEN = "zq6EnvToken-1c3e5a7b9d"  # a secret by its variable's name, unknown to the agent's client
CUT_VARS = {
    "CUTTING_BACKEND": CUT_KEY,
    "CUTTING_HEADER": CUT_HEADER,
    "CUTTING_MODEL": CUT_MODEL_KEY,
    "CUTTING_SERVICE_TOKEN": CUT_TOKEN,
}
# Where the text was cut before redaction: an agent's error body after 300 characters, a provider's words
# (``Error code: 401 - <body>``) after 500.
_AGENT_CUT = 300
_PROVIDER_CUT = 500 - len("Error code: 401 - ")


class _ErrorHandler(BaseHTTPRequestHandler):
    body = ""  # set by the test: what every call gets back

    def log_message(self, format: str, *args: Any) -> None:
        return None

    def do_POST(self) -> None:
        self.rfile.read(int(self.headers.get("Content-Length") or 0))
        data = self.body.encode()
        self.send_response(400 if self.path.startswith("/agent/") else 401)
        self.send_header("Content-Type", "text/plain")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)


def _cut_project(root: Path, base: str) -> Path:
    (root / ".git").mkdir()
    (root / "personas").mkdir()
    (root / "personas" / "plain.yaml").write_text(
        "name: plain\npersonality: Says what is needed.\nlanguage: en\n", encoding="utf-8"
    )
    suites = root / "suites"
    suites.mkdir()
    (suites / "agent.yaml").write_text(
        f"type: http\nbase_url: {base}/agent\napi_key_env: CUTTING_BACKEND\n"
        "headers_from_env: {X-Key: CUTTING_HEADER}\n",
        encoding="utf-8",
    )
    (suites / "cut.yaml").write_text(
        "name: cut\npersonas: [plain]\nmodels:\n"
        f"  user: {{model: openai/stub-user, api_base: '{base}/model/v1', api_key_env: CUTTING_MODEL, "
        "max_retries: 0}\n"
        "cases:\n"
        "  - kind: golden\n    name: agent_fails\n    turns:\n      - user: Hello\n"
        "  - kind: scenario\n    name: user_fails\n    goal: Ask about the order.\n    max_turns: 1\n",
        encoding="utf-8",
    )
    return root


@pytest.mark.parametrize("secret", [CUT_KEY, CUT_HEADER, CUT_TOKEN, CUT_MODEL_KEY])
@pytest.mark.parametrize("where", ["at our cut", "cut by the sender"])
def test_no_piece_of_a_secret_is_left_where_an_error_text_is_cut(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, secret: str, where: str
) -> None:
    limit = _PROVIDER_CUT if secret == CUT_MODEL_KEY else _AGENT_CUT
    if where == "at our cut":  # the old cut would keep the first 8 characters of the secret
        body = "E" * (limit - 8) + secret + " (the rest of the body)"
    else:  # the sender shortened its own body in the middle of the secret
        body = "the server said: something failed ... " + secret[:9]
    handler = type("_Handler", (_ErrorHandler,), {"body": body})
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    try:
        root = _cut_project(tmp_path, f"http://127.0.0.1:{httpd.server_address[1]}")
        monkeypatch.chdir(root)
        for name, value in CUT_VARS.items():
            monkeypatch.setenv(name, value)
        reports = root / "store" / "reports"
        result = runner.invoke(
            app,
            # One at a time, the agent's case first: a run whose first conversations all fail on a refused key
            # stops early (the refused model's case would then not be stored, and its text not cut anywhere).
            ["run", "suites", "--db", str(root / "store" / "runs.db"), "--report-dir", str(reports), "--report", "md",
             "--concurrency", "1"],
        )  # fmt: skip
    finally:
        httpd.shutdown()
        httpd.server_close()
    output = result.stdout + result.stderr
    assert result.exit_code == 1, output
    assert list(reports.glob("*.md"))
    piece = secret[:6].encode()  # every piece of 6 or more characters starts with it
    assert piece not in output.encode()
    files = sorted(str(path) for path in root.rglob("*") if path.is_file() and piece in path.read_bytes())
    assert not files
    # The body did reach the store (the cut drops a label it would split: the body then ends in the padding).
    reached = b"EEEEEEEEEE" if where == "at our cut" else b"[redacted:"
    assert any(reached in path.read_bytes() for path in root.rglob("*") if path.is_file())


@pytest.mark.parametrize(
    ("text", "limit", "shortened"),
    [
        ("short and clean", 20, "short and clean"),
        ("0123456789 abcdefghij", 11, "0123456789…"),
        # Redacted before the cut: no piece of the secret is left where the cut falls.
        ("key zq1TableKey-0a9b8c7d6e and more", 12, "key [redacted:ZQ_TABLE_KEY]…"[:4] + "…"),
        ("key zq1TableKey-0a9b8c7d6e and more", 40, "key [redacted:ZQ_TABLE_KEY] and more"),
        ("key zq1TableKey-0a9b8c7d6e and more", 30, "key [redacted:ZQ_TABLE_KEY] a…"),
        # A label the cut would split goes whole.
        ("key zq1TableKey-0a9b8c7d6e and more", 20, "key …"),
        ("key zq1TableKey-0a9b8c7d6e and more", 11, "key …"),
        # A text that already ends with the start of a secret (6 characters or more, before "…" or "...").
        ("the body ... zq1Tab", 100, "the body ... [redacted:ZQ_TABLE_KEY]"),
        ("the body ... zq1TableKey-0a9…", 100, "the body ... [redacted:ZQ_TABLE_KEY]…"),
        ("the body ... zq1TableK...", 100, "the body ... [redacted:ZQ_TABLE_KEY]..."),
        # Shorter starts, and starts that are not at the end, are ordinary text.
        ("the body ... zq1Ta", 100, "the body ... zq1Ta"),
        ("zq1Tab is a word here", 100, "zq1Tab is a word here"),
        ("the body ... xzq1Tablets", 100, "the body ... xzq1Tablets"),
    ],
)
def test_redacted_and_shortened(monkeypatch: pytest.MonkeyPatch, text: str, limit: int, shortened: str) -> None:
    monkeypatch.setenv("ZQ_TABLE_KEY", "zq1TableKey-0a9b8c7d6e")
    assert redacted_and_shortened(text, limit) == shortened
    assert len(shortened) <= limit
