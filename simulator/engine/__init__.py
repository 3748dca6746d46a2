"""The simulation engine: one LangGraph state machine drives every conversation. The only importer of langgraph."""

from __future__ import annotations

from simulator.engine._imports import graph_loaded, import_checkpointer, load_graph

import_checkpointer()  # first: see simulator.engine._imports

from simulator.engine._checkpoint import forget_threads, open_checkpointer  # noqa: E402
from simulator.engine._conversation import TURN_CAP, Conversation, ConversationSetup, StepChecker  # noqa: E402
from simulator.engine._simulate import forget, simulate  # noqa: E402

__all__ = [
    "TURN_CAP",
    "Conversation",
    "ConversationSetup",
    "StepChecker",
    "forget",
    "forget_threads",
    "graph_loaded",
    "load_graph",
    "open_checkpointer",
    "simulate",
]
