"""How every report writes a rate (one decimal of a percentage, ``94.6%``, ``n/a`` when there is none) and what a
provider's prompt cache did."""

from __future__ import annotations

from simulator.models.transcript import Usage

__all__ = ["percent", "prompt_cache_text", "saved_dollars", "uses_prompt_cache"]


def percent(rate: float | None) -> str:
    """``rate`` (0 to 1) as a percentage with one decimal, ``94.6%``; ``n/a`` for None (nothing to divide by)."""
    return "n/a" if rate is None else f"{rate * 100:.1f}%"


def uses_prompt_cache(used: Usage) -> bool:
    """Whether a provider's prompt cache served or stored any of ``used``'s prompt tokens."""
    return bool(used.cache_read_tokens or used.cache_write_tokens)


def prompt_cache_text(used: Usage) -> str:
    """What the provider's prompt cache did for ``used``, e.g. ``600 of 1,000 prompt tokens read (60.0%), 200
    written, saved $0.0012``; empty when it served and stored nothing. Told apart from the request cache, whose
    answers were never sent: these tokens were sent, and billed at the cached price."""
    if not uses_prompt_cache(used):
        return ""
    parts = [
        f"{used.cache_read_tokens:,} of {used.prompt_tokens:,} prompt tokens read ({percent(used.prompt_cache_share)})"
    ]
    if used.cache_write_tokens:
        parts.append(f"{used.cache_write_tokens:,} written")
    parts.append(f"saved {saved_dollars(used.cache_savings)}")
    return ", ".join(parts)


def saved_dollars(value: float | None) -> str:
    """What a prompt cache saved in US dollars, ``$0.0009``, ``-$0.0001`` when writing to it cost more than reading
    from it saved; ``unknown`` for None."""
    if value is None:
        return "unknown"
    return f"-${-value:.4f}" if value < 0 else f"${value:.4f}"
