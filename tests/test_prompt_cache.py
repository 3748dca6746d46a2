"""Provider prompt caches: the cached prompt tokens each backend reports are recorded per role, priced at the cached
rate with what the cache saved, carried through the request cache and recordings, and an Anthropic model's stable
prefix carries a cache breakpoint. Offline: the fake backend, the openai backend's reply reader, and litellm
answered by an in-process provider with a registered price."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, ClassVar

import pytest
from pydantic import BaseModel

from simulator.llm import (
    Completion,
    FakeScript,
    LLMClient,
    RequestCache,
    Role,
    Usage,
    metering,
    replaying,
    request_cache_key,
)
from simulator.llm._breakpoints import with_cache_breakpoint
from simulator.llm._openai import _to_completion as openai_completion
from simulator.llm._openai import usage_cost
from simulator.models.settings import ModelRoles, ModelSettings
from simulator.taps import recording
from tests.factories import run

SYSTEM = {"role": "system", "content": "You are Dana, a customer who wants a refund for order 42."}
EPHEMERAL = {"type": "ephemeral"}
WORDS = len(SYSTEM["content"].split())  # the fake counts words as tokens


def client_for(script: FakeScript, cache: RequestCache | None = None, **roles: str) -> LLMClient:
    return LLMClient(
        ModelRoles.model_validate(roles or {"user": "fake/user"}), fake_script=script, cache=cache, environ={}
    )


# -- Usage: the new figures add up, and usages without them are stored as before ---------------------------------


@pytest.mark.parametrize(
    ("a", "b", "expected"),
    [
        (Usage(cache_read_tokens=3), Usage(cache_read_tokens=4), Usage(cache_read_tokens=7)),
        (Usage(cache_write_tokens=5), Usage(cache_read_tokens=4), Usage(cache_read_tokens=4, cache_write_tokens=5)),
        (Usage(cache_savings=0.25), Usage(cache_savings=0.5), Usage(cache_savings=0.75)),
        (Usage(cache_savings=0.25), Usage(cache_savings=None), Usage(cache_savings=None)),  # unknown stays unknown
        (Usage(cache_savings=-0.25), Usage(cache_savings=0.75), Usage(cache_savings=0.5)),  # writes cost more
    ],
)
def test_prompt_cache_figures_add_up(a: Usage, b: Usage, expected: Usage) -> None:
    total = a + b
    assert total.cache_read_tokens == expected.cache_read_tokens
    assert total.cache_write_tokens == expected.cache_write_tokens
    assert total.cache_savings == expected.cache_savings


@pytest.mark.parametrize(
    ("usage", "stored"),
    [
        (Usage(prompt_tokens=5, calls=1), {"prompt_tokens": 5, "completion_tokens": 0, "calls": 1, "cost": 0.0,
                                           "cached_calls": 0, "cached_cost": 0.0}),
        (Usage(calls=1, cache_read_tokens=2, cache_savings=None),
         {"prompt_tokens": 0, "completion_tokens": 0, "calls": 1, "cost": 0.0, "cached_calls": 0, "cached_cost": 0.0,
          "cache_read_tokens": 2, "cache_savings": None}),
    ],
)  # fmt: skip
def test_a_usage_without_prompt_cache_figures_is_stored_as_before(usage: Usage, stored: dict[str, Any]) -> None:
    assert json.loads(usage.model_dump_json()) == stored
    assert Usage.model_validate(stored) == usage


@pytest.mark.parametrize(("read", "prompt", "share"), [(0, 0, None), (0, 10, 0.0), (4, 10, 0.4)])
def test_prompt_cache_share(read: int, prompt: int, share: float | None) -> None:
    assert Usage(prompt_tokens=prompt, cache_read_tokens=read).prompt_cache_share == share


# -- the fake provider plays a prompt cache ----------------------------------------------------------------------


def turn(*lines: str) -> list[dict[str, str]]:
    """The simulated user's request after ``lines`` (alternating agent, user), after the system prompt."""
    roles = ["user", "assistant"]
    return [SYSTEM, *({"role": roles[i % 2], "content": line} for i, line in enumerate(lines))]


@pytest.mark.parametrize(
    ("requests", "cached"),
    [
        # The second request begins with all of the first (the system prompt, then 2 words of the first line).
        ([turn("hi there"), turn("hi there", "hello Dana", "refund please")], [0, WORDS + 2]),
        # Only the system prompt is shared: the first line differs.
        ([turn("hi there"), turn("good day")], [0, WORDS]),
        # The same words under another role are not the same prompt.
        ([turn("hi there"), [{"role": "user", "content": SYSTEM["content"]}]], [0, 0]),
        # Any earlier request counts, not only the last one.
        ([turn("a b"), [{"role": "user", "content": "other"}], turn("a b", "c")], [0, 0, WORDS + 2]),
    ],
)
def test_the_fake_reports_the_prefix_an_earlier_request_began_with_as_cached(
    requests: list[list[dict[str, str]]], cached: list[int]
) -> None:
    script = FakeScript().enqueue("*", "ok", times=len(requests)).cache_prompts("user")
    client = client_for(script)

    async def go() -> list[Completion]:
        return [await client.complete(Role.USER, messages) for messages in requests]

    assert [completion.usage.cache_read_tokens for completion in run(go())] == cached


def test_a_fake_without_a_played_cache_reports_none() -> None:
    script = FakeScript().enqueue("*", "ok", times=2)
    client = client_for(script)
    run(client.complete(Role.USER, turn("hi")))
    assert run(client.complete(Role.USER, turn("hi"))).usage.cache_read_tokens == 0


def test_cached_tokens_are_priced_at_the_cached_rate_and_the_saving_is_recorded_per_role() -> None:
    script = FakeScript().enqueue("*", "ok", times=2).cache_prompts()
    script.price("*", prompt=0.01, completion=0.02, cached=0.001)
    client = client_for(script, user="fake/user", judge="fake/judge")
    with metering() as meter:
        run(client.complete(Role.USER, turn("hi there")))
        second = run(client.complete(Role.USER, turn("hi there", "hello")))
    # The system prompt and "hi there" were sent before: all but the last word is cached; 1 reply word.
    cached = WORDS + 2
    assert (second.usage.prompt_tokens, second.usage.cache_read_tokens) == (cached + 1, cached)
    assert second.usage.cost == pytest.approx(1 * 0.01 + cached * 0.001 + 1 * 0.02)
    assert second.usage.cache_savings == pytest.approx(cached * (0.01 - 0.001))
    user = meter.by_role[Role.USER]
    assert (user.cache_read_tokens, user.cache_write_tokens) == (cached, 0)
    assert user.cache_savings == pytest.approx(cached * 0.009)
    assert Role.JUDGE not in meter.by_role


@pytest.mark.parametrize(
    ("prices", "cost", "savings"),
    [
        # No cached price: cached tokens cost the full one.
        ({"prompt": 0.01, "completion": 0.0}, (WORDS + 3) * 0.01, 0.0),
        (None, None, None),  # no price: the cost and the saving are unknown, never guessed
    ],
)
def test_a_saving_is_only_what_the_prices_say(
    prices: dict[str, float] | None, cost: float | None, savings: float | None
) -> None:
    script = FakeScript().enqueue("*", "ok", times=2).cache_prompts()
    if prices is not None:
        script.price("*", **prices)
    client = client_for(script)
    run(client.complete(Role.USER, turn("hi there")))
    used = run(client.complete(Role.USER, turn("hi there", "hello"))).usage
    assert used.cache_read_tokens == WORDS + 2
    assert used.cost == (pytest.approx(cost) if cost is not None else None)
    assert used.cache_savings == (pytest.approx(savings) if savings is not None else None)


# -- the request cache and recordings keep them ------------------------------------------------------------------


def test_a_request_cache_hit_keeps_the_cached_tokens_and_spends_and_saves_nothing(tmp_path: Path) -> None:
    script = FakeScript().enqueue("*", "ok", times=2).cache_prompts()
    script.price("*", prompt=0.01, completion=0.0, cached=0.0)
    with RequestCache(tmp_path / "cache.db") as cache:
        client = client_for(script, cache)
        run(client.complete(Role.USER, turn("hi there")))
        sent = run(client.complete(Role.USER, turn("hi there", "hello")))
        with metering() as meter:
            hit = run(client_for(script, cache).complete(Role.USER, turn("hi there", "hello")))
    assert hit.cached
    assert (hit.usage.cache_read_tokens, hit.usage.cache_savings, hit.usage.cost) == (WORDS + 2, 0.0, 0.0)
    assert sent.usage.cache_savings == pytest.approx((WORDS + 2) * 0.01)
    assert hit.usage.cached_cost == sent.usage.cost
    assert meter.by_role[Role.USER].cache_read_tokens == WORDS + 2


class _Recorded:
    def __init__(self, completion: Completion) -> None:
        self.completion = completion

    def answer(self, role: Role, record: dict[str, Any], fingerprint: str) -> Completion | None:
        return self.completion


def test_a_recording_keeps_the_cached_tokens_and_a_replay_shows_them() -> None:
    script = FakeScript().enqueue("*", "ok", times=2).cache_prompts()
    client = client_for(script)
    run(client.complete(Role.USER, turn("hi there")))
    with recording() as tape:
        run(client.complete(Role.USER, turn("hi there", "hello")))
    taped = tape.entries[-1]["response"]
    assert taped["usage"]["cache_read_tokens"] == WORDS + 2
    with replaying(_Recorded(Completion.model_validate(taped))), metering() as meter:
        replayed = run(client.complete(Role.USER, turn("hi there", "hello")))
    assert replayed.usage.cache_read_tokens == WORDS + 2
    assert meter.by_role[Role.USER].cache_read_tokens == WORDS + 2


# -- the openai backend reads OpenAI's cached tokens -------------------------------------------------------------


def openai_reply(prompt: int, cached: int | None) -> dict[str, Any]:
    usage: dict[str, Any] = {"prompt_tokens": prompt, "completion_tokens": 10, "total_tokens": prompt + 10}
    if cached is not None:
        usage["prompt_tokens_details"] = {"cached_tokens": cached}
    return {"choices": [{"message": {"role": "assistant", "content": "ok"}, "finish_reason": "stop"}], "usage": usage}


@pytest.mark.parametrize(("cached", "read"), [(None, 0), (0, 0), (1536, 1536), (5000, 2000)])
def test_the_openai_backend_records_cached_tokens_and_what_they_saved(cached: int | None, read: int) -> None:
    completion = openai_completion(openai_reply(2000, cached), "openai/gpt-4o-mini")
    used = completion.usage
    assert used.cache_read_tokens == read
    assert used.cost == pytest.approx(usage_cost("openai/gpt-4o-mini", 2000, 10, read))
    full = usage_cost("openai/gpt-4o-mini", 2000, 10)
    assert full is not None
    assert used.cache_savings == pytest.approx(full - (used.cost or 0.0))
    assert used.cache_savings is not None
    assert (used.cache_savings > 0) is (read > 0)  # gpt-4o-mini has a cached price below its prompt price


def test_the_openai_backend_saving_is_unknown_for_an_unpriced_model() -> None:
    used = openai_completion(openai_reply(2000, 1024), "openai/no-such-model-here").usage
    assert (used.cache_read_tokens, used.cost, used.cache_savings) == (1024, None, None)


# -- the litellm backend: litellm's usage and price, an in-process provider ---------------------------------------

PROBE = "simulator-cache-probe"
PRICES = {"input": 1e-6, "output": 2e-6, "read": 1e-7, "write": 1.25e-6}


@pytest.fixture(scope="module")
def probe_provider() -> Any:
    """A litellm provider answering in process (nothing is sent), with a registered price that has cached rates;
    each test sets the usage its reply reports."""
    from simulator.llm._litellm import load_litellm

    load_litellm()
    import litellm
    from litellm.llms.custom_llm import CustomLLM
    from litellm.types.utils import ModelResponse
    from litellm.types.utils import Usage as LitellmUsage

    class Probe(CustomLLM):
        usage: ClassVar[dict[str, Any]] = {}

        async def acompletion(self, *args: Any, **kwargs: Any) -> ModelResponse:
            reply = ModelResponse(
                model="m1",
                choices=[{"message": {"role": "assistant", "content": "ok"}, "finish_reason": "stop", "index": 0}],
            )
            reply.usage = LitellmUsage(**Probe.usage)  # type: ignore[attr-defined]
            return reply

    litellm.register_model(
        {
            f"{PROBE}/m1": {
                "input_cost_per_token": PRICES["input"],
                "output_cost_per_token": PRICES["output"],
                "cache_read_input_token_cost": PRICES["read"],
                "cache_creation_input_token_cost": PRICES["write"],
                "litellm_provider": PROBE,
                "mode": "chat",
            }
        }
    )
    before = list(litellm.custom_provider_map)
    litellm.custom_provider_map = [*before, {"provider": PROBE, "custom_handler": Probe()}]
    yield Probe
    litellm.custom_provider_map = before


@pytest.mark.parametrize(
    ("reported", "read", "written"),
    [
        ({}, 0, 0),
        ({"prompt_tokens_details": {"cached_tokens": 600}}, 600, 0),  # OpenAI's field
        # Anthropic's, as litellm maps them.
        ({"cache_read_input_tokens": 600, "cache_creation_input_tokens": 200}, 600, 200),
    ],
)
def test_the_litellm_backend_records_cached_tokens_priced_at_the_cached_rate(
    probe_provider: Any, reported: dict[str, Any], read: int, written: int
) -> None:
    probe_provider.usage = {"prompt_tokens": 1000, "completion_tokens": 10, "total_tokens": 1010, **reported}
    client = LLMClient(ModelRoles(judge=ModelSettings(model=f"{PROBE}/m1", backend="litellm")), environ={})
    used = run(client.complete(Role.JUDGE, [SYSTEM])).usage
    assert (used.prompt_tokens, used.cache_read_tokens, used.cache_write_tokens) == (1000, read, written)
    plain = 1000 - read - written
    expected = plain * PRICES["input"] + read * PRICES["read"] + written * PRICES["write"] + 10 * PRICES["output"]
    assert used.cost == pytest.approx(expected)  # litellm's own price: the cached rates applied
    saved = read * (PRICES["input"] - PRICES["read"]) + written * (PRICES["input"] - PRICES["write"])
    assert used.cache_savings == pytest.approx(saved)


# -- the Anthropic cache breakpoint ------------------------------------------------------------------------------

HAIKU = "anthropic/claude-haiku-4-5"
MARKED_SYSTEM = {"role": "system", "content": [{"type": "text", "text": SYSTEM["content"], "cache_control": EPHEMERAL}]}
HI = {"role": "user", "content": "hi"}
TEXT_A = {"type": "text", "text": "a"}
OWN_MARK = {"role": "user", "content": [{"type": "text", "text": "x", "cache_control": EPHEMERAL}]}


@pytest.mark.parametrize(
    ("model", "role", "messages", "expected"),
    [
        (HAIKU, Role.USER, [SYSTEM, HI], [MARKED_SYSTEM, HI]),
        (HAIKU, Role.JUDGE, [SYSTEM, HI], [MARKED_SYSTEM, HI]),
        # Two leading system messages: the mark closes the second, so both are in the cached prefix.
        (HAIKU, Role.JUDGE, [{"role": "system", "content": "a"}, SYSTEM, HI],
         [{"role": "system", "content": "a"}, MARKED_SYSTEM, HI]),
        # Blocks given: the last block of the system message is marked.
        (HAIKU, Role.USER, [{"role": "system", "content": [TEXT_A, {"type": "text", "text": "b"}]}],
         [{"role": "system", "content": [TEXT_A, {"type": "text", "text": "b", "cache_control": EPHEMERAL}]}]),
        # One rendered prompt changes as a whole: nothing to mark.
        (HAIKU, Role.JUDGE, [HI], [HI]),
        (HAIKU, Role.USER, [{"role": "system", "content": ""}, HI], [{"role": "system", "content": ""}, HI]),
        # The caller's own breakpoint is kept as it is, and no other is added.
        (HAIKU, Role.USER, [SYSTEM, OWN_MARK], [SYSTEM, OWN_MARK]),
        # Never the agent under test's requests, never another provider.
        (HAIKU, Role.AGENT, [SYSTEM, HI], [SYSTEM, HI]),
        ("openai/gpt-4o-mini", Role.USER, [SYSTEM, HI], [SYSTEM, HI]),
        ("gemini/gemini-2.0-flash", Role.JUDGE, [SYSTEM, HI], [SYSTEM, HI]),
        ("bedrock/anthropic.claude-3-haiku", Role.JUDGE, [SYSTEM, HI], [SYSTEM, HI]),
    ],
)  # fmt: skip
def test_where_the_cache_breakpoint_goes(
    model: str, role: Role, messages: list[dict[str, Any]], expected: list[dict[str, Any]]
) -> None:
    given = json.loads(json.dumps(messages))
    assert with_cache_breakpoint(model, role, messages) == expected
    assert messages == given  # the caller's messages are not changed


class Move(BaseModel):
    message: str


def test_an_anthropic_request_is_sent_with_the_breakpoint_and_cached_under_the_same_key(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    from simulator.llm._litellm import load_litellm

    load_litellm()
    import litellm
    from litellm.types.utils import ModelResponse

    sent: list[dict[str, Any]] = []

    async def acompletion(**kwargs: Any) -> ModelResponse:
        sent.append(kwargs)
        reply = {"role": "assistant", "content": '{"message": "hi"}'}
        return ModelResponse(
            model="claude-haiku-4-5", choices=[{"message": reply, "finish_reason": "stop", "index": 0}]
        )

    monkeypatch.setattr(litellm, "acompletion", acompletion)
    messages = [SYSTEM, HI]
    settings = ModelSettings(model=HAIKU, api_key_env="TEST_ANTHROPIC_KEY")
    with RequestCache(tmp_path / "cache.db") as cache:
        client = LLMClient(ModelRoles(user=settings), cache=cache, environ={"TEST_ANTHROPIC_KEY": "sk-ant-test"})
        run(client.structured(Role.USER, messages, Move))
        again = run(client.complete(Role.USER, messages, response_format=Move))
    assert sent[0]["messages"] == [MARKED_SYSTEM, HI]
    # The key is the unmarked request's (the mark would change it): the second call hit the first one's entry.
    assert len(sent) == 1
    assert again.cached
    marked = {"model": HAIKU, "messages": [MARKED_SYSTEM, HI], "response_format": Move}
    assert request_cache_key({**marked, "messages": messages}) != request_cache_key(marked)
    assert messages == [SYSTEM, HI]


def test_litellm_passes_the_breakpoint_on_to_anthropic() -> None:
    from simulator.llm._litellm import load_litellm

    load_litellm()
    from litellm.llms.anthropic.chat.transformation import AnthropicConfig

    body = AnthropicConfig().transform_request(
        model="claude-haiku-4-5",
        messages=with_cache_breakpoint(HAIKU, Role.USER, [SYSTEM, HI]),  # type: ignore[arg-type]
        optional_params={"max_tokens": 10},
        litellm_params={},
        headers={},
    )
    assert body["system"] == [{"type": "text", "text": SYSTEM["content"], "cache_control": EPHEMERAL}]
