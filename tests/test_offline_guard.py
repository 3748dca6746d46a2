"""The test suite cannot reach the network (see conftest.py): pin it, so the guard is never lost."""

from __future__ import annotations

import socket

import pytest


def test_outside_hosts_are_blocked() -> None:
    with pytest.raises(OSError, match="tests may not"):
        socket.getaddrinfo("api.openai.com", 443)
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock, pytest.raises(OSError, match="tests may not"):
        sock.connect(("8.8.8.8", 443))


def test_loopback_is_allowed() -> None:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as server:
        server.bind(("127.0.0.1", 0))
        server.listen(1)
        with socket.create_connection(server.getsockname(), timeout=2):
            pass
