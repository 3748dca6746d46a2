"""LangWatch Scenario (``langwatch-scenario``) on the peers workload: ``scenario.run`` with its
``UserSimulatorAgent`` (model ``openai/peer-user``) and ``JudgeAgent`` (``openai/peer-judge``, the goal as its one
criterion) against the agent under test, both through litellm with ``api_base`` = the fake server.

The judge runs as Scenario runs it: after every agent turn it decides, with a forced tool call, whether to go on
(``continue_test``) or to give its verdict; on the last turn it gives the verdict (``finish_test``, one verdict per
criterion). ``max_turns`` = the user turns asked for.

Nothing leaves the machine: ``LANGWATCH_API_KEY`` (and ``LANGWATCH_PROJECT_ID``) removed, so Scenario neither posts
its events nor exports spans to LangWatch and sets up no LangWatch client; ``SCENARIO_HEADLESS`` so it opens no
browser; its start-up banner off (``SCENARIO_DISABLE_SIMULATION_REPORT_INFO``); no instrumentors; litellm's price
list from the package (``LITELLM_LOCAL_MODEL_COST_MAP``); and the socket guard of ``_workload`` refuses anything
else.

    VENV/bin/python bench/cost_peers/scenario.py --base-url URL --agent-url URL --conversations N --turns T
"""

from __future__ import annotations

import asyncio
import importlib
import sys
from pathlib import Path
from typing import Any

# This file is named after the library it drives: its folder goes last on the path, so `import scenario` finds
# the library and `import _workload` still finds the helper beside this file.
_HERE = Path(__file__).resolve().parent
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != _HERE] + [str(_HERE)]

import _workload  # noqa: E402  (after the path is set)

PEER = "scenario"
ENVIRONMENT = {
    "SCENARIO_HEADLESS": "true",
    "SCENARIO_DISABLE_SIMULATION_REPORT_INFO": "1",
    "SCENARIO_BATCH_RUN_ID": "bench-cost-peers",
}
REMOVED = ("LANGWATCH_API_KEY", "LANGWATCH_PROJECT_ID", "LANGWATCH_ENDPOINT")


def drive(options: _workload.Options, errors: list[str]) -> int:
    """Run the conversations one after another; the user turns they reached."""
    scenario: Any = importlib.import_module("scenario")
    scenario.configure(verbose=False, headless=True, observability={"instrumentors": []})

    class PeerAgent(scenario.AgentAdapter):  # type: ignore[misc]  # the library's base class is untyped here
        """The agent under test: the conversation so far, to ``peer-agent``."""

        async def call(self, input: Any) -> str:
            return await asyncio.to_thread(_workload.ask_agent, options.agent_url, input.messages)

    done = 0
    for number in range(options.conversations):
        result = scenario.run(
            name=f"order status {number + 1}",
            description=_workload.SCENARIO,
            agents=[
                PeerAgent(),
                scenario.UserSimulatorAgent(
                    model=f"openai/{_workload.USER_MODEL}", api_base=options.base_url, api_key=_workload.DUMMY_KEY
                ),
                scenario.JudgeAgent(
                    model=f"openai/{_workload.JUDGE_MODEL}", api_base=options.base_url, api_key=_workload.DUMMY_KEY,
                    criteria=[_workload.CRITERION],
                ),
            ],
            max_turns=options.turns,
        )  # fmt: skip
        if asyncio.iscoroutine(result):
            result = asyncio.run(result)
        turns = sum(1 for m in result.messages if _role(m) == "user")
        done += turns
        if turns < options.turns:
            errors.append(f"conversation {number + 1} stopped after {turns} of {options.turns} user turns")
        if getattr(result, "error", None):
            errors.append(f"conversation {number + 1}: {result.error}")
    return done


def _role(message: Any) -> str | None:
    return message.get("role") if isinstance(message, dict) else getattr(message, "role", None)


def main(argv: list[str] | None = None) -> int:
    """Parse the command line and run (see the module docstring)."""
    return _workload.run(
        PEER, distribution="langwatch-scenario", argv=argv, drive=drive, extra_environment=ENVIRONMENT, removed=REMOVED
    )


if __name__ == "__main__":
    raise SystemExit(main())
