"""A small driver for a real headless chromium over its DevTools protocol, for the web app's browser tests.

Chromium starts with ``--remote-debugging-port=0``; the address it prints on stderr ("DevTools listening on
ws://...") is the one websocket (aiohttp's client) every page is driven through, each page a flattened session of
its own. The connection lives on an event loop in a thread of its own, so the tests stay plain functions and the
events (console errors, exceptions, network requests, page loads) are collected while a test does something else.

Every wait polls a condition against a deadline: a slow machine makes a test slower, never wrong.

The app under test runs in a background thread too (:func:`serving`: uvicorn on a free loopback port).
"""

from __future__ import annotations

import asyncio
import base64
import json
import os
import queue
import re
import shutil
import socket
import subprocess
import threading
import time
from collections.abc import Callable, Coroutine, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, TypeVar

import aiohttp
import pytest

__all__ = [
    "ARTEFACTS_ENV",
    "SKIP_NO_CHROMIUM",
    "Chromium",
    "DevToolsError",
    "Page",
    "chromium_binary",
    "serving",
    "wait_until",
]

SKIP_NO_CHROMIUM = "chromium is not installed: apt-get install chromium (the CI script installs it)"
#: A folder the screenshots are also copied to, when set (CI keeps it as the run's artefacts).
ARTEFACTS_ENV = "SIMULATOR_TEST_ARTEFACTS"
#: How long one wait may take before the test fails; generous, as the machine may be shared.
DEADLINE_S = 30.0

_LISTENING = re.compile(r"DevTools listening on (ws://\S+)")
_POLL_S = 0.05
_T = TypeVar("_T")


class DevToolsError(RuntimeError):
    """Chromium answered a command with an error, or did not start."""


def chromium_binary() -> str:
    """Debian's chromium (or the first one on PATH); skips the test, saying how to install it, where none is."""
    for candidate in ("/usr/bin/chromium", shutil.which("chromium"), shutil.which("chromium-browser")):
        if candidate and Path(candidate).exists():
            return candidate
    pytest.skip(SKIP_NO_CHROMIUM)


def wait_until(check: Callable[[], _T], what: str, *, timeout: float = DEADLINE_S) -> _T:
    """Poll ``check`` until it gives a true value (returned), failing the test with ``what`` at the deadline."""
    deadline = time.monotonic() + timeout
    while True:
        value = check()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"waited {timeout:.0f} s for {what}")
        time.sleep(_POLL_S)  # a poll interval, never an assertion's grace period


class Page:
    """One tab: navigate, evaluate, click, fill, wait, screenshot; what it logged and requested is collected."""

    def __init__(self, browser: Chromium, target: str, session: str) -> None:
        self._browser = browser
        self.target = target
        self.session = session
        #: Console errors, uncaught exceptions and error log entries (CSP violations, failed loads), as text.
        self.errors: list[str] = []
        #: The URL of every request the page made.
        self.requests: list[str] = []
        #: How many times a document finished loading (its load event).
        self.loads = 0

    def send(self, method: str, params: dict[str, Any] | None = None) -> dict[str, Any]:
        """A DevTools command to this page; its result."""
        return self._browser.send(method, params, session=self.session)

    def on_event(self, method: str, params: dict[str, Any]) -> None:
        """Collect an event of this page (called on the connection's thread)."""
        if method == "Runtime.consoleAPICalled" and params.get("type") in {"error", "assert"}:
            words = [str(arg.get("value", arg.get("description", ""))) for arg in params.get("args", [])]
            self.errors.append("console." + params["type"] + ": " + " ".join(words))
        elif method == "Runtime.exceptionThrown":
            details = params.get("exceptionDetails", {})
            exception = details.get("exception", {})
            self.errors.append("exception: " + str(exception.get("description") or details.get("text", "")))
        elif method == "Log.entryAdded" and params.get("entry", {}).get("level") == "error":
            entry = params["entry"]
            self.errors.append(f"log ({entry.get('source')}): {entry.get('text')} {entry.get('url', '')}".rstrip())
        elif method == "Network.requestWillBeSent":
            self.requests.append(params["request"]["url"])
        elif method == "Page.loadEventFired":
            self.loads += 1
        elif method == "Page.javascriptDialogOpening":
            # A dialog blocks the page until answered: accept it, as the person clicking the button would.
            self._browser.send_soon("Page.handleJavaScriptDialog", {"accept": True}, session=self.session)

    def goto(self, url: str) -> None:
        """Open ``url`` and wait for its load event."""
        before = self.loads
        answer = self.send("Page.navigate", {"url": url})
        if answer.get("errorText"):
            raise DevToolsError(f"could not open {url}: {answer['errorText']}")
        wait_until(lambda: self.loads > before, f"{url} to load")

    def reload(self) -> None:
        """Reload the page and wait for its load event."""
        before = self.loads
        self.send("Page.reload", {"ignoreCache": True})
        wait_until(lambda: self.loads > before, "the page to reload")

    def evaluate(self, expression: str) -> Any:
        """The value of the JavaScript ``expression`` in the page (a promise is awaited)."""
        answer = self.send("Runtime.evaluate", {"expression": expression, "returnByValue": True, "awaitPromise": True})
        if "exceptionDetails" in answer:
            details = answer["exceptionDetails"]
            raise DevToolsError(f"{expression!r} threw: {details.get('exception', {}).get('description', details)}")
        return answer["result"].get("value")

    def wait_for(self, expression: str, what: str = "", *, timeout: float = DEADLINE_S) -> Any:
        """Poll ``expression`` until it is truthy (its value is returned); the page may navigate meanwhile."""

        def check() -> Any:
            try:
                return self.evaluate(expression)
            except DevToolsError:
                return None  # the document went away mid-evaluation (a navigation): ask the next one

        return wait_until(check, what or expression, timeout=timeout)

    def text(self, selector: str = "body") -> str:
        """The visible text of the first element ``selector`` matches (empty when none does)."""
        return str(self.evaluate(f"(document.querySelector({json.dumps(selector)}) || {{}}).innerText || ''"))

    def click(self, selector: str) -> None:
        """Click the middle of the first element ``selector`` matches, with the mouse, as a person would."""
        box = self.evaluate(
            f"(() => {{ const e = document.querySelector({json.dumps(selector)}); if (!e) return null;"
            " e.scrollIntoView({block: 'center'}); const r = e.getBoundingClientRect();"
            " return [r.x + r.width / 2, r.y + r.height / 2]; })()"
        )
        if not box:
            raise AssertionError(f"nothing to click: no element matches {selector!r}")
        for kind in ("mousePressed", "mouseReleased"):
            self.send(
                "Input.dispatchMouseEvent",
                {"type": kind, "x": box[0], "y": box[1], "button": "left", "clickCount": 1},
            )

    def fill(self, selector: str, text: str) -> None:
        """Replace the value of the input ``selector`` matches by typing ``text`` into it."""
        found = self.evaluate(
            f"(() => {{ const e = document.querySelector({json.dumps(selector)}); if (!e) return false;"
            " e.focus(); e.select(); return true; })()"
        )
        if not found:
            raise AssertionError(f"nothing to fill: no element matches {selector!r}")
        self.send("Input.insertText", {"text": text})

    def screenshot(self, folder: Path, name: str) -> Path:
        """The whole page as ``folder/name.png`` (also copied to ``$SIMULATOR_TEST_ARTEFACTS`` when set)."""
        size = self.send("Page.getLayoutMetrics")["cssContentSize"]
        clip = {"x": 0, "y": 0, "width": size["width"], "height": min(size["height"], 6000), "scale": 1}
        shot = self.send("Page.captureScreenshot", {"format": "png", "captureBeyondViewport": True, "clip": clip})
        path = folder / f"{name}.png"
        path.write_bytes(base64.b64decode(shot["data"]))
        if kept := os.environ.get(ARTEFACTS_ENV):
            Path(kept).mkdir(parents=True, exist_ok=True)
            shutil.copyfile(path, Path(kept) / path.name)
        return path

    def close(self) -> None:
        """Close the tab."""
        self._browser.send("Target.closeTarget", {"targetId": self.target})


class Chromium:
    """A headless chromium and the one DevTools connection that drives it; close it when done (or use ``with``)."""

    def __init__(self, binary: str, profile: Path, *, timeout: float = DEADLINE_S) -> None:
        command = [
            binary,
            "--headless=new",
            "--remote-debugging-port=0",
            f"--user-data-dir={profile}",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            "--disable-quic",
            "--disable-extensions",
            "--no-first-run",
            "--no-default-browser-check",
            "about:blank",
        ]
        self._process = subprocess.Popen(
            command, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True
        )
        self._lines: queue.Queue[str | None] = queue.Queue()
        self._stderr: list[str] = []
        # stderr is read to its end: a full pipe would stall chromium.
        threading.Thread(target=self._read_stderr, name="chromium-stderr", daemon=True).start()
        self._pages: dict[str, Page] = {}
        self._waiting: dict[int, asyncio.Future[dict[str, Any]]] = {}
        self._next_id = 0
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, name="devtools", daemon=True)
        self._thread.start()
        try:
            address = self._address(timeout)
            self._run(self._connect(address))
        except BaseException:
            self.close()
            raise

    def __enter__(self) -> Chromium:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _read_stderr(self) -> None:
        assert self._process.stderr is not None
        for line in self._process.stderr:
            self._stderr.append(line)
            self._lines.put(line)
        self._lines.put(None)

    def _address(self, timeout: float) -> str:
        deadline = time.monotonic() + timeout
        while (left := deadline - time.monotonic()) > 0:
            try:
                line = self._lines.get(timeout=left)
            except queue.Empty:
                break
            if line is None:
                raise DevToolsError("chromium ended before it listened: " + "".join(self._stderr[-20:]))
            if found := _LISTENING.search(line):
                return found.group(1)
        raise DevToolsError(f"chromium did not listen within {timeout:.0f} s: " + "".join(self._stderr[-20:]))

    def _run(self, work: Coroutine[Any, Any, _T], timeout: float = DEADLINE_S) -> _T:
        return asyncio.run_coroutine_threadsafe(work, self._loop).result(timeout)

    async def _connect(self, address: str) -> None:
        self._http = aiohttp.ClientSession()
        self._socket = await self._http.ws_connect(address, max_msg_size=0)
        self._reader = asyncio.create_task(self._read())

    async def _read(self) -> None:
        async for message in self._socket:
            if message.type != aiohttp.WSMsgType.TEXT:
                continue
            data = json.loads(message.data)
            if "id" in data:
                waiting = self._waiting.pop(data["id"], None)
                if waiting is not None and not waiting.done():
                    waiting.set_result(data)
            elif (page := self._pages.get(data.get("sessionId", ""))) is not None:
                page.on_event(data["method"], data.get("params", {}))
        for waiting in self._waiting.values():
            if not waiting.done():
                waiting.set_exception(DevToolsError("chromium closed the DevTools connection"))

    async def _send(self, method: str, params: dict[str, Any] | None, session: str | None) -> dict[str, Any]:
        self._next_id += 1
        message: dict[str, Any] = {"id": self._next_id, "method": method, "params": params or {}}
        if session is not None:
            message["sessionId"] = session
        answer = self._waiting[self._next_id] = self._loop.create_future()
        await self._socket.send_str(json.dumps(message))
        data = await answer
        if "error" in data:
            raise DevToolsError(f"{method}: {data['error'].get('message')} {data['error'].get('data', '')}".rstrip())
        result: dict[str, Any] = data.get("result", {})
        return result

    def send(self, method: str, params: dict[str, Any] | None = None, *, session: str | None = None) -> dict[str, Any]:
        """A DevTools command (to the browser, or to the page ``session``); its result."""
        return self._run(self._send(method, params, session))

    def send_soon(self, method: str, params: dict[str, Any], *, session: str | None = None) -> None:
        """Send a command from the connection's own thread, without waiting for its answer."""
        task = self._loop.create_task(self._send(method, params, session))
        task.add_done_callback(lambda done: done.exception())  # answered or not, nothing waits for it

    def new_page(self, width: int = 1280, height: int = 900) -> Page:
        """A new tab, blank, ``width`` x ``height``, with its events collected."""
        target = self.send("Target.createTarget", {"url": "about:blank"})["targetId"]
        session = self.send("Target.attachToTarget", {"targetId": target, "flatten": True})["sessionId"]
        page = self._pages[session] = Page(self, target, session)
        for domain in ("Page", "Runtime", "Log", "Network"):
            page.send(f"{domain}.enable")
        page.send(
            "Emulation.setDeviceMetricsOverride",
            {"width": width, "height": height, "deviceScaleFactor": 1, "mobile": False},
        )
        return page

    def close(self) -> None:
        """Close the connection and end chromium (and the connection's thread)."""
        if self._thread.is_alive():
            if getattr(self, "_http", None) is not None:
                self._run(self._disconnect(), timeout=10)
            self._loop.call_soon_threadsafe(self._loop.stop)
            self._thread.join(timeout=10)
        if not self._loop.is_running():
            self._loop.close()
        if self._process.poll() is None:
            self._process.terminate()
            try:
                self._process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self._process.kill()
                self._process.wait()
        if self._process.stderr is not None:
            self._process.stderr.close()

    async def _disconnect(self) -> None:
        if getattr(self, "_socket", None) is not None:
            await self._socket.close()
        if getattr(self, "_reader", None) is not None:
            await self._reader
        await self._http.close()


@contextmanager
def serving(app: Any) -> Iterator[str]:
    """Serve the ASGI ``app`` with uvicorn on a free port of 127.0.0.1 in a background thread; yields its
    address (``http://127.0.0.1:PORT``) once it accepts connections, and stops it after."""
    import uvicorn

    listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    listener.bind(("127.0.0.1", 0))
    port = listener.getsockname()[1]
    server = uvicorn.Server(uvicorn.Config(app, log_level="warning", lifespan="off", server_header=False))
    thread = threading.Thread(target=server.run, kwargs={"sockets": [listener]}, name="uvicorn", daemon=True)
    thread.start()
    try:
        wait_until(lambda: server.started or not thread.is_alive(), "the app to start")
        if not server.started:
            raise AssertionError("the app's server ended before it started (see the log above)")
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        thread.join(timeout=10)
        listener.close()
