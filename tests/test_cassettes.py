"""Cassettes: a run recorded with --record replays offline with identical transcripts and verdicts, is scored again
with the checks as they are now, reruns from the first turn where the agent diverges, and reads cassettes written
by earlier versions while refusing newer ones."""

from __future__ import annotations

import asyncio
import gzip
import json
import shutil
import sqlite3
import zlib
from contextlib import closing
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

import simulator
from simulator.agents._base import AgentInput
from simulator.cassettes import CassetteFormatError, Playback, decode, encode, read_cassette_file
from simulator.cli import app
from simulator.errors import AgentError, InputError
from simulator.fence import read_sections
from simulator.llm import FakeScript
from simulator.models.cassette import CASSETTE_FORMAT, Cassette
from simulator.models.run import StoredResult
from simulator.models.transcript import AgentEvent, UserEvent
from simulator.reports.html import render_html
from simulator.reports.markdown import render_markdown
from simulator.reports.transcript_text import transcript_lines
from simulator.store import RunStore
from simulator.taps import active_tape
from simulator.tools import ToolHandle, ToolRouter
from tests.factories import agent_said

ROOT = Path(__file__).resolve().parent.parent
DATA = Path(__file__).resolve().parent / "data" / "cassettes"
GOLDEN_CASE = "refund_within_30_days"


@pytest.fixture
def demo(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A copy of the demo suites and personas in a fresh folder (the working folder), so a test may edit them."""
    (tmp_path / ".git").mkdir()  # the loader looks for personas/ no higher than here
    shutil.copytree(ROOT / "suites" / "demo", tmp_path / "suites" / "demo")
    shutil.copytree(ROOT / "personas", tmp_path / "personas")
    monkeypatch.chdir(tmp_path)
    return tmp_path


def judge(messages: list[dict[str, Any]]) -> dict[str, Any]:
    """A fake judge that answers every question the demo asks, by the question's prompt."""
    prompt = str(messages[0]["content"])
    if prompt.startswith("You check the turns"):
        return {"turns": []}
    if prompt.startswith("You review one conversation"):
        return {"turns": [], "user_turns": []}
    # A pass quotes the agent's words, as a judge model must: the last agent message it was shown.
    request = str(messages[-1]["content"])
    said = agent_said(request)[-1] if "conversation" in read_sections(request) else ""
    if "satisfied the user's goal" in prompt:
        return {"satisfied": True, "reason": "the user got what they came for", "quote": said}
    return {"verdict": "met", "reason": "the agent did it", "quote": said}


def signature(stored: StoredResult) -> tuple[Any, ...]:
    """What a replay must give back unchanged: outcome, reasons, every event (but times), steps and scores."""
    result = stored.result
    events = [event.model_dump(exclude={"at", "latency_ms"}) for event in result.transcript.events]
    for event in events:
        for call in event.get("tool_calls", []):
            call.pop("duration_ms")
    steps = [step.model_dump() for step in result.transcript.steps]
    return result.outcome, result.reasons, events, steps, [score.model_dump() for score in result.scores]


def record_demo(db: Path, *paths: str, **options: Any) -> simulator.RunOutcome:
    script = FakeScript().enqueue("judge", judge, times=500)
    with script.active():
        return simulator.run(list(paths) or "suites/demo", db=db, seed=7, record=True, **options)


# --------------------------------------------------------------------------------------------------------------
# Replay


def test_a_recorded_run_replays_offline_with_identical_transcripts_and_verdicts(demo: Path) -> None:
    db = demo / "runs.db"
    recorded = record_demo(db, judge_model="fake/judge")
    assert recorded.completed
    nothing = FakeScript()  # any model request in the replay would fail: nothing is queued
    with nothing.active():
        replayed = simulator.replay(recorded.id, db=db)
    assert nothing.requests == []
    assert replayed.id != recorded.id
    assert (replayed.record.replay_of, replayed.record.note) == (recorded.id, f"replay of {recorded.id}")
    before = {stored.key: signature(stored) for stored in recorded.results()}
    after = {stored.key: signature(stored) for stored in replayed.results()}
    assert after == before
    assert len(after) == len(recorded.record.plan) == 12
    assert recorded.record.totals is not None
    assert replayed.record.totals is not None
    assert replayed.record.totals.passed == recorded.record.totals.passed
    marks = {stored.result.transcript.replay.mode for stored in replayed.results() if stored.result.transcript.replay}
    assert marks == {"replay"}


def test_the_cassette_holds_every_exchange_of_agent_tools_user_and_judge(demo: Path) -> None:
    db = demo / "runs.db"
    script = FakeScript().enqueue("user", {"message": "It's ORD-10042.", "done": False, "reason": ""})
    script.enqueue("judge", judge, times=50)
    with script.active():
        recorded = simulator.run(
            "suites/demo/simulations.yaml", cases=["order_status_needs_the_order_number"], db=db, seed=1,
            record=True, user_model="fake/user", judge_model="fake/judge",
        )  # fmt: skip
    [item] = recorded.record.plan
    with RunStore(db) as store:
        cassette = decode(store.cassette(recorded.id, item.key) or b"", where="test")
    assert (cassette.format, cassette.simulator_version, cassette.case) == (
        CASSETTE_FORMAT, simulator.__version__, "order_status_needs_the_order_number",
    )  # fmt: skip
    kinds = {(entry.role, entry.kind) for entry in cassette.entries}
    assert kinds == {
        ("user", "model"), ("user", "turn"), ("agent", "turn"), ("tool", "tool"), ("judge", "model"),
    }  # fmt: skip
    [call] = cassette.of("tool", "tool")
    assert call.request == {"id": "call_1", "name": "lookup_order", "arguments": {"order_id": "ORD-10042"},
                            "arguments_error": None}  # fmt: skip
    assert isinstance(call.response, dict)
    assert call.response["status"] == "faked"
    user_model = cassette.of("user", "model")[0]
    request: Any = user_model.request
    assert request["messages"][0]["role"] == "system"
    assert all(entry.fingerprint for entry in cassette.of("judge", "model"))
    moves = [entry.response for entry in cassette.of("user", "turn")]
    # the first step's say line is the author's words (scripted), the second move the user model's
    assert [move["source"] for move in moves if isinstance(move, dict)] == ["scripted", "llm"]


def test_a_changed_check_takes_effect_when_the_run_is_replayed(demo: Path) -> None:
    db = demo / "runs.db"
    recorded = record_demo(db, "suites/demo/golden.yaml")
    [before] = [stored for stored in recorded.results() if stored.case == GOLDEN_CASE]
    assert before.outcome == "pass"
    suite = demo / "suites" / "demo" / "golden.yaml"
    suite.write_text(suite.read_text().replace("must_contain: [RF-5512]", "must_contain: [RF-9999]"))

    result = CliRunner().invoke(app, ["replay", recorded.id, GOLDEN_CASE, "--db", str(db), "--json"])
    assert result.exit_code == 1, result.output
    document = json.loads(result.stdout)
    [row] = document["results"]
    assert (row["case"], row["outcome"]) == (GOLDEN_CASE, "fail")
    assert any("RF-9999" in reason for reason in row["reasons"])

    # The run's own suite (as it was recorded) still passes it.
    kept = CliRunner().invoke(app, ["replay", recorded.id, GOLDEN_CASE, "--db", str(db), "--suite-from", "snapshot"])
    assert kept.exit_code == 0, kept.output


def test_a_changed_judge_request_is_unsure_without_a_judge_model_and_judged_with_one(demo: Path) -> None:
    db = demo / "runs.db"
    case = "order_status_needs_the_order_number"
    recorded = record_demo(db, "suites/demo/simulations.yaml", cases=[case], judge_model="fake/judge")
    [before] = recorded.results()
    suite = demo / "suites" / "demo" / "simulations.yaml"
    old = "The agent asks for the order number instead of guessing which order is meant."
    suite.write_text(suite.read_text().replace(old, "The agent asks for the order number politely."))

    replayed = simulator.replay(recorded.id, db=db)
    [after] = replayed.results()
    first = after.result.transcript.steps[0]
    # The changed criterion was not judged: unsure, never the agent's failure.
    assert (first.status, first.verdict) == ("unsure", "unsure")
    assert "changed since the recording" in first.rationale
    assert after.outcome == "unsure"

    live = FakeScript().enqueue("judge", judge, times=50)
    with live.active():
        judged = simulator.replay(recorded.id, db=db, judge_model="fake/judge")
    # Only the changed requests (the criterion's own, and the goal's, which quotes it) went to the judge model.
    assert live.requests
    assert all("politely" in json.dumps(request.messages) for request in live.requests)
    [rescored] = judged.results()
    assert "changed since the recording" not in rescored.result.transcript.steps[0].rationale
    assert before.outcome == rescored.outcome


# --------------------------------------------------------------------------------------------------------------
# Rerun from the first divergence

AGENT = """
import os

def respond(messages, turn):
    said = messages[-1]["content"]
    if os.environ.get("AGENT_VARIANT") == "{variant}" and turn >= 3:
        return {reply}
    return f"You said: {{said}}. Anything else?"
"""

SUITE = """
name: divergence
agent:
  type: python
  callable: changing_agent:respond
cases:
  - name: five_turns
    kind: scenario
    goal: Talk to the agent for a while.
    max_turns: 5
"""


def _divergence_suite(folder: Path, reply: str) -> Path:
    (folder / ".git").mkdir(exist_ok=True)
    (folder / "changing_agent.py").write_text(AGENT.format(variant="new", reply=reply))
    suite = folder / "suite.yaml"
    suite.write_text(SUITE)
    return suite


def _user_moves(*texts: str) -> FakeScript:
    script = FakeScript()
    for text in texts:
        script.enqueue("user", {"message": text, "done": False, "reason": ""})
    return script


def _record_five_turns(folder: Path, reply: str, monkeypatch: pytest.MonkeyPatch) -> simulator.RunOutcome:
    suite = _divergence_suite(folder, reply)
    monkeypatch.chdir(folder)
    monkeypatch.delenv("AGENT_VARIANT", raising=False)
    with _user_moves("one", "two", "three", "four", "five").active():
        return simulator.run(suite, db=folder / "runs.db", record=True, user_model="fake/user", seed=1)


def test_rerun_replays_the_turns_before_the_divergence_and_runs_the_rest_live(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    recorded = _record_five_turns(tmp_path, 'f"NEW: {said}"', monkeypatch)
    [first] = recorded.results()
    assert first.result.transcript.turns == 5
    monkeypatch.setenv("AGENT_VARIANT", "new")  # the agent changed: from turn 3 on it answers differently

    live_user = _user_moves("live four", "live five")
    with live_user.active():
        rerun = simulator.rerun(recorded.id, "five_turns", db=tmp_path / "runs.db")
    [stored] = rerun.results()
    transcript = stored.result.transcript
    assert transcript.replay is not None
    assert (transcript.replay.mode, transcript.replay.replayed_turns, transcript.replay.diverged_at) == (
        "rerun", [1, 2], 3,
    )  # fmt: skip
    users = [event.text for event in transcript.events if isinstance(event, UserEvent)]
    agents = [event.messages[0] for event in transcript.events if isinstance(event, AgentEvent)]
    assert users == ["one", "two", "three", "live four", "live five"]  # 1-3 recorded, then the live user
    assert agents == [
        "You said: one. Anything else?", "You said: two. Anything else?", "NEW: three", "NEW: live four",
        "NEW: live five",
    ]  # fmt: skip
    assert len(live_user.requests) == 2
    assert rerun.record.replay_of == recorded.id
    assert rerun.record.note == f"rerun of {recorded.id} from the first divergence"

    # Every report marks the divergence turn.
    text = "\n".join(line.text for line in transcript_lines(transcript))
    assert "turns 1-2 replayed; diverged at turn 3" in text
    assert "⟂ divergence at turn 3" in text
    assert text.index("⟂ divergence at turn 3") < text.index("NEW: three")
    with RunStore(tmp_path / "runs.db") as store:
        record = store.get_run(rerun.id)
        results = store.results(rerun.id)
        assert store.cassette_keys(rerun.id) == {stored.key}  # a rerun is recorded too: it can be replayed
    assert "⟂ **divergence at turn 3" in render_markdown(record, results)
    assert "divergence at turn 3" in render_html(record, results)


@pytest.mark.parametrize(("compare", "diverged_at"), [("exact", 3), ("normalized", None)])
def test_a_reply_that_differs_only_in_case_and_punctuation_diverges_only_when_compared_exactly(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, compare: str, diverged_at: int | None
) -> None:
    recorded = _record_five_turns(tmp_path, 'f"you said:  {said} -- anything else"', monkeypatch)
    monkeypatch.setenv("AGENT_VARIANT", "new")
    with _user_moves("live four", "live five").active():
        rerun = simulator.rerun(recorded.id, "five_turns", db=tmp_path / "runs.db", compare=compare)
    [stored] = rerun.results()
    mark = stored.result.transcript.replay
    assert mark is not None
    assert mark.diverged_at == diverged_at
    assert mark.replayed_turns == ([1, 2] if diverged_at else [1, 2, 3, 4, 5])


def test_rerun_on_the_command_line_prints_the_transcript_with_the_divergence(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    recorded = _record_five_turns(tmp_path, 'f"NEW: {said}"', monkeypatch)
    monkeypatch.setenv("AGENT_VARIANT", "new")
    runner = CliRunner()
    missing = runner.invoke(app, ["rerun", recorded.id, "five_turns", "--db", str(tmp_path / "runs.db")])
    assert missing.exit_code == 2
    assert "--from-divergence" in missing.stderr
    with _user_moves("live four", "live five").active():
        result = runner.invoke(
            app, ["rerun", recorded.id, "five_turns", "--from-divergence", "--db", str(tmp_path / "runs.db")]
        )
    assert result.exit_code in (0, 1), result.output
    assert "⟂ divergence at turn 3" in result.stdout


# --------------------------------------------------------------------------------------------------------------
# The format: versioned, read back by later versions, refused when newer


def _stored_cassette(db: Path, run_id: str) -> tuple[str, bytes]:
    with RunStore(db) as store:
        [key] = sorted(store.cassette_keys(run_id))
        return key, store.cassette(run_id, key) or b""


def test_a_checked_in_format_1_cassette_replays_on_this_version(demo: Path) -> None:
    checked_in = read_cassette_file(DATA / "v1-refund_within_30_days.json.gz")
    assert (checked_in.format, checked_in.simulator_version, checked_in.case) == (1, "0.1.0", GOLDEN_CASE)
    db = demo / "runs.db"
    recorded = record_demo(db, "suites/demo/golden.yaml", cases=[GOLDEN_CASE])
    key, _ = _stored_cassette(db, recorded.id)
    # The stored cassette swapped for the checked-in one: what is replayed is the file's conversation.
    with closing(sqlite3.connect(db)) as conn, conn:
        conn.execute("DELETE FROM cassettes WHERE run_id = ?", (recorded.id,))
    with RunStore(db) as store:
        store.save_cassette(recorded.id, key, encode(checked_in.model_copy(update={"key": key})))

    replayed = simulator.replay(recorded.id, db=db)
    [stored] = replayed.results()
    [agent] = stored.result.transcript.agent_events()
    assert agent.messages == ["Done: your refund RF-5512 of 129.00 USD for order ORD-40051 is approved (checked in)."]
    assert [call.name for call in agent.tool_calls] == ["lookup_order", "refund_order"]
    assert stored.outcome == "pass"


SIMULATION_CASE = "order_status_needs_the_order_number"


def test_a_cassette_that_asked_the_users_question_apart_replays_with_its_verdicts(demo: Path) -> None:
    """Recorded as before the simulated user's invented-fact question rode in the hallucination request (by
    ``tests/data/cassettes/record.py``, which records it again after a change to the prompts): a demo simulation
    whose fake user model says "My order number is ORD-77777" at turn 2, a fake judge that flags it
    (``user_fidelity``, asked on its own after the failure) and finds the goal not satisfied. The combined
    request is not in it, so the replay asks the questions as they were recorded: same findings, nothing
    unjudged."""
    checked_in = read_cassette_file(DATA / f"v1-{SIMULATION_CASE}-questions-apart.json.gz")
    assert (checked_in.format, checked_in.case) == (1, SIMULATION_CASE)
    db = demo / "runs.db"
    script = FakeScript().enqueue("user", {"message": "It's ORD-10042.", "done": False, "reason": "answer"}, times=9)
    with script.enqueue("judge", judge, times=60).active():
        recorded = simulator.run(
            "suites/demo/simulations.yaml", cases=[SIMULATION_CASE], user_model="fake/user",
            judge_model="fake/judge", db=db, seed=0, record=True,
        )  # fmt: skip
    key, _ = _stored_cassette(db, recorded.id)
    with closing(sqlite3.connect(db)) as conn, conn:
        conn.execute("DELETE FROM cassettes WHERE run_id = ?", (recorded.id,))
    with RunStore(db) as store:
        store.save_cassette(recorded.id, key, encode(checked_in.model_copy(update={"key": key})))

    [stored] = simulator.replay(recorded.id, db=db).results()
    result = stored.result
    # The recorded judge also found an expectation in words unmet (the agent asked again): the agent's own
    # fault, so the failure stays the agent's, with the user's finding beside it.
    assert stored.outcome == "fail", result.reasons
    assert [(f.kind, f.turn, f.evidence) for f in result.fidelity] == [("invented_fact", 2, "ORD-77777")]
    assert result.reasons[-1].startswith(
        "the simulated user slipped (simulated user, turn 2: invented_fact: “ORD-77777”"
    )
    assert "fault of its own: expectation: The agent does not ask again" in result.reasons[-1]
    hallucinations = [score for score in result.scores if score.metric == "hallucination"]
    assert hallucinations
    assert {(score.verdict, score.reason) for score in hallucinations} == {("n/a", "asks only")}
    assert not any("changed since the recording" in score.reason for score in result.scores)


def test_a_newer_cassette_format_is_refused_with_a_clear_message(demo: Path) -> None:
    newer = {**read_cassette_file(DATA / "v1-refund_within_30_days.json.gz").model_dump(mode="json"), "format": 2,
             "simulator_version": "9.0.0", "entries": [{"role": "agent", "kind": "hologram"}]}  # fmt: skip
    blob = zlib.compress(json.dumps(newer).encode())
    with pytest.raises(CassetteFormatError, match=r"format 2, written by Simulator 9\.0\.0.*upgrade Simulator"):
        decode(blob, where="cassette x")

    db = demo / "runs.db"
    recorded = record_demo(db, "suites/demo/golden.yaml", cases=[GOLDEN_CASE])
    with closing(sqlite3.connect(db)) as conn, conn:
        conn.execute("UPDATE cassettes SET data = ? WHERE run_id = ?", (blob, recorded.id))
    result = CliRunner().invoke(app, ["replay", recorded.id, "--db", str(db)])
    assert result.exit_code == 2
    assert "format 2" in result.stderr
    assert "upgrade Simulator" in result.stderr


@pytest.mark.parametrize(
    ("blob", "problem"),
    [
        (b"not compressed", "damaged"),
        (zlib.compress(b"[1, 2"), "not valid JSON"),
        (zlib.compress(b'{"entries": []}'), "no `format` number"),
        (zlib.compress(b'{"format": 1, "run_id": "r"}'), "damaged"),
    ],
)
def test_a_damaged_cassette_is_an_error_naming_it(blob: bytes, problem: str) -> None:
    with pytest.raises(CassetteFormatError, match=problem) as caught:
        decode(blob, where="cassette 0:c of run r")
    assert str(caught.value).startswith("cassette 0:c of run r: ")


# --------------------------------------------------------------------------------------------------------------
# Errors, secrets, storage


def test_errors_name_the_run_the_case_and_how_to_record(demo: Path) -> None:
    db = demo / "runs.db"
    plain = simulator.run("suites/demo/golden.yaml", db=db, seed=1)
    recorded = record_demo(db, "suites/demo/golden.yaml")
    runner = CliRunner()

    unknown = runner.invoke(app, ["replay", "20990101-000000-abcdef", "--db", str(db)])
    assert unknown.exit_code == 2
    assert "20990101-000000-abcdef" in unknown.stderr

    not_recorded = runner.invoke(app, ["replay", plain.id, "--db", str(db)])
    assert not_recorded.exit_code == 2
    said = " ".join(not_recorded.stderr.split())
    assert "without --record" in said
    assert "simulator run suites/demo/golden.yaml --record" in said

    no_case = runner.invoke(app, ["replay", recorded.id, "refund_within_30_dayz", "--db", str(db)])
    assert no_case.exit_code == 2
    assert "no recorded case named 'refund_within_30_dayz'" in no_case.stderr
    assert "refund_within_30_days" in no_case.stderr

    with pytest.raises(InputError, match="no recorded conversation with persona 'nobody'"):
        simulator.replay(recorded.id, db=db, persona="nobody")
    with pytest.raises(InputError, match="--compare must be exact or normalized"):
        simulator.rerun(recorded.id, GOLDEN_CASE, db=db, compare="fuzzy")
    with pytest.raises(InputError, match="--suite-from must be disk or snapshot"):
        simulator.replay(recorded.id, db=db, suite_from="cloud")


def test_a_suite_file_gone_from_disk_says_to_replay_from_the_snapshot(demo: Path) -> None:
    db = demo / "runs.db"
    recorded = record_demo(db, "suites/demo/golden.yaml", cases=[GOLDEN_CASE])
    (demo / "suites" / "demo" / "golden.yaml").unlink()
    with pytest.raises(InputError, match="--suite-from snapshot"):
        simulator.replay(recorded.id, db=db)
    assert simulator.replay(recorded.id, db=db, suite_from="snapshot").passed


def test_secrets_are_scrubbed_from_cassettes(demo: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    secret = "sk-cassette-secret-0123456789"
    monkeypatch.setenv("SHOP_API_KEY", secret)
    suite = demo / "suites" / "demo" / "golden.yaml"
    broken = "the jug arrived broken."
    suite.write_text(suite.read_text().replace(broken, f"{broken} My key is {secret}"))
    db = demo / "runs.db"
    recorded = record_demo(db, "suites/demo/golden.yaml", cases=[GOLDEN_CASE])
    _, blob = _stored_cassette(db, recorded.id)
    text = zlib.decompress(blob).decode()
    assert secret not in text
    assert "[redacted:SHOP_API_KEY]" in text


def test_nothing_is_recorded_without_record_and_deleting_a_run_deletes_its_cassettes(demo: Path) -> None:
    db = demo / "runs.db"
    plain = simulator.run("suites/demo/golden.yaml", db=db, seed=1)
    recorded = record_demo(db, "suites/demo/golden.yaml")
    assert active_tape() is None
    with RunStore(db) as store:
        assert store.cassette_keys(plain.id) == set()
        assert store.cassette_keys(recorded.id) == {item.key for item in recorded.record.plan}
    simulator.delete_run(recorded.id, db=db)
    with closing(sqlite3.connect(db)) as conn:
        assert conn.execute("SELECT COUNT(*) FROM cassettes").fetchone() == (0,)


def test_a_replayed_conversation_that_goes_further_than_its_recording_ends_as_an_error() -> None:
    cassette = Cassette(simulator_version="0.1.0", run_id="r", key="k", case="c")
    playback = Playback(cassette, "r")
    assert playback.next_move().done
    agent = playback.agent(None)

    async def ask() -> None:
        handle = ToolHandle(ToolRouter(), asyncio.get_running_loop())
        await agent.respond(AgentInput(messages=[], session={}, tools=handle, turn=1))

    with pytest.raises(AgentError, match="no agent reply for turn 1"):
        asyncio.run(ask())


def test_the_checked_in_cassette_is_gzip_json() -> None:
    data = json.loads(gzip.decompress((DATA / "v1-refund_within_30_days.json.gz").read_bytes()))
    assert data["format"] == 1


def test_what_a_replay_replays_is_kept_and_never_changed(demo: Path) -> None:
    db = demo / "runs.db"
    recorded = record_demo(db, "suites/demo/golden.yaml", cases=[GOLDEN_CASE])
    replayed = simulator.replay(recorded.id, db=db)
    assert simulator.get_run(replayed.id, db=db).record.replay_of == recorded.id
    with closing(sqlite3.connect(db)) as conn, pytest.raises(sqlite3.IntegrityError, match="immutable"):
        conn.execute("UPDATE runs SET replay_of = 'other' WHERE id = ?", (replayed.id,))


def test_an_agent_that_now_fails_at_turn_3_diverges_there(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    recorded = _record_five_turns(tmp_path, "1 // 0", monkeypatch)
    monkeypatch.setenv("AGENT_VARIANT", "new")
    rerun = simulator.rerun(recorded.id, "five_turns", db=tmp_path / "runs.db")
    [stored] = rerun.results()
    assert stored.outcome == "error"
    mark = stored.result.transcript.replay
    assert mark is not None
    assert (mark.replayed_turns, mark.diverged_at) == ([1, 2], 3)


def test_an_unfinished_replay_is_not_resumed_live(demo: Path) -> None:
    db = demo / "runs.db"
    recorded = record_demo(db, "suites/demo/golden.yaml", cases=[GOLDEN_CASE])
    replayed = simulator.replay(recorded.id, db=db)
    with closing(sqlite3.connect(db)) as conn, conn:
        conn.execute("PRAGMA foreign_keys = OFF")
        conn.execute("DROP TRIGGER results_no_delete")
        conn.execute("DELETE FROM results WHERE run_id = ?", (replayed.id,))
    with pytest.raises(InputError, match=f"plays back the recording of run {recorded.id} and cannot be resumed"):
        simulator.resume(replayed.id, db=db)
