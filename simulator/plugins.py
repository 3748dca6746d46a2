"""Extension points open to other packages: agent types, scorers, report formats and tool backends found through
entry points.

A package adds to Simulator without a fork by declaring entry points in its own ``pyproject.toml``::

    [project.entry-points."simulator.agents"]
    echo = "my_package.agent:make_echo_agent"      # agent: {type: echo, ...} in a suite

    [project.entry-points."simulator.scorers"]
    polite = "my_package.scoring:polite"            # scorers: [polite] in a suite or case

    [project.entry-points."simulator.reports"]
    txt = "my_package.report:render_txt"            # simulator report RUN -f txt

    [project.entry-points."simulator.tools"]
    orders = "my_package.tools:orders"              # tools: [{name: lookup_order, backend: orders}]

Names are listed from the installed packages' metadata without importing them; a plugin's code is imported only
when a suite or command names it. Built-in names win: a plugin can add, never replace.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache
from importlib.metadata import EntryPoint, entry_points
from typing import Any, Literal

from simulator.errors import SimulatorError

__all__ = ["GROUPS", "Plugin", "PluginError", "PluginGroup", "load_plugin", "plugins"]

PluginGroup = Literal["agents", "scorers", "reports", "tools"]
#: Each extension point and its entry-point group.
GROUPS: dict[PluginGroup, str] = {
    "agents": "simulator.agents",
    "scorers": "simulator.scorers",
    "reports": "simulator.reports",
    "tools": "simulator.tools",
}


class PluginError(SimulatorError):
    """A plugin that is installed but cannot be used (its code does not import, or is not what it should be)."""


@dataclass(frozen=True)
class Plugin:
    """One installed plugin: its name in the group, the ``module:attribute`` it points at, the package it is from."""

    name: str
    value: str
    package: str

    def describe(self) -> str:
        """``name (module:attribute, from package)``, for messages and listings."""
        return f"{self.name} ({self.value}, from {self.package})"


@cache
def plugins(group: PluginGroup) -> dict[str, Plugin]:
    """The installed plugins of ``group`` by name (read from package metadata; nothing is imported)."""
    found: dict[str, Plugin] = {}
    for point in entry_points(group=GROUPS[group]):
        found.setdefault(point.name, Plugin(point.name, point.value, _package(point)))
    return found


def load_plugin(group: PluginGroup, name: str) -> Any:
    """Import and return the object the plugin ``name`` of ``group`` points at."""
    plugin = plugins(group).get(name)
    if plugin is None:
        raise PluginError(f"no {group[:-1]} plugin named {name!r} is installed")
    point = next(p for p in entry_points(group=GROUPS[group]) if p.name == name)
    try:
        return point.load()
    except Exception as error:  # any failure of third-party code on import is the plugin's, named as such
        raise PluginError(
            f"the {group[:-1]} plugin {plugin.describe()} could not be loaded: {type(error).__name__}: {error}. "
            f"Reinstall the package, or uninstall it if it is not needed"
        ) from error


def _package(point: EntryPoint) -> str:
    dist = point.dist
    return f"{dist.name} {dist.version}" if dist is not None else "an unknown package"
