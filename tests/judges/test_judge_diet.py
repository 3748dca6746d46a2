"""The judge's requests on a diet: the conversation review and the step judge say every instruction once, send a
JSON schema without titles or descriptions, and let a passing turn be one bare verdict. Every check the scorers
do still holds (a table per question), and a replay of a recording that holds a request in its older layout is
answered from it."""

from __future__ import annotations

import asyncio
import hashlib
import json
import re
from collections.abc import Iterator
from importlib import resources
from typing import Any

import pytest

from simulator.judges import StepJudge
from simulator.judges.llm_judges import (
    LEFT_OUT,
    MISQUOTED,
    ConversationReviewFidelityReply,
    ConversationReviewReply,
    LLMJudge,
    Reviewed,
    ReviewFidelityReply,
    ReviewReply,
    UserTurns,
)
from simulator.judges.step import CriterionReply, CriterionVerdict, step_prompt
from simulator.llm import Completion, FakeScript, LLMClient, Role, UnrecordedRequest, Usage, replaying
from simulator.llm._openai import strict_json_schema
from simulator.models import ModelRoles
from simulator.models.scores import FidelityFinding, Score
from simulator.models.transcript import AgentEvent, ToolCallRecord, TranscriptEvent, UserEvent

GOAL = "Find out where order A1 is."
SAID = {1: "Hello, which order?", 2: "Your order A1 was shipped on 3 May.", 3: "It arrives on 9 May."}
USER = {1: "Hi, where is my order?", 2: "It is A1.", 3: "My name is Ann Lee, when does it arrive?"}
LOOKUP = ToolCallRecord(id="c1", name="lookup_order", arguments={"order_id": "A1"}, status="executed", result={"s": 1})
USERS = [UserEvent(turn=n, text=text, source="llm") for n, text in USER.items()]
AGENTS = [AgentEvent(turn=n, messages=[text], tool_calls=[LOOKUP] if n == 2 else []) for n, text in SAID.items()]
EVENTS: list[TranscriptEvent] = [event for pair in zip(USERS, AGENTS, strict=True) for event in pair]


async def _no_wait(delay: float) -> None:
    return None


def _client(script: FakeScript) -> LLMClient:
    return LLMClient(ModelRoles.model_validate({"judge": "fake/judge"}), fake_script=script, sleep=_no_wait)


def review(reply: Any, *, user: bool = False) -> tuple[Reviewed, list[FidelityFinding], FakeScript]:
    """The conversation reviewed by a fake judge that answers ``reply`` every time; with ``user``, the simulated
    user's turns are asked about too (the findings are what :meth:`LLMJudge.invented_facts` then gives)."""
    script = FakeScript().enqueue("judge", reply, times=5)
    judge = LLMJudge(_client(script))
    users = UserTurns(brief=f"goal: {GOAL}\norder: A1", turns=USERS) if user else None

    async def ask() -> tuple[Reviewed | None, list[FidelityFinding]]:
        found = await judge.review(goal=GOAL, events=EVENTS, turns=AGENTS, context="(empty)", user=users)
        facts = await judge.invented_facts(brief=users.brief, events=EVENTS, turns=USERS) if users else []
        return found, facts

    reviewed, facts = asyncio.run(ask())
    assert reviewed is not None
    return reviewed, facts, script


SATISFIED = {"satisfied": True, "reason": "the lookup shows it", "quote": SAID[2]}
PASSING = [{"turn": 1, "verdict": "no_claim"}, {"turn": 2, "verdict": "supported"}, {"turn": 3, "verdict": "no_claim"}]


def reply(goal: dict[str, Any] = SATISFIED, turns: list[dict[str, Any]] = PASSING, **more: Any) -> dict[str, Any]:
    return {"goal": goal, "turns": turns, "claims": [], **more}


def _turn(scores: list[Score], number: int) -> Score:
    return next(score for score in scores if score.turn == number)


# -- every question keeps its evidence rule -------------------------------------------------------------------


GOAL_TABLE = [
    ("quoted", SATISFIED, "met", "the lookup shows it"),
    ("no quote", {**SATISFIED, "quote": ""}, "unsure", "quote"),
    ("quote not in the conversation", {**SATISFIED, "quote": "Your refund is approved."}, "unsure", "not"),
    ("quote of the user", {**SATISFIED, "quote": USER[3]}, "unsure", "not"),
    ("not satisfied", {"satisfied": False, "reason": "no date given", "quote": ""}, "not_met", "no date given"),
]


@pytest.mark.parametrize(("goal", "verdict", "said"), [row[1:] for row in GOAL_TABLE], ids=[r[0] for r in GOAL_TABLE])
def test_a_satisfied_goal_stands_only_on_a_quote_of_the_agent(goal: dict[str, Any], verdict: str, said: str) -> None:
    reviewed, _, _ = review(reply(goal))
    assert reviewed.goal.verdict == verdict, reviewed.goal.reason
    assert said in reviewed.goal.reason


TURN_TABLE: list[tuple[str, list[dict[str, Any]], list[dict[str, Any]], int, str, str]] = [
    ("bare supported", PASSING, [], 2, "met", "the judge found every factual claim of this turn supported"),
    ("bare no_claim", PASSING, [], 1, "n/a", "the judge found no factual claim in this turn"),
    ("left out", PASSING[:2], [], 3, "unsure", LEFT_OUT),
    (
        "unsupported, quoted",
        [*PASSING[:2], {"turn": 3, "verdict": "unsupported"}],
        [{"turn": 3, "claim": "arrives on 9 May", "reason": "no tool gave a date"}],
        3,
        "not_met",
        "unsupported claim: “arrives on 9 May”: no tool gave a date",
    ),
    (
        "unsupported, quoting another turn",
        [*PASSING[:2], {"turn": 3, "verdict": "unsupported"}],
        [{"turn": 3, "claim": "shipped on 3 May", "reason": "no tool gave a date"}],
        3,
        "unsure",
        MISQUOTED,
    ),
    (
        "a claim for a turn called supported",
        PASSING,
        [{"turn": 2, "claim": "shipped on 3 May", "reason": "no tool gave a date"}],
        2,
        "unsure",
        "contradicting verdicts",
    ),
    (
        "the first of two claims",
        [*PASSING[:2], {"turn": 3, "verdict": "unsupported"}],
        [{"turn": 3, "claim": "9 May", "reason": "first"}, {"turn": 3, "claim": "nowhere said", "reason": "second"}],
        3,
        "not_met",
        "“9 May”: first",
    ),
]


@pytest.mark.parametrize(
    ("turns", "claims", "number", "verdict", "said"), [row[1:] for row in TURN_TABLE], ids=[r[0] for r in TURN_TABLE]
)
def test_each_turn_keeps_its_evidence_rule(
    turns: list[dict[str, Any]], claims: list[dict[str, Any]], number: int, verdict: str, said: str
) -> None:
    reviewed, _, _ = review({**reply(turns=turns), "claims": claims})
    score = _turn(reviewed.hallucinations, number)
    assert (score.verdict, score.source) == (verdict, "judge"), score.reason
    assert said in score.reason


def test_an_unsupported_turn_without_its_claim_is_asked_again_and_never_passes() -> None:
    """A not_supported needs its claim: a reply without one is not usable (asked again, then an error)."""
    unsupported = reply(turns=[*PASSING[:2], {"turn": 3, "verdict": "unsupported"}])
    reviewed, _, script = review(unsupported)
    assert len(script.requests) == 3
    assert "turn 3" in str(script.requests[1].messages[-1]["content"])  # the correction names the turn
    assert {score.verdict for score in [reviewed.goal, *reviewed.hallucinations]} == {"error"}
    # One claim given on the second try: used.
    answers = iter([unsupported, {**unsupported, "claims": [{"turn": 3, "claim": "9 May", "reason": "no date"}]}])
    again, _, _ = review(lambda messages: next(answers))
    assert _turn(again.hallucinations, 3).verdict == "not_met"


USER_TABLE = [
    (
        "invented, quoted from its turn",
        [{"turn": 3, "fact": "Ann Lee", "reason": "not in its brief"}],
        [(3, "Ann Lee")],
    ),
    ("quoted from another turn", [{"turn": 3, "fact": "A1", "reason": "not in its brief"}], []),
    ("a turn not asked about", [{"turn": 9, "fact": "Ann Lee", "reason": "not in its brief"}], []),
    ("empty fact", [{"turn": 3, "fact": "", "reason": "not in its brief"}], []),
    ("nothing invented", [], []),
]


@pytest.mark.parametrize(("invented", "found"), [row[1:] for row in USER_TABLE], ids=[r[0] for r in USER_TABLE])
def test_an_invented_fact_is_a_finding_only_with_words_of_its_own_turn(
    invented: list[dict[str, Any]], found: list[tuple[int, str]]
) -> None:
    _, facts, script = review(reply(invented=invented), user=True)
    assert [(finding.turn, finding.evidence) for finding in facts] == found
    assert len(script.requests) == 1  # the user's question rode in the review


STEP_TABLE = [
    ("met, quoted", {"verdict": "met", "reason": "said", "quote": SAID[2]}, "met"),
    ("met without a quote", {"verdict": "met", "reason": "said", "quote": ""}, "unsure"),
    ("met quoting the user", {"verdict": "met", "reason": "said", "quote": USER[2]}, "unsure"),
    ("not met", {"verdict": "not_met", "reason": "no date", "quote": ""}, "not_met"),
]


@pytest.mark.parametrize(("answer", "verdict"), [row[1:] for row in STEP_TABLE], ids=[r[0] for r in STEP_TABLE])
def test_the_step_judges_met_stands_only_on_a_quote_of_the_agent(answer: dict[str, Any], verdict: str) -> None:
    script = FakeScript().enqueue("judge", answer)
    step = asyncio.run(
        StepJudge(_client(script)).check_step(
            goal=GOAL, criteria="The agent says when A1 ships.", checks=[], replies=AGENTS[:2], events=EVENTS[:4],
            variables={},
        )
    )  # fmt: skip
    assert step.verdict == verdict, step.rationale
    assert script.requests[0].params["response_format"]["json_schema"]["name"] == CriterionReply.__name__


# -- what is sent -----------------------------------------------------------------------------------------------


def _keys(node: Any) -> Iterator[str]:
    if isinstance(node, dict):
        for key, value in node.items():
            yield key
            yield from _keys(value)
    elif isinstance(node, list):
        for item in node:
            yield from _keys(item)


@pytest.mark.parametrize(
    ("schema", "older"),
    [
        (ReviewReply, ConversationReviewReply),
        (ReviewFidelityReply, ConversationReviewFidelityReply),
        (CriterionReply, CriterionVerdict),
    ],
)
def test_the_schema_sent_has_no_titles_descriptions_or_defaults(schema: type[Any], older: type[Any]) -> None:
    sent = strict_json_schema(schema)
    assert not {"title", "description", "default", "$defs", "$ref"} & set(_keys(sent))
    assert len(json.dumps(sent)) < len(json.dumps(strict_json_schema(older))) * 0.75


def _sentences(text: str) -> list[str]:
    return [s.strip() for s in re.split(r"(?<=[.:;])\s+|\n+", text) if len(s.strip()) > 30]


def test_no_instruction_is_said_twice_and_the_step_question_holds_only_its_sections() -> None:
    _, _, script = review(reply(invented=[]), user=True)
    [request] = script.requests
    sentences = _sentences(str(request.messages[0]["content"]))
    assert len(sentences) == len(set(sentences))
    ask = FakeScript().enqueue("judge", {"verdict": "not_met", "reason": "no", "quote": ""})
    asyncio.run(
        StepJudge(_client(ask)).check_step(
            goal=GOAL, criteria="The agent says when A1 ships.", checks=[], replies=AGENTS[:2], events=EVENTS[:4],
            variables={},
        )
    )  # fmt: skip
    system, user = (str(message["content"]) for message in ask.requests[0].messages)
    assert system == step_prompt()
    outside = re.sub(r"<(\w+)-[0-9a-f]{16}>.*?</\1-[0-9a-f]{16}>", "", user, flags=re.DOTALL)
    assert outside.split() == [
        "The",
        "conversation:",
        "The",
        "user's",
        "goal",
        "in",
        "this",
        "part:",
        "The",
        "criterion:",
    ]
    assert not set(_sentences(system)) & set(_sentences(user))


# -- older recordings still replay ------------------------------------------------------------------------------

#: The prompts as recordings made before the diet hold them (sha256 of the text sent): never to change.
OLDER_TEXTS = {
    "conversation_review": "ce18fc361c686f86b740dde6dca4a4bf98c0c7a4066bf0151ac01cd6562dde15",
    "conversation_review_fidelity": "7d422c5eafb2a9ea31fc3a6eed36ec047cba1716a1a8f3cd315634f599239bc0",
    "step_criterion": "2d6686cc53f31c0cab7c7922f356bf10a5cdbe566a789773670e51296d1680b2",
}


@pytest.mark.parametrize("name", sorted(OLDER_TEXTS))
def test_the_older_layouts_are_kept_byte_for_byte(name: str) -> None:
    text = resources.files("simulator.judges").joinpath("prompts", "older", f"{name}.md").read_text(encoding="utf-8")
    body = re.sub(r"\A\s*<!--.*?-->\s*", "", text, count=1, flags=re.DOTALL)
    assert hashlib.sha256(body.encode()).hexdigest() == OLDER_TEXTS[name]


def _answer(content: dict[str, Any]) -> Completion:
    text = json.dumps(content)
    return Completion(
        content=text, tool_calls=[], finish_reason="stop", usage=Usage(calls=1), model="fake/judge", cost=None,
        raw_text=text,
    )  # fmt: skip


class RecordedBeforeTheDiet:
    """A recording made before the diet: it answers a request only in the older layout (its reply schema is one of
    ``older``), and holds nothing for the current one (which may not be sent)."""

    def __init__(self, older: dict[str, dict[str, Any]]) -> None:
        self.older = older
        self.asked: list[dict[str, Any]] = []

    def answer(self, role: Role, record: dict[str, Any], fingerprint: str) -> Completion | None:
        self.asked.append(record)
        name = record["response_format"]["name"]
        if name in self.older:
            return _answer(self.older[name])
        raise UnrecordedRequest("not judged: this judge request changed since the recording")


OLD_TURNS = [
    {"turn": 1, "verdict": "no_claim", "claim": "", "reason": "a question"},
    {"turn": 2, "verdict": "supported", "claim": "", "reason": "the lookup"},
    {"turn": 3, "verdict": "unsupported", "claim": "arrives on 9 May", "reason": "no date was looked up"},
]


@pytest.mark.parametrize("user", [False, True], ids=["conversation_review", "conversation_review_fidelity"])
def test_a_recording_of_the_older_review_replays_with_its_verdicts(user: bool) -> None:
    older = {"goal": SATISFIED, "turns": OLD_TURNS, "user_turns": [
        {"turn": 3, "invented": True, "fact": "Ann Lee", "reason": "not in its brief"}
    ]}  # fmt: skip
    name = "ConversationReviewFidelityReply" if user else "ConversationReviewReply"
    recording = RecordedBeforeTheDiet({name: older})
    with replaying(recording):
        reviewed, facts, script = review(reply(), user=user)
    assert not script.requests  # nothing was sent: both layouts were offered to the recording
    new, old = recording.asked
    assert (new["response_format"]["name"], old["response_format"]["name"]) == (
        ("ReviewFidelityReply", name) if user else ("ReviewReply", name)
    )
    asked = str(old["messages"][0]["content"])
    assert f"Answer {'three' if user else 'two'} questions about" in asked  # the older text, pinned above
    assert '"claims"' not in asked
    assert (reviewed.goal.verdict, [s.verdict for s in reviewed.hallucinations]) == ("met", ["n/a", "met", "not_met"])
    assert [s.reason for s in reviewed.hallucinations][:2] == ["a question", "the lookup"]
    assert [(f.turn, f.evidence) for f in facts] == ([(3, "Ann Lee")] if user else [])


def test_a_recording_of_the_older_step_question_replays_with_its_verdict() -> None:
    recording = RecordedBeforeTheDiet({"CriterionVerdict": {"verdict": "met", "reason": "said", "quote": SAID[2]}})
    script = FakeScript()
    with replaying(recording):
        step = asyncio.run(
            StepJudge(_client(script)).check_step(
                goal=GOAL, criteria="The agent says when A1 ships.", checks=[], replies=AGENTS[:2],
                events=EVENTS[:4], variables={},
            )
        )  # fmt: skip
    assert step.verdict == "met", step.rationale
    new, old = recording.asked[:2]
    assert (new["response_format"]["name"], old["response_format"]["name"]) == ("CriterionReply", "CriterionVerdict")
    assert old["messages"][0]["content"] == step_prompt(older=True)
    assert str(old["messages"][1]["content"]).startswith("The conversation, one event per line:")
