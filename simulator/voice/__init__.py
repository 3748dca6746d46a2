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
from simulator.voice._conversation import TurnAudio, VoiceConversation, persona_speaker
from simulator.voice._espeak import EspeakSynthesizer
from simulator.voice._fake import FakeRecognizer, FakeSynthesizer
from simulator.voice._missing import SpeechBackendError, SpeechBackendMissing
from simulator.voice._offline import offline_recognizer, offline_synthesizer
from simulator.voice._protocol import Heard, Recognizer, Speaker, Synthesizer
from simulator.voice._provider import ProviderRecognizer, ProviderSynthesizer
from simulator.voice._realtime import RealtimeAdapter
from simulator.voice._whisper import WhisperRecognizer

__all__ = [
    "DEFAULT_RATE",
    "Audio",
    "AudioError",
    "ChatAudioAdapter",
    "EspeakSynthesizer",
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
    "SpeechBackendMissing",
    "SpokenTextAgent",
    "Synthesizer",
    "TurnAudio",
    "VoiceAgentAdapter",
    "VoiceContext",
    "VoiceConversation",
    "VoiceInput",
    "VoiceReply",
    "WhisperRecognizer",
    "build_voice_agent",
    "join",
    "offline_recognizer",
    "offline_synthesizer",
    "persona_speaker",
    "speech_backends",
    "voice_agent_adapter",
    "voice_reply",
]
