"""Transcripts: what happened in one conversation, as a list of typed events plus per-step outcomes.

A transcript is the evidence every verdict points to. It is produced by the engine, stored by the runner,
scored by the judges and rendered by the reports; it round-trips through JSON unchanged.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Annotated, Literal

from pydantic import ConfigDict, Field, JsonValue

from simulator.models._base import DataModel
from simulator.models.voice import AgentVoice, TranscriptVoice, UserVoice
from simulator.models.world import WorldAccess, WorldTrace

#: How a tool call was answered. ``not_executed`` is the explicit test-mode answer to a call no fake
#: matched: the agent is told so, and reports show it, so an agent that invents data is visible. ``simulated``:
#: in test mode a model played a tool that declares ``simulate`` (the tool itself never ran).
ToolStatus = Literal["executed", "faked", "simulated", "not_executed", "failed", "needs_approval"]
Verdict = Literal["met", "not_met", "unsure"]
#: How a step ended (the four states): ``complete`` (met ✓), ``incomplete`` (not met ✗: the agent failed it),
#: ``unsure`` (? no judge model, or the judge said unsure, up to its max turns: the conversation moved on),
#: ``blocked`` (⊘ an earlier step was not met), ``not_reached`` (⊘ the conversation ended first: an error, a
#: stop for approval, the turn cap). ``not_attempted`` is the older name of ``not_reached``, kept so stored runs load.
StepStatus = Literal["complete", "incomplete", "unsure", "blocked", "not_reached", "not_attempted"]
StopReason = Literal["completed", "step_failed", "max_turns", "turn_cap", "user_ended", "needs_approval", "error"]
CaseKind = Literal["golden", "scenario", "simulation"]


def utc_now() -> datetime:
    """The current time in UTC (transcripts never hold local times)."""
    return datetime.now(UTC)


def tool_content(result: JsonValue) -> str:
    """The text a chat agent gets as a tool's result: a ``str`` unchanged, other JSON serialised exactly once."""
    return result if isinstance(result, str) else json.dumps(result, ensure_ascii=False)


def _unset(value: object) -> bool:
    """Whether an optional field is left out of what is stored and exported: transcripts without it stay as they
    were."""
    return value is None


def _no_tokens(value: int) -> bool:
    """A provider-cache token count of 0 is left out of what is stored: usages without any stay as they were."""
    return value == 0


def _nothing_saved(value: float | None) -> bool:
    """Savings of 0 are left out of what is stored (an unknown saving, null, is kept)."""
    return value == 0.0


class ToolCallRecord(DataModel):
    """One tool call the agent made and how it was answered."""

    id: str
    name: str
    arguments: dict[str, JsonValue] = Field(default_factory=dict)
    arguments_error: str | None = Field(default=None, description="Set when the agent's arguments were not valid JSON.")
    arguments_text: str | None = Field(
        default=None,
        description="The arguments exactly as the agent sent them (JSON text), kept only when that is not "
        "`arguments` written out as JSON: a chat agent's later history shows them as it sent them.",
        exclude_if=_unset,
    )
    status: ToolStatus
    result: JsonValue = None
    error: str | None = None
    fake: str | None = Field(default=None, description="Which fake answered, e.g. 'case tool_fakes[1]'.")
    simulated_by: str | None = Field(
        default=None, description="Which model played the tool (status simulated), e.g. 'user model openai/gpt-4o'."
    )
    duration_ms: float = 0.0
    fault: str | None = Field(
        default=None,
        description="A fault injected on purpose answered the call (the tool was not asked): which entry and what "
        "it did, e.g. \"suite faults[0]: error 'database down' (rate 0.3)\".",
        exclude_if=_unset,
    )
    world: WorldAccess | None = Field(
        default=None,
        description="A world tool's call (shown as executed (world)): the records it read and the changes it made.",
        exclude_if=_unset,
    )

    @property
    def status_label(self) -> str:
        """The status as reports show it: ``executed (world)`` for a world tool's call, else the status."""
        return f"{self.status} (world)" if self.world is not None and self.status == "executed" else self.status

    @property
    def result_text(self) -> str:
        """The result as the agent got it (:func:`tool_content`)."""
        return tool_content(self.result)

    @property
    def answered(self) -> bool:
        """Whether the agent got a result: the tool ran, a fake answered or a model played it, with no error."""
        return self.status in ("executed", "faked", "simulated") and self.error is None

    @property
    def answer(self) -> JsonValue:
        """What the agent got back for the call: the result when it was answered, else an ``{"error": ...,
        "status": ...}`` object (a failure, a call not executed in test mode, one waiting for approval)."""
        if self.answered:
            return self.result
        return {"error": self.error or "tool call failed", "status": self.status}

    @property
    def answer_text(self) -> str:
        """:attr:`answer` as a chat agent's ``tool`` message carries it (:func:`tool_content`)."""
        return tool_content(self.answer)

    @property
    def arguments_json(self) -> str:
        """The arguments as JSON text, as the agent sent them where that is known (a chat agent's tool call)."""
        if self.arguments_text is not None:
            return self.arguments_text
        raw = self.arguments.get("_raw") if self.arguments_error is not None else None
        if isinstance(raw, str):
            return raw  # arguments that did not parse are kept as they came
        return json.dumps(self.arguments, ensure_ascii=False)


class UserEvent(DataModel):
    """A message of the (simulated or scripted) user."""

    type: Literal["user"] = "user"
    turn: int
    step: int | None = None
    text: str
    source: Literal["llm", "scripted", "static", "golden"]
    ending: str | None = Field(
        default=None,
        description="The end the user model asked for with this message where it could not end the conversation "
        "(a simulation), e.g. 'goal_reached: ...'.",
    )
    misreport: str | None = Field(
        default=None,
        description="What the persona misreports on purpose in this message (persona `misreports`): the scripted "
        "line said, or the claims the user model was told to make. Never a fidelity slip of the user.",
        exclude_if=_unset,
    )
    voice: UserVoice | None = Field(
        default=None, description="A voice case: how the turn was spoken (its audio, a silence).", exclude_if=_unset
    )
    at: datetime = Field(default_factory=utc_now)


class InputEvent(DataModel):
    """A named non-speech input delivered to the agent (button, webhook, hang-up)."""

    type: Literal["event"] = "event"
    turn: int
    step: int | None = None
    name: str
    payload: dict[str, JsonValue] = Field(default_factory=dict)
    at: datetime = Field(default_factory=utc_now)


class ToolRound(DataModel):
    """One message of a chat agent's turn that asked for tools: the calls it made (by id) and its text.

    ``content`` is what the message said beside its calls: ``text`` (the next of the turn's messages), ``empty``
    (``""``) or ``null``, so the next turn's history shows the message as the agent sent it.
    """

    calls: list[str]
    content: Literal["text", "empty", "null"] = "null"


class ReportedUsage(DataModel):
    """Tokens the agent under test said one turn used (an http agent whose responses carry ``usage``, added up
    over the turn's requests). Simulator did not make these calls: they are the agent's own account, unpriced."""

    prompt_tokens: int = Field(default=0, ge=0)
    completion_tokens: int = Field(default=0, ge=0)

    @property
    def total_tokens(self) -> int:
        """Prompt plus completion tokens."""
        return self.prompt_tokens + self.completion_tokens

    def __add__(self, other: ReportedUsage) -> ReportedUsage:
        if not isinstance(other, ReportedUsage):
            return NotImplemented
        return ReportedUsage(
            prompt_tokens=self.prompt_tokens + other.prompt_tokens,
            completion_tokens=self.completion_tokens + other.completion_tokens,
        )


class AgentEvent(DataModel):
    """The agent's reply to one user turn: one or more messages, the tool calls made, hand-off, variables."""

    type: Literal["agent"] = "agent"
    turn: int
    step: int | None = None
    messages: list[str] = Field(default_factory=list)
    tool_calls: list[ToolCallRecord] = Field(default_factory=list)
    tool_rounds: list[ToolRound] | None = Field(
        default=None,
        description="How a chat agent (http, litellm, langgraph) grouped its messages and tool calls; absent: one "
        "message with every call, then the texts.",
        exclude_if=_unset,
    )
    handoff: str | None = None
    variables: dict[str, JsonValue] = Field(default_factory=dict, description="Session variables the agent set.")
    latency_ms: float = 0.0
    usage: ReportedUsage | None = Field(
        default=None,
        description="Tokens the agent itself reported for this turn (an http agent whose responses carry `usage`).",
        exclude_if=_unset,
    )
    voice: AgentVoice | None = Field(
        default=None,
        description="A voice case: the agent's audio as heard (its own text, the recogniser's confidence, timing, "
        "a barge-in); `messages` are what the recogniser heard.",
        exclude_if=_unset,
    )
    at: datetime = Field(default_factory=utc_now)

    @property
    def text(self) -> str:
        """All messages of the reply, joined by blank lines."""
        return "\n\n".join(self.messages)


class CheckDetail(DataModel):
    """One deterministic check or judge question inside a step check, with its evidence."""

    check: str = Field(description="What was checked, e.g. 'must_contain: refund' or 'judge: success_criteria'.")
    verdict: Verdict
    evidence: str = ""
    missing: bool = Field(
        default=False,
        description="Not met only because something expected did not happen (a call not made, words not said, a "
        "variable not set, no hand-off), not because the agent did something wrong: a conversation cut short "
        "can explain it.",
    )


class StepVerdict(DataModel):
    """The outcome of checking a step's success criteria once: a verdict, why, and each check's evidence."""

    verdict: Verdict
    rationale: str
    details: list[CheckDetail] = Field(default_factory=list)
    settled: bool = Field(
        default=False,
        description="An unsure verdict no later turn can change: every deterministic check is met and the rest "
        "cannot be judged in this run (no judge model). The step is unsure at once and the conversation moves on.",
    )


class CheckEvent(DataModel):
    """A check of the current step's success criteria after an agent reply."""

    type: Literal["check"] = "check"
    turn: int
    step: int | None = None
    verdict: Verdict
    rationale: str
    details: list[CheckDetail] = Field(default_factory=list)
    at: datetime = Field(default_factory=utc_now)


class ErrorEvent(DataModel):
    """Something failed while the conversation ran; ``where`` says whose failure it was."""

    type: Literal["error"] = "error"
    turn: int
    step: int | None = None
    where: Literal["agent", "user", "judge", "tool", "engine"]
    message: str
    at: datetime = Field(default_factory=utc_now)


TranscriptEvent = Annotated[UserEvent | InputEvent | AgentEvent | CheckEvent | ErrorEvent, Field(discriminator="type")]


class StepOutcome(DataModel):
    """How one step of a simulation (or the goal of a scenario) ended, with the reason in words."""

    index: int
    label: str
    status: StepStatus
    turns_used: int = 0
    completed_at_turn: int | None = None
    verdict: Verdict | None = Field(default=None, description="The last check's verdict, when the step was checked.")
    rationale: str = ""
    blocked_by: int | None = Field(default=None, description="Index of the step whose failure blocked this one.")
    blocked_by_goal: str | None = None


class GoldenTurnRecord(DataModel):
    """A golden turn: what was sent, and the agent's actual reply beside what was expected."""

    index: int
    user: str | None = None
    event: str | None = None
    expected_message: str | None = None
    expected_tools: list[str] = Field(default_factory=list)
    actual_messages: list[str] = Field(default_factory=list)
    actual_tools: list[str] = Field(default_factory=list)
    history: Literal["actual", "expected"] = Field(
        default="actual", description="Whether the agent saw the actual (simple) or expected (stable) history."
    )


class Usage(DataModel):
    """Tokens, answers and cost of one model call, or of many added together.

    ``calls`` counts the answers a role got; ``cached_calls`` of them were served without a request (from the
    request cache, or from the recording a replay plays back), so :attr:`requests` were sent. ``cost`` is what
    was spent, in US dollars as litellm prices it; ``cached_cost`` is what the cached answers cost when they
    were first asked (their would-be cost), not part of ``cost``. ``None`` means at least one of the calls was
    made to a model whose price litellm does not know: an unknown total is reported as unknown, never guessed.
    A usage stored before cached answers were counted apart has ``cached_calls`` 0.

    Two caches are counted apart. The *request cache* (Simulator's own) answers without sending a request:
    ``cached_calls``. A *provider prompt cache* (OpenAI's automatic one, Anthropic's cache breakpoints) serves part
    of a request that was sent from the provider's cache, at a lower price: ``cache_read_tokens`` of the prompt
    tokens were read from it and ``cache_write_tokens`` written to it (Anthropic prices a write above the full
    prompt price); both are part of ``prompt_tokens``. ``cache_savings`` is what that cache saved: the same
    tokens at the full prompt price minus what they cost (negative when writes cost more than reads saved).
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    prompt_tokens: int = 0
    completion_tokens: int = 0
    calls: int = 0
    cost: float | None = 0.0
    cached_calls: int = Field(
        default=0,
        ge=0,
        description="How many of the calls were answered without a request: from the request cache (or the "
        "recording a replay plays back).",
    )
    cached_cost: float | None = Field(
        default=0.0,
        description="What the cached answers cost when they were first asked (US dollars; not spent by this run, "
        "not part of cost); null when unknown.",
    )
    cache_read_tokens: int = Field(
        default=0,
        ge=0,
        description="Prompt tokens the provider's prompt cache served (part of prompt_tokens, billed at its cached "
        "price): OpenAI's prompt_tokens_details.cached_tokens, Anthropic's cache_read_input_tokens.",
        exclude_if=_no_tokens,
    )
    cache_write_tokens: int = Field(
        default=0,
        ge=0,
        description="Prompt tokens written to the provider's prompt cache (part of prompt_tokens): Anthropic's "
        "cache_creation_input_tokens.",
        exclude_if=_no_tokens,
    )
    cache_savings: float | None = Field(
        default=0.0,
        description="What the provider's prompt cache saved (US dollars): the cached tokens at the full prompt "
        "price minus what they cost; null when the price is unknown.",
        exclude_if=_nothing_saved,
    )

    @property
    def total_tokens(self) -> int:
        """Prompt plus completion tokens."""
        return self.prompt_tokens + self.completion_tokens

    @property
    def requests(self) -> int:
        """How many requests were sent to the model: the answers not served from the cache."""
        return max(0, self.calls - self.cached_calls)

    def __add__(self, other: Usage) -> Usage:
        if not isinstance(other, Usage):
            return NotImplemented
        return Usage(
            prompt_tokens=self.prompt_tokens + other.prompt_tokens,
            completion_tokens=self.completion_tokens + other.completion_tokens,
            calls=self.calls + other.calls,
            cost=_known_sum(self.cost, other.cost),
            cached_calls=self.cached_calls + other.cached_calls,
            cached_cost=_known_sum(self.cached_cost, other.cached_cost),
            cache_read_tokens=self.cache_read_tokens + other.cache_read_tokens,
            cache_write_tokens=self.cache_write_tokens + other.cache_write_tokens,
            cache_savings=_known_sum(self.cache_savings, other.cache_savings),
        )

    @property
    def prompt_cache_share(self) -> float | None:
        """The share of the prompt tokens the provider's prompt cache served (0 to 1); None without prompt
        tokens."""
        return self.cache_read_tokens / self.prompt_tokens if self.prompt_tokens else None


def _known_sum(a: float | None, b: float | None) -> float | None:
    """``a + b``, unknown when either is."""
    return None if a is None or b is None else a + b


class ReplayMark(DataModel):
    """Where a conversation came from a recording (``simulator replay``, ``simulator rerun --from-divergence``)."""

    source_run: str = Field(description="The recorded run the conversation was replayed from.")
    mode: Literal["replay", "rerun"]
    replayed_turns: list[int] = Field(
        default_factory=list, description="Turns whose agent reply came from the recording, or matched it."
    )
    diverged_at: int | None = Field(
        default=None,
        description="rerun: the first turn where the agent's reply or tool calls differed from the recording; from "
        "it on, the agent and the simulated user ran live.",
    )

    def summary(self) -> str:
        """Where the conversation came from, in words (every report's transcript says it)."""
        if self.mode == "replay":
            return f"replayed from the cassette of run {self.source_run} (no agent or model was called)"
        turns = _turn_ranges(self.replayed_turns)
        replayed = (
            f"turn{'s' if len(self.replayed_turns) != 1 else ''} {turns} replayed" if turns else "no turn replayed"
        )
        if self.diverged_at is None:
            return f"rerun of run {self.source_run}: {replayed}; the agent never diverged from the recording"
        return f"rerun of run {self.source_run}: {replayed}; diverged at turn {self.diverged_at}, live from there"

    def divergence(self, turn: int) -> str | None:
        """The marker of the divergence, for the turn where it happened (None for every other turn)."""
        if self.mode != "rerun" or turn != self.diverged_at:
            return None
        return (
            f"divergence at turn {turn}: the agent's reply or tool calls differ from the recording; the agent and "
            "the simulated user run live from here"
        )


def _turn_ranges(turns: list[int]) -> str:
    """``[1, 2, 3, 5]`` as ``1-3, 5``."""
    ranges: list[str] = []
    for turn in sorted(set(turns)):
        if ranges and turn == int(ranges[-1].rpartition("-")[2]) + 1:
            ranges[-1] = f"{ranges[-1].partition('-')[0]}-{turn}"
        else:
            ranges.append(str(turn))
    return ", ".join(ranges)


class Transcript(DataModel):
    """Everything that happened in one conversation of one case with one persona."""

    case: str
    kind: CaseKind
    persona: str | None = None
    seed: int | None = None
    session_parameters: dict[str, JsonValue] = Field(default_factory=dict)
    events: list[TranscriptEvent] = Field(default_factory=list)
    steps: list[StepOutcome] = Field(default_factory=list)
    golden_turns: list[GoldenTurnRecord] = Field(default_factory=list)
    stop_reason: StopReason = "completed"
    user_ended_reason: str | None = Field(
        default=None, description="Why the simulated user ended the conversation ('goal_reached: ...', 'gave_up: ...')."
    )
    error: str | None = None
    turns: int = 0
    usage: dict[str, Usage] = Field(
        default_factory=dict, description="Per model role: agent, user, judge, voice, transcriber."
    )
    started_at: datetime = Field(default_factory=utc_now)
    finished_at: datetime | None = None
    replay: ReplayMark | None = Field(default=None, description="Set when the conversation came from a recording.")
    world: WorldTrace | None = Field(
        default=None,
        description="The conversation's world, where the case has one: its seed and the net diff it left.",
        exclude_if=_unset,
    )
    voice: TranscriptVoice | None = Field(
        default=None,
        description="A voice conversation: the speech backends it used and the confidence bar it is judged with.",
        exclude_if=_unset,
    )

    def agent_events(self) -> list[AgentEvent]:
        """The agent's replies, in order."""
        return [e for e in self.events if isinstance(e, AgentEvent)]

    def tool_calls(self) -> list[ToolCallRecord]:
        """Every tool call the agent made, in order."""
        return [call for e in self.agent_events() for call in e.tool_calls]
