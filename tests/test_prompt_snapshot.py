"""Judge prompt overrides are read when the suite is loaded and kept in the run's snapshot: a repeated or
resumed run scores with the text the run was planned with, whatever the prompt file says by then."""

from __future__ import annotations

import asyncio
import hashlib
import json
from pathlib import Path

import pytest

from simulator.errors import ConfigErrors
from simulator.llm import FakeScript, LLMClient
from simulator.loading import load_suite, validate_paths
from simulator.models.run import RunRecord, RunSettings, SuiteSnapshot
from simulator.runner import model_roles
from simulator.runner._execute import execute
from simulator.runner._plan import build_plan, new_record, restore, snapshot_of, suite_hash
from simulator.store import RunStore
from tests.factories import quoting_the_agent, section

PROMPT_V1 = "PROMPT V1. Does this hold: {expectation}\n{conversation}\nJSON only."
PROMPT_V2 = "PROMPT V2. Does this hold: {expectation}\n{conversation}\nJSON only."


def _project(root: Path) -> Path:
    (root / ".git").mkdir()
    (root / "agent.yaml").write_text("type: python\ncallable: simulator.demo.shop:respond\n", encoding="utf-8")
    (root / "prompts").mkdir()
    (root / "prompts" / "expectation.md").write_text(PROMPT_V1, encoding="utf-8")
    suite = root / "suite.yaml"
    suite.write_text(
        "name: s\njudge_prompts:\n  expectation: prompts/expectation.md\n"
        "cases:\n  - kind: scenario\n    name: c\n    goal: Say hello.\n    max_turns: 1\n"
        "    expectations: [The agent greets back.]\n",
        encoding="utf-8",
    )
    return suite


def _script() -> FakeScript:
    script = FakeScript().enqueue("judge", quoting_the_agent({"verdict": "met", "reason": "greeted"}), times=20)
    return script.enqueue("judge", {"verdict": "supported", "claim": "", "reason": "ok"}, times=20)


def _run(store: RunStore, record: RunRecord) -> list[str]:
    """Execute what is left of ``record`` with a fresh fake judge; the texts the judge was sent."""
    script = _script()
    loaded = restore(record.snapshot[0])
    llm = LLMClient(model_roles(loaded, RunSettings(judge_model="fake/judge")), fake_script=script)
    asyncio.run(execute(store, record, clients={0: llm}, checkpoints=False))
    return [str(request.messages[-1]["content"]) for request in script.requests]


def _asked_with(texts: list[str], version: str) -> bool:
    # The placeholders hold the fenced sections: the expectation in its own, tags included.
    asked = [text for text in texts if text.startswith(f"{version}. Does this hold: <expectation-")]
    return any(section(text, "expectation") == "The agent greets back." for text in asked)


def test_the_suite_keeps_the_prompt_text_it_was_loaded_with(tmp_path: Path) -> None:
    loaded = load_suite(_project(tmp_path))
    assert loaded.judge_prompts == {"expectation": PROMPT_V1}
    assert snapshot_of(loaded, "suite.yaml").prompt_overrides == {"expectation": PROMPT_V1}


def test_repeat_and_resume_score_with_the_stored_prompt_not_the_file(tmp_path: Path) -> None:
    suite = _project(tmp_path)
    loaded = load_suite(suite)
    settings = RunSettings(paths=[str(suite)], judge_model="fake/judge", seed=1)
    snapshots = [snapshot_of(loaded, str(suite))]
    plan = build_plan([loaded], settings)
    with RunStore(tmp_path / "runs.db") as store:
        first = new_record(store.new_run_id(), snapshots, settings, plan)
        store.create_run(first)
        assert _asked_with(_run(store, first), "PROMPT V1")

        # The file changes after the run was planned: what the run recorded is what it is judged with.
        (tmp_path / "prompts" / "expectation.md").write_text(PROMPT_V2, encoding="utf-8")

        stored = store.get_run(first.id)
        repeat = new_record(store.new_run_id(), stored.snapshot, stored.settings, stored.plan, repeat_of=first.id)
        store.create_run(repeat)
        asked = _run(store, repeat)
        assert _asked_with(asked, "PROMPT V1")
        assert not _asked_with(asked, "PROMPT V2")

        # A run planned before the change and resumed after it (nothing of it ran yet) likewise.
        pending = new_record(store.new_run_id(), snapshots, settings, plan)
        store.create_run(pending)
        asked = _run(store, store.get_run(pending.id))
        assert _asked_with(asked, "PROMPT V1")
        assert not _asked_with(asked, "PROMPT V2")


def test_a_run_stored_before_snapshots_kept_prompts_reads_them_from_the_files(tmp_path: Path) -> None:
    loaded = load_suite(_project(tmp_path))
    old = SuiteSnapshot.model_validate(
        snapshot_of(loaded, str(tmp_path / "suite.yaml")).model_dump(mode="json", exclude={"prompt_overrides"})
    )
    assert old.prompt_overrides == {}
    assert restore(old).judge_prompts == {"expectation": PROMPT_V1}


def test_the_suite_hash_is_unchanged_for_suites_without_overrides(tmp_path: Path) -> None:
    loaded = load_suite(_project(tmp_path))
    snapshot = snapshot_of(loaded, "suite.yaml")
    bare = snapshot.model_copy(
        update={"suite": snapshot.suite.model_copy(update={"judge_prompts": {}}), "prompt_overrides": {}}
    )
    # The hash as runs stored before the field computed it.
    before = json.dumps([bare.model_dump(mode="json", exclude={"path", "prompt_overrides"})], sort_keys=True)
    assert suite_hash([bare]) == hashlib.sha256(before.encode("utf-8")).hexdigest()[:16]
    changed = snapshot.model_copy(update={"prompt_overrides": {"expectation": PROMPT_V2}})
    assert suite_hash([changed]) != suite_hash([snapshot])


def test_validate_reports_a_prompt_file_that_cannot_be_read(tmp_path: Path) -> None:
    suite = _project(tmp_path)
    (tmp_path / "prompts" / "expectation.md").unlink()
    errors = [error.render() for error in validate_paths([suite]).errors]
    assert len(errors) == 1
    expected = "suite.yaml:3:16: judge_prompts.expectation: cannot read the prompt file 'prompts/expectation.md'"
    assert expected in errors[0]
    with pytest.raises(ConfigErrors):
        load_suite(suite)
