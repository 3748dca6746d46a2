"""What only voice has, as checks: the latency budgets of a voice turn (the agent's first audio, the end of its
audio) and a flag on a voice reply that reads out chat-only formatting, on the fake speech backends."""

from __future__ import annotations

import textwrap
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

import simulator
from simulator.cli import app
from simulator.judges.budgets import budget_scores
from simulator.judges.spoken import formatting_flags
from simulator.metrics import case_outcome, metric_summary
from simulator.models import Budgets
from simulator.models.scores import CaseResult, Score
from simulator.models.transcript import AgentEvent, Transcript, UserEvent
from simulator.models.voice import AgentVoice, TranscriptVoice

AGENTS_PY = """\
    from simulator.voice import FakeSynthesizer, Speaker, VoiceReply

    MOUTH = FakeSynthesizer()


    def _timed(first, end=None):
        async def answer(wav, context):
            audio = await MOUTH.synthesize("Your balance is 150 dollars.", Speaker())
            return VoiceReply(audio=audio, first_audio=first, end_audio=end)

        return answer


    prompt = _timed(0.3)
    late = _timed(2.5)
    long_winded = _timed(0.3, 9.0)


    def formatted(messages):
        return "**Refund** done 🎉 see https://x.example"


    def plain(messages):
        return "Your refund takes five days."
"""

SUITE = """\
    name: voice checks
    modality: voice
    voice: {backend: fake}
    budgets: {budgets}
    agent:
      type: python
      callable: voice_agents:{callable}
      audio: {audio}
    cases:
      - kind: simulation
        name: spoken
        steps:
          - static_utterance: What is my balance?
            checks:
              - must_contain: ["{words}"]
      - kind: simulation
        name: chat
        modality: chat
        steps:
          - static_utterance: What is my balance?
"""


def _project(tmp_path: Path, callable_: str, *, audio: bool = True, budgets: str = "{turns: 5}") -> Path:
    (tmp_path / ".git").mkdir(exist_ok=True)
    (tmp_path / "voice_agents.py").write_text(textwrap.dedent(AGENTS_PY), encoding="utf-8")
    words = "150 dollars" if audio else "refund"
    suite = (
        textwrap.dedent(SUITE)
        .replace("{callable}", callable_)
        .replace("{audio}", str(audio).lower())
        .replace("{budgets}", budgets)
        .replace("{words}", words)
    )
    path = tmp_path / "suite.yaml"
    path.write_text(suite, encoding="utf-8")
    return path


def _results(suite: Path, tmp_path: Path) -> dict[str, CaseResult]:
    outcome = simulator.run(str(suite), db=tmp_path / "runs.db", seed=1)
    return {stored.result.case: stored.result for stored in outcome.results()}


def _budget(result: CaseResult, name: str) -> Score:
    [score] = [score for score in result.scores if score.check == f"budget: {name}"]
    return score


# -- latency budgets ----------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("callable_", "budgets", "verdict", "reason"),
    [
        (
            "prompt",
            "{first_audio_seconds: 1}",
            "met",
            "every turn's first audio within 1 s (the slowest, turn 1, after 0.30 s)",
        ),
        (
            "late",
            "{first_audio_seconds: 1}",
            "not_met",
            "turn 1: the agent's first audio came after 2.50 s, the budget is 1 s",
        ),
        (
            "long_winded",
            "{end_audio_seconds: 5}",
            "not_met",
            "turn 1: the agent's audio ended after 9.00 s, the budget is 5 s",
        ),
    ],
)
def test_a_voice_turns_audio_is_held_to_its_budget(
    tmp_path: Path, callable_: str, budgets: str, verdict: str, reason: str
) -> None:
    name = budgets.strip("{}").split(":")[0]
    result = _results(_project(tmp_path, callable_, budgets=budgets), tmp_path)["spoken"]
    score = _budget(result, name)
    assert (score.metric, score.verdict, score.reason, score.required) == ("budget", verdict, reason, True)
    if verdict == "met":
        assert result.outcome == "pass", result.reasons
    else:
        assert (result.outcome, result.reasons) == ("fail", [f"budget: {name}: {reason}"])


def test_the_end_of_a_replys_audio_adds_its_length_when_the_agent_does_not_stream(tmp_path: Path) -> None:
    # 28 characters of fake speech last 1.96 s, after the 0.3 s to the first audio.
    result = _results(_project(tmp_path, "prompt", budgets="{end_audio_seconds: 2}"), tmp_path)["spoken"]
    score = _budget(result, "end_audio_seconds")
    assert score.verdict == "not_met"
    assert score.reason == "turn 1: the agent's audio ended after 2.26 s, the budget is 2 s"


def test_a_voice_budget_is_not_applicable_to_a_chat_conversation(tmp_path: Path) -> None:
    suite = _project(tmp_path, "plain", audio=False, budgets="{first_audio_seconds: 1, end_audio_seconds: 1}")
    result = _results(suite, tmp_path)["chat"]
    assert [(s.check, s.verdict) for s in result.scores if s.metric == "budget"] == [
        ("budget: first_audio_seconds", "n/a"),
        ("budget: end_audio_seconds", "n/a"),
    ]
    assert result.outcome == "pass", result.reasons


def _voice_conversation(*voices: AgentVoice | None) -> Transcript:
    """A voice conversation whose agent's turns were heard with these timings (None: not timed at all)."""
    events: list[Any] = []
    for turn, voice in enumerate(voices, start=1):
        events.append(UserEvent(turn=turn, text="hi", source="scripted"))
        events.append(AgentEvent(turn=turn, messages=["hello"], voice=voice))
    return Transcript(
        case="c",
        kind="simulation",
        events=events,
        turns=len(voices),
        voice=TranscriptVoice(synthesizer="fake-speech", recognizer="fake-recognizer"),
    )


def _timed(first: float | None, end: float | None, *, seconds: float = 1.0, cut: float | None = None) -> AgentVoice:
    return AgentVoice(
        first_audio_ms=first, end_audio_ms=end, audio_seconds=seconds, confidence=1.0, interrupted_after=cut
    )


@pytest.mark.parametrize(
    ("voices", "verdict", "reason"),
    [
        (
            [_timed(300, 1300), None],
            "unsure",
            "the budget of 2 s cannot be checked: turn 2: the agent's audio was not timed",
        ),
        (
            [_timed(300, 1300), _timed(None, None)],
            "unsure",
            "the budget of 2 s cannot be checked: turn 2: the agent's audio was not timed",
        ),
        (
            [_timed(300, 300, seconds=0)],
            "unsure",
            "the budget of 2 s cannot be checked: turn 1: the agent sent no audio",
        ),
        # What is known to be over the budget fails, whatever else is unknown.
        (
            [None, _timed(2500, 3500)],
            "not_met",
            "turn 2: the agent's first audio came after 2.50 s, the budget is 2 s",
        ),
        ([], "n/a", "the agent never replied: no turn to time"),
    ],
)
def test_a_voice_turn_whose_timing_is_unknown_is_unsure_never_passed(
    voices: list[AgentVoice | None], verdict: str, reason: str
) -> None:
    transcript = _voice_conversation(*voices)
    [score] = budget_scores(transcript, Budgets(first_audio_seconds=2))
    assert (score.verdict, score.reason) == (verdict, reason)
    expected = {"unsure": "unsure", "not_met": "fail", "n/a": "pass"}[verdict]
    assert case_outcome(transcript, [score])[0] == expected


@pytest.mark.parametrize(
    ("voices", "verdict", "reason"),
    [
        # The user cut in within the budget: how long the agent would have spoken is unknown, and not counted.
        (
            [_timed(300, 1500), _timed(300, 1300, cut=1.0)],
            "met",
            "every turn's audio ended within 2 s (the slowest, turn 1, after 1.50 s); turn 2 cut off by the user, "
            "not timed",
        ),
        ([_timed(300, 1300, cut=1.0)], "n/a", "the user interrupted the agent in every turn: no audio ran to its end"),
        # Over the budget before the user cut in: over it whatever came after.
        ([_timed(1500, 2500, cut=1.0)], "not_met", "turn 1: the agent's audio ended after 2.50 s, the budget is 2 s"),
    ],
)
def test_a_turn_the_user_interrupted_counts_against_the_end_of_audio_only_when_over_budget(
    voices: list[AgentVoice], verdict: str, reason: str
) -> None:
    [score] = budget_scores(_voice_conversation(*voices), Budgets(end_audio_seconds=2))
    assert (score.verdict, score.reason) == (verdict, reason)


# -- chat-only formatting -------------------------------------------------------------------------------------------

FORMATTED = (
    'chat-only formatting a voice reads out, in the agent\'s own text of its audio: markdown bold "**Refund**"; '
    'an emoji "🎉"; a web address "https://x.example"'
)


def test_a_voice_reply_with_chat_formatting_is_flagged_and_the_case_still_passes(tmp_path: Path) -> None:
    results = _results(_project(tmp_path, "formatted", audio=False), tmp_path)
    spoken = results["spoken"]
    assert spoken.outcome == "pass", spoken.reasons
    [flag] = [score for score in spoken.scores if score.metric == "spoken_formatting"]
    assert (flag.check, flag.verdict, flag.required, flag.turn, flag.source) == (
        "spoken formatting: turn 1", "not_met", False, 1, "deterministic",
    )  # fmt: skip
    assert flag.reason == FORMATTED
    # Chat shows what it writes: the same reply in a chat case is not flagged.
    assert not [score for score in results["chat"].scores if score.metric == "spoken_formatting"]
    summary = metric_summary([spoken])["spoken_formatting"]
    assert (summary.count, summary.not_met, summary.mean) == (1, 1, None)


def test_a_clean_voice_reply_is_not_flagged(tmp_path: Path) -> None:
    spoken = _results(_project(tmp_path, "plain", audio=False), tmp_path)["spoken"]
    assert spoken.outcome == "pass", spoken.reasons
    assert not [score for score in spoken.scores if score.metric == "spoken_formatting"]


def test_without_the_agents_own_text_the_flag_reads_what_was_heard() -> None:
    voice = AgentVoice(confidence=1.0, audio_seconds=1.0)
    transcript = _voice_conversation(voice)
    transcript.events[1] = AgentEvent(turn=1, messages=["Done, see www.x.example"], voice=voice)
    [flag] = formatting_flags(transcript)
    assert (
        flag.reason
        == 'chat-only formatting a voice reads out, in what was heard of the agent: a web address "www.x.example"'
    )


@pytest.mark.parametrize("outcome", ["pass", "fail", "unsure"])
def test_a_flag_never_changes_an_outcome(outcome: str) -> None:
    transcript = _voice_conversation(AgentVoice(said=["**Refund** done"], confidence=1.0, audio_seconds=1.0))
    flags = formatting_flags(transcript)
    assert [flag.verdict for flag in flags] == ["not_met"]
    deciding = {
        "pass": [],
        "fail": [Score(metric="keywords", check="k", source="deterministic", verdict="not_met")],
        "unsure": [Score(metric="keywords", check="k", source="deterministic", verdict="unsure")],
    }[outcome]
    assert case_outcome(transcript, [*deciding, *flags]) == case_outcome(transcript, deciding)
    assert case_outcome(transcript, [*deciding, *flags])[0] == outcome


def test_a_flag_shows_in_the_reports_as_not_required(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    suite = _project(tmp_path, "formatted", audio=False)
    monkeypatch.chdir(tmp_path)
    runner = CliRunner()
    db = str(tmp_path / "runs.db")
    ran = runner.invoke(app, ["run", str(suite), "--db", db, "--case", "spoken"])
    assert ran.exit_code == 0, ran.output
    for name in ("report.md", "report.html"):
        shown = runner.invoke(app, ["report", "latest", "--db", db, "-o", str(tmp_path / name)])
        assert shown.exit_code == 0, shown.output
    markdown = (tmp_path / "report.md").read_text(encoding="utf-8")
    assert "not_met (not required) | spoken formatting: turn 1 |" in markdown
    assert "| spoken\\_formatting | 1 | 0 | 1 | 0 | 0 | 0 |" in markdown  # the metrics table: one flag, not met
    html = (tmp_path / "report.html").read_text(encoding="utf-8")
    assert "spoken formatting: turn 1" in html
