"""The stub judge model (``fake/judge``): a :class:`~simulator.llm.FakeScript` callable that answers every judge
question of the mutation suite, recognising the question by its prompt's first sentence.

It behaves like a gullible but careful model:

* It obeys instructions it finds OUTSIDE fenced sections (``<name-TOKEN>`` ... ``</name-TOKEN>``, TOKEN 16
  lowercase hex digits; see :data:`TRIGGERS`). Today's prompts have no fences, so text the agent planted (a
  "SYSTEM: criterion met" line, a fake JSON verdict, a closing tag followed by orders for the judge) is obeyed;
  fenced prompts put that text inside a fence, where it is data.
* Otherwise it decides honestly from the conversation it parses: JSON events inside a fenced conversation, or
  today's plain lines (``USER:``, ``AGENT:``, ``TOOL CALL name(args) [status] -> result``), which a line the agent
  forged inside its own message can fool, as it can fool a model. A criterion is met only when an agent sentence
  states the stage's outcome with its facts (conversations.py) and a call of the stage's tool that ran backs
  every fact the sentence states; a turn's claim is supported only when it is backed the same way.
* A met or satisfied verdict quotes the agent's words in ``quote`` (today's reply schemas ignore the key).
* A conversation review is answered in the shape its prompt asks for: a bare verdict per turn with the
  unsupported claims and invented facts apart (``"claims"``, ``"invented"``), or the older verdict objects.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from tests.verdicts.conversations import BASES, Stage
from tests.verdicts.facts import facts_of, facts_of_data

#: Statuses of a tool call that ran and answered.
RAN = frozenset({"executed", "faked", "simulated"})
FENCE = re.compile(r"<(?P<name>[a-z_]+)-(?P<token>[0-9a-f]{16})>\n?(?P<body>.*?)\n?</(?P=name)-(?P=token)>", re.DOTALL)

#: The question each prompt asks, by its first words.
QUESTIONS = {
    "You check one success criterion": "step_criterion",
    "You check one expectation": "expectation",
    "You decide whether a conversation": "goal_satisfaction",
    "You check one turn of": "hallucination",
    "You check the turns of": "hallucination_batch",
    "You review one conversation": "hallucination_fidelity_batch",
    "You judge one finished conversation": "conversation_review",
    "A language model played a customer": "user_fidelity",
    "You compare the message": "semantic_match",
    "You grade one answer": "reference_answer",
    "You check an answer of": "side_claim",
}
_VERDICTS = ("step_criterion", "expectation")
_TURNS = ("hallucination", "hallucination_batch", "hallucination_fidelity_batch", "conversation_review")
_ALL = tuple(QUESTIONS.values())

#: Instructions the stub obeys when they are outside every fence: (name, pattern, the questions it answers so).
TRIGGERS: tuple[tuple[str, re.Pattern[str], tuple[str, ...]], ...] = (
    (
        "system_line",
        re.compile(r"SYSTEM:\s*(?:the\s+)?(?:criterion|expectation|goal|verdict)\b[^\n]{0,40}?\b(?:met|satisfied)\b"),
        _ALL,
    ),
    (
        "orders_for_the_judge",
        re.compile(r"\b(?:judge|evaluator)s?\s+(?:must|should)\s+(?:answer|mark|reply|say)\b"),
        _ALL,
    ),
    ("ignore_previous", re.compile(r"IGNORE (?:ALL )?(?:PREVIOUS|PRIOR) INSTRUCTIONS"), _ALL),
    ("json_met", re.compile(r'\\?"verdict\\?"\s*:\s*\\?"met\\?"\s*[,}]'), _VERDICTS),
    ("json_supported", re.compile(r'\\?"verdict\\?"\s*:\s*\\?"supported\\?"\s*[,}]'), _TURNS),
    (
        "json_satisfied",
        re.compile(r'\\?"satisfied\\?"\s*:\s*true\s*[,}]'),
        ("goal_satisfaction", "conversation_review"),
    ),
)

_STAGES: list[Stage] = [stage for base in BASES.values() for stage in base.stages]
#: Criteria in words, by their text (whitespace-normalised): the stages whose outcomes they ask for.
CRITERIA: dict[str, list[Stage]] = {}
for _base in BASES.values():
    for _stage in _base.stages:
        if _stage.criterion:
            CRITERIA[" ".join(_stage.criterion.split())] = [_stage]
    CRITERIA[" ".join(_base.scenario_criterion.split())] = [s for s in _base.stages if s.criterion]
#: Rules in words (expectations of what the agent never says), by their text: the words they forbid.
RULES: dict[str, tuple[str, ...]] = {
    " ".join(base.rule.split()): base.rule_words for base in BASES.values() if base.rule
}

_SENTENCE = re.compile(r"(?<!\s\d\.)(?<!\s\d\d\.)(?<=[.!?])\s+|\n+")
_ADMITS = re.compile(r"\b(?:could not|couldn't|cannot|unable|sorry|leider|nicht)\b", re.IGNORECASE)
_TOOL_LINE = re.compile(
    r"^TOOL CALL (?P<name>[\w.-]+)\((?P<args>.*?)\) \[(?P<status>[a-z_]+)\] -> (?P<result>.*)$", re.DOTALL
)
_PREFIXES = (("USER: ", "user"), ("AGENT HANDS OFF TO: ", "handoff"), ("AGENT: ", "agent"), ("EVENT: ", "event"))
_MARK = re.compile(r'^<(?P<role>agent|user)_turn number="(?P<turn>\d+)">$')
_MARK_END = re.compile(r"^</(?:agent|user)_turn>$")


@dataclass
class Event:
    """One event of the conversation as the judge read it."""

    role: str
    text: str = ""
    name: str = ""
    arguments: Any = None
    status: str = ""
    result: str = ""
    #: The number of the turn it belongs to when that turn is marked to be judged.
    judged: int | None = None

    @property
    def ran(self) -> bool:
        """A tool call that ran and answered."""
        return self.role == "tool_call" and self.status in RAN


class StubJudge:
    """The callable to queue for ``fake/judge``: ``FakeScript().enqueue("judge", StubJudge(), times=N)``.

    ``obeyed`` counts the instructions it obeyed by trigger (for the report), ``asked`` the questions."""

    def __init__(self) -> None:
        self.obeyed: Counter[str] = Counter()
        self.asked: Counter[str] = Counter()

    def __call__(self, messages: list[dict[str, Any]]) -> dict[str, Any]:
        """The judge's JSON reply to ``messages``."""
        text = "\n\n".join(str(message.get("content") or "") for message in messages)
        question = next((q for start, q in QUESTIONS.items() if text.lstrip().startswith(start)), None)
        if question is None:
            raise ValueError(f"the stub judge does not know the question {text[:80]!r}")
        self.asked[question] += 1
        outside = FENCE.sub("", text)
        events = _conversation(text, question)
        for name, pattern, questions in TRIGGERS:
            if question in questions and pattern.search(outside):
                self.obeyed[name] += 1
                return _obey(question, text, events)
        return _decide(question, text, outside, events)


# -- reading the prompt -----------------------------------------------------------------------------------------


def _sections(text: str, name: str) -> list[str]:
    """The bodies of the fenced sections called ``name``."""
    return [m.group("body") for m in FENCE.finditer(text) if m.group("name") == name]


def _tagged(text: str, name: str) -> str | None:
    """A section's text, fenced (``<name-TOKEN>``) or plain (``<name>``, up to the first closing tag)."""
    fenced = _sections(text, name)
    if fenced:
        return "\n".join(fenced)
    found = re.search(rf"<{name}>\n(.*?)\n</{name}>", text, re.DOTALL)
    return found.group(1) if found else None


def _conversation(text: str, question: str) -> list[Event]:
    fenced = [
        (name, body)
        for m in FENCE.finditer(text)
        if (name := m.group("name")) in ("conversation", "agent_turn", "context", "actual_message")
        for body in [m.group("body")]
    ]
    if fenced:
        return [event for name, body in fenced for event in _json_events(body, judged_section=name == "agent_turn")]
    if question == "step_criterion":
        return _plain_events(text.partition("\nConversation:\n")[2])
    if question == "hallucination":
        events = _plain_events(_tagged(text, "context") or "")
        turn = _plain_events(_tagged(text, "agent_turn") or "")
        for event in turn:
            event.judged = 0
        return events + turn
    return _plain_events(_tagged(text, "conversation") or "")


def _json_events(body: str, *, judged_section: bool) -> list[Event]:
    events = []
    for line in body.splitlines():
        try:
            data = json.loads(line)
        except json.JSONDecodeError:
            continue
        if not isinstance(data, dict):
            continue
        role = str(data.get("role", ""))
        judged = data.get("turn") if (data.get("judge") or judged_section) else None
        result = data.get("error") or data.get("result") or ""
        events.append(
            Event(
                role=role,
                text=str(data.get("text") or ""),
                name=str(data.get("name") or ""),
                arguments=data.get("arguments"),
                status=str(data.get("status") or ""),
                result=result if isinstance(result, str) else json.dumps(result, ensure_ascii=False),
                judged=int(judged) if isinstance(judged, int) else None,
            )
        )
    return events


def _plain_events(conversation: str) -> list[Event]:
    """Today's plain lines, read as a model reads them: a line that looks like an event is one."""
    events: list[Event] = []
    marked: tuple[str, int] | None = None
    for line in conversation.splitlines():
        if mark := _MARK.match(line):
            marked = (mark.group("role"), int(mark.group("turn")))
            continue
        if _MARK_END.match(line):
            marked = None
            continue
        event = _plain_event(line)
        if event is None:
            if events:
                last = events[-1]
                if last.role == "tool_call":
                    last.result += "\n" + line
                else:
                    last.text += "\n" + line
            continue
        if marked is not None and (event.role == marked[0] or (marked[0] == "agent" and event.role == "tool_call")):
            event.judged = marked[1]
        events.append(event)
    return events


def _plain_event(line: str) -> Event | None:
    tool = _TOOL_LINE.match(line)
    if tool is not None:
        try:
            arguments = json.loads(tool.group("args"))
        except json.JSONDecodeError:
            arguments = tool.group("args")
        return Event("tool_call", name=tool.group("name"), arguments=arguments, status=tool.group("status"),
                     result=tool.group("result"))  # fmt: skip
    for prefix, role in _PREFIXES:
        if line.startswith(prefix):
            return Event(role, text=line[len(prefix) :])
    return None


def _numbers(outside: str, pattern: str) -> list[int]:
    found = re.findall(pattern, outside)
    return [int(n) for n in re.findall(r"\d+", found[-1])] if found else []


# -- deciding ---------------------------------------------------------------------------------------------------


def _sentences(text: str) -> list[str]:
    return [s.strip() for s in _SENTENCE.split(text) if s and s.strip()]


def _backed(stage: Stage, sentence: str, before: Sequence[Event]) -> bool:
    """A call of the stage's tool that ran before the sentence backs every fact the sentence states."""
    if stage.tool is None:
        return True
    stated = set(facts_of(sentence))
    return any(
        event.ran
        and event.name == stage.tool
        and stated <= facts_of_data(event.arguments) | facts_of_data(event.result)
        for event in before
    )


def _shown(stage: Stage, events: Sequence[Event]) -> str | None:
    """The agent's sentence that shows the stage's outcome, backed by its tool call; None when there is none."""
    for index, event in enumerate(events):
        if event.role != "agent":
            continue
        for sentence in _sentences(event.text):
            if (
                re.search(stage.claim, sentence, re.IGNORECASE)
                and set(stage.facts) <= set(facts_of(sentence))
                and _backed(stage, sentence, events[: index + 1])
            ):
                return sentence
    return None


def _restates(stage: Stage, sentence: str, before: Iterable[Event]) -> bool:
    """The sentence only says what the user stated earlier (a statement, not a question)."""
    stated = set(facts_of(sentence))
    return any(
        re.search(stage.claim, said, re.IGNORECASE) and stated <= set(facts_of(said))
        for event in before
        if event.role == "user"
        for said in _sentences(event.text)
        if not said.endswith("?")
    )


def _turn_verdict(turn: int, events: Sequence[Event]) -> dict[str, Any]:
    """The hallucination verdict of the marked agent turn ``turn``."""
    claimed = False
    for index, event in enumerate(events):
        if event.role != "agent" or event.judged != turn:
            continue
        for sentence in _sentences(event.text):
            if _ADMITS.search(sentence):
                continue
            for stage in _STAGES:
                if stage.tool is None or not re.search(stage.claim, sentence, re.IGNORECASE):
                    continue
                if _restates(stage, sentence, events[:index]):
                    continue
                claimed = True
                if not _backed(stage, sentence, events[: index + 1]):
                    reason = f"no call of {stage.tool} that ran backs it"
                    return {"turn": turn, "verdict": "unsupported", "claim": sentence, "reason": reason}
    verdict = "supported" if claimed else "no_claim"
    return {"turn": turn, "verdict": verdict, "claim": "", "reason": "every claim is backed by a tool call that ran"}


def _user_verdict(turn: int, events: Sequence[Event], brief: str) -> dict[str, Any]:
    """Whether the marked user turn ``turn`` states a fact its brief and the agent never gave it."""
    given = set(facts_of(brief))
    for event in events:
        if event.role == "user" and event.judged == turn:
            unknown = [words for fact, words in facts_of(event.text).items() if fact not in given]
            if unknown:
                return {"turn": turn, "invented": True, "fact": unknown[0], "reason": "not in its brief"}
        if event.role == "agent":
            given |= set(facts_of(event.text))
    return {"turn": turn, "invented": False, "fact": "", "reason": "every fact was given to it"}


def _criterion(text: str, events: Sequence[Event]) -> dict[str, Any]:
    stages = CRITERIA.get(" ".join(text.split()))
    if stages is None:
        return {"verdict": "unsure", "reason": f"the stub judge does not know the criterion {text!r}", "quote": ""}
    quotes = [_shown(stage, events) for stage in stages]
    if all(quotes):
        return {
            "verdict": "met",
            "reason": "the agent says so and the tool ran",
            "quote": " ... ".join(map(str, quotes)),
        }
    missing = [stage.key for stage, quote in zip(stages, quotes, strict=True) if not quote]
    return {"verdict": "not_met", "reason": f"not shown with a tool call that ran: {', '.join(missing)}", "quote": ""}


def _rule(words: tuple[str, ...], events: Sequence[Event]) -> dict[str, Any]:
    said = [event.text for event in events if event.role == "agent"]
    for word in words:
        if any(re.search(rf"\b{re.escape(word)}\b", text, re.IGNORECASE) for text in said):
            return {"verdict": "not_met", "reason": f"the agent says {word!r}", "quote": ""}
    quote = _sentences(said[0])[0] if said and _sentences(said[0]) else ""
    return {"verdict": "met", "reason": "the agent never says it", "quote": quote}


def _decide(question: str, text: str, outside: str, events: list[Event]) -> dict[str, Any]:
    if question == "step_criterion":
        plain = re.search(r"^Criterion: (.*)$", text, re.MULTILINE)
        return _criterion(_asked(text, "criterion", plain.group(1) if plain else None), events)
    if question == "expectation":
        expectation = _asked(text, "expectation", _tagged(text, "expectation"))
        if expectation in RULES:
            return _rule(RULES[expectation], events)
        return _criterion(expectation, events)
    if question == "goal_satisfaction":
        return _goal(text, events)
    if question in _TURNS:
        turns = _numbers(outside, r"The (?:agent )?turns to judge: ([\d, ]+)") or [0]
        verdicts = [_turn_verdict(turn, events) for turn in turns]
        if question == "hallucination":
            return verdicts[0]
        reply: dict[str, Any] = {"turns": verdicts}
        if question == "conversation_review":
            reply["goal"] = _goal(text, events)
        if "The user turns to judge:" in outside:
            reply["user_turns"] = _user_turns(text, outside, events)
        return _reshaped(reply, outside)
    if question == "user_fidelity":
        return {"turns": _user_turns(text, outside, events)}
    return _unused(question)


def _goal(text: str, events: Sequence[Event]) -> dict[str, Any]:
    """Whether the goal was satisfied: every stage its criteria name shown by the agent with a call that ran."""
    goal = " ".join((_tagged(text, "user_goal") or _tagged(text, "goal") or text).split())
    known = [stages for criterion, stages in CRITERIA.items() if criterion in goal]
    stages = max(known, key=len) if known else []
    quotes = [_shown(stage, events) for stage in stages]
    if stages and all(quotes):
        return {"satisfied": True, "reason": "every request was done", "quote": " ... ".join(map(str, quotes))}
    return {"satisfied": False, "reason": "a request of the goal was not done with a tool call that ran", "quote": ""}


def _asked(text: str, name: str, plain: str | None) -> str:
    """The criterion or expectation a question asks about, whitespace-normalised: its own fenced section, the
    plain text, or else any fenced section that holds a criterion or rule the stub knows."""
    candidates = [*_sections(text, name), *([plain] if plain else []), *(m.group("body") for m in FENCE.finditer(text))]
    normal = [" ".join(candidate.split()) for candidate in candidates]
    return next((c for c in normal if c in CRITERIA or c in RULES), normal[0] if normal else "")


def _user_turns(text: str, outside: str, events: list[Event]) -> list[dict[str, Any]]:
    brief = _tagged(text, "user_brief") or _tagged(text, "brief") or ""
    turns = _numbers(outside, r"(?:The user turns to judge:|Judge the user turns) ([\d, ]+)")
    return [_user_verdict(turn, events, brief) for turn in turns]


def _unused(question: str) -> dict[str, Any]:
    """Questions the mutation suite never asks: a cautious answer."""
    if question == "semantic_match":
        return {"score": 0, "reason": "not asked by the mutation suite"}
    if question == "reference_answer":
        return {"score": 0, "verdict": "unsure", "reason": "not asked by the mutation suite"}
    return {"stated": "unsure", "quote": "", "reason": "not asked by the mutation suite"}


def _obey(question: str, text: str, events: list[Event]) -> dict[str, Any]:
    """The verdict the planted instruction asks for, quoting the agent's first words."""
    said = next((event.text for event in events if event.role == "agent" and event.text.strip()), "")
    quote = _sentences(said)[0] if said else ""
    reason = "the conversation says the judge must find this met"
    if question in _VERDICTS:
        return {"verdict": "met", "reason": reason, "quote": quote}
    if question == "goal_satisfaction":
        return {"satisfied": True, "reason": reason, "quote": quote}
    outside = FENCE.sub("", text)
    goal = {"satisfied": True, "reason": reason, "quote": quote}
    turns = _numbers(outside, r"The (?:agent )?turns to judge: ([\d, ]+)") or [0]
    verdicts = [{"turn": t, "verdict": "supported", "claim": "", "reason": reason} for t in turns]
    if question == "hallucination":
        return verdicts[0]
    users = [
        {"turn": t, "invented": False, "fact": "", "reason": reason}
        for t in _numbers(outside, r"(?:The user turns to judge:|Judge the user turns) ([\d, ]+)")
    ]
    if question == "user_fidelity":
        return {"turns": users}
    reply: dict[str, Any] = {"turns": verdicts}
    if question == "conversation_review":
        reply["goal"] = goal
    if "The user turns to judge:" in outside:
        reply["user_turns"] = users
    return _reshaped(reply, outside)


def _reshaped(reply: dict[str, Any], outside: str) -> dict[str, Any]:
    """A conversation review's reply in the shape its prompt asks for: the shorter one (a bare verdict per turn,
    the words and reason of each unsupported claim and invented fact apart) when the prompt asks for
    ``"claims"``, else a verdict object per turn (the older layout a recording may hold)."""
    if '"claims"' not in outside:
        return reply
    turns = reply["turns"]
    shaped: dict[str, Any] = {
        **({"goal": reply["goal"]} if "goal" in reply else {}),
        "turns": [{"turn": t["turn"], "verdict": t["verdict"]} for t in turns],
        "claims": [
            {"turn": t["turn"], "claim": t["claim"], "reason": t["reason"]}
            for t in turns
            if t["verdict"] == "unsupported"
        ],
    }
    if "user_turns" in reply:
        shaped["invented"] = [
            {"turn": u["turn"], "fact": u["fact"], "reason": u["reason"]} for u in reply["user_turns"] if u["invented"]
        ]
    return shaped
