"""Simulated-user fidelity: did the model playing the user play it well, turn by turn, and did that cause a failure?

A failing conversation is only evidence against the agent if the simulated user did its part. This module
checks every turn the user *model* wrote (``UserEvent.source == "llm"``; scripted lines, static utterances and
golden turns are the author's words and are not checked) and decides when a failure is the user's.

The rules (each finding names its kind, the words that show it and the rule):

``broke_character`` (deterministic)
    The user talks like the assistant ("How can I help you?", "I'd be happy to help"), speaks of itself as an
    AI, a language model, a chatbot or a simulated user ("As an AI, ...", "I'm just a language model." but not
    "I'm an AI researcher"), or answers its own question in the same message the way the agent would ("Can I
    return it? Yes, you can return it within 30 days.", "...? Your order has shipped.").
``leaked_guide`` (deterministic)
    At least :data:`MIN_LEAK_WORDS` consecutive words of the step's private ``response_guide`` appear in the
    message before the agent asked for them: for a guide of facts (a mapping), a fact whose key the agent's
    messages so far never named; for a guide in words, a message sent when the agent's latest message asked
    nothing (no question mark). Words the user was given anyway (goal, persona, session) do not count.
``ended_early`` (deterministic)
    The user ended the conversation saying its goal was reached (anything but "gave_up: ...": giving up on an
    agent that does not help is allowed) while the goal was open: the step's last check said ``not_met``, or,
    for a goal with nothing to check, the judge's goal satisfaction said not satisfied. In a simulation, where the
    user cannot end the conversation, a message sent with such an ending (``UserEvent.ending``) while its step
    was open (not checked yet in the step, or last checked ``not_met``) is the same slip, at that turn.
``repeated_itself`` (deterministic)
    The message is near-identical (:data:`REPEAT_SIMILARITY` of its characters, ignoring case and
    punctuation; at least :data:`MIN_REPEAT_WORDS` words) to an earlier user message of the conversation,
    unless the agent also repeated its previous message (answering the same question twice is fine).
``invented_fact`` (judge, prompt ``user_fidelity``)
    The user stated a fact (a number, a name, a date, an order detail, ...) that its goal, guide, persona and
    session never gave it, for all its user turns at once. Its answer is used only for a conversation that
    fails, and not for one failed by a hallucination (which is never the user's, below). Where the suite
    batches judge questions (the default), it rides in the conversation's hallucination request
    (:func:`invented_fact_question`, prompt ``hallucination_fidelity_batch``), so it costs no request of its
    own; otherwise (``judging: {batch: false}``) it is its own request, asked after the outcome and only for
    such a failure. A quote the judge gives must be in the turn; a judge that fails gives no finding
    (fidelity never turns a verdict into an error).

The checks are not scorers (``_registry.py``): they give findings, not scores, and run after the outcome is
known, since the judge's answer is used only for failures (``simulator.runner.score_case`` calls them).

When a failure is the user's (:func:`user_error_cause`): the agent has no fault of its own anywhere in the
conversation (a hallucination, an unbacked claim of tool use, a wrong tool call, a forbidden phrase, a broken
rule: :func:`agent_faults`), every required failing check is one a user's slip can explain (a step not driven to
its end, the goal, the turn cap, or something that did not happen), and the earliest finding comes strictly
before what decided each of them (a user message of turn N comes before the agent's reply of turn N). The
earliest finding is the evidence the ``user_error`` outcome names; in doubt, the failure is the agent's, with
the finding shown beside it. A replay whose recording runs out is nobody's fault: it is never a finding.
"""

from __future__ import annotations

import contextlib
import difflib
import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from pydantic import JsonValue

from simulator.judges._claim_tools import vocabulary
from simulator.judges.keywords import normalize
from simulator.judges.llm_judges import LLMJudge, UserTurns
from simulator.kinds import kind_named, kind_of
from simulator.models import Case, Persona
from simulator.models.scores import FidelityFinding, Score
from simulator.models.transcript import (
    AgentEvent,
    CheckEvent,
    ErrorEvent,
    InputEvent,
    ToolCallRecord,
    Transcript,
    UserEvent,
)
from simulator.safety import redacted_and_shortened
from simulator.user import RECORDING_ENDS

__all__ = [
    "MIN_LEAK_WORDS",
    "MIN_REPEAT_WORDS",
    "PROMPTS",
    "REPEAT_SIMILARITY",
    "Blame",
    "FidelityCheck",
    "agent_faults",
    "blame",
    "check_fidelity",
    "contradicted_calls",
    "invented_fact_question",
    "judge_invented_facts",
    "left_hanging",
    "unsourced_data",
    "user_brief_text",
    "user_could_cause",
    "user_error_cause",
    "user_error_reason",
]

#: The judge prompts the fidelity checks ask (besides the scorers' prompts; the combined
#: ``hallucination_fidelity_batch`` is the hallucination scorer's).
PROMPTS = ("user_fidelity",)
#: Consecutive words of the response guide that make a leak (shorter overlaps are ordinary phrases or ids).
MIN_LEAK_WORDS = 6
#: Share of characters two messages share (difflib ratio) from which they count as the same message.
REPEAT_SIMILARITY = 0.9
#: Shorter messages ("yes", "ok thanks") are said again naturally.
MIN_REPEAT_WORDS = 4


@dataclass(frozen=True)
class FidelityCheck:
    """The deterministic findings of one conversation and how many turns the user model wrote."""

    findings: list[FidelityFinding]
    checked_turns: int


# --------------------------------------------------------------------------------------------------------------
# Rules


_ASSISTANT_TALK = re.compile(
    r"\bhow (?:can|may|could) i (?:help|assist)(?: you)?(?: today)?\b"
    r"|\bis there anything (?:else )?i can (?:help|assist) you with\b"
    r"|\bi(?:'d| would) be (?:happy|glad) to (?:help|assist)\b"
    r"|\bi(?:'m| am) here to (?:help|assist)\b"
    r"|\bwhat can i do for you\b"
    r"|\bwie kann ich (?:ihnen|dir|euch) (?:heute |sonst |noch |weiter )*(?:helfen|behilflich sein)\b"
    r"|\bwas kann ich (?:heute |sonst |noch )*für (?:sie|dich|euch) tun\b"
    r"|\bich (?:helfe|unterstütze) (?:ihnen|dir|euch) gerne\b"
    r"|\bkann ich (?:ihnen|dir|euch) (?:sonst |noch |irgendwie )*(?:helfen|behilflich sein)\b",
    re.IGNORECASE,
)
#: The end of what a self-description says: "I'm an AI." is one, "I'm an AI researcher" is an occupation.
_CLAUSE_END = r"(?=\s*(?:[,.!?;:)]|$|and\b|but\b|so\b|here\b|who\b|that\b))"
_AI_SELF = re.compile(
    r"\bas an? (?:ai|artificial intelligence|large language model|language model|llm|chatbot)"
    r"(?: (?:language model|assistant|model))?"
    + _CLAUSE_END
    + r"|\bi(?:'m| am) (?:just |only |an? |only an? |just an? )*(?:ai|artificial intelligence|language model"
    r"|large language model|llm|chatbot|virtual assistant|ai assistant|simulated user|simulation)"
    + _CLAUSE_END
    + r"|\b(?:a simulated|simulating the|playing the|role-?playing (?:as )?the) user\b"
    r"|\bals (?:eine? )?(?:ki|künstliche intelligenz|sprachmodell|ki-assistent|chatbot)\b"
    r"|\bich bin (?:nur |bloß )?(?:eine ki|ein sprachmodell|ein chatbot|ein ki-assistent|ein simulierter nutzer)\b",
    re.IGNORECASE,
)
#: A question answered in the same message the way the agent would: "...? Yes, you can ...", "...? Your order
#: has ...". ("...? Yes, I sent it" is a person adding to what they asked: not matched.)
_SELF_ANSWER = re.compile(
    r"\?\s+(?:(?:yes|no|sure|certainly|of course|absolutely)\s*[,!.]\s+(?:you|your|we|our)\b"
    r"|your (?:order|refund|package|parcel|account|request|booking) (?:is|has|was|will)\b)",
    re.IGNORECASE,
)


def _character_findings(event: UserEvent) -> list[FidelityFinding]:
    rules = (
        (_ASSISTANT_TALK, "talks like the support agent (offers help)"),
        (_AI_SELF, "speaks of itself as an AI, a language model or a simulated user"),
        (_SELF_ANSWER, "answers its own question in the same message"),
    )
    found: list[FidelityFinding] = []
    for pattern, rule in rules:
        match = pattern.search(event.text)
        if match is not None:
            evidence = _sentence_around(event.text, match.start(), match.end())
            found.append(_finding(event, "broke_character", evidence, rule))
    return found


_WORD = re.compile(r"[^\W_]+(?:['’][^\W_]+)*")


def _words(text: str) -> list[str]:
    return [word.casefold() for word in _WORD.findall(text)]


def _longest_shared_run(message: list[str], guide: list[str]) -> list[str]:
    """The longest run of consecutive words ``message`` and ``guide`` share."""
    matcher = difflib.SequenceMatcher(None, message, guide, autojunk=False)
    block = matcher.find_longest_match(0, len(message), 0, len(guide))
    return message[block.a : block.a + block.size]


def _guide_pieces(guide: str | Mapping[str, JsonValue]) -> list[tuple[str | None, str]]:
    """The guide as (fact key or None, text) pieces: a guide in words is one piece."""
    if isinstance(guide, str):
        return [(None, guide)]
    return [(key, value if isinstance(value, str) else str(value)) for key, value in guide.items() if value is not None]


def _named(key: str, agent_text: str) -> bool:
    words = [word for word in re.split(r"[\s_-]+", key.casefold()) if word]
    said = _words(agent_text)
    return bool(words) and any(said[i : i + len(words)] == words for i in range(len(said)))


def _leak_findings(
    event: UserEvent, guide: str | Mapping[str, JsonValue] | None, given: str, agent_so_far: str, last_agent: str
) -> list[FidelityFinding]:
    if not guide:
        return []
    message = _words(event.text)
    known = " ".join(_words(given))
    found: list[FidelityFinding] = []
    for key, text in _guide_pieces(guide):
        if key is not None and _named(key, agent_so_far):
            continue  # the agent asked for this fact
        if key is None and "?" in last_agent:
            continue  # the agent asked something: answering from the guidance is what it is for
        run = _longest_shared_run(message, _words(text))
        if len(run) < MIN_LEAK_WORDS or " ".join(run) in known:
            continue
        what = f"the response guide's fact {key!r}" if key else "the response guide"
        when = "the agent named it" if key else "the agent asked anything"
        rule = f"quotes {len(run)} consecutive words of {what} before {when}"
        found.append(_finding(event, "leaked_guide", _span_of(event.text, run), rule))
    return found


def _comparable(text: str) -> str:
    return " ".join(_words(text))


def _repeat_finding(
    event: UserEvent, earlier: Sequence[tuple[UserEvent, str]], agent_before: str
) -> FidelityFinding | None:
    mine = _comparable(event.text)
    if len(mine.split()) < MIN_REPEAT_WORDS:
        return None
    for previous, agent_then in earlier:
        theirs = _comparable(previous.text)
        if len(theirs.split()) < MIN_REPEAT_WORDS:
            continue
        if difflib.SequenceMatcher(None, mine, theirs, autojunk=False).ratio() < REPEAT_SIMILARITY:
            continue
        if agent_before and _similar(agent_before, agent_then):
            continue  # the agent asked the same again: the same answer is right
        rule = f"near-identical to its own message of turn {previous.turn}"
        return _finding(event, "repeated_itself", event.text.strip(), rule)
    return None


def _similar(first: str, second: str) -> bool:
    a, b = _comparable(first), _comparable(second)
    return a == b or difflib.SequenceMatcher(None, a, b, autojunk=False).ratio() >= REPEAT_SIMILARITY


def _ending_finding(transcript: Transcript, scores: Sequence[Score]) -> FidelityFinding | None:
    reason = (transcript.user_ended_reason or "").strip()
    if not _ended_by_user(transcript) or reason.startswith("gave_up"):
        return None
    open_steps = [step for step in transcript.steps if step.status in ("incomplete", "unsure")]
    if not open_steps:
        return None
    step = open_steps[0]
    if step.verdict == "not_met":
        why = "its step's last check said not met"
    elif any(s.metric == "goal_satisfaction" and s.verdict == "not_met" for s in scores):
        why = "the judge found its goal not satisfied"
    else:
        return None
    users = [e for e in transcript.events if isinstance(e, UserEvent)]
    closing = users[-1] if users and users[-1].turn > transcript.turns else None
    evidence = " / ".join(part for part in (closing.text if closing else "", reason or "done") if part)
    turn = closing.turn if closing else transcript.turns
    step_number = closing.step if closing else kind_named(transcript.kind).step_number(step.index)
    rule = f"ended the conversation as if its goal were reached while {why}"
    return FidelityFinding(turn=turn, step=step_number, kind="ended_early", evidence=evidence, rule=rule)


def _wished_end_finding(event: UserEvent, last_check: str | None) -> FidelityFinding | None:
    """A user model that said its goal was reached where it could not end the conversation (a simulation), while
    its step was open: not checked yet in this step, or last checked not met."""
    wish = (event.ending or "").strip()
    if not wish or wish.startswith("gave_up") or last_check not in (None, "not_met"):
        return None
    why = (
        "before the agent had replied in this step"
        if last_check is None
        else "while its step's last check said not met"
    )
    rule = f"said its goal was reached ({wish}) {why}"
    return _finding(event, "ended_early", event.text.strip(), rule)


def _finding(event: UserEvent, kind: str, evidence: str, rule: str) -> FidelityFinding:
    return FidelityFinding.model_validate(
        {"turn": event.turn, "step": event.step, "kind": kind, "evidence": evidence, "rule": rule}
    )


def _sentence_around(text: str, start: int, end: int) -> str:
    """The sentence(s) of ``text`` holding ``text[start:end]``."""
    left = max(text.rfind(mark, 0, start) for mark in ".!?\n")
    rights = [found for mark in ".!?\n" if (found := text.find(mark, end)) >= 0]
    right = min(rights) + 1 if rights else len(text)
    return text[left + 1 : right].strip()


def _span_of(text: str, run: list[str]) -> str:
    """The words ``run`` as they are written in ``text`` (case and punctuation kept)."""
    matches = list(_WORD.finditer(text))
    folded = [match.group(0).casefold() for match in matches]
    for i in range(len(folded) - len(run) + 1):
        if folded[i : i + len(run)] == run:
            return text[matches[i].start() : matches[i + len(run) - 1].end()]
    return " ".join(run)


# --------------------------------------------------------------------------------------------------------------
# One conversation


def _given_text(case: Case, transcript: Transcript, persona: Persona | None, step: int | None) -> str:
    """What the user may say without a guide: its goal, the session and the persona, as one text."""
    brief = kind_of(case).user_brief(case, step or 0)
    parts = [brief.goal or "", *(str(v) for v in transcript.session_parameters.values())]
    if persona is not None:
        parts += [persona.description, persona.personality, *(str(v) for v in persona.background.facts.values())]
        parts += [text for m in persona.misreports for text in (m.claim, m.say or "")]
    return " ".join(parts)


def check_fidelity(
    case: Case, transcript: Transcript, persona: Persona | None, scores: Sequence[Score]
) -> FidelityCheck:
    """The deterministic fidelity findings of one conversation (every rule but ``invented_fact``), in turn order,
    and how many turns the user model wrote. Golden cases have no simulated user: nothing is checked."""
    if not kind_of(case).plays_persona:
        return FidelityCheck([], 0)
    findings: list[FidelityFinding] = []
    earlier: list[tuple[UserEvent, str]] = []
    agent_so_far: list[str] = []
    last_agent = ""
    checked = 0
    last_check: dict[int | None, str] = {}
    for event in transcript.events:
        if isinstance(event, AgentEvent):
            last_agent = event.text
            agent_so_far.append(event.text)
            continue
        if isinstance(event, CheckEvent):
            last_check[event.step] = event.verdict
            continue
        if not isinstance(event, UserEvent):
            continue
        if event.source == "llm":
            checked += 1
            wish = _wished_end_finding(event, last_check.get(event.step))
            if wish is not None:
                findings.append(wish)
            guide = kind_of(case).user_brief(case, event.step or 0).response_guide
            given = _given_text(case, transcript, persona, event.step)
            findings += _character_findings(event)
            findings += _leak_findings(event, guide, given, "\n".join(agent_so_far), last_agent)
            repeat = _repeat_finding(event, earlier, last_agent)
            if repeat is not None:
                findings.append(repeat)
        earlier.append((event, last_agent))
    ending = _ending_finding(transcript, scores)
    if ending is not None:
        findings.append(ending)
    findings.sort(key=lambda finding: finding.turn)
    return FidelityCheck(findings, checked)


def user_brief_text(case: Case, transcript: Transcript, persona: Persona | None) -> str:
    """Everything the simulated user was given, as the ``invented_fact`` judge reads it: each step's goal and
    guide, the session parameters and the persona."""
    kind = kind_of(case)
    lines: list[str] = []
    for index in range(kind.step_count(case)):
        if kind.scripted_input(case, index) is not None:
            continue
        brief = kind.user_brief(case, index)
        lines.append(f"{kind.outcome_label(index)}: {brief.goal or '(none)'}")
        if isinstance(brief.response_guide, dict):
            lines += [f"  fact {key}: {value}" for key, value in brief.response_guide.items()]
        elif brief.response_guide:
            lines.append(f"  guidance: {brief.response_guide}")
        lines += [f"  scripted line: {line}" for line in brief.say]
    if transcript.session_parameters:
        lines.append("session:")
        lines += [f"  {key}: {value}" for key, value in transcript.session_parameters.items()]
    if persona is not None:
        lines.append(f"persona {persona.name}: {persona.description} {persona.personality}".strip())
        background = persona.background.model_dump(exclude={"facts"}, exclude_none=True)
        lines += [f"  {key}: {value}" for key, value in background.items()]
        lines += [f"  fact {key}: {value}" for key, value in persona.background.facts.items()]
        # Told to claim it: a claim that is not true is the test's, not a fact the user invented.
        lines += [f"  misreports on purpose: {misreport.claim}" for misreport in persona.misreports]
    return "\n".join(lines)


def invented_fact_question(case: Case, transcript: Transcript, persona: Persona | None) -> UserTurns | None:
    """The ``invented_fact`` question about one conversation: every turn the user model wrote, with its brief;
    None when there is no such turn (a golden case, a user that only said scripted lines)."""
    turns = [e for e in transcript.events if isinstance(e, UserEvent) and e.source == "llm"]
    if not turns:
        return None
    return UserTurns(brief=user_brief_text(case, transcript, persona), turns=turns)


async def judge_invented_facts(
    judge: LLMJudge, case: Case, transcript: Transcript, persona: Persona | None
) -> list[FidelityFinding]:
    """The ``invented_fact`` findings of one conversation: the answer the judge gave with the conversation's
    hallucination question when it was asked there, else one judge request about every turn the user model
    wrote (none without a judge model or without such turns). Call it only where :func:`user_could_cause`."""
    question = invented_fact_question(case, transcript, persona)
    if question is None or not judge.has_model:
        return []
    return await judge.invented_facts(brief=question.brief, events=transcript.events, turns=question.turns)


# --------------------------------------------------------------------------------------------------------------
# Whose failure


#: The failing checks a simulated user's slip can explain: a step it did not drive to its end (when what its checks
#: missed is something that did not happen, not something the agent did wrong), a goal it did not reach, a
#: conversation it talked into the turn cap. Every other failing check is about what the agent did.
_EXPLAINABLE = frozenset({"goal_achievement", "goal_satisfaction", "run"})


def _ended_by_user(transcript: Transcript) -> bool:
    """Whether the simulated user ended the conversation (a replay's recording running out is nobody's ending)."""
    return transcript.stop_reason == "user_ended" and transcript.user_ended_reason != RECORDING_ENDS


def _end_turn(transcript: Transcript) -> int:
    """The turn at which the conversation's end decided what was still open: its last turn, the user's closing
    message included (the end comes after that message)."""
    users = [e.turn for e in transcript.events if isinstance(e, UserEvent)]
    return max([*users, transcript.turns], default=0)


def _step_checks(transcript: Transcript, step: int | None) -> list[CheckEvent]:
    numbered = kind_named(transcript.kind).numbers_steps
    return [
        e for e in transcript.events if isinstance(e, CheckEvent) and (not numbered or step is None or e.step == step)
    ]


def _deciding_turn(score: Score, transcript: Transcript) -> int:
    """The turn whose agent reply decided a failing score: its own turn; for a step, its last check, or the end
    of the conversation when the user ended it while the step was open; for the goal, the end."""
    if score.turn is not None:
        return score.turn
    if score.metric == "goal_satisfaction" or (score.metric == "run" and _ended_by_user(transcript)):
        return _end_turn(transcript)
    if score.metric == "goal_achievement":
        outcome = next((o for o in transcript.steps if o.index == score.step), None)
        if outcome is not None and outcome.status == "incomplete" and _ended_by_user(transcript):
            return _end_turn(transcript)
        checks = _step_checks(transcript, score.step)
        if checks:
            return checks[-1].turn
    replies = [e.turn for e in transcript.events if isinstance(e, AgentEvent)]
    if score.step is not None and kind_named(transcript.kind).numbers_steps:
        in_step = [e.turn for e in transcript.events if isinstance(e, AgentEvent) and e.step == score.step]
        if in_step:
            return max(in_step)
    return max([*replies, transcript.turns], default=0)


def _failed(scores: Sequence[Score]) -> list[Score]:
    return [score for score in scores if score.required and score.verdict == "not_met"]


def agent_faults(
    transcript: Transcript, scores: Sequence[Score], findings: Sequence[FidelityFinding] = ()
) -> list[str]:
    """What the agent did wrong on its own anywhere in the conversation, each in words (empty when nothing).

    A fault is any check that failed because of what the agent did, required or not: a hallucination or a claim
    of tool use no call backs, a side claim, a forbidden phrase, a wrong tool call or argument, a call out of
    order, a variable set to the wrong value, a hand-off to the wrong place, an expectation in words the judge
    found unmet; and a step whose last check failed on such a thing. What did not happen (a call not made, words
    not said) is not a fault of its own: a conversation the user cut short explains it. Neither is a wrong value
    that is a fact the simulated user invented earlier (``findings``): the agent used what it was told. A
    hallucination is always the agent's."""
    faults: list[str] = []
    for score in scores:
        if score.verdict != "not_met":
            continue
        if score.metric == "goal_achievement":
            if score.step is not None and not any(
                o.index == score.step and o.status == "blocked" for o in transcript.steps
            ):
                checks = _step_checks(transcript, score.step)
                last = checks[-1] if checks else None
                if last is not None:
                    faults += [
                        f"{score.check}: {d.check}: {d.evidence}"
                        for d in last.details
                        if d.verdict == "not_met"
                        and not d.missing
                        and not d.check.startswith("judge: success_criteria")
                        and not _told_by_user(d.evidence, last.turn, findings)
                    ]
            continue
        if score.metric in _EXPLAINABLE or score.missing:
            continue
        turn = score.turn if score.turn is not None else _deciding_turn(score, transcript)
        if score.metric != "hallucination" and _told_by_user(score.reason, turn, findings):
            continue
        faults.append(f"{score.check}: {score.reason}" if score.reason else score.check)
    return faults


#: An agent reply that offers to close the conversation ("Is there anything else I can do for you?").
_CLOSING_OFFER = re.compile(
    r"\b(?:anything else|something else|any other questions?|is there (?:anything|something)|all set"
    r"|sonst noch|noch etwas|noch was|weitere(?:n)? fragen|kann ich (?:ihnen|dir) (?:sonst|noch))\b",
    re.IGNORECASE,
)
#: An agent reply that announces what it will do ("I will block your card right away", "Let me check that",
#: "Ich rufe die Feiertage gleich ab").
_PROMISE = re.compile(
    r"\b(?:i(?:'ll| will| am going to|'m going to| shall)|let me|we(?:'ll| will)|ich werde|wir werden)\b"
    r"|\bich\b.{0,80}?\b(?:gleich|sofort|umgehend)\b",
    re.IGNORECASE,
)


def left_hanging(transcript: Transcript) -> list[str]:
    """Agent replies that left the task hanging while it was open: the reply ran no tool and asked the user
    nothing but promised to act ("I will block your card right away") or offered to close ("Is there anything
    else I can do for you?"). A user who then ends the conversation, or slips, did not cause the task to stay
    undone: the agent stopped working on it. A reply its step's check found met is not hanging."""
    hanging: list[str] = []
    events = transcript.events
    for position, event in enumerate(events):
        if not isinstance(event, AgentEvent) or event.tool_calls or not event.text.strip():
            continue
        after = next((e for e in events[position + 1 :] if not isinstance(e, ErrorEvent)), None)
        if isinstance(after, CheckEvent) and after.verdict == "met":
            continue
        text = event.text.replace("\u2019", "'")
        sentences = [part.strip() for part in re.split(r"(?<=[.!?])\s+|\n+", text) if part.strip()]
        asks = [sentence for sentence in sentences if sentence.endswith("?") and not _CLOSING_OFFER.search(sentence)]
        if asks:
            continue  # it is waiting for the user's answer
        said = _CLOSING_OFFER.search(text) or _PROMISE.search(text)
        if said is not None:
            what = "offered to close" if _CLOSING_OFFER.search(text) else "promised to act"
            hanging.append(f"turn {event.turn}: the agent {what} without acting while the task was open: “{text}”")
    return hanging


_NUMBER = re.compile(r"\d+(?:[.,]\d+)*")
_DECIMAL = re.compile(r"\d+[.,]\d{1,2}")


def _number_forms(token: str) -> set[str]:
    """The forms a number is known by: each run of digits without leading zeros ("03.12.2026": 3, 12, 2026), and
    an amount with its decimals as a value ("1250.40" and "1250,40" are the JSON result 1250.4)."""
    forms = {run.lstrip("0") or "0" for run in re.findall(r"\d+", token)}
    if _DECIMAL.fullmatch(token):
        forms.add(token.replace(",", ".").rstrip("0").rstrip("."))
    return forms


def _numbers(text: str) -> set[str]:
    return {form for token in _NUMBER.findall(text) for form in _number_forms(token)}


def _unsourced(text: str, known: set[str]) -> list[str]:
    """The numbers of ``text`` that ``known`` gives neither as a value nor digit run by digit run."""
    new: list[str] = []
    for token in _NUMBER.findall(text):
        forms = _number_forms(token)
        value = token.replace(",", ".").rstrip("0").rstrip(".") if _DECIMAL.fullmatch(token) else None
        runs = {form for form in forms if form != value}
        if (value is not None and value in known) or runs <= known:
            continue
        new.append(token)
    return new


#: A string value of a tool result longer than this many words is free text, not a data field.
_FIELD_WORDS = 4


def _result_numbers(call: ToolCallRecord) -> set[str]:
    """The numbers a tool's answer gives. An action's answer (a refund, a note, a booking) gives only the numbers
    of its data fields (a refund id, an amount), not of free text in it: text an action merely echoes back, or a
    note's body, is no source of facts about the world."""
    if not call.answered:
        return set()
    if vocabulary(()).kind_of(call.name) != "action":
        return _numbers(call.result_text)
    found: set[str] = set()

    def walk(value: JsonValue) -> None:
        if isinstance(value, dict):
            for item in value.values():
                walk(item)
        elif isinstance(value, list):
            for item in value:
                walk(item)
        elif isinstance(value, str):
            if len(value.split()) <= _FIELD_WORDS:
                found.update(_numbers(value))
        elif value is not None and not isinstance(value, bool):
            found.update(_numbers(str(value)))

    result: JsonValue = call.result
    if isinstance(result, str):
        with contextlib.suppress(ValueError):
            result = json.loads(result)
    walk(result)
    return found


def unsourced_data(transcript: Transcript, scores: Sequence[Score]) -> list[str]:
    """Agent turns nobody judged for hallucination that state numbers (an amount, a date, an id) which nothing
    before them gave: no user turn or event, no tool result up to and including the turn, no session parameter
    (the agent's own tool arguments are not a source, nor free text in an action's answer).
    Without a judge's verdict such a turn may be a made-up answer, so it is the agent's fault as far as blame
    goes (in doubt, the agent's); a turn the judge found supported is not."""
    judged = {s.turn for s in scores if s.metric == "hallucination" and s.verdict in ("met", "n/a")}
    known = _numbers(" ".join(str(value) for value in transcript.session_parameters.values()))
    unsourced: list[str] = []
    for event in transcript.events:
        if isinstance(event, UserEvent):
            known |= _numbers(event.text)
        elif isinstance(event, InputEvent):
            known |= _numbers(json.dumps(event.payload, ensure_ascii=False))
        elif isinstance(event, AgentEvent):
            for call in event.tool_calls:
                # A call's arguments are the agent's own words: only what a tool answered is a source.
                known |= _result_numbers(call)
            if event.turn in judged:
                continue
            new = _unsourced(event.text, known)
            if new:
                unsourced.append(
                    f"turn {event.turn}: states {', '.join(new)}, which nothing before it gave, and no judge "
                    f"checked the turn: “{redacted_and_shortened(event.text.strip(), 200, mark='')}”"
                )
    return unsourced


_ID = re.compile(r"\b[A-Za-z]{1,6}[-_]?\d{2,}\b")
_ISO_DATE = re.compile(r"\b\d{4}-\d{2}-\d{2}\b")


def _shape(value: str) -> str:
    return re.sub(r"[^\W\d_]", "a", re.sub(r"\d", "9", value))


def contradicted_calls(transcript: Transcript) -> list[str]:
    """Agent turns whose words contradict the arguments of a tool call of the same turn: it says card C-1234 and
    called with C-1243, says 89.90 EUR and refunded 8.99, says October 2025 and asked for 2024, or names an id or a
    date and called the tool with no arguments at all. Whatever a check in words would say, the call was not the
    one the reply describes, which is the agent's fault as far as blame goes."""
    found: list[str] = []
    for event in transcript.events:
        if not isinstance(event, AgentEvent) or not event.tool_calls or not event.text.strip():
            continue
        ids = {token.casefold(): token for token in _ID.findall(event.text)}
        dates = set(_ISO_DATE.findall(normalize(event.text, ["dates"])))
        for call in event.tool_calls:
            problem = _contradiction(call, event.text, ids, dates)
            if problem is not None:
                found.append(
                    f"turn {event.turn}: {problem}: “{redacted_and_shortened(event.text.strip(), 200, mark='')}”"
                )
    return found


def _contradiction(call: ToolCallRecord, text: str, ids: dict[str, str], dates: set[str]) -> str | None:
    if not call.arguments:
        named = sorted([*ids.values(), *dates])
        return f"called {call.name} with no arguments while it says {named[0]}" if named else None
    for key, value in call.arguments.items():
        given = f"called {call.name} with {key}={value!r}"
        if isinstance(value, str) and _ISO_DATE.fullmatch(value[:10]) and dates and value[:10] not in dates:
            return f"{given} while it says {', '.join(sorted(dates))}"
        if isinstance(value, str) and _ID.fullmatch(value) and value.casefold() not in ids:
            same = sorted(said for folded, said in ids.items() if _shape(folded) == _shape(value.casefold()))
            if same:
                return f"{given} while it says {same[0]}"
        whole = isinstance(value, int | float) and float(value).is_integer()
        if isinstance(value, int | float) and not isinstance(value, bool) and (not whole or abs(value) >= 1000):
            # Small whole numbers (a limit, a count) are said for many reasons: only years, ids and amounts count.
            said = _said_numbers(text, whole=whole, digits=len(str(abs(int(value)))))
            if said and not any(abs(number - float(value)) < 1e-9 for _, number in said):
                return f"{given} while it says {said[0][0]}"
    return None


def _said_numbers(text: str, *, whole: bool, digits: int) -> list[tuple[str, float]]:
    """The numbers of ``text`` of one kind: whole numbers of ``digits`` digits, or amounts with decimals."""
    said: list[tuple[str, float]] = []
    for token in _NUMBER.findall(text):
        if whole and token.isdigit() and len(token) == digits:
            said.append((token, float(token)))
        elif not whole and _DECIMAL.fullmatch(token):
            said.append((token, float(token.replace(",", "."))))
    return said


def _told_by_user(evidence: str, turn: int, findings: Sequence[FidelityFinding]) -> bool:
    """Whether a failed check's evidence holds a fact the simulated user invented before ``turn``."""
    text = evidence.casefold()
    return any(
        finding.kind == "invented_fact" and finding.turn <= turn and finding.evidence.strip().casefold() in text
        for finding in findings
        if finding.evidence.strip()
    )


def user_could_cause(scores: Sequence[Score]) -> bool:
    """Whether the failure of these scores could be the simulated user's: something required failed and none
    of it is a hallucination (only then is the ``invented_fact`` question worth a judge request)."""
    failed = _failed(scores)
    return bool(failed) and not any(score.metric == "hallucination" and score.verdict == "not_met" for score in scores)


@dataclass(frozen=True)
class Blame:
    """Whose a failing conversation is: ``cause`` is the finding that makes it the simulated user's (then the
    case is ``user_error``), else None; ``kept`` says why a failure with findings stays the agent's."""

    cause: FidelityFinding | None
    kept: str | None = None


def blame(findings: Sequence[FidelityFinding], transcript: Transcript, scores: Sequence[Score]) -> Blame:
    """Whose failure a failing conversation is (see :func:`user_error_cause`), with the reason a failure the
    simulated user also slipped in stays the agent's."""
    failed = _failed(scores)
    if not findings or not failed:
        return Blame(None)
    first = min(findings, key=lambda finding: finding.turn)
    slip = f"the simulated user slipped ({user_error_reason(first)}), but the failure stays the agent's"
    faults = [
        *agent_faults(transcript, scores, findings),
        *left_hanging(transcript),
        *unsourced_data(transcript, scores),
        *contradicted_calls(transcript),
    ]
    if faults:
        return Blame(None, f"{slip}: it has a fault of its own: {faults[0]}")
    unexplained = [
        score
        for score in failed
        if not (score.metric in _EXPLAINABLE or score.missing)
        and not _told_by_user(score.reason, _deciding_turn(score, transcript), findings)
    ]
    if unexplained:
        return Blame(None, f"{slip}: the slip does not explain {unexplained[0].check}")
    late = [score for score in failed if first.turn > _deciding_turn(score, transcript)]
    if late:
        turn = _deciding_turn(late[0], transcript)
        return Blame(None, f"{slip}: {late[0].check} was decided at turn {turn}, before the slip")
    return Blame(first)


def user_error_cause(
    findings: Sequence[FidelityFinding], transcript: Transcript, scores: Sequence[Score]
) -> FidelityFinding | None:
    """The finding that makes a failing conversation the simulated user's (``user_error``), or None: in doubt,
    the failure is the agent's. All of these must hold:

    * the agent has no fault of its own anywhere in the conversation (:func:`agent_faults`);
    * every required failing check is one a user's slip can explain (a step, the goal, the turn cap, or
      something that did not happen);
    * the earliest finding comes strictly before what decided each of them, in the order things were said
      (:func:`_deciding_turn`): a user message of turn N comes before the agent's reply of turn N, which it may
      have caused; a slip after the reply that decided a failure did not cause it. The end of a conversation
      the user cut short comes after its closing message, so ending while the step was open is such a slip.

    The earliest finding is returned."""
    return blame(findings, transcript, scores).cause


def user_error_reason(finding: FidelityFinding) -> str:
    """The reason a ``user_error`` case gives first: which finding of the simulated user it coincides with."""
    return f"simulated user, turn {finding.turn}: {finding.kind}: “{finding.evidence}” ({finding.rule})"
