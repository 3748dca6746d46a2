"""A voice conversation on the HTML page: how each turn was spoken and heard, and its audio to play.

Each user turn says how long it was spoken (or that the user stayed silent) and each agent turn how sure the
recogniser was of the transcript shown, its latency to the first and the last audio, a barge-in, and the agent's own
text where it differs from what was heard. With the conversation's audio file, the transcript opens with a player of
the whole conversation and each turn has one of its own part (a media fragment ``#t=START,END`` of the same file,
loaded only when played).
"""

from __future__ import annotations

from simulator.models.transcript import AgentEvent, Transcript, UserEvent
from simulator.reports._html_values import _e

__all__ = ["AUDIO_FOLDER", "agent_voice", "conversation_player", "user_voice"]

#: The folder, beside a written HTML report, that its conversations' audio files are copied into (and the page's
#: players point at): ``report.html`` plays ``simulator-audio/RUN/KEY.wav``.
AUDIO_FOLDER = "simulator-audio"


def _player(url: str, start: float | None = None, end: float | None = None, label: str = "") -> str:
    fragment = f"#t={start:.2f},{end:.2f}" if start is not None and end is not None and end > start else ""
    return (
        f"<audio class='voice-audio' controls preload='none' src='{_e(url + fragment)}' "
        f"aria-label='{_e(label)}'></audio>"
    )


def conversation_player(transcript: Transcript, base: str) -> str:
    """The voice facts of the conversation and a player of its whole audio (nothing for a chat conversation)."""
    voice = transcript.voice
    if voice is None:
        return ""
    facts = (
        f"spoken by {_e(voice.synthesizer)} · heard by {_e(voice.recognizer)} · a transcript the recogniser was less "
        f"than {voice.min_confidence:g} sure of cannot fail the agent"
    )
    if voice.audio is not None:
        audio = _player(base + voice.audio, label="the whole conversation")
    elif voice.audio_error:
        audio = f"<span class='muted'>no audio kept: {_e(voice.audio_error)}</span>"
    else:
        audio = "<span class='muted'>no audio kept</span>"
    return f"<div class='voice'><div class='muted'>{facts}</div>{audio}</div>"


def _url(transcript: Transcript, base: str) -> str | None:
    voice = transcript.voice
    return base + voice.audio if voice is not None and voice.audio is not None else None


def user_voice(event: UserEvent, transcript: Transcript, base: str) -> tuple[str, str]:
    """What the user turn's header line gains (`` · spoken 2.3 s``) and its player (empty without audio)."""
    voice = event.voice
    if voice is None:
        return "", ""
    said = f" · silent {voice.silence:g} s" if voice.silence is not None else f" · spoken {voice.audio_seconds:.1f} s"
    url = _url(transcript, base)
    player = (
        _player(url, voice.offset, voice.offset + voice.audio_seconds, f"user, turn {event.turn}")
        if url is not None
        else ""
    )
    return said, player


def agent_voice(event: AgentEvent, transcript: Transcript, base: str) -> tuple[str, str]:
    """What the agent turn's header line gains (confidence, latencies) and what follows its messages: a barge-in,
    the agent's own text where it differs from what was heard, the turn's player."""
    voice = event.voice
    if voice is None:
        return "", ""
    bar = transcript.voice.min_confidence if transcript.voice is not None else 0.0
    line = " · heard"
    if voice.confidence is not None:
        unsure = " (unsure)" if voice.confidence < bar else ""
        line += f" with confidence {voice.confidence:.2f}{unsure}"
    if voice.first_audio_ms is not None:
        line += f" · first audio {voice.first_audio_ms:.0f} ms"
    if voice.end_audio_ms is not None:
        line += f" · end of audio {voice.end_audio_ms:.0f} ms"
    notes: list[str] = []
    if voice.interrupted_after is not None:
        notes.append(f"<div class='muted'>the user barged in after {voice.interrupted_after:g} s of it</div>")
    meant = next((e.text for e in transcript.events if isinstance(e, UserEvent) and e.turn == event.turn), None)
    if voice.user_heard is not None and voice.user_heard.strip() != (meant or "").strip():
        sure = f" (confidence {voice.user_heard_confidence:.2f})" if voice.user_heard_confidence is not None else ""
        notes.append(
            f"<div class='muted'>Simulator heard the user for the agent as: {_e(voice.user_heard)}{_e(sure)}</div>"
        )
    if voice.said and " ".join(voice.said).strip() != " ".join(event.messages).strip():
        notes.append(f"<div class='muted'>the agent's own text: {_e(' '.join(voice.said))}</div>")
    url = _url(transcript, base)
    if url is not None:
        notes.append(_player(url, voice.offset, voice.offset + voice.audio_seconds, f"agent, turn {event.turn}"))
    return line, "".join(notes)
