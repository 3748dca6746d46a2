"""The ``realtime`` agent: an OpenAI-Realtime-compatible WebSocket agent, audio streamed both ways.

One connection per conversation, opened at the first turn. The session is set up with ``session.update``: 16-bit PCM
at 24 kHz both ways, the agent's tools, and no turn detection (Simulator says when the user has finished: it commits
each turn). A conversation resumed from a checkpoint has its earlier turns sent first as text items.

Each turn: the user's audio goes as ``input_audio_buffer.append`` chunks, then ``input_audio_buffer.commit`` and
``response.create``. The agent's ``response.audio.delta`` chunks are its audio (the first one's arrival is
``first_audio``), ``response.audio_transcript.done`` what it says it said, ``response.done`` the end of the response.
A ``response.function_call_arguments.done`` is routed through the turn's tool handle like any tool call, its result
sent as a ``function_call_output`` item, and the agent asked for another response (at most
:data:`~simulator.agents.MAX_TOOL_ROUNDS` rounds). The ``response.output_audio...`` names of the later API version
are read the same way. An ``error`` event, or a response that failed, is the agent's error.

A barge-in: once ``interrupt_after`` seconds of the agent's audio have arrived, ``response.cancel`` and
``conversation.item.truncate`` (at that point of the item's audio) are sent, and the rest of its audio is dropped.

Each response (from ``response.create`` to ``response.done``) may take the agent's ``timeout``; the connection is
opened within it too. Nothing is sent again: a WebSocket turn cannot be repeated without the agent seeing it twice.
"""

from __future__ import annotations

import asyncio
import base64
import binascii
import json
import os
import urllib.parse
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from simulator.agents import MAX_TOOL_ROUNDS, Message, answer_tool_call, session_text, text_of, tool_round
from simulator.errors import AgentError
from simulator.models import RealtimeAgent
from simulator.models.env_refs import UnsetVariable, expand
from simulator.models.transcript import ReportedUsage, ToolRound
from simulator.safety import redacted_and_shortened, register_secret
from simulator.voice._agent import VoiceInput, VoiceReply
from simulator.voice._audio import Audio
from simulator.voice._playback import played

if TYPE_CHECKING:
    from websockets.asyncio.client import ClientConnection

#: The realtime API's audio: 16-bit PCM, mono, 24 kHz.
REALTIME_RATE = 24_000
#: Seconds of the user's audio per ``input_audio_buffer.append``.
CHUNK_SECONDS = 0.5
#: The largest message read from the agent (a long audio delta is large; the library's default is 1 MiB).
_MAX_MESSAGE = 64 * 1024 * 1024
_EXCERPT = 300
_AUDIO_DELTA = frozenset({"response.audio.delta", "response.output_audio.delta"})
_AUDIO_DONE = frozenset({"response.audio.done", "response.output_audio.done"})
_TRANSCRIPT_DONE = frozenset({"response.audio_transcript.done", "response.output_audio_transcript.done"})
_INSTALL = "pip install 'simulator[voice]'"


@dataclass
class _Turn:
    """What one turn has received so far."""

    started: float
    interrupt_after: float | None
    pieces: list[tuple[float, Audio]] = field(default_factory=list)
    said: list[str] = field(default_factory=list)
    rounds: list[ToolRound] = field(default_factory=list)
    usage: ReportedUsage | None = None
    interrupted: bool = False
    #: When the last audio of the turn was done arriving (the event loop's time).
    done_at: float | None = None
    #: Seconds of audio received, and where each audio item's audio starts in them.
    seconds: float = 0.0
    item_starts: dict[str, float] = field(default_factory=dict)


class RealtimeAdapter:
    """Streams one conversation with a realtime agent over one WebSocket connection."""

    def __init__(self, config: RealtimeAgent) -> None:
        self.config = config
        try:
            url = expand(config.url)
        except UnsetVariable as exc:
            raise AgentError(f"the realtime agent's url {exc}") from None
        if config.model and "model" not in urllib.parse.parse_qs(urllib.parse.urlsplit(url).query):
            url += ("&" if urllib.parse.urlsplit(url).query else "?") + urllib.parse.urlencode({"model": config.model})
        self.url = url
        headers = dict(config.headers)
        headers.update(
            {
                header: _from_env(variable, f"headers_from_env.{header}")
                for header, variable in config.headers_from_env.items()
            }
        )
        self._secrets = [headers[header] for header in config.headers_from_env]
        if config.api_key_env is not None:
            key = _from_env(config.api_key_env, "api_key_env")
            headers["Authorization"] = f"Bearer {key}"
            self._secrets.append(key)
        self._headers = headers
        self._socket: ClientConnection | None = None

    @property
    def turn_timeout(self) -> float:
        """The longest one turn can take: opening the connection, then every response of every tool round."""
        return (MAX_TOOL_ROUNDS + 2) * self.config.timeout

    async def respond_audio(self, request: VoiceInput) -> VoiceReply:
        """Stream the user's turn; read the agent's responses (answering its tool calls) until it has finished."""
        first_turn = self._socket is None
        socket = await self._opened()
        turn = request.turn
        history = list(turn.messages)
        current = history.pop() if history and history[-1].get("role") == "user" else None
        if first_turn:
            await self._send(socket, {"type": "session.update", "session": self._session()})
            earlier = [*([{"role": "system", "content": session_text(turn.session)}] if turn.session else []), *history]
            for item in _items(earlier):
                await self._send(socket, {"type": "conversation.item.create", "item": item})
        if current is not None and "event" in current:
            for item in _items([current]):
                await self._send(socket, {"type": "conversation.item.create", "item": item})
        if request.audio.samples:
            pcm = request.audio.resampled(REALTIME_RATE).pcm
            step = 2 * round(CHUNK_SECONDS * REALTIME_RATE)
            for start in range(0, len(pcm), step):
                chunk = base64.b64encode(pcm[start : start + step]).decode()
                await self._send(socket, {"type": "input_audio_buffer.append", "audio": chunk})
            await self._send(socket, {"type": "input_audio_buffer.commit"})
        state = _Turn(started=asyncio.get_running_loop().time(), interrupt_after=request.interrupt_after)
        for round_ in range(MAX_TOOL_ROUNDS + 1):
            calls, transcript = await self._response(socket, state)
            if not calls:
                break
            state.rounds.append(tool_round([call_id for call_id, _, _ in calls], transcript))
            for call_id, name, arguments in calls:
                answer = await answer_tool_call(
                    turn.tools, call_id, name, arguments, sent=arguments, timeout=self.config.timeout
                )
                output = {"type": "function_call_output", "call_id": call_id, "output": answer["content"]}
                await self._send(socket, {"type": "conversation.item.create", "item": output})
            if state.interrupted:
                break  # the user cut in: the results are in the conversation, the agent speaks again next turn
            if round_ == MAX_TOOL_ROUNDS:
                raise AgentError(
                    f"agent kept calling tools: the realtime agent at {self.url} still asked for tools after "
                    f"{MAX_TOOL_ROUNDS} rounds of tool results in one turn"
                )
        heard = played(state.pieces, request.interrupt_after)
        end = heard.end
        if end is not None and not heard.interrupted and state.done_at is not None:
            end = max(end, state.done_at - state.started)
        return VoiceReply(
            audio=heard.audio,
            first_audio=heard.first,
            end_audio=end,
            said=state.said,
            interrupted=heard.interrupted,
            tool_rounds=state.rounds or None,
            usage=state.usage,
        )

    async def aclose(self) -> None:
        """Close the connection."""
        socket, self._socket = self._socket, None
        if socket is not None:
            await socket.close()

    def _session(self) -> dict[str, Any]:
        session: dict[str, Any] = {
            "modalities": ["text", "audio"],
            "input_audio_format": "pcm16",
            "output_audio_format": "pcm16",
            "turn_detection": None,
        }
        if self.config.voice is not None:
            session["voice"] = self.config.voice
        if self.config.tools:
            session["tools"] = [
                {"type": "function", "name": tool.name, "description": tool.description, "parameters": tool.parameters}
                for tool in self.config.tools
            ]
        return session

    async def _opened(self) -> ClientConnection:
        if self._socket is not None:
            return self._socket
        try:
            from websockets.asyncio.client import connect
            from websockets.exceptions import WebSocketException
        except ImportError:
            raise AgentError(
                f"the realtime agent needs the websockets package, which is not installed: {_INSTALL}"
            ) from None
        try:
            self._socket = await connect(
                self.url,
                additional_headers=self._headers,
                open_timeout=self.config.timeout,
                max_size=_MAX_MESSAGE,
                compression=None,  # audio does not compress; deflating it costs CPU on both sides
            )
        except (OSError, TimeoutError, WebSocketException) as exc:
            raise AgentError(f"cannot connect to the realtime agent at {self.url}: {self._describe(exc)}") from None
        return self._socket

    async def _send(self, socket: ClientConnection, event: dict[str, Any]) -> None:
        from websockets.exceptions import ConnectionClosed

        try:
            await socket.send(json.dumps(event, ensure_ascii=False))
        except ConnectionClosed as exc:
            raise AgentError(f"the realtime agent at {self.url} closed the connection: {self._describe(exc)}") from None

    async def _response(self, socket: ClientConnection, state: _Turn) -> tuple[list[tuple[str, str, str]], str | None]:
        """Ask for one response and read it to its ``response.done``: the tool calls it made, and its transcript."""
        await self._send(socket, {"type": "response.create"})
        calls: list[tuple[str, str, str]] = []
        transcripts: list[str] = []
        pieces, audio_done = len(state.pieces), False
        try:
            async with asyncio.timeout(self.config.timeout):
                while True:
                    event = await self._receive(socket)
                    kind = event.get("type")
                    now = asyncio.get_running_loop().time()
                    if kind == "error":
                        raise AgentError(f"the realtime agent at {self.url} sent an error: {self._error_text(event)}")
                    if kind in _AUDIO_DELTA:
                        await self._audio(socket, state, event, now)
                    elif kind in _AUDIO_DONE:
                        state.done_at, audio_done = now, True
                    elif kind in _TRANSCRIPT_DONE and isinstance(event.get("transcript"), str):
                        if event["transcript"]:
                            transcripts.append(event["transcript"])
                    elif kind == "response.function_call_arguments.done":
                        arguments = event.get("arguments")
                        calls.append(
                            (
                                str(event.get("call_id") or f"call_{len(state.rounds)}_{len(calls)}"),
                                str(event.get("name") or ""),
                                arguments if isinstance(arguments, str) else json.dumps(arguments),
                            )
                        )
                    elif kind == "response.done":
                        self._finished(state, event)
                        if len(state.pieces) > pieces and not audio_done:
                            state.done_at = now  # its audio ended with it
                        break
        except TimeoutError:
            raise AgentError(
                f"the realtime agent at {self.url} did not finish its response within {self.config.timeout:g} s "
                "(raise the agent's `timeout` if it is just slow)"
            ) from None
        state.said.extend(transcripts)
        return calls, " ".join(transcripts) or None

    async def _audio(self, socket: ClientConnection, state: _Turn, event: dict[str, Any], now: float) -> None:
        """Keep one chunk of the agent's audio, or, once the user has heard enough of it, cut the agent off."""
        if state.interrupted:
            return
        try:
            audio = Audio(base64.b64decode(str(event.get("delta", "")), validate=True), REALTIME_RATE)
        except (binascii.Error, ValueError) as exc:
            raise AgentError(f"the realtime agent at {self.url} sent audio that is not base64 PCM16: {exc}") from None
        item = str(event.get("item_id") or "")
        start = state.item_starts.setdefault(item, state.seconds)
        state.pieces.append((now - state.started, audio))
        state.seconds += audio.seconds
        limit = state.interrupt_after
        if limit is not None and state.seconds > limit:
            state.interrupted = True
            await self._send(socket, {"type": "response.cancel"})
            truncate = {
                "type": "conversation.item.truncate",
                "item_id": item,
                "content_index": event.get("content_index", 0),
                "audio_end_ms": max(0, round((limit - start) * 1000)),
            }
            await self._send(socket, truncate)

    def _finished(self, state: _Turn, event: dict[str, Any]) -> None:
        response = event.get("response")
        response = response if isinstance(response, dict) else {}
        if response.get("status") == "failed":
            details = response.get("status_details")
            raise AgentError(f"the realtime agent at {self.url} failed its response: {self._error_text(details or {})}")
        usage = response.get("usage")
        if isinstance(usage, dict):
            counts = [usage.get("input_tokens"), usage.get("output_tokens")]
            if all(isinstance(n, int) and not isinstance(n, bool) and n >= 0 for n in counts):
                reported = ReportedUsage(prompt_tokens=counts[0], completion_tokens=counts[1])
                state.usage = reported if state.usage is None else state.usage + reported

    async def _receive(self, socket: ClientConnection) -> dict[str, Any]:
        from websockets.exceptions import ConnectionClosed

        try:
            raw = await socket.recv()
        except ConnectionClosed as exc:
            raise AgentError(
                f"the realtime agent at {self.url} closed the connection in the middle of a turn: {self._describe(exc)}"
            ) from None
        try:
            event = json.loads(raw)
        except ValueError:
            event = None
        if not isinstance(event, dict):
            shown = raw if isinstance(raw, str) else f"{len(raw)} bytes of binary data"
            raise AgentError(
                f"the realtime agent at {self.url} sent an event that is not a JSON object: {self._excerpt(shown)}"
            )
        return event

    def _error_text(self, event: dict[str, Any]) -> str:
        error = event.get("error")
        error = error if isinstance(error, dict) else event
        message = error.get("message") or error.get("code") or error.get("type") or json.dumps(error)
        return self._excerpt(str(message))

    def _describe(self, exc: BaseException) -> str:
        text = " ".join(str(exc).split())
        return self._excerpt(f"{type(exc).__name__}: {text}" if text else type(exc).__name__)

    def _excerpt(self, text: str) -> str:
        for secret in self._secrets:
            text = text.replace(secret, "***")
        return redacted_and_shortened(" ".join(text.split()) or "(empty)", _EXCERPT)


def _items(messages: list[Message]) -> list[dict[str, Any]]:
    """Chat messages as realtime conversation items: text messages, function calls and their outputs."""
    items: list[dict[str, Any]] = []
    for message in messages:
        role = message.get("role")
        text = text_of(message.get("content"))
        if role in ("user", "system") and text:
            items.append({"type": "message", "role": role, "content": [{"type": "input_text", "text": text}]})
        elif role == "assistant":
            if text:
                items.append({"type": "message", "role": "assistant", "content": [{"type": "text", "text": text}]})
            for call in message.get("tool_calls") or []:
                function = call.get("function") or {}
                items.append(
                    {
                        "type": "function_call",
                        "call_id": call.get("id"),
                        "name": function.get("name"),
                        "arguments": function.get("arguments") or "",
                    }
                )
        elif role == "tool":
            items.append({"type": "function_call_output", "call_id": message.get("tool_call_id"), "output": text})
    return items


def _from_env(variable: str, key: str) -> str:
    value = os.environ.get(variable, "")
    if not value:
        raise AgentError(
            f"the realtime agent's `{key}` names the environment variable {variable}, but it is not set; "
            f"set it (export {variable}=...) before running"
        )
    register_secret(variable, value)  # redacted from everything stored, printed or exported from now on
    return value
