"""The fake speech backends the voice tests run on: the recogniser hears back exactly what the synthesizer said,
with the timing of speech, so that barge-in, silence, noise and misrecognition can be tested without a model."""

from __future__ import annotations

import asyncio

import pytest

from simulator.voice import Audio, FakeRecognizer, FakeSynthesizer, Speaker
from simulator.voice._fake import CHARACTER_SECONDS


def _round_trip(text: str, speaker: Speaker, recognizer: FakeRecognizer | None = None) -> tuple[Audio, str, float]:
    async def go() -> tuple[Audio, str, float]:
        audio = await FakeSynthesizer().synthesize(text, speaker)
        heard = await (recognizer or FakeRecognizer()).transcribe(audio, speaker.language)
        assert heard.confidence is not None
        return audio, heard.text, heard.confidence

    return asyncio.run(go())


@pytest.mark.parametrize(
    ("text", "language"),
    [
        ("I lost my card and I want to block it.", "en"),
        ("Ich möchte die Schuhe zurückschicken, weil sie zu klein sind: 23,60 €.", "de"),
        ("aa  bb", "en"),  # equal bytes in a row stay apart
    ],
)
def test_what_is_said_is_heard_exactly_with_full_confidence(text: str, language: str) -> None:
    audio, heard, confidence = _round_trip(text, Speaker(language=language))
    assert heard == text
    assert confidence == 1.0
    assert audio.seconds == pytest.approx(len(text.encode()) * CHARACTER_SECONDS, rel=0.01)


def test_a_faster_speaker_takes_less_time_and_is_heard_the_same() -> None:
    slow, heard_slow, _ = _round_trip("block my card", Speaker(rate=1.0))
    fast, heard_fast, _ = _round_trip("block my card", Speaker(rate=2.0))
    assert heard_slow == heard_fast == "block my card"
    assert fast.seconds == pytest.approx(slow.seconds / 2, rel=0.02)


@pytest.mark.parametrize(("seconds", "said"), [(0.0, ""), (0.45, "I lost "), (1.05, "I lost my card "), (99.0, None)])
def test_a_cut_keeps_the_words_said_by_then(seconds: float, said: str | None) -> None:
    text = "I lost my card and I want to block it."

    async def go() -> str:
        audio = await FakeSynthesizer().synthesize(text, Speaker())
        return (await FakeRecognizer().transcribe(audio.cut(0, seconds), "en")).text

    assert asyncio.run(go()) == (text if said is None else said)


def test_silence_is_heard_as_nothing_for_sure() -> None:
    heard = asyncio.run(FakeRecognizer().transcribe(Audio.silence(2.0), "en"))
    assert (heard.text, heard.confidence) == ("", 1.0)


def test_noise_below_the_margin_changes_nothing_and_above_it_lowers_the_confidence() -> None:
    async def go(level: float) -> tuple[str, float | None]:
        audio = await FakeSynthesizer().synthesize("refund 23.60 please", Speaker())
        heard = await FakeRecognizer().transcribe(audio.with_noise(level, seed=3), "en")
        return heard.text, heard.confidence

    assert asyncio.run(go(0.0005)) == ("refund 23.60 please", 1.0)
    _, confidence = asyncio.run(go(0.01))
    assert confidence is not None
    assert confidence < 0.9


def test_a_planted_mishearing_changes_the_word_and_lowers_the_confidence() -> None:
    recognizer = FakeRecognizer(mishear={"block": "lock"})
    _, heard, confidence = _round_trip("I want to block it", Speaker(), recognizer)
    assert heard == "I want to lock it"
    assert confidence == recognizer.misheard_confidence
    _, untouched, sure = _round_trip("I want to keep it", Speaker(), recognizer)
    assert (untouched, sure) == ("I want to keep it", 1.0)


def test_the_fakes_record_what_they_were_asked() -> None:
    synthesizer, recognizer = FakeSynthesizer(), FakeRecognizer()

    async def go() -> None:
        audio = await synthesizer.synthesize("hallo", Speaker(language="de", voice="anna"))
        await recognizer.transcribe(audio, "de")

    asyncio.run(go())
    assert synthesizer.spoken == [("hallo", Speaker(language="de", voice="anna"))]
    assert [language for _, language in recognizer.heard] == ["de"]
