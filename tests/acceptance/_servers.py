"""Two stub servers for the acceptance tests, both OpenAI-compatible ``/v1/chat/completions`` on 127.0.0.1.

**The agent under test: "Lieferservice"**, an LLM-shaped delivery-date support agent nobody here wrote. It is
reached only through Simulator's ``http`` adapter, so its tool calls go through the tool router (faked in test
mode, run for real with ``--live``). Its behaviour is scripted and deterministic: it reads the LAST user message
(lower case) and the ``tool`` messages that came after it, and the first matching row decides.

==========================================  =====================================================================
the last user message contains              the agent
==========================================  =====================================================================
"defekt"                                    answers HTTP 500, every time (agent error)
(tool results after the user message)       answers from them, see below
"buchen"                                    calls ``express_buchen {"plz": PLZ}`` (``requires_approval``)
"express", English ("when"/"delivery")      "According to our system your express delivery arrives on
                                            23.12.2026." -- no tool call (unsupported claim)
"express"                                   "Laut Feiertagsabfrage ist eine Expresslieferung am 23.12.2026
                                            möglich." -- no tool call (unsupported claim)
"liefertermin" + "lager"                    calls ``feiertage_abfragen {"jahr": 2026, "bundesland": "BY"}`` AND
                                            ``lager_pruefen {"plz": PLZ}`` in one round (an extra call)
"liefertermin"                              calls ``feiertage_abfragen {"jahr": 2026, "bundesland": "BY"}``
"lager"                                     calls ``lager_pruefen {"plz": PLZ}``
"sperrgut"                                  calls ``tarif_abfragen {"art": "sperrgut"}`` (the live tool raises)
"kostet"                                    "Der Versand nach PLZ kostet 23,60 EUR."
"weihnachten"                               "Bestellen Sie bis zum 18.12.2026, dann kommt Ihre Lieferung vor
                                            Weihnachten an."
"klimaneutral"                              "Wir liefern mit Elektrofahrzeugen."
"danke" / "fertig" / "tschüss"              "Gern geschehen!"
anything else                               "Wie kann ich helfen? Nennen Sie mir bitte Ihre Postleitzahl."
==========================================  =====================================================================

PLZ is the first five-digit number in the message, else 80331. Answers from tool results (each tool message's
``content`` is parsed with ``json.loads``, as a real agent would):

* ``feiertage_abfragen``: an object with a ``feiertage`` list -> the first working day from 24.12.2026 on that is
  no holiday and no weekend: "Ihr Liefertermin ist Montag, der 28.12.2026." with the tool's list. Anything
  else that parses (a JSON *string*: a tool result that was encoded twice) is read as "no holidays known", so
  the agent answers 24.12.2026 -- the wrong date. An ``error`` object -> "Leider konnte ich die Feiertage nicht
  abrufen."
* ``lager_pruefen``: ``{"vorraetig": true, "menge": N}`` -> "Der Artikel ist vorrätig (N Stück)."
* ``express_buchen``: ``{"gebucht": true}`` -> "Ihre Expresslieferung ist gebucht."; an error -> "Ihre
  Expressbuchung wartet auf Freigabe."
* ``tarif_abfragen``: an error -> "Leider konnte ich den Sperrgut-Tarif nicht abrufen."

**The model stub** serves the simulated USER (model ``stub-user``) and the JUDGE (model ``stub-judge``) for suites
that name ``openai/stub-user`` / ``openai/stub-judge`` with ``api_base`` pointing here (through litellm):

* user: its message is the current goal (``Your goal right now: ...`` in the system prompt). A goal with
  "fertig" makes it end at once: ``done: true, reason: "goal_reached: ..."``. A goal with ``NUTZER-KAPUTT``
  gets a reply that is not JSON, every time (the user model fails).
* judge: a request containing ``RICHTER-KAPUTT`` gets a reply that is not JSON, every time. Otherwise, per
  reply schema (recognised from the ``response_format`` litellm sends, else from the prompt):
  criterion / expectation verdicts are ``met`` when every double-quoted text of the criterion appears in an
  agent message of the fenced conversation (``not_met`` otherwise, ``unsure`` when the criterion says
  ``UNSICHER``), quoting the first such text (or the last agent message); goal satisfaction likewise over the
  goal text (satisfied unless that says ``not_met``); a reference answer
  scores 90 (pass) when each date and amount of the reference is in the answer, else 20 (fail); hallucination
  is ``supported`` when the turn shows a tool call, else ``no_claim`` (per marked turn when batched); side
  claims are never stated; semantic match is 4 when the dates and amounts agree, else 1.

Every request is recorded (``agent_requests``, ``user_requests``, ``judge_requests``) so tests can check what
each side saw. Each server answers at most :data:`MAX_REQUESTS` requests and then only HTTP 503, so a runaway
loop ends.
"""

from __future__ import annotations

import json
import re
import time
from dataclasses import dataclass, field
from datetime import date, timedelta
from typing import Any

from aiohttp import web

from simulator.fence import read_sections
from tests._loop_thread import LoopThread

MAX_REQUESTS = 2000
DEFAULT_PLZ = "80331"
NOT_JSON = "Das ist leider kein JSON {"

_PLZ = re.compile(r"\b(\d{5})\b")
_QUOTED = re.compile(r'"([^"\n]+)"')
_FACTS = re.compile(r"\d{1,2}\.\d{1,2}\.\d{4}|\d+,\d{2}")


# --------------------------------------------------------------------------------------------------------------
# The agent under test


def _last_user_index(messages: list[dict[str, Any]]) -> int:
    for index in range(len(messages) - 1, -1, -1):
        if messages[index].get("role") == "user":
            return index
    return -1


def _call(name: str, arguments: dict[str, Any], number: int) -> dict[str, Any]:
    return {
        "id": f"call_{name}_{number}",
        "type": "function",
        "function": {"name": name, "arguments": json.dumps(arguments)},
    }


def _delivery_date(holidays: set[str]) -> date:
    day = date(2026, 12, 24)
    while day.weekday() >= 5 or day.isoformat() in holidays:
        day += timedelta(days=1)
    return day


_WEEKDAYS = ("Montag", "Dienstag", "Mittwoch", "Donnerstag", "Freitag", "Samstag", "Sonntag")


def _answer_from_tool(name: str, content: str) -> str:
    try:
        data: Any = json.loads(content)
    except (TypeError, ValueError):
        data = None
    failed = isinstance(data, dict) and "error" in data
    if name == "feiertage_abfragen":
        if failed:
            return "Leider konnte ich die Feiertage nicht abrufen."
        holidays = data.get("feiertage") if isinstance(data, dict) else None
        day = _delivery_date({str(h) for h in holidays} if isinstance(holidays, list) else set())
        return f"Ihr Liefertermin ist {_WEEKDAYS[day.weekday()]}, der {day:%d.%m.%Y}."
    if name == "lager_pruefen":
        if failed or not isinstance(data, dict):
            return "Leider konnte ich den Lagerbestand nicht prüfen."
        if not data.get("vorraetig"):
            return "Der Artikel ist leider nicht vorrätig."
        return f"Der Artikel ist vorrätig ({data.get('menge', 0)} Stück)."
    if name == "express_buchen":
        if failed:
            return "Ihre Expressbuchung wartet auf Freigabe."
        return "Ihre Expresslieferung ist gebucht."
    if name == "tarif_abfragen":
        if failed or not isinstance(data, dict):
            return "Leider konnte ich den Sperrgut-Tarif nicht abrufen."
        return f"Der Sperrgut-Tarif beträgt {data.get('preis', '?')} EUR."
    return "Dazu kann ich leider nichts sagen."


def lieferservice(body: dict[str, Any]) -> tuple[int, dict[str, Any]]:
    """The agent's answer to one chat-completions request: (HTTP status, JSON body)."""
    messages = [m for m in body.get("messages", []) if isinstance(m, dict)]
    last = _last_user_index(messages)
    text = str(messages[last].get("content") or "") if last >= 0 else ""
    lowered = text.lower()
    if "defekt" in lowered:
        return 500, {"error": {"message": "Lieferservice: interner Fehler", "type": "server_error"}}
    calls_by_id: dict[str, str] = {}
    answers: list[str] = []
    for message in messages[last + 1 :]:
        for call in message.get("tool_calls") or []:
            calls_by_id[call["id"]] = call["function"]["name"]
        if message.get("role") == "tool":
            name = calls_by_id.get(str(message.get("tool_call_id")), "")
            answers.append(_answer_from_tool(name, str(message.get("content"))))
    if answers:
        return 200, _completion(" ".join(answers))
    found = _PLZ.search(text)
    plz = found.group(1) if found else DEFAULT_PLZ
    holidays = ("feiertage_abfragen", {"jahr": 2026, "bundesland": "BY"})
    tools: list[tuple[str, dict[str, Any]]] = []
    reply: str | None = None
    if "buchen" in lowered:
        tools = [("express_buchen", {"plz": plz})]
    elif "express" in lowered and ("when" in lowered or "delivery" in lowered):
        reply = "According to our system your express delivery arrives on 23.12.2026."
    elif "express" in lowered:
        reply = "Laut Feiertagsabfrage ist eine Expresslieferung am 23.12.2026 möglich."
    elif "liefertermin" in lowered and "lager" in lowered:
        tools = [holidays, ("lager_pruefen", {"plz": plz})]
    elif "liefertermin" in lowered:
        tools = [holidays]
    elif "lager" in lowered:
        tools = [("lager_pruefen", {"plz": plz})]
    elif "sperrgut" in lowered:
        tools = [("tarif_abfragen", {"art": "sperrgut"})]
    elif "kostet" in lowered:
        reply = f"Der Versand nach {plz} kostet 23,60 EUR."
    elif "weihnachten" in lowered:
        reply = "Bestellen Sie bis zum 18.12.2026, dann kommt Ihre Lieferung vor Weihnachten an."
    elif "klimaneutral" in lowered:
        reply = "Wir liefern mit Elektrofahrzeugen."
    elif any(word in lowered for word in ("danke", "fertig", "tschüss")):
        reply = "Gern geschehen!"
    else:
        reply = "Wie kann ich helfen? Nennen Sie mir bitte Ihre Postleitzahl."
    if tools:
        calls = [_call(name, arguments, number) for number, (name, arguments) in enumerate(tools, start=1)]
        return 200, _completion(None, calls)
    return 200, _completion(reply)


def _completion(content: str | None, tool_calls: list[dict[str, Any]] | None = None, model: str = "") -> dict[str, Any]:
    message: dict[str, Any] = {"role": "assistant", "content": content}
    if tool_calls:
        message["tool_calls"] = tool_calls
    return {
        "id": "chatcmpl-stub",
        "object": "chat.completion",
        "created": int(time.time()),
        "model": model or "lieferservice",
        "choices": [{"index": 0, "message": message, "finish_reason": "tool_calls" if tool_calls else "stop"}],
        "usage": {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15},
    }


# --------------------------------------------------------------------------------------------------------------
# The simulated user's model


_GOAL = re.compile(r"^Your goal(?: right now)?: (.+)$", re.MULTILINE)


def user_reply(body: dict[str, Any]) -> str:
    """What the user model answers: a UserMove as JSON text (or, on purpose, something that is not JSON)."""
    # The system prompt, and in a simulation the step's goal in a last system message after the chat.
    system = "\n".join(str(m.get("content")) for m in body.get("messages", []) if m.get("role") == "system")
    found = _GOAL.search(system)
    goal = found.group(1).strip() if found else "Ich habe eine Frage."
    if "NUTZER-KAPUTT" in goal:
        return NOT_JSON
    if "fertig" in goal.lower():
        return json.dumps(
            {"message": "Passt schon, ich bin fertig.", "done": True, "reason": "goal_reached: alles erledigt"}
        )
    return json.dumps({"message": goal, "done": False, "reason": "fragt nach"})


# --------------------------------------------------------------------------------------------------------------
# The judge's model


def _schema_name(body: dict[str, Any], prompt: str) -> str:
    response_format = body.get("response_format")
    if isinstance(response_format, dict):
        schema = response_format.get("json_schema")
        if isinstance(schema, dict) and isinstance(schema.get("name"), str):
            return str(schema["name"])
    # Each question by the first words of its prompt (the step judge's system message comes first).
    starts = [
        ("You check the turns", "HallucinationBatchReply"),
        ("You review one conversation", "HallucinationFidelityBatchReply"),
        ("You judge one finished conversation", "ReviewReply"),
        ("You check one success criterion", "CriterionReply"),
        ("You check one expectation", "ExpectationReply"),
        ("You decide whether a conversation", "GoalSatisfactionReply"),
        ("You grade one answer", "ReferenceAnswerReply"),
        ("You check an answer", "SideClaimReply"),
        ("You compare the message", "SemanticMatchReply"),
    ]
    return next((name for start, name in starts if prompt.startswith(start)), "HallucinationReply")


def _section(prompt: str, name: str) -> str:
    return read_sections(prompt).get(name, "")


def _events(prompt: str, name: str = "conversation") -> list[dict[str, Any]]:
    return [json.loads(line) for line in _section(prompt, name).splitlines() if line.strip()]


def _agent_text(events: list[dict[str, Any]]) -> list[str]:
    return [event["text"] for event in events if event["role"] == "agent"]


def _decide(criterion: str, said: list[str]) -> tuple[str, str]:
    """The verdict and, for met, the agent's words that show it."""
    if "UNSICHER" in criterion:
        return "unsure", ""
    wanted = _QUOTED.findall(criterion)
    if not wanted:
        return ("met", said[-1]) if said else ("not_met", "")
    text = "\n".join(said)
    return ("met", wanted[0]) if all(fragment in text for fragment in wanted) else ("not_met", "")


def _judged(events: list[dict[str, Any]], role: str) -> list[int]:
    numbers: list[int] = []
    for event in events:
        if event.get("judge") and event["role"] == role and event["turn"] not in numbers:
            numbers.append(event["turn"])
    return numbers


def _goal(prompt: str, said: list[str], reason: str) -> dict[str, Any]:
    verdict, quote = _decide(_section(prompt, "user_goal"), said)
    return {"satisfied": verdict != "not_met", "reason": reason, "quote": quote or "".join(said[-1:])}


def _turn_verdict(events: list[dict[str, Any]], number: int) -> str:
    """A marked agent turn's verdict: supported when it called a tool, else no claim."""
    called = any(e["role"] == "tool_call" and e["turn"] == number and e.get("judge") for e in events)
    return "supported" if called else "no_claim"


def judge_reply(body: dict[str, Any]) -> str:
    """What the judge model answers, as JSON text (or, on purpose, something that is not JSON)."""
    prompt = "\n".join(str(m.get("content")) for m in body.get("messages", []))
    if "RICHTER-KAPUTT" in prompt:
        return NOT_JSON
    schema = _schema_name(body, prompt)
    reason = "Stub-Richter: nach festen Regeln entschieden."
    said = _agent_text(_events(prompt))
    if schema in ("CriterionReply", "CriterionVerdict", "ExpectationReply"):
        asked = _section(prompt, "expectation" if schema == "ExpectationReply" else "criterion")
        verdict, quote = _decide(asked, said)
        return json.dumps({"verdict": verdict, "reason": reason, "quote": quote})
    if schema == "GoalSatisfactionReply":
        return json.dumps(_goal(prompt, said, reason))
    if schema == "ReferenceAnswerReply":
        facts = _FACTS.findall(_section(prompt, "reference_answer"))
        answer = _section(prompt, "agent_answer")
        good = bool(facts) and all(fact in answer for fact in facts)
        return json.dumps({"score": 90 if good else 20, "verdict": "pass" if good else "fail", "reason": reason})
    if schema == "SideClaimReply":
        return json.dumps({"stated": "no", "quote": "", "reason": reason})
    if schema == "SemanticMatchReply":
        expected, actual = _section(prompt, "expected_message"), _section(prompt, "actual_message")
        same = set(_FACTS.findall(expected)) == set(_FACTS.findall(actual))
        return json.dumps({"score": 4 if same else 1, "reason": reason})
    if schema in ("ReviewReply", "ReviewFidelityReply"):
        # The conversation review: a bare verdict per marked turn (no claim is unsupported, so no "claims"),
        # the goal, and (asked with the user's turns) no invented fact.
        events = _events(prompt)
        bare: dict[str, Any] = {
            "goal": _goal(prompt, said, reason),
            "turns": [{"turn": n, "verdict": _turn_verdict(events, n)} for n in _judged(events, "agent")],
            "claims": [],
        }
        if schema == "ReviewFidelityReply":
            bare["invented"] = []
        return json.dumps(bare)
    review = schema in ("ConversationReviewReply", "ConversationReviewFidelityReply")
    if review or schema in ("HallucinationBatchReply", "HallucinationFidelityBatchReply"):
        # The batched question: the same rule per marked turn (and, asked with it, no fact the user invented;
        # in the conversation's review, the goal as its own question is answered).
        events = _events(prompt)
        verdicts = [
            {
                "turn": number,
                "verdict": _turn_verdict(events, number),
                "claim": "",
                "reason": reason,
            }
            for number in _judged(events, "agent")
        ]
        reply: dict[str, Any] = {"turns": verdicts}
        if review:
            reply["goal"] = _goal(prompt, said, reason)
        if schema in ("HallucinationFidelityBatchReply", "ConversationReviewFidelityReply"):
            reply["user_turns"] = [
                {"turn": n, "invented": False, "fact": "", "reason": reason} for n in _judged(events, "user")
            ]
        return json.dumps(reply)
    ran = any(event["role"] == "tool_call" for event in _events(prompt, "agent_turn"))
    return json.dumps({"verdict": "supported" if ran else "no_claim", "claim": "", "reason": reason})


# --------------------------------------------------------------------------------------------------------------
# Serving both, in a background thread with its own event loop


@dataclass
class StubServers:
    """The agent server and the model server, started and stopped together (use as a context manager)."""

    agent_requests: list[dict[str, Any]] = field(default_factory=list)
    user_requests: list[dict[str, Any]] = field(default_factory=list)
    judge_requests: list[dict[str, Any]] = field(default_factory=list)
    agent_url: str = ""
    model_url: str = ""
    _background: LoopThread = field(default_factory=lambda: LoopThread("stub-servers"))
    _runners: list[web.AppRunner] = field(default_factory=list)

    def __enter__(self) -> StubServers:
        self.agent_url, self.model_url = self._background.start(self._start)
        return self

    def __exit__(self, *exc: object) -> None:
        self._background.stop(self._stop, timeout=10)

    async def _start(self) -> tuple[str, str]:
        urls = []
        for handler in (self._agent, self._model):
            app = web.Application()
            app.router.add_post("/v1/chat/completions", handler)
            runner = web.AppRunner(app, access_log=None)
            await runner.setup()
            await web.TCPSite(runner, "127.0.0.1", 0).start()
            self._runners.append(runner)
            host, port = runner.addresses[0][:2]
            urls.append(f"http://{host}:{port}/v1")
        return urls[0], urls[1]

    async def _stop(self) -> None:
        for runner in self._runners:
            await runner.cleanup()
        self._runners.clear()

    async def _agent(self, request: web.Request) -> web.Response:
        body = await request.json()
        self.agent_requests.append(body)
        if len(self.agent_requests) > MAX_REQUESTS:
            return web.json_response({"error": "too many requests"}, status=503)
        status, answer = lieferservice(body)
        return web.json_response(answer, status=status)

    async def _model(self, request: web.Request) -> web.Response:
        body = await request.json()
        model = str(body.get("model", ""))
        log = self.user_requests if "user" in model else self.judge_requests
        log.append(body)
        if len(self.user_requests) + len(self.judge_requests) > MAX_REQUESTS:
            return web.json_response({"error": {"message": "too many requests"}}, status=503)
        text = user_reply(body) if "user" in model else judge_reply(body)
        return web.json_response(_completion(text, model=model))
