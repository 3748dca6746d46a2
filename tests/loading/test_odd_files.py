"""Odd file names and files that are not files, as `validate` (and `lint`) meet them in a folder.

A line break in a suite file's name must not let `validate` print a forged ``FILE:LINE:COL`` line: names are
printed on one line, the break escaped. A YAML name in the folder that is not a file to read (a named pipe, a
link to a device, a broken link, a link loop) is never read (it could block or fail) and never passed over
silently: it is listed with why, on stderr and in ``--json``.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Callable
from pathlib import Path

import pytest
from typer.testing import CliRunner

from simulator.cli import app

runner = CliRunner()

#: A suite with a YAML error, so that its name is printed at the start of an error line.
BROKEN = "name: x\ncases: [\n"
#: What a forged line would say.
FORGED = "forged.yaml:7:7: all good"
#: Line breaks a file name may hold, and how they are shown.
BREAKS = {"line feed": ("\n", "\\x0a"), "CR LF": ("\r\n", "\\x0d\\x0a"), "line separator": ("\u2028", "\\u2028")}


@pytest.mark.parametrize("command", [["validate"], ["lint"]], ids=["validate", "lint"])
@pytest.mark.parametrize("name", list(BREAKS), ids=list(BREAKS))
def test_a_line_break_in_a_file_name_cannot_forge_a_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, name: str, command: list[str]
) -> None:
    char, shown = BREAKS[name]
    folder = tmp_path / "suites"
    folder.mkdir()
    (folder / f"evil{char}{FORGED}.yaml").write_text(BROKEN, encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    result = runner.invoke(app, [*command, "suites"])
    assert result.exit_code != 0, result.stdout + result.stderr
    lines = (result.stdout + result.stderr).splitlines()
    assert not [line for line in lines if line.startswith("forged.yaml")], lines
    assert any(line.startswith(f"suites/evil{shown}{FORGED}.yaml:") for line in lines), lines


def _fifo(path: Path) -> None:
    os.mkfifo(path)


def _device_link(path: Path) -> None:
    path.symlink_to(os.devnull)


def _broken_link(path: Path) -> None:
    path.symlink_to(path.parent / "nowhere.yaml")


def _link_loop(path: Path) -> None:
    path.symlink_to(path)


#: Each kind of name that is not a file to read, how it is made, and the words that say why.
NOT_FILES: dict[str, tuple[Callable[[Path], None], str]] = {
    "named pipe": (_fifo, "not a regular file but a named pipe (FIFO)"),
    "link to a device": (_device_link, "not a regular file but a character device"),
    "broken link": (_broken_link, "a broken symbolic link: its target"),
    "link loop": (_link_loop, "a symbolic link loop"),
}


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="named pipes and symbolic links as on POSIX")
@pytest.mark.parametrize("kind", list(NOT_FILES), ids=list(NOT_FILES))
def test_validate_lists_what_it_skips_in_a_folder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, kind: str) -> None:
    make, why = NOT_FILES[kind]
    folder = tmp_path / "suites"
    folder.mkdir()
    (folder / "good.yaml").write_text(
        "name: good\nagent: {type: http, base_url: 'http://127.0.0.1:9/v1'}\n"
        "cases:\n  - name: hello\n    kind: scenario\n    goal: say hello\n",
        encoding="utf-8",
    )
    make(folder / "odd.yaml")
    monkeypatch.chdir(tmp_path)

    result = runner.invoke(app, ["validate", "suites"])
    assert result.exit_code == 0, result.stdout + result.stderr
    assert re.search(rf"^skipped suites/odd\.yaml: {re.escape(why)}", result.stderr, re.M), result.stderr
    assert "Skipped 1 YAML name" in result.stdout

    as_json = runner.invoke(app, ["validate", "suites", "--json"])
    assert as_json.exit_code == 0, as_json.stdout + as_json.stderr
    skipped = json.loads(as_json.stdout)["skipped"]
    assert [item["file"] for item in skipped] == ["suites/odd.yaml"]
    assert skipped[0]["reason"].startswith(why)
