"""The litellm backend: every model string that is not the offline fake's goes through litellm.

This is the only module of Simulator that imports litellm, and it imports it lazily, on the first model call
(or in :func:`preload`): ``import litellm`` takes seconds, and ``simulator --help``, ``validate``, ``report`` and
every run on fake models never need it.

Offline use
  * ``LITELLM_OFFLINE_MODE=true`` makes litellm use its bundled price list and skip tokenizer downloads
    (which block on a machine without internet). Set it in tests, CI and any
    air-gapped run. This module does not set it itself: whether a run may reach the network for litellm's
    catalogs is the operator's choice (``tests/conftest.py`` sets it for the test suite).
  * Before importing litellm this module sets ``LITELLM_LOCAL_MODEL_COST_MAP=True`` (unless already set), so
    the import never tries to download the price list; prices then come from the copy bundled with litellm.
"""

from __future__ import annotations

import functools
import importlib.util
import os
import re
import warnings
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from simulator.llm._breakpoints import with_cache_breakpoint
from simulator.llm._retry import Failure, failure_detail, failure_for_status
from simulator.llm._speech import segments_confidence, speech_completion, transcription_completion
from simulator.llm._types import Completion, Role, ToolCallRequest, Usage

if TYPE_CHECKING:
    from litellm.types.utils import ModelResponse

__all__ = ["LitellmBackend", "load_litellm", "provider_names"]

# litellm installs a global "ignore" filter for this pydantic warning when it is imported, because its own
# TypedDicts with ReadOnly items trigger it while pydantic builds schemas lazily (on the first request, not at
# import). Anything that re-installs warning filters (pytest does so around every test, with
# `filterwarnings = error` here) drops litellm's filter, and the warning then raises inside litellm, which
# wraps it as a connection error. We re-assert exactly that one filter before each call: it is idempotent
# (`filterwarnings` moves an existing identical entry to the front), and unlike `catch_warnings` it is safe when
# many asyncio tasks call litellm at once.
_READONLY_TYPEDDICT_WARNING = r".*on TypedDict class .* using the `ReadOnly` qualifier"


def _silence_known_litellm_warnings() -> None:
    warnings.filterwarnings(
        "ignore",
        message=_READONLY_TYPEDDICT_WARNING,
        category=UserWarning,
        module=r"pydantic\._internal\._generate_schema",
    )


@functools.cache
def load_litellm() -> None:
    """Import and configure litellm once per process."""
    # The variable name and its "true" check are in litellm/litellm_core_utils/get_model_cost_map.py.
    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    _silence_known_litellm_warnings()
    import litellm

    litellm.suppress_debug_info = True


# litellm's providers are the values of its LlmProviders enum (litellm/types/utils.py): read from the source file,
# as the price list is read from its JSON, so that checking a model string never costs the seconds of the import.
_PROVIDER_ENUM = re.compile(r"^class LlmProviders\(str, Enum\):\n((?:[ \t]+.*\n|[ \t]*\n)+)", re.MULTILINE)
_PROVIDER_VALUE = re.compile(r"^[ \t]+[A-Z][A-Z0-9_]*[ \t]*=[ \t]*\"([^\"]+)\"", re.MULTILINE)
# Fewer than this read from the file means its layout changed: litellm itself is asked instead.
_PLAUSIBLE_PROVIDERS = 20


@functools.cache
def provider_names() -> frozenset[str]:
    """The provider prefixes litellm routes (``openai``, ``anthropic``, ``azure`` ...); empty when litellm is not
    installed. Read from litellm's source without importing it; imported only if that reading fails."""
    try:
        spec = importlib.util.find_spec("litellm")  # a top-level package: found, not imported
    except (ImportError, ValueError):
        return frozenset()
    if spec is None:
        return frozenset()
    for folder in spec.submodule_search_locations or []:
        try:
            source = (Path(folder) / "types" / "utils.py").read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError):
            continue
        enum = _PROVIDER_ENUM.search(source)
        names = frozenset(_PROVIDER_VALUE.findall(enum.group(1))) if enum else frozenset()
        if len(names) >= _PLAUSIBLE_PROVIDERS:
            return names
    load_litellm()
    import litellm

    return frozenset(str(getattr(provider, "value", provider)) for provider in litellm.provider_list)


# What the OpenAI and Azure SDKs (under litellm) say when no key was given, so nothing was sent.
_MISSING_CREDENTIALS = re.compile(r"Missing credentials|api_key client option must be set", re.IGNORECASE)


class LitellmBackend:
    """Sends requests with ``litellm.acompletion`` (and speech requests with ``litellm.aspeech`` and
    ``litellm.atranscription``); the client's retries replace litellm's and the SDK's own."""

    async def complete(self, request: Mapping[str, Any], *, role: Role) -> Completion:
        """One ``litellm.acompletion`` call, its reply as a :class:`Completion`; an Anthropic model's stable prefix
        carries a cache breakpoint (:func:`~simulator.llm._breakpoints.with_cache_breakpoint`)."""
        load_litellm()
        import litellm
        from litellm.types.utils import ModelResponse

        _silence_known_litellm_warnings()
        model = str(request["model"])
        messages = with_cache_breakpoint(model, role, request["messages"])
        # Retries are done by the client, with its classification and backoff: litellm's num_retries would also
        # retry plain exceptions it wraps as connection errors, and the OpenAI SDK retries twice by default.
        response = await litellm.acompletion(**{**request, "messages": messages}, num_retries=0, max_retries=0)
        if not isinstance(response, ModelResponse):
            raise TypeError(f"expected a ModelResponse from litellm, got {type(response).__name__}")
        return _to_completion(response, model)

    async def speak(self, request: Mapping[str, Any], *, role: Role) -> Completion:
        """One ``litellm.aspeech`` call: the audio, and the cost litellm reports (a speech model is priced by
        the character; None when litellm has no price for it)."""
        load_litellm()
        import litellm

        _silence_known_litellm_warnings()
        response = await litellm.aspeech(**request, num_retries=0, max_retries=0)
        hidden = getattr(response, "_hidden_params", None) or {}
        usage = Usage(calls=1, cost=_known_cost(hidden.get("response_cost")))
        return speech_completion(bytes(response.content), usage, str(request["model"]))

    async def transcribe(self, request: Mapping[str, Any], *, role: Role) -> Completion:
        """One ``litellm.atranscription`` call of the WAV bytes in ``request["file"]``: the text, how sure the
        model was (a Whisper model's ``verbose_json`` segments; None when it does not say), the tokens a model
        priced by the token reports and the cost litellm reports (Whisper is priced by the second)."""
        load_litellm()
        import litellm
        from litellm.types.utils import TranscriptionResponse

        _silence_known_litellm_warnings()
        sent = {**request, "file": ("speech.wav", request["file"], "audio/wav")}
        response = await litellm.atranscription(**sent, num_retries=0, max_retries=0)
        if not isinstance(response, TranscriptionResponse):
            raise TypeError(f"expected a TranscriptionResponse from litellm, got {type(response).__name__}")
        used = getattr(response, "usage", None)
        usage = Usage(
            prompt_tokens=_count(_field(used, "input_tokens")),
            completion_tokens=_count(_field(used, "output_tokens")),
            calls=1,
            cost=_known_cost(response._hidden_params.get("response_cost")),
        )
        confidence = segments_confidence(getattr(response, "segments", None))
        return transcription_completion(str(response.text or ""), confidence, usage, str(request["model"]))

    def classify(self, exc: Exception) -> Failure | None:
        """litellm's exception types as the client's failure kinds."""
        from litellm.exceptions import APIConnectionError, AuthenticationError, PermissionDeniedError, Timeout

        # Before the status: litellm reports the SDK's refusal to start without a key ("Missing credentials", Azure's
        # and OpenAI's) as a server error 500 or a connection error, which would be retried to no end.
        if _MISSING_CREDENTIALS.search(str(exc)):
            return Failure(retry=False, kind="missing credentials", detail=failure_detail(exc))
        if isinstance(exc, AuthenticationError | PermissionDeniedError):
            return Failure(retry=False, kind="authentication", detail=failure_detail(exc))

        # Timeouts and connection errors first: litellm.Timeout is a subclass of the connection error, and a
        # connection error carries status 500 without the server having answered.
        if isinstance(exc, Timeout):
            return Failure(retry=True, kind="timeout", detail=failure_detail(exc))
        if isinstance(exc, APIConnectionError):
            return Failure(retry=True, kind="connection error", detail=failure_detail(exc))
        status = getattr(exc, "status_code", None)
        # Without a status it was not the provider that failed: a bug, which the client lets surface.
        return failure_for_status(status, exc) if isinstance(status, int) else None


def _to_completion(response: ModelResponse, model: str) -> Completion:
    from litellm.types.utils import ChatCompletionMessageToolCall, Choices

    choice = response.choices[0] if response.choices else None
    content: str | None = None
    finish_reason: str | None = None
    tool_calls: list[ToolCallRequest] = []
    if isinstance(choice, Choices):
        finish_reason = choice.finish_reason
        message = choice.message
        content = message.content if isinstance(message.content, str) else None
        for call in message.tool_calls or []:
            if isinstance(call, ChatCompletionMessageToolCall):
                tool_calls.append(
                    ToolCallRequest.parse(call.id or "", call.function.name or "", call.function.arguments)
                )
            else:
                # A free-form ("custom") tool call carries text, not JSON arguments: keep it, flagged.
                tool_calls.append(
                    ToolCallRequest(
                        id=call.id,
                        name=call.custom.name,
                        arguments={},
                        raw_arguments=call.custom.input,
                        arguments_error="free-form (custom) tool call: the input is text, not JSON arguments",
                    )
                )
    usage_data = getattr(response, "usage", None)
    cost = response._hidden_params.get("response_cost")
    prompt = int(getattr(usage_data, "prompt_tokens", 0) or 0)
    read, written = _prompt_cache_tokens(usage_data, prompt)
    usage = Usage(
        prompt_tokens=prompt,
        completion_tokens=int(getattr(usage_data, "completion_tokens", 0) or 0),
        calls=1,
        cost=float(cost) if isinstance(cost, int | float) else None,
        cache_read_tokens=read,
        cache_write_tokens=written,
    )
    if read or written:
        provider = response._hidden_params.get("custom_llm_provider")
        usage = usage.model_copy(update={"cache_savings": _prompt_cache_savings(usage, model, provider)})
    return Completion(
        content=content,
        tool_calls=tool_calls,
        finish_reason=finish_reason,
        usage=usage,
        model=model,
        cost=usage.cost,
        raw_text=content or "",
    )


def _known_cost(value: Any) -> float | None:
    return float(value) if isinstance(value, int | float) else None


def _field(value: Any, name: str) -> Any:
    return value.get(name) if isinstance(value, Mapping) else getattr(value, name, None)


def _count(value: Any) -> int:
    return int(value) if isinstance(value, int | float) and value > 0 else 0


def _prompt_cache_tokens(usage: Any, prompt_tokens: int) -> tuple[int, int]:
    """The prompt tokens the provider's prompt cache served and those written to it, as litellm passes them on:
    ``prompt_tokens_details.cached_tokens`` (OpenAI's, and Anthropic's ``cache_read_input_tokens`` mapped there),
    ``cache_creation_input_tokens`` (Anthropic's writes; ``prompt_tokens_details.cache_creation_tokens`` too).
    litellm counts both in ``prompt_tokens``, so neither is more than it."""
    if usage is None:
        return 0, 0
    details = getattr(usage, "prompt_tokens_details", None)
    read = _count(getattr(details, "cached_tokens", None)) or _count(getattr(usage, "cache_read_input_tokens", None))
    written = _count(getattr(usage, "cache_creation_input_tokens", None)) or _count(
        getattr(details, "cache_creation_tokens", None)
    )
    read = min(read, prompt_tokens)
    return read, min(written, prompt_tokens - read)


def _prompt_cache_savings(usage: Usage, model: str, provider: Any) -> float | None:
    """What the provider's prompt cache saved on one call: its prompt tokens at the full prompt price minus their
    price with the cached ones at the cache-read and cache-write prices, both as litellm prices them (the same
    price list as the call's cost); None when the call's cost or the model's price is unknown."""
    if usage.cost is None:
        return None
    import litellm
    from litellm.types.utils import Usage as LitellmUsage

    name = provider if isinstance(provider, str) and provider else None
    try:
        full, _ = litellm.cost_per_token(model=model, prompt_tokens=usage.prompt_tokens, custom_llm_provider=name)
        cached = LitellmUsage(
            prompt_tokens=usage.prompt_tokens,
            completion_tokens=0,
            total_tokens=usage.prompt_tokens,
            cache_read_input_tokens=usage.cache_read_tokens,
            cache_creation_input_tokens=usage.cache_write_tokens,
        )
        paid, _ = litellm.cost_per_token(
            model=model, prompt_tokens=usage.prompt_tokens, custom_llm_provider=name, usage_object=cached
        )
    except Exception:  # litellm raises plain exceptions for a model its price list lacks
        return None
    return float(full) - float(paid)
