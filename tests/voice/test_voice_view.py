"""A voice run in ``simulator view``: a conversation's page plays the whole conversation and each turn from the
app's audio address, the file is served with ranges (a turn's player starts at its turn), and nothing outside the
store's audio folder is served through it."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import quote

import pytest
from starlette.testclient import TestClient

import simulator
from simulator.viewer import create_app
from tests.voice.test_voice_engine import _project

LOCAL = "http://127.0.0.1"


@pytest.fixture
def served(tmp_path: Path) -> Iterator[tuple[TestClient, str]]:
    db = tmp_path / "runs.db"
    outcome = simulator.run(str(_project(tmp_path)), db=db, seed=1)
    key = next(stored.key for stored in outcome.results() if stored.case == "balance")
    with TestClient(create_app(db), base_url=LOCAL) as client:
        yield client, f"/runs/{outcome.record.id}/conversation?key={quote(key, safe='')}"


def _sources(html: str) -> list[str]:
    return re.findall(r"<audio class='voice-audio'[^>]* src='([^']+)'", html)


def test_a_voice_conversation_plays_from_the_app(served: tuple[TestClient, str]) -> None:
    client, conversation = served
    page = client.get(conversation)
    assert page.status_code == 200
    assert "media-src 'self'" in page.headers["content-security-policy"]
    sources = _sources(page.text)
    assert len(sources) == 3  # the whole conversation, the user's turn, the agent's turn
    whole = sources[0]
    assert whole.startswith("/audio/")
    assert all(source.split("#")[0] == whole for source in sources)
    audio = client.get(whole)
    assert audio.status_code == 200
    assert audio.headers["content-type"] == "audio/wav"
    assert audio.content[:4] == b"RIFF"
    part = client.get(whole, headers={"range": "bytes=44-1043"})
    assert part.status_code == 206
    assert part.content == audio.content[44:1044]


@pytest.mark.parametrize("name", ["../runs.db", "..%2Fruns.db", "nothing/here.wav", "%2E%2E/runs.db"])
def test_only_the_store_s_audio_files_are_served(served: tuple[TestClient, str], name: str) -> None:
    client, _ = served
    answer = client.get("/audio/" + name)
    assert answer.status_code == 404
    assert b"SQLite" not in answer.content
