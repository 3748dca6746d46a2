"""Fixed sets of option values are enums: typer refuses anything else up front (exit 2, naming the choices), and
the enums stay equal to the sets their owners define."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from simulator.cli import EXIT_INVALID, app
from simulator.cli._choices import ReportFormatChoice, SchemaKind
from simulator.loading import SCHEMA_FILES
from simulator.reports.formats import FORMATS

runner = CliRunner()


def test_the_enums_are_the_owners_sets() -> None:
    assert tuple(ReportFormatChoice) == FORMATS
    assert list(SchemaKind) == list(SCHEMA_FILES)


@pytest.mark.parametrize(
    ("args", "choices"),
    [
        (["report", "latest", "-f", "pdf"], "'md', 'html', 'json', 'csv', 'xlsx', 'junit'"),
        (["run", "suites", "--report", "pdf"], "'md', 'html', 'json', 'csv', 'xlsx', 'junit'"),
        (["export", "run", "latest", "-f", "pdf"], "'json', 'yaml'"),
        (["export", "results", "latest", "--format", "pdf"], "'json', 'yaml'"),
        (["compare", "a", "b", "-f", "pdf"], "'text', 'md', 'html'"),
        (["runs", "compare", "a", "b", "-f", "pdf"], "'text', 'md', 'html'"),
        (["digest", "latest", "-f", "pdf"], "'text', 'md'"),
        (["schema", "pdf"], "'suite', 'evals', 'agent', 'persona', 'personas'"),
    ],
)
def test_a_bad_choice_is_exit_2_naming_the_choices(
    args: list[str], choices: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    result = runner.invoke(app, [*args, *(["--db", str(tmp_path / "r.db")] if args[0] != "schema" else [])])
    assert result.exit_code == EXIT_INVALID
    message = " ".join(result.stderr.replace("│", " ").split())  # typer's message sits in a box
    assert f"'pdf' is not one of {choices}" in message
    assert not (tmp_path / "r.db").exists()  # refused before anything was read or stored
