"""``--concurrency N`` means N conversations at once: each model role's limit is the run's concurrency unless
the suite sets one, and the plan line shows the limits that apply.

A local model server on 127.0.0.1 holds every simulated-user request for a moment and counts the requests in
flight, so the limit is seen from the server's side, not inferred from timings.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from aiohttp import web
from typer.testing import CliRunner

from simulator.cli import app
from simulator.runner import plan, run
from tests._loop_thread import served, user_turn_completion

#: Seconds the server holds each user request: long enough for every conversation in flight to send its own.
HOLD = 0.4
CONVERSATIONS = 24


@dataclass
class SlowUserModel:
    """Answers the simulated user's requests after :data:`HOLD` seconds; counts requests in flight."""

    url: str = ""
    in_flight: int = 0
    most: int = 0
    requests: int = 0

    async def chat(self, request: web.Request) -> web.Response:
        body = await request.json()
        self.requests += 1
        self.in_flight += 1
        self.most = max(self.most, self.in_flight)
        try:
            await asyncio.sleep(HOLD)
        finally:
            self.in_flight -= 1
        return web.json_response(user_turn_completion(body.get("model", "fake"), self.requests))


@contextmanager
def serving_slow_user_model() -> Iterator[SlowUserModel]:
    """A :class:`SlowUserModel` listening on 127.0.0.1 (its ``url``) while the block runs; the Ray tests use it too."""
    with served(SlowUserModel(), "slow-user-model") as model:
        yield model


@pytest.fixture
def server() -> Iterator[SlowUserModel]:
    with serving_slow_user_model() as model:
        yield model


def _suite(
    root: Path,
    url: str,
    user_limit: int | None = None,
    *,
    name: str = "limits",
    model: str = "openai/slow-user",
    retries: int = 0,
    conversations: int = CONVERSATIONS,
) -> Path:
    """``conversations`` one-turn scenarios of the demo shop whose user ``model`` is at ``url``, retried
    ``retries`` times, ``user_limit`` calls at once (the run's concurrency if None); key in ``SLOW_USER_KEY``."""
    (root / ".git").mkdir(exist_ok=True)
    limit = f"    concurrency: {user_limit}\n" if user_limit is not None else ""
    cases = "".join(
        f"  - kind: scenario\n    name: order_{i:02d}\n    goal: Ask where order ORD-10042 is.\n    max_turns: 1\n"
        for i in range(conversations)
    )
    path = root / "suite.yaml"
    path.write_text(
        f"name: {name}\nagent:\n  type: python\n  callable: simulator.demo.shop:respond\n"
        f"models:\n  user:\n    model: {model}\n    api_base: {url}\n    api_key_env: SLOW_USER_KEY\n"
        f"    max_retries: {retries}\n{limit}cases:\n{cases}",
        encoding="utf-8",
    )
    return path


@pytest.fixture(autouse=True)
def _environment(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("SLOW_USER_KEY", "not-a-real-key")
    monkeypatch.setenv("LITELLM_OFFLINE_MODE", "true")
    monkeypatch.chdir(tmp_path)


def test_concurrency_12_sends_12_user_requests_at_once_and_the_plan_line_says_so(
    server: SlowUserModel, tmp_path: Path
) -> None:
    suite = _suite(tmp_path, server.url)
    result = CliRunner().invoke(
        app, ["run", str(suite), "--concurrency", "12", "--no-cache", "--seed", "1", "--db", str(tmp_path / "r.db")]
    )
    assert result.exit_code in (0, 1), result.output + str(result.exception)
    assert "concurrency 12 (model limits: user 12)" in result.stdout
    assert server.requests >= CONVERSATIONS
    # The old default capped every role at 8 whatever --concurrency said.
    assert server.most == 12


def test_a_suites_own_limit_wins_over_the_runs_concurrency(server: SlowUserModel, tmp_path: Path) -> None:
    suite = _suite(tmp_path, server.url, user_limit=3)
    planned = plan([suite], concurrency=12, seed=1, cache=False)
    assert planned.model_limits == {"user": [3]}
    outcome = run(planned, db=tmp_path / "r.db")
    assert outcome.record.totals is not None
    assert outcome.record.totals.total == CONVERSATIONS
    assert server.most == 3


def test_only_roles_with_a_model_are_limited_in_the_plan(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "not-a-real-key")  # a plan checks that the judge's key is set
    suite = _suite(tmp_path, "http://127.0.0.1:9/v1")
    options: dict[str, Any] = {"concurrency": 20, "seed": 1, "judge_model": "openai/judge"}
    # The judge's default is twice the run's: a conversation asks its judge questions at once.
    assert plan([suite], **options).model_limits == {"user": [20], "judge": [40]}


#: Seconds the two-model server holds a judge request, and a user request: a judge request long enough that the
#: next conversations' users are asked while it is in flight even on a busy machine (0.6 s was not, under load).
JUDGE_HOLD, USER_HOLD = 3.0, 1.0
#: Conversations of the scoring test: three rounds of the two lanes.
SCORED = 6


@dataclass
class UserAndJudge:
    """Answers user requests after :data:`USER_HOLD` and judge requests after :data:`JUDGE_HOLD` seconds (with a
    user move, which the judge cannot read: only the timing matters here); notes what was in flight when."""

    url: str = ""
    user_in_flight: int = 0
    judge_in_flight: int = 0
    most_user: int = 0
    most_judge: int = 0
    talking_while_judging: int = 0  # the most user requests in flight while a judge request was
    requests: int = 0

    async def chat(self, request: web.Request) -> web.Response:
        body = await request.json()
        self.requests += 1
        judge = "judge" in body.get("model", "")
        if judge:
            self.judge_in_flight += 1
            self.most_judge = max(self.most_judge, self.judge_in_flight)
        else:
            self.user_in_flight += 1
            self.most_user = max(self.most_user, self.user_in_flight)
        if self.judge_in_flight:
            self.talking_while_judging = max(self.talking_while_judging, self.user_in_flight)
        try:
            await asyncio.sleep(JUDGE_HOLD if judge else USER_HOLD)
        finally:
            if judge:
                self.judge_in_flight -= 1
            else:
                self.user_in_flight -= 1
        return web.json_response(user_turn_completion(body.get("model", "fake"), self.requests))


def test_a_finished_conversation_is_scored_while_the_next_one_talks(tmp_path: Path) -> None:
    """``--concurrency 2``: two conversations talk at once, never more; a finished one waits for its judge
    outside its lane, so both lanes' next conversations talk while the two they finished are being scored.
    Before, a lane waited for its judge: beside a judge request, at most one conversation could talk."""
    with served(UserAndJudge(), "user-and-judge") as model:
        url = model.url
        path = _suite(tmp_path, url, conversations=SCORED)
        text = path.read_text(encoding="utf-8").replace(
            "cases:\n",
            f"  judge:\n    model: openai/slow-judge\n    api_base: {url}\n    api_key_env: SLOW_USER_KEY\n"
            "    max_retries: 0\ncases:\n",
            1,
        )
        path.write_text(text, encoding="utf-8")
        planned = plan([path], concurrency=2, seed=1, cache=False)
        assert planned.model_limits == {"user": [2], "judge": [4]}
        outcome = run(planned, db=tmp_path / "r.db")
    assert outcome.record.totals is not None
    assert outcome.record.totals.total == SCORED
    assert model.most_user == 2
    # Both lanes talk while the conversations they finished are being scored (a lane that waited for its judge
    # would leave at most one conversation talking beside a judge request).
    assert model.talking_while_judging == 2
    assert model.most_judge <= 4
