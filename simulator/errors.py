"""The error tree of Simulator.

Every error a user can cause is a :class:`SimulatorError`; the CLI prints it without a traceback and maps it
to an exit code. Anything else that escapes is a bug in Simulator.

``SimulatorError``
  ``ConfigError``      one problem in a file a person wrote (file, line, column, key path, message)
  ``ConfigErrors``     every problem found in one or more files, sorted by file and position
  ``InputError``       another unusable input: a file to import, an output that must not be overwritten
  ``AgentError``       the agent under test failed (down, timed out, raised)
  ``ModelError``       a model provider failed (user, judge or litellm agent role)
    ``CredentialsError`` no key was sent, or the provider refused it: no retry and no other call can help
  ``JudgeError``       a judge could not produce a valid verdict
  ``StoreError``       the run store could not be read or written
  ``DiskError``        a file could not be written: its disk is full or failing
  ``CostLimitReached`` a run reached its ``--max-cost`` and stopped, resumable
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

from simulator._visible import one_line


class SimulatorError(Exception):
    """Base of every error Simulator raises on purpose."""


class ConfigError(SimulatorError):
    """One problem at one place in a file a person wrote.

    ``line`` and ``column`` are 1-based; a problem with the whole file (empty, undecodable, too large) is
    placed at 1:1, where editors and CI annotations can still show it.
    ``key_path`` is the dotted path to the key, such as ``cases[0].steps[1].max_turns``; ``(root)`` for the
    top of the file.
    """

    def __init__(self, file: str | Path, line: int, column: int, key_path: str, message: str) -> None:
        self.file = str(file)
        self.line = line
        self.column = column
        self.key_path = key_path or "(root)"
        self.message = message
        super().__init__(self.render())

    def render(self) -> str:
        """Format as ``FILE:LINE:COL: key.path: message``, the shape editors and CI logs recognise. The file
        name and the key path are written on one line (a line break in them as ``\\n``), so a name cannot
        forge another ``FILE:LINE:COL`` line."""
        return f"{one_line(self.file)}:{self.line}:{self.column}: {one_line(self.key_path)}: {self.message}"

    def sort_key(self) -> tuple[str, int, int, str]:
        """Order errors by file, then position, then path."""
        return (self.file, self.line, self.column, self.key_path)


class ConfigErrors(SimulatorError):
    """All problems found while loading, sorted. Raised once, after everything was checked."""

    def __init__(self, errors: Iterable[ConfigError]) -> None:
        self.errors = sorted(errors, key=ConfigError.sort_key)
        super().__init__("\n".join(e.render() for e in self.errors))


class InputError(SimulatorError):
    """Something given on the command line or in a file is unusable (an export to import, an output that
    exists); the message says what and how to fix it."""


class AgentError(SimulatorError):
    """The agent under test could not answer (it raised, timed out, or returned something unusable)."""


class ModelError(SimulatorError):
    """A model provider call failed after its retries (rate limit, server error, timeout, bad output)."""


class CredentialsError(ModelError):
    """A model call had no key to send, or the provider refused the one sent (401, 403): never retried, and the
    same for every call of the role until the key is fixed."""


class JudgeError(SimulatorError):
    """A judge could not produce a valid verdict."""


class StoreError(SimulatorError):
    """The run store could not be opened, migrated, read or written."""


class StoreInputError(StoreError, InputError):
    """The store was asked for something that is not there, or given a file that is not a store: the
    person's input to fix, not a failure of the run (exit 2, not 3)."""


class DiskError(SimulatorError):
    """A file could not be written because its disk is full, over quota or failing (``ENOSPC``, ``EDQUOT``,
    ``EIO``); nothing partial was left under its name."""


class CostLimitReached(SimulatorError):
    """A run reached its ``--max-cost``: it stopped as if interrupted (``interrupted``, resumable), naming what
    its models cost so far and the limit."""

    def __init__(self, run_id: str, spent: float, limit: float, stored: int, total: int) -> None:
        super().__init__(
            f"cost limit reached: the models cost ${spent:.4f} so far, --max-cost is ${limit:g}; run {run_id} "
            f"stopped with {stored} of {total} conversation(s) stored"
        )
        self.run_id = run_id
        self.spent = spent
        self.limit = limit
        self.stored = stored
        self.total = total
