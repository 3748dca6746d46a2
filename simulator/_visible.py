"""Characters that must never be shown raw, and the one way to show them: as visible escapes.

C0 controls but tab and line feed (and a carriage return that ends a line), DEL, C1 controls, bidirectional
marks, embeddings, overrides and isolates (U+200E/U+200F, U+061C, U+202A-U+202E, U+2066-U+2069: "Trojan
Source" reordering), lone surrogates and the noncharacters U+FFFE/U+FFFF are written as ``\\x1b``,
``\\u202e``: a terminal, a browser, a CI page or a spreadsheet shows them as text, and two names that differ
only by such a character still differ where they are shown.

The lowest module of the package (standard library only), so that even an error's own text can use it;
``simulator.safety`` serves it to the rest.
"""

from __future__ import annotations

import re
from typing import Final

__all__ = ["UNSAFE_CHARACTERS", "one_line", "terminal_safe"]

#: A character class (without its brackets) of every character :func:`terminal_safe` escapes.
UNSAFE_CHARACTERS: Final = (
    "\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069\ud800-\udfff\ufffe\uffff"
)
_TERMINAL_UNSAFE: Final = re.compile(f"[{UNSAFE_CHARACTERS}]|\r(?!\n)")
_LINE_UNSAFE: Final = re.compile(f"[{UNSAFE_CHARACTERS}\t\n\r\u0085\u2028\u2029]")


def _visible(match: re.Match[str]) -> str:
    code = ord(match.group(0))
    return f"\\x{code:02x}" if code <= 0xFF else f"\\u{code:04x}"


def terminal_safe(text: str) -> str:
    """``text`` with every character that could drive a terminal or reorder text written as a visible
    escape: ESC as ``\\x1b``, the C1 CSI as ``\\x9b``, U+202E as ``\\u202e``. Tab, line feed and CR LF stay.

    Returns ``text`` itself when it is already safe, so it can be applied more than once.
    """
    if _TERMINAL_UNSAFE.search(text) is None:
        return text
    return _TERMINAL_UNSAFE.sub(_visible, text)


def one_line(text: str) -> str:
    """``text`` as :func:`terminal_safe` shows it, with tab and every line break escaped too (``\\n``): a file
    name or a key shown at the start of a ``FILE:LINE:COL: message`` line cannot start another such line."""
    if _LINE_UNSAFE.search(text) is None:
        return text
    return _LINE_UNSAFE.sub(_visible, text)
