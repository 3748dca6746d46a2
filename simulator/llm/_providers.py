"""What can be checked about a role's model before any request: that its provider prefix is one litellm (or
Simulator itself) knows, with a did-you-mean for a typo, and which environment variable holds its key.

A model on a local ``api_base`` (this machine or a private network: vLLM, Ollama, LM Studio, a proxy beside the
run) needs no key: such servers mostly ignore it, and demanding ``OPENAI_API_KEY`` for them only made people
export a fake one.
"""

from __future__ import annotations

import difflib
from collections.abc import Mapping

from simulator.llm._fake import FAKE_PROVIDER
from simulator.llm._litellm import provider_names
from simulator.llm._openai import OPENAI_PREFIX, is_local_base, price_table
from simulator.models.env_refs import UnsetVariable, expand
from simulator.models.run import MODEL_ROLES
from simulator.models.settings import ModelSettings
from simulator.models.suite import Suite

__all__ = ["key_variables", "missing_key", "provider_problem", "suite_model_problems"]

#: Prefixes Simulator answers itself, whatever litellm's list holds.
_OWN_PROVIDERS = frozenset({FAKE_PROVIDER, OPENAI_PREFIX.rstrip("/")})

#: Each provider's standard key variables, the first the one to name; any one set is enough. Providers that sign
#: in otherwise (AWS and Google credentials, a local server) are not listed and are not checked.
_KEY_VARIABLES: Mapping[str, tuple[str, ...]] = {
    "openai": ("OPENAI_API_KEY",),
    "text-completion-openai": ("OPENAI_API_KEY",),
    "anthropic": ("ANTHROPIC_API_KEY",),
    "anthropic_text": ("ANTHROPIC_API_KEY",),
    # Azure also signs in with an Entra ID token or a service principal.
    "azure": ("AZURE_API_KEY", "AZURE_OPENAI_API_KEY", "AZURE_AD_TOKEN", "AZURE_CLIENT_SECRET"),
    "azure_text": ("AZURE_API_KEY", "AZURE_OPENAI_API_KEY", "AZURE_AD_TOKEN", "AZURE_CLIENT_SECRET"),
    "azure_ai": ("AZURE_AI_API_KEY",),
    "gemini": ("GEMINI_API_KEY", "GOOGLE_API_KEY"),
    "mistral": ("MISTRAL_API_KEY",),
    "codestral": ("CODESTRAL_API_KEY",),
    "groq": ("GROQ_API_KEY",),
    "cohere": ("COHERE_API_KEY",),
    "cohere_chat": ("COHERE_API_KEY",),
    "together_ai": ("TOGETHERAI_API_KEY", "TOGETHER_API_KEY", "TOGETHER_AI_API_KEY"),
    "deepseek": ("DEEPSEEK_API_KEY",),
    "openrouter": ("OPENROUTER_API_KEY", "OR_API_KEY"),
    "xai": ("XAI_API_KEY",),
    "fireworks_ai": ("FIREWORKS_AI_API_KEY", "FIREWORKS_API_KEY", "FIREWORKSAI_API_KEY"),
    "perplexity": ("PERPLEXITYAI_API_KEY", "PERPLEXITY_API_KEY"),
    "deepinfra": ("DEEPINFRA_API_KEY",),
    "cerebras": ("CEREBRAS_API_KEY",),
    "ai21": ("AI21_API_KEY",),
    "ai21_chat": ("AI21_API_KEY",),
    "anyscale": ("ANYSCALE_API_KEY",),
    "nvidia_nim": ("NVIDIA_NIM_API_KEY",),
    "sambanova": ("SAMBANOVA_API_KEY",),
    "moonshot": ("MOONSHOT_API_KEY",),
    "huggingface": ("HF_TOKEN", "HUGGINGFACE_API_KEY"),
}


def _provider(model: str) -> str | None:
    prefix, slash, _ = model.partition("/")
    return prefix if slash else None


def provider_problem(model: str, backend: str = "auto") -> str | None:
    """What is wrong with ``model``'s provider prefix, or None: the prefix (before the first ``/``) must be one of
    litellm's providers or Simulator's own (``fake``, ``openai``). A model with no prefix is litellm's to infer;
    ``backend: openai`` sends any model name to its endpoint as it is; a model litellm prices under its full name
    is known to it."""
    provider = _provider(model)
    if provider is None or backend == "openai" or provider in _OWN_PROVIDERS:
        return None
    known = provider_names()
    if not known or provider in known or model in price_table():
        return None  # without litellm nothing can be said; the call would say it
    close = difflib.get_close_matches(provider.lower(), sorted(known | _OWN_PROVIDERS), n=1, cutoff=0.6)
    hint = f"did you mean {close[0]!r} ({close[0]}/{model.partition('/')[2]})?" if close else ""
    return (
        f"{model!r}: unknown provider {provider!r}; "
        + (hint or "write the model as provider/model, e.g. openai/gpt-4o-mini")
        + " (litellm's providers: https://docs.litellm.ai/docs/providers)"
    )


def key_variables(model: str) -> tuple[str, ...]:
    """The standard environment variables that hold the key of ``model``'s provider (the first is the one to
    name), empty when the provider signs in otherwise or is unknown, or the model has no prefix (litellm infers
    its provider from the name)."""
    provider = _provider(model)
    return _KEY_VARIABLES.get(provider, ()) if provider else ()


def _backend(settings: ModelSettings) -> str:
    if settings.backend != "auto":
        return settings.backend
    return "openai" if (settings.model or "").startswith(OPENAI_PREFIX) else "litellm"


def missing_key(settings: ModelSettings, environ: Mapping[str, str]) -> str | None:
    """The variable to set for ``settings``' model, or None when its key is there (or none is needed): the role's
    ``api_key_env`` when it names one, else the provider's standard variable; nothing for the fake, for a
    provider that signs in otherwise, or for a model on a local ``api_base``."""
    model = settings.model
    if not model or model.startswith(f"{FAKE_PROVIDER}/"):
        return None
    if settings.api_key_env:
        return None if environ.get(settings.api_key_env) else settings.api_key_env
    if is_local_base(_filled_in(settings.api_base, environ)):
        return None
    # The openai backend reads OPENAI_API_KEY whatever the model's name.
    variables = ("OPENAI_API_KEY",) if _backend(settings) == "openai" else key_variables(model)
    if not variables or any(environ.get(variable) for variable in variables):
        return None
    return variables[0]


def _filled_in(api_base: str | None, environ: Mapping[str, str]) -> str | None:
    """``api_base`` with its ``${VAR}`` references filled in (as the request will be sent), or as written when one
    is not set (that is reported on its own, at its place)."""
    if api_base is None:
        return None
    try:
        return expand(api_base, environ)
    except UnsetVariable:
        return api_base


def suite_model_problems(suite: Suite) -> list[tuple[tuple[str, ...], str]]:
    """Every model string a suite file writes whose provider is unknown (:func:`provider_problem`): the place
    (``models.<role>.model``, or ``agent.model`` for a litellm agent) and the message naming the role."""
    found: list[tuple[tuple[str, ...], str]] = []
    for role in MODEL_ROLES:
        settings: ModelSettings = getattr(suite.models, role)
        problem = provider_problem(settings.model, settings.backend) if settings.model else None
        if problem is not None:  # a role written as a bare string is placed at the string
            found.append((("models", role, "model"), f"{role} model {problem}"))
    agent = suite.agent
    own_model = agent.own_model if agent is not None and not isinstance(agent, str) else None
    if own_model is not None:
        problem = provider_problem(own_model, suite.models.agent.backend)
        if problem is not None:
            found.append((("agent", "model"), f"agent model {problem}"))
    return found
