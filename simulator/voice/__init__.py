"""The voice layer: speech in and out for voice agents. The simulated user's turns are spoken by a synthesizer, the
agent's audio is heard by a recogniser, and the transcript goes through every check as text does."""

from simulator.voice._adapters import voice_agent_adapter
from simulator.voice._agent import VoiceAgentAdapter, VoiceInput, VoiceReply
from simulator.voice._audio import DEFAULT_RATE, Audio, AudioError, join
from simulator.voice._chat_audio import ChatAudioAdapter
from simulator.voice._fake import FakeRecognizer, FakeSynthesizer
from simulator.voice._protocol import Heard, Recognizer, Speaker, Synthesizer
from simulator.voice._realtime import RealtimeAdapter

__all__ = [
    "DEFAULT_RATE",
    "Audio",
    "AudioError",
    "ChatAudioAdapter",
    "FakeRecognizer",
    "FakeSynthesizer",
    "Heard",
    "RealtimeAdapter",
    "Recognizer",
    "Speaker",
    "Synthesizer",
    "VoiceAgentAdapter",
    "VoiceInput",
    "VoiceReply",
    "join",
    "voice_agent_adapter",
]
