"""Faults on purpose: declared faults answer tool calls (error, timeout, another result) at a seeded rate, on the
Nth call or on every call; every view shows them; the summary shows outcome by fault; personas misreport on
purpose without it counting as the simulated user's slip."""

from __future__ import annotations

import io
import json
import shutil
from pathlib import Path
from typing import Any

import pytest
from pydantic import ValidationError

import simulator
from simulator.errors import ConfigErrors
from simulator.judges.fidelity import check_fidelity, user_brief_text
from simulator.llm import FakeScript, LLMClient
from simulator.loading import load_suite
from simulator.models import Fault, Misreport, ModelRoles, Persona, ToolDeclaration, ToolFake, ToolFault
from simulator.models.run import RunRecord, StoredResult
from simulator.models.transcript import Transcript, UserEvent
from simulator.reports.html import render_html
from simulator.reports.json_export import render_json
from simulator.reports.junit import render_junit
from simulator.reports.markdown import render_markdown
from simulator.reports.run_text import fault_lines
from simulator.reports.tabular import render_csv, render_xlsx
from simulator.reports.transcript_text import transcript_lines
from simulator.tool_faults import fault_entries
from simulator.tools import ToolRouter
from simulator.user import LLMUser, ScriptedUser, UserTurnRequest
from tests.factories import run

ROOT = Path(__file__).resolve().parent.parent
FAKES = [("suite tool_fakes[0]", ToolFake(tool="lookup", result={"status": "shipped"}))]


def router(*faults: dict[str, Any], seed: int = 0, **options: Any) -> ToolRouter:
    entries = fault_entries(suite_faults=[ToolFault.model_validate(fault) for fault in faults])
    return ToolRouter(fakes=options.pop("fakes", FAKES), faults=entries, seed=seed, **options)


def faulted(tools: ToolRouter, calls: int, name: str = "lookup", **arguments: Any) -> list[bool]:
    return [run(tools.route(name, {"n": i, **arguments})).fault is not None for i in range(calls)]


# -- effects and when they fire ------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("effect", "status", "error", "result"),
    [
        ({"error": "database down"}, "failed", "database down", None),
        ({"timeout": True}, "failed", "the tool 'lookup' did not answer in time (timed out)", None),
        ({"result": {"status": "lost"}}, "faked", None, {"status": "lost"}),
        ({"result": None}, "faked", None, None),
    ],
)
def test_each_effect_answers_the_call_and_says_it_was_injected(
    effect: dict[str, Any], status: str, error: str | None, result: Any
) -> None:
    record = run(router({"tool": "lookup", **effect}).route("lookup", {"id": 1}))
    assert (record.status, record.error, record.result) == (status, error, result)
    assert record.fault is not None
    assert record.fault.startswith("suite faults[0]: ")
    assert record.fake is None  # the fake that would have answered did not


def test_a_timeout_never_waits() -> None:
    # A real wait would hit the router's bound; the injected timeout answers at once.
    record = run(router({"tool": "lookup", "timeout": True}, timeout=0.001).route("lookup", {}))
    assert record.duration_ms < 1000
    assert record.status == "failed"


def test_a_seeded_rate_faults_the_same_calls_with_the_same_seed_and_others_with_another() -> None:
    fault = {"tool": "lookup", "error": "down", "rate": 0.5}
    first = faulted(router(fault, seed=11), 40)
    assert first == faulted(router(fault, seed=11), 40)
    assert first != faulted(router(fault, seed=12), 40)
    assert 8 < sum(first) < 32  # about half


@pytest.mark.parametrize(("rate", "expected"), [(0.0, 0), (1.0, 10)])
def test_a_rate_of_0_never_fires_and_1_always(rate: float, expected: int) -> None:
    assert sum(faulted(router({"tool": "lookup", "error": "x", "rate": rate}), 10)) == expected


def test_on_call_faults_only_the_tools_nth_call() -> None:
    tools = router(
        {"tool": "lookup", "error": "down", "on_call": 2}, fakes=[*FAKES, ("b", ToolFake(tool="b", result=1))]
    )
    run(tools.route("b", {}))  # another tool's call does not count
    assert faulted(tools, 4) == [False, True, False, False]


def test_a_resumed_conversation_keeps_counting_its_earlier_calls() -> None:
    tools = router({"tool": "lookup", "error": "down", "on_call": 2})
    earlier = run(router().route("lookup", {}))
    tools.remember([earlier])
    assert faulted(tools, 2) == [True, False]


@pytest.mark.parametrize(
    ("match", "arguments", "expected"),
    [
        ("subset", {"id": "A"}, True),
        ("subset", {"id": "B"}, False),
        ("exact", {"id": "A"}, False),  # the call has `n` too
    ],
)
def test_arguments_narrow_a_fault_as_they_narrow_a_fake(match: str, arguments: dict[str, Any], expected: bool) -> None:
    tools = router({"tool": "lookup", "error": "down", "arguments": arguments, "match": match})
    assert faulted(tools, 1, id="A") == [expected]


def test_case_faults_come_before_suite_faults_before_the_tools_own_and_star_is_every_tool() -> None:
    declared = [ToolDeclaration(name="lookup", faults=[Fault(error="tool's own")]), ToolDeclaration(name="other")]
    entries = fault_entries(
        [ToolFault(tool="lookup", error="case's", on_call=1)],
        [ToolFault(tool="*", error="suite's", on_call=2)],
        declared,
    )
    tools = ToolRouter(declared=declared, faults=entries)
    errors = [run(tools.route("lookup", {})).error for _ in range(3)]
    assert errors == ["case's", "suite's", "tool's own"]
    assert run(tools.route("other", {})).error != "suite's"  # other's first call
    assert run(tools.route("other", {})).error == "suite's"


def test_a_live_tool_is_never_faulted() -> None:
    tools = router({"tool": "lookup", "error": "down"}, mode="live", functions={"lookup": lambda: {"ok": True}})
    record = run(tools.route("lookup", {}))
    assert (record.status, record.fault, record.result) == ("executed", None, {"ok": True})


@pytest.mark.parametrize(
    ("fault", "message"),
    [
        ({"tool": "x"}, "a fault needs one effect"),
        ({"tool": "x", "error": "a", "timeout": True}, "this one sets error and timeout"),
        ({"tool": "x", "error": "a", "result": 1}, "this one sets error and result"),
        ({"tool": "x", "error": "a", "rate": 0.5, "on_call": 2}, "not both"),
        ({"tool": "x", "error": "a", "rate": 1.5}, "less than or equal to 1"),
        ({"tool": "x", "error": "a", "on_call": 0}, "greater than or equal to 1"),
        ({"tool": "x", "timeout": False}, "Input should be True"),
    ],
)
def test_a_fault_that_says_nothing_clear_is_rejected(fault: dict[str, Any], message: str) -> None:
    with pytest.raises(ValidationError, match=message):
        ToolFault.model_validate(fault)


def test_a_stored_fault_reads_back_the_same() -> None:
    fault = ToolFault(tool="lookup", error="down", rate=0.25)
    assert ToolFault.model_validate(fault.model_dump(mode="json")) == fault
    assert "rate" not in Fault(result={"a": 1}).model_dump(mode="json")  # unused fields are left out


def _suite(tmp_path: Path, text: str) -> Path:
    shutil.copy(ROOT / "suites" / "demo" / "agent.yaml", tmp_path / "agent.yaml")
    path = tmp_path / "suite.yaml"
    path.write_text(text, encoding="utf-8")
    return path


def test_a_fault_on_an_undeclared_tool_is_a_located_error(tmp_path: Path) -> None:
    path = _suite(
        tmp_path,
        "name: s\nfaults:\n  - tool: lookup_ordr\n    error: down\ncases:\n"
        "  - {name: c, kind: scenario, goal: g, faults: [{tool: refund, timeout: true}]}\n",
    )
    with pytest.raises(ConfigErrors) as caught:
        load_suite(path)
    text = str(caught.value)
    assert "faults[0].tool" in text
    assert "did you mean 'lookup_order'" in text
    assert "suite.yaml:3:11" in text
    assert "cases[0].faults[0].tool" in text


# -- a run with faults and repeats, and every view of it ------------------------------------------------------------

SUITE = """\
name: robustness
repeats: 8
faults:
  - tool: lookup_order
    error: order database unavailable
    rate: 0.5
tool_fakes:
  - tool: lookup_order
    result: {order_id: ORD-10042, status: shipped, carrier: UPS, estimated_delivery: "2026-12-03"}
cases:
  - name: status
    kind: simulation
    steps:
      - goal: learn where the order is
        say: ["Where is my order ORD-10042?"]
        max_turns: 1
        checks:
          - must_contain: [UPS]
"""

FAULT = "suite faults[0]: error 'order database unavailable' (rate 0.5)"


@pytest.fixture(scope="module")
def faulted_run(tmp_path_factory: pytest.TempPathFactory) -> tuple[RunRecord, list[StoredResult]]:
    folder = tmp_path_factory.mktemp("faults")
    outcome = simulator.run(_suite(folder, SUITE), db=folder / "runs.db", seed=7)
    return outcome.record, outcome.results()


def test_outcome_by_fault_counts_the_conversations_it_happened_in(
    faulted_run: tuple[RunRecord, list[StoredResult]],
) -> None:
    record, results = faulted_run
    hit = [r for r in results if any(call.fault for call in r.result.transcript.tool_calls())]
    assert 0 < len(hit) < len(results)  # a seeded rate: some repeats, not all
    assert all(r.outcome == "fail" for r in hit)
    assert all(r.outcome == "pass" for r in results if r not in hit)
    assert record.totals is not None
    [fault] = record.totals.faults
    assert (fault.tool, fault.fault, fault.total, fault.failed, fault.passed, fault.calls) == (
        "lookup_order",
        FAULT,
        len(hit),
        len(hit),
        0,
        len(hit),
    )
    [case] = record.totals.cases
    assert case.stats.k == 8
    assert case.stats.pass_hat_k == 0
    assert case.stats.label == "flaky"


def test_the_same_seed_faults_the_same_repeats(
    tmp_path: Path, faulted_run: tuple[RunRecord, list[StoredResult]]
) -> None:
    again = simulator.run(_suite(tmp_path, SUITE), db=tmp_path / "runs.db", seed=7).results()
    assert [r.outcome for r in again] == [r.outcome for r in faulted_run[1]]


def test_every_view_shows_the_fault_beside_the_call_and_outcome_by_fault(
    faulted_run: tuple[RunRecord, list[StoredResult]],
) -> None:
    record, results = faulted_run
    stored = next(r for r in results if r.outcome == "fail")
    terminal = "\n".join(line.text for line in transcript_lines(stored.result.transcript))
    assert f"[failed, injected fault {FAULT}]" in terminal
    assert fault_lines(record)[0] == "Outcome by injected fault:"
    assert FAULT in fault_lines(record)[1]
    markdown = render_markdown(record, results)
    assert "## Outcome by injected fault" in markdown
    assert "⚡ injected fault suite faults\\[0\\]" in markdown
    html = render_html(record, results)
    assert "<h2>Outcome by injected fault</h2>" in html
    assert "⚡ injected fault suite faults[0]" in html
    assert f"injected fault {FAULT}" in render_junit(record, results).replace("&#x27;", "'").replace("&apos;", "'")
    document = json.loads(render_json(record, results))
    assert document["run"]["totals"]["faults"][0]["fault"] == FAULT
    calls = [
        c for r in document["results"] for e in r["result"]["transcript"]["events"] for c in e.get("tool_calls", [])
    ]
    assert FAULT in [call.get("fault") for call in calls]
    csv_text = render_csv(record, results)
    assert "faults" in csv_text.splitlines()[0].split(",")
    assert f"lookup_order: {FAULT}" in csv_text


def test_the_workbook_has_a_faults_sheet(faulted_run: tuple[RunRecord, list[StoredResult]]) -> None:
    from openpyxl import load_workbook

    workbook = load_workbook(io.BytesIO(render_xlsx(*faulted_run)))
    rows = list(workbook["Faults"].values)
    assert rows[0][:3] == ("tool", "fault", "conversations")
    assert rows[1][:2] == ("lookup_order", FAULT)
    assert "faults" in next(workbook["Cases"].values)


def test_a_run_without_faults_has_no_fault_column_section_or_sheet(tmp_path: Path) -> None:
    without = SUITE.replace(
        "faults:\n  - tool: lookup_order\n    error: order database unavailable\n    rate: 0.5\n", ""
    )
    assert "faults" not in without
    outcome = simulator.run(_suite(tmp_path, without), db=tmp_path / "runs.db", seed=7)
    record, results = outcome.record, outcome.results()
    assert record.totals is not None
    assert record.totals.faults == []
    assert "faults" not in render_csv(record, results).splitlines()[0].split(",")
    assert "injected fault" not in render_markdown(record, results)
    assert '"faults"' not in render_json(record, results)


# -- personas that misreport on purpose ------------------------------------------------------------------------------

ROUTER_LIE = Misreport(
    claim="You say you already restarted the router, although you did not.",
    say="I already restarted the router.",
    when_asked=["restart"],
)
PERSONA = Persona(name="fibber", personality="Wants it fixed now.", misreports=[ROUTER_LIE])


def _request(persona: Persona | None, conversation: list[tuple[Any, str]], kind: Any = "scenario") -> UserTurnRequest:
    return UserTurnRequest(
        case_name="c",
        case_kind=kind,
        goal="get the internet working",
        response_guide=None,
        say=[],
        turn_in_step=len(conversation),
        session={},
        persona=persona,
        conversation=conversation,
    )


@pytest.mark.parametrize(
    ("misreport", "agent", "said"),
    [
        (ROUTER_LIE, "Have you tried restarting the router?", True),
        (ROUTER_LIE, "Which plan are you on?", False),
        (Misreport(claim="c", say="I paid already."), None, True),  # no words: with the first message
        (Misreport(claim="c"), "Have you restarted it?", False),  # no line: only the user model misreports
    ],
)
def test_the_scripted_user_says_a_misreport_when_it_is_due(misreport: Misreport, agent: str | None, said: bool) -> None:
    persona = PERSONA.model_copy(update={"misreports": [misreport]})
    conversation: list[tuple[Any, str]] = [("user", "It is down."), ("agent", agent)] if agent else []
    reply = run(ScriptedUser().next_message(_request(persona, conversation)))
    assert reply.text is not None
    assert (misreport.say is not None and misreport.say in reply.text) == said
    assert reply.misreport == (misreport.say if said else None)
    without = run(ScriptedUser().next_message(_request(None, conversation)))
    assert without.misreport is None


def test_the_llm_user_is_told_to_misreport_and_its_turns_say_so() -> None:
    script = FakeScript().enqueue("user", {"message": "I restarted it already.", "done": False, "reason": "lying"})
    user = LLMUser(LLMClient(ModelRoles.model_validate({"user": "fake/user"}), fake_script=script))
    reply = run(user.next_message(_request(PERSONA, [("agent", "Did you restart the router?")])))
    assert reply.misreport == ROUTER_LIE.claim
    prompt = script.requests[0].messages[0]["content"]
    assert "What you claim although it is not true" in prompt
    assert ROUTER_LIE.claim in prompt
    unpersona = FakeScript().enqueue("user", {"message": "hi", "done": False, "reason": ""})
    plain = LLMUser(LLMClient(ModelRoles.model_validate({"user": "fake/user"}), fake_script=unpersona))
    assert run(plain.next_message(_request(None, []))).misreport is None
    assert "claim although" not in unpersona.requests[0].messages[0]["content"]


def test_a_misreport_is_given_to_the_fidelity_checks_not_a_slip() -> None:
    from simulator.models import ScenarioCase

    case = ScenarioCase(name="c", kind="scenario", goal="get the internet working")
    transcript = Transcript(case="c", kind="scenario", persona="fibber")
    assert f"misreports on purpose: {ROUTER_LIE.claim}" in user_brief_text(case, transcript, PERSONA)
    event = UserEvent(turn=1, text="I already restarted the router.", source="llm", misreport=ROUTER_LIE.claim)
    transcript.events.append(event)
    assert check_fidelity(case, transcript, PERSONA, []).findings == []


def test_a_misreport_shows_on_the_turn_in_the_transcript() -> None:
    transcript = Transcript(
        case="c",
        kind="scenario",
        events=[UserEvent(turn=1, text="I restarted it.", source="scripted", misreport="I restarted it.")],
    )
    text = "\n".join(line.text for line in transcript_lines(transcript))
    assert "misreports on purpose (persona): I restarted it." in text


@pytest.mark.parametrize(
    ("suite_seed", "given", "expected"),
    [(41, None, 41), (41, 7, 7), (None, 7, 7)],
    ids=["the-suite-seed", "--seed-wins", "no-suite-seed"],
)
def test_the_suites_seed_is_the_runs_seed_unless_one_is_given(
    tmp_path: Path, suite_seed: int | None, given: int | None, expected: int
) -> None:
    # A seeded fault rate reproduces from the suite alone: its `seed:` plans the run when no --seed is given.
    seed_line = f"seed: {suite_seed}\n" if suite_seed is not None else ""
    suite = tmp_path / "suite.yaml"
    suite.write_text(
        "name: s\nagent: {type: python, callable: 'simulator.demo.shop:respond'}\n"
        f"{seed_line}cases:\n  - {{name: c, kind: scenario, goal: g, say: [hi]}}\n",
        encoding="utf-8",
    )
    planned = simulator.plan(str(suite)) if given is None else simulator.plan(str(suite), seed=given)
    assert planned.settings.seed == expected
