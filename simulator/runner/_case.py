"""Running cases: wiring a loaded suite's agent, simulated user, judge and tools into the engine.

The rest of the runner plans cases x personas x repeats, bounds concurrency per role, stores results and
resumes runs; this part builds the collaborators one conversation needs, because the engine takes them
ready-made and imports no judge, store or CLI.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Callable, Collection, Mapping, Sequence
from functools import partial
from pathlib import Path
from typing import Any

from simulator.agents import AgentAdapter, build_agent, free_agent_threads
from simulator.cassettes import Playback, recorded_agent, recorded_user
from simulator.engine import ConversationSetup, simulate
from simulator.errors import AgentError, ConfigError, ConfigErrors, InputError, SimulatorError
from simulator.judges import StepJudge, plugin_scorer
from simulator.kinds import kind_of
from simulator.llm import LLMClient, Role, metering, missing_key, provider_problem, suite_model_problems
from simulator.loading import DataPath, LoadedSuite, config_error_at, did_you_mean, env_problems
from simulator.models import Case, ModelRoles, Persona
from simulator.models.env_refs import unset_variables
from simulator.models.run import SPEECH_ROLES, RunSettings, resolved_models
from simulator.models.scores import CaseResult
from simulator.models.transcript import ErrorEvent, Transcript, utc_now
from simulator.models.voice import Modality, SuiteVoice
from simulator.plugins import load_plugin
from simulator.simulated_tools import LLMToolSimulator
from simulator.tools import ToolSimulator, live_functions, world_functions
from simulator.user import LLMUser, ScriptedUser, SimulatedUser
from simulator.voice import Speaker, VoiceConversation, build_voice_agent, persona_speaker, speech_backends
from simulator.world import World, apply_changes


def model_roles(loaded: LoadedSuite, options: RunSettings) -> ModelRoles:
    """The suite's model settings with the command line's overrides (per-role settings first, then
    ``--user-model`` / ``--judge-model``); a litellm agent's model fills the agent role, and a role whose
    ``concurrency`` nobody set gets the run's (``--concurrency``: that many conversations in flight each may
    have a call of the role in flight; a lower limit would make them wait for each other), the judge twice
    that: a conversation's judge questions are asked at once (the hallucination and the goal question at
    least), and when a wave of conversations ends together half of them waited a whole judge latency."""
    roles = resolved_models(loaded.suite, options)
    unset = {
        role: getattr(roles, role).model_copy(update={"concurrency": options.concurrency * CALLS_AT_ONCE.get(role, 1)})
        for role in ROLES
        # a speech role without a model stays unset, so that it stays out of stored data (ModelRoles)
        if getattr(roles, role).concurrency is None and (role not in SPEECH_ROLES or getattr(roles, role).model)
    }
    return roles.model_copy(update=unset) if unset else roles


#: The model roles, in the order the plan line names them.
ROLES: tuple[str, ...] = ("user", "judge", "agent", *SPEECH_ROLES)

#: The calls of a role one conversation has in flight at once, when more than one: its default limit is the
#: run's concurrency times this (see :func:`model_roles`).
CALLS_AT_ONCE = {"judge": 2}


def model_limits(loaded: LoadedSuite, options: RunSettings) -> dict[str, int]:
    """Calls in flight at once per role that has a model (:func:`model_roles`), in :data:`ROLES` order."""
    roles = model_roles(loaded, options)
    limits: dict[str, int] = {}
    for role in ROLES:
        settings = getattr(roles, role)
        if settings.model and settings.concurrency is not None:
            limits[role] = settings.concurrency
    return limits


def check_environment(
    suites: Sequence[LoadedSuite], environ: Mapping[str, str] | None = None, settings: RunSettings | None = None
) -> None:
    """Every environment variable the agents under test name for a secret is set, and every ``${VAR}`` an agent's
    ``base_url`` or a model role's ``api_base`` needs (the suites' and ``settings.models``), or a ConfigErrors
    naming each missing one with its file and key: found before anything runs or is stored, not once per
    conversation. A run repeated or resumed is checked here, since its snapshots are not loaded again."""
    env = os.environ if environ is None else environ
    errors: list[ConfigError] = []

    def need(loaded: LoadedSuite, key: str, variable: str | None, what: str) -> None:
        if variable and not env.get(variable):
            where = loaded.agent_path if key.startswith("agent") and loaded.agent_path else loaded.path
            errors.append(
                ConfigError(
                    where,
                    1,
                    1,
                    key,
                    f"{what} names the environment variable {variable}, which is not set: set it "
                    f"(export {variable}=...) before running",
                )
            )

    for loaded in suites:
        agent = loaded.agent
        for key, variable, what in agent.environment() if agent is not None else []:
            need(loaded, f"agent.{key}", variable, what)
        errors.extend(_unusable_plugins(loaded))
        for where, message in env_problems(loaded.suite, env):
            in_agent_file = where[0] == "agent" and loaded.agent_path is not None and loaded.agent_path != loaded.path
            file = loaded.agent_path if in_agent_file else loaded.path
            assert file is not None
            errors.append(config_error_at(file, where[1:] if in_agent_file else where, message))
    for role, values in (settings.models if settings is not None else {}).items():
        api_base = values.get("api_base")
        missing = unset_variables(api_base, env) if isinstance(api_base, str) else []
        if missing:
            errors.append(
                ConfigError(
                    "models given to the run",
                    1,
                    1,
                    f"{role}.api_base",
                    f"{api_base!r} needs the environment variable {missing[0]}, which is not set: set it "
                    f"(export {missing[0]}=...) or give a default: ${{{missing[0]}:-...}}",
                )
            )
    # The model roles' keys are checked by check_models.
    if errors:
        raise ConfigErrors(errors)


def _unusable_plugins(loaded: LoadedSuite) -> list[ConfigError]:
    """The plugins ``loaded`` names that cannot be imported: found before the first conversation, at their key."""
    from simulator.agents import agent_factory

    named: list[tuple[Path | None, DataPath, Callable[[], object]]] = []
    agent = loaded.agent
    in_file = loaded.agent_path not in (None, loaded.path)
    agent_file = loaded.agent_path if in_file else loaded.path
    inside: DataPath = () if in_file else ("agent",)
    if agent is not None and agent.from_plugin:
        named.append((agent_file, (*inside, "type"), partial(agent_factory, agent.type)))
    for index, tool in enumerate(agent.tools if agent is not None else []):
        if tool.backend is not None:
            named.append(
                (agent_file, (*inside, "tools", index, "backend"), partial(load_plugin, "tools", tool.backend))
            )
    for index, name in enumerate(loaded.suite.scorers):
        named.append((loaded.path, ("scorers", index), partial(plugin_scorer, name)))
    for number, case in enumerate(loaded.suite.cases):
        for index, name in enumerate(case.scorers):
            named.append((loaded.path, ("cases", number, "scorers", index), partial(plugin_scorer, name)))
    errors: list[ConfigError] = []
    for file, where, load in named:
        try:
            load()
        except SimulatorError as exc:
            errors.append(config_error_at(file or loaded.path, where, str(exc)))
    return errors


#: The option that sets a role's model in a command (and its keyword in the Python API), by role.
_MODEL_OPTIONS = {"user": "--user-model (user_model=)", "judge": "--judge-model (judge_model=)"}


def _model_place(loaded: LoadedSuite, path: tuple[str, ...], message: str) -> ConfigError:
    """A problem with a model string the suite (or its separate agent file, for ``agent.model``) writes."""
    separate = loaded.agent_path is not None and loaded.agent_path != loaded.path
    if path[0] == "agent" and separate:
        assert loaded.agent_path is not None
        return config_error_at(loaded.agent_path, path[1:], message)
    return config_error_at(loaded.path, path, message)


def suite_model_errors(loaded: LoadedSuite) -> list[ConfigError]:
    """The model strings of a suite whose provider litellm does not know, each at its place (``validate``)."""
    return [_model_place(loaded, path, message) for path, message in suite_model_problems(loaded.suite)]


def check_models(suites: Sequence[LoadedSuite], options: RunSettings, environ: Mapping[str, str] | None = None) -> None:
    """Before anything runs or is stored: every role's model names a provider litellm knows (a did-you-mean
    otherwise), and the key it needs is set (its ``api_key_env``, else the provider's standard variable; a fake
    model or one on a local ``api_base`` needs none). A ConfigErrors at the suite's place, or an InputError naming
    the option, that set the model; found once, not as an error in every conversation."""
    env = os.environ if environ is None else environ
    errors: list[ConfigError] = []
    given: list[str] = []
    for loaded in suites:
        roles = model_roles(loaded, options)
        agent = loaded.agent
        for role in ROLES:
            settings = getattr(roles, role)
            if not settings.model or (role == "agent" and (agent is None or agent.own_model is None)):
                continue  # only a litellm agent calls the agent role's model
            problem = provider_problem(settings.model, settings.backend)
            variable = None if problem else missing_key(settings, env)
            if problem is None and variable is None:
                continue
            message = f"{role} model {problem}" if problem else _key_message(role, settings.model, variable or "")
            option = _MODEL_OPTIONS.get(role) if getattr(options, f"{role}_model", None) else None
            given_models = {str(name): values for name, values in (options.models or {}).items()}
            if option is None and "model" in given_models.get(role, {}):
                option = f"models.{role}.model given to the command (--models FILE, models=)"
            if option is not None:
                if f"{option}: {message}" not in given:
                    given.append(f"{option}: {message}")
            elif loaded.suite.models.model_dump(exclude_unset=True).get(role, {}).get("model"):
                errors.append(_model_place(loaded, ("models", role, "model"), message))
            elif role == "agent":
                errors.append(_model_place(loaded, ("agent", "model"), message))
            else:
                errors.append(_model_place(loaded, ("models", role), message))
    if given:  # an option's problem first, then the files' (an option is the likelier slip)
        raise InputError("\n".join([*given, *(error.render() for error in sorted(errors, key=ConfigError.sort_key))]))
    if errors:
        raise ConfigErrors(errors)


def _key_message(role: str, model: str, variable: str) -> str:
    return (
        f"{role} model {model!r} needs a key, and {variable} is not set: set it (export {variable}=...) before "
        f"running, or name the variable that holds the key with models.{role}.api_key_env"
    )


def simulated_tools(loaded: LoadedSuite, options: RunSettings, cases: Collection[str] | None = None) -> list[str]:
    """The agent's tools a model plays in this run: those that declare ``simulate``, in test mode only (live
    mode runs the real tool, or says there is none), and that some of ``cases`` (names; every case of the suite
    by default) gives no fake: a tool with a fake, the suite's or the case's, is never simulated."""
    if options.live or loaded.agent is None:
        return []
    faked_everywhere = {fake.tool for fake in loaded.suite.tool_fakes}
    chosen = [case for case in loaded.suite.cases if cases is None or case.name in cases]
    return [
        tool.name
        for tool in loaded.agent.tools
        if tool.simulate is not None
        and tool.name not in faked_everywhere
        and any(all(fake.tool != tool.name for fake in case.tool_fakes) for case in chosen)
    ]


def tool_simulator(loaded: LoadedSuite, options: RunSettings, llm: LLMClient) -> ToolSimulator | None:
    """What plays the suite's simulated tools: the user role's model (see ``simulator.simulated_tools``)."""
    if not simulated_tools(loaded, options) or not model_roles(loaded, options).user.model:
        return None
    return LLMToolSimulator(llm, Role.USER)


def check_simulated_tools(
    suites: Sequence[LoadedSuite], options: RunSettings, cases: Sequence[Collection[str]] | None = None
) -> None:
    """A suite whose tools declare ``simulate`` has a model to play them (the user role's), or a ConfigErrors
    at each such tool's ``simulate`` key: found before anything runs, not as an error in every conversation.
    ``cases`` holds the names of the cases run of each suite (default: all of them)."""
    errors: list[ConfigError] = []
    for position, loaded in enumerate(suites):
        names = simulated_tools(loaded, options, None if cases is None else cases[position])
        if not names or model_roles(loaded, options).user.model or loaded.agent is None:
            continue
        inline = loaded.agent_path is None or loaded.agent_path == loaded.path
        path = loaded.path if inline else loaded.agent_path
        assert path is not None
        for index, tool in enumerate(loaded.agent.tools):
            if tool.name not in names:
                continue
            where: tuple[str | int, ...] = ("tools", index, "simulate")
            if inline:
                where = ("agent", *where)
            errors.append(
                config_error_at(
                    path,
                    where,
                    f"tool {tool.name!r} is simulated, which needs a model to play it (the user role's): pass "
                    "--user-model (any litellm model, e.g. openai/gpt-4o-mini) or set `models: {user: ...}` in the "
                    "suite; or remove `simulate` (a call no fake answers is then not executed)",
                )
            )
    if errors:
        raise ConfigErrors(errors)


def find_case(loaded: LoadedSuite, name: str) -> Case:
    """The case called ``name``, or a ConfigError naming the suite and the closest names."""
    for case in loaded.suite.cases:
        if case.name == name:
            return case
    names = [case.name for case in loaded.suite.cases]
    raise ConfigError(
        loaded.path, 1, 1, "cases", f"no case named {name!r}{did_you_mean(name, names)} (cases: {', '.join(names)})"
    )


def pick_persona(loaded: LoadedSuite, case: Case, name: str | None) -> Persona | None:
    """The persona asked for, else the case's first, else the suite's first, else none; none for a golden case
    (a replay of fixed turns has no simulated user to play a persona)."""
    if not kind_of(case).plays_persona:
        return None
    wanted = (
        name
        or (case.personas[0] if case.personas else None)
        or (loaded.suite.personas[0] if loaded.suite.personas else None)
    )
    if wanted is None:
        return None
    if wanted not in loaded.personas:
        known = ", ".join(sorted(loaded.personas)) or "none"
        raise ConfigError(
            loaded.path,
            1,
            1,
            "personas",
            f"unknown persona {wanted!r}{did_you_mean(wanted, loaded.personas)} (known: {known})",
        )
    return loaded.personas[wanted]


async def run_case(
    loaded: LoadedSuite,
    case: Case,
    *,
    persona: Persona | None,
    llm: LLMClient,
    options: RunSettings,
    checkpointer: Any = None,
    thread_id: str | None = None,
    playback: Playback | None = None,
    keep_audio: Callable[[bytes], str] | None = None,
) -> Transcript:
    """Run one conversation of ``case``. An agent that cannot even be set up ends the case as ``error``.

    With a ``checkpointer`` the conversation can be resumed mid-way after a crash (see ``engine.simulate``),
    unless the agent keeps state of its own between turns (a Python class): such a conversation starts over.
    With a ``playback`` the conversation is played from a cassette (``simulator replay``: no agent is built;
    ``simulator rerun``: the agent runs live until it differs from the recording). While a tape is recording
    (``--record``), the agent's turns and the user's moves are written on it. A voice conversation's audio (both
    sides, as WAV) is handed to ``keep_audio``, whose returned name the transcript keeps; where it cannot be
    kept (a full disk), the transcript says why and the conversation's verdicts stand.
    """
    agent_config = loaded.agent
    if agent_config is None:
        raise ConfigError(
            loaded.path,
            1,
            1,
            "agent",
            "no agent to test: add `agent:` to the suite, or an agent.yaml beside it or in a folder above",
        )
    roles = model_roles(loaded, options)
    user: SimulatedUser = LLMUser(llm) if roles.user.model else ScriptedUser()
    checker = StepJudge(
        llm if roles.judge.model else None,
        language=loaded.suite.language,
        declared_tools=agent_config.tools,
    )
    free_agent_threads()  # agent code stuck in a thread must not keep the run, or the process, from ending
    agent: AgentAdapter | None = None
    voice: VoiceConversation | None = None
    if playback is None or playback.mode == "rerun":
        try:
            if modality_of(loaded, case, options) == "voice":
                agent = voice = voice_conversation(loaded, case, persona, llm=llm, options=options)
            else:
                agent = build_agent(agent_config, llm=llm, code_folders=loaded.code_folders)
        except AgentError as exc:
            return _setup_failure(case, persona, options, str(exc))
    if playback is not None:
        agent, user = playback.agent(agent), playback.user(user)
    assert agent is not None
    agent, user = recorded_agent(agent), recorded_user(user)
    setup = ConversationSetup(
        case=case,
        agent=agent,
        user=user,
        checker=checker,
        agent_config=agent_config,
        persona=persona,
        suite_fakes=loaded.suite.tool_fakes,
        suite_faults=loaded.suite.faults,
        tool_mode="live" if options.live else "test",
        tool_functions=live_functions(agent_config.tools, loaded.code_folders),
        world=loaded.world_of(case),
        world_functions=world_functions(agent_config.tools, loaded.code_folders),
        tool_simulator=tool_simulator(loaded, options, llm),
        seed=options.seed,
        language=loaded.suite.language,
        voice=voice,
    )
    if checkpointer is not None and not getattr(agent, "stateful", False):
        transcript = await simulate(setup, checkpointer=checkpointer, thread_id=thread_id)
    else:
        transcript = await simulate(setup)
    if playback is not None:
        transcript = transcript.model_copy(update={"replay": playback.mark()})
    if voice is not None and keep_audio is not None:
        transcript = await _kept_audio(transcript, voice, keep_audio)
    return transcript


async def _kept_audio(
    transcript: Transcript, voice: VoiceConversation, keep_audio: Callable[[bytes], str]
) -> Transcript:
    """``transcript`` with the name of its audio file, or with why it has none."""
    if transcript.voice is None:
        return transcript
    audio, _ = voice.recording()
    try:
        # A file of megabytes, flushed to the disk: not on the event loop the other conversations share.
        kept: dict[str, str] = {"audio": await asyncio.to_thread(keep_audio, audio.wav())}
    except SimulatorError as exc:
        kept = {"audio_error": str(exc)}
    return transcript.model_copy(update={"voice": transcript.voice.model_copy(update=kept)})


def modality_of(loaded: LoadedSuite, case: Case, options: RunSettings | None = None) -> Modality:
    """How ``case`` talks to the agent: the run's ``--modality``, else its own ``modality``, else its suite's,
    else chat."""
    chosen = options.modality if options is not None else None
    return chosen or case.modality or loaded.suite.modality or "chat"


def check_modality(suites: Sequence[LoadedSuite], options: RunSettings) -> None:
    """Every agent can be talked to in the run's ``--modality``, or an InputError naming the suites whose agent
    cannot and the fix: before anything runs, not as an error in every conversation. Without ``--modality``,
    each case's own is kept (a realtime agent's chat case is that case's error)."""
    if options.modality != "chat":
        return  # every agent can be talked to in voice: a text agent is given ears and a voice
    refused = [
        f"{loaded.suite.name!r} ({loaded.path.name})"
        for loaded in suites
        if loaded.agent is not None and not loaded.agent.speaks_text
    ]
    if refused:
        raise InputError(
            f"--modality chat: the agent of {'suite' if len(refused) == 1 else 'suites'} {', '.join(refused)} takes "
            "audio only (a realtime agent): "
            "run it with --modality voice, or leave --modality out"
        )


def voice_conversation(
    loaded: LoadedSuite, case: Case, persona: Persona | None, *, llm: LLMClient, options: RunSettings
) -> VoiceConversation:
    """One voice conversation's adapter: the suite's agent as a voice agent, the user's turns spoken in the
    persona's voice (with its seeded noise), the agent's audio heard in the persona's language."""
    agent_config = loaded.agent
    assert agent_config is not None
    roles = model_roles(loaded, options)
    synthesizer, recognizer = speech_backends(roles, loaded.suite.voice, where=loaded.path, llm=llm)
    speaker = persona_speaker(persona, loaded.suite.language)
    agent = build_voice_agent(
        agent_config,
        llm=llm,
        code_folders=loaded.code_folders,
        synthesizer=synthesizer,
        recognizer=recognizer,
        # The agent speaks the conversation's language in the backend's default voice.
        speaker=Speaker(language=speaker.language),
    )
    settings = loaded.suite.voice or SuiteVoice()
    return VoiceConversation(
        agent,
        synthesizer=synthesizer,
        recognizer=recognizer,
        speaker=speaker,
        noise=persona.voice.noise if persona is not None and persona.voice is not None else 0.0,
        seed=options.seed,
        min_confidence=settings.min_confidence,
    )


def check_voice(suites: Sequence[LoadedSuite], options: RunSettings) -> dict[str, str]:
    """Every suite with a voice case has speech backends to run it (a ConfigErrors at the suite otherwise): found
    before anything runs or is stored, not as an error in every conversation. The backends' names, as the run
    records them beside its versions (``synthesizer``, ``recognizer``; several suites' joined by commas)."""
    errors: list[ConfigError] = []
    names: dict[str, list[str]] = {}
    for loaded in suites:
        if any(modality_of(loaded, case, options) == "voice" for case in loaded.suite.cases):
            try:
                backends = speech_backends(model_roles(loaded, options), loaded.suite.voice, where=loaded.path)
            except ConfigError as exc:
                errors.append(exc)
                continue
            synthesizer, recognizer = backends
            for key, name in (("synthesizer", synthesizer.name), ("recognizer", recognizer.name)):
                if name not in names.setdefault(key, []):
                    names[key].append(name)
    if errors:
        raise ConfigErrors(errors)
    return {key: ", ".join(values) for key, values in names.items()}


def final_world(loaded: LoadedSuite, case: Case, transcript: Transcript) -> World | None:
    """The world the conversation left: the case's seed with the transcript's net diff made again (None: the case
    has no world, or the transcript was recorded on another seed, whose changes cannot be laid on this one)."""
    seed = loaded.world_of(case)
    if seed is None or transcript.world is None or transcript.world.digest != seed.digest:
        return None
    world = seed.copy()
    apply_changes(world, transcript.world.changes)
    return world


def _setup_failure(case: Case, persona: Persona | None, options: RunSettings, message: str) -> Transcript:
    now = utc_now()
    return Transcript(
        case=case.name,
        kind=case.kind,
        persona=persona.name if persona else None,
        seed=options.seed,
        events=[ErrorEvent(turn=0, where="agent", message=message)],
        stop_reason="error",
        error=message,
        started_at=now,
        finished_at=now,
    )


def load_prompt_overrides(loaded: LoadedSuite) -> dict[str, str]:
    """The suite's judge prompt overrides (their text, read when the suite was loaded, or kept in the run's
    snapshot), checked: an unknown prompt name or a placeholder its question does not fill is an error at the
    suite's key. The files are never read here: a repeated or resumed run scores with the text it ran with."""
    from simulator.errors import JudgeError
    from simulator.judges.llm_judges import check_prompt

    errors: list[ConfigError] = []
    for name, text in loaded.judge_prompts.items():
        try:
            check_prompt(name, text, origin=loaded.suite.judge_prompts.get(name, "override"))
        except JudgeError as exc:
            errors.append(config_error_at(loaded.path, ("judge_prompts", name), str(exc)))
    if errors:
        raise ConfigErrors(errors)
    return dict(loaded.judge_prompts)


async def score_case(
    loaded: LoadedSuite,
    case: Case,
    transcript: Transcript,
    *,
    llm: LLMClient,
    options: RunSettings,
    repeat: int = 0,
) -> CaseResult:
    """Score one transcript and decide the case's outcome (see ``simulator.judges.scoring`` and ``metrics``).

    The simulated user's turns are checked for fidelity (``simulator.judges.fidelity``); a failing
    conversation is also asked about invented facts (answered with its hallucination question, or one judge
    request when the suite does not batch), and a failure that coincides with a
    finding becomes ``user_error`` (or stays ``fail`` with the finding as a reason with ``count_user_errors``)."""
    from simulator.judges.fidelity import check_fidelity, judge_invented_facts, user_could_cause
    from simulator.judges.llm_judges import LLMJudge
    from simulator.judges.scoring import ScoringContext, score_transcript
    from simulator.metrics import case_metrics, case_outcome
    from simulator.runner._outcome import decide_outcome

    roles = model_roles(loaded, options)
    judge = LLMJudge(llm if roles.judge.model else None, prompts=load_prompt_overrides(loaded))
    agent = loaded.agent
    persona = loaded.personas.get(transcript.persona) if transcript.persona else None
    context = ScoringContext(
        thresholds=loaded.suite.thresholds,
        language=loaded.suite.language,
        instructions=agent.judge_instructions if agent is not None else None,
        declared_tools=[tool.name for tool in agent.tools] if agent is not None else [],
        tool_descriptions={tool.name: tool.description for tool in agent.tools} if agent is not None else {},
        tool_kinds={tool.name: tool.kind for tool in agent.tools if tool.kind} if agent is not None else {},
        judging=loaded.suite.judging,
        plugin_scorers=tuple(loaded.suite.scorers),
        persona=persona,
        world=final_world(loaded, case, transcript),
        budgets=loaded.suite.budgets,
    )
    with metering() as meter:
        scores = await score_transcript(case, transcript, context, judge)
        outcome, _ = case_outcome(transcript, scores)
        fidelity = check_fidelity(case, transcript, persona, scores)
        findings = fidelity.findings
        if outcome == "fail" and user_could_cause(scores):
            # Only a failure the user could have caused uses the answer: the judge gave it with the hallucination
            # question when the suite batches, else it is asked now (a passing conversation never asks it).
            findings = sorted(
                [*findings, *await judge_invented_facts(judge, case, transcript, persona)],
                key=lambda finding: finding.turn,
            )
    if meter.by_role:
        # The judge's calls while scoring belong to this conversation's account too.
        usage = dict(transcript.usage)
        for role, used in meter.by_role.items():
            usage[role.value] = usage[role.value] + used if role.value in usage else used
        transcript = transcript.model_copy(update={"usage": usage})
    outcome, reasons = decide_outcome(transcript, scores, findings, count_user_errors=options.count_user_errors)
    return CaseResult(
        case=case.name,
        kind=case.kind,
        persona=transcript.persona,
        repeat=repeat,
        outcome=outcome,
        reasons=reasons,
        transcript=transcript,
        scores=scores,
        metrics=case_metrics(transcript, scores, outcome),
        fidelity=findings,
        user_turns_checked=fidelity.checked_turns,
    )
