"""The app: its routes (pages, JSON endpoints, downloads, run actions) over one run store.

The store is opened for each request and closed after it; SQLite's write-ahead log lets a request read while a
run writes, so a page never waits for a running run (and never holds it up)."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, quote

from starlette.applications import Starlette
from starlette.middleware import Middleware
from starlette.middleware.base import BaseHTTPMiddleware, RequestResponseEndpoint
from starlette.requests import Request
from starlette.responses import FileResponse, HTMLResponse, JSONResponse, RedirectResponse, Response
from starlette.routing import Route

import simulator
from simulator import html_text as _e
from simulator.viewer import _guard, _jobs, _pages

#: Where the app serves the voice conversations' audio files (a file's name, as its transcript gives it, follows).
AUDIO_BASE = "/audio/"

__all__ = ["build_app"]

_ASSETS = Path(__file__).parent / "assets"
_MEDIA = {
    "html": "text/html; charset=utf-8",
    "md": "text/markdown; charset=utf-8",
    "json": "application/json",
    "csv": "text/csv; charset=utf-8",
    "xlsx": "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet",
    "junit": "application/xml",
}
_STATIC = {
    "report.css": "text/css; charset=utf-8",
    "report.js": "text/javascript; charset=utf-8",
    "compare.css": "text/css; charset=utf-8",
    "view.css": "text/css; charset=utf-8",
    "view.js": "text/javascript; charset=utf-8",
}


def _static_text(name: str) -> str:
    if name.startswith("view."):
        return (_ASSETS / name).read_text(encoding="utf-8")
    return simulator.page_asset(name)


def _page(html: str, status: int = 200) -> HTMLResponse:
    response = HTMLResponse(html, status_code=status)
    response.headers["content-security-policy"] = _guard.content_security_policy()
    return response


def _fragment(html: str, status: int = 200) -> HTMLResponse:
    """Part of a page, for the page's script to put in place (never a page of its own: no styles, no scripts)."""
    response = HTMLResponse(html, status_code=status)
    response.headers["content-security-policy"] = _guard.content_security_policy()
    return response


def _not_found(what: str) -> HTMLResponse:
    return _page(_pages.message_page("Not found", [what]), 404)


class _Handlers:
    """The route handlers over one store."""

    def __init__(self, db: Path | None) -> None:
        self.db = db
        self.store = simulator.store_path(db)

    async def _call(self, function: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
        # Store reads block: off the event loop, so one slow page does not stall the others.
        return await asyncio.to_thread(function, *args, **kwargs)

    def _rows(self, left_out: list[str]) -> list[_pages.RunRow]:
        skipped: list[simulator.Unreadable] = []
        listings = simulator.list_run_listings(db=self.db, skipped=skipped)
        left_out.extend(item.describe() for item in skipped)
        reviewed = simulator.reviewed_runs(db=self.db)
        return [_pages.run_row(listing, self.db, reviewed.get(listing.id)) for listing in listings]

    def _listed(self, request: Request) -> tuple[list[_pages.RunRow], int, dict[str, str], list[str]]:
        query = {key: request.query_params.get(key, "") for key in ("q", "status", "sort", "order")}
        left_out: list[str] = []
        rows = self._rows(left_out)
        shown = _pages.sorted_rows(
            rows, q=query["q"], status=query["status"], sort=query["sort"], descending=query["order"] == "desc"
        )
        return shown, len(rows), {key: value for key, value in query.items() if value}, left_out

    async def runs(self, request: Request) -> Response:
        shown, total, query, left_out = await self._call(self._listed, request)
        return _page(_pages.runs_page(shown, total, query, left_out))

    async def runs_json(self, request: Request) -> Response:
        shown, total, _, left_out = await self._call(self._listed, request)
        return JSONResponse({"runs": [row.as_json() for row in shown], "total": total, "left_out": left_out})

    async def run_status(self, request: Request) -> Response:
        try:
            state = await self._call(simulator.run_state, request.path_params["run"], db=self.db)
        except simulator.InputError as exc:
            return JSONResponse({"error": str(exc)}, status_code=404)
        return JSONResponse(
            {
                "id": state.id,
                "status": state.status,
                "planned": state.planned,
                "stored": state.stored,
                "counts": state.counts,
                "running_by": state.running_by,
            }
        )

    async def run(self, request: Request) -> Response:
        run_ref = request.path_params["run"]
        try:
            parts = await self._call(simulator.run_page, run_ref, db=self.db, details=False, audio_base=AUDIO_BASE)
            state = await self._call(simulator.run_state, run_ref, db=self.db)
        except simulator.InputError as exc:
            return _not_found(str(exc))
        live = (
            f"<p class='live' data-run='{_e(state.id)}' data-stored='{state.stored}' data-status='{_e(state.status)}'>"
            f"Running: {state.stored} of {state.planned} conversations stored; this page follows it.</p>"
            if state.status == "running"
            else ""
        )
        run = quote(state.id, safe="")
        links = (
            f"<nav class='view-run-links'>{_pages.downloads(state.id)} · "
            f"<a href='/runs/{_e(run)}/digest'>Failure digest</a> · "
            f"<a href='/compare?b={_e(run)}'>Compare with another run</a></nav>"
        )
        body = (
            f"{live}{links}{parts.body}<script type='application/json' id='simulator-report-data'>{parts.data}</script>"
        )
        html = _pages.layout(parts.title, body, scripts=("report.js", "view.js"), styles=("report.css", "view.css"))
        return _page(html)

    async def digest(self, request: Request) -> Response:
        try:
            parts = await self._call(simulator.digest_page, request.path_params["run"], db=self.db)
        except simulator.InputError as exc:
            return _not_found(str(exc))
        run = quote(request.path_params["run"], safe="")
        body = f"<p><a href='/runs/{_e(run)}'>Back to the run</a></p>{parts.body}"
        return _page(_pages.layout(parts.title, body, styles=("report.css", "view.css")))

    async def conversation(self, request: Request) -> Response:
        run_ref = request.path_params["run"]
        key = request.query_params.get("key", "")
        part = request.query_params.get("part", "")
        if part:
            return await self._part(run_ref, key, part, request.query_params.get("n", ""))
        try:
            run_id = (await self._call(simulator.find_run, run_ref, db=self.db))[0]
            targets = await self._call(simulator.review_targets, run_id, key, db=self.db)
            beside = _pages.review_forms(run_id, key, targets)
            parts = await self._call(
                simulator.conversation_page, run_id, key, db=self.db, beside=beside, audio_base=AUDIO_BASE
            )
        except simulator.InputError as exc:
            return _not_found(str(exc))
        if parts is None:
            return _not_found(f"run {run_ref} has no conversation {key!r}")
        run = quote(run_id, safe="")
        body = f"<p><a href='/runs/{_e(run)}'>Back to the run</a></p>{parts.body}"
        html = _pages.layout(parts.title, body, scripts=("view.js",), styles=("report.css", "view.css"))
        return _page(html)

    async def _part(self, run_ref: str, key: str, part: str, number: str) -> Response:
        """What a case's card on the run page loads when it is opened: its body, or its transcript, world and
        scores (the card's ``number`` on the page names the parts' element ids)."""
        if part != "body" and part != "detail":  # noqa: PLR1714 - the comparisons narrow the type
            return _fragment(f"<p class='bad'>part must be body or detail, not {_e(part)}</p>", 400)
        if not number.isdigit() or not 0 < int(number) < 10**9:
            return _fragment(f"<p class='bad'>n must be the case's number on the page, not {_e(number)}</p>", 400)
        try:
            parts = await self._call(
                simulator.conversation_page,
                run_ref,
                key,
                db=self.db,
                number=int(number),
                part=part,
                audio_base=AUDIO_BASE,
            )
        except simulator.InputError as exc:
            return _fragment(f"<p class='bad'>{_e(exc)}</p>", 404)
        if parts is None:
            return _fragment(f"<p class='bad'>run {_e(run_ref)} has no conversation {_e(key)}</p>", 404)
        return _fragment(parts.body)

    async def search(self, request: Request) -> Response:
        try:
            keys = await self._call(
                simulator.search_results, request.path_params["run"], request.query_params.get("q", ""), db=self.db
            )
        except simulator.InputError as exc:
            return JSONResponse({"error": str(exc)}, status_code=404)
        return JSONResponse({"keys": keys})

    async def reviews(self, request: Request) -> Response:
        try:
            found = await self._call(simulator.reviews, request.path_params["run"], db=self.db)
        except simulator.InputError as exc:
            return JSONResponse({"error": str(exc)}, status_code=404)
        return JSONResponse([review.model_dump(mode="json") for review in found])

    async def add_review(self, request: Request) -> Response:
        run_ref = request.path_params["run"]
        as_json = _media(request) == "application/json"
        fields = await (_json_fields(request) if as_json else _form_fields(request))
        if fields is None:
            return _review_refused(as_json, run_ref, "", _REVIEW_RULE, 400)
        key = fields.get("key", "")
        try:
            run_id = (await self._call(simulator.find_run, run_ref, db=self.db))[0]
        except simulator.InputError as exc:
            return _review_refused(as_json, run_ref, key, str(exc), 404)
        try:
            review = await self._call(
                simulator.add_review,
                run_id,
                key,
                target=fields.get("target", ""),
                verdict=fields.get("verdict", ""),
                reason=fields.get("reason", ""),
                reviewer=fields.get("reviewer", ""),
                db=self.db,
            )
        except simulator.InputError as exc:
            return _review_refused(as_json, run_id, key, str(exc), 400)
        except simulator.StoreError as exc:
            return _review_refused(as_json, run_id, key, str(exc), 409)
        if as_json:
            return JSONResponse(review.model_dump(mode="json"), status_code=201)
        return RedirectResponse(_conversation_url(run_id, key) + "#review", status_code=303)

    async def report(self, request: Request) -> Response:
        run_ref, fmt = request.path_params["run"], request.path_params["fmt"]
        if fmt not in _MEDIA:
            return _not_found(f"no report format {fmt!r}: one of {', '.join(_MEDIA)}")
        try:
            report = await self._call(simulator.run_report, run_ref, fmt, db=self.db)
        except simulator.InputError as exc:
            return _not_found(str(exc))
        disposition = f"attachment; filename*=UTF-8''{quote(report.filename, safe='')}"
        return Response(report.data, media_type=_MEDIA[fmt], headers={"content-disposition": disposition})

    async def compare(self, request: Request) -> Response:
        a, b = request.query_params.get("a", ""), request.query_params.get("b", "")
        if not (a and b):
            rows = await self._call(self._rows, [])
            return _page(_pages.compare_picker(rows, a, b))
        try:
            parts = await self._call(simulator.comparison_page, a, b, db=self.db)
        except simulator.InputError as exc:
            return _not_found(str(exc))
        return _page(_pages.layout(parts.title, parts.body, styles=("compare.css", "view.css")))

    async def note(self, request: Request) -> Response:
        run_ref = request.path_params["run"]
        text = await _form_field(request, "note")
        if text is None:
            return _page(_pages.message_page("Note not saved", [_FORM_RULE]), 400)
        try:
            await self._call(self._save_note, run_ref, text)
        except simulator.InputError as exc:
            return _not_found(str(exc))
        return RedirectResponse("/", status_code=303)

    def _save_note(self, run_ref: str, text: str) -> None:
        """Store a run's note from its field. The field shows a stored note's bidi and control characters as
        visible escapes (every page does); a field saved as it was shown keeps the note as stored, rather than
        turning those characters into the escapes' letters."""
        _, record = simulator.find_run(run_ref, db=self.db)
        if record is not None and record.note != text and simulator.terminal_safe(record.note) == text:
            return
        simulator.note_run(run_ref, text, db=self.db)

    async def stop(self, request: Request) -> Response:
        try:
            said = await self._call(simulator.stop_run, request.path_params["run"], db=self.db)
        except simulator.InputError as exc:
            return _page(_pages.message_page("Not stopped", [str(exc)]), 409)
        return _page(_pages.message_page("Stopping", [said]))

    async def start(self, request: Request) -> Response:
        action = request.path_params["action"]
        try:
            record = (await self._call(simulator.find_run, request.path_params["run"], db=self.db))[1]
        except simulator.InputError as exc:
            return _not_found(str(exc))
        if record is None:
            return _page(_pages.message_page("Not started", ["this run's record cannot be read"]), 409)
        if refused := _refused(action, record):
            return _page(_pages.message_page("Not started", [refused]), 409)
        started = await self._call(_jobs.start, action, record.id, self.store)
        return _page(
            _pages.message_page(
                "Started",
                [
                    f"simulator runs {action} {record.id} started (pid {started.pid}); it shows in the runs list.",
                    f"Its output: {started.log}",
                ],
            )
        )

    async def audio(self, request: Request) -> Response:
        """A voice conversation's audio file, by the name its transcript gives it (range requests answered, so a
        turn's player starts at its turn)."""
        path = await self._call(simulator.audio_file, request.path_params["name"], db=self.db)
        if path is None:
            return _not_found(f"no audio file {request.path_params['name']!r} in this store")
        return FileResponse(path, media_type="audio/wav")

    async def static(self, request: Request) -> Response:
        name = request.path_params["name"]
        if name not in _STATIC:
            return _not_found(f"no file {name!r}")
        return Response(_static_text(name), media_type=_STATIC[name])


_REVIEW_FIELDS = ("key", "target", "verdict", "reason", "reviewer")
_REVIEW_RULE = (
    "send a review as a JSON object or a URL-encoded form (UTF-8, at most 64 KiB) with the text fields "
    + ", ".join(_REVIEW_FIELDS)
)


def _media(request: Request) -> str:
    return request.headers.get("content-type", "").split(";")[0].strip().lower()


def _conversation_url(run_id: str, key: str) -> str:
    return f"/runs/{quote(run_id, safe='')}/conversation?key={quote(key, safe='')}"


async def _json_fields(request: Request) -> dict[str, str] | None:
    """The review's fields of a JSON object body (each a string), or None for a body that is not one."""
    body = await request.body()
    if len(body) > _FORM_LIMIT:
        return None
    try:
        data = json.loads(body.decode("utf-8"))
    except (UnicodeDecodeError, ValueError):
        return None
    if not isinstance(data, dict) or not all(isinstance(data.get(name, ""), str) for name in _REVIEW_FIELDS):
        return None
    return {name: data.get(name, "") for name in _REVIEW_FIELDS}


async def _form_fields(request: Request) -> dict[str, str] | None:
    """The review's fields of a URL-encoded form, or None for a body that is not one."""
    found = {}
    for name in _REVIEW_FIELDS:
        value = await _form_field(request, name)  # the body is read once and kept by the request
        if value is None:
            return None
        found[name] = value
    return found


def _review_refused(as_json: bool, run_id: str, key: str, message: str, status: int) -> Response:
    """A review not recorded: the API's message as JSON (a script's request) or as a page (a plain form)."""
    if as_json:
        return JSONResponse({"error": message}, status_code=status)
    back = _conversation_url(run_id, key) + "#review" if key else "/"
    return _page(_pages.message_page("Review not saved", [message], back=back), status)


_FORM_LIMIT = 64 * 1024
_FORM_RULE = "send the note as a form field (application/x-www-form-urlencoded, UTF-8, at most 64 KiB)"


async def _form_field(request: Request, name: str) -> str | None:
    """The field ``name`` of a URL-encoded form (empty when absent), or None for a body that is not one."""
    if request.headers.get("content-type", "").split(";")[0].strip().lower() != "application/x-www-form-urlencoded":
        return None
    body = await request.body()
    if len(body) > _FORM_LIMIT:
        return None
    try:
        fields = parse_qs(body.decode("utf-8"), keep_blank_values=True, errors="strict")
    except UnicodeDecodeError:
        return None
    return fields.get(name, [""])[0]


def _refused(action: str, record: simulator.RunRecord) -> str:
    """Why the app does not start ``action`` on ``record`` (empty: it does)."""
    if action == "resume" and record.status not in {"interrupted", "failed"}:
        return f"run {record.id} is {record.status}: only an interrupted or failed run is resumed"
    if record.imported_from:
        return f"run {record.id} was imported: read its code and {action} it from a terminal with --yes"
    if action == "resume" and record.settings.live:
        return f"run {record.id} ran with --live: resume it from a terminal (simulator runs resume {record.id} --live)"
    return ""


class _Guard(BaseHTTPMiddleware):
    def __init__(self, app: Any, *, token: str | None, loopback: bool) -> None:
        super().__init__(app)
        self.token = token
        self.loopback = loopback

    async def dispatch(self, request: Request, call_next: RequestResponseEndpoint) -> Response:
        refused = _guard.refusal(request, token=self.token, loopback=self.loopback)
        response = refused if refused is not None else await call_next(request)
        return _guard.security_headers(response)


def build_app(db: str | Path | None, *, token: str | None, loopback: bool) -> Starlette:
    """The app over the store ``db`` (see :func:`simulator.viewer.create_app`)."""
    handlers = _Handlers(Path(db) if db is not None else None)
    routes = [
        Route("/", handlers.runs),
        Route("/api/runs", handlers.runs_json),
        Route("/api/runs/{run}/status", handlers.run_status),
        Route("/api/runs/{run}/reviews", handlers.reviews, methods=["GET"]),
        Route("/api/runs/{run}/reviews", handlers.add_review, methods=["POST"]),
        Route("/runs/{run}", handlers.run),
        Route("/runs/{run}/conversation", handlers.conversation),
        Route("/runs/{run}/search", handlers.search),
        Route("/runs/{run}/digest", handlers.digest),
        Route("/runs/{run}/report.{fmt}", handlers.report),
        Route("/runs/{run}/note", handlers.note, methods=["POST"]),
        Route("/runs/{run}/stop", handlers.stop, methods=["POST"]),
        Route("/runs/{run}/{action:str}", _only(("resume", "repeat"), handlers.start), methods=["POST"]),
        Route("/compare", handlers.compare),
        Route("/static/{name}", handlers.static),
        Route(AUDIO_BASE + "{name:path}", handlers.audio),
    ]
    middleware = [Middleware(_Guard, token=token, loopback=loopback)]

    async def not_found(request: Request, exc: Exception) -> Response:
        return _not_found(f"nothing at {request.url.path}")

    return Starlette(routes=routes, middleware=middleware, exception_handlers={404: not_found})


def _only(
    actions: tuple[str, ...], handler: Callable[[Request], Awaitable[Response]]
) -> Callable[[Request], Awaitable[Response]]:
    async def guarded(request: Request) -> Response:
        if request.path_params["action"] not in actions:
            return _not_found(f"no action {request.path_params['action']!r}")
        return await handler(request)

    return guarded
