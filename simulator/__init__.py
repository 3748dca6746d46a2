"""Simulator: an offline-first evaluator for conversational agents."""

__version__ = "0.1.0"

__all__ = ["__version__"]
