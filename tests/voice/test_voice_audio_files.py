"""A voice conversation's audio kept beside the store: one WAV file per conversation, both sides in turn order at
the offsets its events name, deleted with its run; a file that cannot be written leaves the verdicts as they were."""

from __future__ import annotations

from pathlib import Path

import pytest

import simulator
from simulator.models.transcript import AgentEvent, UserEvent
from simulator.voice import Audio
from simulator.voice._fake import listen
from tests.voice.test_voice_engine import _project


def _run(tmp_path: Path) -> simulator.RunOutcome:
    return simulator.run(str(_project(tmp_path)), db=tmp_path / "runs.db", seed=1)


def test_each_voice_conversation_keeps_its_audio_and_each_turn_its_place_in_it(tmp_path: Path) -> None:
    outcome = _run(tmp_path)
    results = {stored.result.case: stored.result for stored in outcome.results()}
    voice, chat = results["balance"], results["balance in chat"]
    assert chat.transcript.voice is None  # a chat case has no audio
    assert voice.transcript.voice is not None
    assert voice.transcript.voice.audio_error is None
    name = voice.transcript.voice.audio
    assert name is not None
    assert name.startswith(f"{outcome.record.id}/")
    assert name.endswith(".wav")
    path = tmp_path / "runs-audio" / name
    audio = Audio.from_wav(path.read_bytes())
    # every turn's audio is where its event says, and holds what was said on that side
    spoken = [e for e in voice.transcript.events if isinstance(e, UserEvent | AgentEvent) and e.voice is not None]
    assert spoken, "the voice conversation's events carry their audio's place"
    for event in spoken:
        assert event.voice is not None
        part = audio.cut(event.voice.offset, event.voice.offset + event.voice.audio_seconds)
        heard, _ = listen(part)
        expected = event.text if isinstance(event, UserEvent) else " ".join(event.messages)
        assert heard == expected
    last = spoken[-1].voice
    assert last is not None
    assert audio.seconds == pytest.approx(last.offset + last.audio_seconds, abs=0.01)


def test_deleting_the_run_deletes_its_audio_and_no_other_runs(tmp_path: Path) -> None:
    first, second = _run(tmp_path), _run(tmp_path)
    folder = tmp_path / "runs-audio"
    assert {p.name for p in folder.iterdir()} == {first.record.id, second.record.id}
    simulator.delete_run(first.record.id, db=tmp_path / "runs.db")
    assert {p.name for p in folder.iterdir()} == {second.record.id}


def test_audio_that_cannot_be_written_is_said_and_the_verdicts_stand(tmp_path: Path) -> None:
    (tmp_path / "runs-audio").write_text("a file where the folder would go", encoding="utf-8")
    outcome = _run(tmp_path)
    results = {stored.result.case: stored.result for stored in outcome.results()}
    voice = results["balance"].transcript.voice
    assert voice is not None
    assert voice.audio is None
    assert voice.audio_error
    assert "runs-audio" in voice.audio_error
    assert results["balance"].outcome == "pass"


def test_an_exported_voice_run_carries_its_audio_into_the_store_it_is_imported_into(tmp_path: Path) -> None:
    outcome = _run(tmp_path)
    export = tmp_path / "run.json"
    export.write_text(simulator.export_run(outcome.record.id, db=tmp_path / "runs.db"), encoding="utf-8")
    other = tmp_path / "elsewhere" / "other.db"
    imported = simulator.import_run(export, db=other)
    stored = {s.result.case: s.result for s in simulator.get_run(imported.record.id, db=other).results()}
    voice = stored["balance"].transcript.voice
    assert voice is not None
    assert voice.audio is not None
    assert voice.audio.startswith(imported.record.id + "/")  # under the run's new id
    original = next(s.result for s in outcome.results() if s.result.case == "balance").transcript.voice
    assert original is not None
    assert original.audio is not None
    copied = (other.parent / "other-audio" / voice.audio).read_bytes()
    assert copied == (tmp_path / "runs-audio" / original.audio).read_bytes()


@pytest.mark.parametrize(
    ("audio", "problem"),
    [
        ({"x/unknown.wav": "UklGRgAAAABXQVZF"}, "no result's transcript names this audio file"),
        ("NAMED", "not base64"),
    ],
)
def test_an_export_s_bad_audio_is_refused_at_its_place(tmp_path: Path, audio: object, problem: str) -> None:
    import json

    outcome = _run(tmp_path)
    data = json.loads(simulator.export_run(outcome.record.id, db=tmp_path / "runs.db"))
    if audio == "NAMED":
        (name,) = data["audio"]
        data["audio"][name] = "not base64 at all!"
    else:
        data["audio"].update(audio)
    export = tmp_path / "run.json"
    export.write_text(json.dumps(data), encoding="utf-8")
    with pytest.raises(simulator.InputError, match=problem):
        simulator.import_run(export, db=tmp_path / "other.db")
    assert not (tmp_path / "other-audio").exists()
