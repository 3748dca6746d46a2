"""A voice run's HTML report in a real headless chromium: written to a folder of its own, it plays each turn's
audio from the copy of the conversation's audio file beside it (the page's policy lets audio come from its own
place and nowhere else), and logs no error."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import simulator
from tests.view._devtools import Chromium, chromium_binary
from tests.voice.test_voice_engine import _project

pytestmark = pytest.mark.browser


def test_the_report_plays_each_turn_of_a_voice_conversation(tmp_path: Path) -> None:
    outcome = simulator.run(str(_project(tmp_path)), db=tmp_path / "runs.db", seed=1)
    report = simulator.run_report(outcome.record.id, "html", db=tmp_path / "runs.db")
    page_file = report.write(tmp_path / "shared" / "report.html")
    assert list((tmp_path / "shared" / "simulator-audio").glob("*/*.wav")), "the audio is copied beside the report"
    with Chromium(chromium_binary(), tmp_path / "profile") as browser:
        page = browser.new_page()
        page.goto(page_file.as_uri())
        page.evaluate("document.querySelectorAll('details.case').forEach(function (d) { d.open = true; })")
        players = page.evaluate(
            "[...document.querySelectorAll('audio.voice-audio')]"
            ".map(function (a) { return a.getAttribute('aria-label'); })"
        )
        assert players[:3] == ["the whole conversation", "user, turn 1", "agent, turn 1"]
        # Each turn's player loads the file and starts where its turn starts (the media fragment of its source).
        loaded = page.evaluate(
            """Promise.all([...document.querySelectorAll('audio.voice-audio')].map(function (a) {
                 return new Promise(function (done) {
                   a.addEventListener('loadedmetadata', function () {
                     done({label: a.getAttribute('aria-label'), duration: a.duration, at: a.currentTime,
                           src: a.getAttribute('src')});
                   });
                   a.addEventListener('error', function () {
                     done({label: a.getAttribute('aria-label'), error: true});
                   });
                   a.load();
                 });
               }))"""
        )
        page.close()
    assert all(not item.get("error") for item in loaded), json.dumps(loaded)
    agent = next(item for item in loaded if item["label"] == "agent, turn 1")
    start = float(agent["src"].split("#t=")[1].split(",")[0])
    assert start > 0
    assert agent["at"] == pytest.approx(start, abs=0.05)
    assert agent["duration"] > start
    assert not page.errors, "the page logged errors:\n" + "\n".join(page.errors)
    assert all(url.startswith(("file://", "data:")) for url in page.requests), page.requests
