"""Budgets as checks: each figure a case's budgets set (``simulator.models.budgets``) is one required score of
metric ``budget``, decided from the transcript alone.

A figure within its budget is ``met``, one over it ``not_met``, the reason naming the figure and the budget
("turn 3: the agent took 2.4 s, the budget is 2 s"). A figure the run could not measure (tokens or cost of an
agent that reports no usage, the cost of a model litellm cannot price) is ``unsure``: it is never passed
silently, and it is not the agent's failure either.

The voice figures (``first_audio_seconds``, ``end_audio_seconds``) are read from each agent turn's ``voice`` timing
(from the end of the user's audio), not from ``latency_ms``, which in a voice conversation also holds the time
Simulator's recogniser took to hear the agent. They are ``n/a`` in a chat conversation.
"""

from __future__ import annotations

from simulator.models.budgets import Budgets
from simulator.models.scores import Score, ScoreVerdict
from simulator.models.transcript import AgentEvent, Transcript

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
    if budgets.first_audio_seconds is not None:
        scores.append(_audio_timing(transcript, "first_audio_seconds", budgets.first_audio_seconds))
    if budgets.end_audio_seconds is not None:
        scores.append(_audio_timing(transcript, "end_audio_seconds", budgets.end_audio_seconds))
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


# -- voice --------------------------------------------------------------------------------------------------------

#: What each voice figure times, as its reasons say it: over the budget, and within it.
_AUDIO_WORDS = {
    "first_audio_seconds": ("the agent's first audio came after", "first audio"),
    "end_audio_seconds": ("the agent's audio ended after", "audio ended"),
}


def _audio_timing(transcript: Transcript, name: str, budget: float) -> Score:
    """One voice figure over every agent turn: not met when a turn is over it (whatever else is unknown), unsure
    when a turn's figure is unknown, met when every turn is timed within it."""
    if transcript.voice is None:
        return _score(name, "n/a", "a chat conversation: the agent's replies were text, with no audio to time")
    over_words, within_words = _AUDIO_WORDS[name]
    timed: dict[int, float] = {}
    unknown: dict[int, str] = {}
    cut: list[int] = []
    for reply in transcript.agent_events():
        seconds, why = _audio_seconds(reply, name)
        if seconds is None:
            unknown.setdefault(reply.turn, why)
        elif why == "interrupted" and seconds <= budget:
            # The user cut the agent off in time: how long its audio would have run is not known, nor over budget.
            cut.append(reply.turn)
        else:
            # Several replies in one turn: the slowest decides.
            timed[reply.turn] = max(seconds, timed.get(reply.turn, 0.0))
    over = [(turn, seconds) for turn, seconds in sorted(timed.items()) if seconds > budget]
    if over:
        reason = "; ".join(
            f"turn {turn}: {over_words} {_audio_seconds_text(seconds)}, the budget is {budget:g} s"
            for turn, seconds in over
        )
        return _score(name, "not_met", reason)
    if unknown:
        reason = "; ".join(f"turn {turn}: {why}" for turn, why in sorted(unknown.items()))
        return _score(name, "unsure", f"the budget of {budget:g} s cannot be checked: {reason}")
    if not timed:
        if cut:
            return _score(name, "n/a", "the user interrupted the agent in every turn: no audio ran to its end")
        return _score(name, "n/a", "the agent never replied: no turn to time")
    slowest, seconds = max(timed.items(), key=lambda item: item[1])
    left_out = ""
    if cut:
        left_out = f"; turn{'s' if len(cut) > 1 else ''} {', '.join(map(str, cut))} cut off by the user, not timed"
    return _score(
        name,
        "met",
        f"every turn's {within_words} within {budget:g} s (the slowest, turn {slowest}, after "
        f"{_audio_seconds_text(seconds)}){left_out}",
    )


def _audio_seconds_text(value: float) -> str:
    # Hundredths: a voice budget is often under a second, and "0.8 s over a budget of 0.8 s" would read as met.
    return f"{value:.2f} s" if value < 10 else f"{value:.1f} s"


def _audio_seconds(reply: AgentEvent, name: str) -> tuple[float | None, str]:
    """The figure ``name`` of one agent turn in seconds, with ``interrupted`` when the user cut it, or None with
    why it is unknown."""
    voice = reply.voice
    if voice is None:
        return None, "the agent's audio was not timed"
    if voice.audio_seconds <= 0:
        return None, "the agent sent no audio"
    milliseconds = voice.first_audio_ms if name == "first_audio_seconds" else voice.end_audio_ms
    if milliseconds is None:
        return None, "the agent's audio was not timed"
    interrupted = name == "end_audio_seconds" and voice.interrupted_after is not None
    return milliseconds / 1000, "interrupted" if interrupted else ""
