"""Tests of the simulated user: the scripted user (offline, no model) and the LLM user on the fake provider."""

from __future__ import annotations

import json
import random
import re
from typing import Any, Literal

import pytest
from pydantic import JsonValue

from simulator.errors import ModelError
from simulator.llm import FakeScript, LLMClient, Role, StructuredOutputError, fake_rate_limit
from simulator.models.persona import Persona, PersonaBackground, PersonaStyle
from simulator.models.settings import ModelRoles
from simulator.user import (
    LLMUser,
    ScriptedUser,
    SimulatedUser,
    UserReply,
    UserTurnRequest,
    apply_style,
)
from tests.factories import run

Conversation = list[tuple[Literal["user", "agent"], str]]

GOAL = "Greet the agent and ask for a refund for product_id."


def request(
    *,
    kind: Literal["golden", "scenario", "simulation"] = "scenario",
    goal: str | None = GOAL,
    response_guide: str | dict[str, JsonValue] | None = None,
    say: list[str] | None = None,
    turn_in_step: int = 0,
    session: dict[str, JsonValue] | None = None,
    persona: Persona | None = None,
    conversation: Conversation | None = None,
    language: str = "en",
    seed: int = 0,
    can_end: bool | None = None,
) -> UserTurnRequest:
    return UserTurnRequest(
        case_name="refund",
        case_kind=kind,
        goal=goal,
        response_guide=response_guide,
        say=say or [],
        turn_in_step=turn_in_step,
        session={"product_id": "prod_123"} if session is None else session,
        persona=persona,
        conversation=conversation or [],
        language=language,
        seed=seed,
        can_end=kind == "scenario" if can_end is None else can_end,
    )


def persona(**style: Any) -> Persona:
    return Persona(name="tester", personality="Plain and direct.", style=PersonaStyle(**style))


def scripted(req: UserTurnRequest) -> UserReply:
    user: SimulatedUser = ScriptedUser()
    return run(user.next_message(req))


def scripted_text(req: UserTurnRequest) -> str:
    reply = scripted(req)
    assert reply.text is not None
    assert reply.source == "scripted"
    assert not reply.done
    return reply.text


# -- scripted user: lines, facts, goal -----------------------------------------------------------------------------


def test_say_lines_in_order_with_placeholders_filled() -> None:
    say = ["Hi, I am {name}.", "My order is {order_id}, see {unknown}.", "That is all."]
    session: dict[str, JsonValue] = {"name": "Ana", "order_id": "A-1", "count": 3}
    texts = [scripted_text(request(say=say, session=session, turn_in_step=turn)) for turn in range(3)]
    assert texts == ["Hi, I am Ana.", "My order is A-1, see {unknown}.", "That is all."]


def test_non_string_session_values_are_written_out() -> None:
    session: dict[str, JsonValue] = {"count": 3, "member": True, "missing": None}
    text = scripted_text(request(say=["{count} items, member: {member}, {missing}"], session=session))
    assert text == "3 items, member: yes, {missing}"


@pytest.mark.parametrize(
    ("agent", "expected"),
    [
        ("Sure. What is your order number?", "My order number is A123."),
        ("Could you give me the reason for the return?", "My reason is it arrived broken."),
        ("What's your ORDER-NUMBER please", "My order number is A123."),
        # Two facts asked at once: both answered, in the order the agent asked for them.
        (
            "What is the reason, and what was the order number?",
            "My reason is it arrived broken. My order number is A123.",
        ),
        # The last word of a key alone asks for it when it has 5+ letters ("number"); "date" is too short.
        ("And the number?", "My order number is A123."),
        ("Which date was that?", GOAL.replace("product_id", "prod_123")),
        # Asking for something that is not in the facts falls through to the goal.
        ("What is your shoe size?", GOAL.replace("product_id", "prod_123")),
    ],
)
def test_facts_asked_by_the_agent_are_answered(agent: str, expected: str) -> None:
    facts: dict[str, JsonValue] = {
        "order_number": "A123",
        "reason": "it arrived broken",
        "purchase_date": "2026-01-02",
    }
    conversation: Conversation = [("user", "I want a refund."), ("agent", agent)]
    assert scripted_text(request(response_guide=facts, conversation=conversation, turn_in_step=1)) == expected


def test_a_word_inside_another_facts_key_does_not_ask_for_it() -> None:
    facts: dict[str, JsonValue] = {"order_number": "A123", "phone_number": "+43 660 1234567"}
    conversation: Conversation = [("agent", "What is your phone number?")]
    assert scripted_text(request(response_guide=facts, conversation=conversation)) == (
        "My phone number is +43 660 1234567."
    )


def test_facts_wait_for_the_scripted_lines_and_read_the_whole_agent_turn() -> None:
    facts: dict[str, JsonValue] = {"order_number": "A123"}
    conversation: Conversation = [("user", "Hello."), ("agent", "Hi!"), ("agent", "What is the order number?")]
    line = request(response_guide=facts, conversation=conversation, say=["One", "Two"], turn_in_step=1)
    assert scripted_text(line) == "Two"
    after = request(response_guide=facts, conversation=conversation, say=["One", "Two"], turn_in_step=2)
    assert scripted_text(after) == "My order number is A123."


def test_text_guidance_is_not_answered_from() -> None:
    conversation: Conversation = [("agent", "What is your order number?")]
    text = scripted_text(request(response_guide="Say order number A1 if asked.", conversation=conversation))
    assert text == "Greet the agent and ask for a refund for prod_123."


def test_goal_is_restated_with_session_parameters_filled() -> None:
    assert scripted_text(request()) == "Greet the agent and ask for a refund for prod_123."


def test_goal_replacement_is_whole_word_and_longest_name_first() -> None:
    session: dict[str, JsonValue] = {"id": "X9", "order_id": "ORD-7", "order": "never"}
    goal = "Cancel order_id, mention id, then {id}; a pre-order or re-order_ids stay."
    assert scripted_text(request(goal=goal, session=session)) == (
        "Cancel ORD-7, mention X9, then X9; a pre-order or re-order_ids stay."
    )


def test_without_goal_or_line_it_asks_politely_to_continue() -> None:
    assert scripted_text(request(goal=None)) == "Can you help me with that?"


# -- scripted user: ending -----------------------------------------------------------------------------------------


def talk(kind: Literal["scenario", "simulation"], turns: int, who: Persona | None = None) -> list[UserReply]:
    """Let the scripted user talk to an agent that never helps, for up to ``turns`` user turns."""
    conversation: Conversation = []
    replies: list[UserReply] = []
    for turn in range(turns):
        reply = scripted(request(kind=kind, persona=who, conversation=list(conversation), turn_in_step=turn, seed=4))
        replies.append(reply)
        if reply.done:
            break
        assert reply.text is not None
        conversation += [("user", reply.text), ("agent", "Sorry, I cannot help with that.")]
    return replies


@pytest.mark.parametrize("who", [None, persona(typo_rate=0.3, filler_words=["um", "well"], verbosity="chatty")])
def test_scenario_user_gives_up_when_it_would_repeat_itself(who: Persona | None) -> None:
    replies = talk("scenario", 10, who)
    # The goal is said twice; the third identical message is not sent. The styled messages differ from turn to
    # turn (other fillers, other typos), and are still recognised as the same message.
    assert len(replies) == 3
    assert [reply.done for reply in replies] == [False, False, True]
    assert replies[-1] == UserReply(text=None, done=True, reason="gave_up: nothing new to say", source="scripted")


def test_simulation_user_keeps_talking() -> None:
    replies = talk("simulation", 6)
    assert len(replies) == 6
    assert not any(reply.done for reply in replies)
    assert {reply.text for reply in replies} == {"Greet the agent and ask for a refund for prod_123."}


def test_a_new_message_after_repeats_is_sent() -> None:
    goal_text = "Greet the agent and ask for a refund for prod_123."
    conversation: Conversation = [
        ("user", goal_text),
        ("agent", "Sorry?"),
        ("user", goal_text),
        ("agent", "What is your order number?"),
    ]
    req = request(response_guide={"order_number": "A123"}, conversation=conversation, turn_in_step=2)
    assert scripted_text(req) == "My order number is A123."


# -- persona style ---------------------------------------------------------------------------------------------------


def test_lowercase_keeps_ids_and_values() -> None:
    text = "My order number is A123B, I live in Graz and my e-mail is Jane.Doe@Example.com."
    styled = apply_style(text, persona(lowercase=True), random.Random(0), protect=["Graz"])
    assert styled == "my order number is A123B, i live in Graz and my e-mail is Jane.Doe@Example.com."


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("Hello, I need a refund for order A123, please.", "I need a refund for order A123."),
        ("Hi there! Thanks for the quick reply. Could you please check it?", "Could you check it?"),
        ("Thank you so much for helping, now refund A123.", "Now refund A123."),
        ("Please, could you help? Thank you so much!", "Could you help?"),
        ("I need the hi-fi manual; thanks.", "I need the hi-fi manual."),
        ("Thanks!", "Thanks!"),  # nothing but a pleasantry: kept
        ("This has no pleasantries... really?!", "This has no pleasantries... really?!"),
    ],
)
def test_terse_drops_pleasantries_and_tidies(text: str, expected: str) -> None:
    assert apply_style(text, persona(verbosity="terse"), random.Random(0)) == expected


def test_chatty_prefixes_small_talk() -> None:
    styled = apply_style("I need a refund.", persona(verbosity="chatty"), random.Random(1))
    assert styled == "Sorry, it has been a long week. I need a refund."


def test_chatty_small_talk_is_english_only() -> None:
    german = Persona(name="de", personality="Formal.", language="de", style=PersonaStyle(verbosity="chatty"))
    assert apply_style("Ich brauche eine Erstattung.", german, random.Random(1)) == "Ich brauche eine Erstattung."


def test_filler_goes_first() -> None:
    styled = apply_style("Greet the agent.", persona(filler_words=["um", "well"]), random.Random(0))
    assert styled == "well, greet the agent."
    # An ID or "I" at the start keeps its capital letter.
    assert apply_style("I want A123.", persona(filler_words=["um"]), random.Random(0)) == "um, I want A123."
    assert apply_style("ORD-5 is late.", persona(filler_words=["um"]), random.Random(0)) == "um, ORD-5 is late."


def test_typos_are_pinned() -> None:
    styled = apply_style("Please refund my broken blender today.", persona(typo_rate=0.5), random.Random(2))
    assert styled == "Please refund my borken blneder today."


def test_typos_never_touch_ids_values_or_short_words() -> None:
    text = (
        "Hello there, please refund order ORD-40051 for product prod_blender_900 to jane.doe@example.com; "
        "I bought it in Dublin for 129.00 euros and the jug is cracked, customer cus_3307, thanks."
    )
    values = ["Dublin", "cracked", "cus_3307"]
    words = re.findall(r"\S+", text)
    changed = 0
    for seed in range(30):
        styled = apply_style(text, persona(typo_rate=0.5), random.Random(seed), protect=values)
        for token in ["ORD-40051", "prod_blender_900", "jane.doe@example.com", "129.00", *values]:
            assert token in styled
        for before, after in zip(words, re.findall(r"\S+", styled), strict=True):
            if before == after:
                continue
            changed += 1
            letters = re.sub(r"\W", "", before)
            assert len(letters) >= 4
            assert sorted(before) == sorted(after)
            assert (before[0], before[-1]) == (after[0], after[-1])
            diff = [index for index, (a, b) in enumerate(zip(before, after, strict=True)) if a != b]
            assert len(diff) == 2
            assert diff[1] == diff[0] + 1
    assert changed > 0


def test_all_styles_together_keep_values_readable() -> None:
    who = persona(verbosity="terse", lowercase=True, filler_words=["um"], typo_rate=0.5)
    text = "Hello, my order number is A123 and my name is Ana Lopez, thanks."
    styled = apply_style(text, who, random.Random(7), protect=["A123", "Ana Lopez"])
    # Pleasantries gone, filler first, lower case and typos everywhere except the values.
    assert styled == "um, my order nmuber is A123 and my nmae is Ana Lopez."


def test_style_is_deterministic_for_the_seed() -> None:
    who = persona(verbosity="chatty", filler_words=["um", "well", "so"], typo_rate=0.3)
    text = "I would like to return the broken kettle and get my money back."
    assert apply_style(text, who, random.Random(11)) == apply_style(text, who, random.Random(11))
    variants = {apply_style(text, who, random.Random(seed)) for seed in range(10)}
    assert len(variants) > 1


def test_scripted_user_style_depends_on_seed_and_turn_only() -> None:
    who = persona(verbosity="chatty", filler_words=["um", "well", "so"], typo_rate=0.3)
    first = scripted_text(request(persona=who, seed=3))
    assert scripted_text(request(persona=who, seed=3)) == first
    assert len({scripted_text(request(persona=who, seed=seed)) for seed in range(10)}) > 1
    assert "prod_123" in first


def test_without_persona_nothing_changes() -> None:
    assert apply_style("Hello, please help.", None, random.Random(0)) == "Hello, please help."


# -- LLM user --------------------------------------------------------------------------------------------------------


class Sleeps:
    """An injected sleep that records the delays instead of waiting."""

    def __init__(self) -> None:
        self.delays: list[float] = []

    async def __call__(self, delay: float) -> None:
        self.delays.append(delay)


def llm_user(script: FakeScript, sleeps: Sleeps | None = None) -> LLMUser:
    client = LLMClient(ModelRoles.model_validate({"user": "fake/user"}), fake_script=script, sleep=sleeps or Sleeps())
    return LLMUser(client)


def move(message: str, done: bool = False, reason: str = "asking") -> dict[str, Any]:
    return {"message": message, "done": done, "reason": reason}


ANA = Persona(
    name="ana",
    personality="Impatient but polite; wants things done quickly.",
    language="de",
    background=PersonaBackground(location="Graz, Austria", facts={"customer_id": "cus_42"}),
    style=PersonaStyle(verbosity="terse", tone="curt"),
)


def test_llm_user_prompt_plays_the_user_with_roles_swapped() -> None:
    script = FakeScript().enqueue("user", move("Where is my refund?"))
    conversation: Conversation = [
        ("agent", "Welcome! How can I help?"),
        ("user", "I want a refund."),
        ("agent", "For which product?"),
    ]
    req = request(persona=ANA, conversation=conversation)

    reply = run(llm_user(script).next_message(req))

    assert reply == UserReply(text="Where is my refund?", source="llm")
    sent = script.requests[0]
    assert sent.role is Role.USER
    # JSON mode: the prompt states the move's shape, no schema is sent.
    assert sent.params["response_format"] == {"type": "json_object"}
    system, *rest = sent.messages
    assert system["role"] == "system"
    prompt = system["content"]
    for part in [
        "'ana'",
        "Impatient but polite",
        "Graz, Austria",
        "cus_42",
        "curt",
        "German (de)",
        "Your goal: Greet the agent and ask for a refund for prod_123.",
        "product_id: prod_123",
        "Never act as the support agent",
        "done to true",
    ]:
        assert part in prompt, part
    # No response guide was given: no such section, no facts for answers.
    assert "private" not in prompt.lower()
    assert rest == [
        {"role": "user", "content": "Welcome! How can I help?"},
        {"role": "assistant", "content": "I want a refund."},
        {"role": "user", "content": "For which product?"},
    ]


def test_llm_user_prompt_carries_the_response_guide() -> None:
    script = FakeScript().enqueue("user", move("hi"), move("hi"))
    facts = request(response_guide={"order_number": "A123"}, kind="simulation")
    guidance = request(response_guide="Be vague about the date.", language="fr")

    run(llm_user(script).next_message(facts))
    run(llm_user(script).next_message(guidance))

    # A simulation's step part (goal and facts) is its last message, after the chat; the rules stay in the system.
    system, *_, note = script.requests[0].messages
    assert note["role"] == "system"
    assert "not all at once" in note["content"]
    assert "order_number: A123" in note["content"]
    assert "Work on it only" in note["content"]
    assert "order_number" not in system["content"]
    assert "done to false" in system["content"]
    assert "done to true" not in system["content"]
    guidance_prompt = script.requests[1].messages[0]["content"]
    assert "Be vague about the date." in guidance_prompt
    assert "French (fr)" in guidance_prompt


def test_llm_user_first_message_and_unanswered_message() -> None:
    script = FakeScript().enqueue("user", move("Hello"), move("Anyone there?"))
    user = llm_user(script)

    run(user.next_message(request()))
    run(user.next_message(request(conversation=[("user", "Hello")])))

    assert script.requests[0].messages[1:] == [{"role": "user", "content": "(Write your first message.)"}]
    assert script.requests[1].messages[1:] == [
        {"role": "assistant", "content": "Hello"},
        {"role": "user", "content": "(No reply yet. Write your next message.)"},
    ]


def test_llm_user_done_is_honoured_in_a_scenario() -> None:
    script = FakeScript().enqueue("user", move("", done=True, reason="goal_reached: refund confirmed"))
    reply = run(llm_user(script).next_message(request(kind="scenario")))
    assert reply == UserReply(text=None, done=True, reason="goal_reached: refund confirmed", source="llm")


@pytest.mark.parametrize(
    ("reason", "expected"),
    [
        ("Goal reached - refund confirmed", "goal_reached: refund confirmed"),
        ("gave up: agent keeps looping", "gave_up: agent keeps looping"),
        ("GAVE_UP", "gave_up"),
        ("the agent refunded me", "the agent refunded me"),
        ("", "done (no reason given)"),
    ],
)
def test_llm_user_ending_reason_is_normalised(reason: str, expected: str) -> None:
    script = FakeScript().enqueue("user", move("", done=True, reason=reason))
    reply = run(llm_user(script).next_message(request(kind="scenario")))
    assert reply.reason == expected


def test_llm_user_done_with_a_goodbye_keeps_the_text() -> None:
    script = FakeScript().enqueue("user", move("Thanks, bye!", done=True, reason="goal_reached: done"))
    reply = run(llm_user(script).next_message(request(kind="scenario")))
    assert reply == UserReply(text="Thanks, bye!", done=True, reason="goal_reached: done", source="llm")


def test_llm_user_done_is_ignored_in_a_simulation() -> None:
    script = FakeScript().enqueue("user", move("Great, thanks.", done=True, reason="goal_reached: step done"))
    reply = run(llm_user(script).next_message(request(kind="simulation")))
    assert reply.text == "Great, thanks."
    assert not reply.done
    assert reply.source == "llm"


def test_llm_user_ending_without_message_in_a_simulation_is_a_model_error() -> None:
    script = FakeScript().enqueue("user", move(" ", done=True, reason="gave_up: agent is useless"))
    with pytest.raises(ModelError, match=r"without a message \(gave_up: agent is useless\).*simulation"):
        run(llm_user(script).next_message(request(kind="simulation")))


def test_llm_user_malformed_json_then_good_is_retried() -> None:
    script = FakeScript().enqueue("user", '{"message": "I need', move("I need a refund."))
    reply = run(llm_user(script).next_message(request()))
    assert reply.text == "I need a refund."
    assert len(script.requests) == 2
    assert "not valid JSON" in script.requests[1].messages[-1]["content"]


def test_llm_user_always_blank_is_a_model_error() -> None:
    script = FakeScript().enqueue("user", move("   "), times=3)
    with pytest.raises(StructuredOutputError) as caught:
        run(llm_user(script).next_message(request()))
    assert isinstance(caught.value, ModelError)
    assert "blank" in str(caught.value)
    assert len(script.requests) == 3
    assert json.loads(caught.value.raw)["message"] == "   "


def test_llm_user_rate_limit_then_success() -> None:
    sleeps = Sleeps()
    script = FakeScript().enqueue("user", fake_rate_limit(), times=2).enqueue("user", move("Refund please."))
    reply = run(llm_user(script, sleeps).next_message(request()))
    assert reply.text == "Refund please."
    assert len(script.requests) == 3
    assert len(sleeps.delays) == 2


def test_persona_background_facts_answer_after_the_steps_facts() -> None:
    who = Persona(
        name="p",
        personality="Plain.",
        background=PersonaBackground(facts={"customer_number": "C-77", "order_number": "OLD-1"}),
    )
    asked: Conversation = [("agent", "What is your customer number and your order number?")]
    text = scripted_text(request(persona=who, response_guide={"order_number": "A123"}, conversation=asked))
    assert text == "My customer number is C-77. My order number is A123."


def test_llm_user_sends_scripted_lines_verbatim_before_the_model_speaks() -> None:
    script = FakeScript()
    reply = run(llm_user(script).next_message(request(say=["Hi, it's about {product_id}."])))
    # The script wrote the line, not the model: it is marked scripted (fidelity checks skip it).
    assert (reply.text, reply.source) == ("Hi, it's about prod_123.", "scripted")
    assert script.requests == []


def test_the_simulated_user_never_sees_the_success_criteria() -> None:
    """A user that knows the rubric steers the agent to it: the criteria go to the judge only."""
    from simulator.agents import AgentInput, AgentReply
    from simulator.engine import ConversationSetup, simulate
    from simulator.judges import StepJudge
    from simulator.models import SimulationCase

    class Agent:
        async def respond(self, request: AgentInput) -> AgentReply:
            return AgentReply(messages=["Your parcel arrives on Friday."])

        async def aclose(self) -> None:
            return None

    criteria = "RUBRIC-7f3: the agent names the weekday of delivery"
    case = SimulationCase.model_validate(
        {
            "kind": "simulation",
            "name": "rubric",
            "steps": [
                {"goal": "Ask when the parcel arrives.", "success_criteria": criteria, "max_turns": 2},
                {"goal": "Say thanks.", "success_criteria": criteria + " again", "max_turns": 1},
            ],
        }
    )
    script = FakeScript().enqueue("user", move("When does my parcel come?"), times=3)
    client = LLMClient(ModelRoles.model_validate({"user": "fake/user"}), fake_script=script, sleep=Sleeps())
    setup = ConversationSetup(case=case, agent=Agent(), user=LLMUser(client), checker=StepJudge())
    run(simulate(setup))

    assert script.requests, "the LLM user was asked"
    for sent in script.requests:
        assert "RUBRIC-7f3" not in repr(sent.messages)
        assert "You are done when" not in repr(sent.messages)
