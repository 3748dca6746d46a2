"""The runner, home of the public run API: plans cases x personas x repeats, runs them concurrently, scores and
stores each as it finishes.

``_api`` holds the calls (plan, run, resume, repeat, simulate, get and delete a run) and ``_replay`` the ones that
play a recorded run back (replay, rerun); ``_types`` what they take and give back (the events, the plan, the
stored run); ``_settings`` checks their options; ``_trust`` says what an imported run would execute here.

``_case`` wires one conversation (agent, simulated user, judge, tools) into the engine and scores it;
``_outcome`` decides a case's outcome from its evidence (when it is scored, and again for a result that comes
in from elsewhere: an import, a merge);
``_plan`` expands what to run and snapshots the suites; ``_execute`` runs a stored plan with bounded
concurrency, commits every result as soon as it is scored, and resumes what a crash or Ctrl-C left undone;
``_converse`` runs and scores one conversation for either executor, and ``_gc`` tunes the garbage collector
while a run goes; ``_ray`` (the only importer of ray, an optional extra) runs the conversations of a stored plan
on a Ray cluster instead, results stored here as they arrive.
"""

from simulator.runner._api import (
    ResumeCheck,
    SimulationPlan,
    check_repeat,
    check_resume,
    combine,
    delete_run,
    get_run,
    plan,
    plan_simulation,
    repeat,
    repeat_async,
    resume,
    resume_async,
    run,
    run_async,
    simulate,
    simulate_async,
)
from simulator.runner._case import (
    check_environment,
    final_world,
    find_case,
    load_prompt_overrides,
    model_roles,
    pick_persona,
    run_case,
    score_case,
)
from simulator.runner._execute import Progress, check_live
from simulator.runner._outcome import TRUST_MARK, Rederived, decide_outcome, rederive, rederived
from simulator.runner._plan import (
    build_plan,
    new_record,
    parse_shard,
    plan_hash,
    restore,
    shard_of,
    suite_identity,
    what_runs,
)
from simulator.runner._replay import replay, replay_async, rerun, rerun_async
from simulator.runner._settings import MODALITIES, modalities_given, role_overrides
from simulator.runner._trust import code_it_runs, printable
from simulator.runner._types import PlannedRun, RunEvent, RunOutcome, RunStarted

__all__ = [
    "MODALITIES",
    "TRUST_MARK",
    "PlannedRun",
    "Progress",
    "Rederived",
    "ResumeCheck",
    "RunEvent",
    "RunOutcome",
    "RunStarted",
    "SimulationPlan",
    "build_plan",
    "check_environment",
    "check_live",
    "check_repeat",
    "check_resume",
    "code_it_runs",
    "combine",
    "decide_outcome",
    "delete_run",
    "final_world",
    "find_case",
    "get_run",
    "load_prompt_overrides",
    "modalities_given",
    "model_roles",
    "new_record",
    "parse_shard",
    "pick_persona",
    "plan",
    "plan_hash",
    "plan_simulation",
    "printable",
    "rederive",
    "rederived",
    "repeat",
    "repeat_async",
    "replay",
    "replay_async",
    "rerun",
    "rerun_async",
    "restore",
    "resume",
    "resume_async",
    "role_overrides",
    "run",
    "run_async",
    "run_case",
    "score_case",
    "shard_of",
    "simulate",
    "simulate_async",
    "suite_identity",
    "what_runs",
]
