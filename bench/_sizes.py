"""The fake server's size log (``bench/_server.py --sizes``): every request's prompt and completion in characters
and tokens, by role and conversation, and the share of each prompt a provider's prompt cache could serve.

The prompt as the provider sees it: the request's ``messages``, each as ``<role>\\n<content>\\n`` (content parts
joined, an assistant's ``tool_calls`` as sorted JSON after its text), in order. The request's ``response_format``,
``tools`` and ``tool_choice`` are counted apart (``format_chars`` / ``format_tokens``, sorted JSON): they are billed
as prompt tokens, but where a provider puts them in the cached prefix is its own business.

Tokens: tiktoken's ``o200k_base`` (else ``cl100k_base``), loaded offline from the tokenizer files litellm ships
(``TIKTOKEN_CACHE_DIR`` is pointed at them unless set); where neither loads, characters / 4 (rounded up), and the
log says ``tokenizer: chars/4``.

Conversations: the server marks every reply to the user and agent roles with `` [cN]`` (N: the conversation's
number); a request whose body holds a marker belongs to that conversation, one without starts a new one. The
conversation's text is in every later request of it (the user's next turn, the agent's, the judge's), whatever
the tool, its prompts and its concurrency. The markers are taken out of prompts and completions before they are
measured, so they cost nothing. A request that quotes none of its conversation's text (a tool that asks its judge
about extracted statements only) starts a conversation of its own: it can reuse nothing, which under-counts.

The cacheable prefix of a request: the longest prefix of its prompt equal to the prompt of an earlier request
(by arrival) of the same conversation and role, in characters and in tokens (the longest common prefix of the
token ids). Providers cache in blocks (OpenAI: prompts of 1,024 tokens or more, the prefix in 128-token steps from
1,024; Anthropic: from its breakpoints), and a request sent while the earlier one is in flight finds nothing
cached yet, so the plain figure is an upper bound; ``cacheable_tokens_blocks`` counts only prefixes of at least
1,024 tokens, rounded down to 128-token blocks. ``cacheable_any_tokens`` (and ``_blocks``) is the longest prefix
shared with an earlier request of the same role in any conversation: what a provider's cache, keyed by the prefix,
can serve across conversations (the instructions every conversation opens with).
"""

from __future__ import annotations

import asyncio
import bisect
import importlib.util
import json
import os
import re
import threading
import time
from collections.abc import Callable, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path
from typing import Any

CACHE_MIN_TOKENS = 1024
CACHE_BLOCK_TOKENS = 128

_CONVERSATION = re.compile(r" ?\[c(\d+)\]")
# Roles whose replies carry the conversation's text to the next request (the judge's are read by no one).
MARKED_ROLES = frozenset({"user", "agent"})


def cached_blocks(tokens: int) -> int:
    """What an OpenAI-style cache serves of a ``tokens``-long identical prefix: none under 1,024 tokens, else
    whole 128-token blocks."""
    return 0 if tokens < CACHE_MIN_TOKENS else tokens // CACHE_BLOCK_TOKENS * CACHE_BLOCK_TOKENS


def common_prefix(a: Sequence[Any], b: Sequence[Any]) -> int:
    """The length of the longest common prefix of two strings or sequences."""
    limit = min(len(a), len(b))
    if isinstance(a, str) and isinstance(b, str):  # halve the range: C comparisons instead of a Python loop
        low, high = 0, limit
        while low < high:
            middle = (low + high + 1) // 2
            if a[:middle] == b[:middle]:
                low = middle
            else:
                high = middle - 1
        return low
    for index in range(limit):
        if a[index] != b[index]:
            return index
    return limit


def cacheable(prompt: str, ids: Sequence[int], earlier: Sequence[tuple[str, Sequence[int]]]) -> tuple[int, int]:
    """``(characters, tokens)`` of ``prompt`` (token ids ``ids``) that are a prefix of an earlier request's prompt
    (``earlier``: its prompts and their token ids): the longest over the earlier ones, each counted on its own."""
    chars = max((common_prefix(prompt, text) for text, _ in earlier), default=0)
    tokens = max((common_prefix(ids, other) for _, other in earlier), default=0)
    return chars, tokens


def shared_anywhere(ids: Sequence[int], ordered: list[tuple[int, ...]]) -> int:
    """The longest prefix of ``ids`` that an earlier prompt of the same role begins with, in any conversation (a
    provider's cache is keyed by the prefix, not by the conversation: the instructions every conversation opens
    with are served to all but the first); ``ordered`` holds the earlier prompts' token ids, sorted, and gets
    ``ids`` added. The longest common prefix with any of a sorted set is the one with a neighbour."""
    key = tuple(ids)
    place = bisect.bisect_left(ordered, key)
    best = max((common_prefix(key, ordered[at]) for at in (place - 1, place) if 0 <= at < len(ordered)), default=0)
    ordered.insert(place, key)
    return best


def _text(content: Any) -> str:
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(
            str(part.get("text", "")) if isinstance(part, dict) else str(part) for part in content
        )  # fmt: skip
    return json.dumps(content, sort_keys=True)


def serialise_prompt(messages: Any) -> str:
    """The request's messages as one text, in order: ``<role>\\n<content>\\n`` each (see the module docstring)."""
    parts = []
    for message in messages if isinstance(messages, list) else []:
        if not isinstance(message, dict):
            continue
        text = _text(message.get("content"))
        if message.get("tool_calls"):
            text += json.dumps(message["tool_calls"], sort_keys=True)
        parts.append(f"<{message.get('role', '')}>\n{text}\n")
    return "".join(parts)


def completion_text(message: dict[str, Any]) -> str:
    """The reply's text as billed: its content, then its ``tool_calls`` as sorted JSON."""
    calls = message.get("tool_calls")
    return _text(message.get("content")) + (json.dumps(calls, sort_keys=True) if calls else "")


def serialise_format(body: dict[str, Any]) -> str:
    """The request's ``response_format``, ``tools`` and ``tool_choice`` as sorted JSON ('' when it has none)."""
    extra = {key: body[key] for key in ("response_format", "tools", "tool_choice") if body.get(key)}
    return json.dumps(extra, sort_keys=True) if extra else ""


def unmarked(text: str) -> str:
    """``text`` without the server's conversation markers."""
    return _CONVERSATION.sub("", text)


def conversation_in(body: str) -> int | None:
    """The conversation a request's body names (its most frequent marker), or None."""
    found = [int(n) for n in _CONVERSATION.findall(body)]
    return max(set(found), key=found.count) if found else None


def _default_tokenizer_dir() -> Path | None:
    spec = importlib.util.find_spec("litellm")  # finds the package without importing it (a slow import)
    if spec is None or not spec.submodule_search_locations:
        return None
    return Path(next(iter(spec.submodule_search_locations))) / "litellm_core_utils" / "tokenizers"


class Tokenizer:
    """Token ids of a text: tiktoken's ``o200k_base`` or ``cl100k_base`` offline, else one id per 4 characters."""

    def __init__(self, use_tiktoken: bool = True) -> None:
        self.name = "chars/4"
        self._encode: Callable[[str], list[int]] | None = None
        if not use_tiktoken:
            return
        folder = _default_tokenizer_dir()
        if folder is not None and folder.is_dir():
            os.environ.setdefault("TIKTOKEN_CACHE_DIR", str(folder))
        try:
            import tiktoken
        except ImportError:
            return
        for name in ("o200k_base", "cl100k_base"):
            try:
                encoding = tiktoken.get_encoding(name)
            except Exception:  # no network here: a file missing from the cache fails to download
                continue
            self.name, self._encode = name, encoding.encode_ordinary
            return

    def ids(self, text: str) -> list[int]:
        """The token ids of ``text`` (with characters / 4: one stand-in id per 4-character chunk)."""
        if self._encode is not None:
            return self._encode(text)
        return [hash(text[i : i + 4]) for i in range(0, len(text), 4)]


class SizeLog:
    """The requests' sizes, measured in a worker thread after each reply is sent (so ``--latency`` holds), and
    handed out and emptied by :meth:`drain`."""

    def __init__(self, tokenizer: Tokenizer | None = None) -> None:
        self._tokenizer = tokenizer
        self._ready = threading.Event()
        self._pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="sizes")
        self._pool.submit(self._load)  # tiktoken's files load while the first requests are answered
        self._pending: list[Future[dict[str, Any]]] = []
        self._conversations = 0
        self.tokenize_s = 0.0

    def _load(self) -> None:
        if self._tokenizer is None:
            self._tokenizer = Tokenizer()
        self._ready.set()

    def conversation(self, body: str) -> int:
        """The conversation a request's body names, or a new one's number."""
        found = conversation_in(body)
        if found is None:
            self._conversations += 1
            found = self._conversations
        return found

    def record(
        self,
        serial: int,
        role: str,
        *,
        schema: str | None,
        conversation: int,
        body: dict[str, Any],
        reply: dict[str, Any],
    ) -> None:
        """Measure one request and its reply, the assistant message (in the worker thread)."""
        entry = {"serial": serial, "role": role, "schema": schema, "conversation": conversation}
        self._pending.append(self._pool.submit(self._measure, entry, body, reply))

    def _measure(self, entry: dict[str, Any], body: dict[str, Any], message: dict[str, Any]) -> dict[str, Any]:
        began = time.perf_counter()
        assert self._tokenizer is not None
        prompt = unmarked(serialise_prompt(body.get("messages")))
        form = serialise_format(body)
        reply = unmarked(completion_text(message))
        ids = self._tokenizer.ids(prompt)
        entry.update({
            "prompt": prompt, "prompt_chars": len(prompt), "prompt_tokens": len(ids),
            "format_chars": len(form), "format_tokens": len(self._tokenizer.ids(form)) if form else 0,
            "completion_chars": len(reply), "completion_tokens": len(self._tokenizer.ids(reply)) if reply else 0,
            "_ids": ids,
        })  # fmt: skip
        self.tokenize_s += time.perf_counter() - began
        return entry

    async def drain(self) -> dict[str, Any]:
        """Every request measured since the last call, in arrival order, with its cacheable prefix (see the module
        docstring), the tokenizer's name and the seconds spent measuring; empties the log."""
        pending, self._pending = self._pending, []
        entries = [await asyncio.wrap_future(future) for future in pending]
        await asyncio.wrap_future(self._pool.submit(self._ready.wait))
        entries.sort(key=lambda entry: entry["serial"])
        earlier: dict[tuple[int, str], list[tuple[str, list[int]]]] = {}
        anywhere: dict[str, list[tuple[int, ...]]] = {}
        for entry in entries:
            ids = entry.pop("_ids")
            seen = earlier.setdefault((entry["conversation"], entry["role"]), [])
            chars, tokens = cacheable(entry["prompt"], ids, seen)
            entry.update(cacheable_chars=chars, cacheable_tokens=tokens, cacheable_tokens_blocks=cached_blocks(tokens))
            seen.append((entry["prompt"], ids))
            shared = shared_anywhere(ids, anywhere.setdefault(entry["role"], []))
            entry.update(cacheable_any_tokens=shared, cacheable_any_tokens_blocks=cached_blocks(shared))
        assert self._tokenizer is not None
        answer = {"tokenizer": self._tokenizer.name, "tokenize_s": self.tokenize_s, "requests": entries}
        self.tokenize_s = 0.0
        return answer
