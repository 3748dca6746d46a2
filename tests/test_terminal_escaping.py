"""Untrusted text cannot drive the terminal.

Agent replies, case names (from YAML and from CSV cells), tags, notes, suite names and keys quoted in
validation errors carry escape sequences: a window title (OSC ``ESC ] 0 ; ... BEL``), clear screen
(``ESC [ 2 J``), colour (CSI), the single-byte C1 CSI ``\\x9b``, a bidi override (U+202E), NUL, backspace and
a bare carriage return. Every command that prints such text runs, and no raw control character may reach
stdout or stderr: each is written as a visible escape (``\\x1b``, ``\\u202e``). Documents keep their meaning:
JSON still parses to the same values, a YAML export still reads back the same.
"""

from __future__ import annotations

import json
import re
import textwrap
from pathlib import Path

import pytest
import yaml
from typer.testing import CliRunner

from simulator.cli import app
from simulator.safety import json_safe, terminal_safe

runner = CliRunner()

TITLE = "\x1b]0;pwned\x07"
CLEAR = "\x1b[2J\x1b[H"
COLOUR = "\x1b[31m"
C1_CSI = "\x9b2J"
RLO = "\u202e"
NUL = "\x00"
#: Rich markup that would crash (an unmatched closing tag) or restyle text if it were read as markup.
MARKUP = "[/][bold red]:boom:"
#: One payload with every kind of character that must not reach a terminal raw.
PAYLOAD = f"{TITLE}{CLEAR}{COLOUR}{C1_CSI}{RLO}{NUL}\x08\x7f{MARKUP}"
#: As YAML double-quoted escapes, for names and tags written in a suite.
YAML_PAYLOAD = "\\e]0;pwned\\a\\e[2J\\e[H\\e[31m\\x9b2J\\u202e\\0\\b\\x7f" + MARKUP

#: What must never be printed raw: C0 but tab and line feed (and CR before LF), DEL, C1, bidi overrides.
RAW = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]|\r(?!\n)")

AGENT = f"""
def respond(messages):
    return "Reply " + {PAYLOAD + chr(13) + "fake"!r} + " to: " + messages[-1]["content"]
"""


def _project(root: Path) -> Path:
    (root / ".git").mkdir()
    (root / "personas").mkdir()
    (root / "personas" / "plain.yaml").write_text(
        "name: plain\npersonality: Says what is needed.\nlanguage: en\n", encoding="utf-8"
    )
    (root / "hostile_agent.py").write_text(textwrap.dedent(AGENT), encoding="utf-8")
    suites = root / "suites"
    suites.mkdir()
    (suites / "agent.yaml").write_text("type: python\ncallable: hostile_agent:respond\n", encoding="utf-8")
    (suites / "hostile.yaml").write_text(
        f'name: "suite{YAML_PAYLOAD}"\n'
        "cases:\n"
        "  - kind: simulation\n"
        f'    name: "case{YAML_PAYLOAD}"\n'
        f'    tags: ["tag{YAML_PAYLOAD}"]\n'
        "    steps:\n"
        f'      - static_utterance: "user says{YAML_PAYLOAD}"\n'
        f'        checks: [{{must_contain: ["never{YAML_PAYLOAD}"]}}]\n',
        encoding="utf-8",
    )
    return root


def _raw(text: str) -> list[str]:
    return sorted({repr(match.group(0)) for match in RAW.finditer(text)})


def test_terminal_safe_escapes_every_control_character() -> None:
    assert terminal_safe(f"a{TITLE}b") == "a\\x1b]0;pwned\\x07b"
    assert terminal_safe(CLEAR) == "\\x1b[2J\\x1b[H"
    assert terminal_safe(C1_CSI) == "\\x9b2J"
    assert terminal_safe(f"x{RLO}y\u2066z\u2069") == "x\\u202ey\\u2066z\\u2069"
    assert terminal_safe("nul\x00 bs\x08 del\x7f bare\rcr") == "nul\\x00 bs\\x08 del\\x7f bare\\x0dcr"
    assert terminal_safe("lone surrogate \udcff") == "lone surrogate \\udcff"
    kept = "tabs\tand lines\nand CR LF\r\nand Ünïcödé, עברית, 中文 ✓"
    assert terminal_safe(kept) is kept
    assert terminal_safe(terminal_safe(PAYLOAD)) == terminal_safe(PAYLOAD)  # safe to apply twice
    assert _raw(terminal_safe(PAYLOAD + "\r")) == []


def test_json_safe_keeps_the_values() -> None:
    data = {f"k{RLO}": [PAYLOAD, "\x85\u2066"]}
    text = json.dumps(data, ensure_ascii=False)
    assert _raw(text)  # json.dumps leaves C1 controls and bidi overrides raw
    assert _raw(json_safe(text)) == []
    assert json.loads(json_safe(text)) == data


def test_no_raw_control_character_reaches_the_terminal(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(_project(tmp_path))
    db = str(tmp_path / "runs.db")
    outputs: dict[str, str] = {}

    def cli(*args: str, codes: tuple[int, ...] = (0, 1)) -> str:
        result = runner.invoke(app, list(args))
        text = result.stdout + result.stderr
        outputs[" ".join(map(repr, args))] = text
        assert result.exit_code in codes, f"{args}: exit {result.exit_code}\n{text}"
        return result.stdout

    tag = yaml.safe_load(f'"tag{YAML_PAYLOAD}"')
    cli("validate", "suites")
    cli("run", "suites", "--db", db, "--tag", tag, "--note", f"note{PAYLOAD}")
    cli("runs", "note", "latest", f"new note{PAYLOAD}", "--db", db)
    cli("runs", "list", "--db", db)
    cli("runs", "show", "latest", "--db", db)
    shown = json.loads(cli("runs", "show", "latest", "--db", db, "--json"))
    listed = json.loads(cli("runs", "list", "--db", db, "--json"))
    cli("runs", "compare", "latest", "latest", "--db", db)
    cli("compare", "latest", "latest", "--db", db)
    cli("compare", "latest", "latest", "--db", db, "-f", "md")
    cli("digest", "latest", "--db", db)
    cli("digest", "latest", "--db", db, "-f", "md")
    for fmt in ("md", "html", "json", "csv", "junit"):
        cli("report", "latest", "--db", db, "-f", fmt)
    files = {}
    for fmt in ("md", "json", "csv", "junit"):  # files a person may cat
        cli("report", "latest", "--db", db, "-f", fmt, "-o", f"report.{fmt}")
        files[fmt] = Path(f"report.{fmt}").read_text(encoding="utf-8")
    assert json.loads(files["json"])["run"]["note"] == f"new note{PAYLOAD}"
    exported_yaml = cli("export", "run", "latest", "--db", db, "-f", "yaml")
    exported_json = cli("export", "run", "latest", "--db", db, "-f", "json")
    cli("simulate", "suites/hostile.yaml")
    [simulated] = json.loads(cli("simulate", "suites/hostile.yaml", "--json"))["results"]
    cli("personas", "list")

    # The text did get through, as text: the agent's reply, the case name, the note.
    reply = shown["results"][0]["result"]["transcript"]["events"][1]["messages"][0]
    assert reply.startswith(f"Reply {PAYLOAD}\rfake to: user says")
    assert simulated["transcript"]["events"][1]["messages"][0] == reply
    assert listed[0]["note"] == f"new note{PAYLOAD}"
    assert shown["results"][0]["case"] == yaml.safe_load(f'"case{YAML_PAYLOAD}"')
    assert yaml.safe_load(exported_yaml)["run"]["note"] == f"new note{PAYLOAD}"
    assert json.loads(exported_json) == yaml.safe_load(exported_yaml)
    shown_text = outputs[" ".join(map(repr, ("runs", "show", "latest", "--db", db)))]
    assert "case\\x1b]0;pwned\\x07" in shown_text
    assert "\\x1b]0;pwned" in outputs[" ".join(map(repr, ("runs", "list", "--db", db)))]  # table cells fold
    assert f"\\x7f{MARKUP}" in outputs[" ".join(map(repr, ("simulate", "suites/hostile.yaml")))]  # as written

    raw = {command: _raw(text) for command, text in outputs.items() if _raw(text)}
    assert not raw, f"raw control characters printed: {raw}"
    raw = {fmt: _raw(text) for fmt, text in files.items() if _raw(text)}
    assert not raw, f"raw control characters in report files: {raw}"


def test_csv_cells_and_quoted_file_content_reach_the_terminal_escaped(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = _project(tmp_path)
    monkeypatch.chdir(root)
    cell = PAYLOAD.replace(NUL, "")  # a NUL makes the file binary, refused as such
    (root / "tests.csv").write_text(
        f"name,prompt,must_contain,tags\ncsv{cell},Hello{cell},Reply,t{cell}\n", encoding="utf-8"
    )
    (root / "suites" / "broken.yaml").write_text(f'name: broken\n"ca{YAML_PAYLOAD}ses": []\n', encoding="utf-8")
    outputs: dict[str, str] = {}
    imported = False
    for args in (
        ["import", "csv", "tests.csv", "-o", "suites/from_csv.yaml"],
        ["validate", "suites"],
        ["validate", "suites/broken.yaml"],
        ["simulate", "suites/from_csv.yaml"],
        ["run", "suites/from_csv.yaml", "--db", str(root / "runs.db")],
    ):
        result = runner.invoke(app, args)
        outputs[" ".join(args)] = result.stdout + result.stderr
        if args[0] == "import":
            # Accepted today; a reader that refuses control characters must say so just as safely.
            imported = result.exit_code == 0
            assert imported or "tests.csv" in outputs[" ".join(args)]
    assert "ca\\x1b]0;pwned\\x07" in outputs["validate suites/broken.yaml"]
    if imported:
        assert "csv\\x1b]0;pwned\\x07" in outputs["simulate suites/from_csv.yaml"]
    raw = {command: _raw(text) for command, text in outputs.items() if _raw(text)}
    assert not raw, f"raw control characters printed: {raw}"
