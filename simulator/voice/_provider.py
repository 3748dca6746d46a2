"""Provider speech backends: text to speech and speech to text by the models of the ``voice`` and ``transcriber``
roles (``openai/tts-1``, ``openai/whisper-1``, ``openai/gpt-4o-transcribe``, any litellm speech model, or the
offline ``fake/...`` models), through the model client, so that a speech call has the role's timeout, retries,
concurrency limit, cost account and request cache as every other model call has."""

from __future__ import annotations

from simulator.errors import ModelError
from simulator.llm import LLMClient, Role
from simulator.voice._audio import DEFAULT_RATE, Audio, AudioError
from simulator.voice._protocol import Heard, Speaker
from simulator.voice._whisper import SILENCE_PEAK

__all__ = ["ProviderRecognizer", "ProviderSynthesizer"]

#: Audio shorter than this holds no word, and providers refuse it (OpenAI's minimum is 0.1 s): it is heard as
#: nothing, without a request.
_SHORTEST = 0.1


class ProviderSynthesizer:
    """Speaks with the ``role``'s speech model: the speaker's ``voice`` is the provider's voice name (the provider's
    default when None: ``alloy`` for OpenAI's), its ``rate`` the provider's speed; a provider has no pitch setting,
    so ``pitch`` is not sent."""

    def __init__(self, client: LLMClient, role: Role | str = Role.VOICE) -> None:
        self.client = client
        self.role = Role(role)
        #: The model, as the run records the backend.
        self.name = client.settings(self.role).model or f"{self.role.value} (no model)"

    async def synthesize(self, text: str, speaker: Speaker) -> Audio:
        """``text`` spoken by the role's model, as the WAV file it answers with; a :class:`ModelError` when the
        model fails or answers with audio that is not 16-bit WAV."""
        wav = await self.client.speak(self.role, text, voice=speaker.voice, speed=speaker.rate)
        try:
            return Audio.from_wav(wav)
        except AudioError as exc:
            raise ModelError(
                f"{self.role.value} model {self.name!r} answered with audio the voice layer cannot read ({exc}); "
                "choose a speech model that returns 16-bit WAV"
            ) from None


class ProviderRecognizer:
    """Hears with the ``role``'s transcription model, told the language; the confidence is the provider's where it
    reports one (a Whisper model's segments), None otherwise."""

    def __init__(self, client: LLMClient, role: Role | str = Role.TRANSCRIBER) -> None:
        self.client = client
        self.role = Role(role)
        #: The model, as the run records the backend.
        self.name = client.settings(self.role).model or f"{self.role.value} (no model)"

    async def transcribe(self, audio: Audio, language: str) -> Heard:
        """What the role's model hears in ``audio`` (sent as 16 kHz WAV, what recognisers expect); silence is heard
        as nothing, for sure, without a request."""
        speech = audio.resampled(DEFAULT_RATE)
        values = speech.values()
        if not values or max(abs(min(values)), abs(max(values))) < SILENCE_PEAK:
            # as the offline recogniser hears it, and a provider's model may make words up in silence
            return Heard("", 1.0)
        if audio.seconds < _SHORTEST:
            return Heard("", None)
        heard = await self.client.transcribe(self.role, speech.wav(), language)
        return Heard(heard.text.strip(), heard.confidence)
