"""``simulator plugins``: the agent types, scorers and report formats installed packages add."""

from __future__ import annotations

import simulator
from simulator.cli._output import JsonOption, _handles_errors, _print_json, out

#: How each group is used once installed.
_USE = {
    "agents": "agent: {{type: {name}, options: {{...}}}} in a suite or agent file",
    "scorers": "scorers: [{name}] in a suite or case",
    "reports": "simulator report RUN -f {name}",
    "tools": "tools: [{{name: TOOL, backend: {name}}}] in an agent (test mode)",
}


@_handles_errors
def plugins_command(as_json: JsonOption = False) -> None:
    """List the plugins installed packages add (entry points simulator.agents, simulator.scorers,
    simulator.reports and simulator.tools) and how a suite or command uses each. Nothing is imported: a
    plugin's code runs only when a suite or command names it."""
    found = simulator.installed_plugins()
    groups = simulator.plugin_groups()
    if as_json:
        _print_json(
            {
                group: [{"name": p.name, "value": p.value, "package": p.package} for p in listed.values()]
                for group, listed in found.items()
            }
        )
        return
    if not any(found.values()):
        out.print('No plugins installed (see the docs\' "Write a plugin" page).', markup=False)
        return
    for group, listed in found.items():
        out.print(f"{group} ({groups[group]}):", markup=False)
        for plugin in listed.values():
            out.print(f"  {plugin.describe()}: {_USE[group].format(name=plugin.name)}", markup=False)
        if not listed:
            out.print("  none", markup=False)
