"""litellm is imported before any conversation starts, never inside the event loop while agents are timed.

Imported at the first model call, litellm's seconds of import blocked the loop while the agent timeouts of the
other conversations ran: under load their agents "did not answer within 10 s" (false errors).
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

AGENT = """
import sys
from pathlib import Path

def respond(messages):
    # Written at the agent's first call: by then a run that needs a model has imported litellm.
    marker = Path(__file__).with_name("litellm_loaded.txt")
    if not marker.exists():
        marker.write_text(str("litellm" in sys.modules))
        Path(__file__).with_name("openai_loaded.txt").write_text(str("openai" in sys.modules))
        Path(__file__).with_name("httpx_loaded.txt").write_text(str("httpx" in sys.modules))
        Path(__file__).with_name("httpcore_loaded.txt").write_text(str("httpcore" in sys.modules))
    return "hello"
"""


def litellm_loaded_at_first_agent_call(tmp_path: Path, judge: str) -> str:
    (tmp_path / ".git").mkdir()
    (tmp_path / "probe_agent.py").write_text(textwrap.dedent(AGENT), encoding="utf-8")
    (tmp_path / "agent.yaml").write_text("type: python\ncallable: probe_agent:respond\n", encoding="utf-8")
    (tmp_path / "suite.yaml").write_text(
        textwrap.dedent(
            f"""\
            name: probe
            models: {{judge: {judge}}}
            cases:
              - kind: simulation
                name: hello
                steps:
                  - static_utterance: Hi
            """
        ),
        encoding="utf-8",
    )
    env = {**os.environ, "LITELLM_OFFLINE_MODE": "true"}
    subprocess.run(
        [sys.executable, "-m", "simulator", "run", "suite.yaml", "--db", "runs.db"],
        cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    return (tmp_path / "litellm_loaded.txt").read_text()


def test_a_run_with_a_model_imports_litellm_before_the_first_agent_call(tmp_path: Path) -> None:
    # A litellm model; its api_base is a closed local port, so nothing can leave this machine.
    judge = "{model: openai/gpt-4o-mini, backend: litellm, api_base: 'http://127.0.0.1:9', max_retries: 0}"
    assert litellm_loaded_at_first_agent_call(tmp_path, judge) == "True"


def test_a_run_with_an_openai_model_imports_httpx_before_the_first_agent_call_and_neither_litellm_nor_the_sdk(
    tmp_path: Path,
) -> None:
    # openai/... models go through the openai backend: httpx is imported up front, litellm and the openai SDK
    # not at all (the SDK's import alone took ~0.5 s of start-up).
    judge = "{model: openai/gpt-4o-mini, api_base: 'http://127.0.0.1:9', max_retries: 0}"
    assert litellm_loaded_at_first_agent_call(tmp_path, judge) == "False"
    assert (tmp_path / "httpx_loaded.txt").read_text() == "True"
    # httpx's transport too, which httpx itself imports only at its first client (on the event loop).
    assert (tmp_path / "httpcore_loaded.txt").read_text() == "True"
    assert (tmp_path / "openai_loaded.txt").read_text() == "False"


def test_a_run_on_fake_models_never_imports_litellm(tmp_path: Path) -> None:
    # The offline fake is answered in process: such a run never pays for litellm's import.
    assert litellm_loaded_at_first_agent_call(tmp_path, "fake/judge") == "False"
