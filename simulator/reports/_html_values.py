"""How the HTML report writes values: escaped text (control characters and bidi marks made visible), JSON
safe inside a script element, shortened texts, numbers, percentages, costs and times."""

from __future__ import annotations

import html
import json
import re
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime

from pydantic import JsonValue

from simulator.models.run import MODEL_ROLES, RunRecord
from simulator.models.transcript import (
    Usage,
)
from simulator.reports.tabular import summary_of
from simulator.safety import UNSAFE_CHARACTERS, terminal_safe


@dataclass(frozen=True)
class HtmlParts:
    """A page without its styles and script: its title, its body's HTML, and the JSON its script reads (empty
    when it has none). The static report embeds them in one file; ``simulator view`` serves the same parts with
    its CSS and JavaScript as files of its own."""

    title: str
    body: str
    data: str = ""


def _e(value: object) -> str:
    """Any value as HTML text or attribute content: ``&``, ``<``, ``>``, ``"`` and ``'`` escaped, and control
    characters and bidi marks and overrides written as visible escapes (``\\u202e``: nothing reorders the page,
    as the terminal shows it)."""
    return html.escape(terminal_safe(str(value)), quote=True)


def _visible_data(value: object) -> object:
    """``value`` with every string in it as :func:`_e` shows it: the filters' tags, personas and suites are the
    texts the page shows, and match them."""
    if isinstance(value, str):
        return terminal_safe(value)
    if isinstance(value, dict):
        return {_visible_data(key): _visible_data(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [_visible_data(item) for item in value]
    return value


def _left_out(left_out: Sequence[str]) -> str:
    if not left_out:
        return ""
    items = "".join(f"<li>{_e(text)}</li>" for text in left_out)
    title = f"Left out: {len(left_out)} stored result(s) could not be read"
    return f"<section class='left-out'><h2>{title}</h2><ul>{items}</ul></section>"


#: What a character :func:`terminal_safe` escapes looks like in JSON text: itself, or the escape JSON writes for
#: it (``\u001b``, ``\b``, ``\f``, ``\r``). An escaped backslash before such letters matches too: harmless.
_MAYBE_UNSAFE = re.compile(f"[{UNSAFE_CHARACTERS}]|\\\\(?:u00[01]|u007f|[bfr])", re.IGNORECASE)


def _script_json(value: object) -> str:
    """JSON that is safe inside ``<script type="application/json">``: no ``<``, ``>`` or ``&`` in it at all, and
    its texts as the page shows them (:func:`_visible_data`)."""
    text = json.dumps(value, ensure_ascii=False, sort_keys=True)
    if _MAYBE_UNSAFE.search(text) is not None:  # rare: only then is every string looked at
        text = json.dumps(_visible_data(value), ensure_ascii=False, sort_keys=True)
    for char, escaped in (
        ("&", "\\u0026"),
        ("<", "\\u003c"),
        (">", "\\u003e"),
        ("\u2028", "\\u2028"),
        ("\u2029", "\\u2029"),
    ):
        text = text.replace(char, escaped)
    return text


def _json_text(value: JsonValue) -> str:
    return json.dumps(value, ensure_ascii=False, sort_keys=True, indent=None)


# -- figures --------------------------------------------------------------------------------------------------


def _number(value: float | None) -> str:
    return "–" if value is None else f"{value:.3g}" if abs(value) < 1000 else f"{value:,.0f}"


def _cost(value: float | None) -> str:
    return "unknown" if value is None else f"${value:.4f}"


def _seconds(value: float) -> str:
    if value < 120:
        return f"{value:.1f} s"
    minutes, seconds = divmod(round(value), 60)
    return f"{minutes} min {seconds:02d} s" if minutes < 60 else f"{minutes // 60} h {minutes % 60:02d} min"


def _time(value: datetime | None) -> str:
    return "–" if value is None else value.isoformat(sep=" ", timespec="seconds")


def _usage(record: RunRecord) -> list[tuple[str, Usage]]:
    """Answers, tokens and cost per role, from the run summary."""
    used = summary_of(record).usage
    ordered: list[tuple[str, Usage]] = [(role, used[role]) for role in MODEL_ROLES if role in used]
    ordered += [(role, used[role]) for role in sorted(used) if role not in MODEL_ROLES]
    return ordered


# -- the cases as the page lists them ---------------------------------------------------------------------------
