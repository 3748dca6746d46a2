"""A suite's worlds as read: ``world: FILE`` read into the collections (so a run's snapshot holds the records), and
the checks that span a world and what names it (world tools, ``expect_state``), each at its place."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from simulator.errors import ConfigError
from simulator.loading._json import json_position, parse_json
from simulator.loading._limits import ReadProblem
from simulator.loading._limits import read_text as read_bounded_text
from simulator.loading._paths import display_path
from simulator.loading._schema import describe_value, did_you_mean
from simulator.loading._yaml import DataPath, Located, format_path, parse_yaml
from simulator.models import AgentConfig, Suite
from simulator.models.world import (
    CountExpectation,
    RecordExpectation,
    StateExpectation,
    UnchangedExpectation,
    WorldSpec,
)
from simulator.safety import one_line

#: Where a problem is: the file, and the key path inside it.
Place = tuple[Path, DataPath]

_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_-]*$")
_WORLD_SUFFIXES = (".yaml", ".yml", ".json")


def read_worlds(
    path: Path, located: Located, suite: Suite, cases_key: str, errors: list[ConfigError]
) -> tuple[Suite, bool]:
    """``suite`` with every ``world: FILE`` (the suite's and each case's) read into its collections, and whether
    every file could be used; each one that cannot is an error, at the suite's key or inside the world file (its
    world is then left as written: checking what names it would only repeat the problem)."""
    reader = _WorldReader(path, located, errors)
    update: dict[str, Any] = {}
    if suite.world is not None and suite.world.file is not None:
        update["world"] = reader.read(suite.world, ("world",)) or suite.world
    cases = []
    for index, case in enumerate(suite.cases):
        if case.world is not None and case.world.file is not None:
            world = reader.read(case.world, (cases_key, index, "world")) or case.world
            cases.append(case.model_copy(update={"world": world}))
        else:
            cases.append(case)
    if any(new is not old for new, old in zip(cases, suite.cases, strict=True)):
        update["cases"] = cases
    return (suite.model_copy(update=update) if update else suite), not reader.failed


def world_files(path: Path, suite: Suite) -> set[Path]:
    """The world files the suite at ``path`` names (its own and its cases'), resolved."""
    specs = [suite.world, *(case.world for case in suite.cases)]
    folder = path.parent.resolve()
    return {(folder / spec.file).resolve() for spec in specs if spec is not None and spec.file is not None}


class _WorldReader:
    def __init__(self, path: Path, located: Located, errors: list[ConfigError]) -> None:
        self.path = path
        self.located = located
        self.errors = errors
        self.failed = False

    def _at_key(self, where: DataPath, message: str) -> None:
        # `world: {file: ...}` is located at its `file`; the shorthand `world: FILE` at `world`.
        key = (*where, "file") if self.located.node((*where, "file")) is not None else where
        position = self.located.position(key)
        self.failed = True
        self.errors.append(ConfigError(self.path, position.line, position.column, format_path(key), message))

    def read(self, spec: WorldSpec, where: DataPath) -> WorldSpec | None:
        """The spec with its file's collections (laid under its inline ones), or None when the file is unusable."""
        relative = spec.file
        assert relative is not None
        folder = self.path.parent.resolve()
        target = (folder / relative).resolve()
        if not target.is_relative_to(folder):
            self._at_key(
                where,
                f"the world file {relative!r} is outside the suite's folder: put it beside the suite (or in a folder "
                "below it) and give its path relative to the suite",
            )
            return None
        if target.suffix.lower() not in _WORLD_SUFFIXES:
            self._at_key(where, f"the world file {relative!r} is not YAML or JSON: name a .yaml, .yml or .json file")
            return None
        try:
            text = read_bounded_text(target, "split the world into several files", "YAML or JSON text")
        except ReadProblem as problem:
            reason = problem.message.removeprefix("cannot read the file: ")
            self._at_key(
                where, f"cannot read the world file {relative!r} ({one_line(display_path(str(target)))}): {reason}"
            )
            return None
        collections = self._parse(target, text)
        if collections is None:
            return None
        merged = {**collections, **spec.collections}
        try:
            return WorldSpec(file=relative, collections=merged)
        except ValidationError as exc:  # pragma: no cover - the checks above cover what the model refuses
            self._at_key(where, f"the world file {relative!r} is not a world: {exc.errors()[0]['msg']}")
            return None

    def _parse(self, file: Path, text: str) -> dict[str, Any] | None:
        if file.suffix.lower() == ".json":
            try:
                data = parse_json(text)
            except ReadProblem as problem:
                self.errors.append(ConfigError(file, problem.line, problem.column, "(root)", problem.message))
                self.failed = True
                return None

            def position(where: DataPath) -> tuple[int, int]:
                return json_position(text, where)
        else:
            located, errors = parse_yaml(text, file)
            self.errors.extend(errors)
            if located is None or errors:
                self.failed = True
                return None
            data = located.data

            def position(where: DataPath) -> tuple[int, int]:
                found = located.position(where)
                return found.line, found.column

        problems = list(_shape_problems(data))
        self.failed = self.failed or bool(problems)
        for where, message in problems:
            line, column = position(where)
            self.errors.append(ConfigError(file, line, column, format_path(where), message))
        return None if problems else data


def _shape_problems(data: Any) -> Iterator[tuple[DataPath, str]]:
    """What makes ``data`` not a world: collections by name, each a mapping of records by id, each a mapping."""
    if not isinstance(data, dict):
        yield (), f"a world file holds collections by name (a mapping), got {describe_value(data)}"
        return
    for name, records in data.items():
        if not _NAME.match(str(name)) or len(str(name)) > 64:
            yield (
                (name,),
                (f"{name!r} is not a collection name: use letters, digits, _ and - (starting with a letter or _)"),
            )
        elif not isinstance(records, dict):
            yield (
                (name,),
                (
                    f"collection {name!r} must be a mapping of records by id (e.g. `1001: {{status: placed}}`), got "
                    f"{describe_value(records)}"
                ),
            )
        else:
            for record_id, record in records.items():
                if not isinstance(record, dict):
                    yield (
                        (name, record_id),
                        (
                            f"record {name}/{record_id} must be a mapping of fields (e.g. `{{status: placed}}`), got "
                            f"{describe_value(record)}"
                        ),
                    )


# --- what names a world: the agent's world tools and the cases' expect_state ---


@dataclass
class WorldChecker:
    """Cross-checks a loaded suite's world against its world tools and state expectations.

    ``tool_place`` locates a key inside the agent (``("tools", 0, "world")``): in the suite for an inline agent,
    in the agent file otherwise. ``report`` records a problem at a place.
    """

    suite: Suite
    cases_key: str
    agent: AgentConfig | None
    tool_place: Callable[[DataPath], Place]
    suite_path: Path
    report: Callable[[Place, str], None]

    def run(self) -> None:
        """Report every problem found."""
        worlds = [self.suite.world, *(case.world for case in self.suite.cases)]
        any_world = any(world is not None for world in worlds)
        names = {name for world in worlds if world is not None for name in world.collections}
        tools = [(index, tool) for index, tool in enumerate(self.agent.tools if self.agent else []) if tool.world]
        for index, tool in tools:
            operation = tool.world
            assert operation is not None
            base: DataPath = ("tools", index, "world")
            if not any_world:
                self.report(
                    (self.suite_path, ("world",) if "world" in self.suite.model_fields_set else ()),
                    f"tool {tool.name!r} is a world tool, but this suite and its cases have no world: add `world:` "
                    "(collections of records by id, or a YAML/JSON file beside the suite)",
                )
                continue
            collection = operation.collection
            if collection is not None and operation.action != "insert" and collection not in names:
                self.report(
                    self.tool_place((*base, operation.action)),
                    f"tool {tool.name!r} works on collection {collection!r}, which the world lacks (it has: "
                    f"{', '.join(sorted(names)) or 'none'}){did_you_mean(collection, sorted(names))}",
                )
            properties = tool.parameters.get("properties")
            # No properties at all is the default schema (the person declared no parameters): nothing to hold to.
            if isinstance(properties, dict) and properties:
                for name in sorted(operation.placeholders() - set(properties)):
                    self.report(
                        self.tool_place(base),
                        f"tool {tool.name!r} writes {{{name}}}, but its `parameters` have no property {name!r}: add it "
                        f"to `parameters.properties` or fix the name{did_you_mean(name, sorted(properties))}",
                    )
        self._expectations([tool for _, tool in tools])

    def _expectations(self, tools: list[Any]) -> None:
        # Collections a tool may create, and whether some Python function may change anything at all.
        inserted = {tool.world.insert for tool in tools if tool.world.insert is not None}
        anything = any(tool.world.function is not None for tool in tools)
        for index, case in enumerate(self.suite.cases):
            world = case.world.merged_over(self.suite.world) if case.world is not None else self.suite.world
            base: DataPath = (self.cases_key, index)
            expectations: list[tuple[DataPath, StateExpectation]] = []
            if case.expect_state is not None:
                expectations.append(((*base, "expect_state"), case.expect_state))
            for number, step in enumerate(getattr(case, "steps", [])):
                if step.expect_state is not None:
                    expectations.append(((*base, "steps", number, "expect_state"), step.expect_state))
            for where, expectation in expectations:
                if world is None:
                    self.report(
                        (self.suite_path, where),
                        "expect_state checks a world, but this case has none: add `world:` to the suite or the case",
                    )
                    continue
                self._state(where, expectation, world, inserted, anything)

    def _state(
        self, where: DataPath, state: StateExpectation, world: WorldSpec, inserted: set[str], anything: bool
    ) -> None:
        groups: list[tuple[str, list[RecordExpectation | UnchangedExpectation | CountExpectation]]] = [
            ("records", list(state.records)),
            ("unchanged", list(state.unchanged)),
            ("counts", list(state.counts)),
        ]
        for group, items in groups:
            for number, item in enumerate(items):
                place: DataPath = (*where, group, number)
                may_appear = item.collection in inserted or anything
                records = world.collections.get(item.collection)
                if records is None:
                    if may_appear and group != "unchanged":
                        continue
                    known = sorted(world.collections)
                    self.report(
                        (self.suite_path, (*place, "collection")),
                        f"the world has no collection {item.collection!r} (it has: {', '.join(known) or 'none'})"
                        f"{did_you_mean(item.collection, known)}",
                    )
                    continue
                record_id = getattr(item, "id", None)
                if record_id is None or "{" in record_id or record_id in records:
                    continue
                if isinstance(item, RecordExpectation) and (not item.exists or may_appear):
                    continue
                fix = (
                    "fix the id, or use `exists: false` for a record that must not exist"
                    if isinstance(item, RecordExpectation)
                    else "fix the id (`unchanged` names a record as it was seeded)"
                )
                self.report(
                    (self.suite_path, (*place, "id")), f"{item.collection} has no record with id {record_id!r}: {fix}"
                )
