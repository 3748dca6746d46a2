"""The judge questions of one conversation, asked at once and answered in the order they were asked."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Iterable
from typing import TypeVar

__all__ = ["gather_in_order"]

T = TypeVar("T")


async def gather_in_order(awaitables: Iterable[Awaitable[T]]) -> list[T]:
    """Await ``awaitables`` concurrently; their results in the order given.

    The judge questions of one conversation do not depend on each other, so they are in flight at once (the
    judge role's concurrency limit still holds). The first exception propagates as it is, as it would have
    from one call after another; the others still running are cancelled first, so none outlives the scoring
    that started it.
    """
    tasks = [asyncio.ensure_future(awaitable) for awaitable in awaitables]
    try:
        return list(await asyncio.gather(*tasks))
    except BaseException:
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        raise
