"""The driver's memory is flat in the number of conversations: the plan is held in compact columns, not as
a PlanItem object per conversation, it is read from the store one item at a time, and a run holds a PlanItem only
for each conversation in flight. Structural properties, pinned by counting objects, never by timing or RSS."""

from __future__ import annotations

import gc
import hashlib
import importlib.util
import json
import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest

import simulator
from simulator.errors import StoreError
from simulator.models.run import Plan, PlanItem, RunRecord
from simulator.runner import Progress
from simulator.runner._execute import items_left
from simulator.runner._plan import plan_hash, suite_identity, what_runs
from simulator.store import RunStore
from tests.factories import make_result, make_run

ROOT = Path(__file__).resolve().parents[2]


def _live_plan_items() -> int:
    return sum(1 for thing in gc.get_objects() if type(thing) is PlanItem)


def _items(count: int) -> Iterator[PlanItem]:
    for number in range(count):
        case, persona = f"case_{number % 7}", (f"persona_{number % 3}" if number % 5 else None)
        key = f"{number % 2}:{case}:{persona or '-'}:{number}"
        yield PlanItem(key=key, suite=number % 2, case=case, persona=persona, repeat=number, seed=number * 7919)


def test_a_plan_keeps_no_planitem_objects_and_gives_back_exactly_what_it_was_given() -> None:
    before = _live_plan_items()
    plan = Plan(_items(2_000))
    assert _live_plan_items() == before  # its items are columns, built again when read
    assert len(plan) == 2_000
    assert plan == list(_items(2_000))
    assert plan[3] == next(item for index, item in enumerate(_items(4)) if index == 3)
    assert plan[-1].repeat == 1_999
    assert plan[10:13] == list(_items(13))[10:]
    assert list(plan.item_keys()) == [item.key for item in _items(2_000)]
    with pytest.raises(IndexError, match="out of range"):
        plan[2_000]


def test_items_that_do_not_fit_the_columns_are_kept_whole() -> None:
    odd = [
        PlanItem(key="imported-7", suite=0, case="c"),  # not the key planning gives
        PlanItem(key="0:c:-:1", suite=0, case="c", repeat=1, seed=2**70),  # a seed past 64 bits
        PlanItem(key="-1:c:-:0", suite=-1, case="c"),  # a number out of the columns' range
    ]
    plan = Plan([*_items(3), *odd])
    assert list(plan) == [*_items(3), *odd]
    assert list(plan.item_keys())[3:] == ["imported-7", "0:c:-:1", "-1:c:-:0"]


def test_a_plan_reads_and_writes_the_json_of_a_list_of_planitems() -> None:
    items = list(_items(50))
    text = json.dumps([item.model_dump(mode="json") for item in items], indent=1)
    assert Plan.from_json(text) == items
    assert json.loads(Plan(items).to_json()) == [item.model_dump(mode="json") for item in items]
    assert Plan.from_json(" [ ] ") == []
    for damaged in ("{}", "[", '[{"key": "a", "suite": 0, "case": "c"},]', "[] and more", '[{"suite": 0}]'):
        with pytest.raises(ValueError):  # noqa: PT011  (ValidationError and JSONDecodeError are ValueErrors)
            Plan.from_json(damaged)


def test_a_run_record_validates_its_plan_from_a_list_and_dumps_it_as_one() -> None:
    record = make_run("r0").model_copy(update={"plan": Plan(_items(5))})
    data = record.model_dump(mode="json")
    assert data["plan"] == [item.model_dump(mode="json") for item in _items(5)]
    again = RunRecord.model_validate(data)
    assert isinstance(again.plan, Plan)
    assert again.plan == record.plan
    assert RunRecord.model_validate_json(record.model_dump_json()).plan == list(_items(5))


def test_the_store_keeps_the_plan_as_a_json_list_and_reads_it_back_compact(tmp_path: Path) -> None:
    with RunStore(tmp_path / "runs.db") as store:
        store.create_run(make_run("r1").model_copy(update={"plan": Plan(_items(300))}))
        with store._sql("read") as conn:
            text = conn.execute("SELECT plan FROM runs WHERE id = 'r1'").fetchone()[0]
        assert json.loads(text) == [item.model_dump(mode="json") for item in _items(300)]  # as older versions wrote
        read = store.get_run("r1")
        assert isinstance(read.plan, Plan)
        assert read.plan == list(_items(300))
        with store._sql("damage") as conn:
            conn.execute("DROP TRIGGER runs_keep_what_was_run")
            conn.execute("""UPDATE runs SET plan = '[{"key": 1}]' WHERE id = 'r1'""")
        with pytest.raises(StoreError, match=r"the plan of run r1 .* cannot be read"):
            store.get_run("r1")


def test_a_resumed_run_takes_the_items_without_a_result_in_plan_order_a_batch_of_keys_at_a_time(
    tmp_path: Path,
) -> None:
    record = make_run("r1", plan=Plan(_items(11)))
    with RunStore(tmp_path / "runs.db") as store:
        store.create_run(record)
        done = [item for item in _items(11) if item.repeat in {0, 1, 4, 5, 6, 10}]
        for item in done:
            store.save_result(make_result(record.id, item.suite, item.case, persona=item.persona, repeat=item.repeat))
        assert store.stored_keys(record.id, [item.key for item in _items(3)]) == {done[0].key, done[1].key}
        left = list(items_left(store, record, batch=3))
    assert [item.repeat for item in left] == [2, 3, 7, 8, 9]
    assert left == [item for item in _items(11) if item not in done]


def test_plan_hash_is_the_hash_of_the_whole_plan_text_as_before() -> None:
    """Fed an item at a time, the hash is still that of the one canonical text: shards planned by an earlier
    version merge with shards planned now."""
    planned = simulator.plan([ROOT / "suites/demo"], persona="all", repeat=2, seed=3)
    canonical = json.dumps(
        {
            "suites": [suite_identity(snapshot) for snapshot in planned.snapshots],
            "settings": {key: value for key, value in what_runs(planned.settings).items() if key != "live"},
            "plan": [item.model_dump(mode="json") for item in planned.items],
        },
        sort_keys=True,
        ensure_ascii=False,
    )
    expected = hashlib.sha256(canonical.encode("utf-8")).hexdigest()[:16]
    assert plan_hash(planned.snapshots, planned.settings, planned.items) == expected == planned.settings.plan_hash


CONVERSATIONS = 150
CONCURRENCY = 3


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    (tmp_path / ".git").mkdir()
    (tmp_path / "echo_agent.py").write_text(
        textwrap.dedent(
            """
            async def respond(messages, *, turn):
                return "noted " + (messages[-1]["content"] if messages else "")
            """
        ),
        encoding="utf-8",
    )
    (tmp_path / "agent.yaml").write_text("type: python\ncallable: echo_agent:respond\n", encoding="utf-8")
    (tmp_path / "suite.yaml").write_text(
        'name: flat\ncases:\n  - kind: simulation\n    name: one\n    steps:\n      - static_utterance: "hello"\n',
        encoding="utf-8",
    )
    monkeypatch.chdir(tmp_path)
    return tmp_path


@pytest.mark.parametrize(
    "executor",
    [
        "local",
        pytest.param(
            "ray",
            marks=[
                pytest.mark.ray,
                pytest.mark.skipif(
                    importlib.util.find_spec("ray") is None,
                    reason="Ray is not installed (pip install 'simulator[ray]'): its driver cannot be tested here",
                ),
            ],
        ),
    ],
)
def test_a_run_holds_a_planitem_per_conversation_in_flight_not_per_conversation_planned(
    executor: str, project: Path
) -> None:
    """Counted in the driver: with Ray, where the results come back and are stored."""
    seen: list[int] = []

    def on_event(event: object) -> None:
        if isinstance(event, Progress) and event.done % 25 == 0:
            seen.append(_live_plan_items())

    outcome = simulator.run(
        "suite.yaml", db=project / "runs.db", repeat=CONVERSATIONS, concurrency=CONCURRENCY, seed=1, on_event=on_event,
        executor=executor, ray_workers=2 if executor == "ray" else None,
    )  # fmt: skip
    assert outcome.completed
    assert outcome.record.totals is not None
    assert outcome.record.totals.total == CONVERSATIONS
    assert len(seen) == CONVERSATIONS // 25
    # The items in flight, the one just stored and a few on their way: never the plan's 150.
    assert max(seen) <= 2 * CONCURRENCY + 2, seen
