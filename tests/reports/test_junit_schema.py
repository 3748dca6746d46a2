"""The JUnit report against the schema CI servers read: the Jenkins / Ant JUnit XSD kept in
``tests/data/junit/jenkins-junit.xsd``, checked with ``xmlschema`` and, when it is installed, with
``xmllint --schema`` too. Two fixed runs together hold every outcome: the format run (pass, fail, error,
unsure) and the fidelity run (pass, user_error)."""

from __future__ import annotations

import importlib
import io
import shutil
import subprocess
import xml.etree.ElementTree as ET
from collections.abc import Callable
from pathlib import Path

import pytest

from simulator.models.run import RunRecord, StoredResult
from simulator.reports import junit
from simulator.reports.junit import render_junit
from tests.reports import test_fidelity_views, test_formats

JENKINS_XSD = Path(__file__).resolve().parents[1] / "data" / "junit" / "jenkins-junit.xsd"
#: The attributes the Jenkins / Ant schema allows on ``<testsuites>``.
ROOT_ATTRIBUTES = {"name", "time", "tests", "failures", "disabled", "errors"}
RUNS: dict[str, Callable[[], tuple[RunRecord, list[StoredResult]]]] = {
    "formats": test_formats.make_run,
    "fidelity": test_fidelity_views.make_run,
}
#: outcome -> the child of ``<testcase>`` that reports it (None: a plain passing testcase), and how the
#: message of a skipped one starts.
MAPPING: dict[str, tuple[str | None, str]] = {
    "pass": (None, ""),
    "fail": ("failure", ""),
    "error": ("error", ""),
    "unsure": ("skipped", "unsure: "),
    "user_error": ("skipped", "user_error: "),
}


def _jenkins_errors(xml: str) -> list[str]:
    xmlschema = importlib.import_module("xmlschema")
    schema = xmlschema.XMLSchema(str(JENKINS_XSD))
    return [str(error.reason) for error in schema.iter_errors(io.StringIO(xml))]


def test_the_runs_hold_every_outcome() -> None:
    outcomes = {stored.outcome for make in RUNS.values() for stored in make()[1]}
    assert outcomes == set(MAPPING)


@pytest.mark.parametrize("name", sorted(RUNS))
def test_the_report_is_valid_against_the_jenkins_schema(name: str) -> None:
    xml = render_junit(*RUNS[name]())
    assert _jenkins_errors(xml) == []
    assert set(ET.fromstring(xml).attrib) <= ROOT_ATTRIBUTES


@pytest.mark.parametrize("name", sorted(RUNS))
def test_xmllint_accepts_the_report(name: str, tmp_path: Path) -> None:
    xmllint = shutil.which("xmllint")
    if xmllint is None:
        pytest.skip("xmllint is not installed (libxml2-utils); the xmlschema check above still runs")
    report = tmp_path / "junit.xml"
    report.write_text(render_junit(*RUNS[name]()), encoding="utf-8")
    done = subprocess.run(
        [xmllint, "--noout", "--schema", str(JENKINS_XSD), str(report)], capture_output=True, text=True, check=False
    )
    assert done.returncode == 0, done.stderr


@pytest.mark.parametrize(
    "xml",
    [
        '<testsuites skipped="1"><testsuite name="s" tests="1"/></testsuites>',
        '<testsuites timestamp="2025-03-14T09:26:53"><testsuite name="s" tests="1"/></testsuites>',
        '<testsuites><testsuite name="s" tests="1"><testcase name="c"><failure/><skipped/></testcase>'
        "</testsuite></testsuites>",  # skipped comes first
        '<testsuites><testsuite name="s"/></testsuites>',
    ],
)
def test_the_kept_schema_rejects_what_jenkins_rejects(xml: str) -> None:
    assert _jenkins_errors(xml)


@pytest.mark.parametrize("name", sorted(RUNS))
def test_each_outcome_maps_to_its_junit_element(name: str) -> None:
    record, results = RUNS[name]()
    cases = {case.get("name"): case for case in ET.fromstring(render_junit(record, results)).iter("testcase")}
    for stored in results:
        case = cases[junit.testcase_name(stored)]
        tag, prefix = MAPPING[stored.outcome]
        outcomes = [child for child in case if child.tag in ("failure", "error", "skipped")]
        assert [child.tag for child in outcomes] == ([tag] if tag else []), stored.outcome
        if tag == "skipped":
            reason = stored.result.reasons[0]
            assert outcomes[0].get("message") == f"{prefix}{reason}", stored.outcome


@pytest.mark.parametrize("name", sorted(RUNS))
def test_each_testsuite_carries_its_skipped_count_and_timestamp(name: str) -> None:
    record, results = RUNS[name]()
    root = ET.fromstring(render_junit(record, results))
    skipped = sum(stored.outcome in ("unsure", "user_error") for stored in results)
    assert sum(int(suite.get("skipped", "")) for suite in root.iter("testsuite")) == skipped
    stamp = record.created.strftime("%Y-%m-%dT%H:%M:%S")
    assert {suite.get("timestamp") for suite in root.iter("testsuite")} == {stamp}
