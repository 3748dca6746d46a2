"""Providers fail fast and name the fix: a typo'd provider prefix is found by validate, run and the API's plan (with
a did-you-mean, at the place that set it); a missing key variable is found before the first conversation (the
provider's own variable, or the role's api_key_env); a model on a local api_base needs no key; missing or refused
credentials are never retried; and a run whose first conversations fail on their key stops with one message."""

from __future__ import annotations

import http.server
import json
import sqlite3
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any, ClassVar

import pytest
from typer.testing import CliRunner

import simulator
from simulator.cli import EXIT_INVALID, app
from simulator.errors import ConfigErrors, CredentialsError, InputError
from simulator.llm import FakeScript, LLMClient, RetryPolicy
from simulator.models.settings import ModelRoles, ModelSettings
from tests.factories import run

runner = CliRunner()

AGENT = "agent: {type: python, callable: simulator.demo.shop:respond}\n"
CASES = "cases:\n  - {kind: golden, name: greet, turns: [{user: hello}]}\n"


def _suite(root: Path, models: str = "", agent: str = AGENT) -> Path:
    (root / ".git").mkdir(exist_ok=True)
    path = root / "suite.yaml"
    path.write_text(f"name: providers\n{agent}{models}{CASES}", encoding="utf-8")
    return path


def _shown(result: Any) -> str:
    return str(result.stdout + result.stderr)


# -- (a) the provider prefix ---------------------------------------------------------------------------------------

TYPOS = [
    # (the suite's models: text, where the error is placed, the suggestion)
    ("models:\n  user: opnai/gpt-4o\n", "suite.yaml:4:9: models.user.model: user model 'opnai/gpt-4o'", "'openai'"),
    (
        "models:\n  judge:\n    model: antropic/claude-3-5-haiku-latest\n",
        "suite.yaml:5:12: models.judge.model: judge model 'antropic/claude-3-5-haiku-latest'",
        "'anthropic' (anthropic/claude-3-5-haiku-latest)",
    ),
]


@pytest.mark.parametrize("command", ["validate", "run"])
@pytest.mark.parametrize("typo", TYPOS, ids=["bare-string", "model-key"])
def test_a_typod_provider_is_exit_2_at_its_place_with_a_did_you_mean(
    command: str, typo: tuple[str, str, str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    models, place, suggestion = typo
    _suite(tmp_path, models)
    monkeypatch.chdir(tmp_path)
    result = runner.invoke(app, [command, "suite.yaml"] + (["--db", "runs.db"] if command == "run" else []))
    assert result.exit_code == EXIT_INVALID, _shown(result)
    assert place in _shown(result)
    assert f"did you mean {suggestion}" in _shown(result)
    assert not (tmp_path / "runs.db").exists() or _stored_runs(tmp_path / "runs.db") == 0


def test_a_litellm_agents_model_is_checked_in_its_agent_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "agent.yaml").write_text(
        "type: litellm\nmodel: gemnii/gemini-2.0-flash\ninstructions: Be brief.\n", encoding="utf-8"
    )
    _suite(tmp_path, agent="agent: agent.yaml\n")
    monkeypatch.chdir(tmp_path)
    result = runner.invoke(app, ["validate", "suite.yaml"])
    assert result.exit_code == EXIT_INVALID, _shown(result)
    assert "agent.yaml:2:8: model: agent model 'gemnii/gemini-2.0-flash'" in _shown(result)
    assert "did you mean 'gemini'" in _shown(result)


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        (["--judge-model", "opnai/gpt-4o"], "--judge-model (judge_model=): judge model 'opnai/gpt-4o'"),
        (["--models", "models.yaml"], "models.yaml:2:10: user.model: user model 'azur/gpt-4o'"),
    ],
    ids=["option", "models-file"],
)
def test_a_typod_provider_on_the_command_line_names_the_option_or_file(
    args: list[str], expected: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _suite(tmp_path)
    (tmp_path / "models.yaml").write_text("user:\n  model: azur/gpt-4o\n", encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    result = runner.invoke(app, ["run", "suite.yaml", "--db", "runs.db", *args])
    assert result.exit_code == EXIT_INVALID, _shown(result)
    assert expected in _shown(result)
    assert "did you mean" in _shown(result)


@pytest.mark.parametrize(
    ("known", "typo"),
    [
        ("fake/anything", "fak/anything"),
        ("openai/gpt-4o-mini", "opeanai/gpt-4o-mini"),
        ("anthropic/claude-3-5-haiku-latest", "anthropc/claude-3-5-haiku-latest"),
        ("ollama/llama3.1", "olama/llama3.1"),
    ],
)
def test_litellms_providers_and_the_fake_pass_and_their_typos_do_not(known: str, typo: str, tmp_path: Path) -> None:
    base = ", api_base: 'http://127.0.0.1:9/v1'"  # a local server: no key needed, nothing is asked in a plan
    assert simulator.plan(_suite(tmp_path, f"models:\n  judge: {{model: {known}{base}}}\n")).items
    with pytest.raises(ConfigErrors, match=f"unknown provider {typo.partition('/')[0]!r}; did you mean"):
        simulator.plan(_suite(tmp_path, f"models:\n  judge: {{model: {typo}{base}}}\n"))


def test_the_api_plan_names_the_keyword(tmp_path: Path) -> None:
    with pytest.raises(InputError, match=r"--user-model \(user_model=\): user model 'opnai/x'.*did you mean 'openai'"):
        simulator.plan(_suite(tmp_path), user_model="opnai/x")


# -- (b) the key variable ------------------------------------------------------------------------------------------

KEYS = [
    ("openai/gpt-4o-mini", "", "OPENAI_API_KEY"),
    ("anthropic/claude-3-5-haiku-latest", "", "ANTHROPIC_API_KEY"),
    ("azure/my-deployment", "", "AZURE_API_KEY"),
    ("groq/llama-3.1-8b-instant", "", "GROQ_API_KEY"),
    ("anthropic/claude-3-5-haiku-latest", ", api_key_env: TEAM_CLAUDE_KEY", "TEAM_CLAUDE_KEY"),
    # A remote endpoint still needs its key.
    ("openai/gpt-4o-mini", ", api_base: 'https://llm.example.com/v1'", "OPENAI_API_KEY"),
]


@pytest.mark.parametrize(("model", "more", "variable"), KEYS)
def test_a_missing_key_is_exit_2_naming_the_variable_before_anything_is_stored(
    model: str, more: str, variable: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _suite(tmp_path, f"models:\n  judge: {{model: {model}{more}}}\n")
    monkeypatch.chdir(tmp_path)
    result = runner.invoke(app, ["run", "suite.yaml", "--db", "runs.db"])
    assert result.exit_code == EXIT_INVALID, _shown(result)
    assert f"suite.yaml:4:18: models.judge.model: judge model {model!r} needs a key" in _shown(result)
    assert f"{variable} is not set: set it (export {variable}=...)" in _shown(result)
    assert not (tmp_path / "runs.db").exists() or _stored_runs(tmp_path / "runs.db") == 0


@pytest.mark.parametrize(
    ("settings", "environ", "missing"),
    [
        ({"model": "openai/m", "api_base": "http://127.0.0.1:8000/v1"}, {}, None),
        ({"model": "anthropic/m", "api_base": "http://localhost:11434"}, {}, None),
        ({"model": "openai/m", "api_base": "http://[::1]:8000/v1"}, {}, None),
        ({"model": "openai/m", "api_base": "http://10.1.2.3/v1"}, {}, None),
        ({"model": "openai/m", "api_base": "http://192.168.1.20:8080"}, {}, None),
        ({"model": "openai/m", "api_base": "https://llm.example.com/v1"}, {}, "OPENAI_API_KEY"),
        ({"model": "openai/m", "api_base": "http://127.0.0.1/v1", "api_key_env": "MINE"}, {}, "MINE"),
        ({"model": "azure/d"}, {"AZURE_AD_TOKEN": "t"}, None),
        ({"model": "anthropic/m", "backend": "openai"}, {"ANTHROPIC_API_KEY": "k"}, "OPENAI_API_KEY"),
        ({"model": "bedrock/m"}, {}, None),  # AWS credentials come from elsewhere: not checked
        ({"model": "fake/m"}, {}, None),
    ],
)
def test_the_variable_a_role_needs(settings: dict[str, str], environ: dict[str, str], missing: str | None) -> None:
    from simulator.llm import missing_key

    assert missing_key(ModelSettings.model_validate(settings), environ) == missing


class _Answering(http.server.BaseHTTPRequestHandler):
    """An OpenAI-compatible server on 127.0.0.1 that wants no key: it answers and notes each Authorization."""

    seen: ClassVar[list[str | None]] = []

    def do_POST(self) -> None:
        self.rfile.read(int(self.headers.get("content-length") or 0))
        _Answering.seen.append(self.headers.get("Authorization"))
        body = json.dumps(
            {
                "id": "c", "object": "chat.completion", "created": 1, "model": "served-model",
                "choices": [
                    {"index": 0, "message": {"role": "assistant", "content": "hello"}, "finish_reason": "stop"}
                ],
                "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2},
            }
        ).encode()  # fmt: skip
        self.send_response(200)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: Any) -> None:
        pass


@pytest.mark.parametrize("backend", ["auto", "litellm"])
def test_a_model_on_a_local_api_base_is_asked_without_a_key(backend: str) -> None:
    _Answering.seen = []
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Answering)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        base = f"http://127.0.0.1:{server.server_address[1]}/v1"
        settings = ModelSettings(model="openai/served-model", api_base=base, backend=backend)  # type: ignore[arg-type]
        client = LLMClient(ModelRoles(judge=settings), retry=RetryPolicy(sleep=_no_wait), environ={})

        async def ask() -> str | None:
            try:
                return (await client.complete("judge", [{"role": "user", "content": "hi"}])).content
            finally:
                await client.aclose()

        assert run(ask()) == "hello"
    finally:
        server.shutdown()
        server.server_close()
    assert len(_Answering.seen) == 1
    assert _Answering.seen[0] in (None, "Bearer no-key")  # litellm's OpenAI client sends something; nothing real


def test_with_the_key_set_the_plan_goes_ahead(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = _suite(tmp_path, "models:\n  judge: anthropic/claude-3-5-haiku-latest\n")
    with pytest.raises(ConfigErrors, match="ANTHROPIC_API_KEY is not set"):
        simulator.plan(path)
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-test-only")
    assert simulator.plan(path).items


# -- (c, d) the provider's own variable; never retried -------------------------------------------------------------


class _Refusing:
    """A model endpoint on 127.0.0.1 that answers every request 401, counting them."""

    def __init__(self) -> None:
        self.requests = 0
        refusing = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                refusing.requests += 1
                self.rfile.read(int(self.headers.get("content-length") or 0))
                body = json.dumps({"error": {"message": "invalid x-api-key", "type": "authentication_error"}})
                self.send_response(401)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(body)))
                self.end_headers()
                self.wfile.write(body.encode())

            def log_message(self, *args: Any) -> None:
                pass

        self._server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self._server.server_address[1]}"
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    def __enter__(self) -> _Refusing:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.shutdown()
        self._server.server_close()


@pytest.fixture
def refusing() -> Iterator[_Refusing]:
    with _Refusing() as server:
        yield server


async def _no_wait(seconds: float) -> None:
    raise AssertionError(f"a credentials failure was retried (waited {seconds} s)")


@pytest.mark.parametrize(
    ("model", "base_path", "variable"),
    [
        ("anthropic/claude-3-5-haiku-latest", "", "ANTHROPIC_API_KEY"),
        ("openai/gpt-4o-mini", "/v1", "OPENAI_API_KEY"),
        ("groq/llama-3.1-8b-instant", "/v1", "GROQ_API_KEY"),
    ],
)
def test_a_refused_key_is_not_retried_and_the_hint_names_the_providers_variable(
    model: str, base_path: str, variable: str, refusing: _Refusing, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(variable, "sk-wrong-key-for-test")
    settings = ModelSettings(model=model, api_base=refusing.url + base_path, max_retries=3)
    client = LLMClient(ModelRoles(judge=settings), retry=RetryPolicy(sleep=_no_wait))

    async def ask() -> None:
        try:
            await client.complete("judge", [{"role": "user", "content": "hi"}])
        finally:
            await client.aclose()

    with pytest.raises(CredentialsError) as caught:
        run(ask())
    message = str(caught.value)
    assert "refused the credentials" in message
    assert f"Check that {variable} holds a valid key" in message
    if variable != "OPENAI_API_KEY":
        assert "OPENAI_API_KEY" not in message
    assert refusing.requests == 1


def test_missing_credentials_reported_as_a_server_error_are_not_retried_and_say_nothing_was_sent() -> None:
    from litellm import exceptions

    # What litellm raises for azure/... when the Azure SDK finds no key: a 500, retried 4 times before.
    missing = exceptions.APIError(
        500,
        "AzureException APIError - Missing credentials. Please pass one of `api_key`, `azure_ad_token`, "
        "`azure_ad_token_provider`, or the `AZURE_OPENAI_API_KEY` or `AZURE_OPENAI_AD_TOKEN` environment variables.",
        llm_provider="azure",
        model="my-deployment",
    )
    settings = ModelSettings(model="azure/my-deployment", max_retries=3)
    client = LLMClient(ModelRoles(judge=settings), retry=RetryPolicy(sleep=_no_wait), fake_script=FakeScript())
    with pytest.raises(CredentialsError) as caught:
        run(client.complete("judge", [{"role": "user", "content": "hi"}], mock_response=missing))
    assert "no key was sent" in str(caught.value)
    assert "Set AZURE_API_KEY" in str(caught.value)
    assert "refused" not in str(caught.value)


# -- (e) a run whose first conversations fail on their key stops with one message ------------------------------------


def _stored_runs(db: Path) -> int:
    with sqlite3.connect(db) as connection:
        return int(connection.execute("SELECT count(*) FROM runs").fetchone()[0])


def _stored_results(db: Path) -> int:
    with sqlite3.connect(db) as connection:
        return int(connection.execute("SELECT count(*) FROM results").fetchone()[0])


def test_a_run_whose_first_conversations_are_refused_stops_with_one_message(
    refusing: _Refusing, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _suite(tmp_path, f"models:\n  judge: {{model: openai/gpt-4o-mini, api_base: '{refusing.url}/v1'}}\n")
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("OPENAI_API_KEY", "sk-revoked-key-for-test")
    args = ["run", "suite.yaml", "--db", "runs.db", "--repeat", "6", "--concurrency", "1", "--no-cache"]
    result = runner.invoke(app, args)
    shown = _shown(result)
    assert result.exit_code == 3, shown
    assert shown.count("refused the credentials") == 1, shown
    assert "6 of 6 conversation(s) were not run" in shown
    assert "simulator runs resume" in shown
    assert refusing.requests == 3  # the first three conversations: one refusal alone does not stop a run
    assert _stored_results(tmp_path / "runs.db") == 0


def test_one_refusal_among_working_calls_does_not_stop_the_run(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A provider that refuses one request of a key that works (a blip, a per-request policy) costs that one
    conversation, stored as an error when it ends, never the rest of the run."""
    state = {"requests": 0}

    class _OnceRefusing(http.server.BaseHTTPRequestHandler):
        def log_message(self, format: str, *args: Any) -> None:
            return None

        def do_POST(self) -> None:
            self.rfile.read(int(self.headers.get("Content-Length") or 0))
            state["requests"] += 1
            if state["requests"] == 1:
                body = json.dumps({"error": {"message": "Incorrect API key provided", "type": "invalid_api_key"}})
                self.send_response(401)
            else:
                verdict = {"verdict": "met", "reason": "fine", "quote": "", "satisfied": True, "score": 1}
                body = json.dumps(
                    {
                        "id": "x", "object": "chat.completion", "created": 0, "model": "gpt-4o-mini",
                        "choices": [{"index": 0, "finish_reason": "stop",
                                     "message": {"role": "assistant", "content": json.dumps(verdict)}}],
                        "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2},
                    }
                )  # fmt: skip
                self.send_response(200)
            data = body.encode()
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _OnceRefusing)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    try:
        url = f"http://127.0.0.1:{httpd.server_address[1]}"
        _suite(tmp_path, f"models:\n  judge: {{model: openai/gpt-4o-mini, api_base: '{url}/v1', max_retries: 0}}\n")
        monkeypatch.chdir(tmp_path)
        monkeypatch.setenv("OPENAI_API_KEY", "sk-working-key-for-test")
        args = ["run", "suite.yaml", "--db", "runs.db", "--repeat", "4", "--concurrency", "1", "--no-cache"]
        result = runner.invoke(app, args)
    finally:
        httpd.shutdown()
        httpd.server_close()
    shown = _shown(result)
    assert "were not run" not in shown, shown
    assert _stored_results(tmp_path / "runs.db") == 4, shown
