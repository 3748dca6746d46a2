"""``bank_line``: a rule-based voice agent, a bank's card line, used by ``suites/voice/``.

It is the shape of a voice pipeline (ears, a brain, a mouth) with each part as small as it can be: every turn it
hears the caller's audio with the offline recogniser, picks an answer with keyword rules (:func:`reply`), calls
its tools through the tool handle, and speaks the answer with the offline synthesizer, the same eSpeak NG voice
the simulated caller speaks with. It needs no model, no key and no network, only ``pip install
'simulator[voice]'``.

The line speaks English, or German when the session says ``language: de`` (the number the customer dialled):
the recogniser is always told the language, as Whisper guesses German wrong on synthetic speech. Its sentences are
chosen to be heard right by Whisper base from eSpeak's voice (measured: "Your card is now blocked" came back as
"Your card is outlocked", so the agent says "I have blocked your card").
"""

from __future__ import annotations

import re
from functools import cache
from typing import TYPE_CHECKING, Any

from simulator.voice import Audio, Recognizer, Speaker, Synthesizer, offline_recognizer, offline_synthesizer

if TYPE_CHECKING:
    from simulator.tools import ToolHandle
    from simulator.voice import VoiceContext

#: What the line says, by language. A customer's words are matched with the patterns below.
SAY: dict[str, dict[str, str]] = {
    "en": {
        "welcome": "Welcome to North Bank. I can block a lost card or tell you how much money you have. "
        "What can I do for you?",
        "block": "I have blocked your card. A new card will arrive in {new_card_days} days.",
        "balance": "You have {amount} {currency} in your account.",
        "silence": "Are you still there? I can block a card or tell you how much money you have.",
        "goodbye": "Thank you for calling. Goodbye.",
        "no_tool": "Sorry, I cannot do that right now. Please call again later.",
    },
    "de": {
        "welcome": "Willkommen bei der North Bank. Ich kann eine verlorene Karte sperren oder Ihnen sagen, wie viel "
        "Geld Sie haben. Was kann ich für Sie tun?",
        "block": "Die Karte ist gesperrt. Die neue Karte kommt in {new_card_days} Tagen.",
        "balance": "Sie haben {amount} {currency} auf dem Konto.",
        "silence": "Sind Sie noch da? Ich kann eine Karte sperren oder Ihnen sagen, wie viel Geld Sie haben.",
        "goodbye": "Danke für Ihren Anruf. Auf Wiederhören.",
        "no_tool": "Das geht im Moment leider nicht. Bitte rufen Sie später wieder an.",
    },
}

# Checked in order, the first match wins. "lock" is there because a recogniser may hear "block" so.
_INTENTS: dict[str, list[tuple[str, re.Pattern[str]]]] = {
    "en": [
        ("goodbye", re.compile(r"\b(thank|thanks|bye|goodbye)\b")),
        ("block", re.compile(r"\b(lost|stolen|block|lock|blocked)\b")),
        ("balance", re.compile(r"\b(balance|money|how much)\b")),
    ],
    "de": [
        ("goodbye", re.compile(r"\b(danke|tschüss|wiederhören|wiedersehen)\b")),
        ("block", re.compile(r"(verloren|gestohlen|sperr)")),
        ("balance", re.compile(r"(kontostand|geld|wie viel)")),
    ],
}
#: The tool each intent calls, with the customer from the session.
_TOOLS = {"block": "block_card", "balance": "get_balance"}


@cache
def speech(language: str) -> tuple[Synthesizer, Recognizer]:
    """The agent's mouth and ears for ``language``: the offline backends, loaded once a process."""
    return offline_synthesizer(), offline_recognizer(language)


async def answer(wav: bytes, context: VoiceContext) -> tuple[bytes, str]:
    """One turn of the line: hear the caller's WAV, answer, and return the answer as WAV and as text (the text is
    what the agent meant to say; the report shows it beside what the simulated caller heard)."""
    language = _language(context.session)
    mouth, ears = speech(language)
    heard = await ears.transcribe(Audio.from_wav(wav), language)
    text = await reply(heard.text, language=language, session=context.session, tools=context.tools)
    spoken = await mouth.synthesize(text, Speaker(language=language))
    return spoken.wav(), text


async def reply(heard: str, *, language: str, session: dict[str, Any], tools: ToolHandle) -> str:
    """The line's answer, as text, to what it heard of the caller (an empty text: the caller said nothing)."""
    say = SAY[language]
    if not heard.strip():
        return say["silence"]
    lowered = heard.lower()
    intent = next((name for name, pattern in _INTENTS[language] if pattern.search(lowered)), None)
    if intent is None:
        return say["welcome"]
    if intent == "goodbye":
        return say["goodbye"]
    result = await tools.acall(_TOOLS[intent], customer_id=str(session.get("customer_id") or ""))
    # A tool that gave no data (an error, or no fake in test mode) is said plainly, never made up.
    if not isinstance(result, dict) or "error" in result:
        return say["no_tool"]
    try:
        return say[intent].format(**result)
    except KeyError:
        return say["no_tool"]


def _language(session: dict[str, Any]) -> str:
    language = str(session.get("language") or "en").split("-")[0].lower()
    return language if language in SAY else "en"
