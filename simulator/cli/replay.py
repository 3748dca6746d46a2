"""Commands on recorded runs (``simulator run --record``): replay, rerun --from-divergence."""

from __future__ import annotations

from typing import Annotated, Any

import typer

import simulator
from simulator.cli._models import (
    AgentApiBaseOption,
    JudgeApiBaseOption,
    JudgeModelOption,
    ModelsFileOption,
    UserApiBaseOption,
    UserModelOption,
    model_options,
    note_unused_roles,
)
from simulator.cli._output import (
    _STYLES,
    DbOption,
    LiveOption,
    VerboseOption,
    YesOption,
    _handles_errors,
    err,
    out,
)
from simulator.cli._progress import _exit_for, _print_run, _run_with_progress
from simulator.cli.run import _print_run_document

RunArgument = Annotated[str, typer.Argument(metavar="RUN", help="A recorded run: id, unique prefix, latest, latest~N.")]
PersonaOption = Annotated[str | None, typer.Option("--persona", help="Only the conversations with this persona.")]
SuiteFromOption = Annotated[
    str,
    typer.Option(
        "--suite-from",
        help="Score with the suite files as they are now (disk), or as the run stored them (snapshot).",
    ),
]
JsonOption = Annotated[
    bool,
    typer.Option("--json", help="Print one JSON document: the new run, its counts and one row per conversation."),
]


@_handles_errors
def replay(
    run_ref: RunArgument,
    case: Annotated[str | None, typer.Argument(metavar="[CASE]", help="Only this recorded case.")] = None,
    persona: PersonaOption = None,
    judge_model: JudgeModelOption = None,
    user_model: UserModelOption = None,
    models_file: ModelsFileOption = None,
    judge_api_base: JudgeApiBaseOption = None,
    user_api_base: UserApiBaseOption = None,
    agent_api_base: AgentApiBaseOption = None,
    suite_from: SuiteFromOption = "disk",
    db: DbOption = None,
    as_json: JsonOption = False,
    verbose: VerboseOption = False,
) -> None:
    """Play a recorded run back without any agent or model, and score it again with the checks and judges of the
    suite files as they are now: the user's moves, the agent's replies and the tool results come from its
    cassettes. Judge requests identical to recorded ones are answered from the cassette; changed ones go to the
    judge when a judge option is given (--judge-model, --judge-api-base or a judge in --models, laid over the
    recorded run's judge), else they are unsure. Stored as a new run. Exits like `run`."""
    talk = err if as_json else out
    given = model_options(
        user_model=user_model, judge_model=judge_model, models_file=models_file, judge_api_base=judge_api_base,
        user_api_base=user_api_base, agent_api_base=agent_api_base,
    )  # fmt: skip
    unused = note_unused_roles(given, "replay")
    if unused:
        err.print(f"note: {unused}", markup=False)

    def started(event: Any) -> None:
        talk.print(
            f"Run {event.record.id} replays {event.record.replay_of}: {len(event.record.plan)} conversation(s), "
            f"scored with the suites from {suite_from}.",
            markup=False,
        )

    outcome = _run_with_progress(
        lambda on_event: simulator.replay_async(
            run_ref, case, persona=persona, judge_model=given.judge_model, user_model=given.user_model,
            models=given.models, suite_from=suite_from, db=db, on_event=on_event,
        ),
        db=db, on_start=started, lines_to=talk,
    )  # fmt: skip
    if as_json:
        _print_run_document(outcome)
    else:
        _print_run(outcome, verbose=verbose)
    _exit_for(outcome, outcome.record.settings.fail_under)


@_handles_errors
def rerun(
    run_ref: RunArgument,
    case: Annotated[str, typer.Argument(metavar="CASE", help="The recorded case to run again.")],
    from_divergence: Annotated[
        bool,
        typer.Option(
            "--from-divergence",
            help="Replay the recorded user turns while the agent answers as recorded; hand over to the live "
            "simulated user at the first turn that differs (required: the one way rerun runs).",
        ),
    ] = False,
    compare: Annotated[
        str,
        typer.Option(
            "--compare",
            help="How a turn is compared: exact (same text and tool calls) or normalized (text ignoring "
            "whitespace, case and punctuation; same tool names and arguments).",
        ),
    ] = "exact",
    persona: PersonaOption = None,
    judge_model: JudgeModelOption = None,
    user_model: UserModelOption = None,
    models_file: ModelsFileOption = None,
    judge_api_base: JudgeApiBaseOption = None,
    user_api_base: UserApiBaseOption = None,
    agent_api_base: AgentApiBaseOption = None,
    suite_from: SuiteFromOption = "disk",
    live: LiveOption = False,
    yes: YesOption = False,
    db: DbOption = None,
    as_json: JsonOption = False,
) -> None:
    """Run the agent under test again, live, against a recorded conversation: the recorded user turns are sent
    while its replies and tool calls match the recording; from the first turn that differs, the live simulated
    user takes over. The transcript marks the replayed turns and the divergence. Stored as a new run. The models
    are the recorded run's, with the model options given here laid over them."""

    from simulator import case_lines

    if not from_divergence:
        raise simulator.InputError(
            "rerun needs --from-divergence (the recorded user turns, then the live user from the first turn that "
            "differs): simulator rerun RUN CASE --from-divergence"
        )
    talk = err if as_json else out
    given = model_options(
        user_model=user_model, judge_model=judge_model, models_file=models_file, judge_api_base=judge_api_base,
        user_api_base=user_api_base, agent_api_base=agent_api_base,
    )  # fmt: skip
    outcome = _run_with_progress(
        lambda on_event: simulator.rerun_async(
            run_ref, case, compare=compare, persona=persona, suite_from=suite_from, judge_model=given.judge_model,
            user_model=given.user_model, models=given.models, live=live, trust_imported=yes, db=db,
            on_event=on_event,
        ),
        db=db, lines_to=talk,
    )  # fmt: skip
    if as_json:
        _print_run_document(outcome)
    else:
        for stored in outcome.iter_results():
            for line in case_lines(stored.result):
                out.print(line.text, style=_STYLES[line.style] or None, markup=False)
            out.print("")
        _print_run(outcome)
    _exit_for(outcome, outcome.record.settings.fail_under)
