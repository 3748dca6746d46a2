"""YAML text -> plain data plus the line and column of every key and value.

PyYAML is used only to compose the node tree (libyaml when available); the tree is turned into data here,
so that everything PyYAML would do silently becomes an error with a place: duplicate keys, YAML 1.1 values
that change meaning (``no`` -> false, ``012`` -> 10, ``1:30`` -> 90, dates), language-specific tags, alias
bombs and recursive aliases.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any, NamedTuple

import yaml
from yaml.nodes import MappingNode, Node, ScalarNode, SequenceNode

from simulator.errors import ConfigError

DataPath = tuple[str | int, ...]

#: Files larger than this are refused before parsing.
MAX_FILE_BYTES = 10 * 1024 * 1024
#: Nodes that may be reached through aliases (``*name``); a few "billion laughs" levels exceed it at once.
MAX_ALIAS_EXPANSION = 100_000

_Loader: type[Any] = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
_constructor = yaml.constructor.SafeConstructor()

_TAG = "tag:yaml.org,2002:"
_TRUTHY_OK = {"true", "false"}
_RECURSIVE = "an alias refers to the mapping or list that contains it: remove the recursive alias"
_OCTAL = re.compile(r"^[-+]?0[0-7_]+$")


class Position(NamedTuple):
    """A 1-based line and column in a file."""

    line: int
    column: int


@dataclass
class Located:
    """Data read from a YAML file, with the node tree it came from to find where any part is written.

    Positions are looked up only when an error needs one, so a valid file pays nothing for them.
    """

    data: Any
    root: Node
    #: Paths the YAML layer already reported (a YAML 1.1 trap, a tag): later stages stay quiet about them,
    #: since their complaint would be about the misread value, with a misleading fix.
    flagged: frozenset[DataPath] = frozenset()
    #: Whether any value is null (``key:`` with nothing, ``~``, ``null``): the models take None for "not
    #: given" where the schema refuses it, so such files always get the full schema check.
    has_nulls: bool = False

    def position(self, path: DataPath, *, key: bool = False) -> Position:
        """Where the value at ``path`` starts (its key with ``key=True``); for a path that is not written
        (a missing key), where the closest enclosing value starts."""
        node: Node = self.root
        key_node: Node | None = None
        complete = True
        for part in path:
            if isinstance(node, MappingNode) and isinstance(part, str):
                found = _find_key(node, part)
                if found is None:
                    complete = False
                    break
                key_node, node = found
            elif isinstance(node, SequenceNode) and isinstance(part, int) and 0 <= part < len(node.value):
                key_node, node = None, node.value[part]
            else:
                complete = False
                break
        target = key_node if key and complete and key_node is not None else node
        return Position(target.start_mark.line + 1, target.start_mark.column + 1)

    def is_flagged(self, path: DataPath) -> bool:
        """Whether the YAML layer already reported ``path`` or a value that contains it."""
        return any(path[: len(flag)] == flag for flag in self.flagged)


def _find_key(node: MappingNode, key: str, depth: int = 0) -> tuple[Node, Node] | None:
    merges: list[Node] = []
    for key_node, value_node in node.value:
        if key_node.tag == _TAG + "merge":
            merges.extend(value_node.value if isinstance(value_node, SequenceNode) else [value_node])
        elif isinstance(key_node, ScalarNode) and key_node.value == key:
            return key_node, value_node
    for source in merges:
        if isinstance(source, MappingNode) and depth < 10:
            found = _find_key(source, key, depth + 1)
            if found is not None:
                return found
    return None


def format_path(path: DataPath) -> str:
    """``('cases', 0, 'steps', 1, 'goal')`` -> ``cases[0].steps[1].goal``."""
    out = ""
    for part in path:
        if isinstance(part, int):
            out += f"[{part}]"
        elif re.fullmatch(r"[A-Za-z_][A-Za-z0-9_-]*", part):
            out += f".{part}" if out else part
        else:
            out += f"[{part!r}]"
    return out or "(root)"


def read_text(path: Path) -> tuple[str | None, list[ConfigError]]:
    """Read a file as UTF-8 (a BOM is allowed), refusing huge, binary and non-UTF-8 files with a clear error."""
    try:
        size = path.stat().st_size
        if size > MAX_FILE_BYTES:
            return None, [
                ConfigError(
                    path,
                    1,
                    1,
                    "(root)",
                    f"file is {_size(size)}, over the {_size(MAX_FILE_BYTES)} limit: split it into several suites",
                )
            ]
        raw = path.read_bytes()
    except OSError as exc:
        return None, [ConfigError(path, 1, 1, "(root)", f"cannot read the file: {exc.strerror or exc}")]
    body = raw[3:] if raw.startswith(b"\xef\xbb\xbf") else raw
    try:
        text = body.decode("utf-8")
    except UnicodeDecodeError as exc:
        line, column = _byte_position(body, exc.start)
        return None, [
            ConfigError(
                path, line, column, "(root)", f"not UTF-8 text (byte 0x{body[exc.start]:02x}): save the file as UTF-8"
            )
        ]
    nul = body.find(b"\x00")
    if nul >= 0:
        line, column = _byte_position(body, nul)
        return None, [
            ConfigError(path, line, column, "(root)", "binary file (contains a NUL byte): expected YAML text")
        ]
    return text, []


def _byte_position(data: bytes, offset: int) -> tuple[int, int]:
    """1-based line and character column of a byte offset (the line's bytes before it decoded leniently)."""
    line_start = data.rfind(b"\n", 0, offset) + 1
    column = len(data[line_start:offset].decode("utf-8", errors="replace")) + 1
    return data.count(b"\n", 0, offset) + 1, column


def _size(count: int) -> str:
    number, unit = (count / 1_000_000, "MB") if count >= 1_000_000 else (count / 1000, "kB")
    return f"{number:.1f}".removesuffix(".0") + f" {unit}"


def parse_yaml(text: str, file: str | Path) -> tuple[Located | None, list[ConfigError]]:
    """Parse one YAML document. Returns the data (None when unusable) and every problem found."""
    try:
        loader = _Loader(text)
        try:
            root = loader.get_single_node()
        finally:
            loader.dispose()
    except yaml.MarkedYAMLError as exc:
        return None, [_syntax_error(exc, file)]
    except yaml.YAMLError as exc:
        return None, [ConfigError(file, 1, 1, "(root)", f"YAML syntax error: {exc}")]
    if root is None:
        return None, [ConfigError(file, 1, 1, "(root)", "file is empty: write a mapping such as `name:` and `cases:`")]
    builder = _Builder(file)
    data = builder.build(root, ())
    if builder.aborted:
        return None, builder.errors
    return Located(data, root, frozenset(builder.flagged), builder.has_nulls), builder.errors


def _syntax_error(exc: yaml.MarkedYAMLError, file: str | Path) -> ConfigError:
    problem = exc.problem or "invalid YAML"
    mark = exc.problem_mark or exc.context_mark
    if exc.context and "document" in exc.context:
        problem = "a file holds one YAML document: remove the '---' separator and what follows, or split the file"
    elif exc.context and exc.context_mark is not None:
        start = exc.context_mark
        if "end of stream" in (exc.problem or ""):
            # The end of the file is no place to look; the unclosed thing is.
            mark = start
            problem = f"{problem} {exc.context}"
        else:
            problem = f"{problem} {exc.context} that starts on line {start.line + 1}, column {start.column + 1}"
    line, column = (mark.line + 1, mark.column + 1) if mark else (1, 1)
    return ConfigError(file, line, column, "(root)", f"YAML syntax error: {problem}")


class _Builder:
    """Walks the node tree once, building plain data and recording positions and problems."""

    def __init__(self, file: str | Path) -> None:
        self.file = file
        self.errors: list[ConfigError] = []
        self.aborted = False
        self.has_nulls = False
        self.flagged: set[DataPath] = set()
        self._seen: set[int] = set()
        self._stack: set[int] = set()
        self._expanded = 0

    def _error(self, node: Node, path: DataPath, message: str) -> None:
        self.flagged.add(path)
        mark = node.start_mark
        self.errors.append(ConfigError(self.file, mark.line + 1, mark.column + 1, format_path(path), message))

    def build(self, node: Node, path: DataPath, *, aliased: bool = False) -> Any:
        if self.aborted:
            return None
        if isinstance(node, ScalarNode):
            if aliased:
                self._count_expansion(node, path)
            return self._scalar(node, path)
        identity = id(node)
        if identity in self._stack:
            self._error(node, path, _RECURSIVE)
            return None
        if identity in self._seen:
            aliased = True
        else:
            self._seen.add(identity)
        if aliased:
            self._count_expansion(node, path)
            if self.aborted:
                return None
        self._stack.add(identity)
        try:
            if isinstance(node, SequenceNode):
                self._check_tag(node, path, _TAG + "seq")
                return [self.build(item, (*path, i), aliased=aliased) for i, item in enumerate(node.value)]
            assert isinstance(node, MappingNode)
            self._check_tag(node, path, _TAG + "map")
            return self._mapping(node, path, aliased)
        finally:
            self._stack.discard(identity)

    def _count_expansion(self, node: Node, path: DataPath) -> None:
        self._expanded += 1
        if self._expanded > MAX_ALIAS_EXPANSION:
            self.errors = [
                ConfigError(
                    self.file,
                    node.start_mark.line + 1,
                    node.start_mark.column + 1,
                    format_path(path),
                    f"aliases expand to more than {MAX_ALIAS_EXPANSION:,} values (an alias bomb?): "
                    "write the repeated parts out or use fewer nested aliases",
                )
            ]
            self.aborted = True

    def _check_tag(self, node: Node, path: DataPath, expected: str) -> None:
        if node.tag != expected:
            self._error(node, path, f"tag {_short_tag(node.tag)} is not allowed: Simulator reads plain YAML data only")

    def _mapping(self, node: MappingNode, path: DataPath, aliased: bool) -> dict[str, Any]:
        result: dict[str, Any] = {}
        first_seen: dict[str, int] = {}
        merged: list[tuple[Node, Node]] = []
        for key_node, value_node in node.value:
            if key_node.tag == _TAG + "merge":
                merged.extend(self._merge_sources(value_node, path))
                continue
            key = self._key(key_node, path)
            if key is None:
                continue
            if key in first_seen:
                self._error(
                    key_node,
                    (*path, key),
                    f"duplicate key {key!r} (first written on line {first_seen[key]}); YAML would silently keep "
                    "only the last one: remove or rename one",
                )
                continue
            first_seen[key] = key_node.start_mark.line + 1
            if id(value_node) in self._stack:
                # The alias itself has no position of its own (it is the anchored node): point at its key.
                self._error(key_node, (*path, key), _RECURSIVE)
                result[key] = None
                continue
            result[key] = self.build(value_node, (*path, key), aliased=aliased)
        for key_node, value_node in merged:
            key = self._key(key_node, path)
            if key is not None and key not in result:
                result[key] = self.build(value_node, (*path, key), aliased=True)
        return result

    def _merge_sources(self, value_node: Node, path: DataPath) -> list[tuple[Node, Node]]:
        sources = value_node.value if isinstance(value_node, SequenceNode) else [value_node]
        pairs: list[tuple[Node, Node]] = []
        for source in sources:
            if not isinstance(source, MappingNode):
                self._error(source, path, "`<<` merges mappings only: point it at an anchored mapping (<<: *defaults)")
                continue
            pairs.extend(source.value)
        return pairs

    def _key(self, node: Node, path: DataPath) -> str | None:
        if not isinstance(node, ScalarNode):
            self._error(node, path, "a key must be plain text, not a mapping or list")
            return None
        if node.tag == _TAG + "null" and node.value in ("", "~", "null", "Null", "NULL"):
            self._error(node, path, "a key is empty: write a name before the colon")
            return None
        # Keys are names: take them as written, so `on:` or `no:` stay text instead of becoming booleans.
        return str(node.value)

    def _scalar(self, node: ScalarNode, path: DataPath) -> Any:
        tag = node.tag
        raw = node.value
        if tag == _TAG + "str":
            return raw
        if tag == _TAG + "null":
            self.has_nulls = True
            return None
        if tag == _TAG + "bool":
            flag: bool = _constructor.construct_yaml_bool(node)
            if raw.lower() not in _TRUTHY_OK:
                self._error(
                    node,
                    path,
                    f"YAML 1.1 reads `{raw}` as the boolean {str(flag).lower()}: write {str(flag).lower()} for a "
                    f'boolean, or "{raw}" in quotes for text',
                )
            return flag
        if tag == _TAG + "int":
            if not node.style and (_OCTAL.match(raw) or ":" in raw):
                value = _constructor.construct_yaml_int(node)
                octal = bool(_OCTAL.match(raw))
                kind = "an octal number" if octal else "a base-60 number"
                fix = ", or the number without leading zeros" if octal else ""
                message = f'YAML 1.1 reads `{raw}` as {kind} ({value}): write "{raw}" in quotes for text{fix}'
                self._error(node, path, message)
                return value
            return _constructor.construct_yaml_int(node)
        if tag == _TAG + "float":
            if not node.style and ":" in raw:
                self._error(node, path, f'YAML 1.1 reads `{raw}` as a base-60 number: write "{raw}" in quotes for text')
            return _constructor.construct_yaml_float(node)
        if tag == _TAG + "timestamp":
            self._error(
                node,
                path,
                f'YAML reads `{raw}` as a date, which JSON cannot hold: write "{raw}" in quotes to keep it as text',
            )
            return raw
        self._error(node, path, f"tag {_short_tag(tag)} is not allowed: Simulator reads plain YAML data only")
        return raw


def _short_tag(tag: str) -> str:
    return "!!" + tag[len(_TAG) :] if tag.startswith(_TAG) else tag
