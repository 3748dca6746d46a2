"""The provider speech backends (models of the ``voice`` and ``transcriber`` roles) against a local
OpenAI-compatible speech and transcription server, and the offline ``fake/...`` speech models."""

from __future__ import annotations

import asyncio
import json
import math
import socket
import threading
from collections.abc import Awaitable, Callable, Iterator
from dataclasses import dataclass, field
from email.parser import BytesParser
from email.policy import default as default_policy
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, TypeVar

import pytest

import simulator
from simulator._fake_speech import listen_wav, speak_wav
from simulator.errors import ModelError
from simulator.llm import LLMClient, RequestCache, Role, has_price, metering, suite_model_problems
from simulator.llm._speech import segments_confidence
from simulator.models import ModelRoles, Suite
from simulator.models.run import listed_roles
from simulator.voice import (
    Audio,
    FakeRecognizer,
    FakeSynthesizer,
    ProviderRecognizer,
    ProviderSynthesizer,
    Speaker,
)

T = TypeVar("T")

SENTENCE = "I lost my card and I want to block it"
#: What the server says of every segment it heard: the confidence is exp(AVG_LOGPROB) * (1 - NO_SPEECH).
AVG_LOGPROB = -0.25
NO_SPEECH = 0.01


@dataclass
class SpeechServer:
    """An OpenAI-compatible speech server on loopback: ``/v1/audio/speech`` speaks with the fake codec,
    ``/v1/audio/transcriptions`` reads it back. ``failures`` are statuses answered (in order) before it answers."""

    base: str = ""
    requests: list[tuple[str, dict[str, Any]]] = field(default_factory=list)
    failures: list[int] = field(default_factory=list)
    #: A path always answered with 404 (a model the server does not know).
    fail_on: str | None = None


class _Handler(BaseHTTPRequestHandler):
    server_state: SpeechServer

    def log_message(self, format: str, *args: Any) -> None:
        """Quiet."""

    def _send(self, status: int, body: bytes, content_type: str) -> None:
        self.send_response(status)
        self.send_header("content-type", content_type)
        self.send_header("content-length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_POST(self) -> None:
        state = self.server_state
        body = self.rfile.read(int(self.headers.get("content-length", "0")))
        if self.path.endswith("/audio/speech"):
            fields: dict[str, Any] = json.loads(body)
        else:
            message = BytesParser(policy=default_policy).parsebytes(
                b"Content-Type: " + self.headers["content-type"].encode() + b"\r\n\r\n" + body
            )
            fields = {}
            for part in message.iter_parts():
                name = part.get_param("name", header="content-disposition")
                payload = part.get_payload(decode=True)
                assert isinstance(payload, bytes)
                fields[str(name)] = payload if name == "file" else payload.decode()
        state.requests.append((self.path, fields))
        if state.failures or self.path == state.fail_on:
            status = state.failures.pop(0) if state.failures else 404
            self._send(status, json.dumps({"error": {"message": f"failed with {status}"}}).encode(), "application/json")
            return
        if self.path == "/v1/audio/speech":
            self._send(200, speak_wav(fields["input"]), "audio/wav")
        elif self.path == "/v1/audio/transcriptions":
            text, _ = listen_wav(fields["file"])
            reply: dict[str, Any] = {"text": text}
            if fields.get("response_format") == "verbose_json":
                seconds = (len(fields["file"]) - 44) / 32000
                segment = {"text": text, "avg_logprob": AVG_LOGPROB, "no_speech_prob": NO_SPEECH}
                reply |= {"language": "english", "duration": seconds, "segments": [segment]}
            self._send(200, json.dumps(reply).encode(), "application/json")
        else:
            self._send(404, b'{"error": {"message": "no such route"}}', "application/json")


@pytest.fixture
def server() -> Iterator[SpeechServer]:
    state = SpeechServer()
    handler = type("Handler", (_Handler,), {"server_state": state})
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    state.base = f"http://127.0.0.1:{httpd.server_address[1]}/v1"
    try:
        yield state
    finally:
        httpd.shutdown()
        httpd.server_close()
        thread.join()


async def _no_sleep(_: float) -> None:
    return None


def client(
    voice: str | dict[str, Any], transcriber: str | dict[str, Any], *, cache: RequestCache | None = None
) -> LLMClient:
    roles = ModelRoles.model_validate({"voice": voice, "transcriber": transcriber})
    return LLMClient(roles, environ={}, sleep=_no_sleep, cache=cache)


def served(server: SpeechServer, **settings: Any) -> LLMClient:
    """A client whose speech roles are OpenAI's models at the local server."""
    return client(
        {"model": "openai/tts-1", "api_base": server.base, **settings},
        {"model": "openai/whisper-1", "api_base": server.base, **settings},
    )


def run(awaitable: Awaitable[T]) -> T:
    async def main() -> T:
        return await awaitable

    return asyncio.run(main())


@pytest.mark.parametrize(
    ("speaker", "sent_voice", "sent_speed", "sent_language"),
    [
        (Speaker(), "alloy", None, "en"),
        (Speaker(language="de-AT", voice="nova", rate=1.25), "nova", "1.25", "de"),
    ],
    ids=["defaults", "persona-voice"],
)
def test_a_sentence_round_trips_through_the_provider_models(
    server: SpeechServer, speaker: Speaker, sent_voice: str, sent_speed: str | None, sent_language: str
) -> None:
    llm = served(server)
    synthesizer, recognizer = ProviderSynthesizer(llm), ProviderRecognizer(llm)

    async def round_trip() -> Any:
        audio = await synthesizer.synthesize(SENTENCE, speaker)
        return audio, await recognizer.transcribe(audio, speaker.language)

    audio, heard = run(round_trip())
    assert audio.seconds > 1
    assert heard.text == SENTENCE
    assert heard.confidence == pytest.approx(math.exp(AVG_LOGPROB) * (1 - NO_SPEECH))
    (speech_path, speech), (heard_path, transcription) = server.requests
    assert (speech_path, heard_path) == ("/v1/audio/speech", "/v1/audio/transcriptions")
    assert speech["model"] == "tts-1"
    assert speech["voice"] == sent_voice
    assert speech["response_format"] == "wav"
    assert (str(speech["speed"]) if "speed" in speech else None) == sent_speed
    assert transcription["model"] == "whisper-1"
    assert transcription["language"] == sent_language
    assert transcription["response_format"] == "verbose_json"
    assert (synthesizer.name, recognizer.name) == ("openai/tts-1", "openai/whisper-1")


def test_a_transcriber_that_reports_no_segments_gives_no_confidence(server: SpeechServer) -> None:
    llm = client("openai/tts-1", {"model": "openai/gpt-4o-transcribe", "api_base": server.base})
    heard = run(ProviderRecognizer(llm).transcribe(Audio.from_wav(speak_wav(SENTENCE)), "en"))
    assert (heard.text, heard.confidence) == (SENTENCE, None)
    assert "response_format" not in server.requests[0][1]


@pytest.mark.parametrize(
    ("audio", "confidence"),
    [
        (Audio.silence(3), 1.0),
        (Audio.silence(3).with_noise(0.001, seed=1), 1.0),  # under the offline recogniser's silence peak
        (Audio(b""), 1.0),
        (Audio.from_wav(speak_wav("hi")).cut(0, 0.05), None),  # too short for a word (and for the provider)
    ],
    ids=["silence", "hiss", "empty", "too-short"],
)
def test_silence_is_heard_as_nothing_without_a_request(
    server: SpeechServer, audio: Audio, confidence: float | None
) -> None:
    heard = run(ProviderRecognizer(served(server)).transcribe(audio, "en"))
    assert (heard.text, heard.confidence, server.requests) == ("", confidence, [])


CALLS: dict[str, Callable[[LLMClient], Awaitable[Any]]] = {
    "speak": lambda llm: llm.speak(Role.VOICE, SENTENCE),
    "transcribe": lambda llm: llm.transcribe(Role.TRANSCRIBER, speak_wav(SENTENCE), "en"),
}


@pytest.mark.parametrize("call", sorted(CALLS))
@pytest.mark.parametrize("status", [500, 503, 429])
def test_a_speech_call_is_retried_after_a_server_error(server: SpeechServer, call: str, status: int) -> None:
    server.failures = [status]
    answer = run(CALLS[call](served(server)))
    assert answer  # audio bytes, or a transcription
    assert len(server.requests) == 2


@pytest.mark.parametrize("call", sorted(CALLS))
def test_a_speech_call_stops_at_its_role_retries(server: SpeechServer, call: str) -> None:
    server.failures = [500, 500, 500]
    with pytest.raises(ModelError, match=r"model 'openai/(tts|whisper)-1' failed after 2 attempts"):
        run(CALLS[call](served(server, max_retries=1)))
    assert len(server.requests) == 2


def test_the_cache_serves_a_repeated_transcription_without_a_request(server: SpeechServer, tmp_path: Path) -> None:
    base = server.base
    with RequestCache(tmp_path / "cache.db") as cache:
        llm = client("openai/tts-1", {"model": "openai/whisper-1", "api_base": base}, cache=cache)
        said, other = speak_wav(SENTENCE), speak_wav("block it now")

        async def three() -> Any:
            with metering() as meter:
                first = await llm.transcribe(Role.TRANSCRIBER, said, "en")
                again = await llm.transcribe(Role.TRANSCRIBER, said, "en")
                different = await llm.transcribe(Role.TRANSCRIBER, other, "en")
            return first, again, different, meter

        first, again, different, meter = run(three())
    assert (first.cached, again.cached, different.cached) == (False, True, False)
    assert (again.text, again.confidence) == (first.text, first.confidence)
    assert different.text == "block it now"
    assert len(server.requests) == 2  # the repeat was never sent
    used = meter.by_role[Role.TRANSCRIBER]
    assert (used.calls, used.cached_calls, meter.cache_hits[Role.TRANSCRIBER]) == (3, 1, 1)
    assert used.cached_cost == first.usage.cost


def test_the_cache_keeps_no_audio_and_keys_by_language(server: SpeechServer, tmp_path: Path) -> None:
    with RequestCache(tmp_path / "cache.db") as cache:
        llm = client("openai/tts-1", {"model": "openai/whisper-1", "api_base": server.base}, cache=cache)
        said = speak_wav(SENTENCE)
        run(llm.transcribe(Role.TRANSCRIBER, said, "en"))
        run(llm.transcribe(Role.TRANSCRIBER, said, "de"))
    assert len(server.requests) == 2
    assert said[1000:1100] not in (tmp_path / "cache.db").read_bytes()


def _closed_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@pytest.mark.parametrize("call", sorted(CALLS))
@pytest.mark.parametrize(
    ("settings", "message"),
    [
        ({"model": "nosuchprovider/speech"}, r"model 'nosuchprovider/speech': the provider rejected the request"),
        ({"model": "openai/tts-1", "api_base": "http://127.0.0.1:{port}/v1"}, r"failed after 2 attempts.*connection"),
        ({"model": "fake/speech", "api_base": "${SPEECH_BASE}"}, r"api_base .*SPEECH_BASE"),
    ],
    ids=["unknown-provider", "unreachable", "unset-variable"],
)
def test_a_bad_model_or_server_is_a_model_error(call: str, settings: dict[str, Any], message: str) -> None:
    settings = {**settings, "max_retries": 1}
    if "api_base" in settings:
        settings["api_base"] = settings["api_base"].replace("{port}", str(_closed_port()))
    with pytest.raises(ModelError, match=message):
        run(CALLS[call](client(settings, settings)))


def test_a_model_the_server_does_not_know_is_not_retried(server: SpeechServer) -> None:
    server.failures = [404]
    with pytest.raises(ModelError, match="does not know this model"):
        run(CALLS["speak"](served(server)))
    assert len(server.requests) == 1


def test_a_role_without_a_model_says_how_to_set_one() -> None:
    llm = LLMClient(ModelRoles())
    with pytest.raises(ModelError, match=r"transcriber role.*\{transcriber: openai/whisper-1\}.*--models FILE"):
        run(llm.transcribe(Role.TRANSCRIBER, speak_wav("hi"), "en"))


def test_cost_and_usage_are_counted_per_speech_role(server: SpeechServer) -> None:
    llm = served(server)

    async def both() -> Any:
        with metering() as meter:
            await ProviderRecognizer(llm).transcribe(
                await ProviderSynthesizer(llm).synthesize(SENTENCE, Speaker()), "en"
            )
        return meter

    meter = run(both())
    assert set(meter.by_role) == {Role.VOICE, Role.TRANSCRIBER}
    spoken, heard = meter.by_role[Role.VOICE], meter.by_role[Role.TRANSCRIBER]
    assert (spoken.calls, heard.calls, spoken.cached_calls, heard.cached_calls) == (1, 1, 0, 0)
    # litellm prices tts-1 by the character and whisper-1 by the second: what it reports is what is counted
    assert (spoken.cost or 0) > 0
    assert (heard.cost or 0) > 0
    assert listed_roles(meter.by_role) == ["agent", "user", "judge", "voice", "transcriber"]


def test_a_model_litellm_has_no_price_for_costs_unknown(server: SpeechServer) -> None:
    llm = client({"model": "openai/house-voice-7", "api_base": server.base}, "fake/ears")

    async def spoken() -> Any:
        with metering() as meter:
            await llm.speak(Role.VOICE, "hello")
        return meter

    assert run(spoken()).by_role[Role.VOICE].cost is None


def test_the_fake_speech_models_speak_the_codec_of_the_fake_backends() -> None:
    llm = client("fake/voice", "fake/ears")

    async def round_trips() -> Any:
        provider_audio = await ProviderSynthesizer(llm).synthesize(SENTENCE, Speaker())
        fake_audio = await FakeSynthesizer().synthesize(SENTENCE, Speaker())
        by_fake = await FakeRecognizer().transcribe(provider_audio, "en")
        noisy = fake_audio.with_noise(0.01, seed=3)
        by_provider = await ProviderRecognizer(llm).transcribe(noisy, "en")
        with metering() as meter:
            await llm.speak(Role.VOICE, SENTENCE)
        return provider_audio, fake_audio, by_fake, by_provider, await FakeRecognizer().transcribe(noisy, "en"), meter

    provider_audio, fake_audio, by_fake, by_provider, by_fake_noisy, meter = run(round_trips())
    assert provider_audio == fake_audio
    assert by_fake.text == SENTENCE
    assert by_provider == by_fake_noisy  # the same reading, the noise's low confidence included
    assert (by_provider.confidence or 0) < 0.5
    assert meter.by_role[Role.VOICE].calls == 1


def test_the_fake_transcriber_refuses_audio_it_cannot_read() -> None:
    with pytest.raises(ModelError, match=r"fake transcriber cannot read the audio.*expected mono 16-bit WAV"):
        run(client("fake/voice", "fake/ears").transcribe(Role.TRANSCRIBER, Audio.silence(1, rate=8000).wav(), "en"))


def test_a_provider_answer_that_is_not_wav_is_a_model_error(server: SpeechServer) -> None:
    original = speak_wav

    def not_wav(text: str, *, rate: float = 1.0) -> bytes:
        return b"ID3" + original(text)[3:]

    llm = served(server)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(f"{__name__}.speak_wav", not_wav)
        with pytest.raises(ModelError, match=r"cannot read.*16-bit WAV"):
            run(ProviderSynthesizer(llm).synthesize(SENTENCE, Speaker()))


def test_speech_roles_are_left_out_of_stored_settings_while_unset() -> None:
    assert set(ModelRoles().model_dump()) == {"agent", "user", "judge"}
    assert set(ModelRoles.model_validate({"voice": "openai/tts-1"}).model_dump()) == {
        "agent",
        "user",
        "judge",
        "voice",
    }
    assert listed_roles({"judge": 1}) == ["agent", "user", "judge"]


def test_a_speech_model_with_an_unknown_provider_is_found_before_a_run() -> None:
    models = {"voice": "opnai/tts-1", "transcriber": "fake/ears"}
    case = {"name": "c", "kind": "scenario", "goal": "block the card"}
    suite = Suite.model_validate({"name": "s", "models": models, "cases": [case]})
    ((where, message),) = suite_model_problems(suite)
    assert where == ("models", "voice", "model")
    assert "voice model" in message
    assert "openai" in message  # the did-you-mean


@pytest.mark.parametrize(
    ("model", "priced"),
    [("openai/tts-1", True), ("openai/whisper-1", True), ("openai/gpt-4o-transcribe", True), ("openai/x-9", False)],
)
def test_speech_models_priced_by_the_character_or_second_count_as_priced(model: str, priced: bool) -> None:
    assert has_price(model) is priced


VOICE_AGENT = """\
from simulator.voice import Audio, FakeRecognizer, FakeSynthesizer, Speaker

EARS, MOUTH = FakeRecognizer(), FakeSynthesizer()


async def _answer(wav, amount):
    heard = (await EARS.transcribe(Audio.from_wav(wav), "en")).text
    text = f"Your balance is {amount} dollars." if "balance" in heard else f"You said: {heard}"
    return (await MOUTH.synthesize(text, Speaker())).wav(), text


async def bank(wav, context):
    return await _answer(wav, "150")


async def buggy_bank(wav, context):
    return await _answer(wav, "115")
"""

VOICE_SUITE = """\
name: spoken bank
modality: voice
models:
  voice: {{model: openai/tts-1, api_base: "{base}"}}
  transcriber: {{model: openai/whisper-1, api_base: "{base}"}}
agent: {{type: python, callable: "bank_voice:{callable}", audio: true}}
cases:
  - kind: simulation
    name: balance
    steps:
      - static_utterance: What is my balance?
        checks: [{{must_contain: ["150 dollars"]}}]
"""


@pytest.mark.parametrize(("callable_", "outcome"), [("bank", "pass"), ("buggy_bank", "fail")])
def test_a_voice_suite_runs_on_the_provider_speech_models(
    server: SpeechServer, tmp_path: Path, callable_: str, outcome: str
) -> None:
    (tmp_path / ".git").mkdir()
    (tmp_path / "bank_voice.py").write_text(VOICE_AGENT, encoding="utf-8")
    suite = tmp_path / "suite.yaml"
    suite.write_text(VOICE_SUITE.format(base=server.base, callable=callable_), encoding="utf-8")
    ran = simulator.run(str(suite), db=tmp_path / "runs.db", seed=1)
    (stored,) = ran.results()
    assert stored.result.outcome == outcome, stored.result.reasons
    transcript = stored.result.transcript
    assert transcript.agent_events()[0].messages == [
        f"Your balance is {'150' if outcome == 'pass' else '115'} dollars."
    ]
    assert (transcript.usage["voice"].calls, transcript.usage["transcriber"].calls) == (1, 1)
    assert [path for path, _ in server.requests] == ["/v1/audio/speech", "/v1/audio/transcriptions"]
    assert (ran.record.versions["synthesizer"], ran.record.versions["recognizer"]) == (
        "openai/tts-1",
        "openai/whisper-1",
    )


@pytest.mark.parametrize(
    ("segments", "confidence"),
    [
        ([{"avg_logprob": -0.1, "no_speech_prob": 0.0}, {"avg_logprob": -1.0, "no_speech_prob": 0.5}], 0.5 / math.e),
        ([{"avg_logprob": 0.2}], 1.0),  # a positive log probability is no more than sure
        ([{"avg_logprob": -0.5, "no_speech_prob": 1.0}], 0.0),  # heard as no speech at all
        ([{"text": "hi"}], None),  # the provider says nothing of how sure it was
        ([], None),
        (None, None),
    ],
    ids=["least-sure-segment", "capped", "no-speech", "no-scores", "no-segments", "none"],
)
def test_the_confidence_is_the_least_sure_segments(segments: Any, confidence: float | None) -> None:
    assert segments_confidence(segments) == (None if confidence is None else pytest.approx(confidence))


@pytest.mark.parametrize("failing", ["/v1/audio/speech", "/v1/audio/transcriptions"])
def test_a_failing_provider_speech_model_is_an_error_never_the_agents_fail(
    server: SpeechServer, tmp_path: Path, failing: str
) -> None:
    (tmp_path / ".git").mkdir()
    (tmp_path / "bank_voice.py").write_text(VOICE_AGENT, encoding="utf-8")
    suite = tmp_path / "suite.yaml"
    suite.write_text(VOICE_SUITE.format(base=server.base, callable="bank"), encoding="utf-8")
    server.fail_on = failing
    (stored,) = simulator.run(str(suite), db=tmp_path / "runs.db", seed=1).results()
    assert stored.result.outcome == "error"
    role = "voice" if failing.endswith("speech") else "transcriber"
    assert any(f"{role} model" in reason and "does not know this model" in reason for reason in stored.result.reasons)
