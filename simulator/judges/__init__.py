"""Judges: deterministic checks and the LLM judge, as scorers registered by name. Verdicts carry their evidence."""

from simulator.judges import scorers as _builtin_scorers  # noqa: F401  (the built-in scorers register on import)
from simulator.judges._gather import gather_in_order
from simulator.judges._registry import (
    RegisteredScorer,
    Scorer,
    ScoringInput,
    plugin_scorer,
    registered_scorers,
    scorer,
)
from simulator.judges.checks import (
    ArgumentComparison,
    ConversationView,
    check_expectation,
    check_keywords,
    check_tool_call,
    compare_arguments,
)
from simulator.judges.keywords import find_term, normalize
from simulator.judges.rendering import render_conversation
from simulator.judges.step import StepJudge

__all__ = [
    "ArgumentComparison",
    "ConversationView",
    "RegisteredScorer",
    "Scorer",
    "ScoringInput",
    "StepJudge",
    "check_expectation",
    "check_keywords",
    "check_tool_call",
    "compare_arguments",
    "find_term",
    "gather_in_order",
    "normalize",
    "plugin_scorer",
    "registered_scorers",
    "render_conversation",
    "scorer",
]
