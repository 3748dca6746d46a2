"""Deterministic checks (no model): keywords, tool calls, variables, hand-offs. Each verdict quotes its evidence.

Tool calls are checked three ways: :func:`check_tool_call` (one expected call, optionally after another
tool), :func:`check_tools_called` (a golden turn's list of calls, in any order, in order, or exactly) and
:func:`tool_call_correctness` (a graded score: how well the calls made match the calls expected).

An expectation that needs understanding (an expected message, a plain-text expectation) is not decided here:
:func:`check_expectation` returns None for it, and the caller asks the judge model or records ``unsure``.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

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


def describe_call(call: ToolCallRecord) -> str:
    """A call as reports quote it: ``name({"argument": value}) [status]``."""
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
        details.append(
            CheckDetail(check=label, verdict="met" if ok else "not_met", evidence=evidence or "no text", missing=not ok)
        )
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
        seen = ", ".join(describe_call(c) for c in calls) or "no tool calls"
        return CheckDetail(
            check=label, verdict="not_met", evidence=f"{spec.name} was not called ({seen})", missing=True
        )
    problems = []
    for call in candidates:
        comparison = compare_arguments(spec, call.arguments)
        if not comparison.ok:
            extra = f"; unexpected arguments {comparison.extra}" if comparison.extra and spec.match == "exact" else ""
            problems.append(f"{describe_call(call)}: {'; '.join(comparison.mismatched)}{extra}".rstrip(": "))
            continue
        if after is not None:
            earlier = _calls_before(view, call)
            if not any(c.name == after for c in earlier):
                problems.append(f"{describe_call(call)} came before any call of {after}")
                continue
        return CheckDetail(check=label, verdict="met", evidence=f"called {describe_call(call)}")
    return CheckDetail(check=label, verdict="not_met", evidence="; ".join(problems))


def _calls_before(view: ConversationView, target: ToolCallRecord) -> list[ToolCallRecord]:
    everything = [call for reply in view.all_replies or view.replies for call in reply.tool_calls]
    for index, call in enumerate(everything):
        if call is target or (call.id == target.id and call.name == target.name):
            return everything[:index]
    return []


# -- a turn's list of expected tool calls ----------------------------------------------------------------

ToolOrder = Literal["any", "in_order", "exact"]


def _describe_spec(spec: ToolCallSpec) -> str:
    if spec.match == "ignore" or spec.arguments is None:
        return f"{spec.name}(any arguments)"
    arguments = json.dumps(spec.arguments, ensure_ascii=False, sort_keys=True)
    return f"{spec.name}({arguments}{' exactly' if spec.match == 'exact' else ''})"


def _mismatches(spec: ToolCallSpec, call: ToolCallRecord, comparison: ArgumentComparison) -> list[str]:
    problems = list(comparison.mismatched)
    if spec.match == "exact" and comparison.extra:
        # Named, so the reader sees which argument made an otherwise right call not an exact match.
        noun = "argument" if len(comparison.extra) == 1 else "arguments"
        problems.append(f"unexpected {noun} " + ", ".join(repr(name) for name in comparison.extra))
    if call.arguments_error:
        # Said so the reader does not hunt for a wrong value: the agent's arguments never parsed.
        problems.append(f"arguments were not valid JSON ({call.arguments_error})")
    return problems


def _satisfies(spec: ToolCallSpec, call: ToolCallRecord, min_score: float = 1.0) -> bool:
    """The call is the one expected: same tool, and arguments that match (or, under a tool-call correctness
    threshold below 1, match at least that share of the expected arguments)."""
    if call.name != spec.name:
        return False
    comparison = compare_arguments(spec, call.arguments)
    return comparison.ok or (min_score < 1.0 and comparison.score >= min_score)


def _assign(
    expected: Sequence[ToolCallSpec], calls: Sequence[ToolCallRecord], min_score: float = 1.0
) -> list[int | None]:
    """For each expected call, the index of a distinct call that satisfies it, as many as possible.

    A maximum bipartite matching (augmenting paths), not a greedy pass: with a loose spec listed before a
    strict one, greedy could hand the loose spec the only call the strict one accepts.
    """
    fits = [[j for j, call in enumerate(calls) if _satisfies(spec, call, min_score)] for spec in expected]
    owner: dict[int, int] = {}  # call index -> expected index

    def augment(i: int, visited: set[int]) -> bool:
        for j in fits[i]:
            if j in visited:
                continue
            visited.add(j)
            if j not in owner or augment(owner[j], visited):
                owner[j] = i
                return True
        return False

    for i in range(len(expected)):
        augment(i, set())
    assigned: list[int | None] = [None] * len(expected)
    for j, i in owner.items():
        assigned[i] = j
    return assigned


def _why_missing(
    spec: ToolCallSpec, left: Sequence[ToolCallRecord], calls: Sequence[ToolCallRecord]
) -> tuple[str, ToolCallRecord | None]:
    """Why no call satisfied ``spec``, and the call quoted as the closest one (if any).

    ``left`` are the calls no other expected call took: the closest call of the tool among them is quoted
    with its differences. When every call of the tool was taken, the tool was called too few times.
    """
    same_name = [call for call in left if call.name == spec.name]
    if not same_name:
        if any(call.name == spec.name for call in calls):
            return f"missing {_describe_spec(spec)}: {spec.name} was called fewer times than expected", None
        return f"missing {_describe_spec(spec)}: not called", None
    closest = max(same_name, key=lambda call: compare_arguments(spec, call.arguments).score)
    problems = _mismatches(spec, closest, compare_arguments(spec, closest.arguments))
    return f"missing {_describe_spec(spec)}: closest was {describe_call(closest)}: {'; '.join(problems)}", closest


def check_tools_called(
    expected: Sequence[ToolCallSpec],
    order: ToolOrder,
    calls: Sequence[ToolCallRecord],
    *,
    allowed_by: float | None = None,
) -> CheckDetail:
    """Whether the expected calls happened, in the required order.

    A call satisfies an expected call when the names agree and its arguments match under the spec's
    ``match`` mode and ``argument_rules`` (:func:`compare_arguments`); each call satisfies at most one
    expected call (list a call twice to require it twice). Every call the agent made counts, whatever its
    status (``not_executed`` and ``failed`` included: the agent did call).

    * ``any``: every expected call happened, in any order; other calls may happen too.
    * ``in_order``: they happened in the listed order; other calls may come before, between and after.
    * ``exact``: exactly these calls, in this order, and no others. An empty list means no call is allowed.

    The evidence says what was missing (with the closest call of that tool and how it differs), out of
    order or extra, and quotes the calls seen.

    ``allowed_by`` is a tool-call correctness threshold below 1 that the turn's calls met: its argument
    mismatches are allowed, so a call of the expected tool counts as the expected call whatever its arguments,
    and the evidence names each mismatch the threshold allowed (the order check never fails a turn the
    threshold passed on a mismatch it allows).
    """
    min_score = 0.0 if allowed_by is not None else 1.0
    label = f"tool_calls ({order}): " + (", ".join(spec.name for spec in expected) or "no tool call")
    seen = "calls seen: " + (", ".join(describe_call(call) for call in calls) or "none")
    if order == "any":
        problems = _any_problems(expected, calls, min_score=min_score)
    elif order == "in_order":
        problems = _in_order_problems(expected, calls, min_score)
    elif order == "exact":
        problems = _exact_problems(expected, calls, min_score)
    else:
        raise ValueError(f"unknown tool order {order!r}")
    if not problems:
        allowed = _allowed_mismatches(expected, calls, allowed_by) if allowed_by is not None else []
        return CheckDetail(check=label, verdict="met", evidence="; ".join([*allowed, seen]))
    return CheckDetail(check=label, verdict="not_met", evidence="; ".join([*problems, seen]))


def _allowed_mismatches(
    expected: Sequence[ToolCallSpec], calls: Sequence[ToolCallRecord], threshold: float
) -> list[str]:
    """The argument mismatches a tool-call correctness ``threshold`` below 1 let pass, each in words."""
    allowed: list[str] = []
    for spec, j in zip(expected, _assign(expected, calls, 0.0), strict=True):
        if j is None:
            continue
        comparison = compare_arguments(spec, calls[j].arguments)
        if not comparison.ok:
            mismatches = "; ".join(_mismatches(spec, calls[j], comparison))
            allowed.append(
                f"allowed by the tool_call_correctness threshold {threshold:g} "
                f"({comparison.score:.2f} of the arguments match): {describe_call(calls[j])}: {mismatches}"
            )
    return allowed


def _any_problems(
    expected: Sequence[ToolCallSpec],
    calls: Sequence[ToolCallRecord],
    *,
    report_extra: bool = False,
    min_score: float = 1.0,
) -> list[str]:
    assigned = _assign(expected, calls, min_score)
    used = {j for j in assigned if j is not None}
    left = [call for j, call in enumerate(calls) if j not in used]
    problems: list[str] = []
    for spec, j in zip(expected, assigned, strict=True):
        if j is None:
            problem, closest = _why_missing(spec, left, calls)
            problems.append(problem)
            # Quoted once, as the wrong call it is; not again as an extra call.
            left = [call for call in left if call is not closest]
    if report_extra and left:
        problems.append("extra: " + ", ".join(describe_call(call) for call in left))
    return problems


def _in_order_problems(
    expected: Sequence[ToolCallSpec], calls: Sequence[ToolCallRecord], min_score: float = 1.0
) -> list[str]:
    # Taking the earliest fitting call after the previous one finds the listed order whenever it exists
    # (a later choice only leaves fewer calls for the rest). A spec that cannot be placed is skipped, so
    # every problem is reported, not just the first.
    problems: list[str] = []
    position = 0
    placed: set[int] = set()
    for spec in expected:
        index = next((j for j in range(position, len(calls)) if _satisfies(spec, calls[j], min_score)), None)
        if index is not None:
            position = index + 1
            placed.add(index)
            continue
        earlier = next((j for j in range(position) if j not in placed and _satisfies(spec, calls[j], min_score)), None)
        if earlier is None:
            left = [call for j, call in enumerate(calls) if j not in placed]
            problems.append(_why_missing(spec, left, calls)[0])
        else:
            previous = calls[max(placed)]  # it fits before position, so some call was placed there
            problems.append(
                f"out of order: {describe_call(calls[earlier])} came before {describe_call(previous)}, "
                f"but {spec.name} is listed after it"
            )
    return problems


def _exact_problems(
    expected: Sequence[ToolCallSpec], calls: Sequence[ToolCallRecord], min_score: float = 1.0
) -> list[str]:
    if len(expected) == len(calls) and all(_satisfies(s, c, min_score) for s, c in zip(expected, calls, strict=True)):
        return []
    if not expected:
        return ["no tool call was allowed, extra: " + ", ".join(describe_call(call) for call in calls)]
    problems = _any_problems(expected, calls, report_extra=True, min_score=min_score)
    if not problems:
        # The same calls, in another order.
        problems.append(
            "out of order: expected "
            + ", ".join(spec.name for spec in expected)
            + "; called "
            + ", ".join(call.name for call in calls)
        )
    return problems


# -- tool-call correctness (a graded score) --------------------------------------------------------------


@dataclass
class ToolCallScore:
    """One expected call's part of :class:`ToolCorrectness`: the call it was matched to, and how well."""

    expected: ToolCallSpec
    call_id: str | None
    score: float
    mismatches: list[str] = field(default_factory=list)


@dataclass
class ToolCorrectness:
    """How well the calls made match the calls expected (see :func:`tool_call_correctness`)."""

    value: float | None
    calls: list[ToolCallScore] = field(default_factory=list)
    missed: list[str] = field(default_factory=list)
    extra: list[ToolCallRecord] = field(default_factory=list)
    duplicates: list[ToolCallRecord] = field(default_factory=list)

    def describe(self) -> str:
        """The value and its parts in one line, for a report."""
        if self.value is None:
            head = "no tool call expected"
        else:
            parts = []
            for part in self.calls:
                where = f"call {part.call_id}" if part.call_id is not None else "not called"
                why = f": {'; '.join(part.mismatches)}" if part.mismatches and part.call_id is not None else ""
                parts.append(f"{part.expected.name} {part.score:.2f} ({where}{why})")
            head = f"{self.value:.2f} = mean of " + ", ".join(parts)
        tails = []
        if self.missed:
            tails.append("missed: " + ", ".join(self.missed))
        if self.extra:
            tails.append("extra: " + ", ".join(describe_call(call) for call in self.extra))
        if self.duplicates:
            tails.append("repeated: " + ", ".join(describe_call(call) for call in self.duplicates))
        return "; ".join([head, *tails])


def tool_call_correctness(expected: Sequence[ToolCallSpec], calls: Sequence[ToolCallRecord]) -> ToolCorrectness:
    """Score how well ``calls`` match ``expected``, from 0 to 1. The exact definition:

    1. Go through the expected calls in the listed order. For each, take the best-scoring actual call with
       the same name that no earlier expected call took. A call's score is the share of the expected
       arguments whose values match, ``compare_arguments(spec, call.arguments).score`` (``argument_rules``
       apply: regex, numeric tolerance, ignore; ``match: ignore`` or no ``arguments`` scores 1.0 once the
       tool is called). Ties go to a call that fully satisfies the spec (no unexpected argument under
       ``match: exact``), then to the earlier call.
    2. An expected call with no such call left scores 0 and its name is listed in ``missed``.
    3. The value is the mean of these scores over the expected calls; None when no call is expected.

    Unexpected arguments under ``match: exact`` do not lower a call's score (it counts expected arguments
    only); they are listed in its ``mismatches``, and :func:`check_tools_called` fails on them, so both
    numbers are shown and neither hides the other. ``extra`` lists the calls no expected call took. They
    never lower the value: a golden turn reports them in its own ``unexpected_tool_call`` score, which fails
    the case only where the turn allows no other call (``tool_order: exact``), so they are not counted
    twice. ``duplicates`` lists every repeat of a call with the same name and arguments as an earlier one
    (the second and later; a repeat no expected call took is in ``extra`` too). Calls count whatever their
    status (``not_executed`` and ``failed`` included: the agent did call).
    """
    used: set[int] = set()
    parts: list[ToolCallScore] = []
    missed: list[str] = []
    for spec in expected:
        best: tuple[tuple[float, bool], int, ArgumentComparison] | None = None
        for j, call in enumerate(calls):
            if j in used or call.name != spec.name:
                continue
            comparison = compare_arguments(spec, call.arguments)
            rank = (comparison.score, comparison.ok)
            if best is None or rank > best[0]:  # strictly better: ties keep the earlier call
                best = (rank, j, comparison)
        if best is None:
            missed.append(spec.name)
            parts.append(ToolCallScore(expected=spec, call_id=None, score=0.0, mismatches=["not called"]))
            continue
        _, j, comparison = best
        used.add(j)
        parts.append(
            ToolCallScore(
                expected=spec,
                call_id=calls[j].id,
                score=comparison.score,
                mismatches=_mismatches(spec, calls[j], comparison),
            )
        )
    seen: set[str] = set()
    duplicates: list[ToolCallRecord] = []
    for call in calls:
        key = call.name + json.dumps(call.arguments, sort_keys=True, ensure_ascii=False)
        if key in seen:
            duplicates.append(call)
        seen.add(key)
    return ToolCorrectness(
        value=sum(part.score for part in parts) / len(parts) if parts else None,
        calls=parts,
        missed=missed,
        extra=[call for j, call in enumerate(calls) if j not in used],
        duplicates=duplicates,
    )


def check_expectation(expectation: ExpectationSpec, view: ConversationView) -> CheckDetail | None:
    """Decide an expectation without a model, or return None when it needs the judge (message, plain text)."""
    if expectation.must_contain is not None or expectation.must_not_contain is not None:
        details = check_keywords(expectation, view)
        failed = [d for d in details if d.verdict == "not_met"]
        label = expectation.text or " and ".join(d.check for d in details)
        return CheckDetail(
            check=label,
            verdict="not_met" if failed else "met",
            evidence=" | ".join(d.evidence for d in details),
            missing=bool(failed) and all(d.missing for d in failed),
        )
    if expectation.tool_call is not None:
        detail = check_tool_call(expectation.tool_call, expectation.after, view)
        return detail.model_copy(update={"check": expectation.text or detail.check})
    if expectation.variable is not None:
        name, wanted = expectation.variable.name, expectation.variable.value
        label = expectation.text or f"variable {name} = {wanted!r}"
        if name not in view.variables:
            return CheckDetail(check=label, verdict="not_met", evidence=f"{name} is not set", missing=True)
        actual = view.variables[name]
        ok = _same(actual, wanted)
        return CheckDetail(check=label, verdict="met" if ok else "not_met", evidence=f"{name} = {actual!r}")
    if expectation.handoff is not None:
        target = expectation.handoff.to.casefold()
        label = expectation.text or f"handoff to {expectation.handoff.to}"
        handoffs = [reply.handoff for reply in view.replies if reply.handoff]
        ok = any(h.casefold() == target for h in handoffs)
        evidence = f"handed off to {', '.join(handoffs)}" if handoffs else "no hand-off happened"
        return CheckDetail(check=label, verdict="met" if ok else "not_met", evidence=evidence, missing=not handoffs)
    return None
