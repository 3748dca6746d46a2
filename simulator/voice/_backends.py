"""Which speech backends a run's voice cases use: the tests' fakes when a suite or a model role asks for them
(``voice: {backend: fake}``, or a ``fake/...`` model for the ``voice`` and ``transcriber`` roles), a provider's
speech models when a role names one (``openai/tts-1``, ``openai/whisper-1``), else the offline default (no key,
no network)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

from simulator.errors import ConfigError
from simulator.llm import LLMClient, Role
from simulator.models import ModelRoles
from simulator.models.voice import SuiteVoice
from simulator.voice._fake import FakeRecognizer, FakeSynthesizer
from simulator.voice._missing import SpeechBackendMissing
from simulator.voice._offline import offline_recognizer, offline_synthesizer
from simulator.voice._protocol import Recognizer, Synthesizer
from simulator.voice._provider import ProviderRecognizer, ProviderSynthesizer

_Backend = TypeVar("_Backend", Synthesizer, Recognizer)


def speech_backends(
    roles: ModelRoles | None = None,
    voice: SuiteVoice | None = None,
    *,
    where: str | Path = "the suite",
    llm: LLMClient | None = None,
) -> tuple[Synthesizer, Recognizer]:
    """The synthesizer and the recogniser for a suite's voice cases, from its ``voice:`` settings and its model
    roles ``voice`` (speech) and ``transcriber`` (recognition); a ConfigError at ``where`` (the suite's file) when
    none can be had. A role's provider model is called through ``llm`` (the run's client: its limits, accounts and
    cache), or a client of ``roles`` of its own when none is given."""
    speech = _role_model(roles, "voice")
    hearing = _role_model(roles, "transcriber")
    fake = voice is not None and voice.backend == "fake"
    synthesizer: Synthesizer
    recognizer: Recognizer
    client = llm or LLMClient(roles or ModelRoles())  # made, not called, when no role names a provider's model
    if fake or _is_fake(speech):
        synthesizer = FakeSynthesizer(name=speech or "fake-speech")
    elif speech is not None:
        synthesizer = ProviderSynthesizer(client, Role.VOICE)
    else:
        synthesizer = _installed(offline_synthesizer, where)
    if fake or _is_fake(hearing):
        recognizer = FakeRecognizer(name=hearing or "fake-recognizer")
    elif hearing is not None:
        recognizer = ProviderRecognizer(client, Role.TRANSCRIBER)
    else:
        recognizer = _installed(offline_recognizer, where)
    return synthesizer, recognizer


def _role_model(roles: ModelRoles | None, role: str) -> str | None:
    model = getattr(roles, role).model if roles is not None else None
    return model if isinstance(model, str) and model else None


def _is_fake(model: str | None) -> bool:
    return model is not None and model.startswith("fake/")


def _installed(factory: Callable[[], _Backend], where: str | Path) -> _Backend:
    """The offline default backend ``factory`` builds, or a ConfigError at the suite saying what to install."""
    try:
        return factory()
    except SpeechBackendMissing as exc:
        raise ConfigError(
            where, 1, 1, "voice", f"{exc} (or set `voice: {{backend: fake}}` in the suite for the test backends)"
        ) from None
