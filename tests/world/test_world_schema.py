"""Editor completion for worlds: the published schemas offer ``world``, ``expect_state`` and a tool's ``world``
where an editor looks (the object's ``properties``, through ``$ref`` and ``anyOf``), each key with a description,
and flag a misspelt key inside them."""

from __future__ import annotations

import json
from importlib import resources
from typing import Any

import pytest
from jsonschema import Draft202012Validator


def _schema(name: str) -> dict[str, Any]:
    loaded = json.loads(resources.files("simulator.schemas").joinpath(name).read_text(encoding="utf-8"))
    assert isinstance(loaded, dict)
    return loaded


def _objects(schema: dict[str, Any], node: dict[str, Any]) -> list[dict[str, Any]]:
    """The object schemas an editor offers keys from at ``node``: itself, what it refers to, its alternatives."""
    if "$ref" in node:
        return _objects(schema, schema["$defs"][node["$ref"].rsplit("/", 1)[-1]])
    found = [node] if "properties" in node else []
    for alternative in node.get("anyOf", []) + node.get("oneOf", []):
        found += _objects(schema, alternative)
    return found


def _offered(schema: dict[str, Any], node: dict[str, Any]) -> dict[str, str]:
    """Every key offered at ``node``, with its description ('' when it has none)."""
    return {
        key: value.get("description", "")
        for candidate in _objects(schema, node)
        for key, value in candidate["properties"].items()
    }


def _at(schema: dict[str, Any], definition: str | None, *keys: str) -> dict[str, Any]:
    """The schema of the key path ``keys`` under ``$defs[definition]`` (the root when None); ``[]`` steps into a
    list's items."""
    node = schema if definition is None else schema["$defs"][definition]
    for key in keys:
        if key == "[]":
            node = next(n for n in [node, *node.get("anyOf", [])] if "items" in n)["items"]
        else:
            node = next(candidate for candidate in _objects(schema, node) if key in candidate["properties"])
            node = node["properties"][key]
    return node


STATE_KEYS = {"records", "unchanged", "counts", "nothing_else_changed"}
OPERATION_KEYS = {
    "find", "get", "update", "insert", "delete", "function", "id", "where", "set", "record", "require", "fields",
    "limit",
}  # fmt: skip

PLACES = [
    ("suite.schema.json", None, ("world",), {"file", "collections"}),
    *(("suite.schema.json", kind, ("world",), {"file", "collections"})
      for kind in ("GoldenCase", "ScenarioCase", "SimulationCase")),
    *(("suite.schema.json", kind, ("expect_state",), STATE_KEYS)
      for kind in ("GoldenCase", "ScenarioCase", "SimulationCase")),
    ("suite.schema.json", "Step", ("expect_state",), STATE_KEYS),
    ("evals.schema.json", "Step", ("expect_state",), STATE_KEYS),
    ("suite.schema.json", "StateExpectation", ("records", "[]"), {"collection", "id", "where", "fields", "exists"}),
    ("suite.schema.json", "StateExpectation", ("unchanged", "[]"), {"collection", "id", "fields"}),
    ("suite.schema.json", "StateExpectation", ("counts", "[]"), {"collection", "where", "count"}),
    ("agent.schema.json", "ToolDeclaration", ("world",), OPERATION_KEYS),
    ("suite.schema.json", "ToolDeclaration", ("world",), OPERATION_KEYS),
]  # fmt: skip


@pytest.mark.parametrize(("name", "definition", "keys", "expected"), PLACES)
def test_the_world_keys_are_offered_with_descriptions(
    name: str, definition: str | None, keys: tuple[str, ...], expected: set[str]
) -> None:
    schema = _schema(name)
    key = _at(schema, definition, *keys)
    if keys[-1] != "[]":
        assert key.get("description"), f"{definition}.{'.'.join(keys)} has no description to show"
    offered = _offered(schema, key)
    assert set(offered) == expected
    assert [k for k, description in offered.items() if not description] == []


SUITE = {
    "name": "shop",
    "world": {"orders": {"1001": {"status": "placed"}}},
    "cases": [
        {
            "name": "cancel",
            "kind": "scenario",
            "goal": "Cancel order 1001.",
            "expect_state": {
                "records": [{"collection": "orders", "id": "1001", "fields": {"status": "cancelled"}}],
                "nothing_else_changed": True,
            },
        }
    ],
}


@pytest.mark.parametrize(
    ("change", "flagged"),
    [
        ({}, None),
        ({"nothing_else_chnaged": True}, "nothing_else_chnaged"),
        ({"records": [{"colection": "orders", "id": "1001"}]}, "colection"),
    ],
    ids=["valid", "a-misspelt-state-key", "a-misspelt-record-key"],
)
def test_an_editor_flags_a_misspelt_key_in_a_state_check(change: dict[str, Any], flagged: str | None) -> None:
    suite = json.loads(json.dumps(SUITE))
    suite["cases"][0]["expect_state"].update(change)
    errors = list(Draft202012Validator(_schema("suite.schema.json")).iter_errors(suite))
    if flagged is None:
        assert errors == []
    else:
        assert errors
        assert any(flagged in json.dumps(e.instance) for e in errors)
