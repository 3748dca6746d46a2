"""An asyncio event loop in a daemon thread, for the local servers the tests start (stub models, fault server)."""

from __future__ import annotations

import asyncio
import contextlib
import threading
from collections.abc import Awaitable, Callable, Iterator
from typing import Any, Protocol, TypeVar


class LoopThread:
    """Runs ``start`` on a new loop in a daemon thread and returns its result; :meth:`stop` runs ``stop`` there,
    then ends the loop and the thread. Every wait is bounded, so a broken server cannot hang a test."""

    def __init__(self, name: str) -> None:
        self.name = name
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None

    def start(self, start: Callable[[], Awaitable[Any]], timeout: float = 10) -> Any:
        loop = asyncio.new_event_loop()
        self._loop = loop
        self._thread = threading.Thread(target=self._serve, args=(loop,), name=self.name, daemon=True)
        self._thread.start()
        return asyncio.run_coroutine_threadsafe(_awaited(start), loop).result(timeout=timeout)

    def stop(self, stop: Callable[[], Awaitable[Any]], timeout: float = 15) -> None:
        loop, thread = self._loop, self._thread
        if loop is None or thread is None:
            return
        with contextlib.suppress(Exception):
            asyncio.run_coroutine_threadsafe(_awaited(stop), loop).result(timeout=timeout)
        loop.call_soon_threadsafe(loop.stop)
        thread.join(timeout=10)
        loop.close()
        self._loop = self._thread = None

    @staticmethod
    def _serve(loop: asyncio.AbstractEventLoop) -> None:
        asyncio.set_event_loop(loop)
        loop.run_forever()


async def _awaited(make: Callable[[], Awaitable[Any]]) -> Any:
    return await make()


@contextlib.contextmanager
def serving_chat(chat: Callable[[Any], Awaitable[Any]], name: str) -> Iterator[str]:
    """An OpenAI-compatible model on 127.0.0.1 while the block runs: ``POST /v1/chat/completions`` answered by
    ``chat`` (an aiohttp handler) on a :class:`LoopThread`; gives its base URL (``.../v1``)."""
    from aiohttp import web

    runners: list[web.AppRunner] = []

    async def start() -> str:
        app = web.Application()
        app.router.add_post("/v1/chat/completions", chat)
        runner = web.AppRunner(app, access_log=None)
        await runner.setup()
        await web.TCPSite(runner, "127.0.0.1", 0).start()
        runners.append(runner)
        return f"http://127.0.0.1:{runner.addresses[0][1]}/v1"

    async def stop() -> None:
        for runner in runners:
            await runner.cleanup()

    thread = LoopThread(name)
    try:
        yield thread.start(start)
    finally:
        thread.stop(stop)


class ServedModel(Protocol):
    """A test's model server: an aiohttp ``chat`` handler, and the ``url`` it is served at (filled in)."""

    url: str

    async def chat(self, request: Any) -> Any: ...


Served = TypeVar("Served", bound=ServedModel)


@contextlib.contextmanager
def served(model: Served, name: str) -> Iterator[Served]:
    """``model`` served by :func:`serving_chat` while the block runs, its ``url`` set."""
    with serving_chat(model.chat, name) as url:
        model.url = url
        yield model


def user_turn_completion(model: str, serial: int) -> dict[str, Any]:
    """An OpenAI chat completion whose content is a simulated user's move (asking for order ORD-10042)."""
    content = '{"message": "Where is order ORD-10042?", "done": false, "reason": ""}'
    return {
        "id": f"c{serial}",
        "object": "chat.completion",
        "created": 0,
        "model": model,
        "choices": [{"index": 0, "finish_reason": "stop", "message": {"role": "assistant", "content": content}}],
        "usage": {"prompt_tokens": 20, "completion_tokens": 8, "total_tokens": 28},
    }
