"""Shared test setup. Tests never reach a model provider or any other host.

* litellm runs in offline mode (no price-list or tokenizer downloads);
* provider API keys are removed from the environment, so a suite that names a real model fails fast with a
  clear error instead of calling it;
* every socket connection and name lookup outside this machine fails at once: a test that tries to reach
  the network is a bug, and must not hang or succeed.
"""

from __future__ import annotations

import ipaddress
import os
import socket
from typing import Any

os.environ.setdefault("LITELLM_OFFLINE_MODE", "true")
os.environ["LITELLM_LOCAL_MODEL_COST_MAP"] = "True"
for _name in list(os.environ):
    if _name.endswith(("_API_KEY", "_API_TOKEN")) or _name in ("OPENAI_BASE_URL", "OPENAI_API_BASE"):
        del os.environ[_name]

_LOCAL_NAMES = {"localhost", "localhost.localdomain", "ip6-localhost"}


def _is_local(host: Any) -> bool:
    if host is None or host in _LOCAL_NAMES or host == "":
        return True
    try:
        return ipaddress.ip_address(str(host).split("%")[0]).is_loopback
    except ValueError:
        return False


class NetworkBlocked(OSError):
    """Raised when a test tries to reach anything but this machine."""


_real_connect = socket.socket.connect
_real_connect_ex = socket.socket.connect_ex
_real_getaddrinfo = socket.getaddrinfo


def _guard(address: Any) -> None:
    if isinstance(address, tuple) and not _is_local(address[0]):
        raise NetworkBlocked(f"tests may not reach {address[0]!r}: use the offline fakes")


def _connect(self: socket.socket, address: Any) -> None:
    if self.family in (socket.AF_INET, socket.AF_INET6):
        _guard(address)
    _real_connect(self, address)


def _connect_ex(self: socket.socket, address: Any) -> int:
    if self.family in (socket.AF_INET, socket.AF_INET6):
        _guard(address)
    return _real_connect_ex(self, address)


def _getaddrinfo(host: Any, *args: Any, **kwargs: Any) -> Any:
    if not _is_local(host if not isinstance(host, bytes) else host.decode()):
        raise NetworkBlocked(f"tests may not look up {host!r}: use the offline fakes")
    return _real_getaddrinfo(host, *args, **kwargs)


socket.socket.connect = _connect  # type: ignore[method-assign,assignment]
socket.socket.connect_ex = _connect_ex  # type: ignore[method-assign,assignment]
socket.getaddrinfo = _getaddrinfo
