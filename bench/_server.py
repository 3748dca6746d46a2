"""A local OpenAI-compatible fake server for the benches, run in its own process.

``POST /v1/chat/completions`` answers after ``--latency`` seconds: plain text, or, when the request has a
``response_format`` with a JSON schema, a JSON object that fits the schema (see :func:`fill`), with a benign
verdict for every turn a batched judge prompt marks (so the workload's per-turn verdicts are judged, not left
``unsure``). Requests are
counted per role: the role is the request's ``model`` with any ``provider/`` and ``peer-`` / ``fake-`` prefix
taken off (``openai/peer-user`` reaches the server as ``peer-user``: role ``user``), so give each role its own
model name. ``GET /stats`` returns the counts since the last ``/stats`` (per role, and per role and schema name
of structured requests), the most requests in flight at once (overall and per role; at 0 latency a request
is never in flight while another is) and the wall-clock time (``time.time()``) of the first request, and resets them.

A request that forces a tool call (``tools`` with ``tool_choice`` ``"required"`` or naming a function), as peers'
judges ask for a verdict, is answered by calling the named tool, else the first, with arguments that fit its
``parameters`` (see :func:`tool_reply`); counted under ``schemas`` as ``role:tool_name``. A plain-text request of
the ``user`` role (a simulated user that answers in text) gets the user's message, any other the agent's reply.

With ``--unsatisfied`` the judge says the user's goal was not satisfied (``satisfied: false``), so every
conversation fails: the workload of failing conversations, whose judge may also be asked about the simulated
user's fidelity.

With ``--timeline`` every reply carries a marker `` [rN]`` (N: the request's serial number) at the end of its
text (the ``message``, ``reason`` or first free-text property of a structured reply, see :func:`marked_key`), and
every request is logged: serial, role, schema (or tool called), arrival and reply times (``time.time()``) and its
parent, the highest marker found in its body (the reply it follows in its conversation; none for a
conversation's first request). ``GET /timeline`` returns the log since the last call and empties it. The
markers change the texts a little, never their shape.

With ``--sizes`` every request's prompt and completion are measured (characters and tokens, by role and
conversation, with the share of the prompt an earlier request's prompt could have left in a provider's cache: see
bench/_sizes.py); the replies to the user and agent roles carry a conversation marker `` [cN]`` at the end of their
text (taken out again before measuring). ``GET /sizes`` returns the log since the last call and empties it.

    python bench/_server.py --port P --latency S [--timeline] [--unsatisfied] [--sizes]

:class:`FakeServer` starts it as a subprocess and reads ``/stats`` with the standard library only, so a bench
that uses it imports neither aiohttp nor a model library itself.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import re
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Mapping
from pathlib import Path
from types import TracebackType
from typing import Any

USER_MESSAGE = "Where is my order ORD-1?"
AGENT_REPLY = "Your order ORD-1 has shipped."
# ``claim`` and ``fact`` quote the reply (a judge's quote is checked against it): empty, as with no claim made.
# ``quote`` is a pass's evidence: the agent's reply, the words a met or satisfied verdict must quote.
_STRINGS = {
    "message": USER_MESSAGE,
    "reason": "The reply answers the question.",
    "claim": "",
    "fact": "",
    "quote": AGENT_REPLY,
}
# An enum's value when the schema offers one of these (a benign verdict), else its first value.
_PREFERRED = ("no_claim", "supported", "met", "pass", "no")
# Booleans that are true when benign: the judge says the user's goal was satisfied, so the workload's
# conversations pass (``--unsatisfied``: they fail, and the judge may be asked about the simulated user too).
_TRUE = frozenset({"satisfied"})


def child_environment() -> dict[str, str]:
    """The environment of a measured child process: this one's, without a store or OpenAI base of the caller's,
    with the fake key the generated suites name, litellm kept offline, and without ``PYTHONDONTWRITEBYTECODE``
    (set on these machines), so the children run from bytecode caches as after ``pip install``: with it, an
    editable install compiles every Simulator module from source at each start."""
    env = {k: v for k, v in os.environ.items() if k not in ("SIMULATOR_DB", "OPENAI_BASE_URL", "OPENAI_API_BASE")}
    env.update(BENCH_FAKE_KEY="not-a-real-key", LITELLM_OFFLINE_MODE="true", LITELLM_LOCAL_MODEL_COST_MAP="True")
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    return env


def fill(
    schema: dict[str, Any],
    root: dict[str, Any] | None = None,
    name: str = "",
    *,
    satisfied: bool = True,
    turns: Mapping[str, list[int]] | None = None,
) -> Any:
    """A value that fits ``schema``: every required property filled (every property when none is marked
    required), strings non-blank (at least ``minLength``), booleans false (``satisfied`` true unless
    ``satisfied=False``), numbers 0 (or their minimum), arrays of ``minItems`` items (usually none), an enum's
    benign or first value; ``$ref`` to ``#/$defs/...`` and ``anyOf`` / ``oneOf`` (the first branch that is not
    null) are followed. ``turns``: an array property named there gets one item per turn number, its ``turn`` set
    (a batched judge reply gives a verdict for every turn the prompt marks, see :func:`marked_turns`)."""
    if not satisfied and name in _TRUE:
        return False
    root = schema if root is None else root
    turns = turns or {}
    if "$ref" in schema:
        target: Any = root
        for part in str(schema["$ref"]).lstrip("#/").split("/"):
            target = target[part]
        return fill(target, root, name, satisfied=satisfied, turns=turns)
    for key in ("anyOf", "oneOf", "allOf"):
        if key in schema:
            branches = [b for b in schema[key] if b.get("type") != "null"] or schema[key]
            return fill(branches[0], root, name, satisfied=satisfied, turns=turns)
    if "const" in schema:
        return schema["const"]
    if "enum" in schema:
        choices = list(schema["enum"])
        return next((c for c in _PREFERRED if c in choices), choices[0])
    kind = schema.get("type", "object" if "properties" in schema else "string")
    if isinstance(kind, list):
        kind = next((k for k in kind if k != "null"), "null")
    if kind == "object":
        properties: dict[str, Any] = schema.get("properties", {})
        required = schema.get("required", list(properties))
        return {key: fill(properties.get(key, {}), root, key, satisfied=satisfied, turns=turns) for key in required}
    if kind == "array":
        items = schema.get("items", {})
        if name in turns:
            return [{**fill(items, root, name, satisfied=satisfied), "turn": number} for number in turns[name]]
        return [fill(items, root, name, satisfied=satisfied) for _ in range(int(schema.get("minItems", 0)))]
    if kind == "boolean":
        return name in _TRUE
    if kind in ("integer", "number"):
        low = schema.get("minimum", schema.get("exclusiveMinimum", 0))
        value = max(0, low + (1 if "exclusiveMinimum" in schema else 0))
        return int(value) if kind == "integer" else float(value)
    if kind == "null":
        return None
    text = _STRINGS.get(name, "ok")
    return text.ljust(int(schema.get("minLength", 0)), ".")


_MARKED = {"agent": "turns", "user": "user_turns"}


def marked_turns(prompt: str) -> dict[str, list[int]]:
    """The turn numbers a batched judge prompt marks for judging (its JSON events with ``"judge": true``), by the
    reply's array that answers them (``turns`` for agent turns, ``user_turns`` for user turns)."""
    found: dict[str, list[int]] = {key: [] for key in _MARKED.values()}
    for line in prompt.splitlines():
        if not line.startswith("{") or '"judge": true' not in line:
            continue
        try:
            event = json.loads(line)
        except ValueError:
            continue
        key = _MARKED.get(str(event.get("role"))) if isinstance(event, dict) and event.get("judge") is True else None
        if key is not None and isinstance(event.get("turn"), int) and event["turn"] not in found[key]:
            found[key].append(event["turn"])
    return found


def structured_content(response_format: Any, marker: str = "", *, satisfied: bool = True, prompt: str = "") -> str:
    """The JSON text answering a request's ``response_format`` (see :func:`fill`), with a benign verdict for every
    turn ``prompt`` marks; ``marker`` appended to its ``message`` (else its ``reason``) when the answer has one."""
    schema: Any = None
    if isinstance(response_format, dict):
        schema = (response_format.get("json_schema") or {}).get("schema") or response_format.get("schema")
    if not isinstance(schema, dict):  # {"type": "json_object"}: no schema to follow
        value: Any = {"message": USER_MESSAGE, "done": False, "reason": _STRINGS["reason"]}
    else:
        value = fill(schema, satisfied=satisfied, turns=marked_turns(prompt))
    if marker and isinstance(value, dict):
        key = marked_key(value, schema if isinstance(schema, dict) else {})
        if key is not None:
            value[key] += marker
    return json.dumps(value)


def marked_key(value: Mapping[str, Any], schema: Mapping[str, Any]) -> str | None:
    """The property of a structured answer that carries the ``--timeline`` marker: its ``message``, else its
    ``reason``, else its first free-text property (a plain string in ``schema``, no enum, pattern or format, so
    the marker keeps the answer valid; a peer's user turn such as ``simulated_input``); none when it has none."""
    for key in ("message", "reason"):
        if isinstance(value.get(key), str):
            return key
    properties = schema.get("properties") or {}
    for key, text in value.items():
        spec = properties.get(key)
        if not isinstance(spec, dict) or spec.get("type") != "string" or not isinstance(text, str):
            continue
        if not {"enum", "const", "pattern", "format"} & set(spec):
            return str(key)
    return None


def forced_tool(body: Mapping[str, Any]) -> dict[str, Any] | None:
    """The tool a request forces its answer to call: the one ``tool_choice`` names, else the first of ``tools``
    when ``tool_choice`` is ``"required"``; ``None`` when the request leaves the model free to answer in text."""
    tools = [t for t in body.get("tools") or [] if isinstance(t, dict) and isinstance(t.get("function"), dict)]
    choice = body.get("tool_choice")
    if not tools or not (choice == "required" or isinstance(choice, dict)):
        return None
    named = ((choice or {}).get("function") or {}).get("name") if isinstance(choice, dict) else None
    chosen = next((t for t in tools if t["function"].get("name") == named), tools[0])
    function: dict[str, Any] = chosen["function"]
    return function


def tool_reply(body: Mapping[str, Any], serial: int, marker: str = "", *, satisfied: bool = True) -> dict[str, Any]:
    """The assistant message answering a request that forces a tool call (see :func:`forced_tool`): one call of
    that tool with arguments that fit its ``parameters`` (see :func:`structured_content`)."""
    function = forced_tool(body) or {}
    prompt = "\n".join(str(m.get("content") or "") for m in body.get("messages", []))
    parameters = function.get("parameters") or {"type": "object", "properties": {}}
    arguments = structured_content({"schema": parameters}, marker, satisfied=satisfied, prompt=prompt)
    call = {
        "id": f"call_{serial}",
        "type": "function",
        "function": {"name": function.get("name"), "arguments": arguments},
    }
    return {"role": "assistant", "content": None, "tool_calls": [call]}


def plain_content(role: str, marker: str = "") -> str:
    """The text answering a request that asks for no structure: the user's message for the ``user`` role (a
    simulated user that answers in text), the agent's reply for any other."""
    return (USER_MESSAGE if role == "user" else AGENT_REPLY) + marker


_MARKER = re.compile(r"\[r(\d+)\]")


def parent_of(body: bytes) -> int | None:
    """The highest reply marker in a request's body: the reply this request follows (see ``--timeline``)."""
    found = [int(n) for n in _MARKER.findall(body.decode("utf-8", errors="replace"))]
    return max(found) if found else None


def schema_name(response_format: Any) -> str:
    """The name a structured request gives its schema (``json_object`` when it gives none)."""
    if isinstance(response_format, dict):
        return str((response_format.get("json_schema") or {}).get("name") or response_format.get("type"))
    return "unknown"


def role_of(model: str) -> str:
    """``openai/peer-user`` / ``peer-user`` / ``fake-user`` -> ``user``."""
    name = model.rsplit("/", 1)[-1]
    for prefix in ("peer-", "fake-"):
        name = name.removeprefix(prefix)
    return name or "unknown"


class _Counts:
    def __init__(self) -> None:
        self.requests: dict[str, int] = {}
        self.schemas: dict[str, int] = {}
        self.in_flight: dict[str, int] = {}
        self.max_in_flight_role: dict[str, int] = {}
        self.total_in_flight = 0
        self.max_in_flight = 0
        self.first_request: float | None = None
        self.serial = 0

    def snapshot(self) -> dict[str, Any]:
        return {
            "requests": dict(self.requests),
            "schemas": dict(self.schemas),
            "total": sum(self.requests.values()),
            "max_in_flight": self.max_in_flight,
            "max_in_flight_by_role": dict(self.max_in_flight_role),
            "first_request": self.first_request,
        }

    def reset(self) -> None:
        self.requests, self.schemas, self.max_in_flight_role = {}, {}, {}
        self.max_in_flight = self.total_in_flight
        self.first_request = None


def build_app(latency: float, timeline: bool = False, satisfied: bool = True, sizes: bool = False) -> Any:
    """The aiohttp application (aiohttp is imported here, in the server's process only)."""
    from aiohttp import web

    counts = _Counts()
    log: list[dict[str, Any]] = []
    size_log = _size_log() if sizes else None

    async def chat(request: web.Request) -> web.Response:
        arrived = time.time()
        if counts.first_request is None:
            counts.first_request = arrived
        raw = await request.read()
        body = json.loads(raw)
        model = str(body.get("model", "fake"))
        role = role_of(model)
        counts.serial += 1
        serial = counts.serial
        marker = f" [r{serial}]" if timeline else ""
        conversation, marker = _conversation_marker(size_log, raw, role, marker)
        counts.requests[role] = counts.requests.get(role, 0) + 1
        counts.total_in_flight += 1
        counts.in_flight[role] = counts.in_flight.get(role, 0) + 1
        counts.max_in_flight = max(counts.max_in_flight, counts.total_in_flight)
        counts.max_in_flight_role[role] = max(counts.max_in_flight_role.get(role, 0), counts.in_flight[role])
        try:
            if latency > 0:
                await asyncio.sleep(latency)
            form = body.get("response_format")
            tool = forced_tool(body)
            asked = str(tool.get("name")) if tool is not None else schema_name(form) if form else None
            if asked is not None:
                counts.schemas[f"{role}:{asked}"] = counts.schemas.get(f"{role}:{asked}", 0) + 1
            prompt = "\n".join(str(m.get("content") or "") for m in body.get("messages", []))
            message: dict[str, Any] = {"role": "assistant", "content": ""}
            if tool is not None:
                message = tool_reply(body, serial, marker, satisfied=satisfied)
            elif form:
                message["content"] = structured_content(form, marker, satisfied=satisfied, prompt=prompt)
            else:
                message["content"] = plain_content(role, marker)
        finally:
            counts.total_in_flight -= 1
            counts.in_flight[role] -= 1
        if timeline:
            log.append(
                {"serial": serial, "role": role, "schema": asked,
                 "arrived": arrived, "replied": time.time(), "parent": parent_of(raw)}
            )  # fmt: skip
        if size_log is not None:
            size_log.record(serial, role, schema=asked, conversation=conversation, body=body, reply=message)
        return web.json_response(
            {
                "id": f"c{serial}", "object": "chat.completion", "created": int(time.time()), "model": model,
                "choices": [
                    {"index": 0, "finish_reason": "tool_calls" if tool is not None else "stop", "message": message}
                ],
                "usage": {"prompt_tokens": 20, "completion_tokens": 8, "total_tokens": 28},
            }
        )  # fmt: skip

    async def stats(request: web.Request) -> web.Response:
        answer = counts.snapshot()
        counts.reset()
        return web.json_response(answer)

    async def timeline_log(request: web.Request) -> web.Response:
        answer = list(log)
        log.clear()
        return web.json_response(answer)

    async def size_report(request: web.Request) -> web.Response:
        empty: dict[str, Any] = {"tokenizer": None, "tokenize_s": 0.0, "requests": []}
        return web.json_response(await size_log.drain() if size_log is not None else empty)

    app = web.Application()
    app.router.add_get("/timeline", timeline_log)
    app.router.add_get("/sizes", size_report)
    app.router.add_post("/v1/chat/completions", chat)
    app.router.add_post("/chat/completions", chat)
    app.router.add_get("/stats", stats)
    return app


def _size_log() -> Any:
    # bench/_sizes.py, beside this file: imported when the server runs as a script with --sizes (its folder on
    # the import path), so loading this module by its path (as the tests do) needs nothing more.
    from _sizes import SizeLog

    return SizeLog()


def _conversation_marker(size_log: Any, raw: bytes, role: str, marker: str) -> tuple[int, str]:
    """With ``--sizes``: the request's conversation (see bench/_sizes.py) and its reply's marker with the
    conversation's appended (for the roles whose replies later requests quote)."""
    if size_log is None:
        return 0, marker
    from _sizes import MARKED_ROLES

    conversation: int = size_log.conversation(raw.decode("utf-8", errors="replace"))
    return conversation, marker + (f" [c{conversation}]" if role in MARKED_ROLES else "")


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


class FakeServer:
    """The fake server in a subprocess: ``with FakeServer(latency=0.2) as server: ... server.stats()``."""

    def __init__(
        self,
        latency: float = 0.0,
        port: int | None = None,
        timeline: bool = False,
        satisfied: bool = True,
        sizes: bool = False,
    ) -> None:
        self.latency = latency
        self.timeline = timeline
        self.sizes = sizes
        self.satisfied = satisfied
        self.port = port or free_port()
        self.base_url = f"http://127.0.0.1:{self.port}/v1"
        self._process: subprocess.Popen[bytes] | None = None

    def start(self, limit: float = 20.0) -> FakeServer:
        command = [sys.executable, str(Path(__file__)), "--port", str(self.port), "--latency", str(self.latency)]
        command += ["--timeline"] if self.timeline else []
        command += [] if self.satisfied else ["--unsatisfied"]
        command += ["--sizes"] if self.sizes else []
        self._process = subprocess.Popen(command)
        deadline = time.monotonic() + limit
        while time.monotonic() < deadline:
            if self._process.poll() is not None:
                raise RuntimeError(f"the fake server exited with {self._process.returncode}")
            with socket.socket() as sock:
                if sock.connect_ex(("127.0.0.1", self.port)) == 0:
                    return self
            time.sleep(0.05)
        self.stop()
        raise RuntimeError("the fake server did not start")

    def stats(self) -> dict[str, Any]:
        """Counts since the last call (see the module docstring); resets them."""
        with urllib.request.urlopen(f"http://127.0.0.1:{self.port}/stats", timeout=10) as reply:
            answer: dict[str, Any] = json.loads(reply.read())
        return answer

    def timeline_log(self) -> list[dict[str, Any]]:
        """The requests logged since the last call (``--timeline``); empties the log."""
        with urllib.request.urlopen(f"http://127.0.0.1:{self.port}/timeline", timeout=10) as reply:
            answer: list[dict[str, Any]] = json.loads(reply.read())
        return answer

    def size_log(self) -> dict[str, Any]:
        """The requests' sizes since the last call (``--sizes``, see bench/_sizes.py); empties the log."""
        with urllib.request.urlopen(f"http://127.0.0.1:{self.port}/sizes", timeout=120) as reply:
            answer: dict[str, Any] = json.loads(reply.read())
        return answer

    def stop(self) -> None:
        if self._process is not None:
            self._process.terminate()
            try:
                self._process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self._process.kill()
                self._process.wait()
            self._process = None

    def __enter__(self) -> FakeServer:
        return self.start()

    def __exit__(
        self, kind: type[BaseException] | None, error: BaseException | None, trace: TracebackType | None
    ) -> None:
        self.stop()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--latency", type=float, default=0.0)
    parser.add_argument("--timeline", action="store_true", help="Mark replies and log every request.")
    parser.add_argument("--unsatisfied", action="store_true", help="The judge finds no goal satisfied.")
    parser.add_argument("--sizes", action="store_true", help="Log every request's sizes and conversation.")
    args = parser.parse_args()
    from aiohttp import web

    app = build_app(args.latency, args.timeline, satisfied=not args.unsatisfied, sizes=args.sizes)
    web.run_app(app, host="127.0.0.1", port=args.port, print=None, access_log=None)


if __name__ == "__main__":
    main()
