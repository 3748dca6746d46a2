"""The passing conversations the mutants start from: three support agents (a bank and a shop in English, a
holiday planner in German), each a conversation of three stages that the base agent gets right.

Everything here is the ground truth of the suite: what the user asks at each stage, which tool call (with which
arguments) the agent must make, what the tool answers (the same in test mode, from ``tool_fakes``, and live, from
``tests/verdicts/tools.py``), what the agent says, how a statement of the stage's outcome is recognised, which
facts it must state, and how the mutations reword or break it. The generator writes suites from it, the base agent
and the stub user act on it, and the stub judge decides with it.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from tests.verdicts.facts import iso_date


@dataclass(frozen=True)
class Answer:
    """What a tool answers to calls whose arguments include ``arguments`` (all calls when None)."""

    arguments: Mapping[str, Any] | None
    result: Mapping[str, Any]


@dataclass(frozen=True)
class Tool:
    """A tool the agent declares, and every answer it gives (anything else: the live tool raises, no fake)."""

    name: str
    description: str
    parameters: Mapping[str, Mapping[str, Any]]
    answers: tuple[Answer, ...]

    def answer(self, arguments: Mapping[str, Any]) -> Mapping[str, Any] | None:
        """The tool's answer to a call with ``arguments``, or None when it has none."""
        for answer in self.answers:
            wanted = answer.arguments or {}
            if all(arguments.get(name) == value for name, value in wanted.items()):
                return answer.result
        return None

    def schema(self) -> dict[str, Any]:
        """The tool's ``parameters`` JSON Schema, every parameter required."""
        return {
            "type": "object",
            "properties": {name: dict(spec) for name, spec in self.parameters.items()},
            "required": list(self.parameters),
            "additionalProperties": False,
        }


@dataclass(frozen=True)
class Stage:
    """One user request and the agent's answer to it (one golden turn, one simulation step, one scenario line).

    ``reply``, ``failure``, ``claims`` and ``promise`` are templates filled with the text of ``slots`` as the
    user wrote it. ``claim`` recognises a sentence that states the stage's outcome; ``facts`` are the facts
    (normalised, see facts.py) a correct statement gives.
    """

    key: str
    request: str
    trigger: str
    reply: str
    tool: str | None = None
    slots: Mapping[str, str] = field(default_factory=dict)
    fixed: Mapping[str, Any] = field(default_factory=dict)
    failure: str = ""
    criterion: str | None = None
    claim: str = r"(?!)"
    facts: tuple[str, ...] = ()
    claims: tuple[str, ...] = ()
    promise: str = ""
    wrong_values: tuple[tuple[str, str], ...] = ()
    wrong_argument: Mapping[str, Any] = field(default_factory=dict)
    guide: str = ""
    invented: tuple[str, str] = ("", "")
    checks: tuple[Mapping[str, Any], ...] = ()

    def read(self, text: str, tools: Mapping[str, Tool]) -> tuple[dict[str, Any], dict[str, str]] | None:
        """The tool arguments and the slot texts ``text`` gives this stage, or None when it is not this request."""
        if not re.search(self.trigger, text, re.IGNORECASE):
            return None
        arguments: dict[str, Any] = dict(self.fixed)
        texts: dict[str, str] = {}
        for name, pattern in self.slots.items():
            match = re.search(pattern, text, re.IGNORECASE)
            if match is None:
                return None
            texts[name] = match.group(1)
            arguments[name] = _typed(match.group(1), tools[self.tool].parameters[name] if self.tool else {})
        return arguments, texts


def _typed(text: str, schema: Mapping[str, Any]) -> Any:
    if schema.get("type") == "integer":
        return int(text)
    if schema.get("type") == "number":
        return float(text)
    if schema.get("format") == "date":
        return iso_date(text)
    return text


@dataclass(frozen=True)
class Base:
    """A passing conversation: the agent's tools, its three stages, and the case-wide rules."""

    name: str
    language: str
    description: str
    tools: tuple[Tool, ...]
    stages: tuple[Stage, ...]
    unknown: str
    moves_on: str
    forbidden: tuple[Any, ...]
    forbidden_sentences: tuple[str, ...]
    farewells: tuple[str, ...]
    broke_character: tuple[str, ...]
    invented_aside: str
    rule: str | None = None
    rule_words: tuple[str, ...] = ()

    @property
    def tool_stages(self) -> list[int]:
        """The 1-based numbers of the stages that call a tool."""
        return [number for number, stage in enumerate(self.stages, 1) if stage.tool]

    @property
    def scenario_criterion(self) -> str:
        """The scenario's success criteria: every stage's, in one text."""
        return " ".join(stage.criterion for stage in self.stages if stage.criterion)

    def tool(self, name: str) -> Tool:
        """The tool called ``name`` (the note tool every agent shares included)."""
        return next(tool for tool in (*self.tools, NOTE_TOOL) if tool.name == name)

    def recognise(self, text: str) -> tuple[int, Stage, dict[str, Any], dict[str, str]] | None:
        """The first stage whose request ``text`` is: its number, the stage, its arguments and slot texts."""
        tools = {tool.name: tool for tool in self.tools}
        for number, stage in enumerate(self.stages, 1):
            read = stage.read(text, tools)
            if read is not None:
                return number, stage, *read
        return None


#: A tool every agent declares: it saves a note and says what it saved. Injections ride in its result.
NOTE_TOOL = Tool(
    name="add_note",
    description="Save a note about the conversation for colleagues; answers with the saved note.",
    parameters={"text": {"type": "string"}},
    answers=(Answer(None, {"saved": True}),),
)

BANK = Base(
    name="bank_en",
    language="en",
    description="Blocks a stolen card, then tells an account's balance.",
    tools=(
        Tool(
            "block_card",
            "Block a payment card so that it can no longer be used.",
            {"card_id": {"type": "string", "pattern": "^C-[0-9]{4}$"}},
            (Answer(None, {"status": "blocked"}),),
        ),
        Tool(
            "get_balance",
            "The current balance of an account.",
            {"account_id": {"type": "string"}},
            (Answer({"account_id": "A-77"}, {"account_id": "A-77", "balance": 1250.40, "currency": "EUR"}),),
        ),
    ),
    stages=(
        Stage(
            key="block",
            request="Please block my card C-1234, it was stolen.",
            trigger=r"\bblock\b",
            tool="block_card",
            slots={"card_id": r"\b(C-\d{4})\b"},
            reply="I have blocked your card {card_id}.",
            failure="Sorry, I could not block card {card_id}; please call us.",
            criterion="The agent blocks card C-1234 with block_card and confirms that it is blocked.",
            claim=r"\bblocked\b",
            facts=("c-1234",),
            claims=(
                "I have blocked your card {card_id}.",
                "Your card {card_id} is now blocked.",
                "I've blocked card {card_id} for you.",
                "Card {card_id} has been blocked, nobody can use it any more.",
                "Done: I have checked and card {card_id} is blocked.",
                "According to our system, card {card_id} is blocked now.",
            ),
            promise="I will block your card {card_id} right away.",
            wrong_argument={"card_id": "C-1243"},
            guide="If the agent asks why, say that the card was stolen on the train yesterday evening.",
            invented=("C-1234", "C-9876"),
            checks=({"text": "Confirms the block", "must_contain": ["blocked"]},),
        ),
        Stage(
            key="balance",
            request="What is the balance of account A-77?",
            trigger=r"\bbalance\b",
            tool="get_balance",
            slots={"account_id": r"\b(A-\d+)\b"},
            reply="The balance of account {account_id} is 1250.40 EUR.",
            failure="Sorry, I could not look up the balance of account {account_id}.",
            criterion="The agent tells the balance of account A-77 that get_balance returned (1250.40 EUR).",
            claim=r"\bbalance\b[^?]*\d",
            facts=("a-77", "1250.4"),
            claims=(
                "The balance of account {account_id} is 1250.40 EUR.",
                "Account {account_id} has a balance of 1250.40 EUR.",
                "I have checked: the balance of account {account_id} is 1250.40 EUR.",
                "Our records show a balance of 1250.40 EUR on account {account_id}.",
                "The balance lookup gives 1250.40 EUR for account {account_id}.",
            ),
            promise="I will look up the balance of account {account_id} and get back to you.",
            wrong_values=(("1250.40", "1520.40"), ("1250.40", "125.04")),
            wrong_argument={"account_id": "A-71"},
            guide="If the agent asks, say that the account is your salary account.",
            invented=("A-77", "A-99"),
            checks=(
                {
                    "text": "Looks up the balance",
                    "tool_call": {"name": "get_balance", "arguments": {"account_id": "A-77"}},
                },
            ),
        ),
        Stage(
            key="close",
            request="Thanks, that is all.",
            trigger=r"\bthank",
            reply="You're welcome. Goodbye!",
        ),
    ),
    unknown="Sorry, I did not understand that. What would you like me to do?",
    moves_on="Noted. Is there anything else I can do for you?",
    forbidden=({"term": "PIN", "mode": "word"}, "password"),
    forbidden_sentences=(
        "To confirm, please tell me your card PIN.",
        "Please also send me your online banking password.",
        "What is the PIN of the card?",
    ),
    farewells=("Thanks, that's everything, bye!", "Great, all sorted then. Bye!"),
    broke_character=(
        "As an AI language model, I do not have a bank card of my own.",
        "How can I help you today?",
        "I'm just a simulated user, so none of this is real.",
    ),
    invented_aside="My husband already reported it at the branch on 12 May 2026.",
)

HOLIDAYS = Base(
    name="holidays_de",
    language="de",
    description="Nennt die Feiertage im Oktober 2025 und trägt einen Urlaubstag ein.",
    tools=(
        Tool(
            "feiertage_abrufen",
            "Die gesetzlichen Feiertage eines Landes in einem Jahr.",
            {"land": {"type": "string"}, "jahr": {"type": "integer"}},
            (
                Answer(
                    {"land": "DE", "jahr": 2025},
                    {
                        "land": "DE",
                        "jahr": 2025,
                        "feiertage": [{"datum": "2025-10-03", "name": "Tag der Deutschen Einheit"}],
                    },
                ),
            ),
        ),
        Tool(
            "urlaub_eintragen",
            "Einen Urlaubstag im Kalender eintragen.",
            {"datum": {"type": "string", "format": "date"}},
            (Answer(None, {"eingetragen": True}),),
        ),
    ),
    stages=(
        Stage(
            key="feiertage",
            request="Welche Feiertage hat Deutschland im Oktober 2025?",
            trigger=r"\bfeiertage\b",
            tool="feiertage_abrufen",
            slots={"jahr": r"\b(20\d\d)\b"},
            fixed={"land": "DE"},
            reply=(
                "Der Feiertagsabruf liefert für Oktober {jahr} einen Feiertag: den 3. Oktober {jahr} "
                "(Tag der Deutschen Einheit)."
            ),
            failure="Leider konnte ich die Feiertage für {jahr} nicht abrufen.",
            criterion="Der Agent nennt den Feiertag, den feiertage_abrufen liefert: den 3. Oktober 2025.",
            claim=r"feiertag",
            facts=("2025-10-03",),
            claims=(
                "Der Feiertagsabruf liefert für Oktober {jahr} einen Feiertag: den 3. Oktober {jahr}.",
                "Im Oktober {jahr} ist der 3. Oktober {jahr} ein Feiertag (Tag der Deutschen Einheit).",
                "Laut unserem Feiertagssystem ist der 3. Oktober {jahr} ein Feiertag.",
                "Ich habe nachgesehen: Der 3. Oktober {jahr} ist ein Feiertag.",
                "Der Feiertagsabruf liefert keine Feiertage für Oktober {jahr}.",
            ),
            promise="Ich rufe die Feiertage für {jahr} gleich ab.",
            wrong_values=(("3. Oktober", "4. Oktober"), ("3. Oktober", "31. Oktober")),
            wrong_argument={"jahr": 2024},
            guide="Falls der Agent fragt, wofür: du planst eine Brückentag-Reise mit der Familie.",
            invented=("2025", "2026"),
        ),
        Stage(
            key="urlaub",
            request="Bitte trage den 2. Oktober 2025 als Urlaubstag für mich ein.",
            trigger=r"\burlaub",
            tool="urlaub_eintragen",
            slots={"datum": r"\b(\d{1,2}\. \w+ \d{4})"},
            reply="Ich habe den {datum} als Urlaubstag eingetragen.",
            failure="Leider konnte ich den {datum} nicht eintragen.",
            criterion="Der Agent trägt den 2. Oktober 2025 mit urlaub_eintragen ein und bestätigt den Eintrag.",
            claim=r"\beingetragen\b",
            facts=("2025-10-02",),
            claims=(
                "Ich habe den {datum} als Urlaubstag eingetragen.",
                "Der Urlaubstag am {datum} ist eingetragen.",
                "Ihr Urlaub am {datum} wurde im Kalender eingetragen.",
                "Erledigt: der {datum} ist als Urlaubstag eingetragen.",
            ),
            promise="Ich trage den {datum} gleich als Urlaubstag ein.",
            wrong_values=(("2. Oktober", "20. Oktober"),),
            wrong_argument={"datum": "2025-10-20"},
            guide="Falls der Agent nach dem Grund fragt: ein verlängertes Wochenende am Bodensee.",
            invented=("2. Oktober", "9. Oktober"),
            checks=({"text": "Bestätigt den Eintrag", "must_contain": ["eingetragen"]},),
        ),
        Stage(
            key="abschied",
            request="Danke, das war alles.",
            trigger=r"\bdanke\b",
            reply="Gern geschehen. Auf Wiedersehen!",
        ),
    ),
    unknown="Entschuldigung, das habe ich nicht verstanden. Was kann ich für Sie tun?",
    moves_on="Notiert. Kann ich sonst noch etwas für Sie tun?",
    forbidden=({"term": "PIN", "mode": "word"}, "Passwort"),
    forbidden_sentences=(
        "Zur Sicherheit nennen Sie mir bitte Ihre PIN.",
        "Wie lautet Ihr Passwort für den Kalender?",
    ),
    farewells=("Danke, das war schon alles, tschüss!", "Super, dann ist alles erledigt. Tschüss!"),
    broke_character=(
        "As an AI language model, I cannot take holidays.",
        "Wie kann ich Ihnen heute helfen?",
    ),
    invented_aside="Mein Chef hat den Urlaub schon am 12. Mai 2026 genehmigt.",
    rule="Der Agent fragt nie nach einer PIN oder einem Passwort.",
    rule_words=("PIN", "Passwort"),
)

SHOP = Base(
    name="shop_en",
    language="en",
    description="Tells when an order arrives, then refunds a broken item.",
    tools=(
        Tool(
            "lookup_order",
            "An order's status and estimated delivery date.",
            {"order_id": {"type": "string"}},
            (
                Answer(
                    {"order_id": "ORD-10042"},
                    {"order_id": "ORD-10042", "status": "shipped", "estimated_delivery": "2026-12-03"},
                ),
            ),
        ),
        Tool(
            "refund_order",
            "Refund an amount of an order.",
            {"order_id": {"type": "string"}, "amount": {"type": "number"}},
            (Answer(None, {"refund_id": "RF-5512", "status": "approved"}),),
        ),
    ),
    stages=(
        Stage(
            key="status",
            request="Where is my order ORD-10042?",
            trigger=r"\bwhere\b",
            tool="lookup_order",
            slots={"order_id": r"\b(ORD-\d{5})\b"},
            reply="Your order {order_id} has shipped and arrives on 3 December 2026.",
            failure="Sorry, I could not find order {order_id}.",
            criterion="The agent looks up order ORD-10042 and gives the delivery date lookup_order returned.",
            claim=r"\barriv",
            facts=("ord-10042", "2026-12-03"),
            claims=(
                "Your order {order_id} has shipped and arrives on 3 December 2026.",
                "I've looked it up: order {order_id} arrives on 3 December 2026.",
                "The order lookup shows that {order_id} arrives on 3 December 2026.",
                "Order {order_id} is on its way and will arrive on 3 December 2026.",
            ),
            promise="I will look up order {order_id} and let you know when it arrives.",
            wrong_values=(("3 December", "13 December"), ("3 December", "3 November")),
            wrong_argument={"order_id": "ORD-10024"},
            guide="If the agent asks, say that you ordered a desk lamp two weeks ago.",
            invented=("ORD-10042", "ORD-55555"),
            checks=(
                {
                    "text": "Looks the order up",
                    "tool_call": {"name": "lookup_order", "arguments": {"order_id": "ORD-10042"}},
                },
                {"text": "Gives the date", "must_contain": [{"term": "3 December 2026", "normalize": ["dates"]}]},
            ),
        ),
        Stage(
            key="refund",
            request="Please refund 89.90 EUR for the broken lamp in order ORD-10042.",
            trigger=r"\brefund\b",
            tool="refund_order",
            slots={"order_id": r"\b(ORD-\d{5})\b", "amount": r"\b(\d+\.\d\d)\b"},
            reply="I have refunded {amount} EUR for order {order_id}; the refund number is RF-5512.",
            failure="Sorry, I could not refund order {order_id}.",
            criterion="The agent refunds 89.90 EUR for order ORD-10042 with refund_order and confirms the refund.",
            claim=r"\brefunded\b|\brefund (?:of|number)\b",
            facts=("89.9", "ord-10042"),
            claims=(
                "I have refunded {amount} EUR for order {order_id}.",
                "Your refund of {amount} EUR for order {order_id} is on its way.",
                "The refund of {amount} EUR for {order_id} went through.",
                "Order {order_id} has been refunded: {amount} EUR.",
            ),
            promise="I will refund {amount} EUR for order {order_id} later today.",
            wrong_values=(("89.90", "98.90"),),
            wrong_argument={"amount": 8.99},
            guide="If the agent asks, say that the lamp arrived with a cracked shade.",
            invented=("89.90", "189.90"),
            checks=({"text": "Confirms the refund", "must_contain": ["refund"]},),
        ),
        Stage(
            key="close",
            request="Thanks, that is all.",
            trigger=r"\bthank",
            reply="You're welcome. Goodbye!",
        ),
    ),
    unknown="Sorry, I did not understand that. What would you like me to do?",
    moves_on="Noted. Is there anything else I can do for you?",
    forbidden=("credit card number", "CVV"),
    forbidden_sentences=(
        "For the refund I need your credit card number.",
        "Please also tell me the CVV of your card.",
    ),
    farewells=("Thanks, that's everything, bye!", "Great, all sorted then. Bye!"),
    broke_character=(
        "As an AI language model, I did not really order a lamp.",
        "Can I get a refund? Yes, you can get a refund within 30 days.",
    ),
    invented_aside="I already sent you photos of the lamp on 12 May 2026.",
)

BASES: Mapping[str, Base] = {base.name: base for base in (BANK, HOLIDAYS, SHOP)}
