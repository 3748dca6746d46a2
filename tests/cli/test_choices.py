"""Fixed sets of option values are enums: typer refuses anything else up front (exit 2, naming the choices), and
the enums stay equal to the sets their owners define."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from simulator.cli import EXIT_INVALID, app
from simulator.cli._choices import SchemaKind
from simulator.loading import SCHEMA_FILES

runner = CliRunner()
REPORTS = "md, html, json, csv, xlsx, junit"


def test_the_enums_are_the_owners_sets() -> None:
    assert list(SchemaKind) == list(SCHEMA_FILES)


@pytest.mark.parametrize(
    ("args", "choices"),
    [
        (["report", "latest", "-f", "pdf"], "is not a report format: choose one of md, html, json, csv, xlsx, junit"),
        (
            ["run", "suites", "--report", "pdf"],
            "is not a report format: choose one of md, html, json, csv, xlsx, junit",
        ),
        (["export", "run", "latest", "-f", "pdf"], "is not one of 'json', 'yaml', 'jsonl'"),
        (["export", "results", "latest", "--format", "pdf"], "is not one of 'json', 'yaml', 'jsonl'"),
        (["compare", "a", "b", "-f", "pdf"], "is not one of 'text', 'md', 'html'"),
        (["runs", "compare", "a", "b", "-f", "pdf"], "is not one of 'text', 'md', 'html'"),
        (["digest", "latest", "-f", "pdf"], "is not one of 'text', 'md'"),
        (["schema", "pdf"], "is not one of 'suite', 'evals', 'agent', 'persona', 'personas'"),
    ],
)
def test_a_bad_choice_is_exit_2_naming_the_choices(
    args: list[str], choices: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    result = runner.invoke(app, [*args, *(["--db", str(tmp_path / "r.db")] if args[0] != "schema" else [])])
    assert result.exit_code == EXIT_INVALID
    message = " ".join(result.stderr.replace("│", " ").split())  # typer's message sits in a box
    assert f"'pdf' {choices}" in message
    assert not (tmp_path / "r.db").exists()  # refused before anything was read or stored


def test_the_default_concurrency_written_out_for_help_is_the_runs() -> None:
    import typer.main

    import simulator
    from simulator.cli import app

    run_command = typer.main.get_command(app).commands["run"]  # type: ignore[attr-defined]
    option = next(param for param in run_command.params if param.name == "concurrency")
    assert option.default == simulator.DEFAULT_CONCURRENCY
