"""JSON text -> plain data within the limits, and the line and column where any part of it is written.

``json.loads`` recurses once per level of nesting (a file of ``[[[[...`` raises ``RecursionError``), refuses
integers of more than 4,300 digits with a bare ``ValueError`` and reads ``Infinity``, ``NaN`` and ``1e999``
as floats that no report can show, and takes ``"\\ud800"`` for a string no database can store.
:func:`parse_json` first scans the text once, without recursion, and
refuses each of these at its line and column, with the wording every reader uses (see
:mod:`simulator.loading._limits`); only then does ``json.loads`` see it.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Sequence
from typing import Any, Final

from simulator.loading import _limits
from simulator.loading._limits import ReadProblem

_TOKEN: Final = re.compile(
    r"""
    (?P<string>"(?:[^"\\\x00-\x1f]|\\.)*")
    |(?P<open>[\[{])
    |(?P<close>[\]}])
    |(?P<comma>,)
    |(?P<colon>:)
    |(?P<number>-?(?:Infinity|NaN|[0-9]+(?:\.[0-9]*)?(?:[eE][-+]?[0-9]+)?))
    |(?P<word>true|false|null|Infinity|NaN)
    |(?P<broken>")
    """,
    re.VERBOSE,
)


_SURROGATE_ESCAPE: Final = re.compile(r"\\u[dD][89a-fA-F]")


def parse_json(text: str, *, extra_depth: int = 0) -> Any:
    """The data of a JSON document; :class:`ReadProblem` (1-based line and column) for invalid JSON and for
    nesting, numbers or constants beyond the limits (nesting ``extra_depth`` levels more than ``MAX_DEPTH``)."""
    limit = _limits.MAX_DEPTH + extra_depth
    _scan(text, limit)
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        # json's messages end in " at" before the place it appends: the place is given apart.
        raise ReadProblem(f"not valid JSON: {exc.msg.removesuffix(' at')}", exc.lineno, exc.colno) from None
    except RecursionError:  # the scan refuses deep nesting first; kept in case the stack is short already
        raise ReadProblem(_limits.too_deep(limit)) from None
    except ValueError as exc:  # the scan refuses long integers first; same
        raise ReadProblem(f"not valid JSON: {exc}") from None


def _scan(text: str, max_depth: int) -> None:
    depth = 0
    max_digits = _limits.MAX_INT_DIGITS
    for match in _TOKEN.finditer(text):
        kind = match.lastgroup
        if kind == "string":
            if _SURROGATE_ESCAPE.search(match.group()) and _lone_surrogate(match.group()):
                raise _at(text, match.start(), _limits.lone_surrogate())
            continue
        if kind in {"comma", "colon"}:
            continue
        if kind == "open":
            depth += 1
            if depth > max_depth:
                raise _at(text, match.start(), _limits.too_deep(max_depth))
        elif kind == "close":
            depth -= 1
        elif kind == "number":
            written = match.group()
            if written.lstrip("-") in ("Infinity", "NaN"):
                raise _at(text, match.start(), _limits.not_finite(written))
            if not any(char in written for char in ".eE"):
                if len(written.lstrip("-")) > max_digits:
                    raise _at(text, match.start(), _limits.too_many_digits(written))
            elif not math.isfinite(float(written)):
                raise _at(text, match.start(), _limits.not_finite(written))
        elif kind == "word" and match.group() in ("Infinity", "NaN"):
            raise _at(text, match.start(), _limits.not_finite(match.group()))
        elif kind == "broken":
            return  # an unterminated string or a control character in one: json.loads says where
        if depth < 0:
            return  # more closing than opening brackets: json.loads says where


def _lone_surrogate(token: str) -> bool:
    try:
        json.loads(token).encode("utf-8")
    except UnicodeEncodeError:
        return True
    return False


def _at(text: str, offset: int, message: str) -> ReadProblem:
    line, column = _limits.text_position(text, offset)
    return ReadProblem(message, line, column)


def json_position(text: str, path: Sequence[str | int]) -> tuple[int, int]:
    """The 1-based line and column where the value at ``path`` starts in the JSON ``text``; for a path that is
    not written (a missing key), where the closest enclosing value starts. For error messages only: it scans
    the text from the start."""
    target = tuple(path)
    best = _first_value(text)
    # Per open container: [is_object, key or index of the current member, expecting a key (objects)].
    stack: list[list[Any]] = []
    for match in _TOKEN.finditer(text):
        kind = match.lastgroup
        if kind == "broken":
            break
        if kind == "comma":
            if stack:
                frame = stack[-1]
                if frame[0]:
                    frame[2] = True
                else:
                    frame[1] += 1
            continue
        if kind == "colon":
            continue
        if kind == "close":
            if stack:
                stack.pop()
            continue
        if stack and stack[-1][0] and stack[-1][2]:
            if kind == "string":
                stack[-1][1] = json.loads(match.group())
                stack[-1][2] = False
            continue
        # A value starts here: its path is the keys and indexes of the open containers.
        here = tuple(frame[1] for frame in stack)
        if target[: len(here)] == here:
            best = match.start()
            if here == target:
                break
        if kind == "open":
            is_object = match.group() == "{"
            stack.append([is_object, None if is_object else 0, is_object])
    return _limits.text_position(text, best)


def _first_value(text: str) -> int:
    stripped = len(text) - len(text.lstrip(" \t\r\n\ufeff"))
    return min(stripped, len(text))
