"""The fixed sets of strings options take, as enums: typer lists them in ``--help`` and refuses any other value
up front (exit 2, naming the choices), before a file is read or anything runs.

They mirror sets owned elsewhere (report formats, schema kinds); ``tests/cli/test_choices.py`` keeps them equal,
so the lists here stay literal and ``--help`` never imports the modules that own them.
"""

from __future__ import annotations

from enum import StrEnum


class ExchangeFormat(StrEnum):
    """The format of an exported run or its results."""

    json = "json"
    yaml = "yaml"
    jsonl = "jsonl"  # one conversation a line, OpenAI chat messages with the verdicts beside them


class CompareFormat(StrEnum):
    """The format of a comparison of two runs (``--json`` for JSON)."""

    text = "text"
    md = "md"
    html = "html"


class DigestFormat(StrEnum):
    """The format of a digest (``--json`` for JSON)."""

    text = "text"
    md = "md"


class SchemaKind(StrEnum):
    """A kind of file whose JSON Schema ``simulator schema`` prints (``simulator.loading.SCHEMA_FILES``)."""

    suite = "suite"
    evals = "evals"
    agent = "agent"
    persona = "persona"
    personas = "personas"


class TraceChoice(StrEnum):
    """Where a run's spans go (``RunSettings.trace``)."""

    otlp = "otlp"


class ExecutorChoice(StrEnum):
    """Where a run's conversations run (``RunSettings.executor``)."""

    local = "local"
    ray = "ray"
