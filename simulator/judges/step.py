"""Checking a step's success criteria while the conversation runs: deterministic checks, then the judge model.

How a step is decided:
  * every deterministic check (``checks:``) must be met; one ``not_met`` makes the step ``not_met``;
  * ``success_criteria`` (words) are decided by the judge model with a structured verdict (met / not_met /
    unsure, a reason and, for met, a quote of the agent's words), one request per criterion or check in words,
    all of a step's at once. A met whose quote is not the agent's, or that deterministic evidence contradicts,
    does not count (:func:`~simulator.judges.evidence.overrule_pass`). With no
    judge model configured they are not guessed: the detail says ``unsure`` with that reason, and the step is
    ``unsure`` (a pass means every check was decided). When every deterministic check beside them is met, the
    verdict is *settled*: no later turn can judge the criteria, so the step is unsure at once and the
    conversation moves on; the rationale says how many checks were met and which criteria need a judge;
  * ``expect_state`` is checked like the deterministic checks, one detail per item, on the conversation's world
    as it is after the reply (``simulator.world.check_state``): not met until the world shows it, so the step
    goes on until its max turns; without a world to read the detail is unsure (:data:`NO_WORLD`);
  * a step with none of these is met once the agent has replied (nothing was asked of it).
"""

from __future__ import annotations

import functools
import re
from collections.abc import Awaitable, Iterator, Sequence
from importlib import resources
from typing import TYPE_CHECKING, Literal

from pydantic import BaseModel, ConfigDict, Field, JsonValue

from simulator.fence import DATA_RULE, fence_sections
from simulator.judges._gather import gather_in_order
from simulator.judges._replies import bare_schema
from simulator.judges.checks import ConversationView, check_expectation
from simulator.judges.claims import DeclaredTools
from simulator.judges.evidence import Evidence, overrule_pass
from simulator.judges.rendering import render_conversation
from simulator.models import ExpectationSpec
from simulator.models.transcript import AgentEvent, CheckDetail, StepVerdict, TranscriptEvent
from simulator.models.world import StateExpectation
from simulator.world import World, check_state

if TYPE_CHECKING:
    from simulator.llm import LLMClient

__all__ = [
    "NO_JUDGE",
    "NO_WORLD",
    "STEP_PROMPT",
    "CriterionReply",
    "CriterionVerdict",
    "StepJudge",
    "render_conversation",
    "step_prompt",
]

NO_JUDGE = "not judged: no judge model is configured (set models.judge in the suite or pass --judge-model)"
#: Why an ``expect_state`` was not checked: there is no world to read (a case or step that expects a state
#: belongs in a suite or case with ``world:``).
NO_WORLD = "not checked: the case has no world to check expect_state against (declare world: on the suite or case)"


class CriterionVerdict(BaseModel):
    """What the judge model answers about one criterion: for met, ``quote`` gives the agent's words that show
    it (a reply without one is a pass without evidence, which counts as unsure, not a malformed reply)."""

    verdict: Literal["met", "not_met", "unsure"]
    reason: str = Field(min_length=1)
    quote: str = ""


class CriterionReply(CriterionVerdict):
    """:class:`CriterionVerdict` as the step judge asks for it: its JSON schema, sent with every question, has no
    titles or descriptions (the prompt says what each field is)."""

    model_config = ConfigDict(json_schema_extra=bare_schema)


class StepJudge:
    """Decides steps for the engine (it satisfies the engine's ``StepChecker`` protocol)."""

    def __init__(
        self, llm: LLMClient | None = None, *, language: str = "en", declared_tools: DeclaredTools = ()
    ) -> None:
        self.llm = llm
        self.language = language
        #: The agent's tools: a criterion that names one whose calls did not run is not met, whatever the judge says.
        self.declared_tools = declared_tools

    @property
    def has_judge_model(self) -> bool:
        """Whether natural-language criteria can be judged."""
        if self.llm is None:
            return False
        from simulator.llm import Role

        return self.llm.settings(Role.JUDGE).model is not None

    async def check_step(
        self,
        *,
        goal: str | None,
        criteria: str | None,
        checks: Sequence[ExpectationSpec],
        replies: list[AgentEvent],
        events: Sequence[TranscriptEvent],
        variables: dict[str, JsonValue],
        state: StateExpectation | None = None,
        world: World | None = None,
    ) -> StepVerdict:
        """Check one step against the conversation so far (``replies`` are the agent's replies in this step;
        ``state`` is checked against ``world``, the conversation's world as it is now)."""
        view = ConversationView(
            replies=replies,
            all_replies=[e for e in events if isinstance(e, AgentEvent)],
            variables=variables,
            language=self.language,
        )
        deterministic: list[CheckDetail] = []
        questions: list[Awaitable[CheckDetail]] = []
        for check in checks:
            detail = check_expectation(check, view)
            if detail is not None:
                deterministic.append(detail)
            else:
                questions.append(self._judge(check.text or check.message or "", goal, events, "check"))
        if state is not None:
            deterministic.extend(_state_details(state, world))
        if criteria:
            questions.append(self._judge(criteria, goal, events, "success_criteria"))
        # The step's judge questions do not depend on each other: asked at once, kept in this order.
        return _combine(deterministic, await gather_in_order(questions))

    async def _judge(
        self, criterion: str, goal: str | None, events: Sequence[TranscriptEvent], what: str
    ) -> CheckDetail:
        label = f"judge: {what}: {criterion}"
        if not self.has_judge_model:
            return CheckDetail(check=label, verdict="unsure", evidence=NO_JUDGE)
        assert self.llm is not None
        from simulator.llm import Role, UnrecordedRequest

        # A judge that fails after the client's retries is not an "unsure" verdict: it propagates, and the
        # engine ends the case as an error naming the judge (never the agent's failure). A replay's question
        # that was never recorded and may not be sent is simply not judged; a recording that holds the question
        # in an older layout is answered from it (the layouts are tried newest first).
        unrecorded: UnrecordedRequest | None = None
        for system, request, schema in _layouts(criterion, goal, events):
            messages = [{"role": "system", "content": system}, {"role": "user", "content": request}]
            try:
                verdict = await self.llm.structured(Role.JUDGE, messages, schema)
                break
            except UnrecordedRequest as exc:
                unrecorded = unrecorded or exc
        else:
            return CheckDetail(check=label, verdict="unsure", evidence=str(unrecorded))
        if verdict.verdict == "met":
            evidence = Evidence(scope=events, declared_tools=self.declared_tools)
            overruled = overrule_pass(verdict.quote, criterion, verdict.reason, evidence)
            if overruled is not None:
                return CheckDetail(check=label, verdict=overruled.verdict, evidence=overruled.reason)
        return CheckDetail(check=label, verdict=verdict.verdict, evidence=verdict.reason)


def _state_details(state: StateExpectation, world: World | None) -> list[CheckDetail]:
    """The step's ``expect_state``, one detail per item, on the world as it is now. Without a world the state is
    not decidable: one unsure detail says why (never met, and not the agent's failure either)."""
    if world is None:
        return [CheckDetail(check="state", verdict="unsure", evidence=NO_WORLD)]
    return [result.detail() for result in check_state(state, world)]


def _combine(deterministic: list[CheckDetail], judged: list[CheckDetail]) -> StepVerdict:
    details = deterministic + judged
    if not details:
        return StepVerdict(
            verdict="met", rationale="the step sets no success criteria: complete once the agent replied"
        )
    failed = [d for d in details if d.verdict == "not_met"]
    if failed:
        return StepVerdict(
            verdict="not_met", rationale="; ".join(f"{d.check}: {d.evidence}" for d in failed), details=details
        )
    unsure = [d for d in details if d.verdict == "unsure"]
    if not unsure:
        return StepVerdict(
            verdict="met", rationale="; ".join(f"{d.check}: {d.evidence}" for d in details), details=details
        )
    only_unjudged = all(d.evidence == NO_JUDGE for d in unsure)
    if deterministic and only_unjudged:
        # The deterministic checks are met, but a pass means every check was decided: the criteria nobody
        # judged keep the step unsure. Nothing a later turn says can judge them, so the verdict is settled.
        met = "; ".join(d.check for d in deterministic)
        waiting = "; ".join(d.check.removeprefix("judge: ") for d in unsure)
        return StepVerdict(
            verdict="unsure",
            settled=True,
            rationale=(
                f"{len(deterministic)} of {len(details)} checks met ({met}); {len(unsure)} not judged, which needs "
                f"a judge model: {waiting}: {NO_JUDGE}"
            ),
            details=details,
        )
    return StepVerdict(
        verdict="unsure", rationale="; ".join(f"{d.check}: {d.evidence}" for d in unsure), details=details
    )


#: The step judge's prompt (its system message), a file under ``prompts/`` like every judge question's.
STEP_PROMPT = "step_criterion"
_HEADER = re.compile(r"\A\s*<!--.*?-->\s*", re.DOTALL)


@functools.cache
def step_prompt(*, older: bool = False) -> str:
    """The step judge's system message: ``prompts/step_criterion.md`` without its header comment (``older``: as
    recordings made before its shorter layout hold it, ``prompts/older/step_criterion.md``)."""
    folder = resources.files("simulator.judges").joinpath("prompts")
    text = (folder.joinpath("older") if older else folder).joinpath(f"{STEP_PROMPT}.md").read_text(encoding="utf-8")
    # A template without placeholders: formatting only turns the literal {{ }} back into braces.
    return _HEADER.sub("", text, count=1).rstrip("\n").format()


def _layouts(
    criterion: str, goal: str | None, events: Sequence[TranscriptEvent]
) -> Iterator[tuple[str, str, type[CriterionVerdict]]]:
    """The step judge's question in each layout a recording may hold it, newest first: (system message, user
    message, reply schema). Made one at a time: only a replay that does not find a layout asks the next one."""
    yield step_prompt(), _judge_request(criterion, goal, events), CriterionReply
    older = step_prompt(older=True)
    yield older, _judge_request(criterion, goal, events, labels=_LONGER_LABELS), CriterionVerdict
    yield older, _older_judge_request(criterion, goal, events), CriterionVerdict


#: The labels of the sections in the user message: the system message says what each section holds.
_LABELS = ("The conversation:", "The user's goal in this part:", "The criterion:")
#: The labels of the layout before the system message said it all.
_LONGER_LABELS = ("The conversation, one event per line:", "The user's goal in this part:", "The criterion to check:")


def _judge_request(
    criterion: str, goal: str | None, events: Sequence[TranscriptEvent], *, labels: tuple[str, str, str] = _LABELS
) -> str:
    """The step judge's question: the conversation, then the step's goal and the criterion, each in its fenced
    section. The conversation comes first and the token depends on its first event alone, so the question
    after the next turn, or about the next criterion or step, repeats this one's text up to the new events."""
    conversation = render_conversation(events)
    sections = {"conversation": conversation, "criterion": criterion}
    if goal:
        sections["user_goal"] = goal
    fenced = fence_sections(sections, basis=conversation.partition("\n")[0])
    goal_part = f"\n\n{labels[1]}\n{fenced['user_goal']}" if goal else ""
    return f"{labels[0]}\n{fenced['conversation']}{goal_part}\n\n{labels[2]}\n{fenced['criterion']}"


def _older_judge_request(criterion: str, goal: str | None, events: Sequence[TranscriptEvent]) -> str:
    """The step judge's question as older recordings hold it (the goal and the criterion before the
    conversation, the token over every section), so a replay of such a recording still finds its answers."""
    sections = {"criterion": criterion, "conversation": render_conversation(events)}
    if goal:
        sections = {"user_goal": goal, **sections}
    fenced = fence_sections(sections)
    goal_part = f"The user's goal in this part:\n{fenced['user_goal']}\n\n" if goal else ""
    return (
        f"{goal_part}The criterion to check:\n{fenced['criterion']}\n\n"
        f"The conversation, one event per line:\n{fenced['conversation']}\n\n{DATA_RULE}"
    )
