"""A provider's ``Retry-After`` holds off every call to that provider (model and API base), not just the call that
got it: the other conversations' calls, queued for the role's slot or about to start, wait it out too. Bounded:
the wait is the server's hint cut to the retry policy's cap, and a 429 without a hint holds nobody else off.

The model client is checked with the offline fake and an injected sleep (no waiting); a whole run against a local
model server that answers its first request with 429 and ``Retry-After``, counting arrivals on the server's clock
relative to the 429 (no wall-time asserts). The same server checks the Ray executor in ``test_ray.py``.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from aiohttp import web

import simulator
from simulator.llm import RETRY_AFTER_CAP, FakeScript, HoldOff, HoldOffs, fake_rate_limit, fake_server_error
from simulator.models.settings import ModelSettings
from tests._loop_thread import served, user_turn_completion
from tests.factories import run
from tests.runs.test_model_limits import _suite as limits_suite
from tests.test_llm import HELLO, Sleeps, make_client

#: The wait the local server asks for with its one 429, in seconds.
WAIT = 1.0
CONVERSATIONS = 6


# --------------------------------------------------------------------------------------------------------------
# The hold-off table


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_a_hold_off_lasts_its_seconds_and_a_longer_one_stands() -> None:
    clock = Clock()
    hold_offs = HoldOffs(clock)
    assert hold_offs.held_off("m") == HoldOff(0.0, 0)
    first = hold_offs.hold_off("m", 5)
    assert hold_offs.held_off("m") == HoldOff(5.0, first)
    assert hold_offs.held_off("other") == HoldOff(0.0, 0)  # per provider
    clock.now += 1
    assert hold_offs.hold_off("m", 2) == first  # shorter than what is left: the first stands
    assert hold_offs.held_off("m") == HoldOff(4.0, first)
    longer = hold_offs.hold_off("m", 10)
    assert longer != first
    assert hold_offs.held_off("m") == HoldOff(10.0, longer)
    clock.now += 10
    assert hold_offs.held_off("m") == HoldOff(0.0, 0)


# --------------------------------------------------------------------------------------------------------------
# The model client (fake backend, injected sleep)


def _three_calls(script: FakeScript, sleeps: Sleeps) -> None:
    """Three user calls at once through a client whose user role has one slot: the first gets the script's first
    reply, the others queue for the slot meanwhile."""
    client = make_client(script, sleeps=sleeps, user=ModelSettings(model="fake/user", concurrency=1))

    async def go() -> None:
        await asyncio.gather(*(client.complete("user", HELLO) for _ in range(3)))

    run(go())


def test_a_retry_after_holds_off_the_calls_queued_for_the_role() -> None:
    sleeps = Sleeps()
    script = FakeScript().enqueue("user", fake_rate_limit(retry_after=5), "one", "two", "three")
    _three_calls(script, sleeps)
    # The call that got the 429 waits 5 s by its own Retry-After; each queued call sits out what is left of the
    # same 5 s (a hair less: the clock moved) before it calls. Without the hold-off only the first would wait.
    assert sorted(sleeps.delays) == pytest.approx([5.0, 5.0, 5.0], abs=0.5)
    assert len(script.requests) == 4


def test_a_wait_without_a_hint_is_the_failed_calls_own_backoff_only() -> None:
    sleeps = Sleeps()
    script = FakeScript().enqueue("user", fake_rate_limit(), "one", "two", "three")
    _three_calls(script, sleeps)
    assert sleeps.delays == [1.0]  # the backoff of the call that failed; nobody else waits


def test_a_hold_off_is_cut_to_the_retry_after_cap() -> None:
    sleeps = Sleeps()
    script = FakeScript().enqueue("user", fake_rate_limit(retry_after=3600), "one", "two", "three")
    _three_calls(script, sleeps)
    assert len(sleeps.delays) == 3
    assert max(sleeps.delays) == RETRY_AFTER_CAP


def test_a_server_errors_retry_after_holds_off_too() -> None:
    sleeps = Sleeps()
    script = FakeScript().enqueue("user", fake_server_error(503, retry_after=4), "one", "two", "three")
    _three_calls(script, sleeps)
    assert sorted(sleeps.delays) == pytest.approx([4.0, 4.0, 4.0], abs=0.5)


def test_only_calls_to_the_same_model_and_api_base_are_held_off() -> None:
    sleeps = Sleeps()
    # The fake queues replies by model name: the user's two calls, then the judges' (same model, two API bases).
    script = FakeScript().enqueue("shared", fake_rate_limit(retry_after=5), "one", "verdict", "verdict again")
    client = make_client(
        script,
        sleeps=sleeps,
        user="fake/shared",
        judge="fake/shared",
        agent=ModelSettings(model="fake/shared", api_base="http://elsewhere"),
    )

    async def go() -> None:
        await client.complete("user", HELLO)  # 429: waits its own 5 s (not really: the sleep is injected)
        await client.complete("agent", HELLO)  # the same model at another API base: not held off
        await client.complete("judge", HELLO)  # the same model at the same base, another role: held off

    run(go())
    assert sleeps.delays[0] == 5.0
    assert sleeps.delays[1:] == [pytest.approx(5.0, abs=0.5)]


# --------------------------------------------------------------------------------------------------------------
# A whole run against a model server that rate-limits once


@dataclass
class RateLimitedModel:
    """A user model on 127.0.0.1 that answers its first request with 429 and ``Retry-After: WAIT`` and every
    later one at once; logs each request's arrival on its own clock (``time.monotonic``)."""

    url: str = ""
    arrivals: list[float] = field(default_factory=list)
    limited_at: float | None = None

    async def chat(self, request: web.Request) -> web.Response:
        body = await request.json()
        self.arrivals.append(time.monotonic())
        if self.limited_at is None:
            self.limited_at = time.monotonic()  # before the reply leaves: any wait is measured from here or later
            return web.json_response(
                {"error": {"message": "Rate limit reached for requests", "type": "requests", "code": "rate_limit"}},
                status=429,
                headers={"Retry-After": f"{WAIT:g}"},
            )
        return web.json_response(user_turn_completion(body.get("model", "fake"), len(self.arrivals)))

    def after_the_429(self) -> list[float]:
        """Seconds from the 429 to each request that came after it."""
        assert self.limited_at is not None, "the server never answered 429"
        return [at - self.limited_at for at in self.arrivals if at > self.limited_at]


@contextmanager
def serving_rate_limited_model() -> Iterator[RateLimitedModel]:
    """A :class:`RateLimitedModel` listening on 127.0.0.1 (its ``url``) while the block runs."""
    with served(RateLimitedModel(), "rate-limited-model") as model:
        yield model


def rate_limited_suite(root: Path, url: str) -> Path:
    """:data:`CONVERSATIONS` one-turn scenarios whose user model is ``url``, one user call at a time (so the
    others queue for the slot while the first gets its 429), retried twice; key in ``SLOW_USER_KEY``."""
    return limits_suite(
        root, url, user_limit=1, name="rate_limited", model="openai/limited-user", retries=2,
        conversations=CONVERSATIONS,
    )  # fmt: skip


def check_held_off(model: RateLimitedModel, outcome: simulator.RunOutcome, said: list[str]) -> None:
    """Every conversation ran to the end, no request reached the server inside the 429's window, and the run said
    once that it waits (``said``: the messages logged)."""
    assert outcome.record.totals is not None
    assert outcome.record.totals.error == 0
    assert outcome.record.totals.total == CONVERSATIONS
    after = model.after_the_429()
    # the call that got the 429, retried, and every other conversation's call: all came after the window
    assert len(after) >= CONVERSATIONS
    assert min(after) >= WAIT
    assert said == [
        f"openai/limited-user at {model.url} answered with Retry-After: every call to it waits {WAIT:.1f} s (in every "
        "conversation of the run)"
    ]


def test_a_runs_other_conversations_wait_out_a_retry_after(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    monkeypatch.setenv("SLOW_USER_KEY", "not-a-real-key")
    monkeypatch.chdir(tmp_path)
    with serving_rate_limited_model() as model:
        suite = rate_limited_suite(tmp_path, model.url)
        outcome = simulator.run([suite], db=tmp_path / "r.db", concurrency=CONVERSATIONS, seed=1, cache=False)
    check_held_off(model, outcome, [record.getMessage() for record in caplog.records if record.name == "simulator.llm"])
