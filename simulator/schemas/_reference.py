"""The file-format reference as Markdown, read off the JSON Schemas that validate the files (so it cannot drift).

``docs/gen_reference.py`` writes one page per schema to ``docs/reference/``; a test regenerates them and fails
when a committed page differs. Each object of a schema (the top level and every ``$defs`` entry) becomes a table:
key, type, whether it is required, its default and its description.
"""

from __future__ import annotations

import json
from importlib import resources
from typing import Any

__all__ = ["SCHEMA_PAGES", "schema_reference"]

#: Schema file -> (page name, page title).
SCHEMA_PAGES: dict[str, tuple[str, str]] = {
    "suite.schema.json": ("suite", "Suite files"),
    "agent.schema.json": ("agent", "Agent files"),
    "persona.schema.json": ("persona", "Persona files"),
    "personas.schema.json": ("personas", "Persona collections"),
    "evals.schema.json": ("evals", "Hosted-style evals files"),
    "run-report.schema.json": ("run-report", "The JSON run report"),
}


def schema_reference(schema_file: str) -> str:
    """The reference page of one schema file of ``simulator/schemas``, as Markdown."""
    schema: dict[str, Any] = json.loads(resources.files("simulator.schemas").joinpath(schema_file).read_text("utf-8"))
    _, title = SCHEMA_PAGES[schema_file]
    lines = [
        f"# {title}",
        "",
        f"Generated from `simulator/schemas/{schema_file}` (`python docs/gen_reference.py`); a test fails when this",
        "page and the schema differ. Editors that read JSON Schema complete and check these files as you type:",
        f"`# yaml-language-server: $schema=.../simulator/schemas/{schema_file}`.",
        "",
    ]
    if schema.get("description"):
        lines += [_one_line(schema["description"]), ""]
    defs = schema.get("$defs", {})
    sections = {name for name, definition in defs.items() if "properties" in definition or "enum" in definition}
    lines += _object("Top level", schema, sections)
    for name in sorted(defs):
        definition = schema["$defs"][name]
        if "properties" in definition:
            lines += _object(name, definition, sections)
        elif "enum" in definition:
            lines += [f"## {name}", "", _one_line(definition.get("description", "")), ""]
            lines += ["One of: " + ", ".join(f"`{value}`" for value in definition["enum"]) + ".", ""]
    return "\n".join(lines).rstrip() + "\n"


def _object(name: str, definition: dict[str, Any], sections: set[str]) -> list[str]:
    lines = [f"## {name}", ""]
    if definition.get("description") and name != "Top level":
        lines += [_one_line(definition["description"]), ""]
    required = set(definition.get("required", ()))
    lines += ["| key | type | required | default | meaning |", "|---|---|---|---|---|"]
    for key, prop in definition.get("properties", {}).items():
        default = f"`{json.dumps(prop['default'], ensure_ascii=False)}`" if "default" in prop else ""
        lines.append(
            f"| `{key}` | {_type(prop, sections)} | {'yes' if key in required else ''} | {_cell(default)} | "
            f"{_cell(_one_line(prop.get('description', '')))} |"
        )
    if definition.get("additionalProperties") is False:
        lines += ["", "No other keys are allowed (a typo is reported with the key's file, line and column)."]
    return [*lines, ""]


def _type(prop: dict[str, Any], sections: set[str]) -> str:
    if "$ref" in prop:
        target = prop["$ref"].rsplit("/", 1)[-1]
        return f"[{target}](#{target.lower()})" if target in sections else target
    if "anyOf" in prop or "oneOf" in prop:
        options = prop.get("anyOf") or prop.get("oneOf") or []
        return " or ".join(_type(option, sections) for option in options)
    if "const" in prop:
        return f"`{json.dumps(prop['const'])}`"
    if "enum" in prop:
        return " \\| ".join(f"`{value}`" for value in prop["enum"])
    kind = prop.get("type", "any")
    if kind == "array":
        return f"list of {_type(prop.get('items', {}), sections)}"
    if kind == "object" and isinstance(prop.get("additionalProperties"), dict):
        return f"map of {_type(prop['additionalProperties'], sections)}"
    return " or ".join(kind) if isinstance(kind, list) else str(kind)


def _one_line(text: str) -> str:
    return " ".join(text.split())


def _cell(text: str) -> str:
    return text.replace("|", "\\|")
