"""The verdict mutation suite on voice: every agent (right or wrong amount) crossed with every recognition (clean,
the amount misheard either way, another word misheard) at every confidence around the suite's bar, run through
``simulator.run`` on the fake speech backends.

What must hold for each: a recognition Simulator's recogniser was unsure of decides nothing (``unsure``, never
``pass`` or ``fail``); heard clearly, the right agent passes and the wrong one fails. The one way left to a wrong
verdict is a recogniser that is sure of what it misheard: those mutants are named, and their verdict pinned, so a
change that widens that gap shows here.
"""

from __future__ import annotations

import itertools
from pathlib import Path

import pytest

import simulator
from simulator.voice import FakeRecognizer, FakeSynthesizer, Recognizer, Synthesizer
from tests.voice.test_voice_engine import _project

BAR = 0.5  # the suite's min_confidence (the default)
AGENTS = {"bank": "150", "buggy_bank": "115"}  # the python voice agents of the voice tests, and what they say
MISHEARINGS = {
    "clean": {},
    "right_heard_wrong": {"150": "115"},
    "wrong_heard_right": {"115": "150"},
    "other_word": {"balance": "valance"},
}
CONFIDENCES = (0.2, 0.49, 0.51, 0.95)


def _expected(agent: str, mishearing: str, confidence: float) -> str:
    right = AGENTS[agent] == "150"
    heard = {"clean": right, "other_word": right}.get(mishearing)
    if heard is None:  # the amount misheard, if the agent said the word that is misheard
        changed = (mishearing == "right_heard_wrong") == right
        heard = not right if changed else right
        touched = changed
    else:
        touched = mishearing == "other_word"
    if touched and confidence < BAR:
        return "unsure"
    # heard clearly (or not misheard at all): the verdict follows what was heard, right or wrong
    return "pass" if heard else "fail"


MUTANTS = [
    (agent, mishearing, confidence)
    for agent, mishearing, confidence in itertools.product(AGENTS, MISHEARINGS, CONFIDENCES)
    if mishearing != "clean" or confidence == CONFIDENCES[0]
]
#: A recogniser sure of what it misheard: the verdict follows what it heard. Named so that they stay few.
SURE_AND_WRONG = {
    (agent, mishearing, confidence)
    for agent, mishearing, confidence in MUTANTS
    if confidence >= BAR and _expected(agent, mishearing, confidence) != ("pass" if AGENTS[agent] == "150" else "fail")
}


@pytest.mark.parametrize(("agent", "mishearing", "confidence"), MUTANTS)
def test_an_unsure_recognition_decides_nothing_and_a_clear_one_decides_as_heard(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, agent: str, mishearing: str, confidence: float
) -> None:
    def backends(*args: object, **kwargs: object) -> tuple[Synthesizer, Recognizer]:
        return FakeSynthesizer(), FakeRecognizer(mishear=MISHEARINGS[mishearing], misheard_confidence=confidence)

    monkeypatch.setattr("simulator.runner._case.speech_backends", backends)
    outcome = simulator.run(str(_project(tmp_path, callable_=agent)), db=tmp_path / "runs.db", seed=1)
    result = next(stored.result for stored in outcome.results() if stored.case == "balance")
    expected = _expected(agent, mishearing, confidence)
    assert result.outcome == expected, result.reasons
    if expected == "unsure":
        assert f"confidence {confidence:.2f}" in result.reasons[0]
    right = AGENTS[agent] == "150"
    if (agent, mishearing, confidence) not in SURE_AND_WRONG:
        assert result.outcome != ("fail" if right else "pass"), "a verdict against the agent's real answer"


def test_only_a_recogniser_sure_of_its_mistake_can_turn_a_verdict() -> None:
    assert {
        ("bank", "right_heard_wrong", 0.51),
        ("bank", "right_heard_wrong", 0.95),
        ("buggy_bank", "wrong_heard_right", 0.51),
        ("buggy_bank", "wrong_heard_right", 0.95),
    } == SURE_AND_WRONG
