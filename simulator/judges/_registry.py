"""Scorers behind one async protocol, registered by name with :func:`scorer`.

A scorer takes a :class:`ScoringInput` (the case, its transcript, the judge and what scoring needs besides)
and returns its scores. Registration says which kinds of case it applies to, whether it scores the whole
conversation (``scope="case"``) or one golden turn (``scope="turn"``, called per turn by the golden-turn
scorer with :attr:`ScoringInput.turn` set), and the judge prompts it asks (files under ``prompts/``).
Scorers run concurrently (so do the judge questions inside one), and their scores are stored in the order
they are registered (:func:`gather_in_order`).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Collection, Mapping, Sequence
from dataclasses import dataclass, field, replace
from functools import cache
from typing import TYPE_CHECKING, Any, Literal, Protocol, TypeVar

from pydantic import JsonValue

from simulator.judges.checks import ConversationView
from simulator.kinds import KINDS
from simulator.models import Budgets, Case, GoldenTurn, JudgingSettings, Persona, Thresholds
from simulator.models.scores import Score
from simulator.models.transcript import AgentEvent, Transcript
from simulator.plugins import PluginError, load_plugin, plugins
from simulator.world import World

if TYPE_CHECKING:
    from simulator.judges.llm_judges import LLMJudge

__all__ = [
    "ALL_KINDS",
    "RegisteredScorer",
    "Scorer",
    "ScoringContext",
    "ScoringInput",
    "TurnInput",
    "plugin_scorer",
    "registered_scorers",
    "scorer",
]

ALL_KINDS: frozenset[str] = frozenset(KINDS)
ScorerScope = Literal["case", "turn"]
F = TypeVar("F", bound=Callable[[Any], Awaitable[list[Score]]])


@dataclass
class ScoringContext:
    """What the scorer needs besides the case and transcript."""

    thresholds: Thresholds = field(default_factory=Thresholds)
    language: str = "en"
    instructions: str | None = None
    declared_tools: Sequence[str] = ()
    #: The declared tools' descriptions and kinds (by name): their words are claim words too (``claims.py``).
    tool_descriptions: Mapping[str, str] = field(default_factory=dict)
    tool_kinds: Mapping[str, Literal["action", "lookup"]] = field(default_factory=dict)
    #: The suite's ``judging`` block: whether the judge questions of a conversation are batched.
    judging: JudgingSettings = field(default_factory=JudgingSettings)
    #: The persona the simulated user played (its brief for the batched ``invented_fact`` question).
    persona: Persona | None = None
    #: The suite's scorers from installed plugins (a case may name more).
    plugin_scorers: Sequence[str] = ()
    #: The suite's budgets (a case's own are laid over them, figure by figure).
    budgets: Budgets | None = None
    #: The conversation's world as it ended (its seed with the transcript's changes), where the case has one.
    world: World | None = None


@dataclass(frozen=True)
class TurnInput:
    """The golden turn a turn scorer scores: its number (from 1), as written, and the agent's replies in it."""

    number: int
    turn: GoldenTurn
    replies: list[AgentEvent]
    conversation: str

    @property
    def prefix(self) -> str:
        """How the turn's checks are prefixed."""
        return f"turn {self.number}: "


@dataclass(frozen=True)
class ScoringInput:
    """What every scorer reads: the case, its transcript, the judge, the suite's context and thresholds."""

    case: Case
    transcript: Transcript
    context: ScoringContext
    judge: LLMJudge
    thresholds: Thresholds
    replies: list[AgentEvent] = field(default_factory=list)
    turn: TurnInput | None = None
    #: What the scorers of one conversation share, by name: a judge request whose answer several of them read
    #: (asked by the first to need it, awaited by the others) and what they work out alike to ask it.
    shared: dict[str, Any] = field(default_factory=dict, compare=False, repr=False)

    def for_turn(self, turn: TurnInput) -> ScoringInput:
        """The same input narrowed to one golden turn (for the turn scorers)."""
        return replace(self, turn=turn)

    def view(self, replies: list[AgentEvent], up_to_turn: int | None = None) -> ConversationView:
        """``replies`` as deterministic checks read them, with the session variables set so far."""
        variables: dict[str, JsonValue] = dict(self.transcript.session_parameters)
        for reply in self.replies:
            if up_to_turn is None or reply.turn <= up_to_turn:
                variables.update(reply.variables)
        return ConversationView(
            replies=replies, all_replies=self.replies, variables=variables, language=self.context.language
        )

    def scope_events(self, *, step: int | None, turn: int | None) -> list[Any]:
        """The events an expectation is judged on: its step's or turn's, else the whole conversation."""
        events = self.transcript.events
        if step is not None:
            return [e for e in events if getattr(e, "step", None) == step]
        if turn is not None:
            return [e for e in events if getattr(e, "turn", None) == turn]
        return list(events)


class Scorer(Protocol):
    """One named check or judge question: the scores it gives for one conversation (or golden turn)."""

    def __call__(self, target: ScoringInput, /) -> Awaitable[list[Score]]:
        """Score ``target``."""
        ...


@dataclass(frozen=True)
class RegisteredScorer:
    """A scorer with what it was registered with."""

    name: str
    run: Scorer
    kinds: frozenset[str]
    scope: ScorerScope
    prompts: tuple[str, ...]

    def applies_to(self, kind: str) -> bool:
        """Whether cases of ``kind`` are scored by it."""
        return kind in self.kinds


_REGISTRY: dict[str, RegisteredScorer] = {}


def scorer(
    name: str,
    *,
    kinds: Collection[str] = ALL_KINDS,
    scope: ScorerScope = "case",
    prompts: Sequence[str] = (),
) -> Callable[[F], F]:
    """Register the decorated async function as the scorer ``name`` (a name is registered once)."""
    unknown = set(kinds) - ALL_KINDS
    if unknown:
        raise ValueError(f"scorer {name!r}: unknown case kinds {sorted(unknown)}")

    def register(function: F) -> F:
        if name in _REGISTRY:
            raise ValueError(f"a scorer named {name!r} is already registered")
        _REGISTRY[name] = RegisteredScorer(name, function, frozenset(kinds), scope, tuple(prompts))
        return function

    return register


@cache
def plugin_scorer(name: str) -> RegisteredScorer:
    """The scorer of the installed plugin ``name`` (entry point ``simulator.scorers``): an async function taking a
    :class:`ScoringInput` and returning a list of :class:`~simulator.models.scores.Score`. It scores every kind of
    case it is named for. What it raises or returns that is not a list of scores becomes one required score with
    verdict ``error`` (the case is an error naming the plugin, never the agent's failure)."""
    function = load_plugin("scorers", name)
    if not callable(function):
        raise PluginError(
            f"the scorer plugin {plugins('scorers')[name].describe()} is not a function: it must be an async "
            "function taking a ScoringInput and returning a list of Score"
        )

    async def guarded(target: ScoringInput) -> list[Score]:
        try:
            scores = await function(target)
        except Exception as error:  # the plugin's own failure: an error of the tool, not the agent
            return [_plugin_failed(name, f"raised {type(error).__name__}: {error}")]
        if not isinstance(scores, list) or not all(isinstance(score, Score) for score in scores):
            return [_plugin_failed(name, f"returned {type(scores).__name__}, not a list of Score")]
        return scores

    return RegisteredScorer(name, guarded, ALL_KINDS, "case", ())


def _plugin_failed(name: str, what: str) -> Score:
    return Score(
        metric=name, check=f"scorer plugin {name}", source="engine", verdict="error", reason=f"the plugin {what}"
    )


def registered_scorers(*, scope: ScorerScope | None = None, kind: str | None = None) -> list[RegisteredScorer]:
    """The registered scorers in registration order, optionally only those of ``scope`` applying to ``kind``."""
    return [
        entry
        for entry in _REGISTRY.values()
        if (scope is None or entry.scope == scope) and (kind is None or entry.applies_to(kind))
    ]
