"""The voice layer: speech in and out for voice agents. The simulated user's turns are spoken by a synthesizer, the
agent's audio is heard by a recogniser, and the transcript goes through every check as text does."""

from simulator.voice._audio import DEFAULT_RATE, Audio, AudioError, join
from simulator.voice._espeak import EspeakSynthesizer
from simulator.voice._fake import FakeRecognizer, FakeSynthesizer
from simulator.voice._missing import SpeechBackendError, SpeechBackendMissing
from simulator.voice._offline import offline_recognizer, offline_synthesizer
from simulator.voice._protocol import Heard, Recognizer, Speaker, Synthesizer
from simulator.voice._whisper import WhisperRecognizer

__all__ = [
    "DEFAULT_RATE",
    "Audio",
    "AudioError",
    "EspeakSynthesizer",
    "FakeRecognizer",
    "FakeSynthesizer",
    "Heard",
    "Recognizer",
    "Speaker",
    "SpeechBackendError",
    "SpeechBackendMissing",
    "Synthesizer",
    "WhisperRecognizer",
    "join",
    "offline_recognizer",
    "offline_synthesizer",
]
