"""The seam between the client and whatever answers a request: a small protocol every backend implements.

The client owns everything that must behave the same whoever answers (roles, the request cache, concurrency
limits, the whole-call timeout, retries and backoff, accounting, structured output, error messages). A backend
only sends one request and says what its own exceptions mean.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Protocol

from simulator.llm._retry import Failure
from simulator.llm._types import Completion, Role

__all__ = ["Backend"]


class Backend(Protocol):
    """Answers model requests for the client.

    ``request`` is the client's request in litellm's keyword form (``model``, ``messages``, ``tools``,
    ``timeout``, ``temperature``, ``max_tokens``, ``api_key``, ``api_base``, ``response_format`` and any other
    parameter the caller passed); ``role`` is the role that sends it. The reply is one :class:`Completion` whose
    ``usage`` covers this call (``cost`` ``None`` when the price is unknown); ``model`` is the request's model.
    """

    async def complete(self, request: Mapping[str, Any], *, role: Role) -> Completion:
        """Send one request and return the reply; raise the backend's own exception on failure."""
        ...

    def classify(self, exc: Exception) -> Failure | None:
        """What a failed :meth:`complete` means to the client: a :class:`Failure` (retried or not), or ``None``
        for an exception that is not a provider failure (a bug: the client lets it surface)."""
        ...
