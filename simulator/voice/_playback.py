"""How the user hears an agent's audio that arrives in pieces: each piece plays when it has arrived and the one
before it has played, and a barge-in stops the playing after a number of seconds of audio."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from simulator.voice._audio import Audio, join


@dataclass(frozen=True)
class Playback:
    """The agent's audio as the user heard it, with its timing from the end of the user's audio."""

    audio: Audio
    #: When its first piece started playing (None: the agent sent no audio).
    first: float | None
    #: When the last audio heard stopped playing (None: no audio).
    end: float | None
    #: Whether a barge-in cut it.
    interrupted: bool


def played(pieces: Sequence[tuple[float, Audio]], interrupt_after: float | None = None) -> Playback:
    """``pieces`` (each with when it arrived, in seconds from the end of the user's audio) played in order, stopped
    after ``interrupt_after`` seconds of audio when the agent's audio is longer than that."""
    heard = [(arrived, audio) for arrived, audio in pieces if audio.samples]
    if not heard:
        rate = pieces[0][1].rate if pieces else Audio.silence(0).rate
        return Playback(Audio(b"", rate), None, None, False)
    rate = heard[0][1].rate
    kept: list[Audio] = []
    first = cursor = max(0.0, heard[0][0])
    left = interrupt_after
    for arrived, audio in heard:
        start = max(cursor, arrived)
        if left is not None and audio.seconds > left:
            kept.append(audio.cut(0, left))
            return Playback(join(kept, rate), first, start + left, True)
        kept.append(audio)
        cursor = start + audio.seconds
        if left is not None:
            left -= audio.seconds
    return Playback(join(kept, rate), first, cursor, False)
