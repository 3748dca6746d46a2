"""Tests of the request cache: keys, hits and misses through the client, eviction, damage, persistence.

Everything runs offline on ``fake/...`` models; a hit is proven by the fake script receiving no new request.
"""

from __future__ import annotations

import logging
import os
import sqlite3
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from pydantic import BaseModel

from simulator.errors import ModelError, StoreError
from simulator.llm import (
    Completion,
    FakeScript,
    FakeToolCall,
    LLMClient,
    RequestCache,
    Role,
    Usage,
    fake_bad_request,
    fake_rate_limit,
    fake_server_error,
    metering,
    replaying,
    request_cache_key,
)
from simulator.models.settings import ModelRoles, ModelSettings
from tests.factories import no_sleep, run

HELLO = [{"role": "user", "content": "hello there"}]
TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "lookup_order",
            "description": "Find an order.",
            "parameters": {"type": "object", "properties": {"order_id": {"type": "string"}}},
        },
    }
]


def make_client(
    script: FakeScript,
    cache: RequestCache | None,
    *,
    environ: dict[str, str] | None = None,
    cache_roles: tuple[Role, ...] = (Role.USER, Role.JUDGE),
    **roles: ModelSettings | str,
) -> LLMClient:
    return LLMClient(
        ModelRoles.model_validate(roles or {"judge": "fake/judge", "user": "fake/user", "agent": "fake/agent"}),
        fake_script=script,
        sleep=no_sleep,
        environ=environ or {},
        cache=cache,
        cache_roles=cache_roles,
    )


class Errors:
    """An ``on_error`` callback that records what the cache reported."""

    def __init__(self) -> None:
        self.messages: list[str] = []

    def __call__(self, message: str) -> None:
        self.messages.append(message)


class Verdict(BaseModel):
    score: int
    reason: str


def completion(text: str, *, tokens: int = 1) -> Completion:
    return Completion(
        content=text,
        tool_calls=[],
        finish_reason="stop",
        usage=Usage(prompt_tokens=tokens, completion_tokens=tokens, calls=1, cost=None),
        model="fake/judge",
        cost=None,
        raw_text=text,
    )


def base_request(**changes: Any) -> dict[str, Any]:
    request: dict[str, Any] = {
        "model": "fake/judge",
        "messages": [dict(message) for message in HELLO],
        "temperature": 0.0,
        "timeout": 60.0,
        "num_retries": 0,
        "max_retries": 0,
    }
    request.update(changes)
    return request


# -- hits and misses through the client ------------------------------------------------------------------------


def test_a_hit_makes_no_request_and_returns_the_same_reply(tmp_path: Path) -> None:
    script = FakeScript().enqueue("judge", "four words of reply")
    with RequestCache(tmp_path / "cache.db") as cache:
        client = make_client(script, cache)
        first = run(client.complete(Role.JUDGE, HELLO))
        second = run(client.complete(Role.JUDGE, HELLO))

        assert len(script.requests) == 1
        assert (first.content, second.content) == ("four words of reply", "four words of reply")
        assert second.tool_calls == first.tool_calls
        assert second.finish_reason == first.finish_reason
        assert not first.cached
        assert second.cached
        # A hit costs nothing, but keeps the token counts of the call that produced the reply, and says it is an
        # answer from the cache whose would-be cost is what that call cost (unknown for an unpriced fake).
        assert second.cost == 0.0
        assert second.usage == Usage(
            prompt_tokens=first.usage.prompt_tokens,
            completion_tokens=first.usage.completion_tokens,
            calls=1,
            cost=0.0,
            cached_calls=1,
            cached_cost=None,
        )
        assert cache.stats()[0] == 1


def test_tool_call_replies_are_replayed(tmp_path: Path) -> None:
    script = FakeScript().enqueue("*", [FakeToolCall("lookup_order", {"order_id": "A-17"}, id="call-1")])
    with RequestCache(tmp_path / "cache.db") as cache:
        client = make_client(script, cache)
        first = run(client.complete(Role.USER, HELLO, tools=TOOLS))
        second = run(client.complete(Role.USER, HELLO, tools=TOOLS))

    assert len(script.requests) == 1
    assert second.tool_calls == first.tool_calls
    assert second.finish_reason == "tool_calls"


@pytest.mark.parametrize(
    "change",
    [
        {"temperature": 0.7},
        {"messages": [{"role": "user", "content": "hello again"}]},
        {"tools": TOOLS},
        {"max_tokens": 10},
        {"seed": 7},
        {"stop": ["\n"]},
        {"top_p": 0.5},
        {"response_format": Verdict},
        {"tool_choice": "none"},
    ],
    ids=lambda change: next(iter(change)),
)
def test_a_different_request_is_a_miss(tmp_path: Path, change: dict[str, Any]) -> None:
    script = FakeScript().enqueue("*", "first", "second")
    with RequestCache(tmp_path / "cache.db") as cache:
        client = make_client(script, cache)
        run(client.complete(Role.JUDGE, HELLO, temperature=0.0))
        arguments: dict[str, Any] = {"temperature": 0.0, **change}
        messages = arguments.pop("messages", HELLO)
        tools = arguments.pop("tools", None)
        changed = run(client.complete(Role.JUDGE, messages, tools=tools, **arguments))

        assert changed.content == "second"
        assert not changed.cached
        assert len(script.requests) == 2
        assert cache.stats()[0] == 2


def test_a_different_model_is_a_miss(tmp_path: Path) -> None:
    script = FakeScript().enqueue("*", "from one", "from two")
    with RequestCache(tmp_path / "cache.db") as cache:
        run(make_client(script, cache, judge="fake/one").complete(Role.JUDGE, HELLO))
        other = run(make_client(script, cache, judge="fake/two").complete(Role.JUDGE, HELLO))
    assert other.content == "from two"
    assert len(script.requests) == 2


def test_the_api_key_is_not_part_of_the_key(tmp_path: Path) -> None:
    script = FakeScript().enqueue("*", "ok")
    settings = ModelSettings(model="fake/judge", api_key_env="JUDGE_KEY")
    with RequestCache(tmp_path / "cache.db") as cache:
        first = make_client(script, cache, environ={"JUDGE_KEY": "sk-old"}, judge=settings)
        rotated = make_client(script, cache, environ={"JUDGE_KEY": "sk-new"}, judge=settings)
        run(first.complete(Role.JUDGE, HELLO))
        again = run(rotated.complete(Role.JUDGE, HELLO))

        assert again.cached
        assert len(script.requests) == 1
        # The key never reaches the file.
        cache.close()
        stored = (tmp_path / "cache.db").read_bytes() + b"".join(
            path.read_bytes() for path in tmp_path.glob("cache.db-*")
        )
        assert b"sk-old" not in stored


def test_a_hit_needs_no_api_key(tmp_path: Path) -> None:
    script = FakeScript().enqueue("*", "ok")
    settings = ModelSettings(model="fake/judge", api_key_env="JUDGE_KEY")
    with RequestCache(tmp_path / "cache.db") as cache:
        run(make_client(script, cache, environ={"JUDGE_KEY": "sk-1"}, judge=settings).complete(Role.JUDGE, HELLO))
        keyless = make_client(script, cache, environ={}, judge=settings)
        assert run(keyless.complete(Role.JUDGE, HELLO)).cached
        # A miss still needs the key, and says so.
        with pytest.raises(ModelError, match=r"JUDGE_KEY.*not set"):
            run(keyless.complete(Role.JUDGE, [{"role": "user", "content": "new"}]))


def test_the_agent_role_is_not_cached_by_default(tmp_path: Path) -> None:
    script = FakeScript().enqueue("agent", "one", "two")
    with RequestCache(tmp_path / "cache.db") as cache, metering() as meter:
        client = make_client(script, cache)
        first = run(client.complete(Role.AGENT, HELLO))
        second = run(client.complete(Role.AGENT, HELLO))

        assert (first.content, second.content) == ("one", "two")
        assert len(script.requests) == 2
        assert cache.stats() == (0, 0)
        assert meter.cache_hits == {}


def test_the_agent_role_is_cached_when_asked(tmp_path: Path) -> None:
    script = FakeScript().enqueue("agent", "one", "two")
    with RequestCache(tmp_path / "cache.db") as cache, metering() as meter:
        client = make_client(script, cache, cache_roles=(Role.AGENT,))
        first = run(client.complete(Role.AGENT, HELLO))
        second = run(client.complete(Role.AGENT, HELLO))

    assert (first.content, second.content) == ("one", "one")
    assert second.cached
    assert len(script.requests) == 1
    assert meter.cache_hits[Role.AGENT] == 1


def test_cache_roles_may_be_strings(tmp_path: Path) -> None:
    script = FakeScript().enqueue("*", "one", "two")
    with RequestCache(tmp_path / "cache.db") as cache:
        client = LLMClient(
            ModelRoles(agent=ModelSettings(model="fake/agent")), fake_script=script, cache=cache, cache_roles="agent"
        )
        run(client.complete(Role.AGENT, HELLO))
        assert run(client.complete(Role.AGENT, HELLO)).cached


def test_errors_are_never_cached(tmp_path: Path) -> None:
    script = FakeScript().enqueue("*", fake_bad_request("nope"), "answer")
    with RequestCache(tmp_path / "cache.db") as cache:
        client = make_client(script, cache)
        with pytest.raises(ModelError, match="nope"):
            run(client.complete(Role.JUDGE, HELLO))
        assert cache.stats() == (0, 0)

        recovered = run(client.complete(Role.JUDGE, HELLO))
        assert recovered.content == "answer"
        assert not recovered.cached
        assert len(script.requests) == 2


def test_a_reply_after_retries_is_cached_but_the_failures_are_not(tmp_path: Path) -> None:
    script = FakeScript().enqueue("*", fake_rate_limit(), fake_server_error(503), "finally")
    with RequestCache(tmp_path / "cache.db") as cache:
        client = make_client(script, cache)
        assert run(client.complete(Role.JUDGE, HELLO)).content == "finally"
        replay = run(client.complete(Role.JUDGE, HELLO))
        assert cache.stats()[0] == 1
    assert replay.cached
    assert replay.content == "finally"
    assert len(script.requests) == 3


def test_without_a_cache_nothing_is_replayed() -> None:
    script = FakeScript().enqueue("*", "one", "two")
    client = make_client(script, None)
    with metering() as meter:
        run(client.complete(Role.JUDGE, HELLO))
        assert run(client.complete(Role.JUDGE, HELLO)).content == "two"
    assert client.cache is None
    assert meter.cache_hits == {}


# -- accounting ---------------------------------------------------------------------------------------------


def test_hits_are_counted_per_role_as_free_calls(tmp_path: Path) -> None:
    script = FakeScript().enqueue("judge", "one two three").enqueue("user", "ok")
    with RequestCache(tmp_path / "cache.db") as cache:
        client = make_client(script, cache)

        async def go() -> None:
            for _ in range(3):
                await client.complete(Role.JUDGE, HELLO)
            for _ in range(2):
                await client.complete(Role.USER, HELLO)

        with metering() as meter:
            run(go())

    assert meter.cache_hits == {Role.USER: 1, Role.JUDGE: 2}
    usage = meter.by_role
    # Three judge calls: one made (unknown price for a fake model) and two hits with the same token counts.
    assert usage[Role.JUDGE].calls == 3
    assert usage[Role.JUDGE].prompt_tokens == 3 * 2
    assert usage[Role.JUDGE].completion_tokens == 3 * 3
    assert usage[Role.JUDGE].cost is None
    assert usage[Role.USER].calls == 2


def test_a_run_served_only_from_the_cache_costs_zero_and_keeps_the_would_be_cost(tmp_path: Path) -> None:
    script = FakeScript().enqueue("*", "one two").price("judge", prompt=0.01, completion=0.02)
    with RequestCache(tmp_path / "cache.db") as cache:
        first = run(make_client(script, cache).complete(Role.JUDGE, HELLO))
        rerun = make_client(script, cache)
        with metering() as meter:
            run(rerun.complete(Role.JUDGE, HELLO))
    assert first.cost == pytest.approx(2 * 0.01 + 2 * 0.02)
    used = meter.by_role[Role.JUDGE]
    assert (used.calls, used.cached_calls, used.requests, used.cost) == (1, 1, 0, 0.0)
    assert used.cached_cost == pytest.approx(first.cost)
    assert meter.total().cost == 0.0


@pytest.mark.parametrize(
    ("recorded", "would_be"),
    [
        (Usage(prompt_tokens=2, completion_tokens=2, calls=1, cost=0.25), 0.25),
        # Recorded while it was served from the cache: the cost it had when first asked, not the 0.0 of the hit.
        (Usage(prompt_tokens=2, completion_tokens=2, calls=1, cost=0.0, cached_calls=1, cached_cost=0.25), 0.25),
        (Usage(prompt_tokens=2, completion_tokens=2, calls=1, cost=None), None),
    ],
    ids=["asked", "served-from-the-cache", "unpriced"],
)
def test_a_replayed_answer_counts_as_not_sent_with_the_cost_it_first_had(
    recorded: Usage, would_be: float | None
) -> None:
    reply = Completion(
        content="stored", tool_calls=[], finish_reason="stop", usage=recorded, model="fake/judge",
        cost=recorded.cost, raw_text="stored",
    )  # fmt: skip

    class Recording:
        def answer(self, role: Role, record: dict[str, Any], fingerprint: str) -> Completion | None:
            return reply

    script = FakeScript()
    with replaying(Recording()), metering() as meter:
        run(make_client(script, None).complete(Role.JUDGE, HELLO))
    assert script.requests == []
    used = meter.by_role[Role.JUDGE]
    assert (used.calls, used.cached_calls, used.requests, used.cost, used.cached_cost) == (1, 1, 0, 0.0, would_be)


def test_a_priced_fake_model_has_a_known_cost_unless_the_request_names_its_own() -> None:
    script = FakeScript().enqueue("*", "one two", "one two").price("judge", prompt=0.01, completion=0.02)
    client = make_client(script, None)
    assert run(client.complete(Role.JUDGE, HELLO)).cost == pytest.approx(2 * 0.01 + 2 * 0.02)
    own = run(client.complete(Role.JUDGE, HELLO, input_cost_per_token=1.0, output_cost_per_token=0.0))
    assert own.cost == pytest.approx(2.0)
    with pytest.raises(ValueError, match="must not be negative"):
        script.price("judge", prompt=-1.0, completion=0.0)


def test_metering_counts_hits_per_conversation(tmp_path: Path) -> None:
    script = FakeScript().enqueue("*", "one two")
    with RequestCache(tmp_path / "cache.db") as cache:
        client = make_client(script, cache)

        async def conversation() -> tuple[dict[Role, Usage], dict[Role, int]]:
            with metering() as meter:
                await client.complete(Role.USER, HELLO)
                await client.complete(Role.USER, HELLO)
                return meter.by_role, meter.cache_hits

        by_role, hits = run(conversation())

    assert by_role[Role.USER].calls == 2
    assert hits == {Role.USER: 1}


# -- structured output --------------------------------------------------------------------------------------


def test_structured_caches_only_the_valid_reply_and_a_rerun_makes_no_request(tmp_path: Path) -> None:
    script = FakeScript().enqueue("*", '{"score": 4, "reason": ', {"score": 4, "reason": "ok"})
    with RequestCache(tmp_path / "cache.db") as cache:
        client = make_client(script, cache)
        verdict = run(client.structured(Role.JUDGE, HELLO, Verdict))
        assert verdict == Verdict(score=4, reason="ok")
        assert len(script.requests) == 2
        # One entry: the valid reply, under the key of the first request; the malformed one is not stored.
        assert cache.stats()[0] == 1
        key = request_cache_key(base_request(temperature=None, response_format=Verdict))
        assert key is not None
        stored = cache.get(key)
        assert stored is not None
        assert stored.content == '{"score": 4, "reason": "ok"}'

        rerun = make_client(script, cache)
        with metering() as meter:
            assert run(rerun.structured(Role.JUDGE, HELLO, Verdict)) == verdict
        assert len(script.requests) == 2
        assert meter.cache_hits[Role.JUDGE] == 1


def test_structured_never_caches_a_reply_that_stays_malformed(tmp_path: Path) -> None:
    script = FakeScript().enqueue("*", "not json", "still not json")
    with RequestCache(tmp_path / "cache.db") as cache:
        client = make_client(script, cache)
        with pytest.raises(ModelError):
            run(client.structured(Role.JUDGE, HELLO, Verdict, attempts=2))
        assert cache.stats() == (0, 0)


def test_structured_drops_a_stored_reply_that_no_longer_validates(tmp_path: Path) -> None:
    # A plain call with the same request stored a reply that is not a valid Verdict (as an older schema, or a
    # validator added since, would make it): structured() must not return it, nor keep it.
    script = FakeScript().enqueue("*", '{"score": "high"}', {"score": 2, "reason": "fixed"})
    with RequestCache(tmp_path / "cache.db") as cache:
        client = make_client(script, cache)
        run(client.complete(Role.JUDGE, HELLO, response_format=Verdict))
        assert cache.stats()[0] == 1

        # One attempt is enough: the stale entry does not use it up.
        verdict = run(client.structured(Role.JUDGE, HELLO, Verdict, attempts=1))
        assert verdict == Verdict(score=2, reason="fixed")
        assert len(script.requests) == 2
        # The original request was sent again, not a correction.
        assert script.requests[1].messages == HELLO

        assert run(client.structured(Role.JUDGE, HELLO, Verdict)) == verdict
        assert len(script.requests) == 2


def test_structured_refuses_its_own_response_format(tmp_path: Path) -> None:
    client = make_client(FakeScript(), None)
    with pytest.raises(TypeError, match="response_format"):
        run(client.structured(Role.JUDGE, HELLO, Verdict, response_format={"type": "json_object"}))


# -- the key ------------------------------------------------------------------------------------------------


def test_key_ignores_credentials_transport_and_retries() -> None:
    key = request_cache_key(base_request())
    assert key is not None
    assert len(key) == 64
    assert (
        request_cache_key(
            base_request(
                api_key="sk-other",
                api_base="http://localhost:1",
                timeout=5.0,
                num_retries=3,
                max_retries=3,
                extra_headers={"Authorization": "Bearer x"},
                aws_secret_access_key="s",
                azure_ad_token="t",
                input_cost_per_token=0.1,
            )
        )
        == key
    )


def test_key_normalizes_equal_requests() -> None:
    key = request_cache_key(base_request())
    # The same number written differently; message fields the model never sees; empty tool lists.
    assert request_cache_key(base_request(temperature=0)) == key
    assert request_cache_key(base_request(tools=[])) == key
    assert (
        request_cache_key(
            base_request(messages=[{"role": "user", "content": "hello there", "note": "x", "name": None}])
        )
        == key
    )
    assert request_cache_key(dict(reversed(base_request().items()))) == key
    assert request_cache_key(base_request(temperature=0.5)) != key
    assert request_cache_key(base_request(messages=[{"role": "system", "content": "hello there"}])) != key


def test_key_of_a_pydantic_response_format_follows_its_schema() -> None:
    class Other(BaseModel):
        score: int

    with_verdict = request_cache_key(base_request(response_format=Verdict))
    assert with_verdict is not None
    assert request_cache_key(base_request(response_format=Verdict)) == with_verdict
    assert request_cache_key(base_request(response_format=Other)) != with_verdict


def test_a_request_without_a_json_form_is_not_cached(tmp_path: Path) -> None:
    assert request_cache_key(base_request(mock_response=ValueError("x"))) is None
    assert request_cache_key(base_request(temperature=float("nan"))) is None

    script = FakeScript().enqueue("*", "one", "two")
    with RequestCache(tmp_path / "cache.db") as cache:
        client = make_client(script, cache)
        run(client.complete(Role.JUDGE, HELLO, logit_bias={"1": float("inf")}))
        assert run(client.complete(Role.JUDGE, HELLO, logit_bias={"1": float("inf")})).content == "two"
        assert cache.stats() == (0, 0)


# -- the cache itself -----------------------------------------------------------------------------------------


def test_stats_count_entries_and_bytes(tmp_path: Path) -> None:
    with RequestCache(tmp_path / "cache.db") as cache:
        assert cache.stats() == (0, 0)
        cache.put("a", completion("one"))
        cache.put("b", completion("two"))
        entries, size = cache.stats()
        assert entries == 2
        assert size == 2 * (1 + len(completion("one").model_dump_json().encode()))
        cache.put("a", completion("one again"))  # replaces
        assert cache.stats()[0] == 2
        cache.delete("a")
        assert cache.stats()[0] == 1
        assert cache.get("a") is None


def test_get_marks_a_stored_reply_as_cached(tmp_path: Path) -> None:
    with RequestCache(tmp_path / "cache.db") as cache:
        cache.put("k", completion("hi"))
        hit = cache.get("k")
    assert hit is not None
    assert hit.cached
    assert hit.content == "hi"


def test_persistence_across_instances(tmp_path: Path) -> None:
    path = tmp_path / "nested" / "folder" / "cache.db"
    script = FakeScript().enqueue("*", "kept")
    with RequestCache(path) as cache:
        run(make_client(script, cache).complete(Role.JUDGE, HELLO))

    with RequestCache(path) as reopened:
        assert reopened.stats()[0] == 1
        replay = run(make_client(script, reopened).complete(Role.JUDGE, HELLO))
    assert replay.cached
    assert replay.content == "kept"
    assert len(script.requests) == 1


def test_two_open_instances_share_the_file(tmp_path: Path) -> None:
    with RequestCache(tmp_path / "cache.db") as one, RequestCache(tmp_path / "cache.db") as two:
        one.put("k", completion("shared"))
        hit = two.get("k")
    assert hit is not None
    assert hit.content == "shared"


def test_least_recently_used_entries_are_evicted_by_size(tmp_path: Path) -> None:
    entry = 1 + len(completion("x" * 100).model_dump_json().encode())
    with RequestCache(tmp_path / "cache.db", max_bytes=4 * entry) as cache:
        for key in "abcd":
            cache.put(key, completion(key * 100))
        assert cache.stats() == (4, 4 * entry)
        assert cache.get("a") is not None  # now the most recently used

        cache.put("e", completion("e" * 100))

        # Over the limit: the oldest entries go until at most 90 % is left (3 entries of 4 fit).
        entries, size = cache.stats()
        assert size <= 4 * entry * 9 // 10
        assert entries == 3
        assert cache.get("b") is None
        assert cache.get("c") is None
        for kept in "ade":
            assert cache.get(kept) is not None


def test_a_reply_larger_than_the_cache_is_not_stored(tmp_path: Path) -> None:
    with RequestCache(tmp_path / "cache.db", max_bytes=50) as cache:
        cache.put("k", completion("x" * 100))
        assert cache.stats() == (0, 0)


def test_clear(tmp_path: Path) -> None:
    with RequestCache(tmp_path / "cache.db") as cache:
        cache.put("a", completion("one"))
        cache.clear()
        assert cache.stats() == (0, 0)
        assert cache.get("a") is None
        cache.put("b", completion("two"))
        assert cache.stats()[0] == 1


def test_close_makes_it_a_miss_and_is_idempotent(tmp_path: Path) -> None:
    cache = RequestCache(tmp_path / "cache.db")
    cache.put("a", completion("one"))
    cache.close()
    cache.close()
    assert cache.get("a") is None
    assert not cache.usable
    assert "closed" in repr(cache)


def test_max_bytes_must_be_positive(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="max_bytes"):
        RequestCache(tmp_path / "cache.db", max_bytes=0)


# -- damage -------------------------------------------------------------------------------------------------


def test_a_corrupt_file_acts_as_a_miss_with_one_warning(tmp_path: Path) -> None:
    path = tmp_path / "cache.db"
    path.write_bytes(b"this is not a database\n" * 200)
    errors = Errors()
    script = FakeScript().enqueue("*", "one", "two")

    with RequestCache(path, on_error=errors) as cache:
        assert not cache.usable
        client = make_client(script, cache)
        first = run(client.complete(Role.JUDGE, HELLO))
        second = run(client.complete(Role.JUDGE, HELLO))
        assert cache.stats() == (0, 0)

    # The run went on; every call reached the model.
    assert (first.content, second.content) == ("one", "two")
    assert len(script.requests) == 2
    assert len(errors.messages) == 1
    assert str(path) in errors.messages[0]
    assert "not a database" in errors.messages[0]
    # The file was not touched.
    assert path.read_bytes() == b"this is not a database\n" * 200


def test_a_corrupt_file_is_reported_through_logging_by_default(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    path = tmp_path / "cache.db"
    path.write_bytes(b"garbage" * 100)
    with caplog.at_level(logging.WARNING, logger="simulator.llm"), RequestCache(path) as cache:
        assert cache.get("k") is None
        cache.put("k", completion("x"))
    warnings = [record for record in caplog.records if record.name == "simulator.llm"]
    assert len(warnings) == 1
    assert "cache" in warnings[0].getMessage()


def test_failing_operations_are_reported_once_and_miss(tmp_path: Path) -> None:
    path = tmp_path / "cache.db"
    errors = Errors()
    with RequestCache(path, on_error=errors) as cache:
        cache.put("k", completion("x"))
        # Someone else breaks the file under the running cache.
        with sqlite3.connect(path) as other:
            other.execute("DROP TABLE requests")
        other.close()

        assert cache.get("k") is None
        cache.put("k", completion("x"))
        assert cache.stats() == (0, 0)

    assert len(errors.messages) == 1
    assert "run goes on" in errors.messages[0]
    assert cache.errors >= 3


def test_a_stored_reply_of_another_shape_is_a_miss(tmp_path: Path) -> None:
    path = tmp_path / "cache.db"
    with RequestCache(path) as cache:
        cache.put("k", completion("x"))
    with sqlite3.connect(path) as db:
        db.execute("UPDATE requests SET completion = ?", ('{"old": "shape"}',))
    db.close()
    with RequestCache(path) as cache:
        assert cache.get("k") is None
        assert cache.stats() == (0, 0)


def test_clear_makes_a_damaged_cache_anew(tmp_path: Path) -> None:
    path = tmp_path / "cache.db"
    path.write_bytes(b"SQLite format 3\x00" + b"\xff" * 2000)
    errors = Errors()
    with RequestCache(path, on_error=errors) as cache:
        assert not cache.usable
        cache.clear()
        assert cache.usable
        cache.put("k", completion("x"))
        assert cache.get("k") is not None
    assert len(errors.messages) == 1


def test_clear_never_deletes_a_file_that_is_not_sqlite(tmp_path: Path) -> None:
    path = tmp_path / "suite.yaml"
    path.write_text("cases: []\n")
    with RequestCache(path, on_error=Errors()) as cache, pytest.raises(StoreError, match="not a SQLite database"):
        cache.clear()
    assert path.read_text() == "cases: []\n"


def test_a_path_that_cannot_be_created_is_an_error(tmp_path: Path) -> None:
    blocker = tmp_path / "a-file"
    blocker.write_text("x")
    with pytest.raises(StoreError, match=r"cannot create the request cache .*a-file"):
        RequestCache(blocker / "cache.db")


def test_a_folder_is_not_a_cache_path(tmp_path: Path) -> None:
    with pytest.raises(StoreError, match="it is a folder"):
        RequestCache(tmp_path)


# A re-run served from the cache does not even import litellm (3-4 s): run in a fresh process to see it.
NO_LITELLM_PROBE = """
import asyncio, sys
from simulator.llm import Completion, LLMClient, RequestCache, Role, Usage, request_cache_key
from simulator.models.settings import ModelRoles

messages = [{"role": "user", "content": "hello"}]
key = request_cache_key({"model": "fake/judge", "messages": messages})
reply = Completion(content="stored", tool_calls=[], finish_reason="stop", usage=Usage(calls=1), model="fake/judge",
                   cost=None, raw_text="stored")
with RequestCache(sys.argv[1]) as cache:
    cache.put(key, reply)
    client = LLMClient(ModelRoles.model_validate({"judge": "fake/judge"}), cache=cache)
    hit = asyncio.run(client.complete(Role.JUDGE, messages))
assert hit.cached and hit.content == "stored", hit
assert "litellm" not in sys.modules, "litellm was imported"
"""


def test_a_hit_does_not_import_litellm(tmp_path: Path) -> None:
    root = Path(__file__).resolve().parents[1]
    env = {**os.environ, "PYTHONPATH": str(root)}
    result = subprocess.run(
        [sys.executable, "-c", NO_LITELLM_PROBE, str(tmp_path / "cache.db")],
        cwd=root,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert result.returncode == 0, result.stderr[-3000:]


def test_each_cache_scope_has_its_own_replies(tmp_path: Path) -> None:
    # Repeats of a case must be independent samples; a re-run of the same repeat replays its reply.
    from simulator.llm import cache_scope

    script = FakeScript().enqueue("judge", "first repeat", "second repeat")
    with RequestCache(tmp_path / "cache.db") as cache:
        client = make_client(script, cache)

        async def ask(salt: str) -> str | None:
            with cache_scope(salt):
                return (await client.complete(Role.JUDGE, HELLO)).content

        assert run(ask("repeat 0")) == "first repeat"
        assert run(ask("repeat 1")) == "second repeat"
        assert run(ask("repeat 0")) == "first repeat"
        assert len(script.requests) == 2
