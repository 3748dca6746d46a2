"""The failure digest: grouping by cause, normalised labels, examples, model suggestions through the fake."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any

import pytest

from simulator.analysis.digest import (
    MAX_EXAMPLES,
    NO_SUGGESTION_MODEL,
    SUGGESTIONS_HEADING,
    Digest,
    FailureGroup,
    build_digest,
    normalise_label,
    suggest_fixes,
)
from simulator.llm import FakeScript, LLMClient, Role, fake_auth_error
from simulator.models import ModelRoles
from simulator.models.run import StoredResult
from simulator.models.scores import CaseResult, Outcome, Score
from simulator.models.transcript import (
    AgentEvent,
    ErrorEvent,
    StepOutcome,
    StopReason,
    ToolCallRecord,
    Transcript,
    TranscriptEvent,
    UserEvent,
)
from simulator.reports.digest_report import render_digest_markdown, render_digest_text
from tests.factories import section

T0 = datetime(2026, 1, 1, tzinfo=UTC)
XSS = "<script>alert(1)</script>"


async def no_wait(delay: float) -> None:
    return None


def judge_client(script: FakeScript) -> LLMClient:
    return LLMClient(ModelRoles.model_validate({"judge": "fake/judge"}), fake_script=script, sleep=no_wait)


def user(turn: int, text: str, step: int | None = None) -> UserEvent:
    return UserEvent(turn=turn, step=step, text=text, source="scripted", at=T0)


def agent(turn: int, *messages: str, step: int | None = None, tools: Sequence[ToolCallRecord] = ()) -> AgentEvent:
    return AgentEvent(turn=turn, step=step, messages=list(messages), tool_calls=list(tools), at=T0)


def hallucination(turn: int, reason: str, step: int | None = None) -> Score:
    return Score(
        metric="hallucination",
        check=f"turn {turn}: hallucination",
        source="judge",
        verdict="not_met",
        value=1.0,
        reason=reason,
        turn=turn,
        step=step,
    )


def goal(index: int, label: str, verdict: str, reason: str = "") -> Score:
    return Score.model_validate(
        {
            "metric": "goal_achievement",
            "check": f"step {index + 1}: {label}",
            "source": "engine",
            "verdict": verdict,
            "value": 1.0 if verdict == "met" else 0.0,
            "reason": reason,
            "step": index,
        }
    )


def stored(
    case: str,
    outcome: Outcome,
    *,
    persona: str | None = None,
    repeat: int = 0,
    events: Sequence[TranscriptEvent] = (),
    steps: Sequence[StepOutcome] = (),
    scores: Sequence[Score] = (),
    reasons: Sequence[str] = (),
    stop_reason: StopReason = "completed",
    error: str | None = None,
) -> StoredResult:
    transcript = Transcript(
        case=case,
        kind="simulation",
        persona=persona,
        events=list(events),
        steps=list(steps),
        stop_reason=stop_reason,
        error=error,
        started_at=T0,
    )
    return StoredResult(
        run_id="run-1",
        key=f"0:{case}:{persona}:{repeat}",
        suite=0,
        case=case,
        persona=persona,
        repeat=repeat,
        outcome=outcome,
        finished=T0,
        result=CaseResult(
            case=case,
            kind="simulation",
            persona=persona,
            repeat=repeat,
            outcome=outcome,
            reasons=list(reasons),
            transcript=transcript,
            scores=list(scores),
        ),
    )


CLAIM = "unsupported claim: “your refund is processed”: no tool call refunded anything"


def refund(repeat: int, *, second_turn: bool = False) -> StoredResult:
    """Fails step 2 (give the order number; step 3 blocked by it) and hallucinates in turn 2."""
    scores = [
        goal(0, "greet", "met"),
        goal(1, "give the order number", "not_met", "the agent never asked for the order number"),
        goal(2, "confirm refund", "not_met", "blocked: step 2 was not completed"),
        hallucination(2, CLAIM, step=1),
    ]
    if second_turn:
        scores.append(hallucination(3, "unsupported claim: “it arrives on 5 May”: nothing says so", step=1))
    return stored(
        "refund",
        "fail",
        repeat=repeat,
        events=[
            user(1, "Hi, I want a refund", step=0),
            agent(1, "Hello! How can I help?", step=0),
            user(2, "It is for order A1", step=1),
            agent(
                2,
                "Your refund is processed.",
                step=1,
                tools=[ToolCallRecord(id="c1", name="lookup_order", status="faked", result={"id": "A1"})],
            ),
            user(3, "Great, anything else?", step=1),
            agent(3, "It arrives on 5 May.", "Bye!", step=1),
        ],
        steps=[
            StepOutcome(index=0, label="greet", status="complete"),
            StepOutcome(
                index=1, label="give the order number", status="incomplete", rationale="never asked for the number"
            ),
            StepOutcome(index=2, label="confirm refund", status="blocked", blocked_by=1),
        ],
        scores=scores,
        reasons=["step 2: give the order number: the agent never asked for the order number"],
    )


def exchange() -> StoredResult:
    """Fails the same step label (at another index) and hallucinates in turn 4."""
    return stored(
        "exchange",
        "fail",
        persona="impatient",
        events=[
            user(1, "I need to swap a jacket", step=0),
            agent(1, "Sure.", step=0),
            user(4, "Order B7, size M", step=0),
            agent(4, "Your refund is processed.", step=0),
        ],
        steps=[StepOutcome(index=0, label="give the order number", status="incomplete", rationale="not asked")],
        scores=[
            goal(0, "give the order number", "not_met", "the agent never asked for the order number"),
            hallucination(4, CLAIM, step=0),
        ],
    )


def agent_down(case: str, port: int) -> StoredResult:
    message = f"agent down: connection refused (http://localhost:{port}/chat)"
    return stored(
        case,
        "error",
        events=[user(1, f"hello from {case}"), ErrorEvent(turn=1, where="agent", message=message, at=T0)],
        stop_reason="error",
        error=message,
        reasons=[message],
    )


def unsure() -> StoredResult:
    return stored(
        "faq",
        "unsure",
        events=[user(1, "What are your hours?"), agent(1, "9 to 5.")],
        scores=[
            Score(
                metric="expectation",
                check="expectation: mentions the weekend hours",
                source="judge",
                verdict="unsure",
                reason="not judged",
            ),
            Score(metric="hallucination", check="turn 1: hallucination", source="judge", verdict="met", turn=1),
        ],
        reasons=["expectation: mentions the weekend hours: not judged"],
    )


def results() -> list[StoredResult]:
    return [
        refund(1, second_turn=True),
        agent_down("status", 8123),
        refund(0),
        stored("greeting", "pass", events=[user(1, "hi"), agent(1, "hello")]),
        unsure(),
        exchange(),
        agent_down("balance", 9000),
        stored("legacy", "fail", reasons=["turn 7: something odd happened to order ORD-4411"]),
    ]


@pytest.fixture
def digest() -> Digest:
    return build_digest(results())


def group(digest: Digest, kind: str, label: str, name: str) -> FailureGroup:
    return next(g for g in digest.groups if g.key == (kind, label, name))


def cases(g: FailureGroup) -> list[tuple[str, str | None, int]]:
    return [(ref.case, ref.persona, ref.repeat) for ref in g.cases]


# -- grouping -------------------------------------------------------------------------------------------------


def test_groups_are_sorted_by_count_then_occurrences(digest: Digest) -> None:
    assert (digest.results, digest.not_passed) == (8, 7)
    assert [(g.key, g.count, g.occurrences) for g in digest.groups] == [
        (("score", "hallucination", "hallucination"), 3, 4),
        (("step", "give the order number", "goal_achievement"), 3, 3),
        (("error", "agent down: connection refused (http://localhost:<n>/chat)", "error"), 2, 2),
        (("unsure", "expectation: mentions the weekend hours", "expectation"), 1, 1),
        (("reason", "something odd happened to order <id>", "reason"), 1, 1),
    ]
    assert digest.note is None
    assert all(g.suggestion is None for g in digest.groups)


def test_the_same_step_label_groups_across_cases(digest: Digest) -> None:
    steps = group(digest, "step", "give the order number", "goal_achievement")
    # Cases in (case, persona, repeat) order; step 2 of refund and step 1 of exchange share the label.
    assert cases(steps) == [("exchange", "impatient", 0), ("refund", None, 0), ("refund", None, 1)]
    assert [(r.text, r.count) for r in steps.reasons] == [("the agent never asked for the order number", 3)]
    # The blocked step that followed is not a cause of its own.
    assert not any(g.label == "confirm refund" for g in digest.groups)


def test_hallucination_on_different_turns_groups_together(digest: Digest) -> None:
    found = group(digest, "score", "hallucination", "hallucination")
    assert cases(found) == [("exchange", "impatient", 0), ("refund", None, 0), ("refund", None, 1)]
    assert [(r.text, r.count) for r in found.reasons] == [
        (CLAIM, 3),
        ("unsupported claim: “it arrives on 5 May”: nothing says so", 1),
    ]
    assert found.title() == "Check failed: hallucination (hallucination)"


def test_errors_group_by_their_normalised_message(digest: Digest) -> None:
    errors = group(digest, "error", "agent down: connection refused (http://localhost:<n>/chat)", "error")
    assert cases(errors) == [("balance", None, 0), ("status", None, 0)]
    # The two messages differ only in the port: counted as one reason, shown normalised.
    assert [(r.text, r.count) for r in errors.reasons] == [
        ("agent down: connection refused (http://localhost:<n>/chat)", 2)
    ]
    # The turn that errored had no reply: the example is what the user sent.
    assert [(e.case.case, e.turn, e.user, e.agent) for e in errors.examples] == [
        ("balance", 1, "hello from balance", []),
        ("status", 1, "hello from status", []),
    ]


def test_error_labels_keep_the_first_80_characters() -> None:
    long = stored("slow", "error", stop_reason="error", error="agent timed out " + "waiting " * 20)
    (only,) = build_digest([long]).groups
    assert only.kind == "error"
    assert len(only.label) <= 80
    assert only.label.startswith("agent timed out waiting waiting")


def test_examples_show_the_turn_a_score_points_at(digest: Digest) -> None:
    found = group(digest, "score", "hallucination", "hallucination")
    assert len(found.examples) == MAX_EXAMPLES
    assert [(e.case.case, e.case.repeat, e.turn, e.user, e.agent, e.tools) for e in found.examples] == [
        ("exchange", 0, 4, "Order B7, size M", ["Your refund is processed."], []),
        ("refund", 0, 2, "It is for order A1", ["Your refund is processed."], ["lookup_order [faked]"]),
        # refund repeat 1 hallucinated in turns 2 and 3: one example, from the first of them.
        ("refund", 1, 2, "It is for order A1", ["Your refund is processed."], ["lookup_order [faked]"]),
    ]


def test_step_examples_show_the_steps_last_agent_reply(digest: Digest) -> None:
    steps = group(digest, "step", "give the order number", "goal_achievement")
    first, second, _ = steps.examples
    assert (first.case.case, first.step, first.turn, first.user, first.agent) == (
        "exchange",
        0,
        4,
        "Order B7, size M",
        ["Your refund is processed."],
    )
    assert (second.case.case, second.step, second.turn, second.user, second.agent) == (
        "refund",
        1,
        3,
        "Great, anything else?",
        ["It arrives on 5 May.", "Bye!"],
    )


def test_examples_are_capped_at_three_conversations() -> None:
    many = [refund(r) for r in range(5)]
    digest = build_digest(many)
    for g in digest.groups:
        assert g.count == 5
        assert len(g.cases) == 5
        assert [e.case.repeat for e in g.examples] == [0, 1, 2]


def test_unsure_scores_count_only_when_nothing_failed() -> None:
    failed = refund(0)
    failed.result.scores.append(
        Score(metric="expectation", check="expectation: polite", source="judge", verdict="unsure", reason="?")
    )
    digest = build_digest([failed])
    assert {g.kind for g in digest.groups} == {"step", "score"}
    assert not any(g.name == "expectation" for g in digest.groups)
    (only,) = build_digest([unsure()]).groups
    assert only.key == ("unsure", "expectation: mentions the weekend hours", "expectation")
    assert [(e.turn, e.user, e.agent) for e in only.examples] == [(1, "What are your hours?", ["9 to 5."])]


NOT_JUDGED = "not judged: no judge model is configured (set models.judge in the suite or pass --judge-model)"


def fees_unsure(case: str, *, verdict: str = "unsure") -> StoredResult:
    """A simulation whose step 2 stayed unsure (not judged) up to its max turns; the conversation moved on."""
    return stored(
        case,
        "unsure",
        events=[user(1, "Any fees?", step=1), agent(1, "Some.", step=1)],
        steps=[
            StepOutcome(index=0, label="greet", status="complete"),
            StepOutcome(index=1, label="ask about fees", status="unsure", rationale=NOT_JUDGED),
            StepOutcome(index=2, label="say goodbye", status="complete"),
        ],
        scores=[goal(0, "greet", "met"), goal(1, "ask about fees", verdict, NOT_JUDGED), goal(2, "say goodbye", "met")],
        reasons=[f"step 2: ask about fees: {NOT_JUDGED}"],
    )


def not_judged_expectation(case: str) -> StoredResult:
    """An expectation scored not_met whose reason says it was not judged: unsure, not a failed check."""
    score = Score(
        metric="expectation", check="expectation: is polite", source="judge", verdict="not_met", reason=NOT_JUDGED
    )
    return stored(case, "unsure", events=[user(1, "hi"), agent(1, "hello")], scores=[score])


@pytest.mark.parametrize(
    ("result", "key"),
    [
        (fees_unsure("fees"), ("unsure", "ask about fees", "goal_achievement")),
        # The step's status decides, also when its score was written as not_met.
        (fees_unsure("fees", verdict="not_met"), ("unsure", "ask about fees", "goal_achievement")),
        (not_judged_expectation("polite"), ("unsure", "expectation: is polite", "expectation")),
        (unsure(), ("unsure", "expectation: mentions the weekend hours", "expectation")),
    ],
)
def test_not_judged_and_unsure_checks_have_their_own_group(result: StoredResult, key: tuple[str, str, str]) -> None:
    (only,) = build_digest([result]).groups
    assert only.key == key
    assert only.title().startswith("Not judged / unsure: ")
    text = "\n".join(render_digest_text(build_digest([result])))
    assert "Check failed" not in text
    assert "Step not completed" not in text
    assert "## 1. Not judged / unsure: " in render_digest_markdown(build_digest([result]))


def test_unsure_groups_come_after_failures_of_the_same_count() -> None:
    digest = build_digest([fees_unsure("fees"), exchange()])
    assert [g.kind for g in digest.groups] == ["step", "score", "unsure"]


def test_steps_that_were_not_reached_are_left_out() -> None:
    cut = stored(
        "cut",
        "error",
        stop_reason="error",
        error="the judge failed after 3 retries",
        steps=[
            StepOutcome(index=0, label="greet", status="complete"),
            StepOutcome(index=1, label="ask about fees", status="not_reached"),
            StepOutcome(index=2, label="say goodbye", status="not_attempted"),
        ],
        scores=[goal(0, "greet", "met"), goal(1, "ask about fees", "not_met"), goal(2, "say goodbye", "not_met")],
    )
    assert [g.key for g in build_digest([cut]).groups] == [("error", "the judge failed after <n> retries", "error")]


def test_an_unsure_step_without_scores_falls_back_to_its_own_group() -> None:
    bare = stored("bare", "unsure", steps=[StepOutcome(index=0, label="ask about fees", status="unsure")])
    assert [g.key for g in build_digest([bare]).groups] == [("unsure", "ask about fees", "goal_achievement")]


def test_repeats_are_numbered_from_1() -> None:
    digest = build_digest([refund(0), refund(2)])
    assert [ref.repeat for ref in digest.groups[0].cases] == [0, 2]  # stored from 0
    assert [ref.describe() for ref in digest.groups[0].cases] == ["refund (repeat 1)", "refund (repeat 3)"]
    assert "     cases: refund (repeat 1); refund (repeat 3)" in render_digest_text(digest)


def test_results_without_scores_fall_back_to_steps_then_reasons() -> None:
    bare = stored(
        "bare",
        "fail",
        steps=[
            StepOutcome(index=0, label="say hello", status="complete"),
            StepOutcome(index=1, label="ask for order 123", status="incomplete", rationale="no"),
            StepOutcome(index=2, label="confirm", status="blocked", blocked_by=1),
        ],
    )
    nothing = stored("nothing", "unsure")
    digest = build_digest([bare, nothing])
    assert [g.key for g in digest.groups] == [
        ("step", "ask for order <n>", "goal_achievement"),
        ("reason", "no reason recorded", "unsure"),
    ]


def test_passing_results_and_an_empty_list() -> None:
    digest = build_digest([stored("ok", "pass")])
    assert (digest.results, digest.not_passed, digest.groups) == (1, 0, [])
    assert render_digest_text(digest) == ["Failure digest: 0 of 1 conversations did not pass."]
    assert build_digest([]).groups == []


def test_input_order_does_not_matter() -> None:
    assert build_digest(list(reversed(results()))) == build_digest(results())


def test_judge_errors_group_by_message_and_metric() -> None:
    def judged(case: str, turn: int) -> StoredResult:
        score = Score(
            metric="hallucination",
            check=f"turn {turn}: hallucination",
            source="judge",
            verdict="error",
            reason=f"the judge model failed: request {turn}f00d{turn} timed out after {turn * 10} s",
            turn=turn,
        )
        return stored(case, "error", events=[user(turn, "hi"), agent(turn, "hello")], scores=[score])

    (only,) = build_digest([judged("a", 1), judged("b", 2)]).groups
    assert only.key == ("error", "the judge model failed: request <id> timed out after <n> s", "hallucination")
    assert [(e.case.case, e.turn, e.agent) for e in only.examples] == [("a", 1, ["hello"]), ("b", 2, ["hello"])]


@pytest.mark.parametrize(
    ("check", "normalised"),
    [
        ("turn 3: hallucination", "hallucination"),
        ("turn 12: hallucination", "hallucination"),
        ("step 2: must_contain: refund", "must_contain: refund"),
        ("Turn 4: step 1: expectation: confirms order ORD-1234", "expectation: confirms order <id>"),
        (
            "turn 2: semantic match with: Your order A1 ships in 3 days",
            "semantic match with: Your order <id> ships in <n> days",
        ),
        ("expectation: ticket 0b1e6a4c-3f5d-4a8e-9c2b-7d1e2f3a4b5c is quoted", "expectation: ticket <id> is quoted"),
        ("turn cap", "turn cap"),
        ("turn 1:   tool-call   correctness", "tool-call correctness"),
        ("variable: order_status", "variable: order_status"),
        # Dates are one <date>, never <n>-<n>-<n>.
        ("expectation: delivery on 2026-05-04", "expectation: delivery on <date>"),
        ("turn 2: must_contain: 04.05.2026", "must_contain: <date>"),
        (
            "expectation: booked for 2026-05-04T10:30:00Z, not 2026-05-05 10:30",
            "expectation: booked for <date>, not <date>",
        ),
        ("expectation: due 5/4/2026, total 23.60 EUR", "expectation: due <date>, total <n> EUR"),
        ("expectation: version 1.2.3 and host 192.168.1.10", "expectation: version <n> and host <n>"),
    ],
)
def test_normalise_label(check: str, normalised: str) -> None:
    assert normalise_label(check) == normalised


# -- suggestions ----------------------------------------------------------------------------------------------


def run_suggest(digest: Digest, llm: LLMClient | None, instructions: str | None = None) -> Digest:
    return asyncio.run(suggest_fixes(digest, llm, instructions=instructions))


def test_suggestions_come_from_the_judge_model(digest: Digest) -> None:
    def answer(messages: list[dict[str, Any]]) -> dict[str, str]:
        prompt = messages[-1]["content"]
        what = next(line for line in prompt.splitlines() if line.startswith("what failed: "))
        return {"change": f"Add: handle {what.removeprefix('what failed: ')}", "rationale": "It addresses it."}

    script = FakeScript().enqueue("judge", answer, times=len(digest.groups))
    suggested = run_suggest(digest, judge_client(script), "You are a refund agent. Be brief.")
    assert len(script.requests) == len(digest.groups)
    assert {request.role for request in script.requests} == {Role.JUDGE}
    assert suggested.note is None
    for g in suggested.groups:
        assert g.suggestion is not None
        assert g.suggestion.source == "model suggestion"
        assert g.suggestion.model == "fake/judge"
        assert g.suggestion.change == f"Add: handle {g.title()}"
        assert g.suggestion.rationale == "It addresses it."
        assert not g.suggestion.failed
    assert digest.groups[0].suggestion is None  # the given digest is not changed
    # The prompt gives the instructions, the group and its examples.
    prompt = next(
        r.messages[-1]["content"] for r in script.requests if "hallucination (hallucination)" in str(r.messages)
    )
    assert section(prompt, "instructions") == "You are a refund agent. Be brief."
    group = section(prompt, "failure_group").splitlines()
    cases = "conversations: 3 (exchange [persona impatient] (repeat 1), refund (repeat 1), refund (repeat 2))"
    assert cases in group[1]
    assert '{"role": "user", "text": "Order B7, size M"}' in group
    assert '{"role": "agent", "text": "Your refund is processed."}' in group
    assert '{"role": "tool_call", "call": "lookup_order [faked]"}' in group
    assert f"- {CLAIM} (3x)" in group
    dumped = json.loads(suggested.model_dump_json())
    assert dumped["groups"][0]["suggestion"]["source"] == "model suggestion"
    assert Digest.model_validate(dumped) == suggested


def test_a_malformed_reply_becomes_a_failed_suggestion() -> None:
    digest = build_digest([unsure()])
    script = FakeScript().enqueue("judge", "I think you should be nicer.", {"change": ""}, {"rationale": "x"})
    suggested = run_suggest(digest, judge_client(script))
    (only,) = suggested.groups
    assert only.suggestion is not None
    assert only.suggestion.failed
    assert only.suggestion.change == ""
    assert only.suggestion.error is not None
    assert only.suggestion.error.startswith("the judge model failed to suggest a change: judge model 'fake/judge' ")
    assert "gave no valid FixSuggestionReply JSON in 3 attempts" in only.suggestion.error
    assert len(script.requests) == 3
    # The prompt says the instructions were not given.
    assert "(not given)" in script.requests[0].messages[-1]["content"]
    lines = render_digest_text(suggested)
    assert lines[-2] == f"{SUGGESTIONS_HEADING}:"
    assert lines[-1].startswith(
        "  1. Not judged / unsure: expectation: mentions the weekend hours (expectation): no suggestion: "
        "the judge model failed to suggest a change"
    )
    markdown = render_digest_markdown(suggested)
    assert "### 1. Not judged / unsure: expectation: mentions the weekend hours (expectation)\n\nNo suggestion: " in (
        markdown
    )


def test_a_provider_error_becomes_a_failed_suggestion_and_others_still_arrive() -> None:
    digest = build_digest([unsure(), agent_down("status", 1)])

    def answer(messages: list[dict[str, Any]]) -> Any:
        if "weekend hours" in messages[-1]["content"]:
            return fake_auth_error()
        return {"change": "Tell the user when the service is down.", "rationale": "Users were left waiting."}

    script = FakeScript().enqueue("judge", answer, times=2)
    suggested = run_suggest(digest, judge_client(script), "Be helpful.")
    by_name = {g.name: g.suggestion for g in suggested.groups}
    failed, ok = by_name["expectation"], by_name["error"]
    assert failed is not None
    assert ok is not None
    assert failed.error is not None
    assert "invalid API key" in failed.error
    assert (ok.change, ok.error) == ("Tell the user when the service is down.", None)


@pytest.mark.parametrize(
    "llm", [None, LLMClient(ModelRoles.model_validate({"user": "fake/user"}), fake_script=FakeScript())]
)
def test_without_a_judge_model_there_is_a_note(digest: Digest, llm: LLMClient | None) -> None:
    suggested = run_suggest(digest, llm, "Be helpful.")
    assert suggested.note == NO_SUGGESTION_MODEL
    assert all(g.suggestion is None for g in suggested.groups)
    assert suggested.groups == digest.groups
    assert render_digest_text(suggested)[-1] == f"Note: {NO_SUGGESTION_MODEL}"
    markdown = render_digest_markdown(suggested)
    assert markdown.endswith(f"## {SUGGESTIONS_HEADING}\n\n*{NO_SUGGESTION_MODEL}*\n")


# -- rendering ------------------------------------------------------------------------------------------------


def test_text_rendering(digest: Digest) -> None:
    lines = render_digest_text(digest)
    assert lines[0] == "Failure digest: 7 of 8 conversations did not pass; 5 causes, most frequent first."
    assert lines[1:12] == [
        "1. Check failed: hallucination (hallucination): 3 conversations, 4 failures",
        "     cases: exchange [persona impatient] (repeat 1); refund (repeat 1); refund (repeat 2)",
        f"     3× {CLAIM}",
        "     1× unsupported claim: “it arrives on 5 May”: nothing says so",
        "     example: exchange [persona impatient] (repeat 1), turn 4",
        "       user: Order B7, size M",
        "       agent: Your refund is processed.",
        "     example: refund (repeat 1), turn 2",
        "       user: It is for order A1",
        "       tool: lookup_order [faked]",
        "       agent: Your refund is processed.",
    ]
    assert "2. Step not completed: give the order number (goal_achievement): 3 conversations" in lines
    assert "       agent: (no message)" in lines  # the errored turn had no reply
    assert SUGGESTIONS_HEADING + ":" not in lines


def test_markdown_rendering_with_suggestions_and_escaping() -> None:
    hostile = stored(
        "xss",
        "fail",
        events=[user(1, f"say {XSS}"), agent(1, f"ok {XSS}\n- [link](http://e.vil)")],
        scores=[hallucination(1, f"claims {XSS}")],
    )
    built = build_digest([*results(), hostile])

    def answer(messages: list[dict[str, Any]]) -> dict[str, str]:
        if "what failed: Check failed: hallucination" in messages[-1]["content"]:
            return {"change": f"Never echo {XSS}.\n\n- Say what the tools returned.", "rationale": "*Safety*"}
        return {"change": "Ask for the order number first.", "rationale": "Step 2 failed."}

    script = FakeScript().enqueue("judge", answer, times=len(built.groups))
    suggested = run_suggest(built, judge_client(script), "Be helpful.")
    markdown = render_digest_markdown(suggested)
    assert "<script" not in markdown
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in markdown
    assert markdown.startswith("# Failure digest\n\n8 of 9 conversations did not pass; 5 causes, most frequent first.")
    assert "## 1. Check failed: hallucination (hallucination)\n" in markdown
    assert "- **Kind:** score · **Metric:** hallucination · 4 conversations, 5 failures" in markdown
    assert (
        "> **Example:** exchange \\[persona impatient\\] (repeat 1), turn 4\\\n> **User:** Order B7, size M" in markdown
    )
    # Group sections come first, then the suggestions under their own heading.
    heading = markdown.index(f"## {SUGGESTIONS_HEADING}")
    assert markdown.index("## 5. ") < heading
    after = markdown[heading:]
    assert "(source: model suggestion); not tested." in after
    assert "### 1. Check failed: hallucination (hallucination)" in after
    assert (
        "**Suggested change (fake/judge):**\n\n> Never echo &lt;script&gt;alert(1)&lt;/script&gt;.\\\n"
        "> \\- Say what the tools returned.\n\n"
    ) in after
    assert "**Why:** \\*Safety\\*" in after
    lines = render_digest_text(suggested)
    start = lines.index(f"{SUGGESTIONS_HEADING}:")
    assert lines[start + 1 : start + 5] == [
        "  1. Check failed: hallucination (hallucination):",
        f"       Never echo {XSS}.",
        "       - Say what the tools returned.",
        "       why: *Safety*",
    ]
