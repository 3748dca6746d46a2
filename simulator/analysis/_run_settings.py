"""What differs between two runs' settings, in words: the models each role reached (model, api_base, backend),
whether tools ran live, whether the agent ran or was played back, the suites and their hash, thresholds, seed,
versions, cache and every other stored setting. Pure; :func:`setting_diffs` is compare's.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from simulator.models.comparison import SettingDiff
from simulator.models.run import RunRecord, RunSettings, resolved_models

__all__ = ["setting_diffs"]

_NONE = "none"
#: RunSettings fields said by a row of their own (the models, tools and suites rows) or that only describe how the
#: run was stored (the plan's hash follows from what it ran).
_OWN_ROWS = {"paths", "user_model", "judge_model", "models", "live", "record", "plan_hash"}
_ROLES = ("judge", "user", "agent")


def _words(value: Any) -> str:
    if value is None:
        return _NONE
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, list | tuple):
        return ", ".join(_words(item) for item in value) or _NONE
    return str(value)


def _per_suite(record: RunRecord, value: Callable[[Any], str]) -> str:
    """One value for the run when every suite has the same, else each suite's, named."""
    values = [(snapshot.suite.name, value(snapshot)) for snapshot in record.snapshot]
    distinct = {text for _, text in values}
    if len(distinct) <= 1:
        return next(iter(distinct), _NONE)
    return "; ".join(f"{name}: {text}" for name, text in values)


def _role_rows(record: RunRecord) -> list[tuple[str, str]]:
    rows: list[tuple[str, str]] = []
    for role in _ROLES:

        def field(name: str, role: str = role) -> Callable[[Any], str]:
            return lambda snapshot: _words(
                getattr(getattr(resolved_models(snapshot.suite, record.settings), role), name)
            )

        rows += [
            (f"{role} model", _per_suite(record, field("model"))),
            (f"{role} api_base", _per_suite(record, field("api_base"))),
            (f"{role} backend", _per_suite(record, field("backend"))),
        ]
    return rows


def _agent(record: RunRecord) -> str:
    if record.replay_of is None:
        return "live"
    if record.settings.record:
        return f"rerun of {record.replay_of} from its first divergence"
    return f"played back from the recording of {record.replay_of}"


def _thresholds(snapshot: Any) -> str:
    return ", ".join(f"{name} {_words(value)}" for name, value in snapshot.suite.thresholds.model_dump().items())


def _rows(record: RunRecord) -> list[tuple[str, str]]:
    settings = record.settings
    rows = [
        *_role_rows(record),
        ("tools", "live (--live)" if settings.live else "test mode (fakes)"),
        ("agent", _agent(record)),
        ("suites", _words(sorted(snapshot.suite.name for snapshot in record.snapshot))),
        ("suite hash", record.suite_hash),
        ("thresholds", _per_suite(record, _thresholds)),
        ("agent version", _words(record.agent_version)),
        ("imported from", _words(record.imported_from)),
    ]
    rows += [
        (name.replace("_", " "), _words(getattr(settings, name)))
        for name in RunSettings.model_fields
        if name not in _OWN_ROWS
    ]
    rows += [(f"{name} version", version) for name, version in sorted(record.versions.items())]
    return rows


def setting_diffs(run_a: RunRecord, run_b: RunRecord) -> list[SettingDiff]:
    """Every setting whose value differs between run A and run B, in a fixed order (models first)."""
    rows_a, rows_b = dict(_rows(run_a)), dict(_rows(run_b))
    names: Iterable[str] = list(rows_a) + [name for name in rows_b if name not in rows_a]
    return [
        SettingDiff(setting=name, a=rows_a.get(name, _NONE), b=rows_b.get(name, _NONE))
        for name in names
        if rows_a.get(name, _NONE) != rows_b.get(name, _NONE)
    ]
