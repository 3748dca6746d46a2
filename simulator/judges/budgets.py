"""Budgets as checks: each figure a case's budgets set (``simulator.models.budgets``) is one required score of
metric ``budget``, decided from the transcript alone.

A figure within its budget is ``met``, one over it ``not_met``, the reason naming the figure and the budget
("turn 3: the agent took 2.4 s, the budget is 2 s"). A figure the run could not measure (tokens or cost of an
agent that reports no usage, the cost of a model litellm cannot price) is ``unsure``: it is never passed
silently, and it is not the agent's failure either.
"""

from __future__ import annotations

from simulator.models.budgets import Budgets
from simulator.models.scores import Score, ScoreVerdict
from simulator.models.transcript import Transcript

__all__ = ["budget_scores"]

METRIC = "budget"


def budget_scores(transcript: Transcript, budgets: Budgets | None) -> list[Score]:
    """One score per figure ``budgets`` sets, in the order the figures are declared; none without budgets."""
    if budgets is None:
        return []
    scores: list[Score] = []
    if budgets.turn_seconds is not None:
        scores.append(_turn_latency(transcript, budgets.turn_seconds))
    if budgets.conversation_seconds is not None:
        scores.append(_conversation_latency(transcript, budgets.conversation_seconds))
    if budgets.tokens is not None:
        scores.append(_tokens(transcript, budgets.tokens))
    if budgets.cost is not None:
        scores.append(_cost(transcript, budgets.cost))
    if budgets.turns is not None:
        scores.append(_turns(transcript, budgets.turns))
    return scores


def _score(name: str, verdict: ScoreVerdict, reason: str) -> Score:
    return Score(metric=METRIC, check=f"budget: {name}", source="deterministic", verdict=verdict, reason=reason)


def _seconds(value: float) -> str:
    return f"{value:.1f} s" if value < 10 else f"{value:.0f} s"


def _turn_latency(transcript: Transcript, budget: float) -> Score:
    by_turn: dict[int, float] = {}
    for reply in transcript.agent_events():
        by_turn[reply.turn] = by_turn.get(reply.turn, 0.0) + reply.latency_ms / 1000
    if not by_turn:
        return _score("turn_seconds", "n/a", "the agent never replied: no turn to time")
    over = [(turn, seconds) for turn, seconds in sorted(by_turn.items()) if seconds > budget]
    if over:
        reason = "; ".join(
            f"turn {turn}: the agent took {_seconds(seconds)}, the budget is {budget:g} s" for turn, seconds in over
        )
        return _score("turn_seconds", "not_met", reason)
    slowest, seconds = max(by_turn.items(), key=lambda item: item[1])
    return _score(
        "turn_seconds",
        "met",
        f"every reply within {budget:g} s (the slowest, turn {slowest}, took {_seconds(seconds)})",
    )


def _conversation_latency(transcript: Transcript, budget: float) -> Score:
    seconds = sum(reply.latency_ms for reply in transcript.agent_events()) / 1000
    verdict: ScoreVerdict = "met" if seconds <= budget else "not_met"
    return _score(
        "conversation_seconds",
        verdict,
        f"the agent took {_seconds(seconds)} over the conversation, the budget is {budget:g} s",
    )


def _tokens(transcript: Transcript, budget: int) -> Score:
    used = transcript.usage.get("agent")
    reported = [reply.usage for reply in transcript.agent_events() if reply.usage is not None]
    if used is not None:
        total, source = used.total_tokens, ""
    elif reported:
        total = sum(usage.total_tokens for usage in reported)
        replies = len(transcript.agent_events())
        source = f" (as its responses reported them, {len(reported)} of {replies} replies)"
        if len(reported) < replies and total <= budget:
            # Replies that reported nothing may have used any number of tokens: under the budget is not shown.
            return _score(
                "tokens",
                "unsure",
                f"the budget of {budget} tokens cannot be checked: the agent reported {total} tokens for "
                f"{len(reported)} of its {replies} replies and nothing for the others",
            )
    else:
        return _score("tokens", "unsure", _unreported(f"{budget} tokens"))
    verdict: ScoreVerdict = "met" if total <= budget else "not_met"
    return _score("tokens", verdict, f"the agent used {total} tokens{source}, the budget is {budget}")


def _cost(transcript: Transcript, budget: float) -> Score:
    used = transcript.usage.get("agent")
    if used is None:
        if any(reply.usage is not None for reply in transcript.agent_events()):
            return _score(
                "cost",
                "unsure",
                f"the budget of ${budget:g} cannot be checked: the agent reported its tokens but not their price "
                "(Simulator did not make its model calls)",
            )
        return _score("cost", "unsure", _unreported(f"${budget:g}"))
    if used.cost is None:
        return _score(
            "cost",
            "unsure",
            f"the budget of ${budget:g} cannot be checked: litellm does not know the price of the agent's model "
            "(its tokens are counted, their cost is unknown)",
        )
    verdict: ScoreVerdict = "met" if used.cost <= budget else "not_met"
    return _score("cost", verdict, f"the agent cost ${used.cost:.4f}, the budget is ${budget:g}")


def _unreported(budget: str) -> str:
    return (
        f"the budget of {budget} cannot be checked: the agent reported no usage (litellm agents report it; an "
        "http agent when its responses carry `usage`)"
    )


def _turns(transcript: Transcript, budget: int) -> Score:
    verdict: ScoreVerdict = "met" if transcript.turns <= budget else "not_met"
    return _score("turns", verdict, f"the conversation took {transcript.turns} turns, the budget is {budget}")
