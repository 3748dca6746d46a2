"""``simulator view``: every stored run in one local web app (a small Starlette app served by uvicorn, an
optional extra: ``pip install 'simulator[view]'``).

A front end like the command line: it imports names of :mod:`simulator` only, and is the only importer of
starlette and uvicorn. ``_app`` builds the app (routes, JSON endpoints, run actions), ``_pages`` writes its own
pages around the report's parts, ``_guard`` keeps the safety rules (loopback, token, same origin, CSP), ``_jobs``
starts ``runs resume`` and ``runs repeat`` as processes of their own.
"""

from __future__ import annotations

import secrets
import webbrowser
from pathlib import Path
from typing import TYPE_CHECKING

from simulator import InputError

if TYPE_CHECKING:
    from starlette.applications import Starlette

__all__ = ["DEFAULT_PORT", "EXTRA_HINT", "create_app", "is_loopback", "serve"]

#: The port ``simulator view`` listens on unless told otherwise.
DEFAULT_PORT = 8710
#: What to install when the web app's libraries are missing.
EXTRA_HINT = "simulator view needs its optional libraries: pip install 'simulator[view]'"

_LOOPBACK = {"127.0.0.1", "localhost", "::1"}


def is_loopback(host: str) -> bool:
    """Whether ``host`` is this machine only (127.0.0.0/8, ``localhost``, ``::1``)."""
    return host in _LOOPBACK or host.startswith("127.")


def _require_extra() -> None:
    from importlib.util import find_spec

    if find_spec("starlette") is None or find_spec("uvicorn") is None:
        raise InputError(EXTRA_HINT)


def create_app(db: str | Path | None = None, *, token: str | None = None, loopback: bool = True) -> Starlette:
    """The web app over the run store ``db`` (default: the one ``simulator`` finds). With ``token`` every request
    must carry it (``?token=`` once, then its cookie; or the ``X-Simulator-Token`` header); ``loopback`` says the
    app listens on this machine only, so it answers only requests addressed to a loopback name."""
    _require_extra()
    from simulator.viewer._app import build_app

    return build_app(db, token=token, loopback=loopback)


def serve(
    db: str | Path | None = None,
    *,
    port: int | None = None,
    host: str = "127.0.0.1",
    open_browser: bool = True,
) -> None:
    """Serve the web app on ``host:port`` (default :data:`DEFAULT_PORT`) until Ctrl-C (blocking), opening it in
    the browser unless told not to. A host other than loopback gets a random token, printed with the address,
    that every request needs."""
    _require_extra()
    import uvicorn

    import simulator

    path = simulator.store_path(db)
    if not path.is_file():
        raise InputError(
            f"no run store at {path}: run a suite first (simulator run SUITE) or give the store with --db FILE"
        )
    port = DEFAULT_PORT if port is None else port
    loopback = is_loopback(host)
    token = None if loopback else secrets.token_urlsafe(24)
    app = create_app(path, token=token, loopback=loopback)
    shown = f"[{host}]" if ":" in host else host
    address = f"http://{shown}:{port}/" + (f"?token={token}" if token else "")
    print(f"Simulator view of {path} at {address} (Ctrl-C to stop)", flush=True)
    if token:
        print("Every request needs the token above: share the address only with people who may write notes.")
    if open_browser:
        webbrowser.open(address)
    uvicorn.run(app, host=host, port=port, log_level="warning", server_header=False)
