"""DeepEval (``deepeval``) on the peers workload: its ``ConversationSimulator`` (simulator model ``peer-user``)
plays the customer against the agent under test, ``max_user_simulations`` = the user turns asked for; then its
``ConversationCompletenessMetric`` (model ``peer-judge``) scores each simulated conversation, as DeepEval's
conversational metrics are meant to be used on what the simulator returns.

The models are DeepEval's ``OpenAIModel`` (the openai SDK) with ``base_url`` = the fake server and a dummy key. DeepEval
knows OpenAI models by name: an unknown name is asked for JSON in the prompt alone. ``peer-user`` and ``peer-judge``
are registered with the capabilities of DeepEval's default OpenAI model, so they are asked as that model is: JSON
schema structured outputs (``response_format``), prompts unchanged. Before each user turn the simulator asks its
model whether the golden's expected outcome is reached (the fake server says no, so every conversation runs to its
turns).

Nothing leaves the machine: telemetry off (``DEEPEVAL_TELEMETRY_OPT_OUT``), no update check
(``DEEPEVAL_UPDATE_WARNING_OPT_IN=0``), no ``.env`` read (``DEEPEVAL_DISABLE_DOTENV``), no Confident AI key
(``CONFIDENT_API_KEY`` removed, so nothing is posted there), run from a temporary folder (DeepEval writes
``.deepeval/`` in the working directory); and the socket guard of ``_workload`` refuses anything else.

    VENV/bin/python bench/cost_peers/deepeval.py --base-url URL --agent-url URL --conversations N --turns T
"""

from __future__ import annotations

import importlib
import os
import sys
import tempfile
from pathlib import Path
from typing import Any

# This file is named after the library it drives: its folder goes last on the path, so `import deepeval` finds
# the library and `import _workload` still finds the helper beside this file.
_HERE = Path(__file__).resolve().parent
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != _HERE] + [str(_HERE)]

import _workload  # noqa: E402  (after the path is set)

PEER = "deepeval"
ENVIRONMENT = {
    "DEEPEVAL_TELEMETRY_OPT_OUT": "1",
    "DEEPEVAL_UPDATE_WARNING_OPT_IN": "0",
    "DEEPEVAL_DISABLE_DOTENV": "1",
    "DEEPEVAL_GRPC_LOGGING": "0",
    "ERROR_REPORTING": "0",
}
REMOVED = ("CONFIDENT_API_KEY", "CONFIDENT_AI_API_KEY", "DEEPEVAL_RESULTS_FOLDER")


def _model(constants: Any, openai_model: Any, name: str, base_url: str) -> Any:
    """DeepEval's OpenAI model on the fake server, ``name`` registered as DeepEval's default OpenAI model."""
    constants.OPENAI_MODELS_DATA[name] = constants.OPENAI_MODELS_DATA[constants.DEFAULT_GPT_MODEL]
    return openai_model.OpenAIModel(
        model=name, base_url=base_url, api_key=_workload.DUMMY_KEY, cost_per_input_token=0.0,
        cost_per_output_token=0.0,
    )  # fmt: skip


def drive(options: _workload.Options, errors: list[str]) -> int:
    """Simulate the conversations, then score each, in a temporary working folder; the user turns they reached."""
    back = Path.cwd()
    with tempfile.TemporaryDirectory(prefix="deepeval-") as where:
        os.chdir(where)
        try:
            return _drive(options, errors)
        finally:
            os.chdir(back)


def _drive(options: _workload.Options, errors: list[str]) -> int:
    constants = importlib.import_module("deepeval.models.llms.constants")
    openai_model = importlib.import_module("deepeval.models.llms.openai_model")
    dataset = importlib.import_module("deepeval.dataset")
    simulator_module = importlib.import_module("deepeval.simulator")
    metrics = importlib.import_module("deepeval.metrics")
    test_case = importlib.import_module("deepeval.test_case")

    user_model = _model(constants, openai_model, _workload.USER_MODEL, options.base_url)
    judge_model = _model(constants, openai_model, _workload.JUDGE_MODEL, options.base_url)

    def agent(input: str, turns: list[Any]) -> Any:
        """The agent under test: the conversation so far (the new user turn is its last) to ``peer-agent``."""
        history = [{"role": t.role, "content": t.content} for t in turns]
        return test_case.Turn(role="assistant", content=_workload.ask_agent(options.agent_url, history))

    goldens = [
        dataset.ConversationalGolden(
            scenario=_workload.SCENARIO, expected_outcome=_workload.CRITERION,
            user_description=_workload.PERSONA, name=f"order status {number + 1}",
        )
        for number in range(options.conversations)
    ]  # fmt: skip
    simulator = simulator_module.ConversationSimulator(
        model_callback=agent, simulator_model=user_model, async_mode=False
    )
    cases = simulator.simulate(conversational_goldens=goldens, max_user_simulations=options.turns)
    done = 0
    for number, case in enumerate(cases):
        turns = sum(1 for t in case.turns if t.role == "user")
        done += turns
        if turns < options.turns:
            errors.append(f"conversation {number + 1} stopped after {turns} of {options.turns} user turns")
        metric = metrics.ConversationCompletenessMetric(model=judge_model, async_mode=False)
        metric.measure(case)
        if getattr(metric, "error", None):
            errors.append(f"conversation {number + 1}: the metric failed: {metric.error}")
    return done


def main(argv: list[str] | None = None) -> int:
    """Parse the command line and run (see the module docstring)."""
    return _workload.run(
        PEER, distribution="deepeval", argv=argv, drive=drive, extra_environment=ENVIRONMENT, removed=REMOVED
    )


if __name__ == "__main__":
    raise SystemExit(main())
