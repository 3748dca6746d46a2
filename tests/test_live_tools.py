"""Live tools and the code a suite names: where modules are found, what a failing tool does, the example.

Every test writes its suites and modules into a fresh folder and runs from another one, as a person does
who runs ``simulator`` from their project's root: the modules must be found beside the suite (or the agent
file), not through the working folder.
"""

from __future__ import annotations

import asyncio
import sys
import textwrap
from collections.abc import Mapping
from pathlib import Path

import pytest

from simulator.code_refs import PRIVATE_ROOT, CodeRefError, resolve, resolve_callable
from simulator.llm import LLMClient
from simulator.loading import load_suite, validate_paths
from simulator.models.run import RunSettings
from simulator.models.transcript import ToolCallRecord, Transcript
from simulator.runner import find_case, model_roles, run_case

ROOT = Path(__file__).resolve().parent.parent
EXAMPLE = ROOT / "suites" / "examples" / "live_tools" / "holidays.yaml"


def write(root: Path, files: Mapping[str, str]) -> Path:
    """Write ``files`` under ``root`` (a .git folder stops the upward search for agent.yaml there)."""
    (root / ".git").mkdir(parents=True, exist_ok=True)
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text), encoding="utf-8")
    return root


def run_live(suite: Path, case: str, *, live: bool = True) -> Transcript:
    loaded = load_suite(suite)
    options = RunSettings(live=live)
    llm = LLMClient(model_roles(loaded, options))
    return asyncio.run(run_case(loaded, find_case(loaded, case), persona=None, llm=llm, options=options))


def calls(transcript: Transcript) -> list[ToolCallRecord]:
    assert transcript.stop_reason != "error", transcript.error
    return transcript.tool_calls()


AGENT_YAML = """\
    type: python
    callable: {agent}
    tools:
      - name: lookup
        function: {function}
"""

#: A python agent that calls its `lookup` tool and says what came back.
AGENT_PY = """\
    import json

    def respond(messages, tools):
        return "lookup gave " + json.dumps(tools.call("lookup", what="x"))
"""

SUITE_YAML = """\
    name: live
    cases:
      - name: ask
        kind: golden
        turns:
          - user: Look it up, please.
"""


def suite_folder(tools_py: str, *, function: str = "shop_tools:lookup") -> dict[str, str]:
    """A suite, its agent file, the agent's module and the module ``shop_tools`` holding ``tools_py``."""
    return {
        "agent.yaml": AGENT_YAML.format(agent="shop_agent:respond", function=function),
        "suite.yaml": SUITE_YAML,
        "shop_agent.py": AGENT_PY,
        "shop_tools.py": tools_py,
    }


@pytest.fixture
def elsewhere(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Run from a folder that holds none of the modules."""
    folder = tmp_path / "elsewhere"
    folder.mkdir()
    monkeypatch.chdir(folder)
    return folder


def test_a_tool_module_beside_the_suite_imports_in_a_live_run(tmp_path: Path, elsewhere: Path) -> None:
    suite = write(tmp_path / "suites" / "shop", suite_folder("def lookup(what):\n    return {'found': what}\n"))
    [record] = calls(run_live(suite / "suite.yaml", "ask"))
    assert (record.name, record.status, record.result, record.error) == ("lookup", "executed", {"found": "x"}, None)
    # Without --live the function is never called: no fake answers, so the call is not executed.
    [record] = calls(run_live(suite / "suite.yaml", "ask", live=False))
    assert record.status == "not_executed"


def test_two_suites_with_same_named_modules_each_get_their_own(tmp_path: Path, elsewhere: Path) -> None:
    path_before = list(sys.path)
    for name in ("a", "b"):
        write(tmp_path / name, suite_folder(f"def lookup(what):\n    return 'from {name}'\n"))
    results = [calls(run_live(tmp_path / name / "suite.yaml", "ask"))[0].result for name in ("a", "b", "a")]
    assert results == ["from a", "from b", "from a"]
    # Nothing leaks into the process under the plain names, and sys.path is as it was.
    assert "shop_tools" not in sys.modules
    assert "shop_agent" not in sys.modules
    assert sys.path == path_before


def test_the_suite_folder_comes_before_the_agent_file_folder(tmp_path: Path, elsewhere: Path) -> None:
    files = {
        "agent.yaml": AGENT_YAML.format(agent="shop_agent:respond", function="shop_tools:lookup"),
        "shop_agent.py": AGENT_PY,
        "shop_tools.py": "def lookup(what):\n    return 'beside the agent file'\n",
        "one/suite.yaml": SUITE_YAML,
        "two/suite.yaml": SUITE_YAML,
        "two/shop_tools.py": "def lookup(what):\n    return 'beside the suite'\n",
    }
    root = write(tmp_path / "project", files)
    assert calls(run_live(root / "one" / "suite.yaml", "ask"))[0].result == "beside the agent file"
    assert calls(run_live(root / "two" / "suite.yaml", "ask"))[0].result == "beside the suite"
    assert validate_paths([root]).errors == []


def test_a_module_beside_the_suite_can_import_its_neighbours(tmp_path: Path, elsewhere: Path) -> None:
    files = suite_folder("from holiday_data import DAYS\n\ndef lookup(what):\n    return DAYS\n")
    files["holiday_data.py"] = "DAYS = ['2025-10-03']\n"
    suite = write(tmp_path / "s", files)
    assert calls(run_live(suite / "suite.yaml", "ask"))[0].result == ["2025-10-03"]


def test_a_live_tool_that_raises_is_failed_and_the_conversation_goes_on(tmp_path: Path, elsewhere: Path) -> None:
    suite = write(tmp_path / "s", suite_folder("def lookup(what):\n    raise TimeoutError('holiday API timed out')\n"))
    transcript = run_live(suite / "suite.yaml", "ask")
    [record] = calls(transcript)
    assert (record.status, record.error, record.result) == ("failed", "TimeoutError: holiday API timed out", None)
    # The agent was told plainly, and answered: the tool failed, not the agent.
    [reply] = transcript.agent_events()
    assert reply.messages == ['lookup gave {"error": "TimeoutError: holiday API timed out", "status": "failed"}']
    assert transcript.error is None


def test_a_live_tool_that_cannot_be_imported_is_failed_not_an_agent_error(tmp_path: Path, elsewhere: Path) -> None:
    suite = write(tmp_path / "s", suite_folder("", function="shop_tool:lookup"))
    transcript = run_live(suite / "suite.yaml", "ask")
    [record] = calls(transcript)
    assert record.status == "failed"
    assert record.error is not None
    assert record.error.startswith(
        "cannot import tool function 'shop_tool:lookup': ModuleNotFoundError: no module named 'shop_tool' (looked in "
    )


# -- resolve: every way a reference can be wrong, and the message for it --------------------------------------

MODULES = {
    "holiday_tools.py": "HOLIDAYS = {'DE': []}\n\ndef list_holidays(country):\n    return HOLIDAYS[country]\n",
    "raises_on_import.py": "import os\n\nKEY = os.environ['NO_SUCH_VARIABLE_FOR_SIMULATOR_TESTS']\n",
    "bad_syntax.py": "def list_holidays(:\n",
    "needs_a_package.py": "import no_such_package_for_simulator_tests\n",
    "pkg/__init__.py": "",
    "pkg/tools.py": "def list_holidays(country):\n    return []\n",
}


@pytest.mark.parametrize(
    ("ref", "message"),
    [
        (
            "no_such_module:f",
            "cannot import tool function 'no_such_module:f': ModuleNotFoundError: no module named 'no_such_module' "
            "(looked in code, the working folder and the installed packages). Check the module path; a module of "
            "your own goes beside the suite file or the agent file, as no_such_module.py",
        ),
        (
            "pkg.missing:f",
            "cannot import tool function 'pkg.missing:f': ModuleNotFoundError: no module named 'pkg.missing' (pkg is "
            "in code, but 'pkg.missing' is not). Check the module path; a module of your own goes beside the suite "
            "file or the agent file, as pkg/missing.py",
        ),
        (
            "holiday_tools:list_holiday",
            "cannot import tool function 'holiday_tools:list_holiday': module 'holiday_tools' has no 'list_holiday' "
            "(in code/holiday_tools.py); did you mean 'list_holidays'?",
        ),
        (
            "holiday_tools:HOLIDAYS",
            "tool function 'holiday_tools:HOLIDAYS' is not callable: it is a dict; name a function (`def ...` or "
            "`async def ...`)",
        ),
        (
            "raises_on_import:f",
            "cannot import tool function 'raises_on_import:f': loading module 'raises_on_import' raised KeyError at "
            "code/raises_on_import.py:3: 'NO_SUCH_VARIABLE_FOR_SIMULATOR_TESTS'",
        ),
        (
            "bad_syntax:list_holidays",
            "cannot import tool function 'bad_syntax:list_holidays': loading module 'bad_syntax' raised SyntaxError "
            "at code/bad_syntax.py:1: invalid syntax",
        ),
        (
            "needs_a_package:f",
            "cannot import tool function 'needs_a_package:f': loading module 'needs_a_package' raised "
            "ModuleNotFoundError at code/needs_a_package.py:1: No module named 'no_such_package_for_simulator_tests' "
            "(install it where simulator is installed, or fix the import)",
        ),
    ],
)
def test_a_reference_that_cannot_be_used_says_why(tmp_path: Path, elsewhere: Path, ref: str, message: str) -> None:
    folder = write(tmp_path / "elsewhere" / "code", MODULES)
    with pytest.raises(CodeRefError) as caught:
        resolve_callable(ref, what="tool function", folders=[folder])
    assert str(caught.value) == message


def test_resolve_finds_dotted_modules_and_attributes_in_a_folder(tmp_path: Path, elsewhere: Path) -> None:
    folder = write(tmp_path / "code", MODULES)
    function = resolve("pkg.tools:list_holidays", what="tool function", folders=[folder])
    assert function("DE") == []
    assert function.__module__.startswith(f"{PRIVATE_ROOT}.")
    assert function.__module__.endswith(".pkg.tools")
    assert resolve("holiday_tools:list_holidays.__name__", what="tool function", folders=[folder]) == "list_holidays"
    # Installed packages are still found when the folder does not have the module.
    assert resolve("json:dumps", what="tool function", folders=[folder]) is __import__("json").dumps


# -- the shipped example -----------------------------------------------------------------------------------------


def test_the_live_tools_example_runs_its_tool_with_live(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(ROOT)
    [record] = calls(run_live(EXAMPLE, "german_holidays_2025"))
    assert record.status == "executed"
    assert isinstance(record.result, str)
    assert '"2025-10-03"' in record.result
    [record] = calls(run_live(EXAMPLE, "a_year_without_data"))
    assert (record.status, record.error) == ("failed", "LookupError: no holiday data for DE 2031")


def test_the_live_tools_example_is_faked_without_live(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(ROOT)
    [record] = calls(run_live(EXAMPLE, "german_holidays_2025", live=False))
    assert (record.status, record.fake) == ("faked", "suite tool_fakes[0]")
