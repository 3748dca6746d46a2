"""The committed JSON Schemas are generated from the models and must not go stale."""

from __future__ import annotations

import json
from importlib import resources

import pytest

from simulator.loading import SCHEMA_FILES
from simulator.models._jsonschema import generate_schemas


@pytest.mark.parametrize("name", sorted(generate_schemas()))
def test_committed_schema_is_current(name: str) -> None:
    committed = resources.files("simulator.schemas").joinpath(name).read_text(encoding="utf-8")
    assert committed == generate_schemas()[name], (
        f"simulator/schemas/{name} is stale: run `python -m simulator.models._jsonschema` and commit the result"
    )


def test_every_published_schema_is_a_valid_draft_2020_12_schema() -> None:
    from jsonschema import Draft202012Validator

    for name in SCHEMA_FILES.values():
        schema = json.loads(resources.files("simulator.schemas").joinpath(name).read_text(encoding="utf-8"))
        Draft202012Validator.check_schema(schema)
        assert schema["$schema"] == "https://json-schema.org/draft/2020-12/schema"


def test_schema_keeps_optional_keys_out_of_null() -> None:
    # `goal:` with no value is a mistake in a hand-written file; the schema must say so.
    schema = json.loads(resources.files("simulator.schemas").joinpath("suite.schema.json").read_text("utf-8"))
    step = schema["$defs"]["Step"]["properties"]
    assert step["goal"]["type"] == "string"
    assert "anyOf" not in step["goal"]
