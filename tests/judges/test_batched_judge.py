"""The per-turn hallucination question in one request per conversation, and the judge calls of a conversation
at once: the requests the fake judge receives, the scores (the same as one request per turn), the rules for a
turn the reply leaves out or misquotes, failures, and ``judging: {batch: false}``."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from simulator.errors import JudgeError
from simulator.judges import gather_in_order
from simulator.judges._replies import NO_UNSUPPORTED
from simulator.judges.llm_judges import LEFT_OUT, MISQUOTED, LLMJudge
from simulator.judges.scoring import ScoringContext, score_transcript
from simulator.llm import (
    Completion,
    FakeScript,
    LLMClient,
    Role,
    StaticReply,
    UnrecordedRequest,
    fake_auth_error,
    replaying,
)
from simulator.loading import load_suite
from simulator.metrics import case_outcome
from simulator.models import JudgingSettings, ModelRoles, Thresholds
from simulator.models.run import RunSettings
from simulator.models.scores import Score
from simulator.models.transcript import AgentEvent, ToolCallRecord, Transcript, TranscriptEvent, UserEvent
from simulator.runner import find_case, model_roles, run_case, score_case
from tests.factories import events_in, judged_turns, review_reply
from tests.judges.test_scoring import case

TURNS = 6
BATCH = JudgingSettings()
PER_TURN = JudgingSettings(batch=False)
SATISFIED = {"satisfied": True, "reason": "The user got the date.", "quote": "your order A1 arrives on 1 May"}
SCENARIO = {"kind": "scenario", "name": "order status", "goal": "Find out when order A1 arrives.", "max_turns": TURNS}


async def no_wait(delay: float) -> None:
    return None


def said(turn: int) -> str:
    return f"Turn {turn}: your order A1 arrives on {turn} May."


def conversation(turns: int = TURNS) -> Transcript:
    events: list[TranscriptEvent] = []
    for number in range(1, turns + 1):
        events.append(UserEvent(turn=number, text=f"question {number}", source="scripted"))
        calls = [ToolCallRecord(id=f"c{number}", name="lookup_order", status="faked", result={"eta": "5 May"})]
        events.append(AgentEvent(turn=number, messages=[said(number)], tool_calls=calls if number == 1 else []))
    return Transcript(case="order status", kind="scenario", events=events, turns=turns, stop_reason="completed")


#: The fake verdict for each turn: supported, unsupported (quoting the turn) or no claim, by turn number.
def verdict(turn: int) -> dict[str, Any]:
    if turn % 3 == 0:
        return {"verdict": "unsupported", "claim": said(turn), "reason": f"nothing says {turn} May"}
    if turn % 3 == 1:
        return {"verdict": "supported", "claim": "", "reason": "the lookup shows it"}
    return {"verdict": "no_claim", "claim": "", "reason": "nothing factual"}


def per_turn_number(prompt: str) -> int:
    (number,) = {event["turn"] for event in events_in(prompt, "agent_turn")}
    return int(number)


def batch_numbers(prompt: str) -> list[int]:
    return judged_turns(prompt, "agent")


def user_numbers(prompt: str) -> list[int]:
    return judged_turns(prompt, "user")


def nothing_invented(numbers: list[int]) -> list[dict[str, Any]]:
    return [{"turn": n, "invented": False, "fact": "", "reason": "only asks"} for n in numbers]


class Judge:
    """The fake judge model: answers each question by its prompt, counting the requests per question."""

    def __init__(
        self, *, batch: Any = None, delay: float = 0.0, satisfied: bool = True, verdicts: Any = verdict
    ) -> None:
        self.script = FakeScript().enqueue("judge", self._reply, times=100)
        self.satisfied = satisfied
        self.verdicts = verdicts
        self.asked: list[tuple[str, str]] = []
        self.batch = batch or (lambda numbers: {"turns": [{"turn": n, **verdicts(n)} for n in numbers]})
        self.delay = delay
        self.in_flight = 0
        self.most_in_flight = 0
        roles = ModelRoles.model_validate({"judge": "fake/judge"})
        self.client = LLMClient(roles, fake_script=self.script, sleep=no_wait)
        self.judge = LLMJudge(self.client)

    async def _reply(self, messages: list[dict[str, Any]]) -> StaticReply:
        prompt: str = messages[0]["content"]
        self.in_flight += 1
        self.most_in_flight = max(self.most_in_flight, self.in_flight)
        try:
            await asyncio.sleep(self.delay)
        finally:
            self.in_flight -= 1
        if prompt.startswith("You judge one finished conversation"):
            name = "conversation_review_fidelity" if "The user turns to judge:" in prompt else "conversation_review"
            self.asked.append((name, prompt))
            review: dict[str, Any] = {**self.batch(batch_numbers(prompt)), "goal": self.goal()}
            if name == "conversation_review_fidelity":
                review["user_turns"] = nothing_invented(user_numbers(prompt))
            return review_reply(review)
        if prompt.startswith("You check the turns"):
            self.asked.append(("hallucination_batch", prompt))
            answer: StaticReply = self.batch(batch_numbers(prompt))
            return answer
        if prompt.startswith("You review one conversation"):
            self.asked.append(("hallucination_fidelity_batch", prompt))
            both: dict[str, Any] = self.batch(batch_numbers(prompt))
            return {**both, "user_turns": nothing_invented(user_numbers(prompt))}
        if prompt.startswith("You check one turn"):
            self.asked.append(("hallucination", prompt))
            one_turn: StaticReply = self.verdicts(per_turn_number(prompt))
            return one_turn
        if prompt.startswith("A language model played a customer"):
            self.asked.append(("user_fidelity", prompt))
            return {"turns": nothing_invented(user_numbers(prompt))}
        self.asked.append(("goal_satisfaction", prompt))
        return self.goal()

    def goal(self) -> dict[str, Any]:
        return SATISFIED if self.satisfied else {"satisfied": False, "reason": "The user got no date."}

    def count(self, question: str) -> int:
        return sum(1 for name, _ in self.asked if name == question)

    def prompts(self, question: str) -> list[str]:
        return [prompt for name, prompt in self.asked if name == question]


def dumped(scores: list[Score]) -> list[dict[str, Any]]:
    """The scores as dicts, the reason of a passing hallucination verdict left out: the conversation review's
    reply gives a reason only for an unsupported claim (its passing turns say so in words of their own, one of
    :data:`NO_UNSUPPORTED`), the other questions give one for every turn."""
    dumps = [score.model_dump() for score in scores]
    for dump in dumps:
        if dump["metric"] == "hallucination" and dump["source"] == "judge" and dump["verdict"] in ("met", "n/a"):
            dump["reason"] = "(a passing turn)"
    return dumps


#: A golden case: no goal question, so the hallucination question is asked on its own (``hallucination_batch``).
GOLDEN = {"kind": "golden", "name": "order status", "turns": [{"user": "question 1"}]}


def score(
    judge: Judge,
    judging: JudgingSettings = BATCH,
    transcript: Transcript | None = None,
    spec: dict[str, Any] = SCENARIO,
) -> list[Score]:
    context = ScoringContext(judging=judging)
    return asyncio.run(score_transcript(case(spec), transcript or conversation(), context, judge.judge))


def hallucinations(scores: list[Score]) -> list[Score]:
    return [s for s in scores if s.metric == "hallucination"]


# -- how many requests ------------------------------------------------------------------------------------------


def test_one_judge_request_per_conversation_and_one_per_turn_with_the_switch_off() -> None:
    """The goal question rides in the hallucination request (``conversation_review``); a golden case, with no
    goal, asks the batched hallucination question alone."""
    batched, separate, golden = Judge(), Judge(), Judge()
    score(batched)
    score(separate, PER_TURN)
    score(golden, spec=GOLDEN)
    assert [name for name, _ in batched.asked] == ["conversation_review"]
    assert (separate.count("hallucination_batch"), separate.count("hallucination")) == (0, TURNS)
    assert separate.count("goal_satisfaction") == 1
    assert [name for name, _ in golden.asked] == ["hallucination_batch"]
    assert len(batched.script.requests) == 1
    assert len(separate.script.requests) == TURNS + 1


def test_the_scores_are_the_same_in_both_modes() -> None:
    batched, separate = score(Judge()), score(Judge(), PER_TURN)
    assert dumped(batched) == dumped(separate)
    assert {s.reason for s in hallucinations(batched) if s.verdict != "not_met"} == set(NO_UNSUPPORTED.values())
    assert [(s.check, s.verdict, s.value) for s in hallucinations(batched)] == [
        ("turn 1: hallucination", "met", 0),
        ("turn 2: hallucination", "n/a", None),
        ("turn 3: hallucination", "not_met", 1),
        ("turn 4: hallucination", "met", 0),
        ("turn 5: hallucination", "n/a", None),
        ("turn 6: hallucination", "not_met", 1),
    ]


@pytest.mark.parametrize("satisfied", [True, False], ids=["passing", "failing"])
def test_a_six_turn_simulation_sends_thirteen_requests(tmp_path: Path, satisfied: bool) -> None:
    """The peers bench's workload through the runner: LLM user 6, agent 6, one judge request with the goal and
    hallucination questions; a failing conversation too, its user's invented-fact question asked in the same
    request. Asked apart (``batch: false``): the goal, one hallucination request per turn, and the user's
    question after a failure."""
    (tmp_path / ".git").mkdir()
    agent = "agent:\n  type: litellm\n  model: fake/agent\n  instructions: You answer order questions.\n"
    cases = "".join(
        f"  - {key}: {value}\n" if key == "kind" else f"    {key}: {value}\n" for key, value in SCENARIO.items()
    )
    for batch in (True, False):
        suite = tmp_path / f"suite_{batch}.yaml"
        judging = "" if batch else "judging:\n  batch: false\n"
        suite.write_text(f"name: s\n{agent}{judging}cases:\n{cases}", encoding="utf-8")
        loaded = load_suite(suite)
        options = RunSettings(user_model="fake/user", judge_model="fake/judge", cache=False)
        judge = Judge(satisfied=satisfied, verdicts=lambda turn: verdict(1))  # every turn supported
        judge.script.enqueue("user", {"message": "When does A1 arrive?", "done": False, "reason": "asking"}, times=9)
        judge.script.enqueue("agent", *[said(n) for n in range(1, TURNS + 1)])
        llm = LLMClient(model_roles(loaded, options), fake_script=judge.script, sleep=no_wait)
        found = find_case(loaded, str(SCENARIO["name"]))

        async def go() -> Any:
            transcript = await run_case(loaded, found, persona=None, llm=llm, options=options)  # noqa: B023
            return await score_case(loaded, found, transcript, llm=llm, options=options)  # noqa: B023

        result = asyncio.run(go())
        chat_roles = (Role.USER, Role.AGENT, Role.JUDGE)
        by_role = {role: sum(1 for r in judge.script.requests if r.role == role) for role in chat_roles}
        judged = 1 if batch else 1 + TURNS + (not satisfied)
        assert by_role == {Role.USER: TURNS, Role.AGENT: TURNS, Role.JUDGE: judged}, batch
        assert len(hallucinations(result.scores)) == TURNS
        assert (result.outcome == "pass") == satisfied  # failing: user_error (the user repeats itself)
        if batch:
            (prompt,) = judge.prompts("conversation_review_fidelity")
            assert (batch_numbers(prompt), user_numbers(prompt)) == ([1, 2, 3, 4, 5, 6], [1, 2, 3, 4, 5, 6])
        else:
            assert judge.count("user_fidelity") == (not satisfied)


# -- the batched question ---------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("spec", "asked", "numbers"),
    [
        (GOLDEN, "hallucination_batch", "The turns to judge: 1, 2, 3."),
        (SCENARIO, "conversation_review", "The agent turns to judge: 1, 2, 3."),
    ],
    ids=["batch", "review"],
)
def test_the_batched_prompt_sends_the_shared_context_once_and_marks_the_turns(
    spec: dict[str, Any], asked: str, numbers: str
) -> None:
    judge = Judge()
    transcript = conversation(3).model_copy(update={"session_parameters": {"customer_id": 7}})
    transcript.events.append(UserEvent(turn=4, text="a later message", source="scripted"))
    context = ScoringContext(instructions="You are the shop's order assistant.")
    asyncio.run(score_transcript(case(spec), transcript, context, judge.judge))
    (prompt,) = judge.prompts(asked)
    assert prompt.count("AGENT INSTRUCTIONS: You are the shop's order assistant.") == 1
    assert prompt.count("SESSION VARIABLES: {'customer_id': 7}") == 1
    assert prompt.count('{"turn": 1, "role": "user", "text": "question 1"}') == 1
    assert batch_numbers(prompt) == [1, 2, 3]
    assert numbers in prompt
    if asked == "conversation_review":  # what differs per conversation comes last, after the instructions
        assert prompt.rstrip().splitlines()[-1].startswith(numbers)
    first_turn = events_in(prompt)[1:3]
    assert first_turn == [
        {"turn": 1, "role": "tool_call", "name": "lookup_order", "arguments": {}, "status": "faked",
         "result": {"eta": "5 May"}, "judge": True},
        {"turn": 1, "role": "agent", "text": said(1), "judge": True},
    ]  # fmt: skip
    # Nothing after the last judged turn is evidence for a turn; the goal is judged on the whole conversation.
    assert ("a later message" in prompt) == (asked == "conversation_review")


@pytest.mark.parametrize(("spec", "asked"), [(GOLDEN, "hallucination_batch"), (SCENARIO, "conversation_review")])
def test_a_turn_flagged_without_a_model_is_not_sent_and_keeps_its_place(spec: dict[str, Any], asked: str) -> None:
    judge = Judge()
    events = conversation(3).events
    events[3] = AgentEvent(turn=2, messages=["I've checked your order: it is on its way."])
    scores = hallucinations(score(judge, transcript=conversation(3).model_copy(update={"events": events}), spec=spec))
    assert [(s.turn, s.source) for s in scores] == [(1, "judge"), (2, "deterministic"), (3, "judge")]
    (prompt,) = judge.prompts(asked)
    assert batch_numbers(prompt) == [1, 3]
    # Still part of the conversation, not judged.
    assert {"turn": 2, "role": "agent", "text": "I've checked your order: it is on its way."} in events_in(prompt)


def test_a_turn_the_reply_leaves_out_is_unsure() -> None:
    judge = Judge(batch=lambda numbers: {"turns": [{"turn": n, **verdict(n)} for n in numbers if n != 4]})
    scores = hallucinations(score(judge))
    left_out = scores[3]
    assert (left_out.turn, left_out.verdict, left_out.reason, left_out.required) == (4, "unsure", LEFT_OUT, True)
    assert [s.verdict for s in scores] == ["met", "n/a", "not_met", "unsure", "n/a", "not_met"]
    assert case_outcome(conversation(), score(judge))[0] == "fail"  # turns 3 and 6 still fail it


def test_contradicting_verdicts_for_one_turn_are_unsure() -> None:
    def twice(numbers: list[int]) -> dict[str, Any]:
        verdicts = [{"turn": n, **verdict(n)} for n in numbers]
        return {"turns": [*verdicts, {"turn": 1, **verdict(3), "claim": said(1)}]}

    scores = hallucinations(score(Judge(batch=twice)))
    assert scores[0].verdict == "unsure"
    assert scores[0].reason.startswith("the judge gave this turn contradicting verdicts: supported")
    assert [s.verdict for s in scores[1:]] == ["n/a", "not_met", "met", "n/a", "not_met"]


def test_a_quote_from_another_turn_makes_only_that_turn_unsure() -> None:
    def misquoted(numbers: list[int]) -> dict[str, Any]:
        verdicts = [{"turn": n, **verdict(n)} for n in numbers]
        verdicts[2]["claim"] = said(6)  # turn 3's verdict quotes turn 6
        return {"turns": verdicts}

    scores = hallucinations(score(Judge(batch=misquoted)))
    assert scores[2].verdict == "unsure"
    assert scores[2].reason.startswith(MISQUOTED)
    assert scores[2].raw is not None
    assert [s.verdict for i, s in enumerate(scores) if i != 2] == ["met", "n/a", "met", "n/a", "not_met"]


def test_a_failing_judge_is_an_error_on_every_question_and_the_case_is_error() -> None:
    roles = ModelRoles.model_validate({"judge": "fake/judge"})
    outcomes = []
    for judging in (BATCH, PER_TURN):
        script = FakeScript().enqueue("judge", fake_auth_error(), times=TURNS + 1)
        judge = LLMJudge(LLMClient(roles, fake_script=script, sleep=no_wait))
        context = ScoringContext(judging=judging)
        scores = asyncio.run(score_transcript(case(SCENARIO), conversation(), context, judge))
        assert {(s.verdict, s.reason.startswith("the judge model failed")) for s in hallucinations(scores)} == {
            ("error", True)
        }
        outcome, reasons = case_outcome(conversation(), scores)
        outcomes.append((outcome, [reason.split(":")[0] for reason in reasons][:1]))
        goal = [s for s in scores if s.metric == "goal_satisfaction"]
        assert [(s.verdict, s.reason.startswith("the judge model failed")) for s in goal] == [("error", True)]
        assert len(script.requests) == (1 if judging.batch else TURNS + 1)
    assert outcomes[0] == outcomes[1]
    assert outcomes[0][0] == "error"


@pytest.mark.parametrize(("spec", "asked"), [(GOLDEN, "hallucination_batch"), (SCENARIO, "conversation_review")])
def test_a_malformed_batched_reply_is_asked_again(spec: dict[str, Any], asked: str) -> None:
    replies = iter([{"turns": [{"turn": 1, "verdict": "unsupported", "claim": "", "reason": "r"}]}])

    def first_bad(numbers: list[int]) -> dict[str, Any]:
        return next(replies, {"turns": [{"turn": n, **verdict(n)} for n in numbers]})

    judge = Judge(batch=first_bad)
    scores = hallucinations(score(judge, spec=spec))
    assert judge.count(asked) == 2
    assert [s.verdict for s in scores] == ["met", "n/a", "not_met", "met", "n/a", "not_met"]


def test_one_turn_is_asked_with_the_per_turn_question_or_in_the_review() -> None:
    golden, scenario = Judge(), Judge()
    score(golden, transcript=conversation(1), spec=GOLDEN)
    score(scenario, transcript=conversation(1))
    assert [name for name, _ in golden.asked] == ["hallucination"]
    assert [name for name, _ in scenario.asked] == ["conversation_review"]  # one request instead of two
    assert dumped(score(Judge(), transcript=conversation(1))) == dumped(
        score(Judge(), PER_TURN, transcript=conversation(1))
    )


def test_an_override_of_the_per_turn_prompt_alone_keeps_one_request_per_turn() -> None:
    judge = Judge()
    # Written for the prompts before fencing: its own tags now hold the fenced sections, so it still fences.
    override = "You check one turn (house rules).\n{context}\n<agent_turn>\n{turn}\n</agent_turn>"
    judge.judge = LLMJudge(judge.client, prompts={"hallucination": override})
    scores = score(judge)
    assert judge.count("hallucination") == TURNS
    assert all("(house rules)" in prompt for prompt in judge.prompts("hallucination"))
    assert dumped(scores) == dumped(score(Judge()))


# -- the simulated user's invented-fact question in the same request ----------------------------------------------


def with_llm_user(transcript: Transcript) -> Transcript:
    events = [e.model_copy(update={"source": "llm"}) if isinstance(e, UserEvent) else e for e in transcript.events]
    return transcript.model_copy(update={"events": events})


BATCH_OVERRIDE = "You check the turns (house rules).\n{context}\n{conversation}\nJudge {turns}."
USER_OVERRIDE = "A language model played a customer (house rules).\n{brief}\n{conversation}\nJudge {turns}."
BOTH_OVERRIDE = "You review one conversation (house rules).\n{context}\n{brief}\n{conversation}\n{turns} / {user_turns}"


@pytest.mark.parametrize(
    ("prompts", "asked"),
    [
        ({}, "conversation_review_fidelity"),
        ({"user_fidelity": USER_OVERRIDE}, "conversation_review"),
        ({"hallucination_batch": BATCH_OVERRIDE}, "hallucination_batch"),
        (
            {"user_fidelity": USER_OVERRIDE, "hallucination_fidelity_batch": BOTH_OVERRIDE},
            "hallucination_fidelity_batch",
        ),
    ],
    ids=["built-in", "user-reworded", "batch-reworded", "combined-reworded"],
)
def test_the_users_question_rides_in_the_batch_unless_the_suite_reworded_one_part(
    prompts: dict[str, str], asked: str
) -> None:
    judge = Judge()
    judge.judge = LLMJudge(judge.client, prompts=prompts)
    scores = score(judge, transcript=with_llm_user(conversation()))
    (prompt,) = judge.prompts(asked)
    assert user_numbers(prompt) == ([1, 2, 3, 4, 5, 6] if asked.endswith(("fidelity_batch", "fidelity")) else [])
    assert ("(house rules)" in prompt) == (asked in {name for name in prompts if name != "user_fidelity"})
    assert judge.count("user_fidelity") == 0  # asked (or not) by the fidelity check after the outcome
    # The per-turn verdicts are the same either way.
    assert dumped(hallucinations(scores)) == dumped(hallucinations(score(Judge())))


def test_the_users_question_is_not_asked_when_a_claim_of_tool_use_already_failed_the_case() -> None:
    transcript = with_llm_user(conversation(3))
    claim = AgentEvent(turn=2, messages=["I've checked your order: it arrives on 2 May."])
    events = [claim if isinstance(e, AgentEvent) and e.turn == 2 else e for e in transcript.events]
    for fail_on_hallucination, asked in ((True, "conversation_review"), (False, "conversation_review_fidelity")):
        judge = Judge()
        context = ScoringContext(thresholds=Thresholds(fail_on_hallucination=fail_on_hallucination))
        scores = asyncio.run(
            score_transcript(case(SCENARIO), transcript.model_copy(update={"events": events}), context, judge.judge)
        )
        assert [(s.turn, s.source) for s in hallucinations(scores)][1] == (2, "deterministic")
        (prompt,) = judge.prompts(asked)  # a hallucination is never the user's: its question would not be used
        assert batch_numbers(prompt) == [1, 3]


def test_without_a_judge_model_nothing_is_asked() -> None:
    scores = asyncio.run(score_transcript(case(SCENARIO), conversation(), ScoringContext(), LLMJudge(None)))
    assert {(s.verdict, s.required) for s in hallucinations(scores)} == {("unsure", False)}


# -- at once ----------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("judging", [BATCH, PER_TURN], ids=["batch", "per-turn"])
def test_the_judge_calls_of_a_conversation_are_in_flight_at_once(judging: JudgingSettings) -> None:
    judge = Judge(delay=0.02)
    scores = score(judge, judging)
    # The hallucination questions and the goal together; batched, they are one request.
    assert judge.most_in_flight == 1 if judging.batch else judge.most_in_flight >= 2
    assert [s.metric for s in scores][-1] == "goal_satisfaction"  # stored in the same order as before
    assert [s.turn for s in hallucinations(scores)] == list(range(1, TURNS + 1))


def test_a_raised_judge_error_propagates_as_it_is_and_cancels_the_rest() -> None:
    cancelled: list[str] = []

    async def slow() -> str:
        try:
            await asyncio.sleep(10)
        except asyncio.CancelledError:
            cancelled.append("slow")
            raise
        return "never"

    async def fails() -> str:
        await asyncio.sleep(0)
        raise JudgeError("judge prompt 'x' could not be filled")

    with pytest.raises(JudgeError, match="could not be filled"):
        asyncio.run(gather_in_order([slow(), fails()]))
    assert cancelled == ["slow"]


def test_gather_in_order_keeps_the_order_given() -> None:
    async def after(delay: float, value: int) -> int:
        await asyncio.sleep(delay)
        return value

    assert asyncio.run(gather_in_order([after(0.02, 1), after(0.0, 2), after(0.01, 3)])) == [1, 2, 3]


# -- the goal question in the same request (conversation_review) --------------------------------------------------


def goal_score(scores: list[Score]) -> Score:
    (found,) = [s for s in scores if s.metric == "goal_satisfaction"]
    return found


@pytest.mark.parametrize(
    ("goal", "verdict"),
    [
        ({"satisfied": True, "reason": "shipped", "quote": "your order A1 was refunded"}, "unsure"),  # not said
        ({"satisfied": True, "reason": "shipped", "quote": ""}, "unsure"),  # a pass without evidence
        ({"satisfied": True, "reason": "shipped", "quote": "question 1"}, "unsure"),  # the user's words
        ({"satisfied": False, "reason": "no date"}, "not_met"),
        (SATISFIED, "met"),
    ],
    ids=["misquoted", "no-quote", "user-quoted", "not-satisfied", "satisfied"],
)
def test_the_reviewed_goal_is_held_to_the_same_evidence_as_the_goal_question(
    goal: dict[str, Any], verdict: str
) -> None:
    judge = Judge()
    judge.goal = lambda: goal  # type: ignore[method-assign]
    reviewed, separate = score(judge), score(Judge(satisfied=goal is SATISFIED), PER_TURN)
    assert [name for name, _ in judge.asked] == ["conversation_review"]
    assert goal_score(reviewed).verdict == verdict
    if goal in (SATISFIED,):
        assert goal_score(reviewed).model_dump() == goal_score(separate).model_dump()


def test_a_review_without_its_goal_part_is_asked_again_then_every_question_is_an_error() -> None:
    judge = Judge(batch=lambda numbers: {"turns": [{"turn": n, **verdict(n)} for n in numbers]})
    judge.goal = lambda: None  # type: ignore[method-assign, assignment, return-value]
    scores = score(judge)
    assert judge.count("conversation_review") > 1  # re-asked: the reply does not fit the schema
    assert goal_score(scores).verdict == "error"
    assert {s.verdict for s in hallucinations(scores)} == {"error"}
    assert case_outcome(conversation(), scores)[0] == "error"


def test_a_replay_that_recorded_the_questions_apart_asks_them_apart() -> None:
    """A recording made when the goal and hallucination questions were separate requests has no answer for the
    review: it is not asked, and the questions go out as they were recorded (and are answered from it)."""

    class RecordedApart:
        """A recording of the questions asked apart: no answer for the review (and it may not be sent)."""

        def answer(self, role: Role, record: dict[str, Any], fingerprint: str) -> Completion | None:
            if str(record["messages"][0]["content"]).startswith("You judge one finished conversation"):
                raise UnrecordedRequest("not judged: this judge request changed since the recording")
            return None  # answered by the fake judge, as the recording would answer it

    live, judge = Judge(), Judge()
    score(live)
    assert [name for name, _ in live.asked] == ["conversation_review"]
    with replaying(RecordedApart()):
        scores = score(judge)
    assert sorted(name for name, _ in judge.asked) == ["goal_satisfaction", "hallucination_batch"]
    assert [s.model_dump() for s in scores] == [s.model_dump() for s in score(Judge(), PER_TURN)]
