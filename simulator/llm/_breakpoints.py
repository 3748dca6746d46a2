"""Where a request asks the provider to cache its prompt: Anthropic's cache breakpoints.

OpenAI caches a prompt's prefix by itself; Anthropic caches only up to a block marked
``cache_control: {"type": "ephemeral"}`` (litellm passes the mark on a message's content block through to it).
The simulated user's and the judge's requests open with their instructions as system message(s), which stay the
same for every request of a conversation (and across conversations of a case), so that is where the mark goes:
on the last block of the leading system message(s). Everything after it (the conversation, the question of the
turn) changes from request to request and is not marked.

The mark is added by the litellm backend when it sends the request, after the request cache's key was taken: the
key, the recording and the request a fake model sees are the same with or without it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from simulator.llm._types import Role

__all__ = ["ANTHROPIC_PREFIX", "EPHEMERAL", "with_cache_breakpoint"]

#: The model-string prefix of litellm's Anthropic provider: the only one given breakpoints.
ANTHROPIC_PREFIX = "anthropic/"

#: The mark Anthropic caches a prompt up to (a five-minute cache).
EPHEMERAL: Mapping[str, str] = {"type": "ephemeral"}

# The roles whose requests Simulator writes: the agent under test's requests are sent as its configuration says.
_MARKED_ROLES = frozenset({Role.USER, Role.JUDGE})


def with_cache_breakpoint(model: str, role: Role, messages: Sequence[Mapping[str, Any]]) -> list[Mapping[str, Any]]:
    """``messages`` with a cache breakpoint on the stable prefix, where one belongs; else ``messages`` unchanged.

    Only for an Anthropic model (``anthropic/...``) asked by the simulated user or the judge; only when the
    request opens with system message(s) (its instructions: a request that is one rendered prompt changes as a
    whole with the conversation, and caching it would only cost the write); never when the caller already placed
    a ``cache_control`` anywhere. The mark goes on the last content block of the last leading system message (a
    text content becomes one text block); the messages given are not changed.
    """
    if role not in _MARKED_ROLES or not model.startswith(ANTHROPIC_PREFIX):
        return list(messages)
    leading = 0
    while leading < len(messages) and messages[leading].get("role") == "system":
        leading += 1
    if leading == 0 or any(_has_mark(message) for message in messages):
        return list(messages)
    last = messages[leading - 1]
    content = last.get("content")
    if isinstance(content, str) and content:
        blocks: list[Any] = [{"type": "text", "text": content, "cache_control": dict(EPHEMERAL)}]
    elif isinstance(content, list) and content and isinstance(content[-1], Mapping):
        blocks = [*content[:-1], {**content[-1], "cache_control": dict(EPHEMERAL)}]
    else:
        return list(messages)  # nothing a mark can be put on (an empty prompt)
    return [*messages[: leading - 1], {**last, "content": blocks}, *messages[leading:]]


def _has_mark(message: Mapping[str, Any]) -> bool:
    if "cache_control" in message:
        return True
    content = message.get("content")
    blocks = content if isinstance(content, list) else []
    return any(isinstance(block, Mapping) and "cache_control" in block for block in blocks)
