"""Judges: deterministic checks and the LLM judge. Verdicts always carry their evidence."""

from simulator.judges.checks import (
    ArgumentComparison,
    ConversationView,
    check_expectation,
    check_keywords,
    check_tool_call,
    compare_arguments,
)
from simulator.judges.keywords import find_term, normalize
from simulator.judges.step import StepJudge, render_conversation

__all__ = [
    "ArgumentComparison",
    "ConversationView",
    "StepJudge",
    "check_expectation",
    "check_keywords",
    "check_tool_call",
    "compare_arguments",
    "find_term",
    "normalize",
    "render_conversation",
]
