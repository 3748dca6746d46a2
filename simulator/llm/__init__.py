"""One client for every model role (agent, simulated user, judge, and the speech roles voice and transcriber), its
request cache, and the offline fake.

* :class:`LLMClient` (``_client``): roles, the request cache, concurrency limits, retries, accounting
  (:func:`metering`) and structured output, the same for every backend;
* backends (``_backend``: the protocol): ``fake/...`` models are answered in process by a :class:`FakeScript`
  (``_fake``, no litellm); ``openai/...`` models by default straight to their OpenAI-compatible endpoint
  over httpx (``_openai``: pooled connections, cost from litellm's price list read as JSON, neither litellm nor
  the openai SDK imported); every other model by litellm
  (``_litellm``: the only module that imports it, lazily, since ``import litellm`` takes seconds). A role's
  ``backend`` setting (``auto``, ``litellm``, ``openai``) overrides the choice. Each backend reports the prompt
  tokens a provider's prompt cache served and stored, priced at its cached rates; an Anthropic model's requests
  get a cache breakpoint on their stable start as litellm sends them (``_breakpoints``);
* structured replies (``_structured``): the schema, or JSON mode where the provider has one and the caller states
  the shape itself (the simulated user), and the reply validated either way;
* speech (``_speech``): :meth:`LLMClient.speak` and :meth:`LLMClient.transcribe` for the speech roles, through
  litellm's speech and transcription calls (``fake/...`` models: the fake speech codec), with the same limits,
  retries, accounting and cache; a :class:`Transcription` is what a transcriber heard;
* :class:`RequestCache` (``_cache``): replies stored by request in SQLite, so re-runs are fast, free and
  reproducible;
* :func:`provider_problem` and :func:`missing_key` (``_providers``): a role's provider prefix and key variable,
  checked before a run starts;
* :class:`RetryPolicy` and :func:`retry_after_seconds` (``_retry``): the backoff shared with the agent adapters;
  :class:`HoldOffs`: a ``Retry-After`` held for every call to the provider, kept by a :class:`CallLimiter`.
"""

from simulator.llm._cache import RequestCache, cache_scope, request_cache_key
from simulator.llm._calls import ModelCall, logging_calls
from simulator.llm._client import (
    CallLimiter,
    LLMClient,
    UsageMeter,
    metering,
    noting_refusals,
    preload,
)
from simulator.llm._fake import (
    FAKE_PROVIDER,
    FakeProviderError,
    FakeReply,
    FakeRequest,
    FakeScript,
    FakeToolCall,
    StaticReply,
    fake_auth_error,
    fake_bad_request,
    fake_connection_error,
    fake_not_found,
    fake_rate_limit,
    fake_server_error,
    fake_timeout,
)
from simulator.llm._openai import has_price
from simulator.llm._providers import key_variables, missing_key, provider_problem, suite_model_problems
from simulator.llm._replay import RecordedAnswers, replaying, request_fingerprint, request_record
from simulator.llm._retry import RETRY_AFTER_CAP, HoldOff, HoldOffs, RetryPolicy, log_hold_off, retry_after_seconds
from simulator.llm._speech import Transcription
from simulator.llm._types import Completion, Role, StructuredOutputError, ToolCallRequest, UnrecordedRequest, Usage

__all__ = [
    "FAKE_PROVIDER",
    "RETRY_AFTER_CAP",
    "CallLimiter",
    "Completion",
    "FakeProviderError",
    "FakeReply",
    "FakeRequest",
    "FakeScript",
    "FakeToolCall",
    "HoldOff",
    "HoldOffs",
    "LLMClient",
    "ModelCall",
    "RecordedAnswers",
    "RequestCache",
    "RetryPolicy",
    "Role",
    "StaticReply",
    "StructuredOutputError",
    "ToolCallRequest",
    "Transcription",
    "UnrecordedRequest",
    "Usage",
    "UsageMeter",
    "cache_scope",
    "fake_auth_error",
    "fake_bad_request",
    "fake_connection_error",
    "fake_not_found",
    "fake_rate_limit",
    "fake_server_error",
    "fake_timeout",
    "has_price",
    "key_variables",
    "log_hold_off",
    "logging_calls",
    "metering",
    "missing_key",
    "noting_refusals",
    "preload",
    "provider_problem",
    "replaying",
    "request_cache_key",
    "request_fingerprint",
    "request_record",
    "retry_after_seconds",
    "suite_model_problems",
]
