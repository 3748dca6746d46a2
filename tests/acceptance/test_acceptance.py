"""Acceptance: verdicts that hold on an agent nobody here wrote.

The agent under test is "Lieferservice", an OpenAI-compatible HTTP server with scripted behaviour
(``_servers.py``: tool calls through the HTTP adapter, a live tool that returns a JSON string, unsupported claims
of a holiday lookup, an extra tool call, a tool that needs approval, a persistent HTTP 500). The simulated user
and the judge of ``mit_modellen.yaml`` are a stub model server reached over HTTP through litellm
(``api_base``). The suites are a native suite, a hosted-format ``evals:`` file and a German ``;`` CSV imported
with ``simulator import csv``; all of them run through the real CLI, once in test mode and once ``--live``
with every persona.

:data:`TABLE` pins the verdict of every case: outcome, a text one of the case's reasons must contain, and the
status of every step. It states the intended behaviour (the four states and the simulation rules of docs/verdicts.md),
not whatever the code does today.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.acceptance._servers import StubServers
from tests.acceptance.conftest import DATA, Project, RunOutput, simulator

ANY = "*"  # a step whose status is not pinned: the step an error happened in (the four states say "—")
USER_ENDED_EARLY = "the simulated user ended the conversation before the agent replied"

# fmt: off
#: (modes, suite file, case) -> (outcome, text one of its reasons contains (case-insensitive), step statuses).
#: modes: "test", "live" or "both" (live runs every persona). Steps: one status per step, in order, for
#: "complete incomplete unsure blocked not_reached" or * (not pinned); None for golden cases (turns, no steps).
TABLE: list[tuple[str, str, str, str, str, str | None]] = [
    # native suite, offline: scripted user, no judge model
    ("both", "lieferung",   "liefertermin_ok",         "pass",   "",                        "complete complete"),
    ("both", "lieferung",   "versand_nicht_kostenlos", "fail",   "'kostenlos'",             "incomplete blocked"),
    ("both", "lieferung",   "klima_ohne_richter",      "unsure", "no judge model",          "unsure complete"),
    ("both", "lieferung",   "agent_stoerung",          "error",  "answered 500",            "complete * not_reached"),
    ("test", "lieferung",   "expressbuchung",          "pass",   "",                        "complete complete"),
    ("live", "lieferung",   "expressbuchung",          "unsure", "approval",                "* not_reached"),
    ("both", "lieferung",   "sperrgut_tarif",          "fail",   "'EUR'",                   "incomplete"),
    ("both", "lieferung",   "reihenfolge_extra",       "pass",   "",                        None),
    ("both", "lieferung",   "genau_extra",             "fail",   "lager_pruefen",           None),
    # hosted agent builders' format (root `evals:`), offline
    ("both", "gehostet",    "feiertage_als_text",      "pass",   "",                        "complete"),
    ("both", "gehostet",    "feiertage_ohne_abfrage",  "fail",   "Feiertagsabfrage",        "complete complete"),
    ("both", "gehostet",    "according_to_our_system", "fail",   "according to our system", "complete"),
    # user and judge are models behind HTTP (the stub model server, through litellm's api_base)
    ("both", "mit_modellen", "richter_bestaetigt",     "pass",   "",                        "complete complete"),
    ("both", "mit_modellen", "richter_unsicher",       "unsure", "Stub-Richter",            "unsure complete"),
    ("both", "mit_modellen", "richter_kaputt",         "error",  "judge",                   "* not_reached"),
    # In a simulation the user cannot end the conversation: its "done" is ignored, the step runs its turns. The
    # user model says "Passt schon, ich bin fertig." twice instead of asking: the failure is its (user_error).
    ("both", "mit_modellen", "nutzer_sagt_fertig",     "user_error", "ended_early",         "incomplete blocked"),
    # A user that ends before the agent said anything failed itself: an error naming the user, never a pass.
    ("both", "mit_modellen", "szenario_nutzer_fertig", "error",  USER_ENDED_EARLY,          "not_reached"),
    ("both", "mit_modellen", "nutzer_kaputt",          "error",  "simulated user",          "* not_reached"),
    # the German `;` CSV, imported with `simulator import csv` (one golden case per row, no tool fakes)
    ("both", "lieferfragen", "preis",                  "pass",   "",                        None),
    ("test", "lieferfragen", "termin",                 "fail",   "28.12.2026",              None),
    ("live", "lieferfragen", "termin",                 "pass",   "",                        None),
    ("test", "lieferfragen", "termin_und_lager",       "fail",   "28.12.2026",              None),
    ("live", "lieferfragen", "termin_und_lager",       "pass",   "",                        None),
    ("both", "lieferfragen", "weihnachten",            "unsure", "no judge model",          None),
    ("both", "lieferfragen", "express",                "fail",   "Feiertagsabfrage",        None),
    ("test", "lieferfragen", "lager",                  "fail",   "vorrätig",                None),
    ("live", "lieferfragen", "lager",                  "pass",   "",                        None),
]
# fmt: on


@dataclass(frozen=True)
class Row:
    mode: str
    file: str
    case: str
    outcome: str
    reason: str
    steps: tuple[str, ...] | None

    @property
    def id(self) -> str:
        return f"{self.mode}-{self.file}-{self.case}"


ROWS = [
    Row(mode, file, case, outcome, reason, tuple(steps.split()) if steps is not None else None)
    for modes, file, case, outcome, reason, steps in TABLE
    for mode in (("test", "live") if modes == "both" else (modes,))
]


def _results(run: RunOutput, file: str, case: str) -> list[dict[str, Any]]:
    return [r for r in run.results() if r["file"] == file and r["case"] == case]


def _verdict(result: dict[str, Any]) -> dict[str, Any]:
    transcript = result["result"]["transcript"]
    return {
        "outcome": result["outcome"],
        "reasons": result["result"]["reasons"],
        "steps": [step["status"] for step in sorted(transcript["steps"], key=lambda s: s["index"])],
        "persona": result["persona"],
    }


def _matches(row: Row, verdict: dict[str, Any]) -> bool:
    if verdict["outcome"] != row.outcome:
        return False
    if row.reason and not any(row.reason.casefold() in reason.casefold() for reason in verdict["reasons"]):
        return False
    if row.steps is not None:
        steps = verdict["steps"]
        if len(steps) != len(row.steps):
            return False
        if any(want not in (ANY, got) for want, got in zip(row.steps, steps, strict=True)):
            return False
    return True


@pytest.mark.parametrize("row", ROWS, ids=lambda row: row.id)
def test_verdict(row: Row, runs: dict[str, RunOutput]) -> None:
    run = runs[row.mode]
    assert run.report, run.describe()
    results = _results(run, row.file, row.case)
    assert results, f"{row.file}/{row.case} was not run in {row.mode} mode"
    wrong = [_verdict(r) for r in results if not _matches(row, _verdict(r))]
    expected = {"outcome": row.outcome, "reason contains": row.reason, "steps": row.steps}
    assert not wrong, f"expected {expected}\nactual {json.dumps(wrong, indent=1, ensure_ascii=False)}"


def test_every_outcome_and_step_status_is_pinned() -> None:
    outcomes = {row.outcome for row in ROWS}
    statuses = {status for row in ROWS for status in row.steps or ()}
    assert outcomes == {"pass", "fail", "unsure", "error", "user_error"}
    assert {"complete", "incomplete", "unsure", "blocked", "not_reached"} <= statuses
    assert any("approval" in row.reason for row in ROWS)


def test_every_case_of_every_file_is_in_the_table(runs: dict[str, RunOutput]) -> None:
    for mode, run in runs.items():
        assert run.report, run.describe()
        ran = {(r["file"], r["case"]) for r in run.results()}
        pinned = {(row.file, row.case) for row in ROWS if row.mode == mode}
        assert ran == pinned, mode


def test_runs_complete_and_exit_1_for_failures(runs: dict[str, RunOutput]) -> None:
    for run in runs.values():
        assert run.exit_code == 1, run.describe()
        assert run.report["run"]["status"] == "completed"


def test_golden_cases_are_not_fanned_out_over_personas(runs: dict[str, RunOutput]) -> None:
    live = runs["live"].results()
    assert live, runs["live"].describe()
    personas = sorted(p.stem for p in (DATA / "lieferservice" / "personas").glob("*.yaml"))
    by_case: dict[tuple[str, str], list[str | None]] = {}
    for result in live:
        by_case.setdefault((result["file"], result["case"]), []).append(result["persona"])
    for (file, case), seen in by_case.items():
        kind = next(r["result"]["kind"] for r in live if (r["file"], r["case"]) == (file, case))
        if kind == "golden":
            assert len(seen) == 1, f"golden case {file}/{case} ran {len(seen)} times: {seen}"
        else:
            assert sorted(p or "" for p in seen) == personas, f"{file}/{case}"


def test_the_simulated_user_never_sees_success_criteria(runs: dict[str, RunOutput], servers: StubServers) -> None:
    assert runs["test"].report, runs["test"].describe()
    suite = yaml.safe_load((DATA / "lieferservice" / "mit_modellen.yaml").read_text(encoding="utf-8"))
    criteria = [step["success_criteria"] for case in suite["cases"] for step in case.get("steps", [])
                if step.get("success_criteria")]  # fmt: skip
    assert servers.user_requests, "the user model behind HTTP was never asked"
    assert servers.judge_requests, "the judge model behind HTTP was never asked"
    seen = "\n".join(_texts(servers.user_requests))
    leaked = [criterion for criterion in criteria if criterion in seen]
    assert not leaked, f"the user model was shown these success criteria: {leaked}"
    # The criteria did reach the judge: the stub's verdicts depend on them.
    judged = "\n".join(_texts(servers.judge_requests))
    assert criteria[0] in judged


def _texts(requests: list[dict[str, Any]]) -> list[str]:
    return [str(message.get("content")) for request in requests for message in request["messages"]]


def test_the_response_guide_never_reaches_the_agent(runs: dict[str, RunOutput], servers: StubServers) -> None:
    assert runs["test"].report, runs["test"].describe()
    assert servers.agent_requests
    assert not any("Zimtstern-7" in text for text in _texts(servers.agent_requests))


def _tool_contents(servers: StubServers) -> list[str]:
    return [
        str(message.get("content"))
        for request in servers.agent_requests
        for message in request["messages"]
        if message.get("role") == "tool"
    ]


def test_a_string_tool_result_reaches_the_agent_unchanged(runs: dict[str, RunOutput], servers: StubServers) -> None:
    import importlib.util

    assert runs["live"].report, runs["live"].describe()
    spec = importlib.util.spec_from_file_location("_tools", DATA / "lieferservice" / "lieferservice_tools.py")
    assert spec is not None
    assert spec.loader is not None
    tools = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(tools)
    live_text = tools.feiertage_abfragen(2026, "BY")
    fake_text = '{"feiertage": ["2026-12-24", "2026-12-25"]}'  # the string fake of gehostet.yaml
    contents = _tool_contents(servers)
    for text in (live_text, fake_text):
        assert json.dumps(text) not in contents, f"encoded twice: {json.dumps(text)}"
        assert text in contents, f"never sent as it is: {text}"
    # Any other JSON value is serialised once: the stock check's mapping arrives as a JSON object.
    stock = [c for c in contents if '"vorraetig"' in c]
    assert stock
    assert all(isinstance(json.loads(c), dict) for c in stock)


def _calls(result: dict[str, Any]) -> list[dict[str, Any]]:
    events = result["result"]["transcript"]["events"]
    return [call for event in events if event["type"] == "agent" for call in event["tool_calls"]]


def test_live_tool_modules_resolve_from_the_suite_folder(runs: dict[str, RunOutput]) -> None:
    # The CLI runs from the folder above the suite; lieferservice_tools.py lies beside the suite and agent.yaml.
    results = _results(runs["live"], "lieferung", "liefertermin_ok")
    assert results, runs["live"].describe()
    for result in results:
        calls = [(c["name"], c["status"]) for c in _calls(result)]
        assert calls == [("feiertage_abfragen", "executed")], result["result"]["reasons"]


def test_waiting_for_approval_has_its_own_reason(runs: dict[str, RunOutput]) -> None:
    results = _results(runs["live"], "lieferung", "expressbuchung")
    assert results, runs["live"].describe()
    for result in results:
        assert [(c["name"], c["status"]) for c in _calls(result)] == [("express_buchen", "needs_approval")]
        reasons = result["result"]["reasons"]
        assert any("approval" in reason for reason in reasons), reasons
        assert not any("judge model" in reason for reason in reasons), reasons


def test_a_live_tool_that_raises_is_failed_and_blamed_on_the_tool(runs: dict[str, RunOutput]) -> None:
    results = _results(runs["live"], "lieferung", "sperrgut_tarif")
    assert results, runs["live"].describe()
    for result in results:
        events = result["result"]["transcript"]["events"]
        calls = _calls(result)
        assert [(c["name"], c["status"]) for c in calls] == [("tarif_abfragen", "failed")]
        assert "Tarifserver nicht erreichbar" in (calls[0]["error"] or "")
        assert not [e for e in events if e["type"] == "error"], "the tool's failure was blamed on someone else"


def test_an_extra_tool_call_is_reported_even_where_it_does_not_fail(runs: dict[str, RunOutput]) -> None:
    for run in runs.values():
        results = _results(run, "lieferung", "reihenfolge_extra")
        assert results, run.describe()
        for result in results:
            texts = [f"{s['check']} {s['reason']}" for s in result["result"]["scores"]]
            assert any("lager_pruefen" in text for text in texts), texts


def test_the_german_csv_imports_with_decimal_commas_kept(project: Project) -> None:
    assert project.imported.returncode == 0, project.imported.stdout + project.imported.stderr
    suite = yaml.safe_load((project.suites / "lieferfragen.yaml").read_text(encoding="utf-8"))
    cases = {case["name"]: case for case in suite["cases"]}
    assert list(cases) == ["preis", "termin", "termin_und_lager", "weihnachten", "express", "lager"]
    assert all(case["kind"] == "golden" and len(case["turns"]) == 1 for case in cases.values())
    preis = cases["preis"]["turns"][0]
    assert preis["user"] == "Was kostet der Versand nach 80331?"
    assert preis["expect"]["must_contain"] == ["23,60"]
    assert preis["expect"]["must_not_contain"] == ["19,60"]
    assert cases["termin"]["turns"][0]["expect"]["tool_calls"] == [{"name": "feiertage_abfragen"}]
    weihnachten = cases["weihnachten"]["turns"][0]["expect"]
    assert weihnachten["reference_answer"] == "Bestellungen bis zum 18.12.2026 kommen vor Weihnachten an."


@pytest.mark.parametrize("command", ["validate", "run", "simulate"])
def test_a_suite_without_an_agent_is_invalid_input_and_nothing_is_stored(project: Project, command: str) -> None:
    db = project.root / f"ohne-agent-{command}.db"
    args: list[str | Path] = [command, Path("ohne_agent") / "fragen.yaml"]
    if command == "run":
        args += ["--db", db, "--no-cache"]
    done = simulator(project.root, *args)
    output = done.stdout + done.stderr
    assert done.returncode == 2, f"simulator {command}: exit {done.returncode}\n{output}"
    assert "agent" in output, output
    assert "Traceback" not in output, output
    if db.exists():
        listed = simulator(project.root, "runs", "list", "--db", db, "--json")
        assert json.loads(listed.stdout or "[]") == [], listed.stdout
