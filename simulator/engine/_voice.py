"""What the engine does differently in a voice case: which user turns are silent or barge in (a step's settings
over the persona's), and speaking each user turn through the conversation's voice adapter."""

from __future__ import annotations

from simulator.engine._conversation import Conversation
from simulator.models.voice import UserVoice


def silence_of(conv: Conversation, index: int) -> float | None:
    """Seconds the user stays silent in step ``index``'s turns, None when it speaks: the step's ``silence`` (0: it
    speaks), else in a voice case the persona's."""
    step = conv.step(index)
    if step is not None and step.silence is not None:
        return step.silence or None
    persona = conv.setup.persona
    if conv.setup.voice is None or persona is None or persona.voice is None:
        return None
    return persona.voice.silence or None


def barge_in_of(conv: Conversation, index: int) -> float | None:
    """Seconds of the agent's audio after which the user interrupts in step ``index``: the step's
    ``barge_in_after``, else the persona's (voice cases only)."""
    if conv.setup.voice is None:
        return None
    step = conv.step(index)
    if step is not None and step.barge_in_after is not None:
        return step.barge_in_after
    persona = conv.setup.persona
    return persona.voice.barge_in_after if persona is not None and persona.voice is not None else None


async def spoken(conv: Conversation, text: str, *, turn: int, index: int, silence: float | None) -> UserVoice | None:
    """The user's turn spoken for the agent (a voice case) and how; a chat case's silent turn is only marked."""
    if conv.setup.voice is None:
        return UserVoice(silence=silence) if silence else None
    return await conv.setup.voice.speak(text, turn=turn, silence=silence, interrupt_after=barge_in_of(conv, index))
