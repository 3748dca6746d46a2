"""Cassettes: recording every exchange of a conversation, storing it, and playing it back.

* Recording (``simulator run --record``): the runner wraps each conversation in :func:`simulator.taps.recording`
  and the agent under test and the simulated user in :func:`recorded_agent` / :func:`recorded_user`; the model
  client and the HTTP adapter write their own exchanges on the same tape. :func:`cassette_of` makes the tape a
  :class:`~simulator.models.cassette.Cassette`; :func:`encode` scrubs every secret the process knows from it and
  compresses it (zlib) for the store; :func:`decode` reads it back, refusing a newer format with a clear message.
* Playing back (:class:`Playback`): ``replay`` answers every agent turn, tool result and simulated-user move from
  the cassette (no agent, no model), and judge requests identical to recorded ones from the cassette too;
  ``rerun`` runs the agent live against the recorded user moves until the first turn where its reply or tool
  calls differ from the recording (:func:`same_turn`), then hands over to the live simulated user.
"""

from __future__ import annotations

import gzip
import json
import re
import string
import zlib
from collections import deque
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from pydantic import JsonValue, TypeAdapter, ValidationError

from simulator.agents import AgentAdapter, AgentInput, AgentReply
from simulator.errors import AgentError, InputError
from simulator.llm import Completion, Role, UnrecordedRequest
from simulator.models.cassette import CASSETTE_FORMAT, Cassette, CassetteEntry
from simulator.models.transcript import ReplayMark, ReportedUsage, ToolCallRecord, ToolRound
from simulator.safety import redact_data
from simulator.taps import Tape, active_tape
from simulator.user import RECORDING_ENDS, SimulatedUser, UserReply, UserTurnRequest

Compare = Literal["exact", "normalized"]

__all__ = [
    "CASSETTE_FORMAT",
    "Compare",
    "Playback",
    "cassette_of",
    "decode",
    "encode",
    "read_cassette_file",
    "recorded_agent",
    "recorded_user",
    "same_turn",
]


class CassetteFormatError(InputError):
    """A cassette that this Simulator cannot read: damaged, or written in a newer format."""


# --------------------------------------------------------------------------------------------------------------
# Recording


class _RecordingAgent:
    """The agent under test, each turn written on the tape: the messages given and the reply, then each tool
    call of the turn (arguments, result, and whether it was faked, not executed or run live)."""

    def __init__(self, inner: AgentAdapter, tape: Tape) -> None:
        self._inner = inner
        self._tape = tape

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)  # stateful, turn_timeout: what the engine asks the adapter

    async def respond(self, request: AgentInput) -> AgentReply:
        """The inner adapter's reply, recorded."""
        tape = self._tape
        tape.turn = request.turn
        given = {
            "messages": [dict(message) for message in request.messages],
            "session": dict(request.session),
            "event": request.event.model_dump(mode="json") if request.event is not None else None,
        }
        try:
            reply = await self._inner.respond(request)
        except Exception as exc:
            _record_tools(tape, request.tools.router.records)
            tape.add("agent", "turn", given, None, error=f"{type(exc).__name__}: {exc}")
            raise
        _record_tools(tape, request.tools.router.records)
        said: dict[str, Any] = {
            "messages": list(reply.messages),
            "handoff": reply.handoff,
            "variables": dict(reply.variables),
        }
        if reply.tool_rounds is not None:
            # Only when there were any: a turn without tool calls is recorded as it always was.
            said["tool_rounds"] = [round_.model_dump(mode="json") for round_ in reply.tool_rounds]
        if reply.usage is not None:
            said["usage"] = reply.usage.model_dump(mode="json")
        tape.add("agent", "turn", given, said)
        return reply

    async def aclose(self) -> None:
        """Close the inner adapter."""
        await self._inner.aclose()


def _record_tools(tape: Tape, records: Sequence[ToolCallRecord]) -> None:
    for record in records:
        data = record.model_dump(mode="json")
        call = {key: data.pop(key) for key in ("id", "name", "arguments", "arguments_error")}
        tape.add("tool", "tool", call, data)


class _RecordingUser:
    """The simulated user, each move written on the tape (a model-played user's requests are recorded by the
    model client as well)."""

    def __init__(self, inner: SimulatedUser, tape: Tape) -> None:
        self._inner = inner
        self._tape = tape

    async def next_message(self, request: UserTurnRequest) -> UserReply:
        """The inner user's move, recorded."""
        reply = await self._inner.next_message(request)
        given = {
            "goal": request.goal,
            "turn_in_step": request.turn_in_step,
            "conversation": [[speaker, text] for speaker, text in request.conversation],
        }
        move: dict[str, Any] = {"text": reply.text, "done": reply.done, "reason": reply.reason, "source": reply.source}
        if reply.ending is not None:
            move["ending"] = reply.ending  # evidence of a slip: a replay must find it as the live run did
        self._tape.add("user", "turn", given, move)
        return reply


def recorded_agent(agent: AgentAdapter) -> AgentAdapter:
    """``agent`` recording its turns on the active tape; ``agent`` itself when nothing is being recorded."""
    tape = active_tape()
    return agent if tape is None else _RecordingAgent(agent, tape)


def recorded_user(user: SimulatedUser) -> SimulatedUser:
    """``user`` recording its moves on the active tape; ``user`` itself when nothing is being recorded."""
    tape = active_tape()
    return user if tape is None else _RecordingUser(user, tape)


def cassette_of(
    tape: Tape, *, run_id: str, key: str, case: str, persona: str | None, simulator_version: str
) -> Cassette:
    """The cassette of one recorded conversation, written by Simulator ``simulator_version``."""
    return Cassette(
        simulator_version=simulator_version,
        run_id=run_id,
        key=key,
        case=case,
        persona=persona,
        entries=[CassetteEntry.model_validate(entry) for entry in tape.entries],
    )


def encode(cassette: Cassette) -> bytes:
    """The cassette as the store keeps it: JSON with every secret the process knows scrubbed, zlib-compressed."""
    data = redact_data(cassette.model_dump(mode="json"))
    return zlib.compress(json.dumps(data, ensure_ascii=False, separators=(",", ":")).encode(), 6)


def decode(blob: bytes, *, where: str) -> Cassette:
    """A stored cassette read back (``where`` names it in errors). Every format up to :data:`CASSETTE_FORMAT` is
    read; a newer one is refused: it was written by a later Simulator."""
    try:
        text = zlib.decompress(blob).decode()
    except (zlib.error, UnicodeDecodeError) as exc:
        raise CassetteFormatError(f"{where}: the cassette is damaged (not zlib-compressed JSON: {exc})") from None
    return _from_json(text, where=where)


def read_cassette_file(path: Path) -> Cassette:
    """A cassette kept in a file: JSON, gzip-compressed when the name ends in ``.gz``."""
    try:
        raw = path.read_bytes()
        text = gzip.decompress(raw).decode() if path.name.endswith(".gz") else raw.decode()
    except (OSError, gzip.BadGzipFile, EOFError, UnicodeDecodeError) as exc:
        raise CassetteFormatError(f"{path}: cannot read the cassette ({exc})") from None
    return _from_json(text, where=str(path))


def _from_json(text: str, *, where: str) -> Cassette:
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise CassetteFormatError(f"{where}: the cassette is not valid JSON ({exc})") from None
    found = data.get("format") if isinstance(data, dict) else None
    if not isinstance(found, int) or isinstance(found, bool) or found < 1:
        raise CassetteFormatError(f"{where}: not a cassette (no `format` number)")
    if found > CASSETTE_FORMAT:
        writer = data.get("simulator_version", "a later version")
        raise CassetteFormatError(
            f"{where}: the cassette has format {found}, written by Simulator {writer}; this Simulator reads "
            f"cassette formats up to {CASSETTE_FORMAT}: upgrade Simulator to replay it"
        )
    try:
        return Cassette.model_validate(data)
    except ValidationError as exc:
        problem = exc.errors(include_url=False)[0]
        at = ".".join(str(part) for part in problem["loc"]) or "(root)"
        raise CassetteFormatError(f"{where}: the cassette is damaged ({at}: {problem['msg']})") from None


# --------------------------------------------------------------------------------------------------------------
# Comparing a live turn with the recording

_PUNCTUATION = re.compile(f"[{re.escape(string.punctuation)}“”‘’…]")


def _normalized(text: str) -> str:
    return " ".join(_PUNCTUATION.sub(" ", text).casefold().split())


def _texts(value: JsonValue) -> list[str]:
    return [str(text) for text in value] if isinstance(value, list) else []


def same_turn(
    recorded: CassetteEntry | None,
    recorded_calls: Sequence[dict[str, Any]],
    reply: AgentReply,
    calls: Sequence[ToolCallRecord],
    compare: Compare,
) -> bool:
    """Whether a live agent turn is the recorded one: ``exact`` (same text, same tool calls with the same
    arguments) or ``normalized`` (text equal ignoring whitespace, case and punctuation; same tool names and
    arguments)."""
    if recorded is None or recorded.error is not None or not isinstance(recorded.response, dict):
        return False
    texts = _texts(recorded.response.get("messages"))
    if compare == "exact":
        same_text = texts == list(reply.messages)
    else:
        same_text = _normalized(" ".join(texts)) == _normalized(" ".join(reply.messages))
    wanted = [(call.get("name"), call.get("arguments")) for call in recorded_calls]
    made = [(call.name, call.arguments) for call in calls]
    return same_text and wanted == made


# --------------------------------------------------------------------------------------------------------------
# Playing back


@dataclass
class Playback:
    """How one conversation of a replay or a rerun is played from its cassette.

    ``replay``: the agent's turns (with their tool calls and results) and the simulated user's moves come from the
    cassette, and no agent or model is reached. ``rerun``: the agent runs live; while its turns match the
    recording (``compare``) the user's moves come from the cassette; from the first turn that differs, the live
    simulated user takes over. In both, a judge request identical to a recorded one is answered from the cassette;
    one that changed goes to the judge model when ``live_judge`` (a judge model was given), else it is not judged.
    """

    cassette: Cassette
    source_run: str
    mode: Literal["replay", "rerun"] = "replay"
    compare: Compare = "exact"
    live_judge: bool = False
    replayed: list[int] = field(default_factory=list)
    diverged_at: int | None = None

    def __post_init__(self) -> None:
        self._moves = deque(self.cassette.of("user", "turn"))
        self._judged: dict[str, deque[CassetteEntry]] = {}
        for entry in self.cassette.of("judge", "model"):
            if entry.fingerprint is not None:
                self._judged.setdefault(entry.fingerprint, deque()).append(entry)

    # -- the agent side

    def recorded_turn(self, turn: int) -> tuple[CassetteEntry | None, list[dict[str, Any]]]:
        """The recorded agent turn ``turn`` and its tool calls (call and outcome merged), if it was recorded."""
        turns = [entry for entry in self.cassette.of("agent", "turn") if entry.turn == turn]
        calls = [
            {**entry.request, **entry.response}
            for entry in self.cassette.of("tool", "tool")
            if entry.turn == turn and isinstance(entry.request, dict) and isinstance(entry.response, dict)
        ]
        return (turns[0] if turns else None), calls

    def agent(self, live: AgentAdapter | None) -> AgentAdapter:
        """The agent of this conversation: answered from the cassette (replay), or ``live`` watched for the first
        turn that differs from the recording (rerun)."""
        if self.mode == "replay" or live is None:
            return _ReplayedAgent(self)
        return _DivergenceWatch(live, self)

    # -- the user side

    def user(self, live: SimulatedUser) -> SimulatedUser:
        """The simulated user of this conversation: the recorded moves, then (rerun, after the divergence) ``live``."""
        return _ReplayedUser(self, live)

    def next_move(self) -> UserReply:
        """The next recorded move of the simulated user; the end of the conversation when none is left."""
        if not self._moves:
            return UserReply(text=None, done=True, reason=RECORDING_ENDS)
        move = self._moves.popleft().response
        if not isinstance(move, dict):
            return UserReply(text=None, done=True, reason=RECORDING_ENDS)
        source: Literal["llm", "scripted"] = "llm" if move.get("source") == "llm" else "scripted"
        text = move.get("text")
        reason = move.get("reason")
        ending = move.get("ending")
        return UserReply(
            text=str(text) if text is not None else None,
            done=bool(move.get("done")),
            reason=str(reason) if reason is not None else None,
            source=source,
            ending=str(ending) if ending is not None else None,
        )

    # -- the judge (RecordedAnswers for simulator.llm.replaying)

    def answer(self, role: Role, record: dict[str, Any], fingerprint: str) -> Completion | None:
        """A judge request identical to a recorded one gets the recorded reply; a changed one goes to the judge
        model when one was given, else it is not judged. Other roles (a rerun's live agent and user) go live."""
        if role is not Role.JUDGE:
            return None
        recorded = self._judged.get(fingerprint)
        if recorded:
            entry = recorded.popleft() if len(recorded) > 1 else recorded[0]
            return Completion.model_validate(entry.response)
        if self.live_judge:
            return None
        raise UnrecordedRequest(
            "not judged: this judge request changed since the recording (a check, a prompt or the conversation "
            "changed); give a judge model (--judge-model) to judge it"
        )

    def mark(self) -> ReplayMark:
        """What the transcript says about where it came from."""
        return ReplayMark(
            source_run=self.source_run, mode=self.mode, replayed_turns=list(self.replayed), diverged_at=self.diverged_at
        )


class _ReplayedAgent:
    """The agent under test as the cassette recorded it: its replies, and its tool calls with their results."""

    stateful = False

    def __init__(self, playback: Playback) -> None:
        self._playback = playback

    async def respond(self, request: AgentInput) -> AgentReply:
        """The recorded reply of this turn; its tool calls are put on the tool router's record as they were."""
        entry, calls = self._playback.recorded_turn(request.turn)
        if entry is None:
            raise AgentError(
                f"the recording has no agent reply for turn {request.turn}: the conversation went further than when "
                "it was recorded (rerun it live: simulator rerun RUN CASE --from-divergence)"
            )
        for call in calls:
            request.tools.router.replayed(ToolCallRecord.model_validate(call))
        if entry.error is not None:
            raise AgentError(f"(recorded) {entry.error}")
        response = entry.response if isinstance(entry.response, dict) else {}
        handoff = response.get("handoff")
        variables: Any = response.get("variables") or {}
        self._playback.replayed.append(request.turn)
        return AgentReply(
            messages=_texts(response.get("messages")),
            handoff=str(handoff) if handoff is not None else None,
            variables=dict[str, JsonValue](variables),
            tool_rounds=_rounds(response.get("tool_rounds")),
            usage=_usage(response.get("usage")),
        )

    async def aclose(self) -> None:
        """Nothing to release."""


def _usage(value: JsonValue) -> ReportedUsage | None:
    """A recorded turn's reported tokens; None for a turn that reported none (or a recording that kept none)."""
    if not isinstance(value, dict):
        return None
    try:
        return ReportedUsage.model_validate(value)
    except ValidationError:
        return None


def _rounds(value: JsonValue) -> list[ToolRound] | None:
    """A recorded turn's tool rounds; None for a cassette that has none (recorded before they were kept)."""
    try:
        return _ROUNDS.validate_python(value)
    except ValidationError:
        return None


_ROUNDS: TypeAdapter[list[ToolRound] | None] = TypeAdapter(list[ToolRound] | None)


class _DivergenceWatch:
    """The live agent under test, each turn compared with the recording until the first that differs."""

    def __init__(self, inner: AgentAdapter, playback: Playback) -> None:
        self._inner = inner
        self._playback = playback

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)

    async def respond(self, request: AgentInput) -> AgentReply:
        """The live reply; the turn is marked replayed when it matches the recording, else it is the divergence
        (a turn where the live agent fails, where it had answered before, is the divergence too)."""
        playback = self._playback
        try:
            reply = await self._inner.respond(request)
        except Exception:
            if playback.diverged_at is None:
                playback.diverged_at = request.turn
            raise
        if playback.diverged_at is None:
            entry, calls = playback.recorded_turn(request.turn)
            if same_turn(entry, calls, reply, request.tools.router.records, playback.compare):
                playback.replayed.append(request.turn)
            else:
                playback.diverged_at = request.turn
        return reply

    async def aclose(self) -> None:
        """Close the live adapter."""
        await self._inner.aclose()


class _ReplayedUser:
    """The simulated user's recorded moves; in a rerun, the live user once the agent diverged."""

    def __init__(self, playback: Playback, live: SimulatedUser) -> None:
        self._playback = playback
        self._live = live

    async def next_message(self, request: UserTurnRequest) -> UserReply:
        """The next recorded move, or the live user's after the divergence."""
        if self._playback.diverged_at is not None:
            return await self._live.next_message(request)
        return self._playback.next_move()
