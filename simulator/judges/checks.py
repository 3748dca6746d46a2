"""Deterministic checks (no model): keywords, tool calls, variables, hand-offs. Each verdict quotes its evidence.

An expectation that needs understanding (an expected message, a plain-text expectation) is not decided here:
:func:`check_expectation` returns None for it, and the caller asks the judge model or records ``unsure``.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any

from pydantic import JsonValue

from simulator.judges.keywords import as_term, find_term
from simulator.models import ExpectationSpec, ToolCallSpec
from simulator.models.case import KeywordChecks
from simulator.models.transcript import AgentEvent, CheckDetail, ToolCallRecord


@dataclass
class ConversationView:
    """What a check looks at: the agent's replies in scope (e.g. the current step), all replies (for order),
    and the session variables as they stand."""

    replies: list[AgentEvent]
    all_replies: list[AgentEvent] = field(default_factory=list)
    variables: dict[str, JsonValue] = field(default_factory=dict)
    language: str = "en"

    def text(self) -> str:
        """Every agent message in scope, one per line."""
        return "\n".join(message for reply in self.replies for message in reply.messages)

    def calls(self) -> list[ToolCallRecord]:
        """Tool calls in scope, in order."""
        return [call for reply in self.replies for call in reply.tool_calls]


@dataclass
class ArgumentComparison:
    """How a call's arguments compare with an expected call's: the share matched, and what differed."""

    score: float
    ok: bool
    matched: list[str] = field(default_factory=list)
    mismatched: list[str] = field(default_factory=list)
    extra: list[str] = field(default_factory=list)


def compare_arguments(spec: ToolCallSpec, actual: dict[str, Any]) -> ArgumentComparison:
    """Compare actual arguments with the expected ones.

    The score is the share of expected arguments whose values match (1.0 when none are expected or the mode
    is ``ignore``). ``exact`` also fails on arguments that were not expected; ``subset`` allows them.
    """
    if spec.match == "ignore" or spec.arguments is None:
        return ArgumentComparison(score=1.0, ok=True)
    matched: list[str] = []
    mismatched: list[str] = []
    for name, expected in spec.arguments.items():
        rule = spec.argument_rules.get(name)
        mode = rule.mode if rule else "exact"
        if mode == "ignore":
            matched.append(name)
            continue
        if name not in actual:
            mismatched.append(f"{name}: missing (expected {expected!r})")
            continue
        value = actual[name]
        if mode == "exact":
            good = _same(value, expected)
        elif mode == "regex":
            assert rule is not None
            assert rule.pattern is not None
            good = re.search(rule.pattern, str(value)) is not None
        else:
            assert rule is not None
            assert rule.tolerance is not None
            good = _within(value, expected, rule.tolerance)
        (matched if good else mismatched).append(name if good else f"{name}: {value!r} (expected {expected!r})")
    extra = sorted(set(actual) - set(spec.arguments))
    score = len(matched) / len(spec.arguments) if spec.arguments else 1.0
    ok = not mismatched and (spec.match != "exact" or not extra)
    return ArgumentComparison(score=score, ok=ok, matched=matched, mismatched=mismatched, extra=extra)


def _same(value: Any, expected: Any) -> bool:
    if isinstance(value, bool) or isinstance(expected, bool):
        return value is expected
    return bool(value == expected)


def _within(value: Any, expected: Any, tolerance: float) -> bool:
    try:
        return abs(float(value) - float(expected)) <= tolerance
    except (TypeError, ValueError):
        return False


def _describe_call(call: ToolCallRecord) -> str:
    return f"{call.name}({json.dumps(call.arguments, ensure_ascii=False, sort_keys=True)}) [{call.status}]"


def check_keywords(checks: KeywordChecks, view: ConversationView) -> list[CheckDetail]:
    """The must_contain / must_not_contain part of an expectation or turn, one detail per list."""
    details: list[CheckDetail] = []
    text = view.text()
    if checks.must_contain:
        found: list[tuple[str, str]] = []
        missing: list[tuple[str, str]] = []
        for term in checks.must_contain:
            word, mode, normalizations = as_term(term, checks.match)
            hit = find_term(text, word, mode, language=view.language, normalizations=normalizations)
            (found if hit.found else missing).append((word, hit.excerpt))
        ok = bool(found) if checks.contain == "any" else not missing
        label = f"must_contain ({checks.contain}, {checks.match}): " + ", ".join(repr(t) for t in _words(checks))
        evidence = "; ".join(f"found {w!r} in “{e}”" for w, e in found)
        if missing:
            evidence = "; ".join(filter(None, [evidence, "missing " + ", ".join(repr(w) for w, _ in missing)]))
        details.append(CheckDetail(check=label, verdict="met" if ok else "not_met", evidence=evidence or "no text"))
    if checks.must_not_contain:
        forbidden = []
        for term in checks.must_not_contain:
            word, mode, normalizations = as_term(term, checks.match)
            hit = find_term(text, word, mode, language=view.language, normalizations=normalizations)
            if hit.found:
                forbidden.append(f"{word!r} in “{hit.excerpt}”")
        label = "must_not_contain: " + ", ".join(repr(as_term(t, checks.match)[0]) for t in checks.must_not_contain)
        details.append(
            CheckDetail(
                check=label,
                verdict="not_met" if forbidden else "met",
                evidence=("found " + "; ".join(forbidden)) if forbidden else "none of the terms appears",
            )
        )
    return details


def _words(checks: KeywordChecks) -> list[str]:
    return [as_term(term, checks.match)[0] for term in checks.must_contain or []]


def check_tool_call(spec: ToolCallSpec, after: str | None, view: ConversationView) -> CheckDetail:
    """Whether a call of ``spec.name`` with matching arguments happened in scope (after ``after``, if set)."""
    label = f"tool_call: {spec.name}" + (f" after {after}" if after else "")
    calls = view.calls()
    candidates = [call for call in calls if call.name == spec.name]
    if not candidates:
        seen = ", ".join(_describe_call(c) for c in calls) or "no tool calls"
        return CheckDetail(check=label, verdict="not_met", evidence=f"{spec.name} was not called ({seen})")
    problems = []
    for call in candidates:
        comparison = compare_arguments(spec, call.arguments)
        if not comparison.ok:
            extra = f"; unexpected arguments {comparison.extra}" if comparison.extra and spec.match == "exact" else ""
            problems.append(f"{_describe_call(call)}: {'; '.join(comparison.mismatched)}{extra}".rstrip(": "))
            continue
        if after is not None:
            earlier = _calls_before(view, call)
            if not any(c.name == after for c in earlier):
                problems.append(f"{_describe_call(call)} came before any call of {after}")
                continue
        return CheckDetail(check=label, verdict="met", evidence=f"called {_describe_call(call)}")
    return CheckDetail(check=label, verdict="not_met", evidence="; ".join(problems))


def _calls_before(view: ConversationView, target: ToolCallRecord) -> list[ToolCallRecord]:
    everything = [call for reply in view.all_replies or view.replies for call in reply.tool_calls]
    for index, call in enumerate(everything):
        if call is target or (call.id == target.id and call.name == target.name):
            return everything[:index]
    return []


def check_expectation(expectation: ExpectationSpec, view: ConversationView) -> CheckDetail | None:
    """Decide an expectation without a model, or return None when it needs the judge (message, plain text)."""
    if expectation.must_contain is not None or expectation.must_not_contain is not None:
        details = check_keywords(expectation, view)
        verdict = "not_met" if any(d.verdict == "not_met" for d in details) else "met"
        label = expectation.text or " and ".join(d.check for d in details)
        return CheckDetail(check=label, verdict=verdict, evidence=" | ".join(d.evidence for d in details))
    if expectation.tool_call is not None:
        detail = check_tool_call(expectation.tool_call, expectation.after, view)
        return detail.model_copy(update={"check": expectation.text or detail.check})
    if expectation.variable is not None:
        name, wanted = expectation.variable.name, expectation.variable.value
        label = expectation.text or f"variable {name} = {wanted!r}"
        if name not in view.variables:
            return CheckDetail(check=label, verdict="not_met", evidence=f"{name} is not set")
        actual = view.variables[name]
        ok = _same(actual, wanted)
        return CheckDetail(check=label, verdict="met" if ok else "not_met", evidence=f"{name} = {actual!r}")
    if expectation.handoff is not None:
        target = expectation.handoff.to.casefold()
        label = expectation.text or f"handoff to {expectation.handoff.to}"
        handoffs = [reply.handoff for reply in view.replies if reply.handoff]
        ok = any(h.casefold() == target for h in handoffs)
        evidence = f"handed off to {', '.join(handoffs)}" if handoffs else "no hand-off happened"
        return CheckDetail(check=label, verdict="met" if ok else "not_met", evidence=evidence)
    return None
