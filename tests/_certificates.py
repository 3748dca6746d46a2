"""A self-signed certificate for 127.0.0.1, made with the ``openssl`` command (the test skips without it)."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest


def self_signed_certificate(folder: Path) -> tuple[Path, Path]:
    """The certificate and key files, in ``folder``."""
    if shutil.which("openssl") is None:
        pytest.skip("needs the openssl command to make a certificate")
    cert, key = folder / "cert.pem", folder / "key.pem"
    subprocess.run(
        [
            "openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "2", "-subj", "/CN=127.0.0.1",
            "-addext", "subjectAltName=IP:127.0.0.1", "-keyout", str(key), "-out", str(cert),
        ],
        check=True, capture_output=True,
    )  # fmt: skip
    return cert, key
