"""Runs and cases moved between stores and formats: a stored run or its results exported (JSON, YAML, or
one conversation a line as OpenAI chat messages), suites exported with their personas, a run export imported
into a store, CSV files turned into suites, and a real conversation turned into a golden case."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from simulator.api._store import PathLike, open_store

if TYPE_CHECKING:
    from simulator.errors import ConfigError
    from simulator.models.run import RunRecord, StoredResult
    from simulator.store import RunStore, Unreadable

ExportFormat = Literal["json", "yaml", "jsonl"]


def export_run(
    run_ref: str, fmt: ExportFormat = "json", *, db: PathLike | None = None, skipped: list[Unreadable] | None = None
) -> str:
    """A stored run (record and results) as JSON or YAML, read back by :func:`import_run`; or its conversations
    as JSON Lines (``jsonl``: one a line as OpenAI chat messages, tool calls and results included, with its
    outcome and step verdicts)."""
    from simulator.exchange import export_chat_jsonl
    from simulator.exchange import export_run as export

    with open_store(db) as store:
        record = store.get_run(run_ref)
        if fmt == "jsonl":
            return export_chat_jsonl(store.iter_results(record.id, skipped=skipped))
        results = store.results(record.id, skipped=skipped)
        return export(record, results, fmt, audio=_audio_of(store, results))


def _audio_of(store: RunStore, results: Sequence[StoredResult]) -> dict[str, bytes]:
    """The voice conversations' audio files of ``results`` that the store holds, by name."""
    audio: dict[str, bytes] = {}
    for stored in results:
        voice = stored.result.transcript.voice
        path = store.audio_path(voice.audio) if voice is not None and voice.audio is not None else None
        if voice is not None and voice.audio is not None and path is not None:
            audio[voice.audio] = path.read_bytes()
    return audio


def export_results(
    run_ref: str, fmt: ExportFormat = "json", *, db: PathLike | None = None, skipped: list[Unreadable] | None = None
) -> str:
    """The results of a stored run as JSON or YAML, or its conversations as JSON Lines (``jsonl``)."""
    from simulator.exchange import export_chat_jsonl
    from simulator.exchange import export_results as export

    with open_store(db) as store:
        record = store.get_run(run_ref)
        if fmt == "jsonl":
            return export_chat_jsonl(store.iter_results(record.id, skipped=skipped))
        return export(store.results(record.id, skipped=skipped), fmt)


def export_cases(paths: Sequence[PathLike]) -> dict[str, str]:
    """The suites in ``paths`` (files or folders), each as YAML with its agent inline and the personas it uses
    included: file name -> text. Invalid suites raise ConfigErrors naming every place."""
    from simulator.errors import ConfigErrors
    from simulator.exchange import export_cases as export
    from simulator.loading import validate_paths

    report = validate_paths(paths)
    if report.errors:
        raise ConfigErrors(report.errors)
    return export(report.suites)


def write_export(files: Mapping[str, str], output: PathLike, *, force: bool = False) -> Path:
    """Write exported files to ``output``: one file, or several into a ``.zip``; an existing file is replaced only
    with ``force``. Returns the path written."""
    from simulator.exchange import write_export as write

    return write(files, output, force=force)


@dataclass(frozen=True)
class ImportedRun:
    """A run export stored: the id it had where it was exported, the run as stored here, how many results it
    brought, and how many outcomes were kept as imported (``trust``) instead of decided again."""

    original_id: str
    record: RunRecord
    results: int
    kept_on_trust: int


def import_run(file: PathLike, *, db: PathLike | None = None, trust: bool = False) -> ImportedRun:
    """Store a run exported with :func:`export_run` under a new id. Every outcome is decided again from its
    result's transcript, scores and fidelity findings; a result stored with another outcome is refused (an
    InputError at its line) unless ``trust``, which keeps it, marked in every report."""
    from simulator.errors import InputError
    from simulator.exchange import import_into_store
    from simulator.exchange import import_run as read

    path = Path(file)
    if not path.exists():  # a named pipe or a device is refused by the reader, saying what it is
        raise InputError(f"{path}: no such file")
    audio: dict[str, bytes] = {}
    record, results = read(path, trust=trust, audio=audio)
    with open_store(db) as store:
        stored = import_into_store(store, record, results, trust=trust, audio=audio)
    kept = sum(1 for result in results if result.result.trusted is not None)
    return ImportedRun(record.id, stored, len(results), kept)


def golden_from_run(
    run_ref: str,
    case: str,
    *,
    persona: str | None = None,
    repeat: int | None = None,
    include_tools: bool = True,
    db: PathLike | None = None,
    skipped: list[Unreadable] | None = None,
) -> str:
    """YAML of a suite holding one golden case made of a real conversation of a stored run: the agent's replies
    as expected messages (and its tool calls, unless ``include_tools`` is false). ``persona`` and ``repeat``
    (0 = the first) pick the conversation when the case ran several."""
    from simulator.exchange import golden_from_run as golden

    with open_store(db) as store:
        record = store.get_run(run_ref)
        results = store.results(record.id, skipped=skipped)
    return golden(record, results, case, persona=persona, repeat=repeat, include_tools=include_tools)


@dataclass(frozen=True)
class ImportedSuite:
    """A suite file written from a CSV: where, how many golden cases, and the rows' warnings."""

    path: Path
    cases: int
    warnings: list[ConfigError] = field(default_factory=list)


def import_csv(
    file: PathLike, output: PathLike, *, name: str | None = None, turns: bool = False, force: bool = False
) -> ImportedSuite:
    """Write a suite of golden cases made of a CSV file to ``output`` (never over an existing file unless
    ``force``): one single-turn case per row (columns prompt, must_contain, must_not_contain, ...), or with
    ``turns`` one multi-turn case per ``case`` column value, one row per turn. ``name`` names the suite
    (default: the CSV file's name)."""
    from simulator.loading.csv_import import import_csv as single
    from simulator.loading.csv_multiturn import import_multiturn_csv as multi

    warnings: list[ConfigError] = []
    read: Callable[..., dict[str, Any]] = multi if turns else single
    path = _write_suite(Path(file), Path(output), force, lambda: read(file, suite_name=name, warnings=warnings))
    return ImportedSuite(path[0], path[1], warnings)


def _write_suite(file: Path, output: Path, force: bool, read: Callable[[], dict[str, Any]]) -> tuple[Path, int]:
    from simulator._files import write_file
    from simulator.errors import InputError
    from simulator.loading.csv_import import dump_suite_yaml

    if not file.exists():  # a named pipe or a device is refused by the importer, saying what it is
        raise InputError(f"{file}: no such file")
    if output.exists() and not force:
        raise InputError(f"{output} exists: choose another --output, or pass --force to overwrite it")
    data = read()
    write_file(output, dump_suite_yaml(data))
    return output, len(data["cases"])
