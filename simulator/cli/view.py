"""``simulator view``: serve the web app over the run store."""

from __future__ import annotations

from typing import Annotated

import typer

import simulator
from simulator.cli._output import DbOption, _handles_errors


@_handles_errors
def view(
    db: DbOption = None,
    port: Annotated[
        int | None, typer.Option("--port", min=1, max=65535, help="The port to listen on (default 8710).")
    ] = None,
    host: Annotated[
        str,
        typer.Option(
            "--host",
            help="The address to listen on. Loopback (127.0.0.1) by default; any other address requires the token "
            "printed at start on every request.",
        ),
    ] = "127.0.0.1",
    no_open: Annotated[bool, typer.Option("--no-open", help="Do not open the browser.")] = False,
) -> None:
    """Browse every stored run in a local web app: the runs list (filter, sort, edit notes, stop, resume,
    repeat), each run's report with downloads, each conversation, and comparisons. Serves until Ctrl-C. Needs
    the optional extra: pip install 'simulator[view]'."""
    simulator.view(db, port=port, host=host, open_browser=not no_open)
