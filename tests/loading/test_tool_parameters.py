"""A tool's ``parameters`` must be a JSON Schema of an object: `validate`, the run's loader and a run import say
so at the key, with file, line and column, in every place an agent can be written."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from simulator.cli import app
from simulator.errors import ConfigErrors
from simulator.exchange import ExchangeError, export_run, import_run
from simulator.loading import load_suite, validate_paths
from tests.factories import make_run

NOT_A_SCHEMA = "not a valid JSON Schema: 7 is not valid under any of the given schemas"
NOT_AN_OBJECT = "tool parameters must be an object schema (type: object)"

TOOLS = """\
tools:
  - name: lookup_order
    parameters:
      type: object
      properties:
        order_id: {type: string}
  - name: broken
    description: The type is a number.
    parameters:
      type: 7
  - name: stringy
    parameters: {type: string}
"""

AGENT_FILE = "type: python\ncallable: bot.main:respond\n" + TOOLS

SUITE_USING_THE_FILE = """\
name: uses-the-agent-file
cases:
  - name: hello
    kind: golden
    turns:
      - user: Hi
"""

SUITE_WITH_INLINE_AGENT = (
    "name: inline-agent\nagent:\n  type: python\n  callable: bot.main:respond\n"
    + textwrap.indent(TOOLS, "  ")
    + SUITE_USING_THE_FILE.split("\n", 1)[1]
)


def _folder(tmp_path: Path, files: dict[str, str]) -> Path:
    """A folder holding ``files`` and the agent code they name, where nothing above is looked at."""
    (tmp_path / ".git").mkdir()
    (tmp_path / "bot").mkdir()
    (tmp_path / "bot" / "__init__.py").write_text("", encoding="utf-8")
    (tmp_path / "bot" / "main.py").write_text("def respond(messages):\n    return 'hi'\n", encoding="utf-8")
    for name, text in files.items():
        (tmp_path / name).write_text(text, encoding="utf-8")
    return tmp_path


@pytest.mark.parametrize(
    ("files", "expected"),
    [
        pytest.param(
            {"agent.yaml": AGENT_FILE, "suite.yaml": SUITE_USING_THE_FILE},
            [
                f"agent.yaml:12:7: tools[1].parameters: {NOT_A_SCHEMA}",
                f"agent.yaml:14:17: tools[2].parameters: {NOT_AN_OBJECT}",
            ],
            id="agent-file",
        ),
        pytest.param(
            {"suite.yaml": SUITE_WITH_INLINE_AGENT},
            [
                f"suite.yaml:14:9: agent.tools[1].parameters: {NOT_A_SCHEMA}",
                f"suite.yaml:16:19: agent.tools[2].parameters: {NOT_AN_OBJECT}",
            ],
            id="inline-agent",
        ),
    ],
)
def test_validate_names_file_line_column_and_key(
    files: dict[str, str], expected: list[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(_folder(tmp_path, files))
    result = CliRunner().invoke(app, ["validate", "."])
    assert result.exit_code == 2, result.output
    assert [line for line in result.output.splitlines() if ".yaml:" in line] == expected
    assert "Traceback" not in result.output


def test_a_run_refuses_the_suite_with_the_same_errors(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(_folder(tmp_path, {"suite.yaml": SUITE_WITH_INLINE_AGENT}))
    with pytest.raises(ConfigErrors) as caught:
        load_suite("suite.yaml")
    assert [(e.line, e.column, e.key_path, e.message) for e in caught.value.errors] == [
        (14, 9, "agent.tools[1].parameters", NOT_A_SCHEMA),
        (16, 19, "agent.tools[2].parameters", NOT_AN_OBJECT),
    ]


def test_other_mistakes_of_the_file_come_in_the_same_report(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    suite = SUITE_WITH_INLINE_AGENT.replace("    kind: golden\n", "    kind: golden\n    tagz: [x]\n")
    monkeypatch.chdir(_folder(tmp_path, {"suite.yaml": suite}))
    found = [(e.line, e.key_path) for e in validate_paths([Path("suite.yaml")]).errors]
    assert found == [(14, "agent.tools[1].parameters"), (16, "agent.tools[2].parameters"), (20, "cases[0].tagz")]


def test_an_object_schema_and_the_default_are_accepted(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    agent = AGENT_FILE.split("  - name: broken")[0] + "  - name: no_parameters\n"
    monkeypatch.chdir(_folder(tmp_path, {"agent.yaml": agent, "suite.yaml": SUITE_USING_THE_FILE}))
    assert validate_paths([Path(".")]).errors == []


@pytest.mark.parametrize(("parameters", "message"), [({"type": 7}, NOT_A_SCHEMA), ({"type": "string"}, NOT_AN_OBJECT)])
def test_a_run_import_names_the_tool_of_the_snapshot(parameters: dict[str, Any], message: str) -> None:
    data = json.loads(export_run(make_run("20261129-232501-ab12cd", "shop"), []))
    agent = {"type": "python", "callable": "bot:respond", "tools": [{"name": "ok"}, {"name": "t"}]}
    agent["tools"][1]["parameters"] = parameters  # type: ignore[index]
    data["run"]["snapshot"][0]["suite"]["agent"] = agent
    with pytest.raises(ExchangeError) as caught:
        import_run(json.dumps(data, indent=1))
    assert "run.snapshot[0].suite.agent.tools[1].parameters: " in str(caught.value)
    assert message in str(caught.value)
