"""The tape a recorded conversation's exchanges are written to, as they happen (``simulator run --record``).

A conversation run with ``--record`` is wrapped in :func:`recording`; the seams that talk to the outside world
write what passed through them onto its :class:`Tape`: the model client (every request and reply of the agent,
user and judge roles), the HTTP agent adapter (each request body and response JSON), and the runner's wrappers
around the agent under test and the simulated user (each turn given and what came back, tool calls included).
Without a tape, a seam reads one context variable (:func:`active_tape`) and does nothing else: recording off
costs no work per request.

Entries are plain JSON data; :mod:`simulator.cassettes` turns a tape into a versioned cassette.
Standard library only: every layer that has a seam may use it.
"""

from __future__ import annotations

import contextvars
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

__all__ = ["Tape", "active_tape", "recording"]


class Tape:
    """The exchanges of one conversation, in the order they happened.

    ``turn`` is the conversation's current turn as the agent wrapper last saw it (entries made meanwhile carry it).
    """

    def __init__(self, entries: list[dict[str, Any]] | None = None) -> None:
        #: ``entries`` given: the tape another process recorded (a Ray worker's, shipped back with its result).
        self.entries: list[dict[str, Any]] = [] if entries is None else entries
        self.turn = 0

    def add(self, role: str, kind: str, request: Any, response: Any, **extra: Any) -> None:
        """Write one exchange: who (``agent``, ``tool``, ``user``, ``judge``), what kind (``turn``, ``model``,
        ``http``, ``scripted``), what was sent and what came back; ``extra`` keys are kept beside them."""
        self.entries.append(
            {"role": role, "kind": kind, "turn": self.turn, "request": request, "response": response, **extra}
        )


_TAPE: contextvars.ContextVar[Tape | None] = contextvars.ContextVar("simulator_tape", default=None)


def active_tape() -> Tape | None:
    """The tape of the conversation running in this task (and the threads it started), or None when not recording."""
    return _TAPE.get()


@contextmanager
def recording() -> Iterator[Tape]:
    """Record every exchange made in this block, and in tasks and agent threads started from it, on a new tape."""
    tape = Tape()
    token = _TAPE.set(tape)
    try:
        yield tape
    finally:
        _TAPE.reset(token)
