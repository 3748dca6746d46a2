"""Every secret a run is configured with, made known to the redactor before the run writes anything.

The store, the request cache and the conversation checkpoints redact what they write with the secrets the
process knows (:mod:`simulator.safety`). A key read only when its role makes its first call would be unknown to
everything written before that call: a simulated user's cached reply, a checkpoint of the agent's first turn,
that quoted it. So a run registers all of them when it is planned (and when a stored run is resumed, repeated,
replayed or rerun): every model role's ``api_key_env``, an HTTP agent's ``api_key_env`` and ``headers_from_env``
values, the credentials in every ``api_base`` / ``base_url`` URL (with their HTTP Basic forms), and the
environment's secret variables and credential-bearing URLs.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping

from simulator.errors import InputError
from simulator.loading import LoadedSuite
from simulator.models.env_refs import expand
from simulator.models.run import MODEL_ROLES, RunRecord, RunSettings, resolved_models
from simulator.runner._plan import restore
from simulator.safety import register_environment, register_secret, register_url_credentials

__all__ = ["register_record_secrets", "register_run_secrets"]


def register_run_secrets(
    suites: Iterable[LoadedSuite], settings: RunSettings, environ: Mapping[str, str] | None = None
) -> None:
    """Register every secret the suites and settings configure (see the module doc). A variable that is not
    set registers nothing: the check that names it missing is the planner's, or the role's at its call."""
    env = os.environ if environ is None else environ
    register_environment()
    for loaded in suites:
        roles = resolved_models(loaded.suite, settings)
        for role in MODEL_ROLES:
            role_settings = getattr(roles, role)
            if role_settings.api_key_env and env.get(role_settings.api_key_env):
                register_secret(role_settings.api_key_env, env[role_settings.api_key_env])
            if role_settings.api_base:
                _register_url(f"models.{role}.api_base", role_settings.api_base, env)
        agent = loaded.agent
        if agent is None:
            continue
        for where, url in agent.urls():
            _register_url(".".join(("agent", *map(str, where))), url, env)
        for _, variable, _ in agent.environment():  # the agent's key and headers
            if env.get(variable):
                register_secret(variable, env[variable])


def _register_url(name: str, url: str, env: Mapping[str, str]) -> None:
    """The credentials of ``url`` as the client will send them: with its ``${VAR}`` references filled in."""
    try:
        filled = expand(url, env)
    except InputError:
        return  # a variable that is not set: the planner's check names it
    register_url_credentials(name, filled)


def register_record_secrets(record: RunRecord, settings: RunSettings | None = None) -> None:
    """:func:`register_run_secrets` for a stored run about to run again (``settings``: those it runs with, when
    they differ from the stored ones)."""
    register_run_secrets([restore(snapshot) for snapshot in record.snapshot], settings or record.settings)
