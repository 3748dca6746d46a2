"""openevals (``openevals``) on the peers workload: ``run_multiturn_simulation`` with a simulated user from
``create_llm_simulated_user`` (model ``openai:peer-user``), ``max_turns`` = the user turns asked for, and one
trajectory evaluator from ``create_llm_as_judge`` (model ``openai:peer-judge``) asking, as openevals' README does
for simulations, whether the user's goal was satisfied, the whole conversation in its prompt.

The models are LangChain chat models from ``init_chat_model`` (``langchain-openai``'s ``ChatOpenAI``) with
``base_url`` = the fake server and a dummy key; the judge's structured output is LangChain's default for OpenAI
models (a JSON schema ``response_format``).

Nothing leaves the machine: LangSmith tracing off (``LANGSMITH_TRACING`` / ``LANGCHAIN_TRACING_V2`` false, their API
keys removed, so openevals' ``traceable`` wrappers and LangChain's callbacks post no runs); and the socket guard of
``_workload`` refuses anything else.

    VENV/bin/python bench/cost_peers/openevals.py --base-url URL --agent-url URL --conversations N --turns T
"""

from __future__ import annotations

import importlib
import sys
from pathlib import Path
from typing import Any

# This file is named after the library it drives: its folder goes last on the path, so `import openevals` finds
# the library and `import _workload` still finds the helper beside this file.
_HERE = Path(__file__).resolve().parent
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != _HERE] + [str(_HERE)]

import _workload  # noqa: E402  (after the path is set)

PEER = "openevals"
ENVIRONMENT = {
    "LANGSMITH_TRACING": "false",
    "LANGSMITH_TRACING_V2": "false",
    "LANGCHAIN_TRACING_V2": "false",
    "LANGCHAIN_TRACING": "false",
}
REMOVED = ("LANGSMITH_API_KEY", "LANGCHAIN_API_KEY", "LANGSMITH_ENDPOINT", "LANGCHAIN_ENDPOINT", "LANGSMITH_PROJECT")
JUDGE_PROMPT = (
    f"Based on the below conversation, was the user's goal satisfied? The user's goal: {_workload.GOAL}\n"
    "<conversation>\n{outputs}\n</conversation>"
)


def drive(options: _workload.Options, errors: list[str]) -> int:
    """Run the simulations one after another; the user turns they reached."""
    chat_models = importlib.import_module("langchain.chat_models")
    simulators = importlib.import_module("openevals.simulators")
    llm = importlib.import_module("openevals.llm")

    def model(name: str) -> Any:
        return chat_models.init_chat_model(f"openai:{name}", base_url=options.base_url, api_key=_workload.DUMMY_KEY)

    user = simulators.create_llm_simulated_user(system=_workload.SCENARIO, client=model(_workload.USER_MODEL))
    judge = llm.create_llm_as_judge(
        prompt=JUDGE_PROMPT, feedback_key="goal_satisfied", judge=model(_workload.JUDGE_MODEL)
    )
    histories: dict[str, list[dict[str, Any]]] = {}

    def app(inputs: dict[str, Any], *, thread_id: str, **kwargs: Any) -> dict[str, Any]:
        """The agent under test, which keeps its own conversation per thread (openevals passes the new message)."""
        history = histories.setdefault(thread_id, [])
        history.append({"role": inputs["role"], "content": inputs["content"]})
        reply = {"role": "assistant", "content": _workload.ask_agent(options.agent_url, history)}
        history.append(reply)
        return reply

    done = 0
    for number in range(options.conversations):
        result = simulators.run_multiturn_simulation(
            app=app, user=user, max_turns=options.turns, trajectory_evaluators=[judge],
            thread_id=f"order-status-{number + 1}",
        )  # fmt: skip
        trajectory = result["trajectory"] if isinstance(result, dict) else result.trajectory
        turns = sum(1 for m in trajectory if m.get("role") == "user")
        done += turns
        if turns < options.turns:
            errors.append(f"conversation {number + 1} stopped after {turns} of {options.turns} user turns")
        results = result["evaluator_results"] if isinstance(result, dict) else result.evaluator_results
        if not results:  # run_multiturn_simulation prints an evaluator's exception and leaves its result out
            errors.append(f"conversation {number + 1}: the trajectory evaluator gave no result")
    return done


def main(argv: list[str] | None = None) -> int:
    """Parse the command line and run (see the module docstring)."""
    return _workload.run(
        PEER, distribution="openevals", argv=argv, drive=drive, extra_environment=ENVIRONMENT, removed=REMOVED
    )


if __name__ == "__main__":
    raise SystemExit(main())
