"""The airline example (examples/airline): it loads cleanly, its refund rule does what its docstring says, and a
run ends as its suite announces: every case passes but the planted bug's, which only its state check catches."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest
import yaml

import simulator
from simulator.code_refs import resolve
from simulator.loading import validate_paths
from simulator.models.world import WorldAccess, WorldSpec
from simulator.world import SeededWorld, World

EXAMPLE = Path(__file__).resolve().parent.parent.parent / "examples" / "airline"
BUGGY = "cancel_the_paris_flight"


def _world() -> World:
    return SeededWorld(WorldSpec(collections=json.loads((EXAMPLE / "world.json").read_text()))).copy()


def _refund(world: World, booking_id: str) -> Any:
    return resolve("fares:refund_booking", what="world function", folders=[EXAMPLE])(world=world, booking_id=booking_id)


def test_the_example_loads_cleanly() -> None:
    report = validate_paths([EXAMPLE])
    assert [error.render() for error in report.errors] == []
    assert [len(loaded.suite.cases) for loaded in report.suites] == [6]


@pytest.mark.parametrize(
    ("fare", "fare_type", "amount"),
    [(149.0, "saver", 89.0), (50.0, "saver", 0.0), (310.0, "flex", 310.0), (89.0, "basic", None)],
)
def test_the_refund_rule(fare: float, fare_type: str, amount: float | None) -> None:
    refund_amount = resolve("fares:refund_amount", what="world function", folders=[EXAMPLE])
    assert refund_amount(fare, fare_type) == amount


@pytest.mark.parametrize(
    ("booking_id", "cancel_first", "answer", "changed"),
    [
        (
            "BK1001",
            True,
            {"refund_id": "2", "amount": 89.0, "currency": "EUR", "fare": 149.0, "fee": 60.0},
            ["refunds/2", "bookings/BK1001"],
        ),
        (
            "BK1002",
            True,
            {"refund_id": "2", "amount": 310.0, "currency": "EUR", "fare": 310.0, "fee": 0.0},
            ["refunds/2", "bookings/BK1002"],
        ),
        ("BK1001", False, {"error": "booking BK1001 is confirmed: only a cancelled booking is refunded"}, []),
        ("BK1004", True, {"error": "booking BK1004 is on a basic fare, which is not refundable"}, []),
        ("BK1009", False, {"error": "booking BK1009 has already been refunded"}, []),
        ("BK9999", False, {"error": "there is no booking BK9999"}, []),
    ],
)
def test_the_python_world_tool_refunds_by_the_rule_and_records_what_it_changed(
    booking_id: str, cancel_first: bool, answer: dict[str, Any], changed: list[str]
) -> None:
    world = _world()
    if cancel_first:
        world.update("bookings", booking_id, {"status": "cancelled"})
    world.begin_access()
    assert _refund(world, booking_id) == answer
    access = world.end_access()
    assert [change.label() for change in access.changes] == changed
    refunds = world.find("refunds", {"booking": booking_id})
    if changed:
        assert world.current("bookings", booking_id) == {
            **(world.initial("bookings", booking_id) or {}),
            "status": "cancelled",
            "refunded": True,
        }
        assert refunds == [{"id": "2", "booking": booking_id, "amount": answer["amount"], "currency": "EUR"}]
    else:
        seeded = [{"id": "1", "booking": "BK1009", "amount": 39.0, "currency": "EUR"}]
        assert refunds == (seeded if booking_id == "BK1009" else [])
    assert world.seed.collections["refunds"].keys() == {"1"}  # the seed itself is never touched


def _copy(tmp_path: Path, *, without_state_checks: bool = False) -> Path:
    folder = tmp_path / "airline"
    shutil.copytree(EXAMPLE, folder, ignore=shutil.ignore_patterns("__pycache__"))
    if without_state_checks:
        suite = yaml.safe_load((folder / "bookings.yaml").read_text(encoding="utf-8"))
        for case in suite["cases"]:
            case.pop("expect_state", None)
            for step in case.get("steps", []):
                step.pop("expect_state", None)
        (folder / "bookings.yaml").write_text(yaml.safe_dump(suite, sort_keys=False), encoding="utf-8")
    return folder


def _results(folder: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, Any]:
    monkeypatch.chdir(folder.parent)
    return {result.case: result for result in simulator.simulate(str(folder / "bookings.yaml"))}


def test_every_case_passes_but_the_planted_bug_which_fails_on_its_state_check(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    results = _results(_copy(tmp_path), monkeypatch)
    assert {case: result.outcome for case, result in results.items()} == {
        "cancel_and_refund_a_saver_fare": "pass",
        BUGGY: "fail",
        "add_a_bag": "pass",
        "a_question_changes_nothing": "pass",
        "a_cancelled_booking_stays_as_it_is": "pass",
        "another_customers_booking_is_left_alone": "pass",
    }
    buggy = results[BUGGY]
    # The agent said the right thing about the right booking...
    assert buggy.transcript.agent_events()[-1].messages == ["Your booking BK1002 to Paris is cancelled."]
    # ...and changed the wrong one: the state check's diff names both records.
    evidence = "\n".join([*buggy.reasons, *(score.reason for score in buggy.scores if score.verdict == "not_met")])
    assert "bookings/BK1002" in evidence
    assert "bookings/BK1003" in evidence
    assert buggy.transcript.world is not None
    (change,) = buggy.transcript.world.changes
    assert (change.label(), change.action) == ("bookings/BK1003", "update")
    assert (change.fields["status"].before, change.fields["status"].after) == ("confirmed", "cancelled")


def test_without_its_state_checks_the_planted_bug_passes(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """What the agent says and the tools it calls look right: nothing but the world shows the bug."""
    results = _results(_copy(tmp_path, without_state_checks=True), monkeypatch)
    assert {result.outcome for result in results.values()} == {"pass"}


def _changed(access: WorldAccess | None) -> list[str] | None:
    return None if access is None else [change.label() for change in access.changes]


def test_the_world_calls_are_recorded_with_what_they_changed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    results = _results(_copy(tmp_path), monkeypatch)
    refunded = results["cancel_and_refund_a_saver_fare"].transcript
    calls = [(call.name, call.status, _changed(call.world)) for call in refunded.tool_calls()]
    assert calls == [
        ("get_booking", "executed", []),
        ("cancel_booking", "executed", ["bookings/BK1001"]),
        ("get_flight", "executed", []),
        ("get_booking", "executed", []),
        ("refund_booking", "executed", ["refunds/2", "bookings/BK1001"]),
    ]
    assert refunded.world is not None
    assert [(change.label(), change.action) for change in refunded.world.changes] == [
        ("bookings/BK1001", "update"),
        ("refunds/2", "insert"),
    ]
    question = results["a_question_changes_nothing"].transcript.world
    assert question is not None
    assert question.changes == []
