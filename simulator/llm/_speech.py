"""The speech calls of the model client: text to speech (the ``voice`` role) and speech to text (the
``transcriber`` role), in litellm's keyword form (``litellm.aspeech``, ``litellm.atranscription``).

A speech call goes through the client as a chat call does (the role's timeout, retries, concurrency limit,
accounting and request cache); this module holds what differs: the request, its cache key (the audio sent to a
transcriber is keyed by a hash of its bytes, never stored), and the :class:`~simulator.llm.Completion` a speech
reply travels in through the cache (the audio as base64 text, a transcription as JSON text), with the functions
that read them back. ``fake/...`` models answer with the fake speech codec, every other model through litellm
(whatever the role's ``backend``: the OpenAI-compatible backend sends chat requests only).
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from simulator.errors import ModelError
from simulator.llm._retry import Failure
from simulator.llm._types import Completion, Role, Usage

__all__ = [
    "SpeechBackend",
    "Transcription",
    "audio_of",
    "segments_confidence",
    "speech_cache_key",
    "speech_completion",
    "speech_request",
    "transcription_completion",
    "transcription_of",
    "transcription_request",
]

#: Part of every speech cache key: bump it when the keys or the stored form change.
_SPEECH_FORMAT = 1

#: The voice asked for when the speaker names none, for providers whose speech call requires one.
_DEFAULT_VOICES = {"openai": "alloy", "azure": "alloy"}

#: The request fields that are how a speech request travels, not what it asks.
_NOT_IN_KEY = frozenset({"api_key", "api_base", "timeout"})


@dataclass(frozen=True)
class Transcription:
    """What a transcriber model heard: the text, how sure it was (0 to 1; None when the provider does not say),
    the call's usage, and whether it came from the request cache (then nothing was sent or spent)."""

    text: str
    confidence: float | None
    usage: Usage
    cached: bool = False


class SpeechBackend(Protocol):
    """Answers speech requests for the client (see :class:`~simulator.llm._backend.Backend` for chat)."""

    async def speak(self, request: Mapping[str, Any], *, role: Role) -> Completion:
        """Text to speech: the reply carries the audio (:func:`speech_completion`)."""
        ...

    async def transcribe(self, request: Mapping[str, Any], *, role: Role) -> Completion:
        """Speech to text: the reply carries the text (:func:`transcription_completion`)."""
        ...

    def classify(self, exc: Exception) -> Failure | None:
        """What a failed call means to the client (as for chat)."""
        ...


def speech_request(model: str, text: str, *, voice: str | None, speed: float | None) -> dict[str, Any]:
    """A text-to-speech request: WAV audio of ``text`` in ``voice`` (the provider's default voice when None, for
    providers that need one named), at ``speed`` times the normal rate (not sent when None or 1)."""
    request: dict[str, Any] = {"model": model, "input": text, "response_format": "wav"}
    chosen = voice or _DEFAULT_VOICES.get(model.partition("/")[0])
    if chosen:
        request["voice"] = chosen
    if speed is not None and speed != 1.0:
        request["speed"] = speed
    return request


def transcription_request(model: str, wav: bytes, *, language: str | None) -> dict[str, Any]:
    """A speech-to-text request for the WAV file ``wav``, in ``language`` (a BCP 47 tag; providers take its
    ISO 639-1 part: ``de`` of ``de-AT``). Whisper models are asked for ``verbose_json``, whose segments say how
    sure the model was."""
    request: dict[str, Any] = {"model": model, "file": wav}
    if language:
        request["language"] = language.split("-")[0].split("_")[0].lower()
    if "whisper" in model.rpartition("/")[2].lower():
        request["response_format"] = "verbose_json"
    return request


def speech_cache_key(request: Mapping[str, Any], salt: str | None) -> str:
    """The request cache key of a speech request: a sha256 of its model and parameters, the audio sent (``file``)
    as a hash of its bytes; credentials, the API base and the timeout are not part of it."""
    normalized: dict[str, Any] = {"format": _SPEECH_FORMAT, "speech": True}
    for name, value in request.items():
        if name in _NOT_IN_KEY:
            continue
        normalized[name] = {"sha256": hashlib.sha256(value).hexdigest()} if isinstance(value, bytes) else value
    if salt:
        normalized["cache_salt"] = salt
    text = json.dumps(normalized, sort_keys=True, separators=(",", ":"), default=str)
    return hashlib.sha256(text.encode()).hexdigest()


def speech_completion(audio: bytes, usage: Usage, model: str) -> Completion:
    """A speech reply as the client passes it on and the cache stores it: the audio as base64 text."""
    text = base64.b64encode(audio).decode("ascii")
    return Completion(
        content=text, tool_calls=[], finish_reason="stop", usage=usage, model=model, cost=usage.cost, raw_text=text
    )


def audio_of(completion: Completion, role: Role) -> bytes:
    """The audio a speech reply carries; a :class:`ModelError` for a reply that carries none."""
    try:
        audio = base64.b64decode(completion.raw_text, validate=True)
    except (binascii.Error, ValueError):
        audio = b""
    if not audio:
        raise ModelError(f"{role.value} model {completion.model!r} answered with no audio")
    return audio


def transcription_completion(text: str, confidence: float | None, usage: Usage, model: str) -> Completion:
    """A transcription as the client passes it on and the cache stores it: its text and confidence as JSON."""
    body = json.dumps({"text": text, "confidence": confidence}, ensure_ascii=False)
    return Completion(
        content=body, tool_calls=[], finish_reason="stop", usage=usage, model=model, cost=usage.cost, raw_text=body
    )


def transcription_of(completion: Completion) -> Transcription:
    """The transcription a reply carries (:func:`transcription_completion`)."""
    body = json.loads(completion.raw_text)
    confidence = body.get("confidence")
    return Transcription(
        text=str(body.get("text") or ""),
        confidence=float(confidence) if isinstance(confidence, int | float) else None,
        usage=completion.usage,
        cached=completion.cached,
    )


def segments_confidence(segments: Sequence[Any] | None) -> float | None:
    """How sure a Whisper-style model was of a transcription, as the offline Whisper recogniser scores it: for each
    segment the mean probability of its tokens (``exp(avg_logprob)``) times the probability that it is speech at all
    (``1 - no_speech_prob``, when given); the least sure segment is the whole's (one misheard stretch can change
    what was said). None when no segment says."""
    found: list[float] = []
    for segment in segments or ():
        logprob, no_speech = (_value(segment, name) for name in ("avg_logprob", "no_speech_prob"))
        if logprob is None:
            continue
        speech = 1.0 - min(1.0, max(0.0, no_speech)) if no_speech is not None else 1.0
        found.append(min(1.0, math.exp(min(0.0, logprob))) * speech)
    return min(found) if found else None


def _value(segment: Any, name: str) -> float | None:
    value = segment.get(name) if isinstance(segment, Mapping) else getattr(segment, name, None)
    return float(value) if isinstance(value, int | float) and math.isfinite(value) else None
