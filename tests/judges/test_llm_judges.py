"""The LLM judge questions, all offline through the fake provider."""

from __future__ import annotations

import re
import string
from importlib import resources
from typing import Any

import pytest

from simulator.errors import JudgeError
from simulator.judges.llm_judges import (
    MISQUOTED,
    PROMPT_PLACEHOLDERS,
    LLMJudge,
    builtin_prompt,
    check_prompt,
    quote_in,
)
from simulator.judges.spec_review import SPEC_REVIEW_PROMPT
from simulator.judges.step import NO_JUDGE, STEP_PROMPT
from simulator.llm import FakeScript, LLMClient, StaticReply, fake_auth_error
from simulator.models import ModelRoles, ReferenceAnswerSpec
from simulator.models.scores import Score
from simulator.models.transcript import AgentEvent, ToolCallRecord, TranscriptEvent, UserEvent
from tests.factories import events_in, run, section
from tests.factories import no_sleep as no_wait

QUESTION = "When will order A1 arrive, and can I return it?"
ANSWER = "Order A1 arrives on 5 May. You can return it within 90 days, and shipping is free."
REFERENCE = ReferenceAnswerSpec(answer="Order A1 arrives on 5 May; returns are accepted within 30 days.")
CLAIMS = ["Returns are accepted for 90 days.", "Shipping costs nothing.", "The order was already delivered."]
TURN = AgentEvent(
    turn=2,
    step=1,
    messages=["Your order A1 was shipped on 3 May and arrives on 5 May."],
    tool_calls=[
        ToolCallRecord(
            id="c1", name="lookup_order", arguments={"order_id": "A1"}, status="faked", result={"shipped": "3 May"}
        )
    ],
    variables={"order_status": "shipped"},
)
CONVERSATION: list[TranscriptEvent] = [
    UserEvent(turn=1, text="Where is A1?", source="scripted"),
    AgentEvent(turn=1, messages=["It arrives on 5 May."]),
]
#: The conversation as the judge reads it: one JSON event per line.
CONVERSATION_LINES = (
    '{"turn": 1, "role": "user", "text": "Where is A1?"}\n{"turn": 1, "role": "agent", "text": "It arrives on 5 May."}'
)


def client(script: FakeScript) -> LLMClient:
    return LLMClient(ModelRoles.model_validate({"judge": "fake/judge"}), fake_script=script, sleep=no_wait)


def judge(script: FakeScript, **prompts: str) -> LLMJudge:
    return LLMJudge(client(script), prompts=prompts)


def prompt_of(script: FakeScript, index: int = 0) -> str:
    content: str = script.requests[index].messages[0]["content"]
    return content


def reference(judge_: LLMJudge, spec: ReferenceAnswerSpec = REFERENCE, threshold: float = 70) -> list[Score]:
    return run(judge_.reference_answer(question=QUESTION, answer=ANSWER, reference=spec, threshold=threshold, turn=3))


def semantic(judge_: LLMJudge, expected: str, actual: str, threshold: float = 3) -> Score:
    return run(judge_.semantic_match(expected=expected, actual=actual, context=CONVERSATION_LINES, threshold=threshold))


# -- reference answer ----------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("reply", "verdict"),
    [
        ({"score": 85, "verdict": "pass", "reason": "Same date and return period."}, "met"),
        ({"score": 70, "verdict": "pass", "reason": "Right at the mark."}, "met"),
        ({"score": 40, "verdict": "fail", "reason": "The return period differs."}, "not_met"),
        ({"score": 50, "verdict": "unsure", "reason": "The answer is cut off."}, "unsure"),
    ],
)
def test_reference_answer_scores_the_core_answer(reply: dict[str, Any], verdict: str) -> None:
    script = FakeScript().enqueue("judge", reply)
    (score,) = reference(judge(script))
    assert (score.metric, score.source, score.verdict) == ("reference_answer", "judge", verdict)
    assert (score.value, score.threshold, score.turn, score.reason) == (reply["score"], 70, 3, reply["reason"])
    prompt = prompt_of(script)
    assert section(prompt, "question") == QUESTION
    assert section(prompt, "agent_answer") == ANSWER
    assert section(prompt, "reference_answer") == REFERENCE.answer
    assert "The pass mark is 70." in prompt


@pytest.mark.parametrize(
    ("reply", "said"),
    [
        (
            {"score": 55, "verdict": "pass", "reason": "Close enough."},
            "it said pass but scored 55, below the pass mark 70",
        ),
        (
            {"score": 70, "verdict": "fail", "reason": "Wrong period."},
            "it said fail but scored 70, at or above the pass mark 70",
        ),
    ],
)
def test_a_contradictory_reference_verdict_is_unsure(reply: dict[str, Any], said: str) -> None:
    script = FakeScript().enqueue("judge", reply)
    (score,) = reference(judge(script))
    assert score.verdict == "unsure"
    assert score.value == reply["score"]
    assert score.reason == f"the judge contradicted itself: {said}; its reason: {reply['reason']}"


def test_side_claims_are_asked_one_per_request() -> None:
    def answer(messages: list[dict[str, Any]]) -> StaticReply:
        prompt = messages[0]["content"]
        if "<claim-" not in prompt:
            return {"score": 80, "verdict": "pass", "reason": "Same arrival date."}
        if CLAIMS[0] in prompt:
            return {"stated": "yes", "quote": "within 90 days", "reason": "It gives 90 days."}
        if CLAIMS[1] in prompt:
            return {"stated": "no", "quote": "", "reason": "Shipping costs are not mentioned."}
        return {"stated": "unsure", "quote": "", "reason": "Unclear."}

    script = FakeScript().enqueue("judge", answer, times=4)
    spec = ReferenceAnswerSpec(answer=REFERENCE.answer, must_not_state=CLAIMS)
    scores = reference(judge(script), spec)

    assert len(script.requests) == 1 + len(CLAIMS)
    named = [[claim for claim in CLAIMS if claim in prompt_of(script, i)] for i in range(len(script.requests))]
    assert sorted(named) == sorted([[], *([claim] for claim in CLAIMS)])  # the core request names none
    for index in range(len(script.requests)):
        assert QUESTION in prompt_of(script, index)
        assert ANSWER in prompt_of(script, index)

    assert [s.metric for s in scores] == ["reference_answer", "side_claim", "side_claim", "side_claim"]
    core, stated, absent, unclear = scores
    assert core.verdict == "met"
    assert [s.check for s in scores[1:]] == [f"must not state: {claim}" for claim in CLAIMS]
    assert (stated.verdict, stated.required, stated.turn) == ("not_met", True, 3)
    assert stated.reason == "the answer states it: “within 90 days”: It gives 90 days."
    assert (absent.verdict, unclear.verdict) == ("met", "unsure")


def test_a_stated_side_claim_without_a_quote_is_asked_again() -> None:
    # The core and side questions run concurrently: answer by what is asked, not by arrival order.
    side_replies = [
        {"stated": "yes", "quote": " ", "reason": "It does."},
        {"stated": "yes", "quote": "90 days", "reason": "It does."},
    ]

    def answer(messages: list[dict[str, Any]]) -> StaticReply:
        if "<claim-" in messages[0]["content"]:
            return side_replies.pop(0)
        return {"score": 90, "verdict": "pass", "reason": "ok"}

    script = FakeScript().enqueue("judge", answer, times=3)
    spec = ReferenceAnswerSpec(answer=REFERENCE.answer, must_not_state=CLAIMS[:1])
    core, side = reference(judge(script), spec)
    assert (core.verdict, side.verdict) == ("met", "not_met")
    assert len(script.requests) == 3
    retry = [r for r in script.requests if len(r.messages) > 1]
    assert len(retry) == 1
    assert "quote must give the words" in retry[0].messages[-1]["content"]


# -- the judge's quotes are checked against the judged text -------------------------------------------------

QUOTES = [
    # (quote, text, found)
    pytest.param("within 90 days", ANSWER, True, id="verbatim"),
    pytest.param("  You CAN return it\nwithin 90   days ", ANSWER, True, id="case and whitespace"),
    pytest.param("“within 90 days.”", ANSWER, True, id="surrounding quotation marks and punctuation"),
    pytest.param("you can’t return it", "Sorry, you can't return it.", True, id="typographic apostrophe"),
    pytest.param("Order A1 arrives … within 90 days", ANSWER, True, id="an ellipsis for left-out words"),
    pytest.param("return it [...] arrives on 5 May", ANSWER, False, id="parts around an ellipsis out of order"),
    pytest.param("returns are accepted for 90 days", ANSWER, False, id="a paraphrase"),
    pytest.param("within 30 days", ANSWER, False, id="another number"),
    pytest.param('He said \\"hi\\"\\nthen', 'He said "hi"\nthen left.', True, id="copied with JSON's escapes"),
    pytest.param('He said \\"bye\\"', 'He said "hi".', False, id="escaped, and not in the text"),
    pytest.param("", ANSWER, True, id="nothing quoted"),
    pytest.param(" ... ", ANSWER, True, id="only an ellipsis: nothing quoted"),
]


@pytest.mark.parametrize(("quote", "text", "found"), QUOTES)
def test_quote_in(quote: str, text: str, found: bool) -> None:
    assert quote_in(quote, text) is found


SIDE_QUOTES = [
    # (the judge's reply about CLAIMS[0], verdict, reason)
    pytest.param(
        {"stated": "yes", "quote": "Within 90  days", "reason": "It gives 90 days."},
        "not_met",
        "the answer states it: “Within 90  days”: It gives 90 days.",
        id="stated, quoted from the answer",
    ),
    pytest.param(
        {"stated": "yes", "quote": "returns are accepted for 90 days", "reason": "It gives 90 days."},
        "unsure",
        f"{MISQUOTED}: “returns are accepted for 90 days”; it said yes: It gives 90 days.",
        id="stated, quoting words the answer does not have",
    ),
    pytest.param(
        {"stated": "no", "quote": "returns within 30 days", "reason": "It says 30 days."},
        "unsure",
        f"{MISQUOTED}: “returns within 30 days”; it said no: It says 30 days.",
        id="not stated, quoting words the answer does not have",
    ),
    pytest.param(
        {"stated": "no", "quote": "", "reason": "Not mentioned."}, "met", "Not mentioned.", id="not stated, no quote"
    ),
]


@pytest.mark.parametrize(("reply", "verdict", "reason"), SIDE_QUOTES)
def test_a_side_claim_quote_must_be_in_the_answer(reply: dict[str, Any], verdict: str, reason: str) -> None:
    def answer(messages: list[dict[str, Any]]) -> StaticReply:
        if "<claim-" in messages[0]["content"]:
            return reply
        return {"score": 90, "verdict": "pass", "reason": "ok"}

    script = FakeScript().enqueue("judge", answer, times=2)
    _, side = reference(judge(script), ReferenceAnswerSpec(answer=REFERENCE.answer, must_not_state=CLAIMS[:1]))
    assert (side.metric, side.source, side.verdict, side.reason) == ("side_claim", "judge", verdict, reason)
    assert (side.raw is not None) is (verdict == "unsure")  # the reply that was not trusted is kept


HALLUCINATION_QUOTES = [
    # (the judge's reply about TURN, verdict, reason)
    pytest.param(
        {"verdict": "unsupported", "claim": "arrives on 5 may", "reason": "No date."},
        "not_met",
        "unsupported claim: “arrives on 5 may”: No date.",
        id="unsupported, quoted from the turn",
    ),
    pytest.param(
        {"verdict": "unsupported", "claim": "arrives on Monday", "reason": "No date."},
        "unsure",
        f"{MISQUOTED}: “arrives on Monday”; it said unsupported: No date.",
        id="unsupported, quoting words the turn does not have",
    ),
    pytest.param(
        {"verdict": "unsupported", "claim": '{"shipped": "3 May"}', "reason": "r"},
        "unsure",
        f'{MISQUOTED}: “{{"shipped": "3 May"}}”; it said unsupported: r',
        id="quoting a tool result, not the agent's message",
    ),
    pytest.param(
        {"verdict": "supported", "claim": "shipped on 4 May", "reason": "r"},
        "unsure",
        f"{MISQUOTED}: “shipped on 4 May”; it said supported: r",
        id="supported, quoting words the turn does not have",
    ),
]


@pytest.mark.parametrize(("reply", "verdict", "reason"), HALLUCINATION_QUOTES)
def test_a_hallucination_claim_must_be_in_the_turn(reply: dict[str, Any], verdict: str, reason: str) -> None:
    score = run(judge(FakeScript().enqueue("judge", reply)).hallucination(turn=TURN, context=""))
    assert (score.metric, score.source, score.verdict, score.reason, score.required) == (
        "hallucination",
        "judge",
        verdict,
        reason,
        True,
    )
    assert score.value == (1 if verdict == "not_met" else None)


def test_the_prompts_ask_for_exact_quotes() -> None:
    side_claim = _without_header(builtin_prompt("side_claim"))
    hallucination = _without_header(builtin_prompt("hallucination"))
    assert "copied exactly from the agent's answer" in side_claim
    assert "copied exactly from the agent's messages" in hallucination


def _without_header(text: str) -> str:
    return re.sub(r"\A\s*<!--.*?-->\s*", "", text, flags=re.DOTALL)


# -- semantic match ------------------------------------------------------------------------------------------


@pytest.mark.parametrize(("value", "verdict"), [(4, "met"), (3, "met"), (2, "not_met"), (0, "not_met")])
def test_semantic_match_holds_the_score_to_the_threshold(value: int, verdict: str) -> None:
    script = FakeScript().enqueue("judge", {"score": value, "reason": "compared"})
    score = semantic(judge(script), "Your order arrives on 5 May.", "It will be there on May 5th.")
    assert (score.metric, score.source, score.verdict, score.value, score.threshold) == (
        "semantic_match",
        "judge",
        verdict,
        value,
        3,
    )
    prompt = prompt_of(script)
    assert section(prompt, "expected_message") == "Your order arrives on 5 May."
    assert section(prompt, "actual_message") == "It will be there on May 5th."
    assert section(prompt, "conversation_before") == CONVERSATION_LINES


def test_semantic_match_of_the_same_text_asks_no_model() -> None:
    script = FakeScript()
    score = semantic(judge(script), "Your order  has SHIPPED.", "  your order has\nshipped. ", threshold=4)
    assert (score.verdict, score.value, score.source) == ("met", 4, "deterministic")
    assert script.requests == []
    assert semantic(LLMJudge(None), "Same.", "same.").verdict == "met"


def test_an_empty_reply_matches_nothing_without_a_model() -> None:
    script = FakeScript()
    score = semantic(judge(script), "Your order has shipped.", "  ")
    assert (score.verdict, score.value, score.source) == ("not_met", 0, "deterministic")
    assert script.requests == []


def test_malformed_judge_output_is_retried() -> None:
    script = FakeScript().enqueue("judge", "I think they match.", {"score": 9, "reason": "x"})
    script.enqueue("judge", {"score": 3, "reason": "Same date."})
    score = semantic(judge(script), "Arrives 5 May.", "It comes on May 5.")
    assert (score.verdict, score.value) == ("met", 3)
    assert len(script.requests) == 3
    assert "not valid JSON" in script.requests[1].messages[-1]["content"]
    assert "score" in script.requests[2].messages[-1]["content"]


def test_a_judge_that_stays_malformed_gives_error_with_its_raw_reply() -> None:
    script = FakeScript().enqueue("judge", "nope", "still nope", "never JSON")
    score = semantic(judge(script), "Arrives 5 May.", "It comes on May 5.")
    assert score.verdict == "error"
    assert score.value is None
    assert score.raw == "never JSON"
    assert score.reason.startswith("the judge model gave no usable reply: judge model 'fake/judge' gave no valid")


def test_a_failing_judge_model_gives_error_with_the_message() -> None:
    script = FakeScript().enqueue("judge", fake_auth_error())
    score = run(judge(script).expectation(text="The agent is polite.", conversation=CONVERSATION))
    assert score.verdict == "error"
    assert score.raw is None
    assert score.reason.startswith("the judge model failed: judge model 'fake/judge': the provider refused")


# -- hallucination -------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("reply", "verdict", "value", "reason"),
    [
        (
            {"verdict": "unsupported", "claim": "arrives on 5 May", "reason": "No tool gave a date."},
            "not_met",
            1,
            "unsupported claim: “arrives on 5 May”: No tool gave a date.",
        ),
        ({"verdict": "supported", "claim": "", "reason": "The lookup shows it."}, "met", 0, "The lookup shows it."),
        ({"verdict": "no_claim", "claim": "", "reason": "Only a greeting."}, "n/a", None, "Only a greeting."),
    ],
)
def test_hallucination(reply: dict[str, Any], verdict: str, value: int | None, reason: str) -> None:
    script = FakeScript().enqueue("judge", reply)
    score = run(judge(script).hallucination(turn=TURN, context="SESSION: customer_id=7"))
    assert (score.metric, score.source, score.verdict, score.value, score.reason) == (
        "hallucination",
        "judge",
        verdict,
        value,
        reason,
    )
    assert (score.turn, score.step, score.required) == (2, 1, True)
    prompt = prompt_of(script)
    assert section(prompt, "context") == "SESSION: customer_id=7"
    assert events_in(prompt, "agent_turn") == [
        {"turn": 2, "role": "tool_call", "name": "lookup_order", "arguments": {"order_id": "A1"}, "status": "faked",
         "result": {"shipped": "3 May"}},
        {"turn": 2, "role": "agent", "text": "Your order A1 was shipped on 3 May and arrives on 5 May."},
        {"turn": 2, "role": "variables", "values": {"order_status": "shipped"}},
    ]  # fmt: skip


def test_hallucination_required_follows_the_setting_and_blank_context_is_marked() -> None:
    script = FakeScript().enqueue("judge", {"verdict": "unsupported", "claim": "5 May", "reason": "r"})
    score = run(judge(script).hallucination(turn=TURN, context=" ", required=False))
    assert (score.verdict, score.required) == ("not_met", False)
    assert section(prompt_of(script), "context") == "(empty)"


def test_an_unsupported_verdict_must_quote_the_claim() -> None:
    script = FakeScript().enqueue("judge", {"verdict": "unsupported", "claim": "", "reason": "r"})
    script.enqueue("judge", {"verdict": "unsupported", "claim": "arrives on 5 May", "reason": "r"})
    assert run(judge(script).hallucination(turn=TURN, context="")).value == 1
    assert len(script.requests) == 2


def test_a_turn_without_a_message_makes_no_claim() -> None:
    script = FakeScript()
    silent = AgentEvent(turn=4, tool_calls=TURN.tool_calls)
    score = run(judge(script).hallucination(turn=silent, context="anything"))
    assert (score.verdict, score.value, score.source) == ("n/a", None, "deterministic")
    assert script.requests == []


# -- goal satisfaction and expectations ----------------------------------------------------------------------


@pytest.mark.parametrize(("satisfied", "verdict", "value"), [(True, "met", 1), (False, "not_met", 0)])
def test_goal_satisfaction(satisfied: bool, verdict: str, value: int) -> None:
    reply = {"satisfied": satisfied, "reason": "evidence", "quote": "arrives on 5 May" if satisfied else ""}
    script = FakeScript().enqueue("judge", reply)
    score = run(judge(script).goal_satisfaction(goal="Find out when A1 arrives.", conversation=CONVERSATION))
    assert (score.metric, score.source, score.verdict, score.value) == ("goal_satisfaction", "judge", verdict, value)
    assert section(prompt_of(script), "user_goal") == "Find out when A1 arrives."
    assert section(prompt_of(script), "conversation") == CONVERSATION_LINES


@pytest.mark.parametrize("goal", [None, "", "  "])
def test_no_goal_scores_minus_one_without_a_model(goal: str | None) -> None:
    script = FakeScript()
    score = run(judge(script).goal_satisfaction(goal=goal, conversation=CONVERSATION))
    assert (score.verdict, score.value, score.source) == ("n/a", -1, "deterministic")
    assert script.requests == []


@pytest.mark.parametrize("verdict", ["met", "not_met", "unsure"])
def test_expectation(verdict: str) -> None:
    script = FakeScript().enqueue("judge", {"verdict": verdict, "reason": "because", "quote": "It arrives on 5 May."})
    score = run(judge(script).expectation(text="The agent offers a refund.", conversation=CONVERSATION, step=2))
    assert (score.metric, score.source, score.verdict, score.reason, score.step) == (
        "expectation",
        "judge",
        verdict,
        "because",
        2,
    )
    assert score.check == "expectation: The agent offers a refund."
    assert section(prompt_of(script), "expectation") == "The agent offers a refund."


# -- without a judge model -----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "llm", [None, LLMClient(ModelRoles.model_validate({"user": "fake/user"}), fake_script=FakeScript())]
)
def test_without_a_judge_model_every_question_is_unsure(llm: LLMClient | None) -> None:
    j = LLMJudge(llm)
    assert not j.has_model
    spec = ReferenceAnswerSpec(answer=REFERENCE.answer, must_not_state=CLAIMS)
    scores = [
        *reference(j, spec),
        semantic(j, "Arrives 5 May.", "It comes on May 5."),
        run(j.hallucination(turn=TURN, context="")),
        run(j.goal_satisfaction(goal="Find A1.", conversation=CONVERSATION)),
        run(j.expectation(text="Polite.", conversation=CONVERSATION)),
    ]
    assert len(scores) == 8
    assert all((s.verdict, s.reason, s.value, s.source) == ("unsure", NO_JUDGE, None, "judge") for s in scores)


def test_has_model() -> None:
    assert judge(FakeScript()).has_model


# -- prompts -------------------------------------------------------------------------------------------------


def _fields(template: str) -> set[str]:
    return {field for _, field, _, _ in string.Formatter().parse(template) if field is not None}


def test_the_prompt_files_are_the_questions() -> None:
    folder = resources.files("simulator.judges").joinpath("prompts")
    names = {entry.name for entry in folder.iterdir() if entry.name.endswith(".md")}
    # The step judge's prompt is a file too (the engine asks it while the conversation runs; not overridable),
    # and so is spec lint's review prompt (`simulator lint --judge-model`).
    assert names == {f"{name}.md" for name in PROMPT_PLACEHOLDERS} | {f"{STEP_PROMPT}.md", f"{SPEC_REVIEW_PROMPT}.md"}


@pytest.mark.parametrize("name", sorted(PROMPT_PLACEHOLDERS))
def test_each_prompt_has_the_placeholders_its_question_fills(name: str) -> None:
    text = builtin_prompt(name)
    header = re.match(r"<!--(.*?)-->", text, re.DOTALL)
    assert header is not None, "the prompt file starts with a header comment"
    body = LLMJudge(None).prompt(name)
    assert "<!--" not in body
    assert _fields(body) == PROMPT_PLACEHOLDERS[name]
    for placeholder in PROMPT_PLACEHOLDERS[name]:
        assert f"{{{placeholder}}}" in header.group(1), f"{name}.md does not document {{{placeholder}}}"
    assert "Reply with JSON only" in body


def test_a_prompt_override_is_used() -> None:
    override = (
        "<!-- my prompt -->\nHOUSE RULES. Expectation: {expectation}\nConversation: {conversation}\n"
        'Answer {{"verdict": ..., "reason": ...}}'
    )
    script = FakeScript().enqueue("judge", {"verdict": "met", "reason": "ok", "quote": "arrives"})
    run(judge(script, expectation=override).expectation(text="Polite.", conversation=CONVERSATION))
    prompt = prompt_of(script)
    # Its placeholders are filled with the fenced sections, tags included: an override fences what it shows.
    token = re.search(r"<expectation-([0-9a-f]{16})>", prompt)
    assert token is not None
    assert prompt.startswith(
        f"HOUSE RULES. Expectation: <expectation-{token[1]}>\nPolite.\n</expectation-{token[1]}>\n"
        f"Conversation: <conversation-{token[1]}>\n{CONVERSATION_LINES}\n</conversation-{token[1]}>\n"
    )
    assert prompt.endswith('Answer {"verdict": ..., "reason": ...}')
    assert "my prompt" not in prompt


def test_an_override_with_an_unknown_placeholder_is_a_judge_error() -> None:
    with pytest.raises(JudgeError, match=r"judge prompt 'semantic_match' \(override\) uses the placeholder \{answer\}"):
        LLMJudge(None, prompts={"semantic_match": "Compare {expected} with {answer}."})


@pytest.mark.parametrize(
    ("name", "text", "message"),
    [
        ("semantic_matching", "{expected}", "there is no judge prompt 'semantic_matching'"),
        ("expectation", "<!-- only a header -->\n", "is empty"),
        ("expectation", 'Reply {"verdict": "met"}', "write literal braces as {{ and }}"),
        ("expectation", "Check {} in {conversation}", "positional placeholder {}"),
        ("expectation", "Check {expectation.upper} in {turn[0]}", "uses the placeholder {turn}"),
    ],
)
def test_bad_overrides_are_judge_errors(name: str, text: str, message: str) -> None:
    with pytest.raises(JudgeError, match=re.escape(message)):
        check_prompt(name, text)


def test_a_placeholder_only_found_when_filling_is_a_judge_error_not_a_key_error() -> None:
    # A nested field in a format spec passes the check; filling it must still fail cleanly.
    script = FakeScript()
    j = judge(script, expectation="{expectation:{width}} {conversation}")
    with pytest.raises(JudgeError, match=r"uses the placeholder \{width\}"):
        run(j.expectation(text="Polite.", conversation=CONVERSATION))
    assert script.requests == []
