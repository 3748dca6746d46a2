"""JSON Schema validation with every error in plain words, at the line and column it concerns.

jsonschema's own messages are written for programmers and poor for ``oneOf``/``anyOf``; here each error is
explained from the schema: unknown keys get a did-you-mean, a union is narrowed to the branch the value was
meant for (by ``kind``/``type`` discriminator or by its JSON type) and that branch's errors are reported.
"""

from __future__ import annotations

import difflib
import itertools
import json
from collections.abc import Iterator
from functools import cache
from importlib import resources
from typing import TYPE_CHECKING, Any

from simulator.errors import ConfigError
from simulator.kinds import KINDS
from simulator.loading import _limits
from simulator.loading._yaml import DataPath, Located, format_path
from simulator.plugins import GROUPS, plugins

if TYPE_CHECKING:
    from jsonschema import Draft202012Validator
    from jsonschema.exceptions import ValidationError

#: The schema files shipped in ``simulator/schemas``, by the kind of file they describe.
SCHEMA_FILES = {
    "suite": "suite.schema.json",
    "evals": "evals.schema.json",
    "agent": "agent.schema.json",
    "persona": "persona.schema.json",
    "personas": "personas.schema.json",
}

_PATTERN_MEANING = {
    r"^[A-Za-z0-9][A-Za-z0-9_.-]*$": "must be a name of letters, digits, '_', '-' or '.', without spaces",
    r"^[A-Za-z_][A-Za-z0-9_-]*$": "must be an identifier: letters, digits, '_' or '-', starting with a letter or '_'",
    r"\S": "must not be blank",
    r"^[A-Za-z_][\w.]*:[A-Za-z_][\w.]*$": "must be 'module:attribute', such as 'my_package.bot:respond'",
    r"^[a-z]{2,3}(-[A-Za-z0-9]{2,8})*$": "must be a language tag such as 'en', 'de' or 'pt-BR'",
    r"^(https?://|\$\{)\S+$": "must be an http:// or https:// URL (or start with ${VAR})",
    r"^(wss?://|\$\{)\S+$": "must be a ws:// or wss:// WebSocket URL (or start with ${VAR})",
    r"^\S([^\r\n\u2028\u2029]*\S)?$": "must be one line that does not start or end with spaces",
}

_JSON_TYPE_WORDS = {
    "string": "text",
    "integer": "a whole number",
    "number": "a number",
    "boolean": "true or false",
    "object": "a mapping (key: value)",
    "array": "a list",
    "null": "nothing",
}


@cache
def load_schema(kind: str) -> dict[str, Any]:
    """The shipped JSON Schema for a kind of file (suite, evals, agent, persona, personas)."""
    text = resources.files("simulator.schemas").joinpath(SCHEMA_FILES[kind]).read_text(encoding="utf-8")
    schema: dict[str, Any] = json.loads(text)
    return schema


@cache
def _validator(kind: str) -> Draft202012Validator:
    # Imported here: only files with problems (or nulls) need the schema pass, and the import is slow.
    from jsonschema import Draft202012Validator

    return Draft202012Validator(load_schema(kind))


def describe_value(value: Any) -> str:
    """How a value reads in an error message: its kind, and the value itself where short."""
    if value is None:
        return "nothing (the key has no value)"
    if isinstance(value, bool):
        return f"the boolean {str(value).lower()}"
    if isinstance(value, (int, float)):
        return f"the number {value}"
    if isinstance(value, str):
        return f"the text {value!r}" if len(value) <= 60 else "a text"
    if isinstance(value, list):
        return "a list"
    if isinstance(value, dict):
        return "a mapping"
    return type(value).__name__


def _json_type(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, float):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list):
        return "array"
    return "object"


def closest(word: str, choices: Any) -> str | None:
    """The choice most like ``word``, if one is close enough to be a likely misspelling."""
    close = difflib.get_close_matches(str(word), [str(c) for c in choices], n=1, cutoff=0.6)
    return close[0] if close else None


def did_you_mean(word: str, choices: Any) -> str:
    """``"; did you mean 'x'?"`` when a choice is close to ``word``, else an empty string."""
    close = closest(word, choices)
    return f"; did you mean {close!r}?" if close else ""


def _type_words(types: list[str]) -> str:
    words = [_JSON_TYPE_WORDS.get(t, t) for t in types if t != "null"]
    if "a whole number" in words and "a number" in words:
        words.remove("a whole number")
    return " or ".join(words) or "nothing"


class SchemaChecker:
    """Validates data of one kind of file and turns the errors into :class:`ConfigError` with places."""

    def __init__(self, kind: str) -> None:
        self.schema = load_schema(kind)
        self.validator = _validator(kind)

    def check(self, located: Located, file: str) -> list[tuple[DataPath, ConfigError]]:
        """Every schema problem of the file, located, with the data path each concerns."""
        # Explained lazily and a bounded number of them: 200,000 unknown keys need no 200,000 did-you-means.
        every = (found for error in self.validator.iter_errors(located.data) for found in self._explain(error))
        explained = list(itertools.islice(every, 2 * _limits.MAX_ERRORS + 1))
        found: list[tuple[DataPath, ConfigError]] = []
        seen: set[tuple[DataPath, str]] = set()
        for path, message, at_key in _one_reason_each(explained):
            if (path, message) in seen:
                continue
            seen.add((path, message))
            position = located.position(path, key=at_key)
            stop = len(found) == _limits.MAX_ERRORS
            shown = _limits.too_many_problems() if stop else message
            found.append((path, ConfigError(file, position.line, position.column, format_path(path), shown)))
            if stop:
                break
        return found

    def _types(self, schema: Any) -> list[str]:
        schema = self._resolve(schema)
        for key in ("oneOf", "anyOf"):
            if key in schema:
                return list(dict.fromkeys(t for branch in schema[key] for t in self._types(branch)))
        return _branch_types(schema)

    def _resolve(self, schema: Any) -> dict[str, Any]:
        while isinstance(schema, dict) and "$ref" in schema:
            ref = schema["$ref"]
            node: Any = self.schema
            for part in ref.removeprefix("#/").split("/"):
                node = node[part]
            schema = node
        return schema if isinstance(schema, dict) else {}

    def _explain(self, error: ValidationError) -> Iterator[tuple[DataPath, str, bool]]:
        path: DataPath = tuple(error.absolute_path)
        keyword = error.validator
        instance = error.instance
        schema = self._resolve(error.schema)
        if keyword == "additionalProperties" and isinstance(instance, dict):
            allowed = list(schema.get("properties", {}))
            for key in instance:
                if key in allowed:
                    continue
                hint = did_you_mean(key, allowed)
                if not hint:
                    hint = f"; allowed keys: {', '.join(allowed)}" if allowed else ""
                yield (*path, key), f"unknown key {key!r}{hint}", True
        elif keyword == "required" and isinstance(instance, dict):
            for key in error.validator_value:
                if key not in instance:
                    description = self._resolve(schema.get("properties", {}).get(key, {})).get("description", "")
                    detail = f" ({description.rstrip('.')})" if description else ""
                    yield path, f"missing required key {key!r}{detail}", False
        elif keyword in ("oneOf", "anyOf"):
            yield from self._explain_union(error, path, schema)
        elif keyword == "type":
            expected = error.validator_value if isinstance(error.validator_value, list) else [error.validator_value]
            message = f"expected {_type_words(expected)}, got {describe_value(instance)}"
            if "string" in expected and isinstance(instance, (bool, int, float)):
                message += f': put it in quotes ("{_yaml_text(instance)}") to make it text'
            elif instance is None:
                message += ": write a value or remove the key"
            yield path, message, False
        elif keyword == "const":
            yield path, f"must be {error.validator_value!r}, got {describe_value(instance)}", False
        elif keyword == "enum":
            choices = error.validator_value
            listed = ", ".join(str(c) for c in choices)
            hint = did_you_mean(instance, choices) if isinstance(instance, str) else ""
            yield path, f"must be one of {listed}, got {describe_value(instance)}{hint}", False
        elif keyword == "pattern":
            meaning = _PATTERN_MEANING.get(error.validator_value, f"must match {error.validator_value}")
            yield path, f"{meaning}, got {describe_value(instance)}", False
        elif keyword == "minLength":
            yield path, "must not be empty", False
        elif keyword == "maxLength":
            yield path, f"is too long: at most {error.validator_value} characters", False
        elif keyword == "minItems":
            yield (
                path,
                f"needs at least {error.validator_value} {'entry' if error.validator_value == 1 else 'entries'}",
                False,
            )
        elif keyword == "maxItems":
            yield path, f"has too many entries: at most {error.validator_value}", False
        elif keyword in ("minimum", "exclusiveMinimum", "maximum", "exclusiveMaximum"):
            word = {
                "minimum": "at least",
                "exclusiveMinimum": "more than",
                "maximum": "at most",
                "exclusiveMaximum": "less than",
            }[keyword]
            yield path, f"must be {word} {error.validator_value}, got {instance}", False
        else:
            yield path, error.message, False

    def _explain_union(
        self, error: ValidationError, path: DataPath, schema: dict[str, Any]
    ) -> Iterator[tuple[DataPath, str, bool]]:
        branches: list[Any] = error.validator_value
        instance = error.instance
        discriminator = schema.get("discriminator")
        chosen: int | None = None
        if isinstance(discriminator, dict) and isinstance(instance, dict):
            prop = discriminator["propertyName"]
            mapping: dict[str, str] = discriminator.get("mapping", {})
            choices = ", ".join(mapping)
            if prop not in instance:
                yield path, f"missing key {prop!r}: one of {choices}{_infer_kind(prop, instance)}", False
                return
            value = instance[prop]
            # A branch that does not fix the discriminator takes every other value (an agent plugin's type).
            other = [
                i for i, b in enumerate(branches) if "const" not in self._resolve(b).get("properties", {}).get(prop, {})
            ]
            group = schema.get("x-plugin-group")
            installed = list(plugins(group)) if group in GROUPS else []
            if value not in mapping and not (other and value in installed):
                names = [*mapping, *installed]
                hint = did_you_mean(value, names) if isinstance(value, str) else ""
                expected = f"{', '.join(names)} or an installed {str(group)[:-1]} plugin" if group else choices
                yield (*path, prop), f"{prop} must be one of {expected}, got {describe_value(value)}{hint}", False
                return
            chosen = (
                next(i for i, b in enumerate(branches) if b.get("$ref") == mapping[value])
                if value in mapping
                else other[0]
            )
        else:
            kind = _json_type(instance)
            matching = [i for i, b in enumerate(branches) if _accepts(self._types(b), kind)]
            if not matching:
                allowed = [t for b in branches for t in self._types(b)]
                message = f"expected {_type_words(list(dict.fromkeys(allowed)))}, got {describe_value(instance)}"
                if "string" in allowed and isinstance(instance, (bool, int, float)):
                    message += f': put it in quotes ("{_yaml_text(instance)}") to make it text'
                yield path, message, False
                return
            if len(matching) == 1:
                chosen = matching[0]
            else:
                # Several branches take this type: report the branch that got furthest (fewest errors).
                by_branch: dict[int, int] = {}
                for sub in error.context or []:
                    by_branch[sub.relative_schema_path[0]] = by_branch.get(sub.relative_schema_path[0], 0) + 1
                chosen = min(matching, key=lambda i: by_branch.get(i, 0))
        subs = [sub for sub in error.context or [] if sub.relative_schema_path[0] == chosen]
        if not subs:
            yield path, error.message, False
            return
        for sub in subs:
            yield from self._explain(sub)


def _branch_types(schema: dict[str, Any]) -> list[str]:
    if "type" in schema:
        t = schema["type"]
        return t if isinstance(t, list) else [t]
    if "properties" in schema or "additionalProperties" in schema:
        return ["object"]
    if "items" in schema:
        return ["array"]
    if "enum" in schema or "const" in schema:
        values = schema.get("enum", [schema.get("const")])
        return list(dict.fromkeys(_json_type(v) for v in values))
    return ["string", "number", "boolean", "object", "array", "null"]


def _accepts(types: list[str], kind: str) -> bool:
    return kind in types or (kind == "integer" and "number" in types)


_EMPTY = "must not be empty"


def _one_reason_each(explained: list[tuple[DataPath, str, bool]]) -> list[tuple[DataPath, str, bool]]:
    """Drop errors that only restate another: a pattern error beside "must not be empty" at the same place,
    and "missing required key 'x'" where an unknown key nearby is its misspelling ("did you mean 'x'?")."""
    empty = {path for path, message, _ in explained if message == _EMPTY}
    meanings = tuple(_PATTERN_MEANING.values())
    suggested = {
        (path[:-1], message.rsplit("did you mean ", 1)[1].rstrip("?"))
        for path, message, _ in explained
        if message.startswith("unknown key ") and "did you mean " in message
    }
    kept = []
    for path, message, at_key in explained:
        if path in empty and message.startswith(meanings):
            continue
        if message.startswith("missing required key "):
            key = message.removeprefix("missing required key ").split(" ", 1)[0]
            if (path, key) in suggested:
                continue
        kept.append((path, message, at_key))
    return kept


def _infer_kind(prop: str, instance: dict[str, Any]) -> str:
    if prop != "kind":
        return ""
    for kind in KINDS.values():
        if kind.identifying_key in instance:
            return f" (this case has `{kind.identifying_key}`: add `kind: {kind.name}`)"
    return ""


def _yaml_text(value: Any) -> str:
    return str(value).lower() if isinstance(value, bool) else str(value)


def tool_parameter_problems(agent: Any, base: DataPath = ()) -> list[tuple[DataPath, str]]:
    """Where (under ``base``, the place of ``agent``) and why each tool of an agent as written has
    ``parameters`` that are not the JSON Schema of an object, which function-calling APIs require.

    ``agent`` is the agent's data as read from the file, valid or not: what is not a mapping of tools is the
    models' and the schema's to report, so one report holds every problem of the file.
    """
    tools = agent.get("tools") if isinstance(agent, dict) else None
    problems: list[tuple[DataPath, str]] = []
    for index, tool in enumerate(tools if isinstance(tools, list) else []):
        parameters = tool.get("parameters") if isinstance(tool, dict) else None
        if isinstance(parameters, dict) and (message := _parameters_problem(parameters)) is not None:
            problems.append(((*base, "tools", index, "parameters"), message))
    return problems


def _parameters_problem(parameters: dict[str, Any]) -> str | None:
    from jsonschema import Draft202012Validator
    from jsonschema.exceptions import SchemaError

    try:
        Draft202012Validator.check_schema(parameters)
    except SchemaError as exc:
        return f"not a valid JSON Schema: {exc.message}"
    if parameters.get("type", "object") != "object":
        return "tool parameters must be an object schema (type: object)"
    return None
