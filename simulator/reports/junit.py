"""A run as JUnit XML, the Jenkins / Surefire flavour CI servers read (pure function, no I/O).

- ``<testsuites>`` holds the run's totals (read from the run summary, as every count here): name, tests,
  failures, errors and time, the attributes the Jenkins / Ant JUnit schema allows there; one
  ``<testsuite>`` per suite of the run's snapshot (in snapshot order, also when none of its cases ran), with
  its counts (tests, failures, errors, skipped = unsure + user errors), time (the sum of its conversations'
  durations), the run's creation time, and ``<properties>``: run id, agent version, seed, status, note, suite
  file, and the versions of simulator and its libraries.
- One ``<testcase>`` per conversation (case x persona x repeat), in plan order: ``classname`` is the suite's
  name, ``name`` is ``case [persona] #repeat`` (``case #repeat`` without a persona; repeats counted from 1),
  ``time`` is the conversation's duration in seconds.
- ``fail`` gives ``<failure>``: the message is the first reason; the body lists every reason, the steps that
  were not completed (with their rationale; blocked steps with the step that blocked them) and the scores that
  did not pass (check, source, reason), each marked as in every view: ✓ met, ✗ not met, ? unsure or not
  judged, ⊘ blocked or not reached, ! error (:mod:`simulator.reports._states`).
- ``error`` gives ``<error>``: the message is the transcript's error (else the first reason); the body holds
  every error of the conversation.
- ``unsure`` gives ``<skipped>`` whose message starts with ``unsure:`` and names the first reason. An unsure
  verdict is not a pass, but it is not a demonstrated failure either: marking it skipped keeps it visible in
  every CI test view without turning the build red on judge uncertainty. (The run's correctness, which
  ``--fail-under`` gates on, still counts unsure as not passed.)
- ``user_error`` (a failure the simulated user caused) gives ``<skipped>`` whose message starts with
  ``user_error:`` and names the fidelity finding: not the agent's failure, and left out of correctness.
- Every test case carries the transcript and its scores as text in ``<system-out>``.

The XML is built with :mod:`xml.etree.ElementTree`, which escapes markup (so ``<script>`` or ``]]>`` in agent
text stays text); control characters (the ones XML 1.0 does not allow among them) and bidi marks and overrides
are written as visible escapes (``\\x01``, ``\\x9b``, ``\\u202e``), so a report shown in a terminal or a CI
page cannot drive or reorder it, and two case names that differ by such a character stay distinct.
"""

from __future__ import annotations

import xml.etree.ElementTree as ET
from collections.abc import Sequence

from simulator.models.run import RunRecord, StoredResult
from simulator.models.summary import Counts
from simulator.models.transcript import ErrorEvent
from simulator.reports._states import score_mark, step_mark, step_words, steps_in_order
from simulator.reports.tabular import ordered_results, strip_xml_illegal, suite_name, summary_of
from simulator.reports.transcript_text import result_lines, transcript_lines
from simulator.safety import terminal_safe

__all__ = ["render_junit", "testcase_name"]


def _clean(text: str) -> str:
    # Escaped, not removed: two names that differ by a control character stay two names.
    return strip_xml_illegal(terminal_safe(text))


def _seconds(value: float) -> str:
    return f"{max(value, 0.0):.3f}"


def testcase_name(stored: StoredResult) -> str:
    """``case [persona] #repeat`` (``case #repeat`` without a persona), the repeat counted from 1."""
    persona = f" [{stored.persona}]" if stored.persona else ""
    return f"{stored.case}{persona} #{stored.repeat + 1}"


def _indented(head: str, text: str) -> str:
    """``head`` and ``text``, the text's later lines (a state check's diff has one per record) indented under it."""
    return head + text.replace("\n", "\n" + " " * len(head))


def _failure_body(stored: StoredResult) -> str:
    result = stored.result
    lines = ["Why:", *(_indented("  - ", reason) for reason in result.reasons)]
    steps = [step for step in steps_in_order(result.transcript.steps) if step.status != "complete"]
    if steps:
        lines.append("Steps not completed:")
        for step in steps:
            lines.append(f"  {step_mark(step.status)} step {step.index + 1}: {step.label}: {step_words(step)}")
            if step.rationale:
                lines.append(_indented("    ", step.rationale))
    scores = [score for score in result.scores if score.verdict in ("not_met", "unsure", "error")]
    if scores:
        lines.append("Scores that did not pass:")
        for score in scores:
            required = "" if score.required else ", not required"
            value = "" if score.value is None else f" = {score.value:g}"
            lines.append(f"  {score_mark(score)} [{score.verdict}, {score.source}{required}] {score.check}{value}")
            if score.reason:
                lines.append(_indented("    ", score.reason))
    return "\n".join(lines)


def _error_body(stored: StoredResult) -> str:
    transcript = stored.result.transcript
    messages = [transcript.error] if transcript.error else []
    for event in transcript.events:
        if isinstance(event, ErrorEvent) and event.message not in messages:
            messages.append(f"{event.where} (turn {event.turn}): {event.message}")
    messages.extend(reason for reason in stored.result.reasons if reason not in messages)
    return "\n".join([f"stopped: {transcript.stop_reason}", *messages])


def _system_out(stored: StoredResult) -> str:
    lines = [line.text for line in transcript_lines(stored.result.transcript, stored.result)]
    lines.append("")
    lines.extend(line.text for line in result_lines(stored.result))
    return "\n".join(lines)


def _testcase(parent: ET.Element, record: RunRecord, stored: StoredResult) -> None:
    case = ET.SubElement(
        parent,
        "testcase",
        {
            "classname": _clean(suite_name(record, stored.suite)),
            "name": _clean(testcase_name(stored)),
            "time": _seconds(stored.duration_s),
        },
    )
    reasons = stored.result.reasons
    first = reasons[0] if reasons else ""
    if stored.outcome == "fail":
        failure = ET.SubElement(case, "failure", {"message": _clean(first or "failed"), "type": "fail"})
        failure.text = _clean(_failure_body(stored))
    elif stored.outcome == "error":
        message = stored.result.transcript.error or first or "error"
        error = ET.SubElement(case, "error", {"message": _clean(message), "type": "error"})
        error.text = _clean(_error_body(stored))
    elif stored.outcome == "unsure":
        ET.SubElement(case, "skipped", {"message": _clean(f"unsure: {first}" if first else "unsure")})
    elif stored.outcome == "user_error":
        # The simulated user caused the failure: not the agent's, so skipped with the finding as the reason.
        ET.SubElement(case, "skipped", {"message": _clean(f"user_error: {first}" if first else "user_error")})
    out = ET.SubElement(case, "system-out")
    out.text = _clean(_system_out(stored))


def _counts(element: ET.Element, breakdown: Counts, seconds: float, *, skipped: bool = True) -> None:
    element.set("tests", str(breakdown.total))
    element.set("failures", str(breakdown.failed))
    element.set("errors", str(breakdown.error))
    if skipped:
        element.set("skipped", str(breakdown.unsure + breakdown.user_error))
    element.set("time", _seconds(seconds))


def _properties(parent: ET.Element, record: RunRecord, path: str) -> None:
    properties = ET.SubElement(parent, "properties")
    values = [
        ("run_id", record.id),
        ("agent_version", record.agent_version or ""),
        ("seed", str(record.settings.seed)),
        ("status", record.status),
        ("suite_file", path),
    ]
    if record.note:
        values.append(("note", record.note))
    values.extend((f"version.{name}", version) for name, version in sorted(record.versions.items()))
    for name, value in values:
        ET.SubElement(properties, "property", {"name": _clean(name), "value": _clean(value)})


def render_junit(record: RunRecord, results: Sequence[StoredResult]) -> str:
    """The run as a JUnit XML document (UTF-8 text with an XML declaration, ends with a newline)."""
    ordered = ordered_results(record, results)
    timestamp = record.created.strftime("%Y-%m-%dT%H:%M:%S")
    root = ET.Element("testsuites", {"name": _clean(f"simulator run {record.id}")})
    summary = summary_of(record)
    # The Jenkins / Ant schema allows neither skipped nor timestamp on <testsuites>: each <testsuite> has both.
    _counts(root, summary, summary.conversations_s, skipped=False)
    suites = {suite.suite: suite for suite in summary.suites}
    indices = list(range(len(record.snapshot)))
    indices += sorted(set(suites) - set(indices))
    for index in indices:
        members = [r for r in ordered if r.suite == index]
        path = record.snapshot[index].path if index < len(record.snapshot) else ""
        suite = ET.SubElement(root, "testsuite", {"name": _clean(suite_name(record, index))})
        counts = suites.get(index)
        _counts(suite, counts or Counts(), counts.duration_s if counts is not None else 0.0)
        suite.set("timestamp", timestamp)
        suite.set("id", str(index))
        _properties(suite, record, path)
        for stored in members:
            _testcase(suite, record, stored)
    ET.indent(root, space="  ")
    return '<?xml version="1.0" encoding="UTF-8"?>\n' + ET.tostring(root, encoding="unicode") + "\n"
