"""Install one peer evaluator in a bench-only virtual environment, for ``bench/cost.py``.

    python bench/cost_peers/setup.py PEER VENV_DIR

``PEER`` is ``scenario``, ``deepeval`` or ``openevals``. Creates ``VENV_DIR`` (``python -m venv``), pip-installs the
peer at the versions its driver was tested with (from the package registry, as ``pip`` is set up on the machine),
and writes a marker, ``VENV_DIR/bench-peer.json``, with the peer, its pins and the versions installed. Run again
with the marker in place and the same pins, it does nothing. Never touches the project's own environment.

Exit 0 when the peer is ready (its driver then runs as ``VENV_DIR/bin/python bench/cost_peers/PEER.py``), 2 with
a one-line reason on stderr when it cannot be (an unknown peer, no venv, no registry, a failed build, ...).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

# The versions the drivers were run with; the libraries that decide what each peer sends are pinned too.
PINS: dict[str, tuple[str, ...]] = {
    "scenario": ("langwatch-scenario==1.6.0", "litellm==1.110.2"),
    "deepeval": ("deepeval==4.3.1", "openai==3.63.0"),
    "openevals": ("openevals==0.2.2", "langchain==1.5.2", "langchain-openai==1.8.1", "langchain-core==1.8.3"),
}
MARKER = "bench-peer.json"
PIP_TIMEOUT_S = 1200


class SetupError(Exception):
    """Why the peer cannot be installed, in one line."""


def marker_for(peer: str, versions: dict[str, str]) -> dict[str, object]:
    """What the marker records: the peer, its pins, and the versions pip installed."""
    return {"peer": peer, "pins": list(PINS[peer]), "versions": versions}


def is_ready(peer: str, venv: Path) -> bool:
    """Whether ``venv`` holds ``peer`` at today's pins (its marker says so and its python is there)."""
    try:
        recorded = json.loads((venv / MARKER).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return False
    return (
        isinstance(recorded, dict)
        and recorded.get("peer") == peer
        and recorded.get("pins") == list(PINS[peer])
        and python_of(venv).exists()
    )


def python_of(venv: Path) -> Path:
    """The virtual environment's interpreter."""
    return venv / ("Scripts/python.exe" if os.name == "nt" else "bin/python")


def _environment() -> dict[str, str]:
    # The caller's PYTHONPATH (the project's tree) stays out of the peer's environment.
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONHOME", "VIRTUAL_ENV")}
    env["PIP_DISABLE_PIP_VERSION_CHECK"] = "1"
    return env


def _last_error(output: str) -> str:
    lines = [line.strip() for line in output.splitlines() if line.strip()]
    errors = [line for line in lines if line.startswith("ERROR:") or "error:" in line.lower()]
    return (errors or lines or ["no output"])[-1][:300]


def _run(command: list[str], what: str) -> str:
    try:
        done = subprocess.run(
            command, capture_output=True, text=True, env=_environment(), timeout=PIP_TIMEOUT_S, check=False
        )
    except (OSError, subprocess.TimeoutExpired) as error:
        raise SetupError(f"{what}: {error}") from None
    if done.returncode != 0:
        raise SetupError(f"{what} failed: {_last_error(done.stderr + done.stdout)}")
    return done.stdout


def install(peer: str, venv: Path) -> dict[str, str]:
    """Create ``venv`` if needed, install the peer's pins in it, write the marker; the versions installed."""
    if not python_of(venv).exists():
        _run([sys.executable, "-m", "venv", str(venv)], f"creating the virtual environment {venv}")
    python = str(python_of(venv))
    _run([python, "-m", "pip", "install", "--quiet", *PINS[peer]], f"pip install {' '.join(PINS[peer])}")
    names = [pin.split("==", 1)[0] for pin in PINS[peer]]
    script = (
        "import json, sys\nfrom importlib import metadata\n"
        "print(json.dumps({n: metadata.version(n) for n in sys.argv[1:]}))"
    )
    versions: dict[str, str] = json.loads(_run([python, "-c", script, *names], "reading the installed versions"))
    (venv / MARKER).write_text(json.dumps(marker_for(peer, versions), indent=2) + "\n", encoding="utf-8")
    return versions


def main(argv: list[str] | None = None) -> int:
    """Install (see the module docstring); 0 when ready, 2 with a one-line reason when not."""
    args = sys.argv[1:] if argv is None else argv
    if len(args) != 2:
        print(f"usage: python bench/cost_peers/setup.py PEER VENV_DIR (PEER: {', '.join(PINS)})", file=sys.stderr)
        return 2
    peer, venv = args[0], Path(args[1]).resolve()
    if peer not in PINS:
        print(f"setup: unknown peer {peer!r}: give one of {', '.join(PINS)}", file=sys.stderr)
        return 2
    if is_ready(peer, venv):
        print(f"{peer}: ready in {venv} (marker {MARKER})")
        return 0
    try:
        versions = install(peer, venv)
    except SetupError as error:
        print(f"{peer}: not installed: {error}", file=sys.stderr)
        return 2
    print(f"{peer}: installed in {venv}: {', '.join(f'{k} {v}' for k, v in versions.items())}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
