"""pytest runs Simulator suites: every case x persona x repeat of a YAML suite is a test item.

Registered as the ``simulator`` pytest plugin (entry point ``pytest11``), so ``pytest suites/`` collects the
suites under ``suites/``. Items are what :func:`simulator.runner.plan` plans for each file, with ids
``suites/demo/scenarios.yaml::express_delivery_date_is_made_up[power_user-#1]`` (``case[#1]`` when no
persona plays the user, as in golden cases); the id does not change from one session to the next (the plan's
seed is fixed, 0 unless ``--sim-seed`` says otherwise), so ``--lf`` finds the same items again.

When YAML is collected: only from a path given on the command line, a path listed in the ini option
``simulator_suites``, or anywhere pytest collects with ``--sim``. A folder given on the command line that lies
in one of ``testpaths`` holds Python tests and their YAML data, so its YAML is left alone (name the file, or
pass ``--sim``). A plain ``pytest`` (arguments from ``testpaths``) collects no YAML unless ``simulator_suites``
names some. YAML that holds no suite (agent files, personas) is never collected.

The selected items (after ``-k``, ``-m``, ``--lf``) run together, concurrently, as ONE stored run, when the
first of them runs; each item then reports its stored result: pass passes, fail and error fail with the
goal-by-goal rationale and the last turns, unsure is skipped with its reason. Under pytest-xdist each worker runs
the conversations of the items it is given, one at a time, into the same one stored run (see
:mod:`simulator.pytest_xdist`). Each item's JUnit test case carries the run id, persona and outcome as properties
(the transcript too for fail, error, unsure and user_error), and the conversation's own duration as its time.
"""

from __future__ import annotations

import dataclasses
import glob
import re
import time
from collections.abc import Callable, Generator, Iterable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

import simulator

if TYPE_CHECKING:
    from simulator import PlanItem, PlannedRun, RunOutcome, StoredResult

SUITE_KINDS = ("suite", "evals", "unreadable")
MARKER = "simulator"
LAST_LINES = 12  # of the conversation shown under a failure: the end is where it went wrong


def pytest_addoption(parser: pytest.Parser) -> None:
    """The command line options: those of ``simulator run``, prefixed ``--sim-``."""
    group = parser.getgroup("simulator", "Simulator: YAML suites run against a conversational agent")
    group.addoption(
        "--sim", action="store_true", default=False,
        help="Collect YAML suites wherever pytest collects, testpaths included.",
    )  # fmt: skip
    group.addoption("--sim-judge-model", default=None, metavar="MODEL", help="litellm model for the judge.")
    group.addoption("--sim-user-model", default=None, metavar="MODEL", help="litellm model for the simulated user.")
    group.addoption("--sim-live", action="store_true", default=False, help="Run real tool functions instead of fakes.")
    group.addoption("--sim-repeat", type=int, default=1, metavar="K", help="Run each case K times.")
    group.addoption(
        "--sim-db", default=None, metavar="PATH",
        help="Run store (default: $SIMULATOR_DB or .simulator/runs.db).",
    )  # fmt: skip
    group.addoption("--sim-persona", default=None, metavar="NAME", help="A persona name, all, or random.")
    group.addoption(
        "--sim-seed", type=int, default=0, metavar="N",
        help="Seed for persona choice and the scripted user (default 0, so item ids are stable).",
    )  # fmt: skip
    group.addoption(
        "--sim-concurrency",
        type=int,
        default=8,  # simulator.DEFAULT_CONCURRENCY, written out: loading the plugin imports no data model
        metavar="N",
        help="Conversations in flight at once.",
    )
    group.addoption(
        "--sim-count-user-errors", action="store_true", default=False,
        help="Fail a case whose failure the simulated user caused, instead of skipping it as user_error.",
    )  # fmt: skip
    parser.addini(
        "simulator_suites",
        "Suite files or folders pytest collects as Simulator suites, also when run without arguments.",
        type="paths",
        default=[],
    )


def pytest_configure(config: pytest.Config) -> None:
    """Check the options, decide where YAML is collected from, and keep the session's run state."""
    from simulator import InputError, check_number

    for keyword in ("repeat", "concurrency", "seed"):
        try:
            check_number(keyword, config.getoption(f"sim_{keyword}"), option=f"--sim-{keyword}")
        except InputError as exc:
            raise pytest.UsageError(str(exc)) from None
    config.addinivalue_line("markers", f"{MARKER}: a conversation of a Simulator suite (collected from YAML)")
    suites: list[Path] = [Path(path).resolve() for path in config.getini("simulator_suites")]
    roots = list(suites)
    if config.args_source == pytest.Config.ArgsSource.ARGS:
        roots.extend(_command_line_roots(config))
    else:
        # Like testpaths: the listed suites are collected by a plain `pytest`, besides the Python tests.
        given = [_arg_path(config, arg) for arg in config.args]
        config.args.extend(str(path) for path in suites if not any(_within(path, root) for root in given))
    config.stash[_STATE] = SessionRun(config, roots=roots, everywhere=bool(config.getoption("sim")))


def _arg_path(config: pytest.Config, arg: str) -> Path:
    return (config.invocation_params.dir / arg.partition("::")[0]).resolve()


def _within(path: Path, root: Path) -> bool:
    return path == root or root in path.parents


def _command_line_roots(config: pytest.Config) -> list[Path]:
    """The paths on the command line whose YAML is collected: every file named, and every folder but those
    inside ``testpaths`` (Python tests, whose YAML files are test data, some invalid on purpose)."""
    rootpath = config.rootpath.resolve()
    tests: list[Path] = []
    for pattern in config.getini("testpaths"):
        for found in glob.glob(str(rootpath / pattern), recursive=True):
            folder = Path(found).resolve()
            if folder != rootpath:  # testpaths = . would cover every suite too
                tests.append(folder)
    roots = []
    for arg in config.args:
        path = _arg_path(config, arg)
        if path.is_dir() and any(_within(path, folder) for folder in tests):
            continue
        roots.append(path)
    return roots


def pytest_collect_file(file_path: Path, parent: pytest.Collector) -> SuiteFile | None:
    """A YAML suite on a path the session collects suites from; any other file is left to others."""
    if file_path.suffix.lower() not in simulator.YAML_SUFFIXES:
        return None
    state = parent.config.stash[_STATE]
    if not state.collects(file_path):
        return None
    from simulator import yaml_kind

    if yaml_kind(file_path) not in SUITE_KINDS:
        return None  # an agent file or personas: the suites beside them use them
    return SuiteFile.from_parent(parent, path=file_path)


class SuiteFile(pytest.File):
    """A YAML suite file; its items are the plan of the file, made with the session's ``--sim-*`` options."""

    planned: PlannedRun | None = None

    def collect(self) -> Iterator[SuiteCase]:
        """One item per planned conversation; an invalid suite raises its located errors (see repr_failure)."""
        from simulator import plan

        state = self.config.stash[_STATE]
        self.planned = plan(self.path, **state.options)
        loaded = self.planned.suites[0]
        cases = {case.name: case for case in loaded.suite.cases}
        lines = case_lines(self.path.read_text(encoding="utf-8-sig", errors="replace"), cases)
        for item in self.planned.items:
            case = cases[item.case]
            name = (
                f"{item.case}[{item.persona}-#{item.repeat + 1}]"
                if item.persona
                else f"{item.case}[#{item.repeat + 1}]"
            )
            # Given as text, so pytest parses the `[...]` as parameters, as it does for a parametrized test's
            # id: that is the form --lf finds again in its cache (pytest 9 compares parsed ids).
            node = SuiteCase.from_parent(
                self, name=name, nodeid=f"{self.nodeid}::{name}", plan_item=item, line=lines.get(item.case, 0)
            )
            node.add_marker(MARKER)
            for tag in case.tags:
                self.config.addinivalue_line("markers", f"{tag}: Simulator case tag")
                node.add_marker(tag)
            node.extra_keyword_matches.add(case.kind)
            yield node

    def repr_failure(self, excinfo: pytest.ExceptionInfo[BaseException], style: Any = None) -> str | Any:
        """A suite's own problems as ``file:line:col: key: message`` lines, without a traceback."""
        from simulator import ConfigErrors, SimulatorError

        error = excinfo.value
        if isinstance(error, ConfigErrors):
            return _safe("\n".join(problem.render() for problem in error.errors))
        if isinstance(error, SimulatorError):
            return _safe(str(error))
        return super().repr_failure(excinfo)


class CaseFailed(Exception):
    """A conversation's stored outcome was fail or error."""

    def __init__(self, stored: StoredResult, report_command: str) -> None:
        super().__init__(f"{stored.case}: {stored.outcome}")
        self.stored = stored
        self.report_command = report_command


class RunProblem(Exception):
    """The run could not start or finish: every item reports why, without a traceback."""


class SuiteCase(pytest.Item):
    """One conversation of the plan: a case of a suite, with a persona, the n-th repeat."""

    def __init__(self, *, plan_item: PlanItem, line: int = 0, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.plan_item = plan_item
        self.line = line
        self.duration_s: float | None = None  # the conversation's own, once its result is read

    def runtest(self) -> None:
        """Run the session's selected items (on the first call), then report this item's stored result."""
        state = self.config.stash[_STATE]
        stored = state.result_of(self)
        self.duration_s = stored.duration_s
        run_id = state.run_id
        self.user_properties.extend(
            [("simulator_run", run_id), ("persona", stored.persona or ""), ("outcome", stored.outcome)]
        )
        if stored.outcome in ("fail", "error", "unsure", "user_error"):
            self.user_properties.append(("transcript", _transcript_text(stored)))
        if stored.outcome == "unsure":
            # Reported at the case in its suite file, as a skip mark is, not at this line of the plugin.
            raise pytest.skip.Exception(_safe(_unsure_reason(stored)), _use_item_location=True)
        if stored.outcome == "user_error":
            # The simulated user caused the failure (the reason names its finding): not the agent's to fail.
            reasons = "; ".join(stored.result.reasons)
            raise pytest.skip.Exception(_safe(f"user_error: {reasons}"), _use_item_location=True)
        if stored.outcome in ("fail", "error"):
            raise CaseFailed(stored, state.report_command(run_id))

    def repr_failure(self, excinfo: pytest.ExceptionInfo[BaseException], style: Any = None) -> str | Any:
        """A failed case goal by goal, with the last turns; a run that could not run, in one line."""
        if isinstance(excinfo.value, CaseFailed):
            return _safe("\n".join(failure_lines(excinfo.value.stored, excinfo.value.report_command)))
        if isinstance(excinfo.value, RunProblem):
            return _safe(str(excinfo.value))
        return super().repr_failure(excinfo)

    def reportinfo(self) -> tuple[Path, int, str]:
        """Where the item comes from: its suite file, the line naming its case (0-based), and its name."""
        return self.path, self.line, self.name


def _transcript_text(stored: StoredResult) -> str:
    from simulator import transcript_lines

    return _safe("\n".join(line.text for line in transcript_lines(stored.result.transcript, stored.result)))


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(
    item: pytest.Item, call: pytest.CallInfo[None]
) -> Generator[None, pytest.TestReport, pytest.TestReport]:
    """A conversation's call takes its own duration: the first item runs the whole selection, the rest read."""
    report = yield
    if call.when == "call" and isinstance(item, SuiteCase) and item.duration_s is not None:
        report.duration = item.duration_s
    return report


def _unsure_reason(stored: StoredResult) -> str:
    reasons = "; ".join(stored.result.reasons) or "a check only a model can decide was not decided"
    return f"unsure: {reasons}"


def failure_lines(stored: StoredResult, report_command: str) -> list[str]:
    """What a failed or errored conversation says under its test: the goals (steps) one by one with their
    rationale, the role that failed, the outcome and why, the scores not met, then the last turns."""
    from simulator import ErrorEvent, result_lines, transcript_lines

    result = stored.result
    transcript = result.transcript
    lines = transcript_lines(transcript, result)
    conversation_styles = {"user", "agent", "tool", "tool_warning", "check_met", "check_other", "error"}
    split = 1
    while split < len(lines) and lines[split].style in conversation_styles:
        split += 1
    conversation, goals = lines[1:split], lines[split:]
    out = [lines[0].text, *(line.text for line in goals)]
    if stored.outcome == "error":
        failed = [event for event in transcript.events if isinstance(event, ErrorEvent)]
        out.extend(f"error: the {event.where} failed: {event.message}" for event in failed)
        if not failed and transcript.error:
            out.append(f"error: {transcript.error}")
    out.extend(line.text for line in result_lines(result, all_scores=False))
    if conversation:
        shown = conversation[-LAST_LINES:]
        earlier = len(conversation) - len(shown)
        out.append(f"Last turns{f' ({earlier} earlier lines not shown)' if earlier else ''}:")
        out.extend(line.text for line in shown)
    out.append(f"The whole conversation is in the run's report: {report_command}")
    return out


def case_lines(text: str, names: Iterable[str]) -> dict[str, int]:
    """The 0-based line where each case is named (``- name: CASE``) in a suite's text; cases not found (a
    hosted evals file names them otherwise) are left out."""
    wanted = set(names)
    found: dict[str, int] = {}
    for number, line in enumerate(text.splitlines()):
        match = _NAME_LINE.match(line)
        if match is not None:
            name = match.group("name").strip().strip("\"'")
            if name in wanted and name not in found:
                found[name] = number
    return found


_NAME_LINE = re.compile(r"^\s*(?:-\s+)?name:\s*(?P<name>[^#]+?)\s*(?:#.*)?$")


def _safe(text: str) -> str:
    from simulator import redact, terminal_safe

    return terminal_safe(redact(text))


class SessionRun:
    """What the session runs: the options as run settings, where suites are collected from, the one stored run
    of the selected items (made when the first of them runs) and the runs the ``simulator_run`` fixture made."""

    def __init__(self, config: pytest.Config, *, roots: list[Path], everywhere: bool) -> None:
        self.config = config
        self.roots = roots
        self.everywhere = everywhere
        db = config.getoption("sim_db")
        self.db: Path | None = (config.invocation_params.dir / Path(db).expanduser()).resolve() if db else None
        self.options: dict[str, Any] = {
            "judge_model": config.getoption("sim_judge_model"),
            "user_model": config.getoption("sim_user_model"),
            "live": bool(config.getoption("sim_live")),
            "repeat": config.getoption("sim_repeat"),
            "persona": config.getoption("sim_persona"),
            "seed": config.getoption("sim_seed"),
            "concurrency": config.getoption("sim_concurrency"),
            "count_user_errors": bool(config.getoption("sim_count_user_errors")),
        }
        self.outcome: RunOutcome | None = None
        self.started: tuple[str, Path] | None = None
        self.problem: str | None = None
        self.merge_problem: str | None = None  # the xdist controller's, putting the workers' results together
        self.results: dict[str, StoredResult] = {}
        self.keys: dict[str, str] = {}  # item nodeid -> key in the stored run
        self.fixture_runs: list[RunOutcome] = []
        # Under pytest-xdist: on a worker, what the controller gave it; on the controller, the session's one run.
        self.workerinput: dict[str, Any] | None = getattr(config, "workerinput", None)
        self.xdist_run_id: str | None = (self.workerinput or {}).get("simulator_run_id")  # pytest_xdist.RUN_ID_KEY
        self.selection: PlannedRun | None = None
        self.plan_items: dict[str, PlanItem] = {}  # item nodeid -> its item in the selection's plan
        self.began = time.monotonic()

    @property
    def run_id(self) -> str:
        """The id of the session's stored run (known once a conversation ran, or from the xdist controller)."""
        if self.outcome is not None:
            return self.outcome.id
        assert self.xdist_run_id is not None
        return self.xdist_run_id

    def collects(self, path: Path) -> bool:
        """Whether YAML at ``path`` is collected as a suite (see the module docstring)."""
        resolved = path.resolve()
        return self.everywhere or any(_within(resolved, root) for root in self.roots)

    def result_of(self, item: SuiteCase) -> StoredResult:
        """The stored result of ``item``, running the session's selected items first if nothing ran yet (under
        pytest-xdist: running ``item``'s conversation alone, on the worker xdist gave the item to)."""
        if self.workerinput is not None:
            return self._run_on_worker(item)
        if self.outcome is None and self.problem is None:
            self._run(item.session)
        if self.problem is not None:
            raise RunProblem(self.problem)
        stored = self.results.get(self.keys.get(item.nodeid, ""))
        if stored is None:
            assert self.outcome is not None
            raise RunProblem(
                f"no stored result for this conversation: run {self.outcome.id} is {self.outcome.record.status} "
                f"(finish it with: simulator runs resume {self.outcome.id})"
            )
        return stored

    def _run_on_worker(self, item: SuiteCase) -> StoredResult:
        """``item``'s conversation, run on this xdist worker into the session's one run (refused where xdist
        would run it on every worker)."""
        from simulator import SimulatorError
        from simulator.pytest_xdist import DIST_KEY, EACH_REFUSED, run_item

        if (self.workerinput or {}).get(DIST_KEY) == "each":
            raise RunProblem(EACH_REFUSED)
        if self.xdist_run_id is None:
            raise RunProblem(
                "this pytest-xdist worker was given no Simulator run id: its controller runs without the simulator "
                "plugin; load it in the controller too (drop -p no:simulator), or run without -n"
            )
        if self.selection is None and self.problem is None:
            try:
                self.selection, order = self._select(item.session)
            except SimulatorError as exc:
                self.problem = f"the Simulator run could not run: {exc}"
            else:
                self.plan_items = dict(zip([case.nodeid for case in order], self.selection.items, strict=True))
        if self.problem is not None:
            raise RunProblem(self.problem)
        assert self.selection is not None
        planned = self.plan_items[item.nodeid]
        if planned.key in self.results:  # asked again (a rerun plugin): the conversation ran once
            return self.results[planned.key]
        try:
            stored = run_item(self.db, self.xdist_run_id, self.selection, planned)
        except SimulatorError as exc:
            raise RunProblem(f"the Simulator run could not run this conversation: {exc}") from None
        if stored is None:
            raise RunProblem(
                f"no stored result for this conversation; run the rest of run {self.xdist_run_id} with: "
                f"simulator runs resume {self.xdist_run_id}"
            )
        self.results[planned.key] = stored
        return stored

    def _select(self, session: pytest.Session) -> tuple[PlannedRun, list[SuiteCase]]:
        """The session's selected items as one plan (the plans of their files, narrowed to them, combined), and
        the items in the order of its plan items."""
        from simulator import combine

        selected: dict[SuiteFile, list[SuiteCase]] = {}
        for item in session.items:
            if isinstance(item, SuiteCase) and isinstance(item.parent, SuiteFile):
                selected.setdefault(item.parent, []).append(item)
        plans: list[PlannedRun] = []
        order: list[SuiteCase] = []
        for file, items in selected.items():
            assert file.planned is not None
            plans.append(dataclasses.replace(file.planned, items=[item.plan_item for item in items]))
            order.extend(items)
        return combine(plans), order

    def _run(self, session: pytest.Session) -> None:
        """Run every selected item in one run."""
        from simulator import RunStarted, SimulatorError, run

        def on_event(event: Any) -> None:
            if isinstance(event, RunStarted):
                self.started = (event.record.id, event.store_path)

        try:
            planned, order = self._select(session)
            self.keys = {item.nodeid: planned_item.key for item, planned_item in zip(order, planned.items, strict=True)}
            self.outcome = run(planned, db=self.db, note="pytest", on_event=on_event)
            self.results = {stored.key: stored for stored in self.outcome.results()}
        except SimulatorError as exc:
            self.problem = f"the Simulator run could not run: {exc}"

    def report_command(self, run_id: str) -> str:
        """The command that writes run ``run_id`` as a report, with the session's run store."""
        return f"simulator report {run_id}" + (f" --db {self.db}" if self.db is not None else "")

    def run_fixture(self, suites: Any, **options: Any) -> RunOutcome:
        """What the ``simulator_run`` fixture does: a run with the session's options as defaults."""
        from simulator import run

        outcome = run(suites, db=self.db, **{**self.options, **options})
        self.fixture_runs.append(outcome)
        return outcome


_STATE = pytest.StashKey[SessionRun]()


@pytest.fixture
def simulator_run(pytestconfig: pytest.Config) -> Callable[..., RunOutcome]:
    """Run suites from a test through the public run API (:func:`simulator.run`): ``simulator_run(paths,
    cases=[...], repeat=2, ...)`` returns the stored :class:`~simulator.runner.RunOutcome`. The session's
    ``--sim-*`` options are the defaults, and the run is stored in the session's run store."""
    return pytestconfig.stash[_STATE].run_fixture


@pytest.hookimpl(optionalhook=True)
def pytest_configure_node(node: Any) -> None:
    """pytest-xdist's controller, starting a worker: the id of the session's one run, the same for every worker."""
    from simulator.pytest_xdist import DIST_KEY, RUN_ID_KEY, choose_run_id

    state = node.config.stash[_STATE]
    if state.xdist_run_id is None:
        state.xdist_run_id = choose_run_id()
    node.workerinput[RUN_ID_KEY] = state.xdist_run_id
    node.workerinput[DIST_KEY] = node.config.getoption("dist", None)  # a worker's own option reads "no"


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    """pytest-xdist's controller, its workers done: their conversations put together as the session's one run."""
    from simulator import SimulatorError
    from simulator.pytest_xdist import merge_parts

    state = session.config.stash.get(_STATE, None)
    if state is None or state.workerinput is not None or state.xdist_run_id is None:
        return
    try:
        state.outcome = merge_parts(state.db, state.xdist_run_id, time.monotonic() - state.began)
    except SimulatorError as exc:
        state.problem = (
            f"the conversations of the pytest-xdist workers could not be stored as run {state.xdist_run_id}: {exc}"
        )


def pytest_terminal_summary(terminalreporter: Any, exitstatus: int, config: pytest.Config) -> None:
    """Where the session's runs are stored, and the command that reports each."""
    state = config.stash.get(_STATE, None)
    if state is None:
        return
    runs: list[tuple[str, Path, str]] = []
    if state.outcome is not None:
        runs.append((state.outcome.id, state.outcome.store_path, state.outcome.record.status))
    elif state.started is not None:
        runs.append((*state.started, "interrupted"))
    runs.extend((outcome.id, outcome.store_path, outcome.record.status) for outcome in state.fixture_runs)
    if not runs and state.merge_problem is None:
        return
    terminalreporter.section("simulator")
    if state.merge_problem is not None:
        terminalreporter.write_line(_safe(state.merge_problem))
    for run_id, store_path, status in runs:
        line = f"simulator run {run_id} stored in {store_path}; {state.report_command(run_id)}"
        if status != "completed":
            db = f" --db {state.db}" if state.db is not None else ""
            line += f" (run {status}: finish it with simulator runs resume {run_id}{db})"
        terminalreporter.write_line(_safe(line))
