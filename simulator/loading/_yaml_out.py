"""Writing YAML: the one place files Simulator writes for people (exports, recorded golden suites, CSV imports)
are dumped, so that what the loader reads and what Simulator writes share one YAML library owner.

Two flavours, because their bytes are pinned by tests and by files people already have:

- :func:`export_yaml` (exports and recorded golden suites): a string a terminal would obey is double-quoted and
  written as escapes, so the text is safe to print and reads back the same;
- :func:`suite_yaml` (a suite imported from CSV): libyaml's emitter when available, the cases dumped a chunk at
  a time (the same text, in bounded memory), shared values written out, never as anchors.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Final

import yaml

from simulator.safety import terminal_safe

# Larger than any line, so that the emitter never folds a long string over several lines.
_NO_WRAP: Final = 1_000_000_000
# Cases dumped per call by suite_yaml: the node tree of one call stays small, whatever the number of cases.
_DUMP_CHUNK: Final = 500
# PyYAML writes U+0085 (NEL) raw into a single-quoted scalar, and reading it back folds it into a space;
# double quotes escape it (\N). U+2028/U+2029 survive today but are line breaks to YAML too.
_LINE_BREAKS: Final = "\x85\u2028\u2029"


def _header_comments(header: Sequence[str]) -> str:
    return "".join(f"# {line}\n" if line else "#\n" for line in header)


class _ExportDumper(yaml.SafeDumper):
    """``yaml.safe_dump``'s dumper, with Unicode line breaks and strings a terminal would obey written
    double-quoted (escaped)."""


def _represent_export_str(dumper: yaml.SafeDumper, value: str) -> yaml.ScalarNode:
    # A string a terminal would obey (bidi overrides: PyYAML writes them raw) is double-quoted, so that
    # export_yaml can write those characters as escapes that read back the same.
    unsafe = any(char in value for char in _LINE_BREAKS) or terminal_safe(value) is not value
    return dumper.represent_scalar("tag:yaml.org,2002:str", value, style='"' if unsafe else None)


_ExportDumper.add_representer(str, _represent_export_str)


def export_yaml(data: Any, *, header: Sequence[str] = ()) -> str:
    """``data`` (plain values) as YAML text safe to print, after ``header`` written as ``#`` comment lines.

    Keys keep their order, text is never folded, and characters that could drive a terminal or reorder text
    are written as escapes inside double-quoted strings (they read back as the same characters).
    """
    body = yaml.dump(data, Dumper=_ExportDumper, sort_keys=False, allow_unicode=True, width=_NO_WRAP)
    return terminal_safe(_header_comments(header) + body)  # \u202e in a double-quoted scalar is U+202E again


class _SuiteDumper(getattr(yaml, "CSafeDumper", yaml.SafeDumper)):  # type: ignore[misc]
    """``yaml.safe_dump``'s dumper (libyaml's emitter when available), except for strings with Unicode line
    breaks (double-quoted); shared values are written out, never as anchors and aliases."""

    def ignore_aliases(self, data: Any) -> bool:
        return True


def _represent_suite_str(dumper: yaml.SafeDumper, value: str) -> yaml.ScalarNode:
    style = '"' if any(char in value for char in _LINE_BREAKS) else None
    return dumper.represent_scalar("tag:yaml.org,2002:str", value, style=style)


_SuiteDumper.add_representer(str, _represent_suite_str)


def _suite_dump(data: Any) -> str:
    return yaml.dump(data, Dumper=_SuiteDumper, sort_keys=False, allow_unicode=True, width=_NO_WRAP)


def suite_yaml(data: dict[str, Any], *, header: Sequence[str] = ()) -> str:
    """Suite data as YAML text, after ``header`` written as ``#`` comment lines.

    When ``cases`` is the last key, the cases are dumped a chunk at a time: the same text as one dump, in
    bounded memory, however many cases a CSV had. Strings YAML 1.1 would read as something else (``no``,
    ``012``, dates) come out quoted, so the file loads back to the same values.
    """
    cases = data.get("cases")
    if not isinstance(cases, list) or not cases or list(data)[-1] != "cases":
        return _header_comments(header) + _suite_dump(data)
    head = {key: value for key, value in data.items() if key != "cases"}
    parts = [_header_comments(header)]
    if head:
        parts.append(_suite_dump(head))
    parts.append("cases:\n")
    for start in range(0, len(cases), _DUMP_CHUNK):
        parts.append(_suite_dump(cases[start : start + _DUMP_CHUNK]))
    return "".join(parts)
