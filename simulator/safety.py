"""What may leave the process: no secret it knows, no character that drives a terminal.

Two rules of the "Safety" section of ``docs/architecture.md``, each in one function that every way out goes
through:

* :func:`redact` replaces every secret the process knows with ``[redacted:NAME]``, in any text that is
  stored (the run store, the request cache, conversation checkpoints), printed or exported. The secrets are

  - the values of environment variables whose names say they hold one (:func:`is_secret_name`: a ``KEY``,
    ``TOKEN``, ``SECRET``, ``PASSWORD``, ``CREDENTIALS``... part, as in every provider variable litellm reads:
    ``OPENAI_API_KEY``, ``ANTHROPIC_AUTH_TOKEN``, ``AWS_SECRET_ACCESS_KEY``, ``AWS_SESSION_TOKEN``,
    ``AZURE_AD_TOKEN``, ``HF_TOKEN``, ``WATSONX_APIKEY``...), read afresh whenever the environment changed;
  - the values registered with :func:`register_secret`: the variables named by ``api_key_env`` (model roles
    and HTTP agents) and ``headers_from_env`` (an HTTP agent's headers, and the credential after
    ``Bearer``/``Basic`` in them), whatever those variables are called. A run registers them all when it is
    planned, before it writes anything (a key first read at a role's first call would be unknown to what was
    stored before that call);
  - the credentials in a configured URL (:func:`register_url_credentials`: an ``api_base`` or ``base_url``
    with ``user:password@``), in every form a client sends them: the password alone, ``user:password`` and
    the HTTP Basic header ``Basic base64(user:password)`` an HTTP client makes of them, and that base64 alone;
    :func:`register_environment` does the same for every environment variable that holds a secret or such a
    URL, so they stay known however the environment changes later;
  - credentials in URLs: the ``user:password@`` part, and query parameters named like a secret
    (``?key=``, ``&access_token=``, ``api_key=``, ``sig=``...).

  A text that ends with the first :data:`MIN_CUT_LENGTH` or more characters of a secret (before an optional
  ``…`` or ``...``) ends with that secret cut by whoever shortened the text, so that end is redacted too.
  :func:`redacted_and_shortened` is the one way to shorten a text that may hold a secret: it redacts first,
  so a cut never leaves a piece of a secret the redactor no longer recognises.

  Values shorter than :data:`MIN_SECRET_LENGTH` are not secrets (a variable holding ``true`` must not blank
  out every "true"). :func:`redact_data` does the same to every string inside plain data and pydantic
  models, for stores that serialise objects (LangGraph checkpoints).

* :func:`terminal_safe` writes every control character (C0 but tab and line feed, a carriage return that
  does not end a line, DEL, C1 including the single-byte CSI ``\\x9b``, hence ESC and every escape sequence),
  every bidirectional mark, override or isolate (U+200E/U+200F, U+061C, U+202A-U+202E, U+2066-U+2069:
  "Trojan Source" reordering) and every lone surrogate as a visible escape (``\\x1b``, ``\\u202e``), so text
  from an agent, a file or a user cannot clear the screen, set the window title or reorder what a person
  reads (``simulator._visible``, the one helper every format uses). :func:`one_line` escapes line breaks
  too, for names. :func:`json_safe` does the same to JSON text with JSON's own ``\\u`` escapes, which
  changes no value.

Standard library only: the store, the model client, the engine, the reports and the CLI all use it.
"""

from __future__ import annotations

import base64
import json
import os
import re
import threading
from collections.abc import Mapping
from typing import Any, Final, TypeVar
from urllib.parse import unquote, urlsplit

from simulator._visible import UNSAFE_CHARACTERS, one_line, terminal_safe

__all__ = [
    "MIN_CUT_LENGTH",
    "MIN_SECRET_LENGTH",
    "UNSAFE_CHARACTERS",
    "contains_secret",
    "is_secret_name",
    "json_safe",
    "one_line",
    "redact",
    "redact_data",
    "redacted_and_shortened",
    "register_environment",
    "register_secret",
    "register_url_credentials",
    "terminal_safe",
]

#: Shorter values are never treated as secrets.
MIN_SECRET_LENGTH: Final = 8
#: A text ending with this many or more first characters of a secret ends with that secret, cut.
MIN_CUT_LENGTH: Final = 6

T = TypeVar("T")

# --- which environment variables hold secrets ------------------------------------------------------------

#: A name holds a secret when one of its ``_``-separated parts is one of these.
_SECRET_PARTS: Final = frozenset(
    {
        "KEY", "APIKEY", "ZENAPIKEY", "TOKEN", "SECRET", "PASSWORD", "PASSWD", "PASSPHRASE", "CREDENTIAL",
        "CREDENTIALS", "JWT", "AUTH", "AUTHORIZATION", "COOKIE", "SIGNATURE",
    }
)  # fmt: skip
#: ... unless its last part says it names where or how a secret is, not the secret itself
#: (``AWS_WEB_IDENTITY_TOKEN_FILE``, ``GIGACHAT_AUTH_URL``, ``DISABLE_KEY_NAME``, ``..._ENABLED``).
_NOT_A_VALUE: Final = frozenset(
    {
        "FILE", "DIR", "PATH", "URL", "URI", "ENDPOINT", "HOST", "PORT", "ENABLED", "DISABLED", "NAME", "VERSION",
        "TTL", "SECONDS", "DURATION", "HEADER", "FIELD", "ISSUER", "AUDIENCE", "REGION", "TYPE", "MODE", "ALIAS",
    }
)  # fmt: skip


def is_secret_name(name: str) -> bool:
    """Whether the environment variable ``name`` holds a secret, judged by its name (``OPENAI_API_KEY``: yes;
    ``OPENAI_API_BASE``, ``AWS_WEB_IDENTITY_TOKEN_FILE``: no)."""
    parts = [part for part in re.split(r"[^A-Z0-9]+", name.upper()) if part]
    if not parts or parts[-1] in _NOT_A_VALUE:
        return False
    return any(part in _SECRET_PARTS for part in parts)


# --- the secrets the process knows -----------------------------------------------------------------------

# "Bearer abc", "Basic abc", "Token abc": the credential alone is also a secret (a server may echo just it).
_SCHEME: Final = re.compile(r"^\s*[A-Za-z][A-Za-z0-9_-]*\s+(\S+)\s*$")


def _environment_state() -> tuple[Any, ...]:
    # os.environ decodes every item it yields; its raw dict compares without that.
    raw = getattr(os.environ, "_data", None)
    return tuple(raw.items()) if isinstance(raw, dict) else tuple(os.environ.items())


class _Known:
    """The secrets of this process: registered ones, and the environment's, made again when it changed."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._registered: dict[str, str] = {}  # value -> name
        self._environment: tuple[Any, ...] | None = None  # the environment the table was made from
        #: (text as it may appear, label), longest first: a secret inside a longer one never splits it.
        self._table: tuple[tuple[str, str], ...] = ()

    def register(self, name: str, value: str) -> None:
        candidates = [value.strip()]
        scheme = _SCHEME.match(value)
        if scheme:
            candidates.append(scheme.group(1))
        with self._lock:
            for candidate in candidates:
                if len(candidate) >= MIN_SECRET_LENGTH and candidate not in self._registered:
                    self._registered[candidate] = name
                    self._environment = None  # make the table again

    def table(self) -> tuple[tuple[str, str], ...]:
        state = _environment_state()
        with self._lock:
            if state != self._environment:
                found: dict[str, str] = {}
                for name, raw in os.environ.items():
                    value = raw.strip()
                    if len(value) >= MIN_SECRET_LENGTH and is_secret_name(name):
                        found.setdefault(value, name)
                for value, name in self._registered.items():
                    found.setdefault(value, name)
                table: dict[str, str] = {}
                for value, name in found.items():
                    label = f"[redacted:{name}]"
                    # As it appears in JSON text too (a quote or backslash in a secret is escaped there).
                    for form in (value, json.dumps(value, ensure_ascii=False)[1:-1], json.dumps(value)[1:-1]):
                        table.setdefault(form, label)
                self._table = tuple(sorted(table.items(), key=lambda item: -len(item[0])))
                self._environment = state
            return self._table


_KNOWN: Final = _Known()


def register_secret(name: str, value: str) -> None:
    """Make ``value`` (read from the environment variable or header ``name``) a secret from now on.

    Called where Simulator reads a credential: ``api_key_env`` of a model role or an HTTP agent, an HTTP
    agent's ``headers_from_env``. A header value ``Bearer X`` also makes ``X`` a secret. Values shorter than
    :data:`MIN_SECRET_LENGTH` are ignored.
    """
    _KNOWN.register(name, value)


def register_url_credentials(name: str, url: str) -> None:
    """Make the credentials in ``url`` (its ``user:password@`` part; ``name`` says where the URL was set, as
    ``models.judge.api_base``) secrets from now on, in every form they leave the process in.

    An HTTP client sends them as ``Authorization: Basic base64(user:password)``, and a server may echo the
    header, its base64, the pair or the password alone: each of these, as written in the URL and
    percent-decoded, is registered. A user without a password is a token (``https://TOKEN@host``) and is
    registered itself, when it is as long as a secret. A URL without credentials registers nothing.
    """
    try:
        parts = urlsplit(url.strip())
    except ValueError:
        return  # not a URL a client could send either
    if "@" not in parts.netloc:
        return
    userinfo = parts.netloc.rpartition("@")[0]
    if userinfo.startswith(_LABEL_START):
        return  # a stored URL whose credentials were redacted: nothing secret is left in it
    user, colon, password = userinfo.partition(":")
    if not colon and len(unquote(user)) < MIN_SECRET_LENGTH:
        return  # a short name alone (ssh://git@host) is no credential, as the URL rule has it
    for raw_user, raw_password in {(user, password), (unquote(user), unquote(password))}:
        secret = raw_password if colon else raw_user
        pair = f"{raw_user}:{raw_password}"
        encoded = base64.b64encode(pair.encode()).decode("ascii")
        for value in (secret, pair, f"Basic {encoded}", encoded.rstrip("=")):
            _KNOWN.register(name, value)


def register_environment() -> None:
    """Register every environment variable that holds a secret now (:func:`is_secret_name`), and the credentials
    in every URL-valued one (:func:`register_url_credentials`: ``OPENAI_BASE_URL``, a proxy's URL...), so they
    stay secrets if the variable changes or is removed later in the process."""
    for name, value in list(os.environ.items()):
        if is_secret_name(name):
            _KNOWN.register(name, value)
        if "://" in value and "@" in value:
            register_url_credentials(name, value)


# --- credentials in URLs ---------------------------------------------------------------------------------

# A URL is a scheme, "://" and what follows up to white space, quotes, angle brackets or a backslash (an
# escape in JSON text). Found from each "://" (a regex scanning every word for a scheme is 20 times slower).
_SCHEME_CHARACTERS: Final = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789+.-")
_URL_END: Final = re.compile(r"""[\s"'<>\\`]""")
_USERINFO: Final = re.compile(r"^([A-Za-z][A-Za-z0-9+.-]*://)([^/?#@]+)@")
_QUERY_PARAMETER: Final = re.compile(r"([?&;])([^=&#;?]+)=([^&#;]*)")
_SECRET_PARAMETER: Final = re.compile(
    r"key|token|secret|passw|pwd|signature|credential|auth|session|^sig$|^code$", re.IGNORECASE
)
#: Cheap first look (substring tests are 20 times faster than the regex): could a parameter be a secret?
_SECRET_PARAMETER_PARTS: Final = (
    "key", "token", "secret", "passw", "pwd", "credential", "auth", "session", "sig", "code",
)  # fmt: skip
_URL_LABEL: Final = "[redacted:url]"


def _redact_parameter(match: re.Match[str]) -> str:
    mark, name, value = match.groups()
    if len(unquote(value)) < MIN_SECRET_LENGTH or not _SECRET_PARAMETER.search(unquote(name)):
        return match.group(0)
    return f"{mark}{name}={_URL_LABEL}"


def _redact_url(url: str) -> str:
    """The URL with its credentials redacted; ``url`` itself when it has none."""
    result = url
    userinfo = _USERINFO.match(url) if "@" in url else None
    if userinfo and (":" in userinfo.group(2) or len(userinfo.group(2)) >= MIN_SECRET_LENGTH):
        result = f"{userinfo.group(1)}{_URL_LABEL}@{url[userinfo.end() :]}"
    if "=" in result and any(part in result.lower() for part in _SECRET_PARAMETER_PARTS):
        result = _QUERY_PARAMETER.sub(_redact_parameter, result)
    return url if result == url else result


def _redact_urls(text: str) -> str:
    parts: list[str] = []
    done = 0  # text[:done] is in parts
    found = text.find("://")
    while found != -1:
        start = found
        while start > done and text[start - 1] in _SCHEME_CHARACTERS:
            start -= 1
        while start < found and not text[start].isalpha():
            start += 1  # a scheme starts with a letter
        end_match = _URL_END.search(text, found + 3)
        end = len(text) if end_match is None else end_match.start()
        url = text[start:end]
        redacted = _redact_url(url) if start < found and ("@" in url or "=" in url) else url
        if redacted is not url:
            parts += [text[done:start], redacted]
            done = end
        found = text.find("://", max(end, found + 3))
    return "".join([*parts, text[done:]]) if parts else text


# --- redaction -------------------------------------------------------------------------------------------


def redact(text: str) -> str:
    """``text`` with every secret the process knows replaced by ``[redacted:NAME]`` (see the module doc).

    Returns ``text`` itself (the same object) when there was nothing to replace.
    """
    result = text
    table = _KNOWN.table()
    for secret, label in table:
        if secret in result:
            result = result.replace(secret, label)
    if "://" in result:
        result = _redact_urls(result)
    result = _redact_cut_end(result, table)
    return text if result == text else result


_CUT_MARKS: Final = ("…", "...")
_LABEL_START: Final = "[redacted:"


def _redact_cut_end(text: str, table: tuple[tuple[str, str], ...]) -> str:
    """``text`` with a secret cut at its end (``... sk-abc12`` or ``sk-abc12…``) redacted."""
    end = len(text)
    for mark in _CUT_MARKS:
        if text.endswith(mark):
            end -= len(mark)
            break
    # Longest secrets first (the table's order): the longest cut piece wins.
    for secret, label in table:
        # Only the last len(secret) - 1 characters can hold a proper prefix of it: a bounded look per secret.
        start = text.find(secret[:MIN_CUT_LENGTH], max(0, end - len(secret) + 1), end)
        while start != -1:
            if secret.startswith(text[start:end]):
                return f"{text[:start]}{label}{text[end:]}"
            start = text.find(secret[:MIN_CUT_LENGTH], start + 1, end)
    return text


def redacted_and_shortened(text: str, limit: int, mark: str = "…", *, flat: bool = False) -> str:
    """``text`` redacted (:func:`redact`), then cut to ``limit`` characters ending in ``mark`` when longer; with
    ``flat``, on one line first (every run of whitespace, line breaks included, one space). The one text shortener
    of the package: every shortened text it shows or stores is cut here.

    Redacting first means the cut can never leave a piece of a secret: a ``[redacted:NAME]`` label the cut
    splits is dropped whole, never left half.
    """
    result = redact(" ".join(text.split()) if flat else text)
    if len(result) <= limit:
        return result
    end = max(0, limit - len(mark))
    label = result.rfind(_LABEL_START, 0, end + len(_LABEL_START) - 1)
    if label != -1 and label < end and result.find("]", label) >= end:
        end = label
    return result[:end] + mark


def contains_secret(data: str | bytes) -> bool:
    """Whether :func:`redact` would change ``data`` (bytes are read as UTF-8, undecodable bytes skipped)."""
    text = data.decode("utf-8", "replace") if isinstance(data, bytes) else data
    return redact(text) is not text


def redact_data(value: T) -> T:
    """``value`` with :func:`redact` applied to every string in it: in dicts (keys too), lists, tuples, sets
    and pydantic models (copied, never changed in place). Returns ``value`` itself when nothing changed."""
    result: Any = value
    if isinstance(value, str):
        result = redact(value)
    elif isinstance(value, Mapping):
        items = [(redact_data(key), redact_data(item)) for key, item in value.items()]
        if any(new[0] is not old[0] or new[1] is not old[1] for new, old in zip(items, value.items(), strict=True)):
            result = dict(items)
    elif isinstance(value, list | tuple | set | frozenset):
        items_ = [redact_data(item) for item in value]
        if any(new is not old for new, old in zip(items_, value, strict=True)):
            result = type(value)(items_) if not hasattr(value, "_fields") else type(value)(*items_)
    else:
        fields = getattr(type(value), "model_fields", None)
        if isinstance(fields, dict) and hasattr(value, "model_copy"):
            update = {}
            for name in fields:
                old = getattr(value, name, None)
                new = redact_data(old)
                if new is not old:
                    update[name] = new
            if update:
                result = value.model_copy(update=update)
    return result  # type: ignore[no-any-return]


# --- control characters ----------------------------------------------------------------------------------

_JSON_UNSAFE: Final = re.compile(f"[{UNSAFE_CHARACTERS}]")


def _json_escape(match: re.Match[str]) -> str:
    return f"\\u{ord(match.group(0)):04x}"


def json_safe(text: str) -> str:
    """JSON text with the characters :func:`terminal_safe` escapes written as JSON ``\\uXXXX`` escapes.

    Such characters can only stand inside JSON strings, where the escape means the same character: the
    document still parses to the same values. (White space between tokens is never touched.)
    """
    if _JSON_UNSAFE.search(text) is None:
        return text
    return _JSON_UNSAFE.sub(_json_escape, text)
