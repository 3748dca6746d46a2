"""The plugins installed packages add through entry points (agent types, scorers, report formats), listed
from the packages' metadata without importing them."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from simulator.plugins import Plugin


def plugin_groups() -> dict[str, str]:
    """Each extension point (``agents``, ``scorers``, ``reports``, ``tools``) and its entry-point group."""
    from simulator.plugins import GROUPS

    return {str(group): name for group, name in GROUPS.items()}


def installed_plugins() -> dict[str, dict[str, Plugin]]:
    """The installed plugins of each extension point by name (nothing is imported: a plugin's code runs only
    when a suite or command names it)."""
    from simulator.plugins import GROUPS, plugins

    return {group: plugins(group) for group in GROUPS}
