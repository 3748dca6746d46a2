"""Shards: `run --shard K/N` takes a stable part of the plan, the N parts are the whole plan
exactly, and `runs merge` puts shards (runs in the store or export files) back together into the run the
unsharded plan would have stored, refusing parts of other plans, duplicates and missing shards."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

import simulator
from simulator.cli import EXIT_BELOW_BAR, EXIT_INCOMPLETE, EXIT_INVALID, app
from simulator.errors import InputError
from simulator.models.run import PlanItem, StoredResult
from simulator.runner._plan import new_record, shard_of
from simulator.store import RunStore

ROOT = Path(__file__).resolve().parents[2]
runner = CliRunner()

#: Plans of several cases x personas x repeats (and one of several suites), each cut into shards below.
PLANS: list[dict[str, Any]] = [
    {"suites": ["suites/demo"], "persona": "all", "repeat": 1, "seed": 0},
    {"suites": ["suites/demo"], "persona": "all", "repeat": 3, "seed": 11},
    {"suites": ["suites/demo/simulations.yaml"], "persona": "random", "repeat": 2, "seed": 5},
    {"suites": ["suites/demo/golden.yaml", "suites/demo/scenarios.yaml"], "persona": None, "repeat": 2, "seed": 3},
]
#: What a transcript holds that depends on the clock, not on what was said and decided.
CLOCK_FIELDS = {"at", "started_at", "finished_at", "duration_ms", "latency_ms"}


@pytest.fixture(autouse=True)
def _at_the_root(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(ROOT)


def _plan(spec: dict[str, Any], shard: str | None = None) -> simulator.PlannedRun:
    return simulator.plan(
        spec["suites"], persona=spec["persona"], repeat=spec["repeat"], seed=spec["seed"], shard=shard
    )


@pytest.mark.parametrize("count", [1, 2, 3, 7])
@pytest.mark.parametrize(
    "spec", PLANS, ids=lambda spec: f"{'+'.join(spec['suites'])}-{spec['persona']}-x{spec['repeat']}"
)
def test_the_shards_of_a_plan_hold_every_item_exactly_once(spec: dict[str, Any], count: int) -> None:
    whole = _plan(spec)
    assert len(whole.items) > count or count == 7
    parts = [_plan(spec, f"{index}/{count}") for index in range(1, count + 1)]
    keys = [item.key for part in parts for item in part.items]
    assert len(keys) == len(set(keys)), "an item is in two shards"
    assert set(keys) == {item.key for item in whole.items}
    position = {item.key: index for index, item in enumerate(whole.items)}
    for index, part in enumerate(parts, start=1):
        # Each part keeps plan order and the very items (seeds included) of the whole plan.
        assert part.items == sorted(part.items, key=lambda item: position[item.key])
        assert all(item == whole.items[position[item.key]] for item in part.items)
        assert part.settings.shard == f"{index}/{count}"
        assert part.settings.plan_hash == whole.settings.plan_hash
        assert part.notes[0].startswith(f"shard {index}/{count} of plan {whole.settings.plan_hash}: ")


def test_shards_agree_wherever_the_suite_lives(tmp_path: Path) -> None:
    """The suite's content, not its path, picks the shard: a checkout elsewhere cuts the plan the same way."""
    shutil.copytree(ROOT / "suites/demo", tmp_path / "checkout/suites/demo")
    shutil.copytree(ROOT / "personas", tmp_path / "checkout/personas")
    here = simulator.plan(["suites/demo"], persona="all", shard="2/3")
    there = simulator.plan([tmp_path / "checkout/suites/demo"], persona="all", shard="2/3")
    assert [item.key for item in there.items] == [item.key for item in here.items]
    assert there.settings.plan_hash == here.settings.plan_hash


def test_the_shard_hash_is_sha256_and_not_pythons_hash() -> None:
    """Pinned values: the same in every process, on every machine, in every version that can merge."""
    item = PlanItem(key="0:a:p:1", suite=0, case="refund", persona="calm", repeat=1)
    assert [shard_of("2bb85cb26d8e5330", item, count) for count in (1, 2, 3, 7, 1000)] == [1, 2, 3, 4, 440]


def test_a_sharded_plan_without_a_seed_takes_seed_0_so_every_shard_plans_the_same() -> None:
    first = simulator.plan(["suites/demo/golden.yaml"], persona="random", shard="1/2")
    second = simulator.plan(["suites/demo/golden.yaml"], persona="random", shard="2/2")
    assert first.settings.seed == second.settings.seed == 0
    assert first.settings.plan_hash == second.settings.plan_hash


def test_a_sharded_plan_takes_the_suites_seed_when_it_writes_one() -> None:
    # suites/demo/scenarios.yaml writes `seed: 7`, the first seed of the folder's suites.
    first = simulator.plan(["suites/demo"], persona="random", shard="1/2")
    second = simulator.plan(["suites/demo"], persona="random", shard="2/2")
    assert first.settings.seed == second.settings.seed == 7
    assert first.settings.plan_hash == second.settings.plan_hash


def test_a_shard_with_no_items_is_a_run_with_no_results_that_says_so(tmp_path: Path) -> None:
    db = tmp_path / "runs.db"
    one_case = ["refund_within_30_days"]
    planned = [
        simulator.plan("suites/demo/golden.yaml", cases=one_case, seed=0, shard=f"{index}/7") for index in range(1, 8)
    ]
    empty = next(part for part in planned if not part.items)
    assert "none here: the run stores no results" in empty.notes[0]
    outcomes = [simulator.run(part, db=db) for part in planned]
    stored_empty = next(outcome for outcome in outcomes if not outcome.record.plan)
    assert stored_empty.record.status == "completed"
    assert stored_empty.record.totals is not None
    assert stored_empty.record.totals.total == 0
    merged = simulator.merge_runs([outcome.id for outcome in outcomes], db=db)
    assert merged.complete
    assert [r.case for r in merged.outcome.results()] == one_case


@pytest.mark.parametrize(
    ("value", "message"),
    [
        ("0/3", "K must be between 1 and N (3); shards are counted from 1"),
        ("4/3", "K must be between 1 and N (3)"),
        ("1/0", "N, the number of shards, must be at least 1"),
        ("3", "write it K/N, e.g. --shard 2/4"),
        ("a/b", "write it K/N"),
        ("-1/3", "write it K/N"),
        ("1/3/5", "write it K/N"),
    ],
)
def test_a_bad_shard_is_a_clear_error_naming_the_option(value: str, message: str, tmp_path: Path) -> None:
    result = runner.invoke(app, ["run", "suites/demo", "--shard", value, "--db", str(tmp_path / "runs.db")])
    assert result.exit_code == EXIT_INVALID, result.output
    assert f"--shard {value!r}: " in result.stderr
    assert message in result.stderr
    assert "Traceback" not in result.stderr
    assert not (tmp_path / "runs.db").exists() or not RunStore(tmp_path / "runs.db").list_runs()
    with pytest.raises(InputError, match="--shard"):
        simulator.plan(["suites/demo"], shard=value)


def _comparable(stored: StoredResult) -> Any:
    """A result as data, without what depends on the clock."""

    def strip(value: Any) -> Any:
        if isinstance(value, dict):
            return {key: strip(item) for key, item in value.items() if key not in CLOCK_FIELDS}
        if isinstance(value, list):
            return [strip(item) for item in value]
        return value

    return strip(stored.model_dump(mode="json", exclude={"run_id", "duration_s", "finished"}))


def _by_key(results: list[StoredResult]) -> dict[str, Any]:
    return {stored.key: _comparable(stored) for stored in results}


def _shards(db: Path, count: int, **options: Any) -> list[simulator.RunOutcome]:
    return [
        simulator.run(["suites/demo"], db=db, persona="all", seed=4, shard=f"{index}/{count}", **options)
        for index in range(1, count + 1)
    ]


def test_merged_shards_are_the_unsharded_run(tmp_path: Path) -> None:
    db = tmp_path / "runs.db"
    whole = simulator.run(["suites/demo"], db=db, persona="all", seed=4, repeat=2)
    shards = _shards(db, 3, repeat=2)
    assert all(len(shard.record.plan) < len(whole.record.plan) for shard in shards)
    merged = simulator.merge_runs([shard.id for shard in reversed(shards)], db=db)
    record = merged.outcome.record
    assert merged.complete
    assert record.status == "completed"
    assert [part.shard for part in merged.parts] == ["1/3", "2/3", "3/3"]
    assert record.plan == whole.record.plan
    assert record.settings.shard is None
    assert record.settings.plan_hash == whole.record.settings.plan_hash
    # Outcomes and transcripts per key: exactly those of the unsharded run with the same seed.
    assert _by_key(merged.outcome.results()) == _by_key(whole.results())
    assert record.totals is not None
    assert whole.record.totals is not None
    fields = {"total", "passed", "failed", "error", "unsure", "correctness", "by_suite"}
    assert record.totals.model_dump(include=fields) == whole.record.totals.model_dump(include=fields)
    assert record.totals.duration_s == max(s.record.totals.duration_s for s in shards if s.record.totals)


def test_reports_compare_and_digest_read_a_merged_run(tmp_path: Path) -> None:
    db = tmp_path / "runs.db"
    whole = simulator.run(["suites/demo"], db=db, persona="all", seed=4)
    merged = simulator.merge_runs([shard.id for shard in _shards(db, 2)], db=db).outcome
    report = runner.invoke(app, ["report", merged.id, "--format", "json", "--db", str(db)])
    assert report.exit_code == 0, report.output
    document = json.loads(report.stdout)
    assert document["run"]["id"] == merged.id
    assert len(document["results"]) == len(whole.record.plan)
    markdown = runner.invoke(app, ["report", merged.id, "--format", "md", "--db", str(db)])
    assert markdown.exit_code == 0
    assert merged.id in markdown.stdout
    compared = runner.invoke(app, ["compare", whole.id, merged.id, "--db", str(db), "--json"])
    assert compared.exit_code == 0, compared.output
    comparison = json.loads(compared.stdout)
    assert comparison["cases"]
    assert {case["change"] for case in comparison["cases"]} == {"unchanged"}
    assert comparison["correctness_a"] == comparison["correctness_b"]
    digest = runner.invoke(app, ["digest", merged.id, "--db", str(db)])
    assert digest.exit_code == 0, digest.output
    totals = whole.record.totals
    assert totals is not None
    assert digest.stdout.startswith(f"Failure digest: {totals.total - totals.passed} of {totals.total} ")


def test_the_cli_merges_exported_shards_into_another_store(tmp_path: Path) -> None:
    """CI jobs pass run exports as artefacts; the last job merges the files into its own store."""
    files = []
    for index in (1, 2, 3):
        db = tmp_path / f"shard{index}.db"
        ran = runner.invoke(app, ["run", "suites/demo", "--shard", f"{index}/3", "--db", str(db), "--persona", "all"])
        assert ran.exit_code in (0, 1), ran.output
        assert f"shard {index}/3 of plan " in ran.stderr
        shown = runner.invoke(app, ["runs", "show", "latest", "--db", str(db)])
        assert f"  shard {index}/3 of plan " in shown.stdout
        file = tmp_path / f"shard{index}.json"
        exported = runner.invoke(app, ["export", "run", "latest", "--db", str(db), "-o", str(file)])
        assert exported.exit_code == 0, exported.output
        files.append(str(file))
    final = str(tmp_path / "merged.db")
    merged = runner.invoke(app, ["runs", "merge", *files, "--db", final, "--json", "--note", "nightly"])
    # It exits as `run` of the whole plan would: the demo's planted flaw puts it below the bar.
    assert merged.exit_code == EXIT_BELOW_BAR, merged.output
    document = json.loads(merged.stdout)
    assert document["run"]["status"] == "completed"
    assert document["missing"] == []
    assert [part["shard"] for part in document["merged"]] == ["1/3", "2/3", "3/3"]
    assert [part["source"] for part in document["merged"]] == files
    # Shards without --seed plan with the suites' seed (suites/demo/scenarios.yaml writes `seed: 7`).
    whole = simulator.run(["suites/demo"], db=tmp_path / "whole.db", persona="all", seed=7)
    with RunStore(final) as store:
        record = store.get_run(document["run"]["id"])
        assert record.note == "nightly"
        assert record.imported_from is not None
        assert _by_key(store.results(record.id)) == _by_key(whole.results())


def test_a_merge_can_mix_stored_runs_and_export_files(tmp_path: Path) -> None:
    db = tmp_path / "runs.db"
    first, second = _shards(db, 2)
    file = tmp_path / "second.json"
    assert runner.invoke(app, ["export", "run", second.id, "--db", str(db), "-o", str(file)]).exit_code == 0
    merged = simulator.merge_runs([str(file), first.id], db=db)
    assert merged.complete
    assert [(part.source, part.shard) for part in merged.parts] == [(f"run {first.id}", "1/2"), (str(file), "2/2")]


def test_merge_refuses_shards_of_other_plans_saying_what_differs(tmp_path: Path) -> None:
    db = str(tmp_path / "runs.db")
    demo = simulator.run(["suites/demo"], db=db, shard="1/2")
    repeated = simulator.run(["suites/demo"], db=db, shard="2/2", repeat=2)
    other_suite = simulator.run(["suites/demo/golden.yaml"], db=db, shard="2/2")
    other_split = simulator.run(["suites/demo"], db=db, shard="2/3")

    result = runner.invoke(app, ["runs", "merge", demo.id, repeated.id, "--db", db])
    assert result.exit_code == EXIT_INVALID, result.output
    assert "these runs are not shards of one plan" in result.stderr
    assert f"run {repeated.id} (shard 2/2): repeat 2 vs 1" in result.stderr

    result = runner.invoke(app, ["runs", "merge", demo.id, other_suite.id, "--db", db])
    assert result.exit_code == EXIT_INVALID
    assert "other suites (Demo - golden conversations vs Demo - golden conversations, Demo - open" in result.stderr

    with pytest.raises(InputError, match=r"split into 3 shard\(s\) vs 2"):
        simulator.merge_runs([demo.id, other_split.id], db=db)
    with RunStore(db) as store:
        assert len(store.list_runs()) == 4  # nothing stored by a refused merge


def test_merge_refuses_a_shard_given_twice(tmp_path: Path) -> None:
    db = tmp_path / "runs.db"
    first, second = _shards(db, 2)
    again = simulator.run(["suites/demo"], db=db, persona="all", seed=4, shard="2/2")
    with pytest.raises(InputError, match=f"run {first.id} is given twice"):
        simulator.merge_runs([first.id, second.id, first.id], db=db)
    with pytest.raises(InputError, match=r"shard 2/2 is given twice \(run .* and run .*\): give each shard once"):
        simulator.merge_runs([first.id, second.id, again.id], db=db)


def test_merge_reports_missing_shards_and_stores_a_partial_merge_only_when_asked(tmp_path: Path) -> None:
    db = tmp_path / "runs.db"
    shards = _shards(db, 3)
    given = [shards[0].id, shards[2].id]
    missing = len(shards[1].record.plan)
    result = runner.invoke(app, ["runs", "merge", *given, "--db", str(db)])
    assert result.exit_code == EXIT_INVALID, result.output
    assert f"shard 2/3: no run given ({missing} item(s))" in result.stderr
    assert "--allow-partial" in result.stderr

    result = runner.invoke(app, ["runs", "merge", *given, "--db", str(db), "--allow-partial"])
    assert result.exit_code == EXIT_INCOMPLETE, result.output
    assert f"missing: shard 2/3: no run given ({missing} item(s))" in result.stderr
    merged = simulator.get_run("latest", db=db)
    assert merged.record.status == "interrupted"
    assert "partial, missing shard 2/3" in merged.record.note
    assert len(merged.results()) == len(merged.record.plan) - missing
    # A partial merge is an interrupted run: resuming it runs the missing items here.
    resumed = simulator.resume(merged.id, db=db)
    whole = simulator.run(["suites/demo"], db=db, persona="all", seed=4)
    assert resumed.record.status == "completed"
    assert _by_key(resumed.results()) == _by_key(whole.results())


def test_a_shard_that_did_not_finish_is_reported_with_how_many_items_it_misses(tmp_path: Path) -> None:
    db = tmp_path / "runs.db"
    first = simulator.run(["suites/demo"], db=db, persona="all", seed=4, shard="1/2")
    planned = simulator.plan(["suites/demo"], persona="all", seed=4, shard="2/2")
    with RunStore(db) as store:  # stored, never run: as a CI job killed before its first result
        record = new_record(store.new_run_id(), planned.snapshots, planned.settings, planned.items)
        store.create_run(record)
    with pytest.raises(InputError) as refused:
        simulator.merge_runs([first.id, record.id], db=db)
    size = len(planned.items)
    assert f"shard 2/2 (run {record.id}): {size} of its {size} item(s) have no result" in str(refused.value)
    # Resuming a shard runs that shard, and it stays that shard: then the merge is whole.
    resumed = simulator.resume(record.id, db=db)
    assert resumed.record.settings.shard == "2/2"
    assert len(resumed.results()) == size
    repeated = simulator.repeat(record.id, db=db)
    assert repeated.record.settings.shard == "2/2"
    assert repeated.record.plan == record.plan
    assert simulator.merge_runs([first.id, resumed.id], db=db).complete


def test_merge_of_nothing_or_a_missing_file_is_a_clear_error(tmp_path: Path) -> None:
    db = str(tmp_path / "runs.db")
    result = runner.invoke(app, ["runs", "merge", str(tmp_path / "gone.json"), "--db", db])
    assert result.exit_code == EXIT_INVALID
    assert "gone.json: no such file: give run export files (simulator export run) or run ids" in result.stderr
    with pytest.raises(InputError, match="nothing to merge"):
        simulator.merge_runs([], db=db)


def test_sharded_plans_are_not_combined_one_file_at_a_time() -> None:
    """combine() re-indexes per-file plans (the pytest plugin's way): a shard of each file would not be a
    shard of the combined plan, so it is refused rather than stored with a wrong plan hash."""
    from simulator.runner import combine

    parts = [simulator.plan(path, shard="1/2") for path in ("suites/demo/golden.yaml", "suites/demo/scenarios.yaml")]
    with pytest.raises(InputError, match="sharded plans cannot be combined"):
        combine(parts)
    whole = combine(
        [simulator.plan(path, seed=1) for path in ("suites/demo/golden.yaml", "suites/demo/scenarios.yaml")]
    )
    assert whole.settings.plan_hash is not None
    assert whole.settings.plan_hash != simulator.plan("suites/demo/golden.yaml", seed=1).settings.plan_hash
