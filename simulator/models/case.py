"""Test cases: the three kinds (golden, scenario, simulation), their steps, turns and expectations."""

from __future__ import annotations

import re
from typing import Annotated, Any, Literal

from pydantic import BeforeValidator, Field, JsonValue, field_validator, model_validator

from simulator.models._base import Identifier, Slug, StrictModel, Text, located_error
from simulator.models.agent import ToolFake
from simulator.models.budgets import Budgets
from simulator.models.faults import ToolFault
from simulator.models.settings import Thresholds
from simulator.models.voice import Modality
from simulator.models.world import StateExpectation, WorldSetting

MatchMode = Literal["substring", "word", "stem", "regex"]
Normalization = Literal["unicode", "whitespace", "dates"]


def _check_regex(pattern: str) -> str:
    try:
        re.compile(pattern)
    except re.error as exc:
        raise ValueError(f"invalid regular expression {pattern!r}: {exc}") from None
    return pattern


Regex = Annotated[str, BeforeValidator(lambda v: _check_regex(v) if isinstance(v, str) else v)]


class KeywordTerm(StrictModel):
    """One term of a keyword check, with its own match mode."""

    term: Text
    mode: MatchMode | None = Field(default=None, description="Overrides the expectation's `match` for this term.")
    normalize: list[Normalization] = Field(
        default_factory=list,
        description="Normalise before matching: unicode (NFKC, accents folded), whitespace, "
        "dates (01.12.2026 = 1 December 2026).",
    )

    @model_validator(mode="after")
    def _regex_compiles(self) -> KeywordTerm:
        if self.mode == "regex":
            try:
                re.compile(self.term)
            except re.error as exc:
                raise located_error(f"invalid regular expression {self.term!r}: {exc}", "term") from None
        return self


#: A keyword term: plain text (matched literally, case-insensitive) or a term with its own mode.
Term = Annotated[str, Field(min_length=1)] | KeywordTerm


class ArgumentRule(StrictModel):
    """How one argument of a tool call is compared."""

    mode: Literal["exact", "regex", "tolerance", "ignore"] = "exact"
    pattern: Regex | None = Field(
        default=None,
        description="For mode regex: the value must contain a match (anchor with ^ and $ for the whole value).",
    )
    tolerance: float | None = Field(default=None, ge=0, description="For mode tolerance: allowed absolute difference.")

    @model_validator(mode="after")
    def _mode_needs_its_setting(self) -> ArgumentRule:
        if self.mode == "regex" and self.pattern is None:
            raise ValueError("mode regex needs `pattern`")
        if self.mode == "tolerance" and self.tolerance is None:
            raise ValueError("mode tolerance needs `tolerance`")
        return self


class ToolCallSpec(StrictModel):
    """An expected tool call: the tool's name and, optionally, its arguments."""

    name: Identifier
    arguments: dict[str, JsonValue] | None = Field(
        default=None, description="Expected arguments; leave out to check only that the tool was called."
    )
    match: Literal["exact", "subset", "ignore"] = Field(
        default="subset",
        description="subset: listed arguments must match, extra ones are allowed; exact: no extra ones; "
        "ignore: name only.",
    )
    argument_rules: dict[str, ArgumentRule] = Field(
        default_factory=dict, description="Per-argument comparison (regex, numeric tolerance, ignore)."
    )

    @model_validator(mode="after")
    def _rules_name_arguments(self) -> ToolCallSpec:
        unknown = sorted(set(self.argument_rules) - set(self.arguments or {}))
        if unknown:
            raise located_error(
                f"argument_rules names {unknown[0]!r}, which is not in `arguments`", "argument_rules", unknown[0]
            )
        return self


def _string_to_event(value: Any) -> Any:
    return {"name": value} if isinstance(value, str) else value


class EventSpec(StrictModel):
    """A named non-speech input to the agent (a button press, a webhook, a hang-up)."""

    name: Identifier
    payload: dict[str, JsonValue] = Field(default_factory=dict)


Event = Annotated[EventSpec, BeforeValidator(_string_to_event, json_schema_input_type=Identifier | EventSpec)]


class VariableExpectation(StrictModel):
    """The agent must have set a session variable to a value."""

    name: Identifier
    value: JsonValue


class Handoff(StrictModel):
    """The agent must hand the conversation over to a human or another agent."""

    to: Text = Field(description="'human' or the name of the agent that takes over.")


class KeywordChecks(StrictModel):
    """Fields shared by everything that checks words in the agent's messages."""

    must_contain: Annotated[list[Term], Field(min_length=1)] | None = Field(
        default=None, description="Terms the agent's message must contain (case-insensitive substring by default)."
    )
    must_not_contain: Annotated[list[Term], Field(min_length=1)] | None = Field(
        default=None, description="Terms the agent's message must not contain."
    )
    match: MatchMode = Field(
        default="substring",
        description="How terms match: substring (default, literal: 'nicht gesendet' contains 'gesendet'), "
        "word (whole words), stem (inflected forms), regex.",
    )
    contain: Literal["all", "any"] = Field(default="all", description="For must_contain: all terms, or any one.")

    @model_validator(mode="after")
    def _regex_terms_compile(self) -> KeywordChecks:
        for key in ("must_contain", "must_not_contain"):
            for index, term in enumerate(getattr(self, key) or []):
                pattern = term if isinstance(term, str) else term.term
                if (self.match if isinstance(term, str) else term.mode or self.match) != "regex":
                    continue
                try:
                    re.compile(pattern)
                except re.error as exc:
                    where = (key, index) if isinstance(term, str) else (key, index, "term")
                    raise located_error(f"invalid regular expression {pattern!r}: {exc}", *where) from None
        return self


def _string_to_expectation(value: Any) -> Any:
    return {"text": value} if isinstance(value, str) else value


class ExpectationSpec(KeywordChecks):
    """One thing the conversation must show. A plain string is a natural-language expectation for the judge.

    A structured expectation sets one kind of check: keywords, an expected message, a tool call (optionally
    after another tool), a session variable value, or a hand-off. ``text`` names it, so steps and turns can
    refer to it.
    """

    text: Text | None = Field(default=None, description="What is expected, in words; also the name to refer to it by.")
    message: str | None = Field(default=None, description="An agent message that must be said (semantic match).")
    tool_call: ToolCallSpec | None = None
    after: Identifier | None = Field(default=None, description="The tool_call must come after a call of this tool.")
    variable: VariableExpectation | None = None
    handoff: Handoff | None = None
    threshold: float | None = Field(
        default=None, ge=0, description="Pass mark for this expectation's score, overriding the suite's threshold."
    )

    @model_validator(mode="after")
    def _says_something(self) -> ExpectationSpec:
        checks = [name for name in ("message", "tool_call", "variable", "handoff") if getattr(self, name) is not None]
        if self.must_contain is not None or self.must_not_contain is not None:
            checks.append("must_contain/must_not_contain")
        if not checks and not (self.text and self.text.strip()):
            raise ValueError(
                "an expectation needs `text` or one check: must_contain, must_not_contain, message, tool_call, "
                "variable, handoff"
            )
        if len(checks) > 1:
            raise ValueError(f"one check per expectation, found {', '.join(checks)}: split it into several")
        if self.after is not None and self.tool_call is None:
            raise located_error("`after` orders a tool call: it needs `tool_call`", "after")
        return self

    def label(self) -> str | None:
        """The text a step or turn uses to refer to this expectation, if it has one."""
        return self.text


Expectation = Annotated[
    ExpectationSpec, BeforeValidator(_string_to_expectation, json_schema_input_type=Text | ExpectationSpec)
]


def normalize_reference(text: str) -> str:
    """How expectation references compare: case-insensitive, surrounding spaces ignored."""
    return " ".join(text.split()).casefold()


def _string_to_reference(value: Any) -> Any:
    return {"answer": value} if isinstance(value, str) else value


class ReferenceAnswerSpec(StrictModel):
    """A reference answer for the judge, with side claims that must not appear."""

    answer: Text
    must_not_state: list[Text] = Field(
        default_factory=list, description="Claims that are wrong here; the judge checks them separately."
    )


ReferenceAnswer = Annotated[
    ReferenceAnswerSpec, BeforeValidator(_string_to_reference, json_schema_input_type=Text | ReferenceAnswerSpec)
]

ResponseGuide = Annotated[str, Field(min_length=1)] | dict[str, JsonValue]


class Step(StrictModel):
    """One milestone of a simulation: a goal to reach, an exact utterance, or an event.

    A goal step is worked on by the simulated user until its ``success_criteria`` and ``checks`` are met, at
    most ``max_turns`` user turns. ``response_guide`` is shown to the simulated user only, never the agent.
    """

    name: str | None = Field(default=None, description="Optional short label for reports.")
    goal: Text | None = Field(default=None, description="What the simulated user tries to achieve in this step.")
    static_utterance: Text | None = Field(default=None, description="Send exactly this text instead of improvising.")
    event: Event | None = Field(default=None, description="Send this named event instead of speech.")
    success_criteria: Text | None = Field(
        default=None, description="When the step counts as complete, in words (decided by the judge model)."
    )
    checks: list[Expectation] = Field(
        default_factory=list, description="Deterministic checks that decide the step (no model needed)."
    )
    max_turns: int = Field(default=3, ge=1, le=100, description="User turns allowed for this step.")
    min_turns: int = Field(default=1, ge=1, le=100, description="Do not judge the step before this many turns.")
    response_guide: ResponseGuide | None = Field(
        default=None, description="Guidance or facts (key: value) for the simulated user; never shown to the agent."
    )
    say: list[Text] = Field(default_factory=list, description="Lines the scripted user says, in order.")
    expectations: list[Text] = Field(
        default_factory=list, description="Texts of the case's expectations to check at this step."
    )
    expect_state: StateExpectation | None = Field(
        default=None,
        description="What the case's world must look like for the step to be met, checked with its other checks "
        "after each agent reply (no model needed); not met at max_turns: the step is not met, with the diff.",
        exclude_if=lambda expectation: expectation is None,  # left out of snapshots unused: hashes as before
    )
    barge_in_after: float | None = Field(
        default=None,
        gt=0,
        le=600,
        description="Voice cases: the user interrupts the agent after this many seconds of its audio in this "
        "step's turns (overrides the persona's).",
        exclude_if=lambda seconds: seconds is None,  # left out of snapshots unused: hashes as before
    )
    silence: float | None = Field(
        default=None,
        ge=0,
        le=600,
        description="Voice cases: the user says nothing in this step's turns, each this many seconds of silence "
        "(overrides the persona's; 0: the user speaks). A step may be only a silence.",
        exclude_if=lambda seconds: seconds is None,  # left out of snapshots unused: hashes as before
    )

    @model_validator(mode="after")
    def _one_action(self) -> Step:
        if self.goal is None and self.static_utterance is None and self.event is None and not self.silence:
            raise ValueError("a step needs `goal`, `static_utterance`, `event` or `silence`")
        for action in ("static_utterance", "event"):
            if self.silence and getattr(self, action) is not None:
                raise located_error(
                    f"a step is either silent (`silence`) or sends `{action}`, not both: split it into two steps",
                    "silence",
                )
        if self.static_utterance is not None and self.event is not None:
            raise located_error(
                "a step sends either `static_utterance` or `event`, not both: split it into two steps", "event"
            )
        if self.min_turns > self.max_turns:
            raise located_error(
                f"min_turns ({self.min_turns}) is greater than max_turns ({self.max_turns})", "min_turns"
            )
        return self

    def label(self) -> str:
        """A short human-readable description for reports."""
        if self.name:
            return self.name
        if self.goal:
            return self.goal
        if self.silence and self.static_utterance is None and self.event is None:
            return f"silence: {self.silence:g} s"
        if self.static_utterance is not None:
            return f"say: {self.static_utterance}"
        assert self.event is not None
        return f"event: {self.event.name}"


class TurnExpectation(KeywordChecks):
    """What a golden turn expects of the agent's reply."""

    message: str | None = Field(default=None, description="The expected agent message (semantic match 0-4).")
    reference_answer: ReferenceAnswer | None = Field(default=None, description="Scored 0-100 by the reference judge.")
    tool_calls: list[ToolCallSpec] = Field(default_factory=list, description="Tool calls expected in this turn.")
    tool_order: Literal["any", "in_order", "exact"] = Field(
        default="any", description="any order, in the listed order, or exactly these calls and no others."
    )
    handoff: Handoff | None = None
    variables: dict[Identifier, JsonValue] = Field(
        default_factory=dict, description="Session variables the agent must have set after this turn."
    )


class GoldenTurn(StrictModel):
    """One fixed user turn (or event) of a golden conversation, with what the agent should do."""

    user: Text | None = Field(default=None, description="The user's message.")
    event: Event | None = None
    expect: TurnExpectation | None = None
    expectations: list[Text] = Field(
        default_factory=list, description="Texts of the case's expectations to check here."
    )

    @model_validator(mode="after")
    def _user_or_event(self) -> GoldenTurn:
        if self.user is not None and self.event is not None:
            raise located_error("a golden turn has either `user` (a message) or `event`, not both", "event")
        if self.user is None and self.event is None:
            raise ValueError("a golden turn needs `user` (a message) or `event`")
        return self


class _CaseBase(StrictModel):
    name: Annotated[str, Field(min_length=1, max_length=200, pattern=r"^\S([^\r\n\u2028\u2029]*\S)?$")] = Field(
        description="Unique within the suite."
    )
    description: str = ""
    tags: list[Annotated[str, Field(min_length=1)]] = Field(default_factory=list)
    personas: list[Slug] = Field(default_factory=list, description="Personas to run this case with.")
    scorers: list[Slug] = Field(
        default_factory=list,
        description="Scorers of installed plugins that score this case, besides the suite's (entry point "
        "simulator.scorers).",
        exclude_if=lambda names: not names,  # left out of snapshots unused: a case hashes as it did before
    )
    session_parameters: dict[Identifier, JsonValue] = Field(
        default_factory=dict, description="Values of the agent's declared variables for this session."
    )
    expectations: list[Expectation] = Field(default_factory=list)
    tool_fakes: list[ToolFake] = Field(
        default_factory=list, description="Canned tool results for this case (test mode)."
    )
    faults: list[ToolFault] = Field(
        default_factory=list,
        description="Faults injected on purpose into this case's tool calls (each names its tool, or '*'), tried "
        "before the suite's. Test mode only.",
        exclude_if=lambda faults: not faults,  # left out of snapshots unused: a case hashes as it did before
    )
    repeats: int | None = Field(default=None, ge=1, le=1000, description="Runs of this case; overrides the suite.")
    thresholds: Thresholds | None = Field(default=None, description="Overrides the suite's thresholds for this case.")
    budgets: Budgets | None = Field(
        default=None,
        description="What one conversation of this case may take: each figure set here replaces the suite's "
        "budget of the same name, the others are kept.",
        exclude_if=lambda budgets: budgets is None,  # left out of snapshots unused: a case hashes as it did before
    )
    world: WorldSetting = Field(
        default=None,
        description="This case's world: its collections replace the suite's collections of the same name, the "
        "others are kept. Inline, or a YAML/JSON file beside the suite.",
        exclude_if=lambda world: world is None,  # left out of snapshots unused: a case hashes as it did before
    )
    expect_state: StateExpectation | None = Field(
        default=None,
        description="What the world must look like when the conversation ends: records and field values, what "
        "must be unchanged, counts, nothing else changed. Decided without a model, with a diff as evidence.",
        exclude_if=lambda expectation: expectation is None,  # left out of snapshots unused: hashes as before
    )
    modality: Modality | None = Field(
        default=None,
        description="chat (text) or voice (the user's turns spoken, the agent's audio transcribed); unset: the "
        "suite's `modality`, else chat.",
        exclude_if=lambda modality: modality is None,  # left out of snapshots unused: a case hashes as it did before
    )

    @field_validator("expectations")
    @classmethod
    def _unique_expectation_texts(cls, value: list[ExpectationSpec]) -> list[ExpectationSpec]:
        seen: set[str] = set()
        for index, expectation in enumerate(value):
            if expectation.text is None:
                continue
            key = normalize_reference(expectation.text)
            if key in seen:
                raise located_error(
                    f"another expectation already has the text {expectation.text!r}: texts name them, make them unique",
                    index,
                )
            seen.add(key)
        return value


class GoldenCase(_CaseBase):
    """Fixed user turns replayed in order; each turn can carry expectations."""

    kind: Literal["golden"]
    replay: Literal["simple", "stable"] = Field(
        default="simple",
        description="simple: continue from the agent's actual replies; stable: each turn against the expected history.",
    )
    turns: list[GoldenTurn] = Field(min_length=1)


class ScenarioCase(_CaseBase):
    """One open user goal; the simulated user improvises until it is reached, hopeless, or out of turns."""

    kind: Literal["scenario"]
    goal: Text
    success_criteria: Text | None = Field(default=None, description="When the goal counts as reached, in words.")
    checks: list[Expectation] = Field(default_factory=list, description="Deterministic checks of the goal.")
    response_guide: ResponseGuide | None = None
    say: list[Text] = Field(default_factory=list, description="Lines the scripted user says, in order.")
    max_turns: int = Field(default=10, ge=1, le=100)
    initiator: Literal["user", "agent"] = Field(default="user", description="Who speaks first.")


class SimulationCase(_CaseBase):
    """Ordered steps worked through by a simulated user; a failed step stops the conversation."""

    kind: Literal["simulation"]
    steps: list[Step] = Field(min_length=1)
    initiator: Literal["user", "agent"] = Field(default="user", description="Who speaks first.")


Case = Annotated[GoldenCase | ScenarioCase | SimulationCase, Field(discriminator="kind")]
