"""Settings a suite can set: model per role, pass thresholds and how the judge model is asked."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BeforeValidator, Field

from simulator.models._base import PositiveSeconds, StrictModel
from simulator.models.env_refs import WithEnvReferences


class ModelSettings(StrictModel):
    """How one role (agent, simulated user, judge, voice, transcriber) reaches its model through litellm."""

    model: str | None = Field(
        default=None,
        description="litellm model string such as openai/gpt-4o-mini or ollama/llama3; "
        "unset means the offline default (scripted user, no judge model).",
    )
    temperature: float | None = Field(default=None, ge=0, le=2)
    max_tokens: int | None = Field(default=None, ge=1)
    timeout: PositiveSeconds = Field(default=60.0, description="Seconds one call may take.")
    max_retries: int = Field(default=3, ge=0, le=20, description="Retries on rate limits, server errors, timeouts.")
    concurrency: int | None = Field(
        default=None,
        ge=1,
        le=1000,
        description="Calls of this role in flight at once; unset means the run's concurrency (--concurrency), "
        "so each conversation in flight can have a call of this role in flight.",
    )
    api_base: WithEnvReferences | None = Field(
        default=None,
        description="Base URL for self-hosted or proxy endpoints; ${VAR} and ${VAR:-default} are filled in from the "
        "environment when the model is called (the stored run keeps them as written).",
    )
    api_key_env: str | None = Field(
        default=None, description="Environment variable that holds the API key (keys never go in YAML)."
    )
    backend: Literal["auto", "litellm", "openai"] = Field(
        default="auto",
        description="What sends the requests: auto (the openai SDK for openai/... models, litellm for every other "
        "provider; fake/... models are the offline fake), litellm, or openai (any OpenAI-compatible endpoint).",
    )


def _string_to_settings(value: Any) -> Any:
    return {"model": value} if isinstance(value, str) else value


#: A role's settings, or just its model string.
RoleSettings = Annotated[
    ModelSettings, BeforeValidator(_string_to_settings, json_schema_input_type=str | ModelSettings)
]


def _unset(settings: ModelSettings) -> bool:
    return settings == ModelSettings()


class ModelRoles(StrictModel):
    """Model settings per role. Each role has its own model, concurrency limit and token account."""

    agent: RoleSettings = Field(default_factory=ModelSettings, description="For litellm agents.")
    user: RoleSettings = Field(default_factory=ModelSettings, description="The simulated user.")
    judge: RoleSettings = Field(default_factory=ModelSettings, description="The LLM judge.")
    # Left out of stored data while unset: a suite without speech models hashes and stores as before.
    voice: RoleSettings = Field(
        default_factory=ModelSettings,
        description="Text to speech for voice conversations (the simulated user's turns), a litellm speech model "
        "such as openai/tts-1; unset means the offline default synthesizer.",
        exclude_if=_unset,
    )
    transcriber: RoleSettings = Field(
        default_factory=ModelSettings,
        description="Speech to text for voice conversations (the agent's audio), a litellm transcription model "
        "such as openai/whisper-1 or openai/gpt-4o-transcribe; unset means the offline default recogniser.",
        exclude_if=_unset,
    )


class Thresholds(StrictModel):
    """Pass marks. Set per suite, overridden per case, and per expectation where it has a score."""

    semantic_match: int = Field(default=3, ge=0, le=4, description="Golden turn message similarity, 0-4.")
    tool_call_correctness: float = Field(default=1.0, ge=0, le=1, description="Share of expected arguments matched.")
    reference_answer: int = Field(default=70, ge=0, le=100, description="Reference-answer judge score, 0-100.")
    fail_on_hallucination: bool = Field(default=True, description="A hallucinated claim fails the case.")


class JudgingSettings(StrictModel):
    """How the judge model is asked about a conversation."""

    batch: bool = Field(
        default=True,
        description="Ask the per-turn hallucination question of a conversation in one request that returns a "
        "verdict per turn, with the simulated user's invented-fact question in the same request; false sends one "
        "request per agent turn, and the user's question on its own after a failure it could have caused. The "
        "stored scores are the same either way.",
    )
