"""The voice layer: speech in and out for voice agents. The simulated user's turns are spoken by a synthesizer, the
agent's audio is heard by a recogniser, and the transcript goes through every check as text does."""

from simulator.voice._adapters import build_voice_agent, voice_agent_adapter
from simulator.voice._agent import (
    PythonVoiceAgent,
    SpokenTextAgent,
    VoiceAgentAdapter,
    VoiceContext,
    VoiceInput,
    VoiceReply,
    voice_reply,
)
from simulator.voice._audio import DEFAULT_RATE, Audio, AudioError, join
from simulator.voice._backends import speech_backends
from simulator.voice._chat_audio import ChatAudioAdapter
from simulator.voice._conversation import SpeechBackendError, TurnAudio, VoiceConversation, persona_speaker
from simulator.voice._fake import FakeRecognizer, FakeSynthesizer
from simulator.voice._protocol import Heard, Recognizer, Speaker, Synthesizer
from simulator.voice._provider import ProviderRecognizer, ProviderSynthesizer
from simulator.voice._realtime import RealtimeAdapter

__all__ = [
    "DEFAULT_RATE",
    "Audio",
    "AudioError",
    "ChatAudioAdapter",
    "FakeRecognizer",
    "FakeSynthesizer",
    "Heard",
    "ProviderRecognizer",
    "ProviderSynthesizer",
    "PythonVoiceAgent",
    "RealtimeAdapter",
    "Recognizer",
    "Speaker",
    "SpeechBackendError",
    "SpokenTextAgent",
    "Synthesizer",
    "TurnAudio",
    "VoiceAgentAdapter",
    "VoiceContext",
    "VoiceConversation",
    "VoiceInput",
    "VoiceReply",
    "build_voice_agent",
    "join",
    "persona_speaker",
    "speech_backends",
    "voice_agent_adapter",
    "voice_reply",
]
