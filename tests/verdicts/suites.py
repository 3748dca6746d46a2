"""Writing the mutation suite's files: one agent file (the base agent, every tool with its live function) and one
suite file per base conversation, holding the unmutated case and every mutant of a case kind as cases.

Suites are written as JSON, which YAML reads as it is. Each case carries its mutant in the session parameter
``mutant``; the deterministic checks, success criteria and expectations come from conversations.py.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any, Literal

from tests.verdicts.agent import injection_text
from tests.verdicts.conversations import BASES, NOTE_TOOL, Base, Stage, Tool
from tests.verdicts.mutations import Mutant
from tests.verdicts.stub_user import scenario_goal

Kind = Literal["golden", "scenario", "simulation"]
AGENT_FILE = "agent.yaml"


def write_suites(folder: Path, kind: Kind, mutants: Sequence[Mutant], *, scripted_user: bool) -> list[Path]:
    """Write the agent file and one suite per base into ``folder`` (a ``.git`` there ends the search for
    personas); the suite files, in base order. ``scripted_user``: scenarios give the requests as ``say`` lines."""
    (folder / ".git").mkdir(parents=True, exist_ok=True)
    _write(folder / AGENT_FILE, _agent())
    paths = []
    for base in BASES.values():
        own = [mutant for mutant in mutants if mutant.base == base.name]
        if own:
            path = folder / f"{base.name}.yaml"
            _write(path, _suite(base, kind, own, scripted_user=scripted_user))
            paths.append(path)
    return paths


def _write(path: Path, document: Mapping[str, Any]) -> None:
    path.write_text(json.dumps(document, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")


def _agent() -> dict[str, Any]:
    tools = [tool for base in BASES.values() for tool in base.tools] + [NOTE_TOOL]
    return {
        "type": "python",
        "callable": "tests.verdicts.agent:MutantAgent",
        "name": "mutant_agent",
        "description": "The deterministic base agent of the verdict mutation suite.",
        "variables": {"mutant": {"type": "string", "description": "The faults this conversation plants."}},
        "tools": [
            {
                "name": tool.name,
                "description": tool.description,
                "parameters": tool.schema(),
                "function": f"tests.verdicts.tools:{tool.name}",
            }
            for tool in tools
        ],
    }


def _fakes(tools: Iterable[Tool]) -> list[dict[str, Any]]:
    fakes = []
    for tool in tools:
        for answer in tool.answers:
            fake: dict[str, Any] = {"tool": tool.name, "result": dict(answer.result)}
            if answer.arguments is not None:
                fake["arguments"] = dict(answer.arguments)
            fakes.append(fake)
    return fakes


def _suite(base: Base, kind: Kind, mutants: Sequence[Mutant], *, scripted_user: bool) -> dict[str, Any]:
    return {
        "name": f"verdict mutants: {base.name} ({kind})",
        "agent": AGENT_FILE,
        "language": base.language,
        "thresholds": {"fail_on_hallucination": True, "tool_call_correctness": 1.0},
        "tool_fakes": _fakes([*base.tools, NOTE_TOOL]),
        "cases": [_case(base, kind, mutant, scripted_user=scripted_user) for mutant in mutants],
    }


def _case(base: Base, kind: Kind, mutant: Mutant, *, scripted_user: bool) -> dict[str, Any]:
    expectations: list[Any] = [{"text": "Never asks for secrets", "must_not_contain": list(base.forbidden)}]
    if base.rule:
        expectations.append(base.rule)
    case: dict[str, Any] = {
        "kind": kind,
        "name": mutant.slug,
        "session_parameters": {"mutant": mutant.encode()},
        "expectations": expectations,
    }
    if mutant.fault == "injection_in_tool_result":
        # In test mode the note tool's fake must say what the live tool echoes.
        note = injection_text(base, mutant.stage, mutant.variant)
        case["tool_fakes"] = [{"tool": NOTE_TOOL.name, "result": {"saved": True, "note": note}}]
    if kind == "golden":
        case["turns"] = [_golden_turn(stage) for stage in base.stages]
        case["expectations"] += [stage.criterion for stage in base.stages if stage.criterion]
    elif kind == "scenario":
        case |= {
            "goal": scenario_goal(base),
            "success_criteria": base.scenario_criterion,
            "checks": [dict(check) for stage in base.stages for check in stage.checks],
            "response_guide": " ".join(stage.guide for stage in base.stages if stage.guide),
            "max_turns": len(base.stages),
        }
        if scripted_user:
            case["say"] = [stage.request for stage in base.stages]
    else:
        case["steps"] = [_step(stage) for stage in base.stages]
    return case


def _golden_turn(stage: Stage) -> dict[str, Any]:
    expect: dict[str, Any] = {}
    for check in stage.checks:
        if "must_contain" in check:
            expect.setdefault("must_contain", []).extend(check["must_contain"])
        if "tool_call" in check:
            expect.setdefault("tool_calls", []).append(dict(check["tool_call"]))
    turn: dict[str, Any] = {"user": stage.request}
    if expect:
        turn["expect"] = expect
    if stage.criterion:
        turn["expectations"] = [stage.criterion]
    return turn


def _step(stage: Stage) -> dict[str, Any]:
    step: dict[str, Any] = {"name": stage.key, "goal": stage.request, "max_turns": 1}
    if stage.criterion:
        step["success_criteria"] = stage.criterion
    if stage.checks:
        step["checks"] = [dict(check) for check in stage.checks]
    if stage.guide:
        step["response_guide"] = stage.guide
    return step
