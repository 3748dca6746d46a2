"""What the three peer drivers share: the workload (bench/peers.py's: a customer asking where order ORD-1 is), the
command line, the agent under test, the guard that keeps every connection on this machine, and the report line.

Standard library only: each driver runs with its peer's own virtual environment (``bench/cost_peers/setup.py``),
never the project's.
"""

from __future__ import annotations

import argparse
import ipaddress
import json
import os
import socket
import sys
import urllib.request
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

# bench/peers.py's workload: the suite's goal, the bare loop's persona, the judge's one question.
GOAL = "Find out where order ORD-1 is and when it arrives."
PERSONA = "You are a customer of an online shop."
SCENARIO = f"{PERSONA} Your goal: {GOAL}"
CRITERION = f"The user's goal is satisfied: {GOAL}"
FIRST_MESSAGE = "Where is my order ORD-1?"
DUMMY_KEY = "not-a-real-key"
USER_MODEL, AGENT_MODEL, JUDGE_MODEL = "peer-user", "peer-agent", "peer-judge"

# Variables that would send data out or pull it in, set before a peer library is imported. Each driver adds its
# own (its library's telemetry and tracing switches); the socket guard below catches whatever is left.
COMMON_ENVIRONMENT = {
    "OPENAI_API_KEY": DUMMY_KEY,
    "LITELLM_LOCAL_MODEL_COST_MAP": "True",  # litellm: its price list from the package, not downloaded
    "HF_HUB_OFFLINE": "1",
    "TRANSFORMERS_OFFLINE": "1",
    "DO_NOT_TRACK": "1",
    "OTEL_SDK_DISABLED": "true",
}
# Keys that would switch a reporting feature on, or reach a real provider, when present in the caller's environment.
COMMON_REMOVED = ("OPENAI_ORG_ID", "OPENAI_ORGANIZATION", "ANTHROPIC_API_KEY", "OTEL_EXPORTER_OTLP_ENDPOINT")


@dataclass
class Options:
    """A driver's command line."""

    base_url: str
    agent_url: str
    conversations: int
    turns: int


def parse_args(peer: str, argv: Sequence[str] | None = None) -> Options:
    """The command line every driver takes (exit 2 with argparse's message on a bad one)."""
    parser = argparse.ArgumentParser(
        prog=f"bench/cost_peers/{peer}.py",
        description=f"Run {peer} on the peers workload against the benches' fake server; print one JSON line.",
    )
    parser.add_argument("--base-url", required=True, help="The fake server's OpenAI-compatible base (.../v1).")
    parser.add_argument("--agent-url", required=True, help="The OpenAI-compatible base serving the agent model.")
    parser.add_argument("--conversations", type=_positive, default=2, help="Conversations to run (default 2).")
    parser.add_argument("--turns", type=_positive, default=3, help="User turns per conversation (default 3).")
    args = parser.parse_args(argv)
    for name in ("base_url", "agent_url"):
        url = str(getattr(args, name))
        if not url.startswith(("http://", "https://")):
            parser.error(f"--{name.replace('_', '-')} {url!r}: give an http(s) URL, e.g. http://127.0.0.1:8000/v1")
    return Options(args.base_url.rstrip("/"), args.agent_url.rstrip("/"), args.conversations, args.turns)


def _positive(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"{value} is below 1")
    return value


def environment(base_url: str, extra: Mapping[str, str], removed: Sequence[str] = ()) -> None:
    """Set this process's environment for a peer before its library is imported: the dummy key, the fake
    server as the OpenAI base (a client the driver does not configure still reaches it), every network feature
    off (``extra``: the peer's own switches), and the keys in ``removed`` taken away."""
    for key in (*COMMON_REMOVED, *removed):
        os.environ.pop(key, None)
    os.environ.update(COMMON_ENVIRONMENT)
    os.environ.update({"OPENAI_BASE_URL": base_url, "OPENAI_API_BASE": base_url})
    os.environ.update(extra)


def ask_agent(agent_url: str, messages: Sequence[Mapping[str, Any]], timeout: float = 60.0) -> str:
    """The agent under test: the conversation so far (OpenAI chat messages, the user's turns as ``user``) sent
    to ``agent_url`` as model ``peer-agent``; its reply's text."""
    body = {"model": AGENT_MODEL, "messages": [{"role": m["role"], "content": m["content"]} for m in messages]}
    request = urllib.request.Request(
        f"{agent_url}/chat/completions",
        data=json.dumps(body).encode(),
        headers={"Content-Type": "application/json", "Authorization": f"Bearer {DUMMY_KEY}"},
    )
    with urllib.request.urlopen(request, timeout=timeout) as reply:
        answer: dict[str, Any] = json.loads(reply.read())
    return str(answer["choices"][0]["message"].get("content") or "")


def _local(host: object) -> bool:
    if not isinstance(host, str):
        return True  # a bytes/None host: nothing a library here would reach the internet with
    if host in ("localhost", "") or host.endswith(".localhost"):
        return True
    try:
        return ipaddress.ip_address(host.split("%", 1)[0]).is_loopback
    except ValueError:
        return False


@dataclass
class Guard:
    """Connections and name look-ups outside this machine refused (and listed) while :func:`guard` runs."""

    blocked: list[str] = field(default_factory=list)

    def refuse(self, host: object, port: object) -> None:
        """Record one attempt and raise, as a machine without a network would."""
        self.blocked.append(f"{host}:{port}")
        raise OSError(f"blocked by the bench: a connection to {host}:{port} would leave this machine")


@contextmanager
def guard() -> Iterator[Guard]:
    """Refuse every TCP/UDP connection and name look-up that is not on the loopback, so nothing a peer library
    sends (telemetry, tracing, price lists, tokenizer downloads) leaves the machine; the refusals are listed in
    the report's ``errors``."""
    state = Guard()
    connect, connect_ex, lookup = socket.socket.connect, socket.socket.connect_ex, socket.getaddrinfo

    def checked(sock: Any, address: Any) -> None:
        if sock.family in (socket.AF_INET, socket.AF_INET6) and not _local(address[0]):
            state.refuse(address[0], address[1])

    def guarded_connect(sock: Any, address: Any) -> None:
        checked(sock, address)
        connect(sock, address)

    def guarded_connect_ex(sock: Any, address: Any) -> int:
        checked(sock, address)
        return connect_ex(sock, address)

    def guarded_lookup(host: Any, port: Any, *args: Any, **kwargs: Any) -> Any:
        if not _local(host.decode() if isinstance(host, bytes) else host):
            try:
                state.refuse(host, port)
            except OSError as error:
                raise socket.gaierror(socket.EAI_NONAME, str(error)) from None
        return lookup(host, port, *args, **kwargs)

    socket.socket.connect = guarded_connect  # type: ignore[method-assign]
    socket.socket.connect_ex = guarded_connect_ex  # type: ignore[method-assign]
    socket.getaddrinfo = guarded_lookup
    try:
        yield state
    finally:
        socket.socket.connect, socket.socket.connect_ex = connect, connect_ex  # type: ignore[method-assign]
        socket.getaddrinfo = lookup


def report(peer: str, version: str, options: Options, user_turns_done: int, errors: Sequence[str]) -> dict[str, Any]:
    """The one JSON object a driver prints last (bench/cost.py reads it)."""
    return {
        "peer": peer,
        "version": version,
        "conversations": options.conversations,
        "turns": options.turns,
        "user_turns_done": user_turns_done,
        "errors": list(errors),
    }


def run(
    peer: str,
    *,
    distribution: str,
    argv: Sequence[str] | None,
    drive: Callable[[Options, list[str]], int],
    extra_environment: Mapping[str, str],
    removed: Sequence[str] = (),
) -> int:
    """A driver's main: parse the command line, set the environment, then ``drive`` (which imports the peer's
    library and returns the user turns done, appending what went wrong to its list) under the network guard;
    print the report line. Exit 0 when every conversation reached its turns without an error, 1 otherwise, 2 on
    a bad command line or a peer that is not installed."""
    options = parse_args(peer, argv)
    environment(options.base_url, extra_environment, removed)
    from importlib import metadata

    try:
        version = metadata.version(distribution)
    except metadata.PackageNotFoundError:
        print(
            f"{peer}: {distribution} is not installed in {sys.prefix}: run "
            f"`python bench/cost_peers/setup.py {peer} VENV_DIR` and this driver with VENV_DIR/bin/python",
            file=sys.stderr,
        )
        return 2
    errors: list[str] = []
    done = 0
    with guard() as state:
        try:
            done = drive(options, errors)
        except Exception as error:  # the report names what stopped the peer; its traceback goes to stderr
            import traceback

            traceback.print_exc()
            errors.append(f"{type(error).__name__}: {error}"[:500])
    errors += [f"blocked a connection outside this machine: {where}" for where in dict.fromkeys(state.blocked)]
    print(json.dumps(report(peer, version, options, done, errors)))
    return 0 if not errors and done == options.conversations * options.turns else 1
