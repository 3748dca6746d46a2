"""Coverage of a run: what its conversations exercised of what its suites declare, computed streaming.

:class:`CoverageBuilder` reads the run record (plan and suite snapshot) once, then takes the stored results one
at a time (``add``) and keeps only counts: memory grows with the run's cases, steps, tools and expectations,
never with its conversations. :func:`run_coverage` is the one-call form. The run summary holds the result
(:func:`simulator.metrics.run_summary` builds both in one pass when the run finishes); the figures and the
percentage are defined in :mod:`simulator.models.coverage`.

When is an expectation *evaluated* in a conversation? When the conversation reached what it is checked on
(its step was worked on, its golden turn got a reply, the conversation got any reply at all) and, for an
expectation only a judge model can decide (a success criterion, an expected message, a reference answer, an
expectation in words), a judge model answered in that conversation (no check of it says *not judged*).

Sits below :mod:`simulator.metrics` (which calls it) and imports only models and kinds: the runner computes it when
a run finishes, and the runner may not import ``analysis`` (a layer above it).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import get_args

from simulator.kinds import Where, WrittenCriterion, expectation_questions, kind_of
from simulator.models import Case, ExpectationSpec
from simulator.models.case import KeywordTerm, TurnExpectation, normalize_reference
from simulator.models.coverage import (
    CoverageCell,
    CoverageRatio,
    ExpectationUse,
    PersonaUse,
    RunCoverage,
    StepReach,
    ToolUse,
    WorldCollectionUse,
)
from simulator.models.run import RunRecord, StoredResult
from simulator.models.scores import Outcome
from simulator.models.states import not_judged
from simulator.models.transcript import CheckEvent, StepStatus, Transcript
from simulator.models.world import StateExpectation, WorldChange, WorldOperation, WorldSpec
from simulator.safety import redacted_and_shortened

__all__ = ["CoverageBuilder", "run_coverage"]

#: Every outcome a conversation can have, in the order the model lists them (a new outcome is one more count).
OUTCOMES: tuple[Outcome, ...] = get_args(Outcome)
#: Step statuses in which the step was worked on.
_REACHED: frozenset[StepStatus] = frozenset({"complete", "incomplete", "unsure"})
#: A step status as the :class:`StepReach` count it adds to.
_REACH_COUNT: dict[StepStatus, str] = {
    "complete": "complete",
    "incomplete": "incomplete",
    "unsure": "unsure",
    "blocked": "blocked",
    "not_reached": "not_reached",
    "not_attempted": "not_reached",
}
_LABEL_CHARS = 120

#: What an expectation is checked on: ("step", index), ("turn", number), ("goal", 0) or ("conversation", 0).
Scope = tuple[str, int]


@dataclass
class _Expectation:
    """One expectation of a case, where it is written, what it is checked on, and its running count."""

    where: str
    label: str
    scopes: list[Scope]
    needs_judge: bool
    reached: int = 0
    evaluated: int = 0


@dataclass
class _CaseTally:
    """What the builder keeps for one planned case: its kind, steps and expectations, and their counts."""

    case: Case
    conversations: int = 0
    steps: list[dict[str, int]] = field(default_factory=list)
    expectations: list[_Expectation] = field(default_factory=list)


class CoverageBuilder:
    """A run's coverage, built one stored result at a time (see the module docstring); ``build`` at the end."""

    def __init__(self, record: RunRecord) -> None:
        self._cells: dict[tuple[int, str, str | None], tuple[int, dict[Outcome, int]]] = {}
        self._cases: dict[tuple[int, str], _CaseTally] = {}
        for item in record.plan:
            key = (item.suite, item.case, item.persona)
            planned, outcomes = self._cells.get(key, (0, dict.fromkeys(OUTCOMES, 0)))
            self._cells[key] = (planned + 1, outcomes)
            if (item.suite, item.case) not in self._cases:
                case = _case_named(record, item.suite, item.case)
                if case is not None:
                    self._cases[item.suite, item.case] = _tally_for(case)
        self._tools: dict[str, list[int]] = {}
        self._personas: dict[str, list[int]] = {}
        for index, snapshot in enumerate(record.snapshot):
            agent = snapshot.suite.agent
            # A snapshot's agent is resolved (a config); only a suite stored unresolved still names a file.
            for tool in [] if agent is None or isinstance(agent, str) else agent.tools:
                self._tools.setdefault(tool.name, []).append(index)
            for name in snapshot.personas:
                self._personas.setdefault(name, []).append(index)
        self._calls: dict[str, int] = {}
        self._played: dict[str, int] = {}
        self._world = _WorldTally(record, self._cases)

    def add(self, stored: StoredResult) -> None:
        """Count one stored conversation."""
        key = (stored.suite, stored.case, stored.persona)
        planned, outcomes = self._cells.get(key, (0, dict.fromkeys(OUTCOMES, 0)))
        outcomes[stored.counted_outcome] = outcomes.get(stored.counted_outcome, 0) + 1
        self._cells[key] = (planned, outcomes)
        if stored.persona is not None:
            self._played[stored.persona] = self._played.get(stored.persona, 0) + 1
        transcript = stored.result.transcript
        for call in transcript.tool_calls():
            self._calls[call.name] = self._calls.get(call.name, 0) + 1
        self._world.add(stored.suite, transcript)
        tally = self._cases.get((stored.suite, stored.case))
        if tally is None:
            return
        tally.conversations += 1
        statuses = {outcome.index: outcome.status for outcome in transcript.steps}
        for index, counts in enumerate(tally.steps):
            counts[_REACH_COUNT[statuses.get(index, "not_reached")]] += 1
        reached = _reached_scopes(transcript, statuses)
        judged = _judge_answered(stored)
        for expectation in tally.expectations:
            if any(scope in reached for scope in expectation.scopes):
                expectation.reached += 1
                expectation.evaluated += judged or not expectation.needs_judge

    def build(self) -> RunCoverage:
        """The coverage of every result added."""
        cells = [
            CoverageCell(
                suite=suite, case=case, persona=persona, planned=planned, outcomes=outcomes,
                label=_cell_label(planned, outcomes),
            )
            for (suite, case, persona), (planned, outcomes) in self._cells.items()
        ]  # fmt: skip
        steps: list[StepReach] = []
        expectations: list[ExpectationUse] = []
        for (suite, name), tally in self._cases.items():
            kind = kind_of(tally.case)
            for index, counts in enumerate(tally.steps):
                reached = counts["complete"] + counts["incomplete"] + counts["unsure"]
                steps.append(
                    StepReach(
                        suite=suite, case=name, index=index, label=kind.step_label(tally.case, index),
                        conversations=tally.conversations, reached=reached, **counts,
                    )
                )  # fmt: skip
            for item in tally.expectations:
                expectations.append(
                    ExpectationUse(
                        suite=suite, case=name, where=item.where, label=item.label,
                        scope=", ".join(_scope_text(scope) for scope in item.scopes), needs_judge=item.needs_judge,
                        conversations=tally.conversations, evaluated=item.evaluated,
                        reason=None if item.evaluated else _why_not(item, tally),
                    )
                )  # fmt: skip
        tools = [
            ToolUse(name=name, suites=suites, calls=self._calls.get(name, 0))
            for name, suites in sorted(self._tools.items())
        ]
        personas = [
            PersonaUse(name=name, suites=suites, conversations=self._played.get(name, 0))
            for name, suites in sorted(self._personas.items())
        ]
        world = self._world.build()
        return RunCoverage(
            world_ratio=CoverageRatio(
                covered=sum(1 for c in world if c.seeded and c.touched), total=sum(1 for c in world if c.seeded)
            ),
            world=world,
            cells_ratio=CoverageRatio(covered=sum(1 for c in cells if c.runs), total=len(cells)),
            steps_ratio=CoverageRatio(covered=sum(1 for s in steps if s.reached), total=len(steps)),
            tools_ratio=CoverageRatio(covered=sum(1 for t in tools if t.calls), total=len(tools)),
            expectations_ratio=CoverageRatio(
                covered=sum(1 for e in expectations if e.evaluated), total=len(expectations)
            ),
            cells=cells,
            steps=steps,
            tools=tools,
            personas=personas,
            expectations=expectations,
        )


def run_coverage(record: RunRecord, results: Iterable[StoredResult]) -> RunCoverage:
    """The coverage of ``record``'s run over ``results``, read one at a time."""
    builder = CoverageBuilder(record)
    for stored in results:
        builder.add(stored)
    return builder.build()


# -- the worlds: collections read, changed and checked ----------------------------------------------------------


@dataclass
class _CollectionTally:
    """What the builder keeps for one collection: sets bounded by the world's records and fields (each
    conversation has its own copy, so the ids it reads or writes are the seed's or the few it inserts)."""

    suites: set[int] = field(default_factory=set)
    seeded: set[str] = field(default_factory=set)
    is_seeded: bool = False
    fields: set[str] = field(default_factory=set)
    conversations: int = 0
    read: set[str] = field(default_factory=set)
    changed: set[str] = field(default_factory=set)
    fields_read: set[str] = field(default_factory=set)
    all_fields_read: bool = False
    fields_changed: set[str] = field(default_factory=set)
    checked: bool = False
    fields_checked: set[str] = field(default_factory=set)


class _WorldTally:
    """The world part of a run's coverage: the planned cases' worlds and state checks, then what each
    conversation's world tools read and changed."""

    def __init__(self, record: RunRecord, cases: dict[tuple[int, str], _CaseTally]) -> None:
        self._collections: dict[str, _CollectionTally] = {}
        #: Per suite, its agent's declarative world operations by tool name (what a read of theirs returns).
        self._operations: dict[int, dict[str, WorldOperation]] = {}
        seen: set[int] = set()
        for (suite, _), tally in cases.items():
            world = _world_of(record, suite, tally.case)
            if world is None:
                continue
            if id(world) not in seen:  # a suite's world shared by its cases is read once
                seen.add(id(world))
                for name, records in world.collections.items():
                    collection = self._collection(name)
                    collection.is_seeded = True
                    collection.seeded.update(records)
                    for fields in records.values():
                        collection.fields.update(fields)
            for name in world.collections:
                self._collection(name).suites.add(suite)
            for expectation in _state_expectations(tally.case):
                self._checked(expectation, world)
        for index, snapshot in enumerate(record.snapshot):
            agent = snapshot.suite.agent
            tools = [] if agent is None or isinstance(agent, str) else agent.tools
            self._operations[index] = {tool.name: tool.world for tool in tools if tool.world is not None}

    def _collection(self, name: str) -> _CollectionTally:
        return self._collections.setdefault(name, _CollectionTally())

    def _checked(self, expectation: StateExpectation, world: WorldSpec) -> None:
        for item in expectation.records:
            self._collection(item.collection).fields_checked.update([*item.fields, *(item.where or {})])
        for unchanged in expectation.unchanged:
            self._collection(unchanged.collection).fields_checked.update(unchanged.fields or [])
        for count in expectation.counts:
            self._collection(count.collection).fields_checked.update(count.where or {})
        named = expectation.collections() | (set(world.collections) if expectation.nothing_else_changed else set())
        for name in named:
            self._collection(name).checked = True

    def add(self, suite: int, transcript: Transcript) -> None:
        """Count what one conversation's world tools read and changed, and the net diff it left."""
        operations = self._operations.get(suite, {})
        touched: set[str] = set()
        for call in transcript.tool_calls():
            if call.world is None:
                continue
            operation = operations.get(call.name)
            for label in call.world.read:
                name, _, record_id = label.partition("/")
                collection = self._collection(name)
                collection.read.add(record_id)
                projected = operation.fields if operation is not None and operation.collection == name else None
                if projected:
                    collection.fields_read.update(projected)
                else:  # a read without `fields:` (or a Python tool's) returns the whole record
                    collection.all_fields_read = True
                touched.add(name)
            for change in call.world.changes:
                touched.add(self._changed(change))
        for change in transcript.world.changes if transcript.world is not None else []:
            touched.add(self._changed(change))
        for name in touched:
            self._collections[name].conversations += 1

    def _changed(self, change: WorldChange) -> str:
        collection = self._collection(change.collection)
        collection.changed.add(change.id)
        written = list(change.fields) if change.action == "update" else list(change.record or {})
        if change.action != "delete":
            collection.fields_changed.update(written)
            collection.fields.update(written)
        return change.collection

    def build(self) -> list[WorldCollectionUse]:
        """The collections, seeded ones first, each group by name."""
        ordered = sorted(self._collections.items(), key=lambda item: (not item[1].is_seeded, item[0]))
        return [
            WorldCollectionUse(
                name=name, suites=sorted(c.suites), seeded=c.is_seeded, records=len(c.seeded),
                fields=sorted(c.fields), conversations=c.conversations, read=len(c.read), changed=len(c.changed),
                fields_read=sorted(c.fields if c.all_fields_read else c.fields_read & c.fields),
                fields_changed=sorted(c.fields_changed), checked=c.checked, fields_checked=sorted(c.fields_checked),
            )
            for name, c in ordered
        ]  # fmt: skip


def _world_of(record: RunRecord, suite: int, case: Case) -> WorldSpec | None:
    """The world a case's conversations start from: its own collections laid over its suite's."""
    base = record.snapshot[suite].suite.world if 0 <= suite < len(record.snapshot) else None
    return case.world.merged_over(base) if case.world is not None else base


def _state_expectations(case: Case) -> Iterable[StateExpectation]:
    """The case's ``expect_state`` and its steps' (a simulation's)."""
    if case.expect_state is not None:
        yield case.expect_state
    for step in getattr(case, "steps", None) or []:
        if step.expect_state is not None:
            yield step.expect_state


# -- the planned cases: their steps and expectations -------------------------------------------------------------


def _case_named(record: RunRecord, suite: int, name: str) -> Case | None:
    if not 0 <= suite < len(record.snapshot):
        return None
    return next((case for case in record.snapshot[suite].suite.cases if case.name == name), None)


def _tally_for(case: Case) -> _CaseTally:
    kind = kind_of(case)
    steps = [
        dict.fromkeys(("complete", "incomplete", "unsure", "blocked", "not_reached"), 0)
        for _ in range(kind.step_count(case) if kind.covers_steps else 0)
    ]
    return _CaseTally(case=case, steps=steps, expectations=list(_expectations_of(case)))


def _expectations_of(case: Case) -> Iterable[_Expectation]:
    """Every expectation written in ``case``, in the order written: the case's own, then its kind's."""
    referenced: dict[str, list[Scope]] = {}
    for scope in kind_of(case).expectation_scopes(case):
        place: Scope = ("step", scope.step) if scope.step is not None else ("turn", scope.turn or 0)
        for ref in scope.references:
            referenced.setdefault(normalize_reference(ref), []).append(place)
    for index, spec in enumerate(case.expectations):
        scopes = referenced.get(normalize_reference(spec.text), []) if spec.text else []
        yield _of_spec(f"expectations[{index}]", spec, scopes or [("conversation", 0)])
    for written in kind_of(case).criteria_written(case):
        yield from _of_criterion(written)


def _of_criterion(written: WrittenCriterion) -> Iterable[_Expectation]:
    where = _where_text(written.where)
    if written.criteria is not None:
        yield _Expectation(where, _short(written.criteria), [written.part], needs_judge=True)
    if written.check is not None:
        yield _of_spec(where, written.check, [written.part])
    if written.expect is not None:
        yield from _turn_expectations(where, written.expect, [written.part])


def _where_text(where: Where) -> str:
    """``steps[0].checks[1]``: a place in a case as a dotted path."""
    text = ""
    for part in where:
        text += f"[{part}]" if isinstance(part, int) else f".{part}" if text else part
    return text


def _turn_expectations(where: str, expect: TurnExpectation, scope: list[Scope]) -> Iterable[_Expectation]:
    """Each thing a golden turn's ``expect`` checks, as its own expectation."""
    if expect.must_contain:
        yield _Expectation(f"{where}.must_contain", "must_contain: " + _terms(expect.must_contain), scope, False)
    if expect.must_not_contain:
        yield _Expectation(
            f"{where}.must_not_contain", "must_not_contain: " + _terms(expect.must_not_contain), scope, False
        )
    if expect.message is not None:
        yield _Expectation(f"{where}.message", _short(f"message: {expect.message}"), scope, True)
    if expect.reference_answer is not None:
        yield _Expectation(
            f"{where}.reference_answer", _short(f"reference answer: {expect.reference_answer.answer}"), scope, True
        )
    if expect.tool_calls:
        names = ", ".join(call.name for call in expect.tool_calls)
        yield _Expectation(f"{where}.tool_calls", f"tool_calls: {names}", scope, False)
    if expect.handoff is not None:
        yield _Expectation(f"{where}.handoff", f"handoff to {expect.handoff.to}", scope, False)
    if expect.variables:
        yield _Expectation(f"{where}.variables", "variables: " + ", ".join(expect.variables), scope, False)


def _of_spec(where: str, spec: ExpectationSpec, scopes: list[Scope]) -> _Expectation:
    return _Expectation(where, _spec_label(spec), scopes, needs_judge=bool(expectation_questions(where, spec)))


def _spec_label(spec: ExpectationSpec) -> str:
    """The expectation's text, else what it checks."""
    if spec.text:
        return _short(spec.text)
    if spec.tool_call is not None:
        return f"tool_call: {spec.tool_call.name}" + (f" after {spec.after}" if spec.after else "")
    if spec.variable is not None:
        return f"variable: {spec.variable.name}"
    if spec.handoff is not None:
        return f"handoff to {spec.handoff.to}"
    if spec.message is not None:
        return _short(f"message: {spec.message}")
    if spec.must_contain:
        return "must_contain: " + _terms(spec.must_contain)
    return "must_not_contain: " + _terms(spec.must_not_contain or [])


def _terms(terms: Iterable[str | KeywordTerm]) -> str:
    return _short(", ".join(repr(term if isinstance(term, str) else term.term) for term in terms))


def _short(text: str) -> str:
    return redacted_and_shortened(text, _LABEL_CHARS, flat=True)


# -- one conversation ----------------------------------------------------------------------------------------


def _reached_scopes(transcript: Transcript, statuses: dict[int, StepStatus]) -> set[Scope]:
    """What the conversation reached: steps worked on (a scenario's goal is its step 0), golden turns with a
    reply, and the conversation itself when the agent replied at all."""
    reached: set[Scope] = {("step", index) for index, status in statuses.items() if status in _REACHED}
    if ("step", 0) in reached:
        reached.add(("goal", 0))
    replies = transcript.agent_events()
    reached |= {("turn", reply.turn) for reply in replies}
    if replies:
        reached.add(("conversation", 0))
    return reached


def _judge_answered(stored: StoredResult) -> bool:
    """Whether a judge model answered in the conversation: none of its scores or step checks says *not judged*."""
    if any(not_judged(score.reason) for score in stored.result.scores):
        return False
    return not any(
        not_judged(detail.evidence)
        for event in stored.result.transcript.events
        if isinstance(event, CheckEvent)
        for detail in event.details
    )


# -- labels ----------------------------------------------------------------------------------------------------


def _cell_label(planned: int, outcomes: dict[Outcome, int]) -> str:
    """``2/3 pass``; ``1/2 pass, 1 not run`` while conversations are missing; ``not run`` when none finished."""
    runs = sum(outcomes.values())
    if runs == 0:
        return "not run"
    missing = planned - runs
    return f"{outcomes.get('pass', 0)}/{runs} pass" + (f", {missing} not run" if missing > 0 else "")


def _scope_text(scope: Scope) -> str:
    place, number = scope
    if place == "step":
        return f"step {number + 1}"
    if place == "turn":
        return f"turn {number}"
    return place


def _why_not(item: _Expectation, tally: _CaseTally) -> str:
    """Why an expectation was never evaluated, in words."""
    if tally.conversations == 0:
        return "no conversation of the case finished"
    if item.reached == 0 and item.scopes == [("conversation", 0)]:
        return "the agent never replied"
    if item.reached == 0:
        return " or ".join(_scope_text(scope) for scope in item.scopes) + " was never reached"
    return "needs a judge model, and none answered: set models.judge or pass --judge-model"
