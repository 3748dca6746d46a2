"""Export and import of cases, runs and results; golden cases recorded from real conversations."""

from __future__ import annotations

import asyncio
import io
import json
import zipfile
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
import yaml

from simulator.errors import SimulatorError, StoreError
from simulator.exchange import (
    ZIP_DATE_TIME,
    ExchangeError,
    export_cases,
    export_results,
    export_run,
    golden_from_run,
    golden_from_transcript,
    import_into_store,
    import_results,
    import_run,
    write_export,
    zip_bytes,
)
from simulator.llm import LLMClient
from simulator.loading import LoadedSuite, load_suite
from simulator.metrics import case_metrics
from simulator.models import GoldenCase, Suite
from simulator.models.run import PlanItem, RunRecord, RunSettings, StoredResult, SuiteSnapshot
from simulator.models.scores import CaseResult
from simulator.models.transcript import AgentEvent, InputEvent, ToolCallRecord, Transcript, UserEvent
from simulator.runner import find_case, model_roles, run_case, score_case
from simulator.runner._execute import execute
from simulator.runner._plan import build_plan, new_record, snapshot_of
from simulator.store import RunStore

ROOT = Path(__file__).resolve().parent.parent
DEMO = ROOT / "suites" / "demo"
SHIPPED = sorted(p for p in (ROOT / "suites").rglob("*.yaml") if p.name != "agent.yaml")
GOLDEN_CASE = "status_then_delivery_date"
SIMULATION_CASE = "order_status_needs_the_order_number"


def _folder(tmp_path: Path, name: str) -> Path:
    """A folder where the loader finds no agent.yaml or personas/ from above."""
    folder = tmp_path / name
    folder.mkdir()
    (folder / ".git").mkdir()
    return folder


@pytest.fixture(scope="module")
def demo_run(tmp_path_factory: pytest.TempPathFactory) -> tuple[RunRecord, list[StoredResult]]:
    """A real offline run of the demo: one golden case and one simulation, as the store holds it."""
    suites = [load_suite(DEMO / "golden.yaml"), load_suite(DEMO / "simulations.yaml")]
    settings = RunSettings(cases=[GOLDEN_CASE, SIMULATION_CASE], seed=5, concurrency=2)
    plan = build_plan(suites, settings)
    store_path = tmp_path_factory.mktemp("demo-run") / "runs.db"
    with RunStore(store_path) as store:
        snapshots = [snapshot_of(loaded, str(loaded.path)) for loaded in suites]
        record = new_record(store.new_run_id(), snapshots, settings, plan, note="nightly")
        store.create_run(record)
        done = asyncio.run(execute(store, record, checkpoints=False))
        results = store.results(record.id)
    assert done.status == "completed"
    assert sorted(r.case for r in results) == sorted([GOLDEN_CASE, SIMULATION_CASE])
    return done, results


# --- cases ------------------------------------------------------------------------------------------------


def test_exported_cases_load_back_to_equal_suites(tmp_path: Path) -> None:
    loaded = [load_suite(path) for path in SHIPPED]
    files = export_cases(loaded)
    suite_files = [name for name in files if not name.startswith("personas/")]
    assert len(suite_files) == len(loaded)
    # Two shipped suites are named scenarios.yaml (demo and examples): the second gets another name.
    assert {"scenarios.yaml", "scenarios-2.yaml", "golden.yaml", "hosted_evals.yaml"} <= set(suite_files)
    named = {p for s in loaded for p in [*s.suite.personas, *(n for c in s.suite.cases for n in c.personas)]}
    assert {name for name in files if name.startswith("personas/")} == {f"personas/{p}.yaml" for p in named}

    out = _folder(tmp_path, "out")
    with zipfile.ZipFile(write_export(files, out / "cases.zip")) as archive:
        archive.extractall(out)
    for original, name in zip(loaded, suite_files, strict=True):
        again = load_suite(out / name)
        assert again.suite == original.suite, name
        assert again.agent == original.agent
        for persona in original.suite.personas:
            assert again.personas[persona] == original.personas[persona]


def test_an_exported_suite_has_its_agent_inline_and_keeps_only_written_keys(tmp_path: Path) -> None:
    [text] = export_cases([load_suite(DEMO / "golden.yaml")], include_personas=False).values()
    data = yaml.safe_load(text)
    assert data["agent"]["callable"] == "simulator.demo.shop:respond"  # from agent.yaml beside the suite
    assert "repeats" not in data  # a default the suite does not write
    assert text.startswith("# Exported by Simulator from golden.yaml")


def test_exporting_two_different_personas_of_one_name_is_an_error(tmp_path: Path) -> None:
    first = load_suite(DEMO / "simulations.yaml")
    second = LoadedSuite(
        suite=first.suite,
        path=tmp_path / "other.yaml",
        personas={
            name: persona.model_copy(update={"personality": "Someone else entirely."})
            for name, persona in first.personas.items()
        },
    )
    with pytest.raises(ExchangeError, match="two suites use different personas named 'impatient'"):
        export_cases([first, second])


# --- files ------------------------------------------------------------------------------------------------

FILES = {"b.yaml": "name: b\n", "personas/x.yaml": "name: x\n", "a.yaml": "name: ä\n"}


def test_several_files_become_a_deterministic_zip(tmp_path: Path) -> None:
    output = write_export(FILES, tmp_path / "export.zip")
    data = output.read_bytes()
    assert data == zip_bytes(dict(reversed(FILES.items())))  # same files, any order: same bytes
    with zipfile.ZipFile(io.BytesIO(data)) as archive:
        assert archive.namelist() == ["a.yaml", "b.yaml", "personas/x.yaml"]
        assert {name: archive.read(name).decode("utf-8") for name in archive.namelist()} == FILES
        assert {info.date_time for info in archive.infolist()} == {ZIP_DATE_TIME}
        assert {info.external_attr >> 16 for info in archive.infolist()} == {0o644}


def test_one_file_is_written_as_it_is(tmp_path: Path) -> None:
    output = write_export({"suite.yaml": "name: ä\n"}, tmp_path / "deep" / "out.yaml")
    assert output.read_bytes() == "name: ä\n".encode()


def test_an_existing_file_is_not_overwritten_unless_forced(tmp_path: Path) -> None:
    target = tmp_path / "export.zip"
    target.write_bytes(b"keep me")
    with pytest.raises(ExchangeError, match="already exists: choose another file, or overwrite it with force"):
        write_export(FILES, target)
    assert target.read_bytes() == b"keep me"
    write_export(FILES, target, force=True)
    assert target.read_bytes() == zip_bytes(FILES)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["export.zip"]  # no temporary file left behind


@pytest.mark.parametrize(
    ("files", "message"),
    [
        ({}, "nothing to export"),
        ({"../a.yaml": "x", "b": "y"}, "cannot be a file name in an export"),
        ({"/abs.yaml": "x", "b": "y"}, "cannot be a file name in an export"),
    ],
)
def test_bad_exports_are_refused(tmp_path: Path, files: dict[str, str], message: str) -> None:
    with pytest.raises(ExchangeError, match=message):
        write_export(files, tmp_path / "out.zip")


def test_a_folder_is_not_an_output_file(tmp_path: Path) -> None:
    with pytest.raises(ExchangeError, match="is a folder"):
        write_export(FILES, tmp_path)


def test_exchange_errors_are_simulator_errors() -> None:
    assert issubclass(ExchangeError, SimulatorError)
    assert issubclass(ExchangeError, ValueError)


# --- runs and results -------------------------------------------------------------------------------------


@pytest.mark.parametrize("fmt", ["json", "yaml"])
def test_a_run_round_trips_through_its_export(demo_run: tuple[RunRecord, list[StoredResult]], fmt: Any) -> None:
    record, results = demo_run
    text = export_run(record, results, fmt)
    again, again_results = import_run(text, fmt)
    assert again == record
    assert again_results == results
    assert import_run(text) == (record, results)  # the format told from the text


def test_a_run_file_round_trips_with_the_format_from_its_suffix(
    tmp_path: Path, demo_run: tuple[RunRecord, list[StoredResult]]
) -> None:
    record, results = demo_run
    path = write_export({"run.yaml": export_run(record, results, "yaml")}, tmp_path / "run.yaml")
    assert import_run(path) == (record, results)


def _run_with_an_error_fake() -> tuple[RunRecord, list[StoredResult]]:
    suite = Suite.model_validate(
        {
            "name": "Shop",
            "cases": [{"kind": "scenario", "name": "refund", "goal": "Get a refund"}],
            # `error` without `result`: only an export that keeps the written keys reads back.
            "tool_fakes": [{"tool": "lookup_order", "error": "404: order not found"}],
        }
    )
    record = RunRecord(
        id="20261129-232501-ab12cd",
        created=datetime(2026, 11, 29, 23, 25, 1, tzinfo=UTC),
        status="completed",
        suite_hash="h1",
        snapshot=[SuiteSnapshot(path="suites/shop.yaml", suite=suite)],
        settings=RunSettings(),
        plan=[PlanItem(key="0:refund:-:0", suite=0, case="refund")],
    )
    transcript = Transcript(case="refund", kind="scenario", events=[UserEvent(turn=1, text="Hi", source="llm")])
    result = StoredResult(
        run_id=record.id,
        key="0:refund:-:0",
        suite=0,
        case="refund",
        outcome="pass",
        finished=datetime(2026, 11, 29, 23, 26, tzinfo=UTC),
        # Honest: the outcome and metrics its (empty) scores give, as an import decides them again.
        result=CaseResult(
            case="refund", kind="scenario", outcome="pass", transcript=transcript, metrics=case_metrics(transcript, [])
        ),
    )
    return record, [result]


@pytest.mark.parametrize("fmt", ["json", "yaml"])
def test_a_suite_with_a_fake_error_round_trips(fmt: Any) -> None:
    record, results = _run_with_an_error_fake()
    assert import_run(export_run(record, results, fmt), fmt) == (record, results)


@pytest.mark.parametrize("fmt", ["json", "yaml"])
def test_results_round_trip_without_their_run(demo_run: tuple[RunRecord, list[StoredResult]], fmt: Any) -> None:
    _, results = demo_run
    assert import_results(export_results(results, fmt)) == results


def test_importing_a_run_twice_gives_two_runs(tmp_path: Path, demo_run: tuple[RunRecord, list[StoredResult]]) -> None:
    record, results = import_run(export_run(*demo_run))
    with RunStore(tmp_path / "other.db") as store:
        first = import_into_store(store, record, results)
        second = import_into_store(store, record, results)
        assert first.id != second.id
        assert {run.id for run in store.list_runs()} == {first.id, second.id}
        for run in (first, second):
            assert run.note == f"imported from {record.id}: nightly"
            assert run.created == record.created
            assert run.imported_from == record.id
            assert run.model_dump(exclude={"id", "note", "imported_from"}) == record.model_dump(
                exclude={"id", "note", "imported_from"}
            )
            stored = store.results(run.id)
            assert [r.run_id for r in stored] == [run.id] * len(results)
            assert [r.model_copy(update={"run_id": record.id}) for r in stored] == results


def test_importing_with_the_original_id_twice_is_refused(
    tmp_path: Path, demo_run: tuple[RunRecord, list[StoredResult]]
) -> None:
    record, results = demo_run
    with RunStore(tmp_path / "other.db") as store:
        kept = import_into_store(store, record, results, new_id=False)
        assert kept.id == record.id
        with pytest.raises(StoreError, match=f"a run with id {record.id} already exists"):
            import_into_store(store, record, results, new_id=False)
        assert len(store.list_runs()) == 1


def test_a_failed_import_leaves_no_run_behind(tmp_path: Path) -> None:
    record, [result] = _run_with_an_error_fake()
    running = record.model_copy(update={"status": "running"})
    with RunStore(tmp_path / "other.db") as store:
        with pytest.raises(StoreError, match="already stored"):
            import_into_store(store, running, [result, result])
        assert store.list_runs() == []
        # A run that was running when exported runs nowhere here: it can be resumed, not watched.
        assert import_into_store(store, running, [result]).status == "interrupted"


def test_results_of_another_run_are_refused(tmp_path: Path) -> None:
    record, [result] = _run_with_an_error_fake()
    with RunStore(tmp_path / "other.db") as store, pytest.raises(ExchangeError, match=r"results\[0\]\.run_id"):
        import_into_store(store, record, [result.model_copy(update={"run_id": "other"})])


def _export_data() -> dict[str, Any]:
    record, results = _run_with_an_error_fake()
    data: dict[str, Any] = json.loads(export_run(record, results))
    return data


def _broken(change: Any) -> str:
    data = _export_data()
    change(data)
    return json.dumps(data)


BROKEN: list[tuple[str, str, str]] = [
    (
        "bad-case-name",
        _broken(lambda d: d["run"]["snapshot"][0]["suite"]["cases"][0].update(name=" spaced ")),
        "run.snapshot[0].suite.cases[0].name: String should match pattern",
    ),
    (
        "missing-field",
        _broken(lambda d: d["results"][0].pop("outcome")),
        "results[0].outcome: Field required",
    ),
    (
        "bad-time",
        _broken(lambda d: d["run"].update(created="yesterday")),
        "run.created: Input should be a valid datetime",
    ),
    (
        "result-of-another-run",
        _broken(lambda d: d["results"][0].update(run_id="elsewhere")),
        "results[0].run_id: 'elsewhere' is not the exported run's id '20261129-232501-ab12cd'",
    ),
    (
        "result-of-a-missing-suite",
        _broken(lambda d: d["results"][0].update(suite=3)),
        "results[0].suite: 3 is not a suite of the run (it has 1)",
    ),
    (
        "results-export",
        export_results(_run_with_an_error_fake()[1]),
        "not a Simulator run export: it is a results export, which holds no run; read it with import_results",
    ),
    ("no-format", '{"run": {}}', "not a Simulator run export (no `format` key at the top)"),
    ("a-path-given-as-text", "exports/run.json", "to read a file, pass it as a pathlib.Path"),
    ("newer-version", _broken(lambda d: d.update(version=2)), "version: the export has version 2"),
    ("not-json", '{"format": "simulator-run",\n  oops}', "(text):2:3: not valid JSON"),
]


@pytest.mark.parametrize(("text", "message"), [pytest.param(t, m, id=i) for i, t, m in BROKEN])
def test_bad_imports_name_the_field(text: str, message: str) -> None:
    with pytest.raises(ExchangeError) as caught:
        import_run(text)
    assert message in str(caught.value)


def test_a_bad_yaml_file_names_its_place(tmp_path: Path) -> None:
    path = tmp_path / "run.yaml"
    path.write_text("format: simulator-run\nrun: [\n", encoding="utf-8")
    with pytest.raises(ExchangeError, match=r"run\.yaml:3:1: YAML syntax error: did not find expected node content"):
        import_run(path)


# --- golden cases -----------------------------------------------------------------------------------------


def _replies_per_turn(transcript: Transcript) -> list[str]:
    """The agent's reply text to each user turn, as the golden turns must expect it."""
    replies: list[str] = []
    for event in transcript.events:
        if isinstance(event, UserEvent | InputEvent):
            replies.append("")
        elif isinstance(event, AgentEvent) and replies:
            replies[-1] = "\n\n".join(part for part in (replies[-1], event.text) if part)
    return replies


@pytest.mark.parametrize("case", [GOLDEN_CASE, SIMULATION_CASE])
def test_a_golden_case_from_a_real_run_loads_and_expects_what_the_agent_said(
    tmp_path: Path, demo_run: tuple[RunRecord, list[StoredResult]], case: str
) -> None:
    record, results = demo_run
    [result] = [r for r in results if r.case == case]
    transcript = result.result.transcript
    path = _folder(tmp_path, "golden") / "golden.yaml"
    text = golden_from_run(record, results, case)
    path.write_text(text, encoding="utf-8")
    assert f", repeat {result.repeat + 1} (1 = first, as --repeat counts)," in text.splitlines()[0]

    loaded = load_suite(path)
    [golden] = loaded.suite.cases
    assert isinstance(golden, GoldenCase)
    assert golden.name == f"{case}_golden"
    assert loaded.agent == record.snapshot[result.suite].suite.agent
    users = [e.text for e in transcript.events if isinstance(e, UserEvent)]
    assert [turn.user for turn in golden.turns] == users
    expected = [turn.expect.message if turn.expect else None for turn in golden.turns]
    assert expected == _replies_per_turn(transcript)
    made = [[(c.name, c.arguments) for c in e.tool_calls] for e in transcript.agent_events()]
    expected_calls = [[(c.name, c.arguments) for c in t.expect.tool_calls] if t.expect else [] for t in golden.turns]
    assert expected_calls == made
    assert all(c.match == "exact" for t in golden.turns if t.expect for c in t.expect.tool_calls)


def test_a_recorded_golden_case_passes_its_deterministic_checks_when_replayed(
    tmp_path: Path, demo_run: tuple[RunRecord, list[StoredResult]]
) -> None:
    path = _folder(tmp_path, "golden") / "golden.yaml"
    path.write_text(golden_from_run(*demo_run, SIMULATION_CASE), encoding="utf-8")
    loaded = load_suite(path)
    case = find_case(loaded, f"{SIMULATION_CASE}_golden")
    options = RunSettings()

    async def replay() -> CaseResult:
        llm = LLMClient(model_roles(loaded, options))
        transcript = await run_case(loaded, case, persona=None, llm=llm, options=options)
        return await score_case(loaded, case, transcript, llm=llm, options=options)

    result = asyncio.run(replay())
    deterministic = [score for score in result.scores if score.source == "deterministic"]
    assert deterministic
    assert {score.verdict for score in deterministic} == {"met"}, [s.reason for s in deterministic]
    assert result.outcome in ("pass", "unsure")  # the expected messages need a judge model to be scored


def test_golden_from_run_needs_one_result(demo_run: tuple[RunRecord, list[StoredResult]]) -> None:
    record, results = demo_run
    with pytest.raises(ExchangeError, match="has no result of case 'nope'"):
        golden_from_run(record, results, "nope")
    [result] = [r for r in results if r.case == GOLDEN_CASE]
    twice = [result, result.model_copy(update={"key": "again", "repeat": 1})]
    with pytest.raises(ExchangeError, match="has 2 results of case"):
        golden_from_run(record, twice, GOLDEN_CASE)
    # The API's repeat counts from 0, the header as --repeat does, from 1: the second repeat.
    assert "repeat 2 (1 = first" in golden_from_run(record, twice, GOLDEN_CASE, repeat=1)
    with pytest.raises(ExchangeError, match="with the persona/repeat/suite asked for"):
        golden_from_run(record, twice, GOLDEN_CASE, persona="nobody")


def _handmade() -> Transcript:
    return Transcript(
        case="handmade",
        kind="simulation",
        persona="terse",
        session_parameters={"customer_id": "cus_1"},
        events=[
            AgentEvent(turn=0, messages=["Welcome!"]),  # the agent spoke first: no golden turn to hold it
            UserEvent(turn=1, text="Refund ORD-1", source="scripted"),
            AgentEvent(
                turn=1,
                messages=["Checking.", "Refunded."],
                tool_calls=[
                    ToolCallRecord(id="1", name="lookup_order", arguments={"order_id": "ORD-1"}, status="faked"),
                    ToolCallRecord(id="2", name="refund_order", arguments_error="not JSON", status="failed"),
                ],
                variables={"order_id": "ORD-1"},
            ),
            InputEvent(turn=2, name="button", payload={"id": 7}),
            AgentEvent(turn=2, messages=["A human will take over."], handoff="human"),
            InputEvent(turn=3, name="hang_up"),
        ],
    )


def test_golden_from_a_handmade_transcript() -> None:
    case = golden_from_transcript(_handmade(), name="handmade_golden")
    assert case["session_parameters"] == {"customer_id": "cus_1"}
    assert case["turns"] == [
        {
            "user": "Refund ORD-1",
            "expect": {
                "message": "Checking.\n\nRefunded.",
                "tool_order": "exact",  # the recorded calls and no others
                "tool_calls": [
                    {"name": "lookup_order", "arguments": {"order_id": "ORD-1"}, "match": "exact"},
                    {"name": "refund_order"},  # its arguments were not valid JSON: only the call is expected
                ],
                "variables": {"order_id": "ORD-1"},
            },
        },
        {
            "event": {"name": "button", "payload": {"id": 7}},
            "expect": {"message": "A human will take over.", "tool_order": "exact", "handoff": {"to": "human"}},
        },
        {"event": "hang_up"},
    ]
    GoldenCase.model_validate(case)


def test_golden_without_tools() -> None:
    case = golden_from_transcript(_handmade(), name="g", include_tools=False)
    assert "tool_calls" not in case["turns"][0]["expect"]


def test_a_transcript_without_user_turns_gives_no_golden_case() -> None:
    transcript = Transcript(case="c", kind="scenario", events=[AgentEvent(turn=0, messages=["Hello?"])])
    with pytest.raises(ExchangeError, match="has no user message or event: there is nothing to replay"):
        golden_from_transcript(transcript, name="g")
