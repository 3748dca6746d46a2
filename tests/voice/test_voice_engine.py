"""Voice cases end to end on the fake speech backends: the user's turns are spoken, the agent hears and answers
with audio, and what the recogniser heard of it is the transcript every check reads; barge-in, silence, and a
recognition the recogniser was unsure of (never the agent's fail)."""

from __future__ import annotations

import asyncio
import textwrap
from pathlib import Path
from typing import cast

import pytest
from typer.testing import CliRunner

import simulator
from simulator.agents import AgentInput, AgentReply
from simulator.cli import app
from simulator.errors import ConfigErrors
from simulator.models.scores import CaseResult
from simulator.models.transcript import AgentEvent, UserEvent
from simulator.tools import ToolHandle
from simulator.voice import (
    Audio,
    FakeRecognizer,
    FakeSynthesizer,
    Recognizer,
    Speaker,
    SpokenTextAgent,
    Synthesizer,
    TurnAudio,
    VoiceConversation,
)
from simulator.voice._fake import CHARACTER_SECONDS

AGENTS_PY = """\
    from simulator.voice import Audio, FakeRecognizer, FakeSynthesizer, Speaker

    EARS, MOUTH = FakeRecognizer(), FakeSynthesizer()


    async def _answer(wav, amount):
        heard = (await EARS.transcribe(Audio.from_wav(wav), "en")).text
        if not heard:
            text = "Are you still there?"
        elif "balance" in heard:
            text = f"Your balance is {amount} dollars."
        else:
            text = f"You said: {heard}"
        return (await MOUTH.synthesize(text, Speaker())).wav(), text


    async def bank(wav, context):
        return await _answer(wav, "150")


    async def buggy_bank(wav, context):
        return await _answer(wav, "115")


    def says_text(wav, context):
        return "Your balance is 150 dollars."


    def text_bank(messages):
        said = messages[-1]["content"]
        if not said:
            return "Are you still there?"
        return "Your balance is 150 dollars." if "balance" in said else f"You said: {said}"
"""

SUITE = """\
    name: voice bank
    modality: voice
    voice: {backend: fake}
    agent:
      type: python
      callable: voice_agents:{callable}
      audio: {audio}
    personas: [caller]
    cases:
      - kind: simulation
        name: balance
        steps:
          - static_utterance: What is my balance?
            checks:
              - must_contain: ["150 dollars"]
      - kind: simulation
        name: balance in chat
        modality: chat
        steps:
          - static_utterance: What is my balance?
            checks:
              - must_contain: ["150 dollars"]
"""

PERSONA = "name: caller\npersonality: A customer calling the bank.\n"


def _project(tmp_path: Path, *, callable_: str = "bank", audio: bool = True, persona: str = PERSONA) -> Path:
    (tmp_path / ".git").mkdir(exist_ok=True)
    (tmp_path / "voice_agents.py").write_text(textwrap.dedent(AGENTS_PY), encoding="utf-8")
    suite = textwrap.dedent(SUITE).replace("{callable}", callable_).replace("{audio}", str(audio).lower())
    (tmp_path / "suite.yaml").write_text(suite, encoding="utf-8")
    (tmp_path / "personas").mkdir(exist_ok=True)
    (tmp_path / "personas" / "caller.yaml").write_text(textwrap.dedent(persona), encoding="utf-8")
    return tmp_path / "suite.yaml"


def _results(suite: Path, tmp_path: Path) -> dict[str, CaseResult]:
    outcome = simulator.run(str(suite), db=tmp_path / "runs.db", seed=1)
    return {stored.result.case: stored.result for stored in outcome.results()}


def _agent_events(result: CaseResult) -> list[AgentEvent]:
    return result.transcript.agent_events()


def test_a_spoken_conversation_round_trips_and_its_checks_read_what_was_heard(tmp_path: Path) -> None:
    results = _results(_project(tmp_path), tmp_path)
    voice = results["balance"]
    assert voice.outcome == "pass", voice.reasons
    [user] = [event for event in voice.transcript.events if isinstance(event, UserEvent)]
    [agent] = _agent_events(voice)
    assert user.text == "What is my balance?"
    assert user.voice is not None
    assert user.voice.audio_seconds == pytest.approx(19 * CHARACTER_SECONDS, abs=0.01)
    # Both texts kept: what the recogniser heard is the reply, the agent's own text beside it.
    assert agent.messages == ["Your balance is 150 dollars."]
    assert agent.voice is not None
    assert agent.voice.said == ["Your balance is 150 dollars."]
    assert agent.voice.confidence == 1.0
    assert agent.voice.offset == user.voice.audio_seconds
    assert agent.voice.first_audio_ms is not None
    assert agent.voice.end_audio_ms is not None
    assert voice.transcript.voice is not None
    assert voice.transcript.voice.recognizer == "fake-recognizer"


def test_the_chat_case_beside_it_is_untouched(tmp_path: Path) -> None:
    chat = _results(_project(tmp_path, callable_="text_bank", audio=False), tmp_path)["balance in chat"]
    assert chat.outcome == "pass", chat.reasons
    assert chat.transcript.voice is None
    assert all(event.voice is None for event in chat.transcript.agent_events())
    dumped = chat.transcript.model_dump(mode="json")
    assert "voice" not in dumped
    assert all("voice" not in event for event in dumped["events"])


def test_a_planted_bug_fails_on_a_clear_recording(tmp_path: Path) -> None:
    voice = _results(_project(tmp_path, callable_="buggy_bank"), tmp_path)["balance"]
    assert voice.outcome == "fail", voice.reasons
    assert _agent_events(voice)[0].messages == ["Your balance is 115 dollars."]


def test_a_text_agent_runs_in_voice_modality_hearing_the_users_audio(tmp_path: Path) -> None:
    voice = _results(_project(tmp_path, callable_="text_bank", audio=False), tmp_path)["balance"]
    assert voice.outcome == "pass", voice.reasons
    [agent] = _agent_events(voice)
    assert agent.messages == ["Your balance is 150 dollars."]
    assert agent.voice is not None
    assert agent.voice.said == ["Your balance is 150 dollars."]


def test_a_barge_in_keeps_only_what_was_said_before_it(tmp_path: Path) -> None:
    persona = PERSONA + "voice: {barge_in_after: 1.0}\n"
    voice = _results(_project(tmp_path, persona=persona), tmp_path)["balance"]
    [agent] = _agent_events(voice)
    # 14 characters take 0.98 s: the cut falls in the 15th.
    [heard] = agent.messages
    assert heard in ("Your balance i", "Your balance is")
    assert agent.voice is not None
    assert agent.voice.interrupted_after == 1.0
    assert agent.voice.audio_seconds == pytest.approx(1.0)
    # The check read the cut transcript: "150 dollars" was never heard.
    assert voice.outcome == "fail", voice.reasons


SILENT_SUITE = """\
    name: silent caller
    modality: voice
    voice: {backend: fake}
    agent: {type: python, callable: "voice_agents:bank", audio: true}
    cases:
      - kind: simulation
        name: silence
        steps:
          - silence: 4
            checks: [{must_contain: [still there]}]
"""


def test_a_silent_turn_sends_seconds_of_silence_and_is_marked(tmp_path: Path) -> None:
    _project(tmp_path)
    (tmp_path / "silent.yaml").write_text(textwrap.dedent(SILENT_SUITE), encoding="utf-8")
    result = _results(tmp_path / "silent.yaml", tmp_path)["silence"]
    assert result.outcome == "pass", result.reasons
    [user] = [event for event in result.transcript.events if isinstance(event, UserEvent)]
    assert user.text == ""
    assert user.voice is not None
    assert user.voice.silence == 4
    assert user.voice.audio_seconds == 4


@pytest.mark.parametrize(
    ("callable_", "mishear", "outcome"),
    [
        # The recogniser misheard a correct answer, and said it was unsure: never the agent's fail.
        ("bank", {"150": "115"}, "unsure"),
        # The agent said the wrong amount, heard clearly: the agent's fail.
        ("buggy_bank", {}, "fail"),
        # Confidence is the turn's, not a word's: a wrong amount on a turn heard badly anywhere is unsure too.
        ("buggy_bank", {"balance": "valance"}, "unsure"),
    ],
)
def test_a_failure_on_a_turn_heard_with_low_confidence_is_unsure(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, callable_: str, mishear: dict[str, str], outcome: str
) -> None:
    def backends(*args: object, **kwargs: object) -> tuple[Synthesizer, Recognizer]:
        return FakeSynthesizer(), FakeRecognizer(mishear=mishear)

    monkeypatch.setattr("simulator.runner._case.speech_backends", backends)
    result = _results(_project(tmp_path, callable_=callable_), tmp_path)["balance"]
    assert result.outcome == outcome, result.reasons
    if outcome == "unsure":
        assert "turn 1" in result.reasons[0]
        assert "confidence 0.40" in result.reasons[0]


@pytest.mark.parametrize(
    ("confidence", "outcome"),
    [
        # Simulator's own ears misheard the user for a text agent, and were unsure: the harness's error.
        (0.4, "unsure"),
        # Heard (wrongly) with confidence: the failure stands, with what was heard on record for a person to see.
        (0.9, "fail"),
    ],
)
def test_a_text_agent_answering_what_the_harness_misheard_is_not_blamed_when_it_was_unsure(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, confidence: float, outcome: str
) -> None:
    def backends(*args: object, **kwargs: object) -> tuple[Synthesizer, Recognizer]:
        return FakeSynthesizer(), FakeRecognizer(mishear={"balance?": "valance?"}, misheard_confidence=confidence)

    monkeypatch.setattr("simulator.runner._case.speech_backends", backends)
    result = _results(_project(tmp_path, callable_="text_bank", audio=False), tmp_path)["balance"]
    assert result.outcome == outcome, result.reasons
    [reply] = _agent_events(result)
    assert reply.voice is not None
    assert reply.voice.user_heard == "What is my valance?"
    assert reply.voice.user_heard_confidence == confidence
    if outcome == "unsure":
        assert "heard the user's turn 1 for the agent as 'What is my valance?'" in result.reasons[0]


def test_a_voice_suite_runs_from_the_command_line_and_its_report_renders(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    suite = _project(tmp_path)
    monkeypatch.chdir(tmp_path)
    runner = CliRunner()
    ran = runner.invoke(app, ["run", str(suite), "--db", str(tmp_path / "runs.db"), "--case", "balance"])
    assert ran.exit_code == 0, ran.output
    report = tmp_path / "report.md"
    shown = runner.invoke(app, ["report", "latest", "--db", str(tmp_path / "runs.db"), "-o", str(report)])
    assert shown.exit_code == 0, shown.output
    assert "Your balance is 150 dollars." in report.read_text(encoding="utf-8")


def test_a_voice_run_without_a_speech_backend_stops_before_it_starts(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from simulator.voice._missing import SpeechBackendMissing

    def missing() -> None:
        raise SpeechBackendMissing("the offline synthesizer eSpeak NG is not installed: pip install 'simulator[voice]'")

    for factory in ("offline_synthesizer", "offline_recognizer"):
        monkeypatch.setattr(f"simulator.voice._backends.{factory}", missing)
    suite = _project(tmp_path)
    suite.write_text(suite.read_text(encoding="utf-8").replace("voice: {backend: fake}\n", ""), encoding="utf-8")
    with pytest.raises(ConfigErrors) as raised:
        simulator.run(str(suite), db=tmp_path / "runs.db")
    assert "pip install 'simulator[voice]'" in str(raised.value)
    assert not (tmp_path / "runs.db").exists()  # nothing was stored


@pytest.mark.parametrize(
    ("where", "old", "new", "error"),
    [
        ("suite.yaml", "modality: voice", "modality: audio", "modality: must be one of chat, voice"),
        (
            "suite.yaml",
            "voice: {backend: fake}",
            "voice: {backend: fake, min_confidence: 2}",
            "voice.min_confidence: must be at most 1",
        ),
        (
            "suite.yaml",
            "checks:",
            "barge_in_after: 0\n        checks:",
            "cases[0].steps[0].barge_in_after: must be more than 0",
        ),
        ("personas/caller.yaml", "bank.\n", "bank.\nvoice: {noise: 1.5}\n", "voice.noise: must be at most 1"),
    ],
)
def test_a_bad_voice_setting_is_an_error_at_its_key(tmp_path: Path, where: str, old: str, new: str, error: str) -> None:
    suite = _project(tmp_path)
    path = tmp_path / where
    path.write_text(path.read_text(encoding="utf-8").replace(old, new, 1), encoding="utf-8")
    with pytest.raises(ConfigErrors) as raised:
        simulator.run(str(suite), db=tmp_path / "runs.db")
    assert f": {error}" in str(raised.value)


def test_a_voice_agent_that_returns_no_audio_is_an_error_naming_it(tmp_path: Path) -> None:
    result = _results(_project(tmp_path, callable_="says_text"), tmp_path)["balance"]
    assert result.outcome == "error"
    assert "voice_agents:says_text" in (result.transcript.error or "")
    assert "WAV bytes" in (result.transcript.error or "")


class _Echo:
    """A text agent that repeats what it heard."""

    async def respond(self, request: AgentInput) -> AgentReply:
        return AgentReply(messages=[f"heard {request.messages[-1]['content']}"])

    async def aclose(self) -> None:
        return None


def test_the_recording_holds_both_sides_of_every_turn_in_order() -> None:
    async def talk() -> tuple[Audio, list[TurnAudio]]:
        synthesizer, recognizer = FakeSynthesizer(), FakeRecognizer()
        agent = SpokenTextAgent(_Echo(), recognizer, synthesizer, Speaker())
        voice = VoiceConversation(agent, synthesizer=synthesizer, recognizer=recognizer, speaker=Speaker())
        tools = cast(ToolHandle, None)
        for turn, text in enumerate(["hi", "bye"], start=1):
            await voice.speak(text, turn=turn, interrupt_after=0.5 if turn == 2 else None)
            reply = await voice.respond(
                AgentInput(messages=[{"role": "user", "content": text}], session={}, tools=tools, turn=turn)
            )
            assert reply.messages == [f"heard {text}"[: 8 if turn == 2 else None]]
        return voice.recording()

    audio, offsets = asyncio.run(talk())
    sides = [(part.turn, part.side) for part in offsets]
    assert sides == [(1, "user"), (1, "agent"), (2, "user"), (2, "agent")]
    assert [part.start for part in offsets[1:]] == [part.end for part in offsets[:-1]]
    assert offsets[-1].end - offsets[-1].start == pytest.approx(0.5)
    assert audio.seconds == pytest.approx(offsets[-1].end)


def test_the_run_records_the_speech_backends_it_used(tmp_path: Path) -> None:
    outcome = simulator.run(str(_project(tmp_path)), db=tmp_path / "runs.db", seed=1)
    assert outcome.record.versions["synthesizer"] == "fake-speech"
    assert outcome.record.versions["recognizer"] == "fake-recognizer"
