"""The command-line reference as Markdown, read off the typer app itself (so the docs cannot drift from the code).

``docs/gen_reference.py`` writes it to ``docs/reference/cli.md``; a test regenerates it and fails when the committed
page differs. Only what the app declares is used: each command's help, its arguments and options with their
help, choices and defaults, in the order ``simulator --help`` shows them. Hidden commands and options stay out.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

import typer.core
import typer.main

__all__ = ["cli_reference"]

# typer's rich markup ([bold]...[/bold], [dim]...) means nothing in Markdown.
_MARKUP = re.compile(r"\[/?(?:bold|dim|italic|red|green|yellow|blue|cyan|magenta|underline)\]")


def cli_reference() -> str:
    """Every command of ``simulator`` with its arguments and options, as one Markdown page."""
    from simulator.cli import app

    root = typer.main.get_command(app)
    lines = [
        "# Command reference",
        "",
        "Generated from the command line itself (`python docs/gen_reference.py`); a test fails when this page and",
        "the code differ. `simulator COMMAND --help` prints the same.",
        "",
        "| command | what it does |",
        "|---|---|",
    ]
    commands = list(_walk(root, "simulator"))
    lines += [f"| [`{path}`](#{_anchor(path)}) | {_first_line(command)} |" for path, command in commands]
    for path, command in commands:
        lines += ["", f"## `{path}`", "", _clean(command.help or ""), "", "```", _usage(command, path), "```"]
        lines += _params(command, path)
    return "\n".join(lines).rstrip() + "\n"


def _walk(command: Any, path: str) -> Iterator[tuple[str, Any]]:
    if isinstance(command, typer.core.TyperGroup):
        for name in sorted(command.commands):
            sub = command.commands[name]
            if not sub.hidden:
                yield from _walk(sub, f"{path} {name}")
    else:
        yield path, command


def _anchor(path: str) -> str:
    return path.replace(" ", "-")


def _clean(text: str) -> str:
    text = _MARKUP.sub("", text).replace("\b\n", "").strip()
    return re.sub(r"\n{3,}", "\n\n", text)


def _first_line(command: Any) -> str:
    text = _clean(command.help or "")
    return text.split("\n\n")[0].replace("\n", " ").replace("|", "\\|")


def _usage(command: Any, path: str) -> str:
    context = typer.Context(command, info_name=path)
    return " ".join([path, *command.collect_usage_pieces(context)])


def _params(command: Any, path: str) -> list[str]:
    context = typer.Context(command, info_name=path)
    rows: list[str] = []
    for param in command.params:
        record = None if param.hidden or param.name == "help" else param.get_help_record(context)
        if record:
            names, meaning = record
            rows.append(f"| `{names}` | {_clean(meaning).replace(chr(10), ' ').replace('|', chr(92) + '|')} |")
    if not rows:
        return []
    return ["", "| argument / option | meaning |", "|---|---|", *rows]
