"""LangGraph's import, with pydantic's schema building left for later in the models it brings along.

``import langgraph.graph`` imports langchain_core and langsmith, which define ~490 pydantic models at import
(tracing runs, feedback, datasets, ...). Building their validators was ~10% of the import's CPU (40-50 ms of
0.42 s measured on these machines), before every conversation's first request, and a run uses almost none of
them. While LangGraph is imported here, new models get pydantic's own ``defer_build`` setting: a model's
validator is built the first time it validates or makes a schema, as pydantic documents. Models defined after
(Simulator's own, an application's) are not touched, nor is anything when LangGraph is imported already or the
setting is in use by someone else.
"""

from __future__ import annotations

import sys


def import_langgraph() -> None:
    """Import the LangGraph modules the engine uses, their pydantic models built on first use (see above)."""
    if "langgraph.graph" in sys.modules:
        return
    from pydantic import BaseModel

    config = BaseModel.model_config
    if "defer_build" in config:  # someone else's setting: left alone
        _import()
        return
    config["defer_build"] = True
    try:
        _import()
    finally:
        del config["defer_build"]


def _import() -> None:
    import langgraph.checkpoint.sqlite
    import langgraph.graph  # noqa: F401
