"""Take the screenshots of ``simulator view`` shown in ``docs/view.md`` into ``docs/images/``.

``python docs/gen_screenshots.py`` runs the demo suite offline twice (seed 1) into a throwaway store, the second
time against a "v2" of the demo agent with a regression, notes that run, records two reviews (one of them
disagreeing with the judge), serves the web app on a free loopback port and has headless chromium photograph the
runs list, a run, a failing conversation (its review part) and the comparison. The inputs are fixed, so a new set
differs from the last only in times and run ids.

Needs chromium (``apt-get install chromium``) and the view extra (``pip install 'simulator[view]'``).
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from importlib.util import find_spec
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

ROOT = Path(__file__).resolve().parent.parent
IMAGES = ROOT / "docs" / "images"
WIDTH, HEIGHT = 1280, 900
#: The runs list has sixteen columns: wide enough to show them all.
RUNS_WIDTH = 1600
#: Tall enough to show a run's first cases below its header and totals.
RUN_HEIGHT = 1700
#: The failing case of the demo suite (its planted bug): the conversation shown, and the one reviewed.
FAILING_CASE = "express_delivery_date_is_made_up"
#: A case the judge could not decide: a reviewer's pass makes the reviewed correctness differ from the judged one.
UNSURE_CASE = "refund_after_30_days_is_refused"
#: Tall enough for the conversation's review and first steps, short enough for a PNG of about 250 KB (a
#: ``#review`` fragment is no help: headless chromium photographs a scrolled page blank).
CONVERSATION_HEIGHT = 1200


AGENT_V2 = '''"""The demo agent, version 2: its refund confirmation leaves out the refund's reference."""

import re

from simulator.demo.shop import respond as respond_v1


def respond(messages, *, session, tools, event=None):
    reply = respond_v1(messages, session=session, tools=tools, event=event)
    reply["content"] = re.sub(r" ?\\(?reference RF-\\w+\\)?| RF-\\w+", "", reply["content"])
    return reply
'''


def chromium_binary() -> str | None:
    """Debian's chromium, or the first one on PATH."""
    for candidate in ("/usr/bin/chromium", shutil.which("chromium"), shutil.which("chromium-browser")):
        if candidate and Path(candidate).exists():
            return candidate
    return None


def build_store(work: Path) -> tuple[str, str, str]:
    """Run the demo suite twice into ``work/runs.db``, note and review the runs; the two run ids and the key of
    the failing result."""
    import simulator

    shutil.copytree(ROOT / "suites" / "demo", work / "suites" / "demo")
    shutil.copytree(ROOT / "personas", work / "personas")
    (work / ".git").mkdir()  # the run's project root, so nothing of the checkout around it is read
    os.chdir(work)
    db = work / "runs.db"
    first = simulator.run("suites/demo", checkpoints=False, cache=False, db=db, seed=1, agent_version="v1")
    # The second run's agent is a "v2" of the demo agent that no longer tells the customer the refund's
    # reference, so the comparison has a regression to show.
    (work / "suites" / "demo" / "shop_v2.py").write_text(AGENT_V2, encoding="utf-8")
    agent = work / "suites" / "demo" / "agent.yaml"
    agent.write_text(
        agent.read_text(encoding="utf-8").replace("simulator.demo.shop:respond", "shop_v2:respond"), encoding="utf-8"
    )
    second = simulator.run("suites/demo", checkpoints=False, cache=False, db=db, seed=1, agent_version="v2")
    simulator.note_run(second.id, "prompt v2: shorter refund confirmations", db=db)
    keys = {result.case: result.key for result in second.results()}
    failing = keys[FAILING_CASE]
    simulator.add_review(
        second.id,
        failing,
        target="expectation: The agent only states delivery dates that a tool returned.",
        verdict="not_met",
        reason="No tool was called: the date is made up.",
        reviewer="Dana",
        db=db,
    )
    simulator.add_review(
        second.id,
        keys[UNSURE_CASE],
        target="result",
        verdict="pass",
        reason="The refund is refused and the 30-day policy explained.",
        reviewer="Dana",
        db=db,
    )
    return first.id, second.id, failing


@contextmanager
def serving(app: Any) -> Iterator[str]:
    """Serve ``app`` with uvicorn on a free port of 127.0.0.1 in a thread; yields its address."""
    import uvicorn

    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    server = uvicorn.Server(uvicorn.Config(app, log_level="warning", lifespan="off"))
    thread = threading.Thread(target=server.run, kwargs={"sockets": [listener]}, daemon=True)
    thread.start()
    deadline = time.monotonic() + 30
    while not server.started and thread.is_alive() and time.monotonic() < deadline:
        time.sleep(0.05)
    try:
        if not server.started:
            raise SystemExit("gen_screenshots: the app's server did not start (see the log above)")
        yield f"http://127.0.0.1:{listener.getsockname()[1]}"
    finally:
        server.should_exit = True
        thread.join(timeout=10)
        listener.close()


def shoot(chromium: str, url: str, image: Path, size: tuple[int, int], profile: Path) -> None:
    """Photograph ``url`` in a window of ``size`` (width, height) into ``image``."""
    command = [
        chromium,
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--hide-scrollbars",
        f"--user-data-dir={profile}",
        f"--window-size={size[0]},{size[1]}",
        f"--screenshot={image}",
        url,
    ]
    done = subprocess.run(command, capture_output=True, text=True, timeout=120, check=False)
    if done.returncode != 0 or not image.is_file():
        raise SystemExit(f"gen_screenshots: chromium could not photograph {url}: {done.stderr.strip()[-500:]}")


def main() -> int:
    """Build the store, serve it, write the four screenshots; 1 with a one-line reason when something is missing."""
    chromium = chromium_binary()
    if chromium is None:
        print("gen_screenshots: chromium is not installed: apt-get install chromium", file=sys.stderr)
        return 1
    if find_spec("starlette") is None or find_spec("uvicorn") is None:
        print("gen_screenshots: the view extra is missing: pip install 'simulator[view]'", file=sys.stderr)
        return 1
    os.environ["LITELLM_OFFLINE_MODE"] = "true"
    from simulator.viewer import create_app

    IMAGES.mkdir(exist_ok=True)
    home = Path.cwd()
    with tempfile.TemporaryDirectory(prefix="simulator-screenshots-") as temp:
        work = Path(temp)
        first, second, failing = build_store(work)
        run, conversation = f"/runs/{second}", f"/runs/{second}/conversation?{urlencode({'key': failing})}"
        shots = {
            "view-runs.png": ("/", (RUNS_WIDTH, 500)),
            "view-run.png": (run, (WIDTH, RUN_HEIGHT)),
            "view-conversation.png": (conversation, (WIDTH, CONVERSATION_HEIGHT)),
            "view-compare.png": (f"/compare?{urlencode({'a': first, 'b': second})}", (WIDTH, HEIGHT)),
        }
        with serving(create_app(work / "runs.db")) as address:
            for name, (path, size) in shots.items():
                image = IMAGES / name
                shoot(chromium, address + path, image, size, work / "chromium")
                print(f"wrote {image.relative_to(ROOT)} ({image.stat().st_size // 1024} KB)")
        os.chdir(home)  # out of the folder before it is removed
    return 0


if __name__ == "__main__":
    sys.exit(main())
