"""eSpeak NG as the offline synthesizer, called through its C library (ctypes, no binding package).

The library comes from the ``espeakng-loader`` wheel (in the ``voice`` extra: libespeak-ng and its voice data,
about 10 MB, nothing but pip) or, where that is not installed, from the system (Debian's ``espeak-ng``). eSpeak
NG keeps its state in the process, so one lock serialises every synthesis; each runs in a worker thread so that
the event loop never waits on it."""

from __future__ import annotations

import asyncio
import ctypes
import ctypes.util
import threading
from dataclasses import dataclass, field
from typing import Any

from simulator.voice._audio import DEFAULT_RATE, Audio
from simulator.voice._missing import VOICE_EXTRA, SpeechBackendError, SpeechBackendMissing
from simulator.voice._protocol import Speaker

#: eSpeak NG's speaking rate at factor 1.0, in words a minute (its own default), and its limits.
NORMAL_WORDS_A_MINUTE = 175
_WORDS_A_MINUTE = (80, 450)
#: eSpeak NG's pitch at factor 1.0 (its own default, on its scale of 0 to 100).
NORMAL_PITCH = 50

_RETRIEVAL = 1  # AUDIO_OUTPUT_RETRIEVAL: samples come to the callback, nothing is played
_DONT_EXIT = 0x8000  # espeakINITIALIZE_DONT_EXIT: an error is returned, the process is not ended
_UTF8 = 1  # espeakCHARS_UTF8
_POSITION_CHARACTER = 1
_RATE, _PITCH = 1, 3  # espeakRATE, espeakPITCH
_CALLBACK = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.POINTER(ctypes.c_short), ctypes.c_int, ctypes.c_void_p)

_LOCK = threading.Lock()


@dataclass
class _Library:
    """The loaded library, initialised once a process."""

    lib: Any
    rate: int
    version: str
    chunks: list[bytes] = field(default_factory=list)
    callback: Any = None


#: The library once loaded (a process loads it once: eSpeak NG cannot be initialised twice).
_LOADED: dict[str, _Library] = {}


def _locate() -> tuple[str, bytes | None]:
    """The library's path and its data folder (None: the system library's own)."""
    try:
        import espeakng_loader
    except ImportError:
        found = ctypes.util.find_library("espeak-ng")
        if found is None:
            raise SpeechBackendMissing(
                f"the offline synthesizer eSpeak NG is not installed: {VOICE_EXTRA} (or apt-get install espeak-ng)"
            ) from None
        return found, None
    return espeakng_loader.get_library_path(), espeakng_loader.get_data_path().encode()


def _load() -> _Library:
    if "library" in _LOADED:
        return _LOADED["library"]
    path, data = _locate()
    try:
        lib = ctypes.CDLL(path)
    except OSError as exc:
        raise SpeechBackendMissing(f"eSpeak NG's library at {path} cannot be loaded ({exc}): {VOICE_EXTRA}") from exc
    lib.espeak_Initialize.argtypes = [ctypes.c_int, ctypes.c_int, ctypes.c_char_p, ctypes.c_int]
    lib.espeak_Initialize.restype = ctypes.c_int
    lib.espeak_SetVoiceByName.argtypes = [ctypes.c_char_p]
    lib.espeak_SetParameter.argtypes = [ctypes.c_int, ctypes.c_int, ctypes.c_int]
    lib.espeak_Synth.argtypes = [
        ctypes.c_char_p,
        ctypes.c_size_t,
        ctypes.c_uint,
        ctypes.c_int,
        ctypes.c_uint,
        ctypes.c_uint,
        ctypes.c_void_p,
        ctypes.c_void_p,
    ]
    lib.espeak_Info.argtypes = [ctypes.c_void_p]
    lib.espeak_Info.restype = ctypes.c_char_p
    rate = lib.espeak_Initialize(_RETRIEVAL, 0, data, _DONT_EXIT)
    if rate <= 0:
        raise SpeechBackendMissing(f"eSpeak NG could not start (its voice data is missing?): {VOICE_EXTRA}")
    loaded = _Library(lib, rate, (lib.espeak_Info(None) or b"").decode(errors="replace"))

    def collect(samples: Any, count: int, _events: Any) -> int:
        if count > 0:
            loaded.chunks.append(ctypes.string_at(samples, count * 2))
        return 0

    # kept on the object: a callback that is garbage-collected while the library still calls it crashes
    loaded.callback = _CALLBACK(collect)
    lib.espeak_SetSynthCallback(loaded.callback)
    _LOADED["library"] = loaded
    return loaded


def espeak_voices(speaker: Speaker) -> list[str]:
    """The eSpeak NG voices to try for ``speaker``, in order: its ``voice`` when set, else its language as eSpeak
    names it (a BCP 47 tag lower-cased: ``en-US`` is eSpeak's ``en-us``), then the language alone (``de-AT``, which
    eSpeak does not have, falls back to ``de``)."""
    if speaker.voice:
        return [speaker.voice]
    tag = speaker.language.replace("_", "-").lower()
    primary = tag.split("-")[0]
    return [tag] if tag == primary else [tag, primary]


def words_a_minute(rate: float) -> int:
    """eSpeak NG's speaking rate for a rate factor (1.0 = its normal 175 words a minute), within its limits."""
    low, high = _WORDS_A_MINUTE
    return max(low, min(high, round(NORMAL_WORDS_A_MINUTE * rate)))


def espeak_pitch(pitch: float) -> int:
    """eSpeak NG's pitch (0 to 100) for a pitch factor (1.0 = its normal 50)."""
    return max(0, min(100, round(NORMAL_PITCH * pitch)))


class EspeakSynthesizer:
    """Text to speech with eSpeak NG, at :data:`DEFAULT_RATE` (eSpeak speaks at 22,050 Hz; the audio is resampled).

    Loading the library happens on the first :meth:`synthesize` (or :meth:`load`), so that building the backend
    costs nothing; a missing library is a :class:`SpeechBackendMissing` naming the install command."""

    def __init__(self) -> None:
        self.name = "espeak-ng"

    def load(self) -> None:
        """Load the library now (raises :class:`SpeechBackendMissing` when it is not installed)."""
        with _LOCK:
            loaded = _load()
        self.name = f"espeak-ng {loaded.version.split()[0]}" if loaded.version else "espeak-ng"

    async def synthesize(self, text: str, speaker: Speaker) -> Audio:
        """``text`` spoken by ``speaker``, at :data:`DEFAULT_RATE`."""
        return await asyncio.to_thread(self.synthesize_now, text, speaker)

    def synthesize_now(self, text: str, speaker: Speaker) -> Audio:
        """The same as :meth:`synthesize`, in the calling thread (for benches and scripts)."""
        self.load()
        voices = espeak_voices(speaker)
        encoded = text.encode("utf-8")
        with _LOCK:
            loaded = _load()
            if not any(loaded.lib.espeak_SetVoiceByName(voice.encode()) == 0 for voice in voices):
                raise SpeechBackendError(
                    f"eSpeak NG has no voice {voices[0]!r}: set the persona's voice or language to one of eSpeak NG's"
                    " (`espeak-ng --voices` lists them)"
                )
            loaded.lib.espeak_SetParameter(_RATE, words_a_minute(speaker.rate), 0)
            loaded.lib.espeak_SetParameter(_PITCH, espeak_pitch(speaker.pitch), 0)
            loaded.chunks.clear()
            status = loaded.lib.espeak_Synth(encoded, len(encoded) + 1, 0, _POSITION_CHARACTER, 0, _UTF8, None, None)
            loaded.lib.espeak_Synchronize()
            pcm = b"".join(loaded.chunks)
            loaded.chunks.clear()
        if status != 0:
            raise SpeechBackendError(f"eSpeak NG could not speak the text (error {status})")
        return Audio(pcm, loaded.rate).resampled(DEFAULT_RATE)
