"""A cassette: every exchange of one recorded conversation (``simulator run --record``), as the store keeps it.

Pure data; :mod:`simulator.cassettes` writes, reads and replays cassettes. The format is versioned: ``format``
says how the entries are laid out and ``simulator_version`` which Simulator wrote it. A reader reads every
format up to its own and refuses a newer one (written by a later Simulator) with a message saying so.
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field, JsonValue

from simulator.models._base import DataModel

#: The cassette format this Simulator writes (and the newest it reads).
CASSETTE_FORMAT = 1

CassetteRole = Literal["agent", "tool", "user", "judge"]


class CassetteEntry(DataModel):
    """One exchange: who took part, what was sent and what came back.

    ``kind`` is ``turn`` (one agent turn: the messages given and the reply with its tool calls; or one move of
    the simulated user), ``model`` (one model request and reply, for the agent, user and judge roles), ``http``
    (one request body and response JSON of an HTTP agent) or ``tool`` (one tool call, its arguments, its result
    and whether it was faked, not executed or run live).
    """

    role: CassetteRole
    kind: Literal["turn", "model", "http", "tool"]
    turn: int = 0
    request: JsonValue = None
    response: JsonValue = None
    fingerprint: str | None = Field(default=None, description="What makes a model request the same question.")
    error: str | None = Field(default=None, description="Why the exchange failed, when it did.")
    url: str | None = None


class Cassette(DataModel):
    """The exchanges of one conversation of a run (one plan item), in the order they happened."""

    format: int = CASSETTE_FORMAT
    simulator_version: str
    run_id: str
    key: str
    case: str
    persona: str | None = None
    entries: list[CassetteEntry] = Field(default_factory=list)

    def of(self, role: CassetteRole, kind: str) -> list[CassetteEntry]:
        """The entries of one role and kind, in order."""
        return [entry for entry in self.entries if entry.role == role and entry.kind == kind]
