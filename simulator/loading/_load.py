"""Loading suites, hosted ``evals:`` files, agent files and personas, with every problem reported at once.

The pipeline per file: read (UTF-8, size limit) -> line-aware YAML tree -> JSON Schema -> pydantic models ->
cross-reference checks (declared variables, expectation references, personas, unique case names, tools).
Errors of all stages are collected and raised together, sorted by place.
The cross-reference checks live in ``_cross_check``; the models' type adapters in ``_adapters``.

``validate`` (:func:`validate_paths`) also imports the code the files name (a python agent's ``callable``, a
graph, every tool's live ``function``), the way a run would (:mod:`simulator.code_refs`), and checks it is
callable, without calling it. Loading a suite to run it does not: a test-mode run needs no live function.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import TypeAdapter, ValidationError

from simulator.code_refs import code_folders
from simulator.errors import ConfigError, ConfigErrors
from simulator.kinds import KINDS
from simulator.loading._adapters import adapter
from simulator.loading._cross_check import _code_problem, _CrossCheck, _SuiteParts, _uninstalled_plugins
from simulator.loading._env_check import env_problems
from simulator.loading._limits import ReadProblem, why_not_read
from simulator.loading._limits import read_text as read_bounded_text
from simulator.loading._paths import AGENT_FILE_NAMES, PERSONAS_DIR, YAML_SUFFIXES, display_path
from simulator.loading._schema import SchemaChecker, describe_value, tool_parameter_problems
from simulator.loading._world import WorldChecker, read_worlds, world_files
from simulator.loading._yaml import DataPath, Located, format_path, parse_yaml, read_text
from simulator.models import (
    AgentConfig,
    Case,
    HostedEvalsFile,
    Persona,
    PersonaFile,
    Suite,
)
from simulator.safety import one_line
from simulator.world import SeededWorld

_SUITE_KEYS = set(Suite.model_fields)


@dataclass
class LoadedSuite:
    """A suite ready to run: its cases, the resolved agent and the personas it can use."""

    suite: Suite
    path: Path
    agent_path: Path | None = None
    personas: dict[str, Persona] = field(default_factory=dict)
    hosted_format: bool = False
    #: The text of each judge prompt override the suite names (``judge_prompts``), read when it was loaded:
    #: a run scores with these texts (kept in its snapshot), never with the files as they are later.
    judge_prompts: dict[str, str] = field(default_factory=dict)
    #: Each case's seeded world, built at its first conversation and shared read-only by the rest.
    _worlds: dict[str, SeededWorld | None] = field(default_factory=dict, repr=False, compare=False)

    def world_of(self, case: Case) -> SeededWorld | None:
        """The case's seeded world: the suite's ``world:`` with the case's laid over it (None: neither has one).
        Built once per case; every conversation copies it (:meth:`SeededWorld.copy`) and never changes it."""
        if case.name not in self._worlds:
            spec = case.world.merged_over(self.suite.world) if case.world is not None else self.suite.world
            self._worlds[case.name] = SeededWorld(spec) if spec is not None else None
        return self._worlds[case.name]

    @property
    def agent(self) -> AgentConfig | None:
        """The agent under test, resolved from the suite, a referenced file or a nearby agent.yaml."""
        agent = self.suite.agent
        return None if isinstance(agent, str) else agent

    @property
    def code_folders(self) -> tuple[Path, ...]:
        """Where the code the suite names (python agent, graph, live tool functions) is looked for first: the
        suite's folder, then the agent file's."""
        return code_folders(self.path, self.agent_path)


@dataclass(frozen=True)
class SkippedFile:
    """A YAML name found in a folder that is not read, and why (a named pipe, a device, a broken link...)."""

    path: Path
    why: str


@dataclass
class ValidationReport:
    """What ``validate`` found: the files read, what they hold, every problem, and the names not read."""

    files: list[Path] = field(default_factory=list)
    skipped: list[SkippedFile] = field(default_factory=list)
    suites: list[LoadedSuite] = field(default_factory=list)
    personas: dict[str, Persona] = field(default_factory=dict)
    agents: list[Path] = field(default_factory=list)
    errors: list[ConfigError] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        """True when no file had a problem."""
        return not self.errors

    def case_counts(self) -> dict[str, int]:
        """Number of cases per kind over all suites."""
        counts = dict.fromkeys(KINDS, 0)
        for loaded in self.suites:
            for case in loaded.suite.cases:
                counts[case.kind] += 1
        return counts


_ABSENT = object()


def _child(current: Any, part: Any) -> Any:
    """``current[part]`` when the data has it, else ``_ABSENT`` (for union tags in pydantic locations)."""
    if isinstance(current, dict) and part in current:
        return current[part]
    if isinstance(current, list) and isinstance(part, int) and 0 <= part < len(current):
        return current[part]
    return _ABSENT


def _data_path(detail: Any, data: Any) -> DataPath:
    """Map a pydantic error onto the data: union tags that are not keys are dropped, a missing key is kept,
    and a validator's ``located_error`` refines the place."""
    loc: Sequence[Any] = detail["loc"]
    path: list[str | int] = []
    current = data
    for index, part in enumerate(loc):
        child = _child(current, part)
        if child is not _ABSENT:
            current = child
            path.append(part)
        elif index == len(loc) - 1 and detail["type"] == "missing":
            path.append(part)
    at = (detail.get("ctx") or {}).get("at")
    if detail["type"] == "located" and at:
        path.extend(at)
    return tuple(path)


def _union_type_noise(detail: Any, data: Any) -> bool:
    """A type error from one branch of a union (``str | KeywordTerm``): the value was meant for another
    branch, whose own error (if any) is the one to show. The schema reports values that fit no branch."""
    if not str(detail["type"]).endswith("_type"):
        return False
    current = data
    for part in detail["loc"]:
        current = _child(current, part)
        if current is _ABSENT:
            return True
    return False


def _tool_problems(kind: str | None, data: Any) -> list[tuple[DataPath, str]]:
    """The tool parameters of the agent a file of ``kind`` writes out (an agent file, a suite's inline agent)
    that are not an object's JSON Schema."""
    if kind == "agent":
        return tool_parameter_problems(data)
    if kind == "suite" and isinstance(data, dict):
        return tool_parameter_problems(data.get("agent"), ("agent",))
    return []


def _overlaps(path: DataPath, others: Iterable[DataPath]) -> bool:
    for other in others:
        shorter = min(len(path), len(other))
        if path[:shorter] == other[:shorter]:
            return True
    return False


class Loader:
    """Loads files, each once: agent files and persona folders are shared by the suites that use them."""

    def __init__(self, *, check_code: bool = False) -> None:
        self.errors: list[ConfigError] = []
        #: Import the code agents name (``validate``), see :meth:`check_code_refs`.
        self.check_code = check_code
        self._agents: dict[Path, AgentConfig | None] = {}
        self._agent_documents: dict[Path, Located] = {}
        self._code_checked: set[Path] = set()
        self._persona_dirs: dict[Path, dict[str, Persona]] = {}
        self._persona_sources: dict[str, Path] = {}

    # -- one document ------------------------------------------------------------------------------

    def _read(self, path: Path) -> Located | None:
        text, errors = read_text(path)
        self.errors.extend(errors)
        if text is None:
            return None
        located, errors = parse_yaml(text, str(path))
        self.errors.extend(errors)
        return located

    def _validate(self, path: Path, located: Located, kind: str | None, model: Any) -> Any:
        """Build the model, explaining any rejection through the schema (if ``kind`` names one); the model, or
        None when it cannot be built."""
        file = str(path)
        if not isinstance(located.data, dict):
            hint = ": put the cases under `cases:`" if kind == "suite" and isinstance(located.data, list) else ""
            self.errors.append(
                ConfigError(
                    file,
                    1,
                    1,
                    "(root)",
                    f"expected a mapping at the top of the file, got {describe_value(located.data)}{hint}",
                )
            )
            return None
        # The models and the schema come from the same definitions and accept the same data (strict models;
        # tests/loading pin it), so a file the models accept needs no schema pass, which is the slow part.
        # The schema runs to explain a rejection in plain words, and on files with nulls (see Located).
        built: Any = None
        failure: ValidationError | None = None
        try:
            built = (
                model.validate_python(located.data)
                if isinstance(model, TypeAdapter)
                else model.model_validate(located.data)
            )
        except ValidationError as exc:
            failure = exc
        tool_problems = _tool_problems(kind, located.data)
        if failure is None:
            self._check_env(file, located, built)
        if failure is None and not tool_problems and not located.has_nulls:
            return built
        checked = SchemaChecker(kind).check(located, file) if kind is not None else []
        schema_found = [(p, e) for p, e in checked if not located.is_flagged(p)]
        self.errors.extend(error for _, error in schema_found)
        bad_paths = [p for p, _ in schema_found] + list(located.flagged)
        for where, message in tool_problems:
            if not _overlaps(where, bad_paths):
                position = located.position(where)
                self.errors.append(ConfigError(file, position.line, position.column, format_path(where), message))
        if failure is not None:
            for detail in failure.errors(include_url=False):
                # With schema errors found, only the models' own cross-key rules add anything: the structural
                # complaints (missing keys, types) would repeat the schema's in worse words.
                if schema_found and detail["type"] not in ("located", "value_error"):
                    continue
                where = _data_path(detail, located.data)
                if _overlaps(where, bad_paths) or _union_type_noise(detail, located.data):
                    continue
                message = str(detail["msg"]).removeprefix("Value error, ")
                if detail["type"] == "missing":
                    message = f"missing required key {where[-1]!r}"
                    position = located.position(where[:-1])
                else:
                    position = located.position(where)
                self.errors.append(ConfigError(file, position.line, position.column, format_path(where), message))
            return None
        return None if tool_problems else built

    def _check_env(self, file: str, located: Located, built: Any) -> None:
        """Record each environment reference of ``built`` that cannot be filled in, at its key."""
        for where, message in env_problems(built):
            position = located.position(where)
            self.errors.append(ConfigError(file, position.line, position.column, format_path(where), message))

    # -- agents ------------------------------------------------------------------------------------

    def load_agent(self, path: Path) -> AgentConfig | None:
        """The agent config in ``path`` (cached); None when it has errors (they are recorded)."""
        path = path.resolve()
        if path not in self._agents:
            located = self._read(path)
            self.add_agent(path, located)
        return self._agents[path]

    def add_agent(self, path: Path, located: Located | None) -> AgentConfig | None:
        """Validate the agent file ``path`` already read as ``located`` and keep it (and where its keys are)."""
        path = path.resolve()
        agent = self._validate(path, located, "agent", adapter("agent")) if located is not None else None
        problems = _uninstalled_plugins(agent) if located is not None else []
        for where, problem in problems:
            assert located is not None
            position = located.position(where)
            self.errors.append(ConfigError(path, position.line, position.column, format_path(where), problem))
        if problems:
            agent = None
        self._agents[path] = agent
        if located is not None:
            self._agent_documents[path] = located
        return agent

    # -- code the agent names ----------------------------------------------------------------------

    def check_code_refs(
        self, agent: AgentConfig, file: Path, located: Located, base: DataPath, folders: Sequence[Path]
    ) -> None:
        """Import every piece of code ``agent`` names, looking in ``folders`` first, and record each reference
        that cannot be imported or is unusable at its key: ``base`` is where the agent is written in ``file``
        (``("agent",)`` inline in a suite, ``()`` in an agent file). Nothing is called."""
        refs = [((*base, *where), ref, what) for where, ref, what in agent.code_refs()]
        for where, ref, what in refs:
            message = _code_problem(ref, what, folders)
            if message is not None and not located.is_flagged(where):
                position = located.position(where)
                self.errors.append(ConfigError(file, position.line, position.column, format_path(where), message))

    def _check_suite_code(self, path: Path, located: Located, agent: AgentConfig, agent_path: Path) -> None:
        folders = code_folders(path, agent_path)
        if agent_path == path:
            self.check_code_refs(agent, path, located, ("agent",), folders)
            return
        agent_path = agent_path.resolve()
        document = self._agent_documents.get(agent_path)
        if document is not None:
            self._code_checked.add(agent_path)
            self.check_code_refs(agent, agent_path, document, (), folders)

    def check_unused_agent_code(self, paths: Iterable[Path]) -> None:
        """Check the code of the agent files in ``paths`` that no suite checked, from their own folder."""
        for path in paths:
            resolved = path.resolve()
            agent = self._agents.get(resolved)
            document = self._agent_documents.get(resolved)
            if resolved in self._code_checked or agent is None or document is None:
                continue
            self._code_checked.add(resolved)
            self.check_code_refs(agent, resolved, document, (), code_folders(resolved))

    # -- personas ----------------------------------------------------------------------------------

    def load_persona_dir(self, directory: Path) -> dict[str, Persona]:
        """All personas in a folder (cached), by name; duplicates and broken files are recorded as errors."""
        directory = directory.resolve()
        if directory in self._persona_dirs:
            return self._persona_dirs[directory]
        personas: dict[str, Persona] = {}
        for path in sorted(p for p in directory.rglob("*") if p.suffix.lower() in YAML_SUFFIXES and p.is_file()):
            for persona, where, located in self._load_persona_file(path):
                if persona.name in personas:
                    first = self._persona_sources.get(persona.name, path)
                    position = located.position(where)
                    self.errors.append(
                        ConfigError(
                            path,
                            position.line,
                            position.column,
                            format_path(where),
                            f"persona {persona.name!r} is already defined in {one_line(display_path(str(first)))}: "
                            "persona names must be unique",
                        )
                    )
                    continue
                personas[persona.name] = persona
                self._persona_sources[persona.name] = path
        self._persona_dirs[directory] = personas
        return personas

    def _load_persona_file(self, path: Path) -> list[tuple[Persona, DataPath, Located]]:
        located = self._read(path)
        if located is None:
            return []
        if isinstance(located.data, dict) and "personas" in located.data:
            collection = self._validate(path, located, "personas", PersonaFile)
            if collection is None:
                return []
            return [(p, ("personas", i, "name"), located) for i, p in enumerate(collection.personas)]
        persona = self._validate(path, located, "persona", Persona)
        return [] if persona is None else [(persona, ("name",), located)]

    # -- suites ------------------------------------------------------------------------------------

    def load_suite_file(self, path: Path, located: Located | None = None) -> LoadedSuite | None:
        """A suite or hosted ``evals:`` file with its agent and personas resolved and cross-checked.

        When the file has schema errors, the parts that are valid (cases, agent, personas) are still
        cross-checked, so one run of ``validate`` shows every problem.
        """
        if located is None:
            path = path.resolve()
            located = self._read(path)
        if located is None:
            return None
        data = located.data
        hosted = isinstance(data, dict) and "evals" in data
        suite: Suite | None
        if hosted:
            entries = data.get("evals")
            for entry in entries if isinstance(entries, list) else []:
                if isinstance(entry, dict):
                    entry.setdefault("kind", "simulation")
            hosted_file = self._validate(path, located, "evals", HostedEvalsFile)
            suite = None
            if hosted_file is not None:
                suite = Suite(
                    name=path.stem,
                    description=f"hosted evals file {path.name}",
                    models=hosted_file.models,
                    cases=list(hosted_file.evals),
                )
            cases_key = "evals"
        else:
            suite = self._validate(path, located, "suite", Suite)
            cases_key = "cases"
        worlds_read = True
        if suite is not None:
            suite, worlds_read = read_worlds(path, located, suite, cases_key, self.errors)
        if not isinstance(data, dict):
            return None
        parts = _SuiteParts.of(suite) if suite is not None else _SuiteParts.salvage(data, cases_key)
        agent: AgentConfig | None = None
        agent_path: Path | None = None
        # An `agent:` with errors is what the suite tests: an agent.yaml nearby is another agent, and checking
        # the cases' tools against it would report errors that are not there.
        if parts.agent is not None or data.get("agent") is None:
            agent, agent_path = self._resolve_agent(path, located, parts.agent)
        if self.check_code and agent is not None and agent_path is not None:
            self._check_suite_code(path, located, agent, agent_path)
        personas_dir = find_upwards(path.parent, PERSONAS_DIR, want_dir=True)
        personas = self.load_persona_dir(personas_dir) if personas_dir else {}
        _CrossCheck(self.errors, path, located, parts, cases_key, agent, agent_path, personas, personas_dir).run()
        if suite is None:
            return None
        if worlds_read:
            self._check_worlds(path, located, suite, cases_key, agent, agent_path)
        suite = suite.model_copy(update={"agent": agent})
        prompts = self._judge_prompts(path, located, suite)
        return LoadedSuite(
            suite=suite,
            path=path,
            agent_path=agent_path,
            personas=personas,
            hosted_format=hosted,
            judge_prompts=prompts,
        )

    def _check_worlds(  # noqa: PLR0917 - one private call site
        self,
        path: Path,
        located: Located,
        suite: Suite,
        cases_key: str,
        agent: AgentConfig | None,
        agent_path: Path | None,
    ) -> None:
        """The suite's world against its world tools and ``expect_state``, each problem at its key."""
        documents = {path: located}
        inline = agent_path is None or agent_path.resolve() == path
        if not inline:
            assert agent_path is not None
            document = self._agent_documents.get(agent_path.resolve())
            if document is not None:
                documents[agent_path.resolve()] = document

        def tool_place(where: DataPath) -> tuple[Path, DataPath]:
            if inline or agent_path is None or agent_path.resolve() not in documents:
                return path, ("agent", *where) if inline else ()
            return agent_path.resolve(), where

        def report(place: tuple[Path, DataPath], message: str) -> None:
            file, where = place
            position = documents[file].position(where)
            error = ConfigError(file, position.line, position.column, format_path(where), message)
            if error not in self.errors:  # an agent file shared by suites is checked once per suite
                self.errors.append(error)

        WorldChecker(suite, cases_key, agent, tool_place, path, report).run()

    def _judge_prompts(self, path: Path, located: Located | None, suite: Suite) -> dict[str, str]:
        """The text of every judge prompt override, read now (bounded like every file a user gives); a file
        that cannot be read is an error at the suite's key. What a prompt may say is checked by the judges."""
        prompts: dict[str, str] = {}
        for name, relative in suite.judge_prompts.items():
            try:
                # A named pipe or /dev/zero is refused, never read forever.
                text = read_bounded_text((path.parent / relative).resolve(), "shorten the prompt", "text")
            except ReadProblem as problem:
                located_in_file = problem.line > 1 or problem.column > 1
                place = f" (line {problem.line}, column {problem.column})" if located_in_file else ""
                reason = problem.message.removeprefix("cannot read the file: ")
                line, column = located.position(("judge_prompts", name)) if located is not None else (1, 1)
                self.errors.append(
                    ConfigError(
                        path,
                        line,
                        column,
                        format_path(("judge_prompts", name)),
                        f"cannot read the prompt file {relative!r}{place}: {reason}",
                    )
                )
                continue
            prompts[name] = text.replace("\r\n", "\n").replace("\r", "\n")
        return prompts

    def _resolve_agent(
        self, path: Path, located: Located, agent: AgentConfig | str | None
    ) -> tuple[AgentConfig | None, Path | None]:
        if isinstance(agent, str):
            target = (path.parent / agent).resolve()
            if not target.is_file():
                position = located.position(("agent",))
                self.errors.append(
                    ConfigError(
                        path,
                        position.line,
                        position.column,
                        "agent",
                        f"agent file {agent!r} not found (looked for {one_line(display_path(str(target)))}): "
                        "fix the path, relative to this file",
                    )
                )
                return None, None
            return self.load_agent(target), target
        if agent is not None:
            return agent, path
        found = next((p for name in AGENT_FILE_NAMES if (p := find_upwards(path.parent, name)) is not None), None)
        if found is None:
            return None, None
        return self.load_agent(found), found


def find_upwards(start: Path, name: str, *, want_dir: bool = False) -> Path | None:
    """The nearest ``name`` in ``start`` or a parent folder, stopping at the top of a git checkout or the home
    folder, and never above ``start`` in the root or a top-level folder such as /tmp, so that a stray file far
    above the project is not picked up."""
    home = Path.home()
    for index, directory in enumerate([start, *start.parents]):
        if index > 0 and directory.parent == directory.parent.parent:
            return None
        candidate = directory / name
        if candidate.is_dir() if want_dir else candidate.is_file():
            return candidate
        if (directory / ".git").exists() or directory == home:
            return None
    return None


def _enclosing_personas_dir(path: Path) -> Path | None:
    for parent in path.parents:
        if parent.name == PERSONAS_DIR:
            return parent
    return None


def classify(path: Path, data: Any) -> str:
    """What a YAML file holds: suite, evals, agent, persona or personas."""
    if path.name in AGENT_FILE_NAMES:
        return "agent"
    if isinstance(data, dict):
        if "evals" in data:
            return "evals"
        if "cases" in data:
            return "suite"
        if "personas" in data and set(data) == {"personas"}:
            return "personas"
        if PERSONAS_DIR in path.parent.parts:
            return "persona"
        if "type" in data and "cases" not in data:
            return "agent"
        if set(data) & _SUITE_KEYS:
            return "suite"
    elif PERSONAS_DIR in path.parent.parts:
        return "persona"
    else:
        # A list or a lone value at the top: most likely cases written without `cases:`; say so.
        return "suite"
    return "unknown"


def collect_yaml_files(
    paths: Iterable[str | Path], skipped: list[SkippedFile] | None = None
) -> tuple[list[Path], list[ConfigError]]:
    """YAML files named or found in the folders given (hidden folders skipped), each once, sorted. A YAML name
    in a folder that is not a file to read (a named pipe, a device, a broken link, a link loop) is added to
    ``skipped`` with why, never read and never silently passed over."""
    files: list[Path] = []
    errors: list[ConfigError] = []
    for raw in paths:
        path = Path(raw)
        if path.is_dir():
            found = []
            for p in sorted(path.rglob("*")):
                if p.suffix.lower() not in YAML_SUFFIXES or any(
                    part.startswith(".") for part in p.relative_to(path).parts
                ):
                    continue
                why = why_not_read(p)
                if why is not None:
                    if skipped is not None:
                        skipped.append(SkippedFile(p, why))
                elif p.is_file():
                    found.append(p)
            if not found:
                errors.append(ConfigError(path, 1, 1, "(root)", "no .yaml or .yml files in this folder"))
            files.extend(found)
        elif path.exists():
            files.append(path)  # a named pipe or a device too: reading it says what it is and refuses it
        else:
            errors.append(ConfigError(path, 1, 1, "(root)", "no such file or folder"))
    unique = list(dict.fromkeys(p.resolve() for p in files))
    return unique, errors


def validate_paths(paths: Iterable[str | Path]) -> ValidationReport:
    """Load every YAML file under ``paths`` as what it holds and collect all problems, never raising."""
    loader = Loader(check_code=True)
    report = ValidationReport()
    files, errors = collect_yaml_files(paths, report.skipped)
    loader.errors.extend(errors)
    report.files = files
    unknown: list[Path] = []
    for path in files:
        located = loader._read(path)
        if located is None:
            continue
        kind = classify(path, located.data)
        if kind in ("suite", "evals"):
            loaded = loader.load_suite_file(path, located)
            if loaded is not None:
                report.suites.append(loaded)
                report.personas.update(loaded.personas)
        elif kind == "agent":
            if path.resolve() not in loader._agents:
                loader.add_agent(path, located)
            report.agents.append(path)
        elif kind in ("persona", "personas"):
            folder = _enclosing_personas_dir(path)
            if folder is not None:
                report.personas.update(loader.load_persona_dir(folder))
            else:
                # A collection outside personas/ is checked on its own; suites only see personas/ folders.
                report.personas.update({p.name: p for p, _, _ in loader._load_persona_file(path)})
        else:
            unknown.append(path)
    # A world file a suite names (`world: world.yaml`) was read, and checked, as that suite's world.
    worlds = {file for loaded in report.suites for file in world_files(loaded.path, loaded.suite)}
    for path in unknown:
        if path.resolve() in worlds:
            continue
        loader.errors.append(
            ConfigError(
                path,
                1,
                1,
                "(root)",
                "cannot tell what this file holds: a suite has `cases:`, a hosted evals file `evals:`, an agent "
                f"file is named agent.yaml, a persona file lies in a {PERSONAS_DIR}/ folder, and a world file is "
                "named by a suite's `world:`",
            )
        )
    loader.check_unused_agent_code(report.agents)
    report.errors = sorted(_unique(loader.errors), key=ConfigError.sort_key)
    return report


def load_suite(path: str | Path) -> LoadedSuite:
    """Load one suite (or hosted evals file) with its agent and personas; raises :class:`ConfigErrors`."""
    loader = Loader()
    loaded = loader.load_suite_file(Path(path).resolve())
    if loader.errors or loaded is None:
        raise ConfigErrors(_unique(loader.errors))
    return loaded


def read_judge_prompts(path: str | Path, suite: Suite) -> dict[str, str]:
    """The text of the judge prompt overrides ``suite`` (loaded from ``path``) names, read from their files;
    raises :class:`ConfigErrors` at the suite's keys for a file that cannot be read."""
    loader = Loader()
    resolved = Path(path).resolve()
    text, _ = read_text(resolved)
    located = parse_yaml(text, str(resolved))[0] if text is not None else None
    prompts = loader._judge_prompts(resolved, located, suite)
    if loader.errors:
        raise ConfigErrors(_unique(loader.errors))
    return prompts


def config_error_at(path: str | Path, where: DataPath, message: str) -> ConfigError:
    """A ConfigError at the place ``where`` is written in the YAML file ``path`` (1:1 if it cannot be found);
    for problems found after loading, such as a prompt file named in a suite that turns out to be invalid."""
    resolved = Path(path).resolve()
    line, column = 1, 1
    text, _ = read_text(resolved)
    if text is not None:
        located, _ = parse_yaml(text, str(resolved))
        if located is not None:
            line, column = located.position(where)
    return ConfigError(display_path(str(resolved)), line, column, format_path(where), message)


def load_model_file(path: str | Path, model: type[Any]) -> Any:
    """Read a YAML file a person wrote into ``model`` (a pydantic model), with the same located errors as
    suites get; raises :class:`ConfigErrors`. For small formats that have no published schema."""
    loader = Loader()
    resolved = Path(path).resolve()
    located = loader._read(resolved)
    built = loader._validate(resolved, located, None, model) if located is not None else None
    if loader.errors or built is None:
        raise ConfigErrors(_unique(loader.errors))
    return built


def load_personas(directory: str | Path) -> dict[str, Persona]:
    """All personas in a folder, by name; raises :class:`ConfigErrors`."""
    loader = Loader()
    personas = loader.load_persona_dir(Path(directory))
    if loader.errors:
        raise ConfigErrors(_unique(loader.errors))
    return personas


def _unique(errors: Iterable[ConfigError]) -> list[ConfigError]:
    seen: set[str] = set()
    result: list[ConfigError] = []
    for found in errors:
        error = ConfigError(display_path(found.file), found.line, found.column, found.key_path, found.message)
        text = error.render()
        if text not in seen:
            seen.add(text)
            result.append(error)
    return result
