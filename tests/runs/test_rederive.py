"""No outcome is taken on trust: `import run` and `runs merge` decide every result's outcome (its reasons and
metrics too) again from its transcript, scores and fidelity findings, with the run's `count_user_errors`. A result
stored with another outcome is refused where it is written, before anything is stored; with `--trust` it is kept
as stored, marked in every report, and counted in the run's totals as its evidence decides."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

import simulator
from simulator.cli import EXIT_INVALID, app
from simulator.errors import InputError
from simulator.exchange import ExchangeError, export_results, export_run, import_into_store, import_results, import_run
from simulator.models.run import StoredResult
from simulator.models.scores import TrustedOutcome
from simulator.reports.formats import render
from simulator.runner import TRUST_MARK
from simulator.store import RunStore
from tests.test_blame import OUT_OF_CHARACTER, _suite, _user

ROOT = Path(__file__).resolve().parents[2]
DEMO = ROOT / "suites" / "demo"
runner = CliRunner()

FAILS = "express_delivery_date_is_made_up"  # the demo's planted flaw: the agent's own fault, a failed check
UNSURE = "status_then_delivery_date"  # a golden turn only a judge model could decide
PASSES = "refund_within_30_days"
OPTIONS: dict[str, Any] = {"cases": [FAILS, UNSURE, PASSES], "persona": "angry", "seed": 0}
WHY = "its transcript, scores and fidelity findings decide"


@pytest.fixture(scope="module")
def demo(tmp_path_factory: pytest.TempPathFactory) -> simulator.RunOutcome:
    """An honest offline run: one failure, one unsure golden case, one pass."""
    outcome = simulator.run([DEMO], db=tmp_path_factory.mktemp("demo") / "runs.db", **OPTIONS)
    assert sorted(r.outcome for r in outcome.results()) == ["fail", "pass", "unsure"]
    return outcome


def _data(outcome: simulator.RunOutcome) -> dict[str, Any]:
    data: dict[str, Any] = json.loads(export_run(outcome.record, outcome.results()))
    return data


def _relabel(data: dict[str, Any], case: str, outcome: str) -> list[int]:
    """Give every result of ``case`` the ``outcome`` (a pass with no reasons, as a forger would write it); their
    indexes in ``results``."""
    changed = []
    for index, stored in enumerate(data["results"]):
        if stored["case"] == case:
            stored["outcome"] = stored["result"]["outcome"] = outcome
            if outcome == "pass":
                stored["result"]["reasons"] = []
            changed.append(index)
    return changed


def _write(path: Path, data: dict[str, Any]) -> str:
    text = json.dumps(data, indent=2, ensure_ascii=False)
    path.write_text(text, encoding="utf-8")
    return text


def _outcome_at(text: str, key: str) -> str:
    """``line:column`` of the outcome of the result ``key`` in an exported run."""
    start = text.index(f'"key": {json.dumps(key)}', text.index('"results": ['))
    offset = text.index('"outcome": ', start) + len('"outcome": ')
    return f"{text.count(chr(10), 0, offset) + 1}:{offset - (text.rfind(chr(10), 0, offset) + 1) + 1}"


def _without_run_id(results: list[StoredResult]) -> dict[str, Any]:
    return {r.key: r.model_dump(mode="json", exclude={"run_id"}) for r in results}


RELABELLED = [
    pytest.param(FAILS, "pass", "fail", id="pass-over-failed-checks"),
    pytest.param(FAILS, "user_error", "fail", id="user_error-over-an-agent-fault"),
    pytest.param(UNSURE, "pass", "unsure", id="pass-over-unsure"),
    pytest.param(PASSES, "fail", "pass", id="fail-over-a-pass"),
]


@pytest.mark.parametrize(("case", "claimed", "derived"), RELABELLED)
def test_a_relabelled_result_is_refused_at_its_line_and_nothing_is_stored(
    demo: simulator.RunOutcome, case: str, claimed: str, derived: str, tmp_path: Path
) -> None:
    data = _data(demo)
    [index] = _relabel(data, case, claimed)
    path = tmp_path / "run.json"
    text = _write(path, data)
    key = data["results"][index]["key"]
    with pytest.raises(ExchangeError) as caught:
        import_run(path)
    first, advice = str(caught.value).splitlines()
    persona = data["results"][index]["persona"]
    assert first.startswith(
        f"{path}:{_outcome_at(text, key)}: results[{index}].outcome: case {case!r}{f' [{persona}]' if persona else ''} "
        f"#1: stored {claimed}, but {WHY} {derived}"
    )
    assert advice.startswith("1 result(s) claim an outcome their own transcript, scores and fidelity findings")
    assert "or pass --trust (trust=True) to keep the stored outcomes" in advice
    # The command line: exit 2, the same lines, and the store as it was (its one run untouched).
    db = tmp_path / "other.db"
    with RunStore(db) as store:
        before = import_into_store(store, *import_run(export_run(demo.record, demo.results())))
    refused = runner.invoke(app, ["import", "run", str(path), "--db", str(db)])
    assert refused.exit_code == EXIT_INVALID, refused.output
    assert f"error: {first}" in refused.stderr
    with RunStore(db) as store:
        assert [run.id for run in store.list_runs()] == [before.id]
        assert _without_run_id(store.results(before.id)) == _without_run_id(demo.results())


@pytest.mark.parametrize(("case", "claimed", "derived"), RELABELLED)
def test_trust_keeps_a_relabelled_outcome_marked_and_the_totals_count_what_its_evidence_decides(
    demo: simulator.RunOutcome, case: str, claimed: str, derived: str, tmp_path: Path
) -> None:
    data = _data(demo)
    [index] = _relabel(data, case, claimed)
    path = tmp_path / "run.json"
    _write(path, data)
    db = tmp_path / "runs.db"
    kept = runner.invoke(app, ["import", "run", str(path), "--db", str(db), "--trust"])
    assert kept.exit_code == 0, kept.output
    assert "1 outcome(s) kept as imported, not re-derived (--trust)" in kept.stderr
    with RunStore(db) as store:
        [record] = store.list_runs()
        results = {r.key: r for r in store.results(record.id)}
    assert record.note.endswith("; 1 outcome(s) kept as imported, not re-derived (--trust)")
    marked = results[data["results"][index]["key"]]
    assert (marked.outcome, marked.result.outcome) == (claimed, claimed)
    assert marked.result.reasons[0] == (
        f"{TRUST_MARK}: stored {claimed}, derived {derived}; the run's totals count it as {derived}"
    )
    assert marked.result.trusted is not None
    assert marked.result.trusted.model_dump(exclude={"derived_reasons"}) == {"stored": claimed, "derived": derived}
    assert marked.counted_outcome == derived
    # The honest results come back as they were exported, unmarked; the totals are the honest run's.
    honest = {r.key: r for r in demo.results()}
    for key, stored in results.items():
        if key != marked.key:
            assert stored.model_dump(exclude={"run_id"}) == honest[key].model_dump(exclude={"run_id"})
    assert record.totals is not None
    assert demo.record.totals is not None
    fields = {"total", "passed", "failed", "error", "unsure", "user_error", "correctness"}
    assert record.totals.model_dump(include=fields) == demo.record.totals.model_dump(include=fields)


def test_every_report_shows_an_outcome_kept_on_trust(demo: simulator.RunOutcome, tmp_path: Path) -> None:
    data = _data(demo)
    _relabel(data, FAILS, "pass")
    record, results = import_run(_write_file(tmp_path / "run.json", data), trust=True)
    mark = f"{TRUST_MARK}: stored pass, derived fail"
    for fmt in ("md", "html", "json", "csv", "junit"):
        assert mark in render(fmt, record, results).decode("utf-8"), fmt
    db = tmp_path / "runs.db"
    with RunStore(db) as store:
        stored = import_into_store(store, record, results, trust=True)
    shown = runner.invoke(app, ["runs", "show", stored.id, "--db", str(db)])
    assert shown.exit_code == 0, shown.output
    assert mark in " ".join(shown.stdout.replace("│", " ").split())  # the table's "why" column, wrapped


def _write_file(path: Path, data: dict[str, Any]) -> Path:
    _write(path, data)
    return path


def test_a_forged_mark_is_not_a_pass_and_an_honest_result_loses_a_forged_one(
    demo: simulator.RunOutcome, tmp_path: Path
) -> None:
    """The mark is decided on import too: a file cannot say "kept on trust" to get past the check."""
    data = _data(demo)
    [index] = _relabel(data, FAILS, "pass")
    forged = {"stored": "pass", "derived": "pass", "derived_reasons": []}
    data["results"][index]["result"]["trusted"] = forged
    [honest] = [i for i, r in enumerate(data["results"]) if r["case"] == PASSES]
    data["results"][honest]["result"]["trusted"] = forged
    with pytest.raises(ExchangeError, match=rf"results\[{index}\]\.outcome: .*stored pass, but {WHY} fail"):
        import_run(_write_file(tmp_path / "run.json", data))
    _, results = import_run(tmp_path / "run.json", trust=True)
    assert results[index].result.trusted == TrustedOutcome(
        stored="pass", derived="fail", derived_reasons=demo.results()[index].result.reasons
    )
    assert results[honest].result.trusted is None


def test_import_into_store_decides_the_outcomes_itself(demo: simulator.RunOutcome, tmp_path: Path) -> None:
    """Results handed to the API directly, not read from a file, are held to the same rule."""
    results = [
        r.model_copy(update={"outcome": "pass", "result": r.result.model_copy(update={"outcome": "pass"})})
        if r.case == FAILS
        else r
        for r in demo.results()
    ]
    with RunStore(tmp_path / "runs.db") as store:
        with pytest.raises(ExchangeError, match=rf"^run {demo.id}: results\[\d\]\.outcome: case {FAILS!r}"):
            import_into_store(store, demo.record, results)
        assert store.list_runs() == []
        kept = import_into_store(store, demo.record, results, trust=True)
        assert kept.totals is not None
        assert kept.totals.correctness == pytest.approx(1 / 3)  # pass, unsure, and the failure counted as one


def test_the_runs_count_user_errors_setting_decides_the_outcomes_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A failure the simulated user caused is `fail` in a run that counts user errors and `user_error`
    otherwise: the setting comes from the exported run, and a file cannot flip it to change the outcome."""
    suite = _suite(tmp_path)
    monkeypatch.chdir(tmp_path)
    user = _user(("Where is my order?", False), *[(OUT_OF_CHARACTER, False)] * 4)
    with user.active():
        counted = simulator.run(
            suite, cases=["correct_agent_user_slips_early"], user_model="fake/user", db=tmp_path / "runs.db", seed=0,
            count_user_errors=True,
        )  # fmt: skip
    [stored] = counted.results()
    assert stored.outcome == "fail"
    assert "counted as the agent's failure (--count-user-errors)" in stored.result.reasons[-1]
    data = _data(counted)
    assert import_run(json.dumps(data)) == (counted.record, counted.results())
    data["run"]["settings"]["count_user_errors"] = False
    with pytest.raises(ExchangeError, match=rf"results\[0\]\.outcome: .*stored fail, but {WHY} user_error"):
        import_run(json.dumps(data))


# --- merges -----------------------------------------------------------------------------------------------


def _shard_files(tmp_path: Path) -> tuple[simulator.RunOutcome, list[Path], list[dict[str, Any]]]:
    """The whole run and two shards of it, each exported to a file (as CI jobs pass them on)."""
    db = tmp_path / "runs.db"
    whole = simulator.run([DEMO], db=db, **OPTIONS)
    files, datas = [], []
    for index in (1, 2):
        shard = simulator.run([DEMO], db=db, shard=f"{index}/2", **OPTIONS)
        datas.append(_data(shard))
        files.append(tmp_path / f"shard{index}.json")
    return whole, files, datas


def test_a_merge_of_shards_with_relabelled_results_is_refused_or_with_trust_marked_and_honest(tmp_path: Path) -> None:
    whole, files, datas = _shard_files(tmp_path)
    holder = next(i for i, data in enumerate(datas) if any(r["case"] == FAILS for r in data["results"]))
    [index] = _relabel(datas[holder], FAILS, "pass")
    texts = [_write(file, data) for file, data in zip(files, datas, strict=True)]
    key = datas[holder]["results"][index]["key"]
    db = tmp_path / "merged.db"
    with pytest.raises(ExchangeError) as caught:
        simulator.merge_runs(files, db=db)
    assert str(caught.value).startswith(
        f"{files[holder]}:{_outcome_at(texts[holder], key)}: results[{index}].outcome: case {FAILS!r} [angry] #1: "
        f"stored pass, but {WHY} fail"
    )
    refused = runner.invoke(app, ["runs", "merge", *map(str, files), "--db", str(db)])
    assert refused.exit_code == EXIT_INVALID, refused.output
    assert f"{files[holder]}:{_outcome_at(texts[holder], key)}: results[{index}].outcome" in refused.stderr
    with RunStore(db) as store:
        assert store.list_runs() == []
    merged = simulator.merge_runs(files, db=db, trust=True)
    assert merged.kept_on_trust == 1
    record = merged.outcome.record
    assert record.note.endswith("; 1 outcome(s) kept as stored, not re-derived (--trust)")
    assert record.totals is not None
    assert whole.record.totals is not None
    assert record.totals.correctness == whole.record.totals.correctness  # the honest one, not the forged
    [marked] = [r for r in merged.outcome.results() if r.key == key]
    assert (marked.outcome, marked.result.reasons[0]) == (
        "pass",
        f"{TRUST_MARK}: stored pass, derived fail; the run's totals count it as fail",
    )


def test_a_merge_refuses_a_relabelled_result_in_a_stored_shard_naming_its_run_and_key(tmp_path: Path) -> None:
    db = tmp_path / "runs.db"
    shards = [simulator.run([DEMO], db=db, shard=f"{index}/2", **OPTIONS) for index in (1, 2)]
    holder = next(i for i, shard in enumerate(shards) if any(r.case == FAILS for r in shard.results()))
    with RunStore(db) as store:
        # A shard written into the store by hand, its failure relabelled a pass.
        forged = shards[holder].record.model_copy(update={"id": store.new_run_id()})
        store.create_run(forged)
        for number, honest in enumerate(shards[holder].results()):
            stored = honest
            if honest.case == FAILS:
                position, key = number, honest.key
                result = honest.result.model_copy(update={"outcome": "pass", "reasons": []})
                stored = honest.model_copy(update={"outcome": "pass", "result": result})
            store.save_result(stored.model_copy(update={"run_id": forged.id}))
        runs_before = [run.id for run in store.list_runs()]
    others = [shard.id for i, shard in enumerate(shards) if i != holder]
    with pytest.raises(InputError) as caught:
        simulator.merge_runs([forged.id, *others], db=db)
    assert str(caught.value).startswith(
        f"run {forged.id} (shard {holder + 1}/2): result {position} (key {key!r}): case {FAILS!r} [angry] #1: "
        f"stored pass, but {WHY} fail"
    )
    with RunStore(db) as store:
        assert [run.id for run in store.list_runs()] == runs_before


def test_a_results_export_is_held_to_the_same_rule(demo: simulator.RunOutcome) -> None:
    data: dict[str, Any] = json.loads(export_results(demo.results()))
    [index] = _relabel(data, UNSURE, "pass")
    with pytest.raises(ExchangeError, match=rf"results\[{index}\]\.outcome: .*stored pass, but {WHY} unsure"):
        import_results(json.dumps(data))
    [kept] = [r for r in import_results(json.dumps(data), trust=True) if r.case == UNSURE]
    assert kept.result.reasons[0].startswith(f"{TRUST_MARK}: stored pass, derived unsure")
