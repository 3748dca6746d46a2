"""LangGraph's import: its checkpointer at once, the graph itself in a thread while the first turns run.

``import langgraph.graph`` imports langchain_core's runnables and tracers and langsmith: most of the engine's
import, before which no conversation could start. The nodes of the conversation graph are plain functions, and a
conversation's first turn runs before its graph is built (``simulator.engine._simulate``), so a run starts its
conversations at once: :func:`load_graph` imports LangGraph in a thread of its own while they wait for their first
replies, and :func:`graph_loaded` waits for it when the first graph is built. The checkpointer's part of LangGraph
(``langgraph.checkpoint``) is imported with the engine: a run opens its checkpoints before its conversations start.

These imports bring hundreds of pydantic models (tracing runs, feedback, datasets, ...) that a run almost never
uses, and building their validators is a good part of the import's CPU. While LangGraph is imported here, new models
get pydantic's own ``defer_build`` setting: a model's validator is built the first time it validates or makes
a schema, as pydantic documents. Nothing is changed when the setting is in use by someone else.
"""

from __future__ import annotations

import asyncio
import atexit
import sys
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager

_LOCK = threading.Lock()
_LOADED = threading.Event()
_LOADERS: list[threading.Thread] = []  # the one thread importing LangGraph's graph, once started
_ERROR: list[BaseException] = []


def import_checkpointer() -> None:
    """Import the part of LangGraph the checkpointer needs (with the engine)."""
    if "langgraph.checkpoint.sqlite" in sys.modules:
        return
    with _models_built_on_first_use():
        import langgraph.checkpoint.sqlite  # noqa: F401


def load_graph(on_loaded: Callable[[], None] | None = None) -> None:
    """Start importing LangGraph's graph in a thread of its own, unless it is imported or being imported;
    ``on_loaded`` is called in that thread once it is (the runner freezes the new objects out of the garbage
    collector, as it did the ones alive when the run started)."""
    with _LOCK:
        if _LOADED.is_set() or _LOADERS:
            return
        if "langgraph.graph" in sys.modules and "langgraph.types" in sys.modules:
            _LOADED.set()
            return
        loader = threading.Thread(target=_load, args=(on_loaded,), name="simulator-langgraph-import", daemon=True)
        _LOADERS.append(loader)
        loader.start()
        atexit.register(_finish_loading)


def _finish_loading() -> None:
    """At exit, let the import finish first (a run of one short conversation can end before it has). A daemon
    thread stopped half-way through an import keeps the interpreter's import lock, and the first import during the
    interpreter's shutdown (litellm imports in its clients' ``__del__``) then waited for it forever: a hang
    seen in 2 of 6 such runs."""
    for loader in _LOADERS:
        loader.join(timeout=60)


def _load(on_loaded: Callable[[], None] | None) -> None:
    try:
        with _models_built_on_first_use():
            import langgraph.graph
            import langgraph.types  # noqa: F401
        if on_loaded is not None:
            on_loaded()
    except BaseException as exc:  # raised again, as it was, by the import in graph_loaded
        _ERROR.append(exc)
    finally:
        _LOADED.set()


async def graph_loaded() -> None:
    """Return once LangGraph's graph is imported: at once when it is, else after :func:`load_graph`'s thread
    (started here if nobody did) is done, the event loop running meanwhile. A failed import raises here."""
    if not _LOADED.is_set():
        load_graph()
        while not _LOADED.is_set():
            await asyncio.sleep(0.002)
    if _ERROR:
        import langgraph.graph  # noqa: F401  # the import's own error, raised here as it would have been


@contextmanager
def _models_built_on_first_use() -> Iterator[None]:
    from pydantic import BaseModel

    config = BaseModel.model_config
    if "defer_build" in config:  # someone else's setting: left alone
        yield
        return
    config["defer_build"] = True
    try:
        yield
    finally:
        config.pop("defer_build", None)
