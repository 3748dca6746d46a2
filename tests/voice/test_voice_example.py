"""The shipped voice example (suites/voice/, the card line in simulator/demo/bank_line.py) runs and passes: on the
fake speech backends in a second, with a planted bug failing where it should, and once with the real offline
backends (eSpeak NG and Whisper), as a user runs it."""

from __future__ import annotations

from pathlib import Path

import pytest

import simulator
from simulator.demo import bank_line
from simulator.models.scores import CaseResult
from simulator.models.transcript import UserEvent
from simulator.voice import (
    FakeRecognizer,
    FakeSynthesizer,
    Recognizer,
    SpeechBackendMissing,
    Synthesizer,
    offline_recognizer,
    offline_synthesizer,
)

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "suites" / "voice"
OUTCOMES = {"lost_card_is_blocked": "pass", "caller_on_a_train": "pass", "karte_verloren": "pass"}


def _run(tmp_path: Path) -> dict[str, CaseResult]:
    outcome = simulator.run(str(EXAMPLE), db=tmp_path / "runs.db")
    return {stored.result.case: stored.result for stored in outcome.results()}


@pytest.fixture
def fake_speech(monkeypatch: pytest.MonkeyPatch) -> None:
    """The simulator's and the agent's speech backends are the lossless fakes."""

    def backends(*args: object, **kwargs: object) -> tuple[Synthesizer, Recognizer]:
        return FakeSynthesizer(), FakeRecognizer()

    monkeypatch.setattr("simulator.runner._case.speech_backends", backends)
    monkeypatch.setattr(bank_line, "speech", lambda language: backends())


@pytest.mark.usefixtures("fake_speech")
def test_the_voice_example_passes_on_the_fake_backends(tmp_path: Path) -> None:
    results = _run(tmp_path)
    assert {case: result.outcome for case, result in results.items()} == OUTCOMES, {
        case: result.reasons for case, result in results.items()
    }
    train = results["caller_on_a_train"]
    first, silent, asked = train.transcript.agent_events()
    # Barge-in: the caller heard three seconds of the welcome, and the rest of it is not in the transcript.
    assert first.voice is not None
    assert first.voice.interrupted_after == 3
    assert "North Bank" in first.messages[0]
    assert "What can I do for you?" not in first.messages[0]
    assert "What can I do for you?" in first.voice.said[0]
    # Silence: the caller said nothing for four seconds, and the agent checked the line.
    users = [event for event in train.transcript.events if isinstance(event, UserEvent)]
    assert users[1].text == ""
    assert users[1].voice is not None
    assert users[1].voice.silence == 4
    assert "still there" in silent.messages[0]
    # The persona speaks slower than normal (rate 0.9): her line takes longer than at the normal rate.
    assert users[2].voice is not None
    assert users[2].voice.audio_seconds > len("How much money do I have?") * 0.07
    assert asked.messages == ["You have 150 dollars in your account."]
    assert [call.name for call in train.transcript.tool_calls()] == ["get_balance"]
    german = results["karte_verloren"].transcript.agent_events()[0]
    assert german.messages == ["Die Karte ist gesperrt. Die neue Karte kommt in 5 Tagen."]


@pytest.mark.usefixtures("fake_speech")
@pytest.mark.parametrize(
    ("line", "planted", "failing"),
    [
        # The agent forgets to say that the card is blocked (the tool was called: only the words tell).
        (("en", "block"), "A new card will arrive in {new_card_days} days.", ("lost_card_is_blocked",)),
        # The agent reads the balance from the wrong field.
        (
            ("en", "balance"),
            "You have {new_card_days} {currency} in your account.",
            ("lost_card_is_blocked", "caller_on_a_train"),
        ),
        # The German line answers in English.
        (
            ("de", "block"),
            "I have blocked your card. A new card will arrive in {new_card_days} days.",
            ("karte_verloren",),
        ),
    ],
)
def test_a_planted_bug_in_the_card_line_fails_its_case(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, line: tuple[str, str], planted: str, failing: tuple[str, ...]
) -> None:
    language, key = line
    monkeypatch.setitem(bank_line.SAY[language], key, planted)
    outcomes = {name: result.outcome for name, result in _run(tmp_path).items()}
    assert outcomes == {**OUTCOMES, **dict.fromkeys(failing, "fail")}


@pytest.mark.speech
def test_the_voice_example_passes_with_the_real_offline_backends(tmp_path: Path) -> None:
    try:
        offline_synthesizer()
        offline_recognizer("de").load()
    except SpeechBackendMissing as missing:
        pytest.skip(str(missing))
    results = _run(tmp_path)
    assert {case: result.outcome for case, result in results.items()} == OUTCOMES, {
        case: result.reasons for case, result in results.items()
    }
    [said] = results["lost_card_is_blocked"].transcript.agent_events()[0].voice.said  # type: ignore[union-attr]
    assert said == "I have blocked your card. A new card will arrive in 5 days."
