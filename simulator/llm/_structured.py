"""Structured replies: what a structured request asks the provider for (the full JSON schema, or JSON mode), and
reading the reply into its pydantic model.

JSON mode (``response_format={"type": "json_object"}``) makes a provider answer with a JSON object without being
sent the schema: a caller that states the reply's shape in its prompt saves the schema's tokens on every request
(about 200 for the simulated user's move), and the reply is validated here either way. Not every provider has a
JSON mode, and :func:`reply_format` decides per provider:

* ``fake/...`` models, the openai backend (OpenAI's API and the OpenAI-compatible servers it posts to) and the
  litellm providers in :data:`JSON_MODE_PROVIDERS`, whose JSON mode litellm passes on or maps to the provider's
  own (Gemini's JSON MIME type, Ollama's ``format: json``), get JSON mode;
* every other provider gets the schema. litellm drops a ``json_object`` that carries no schema for Anthropic and
  Bedrock (they constrain output through a tool made from the schema), so there it would constrain nothing.

A server that rejects JSON mode (LM Studio takes only ``json_schema``) is asked again with the schema, and, for
the rest of the process, always with the schema (:func:`refused_json_mode`).
"""

from __future__ import annotations

import re
from typing import Any, TypeVar

from pydantic import BaseModel, ValidationError

from simulator.llm._fake import is_fake_model
from simulator.models.settings import ModelSettings

__all__ = [
    "JSON_MODE",
    "JSON_MODE_PROVIDERS",
    "InvalidReply",
    "has_json_mode",
    "parse_structured",
    "refused_json_mode",
    "reply_format",
]

T = TypeVar("T", bound=BaseModel)

#: The ``response_format`` of JSON mode: any JSON object, no schema sent.
JSON_MODE: dict[str, str] = {"type": "json_object"}

#: The litellm providers (model prefixes) whose JSON mode litellm sends on: OpenAI's own, Azure's, and the
#: providers that accept OpenAI's ``json_object`` or that litellm maps it for.
JSON_MODE_PROVIDERS = frozenset(
    {"openai", "azure", "gemini", "vertex_ai", "mistral", "groq", "deepseek", "fireworks_ai", "ollama", "ollama_chat"}
)

# The providers (model at API base) that rejected JSON mode in this process: asked with the schema from then on.
_REFUSED: set[str] = set()


def _provider_key(settings: ModelSettings) -> str:
    return f"{settings.model} at {settings.api_base}"


def has_json_mode(settings: ModelSettings) -> bool:
    """Whether ``settings``' provider gets JSON mode rather than the schema (see the module)."""
    model = settings.model or ""
    if _provider_key(settings) in _REFUSED:
        return False
    if is_fake_model(model) or settings.backend == "openai":
        return True
    prefix, slash, _ = model.partition("/")
    # With backend auto an openai/... model goes to the openai backend: its prefix is in the list.
    return bool(slash) and prefix in JSON_MODE_PROVIDERS


def reply_format(schema: type[BaseModel], settings: ModelSettings, *, json_mode: bool) -> Any:
    """The ``response_format`` a structured request for ``schema`` is sent with: JSON mode when the caller asks
    for it and the role's provider has it (:func:`has_json_mode`), else the schema itself."""
    return dict(JSON_MODE) if json_mode and has_json_mode(settings) else schema


def refused_json_mode(settings: ModelSettings, request_format: Any, error: Exception) -> bool:
    """True when ``error`` is the provider refusing a JSON-mode request (its message names the response format);
    the provider is then asked with the schema for the rest of the process."""
    if request_format != JSON_MODE:
        return False
    text = str(error).lower()
    if "response_format" not in text and "json_object" not in text:
        return False
    _REFUSED.add(_provider_key(settings))
    return True


class InvalidReply(Exception):
    """A structured reply that cannot be used; the message is shown to the model."""


_FENCE = re.compile(r"```[A-Za-z0-9_-]*[ \t]*\n?(.*?)```", re.DOTALL)


def parse_structured(raw: str, schema: type[T]) -> T:
    """``raw`` (a reply's text, perhaps in a Markdown code fence) validated as ``schema``; :class:`InvalidReply`
    saying what is wrong, in words for the model, when it is empty, not JSON or does not fit."""
    text = raw.strip()
    fenced = _FENCE.search(text)
    if fenced:
        text = fenced.group(1).strip()
    if not text:
        raise InvalidReply("the reply was empty.")
    try:
        return schema.model_validate_json(text)
    except ValidationError as exc:
        problems = []
        for error in exc.errors(include_url=False):
            if error["type"] == "json_invalid":
                problems.append(f"it is not valid JSON ({error['msg']})")
            else:
                location = ".".join(str(part) for part in error["loc"]) or "(root)"
                problems.append(f"{location}: {error['msg']}")
        raise InvalidReply("; ".join(problems) + ".") from exc
