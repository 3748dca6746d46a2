"""Rules on worlds: state checks that ask for a change no tool of the agent can make.

Only world tools change a conversation's world: a declarative ``update``, ``insert`` or ``delete`` changes the
collection it names (an ``update`` only the fields of its ``set``, an ``insert`` those of its ``record``), and a
``function`` tool may change anything. A state check the seed already meets asks for no change and is never
flagged, nor are ``unchanged`` and ``nothing_else_changed`` (they ask for none).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from pydantic import JsonValue

from simulator.loading._yaml import DataPath
from simulator.loading.lint._rule import Hit, SuiteView, rule
from simulator.models import Case
from simulator.models.world import PLACEHOLDER, CountExpectation, RecordExpectation, StateExpectation, WorldSpec

#: What a tool does to a collection, and what a check needs done to it, in words.
_VERB = {"update": "updates", "insert": "inserts into", "delete": "deletes from"}
_CAN = {"update": "update records of", "insert": "insert into", "delete": "delete from"}


@dataclass
class _Writers:
    """What the agent's world tools can do to the world: by collection, the tools of each action, and for each
    field the values they write (None: any value, from an argument)."""

    function: list[str] = field(default_factory=list)
    actions: dict[str, dict[str, list[str]]] = field(default_factory=dict)
    values: dict[tuple[str, str], list[tuple[str, JsonValue | None]]] = field(default_factory=dict)

    def tools(self, collection: str, actions: tuple[str, ...]) -> list[str]:
        """The tools that can make one of ``actions`` on ``collection`` (a function tool can make any)."""
        by_action = self.actions.get(collection, {})
        return [name for action in actions for name in by_action.get(action, [])] + self.function

    def done(self, collection: str) -> str:
        """What the tools do to ``collection``: ``cancel_order updates it``."""
        return "; ".join(
            f"{', '.join(names)} {_VERB[action]} it" for action, names in self.actions.get(collection, {}).items()
        )


def _writers(view: SuiteView) -> _Writers | None:
    """What the agent's world tools can change, or None without an agent to ask."""
    agent = view.loaded.agent
    if agent is None:
        return None
    writers = _Writers()
    for tool in agent.tools:
        operation = tool.world
        if operation is None or operation.action in ("find", "get"):
            continue
        if operation.action == "function":
            writers.function.append(tool.name)
            continue
        collection = operation.collection or ""
        writers.actions.setdefault(collection, {}).setdefault(operation.action, []).append(tool.name)
        written = operation.set if operation.action == "update" else operation.record
        for key, value in (written or {}).items():
            writers.values.setdefault((collection, key), []).append((tool.name, _literal(value)))
    return writers


def _literal(value: JsonValue) -> JsonValue | None:
    """The value a tool writes, or None when a call's argument chooses it (``{name}`` anywhere in it)."""
    if isinstance(value, str) and PLACEHOLDER.search(value):
        return None
    if isinstance(value, dict | list) and PLACEHOLDER.search(repr(value)):
        return None
    return value


def _seed(view: SuiteView, case: Case) -> dict[str, dict[str, dict[str, Any]]] | None:
    """The case's seeded world by collection (its own laid over the suite's), or None when it is in a file not
    read yet (then what it holds is unknown, and nothing is claimed)."""
    suite_world: WorldSpec | None = view.loaded.suite.world
    world = case.world.merged_over(suite_world) if case.world is not None else suite_world
    if world is None:
        return {}
    unread = [spec for spec in (suite_world, case.world) if spec is not None and spec.file and not spec.collections]
    return None if unread else world.collections


def _expectations(base: DataPath, case: Case) -> Iterator[tuple[DataPath, StateExpectation]]:
    """The case's ``expect_state`` and its steps', each with the path it is written at."""
    if case.expect_state is not None:
        yield (*base, "expect_state"), case.expect_state
    for index, step in enumerate(getattr(case, "steps", None) or []):
        if step.expect_state is not None:
            yield (*base, "steps", index, "expect_state"), step.expect_state


def _matches(record: dict[str, Any], where: dict[str, Any]) -> bool:
    return all(key in record and record[key] == value for key, value in where.items())


def _value(value: Any) -> str:
    """A value as a message quotes it: ``'cancelled'``, ``30``, ``true``."""
    return repr(value) if isinstance(value, str) else json.dumps(value, ensure_ascii=False)


@dataclass(frozen=True)
class _Need:
    """A change a state check needs: what must happen (in words), and which actions could make it."""

    what: str
    actions: tuple[str, ...]


def _record_need(item: RecordExpectation, records: dict[str, dict[str, Any]]) -> _Need | None:
    """What change ``item`` needs of the seeded ``records`` (None: the seed already meets it)."""
    if item.id is not None:
        seeded = records.get(item.id)
        if not item.exists:
            return None if seeded is None else _Need(f"{item.label()} must not exist", ("delete",))
        if seeded is None:
            return _Need(f"{item.label()} must exist", ("insert",))
        differ = {key: value for key, value in item.fields.items() if seeded.get(key) != value or key not in seeded}
        if not differ:
            return None
        said = ", ".join(f"{key} must become {_value(value)}" for key, value in differ.items())
        return _Need(f"{item.label()} {said}", ("update",))
    found = [record for record in records.values() if _matches(record, item.where or {})]
    if not item.exists:
        return _Need(f"no record of {item.label()} may exist", ("delete", "update")) if found else None
    if len(found) == 1 and _matches(found[0], item.fields):
        return None
    return _Need(f"one record of {item.label()} must exist", ("insert", "update"))


def _count_need(item: CountExpectation, records: dict[str, dict[str, Any]]) -> _Need | None:
    seeded = sum(_matches(record, item.where or {}) for record in records.values())
    if seeded == item.count:
        return None
    action = "insert" if item.count > seeded else "delete"
    actions = (action, "update") if item.where else (action,)
    return _Need(f"{item.label()} must count {item.count} (the world seeds {seeded})", actions)


@rule("unchangeable-state", "error")
def unchangeable_state(view: SuiteView) -> Iterator[Hit]:
    """A state check needs a change to a collection that no tool of the agent can make, so it is never met.

    Flagged: a ``records`` entry whose fields differ from the seed, that must exist or must not, and a ``counts``
    entry the seed does not meet, when no world tool ``update`` s, ``insert`` s into or ``delete`` s from the
    collection as needed and no ``function`` world tool (which may change anything) exists.
    """
    writers = _writers(view)
    if writers is None:
        return
    for base, case in view.cases():
        seed = _seed(view, case)
        if seed is None:
            continue
        for where, expectation in _expectations(base, case):
            entries: list[tuple[DataPath, str, _Need | None]] = [
                ((*where, "records", i, "collection"), r.collection, _record_need(r, seed.get(r.collection, {})))
                for i, r in enumerate(expectation.records)
            ]
            entries += [
                ((*where, "counts", i, "collection"), c.collection, _count_need(c, seed.get(c.collection, {})))
                for i, c in enumerate(expectation.counts)
            ]
            for path, collection, need in entries:
                if need is None or writers.tools(collection, need.actions):
                    continue
                if writers.actions.get(collection):
                    can = " or ".join(_CAN[action] for action in need.actions)
                    why = f"no tool can {can} {collection} ({writers.done(collection)})"
                else:
                    why = f"no tool can change {collection}"
                yield Hit(
                    path,
                    f"{need.what}, but {why}",
                    f"give the agent a world tool that can change {collection} (`world: {{{need.actions[0]}: "
                    f"{collection}, ...}}`), or correct the state check",
                )


@rule("unwritable-field", "error")
def unwritable_field(view: SuiteView) -> Iterator[Hit]:
    """A state check needs a field value that no tool changing the collection writes, so it is never met.

    Only when every world tool is declarative (a ``function`` tool may write anything): a field a record must
    reach that no ``update``'s ``set`` nor ``insert``'s ``record`` of the collection names, or a value none of
    them can write (each writes another fixed value, none takes it from an argument).
    """
    writers = _writers(view)
    if writers is None or writers.function:
        return
    for base, case in view.cases():
        seed = _seed(view, case)
        if seed is None:
            continue
        for where, expectation in _expectations(base, case):
            for index, item in enumerate(expectation.records):
                if not writers.actions.get(item.collection):
                    continue  # no tool changes it at all: unchangeable-state says so
                need = _record_need(item, seed.get(item.collection, {}))
                if need is None:
                    continue
                seeded = seed.get(item.collection, {}).get(item.id or "") if item.id is not None else None
                for key, value in item.fields.items():
                    if seeded is not None and key in seeded and seeded[key] == value:
                        continue
                    written = writers.values.get((item.collection, key), [])
                    if any(literal is None or literal == value for _, literal in written):
                        continue
                    others = ", ".join(f"{name} writes {_value(literal)}" for name, literal in written)
                    yield Hit(
                        (*where, "records", index, "fields", key),
                        f"{item.label()} {key} must become {_value(value)}, but no tool writes "
                        + (f"that value ({others})" if written else f"{key} of {item.collection}"),
                        f"let a world tool of {item.collection} set {key} (`set: {{{key}: ...}}`, or from an "
                        f"argument: `{key}: '{{{key}}}'`), or correct the state check",
                    )
