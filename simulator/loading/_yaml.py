"""YAML text -> plain data plus the line and column of every key and value.

PyYAML is used only to parse the text into events (libyaml when available); the node tree is composed here,
without recursion, and turned into data, so that everything PyYAML would do silently becomes an error with a
place: duplicate keys, YAML 1.1 values that change meaning (``no`` -> false, ``012`` -> 10, ``1:30`` -> 90,
dates), language-specific tags, and what a hostile file does to exhaust memory or the stack: nesting deeper
than :data:`~simulator.loading._limits.MAX_DEPTH`, more values than ``MAX_VALUES``, alias bombs, recursive
aliases, numbers of thousands of digits, infinity and NaN (the limits are in :mod:`simulator.loading._limits`).
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, NamedTuple

import yaml
from yaml.events import (
    AliasEvent,
    DocumentEndEvent,
    MappingStartEvent,
    ScalarEvent,
    SequenceStartEvent,
    StreamEndEvent,
)
from yaml.nodes import MappingNode, Node, ScalarNode, SequenceNode

from simulator.errors import ConfigError
from simulator.loading import _limits
from simulator.loading._limits import ReadProblem

DataPath = tuple[str | int, ...]

_Loader: type[Any] = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
_constructor = yaml.constructor.SafeConstructor()

_TAG = "tag:yaml.org,2002:"
_TRUTHY_OK = {"true", "false"}
_RECURSIVE = "an alias refers to the mapping or list that contains it: remove the recursive alias"
_OCTAL = re.compile(r"^[-+]?0[0-7_]+$")
#: Parts of the key path a "nested too deep" error names (all of them would make a line of hundreds of [0]).
_DEEP_PATH_SHOWN = 3


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

    #: Each mapping's keys (by the node's id), built when a position in it is first looked up.
    _keys: dict[int, dict[str, tuple[Node, Node]]] = field(default_factory=dict, repr=False, compare=False)

    def position(self, path: DataPath, *, key: bool = False) -> Position:
        """Where the value at ``path`` starts (its key with ``key=True``); for a path that is not written
        (a missing key), where the closest enclosing value starts."""
        node: Node = self.root
        key_node: Node | None = None
        complete = True
        for part in path:
            if isinstance(node, MappingNode) and isinstance(part, str):
                found = self._find_key(node, part)
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

    def node(self, path: DataPath) -> Node | None:
        """The YAML node the value at ``path`` was read from (how it is written: its style, its marks), or None
        when ``path`` is not written in the file."""
        node: Node = self.root
        for part in path:
            if isinstance(node, MappingNode) and isinstance(part, str):
                found = self._find_key(node, part)
                if found is None:
                    return None
                node = found[1]
            elif isinstance(node, SequenceNode) and isinstance(part, int) and 0 <= part < len(node.value):
                node = node.value[part]
            else:
                return None
        return node

    def is_flagged(self, path: DataPath) -> bool:
        """Whether the YAML layer already reported ``path`` or a value that contains it."""
        return bool(self.flagged) and any(path[:length] in self.flagged for length in range(len(path) + 1))

    def _find_key(self, node: MappingNode, key: str, depth: int = 0) -> tuple[Node, Node] | None:
        keys = self._keys.get(id(node))
        if keys is None:
            keys = {}
            for pair in node.value:
                if isinstance(pair[0], ScalarNode) and pair[0].tag != _TAG + "merge":
                    keys.setdefault(str(pair[0].value), pair)
            self._keys[id(node)] = keys
        if key in keys:
            return keys[key]
        for key_node, value_node in node.value:
            if key_node.tag != _TAG + "merge" or depth >= 10:
                continue
            for source in value_node.value if isinstance(value_node, SequenceNode) else [value_node]:
                found = self._find_key(source, key, depth + 1) if isinstance(source, MappingNode) else None
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
    """Read a file as UTF-8 (a BOM is allowed), refusing huge, binary, non-UTF-8 and non-regular files (a named
    pipe, ``/dev/zero``) with a clear error; see :func:`simulator.loading._limits.read_bytes`."""
    try:
        return _limits.read_text(path, "split it into several files", "YAML text"), []
    except ReadProblem as problem:
        return None, [ConfigError(path, problem.line, problem.column, "(root)", problem.message)]


def parse_yaml(text: str, file: str | Path, *, extra_depth: int = 0) -> tuple[Located | None, list[ConfigError]]:
    """Parse one YAML document. Returns the data (None when unusable) and every problem found. Lists and
    mappings may nest ``extra_depth`` levels deeper than ``MAX_DEPTH`` (a run export holds suites)."""
    max_depth = _limits.MAX_DEPTH + extra_depth
    try:
        root = _compose(text, max_depth)
    except _Refused as refused:
        return None, [ConfigError(file, refused.line, refused.column, format_path(refused.path), refused.message)]
    except yaml.MarkedYAMLError as exc:
        return None, [_syntax_error(exc, file)]
    except yaml.reader.ReaderError as exc:
        return None, [_reader_error(exc, text, file)]
    except UnicodeEncodeError as exc:
        line, column = _limits.text_position(text, exc.start)
        message = f"not UTF-8 text (a lone surrogate U+{ord(text[exc.start]):04X}): save the file as UTF-8"
        return None, [ConfigError(file, line, column, "(root)", message)]
    except yaml.YAMLError as exc:
        return None, [ConfigError(file, 1, 1, "(root)", f"YAML syntax error: {' '.join(str(exc).split())}")]
    if root is None:
        return None, [ConfigError(file, 1, 1, "(root)", "file is empty: write a mapping such as `name:` and `cases:`")]
    builder = _Builder(file, max_depth)
    data = builder.build(root, ())
    if builder.aborted:
        return None, builder.errors
    return Located(data, root, frozenset(builder.flagged), builder.has_nulls), builder.errors


class _Refused(Exception):
    """A limit or a rule the composer enforces, at a 1-based place."""

    def __init__(self, message: str, mark: Any, path: DataPath = ()) -> None:
        super().__init__(message)
        self.message = message
        self.line = mark.line + 1
        self.column = mark.column + 1
        self.path = path


def _compose(text: str, max_depth: int) -> Node | None:
    """The node tree of the single YAML document in ``text`` (None for an empty file), as PyYAML's composer
    builds it, but with a loop instead of recursion: nesting deeper than ``MAX_DEPTH`` and more than
    ``MAX_VALUES`` values are refused where they occur, before the tree is complete."""
    loader = _Loader(text)
    try:
        return _compose_events(loader, max_depth)
    finally:
        loader.dispose()


def _compose_events(loader: Any, max_depth: int) -> Node | None:
    get_event = loader.get_event
    resolve = loader.resolve
    max_values = _limits.MAX_VALUES
    get_event()  # the stream start
    event: Any = get_event()
    if isinstance(event, StreamEndEvent):
        return None
    document_start = event.start_mark
    anchors: dict[str, Node] = {}
    # Open lists and mappings, each with the key node read but not yet given a value (mappings only).
    stack: list[tuple[Node, list[Node]]] = []
    root: Node | None = None
    values = 0
    while True:
        event = get_event()
        kind = type(event)
        node: Node
        if kind is ScalarEvent:
            tag = event.tag
            if tag is None or tag == "!":
                tag = resolve(ScalarNode, event.value, event.implicit)
            # Only start marks are kept (positions are where values start): a third less memory per value.
            node = ScalarNode(tag, event.value, event.start_mark, None, style=event.style)
            _anchor(anchors, event, node)
            values += 1
            if values > max_values:
                raise _Refused(f"file {_limits.too_many_values()}", event.start_mark, _open_path(stack))
        elif kind is AliasEvent:
            anchor = event.anchor
            if anchor not in anchors:
                message = f"alias *{anchor} names no anchor: write &{anchor} on a value before it"
                raise _Refused(message, event.start_mark)
            node = anchors[anchor]
        elif kind is SequenceStartEvent or kind is MappingStartEvent:
            node_type = SequenceNode if kind is SequenceStartEvent else MappingNode
            tag = event.tag
            if tag is None or tag == "!":
                tag = resolve(node_type, None, event.implicit)
            node = node_type(tag, [], event.start_mark, None, flow_style=event.flow_style)
            _anchor(anchors, event, node)
            values += 1
            if len(stack) >= max_depth:
                # The place is the line and column; the key path names where the deep part starts.
                raise _Refused(_limits.too_deep(max_depth), event.start_mark, _open_path(stack)[:_DEEP_PATH_SHOWN])
            if values > max_values:
                raise _Refused(f"file {_limits.too_many_values()}", event.start_mark, _open_path(stack))
            stack.append((node, []))
            continue
        elif kind is DocumentEndEvent:
            break
        else:  # the end of the innermost list or mapping
            node = stack.pop()[0]
        if not stack:
            root = node
            continue
        parent, pending = stack[-1]
        if isinstance(parent, SequenceNode):
            parent.value.append(node)
        elif not pending:
            pending.append(node)
        else:
            parent.value.append((pending.pop(), node))
    event = get_event()
    if not isinstance(event, StreamEndEvent):
        raise yaml.composer.ComposerError(
            "expected a single document in the stream", document_start, "but found another document", event.start_mark
        )
    return root


def _anchor(anchors: dict[str, Node], event: Any, node: Node) -> None:
    anchor = event.anchor
    if anchor is None:
        return
    first = anchors.get(anchor)
    if first is not None:
        raise _Refused(
            f"anchor &{anchor} is defined twice (first on line {first.start_mark.line + 1}, column "
            f"{first.start_mark.column + 1}): rename one of them",
            event.start_mark,
        )
    anchors[anchor] = node


def _open_path(stack: list[tuple[Node, list[Node]]]) -> DataPath:
    """The data path of the value about to be added to the innermost open list or mapping."""
    path: list[str | int] = []
    for node, pending in stack:
        if isinstance(node, SequenceNode):
            path.append(len(node.value))
        elif pending and isinstance(pending[0], ScalarNode):
            path.append(str(pending[0].value))
    return tuple(path)


def _reader_error(exc: yaml.reader.ReaderError, text: str, file: str | Path) -> ConfigError:
    """A character YAML does not allow (a control character), at its place: libyaml counts the position in
    UTF-8 bytes, PyYAML's own reader in characters."""
    if exc.encoding == "unicode":
        offset = exc.position
    else:
        offset = len(text.encode("utf-8", "surrogatepass")[: exc.position].decode("utf-8", "replace"))
    line, column = _limits.text_position(text, min(offset, len(text)))
    character = exc.character if isinstance(exc.character, int) else ord(str(exc.character)[:1] or "\0")
    return ConfigError(
        file,
        line,
        column,
        "(root)",
        f"control character U+{character:04X} is not allowed in YAML: remove it, or write it as an escape "
        f"(\\u{character:04x}) in double quotes",
    )


def _syntax_error(exc: yaml.MarkedYAMLError, file: str | Path) -> ConfigError:
    problem = exc.problem or "invalid YAML"
    mark = exc.problem_mark or exc.context_mark
    if "maximum nesting depth" in problem:
        # libyaml's own limit (1,000 levels), met while scanning ahead of the depth check: the same words.
        problem = _limits.too_deep()
        line, column = (mark.line + 1, mark.column + 1) if mark else (1, 1)
        return ConfigError(file, line, column, "(root)", problem)
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

    def __init__(self, file: str | Path, max_depth: int) -> None:
        self.file = file
        self.max_depth = max_depth
        self.errors: list[ConfigError] = []
        self.aborted = False
        self.has_nulls = False
        self.flagged: set[DataPath] = set()
        self._seen: set[int] = set()
        self._stack: set[int] = set()
        self._expanded = 0
        #: For the scalar about to be built: the list it is an item of, and its index there.
        self._item_of: tuple[SequenceNode, int] | None = None

    def _error(self, node: Node, path: DataPath, message: str) -> None:
        if self.aborted:
            return
        mark = node.start_mark
        if len(self.errors) >= _limits.MAX_ERRORS:
            # A file of thousands of mistakes (or of `no` written 200,000 times): stop, keeping what was found.
            message, self.aborted = _limits.too_many_problems(), True
        self.flagged.add(path)
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
        if len(path) >= self.max_depth:
            # Written nesting is refused while composing; this is nesting that aliases build.
            self._abort(node, path[:_DEEP_PATH_SHOWN], _limits.too_deep(self.max_depth))
            return None
        self._stack.add(identity)
        try:
            if isinstance(node, SequenceNode):
                self._check_tag(node, path, _TAG + "seq")
                items = []
                for i, item in enumerate(node.value):
                    self._item_of = (node, i)
                    items.append(self.build(item, (*path, i), aliased=aliased))
                self._item_of = None
                return items
            assert isinstance(node, MappingNode)
            self._check_tag(node, path, _TAG + "map")
            return self._mapping(node, path, aliased)
        finally:
            self._stack.discard(identity)

    def _count_expansion(self, node: Node, path: DataPath) -> None:
        self._expanded += 1
        if self._expanded > _limits.MAX_ALIAS_EXPANSION:
            self._abort(node, path, _limits.alias_bomb())

    def _abort(self, node: Node, path: DataPath, message: str) -> None:
        """Stop building: the file is refused with this one error."""
        mark = node.start_mark
        self.errors = [ConfigError(self.file, mark.line + 1, mark.column + 1, format_path(path), message)]
        self.aborted = True

    def _check_tag(self, node: Node, path: DataPath, expected: str) -> None:
        if node.tag != expected:
            self._error(node, path, f"tag {_short_tag(node.tag)} is not allowed: Simulator reads plain YAML data only")

    def _mapping(self, node: MappingNode, path: DataPath, aliased: bool) -> dict[str, Any]:
        result: dict[str, Any] = {}
        first_seen: dict[str, int] = {}
        merged: list[tuple[Node, Node]] = []
        for key_node, value_node in node.value:
            if self.aborted:
                break
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
        if _lone_surrogate(node.value):
            self._error(node, path, _limits.lone_surrogate())
            return None
        # Keys are names: take them as written, so `on:` or `no:` stay text instead of becoming booleans.
        return str(node.value)

    def _scalar(self, node: ScalarNode, path: DataPath) -> Any:
        tag = node.tag
        raw = node.value
        item_of, self._item_of = self._item_of, None
        if tag == _TAG + "str":
            if _lone_surrogate(raw):
                self._error(node, path, _limits.lone_surrogate())
            return raw
        if tag == _TAG + "null":
            self.has_nulls = True
            return None
        if tag == _TAG + "bool":
            flag: bool = _constructor.construct_yaml_bool(node)
            if raw.lower() not in _TRUTHY_OK:
                # Worked out only here: a list of 100,000 words must not be joined 100,000 times.
                sentence = _cut_sentence(*item_of) if item_of else None
                comma = (
                    f'; in [...] a comma separates items: for one sentence, write it whole in quotes: "{sentence}"'
                    if sentence
                    else ""
                )
                self._error(
                    node,
                    path,
                    f"YAML 1.1 reads `{raw}` as the boolean {str(flag).lower()}: write {str(flag).lower()} for a "
                    f'boolean, or "{raw}" in quotes for text{comma}',
                )
            return flag
        if tag == _TAG + "int":
            if _digits(raw) > _limits.MAX_INT_DIGITS:
                # Python refuses to read a decimal number of more than 4,300 digits, and a long base-60 one
                # takes quadratic time: refused before either is tried.
                self._error(node, path, _limits.too_many_digits(raw))
                return raw
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
            number: float = _constructor.construct_yaml_float(node)
            if not math.isfinite(number):
                # JSON cannot hold it, and every sum, mean and report it reaches would be infinite or NaN.
                self._error(node, path, _limits.not_finite(raw))
                return raw
            return number
        if tag == _TAG + "timestamp":
            self._error(
                node,
                path,
                f'YAML reads `{raw}` as a date, which JSON cannot hold: write "{raw}" in quotes to keep it as text',
            )
            return raw
        self._error(node, path, f"tag {_short_tag(tag)} is not allowed: Simulator reads plain YAML data only")
        return raw


def _cut_sentence(sequence: SequenceNode, index: int) -> str | None:
    """The words of a ``[...]`` list from its ``index``-th item on, joined by the commas that split them, when
    that item and the next are unquoted and the next is text: ``[yes, block it please]`` reads as one sentence
    cut in two (``[yes, no]`` does not)."""
    following = sequence.value[index + 1 : index + 2]
    if not sequence.flow_style or not following or following[0].tag != _TAG + "str":
        return None
    words: list[str] = []
    for item in sequence.value[index : index + _SENTENCE_WORDS]:
        if not isinstance(item, ScalarNode) or item.style:
            break
        words.append(item.value)
    return ", ".join(words) if len(words) > 1 else None


#: The most items of a ``[...]`` list read as one sentence (a longer one is a list).
_SENTENCE_WORDS = 8


def _lone_surrogate(text: str) -> bool:
    """Whether ``text`` holds half a surrogate pair (written as an escape such as ``"\\ud800"``): not a
    character, and no file, database or terminal can take it."""
    if text.isascii():
        return False
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return True
    return False


def _digits(raw: str) -> int:
    """The digits a YAML integer is written with (signs, ``_``, ``:`` and a ``0x``/``0o``/``0b`` prefix aside)."""
    body = raw.lstrip("+-")
    if body[:2].lower() in ("0x", "0o", "0b"):
        body = body[2:]
    return len(body) - body.count("_") - body.count(":")


def _short_tag(tag: str) -> str:
    return "!!" + tag[len(_TAG) :] if tag.startswith(_TAG) else tag
