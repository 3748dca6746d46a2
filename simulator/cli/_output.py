"""What every command shares: the consoles (everything printed is redacted and escaped), documents on
stdout, the mapping of Simulator's errors to exit codes, and the typer option aliases used by several commands."""

from __future__ import annotations

import functools
import os
import sys
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Annotated, Any, Literal, TypeVar

import typer
from rich.console import Console, ConsoleOptions, RenderableType
from rich.segment import Segment
from rich.text import Text

from simulator import (
    ConfigError,
    ConfigErrors,
    InputError,
    SimulatorError,
    disk_trouble,
    json_safe,
    redact,
    terminal_safe,
)

EXIT_OK = 0
EXIT_BELOW_BAR = 1
EXIT_INVALID = 2
EXIT_INCOMPLETE = 3
EXIT_INTERNAL = 70
EXIT_INTERRUPTED = 130
EXIT_TERMINATED = 143  # 128 + SIGTERM, what process supervisors (systemd, Kubernetes, CI runners) expect


class SafeConsole(Console):
    """The only kind of console the CLI prints with: no secret, and no text that drives the terminal.

    Every text printed (arguments, table cells, titles) has the secrets the process knows redacted and its
    control characters escaped (``simulator.safety``) before rich lays it out; then every segment rich renders
    is checked again, so text that reaches rich another way (a progress bar's description) is escaped too.
    Rich's own styles and cursor movements are added outside the text and stay. Markup, emoji codes and
    highlighting are off: a case named ``[/]`` or ``:boom:`` is shown as written.
    """

    def __init__(self, **options: Any) -> None:
        super().__init__(markup=False, emoji=False, highlight=False, **options)

    def render_str(self, text: str, *args: Any, **kwargs: Any) -> Text:
        return super().render_str(terminal_safe(redact(text)), *args, **kwargs)

    def render(self, renderable: RenderableType, options: ConsoleOptions | None = None) -> Iterable[Segment]:
        for segment in super().render(renderable, options):
            if segment.control or terminal_safe(segment.text) is segment.text:
                yield segment
            else:
                yield Segment(terminal_safe(segment.text), segment.style)


# Off a terminal (CI logs, pipes) rich would wrap tables at 80 columns; logs are read wide.
out = SafeConsole(soft_wrap=True, width=None if sys.stdout.isatty() else 160)
err = SafeConsole(stderr=True, soft_wrap=True)


def _print_document(text: str, kind: Literal["json", "text"] = "text") -> None:
    """Write a document (JSON, a report, an export) to stdout as the console would: secrets redacted, control
    characters escaped. In JSON they become ``\\u`` escapes, so the document still parses to the same values;
    in YAML exports (whose strings holding them are double-quoted) ``\\x1b`` and ``\\u202e`` are escapes too."""
    text = redact(text)
    text = json_safe(text) if kind == "json" else terminal_safe(text)
    buffer = getattr(sys.stdout, "buffer", None)
    if buffer is None:
        sys.stdout.write(text)
        return
    # As UTF-8 bytes, whatever the terminal's encoding, and without newline translation (CSV ends lines in CR LF).
    sys.stdout.flush()
    buffer.write(text.encode("utf-8"))
    buffer.flush()


F = TypeVar("F", bound=Callable[..., Any])


def _print_json(payload: Any) -> None:
    """Write ``payload`` as the one JSON document a ``--json`` command prints (through :func:`_print_document`)."""
    import json

    _print_document(json.dumps(payload, indent=2, ensure_ascii=False) + "\n", "json")


def _print_config_errors(errors: list[ConfigError], console: SafeConsole | None = None) -> None:
    for error in errors:
        (console or out).print(error.render(), markup=False)


def _handles_errors(command: F) -> F:
    """Turn Simulator's errors into messages and exit codes; a traceback only for real bugs, on request."""

    @functools.wraps(command)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        # With --json stdout holds the one JSON document or nothing: the errors go to stderr.
        where = err if kwargs.get("as_json") else out
        try:
            return command(*args, **kwargs)
        except ConfigErrors as exc:
            _print_config_errors(exc.errors, where)
            count = len(exc.errors)
            err.print(f"{count} error{'s' if count != 1 else ''}: fix the places above and run again.", markup=False)
            raise typer.Exit(EXIT_INVALID) from None
        except ConfigError as exc:
            where.print(exc.render(), markup=False)
            raise typer.Exit(EXIT_INVALID) from None
        except InputError as exc:
            err.print(f"error: {exc}", markup=False)
            raise typer.Exit(EXIT_INVALID) from None
        except SimulatorError as exc:
            err.print(f"error: {exc}", markup=False)
            raise typer.Exit(EXIT_INCOMPLETE) from None
        except OSError as exc:
            if not disk_trouble(exc):
                raise _internal_error(exc) from None
            # A write that bypassed simulator._files: still one line naming the file and the cause.
            err.print(f"error: cannot write {exc.filename or 'a file'}: {exc.strerror or exc}", markup=False)
            raise typer.Exit(EXIT_INCOMPLETE) from None
        except KeyboardInterrupt:
            err.print("interrupted", markup=False)
            raise typer.Exit(EXIT_INTERRUPTED) from None
        except (typer.Exit, typer.Abort):
            raise
        except Exception as exc:
            raise _internal_error(exc) from None

    return wrapper  # type: ignore[return-value]


def _internal_error(exc: Exception) -> BaseException:
    """Say that ``exc`` is a bug in Simulator and return the exit to raise (``exc`` itself with SIMULATOR_DEBUG)."""
    if os.environ.get("SIMULATOR_DEBUG"):
        return exc
    err.print(
        f"internal error: {type(exc).__name__}: {exc}\n"
        "This is a bug in Simulator, not in your files. Run again with SIMULATOR_DEBUG=1 to see the "
        "traceback, and please report it.",
        markup=False,
    )
    return typer.Exit(EXIT_INTERNAL)


JsonOption = Annotated[bool, typer.Option("--json", help="Print one JSON document (nothing else on stdout).")]
VerboseOption = Annotated[
    bool, typer.Option("--verbose", "-v", help="Show every check with its full reasoning and every repeated line.")
]


def _plural(count: int, word: str) -> str:
    return f"{count} {word}{'' if count == 1 else 's'}"


def _print_warnings(warnings: list[Any]) -> None:
    for warning in warnings:
        err.print(f"warning: {warning}", markup=False, soft_wrap=True)


def _print_unreadable(skipped: list[Any]) -> None:
    """Name each stored run or result left out because it cannot be read (the ``skipped`` of the API's calls),
    with its fix, on stderr: what is shown is the rest."""
    for item in skipped:
        err.print(f"warning: left out: {item.describe()}", markup=False, soft_wrap=True)


_STYLES = {
    "header": "bold",
    "user": "cyan",
    "agent": "green",
    "tool": "dim",
    "tool_warning": "yellow",
    "check_met": "green",
    "check_other": "yellow",
    "error": "bold red",
    "pass": "green",
    "fail": "red",
    "blocked": "magenta",
    "plain": "",
}


RayAddressOption = Annotated[
    str | None,
    typer.Option(
        "--ray-address",
        help="With --executor ray: the Ray cluster to connect to (ray://HOST:10001, HOST:6379 or auto); without it "
        "Ray's RAY_ADDRESS, and without that a local cluster is started. Token auth: RAY_AUTH_MODE=token and "
        "RAY_AUTH_TOKEN.",
    ),
]
RayWorkersOption = Annotated[
    int | None,
    typer.Option(
        "--ray-workers",
        help="With --executor ray: worker processes running conversations, 1-1024 (default: 2 on a local cluster, "
        "one per CPU of a cluster connected to).",
    ),
]


TrustOption = Annotated[
    bool,
    typer.Option(
        "--trust",
        help="Keep a result whose stored outcome is not the one its transcript, scores and findings decide, "
        "instead of refusing it: marked 'outcome as imported, not re-derived' in every report, counted in the "
        "run's totals as its evidence decides.",
    ),
]


MaxCostOption = Annotated[
    float | None,
    typer.Option(
        "--max-cost",
        metavar="USD",
        help="Stop the run cleanly (interrupted, exit 130; `runs resume` continues it) once its models' cost so "
        "far, every role and every process that ran it, reaches this many US dollars (0-1000000).",
    ),
]

DbOption = Annotated[
    Path | None, typer.Option("--db", help="Run store (default: $SIMULATOR_DB or .simulator/runs.db).")
]


LiveOption = Annotated[
    bool,
    typer.Option(
        "--live",
        help="Run real tool functions instead of fakes. Never carried over from the stored run: only this flag, "
        "given to this command, turns them on.",
    ),
]
YesOption = Annotated[
    bool, typer.Option("--yes", help="Run the code an imported run names (it is listed first) without asking.")
]
