"""The voice agent adapters against agents served by the test on 127.0.0.1: an OpenAI-compatible chat endpoint that
takes and gives audio (aiohttp), and an OpenAI-Realtime-compatible WebSocket agent (websockets). The audio on both
sides is the fake synthesizer's, so what each side heard is read back exactly; no sleeps, no timing assertions
(latencies are checked as ordered, non-negative numbers)."""

from __future__ import annotations

import asyncio
import base64
import json
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

import pytest
from aiohttp import web
from pydantic import TypeAdapter
from websockets.asyncio.server import ServerConnection, serve

from simulator.agents import AgentInput, build_agent
from simulator.errors import AgentError
from simulator.models import AgentConfig, HttpAgent, RealtimeAgent, ToolDeclaration, ToolFake
from simulator.models.transcript import ReportedUsage, ToolRound
from simulator.tools import ToolHandle, ToolRouter
from simulator.voice import Audio, ChatAudioAdapter, RealtimeAdapter, VoiceInput, VoiceReply, voice_agent_adapter
from simulator.voice._fake import listen, speak
from simulator.voice._playback import played
from tests.factories import run

LOOKUP = ToolDeclaration(
    name="lookup_order",
    description="Find an order.",
    parameters={"type": "object", "properties": {"order_id": {"type": "string"}}},
)
SHIPPED = ToolFake(tool="lookup_order", arguments={"order_id": "A1"}, result={"status": "shipped"})
SAID = "Where is my order A1?"
ANSWER = "Your order A1 has shipped."
#: Earlier turns, as the engine hands them over: text, the current user turn last.
HISTORY = [
    {"role": "user", "content": "Hello"},
    {"role": "assistant", "content": "Hi, how can I help?"},
    {"role": "user", "content": SAID},
]


def make_router() -> ToolRouter:
    return ToolRouter(declared=[LOOKUP], fakes=[("suite tool_fakes[0]", SHIPPED)])


def voice_input(router: ToolRouter, *, interrupt_after: float | None = None, **turn: Any) -> VoiceInput:
    """The spoken turn ``SAID`` (call inside the test's coroutine: the tool handle is bound to the running loop)."""
    request = AgentInput(
        messages=turn.pop("messages", list(HISTORY)),
        session=turn.pop("session", {}),
        tools=ToolHandle(router, asyncio.get_running_loop()),
        **turn,
    )
    return VoiceInput(audio=speak(SAID), turn=request, interrupt_after=interrupt_after)


def wav64(audio: Audio) -> str:
    return base64.b64encode(audio.wav()).decode()


def heard_from_wav(data: str) -> str:
    return listen(Audio.from_wav(base64.b64decode(data)))[0]


def assert_latencies(reply: VoiceReply) -> None:
    assert reply.first_audio is not None
    assert reply.end_audio is not None
    assert 0 <= reply.first_audio <= reply.end_audio


# --------------------------------------------------------------------------------------------------------------
# the chat endpoint with audio


def audio_reply(text: str, *, format: str = "wav", **message: Any) -> dict[str, Any]:
    audio = speak(text)
    data = wav64(audio) if format == "wav" else base64.b64encode(audio.resampled(24_000).pcm).decode()
    reply = {"role": "assistant", "content": None, "audio": {"id": "audio_1", "data": data, "transcript": text}}
    return {"choices": [{"message": {**reply, **message}}], "usage": {"prompt_tokens": 40, "completion_tokens": 9}}


def tool_call_reply() -> dict[str, Any]:
    call = {"id": "call_1", "type": "function", "function": {"name": "lookup_order", "arguments": '{"order_id": "A1"}'}}
    return {"choices": [{"message": {"role": "assistant", "content": None, "tool_calls": [call]}}]}


@dataclass
class AudioChatServer:
    """An OpenAI-compatible chat endpoint that answers from a script and keeps every request."""

    script: list[dict[str, Any]]
    requests: list[dict[str, Any]] = field(default_factory=list)
    url: str = ""
    _runner: web.AppRunner | None = None

    async def __aenter__(self) -> AudioChatServer:
        app = web.Application(client_max_size=64 * 1024 * 1024)
        app.router.add_post("/v1/chat/completions", self._handle)
        self._runner = web.AppRunner(app)
        await self._runner.setup()
        await web.TCPSite(self._runner, "127.0.0.1", 0).start()
        host, port = self._runner.addresses[0][:2]
        self.url = f"http://{host}:{port}/v1"
        return self

    async def __aexit__(self, *exc: object) -> None:
        assert self._runner is not None
        await self._runner.cleanup()

    async def _handle(self, request: web.Request) -> web.Response:
        self.requests.append(await request.json())
        return web.json_response(self.script.pop(0))


async def talk_chat(
    script: list[dict[str, Any]], *, audio: Any = True, **turn: Any
) -> tuple[VoiceReply, AudioChatServer, ToolRouter]:
    router = make_router()
    async with AudioChatServer(script) as server:
        config = HttpAgent.model_validate(
            {
                "type": "http",
                "base_url": server.url,
                "model": "voice-bot",
                "tools": [LOOKUP.model_dump()],
                "audio": audio,
            }
        )
        adapter = ChatAudioAdapter(config)
        try:
            reply = await adapter.respond_audio(voice_input(router, **turn))
        finally:
            await adapter.aclose()
    return reply, server, router


def test_chat_endpoint_hears_the_user_in_audio_and_answers_in_audio() -> None:
    reply, server, _ = run(talk_chat([audio_reply(ANSWER)], audio={"voice": "verse", "format": "wav"}))
    [body] = server.requests
    assert body["modalities"] == ["text", "audio"]
    assert body["audio"] == {"voice": "verse", "format": "wav"}
    # earlier turns as text, the current one as audio that says what the user said
    assert body["messages"][:2] == HISTORY[:2]
    [part] = body["messages"][2]["content"]
    assert part["type"] == "input_audio"
    assert part["input_audio"]["format"] == "wav"
    assert heard_from_wav(part["input_audio"]["data"]) == SAID
    # the reply: its audio says the answer, its transcript is kept, its usage counted
    assert listen(reply.audio)[0] == ANSWER
    assert reply.said == [ANSWER]
    assert not reply.interrupted
    assert reply.usage == ReportedUsage(prompt_tokens=40, completion_tokens=9)
    assert_latencies(reply)
    assert reply.end_audio is not None
    assert reply.first_audio is not None
    assert reply.end_audio - reply.first_audio == pytest.approx(reply.audio.seconds)


def test_chat_endpoint_reply_in_pcm16_at_24_khz() -> None:
    reply, server, _ = run(talk_chat([audio_reply(ANSWER, format="pcm16")], audio={"format": "pcm16"}))
    assert server.requests[0]["audio"] == {"voice": "alloy", "format": "pcm16"}
    assert reply.audio.rate == 24_000
    assert listen(reply.audio)[0] == ANSWER


def test_chat_endpoint_session_goes_first_and_an_event_stays_text() -> None:
    event = {"role": "user", "content": "[event: call_started]", "event": {"name": "call_started", "payload": {}}}
    reply, server, _ = run(talk_chat([audio_reply(ANSWER)], messages=[event], session={"tier": "gold"}))
    messages = server.requests[0]["messages"]
    assert messages[0] == {"role": "system", "content": 'Session parameters: {"tier": "gold"}'}
    assert messages[1] == {"role": "user", "content": "[event: call_started]"}
    assert heard_from_wav(messages[2]["content"][0]["input_audio"]["data"]) == SAID
    assert reply.said == [ANSWER]


def test_chat_endpoint_tool_call_is_routed_and_its_result_sent_back() -> None:
    reply, server, router = run(talk_chat([tool_call_reply(), audio_reply(ANSWER)]))
    assert [(record.id, record.name, record.status) for record in router.records] == [
        ("call_1", "lookup_order", "faked")
    ]
    first, second = server.requests
    assert second["modalities"] == ["text", "audio"]
    assert second["messages"][len(first["messages"]) :] == [
        {"role": "assistant", "content": None, "tool_calls": tool_call_reply()["choices"][0]["message"]["tool_calls"]},
        {"role": "tool", "tool_call_id": "call_1", "content": '{"status": "shipped"}'},
    ]
    assert reply.tool_rounds == [ToolRound(calls=["call_1"], content="null")]
    assert listen(reply.audio)[0] == ANSWER
    assert_latencies(reply)


def test_chat_endpoint_barge_in_cuts_the_reply() -> None:
    reply, _, _ = run(talk_chat([audio_reply(ANSWER)], interrupt_after=0.7))
    assert reply.interrupted
    assert reply.audio.seconds == pytest.approx(0.7)
    heard = listen(reply.audio)[0]
    assert ANSWER.startswith(heard)
    assert 0 < len(heard) < len(ANSWER)
    assert_latencies(reply)


def test_chat_endpoint_barge_in_after_the_reply_ended_changes_nothing() -> None:
    reply, _, _ = run(talk_chat([audio_reply(ANSWER)], interrupt_after=60.0))
    assert not reply.interrupted
    assert listen(reply.audio)[0] == ANSWER


@pytest.mark.parametrize(
    ("answer", "error"),
    [
        (
            {"choices": [{"message": {"role": "assistant", "content": "Shipped."}}]},
            "answered in text but not in audio",
        ),
        (
            {"choices": [{"message": {"role": "assistant", "audio": {"data": "not base64!", "transcript": "x"}}}]},
            "cannot be read as base64 wav",
        ),
        (
            {"choices": [{"message": {"role": "assistant", "audio": {"data": "AAAA", "transcript": "x"}}}]},
            "not a WAV file",
        ),
    ],
)
def test_chat_endpoint_reply_without_readable_audio_is_the_agents_error(answer: dict[str, Any], error: str) -> None:
    with pytest.raises(AgentError, match=error):
        run(talk_chat([answer]))


# --------------------------------------------------------------------------------------------------------------
# the realtime WebSocket agent

Handler = Callable[["RealtimeServer", ServerConnection, dict[str, Any]], Awaitable[None]]


def delta_events(text: str, *, chunks: int = 4, item: str = "item_1") -> list[dict[str, Any]]:
    """``text`` spoken as 24 kHz PCM16, in ``chunks`` audio deltas."""
    pcm = speak(text).resampled(24_000).pcm
    size = -(-len(pcm) // chunks // 2) * 2
    return [
        {"type": "response.audio.delta", "item_id": item, "content_index": 0, "delta": base64.b64encode(part).decode()}
        for part in (pcm[start : start + size] for start in range(0, len(pcm), size))
    ]


def spoken_response(text: str, *, item: str = "item_1") -> list[dict[str, Any]]:
    return [
        {"type": "response.created"},
        *delta_events(text, item=item),
        {"type": "response.audio.done", "item_id": item},
        {"type": "response.audio_transcript.done", "item_id": item, "transcript": text},
        {
            "type": "response.done",
            "response": {"status": "completed", "usage": {"input_tokens": 30, "output_tokens": 7}},
        },
    ]


@dataclass
class RealtimeServer:
    """A realtime agent: keeps every event it gets and answers each ``response.create`` from its script."""

    script: list[list[dict[str, Any]]]
    received: list[dict[str, Any]] = field(default_factory=list)
    headers: dict[str, str] = field(default_factory=dict)
    paths: list[str] = field(default_factory=list)
    connections: int = 0
    url: str = ""

    async def serve(self, connection: ServerConnection) -> None:
        self.connections += 1
        assert connection.request is not None
        self.paths.append(connection.request.path)
        self.headers = dict(connection.request.headers)
        async for raw in connection:
            event = json.loads(raw)
            self.received.append(event)
            if event["type"] == "response.create":
                for answer in self.script.pop(0):
                    await connection.send(json.dumps(answer))

    def sent(self, kind: str) -> list[dict[str, Any]]:
        return [event for event in self.received if event["type"] == kind]

    def user_turns(self) -> list[Audio]:
        """The audio appended before each commit."""
        turns: list[Audio] = []
        chunks: list[bytes] = []
        for event in self.received:
            if event["type"] == "input_audio_buffer.append":
                chunks.append(base64.b64decode(event["audio"]))
            elif event["type"] == "input_audio_buffer.commit":
                turns.append(Audio(b"".join(chunks), 24_000))
                chunks = []
        return turns


class InterruptibleServer(RealtimeServer):
    """Streams the whole answer, then waits for the cancel (and the truncate) before it says the response is done."""

    async def serve(self, connection: ServerConnection) -> None:
        self.connections += 1
        async for raw in connection:
            event = json.loads(raw)
            self.received.append(event)
            if event["type"] == "response.create":
                for answer in delta_events(ANSWER, chunks=8):
                    await connection.send(json.dumps(answer))
            elif event["type"] == "conversation.item.truncate":
                await connection.send(json.dumps({"type": "response.done", "response": {"status": "cancelled"}}))


async def talk_realtime(
    server: RealtimeServer, turns: int = 1, config: dict[str, Any] | None = None, **turn: Any
) -> tuple[list[VoiceReply], ToolRouter]:
    router = make_router()
    async with serve(server.serve, "127.0.0.1", 0) as listening:
        host, port = next(iter(listening.sockets)).getsockname()[:2]
        agent = RealtimeAgent.model_validate(
            {
                "type": "realtime",
                "url": f"ws://{host}:{port}/realtime",
                "tools": [LOOKUP.model_dump()],
                **(config or {}),
            }
        )
        adapter = RealtimeAdapter(agent)
        replies = []
        try:
            for _ in range(turns):
                replies.append(await adapter.respond_audio(voice_input(router, **turn)))
        finally:
            await adapter.aclose()
    return replies, router


def test_realtime_agent_streams_the_turn_and_its_answer() -> None:
    server = RealtimeServer([spoken_response(ANSWER), spoken_response("Anything else?", item="item_2")])
    (first, second), _ = run(
        talk_realtime(server, turns=2, config={"model": "voice-1", "voice": "verse"}, session={"tier": "gold"})
    )
    assert server.connections == 1  # one connection for the conversation
    assert server.paths == ["/realtime?model=voice-1"]
    [update] = server.sent("session.update")
    assert update["session"] == {
        "modalities": ["text", "audio"],
        "input_audio_format": "pcm16",
        "output_audio_format": "pcm16",
        "turn_detection": None,
        "voice": "verse",
        "tools": [
            {
                "type": "function",
                "name": "lookup_order",
                "description": "Find an order.",
                "parameters": LOOKUP.parameters,
            }
        ],
    }
    # the first turn sends the session and the earlier turns as text, the user's words as audio in chunks
    items = [event["item"] for event in server.sent("conversation.item.create")]
    assert items == [
        {
            "type": "message",
            "role": "system",
            "content": [{"type": "input_text", "text": 'Session parameters: {"tier": "gold"}'}],
        },
        {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "Hello"}]},
        {"type": "message", "role": "assistant", "content": [{"type": "text", "text": "Hi, how can I help?"}]},
    ]
    assert [listen(audio)[0] for audio in server.user_turns()] == [SAID, SAID]
    assert len(server.sent("input_audio_buffer.append")) > 2  # in chunks
    kinds = [event["type"] for event in server.received if event["type"] != "input_audio_buffer.append"]
    assert kinds == [
        "session.update",
        *["conversation.item.create"] * 3,
        "input_audio_buffer.commit",
        "response.create",
        "input_audio_buffer.commit",
        "response.create",
    ]
    assert listen(first.audio)[0] == ANSWER
    assert first.said == [ANSWER]
    assert listen(second.audio)[0] == "Anything else?"
    assert first.usage == ReportedUsage(prompt_tokens=30, completion_tokens=7)
    for reply in (first, second):
        assert not reply.interrupted
        assert_latencies(reply)


def test_realtime_agent_function_call_is_routed_and_answered() -> None:
    call = {
        "type": "response.function_call_arguments.done",
        "call_id": "call_7",
        "name": "lookup_order",
        "arguments": '{"order_id": "A1"}',
    }
    asked: list[dict[str, Any]] = [call, {"type": "response.done", "response": {"status": "completed"}}]
    server = RealtimeServer([asked, spoken_response(ANSWER)])
    (reply,), router = run(talk_realtime(server))
    assert [(record.id, record.name, record.status) for record in router.records] == [
        ("call_7", "lookup_order", "faked")
    ]
    outputs = [event["item"] for event in server.sent("conversation.item.create") if event["item"]["type"] != "message"]
    assert outputs == [{"type": "function_call_output", "call_id": "call_7", "output": '{"status": "shipped"}'}]
    assert len(server.sent("response.create")) == 2
    assert reply.tool_rounds == [ToolRound(calls=["call_7"], content="null")]
    assert listen(reply.audio)[0] == ANSWER
    assert_latencies(reply)


def test_realtime_agent_barge_in_cancels_and_truncates() -> None:
    server = InterruptibleServer([])
    (reply,), _ = run(talk_realtime(server, interrupt_after=0.7))
    assert len(server.sent("response.cancel")) == 1
    [truncate] = server.sent("conversation.item.truncate")
    assert truncate == {
        "type": "conversation.item.truncate",
        "item_id": "item_1",
        "content_index": 0,
        "audio_end_ms": 700,
    }
    assert reply.interrupted
    assert reply.audio.seconds == pytest.approx(0.7)
    heard = listen(reply.audio)[0]
    assert ANSWER.startswith(heard)
    assert 0 < len(heard) < len(ANSWER)
    assert_latencies(reply)


@pytest.mark.parametrize(
    ("events", "error"),
    [
        (
            [{"type": "error", "error": {"type": "invalid_request_error", "message": "Unknown voice 'verse'"}}],
            "sent an error: Unknown voice 'verse'",
        ),
        (
            [
                {
                    "type": "response.done",
                    "response": {"status": "failed", "status_details": {"error": {"message": "quota"}}},
                }
            ],
            "failed its response: quota",
        ),
        ([{"type": "response.audio.delta", "item_id": "i", "delta": "%%%"}], "not base64 PCM16"),
    ],
)
def test_realtime_agent_error_is_the_agents_error(events: list[dict[str, Any]], error: str) -> None:
    with pytest.raises(AgentError, match=error):
        run(talk_realtime(RealtimeServer([events])))


def test_realtime_agent_that_cannot_be_reached_is_the_agents_error() -> None:
    agent = RealtimeAgent.model_validate({"type": "realtime", "url": "ws://127.0.0.1:9/realtime", "timeout": 5})

    async def main() -> None:
        adapter = RealtimeAdapter(agent)
        try:
            await adapter.respond_audio(voice_input(make_router()))
        finally:
            await adapter.aclose()

    with pytest.raises(AgentError, match=r"cannot connect to the realtime agent at ws://127\.0\.0\.1:9/realtime"):
        run(main())


def test_realtime_agent_secret_header_comes_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("REALTIME_KEY", "sk-test-secret")
    server = RealtimeServer([spoken_response(ANSWER)])
    config = {"api_key_env": "REALTIME_KEY", "headers": {"OpenAI-Beta": "realtime=v1"}}
    run(talk_realtime(server, config=config))
    assert server.headers["authorization"] == "Bearer sk-test-secret"
    assert server.headers["openai-beta"] == "realtime=v1"


def test_realtime_agent_unset_key_variable_names_the_fix(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("REALTIME_KEY", raising=False)
    agent = RealtimeAgent.model_validate(
        {"type": "realtime", "url": "ws://127.0.0.1:9/", "api_key_env": "REALTIME_KEY"}
    )
    with pytest.raises(AgentError, match=r"names the environment variable REALTIME_KEY, but it is not set"):
        RealtimeAdapter(agent)


# --------------------------------------------------------------------------------------------------------------
# which adapter talks to which agent


def agent(**values: Any) -> AgentConfig:
    return TypeAdapter(AgentConfig).validate_python(values)


@pytest.mark.parametrize(
    ("values", "adapter"),
    [
        ({"type": "http", "base_url": "http://127.0.0.1:9/v1", "audio": True}, ChatAudioAdapter),
        ({"type": "http", "base_url": "http://127.0.0.1:9/v1", "audio": {"voice": "verse"}}, ChatAudioAdapter),
        ({"type": "realtime", "url": "ws://127.0.0.1:9/realtime"}, RealtimeAdapter),
        ({"type": "http", "base_url": "http://127.0.0.1:9/v1"}, None),
        ({"type": "http", "base_url": "http://127.0.0.1:9/v1", "audio": False}, None),
        ({"type": "python", "callable": "bot:respond"}, None),
    ],
)
def test_voice_agent_adapter_for_each_agent(values: dict[str, Any], adapter: type | None) -> None:
    made = voice_agent_adapter(agent(**values))
    assert made is None if adapter is None else isinstance(made, adapter)


def test_audio_setting_unused_leaves_the_agent_as_it_was() -> None:
    plain = HttpAgent.model_validate({"type": "http", "base_url": "http://127.0.0.1:9/v1"})
    assert "audio" not in plain.model_dump()
    assert not plain.speaks_audio
    assert plain.speaks_text


def test_realtime_agent_in_a_chat_run_says_it_takes_audio_only() -> None:
    adapter = build_agent(agent(type="realtime", url="ws://127.0.0.1:9/realtime"))

    async def main() -> None:
        await adapter.respond(
            AgentInput(messages=HISTORY, session={}, tools=ToolHandle(make_router(), asyncio.get_running_loop()))
        )

    with pytest.raises(AgentError, match="takes audio only: run it in voice"):
        run(main())


# --------------------------------------------------------------------------------------------------------------
# how pieces of audio that arrive at different times are heard


@pytest.mark.parametrize(
    ("arrivals", "interrupt_after", "expected"),
    [
        ([], None, (None, None, False, 0.0)),
        ([(0.5, 1.0)], None, (0.5, 1.5, False, 1.0)),
        # the second piece arrives while the first plays: it follows without a gap
        ([(0.5, 1.0), (0.8, 1.0)], None, (0.5, 2.5, False, 2.0)),
        # it arrives after the first has played: the user hears a gap
        ([(0.5, 1.0), (3.0, 1.0)], None, (0.5, 4.0, False, 2.0)),
        ([(0.5, 1.0), (3.0, 1.0)], 1.5, (0.5, 3.5, True, 1.5)),
        ([(0.5, 1.0)], 0.25, (0.5, 0.75, True, 0.25)),
        ([(0.5, 1.0)], 1.0, (0.5, 1.5, False, 1.0)),
        ([(0.2, 0.0), (0.5, 1.0)], None, (0.5, 1.5, False, 1.0)),
    ],
)
def test_playback_of_pieces(
    arrivals: list[tuple[float, float]],
    interrupt_after: float | None,
    expected: tuple[float | None, float | None, bool, float],
) -> None:
    heard = played([(arrived, Audio.silence(seconds)) for arrived, seconds in arrivals], interrupt_after)
    first, end, interrupted, seconds = expected
    assert heard.first == pytest.approx(first)
    assert heard.end == pytest.approx(end)
    assert heard.interrupted is interrupted
    assert heard.audio.seconds == pytest.approx(seconds)
