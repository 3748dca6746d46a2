"""Hostile files for every reader of a user's file, and the exact error each gives.

Readers: suite, persona, agent and hosted evals files (``validate``), the single- and multi-turn CSV imports,
``import run`` of JSON and YAML exports, judge prompt files named by a suite, and the transcripts a judge-check
label file names. Hostile files: over the size limit by one byte, a named pipe, ``/dev/zero``, a NUL byte,
bytes that are not UTF-8, nesting past the depth limit, alias bombs, integers of thousands of digits,
infinity / NaN / float overflow where a number is read, control characters. Each must give the same located,
one-line error wherever it is read, never a crash, a hang or an exhausted memory.
"""

from __future__ import annotations

import asyncio
import json
import os
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
import yaml
from typer.testing import CliRunner

from simulator.cli import EXIT_INVALID, app
from simulator.errors import ConfigError, ConfigErrors
from simulator.exchange import ExchangeError, export_run, import_run
from simulator.loading import _limits as limits
from simulator.loading import load_suite, validate_paths
from simulator.loading._limits import MAX_FILE_BYTES
from simulator.loading.csv_import import dump_suite_yaml, import_csv
from simulator.loading.csv_multiturn import import_multiturn_csv
from simulator.models.run import RunRecord, StoredResult, SuiteSnapshot
from simulator.models.scores import CaseResult, Outcome, Score
from simulator.models.summary import RunSummary
from simulator.models.transcript import Transcript, UserEvent
from simulator.runner import rederived
from tests.factories import make_result, make_run, scenario_suite

#: Where each reader finds its file, relative to a fresh folder.
FILES = {
    "suite": "suite.yaml",
    "persona": "personas/p.yaml",
    "agent": "agent.yaml",
    "evals": "evals.yaml",
    "csv": "tests.csv",
    "csv-turns": "turns.csv",
    "run-json": "run.json",
    "run-yaml": "run.yaml",
    "prompt": "prompts/expectation.md",
    "transcript": "t.json",
}
READERS = tuple(FILES)
YAML_READERS = ("suite", "persona", "agent", "evals", "run-yaml")

#: A file that is valid for its reader, with ``{v}`` where a hostile value goes.
TEMPLATES = {
    "suite": "name: {v}\ncases:\n  - name: c1\n    kind: scenario\n    goal: Book\n",
    "persona": "name: {v}\npersonality: Patient.\n",
    "agent": "name: {v}\ntype: python\ncallable: bot.main:respond\n",
    "evals": "evals:\n  - name: {v}\n    steps:\n      - goal: Book a table\n",
    "run-yaml": "format: simulator-run\nversion: 1\nrun: {v}\nresults: []\n",
    "run-json": '{{"format": "simulator-run", "version": 1, "run": {v}, "results": []}}',
}

#: An agent for suites that are about something else: a suite needs an agent to test.
HTTP_AGENT = "type: http\nbase_url: http://127.0.0.1:9/v1\n"

DEEP_FLOW = "[" * 150 + "]" * 150
DEEP_JSON = "[" * 1500 + "]" * 1500
ALIAS_BOMB_FLOW = (
    "[&a [x, x, x, x, x, x, x, x, x, x], "
    + ", ".join(
        f"&{name} [{', '.join([f'*{previous}'] * 10)}]" for previous, name in zip("abcdef", "bcdefg", strict=True)
    )
    + "]"
)
HUGE_INT = "9" * 5000


def hostile(reader: str, kind: str) -> bytes | str | None:
    """The content of a hostile file for ``reader`` (bytes), a special file ("fifo", "devzero"), or None when
    the kind does not apply to the reader."""
    if kind == "too-large":
        return b"#" * (MAX_FILE_BYTES + 1)
    if kind in ("fifo", "devzero"):
        return kind
    if kind == "nul":
        return b"ab\x00cd\n"
    if kind == "not-utf8":
        return b"ab\xffcd\n"
    values = {
        "deep": DEEP_FLOW if reader != "run-json" else DEEP_JSON,
        "alias-bomb": ALIAS_BOMB_FLOW,
        "huge-int": HUGE_INT,
        "infinity": ".inf" if reader != "run-json" else "Infinity",
        "nan": ".nan" if reader != "run-json" else "NaN",
        "overflow": "1.0e+999" if reader != "run-json" else "1e999",
        "control-char": "a\x1b[2Jb",
        "lone-surrogate": '"a\\ud800b"',
    }
    if reader == "csv-turns" and kind == "huge-int":
        return f"case,turn,user\nc1,{HUGE_INT},Hi\n".encode()
    if kind not in values or reader not in TEMPLATES:
        return None
    if reader == "run-json" and kind in ("alias-bomb", "control-char"):
        if kind == "alias-bomb":
            return None
        return TEMPLATES[reader].format(v='"a\x1bb"').encode()
    return TEMPLATES[reader].format(v=values[kind]).encode()


KINDS = (
    "too-large",
    "fifo",
    "devzero",
    "nul",
    "not-utf8",
    "deep",
    "alias-bomb",
    "huge-int",
    "infinity",
    "nan",
    "overflow",
    "control-char",
    "lone-surrogate",
)


def place(root: Path, reader: str, content: bytes | str) -> Path:
    """Write the hostile file (and what its reader needs around it) into ``root``."""
    (root / ".git").mkdir(exist_ok=True)
    # The agents here name bot.main:respond, which validate imports; a suite needs an agent to test.
    (root / "bot").mkdir(exist_ok=True)
    (root / "bot" / "__init__.py").write_text("", encoding="utf-8")
    (root / "bot" / "main.py").write_text("def respond(messages):\n    return 'hi'\n", encoding="utf-8")
    if reader in ("suite", "evals"):
        (root / "agent.yaml").write_text(HTTP_AGENT, encoding="utf-8")
    path = root / FILES[reader]
    path.parent.mkdir(parents=True, exist_ok=True)
    if content == "fifo":
        os.mkfifo(path)
    elif content == "devzero":
        path.symlink_to("/dev/zero")
    else:
        assert isinstance(content, bytes)
        path.write_bytes(content)
    if reader == "prompt":
        (root / "suite.yaml").write_text(
            "name: s\nagent: {type: python, callable: bot.main:respond}\njudge_prompts:\n"
            "  expectation: prompts/expectation.md\ncases:\n  - kind: scenario\n    name: c\n    goal: Hi\n",
            encoding="utf-8",
        )
    if reader == "transcript":
        (root / "labels.yaml").write_text(
            "items:\n  - transcript: t.json\n    labels: {goal_satisfaction: 1}\n", encoding="utf-8"
        )
    return path


def read(root: Path, reader: str) -> list[str]:
    """Every error line the reader gives for the file in ``root`` (paths relative to it)."""
    path = root / FILES[reader]
    try:
        if reader in ("suite", "persona", "agent", "evals"):
            errors: list[ConfigError] = validate_paths([path]).errors
            return [error.render() for error in errors]
        if reader == "csv":
            import_csv(FILES[reader])
        elif reader == "csv-turns":
            import_multiturn_csv(FILES[reader])
        elif reader in ("run-json", "run-yaml"):
            import_run(path)
        elif reader == "prompt":
            from simulator.runner import load_prompt_overrides

            load_prompt_overrides(load_suite(root / "suite.yaml"))
        else:
            from simulator.analysis.judge_check import judge_check
            from simulator.llm import FakeScript, LLMClient
            from simulator.models import ModelRoles

            llm = LLMClient(ModelRoles.model_validate({"judge": "fake/judge"}), fake_script=FakeScript())
            asyncio.run(judge_check(root / "labels.yaml", llm=llm))
    except ConfigErrors as exc:
        return [error.render() for error in exc.errors]
    except ExchangeError as exc:
        return str(exc).replace(f"{root}{os.sep}", "").splitlines()
    return []


def run_hostile(root: Path, reader: str, kind: str) -> list[str] | None:
    content = hostile(reader, kind)
    if content is None:
        return None
    place(root, reader, content)
    return read(root, reader)


TOO_LARGE = "file is 10,000,001 bytes, larger than the 10 MB limit"
FIFO = "not a regular file but a named pipe (FIFO): give the path of a file"
DEVZERO = "not a regular file but a character device: give the path of a file"
TOO_DEEP = "nested deeper than the 100-level limit: flatten the lists and mappings"
ALIAS_BOMB = (
    "aliases expand to more values than the 100,000-value limit (an alias bomb?): write the repeated parts out or "
    "use fewer nested aliases"
)
HUGE = "the number 999999999999...999999 is longer than the 100-digit limit: write it in quotes to keep it as text"
NOT_FINITE = "is not a finite number: write a number such as 1.5, or put it in quotes to keep it as text"
CONTROL = (
    "control character U+001B is not allowed in YAML: remove it, or write it as an escape (\\u001b) in double quotes"
)
NOT_UTF8 = "not UTF-8 text (byte 0xff): save the file as UTF-8"
SURROGATE = "an escape such as \\ud800 writes half a surrogate pair, not a character: write the character itself"
CSV_NOT_UTF8 = (
    "not UTF-8 text (byte 0xff, likely an umlaut or other accented letter saved in a Windows encoding): save the "
    "file as UTF-8, in Excel as 'CSV UTF-8 (comma delimited)'"
)
RUN_TOO_LARGE = f"{TOO_LARGE}: export fewer results (a run's results can be exported apart) to import it"
PROMPT = "suite.yaml:4:16: judge_prompts.expectation: cannot read the prompt file 'prompts/expectation.md'"
TRANSCRIPT = "labels.yaml:2:17: items[0].transcript: 't.json', line 1, column"

#: Where the hostile value starts in each YAML template: file, line, column, key path.
VALUE_AT = {
    "suite": ("suite.yaml", 1, 7, "name"),
    "persona": ("personas/p.yaml", 1, 7, "name"),
    "agent": ("agent.yaml", 1, 7, "name"),
    "evals": ("evals.yaml", 2, 11, "evals[0].name"),
    "run-yaml": ("run.yaml", 3, 6, "run"),
}


def _expected() -> dict[tuple[str, str], list[str]]:
    table: dict[tuple[str, str], list[str]] = {}
    for reader, (file, line, column, key) in VALUE_AT.items():
        # validate's errors name the key path, (root) for the whole file; import run leaves (root) out.
        root = "" if reader == "run-yaml" else " (root):"
        advice = RUN_TOO_LARGE if reader == "run-yaml" else f"{TOO_LARGE}: split it into several files"
        expected = "JSON or YAML text" if reader == "run-yaml" else "YAML text"
        shown_as = file if reader == "run-yaml" else "/dev/zero"  # validate resolves the link it was given
        # A run export may nest 8 levels more than the files it holds (it holds them 4 to 6 levels down).
        deep_at, too_deep = (107, TOO_DEEP.replace("100", "108")) if reader == "run-yaml" else (99, TOO_DEEP)
        table.update(
            {
                (reader, "too-large"): [f"{file}:1:1:{root} {advice}"],
                (reader, "fifo"): [f"{file}:1:1:{root} {FIFO}"],
                (reader, "devzero"): [f"{shown_as}:1:1:{root} {DEVZERO}"],
                (reader, "nul"): [f"{file}:1:3:{root} binary file (contains a NUL byte): expected {expected}"],
                (reader, "not-utf8"): [f"{file}:1:3:{root} {NOT_UTF8}"],
                (reader, "deep"): [f"{file}:{line}:{column + deep_at}: {key}[0][0]: {too_deep}"],
                (reader, "alias-bomb"): [f"{file}:{line}:{column + 11}: {key}[4][7][8][9][0][2]: {ALIAS_BOMB}"],
                (reader, "huge-int"): [f"{file}:{line}:{column}: {key}: {HUGE}"],
                (reader, "infinity"): [f"{file}:{line}:{column}: {key}: .inf {NOT_FINITE}"],
                (reader, "nan"): [f"{file}:{line}:{column}: {key}: .nan {NOT_FINITE}"],
                (reader, "overflow"): [f"{file}:{line}:{column}: {key}: 1.0e+999 {NOT_FINITE}"],
                (reader, "control-char"): [f"{file}:{line}:{column + 1}:{root} {CONTROL}"],
                (reader, "lone-surrogate"): [
                    f"{file}:{line}:{column + 4}:{root} YAML syntax error: found invalid Unicode character escape "
                    f"code while parsing a quoted scalar that starts on line {line}, column {column}"
                ],
            }
        )
    for reader in ("csv", "csv-turns"):
        file = FILES[reader]
        table.update(
            {
                (reader, "too-large"): [f"{file}:1:1: (root): {TOO_LARGE}: split it into several CSV files"],
                (reader, "fifo"): [f"{file}:1:1: (root): {FIFO}"],
                (reader, "devzero"): [f"{file}:1:1: (root): {DEVZERO}"],
                (reader, "nul"): [f"{file}:1:3: (root): binary file (contains NUL bytes): expected CSV text"],
                (reader, "not-utf8"): [f"{file}:1:3: (root): {CSV_NOT_UTF8}"],
            }
        )
    # In a list item of a list (two levels more), the 98th bracket is too deep; the key path names 3 levels.
    table["evals", "deep"] = [f"evals.yaml:2:108: evals[0].name: {TOO_DEEP}"]
    table["csv-turns", "huge-int"] = [f"turns.csv:2:2: row 1.turn: {HUGE}"]
    table.update(
        {
            ("run-json", "too-large"): [f"run.json:1:1: {RUN_TOO_LARGE}"],
            ("run-json", "fifo"): [f"run.json:1:1: {FIFO}"],
            ("run-json", "devzero"): [f"run.json:1:1: {DEVZERO}"],
            ("run-json", "nul"): ["run.json:1:3: binary file (contains a NUL byte): expected JSON or YAML text"],
            ("run-json", "not-utf8"): [f"run.json:1:3: {NOT_UTF8}"],
            # 1,500 levels: past json's own recursion limit, refused at the 101st.
            ("run-json", "deep"): [f"run.json:1:157: {TOO_DEEP.replace('100', '108')}"],
            ("run-json", "huge-int"): [f"run.json:1:50: {HUGE}"],
            ("run-json", "infinity"): [f"run.json:1:50: Infinity {NOT_FINITE}"],
            ("run-json", "nan"): [f"run.json:1:50: NaN {NOT_FINITE}"],
            ("run-json", "overflow"): [f"run.json:1:50: 1e999 {NOT_FINITE}"],
            ("run-json", "control-char"): ["run.json:1:52: not valid JSON: Invalid control character"],
            # json.loads reads it, and SQLite then failed to store the run (UnicodeEncodeError).
            ("run-json", "lone-surrogate"): [f"run.json:1:50: {SURROGATE}"],
            ("prompt", "too-large"): [f"{PROMPT}: {TOO_LARGE}: shorten the prompt"],
            ("prompt", "fifo"): [f"{PROMPT}: {FIFO}"],
            ("prompt", "devzero"): [f"{PROMPT}: {DEVZERO}"],
            ("prompt", "nul"): [f"{PROMPT} (line 1, column 3): binary file (contains a NUL byte): expected text"],
            ("prompt", "not-utf8"): [f"{PROMPT} (line 1, column 3): {NOT_UTF8}"],
            ("transcript", "too-large"): [f"{TRANSCRIPT} 1: {TOO_LARGE}: label a shorter conversation"],
            ("transcript", "fifo"): [f"{TRANSCRIPT} 1: {FIFO}"],
            ("transcript", "devzero"): [f"{TRANSCRIPT} 1: {DEVZERO}"],
            ("transcript", "nul"): [f"{TRANSCRIPT} 3: binary file (contains a NUL byte): expected JSON text"],
            ("transcript", "not-utf8"): [f"{TRANSCRIPT} 3: {NOT_UTF8}"],
        }
    )
    return table


EXPECTED = _expected()


def test_the_table_covers_every_reader_and_every_kind_that_applies() -> None:
    assert {reader for reader, _ in EXPECTED} == set(READERS)
    for reader in READERS:
        for kind in KINDS:
            assert ((reader, kind) in EXPECTED) == (hostile(reader, kind) is not None), (reader, kind)


@pytest.mark.parametrize(
    ("reader", "kind"), [pytest.param(reader, kind, id=f"{reader}-{kind}") for reader, kind in EXPECTED]
)
def test_hostile_file(reader: str, kind: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    root = tmp_path.resolve()
    monkeypatch.chdir(root)
    found = run_hostile(root, reader, kind)
    assert found == EXPECTED[reader, kind]
    assert all("\n" not in line for line in found)


def dump_actual(make_root: Callable[[], Path]) -> None:  # pragma: no cover - a helper to write the table
    for reader in READERS:
        for kind in KINDS:
            root = make_root()
            os.chdir(root)
            found = run_hostile(root, reader, kind)
            if found is not None:
                print(f"    ({reader!r}, {kind!r}): {found!r},")


# --- CSV imports: the suite they write is never one `validate` refuses -----------------------------------


def _rows_csv(path: Path, rows: int) -> Path:
    path.write_text("prompt,must_contain\n" + "".join(f"q{i},a\n" for i in range(rows)), encoding="utf-8")
    return path


def test_a_csv_of_200k_rows_is_refused_up_front_with_the_limits_validate_uses(tmp_path: Path) -> None:
    """A 1.9 MB CSV of 200k rows is refused when the rows read already make a suite `validate` would refuse (here:
    more values than it reads), before the rest is read or anything is written."""
    csv_file = _rows_csv(tmp_path / "big.csv", 200_000)
    with pytest.raises(ConfigErrors) as caught:
        import_csv(csv_file)
    assert [error.render() for error in caught.value.errors] == [
        f"{csv_file}:31251:1: row 31250: the suite to write holds more values than the 500,000-value limit: split "
        "the CSV into several files (this row is past the limit)"
    ]


@pytest.mark.parametrize(
    ("importer", "text", "error"),
    [
        pytest.param(
            import_csv,
            "prompt,must_contain\n" + "".join(f"question {i},a\n" for i in range(100)),
            "rows.csv:51:1: row 50: the suite to write is larger than the 4 kB limit: split the CSV into several "
            "files (this row is past the limit)",
            id="single-turn",
        ),
        pytest.param(
            import_multiturn_csv,
            "case,turn,user,expected_tools\n" + "".join(f'c,{i + 1},m,"a,b,c,d"\n' for i in range(100)),
            "rows.csv:60:1: row 59: the suite to write is larger than the 4 kB limit: split the CSV into several "
            "files (this row is past the limit)",
            id="multi-turn",
        ),
    ],
)
def test_the_row_that_takes_the_suite_past_the_size_limit_is_named(
    importer: Callable[[str], object], text: str, error: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(limits, "MAX_FILE_BYTES", 4000)
    monkeypatch.chdir(tmp_path)
    Path("rows.csv").write_text(text, encoding="utf-8")
    with pytest.raises(ConfigErrors) as caught:
        importer("rows.csv")
    assert [found.render() for found in caught.value.errors] == [error]


def test_the_written_suite_is_checked_against_the_limit_before_it_is_written(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The estimate while reading is a lower bound; the YAML itself is measured before anything is written."""
    monkeypatch.chdir(tmp_path)
    _rows_csv(tmp_path / "rows.csv", 40)
    data = import_csv("rows.csv")
    text = dump_suite_yaml(data)
    assert len(text.encode()) == 3961
    monkeypatch.setattr(limits, "MAX_FILE_BYTES", 3000)
    with pytest.raises(ConfigErrors) as caught:
        dump_suite_yaml(data)
    assert [found.render() for found in caught.value.errors] == [
        "rows.csv:1:1: (root): the suite to write is 4 kB, larger than the 3 kB limit: split the CSV into several files"
    ]
    result = CliRunner().invoke(app, ["import", "csv", "rows.csv", "-o", "suite.yaml"])
    assert result.exit_code == EXIT_INVALID, result.stdout + result.stderr
    assert not (tmp_path / "suite.yaml").exists()


def test_the_suite_is_dumped_a_chunk_of_cases_at_a_time_to_the_same_text(tmp_path: Path) -> None:
    data = import_csv(_rows_csv(tmp_path / "rows.csv", 1234))
    header, body = dump_suite_yaml(data).split("\n", 2)[:2], dump_suite_yaml(data).split("\n", 2)[2]
    assert header[0].startswith("# Imported from rows.csv")
    assert body == yaml.safe_dump(data, sort_keys=False, allow_unicode=True, width=1_000_000_000)
    suite = tmp_path / "suite.yaml"
    suite.write_text(dump_suite_yaml(data), encoding="utf-8")
    (tmp_path / ".git").mkdir()
    (tmp_path / "agent.yaml").write_text(HTTP_AGENT, encoding="utf-8")
    assert validate_paths([suite]).errors == []


# --- run imports: numbers are checked, totals are computed ------------------------------------------------


def _run(outcomes: tuple[Outcome, ...] = ("pass", "fail", "error")) -> tuple[RunRecord, list[StoredResult]]:
    record = make_run(
        "20261129-232501-ab12cd",
        SuiteSnapshot(path="suites/shop.yaml", suite=scenario_suite("Shop", "c", "Get a refund")),
        created=datetime(2026, 11, 29, 23, 25, 1, tzinfo=UTC),
        status="completed",
        suite_hash="h1",
        totals=RunSummary(total=3, passed=1, failed=1, error=1, correctness=1 / 3, duration_s=12.5),
    )
    results = [
        make_result(
            record,
            0,
            "c",
            outcome,
            repeat=repeat,
            result=_honest(outcome, repeat),
            finished=datetime(2026, 11, 29, 23, 26, tzinfo=UTC),
            duration_s=1.5,
        )
        for repeat, outcome in enumerate(outcomes)
    ]
    return record, results


def _honest(outcome: Outcome, repeat: int) -> CaseResult:
    """A result whose transcript and scores give ``outcome``: an import decides every outcome again."""
    error = {"stop_reason": "error", "error": "the agent is down"} if outcome == "error" else {}
    transcript = Transcript(case="c", kind="scenario", events=[UserEvent(turn=1, text="Hi", source="llm")], **error)
    verdict = {"fail": "not_met", "unsure": "unsure"}.get(outcome)
    scores = [Score(metric="goal", check="the goal is reached", source="judge", verdict=verdict)] if verdict else []
    result = CaseResult(case="c", kind="scenario", repeat=repeat, outcome=outcome, transcript=transcript, scores=scores)
    honest = rederived(result, count_user_errors=False)
    assert honest.outcome == outcome
    return honest


def _place_of(text: str, fragment: str, skip: int = 0) -> tuple[int, int]:
    """Line and column (1-based) where the value after ``fragment`` starts."""
    offset = text.index(fragment) + skip
    return text.count("\n", 0, offset) + 1, offset - (text.rfind("\n", 0, offset) + 1) + 1


@pytest.mark.parametrize("fmt", ["json", "yaml"])
def test_imported_totals_are_computed_from_the_results_never_taken_from_the_file(fmt: str, tmp_path: Path) -> None:
    from simulator.metrics import run_summary

    record, results = _run()
    forged = record.model_copy(update={"totals": RunSummary(total=30, passed=30, correctness=100.0, duration_s=12.5)})
    path = tmp_path / f"run.{fmt}"
    path.write_text(export_run(forged, results, fmt), encoding="utf-8")  # type: ignore[arg-type]
    imported, _ = import_run(path)
    assert imported.totals == run_summary(results, 12.5, record)  # the coverage too
    assert imported.totals is not None
    assert (imported.totals.total, imported.totals.passed, imported.totals.correctness) == (3, 1, 1 / 3)


@pytest.mark.parametrize(
    ("change", "fragment", "skip", "message"),
    [
        pytest.param(
            lambda d: d["results"][1].update(duration_s="INF"), '"duration_s": Infinity', 14,
            f"Infinity {NOT_FINITE}", id="infinite-duration",
        ),
        pytest.param(
            lambda d: d["results"][2]["result"].update(outcome="pass"), '"outcome": "error"', 11,
            "results[2].outcome: 'error' is not the outcome of the result it stores ('pass')", id="forged-outcome",
        ),
        pytest.param(
            lambda d: d["run"]["totals"].update(duration_s=-5.0), '"duration_s": -5.0', 14,
            "run.totals.duration_s: a duration cannot be negative: -5.0", id="negative-duration",
        ),
        pytest.param(
            lambda d: d["results"][0].update(duration_s=int("9" * 200)), '"duration_s": 999', 14,
            "the number 999999999999...999999 is longer than the 100-digit limit: write it in quotes to keep it as "
            "text",
            id="huge-integer",
        ),
    ],
)  # fmt: skip
def test_forged_numbers_and_outcomes_in_a_run_export_are_refused_where_they_are_written(
    change: Callable[[dict[str, Any]], None], fragment: str, skip: int, message: str, tmp_path: Path
) -> None:
    data = json.loads(export_run(*_run()))
    change(data)
    text = json.dumps(data, indent=2).replace('"INF"', "Infinity")
    path = tmp_path / "run.json"
    path.write_text(text, encoding="utf-8")
    line, column = _place_of(text, fragment, skip)
    with pytest.raises(ExchangeError) as caught:
        import_run(path)
    assert str(caught.value) == f"{path}:{line}:{column}: {message}"


def test_an_export_given_as_text_is_held_to_the_size_limit(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(limits, "MAX_FILE_BYTES", 1000)
    with pytest.raises(ExchangeError) as caught:
        import_run('{"format": "simulator-run"' + " " * 1000 + "}")
    assert str(caught.value) == (
        "(text):1:1: the text is larger than the 1 kB limit: export fewer results (a run's results can be exported "
        "apart) to import it"
    )


def test_an_alias_bomb_export_is_refused_fast_and_small(tmp_path: Path) -> None:
    """A 149 KB YAML export of nested aliases took 800 MB and 21 s to import; one level more exhausted memory."""
    levels = "".join(f"  l{i}: &l{i} [{', '.join([f'*l{i - 1}'] * 10)}]\n" for i in range(1, 10))
    path = tmp_path / "run.yaml"
    path.write_text(f"format: simulator-run\nversion: 1\nx:\n  l0: &l0 [lol, lol, lol]\n{levels}", encoding="utf-8")
    with pytest.raises(ExchangeError) as caught:
        import_run(path)
    assert str(caught.value) == f"{path}:4:22: x.l5[1][3][2][1][4][2]: {ALIAS_BOMB}"


@pytest.mark.parametrize(
    ("text", "error"),
    [
        pytest.param("a: " + "[" * 5000 + "]" * 5000 + "\n", f"f.yaml:1:103: a[0][0]: {TOO_DEEP}", id="deep"),
        pytest.param('a: "x\\ud800"\n', f"f.yaml:1:4: a: {SURROGATE}", id="lone-surrogate"),
        pytest.param('"\\udc00": 1\n', f"f.yaml:1:1: (root): {SURROGATE}", id="lone-surrogate-key"),
        pytest.param(f"a: {HUGE_INT}\n", f"f.yaml:1:4: a: {HUGE}", id="huge-int"),
        pytest.param(f"a: {ALIAS_BOMB_FLOW}\n", f"f.yaml:1:15: a[4][7][8][9][0][2]: {ALIAS_BOMB}", id="alias-bomb"),
    ],
)
def test_without_libyaml_the_yaml_reader_keeps_the_same_limits(
    text: str, error: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """PyYAML's pure-Python parser (used where libyaml is missing) lets escapes of lone surrogates through and
    has no nesting limit of its own: the reader's checks still apply."""
    import simulator.loading._yaml as yaml_reader

    monkeypatch.setattr(yaml_reader, "_Loader", yaml.SafeLoader)
    _, errors = yaml_reader.parse_yaml(text, "f.yaml")
    assert [found.render() for found in errors] == [error]


STOP = "more problems than the 100-problem limit: fix the ones above and check the file again"


@pytest.mark.parametrize(
    ("name", "text", "last"),
    [
        pytest.param(
            "suite.yaml",
            "name: d\ncases:\n" + "  - no\n" * 20_000,
            f"suite.yaml:103:5: cases[100]: {STOP}",
            id="yaml-reader",
        ),
        pytest.param(
            "suite.yaml",
            "name: d\ncases: [{name: c, kind: scenario, goal: g}]\n" + "".join(f"k{i}: 1\n" for i in range(20_000)),
            f"suite.yaml:103:1: k100: {STOP}",
            id="schema-check",
        ),
        pytest.param(
            "tests.csv", "prompt,must_contain\n" + '"x"y,a\n' * 50_000, f"tests.csv:102:1: row 101.prompt: {STOP}",
            id="csv-import",
        ),
    ],
)  # fmt: skip
def test_a_file_of_thousands_of_mistakes_stops_at_the_problem_limit(
    name: str, text: str, last: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """200,000 `no` items never finished validating (checks quadratic in the errors), 200,000 unknown keys
    took 27 s; a quote error on each of 50,000 CSV rows 28 s."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / ".git").mkdir()
    (tmp_path / "agent.yaml").write_text(HTTP_AGENT, encoding="utf-8")
    Path(name).write_text(text, encoding="utf-8")
    if name.endswith(".csv"):
        with pytest.raises(ConfigErrors) as caught:
            import_csv(name)
        errors = caught.value.errors
    else:
        errors = validate_paths([name]).errors
    assert len(errors) == 101
    assert errors[-1].render() == last


@pytest.mark.parametrize("fmt", ["json", "yaml"])
def test_a_run_of_a_suite_nested_to_the_limit_is_exported_and_imported(fmt: str, tmp_path: Path) -> None:
    """Nothing recursive fails on a suite at the depth limit (schema, models, tool parameters' JSON Schema
    check), and its run export, which holds the suite 4 levels down, is read back."""
    (tmp_path / ".git").mkdir()
    (tmp_path / "bot").mkdir()
    (tmp_path / "bot" / "__init__.py").write_text("", encoding="utf-8")
    (tmp_path / "bot" / "main.py").write_text("def respond(messages):\n    return 'hi'\n", encoding="utf-8")
    parameters = '{"type": "object", "properties": {"x": ' * 47 + "{}" + "}}" * 47
    suite_file = tmp_path / "suite.yaml"
    suite_file.write_text(
        "name: deep\nmetadata: {x: " + "[" * 98 + "]" * 98 + "}\n"
        "agent:\n  type: python\n  callable: bot.main:respond\n  tools:\n"
        f"    - name: t\n      parameters: {parameters}\n"
        "cases:\n  - {name: c, kind: scenario, goal: Book}\n",
        encoding="utf-8",
    )
    assert validate_paths([suite_file]).errors == []
    record, results = _run(())
    snapshot = SuiteSnapshot(path="suite.yaml", suite=load_suite(suite_file).suite)
    record = record.model_copy(update={"snapshot": [snapshot], "totals": None})
    assert import_run(export_run(record, results, fmt), fmt) == (record, results)  # type: ignore[arg-type]
