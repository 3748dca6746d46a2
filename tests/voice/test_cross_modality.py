"""The same suite in chat and in voice: ``--modality`` overrides every case's modality for a run, and
``--modality chat,voice`` runs the suite once in each (two stored runs, the voice run naming the chat run) and
compares them case by case; the exit code is the worse run's. On the fake speech backends."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest
from typer.testing import CliRunner

import simulator
from simulator.cli import app
from simulator.voice import FakeRecognizer, FakeSynthesizer, Recognizer, Synthesizer

AGENTS_PY = """\
    def text_bank(messages):
        said = messages[-1]["content"]
        return "Your balance is 150 dollars." if "balance" in said else f"You said: {said}"
"""

# A chat suite: no case says `modality`, but one says chat and `--modality` wins over it too.
SUITE = """\
    name: bank
    voice: {backend: fake}
    agent: {type: python, callable: "bank_agent:text_bank"}
    cases:
      - kind: simulation
        name: balance
        steps:
          - static_utterance: What is my balance?
            checks: [{must_contain: ["150 dollars"]}]
      - kind: simulation
        name: echo
        modality: chat
        steps:
          - static_utterance: Hello there
            checks: [{must_contain: ["Hello"]}]
"""

REALTIME_SUITE = """\
    name: phone line
    voice: {backend: fake}
    agent: {type: realtime, url: "ws://127.0.0.1:9/realtime"}
    cases:
      - kind: simulation
        name: hello
        steps:
          - static_utterance: Hello
"""


def _project(tmp_path: Path, suite: str = SUITE) -> Path:
    (tmp_path / ".git").mkdir(exist_ok=True)
    (tmp_path / "bank_agent.py").write_text(textwrap.dedent(AGENTS_PY), encoding="utf-8")
    path = tmp_path / "suite.yaml"
    path.write_text(textwrap.dedent(suite), encoding="utf-8")
    return path


def _run(tmp_path: Path, *options: str, suite: str = SUITE, seed: str | None = "1") -> tuple[int, str]:
    seeded = ["--seed", seed] if seed is not None else []
    ran = CliRunner().invoke(
        app, ["run", str(_project(tmp_path, suite)), "--db", str(tmp_path / "runs.db"), *seeded, *options]
    )
    return ran.exit_code, ran.output


def _mishear_clearly(monkeypatch: pytest.MonkeyPatch) -> None:
    """The recogniser hears "115" for "150" and is sure of it: the voice run fails where the chat run passes."""

    def backends(*args: object, **kwargs: object) -> tuple[Synthesizer, Recognizer]:
        return FakeSynthesizer(), FakeRecognizer(mishear={"150": "115"}, misheard_confidence=0.95)

    monkeypatch.setattr("simulator.runner._case.speech_backends", backends)


def test_chat_and_voice_are_two_stored_runs_the_voice_one_naming_the_chat_one(tmp_path: Path) -> None:
    code, output = _run(tmp_path, "--modality", "chat,voice")
    assert code == 0, output
    voice, chat = simulator.list_runs(db=tmp_path / "runs.db")  # newest first
    assert chat.settings.modality == "chat"
    assert voice.settings.modality == "voice"
    assert voice.settings.paired_with == chat.id
    assert chat.settings.paired_with is None
    assert chat.settings.seed == voice.settings.seed == 1
    assert f"chat run {chat.id} and voice run {voice.id}, case by case:" in output
    assert "bank / balance: passes in both: chat pass, voice pass" in output
    assert "bank / echo: passes in both: chat pass, voice pass" in output


def test_a_case_passing_in_chat_and_failing_in_voice_is_shown_so_and_exits_1(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _mishear_clearly(monkeypatch)
    code, output = _run(tmp_path, "--modality", "chat,voice")
    assert code == 1, output  # the chat run passed: the worse of the two is the voice run's
    assert "bank / balance: passes in chat, not in voice: chat pass, voice fail" in output
    assert "bank / echo: passes in both" in output
    assert "1 case(s) pass in chat and not in voice, 0 in voice and not in chat" in output
    assert "correctness: chat 100.0% (2/2), voice 50.0% (1/2)" in output


def test_without_a_seed_both_runs_draw_the_same_one(tmp_path: Path) -> None:
    code, output = _run(tmp_path, "--modality", "chat,voice", seed=None)
    assert code == 0, output
    voice, chat = simulator.list_runs(db=tmp_path / "runs.db")
    assert voice.settings.seed == chat.settings.seed


def test_the_order_given_is_the_comparisons_order(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _mishear_clearly(monkeypatch)
    code, output = _run(tmp_path, "--modality", "voice,chat")
    assert code == 1, output
    chat, voice = simulator.list_runs(db=tmp_path / "runs.db")
    assert chat.settings.paired_with == voice.id
    assert "bank / balance: passes in chat, not in voice: voice fail, chat pass" in output


def _voice_turns(run_id: str, db: Path) -> dict[str, bool]:
    outcome = simulator.get_run(run_id, db=db)
    return {stored.case: stored.result.transcript.voice is not None for stored in outcome.results()}


def test_modality_voice_makes_every_case_of_a_chat_suite_a_voice_case(tmp_path: Path) -> None:
    code, output = _run(tmp_path, "--modality", "voice")
    assert code == 0, output
    assert "every case in voice" in output
    [run] = simulator.list_runs(db=tmp_path / "runs.db")
    assert run.settings.modality == "voice"
    assert run.settings.paired_with is None
    assert run.versions["recognizer"] == "fake-recognizer"
    assert _voice_turns(run.id, tmp_path / "runs.db") == {"balance": True, "echo": True}


def test_without_the_option_each_case_keeps_its_own_modality_and_the_settings_read_as_before(tmp_path: Path) -> None:
    code, output = _run(tmp_path)
    assert code == 0, output
    [run] = simulator.list_runs(db=tmp_path / "runs.db")
    assert _voice_turns(run.id, tmp_path / "runs.db") == {"balance": False, "echo": False}
    stored = run.settings.model_dump(mode="json")
    assert "modality" not in stored
    assert "paired_with" not in stored


def test_a_repeat_keeps_the_modality_and_is_paired_with_nothing(tmp_path: Path) -> None:
    code, output = _run(tmp_path, "--modality", "chat,voice")
    assert code == 0, output
    voice = simulator.list_runs(db=tmp_path / "runs.db")[0]
    again = simulator.repeat(voice.id, db=tmp_path / "runs.db")
    assert again.record.settings.modality == "voice"
    assert again.record.settings.paired_with is None
    assert _voice_turns(again.id, tmp_path / "runs.db") == {"balance": True, "echo": True}


@pytest.mark.parametrize(
    ("value", "shown"),
    [
        ("audio", "'audio'"),
        ("chat,chat", "'chat,chat'"),
        ("chat,voice,chat", "'chat,voice,chat'"),
        ("", "''"),
    ],
)
def test_a_bad_modality_is_a_one_line_error_before_anything_is_stored(tmp_path: Path, value: str, shown: str) -> None:
    code, output = _run(tmp_path, "--modality", value)
    assert code == 2, output
    assert output.strip() == f"error: --modality {shown}: give chat, voice, or chat,voice (each once)"
    assert not (tmp_path / "runs.db").exists()


@pytest.mark.parametrize("value", ["chat", "chat,voice", "voice,chat"])
def test_an_agent_without_chat_is_refused_chat_before_anything_runs(tmp_path: Path, value: str) -> None:
    code, output = _run(tmp_path, "--modality", value, suite=REALTIME_SUITE)
    assert code == 2, output
    assert output.strip() == (
        "error: --modality chat: the agent of suite 'phone line' (suite.yaml) takes audio only (a realtime "
        "agent): run it with --modality voice, or leave --modality out"
    )
    assert not (tmp_path / "runs.db").exists()


def test_json_takes_one_run(tmp_path: Path) -> None:
    code, output = _run(tmp_path, "--modality", "chat,voice", "--json")
    assert code == 2, output
    assert "--json prints one run" in output
    assert not (tmp_path / "runs.db").exists()


def test_the_python_api_runs_one_modality_or_both(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    suite, db = _project(tmp_path), tmp_path / "runs.db"
    one = simulator.run(str(suite), db=db, seed=1, modality="voice")
    assert one.record.settings.modality == "voice"
    with pytest.raises(simulator.InputError, match=r"two runs: call simulator\.run_modalities"):
        simulator.run(str(suite), db=db, modality="chat,voice")
    _mishear_clearly(monkeypatch)
    both = simulator.run_modalities(str(suite), "chat,voice", db=db, seed=1)
    assert both.modalities == ("chat", "voice")
    assert [run.record.settings.modality for run in both.runs] == ["chat", "voice"]
    assert both.runs[1].record.settings.paired_with == both.runs[0].id
    assert [(case.case, case.change) for case in both.comparison.cases] == [
        ("balance", "regressed"),
        ("echo", "unchanged"),
    ]
    assert both.exit_code() == 1
    assert "  bank / balance: passes in chat, not in voice: chat pass, voice fail" in both.lines()


def test_a_replay_keeps_the_modality_and_is_paired_with_nothing(tmp_path: Path) -> None:
    both = simulator.run_modalities(str(_project(tmp_path)), "chat,voice", db=tmp_path / "runs.db", seed=1, record=True)
    played = simulator.replay(both.runs[1].id, db=tmp_path / "runs.db")
    assert played.record.settings.modality == "voice"
    assert played.record.settings.paired_with is None
    assert [stored.outcome for stored in played.results()] == ["pass", "pass"]
