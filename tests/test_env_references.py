"""``${VAR}`` / ``${VAR:-default}`` in an http agent's ``base_url`` and a model role's ``api_base``.

Pinned here: a missing variable is an error at its file:line when the files are validated, and when a stored run
is repeated; a reference that is not well formed is an error; the reference is filled in where the service is
reached (the agent's URL, the model request) and the stored snapshot keeps it as written; a hosted evals file
takes ``models:``.
"""

from __future__ import annotations

import asyncio
import textwrap
from pathlib import Path

import pytest

import simulator
from simulator.agents.http_agent import HttpAdapter
from simulator.errors import AgentError, ConfigErrors, ModelError
from simulator.llm import FakeScript, LLMClient
from simulator.loading import load_suite, validate_paths
from simulator.models import HttpAgent, ModelRoles, ModelSettings
from simulator.models.env_refs import expand, reference_problem

HTTP_AGENT = """\
type: http
base_url: {base_url}
model: shop-bot
"""

SUITE = """\
name: shop
agent: agent.yaml
models:
  judge:
    api_base: {api_base}
cases:
  - name: hello
    kind: golden
    turns:
      - user: Hello
"""

HOSTED = """\
models:
  judge:
    model: fake/judge
    api_base: http://127.0.0.1:${JUDGE_PORT}/v1
evals:
  - name: refund
    steps:
      - goal: Ask for a refund.
        success_criteria: The agent starts a refund.
"""

PYTHON_AGENT = "type: python\ncallable: simulator.demo.shop:respond\n"


def write(folder: Path, files: dict[str, str]) -> Path:
    (folder / ".git").mkdir(exist_ok=True)  # the search for agent.yaml and personas stops here
    for name, text in files.items():
        (folder / name).write_text(textwrap.dedent(text), encoding="utf-8")
    return folder / "suite.yaml"


def errors_of(path: Path) -> list[tuple[str, int, int, str, str]]:
    return [(Path(e.file).name, e.line, e.column, e.key_path, e.message) for e in validate_paths([path]).errors]


@pytest.fixture(autouse=True)
def _no_such_variables(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("AGENT_PORT", "JUDGE_PORT", "AGENT_URL"):
        monkeypatch.delenv(name, raising=False)


@pytest.mark.parametrize(
    ("files", "expected"),
    [
        (
            {"suite.yaml": SUITE.format(api_base="http://127.0.0.1:${JUDGE_PORT}/v1"), "agent.yaml": PYTHON_AGENT},
            [
                (
                    "suite.yaml",
                    5,
                    15,
                    "models.judge.api_base",
                    "'http://127.0.0.1:${JUDGE_PORT}/v1' needs the environment variable JUDGE_PORT, which is not "
                    "set: set it (export JUDGE_PORT=...) or give a default: ${JUDGE_PORT:-...}",
                )
            ],
        ),
        (
            {
                "suite.yaml": SUITE.format(api_base="http://127.0.0.1:${JUDGE_PORT:-4000}/v1"),
                "agent.yaml": HTTP_AGENT.format(base_url="http://127.0.0.1:${AGENT_PORT}/v1"),
            },
            [
                (
                    "agent.yaml",
                    2,
                    11,
                    "base_url",
                    "'http://127.0.0.1:${AGENT_PORT}/v1' needs the environment variable AGENT_PORT, which is not "
                    "set: set it (export AGENT_PORT=...) or give a default: ${AGENT_PORT:-...}",
                )
            ],
        ),
        (
            {"suite.yaml": HOSTED, "agent.yaml": PYTHON_AGENT},
            [
                (
                    "suite.yaml",
                    4,
                    15,
                    "models.judge.api_base",
                    "'http://127.0.0.1:${JUDGE_PORT}/v1' needs the environment variable JUDGE_PORT, which is not "
                    "set: set it (export JUDGE_PORT=...) or give a default: ${JUDGE_PORT:-...}",
                )
            ],
        ),
        (
            {"suite.yaml": SUITE.format(api_base="http://h:${JUDGE PORT}/v1"), "agent.yaml": PYTHON_AGENT},
            [
                (
                    "suite.yaml",
                    5,
                    15,
                    "models.judge.api_base",
                    "`${JUDGE PORT}` is not an environment reference: write ${NAME} or ${NAME:-default} (NAME of "
                    "letters, digits and _, not starting with a digit)",
                )
            ],
        ),
        (
            {
                "suite.yaml": SUITE.format(api_base="http://h/v1"),
                "agent.yaml": HTTP_AGENT.format(base_url="${AGENT_URL:-localhost:8000}"),
            },
            [
                (
                    "agent.yaml",
                    2,
                    11,
                    "base_url",
                    "'${AGENT_URL:-localhost:8000}' is not an http(s) URL once filled in from the environment: the "
                    "value must start with http:// or https://",
                )
            ],
        ),
    ],
    ids=["api_base-unset", "base_url-unset-in-agent-file", "hosted-evals-models", "bad-reference", "not-a-url"],
)
def test_a_reference_that_cannot_be_filled_in_is_an_error_at_its_line(
    tmp_path: Path, files: dict[str, str], expected: list[tuple[str, int, int, str, str]]
) -> None:
    assert errors_of(write(tmp_path, files)) == expected


def test_set_variables_and_defaults_validate(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AGENT_PORT", "8123")
    path = write(
        tmp_path,
        {
            "suite.yaml": SUITE.format(api_base="http://127.0.0.1:${JUDGE_PORT:-4000}/v1"),
            "agent.yaml": HTTP_AGENT.format(base_url="http://127.0.0.1:${AGENT_PORT}/v1"),
        },
    )
    assert errors_of(path) == []


@pytest.mark.parametrize(
    ("text", "environ", "expected"),
    [
        ("http://h:${P}/v1", {"P": "81"}, "http://h:81/v1"),
        ("http://h:${P:-80}/v1", {}, "http://h:80/v1"),
        ("http://h:${P:-80}/v1", {"P": ""}, "http://h:80/v1"),
        ("${SCHEME:-http}://${HOST}:${P:-80}", {"HOST": "h"}, "http://h:80"),
        ("http://h/$P/{x}", {"P": "1"}, "http://h/$P/{x}"),
    ],
)
def test_expand(text: str, environ: dict[str, str], expected: str) -> None:
    assert reference_problem(text) is None
    assert expand(text, environ) == expected


def test_the_agent_and_the_model_are_reached_at_the_filled_in_address(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AGENT_PORT", "8123")
    adapter = HttpAdapter(HttpAgent(type="http", base_url="http://127.0.0.1:${AGENT_PORT}/v1"))
    assert adapter.url == "http://127.0.0.1:8123/v1/chat/completions"
    monkeypatch.delenv("AGENT_PORT")
    with pytest.raises(AgentError, match="names the environment variable AGENT_PORT, which is not set"):
        HttpAdapter(HttpAgent(type="http", base_url="http://127.0.0.1:${AGENT_PORT}/v1"))

    script = FakeScript().enqueue("judge", "fine")
    judge = ModelSettings(model="fake/judge", api_base="http://127.0.0.1:${JUDGE_PORT:-4000}/v1")
    client = LLMClient(ModelRoles(judge=judge), fake_script=script)
    asyncio.run(client.complete("judge", [{"role": "user", "content": "hi"}]))
    assert script.requests[0].api_base == "http://127.0.0.1:4000/v1"
    unset = ModelSettings(model="fake/judge", api_base="http://127.0.0.1:${JUDGE_PORT}/v1")
    with pytest.raises(ModelError, match=r"the judge role's api_base .* JUDGE_PORT, which is not set"):
        asyncio.run(LLMClient(ModelRoles(judge=unset), fake_script=script).complete("judge", []))


def test_the_stored_run_keeps_the_reference_and_a_repeat_needs_the_variable(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("JUDGE_PORT", "4711")
    path = write(
        tmp_path,
        {"suite.yaml": SUITE.format(api_base="http://127.0.0.1:${JUDGE_PORT}/v1"), "agent.yaml": PYTHON_AGENT},
    )
    db = tmp_path / "runs.db"
    outcome = simulator.run(path, db=db)
    assert outcome.record.snapshot[0].suite.models.judge.api_base == "http://127.0.0.1:${JUDGE_PORT}/v1"
    assert b"4711" not in db.read_bytes()
    monkeypatch.delenv("JUDGE_PORT")
    with pytest.raises(ConfigErrors) as caught:
        simulator.repeat(outcome.id, db=db)
    (error,) = caught.value.errors
    assert (Path(error.file).name, error.line, error.key_path) == ("suite.yaml", 5, "models.judge.api_base")
    assert "JUDGE_PORT, which is not set" in error.message


def test_a_hosted_evals_file_sets_the_models_as_a_suite_does(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("JUDGE_PORT", "4711")
    loaded = load_suite(write(tmp_path, {"suite.yaml": HOSTED, "agent.yaml": PYTHON_AGENT}))
    assert loaded.suite.models.judge.model == "fake/judge"
    assert loaded.suite.models.judge.api_base == "http://127.0.0.1:${JUDGE_PORT}/v1"
