"""Rules on goals and scripts: two requests in one goal, criteria any reply meets, say lines that are never said
or cut by commas."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from typing import Any

from yaml.nodes import ScalarNode, SequenceNode

from simulator.kinds import kind_of
from simulator.loading._yaml import DataPath
from simulator.loading.lint._fact_rules import _deterministic
from simulator.loading.lint._facts import _words
from simulator.loading.lint._rule import Hit, SuiteView, rule
from simulator.models import (
    ExpectationSpec,
)

_REQUEST_VERBS = _words(
    """ask request get find cancel change update book order buy purchase return refund exchange reset check track
    schedule reschedule report open close upgrade downgrade apply subscribe unsubscribe add remove delete transfer
    pay reserve renew register sign log obtain arrange move redeem claim dispute compare enquire inquire verify
    activate deactivate block unblock"""
    # German: infinitives end a clause ("die Bestellung stornieren"), imperatives start it.
    """ fragen erfragen stornieren ändern buchen bestellen kaufen zurückgeben erstatten kündigen prüfen verfolgen
    reklamieren umtauschen beantragen anmelden abmelden frage storniere ändere buche bestelle kaufe kündige prüfe
    beantrage"""
)
_JOINERS = re.compile(r"\s*(?:,?\s+(?:and then|and also|and|then|und dann|und|dann|sowie)\s+|;\s*)", re.I)
_LEADING = {"also", "then", "please", "bitte", "auch", "dann", "to"}


def _request_clause(clause: str) -> bool:
    words = [w.strip(".,!?;:\"'").casefold() for w in clause.split()]
    words = [w for w in words if w]
    while words and words[0] in _LEADING:
        words = words[1:]
    if not words:
        return False
    # English imperatives start the clause; German infinitives end it.
    return words[0] in _REQUEST_VERBS or words[-1] in _REQUEST_VERBS


def _two_requests(goal: str) -> str | None:
    questions = [q for q in re.split(r"(?<=\?)", goal) if q.strip().endswith("?")]
    if len(questions) >= 2:
        return f"asks {len(questions)} questions"
    clauses = _JOINERS.split(goal)
    requests = [c.strip() for c in clauses if _request_clause(c)]
    if len(requests) >= 2:
        return "asks for " + " and ".join(_quoted(c.rstrip(".")) for c in requests[:3])
    return None


@rule("two-goals", "warning")
def two_goals(view: SuiteView) -> Iterator[Hit]:
    """A goal asks for two things at once: two questions, or two requests joined by and / then / und.

    The simulated user works on one goal at a time and the check decides it once: with two requests one gets
    lost, or the step is decided on the half that happened first.
    """
    for base, case in view.cases():
        goals = [((*base, *s.where, "goal"), s.goal) for s in kind_of(case).stages(case) if s.goal]
        for path, goal in goals:
            found = _two_requests(goal)
            if found:
                yield Hit(
                    path,
                    f"the goal {found}: the simulated user pursues one thing at a time",
                    "split it into two steps, each with its own goal and success criteria",
                )


_VAGUE_WORDS = _words(
    # who, and glue
    """agent assistant bot chatbot user customer caller person they them it the a an is are be was were to of and
    or in with for their his her its that this all any some s by on well has have does do so as way manner
    overall who"""
    # saying anything
    """ responds respond response responses replies reply replied answers answer answered says say said something
    talks communicates reacts engages acknowledges acknowledge interacts handles handle handled deals addresses
    address addressed request requests question questions query queries message messages input conversation
    interaction need needs issue concern concerns inquiry topic provides provide gives give offers information
    info assistance help helps support supports resolves solution"""
    # praise
    """ helpful helpfully polite politely friendly nice good great appropriate appropriately properly proper
    correct correctly adequate adequately reasonable reasonably relevant useful satisfactory satisfied satisfies
    satisfy happy successfully successful accurately accurate clearly clear professional professionally courteous
    courteously respectful respectfully effectively effective sensible sensibly meaningful meaningfully fine okay
    ok kind empathetic"""
)


def _quoted(text: str, limit: int = 80) -> str:
    """``text`` in quotes, shortened to ``limit`` characters for a message."""
    return repr(text if len(text) <= limit else text[: limit - 1] + "…")


def _vague(text: str) -> bool:
    words = re.findall(r"[a-zäöüß']+", text.casefold())
    return bool(words) and all(w.strip("'") in _VAGUE_WORDS for w in words)


@rule("vague-criteria", "warning")
def vague_criteria(view: SuiteView) -> Iterator[Hit]:
    """Criteria any reply meets: no deterministic check and only vague words, or nothing to check at all.

    "The agent responds helpfully" is met by whatever the agent says; a goal step with neither
    ``success_criteria`` nor ``checks`` is complete after the agent's first reply. Either way the step tests
    nothing.
    """
    fix = "say what the agent must do or say (a fact, an action, a tool call), or add a deterministic check"
    for base, case in view.cases():
        for stage in kind_of(case).stages(case):
            if stage.goal is None:
                continue
            where, criteria, what = (*base, *stage.where), stage.success_criteria, stage.label
            checks = [check for _, check in stage.checks if isinstance(check, ExpectationSpec)]
            if any(_deterministic(check) for check in checks):
                continue
            if criteria is None and not checks:
                if stage.needs_criteria:
                    yield Hit(
                        (*where, "goal"),
                        f"{what} has neither success_criteria nor checks: it is complete after any reply",
                        "add success_criteria or checks that say when the step is reached",
                    )
                continue
            if criteria is not None and _vague(criteria):
                yield Hit(
                    (*where, "success_criteria"),
                    f"the success criteria of {what} ({_quoted(criteria)}) are met by almost any reply",
                    fix,
                )
            for path, check in stage.checks:
                if isinstance(check, ExpectationSpec) and check.text and _vague(check.text):
                    yield Hit((*base, *path), f"the check {_quoted(check.text)} is met by almost any reply", fix)
        for e, expectation in enumerate(case.expectations):
            if not _deterministic(expectation) and expectation.message is None and _vague(expectation.text or ""):
                yield Hit(
                    (*base, "expectations", e),
                    f"the expectation {_quoted(expectation.text or '')} is met by almost any reply",
                    fix,
                )


@rule("say-beyond-max-turns", "error")
def say_beyond_max_turns(view: SuiteView) -> Iterator[Hit]:
    """``max_turns`` is lower than the number of scripted ``say`` lines of the same step (or scenario).

    The user says one line per turn, so the lines after ``max_turns`` are never said: the step ends (failed,
    or unsure) before its own script is over.
    """
    for base, case in view.cases():
        places = [
            ((*base, *s.where), s.max_turns, len(s.say), s.script_label)
            for s in kind_of(case).stages(case)
            if s.goal is not None
        ]
        for where, max_turns, lines, what in places:
            if lines > max_turns:
                given = "max_turns" in _raw(view, where)
                yield Hit(
                    (*where, "max_turns") if given else (*where, "say"),
                    f"{what} has {lines} say lines but max_turns is {max_turns}"
                    + ("" if given else " (the default)")
                    + f": {_line_range(max_turns + 1, lines)} never said",
                    f"set max_turns to at least {lines}, or drop the lines that are not needed",
                )


@rule("say-split-by-comma", "warning")
def say_split_by_comma(view: SuiteView) -> Iterator[Hit]:
    """A ``say`` list written in brackets whose commas cut a sentence into lines.

    In ``[...]`` a comma separates items: ``say: ["Yes", block it please]`` is two lines, said in two turns, not
    one sentence. Found when an unquoted line of words in lower case follows a one-word line ("yes", "sure",
    "hello"), as the rest of its sentence; lines each in quotes are taken as meant.
    """
    for base, case in view.cases():
        places = [(*base, *stage.where, "say") for stage in kind_of(case).stages(case) if len(stage.say) > 1]
        for where in places:
            node = view.located.node(where)
            if not isinstance(node, SequenceNode) or not node.flow_style:
                continue
            items = [item for item in node.value if isinstance(item, ScalarNode)]
            cut = next((i for i in range(1, len(items)) if _continues(items[i - 1].value, items[i])), None)
            if cut is None:
                continue
            lines = [item.value for item in items]
            meant = [*lines[: cut - 1], f"{lines[cut - 1]}, {lines[cut]}", *lines[cut + 1 :]]
            yield Hit(
                where,
                f"say is {len(lines)} lines ({', '.join(_quoted(line) for line in lines)}), said one per turn: "
                "in [...] a comma separates the lines",
                f"if one sentence was meant, write it whole in quotes: say: [{', '.join(map(json.dumps, meant))}]; "
                "if these are separate lines, put each in quotes",
            )


def _continues(before: str, item: ScalarNode) -> bool:
    """Whether the unquoted ``item`` reads as the rest of a sentence that ``before`` (one word, such as "yes",
    "sure" or "hello") starts: words in lower case."""
    words = before.strip().split()
    return not item.style and item.value[:1].islower() and " " in item.value.strip() and len(words) == 1


def _line_range(first: int, last: int) -> str:
    return f"line {first} is" if first == last else f"lines {first}-{last} are"


def _raw(view: SuiteView, where: DataPath) -> Any:
    current: Any = view.located.data
    for part in where:
        try:
            current = current[part]
        except (KeyError, IndexError, TypeError):
            return {}
    return current if isinstance(current, dict) else {}
