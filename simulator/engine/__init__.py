"""The simulation engine: one LangGraph state machine drives every conversation. The only importer of langgraph."""

from __future__ import annotations

from simulator.engine._checkpoint import forget_threads, open_checkpointer
from simulator.engine._conversation import TURN_CAP, Conversation, ConversationSetup, StepChecker
from simulator.engine._simulate import forget, simulate

__all__ = [
    "TURN_CAP",
    "Conversation",
    "ConversationSetup",
    "StepChecker",
    "forget",
    "forget_threads",
    "open_checkpointer",
    "simulate",
]
