"""Shared test setup. Tests never reach a model provider: litellm runs in offline mode."""

import os

os.environ.setdefault("LITELLM_OFFLINE_MODE", "true")
