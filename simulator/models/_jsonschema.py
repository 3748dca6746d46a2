"""JSON Schemas generated from the models: what editors autocomplete and what the loader validates against."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel
from pydantic.json_schema import GenerateJsonSchema, JsonSchemaValue
from pydantic_core import core_schema

SCHEMA_DIALECT = "https://json-schema.org/draft/2020-12/schema"


class _AuthoringSchema(GenerateJsonSchema):
    """Schema for people writing YAML: an optional key is left out, never written as null.

    A key written with no value (``goal:``) is almost always a mistake, so the schema does not accept null
    where the model merely defaults to None.
    """

    def nullable_schema(self, schema: core_schema.NullableSchema) -> JsonSchemaValue:
        return self.generate_inner(schema["schema"])

    def default_schema(self, schema: core_schema.WithDefaultSchema) -> JsonSchemaValue:
        result = super().default_schema(schema)
        if result.get("default", 0) is None:
            result.pop("default")
        return result

    def field_title_should_be_set(self, schema: Any) -> bool:
        return False


def authoring_schema(model: type[BaseModel], title: str, schema_id: str) -> dict[str, Any]:
    """The JSON Schema of ``model`` as published for editors and used by the loader."""
    body = model.model_json_schema(schema_generator=_AuthoringSchema, mode="validation")
    return _published_form(body, title, schema_id)


def _published_form(body: dict[str, Any], title: str, schema_id: str) -> dict[str, Any]:
    body = {key: value for key, value in body.items() if key != "title"}
    return {"$schema": SCHEMA_DIALECT, "$id": schema_id, "title": title, **body}


def _with_agent_discriminator(node: Any) -> Any:
    """Name the agent union's discriminator, which pydantic leaves out for a callable one: editors and the loader's
    error messages pick the branch by ``type``; a ``type`` that is not built in is the plugin branch."""
    from simulator.models.agent import BUILTIN_AGENT_TYPES

    if isinstance(node, list):
        return [_with_agent_discriminator(item) for item in node]
    if not isinstance(node, dict):
        return node
    node = {key: _with_agent_discriminator(value) for key, value in node.items()}
    branches = node.get("oneOf")
    refs = [branch.get("$ref", "") for branch in branches] if isinstance(branches, list) else []
    if refs and all(ref.endswith("Agent") for ref in refs) and "discriminator" not in node:
        mapping = {
            kind: ref for kind in sorted(BUILTIN_AGENT_TYPES) for ref in refs if ref.lower().endswith(f"/{kind}agent")
        }
        node["discriminator"] = {"propertyName": "type", "mapping": mapping}
        node["x-plugin-group"] = "agents"  # the loader accepts the type of an installed agent plugin too
    return node


def _published() -> dict[str, dict[str, Any]]:
    from pydantic import TypeAdapter

    from simulator.models.agent import AgentConfig
    from simulator.models.persona import Persona, PersonaFile
    from simulator.models.suite import HostedEvalsFile, Suite

    agent_body = TypeAdapter(AgentConfig).json_schema(schema_generator=_AuthoringSchema, mode="validation")
    evals = authoring_schema(HostedEvalsFile, "Simulator hosted-format evals file", "urn:simulator:schema:evals")
    # In the hosted format every entry is a simulation case, so `kind` is implied.
    evals["$defs"]["SimulationCase"]["required"].remove("kind")
    published = {
        "suite": authoring_schema(Suite, "Simulator suite", "urn:simulator:schema:suite"),
        "evals": evals,
        "agent": _published_form(agent_body, "Simulator agent under test", "urn:simulator:schema:agent"),
        "persona": authoring_schema(Persona, "Simulator persona", "urn:simulator:schema:persona"),
        "personas": authoring_schema(PersonaFile, "Simulator persona collection", "urn:simulator:schema:personas"),
    }
    return {name: _with_agent_discriminator(schema) for name, schema in published.items()}


def generate_schemas() -> dict[str, str]:
    """The text of every published schema file, by file name (what ``simulator/schemas/`` must hold)."""
    import json

    return {
        f"{kind}.schema.json": json.dumps(schema, indent=2, ensure_ascii=False) + "\n"
        for kind, schema in _published().items()
    }


if __name__ == "__main__":  # pragma: no cover - developer tool: python -m simulator.models._jsonschema
    from pathlib import Path

    from simulator._files import write_file

    target = Path(__file__).resolve().parent.parent / "schemas"
    for name, text in generate_schemas().items():
        write_file(target / name, text)
        print(f"wrote {target / name}")
