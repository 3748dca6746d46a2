"""Runs imported from elsewhere (``simulator import run``) name code that did not come from this machine's files:
what running one executes (said before it is resumed or repeated), the refusal without trust, and the agents'
environment and model keys a stored run needs again."""

from __future__ import annotations

from simulator.errors import InputError
from simulator.models.run import RunRecord, RunSettings
from simulator.runner._case import (
    check_environment,
    check_models,
)
from simulator.runner._plan import (
    restore,
)


def code_it_runs(record: RunRecord, live: bool) -> list[str]:
    """What running ``record``'s snapshot executes or reaches on this machine, one line each (shown before an
    imported run is resumed or repeated)."""
    lines: list[str] = []
    for snapshot in record.snapshot:
        suite = snapshot.suite
        where = f"suite '{printable(suite.name)}'"
        agent = suite.agent
        if isinstance(agent, str):
            lines.append(f"agent file {printable(agent)} ({where})")
        elif agent is not None:
            what, effect = agent.reaches()
            lines.append(f"{printable(what)} ({where}): {effect}")
        for tool in getattr(agent, "tools", None) or []:
            if tool.function is None:
                continue
            if live:
                lines.append(f"live tool function {tool.function} for tool {tool.name} ({where}): called with --live")
            else:
                lines.append(f"tool function {tool.function} for tool {tool.name} ({where}): not run (no --live)")
    return lines


def printable(text: str) -> str:
    """Text from an imported file, with every control or invisible character written as an escape."""
    return "".join(char if char.isprintable() else f"\\u{ord(char):04x}" for char in str(text))


def check_trust(record: RunRecord, trust_imported: bool, doing: str) -> None:
    """Refuse to run an imported run's code (``doing``: what would run it) unless ``trust_imported``."""
    if record.imported_from and not trust_imported:
        raise InputError(
            f"run {record.id} came from `simulator import run` (run {printable(record.imported_from)} elsewhere); "
            f"{doing} it runs the code its snapshot names on this machine: read the export, then pass "
            "trust_imported=True (--yes on the command line)"
        )


def check_environment_of(record: RunRecord, settings: RunSettings | None = None) -> None:
    """The environment variables of the agents the run's plan runs (a suite its filters left out needs none), and
    the keys of the models it asks (``settings``, default the run's)."""
    planned = sorted({item.suite for item in record.plan})
    suites = [restore(record.snapshot[index]) for index in planned]
    check_environment(suites, settings=record.settings)
    check_models(suites, settings or record.settings)
