"""The app's safety rules, kept for every request before it reaches a page.

- Listening on loopback, the app answers only requests addressed to a loopback name (a page elsewhere cannot
  reach it by pointing its own name at 127.0.0.1: DNS rebinding).
- Listening elsewhere, every request carries the token printed at start: ``?token=`` once (answered with a
  cookie and a redirect to the same address without it), then the cookie; or the ``X-Simulator-Token`` header.
- A write (POST) needs the token in its header, or comes from the app's own pages: its ``Origin`` (else its
  ``Referer``) names the very host and port the request was sent to.
- Every answer says ``Content-Security-Policy: default-src 'none'``: styles and scripts only from the app's own
  ``/static/`` files, no inline script, no request anywhere but the app; the report's outcome bar sizes its
  segments with style attributes, allowed by their hashes one by one.
"""

from __future__ import annotations

import secrets
from urllib.parse import urlencode, urlsplit

from starlette.requests import Request
from starlette.responses import PlainTextResponse, RedirectResponse, Response

__all__ = ["COOKIE", "HEADER", "content_security_policy", "refusal", "security_headers"]

#: The cookie that carries the token after the first request.
COOKIE = "simulator_view_token"
#: The header a script or another program sends the token in.
HEADER = "x-simulator-token"

_LOOPBACK_NAMES = {"127.0.0.1", "localhost", "::1", "[::1]"}


# Only the renderer writes style attributes: run text is escaped, so its quotes never close one.
def content_security_policy() -> str:
    """The policy of every answer: nothing but the app's own scripts, styles and requests (no inline script, no
    style attribute), no frames, no form sent elsewhere."""
    return (
        "default-src 'none'; style-src 'self'; script-src 'self'; connect-src 'self'; img-src 'self' data:; "
        "media-src 'self'; "
        "base-uri 'none'; form-action 'self'; frame-ancestors 'none'"
    )


def security_headers(response: Response) -> Response:
    """``response`` with the headers every answer carries (its own CSP kept when it set one)."""
    headers = response.headers
    headers.setdefault("content-security-policy", content_security_policy())
    headers["x-content-type-options"] = "nosniff"
    headers["x-frame-options"] = "DENY"
    headers["referrer-policy"] = "same-origin"
    headers["cache-control"] = "no-store"
    headers["cross-origin-opener-policy"] = "same-origin"
    headers["cross-origin-resource-policy"] = "same-origin"
    return response


def _host_name(host: str) -> str:
    if host.startswith("["):
        return host[: host.find("]") + 1] if "]" in host else host
    return host.rsplit(":", 1)[0] if host.count(":") == 1 else host


def _same_origin(request: Request) -> bool:
    host = request.headers.get("host", "")
    origin = request.headers.get("origin")
    if origin is None or origin == "null":
        origin = request.headers.get("referer")
    if not origin or not host:
        return False
    parts = urlsplit(origin)
    return parts.scheme in {"http", "https"} and parts.netloc.lower() == host.lower()


def _token_matches(given: str | None, token: str) -> bool:
    return given is not None and secrets.compare_digest(given.encode("utf-8"), token.encode("utf-8"))


def refusal(request: Request, *, token: str | None, loopback: bool) -> Response | None:
    """The answer that refuses ``request`` (or that trades its ``?token=`` for a cookie), or None to serve it."""
    if loopback and _host_name(request.headers.get("host", "")).lower() not in _LOOPBACK_NAMES:
        return PlainTextResponse(
            "refused: this app answers only requests to localhost or 127.0.0.1 (start it with --host to serve others)",
            status_code=403,
        )
    header_ok = token is not None and _token_matches(request.headers.get(HEADER), token)
    if token is not None and not header_ok:
        query = request.query_params.get("token")
        if _token_matches(query, token) and request.method == "GET":
            rest = [(key, value) for key, value in request.query_params.multi_items() if key != "token"]
            target = request.url.path + ("?" + urlencode(rest) if rest else "")
            redirect = RedirectResponse(target, status_code=303)
            redirect.set_cookie(COOKIE, token, httponly=True, samesite="strict", path="/")
            return redirect
        if not _token_matches(request.cookies.get(COOKIE), token):
            return PlainTextResponse(
                "refused: this app needs the token printed when `simulator view` started (open the address it "
                "printed, with ?token=...)",
                status_code=401,
            )
    if request.method not in {"GET", "HEAD"} and not header_ok and not _same_origin(request):
        return PlainTextResponse(
            "refused: a change must come from the app's own pages (same origin) or carry the token header",
            status_code=403,
        )
    return None
