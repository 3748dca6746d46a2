"""Moving cases, runs and results in and out of Simulator, and turning a recorded conversation into a golden case.

Everything here is pure (data in, text or data out) except the two small helpers that touch files or the
store: :func:`write_export` and :func:`import_into_store`.

* :func:`export_cases`: loaded suites as self-contained YAML files (agent config inline, the personas they
  name beside them under ``personas/``), each loading back to an equal suite;
* :func:`export_run` / :func:`export_results`: a run with its results, or just results, as JSON or YAML
  text in a small envelope (``format``, ``version``) that :func:`import_run` / :func:`import_results` read back
  to equal models;
* :func:`export_chat_jsonl`: a run's conversations as JSON Lines in the OpenAI chat-messages shape, one
  conversation a line with its verdicts beside it, for other tools (fine-tuning sets, eval viewers);
* :func:`write_export`: one file written as is, several as a zip with fixed timestamps, so that the same
  export gives the same bytes; an existing file is never overwritten unless asked;
* :func:`golden_from_transcript` / :func:`golden_from_run`: the agent's actual replies, tool calls and
  hand-offs of one conversation as a golden case, for regression tests of behaviour that was checked once.
"""

from __future__ import annotations

import base64
import io
import json
import os
import zipfile
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path, PurePosixPath
from typing import TYPE_CHECKING, Any, Final, Literal, TypeVar

from pydantic import Field, TypeAdapter, ValidationError

from simulator._files import write_file
from simulator.errors import DiskError, InputError
from simulator.exchange._audio import audio_problems, with_audio
from simulator.loading import (
    EXPORT_EXTRA_DEPTH,
    DataPath,
    ReadProblem,
    export_yaml,
    format_path,
    json_position,
    parse_json,
    parse_yaml,
    read_bounded_text,
    text_too_large,
    too_large,
    tool_parameter_problems,
)
from simulator.models import DataModel, GoldenCase, Persona, Suite
from simulator.models.run import RunRecord, StoredResult, SuiteSnapshot
from simulator.models.transcript import AgentEvent, InputEvent, Transcript, UserEvent
from simulator.safety import json_safe, redact

if TYPE_CHECKING:
    from simulator.loading import LoadedSuite
    from simulator.store import RunStore

ExportFormat = Literal["json", "yaml"]

#: The ``format`` marker of a run export and of a results export, and the envelope version this code writes.
RUN_FORMAT: Final = "simulator-run"
RESULTS_FORMAT: Final = "simulator-results"
EXPORT_VERSION: Final = 1

#: The timestamp every zip entry gets: the earliest a zip can hold, so the bytes never depend on the clock.
ZIP_DATE_TIME: Final = (1980, 1, 1, 0, 0, 0)

PERSONAS_FOLDER: Final = "personas"
_FORMATS: Final = ("json", "yaml")
_ERRORS_SHOWN: Final = 10
_TOO_LARGE_ADVICE: Final = "export fewer results (a run's results can be exported apart) to import it"

_SNAPSHOTS: Final = TypeAdapter(list[SuiteSnapshot])
_GOLDEN: Final = TypeAdapter(GoldenCase)


class ExchangeError(InputError, ValueError):
    """An export or import that cannot be done: a file in the way, a file that is not an export, a missing case."""


# --- text formats -----------------------------------------------------------------------------------------


def _text(data: Any, fmt: ExportFormat, header: Sequence[str] = ()) -> str:
    if fmt == "json":
        return json_safe(json.dumps(data, indent=2, ensure_ascii=False)) + "\n"
    if fmt == "yaml":
        return export_yaml(data, header=header)
    raise ExchangeError(f"unknown export format {fmt!r}: use one of {', '.join(_FORMATS)}")


# --- cases ------------------------------------------------------------------------------------------------


def suite_data(suite: Suite) -> dict[str, Any]:
    """A suite as plain data, keys as they were written (defaults left out), ready for YAML."""
    return suite.model_dump(mode="json", exclude_unset=True)


def export_cases(loaded_suites: Iterable[LoadedSuite], *, include_personas: bool = True) -> dict[str, str]:
    """Each suite as a YAML file that loads on its own: file name -> text.

    The agent is written inline (whether the suite named a file or found an ``agent.yaml``), so the file does
    not depend on where it is put. Names are the suites' file names, made unique (``golden.yaml``,
    ``golden-2.yaml``); a hosted ``evals:`` file comes out as an ordinary suite. With ``include_personas`` the
    personas the suites or their cases name are added as ``personas/<name>.yaml``, where the loader finds them
    beside the suites. Kept as written, and so relative to the original file: ``judge_prompts`` paths.
    """
    files: dict[str, str] = {}
    personas: dict[str, Persona] = {}
    for loaded in loaded_suites:
        data = suite_data(loaded.suite)
        name = _unique_name(files, f"{loaded.path.stem}.yaml")
        header = [
            f"Exported by Simulator from {loaded.path.name}: the agent is inline, personas in {PERSONAS_FOLDER}/."
        ]
        files[name] = export_yaml(data, header=header)
        if include_personas:
            for persona_name in _named_personas(loaded.suite):
                persona = loaded.personas.get(persona_name)
                if persona is None:
                    continue  # the loader reports an unknown persona; nothing to copy
                known = personas.setdefault(persona_name, persona)
                if known != persona:
                    raise ExchangeError(
                        f"two suites use different personas named {persona_name!r}: export them separately, "
                        "or rename one of the personas"
                    )
    for persona_name in sorted(personas):
        data = personas[persona_name].model_dump(mode="json", exclude_unset=True)
        files[f"{PERSONAS_FOLDER}/{persona_name}.yaml"] = export_yaml(data)
    return files


def _named_personas(suite: Suite) -> list[str]:
    names = list(suite.personas)
    for case in suite.cases:
        names += case.personas
    return list(dict.fromkeys(names))


def _unique_name(taken: Mapping[str, Any], name: str) -> str:
    if name not in taken:
        return name
    stem, suffix = os.path.splitext(name)
    number = 2
    while f"{stem}-{number}{suffix}" in taken:
        number += 1
    return f"{stem}-{number}{suffix}"


# --- runs and results -------------------------------------------------------------------------------------


class RunExport(DataModel):
    """The envelope of a run export: the run record and its results."""

    format: Literal["simulator-run"]
    version: Literal[1]
    run: RunRecord
    results: list[StoredResult]
    audio: dict[str, str] = Field(
        default_factory=dict,
        description="The voice conversations' audio files, by the name their transcripts give them: WAV, base64.",
    )


class ResultsExport(DataModel):
    """The envelope of a results export: stored results without their run."""

    format: Literal["simulator-results"]
    version: Literal[1]
    results: list[StoredResult]


_Export = TypeVar("_Export", RunExport, ResultsExport)


def run_data(record: RunRecord) -> dict[str, Any]:
    """A run record as plain data. The suites keep only the keys that were written, as the store keeps them:
    some models (a tool fake with ``error``) tell apart a key left out from one set to its default."""
    data = record.model_dump(mode="json")
    data["snapshot"] = _SNAPSHOTS.dump_python(record.snapshot, mode="json", exclude_unset=True)
    return data


def export_run(
    record: RunRecord,
    results: Sequence[StoredResult],
    fmt: ExportFormat = "json",
    *,
    audio: Mapping[str, bytes] | None = None,
) -> str:
    """A run and its results as JSON or YAML text, read back by :func:`import_run`; ``audio``: the voice
    conversations' audio files (WAV) by the name their transcripts give them, carried in the export."""
    data: dict[str, Any] = {
        "format": RUN_FORMAT,
        "version": EXPORT_VERSION,
        "run": run_data(record),
        "results": [result.model_dump(mode="json") for result in results],
    }
    if audio:
        data["audio"] = {name: base64.b64encode(wav).decode("ascii") for name, wav in sorted(audio.items())}
    return _text(data, fmt, [f"Simulator run {record.id}: {len(results)} result(s)."])


def export_results(results: Sequence[StoredResult], fmt: ExportFormat = "json") -> str:
    """Stored results alone (no run record) as JSON or YAML text, read back by :func:`import_results`."""
    data = {
        "format": RESULTS_FORMAT,
        "version": EXPORT_VERSION,
        "results": [result.model_dump(mode="json") for result in results],
    }
    return _text(data, fmt, [f"Simulator results: {len(results)} result(s)."])


def export_chat_jsonl(results: Iterable[StoredResult]) -> str:
    """Conversations as JSON Lines, one stored result a line: ``messages`` in the OpenAI chat-messages shape (the
    user's messages and events as ``user``, the agent's as ``assistant`` with its ``tool_calls``, each tool's
    answer as a ``tool`` message with the call's ``tool_call_id``), exactly as a chat agent saw the history, and
    beside them the run id, case, persona, repeat, outcome with its reasons and each step's verdict."""
    from simulator.agents import conversation_history, wire_messages

    lines = []
    for stored in results:
        transcript = stored.result.transcript
        line = {
            "messages": wire_messages(conversation_history(transcript.events)),
            "run_id": stored.run_id,
            "key": stored.key,
            "case": stored.case,
            "kind": transcript.kind,
            "persona": stored.persona,
            "repeat": stored.repeat,
            "outcome": stored.outcome,
            "reasons": stored.result.reasons,
            "steps": [
                step.model_dump(mode="json", include={"index", "label", "status", "verdict", "rationale"})
                for step in transcript.steps
            ],
            "stop_reason": transcript.stop_reason,
        }
        lines.append(json_safe(json.dumps(line, ensure_ascii=False)) + "\n")
    return "".join(lines)


def import_run(
    source: str | Path,
    fmt: ExportFormat | None = None,
    *,
    trust: bool = False,
    audio: dict[str, bytes] | None = None,
) -> tuple[RunRecord, list[StoredResult]]:
    """Read a run export: ``source`` is a file (a :class:`~pathlib.Path`) or the exported text (a ``str``).

    ``fmt`` defaults to the file's suffix, else JSON when the text starts with ``{``, else YAML. The file is
    held to the limits every reader of a user's file has (size, nesting, aliases, long numbers; infinity and
    NaN are refused). Raises :class:`ExchangeError` naming every problem on a line of its own, with the
    line and column where it is written (``run.json:12:9: run.snapshot[0].suite.cases[1].name: ...``).

    Nothing the file says about how its conversations went is taken on trust: each result's outcome, reasons and
    metrics are decided again from its transcript, scores and fidelity findings (:func:`simulator.runner.rederive`,
    with the run's ``count_user_errors``), and the run's totals computed again from them. A result whose stored
    outcome is not the one decided is an error at its line, unless ``trust``: then it is kept as stored, marked
    (its first reason says ``outcome as imported, not re-derived``), and the totals count it as decided.
    ``audio``, when given, is filled with the export's audio files (WAV bytes) by name: each must be a WAV file
    a result's transcript names.
    """
    parsed = _parse(source, fmt)
    export = _validate(RunExport, parsed, RUN_FORMAT)
    problems: list[tuple[DataPath, str]] = audio_problems(export.audio, export.results, audio)
    keys: dict[str, int] = {}
    for index, result in enumerate(export.results):
        where: DataPath = ("results", index)
        if result.run_id != export.run.id:
            problems.append(((*where, "run_id"), f"{result.run_id!r} is not the exported run's id {export.run.id!r}"))
        if not 0 <= result.suite < len(export.run.snapshot):
            problems.append(
                ((*where, "suite"), f"{result.suite} is not a suite of the run (it has {len(export.run.snapshot)})")
            )
        if result.key in keys:
            problems.append(((*where, "key"), f"{result.key!r} is also the key of results[{keys[result.key]}]"))
        keys.setdefault(result.key, index)
        if result.outcome != result.result.outcome:
            problems.append(
                (
                    (*where, "outcome"),
                    f"{result.outcome!r} is not the outcome of the result it stores ({result.result.outcome!r})",
                )
            )
        if result.case != result.result.case:
            problems.append(
                ((*where, "case"), f"{result.case!r} is not the case of the result it stores ({result.result.case!r})")
            )
    if export.run.totals is not None and export.run.totals.duration_s < 0:
        problems.append(
            (("run", "totals", "duration_s"), f"a duration cannot be negative: {export.run.totals.duration_s}")
        )
    if problems:
        raise ExchangeError(_located_problems(parsed, problems))
    results = _rederived(parsed, export.results, count_user_errors=export.run.settings.count_user_errors, trust=trust)
    return _with_true_totals(export.run, results), results


def _rederived(
    parsed: _Parsed, results: Sequence[StoredResult], *, count_user_errors: bool, trust: bool
) -> list[StoredResult]:
    """The results with their outcomes decided again, or an ExchangeError at the line of each that disagrees."""
    from simulator.runner import rederive  # the runner is heavy: only a run or results import needs it

    checked = [rederive(result, count_user_errors=count_user_errors, trust=trust) for result in results]
    refused = [
        (("results", index, "outcome"), found.describe())
        for index, found in enumerate(checked)
        if not found.agrees and not trust
    ]
    if refused:
        raise ExchangeError(f"{_located_problems(parsed, refused)}\n{outcome_advice(len(refused))}")
    return [found.result for found in checked]


def outcome_advice(count: int) -> str:
    """What to do about ``count`` results whose stored outcome is not the one their evidence decides."""
    return (
        f"{count} result(s) claim an outcome their own transcript, scores and fidelity findings do not give: "
        "export them again from the run that scored them (or run those cases again), or pass --trust "
        "(trust=True) to keep the stored outcomes, each marked 'outcome as imported, not re-derived' and counted "
        "in the run's totals as its evidence decides"
    )


def _with_true_totals(record: RunRecord, results: Sequence[StoredResult]) -> RunRecord:
    """The run with its totals computed from its results, as a run that is executed gets them: an export's
    own counts, correctness and usage may be forged ("30 passed" of 3, 10000%), its duration is kept. A run
    without totals (one that never finished) stays without."""
    if record.totals is None:
        return record
    from simulator.metrics import summarized  # the one place the run summary is computed

    return summarized(record, results, recompute=True)


def import_results(
    source: str | Path, fmt: ExportFormat | None = None, *, count_user_errors: bool = False, trust: bool = False
) -> list[StoredResult]:
    """Read a results export (see :func:`import_run` for ``source``, ``fmt``, limits, errors and ``trust``).
    The outcomes are decided again as there; a results export holds no run settings, so ``count_user_errors``
    says whether the run that scored them counted user errors (``--count-user-errors``)."""
    parsed = _parse(source, fmt)
    export = _validate(ResultsExport, parsed, RESULTS_FORMAT)
    return _rederived(parsed, export.results, count_user_errors=count_user_errors, trust=trust)


class _Parsed:
    """An export's data, where it came from, and how to find the line and column of any part of it."""

    def __init__(self, data: Any, origin: str, locate: Any) -> None:
        self.data = data
        self.origin = origin
        self._locate = locate

    def at(self, path: DataPath, message: str) -> str:
        """``origin:line:column: path: message``, the place of ``path`` (or of what encloses it)."""
        line, column = self._locate(path) if path else (1, 1)
        return f"{self.origin}:{line}:{column}: {format_path(path) + ': ' if path else ''}{message}"


def _parse(source: str | Path, fmt: ExportFormat | None) -> _Parsed:
    if isinstance(source, Path):
        origin = str(source)
        try:
            text = read_bounded_text(source, _TOO_LARGE_ADVICE, "JSON or YAML text")
        except ReadProblem as problem:
            raise ExchangeError(f"{origin}:{problem.line}:{problem.column}: {problem.message}") from None
        if fmt is None:
            suffix = source.suffix.lower()
            fmt = "json" if suffix == ".json" else "yaml" if suffix in (".yaml", ".yml") else None
    else:
        origin, text = "(text)", source.removeprefix("\ufeff")
        if text_too_large(text):
            raise ExchangeError(f"{origin}:1:1: {too_large(None, _TOO_LARGE_ADVICE, what='the text')}")
    if fmt is None:
        fmt = "json" if text.lstrip().startswith("{") else "yaml"
    if fmt == "json":
        try:
            data = parse_json(text, extra_depth=EXPORT_EXTRA_DEPTH)
        except ReadProblem as problem:
            raise ExchangeError(f"{origin}:{problem.line}:{problem.column}: {problem.message}") from None
        return _Parsed(data, origin, lambda path: json_position(text, path))
    if fmt == "yaml":
        # The reader suites go through: aliases, nesting, numbers and YAML 1.1 surprises are checked.
        located, errors = parse_yaml(text, origin, extra_depth=EXPORT_EXTRA_DEPTH)
        if errors or located is None:
            lines = [error.render().replace(": (root): ", ": ", 1) for error in errors[:_ERRORS_SHOWN]]
            if len(errors) > _ERRORS_SHOWN:
                lines.append(f"... and {len(errors) - _ERRORS_SHOWN} more problem(s)")
            raise ExchangeError("\n".join(lines) if lines else f"{origin}:1:1: the export is empty")
        return _Parsed(located.data, origin, located.position)
    raise ExchangeError(f"unknown export format {fmt!r}: use one of {', '.join(_FORMATS)}")


def _validate(model: type[_Export], parsed: _Parsed, expected: str) -> _Export:
    data = parsed.data
    found = data.get("format") if isinstance(data, dict) else None
    if found != expected:
        if found == RESULTS_FORMAT:
            hint = ": it is a results export, which holds no run; read it with import_results"
        elif found == RUN_FORMAT:
            hint = ": it is a run export; read it with import_run"
        elif isinstance(data, str) and "\n" not in data:
            hint = f" (the text is just {data[:60]!r}): to read a file, pass it as a pathlib.Path"
        elif found is None:
            hint = " (no `format` key at the top): export it with Simulator first"
        else:
            hint = f" (its format is {found!r})"
        where: DataPath = ("format",) if isinstance(data, dict) and "format" in data else ()
        message = f"not a Simulator {expected.removeprefix('simulator-')} export{hint}"
        raise ExchangeError(parsed.at(where, message).replace(": format: ", ": ", 1))
    version = data.get("version")
    if isinstance(version, int) and not isinstance(version, bool) and version > EXPORT_VERSION:
        raise ExchangeError(
            parsed.at(
                ("version",),
                f"the export has version {version}, written by a newer Simulator; this one reads version "
                f"{EXPORT_VERSION}: upgrade Simulator",
            )
        )
    problems: list[tuple[DataPath, str]] = []
    try:
        export = model.model_validate(data)
    except ValidationError as exc:
        problems = [
            (_where(detail["loc"], data, detail["type"]), str(detail["msg"]))
            for detail in exc.errors(include_url=False)
        ]
    problems += _tool_problems(data)
    if problems:
        raise ExchangeError(_located_problems(parsed, problems))
    return export


def _tool_problems(data: dict[str, Any]) -> list[tuple[DataPath, str]]:
    """The tool parameters of the agents in a run's snapshot that are not an object's JSON Schema: a run
    imported here can be repeated, and its agent must be one the loader would have accepted."""
    run = data.get("run")
    snapshots = run.get("snapshot") if isinstance(run, dict) else None
    return [
        problem
        for index, snapshot in enumerate(snapshots if isinstance(snapshots, list) else [])
        if isinstance(snapshot, dict) and isinstance(snapshot.get("suite"), dict)
        for problem in tool_parameter_problems(
            snapshot["suite"].get("agent"), ("run", "snapshot", index, "suite", "agent")
        )
    ]


def _located_problems(parsed: _Parsed, problems: Sequence[tuple[DataPath, str]]) -> str:
    """One line per problem, each with its line and column, the first :data:`_ERRORS_SHOWN` of them."""
    lines = [parsed.at(path, message) for path, message in problems[:_ERRORS_SHOWN]]
    if len(problems) > _ERRORS_SHOWN:
        lines.append(f"... and {len(problems) - _ERRORS_SHOWN} more problem(s) in {parsed.origin}")
    return "\n".join(lines)


def _where(loc: Sequence[Any], data: Any, kind: str) -> tuple[str | int, ...]:
    """A pydantic location as a path in the data: union tags (``golden``, ``python``) are not keys, dropped."""
    path: list[str | int] = []
    current = data
    for index, part in enumerate(loc):
        present = (isinstance(current, dict) and part in current) or (
            isinstance(current, list) and isinstance(part, int) and 0 <= part < len(current)
        )
        if present:
            current = current[part]
        elif not (index == len(loc) - 1 and kind == "missing"):
            continue
        path.append(part)
    return tuple(path)


def _problems(origin: str, problems: list[str]) -> str:
    shown = "\n".join(f"  {problem}" for problem in problems[:_ERRORS_SHOWN])
    more = f"\n  ... and {len(problems) - _ERRORS_SHOWN} more" if len(problems) > _ERRORS_SHOWN else ""
    return f"{origin}: not a valid export, {len(problems)} problem(s):\n{shown}{more}"


def import_into_store(
    store: RunStore,
    record: RunRecord,
    results: Sequence[StoredResult],
    *,
    new_id: bool = True,
    trust: bool = False,
    audio: Mapping[str, bytes] | None = None,
) -> RunRecord:
    """Store an imported run and its results; returns the run as stored.

    With ``new_id`` (the default) the run gets a fresh id, so importing the same export twice gives two runs;
    without it the original id is kept and a run with that id already in the store is an error. The creation
    time is kept, the note says ``imported from <id>`` (followed by the original note), and a run that was
    ``running`` when exported is stored ``incomplete``: nothing is running it here. The outcomes are decided
    again and the totals computed from them, as :func:`import_run` does (``trust`` as there; the note says how
    many outcomes were kept on trust): a result that disagrees is refused before anything is stored. If a
    result cannot be stored, the run is removed again: an import is all or nothing. ``audio``: the voice
    conversations' audio files by the names the results give them (:func:`import_run`), stored under the new
    run with the results renamed to them.
    """
    from simulator.runner import rederive  # the runner is heavy: only an import needs it

    refused: list[str] = []
    checked: list[StoredResult] = []
    kept = 0
    for index, result in enumerate(results):
        if result.run_id != record.id:
            raise ExchangeError(f"results[{index}].run_id: {result.run_id!r} is not the id of run {record.id!r}")
        found = rederive(result, count_user_errors=record.settings.count_user_errors, trust=trust)
        if not found.agrees:
            kept += 1
            if not trust:
                refused.append(f"results[{index}].outcome: {found.describe()}")
        checked.append(found.result)
    if refused:
        shown = "\n".join(refused[:_ERRORS_SHOWN])
        more = f"\n... and {len(refused) - _ERRORS_SHOWN} more" if len(refused) > _ERRORS_SHOWN else ""
        raise ExchangeError(f"run {record.id}: {shown}{more}\n{outcome_advice(len(refused))}")
    run_id = store.new_run_id() if new_id else record.id
    note = f"imported from {record.id}" + (f": {record.note}" if record.note else "")
    if kept:
        note += f"; {kept} outcome(s) kept as imported, not re-derived (--trust)"
    update: dict[str, Any] = {"id": run_id, "note": note, "imported_from": record.id}
    if record.status == "running":
        update["status"] = "incomplete"
    store.create_run(_with_true_totals(record, checked).model_copy(update=update))
    try:
        for result in checked:
            stored = with_audio(store, result, run_id, audio or {})
            store.save_result(stored.model_copy(update={"run_id": run_id}))
    except BaseException:  # a Ctrl-C half-way too: an import is all or nothing
        store.delete_run(run_id)
        raise
    return store.get_run(run_id)


# --- files ------------------------------------------------------------------------------------------------


def zip_bytes(files: Mapping[str, str]) -> bytes:
    """The files (name -> text) as a zip archive, entries sorted by name, with fixed timestamps and modes:
    the same files always give the same bytes."""
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        for name in sorted(files):
            _check_entry_name(name)
            info = zipfile.ZipInfo(name, date_time=ZIP_DATE_TIME)
            info.compress_type = zipfile.ZIP_DEFLATED
            info.create_system = 3  # Unix, wherever it was written: the mode below is a Unix mode
            info.external_attr = 0o644 << 16
            archive.writestr(info, files[name].encode("utf-8"), compresslevel=9)
    return buffer.getvalue()


def _check_entry_name(name: str) -> None:
    parts = PurePosixPath(name).parts
    if not name or "\\" in name or name.startswith("/") or ".." in parts or not parts:
        raise ExchangeError(f"{name!r} cannot be a file name in an export: use a relative path with / between folders")


def write_export(files: Mapping[str, str], output: str | Path, *, force: bool = False) -> Path:
    """Write an export: one file as it is (to ``output``, whatever its name in ``files``), several as a zip.

    An existing ``output`` is an error unless ``force``; then it is replaced in one step (a reader never sees
    half a file). Returns ``output``.
    """
    if not files:
        raise ExchangeError("nothing to export: no files were given")
    files = {name: redact(text) for name, text in files.items()}  # no secret the process knows in a file
    data = next(iter(files.values())).encode("utf-8") if len(files) == 1 else zip_bytes(files)
    path = Path(output)
    _write_bytes(path, data, force=force)
    return path


def _write_bytes(path: Path, data: bytes, *, force: bool) -> None:
    if path.is_dir():
        raise ExchangeError(f"{path} is a folder: name the file to write, e.g. {path / 'export.zip'}")
    exists = f"{path} already exists: choose another file, or overwrite it with force (--force)"
    if path.exists() and not force:
        raise ExchangeError(exists)
    try:
        # Whole or not at all (see simulator._files): a failed write leaves no file that a rerun would refuse.
        write_file(path, data, replace=force)
    except FileExistsError as exc:  # "x": a file that appeared meanwhile is never replaced without force
        raise ExchangeError(exists) from exc
    except DiskError:
        raise
    except InputError as exc:
        raise ExchangeError(str(exc)) from exc


# --- golden cases from conversations ----------------------------------------------------------------------


def golden_from_transcript(transcript: Transcript, *, name: str, include_tools: bool = True) -> dict[str, Any]:
    """A golden case (plain data, ready for a suite) that replays the transcript's user turns.

    One golden turn per user message or event, in order. Each turn expects what the agent actually did: its
    messages joined by blank lines as ``message`` (a semantic match, scored by a judge model), the tool calls
    it made with their arguments (``match: exact``) when ``include_tools``, its hand-off and the session
    variables it set. Agent messages before the first user turn (an agent that speaks first) have no golden
    turn to belong to and are left out. Raises :class:`ExchangeError` when the result would not be a valid
    golden case (a transcript without any user turn).
    """
    turns: list[dict[str, Any]] = []
    replies: list[list[AgentEvent]] = []
    for event in transcript.events:
        if isinstance(event, UserEvent):
            turns.append({"user": event.text})
            replies.append([])
        elif isinstance(event, InputEvent):
            turns.append({"event": {"name": event.name, "payload": event.payload} if event.payload else event.name})
            replies.append([])
        elif isinstance(event, AgentEvent) and replies:
            replies[-1].append(event)
    if not turns:
        raise ExchangeError(
            f"the transcript of case {transcript.case!r} has no user message or event: there is nothing to replay"
        )
    for turn, agent_events in zip(turns, replies, strict=True):
        expect = _expect(agent_events, include_tools=include_tools)
        if expect:
            turn["expect"] = expect
    case: dict[str, Any] = {
        "name": name,
        "kind": "golden",
        "description": f"Recorded from a conversation of case {transcript.case!r}"
        + (f" with persona {transcript.persona!r}" if transcript.persona else "")
        + ": the agent's replies then are what it should say now.",
    }
    if transcript.session_parameters:
        case["session_parameters"] = dict(transcript.session_parameters)
    case["turns"] = turns
    _check_golden(case)
    return case


def _expect(events: Sequence[AgentEvent], *, include_tools: bool) -> dict[str, Any]:
    expect: dict[str, Any] = {}
    message = "\n\n".join(m for event in events for m in event.messages)
    if message.strip():
        expect["message"] = message
    calls = [call for event in events for call in event.tool_calls]
    if include_tools and events:
        # The hosted builders' golden rule: the recorded calls and no others (another call fails the turn).
        expect["tool_order"] = "exact"
    if include_tools and calls:
        expect["tool_calls"] = [
            # Arguments that were not valid JSON cannot be expected again: the call itself can.
            {"name": call.name}
            if call.arguments_error is not None
            else {"name": call.name, "arguments": dict(call.arguments), "match": "exact"}
            for call in calls
        ]
    handoff = next((event.handoff for event in reversed(events) if event.handoff and event.handoff.strip()), None)
    if handoff is not None:
        expect["handoff"] = {"to": handoff}
    variables = {key: value for event in events for key, value in event.variables.items()}
    if variables:
        expect["variables"] = variables
    return expect


def _check_golden(case: dict[str, Any]) -> None:
    try:
        _GOLDEN.validate_python(case)
    except ValidationError as exc:
        problems = [
            f"{format_path(_where(detail['loc'], case, detail['type']))}: "
            f"{str(detail['msg']).removeprefix('Value error, ')}"
            for detail in exc.errors(include_url=False)
        ]
        raise ExchangeError(_problems(f"golden case {case.get('name')!r}", problems)) from None


def golden_from_run(
    record: RunRecord,
    results: Sequence[StoredResult],
    case: str,
    *,
    persona: str | None = None,
    repeat: int | None = None,
    suite: int | None = None,
    include_tools: bool = True,
) -> str:
    """YAML of a suite holding one golden case, ``<case>_golden``, recorded from a result of the run.

    The result is the run's conversation of ``case``; ``persona``, ``repeat`` and ``suite`` (an index into the
    run's snapshot) pick one when there are several. The suite carries what the replay needs from the run's
    snapshot: the agent config (inline), language, model settings, thresholds and tool fakes of the suite,
    and the case's session parameters, tool fakes, thresholds and tags. It loads with ``load_suite``
    wherever it is written (it names no personas and no prompt files).
    """
    chosen = _pick_result(record, results, case, persona=persona, repeat=repeat, suite=suite)
    if not 0 <= chosen.suite < len(record.snapshot):
        raise ExchangeError(f"result {chosen.key!r} names suite {chosen.suite}, which run {record.id} does not have")
    snapshot = record.snapshot[chosen.suite]
    source = suite_data(snapshot.suite)
    original = next((c for c in snapshot.suite.cases if c.name == case), None)
    golden = golden_from_transcript(chosen.result.transcript, name=f"{case}_golden", include_tools=include_tools)
    if original is not None:
        written = original.model_dump(mode="json", exclude_unset=True)
        golden.pop("session_parameters", None)  # the transcript's include the agent's defaults: keep the case's
        keys: tuple[str, ...] = ("tags", "session_parameters", "tool_fakes", "thresholds")
        extra = {key: written[key] for key in keys if key in written}
        turns = golden.pop("turns")
        golden.update(extra)
        golden["turns"] = turns
        _check_golden(golden)
    data: dict[str, Any] = {
        "name": f"{source['name']} - {case} golden",
        "description": f"Golden case recorded from run {record.id}, conversation {chosen.key}.",
    }
    shared: tuple[str, ...] = ("language", "agent", "models", "thresholds", "tool_fakes")
    data.update({key: source[key] for key in shared if key in source})
    data["metadata"] = {
        "golden_from": {
            "run": record.id,
            "key": chosen.key,
            "case": case,
            "persona": chosen.persona,
            "repeat": chosen.repeat,
            "outcome": chosen.outcome,
        }
    }
    data["cases"] = [golden]
    header = [
        f"Golden case recorded from run {record.id} (case {case}, persona {chosen.persona or '-'}, repeat "
        f"{chosen.repeat + 1} (1 = first, as --repeat counts), outcome {chosen.outcome}).",
        "Each turn expects what the agent did then: review the expectations before relying on them.",
    ]
    return export_yaml(data, header=header)


def _pick_result(
    record: RunRecord,
    results: Sequence[StoredResult],
    case: str,
    *,
    persona: str | None,
    repeat: int | None,
    suite: int | None,
) -> StoredResult:
    of_case = [r for r in results if r.case == case]
    if not of_case:
        names = sorted({r.case for r in results})
        shown = ", ".join(names[:_ERRORS_SHOWN]) or "none"
        raise ExchangeError(f"run {record.id} has no result of case {case!r} (cases with results: {shown})")
    chosen = [
        r
        for r in of_case
        if (persona is None or r.persona == persona)
        and (repeat is None or r.repeat == repeat)
        and (suite is None or r.suite == suite)
    ]
    keys = ", ".join(r.key for r in of_case[:_ERRORS_SHOWN])
    if not chosen:
        raise ExchangeError(
            f"run {record.id} has no result of case {case!r} with the persona/repeat/suite asked for "
            f"(its results of the case: {keys})"
        )
    if len(chosen) > 1:
        raise ExchangeError(
            f"run {record.id} has {len(chosen)} results of case {case!r} ({keys}): pick one with persona, "
            "repeat or suite"
        )
    return chosen[0]
