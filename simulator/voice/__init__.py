"""The voice layer: speech in and out for voice agents. The simulated user's turns are spoken by a synthesizer, the
agent's audio is heard by a recogniser, and the transcript goes through every check as text does."""

from simulator.voice._audio import DEFAULT_RATE, Audio, AudioError, join
from simulator.voice._fake import FakeRecognizer, FakeSynthesizer
from simulator.voice._protocol import Heard, Recognizer, Speaker, Synthesizer
from simulator.voice._provider import ProviderRecognizer, ProviderSynthesizer

__all__ = [
    "DEFAULT_RATE",
    "Audio",
    "AudioError",
    "FakeRecognizer",
    "FakeSynthesizer",
    "Heard",
    "ProviderRecognizer",
    "ProviderSynthesizer",
    "Recognizer",
    "Speaker",
    "Synthesizer",
    "join",
]
