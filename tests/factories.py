"""Builders the tests share: run records, stored results and steps with defaults that say nothing, and one event
loop per call for async code.

A test gives what it is about and leaves the rest to the defaults; data a snapshot or an assertion depends on
stays in the test module and is passed in.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable, Coroutine, Sequence
from datetime import UTC, datetime
from typing import Any, TypeVar

from simulator.fence import read_sections
from simulator.models import Suite
from simulator.models.run import RunRecord, RunSettings, StoredResult, SuiteSnapshot
from simulator.models.scores import CaseResult, Outcome
from simulator.models.transcript import CaseKind, StepOutcome, StepStatus, Transcript

R = TypeVar("R")

#: The time every record and result gets unless a test gives one.
T0 = datetime(2026, 1, 1, tzinfo=UTC)


def run(coro: Coroutine[Any, Any, R]) -> R:
    """Run ``coro`` to its end in a new event loop (pytest-asyncio is not a dependency)."""
    return asyncio.run(coro)


async def no_sleep(delay: float) -> None:
    """An injected sleep that does not wait (retries and back-off run at once)."""


def scenario_suite(name: str, case: str = "placeholder", goal: str = "say hello") -> Suite:
    """A suite of one scenario case: what a run's snapshot needs when the test is about results."""
    return Suite.model_validate({"name": name, "cases": [{"name": case, "kind": "scenario", "goal": goal}]})


def make_run(
    run_id: str,
    *suites: str | Suite | SuiteSnapshot,
    created: datetime = T0,
    suite_hash: str = "hash",
    settings: RunSettings | None = None,
    **fields: Any,
) -> RunRecord:
    """A run record whose snapshot holds ``suites``, in order: a name stands for :func:`scenario_suite` of that
    name and a suite is written as ``<name>.yaml``. Any other field of the record is given by keyword."""
    snapshot = [
        suite
        if isinstance(suite, SuiteSnapshot)
        else SuiteSnapshot(
            path=f"{suite if isinstance(suite, str) else suite.name}.yaml",
            suite=scenario_suite(suite) if isinstance(suite, str) else suite,
        )
        for suite in suites
    ]
    return RunRecord(
        id=run_id,
        created=created,
        suite_hash=suite_hash,
        snapshot=snapshot,
        settings=settings if settings is not None else RunSettings(),
        **fields,
    )


def make_step(index: int, label: str, status: StepStatus, rationale: str = "", **fields: Any) -> StepOutcome:
    """The outcome of one step of a simulation; any other field of it is given by keyword."""
    return StepOutcome.model_validate(
        {"index": index, "label": label, "status": status, "rationale": rationale, **fields}
    )


def make_result(
    run: RunRecord | str,
    suite: int | str,
    case: str,
    outcome: Outcome = "pass",
    *,
    kind: CaseKind = "simulation",
    persona: str | None = None,
    repeat: int = 0,
    steps: Sequence[StepOutcome] = (),
    reasons: Sequence[str] = (),
    transcript: Transcript | None = None,
    result: CaseResult | None = None,
    key: str | None = None,
    finished: datetime = T0,
    duration_s: float = 0.0,
) -> StoredResult:
    """A stored result of ``case`` in the run ``run`` (a record, or its id), in its suite ``suite`` (an index in
    the snapshot, or a suite's name when ``run`` is a record).

    The case result is built from ``kind``, ``steps`` and ``reasons`` (an otherwise empty transcript) unless
    ``transcript`` or the whole ``result`` is given. The key is the plan's, ``suite:case:persona:repeat``.
    """
    run_id = run if isinstance(run, str) else run.id
    if isinstance(suite, str):
        if isinstance(run, str):
            raise TypeError("a suite given by name needs the run record, not its id")
        index = next(i for i, snap in enumerate(run.snapshot) if snap.suite.name == suite)
    else:
        index = suite
    if result is None:
        if transcript is None:
            transcript = Transcript(case=case, kind=kind, persona=persona, steps=list(steps))
        result = CaseResult(
            case=case,
            kind=transcript.kind,
            persona=persona,
            repeat=repeat,
            outcome=outcome,
            reasons=list(reasons),
            transcript=transcript,
        )
    return StoredResult(
        run_id=run_id,
        key=key if key is not None else f"{index}:{case}:{persona or '-'}:{repeat}",
        suite=index,
        case=case,
        persona=persona,
        repeat=repeat,
        outcome=outcome,
        duration_s=duration_s,
        finished=finished,
        result=result,
    )


# -- reading judge requests as a model would --------------------------------------------------------------------


def section(prompt: str, name: str) -> str:
    """The text of the fenced section ``name`` of a request (``<name-TOKEN>`` ... ``</name-TOKEN>``)."""
    sections = read_sections(prompt)
    assert name in sections, f"no section {name!r} in the request; its sections: {sorted(sections)}"
    return sections[name]


def events_in(prompt: str, name: str = "conversation") -> list[dict[str, Any]]:
    """The JSON events of the fenced section ``name``, one per line."""
    return [json.loads(line) for line in section(prompt, name).splitlines() if line.strip()]


def judged_turns(prompt: str, role: str = "agent") -> list[int]:
    """The numbers of the turns a batched request marks for judging (``"judge": true``), by ``role``'s events."""
    numbers: list[int] = []
    for event in events_in(prompt):
        if event.get("judge") and event["role"] == role and event["turn"] not in numbers:
            numbers.append(event["turn"])
    return numbers


def agent_said(prompt: str) -> list[str]:
    """The agent's messages in the fenced conversation of a judge request."""
    return [event["text"] for event in events_in(prompt) if event["role"] == "agent"]


def quoting_the_agent(reply: dict[str, Any]) -> Callable[[list[dict[str, Any]]], dict[str, Any]]:
    """A fake judge's reply (a pass) that quotes the last agent message of the conversation it is shown as its
    evidence, as a judge model must."""
    return lambda messages: {**reply, "quote": agent_said(str(messages[-1]["content"]))[-1]}


def review_reply(reply: dict[str, Any]) -> dict[str, Any]:
    """A conversation review's reply written with a verdict object per turn (``turn``, ``verdict``, ``claim``,
    ``reason``; ``user_turns`` with ``invented``) in the shape the review asks for: a bare verdict per turn, the
    claim and reason of each unsupported one in ``claims``, each invented user fact in ``invented``. Keys it does
    not know (``goal``) are kept, and so is what a verdict object lacks (a malformed reply stays malformed)."""
    shaped = {key: value for key, value in reply.items() if key not in ("turns", "user_turns")}
    turns = reply.get("turns", [])
    shaped["turns"] = [{key: t[key] for key in ("turn", "verdict") if key in t} for t in turns]
    shaped["claims"] = [
        {key: t[key] for key in ("turn", "claim", "reason") if key in t}
        for t in turns
        if t.get("verdict") == "unsupported"
    ]
    if "user_turns" in reply:
        shaped["invented"] = [
            {key: u[key] for key in ("turn", "fact", "reason") if key in u}
            for u in reply["user_turns"]
            if u.get("invented")
        ]
    return shaped
