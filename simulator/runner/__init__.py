"""The runner: plans cases x personas x repeats, runs them concurrently, scores and stores each as it finishes.

``_case`` wires one conversation (agent, simulated user, judge, tools) into the engine and scores it;
``_plan`` expands what to run and snapshots the suites; ``_execute`` runs a stored plan with bounded
concurrency, commits every result as soon as it is scored, and resumes what a crash or Ctrl-C left undone.
"""

from simulator.runner._case import (
    RunOptions,
    check_environment,
    find_case,
    load_prompt_overrides,
    model_roles,
    pick_persona,
    run_case,
    score_case,
)

__all__ = [
    "RunOptions",
    "check_environment",
    "find_case",
    "load_prompt_overrides",
    "model_roles",
    "pick_persona",
    "run_case",
    "score_case",
]
