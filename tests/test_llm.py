"""Tests of the model client and the offline fake provider. Everything here runs offline, on ``fake/...`` models."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
from collections.abc import Callable, Coroutine
from pathlib import Path
from typing import Any

import pytest
from pydantic import BaseModel

from simulator.errors import ModelError
from simulator.llm import (
    Completion,
    FakeScript,
    FakeToolCall,
    LLMClient,
    RetryPolicy,
    Role,
    StructuredOutputError,
    ToolCallRequest,
    Usage,
    fake_auth_error,
    fake_bad_request,
    fake_connection_error,
    fake_not_found,
    fake_rate_limit,
    fake_server_error,
    fake_timeout,
    metering,
    retry_after_seconds,
)
from simulator.models.settings import ModelRoles, ModelSettings
from tests.factories import run

ROOT = Path(__file__).resolve().parents[1]
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


class Sleeps:
    """An injected sleep that records the delays instead of waiting."""

    def __init__(self) -> None:
        self.delays: list[float] = []

    async def __call__(self, delay: float) -> None:
        self.delays.append(delay)


def no_jitter(ceiling: float) -> float:
    """Always the upper bound, so the backoff sequence is predictable."""
    return ceiling


def make_client(
    script: FakeScript,
    *,
    sleeps: Sleeps | None = None,
    environ: dict[str, str] | None = None,
    **roles: ModelSettings | str,
) -> LLMClient:
    return LLMClient(
        ModelRoles.model_validate(roles or {"judge": "fake/judge"}),
        fake_script=script,
        sleep=sleeps or Sleeps(),
        jitter=no_jitter,
        backoff_base=1.0,
        backoff_cap=30.0,
        environ=environ or {},
    )


class Verdict(BaseModel):
    score: int
    reason: str


# -- plain completions -------------------------------------------------------------------------------------------


def test_plain_completion_accounts_usage_per_role() -> None:
    script = FakeScript().enqueue("judge", "four words of reply").enqueue("user", "ok", "fine then")
    client = make_client(script, judge="fake/judge", user="fake/user")

    async def go() -> list[Completion]:
        return [
            await client.complete(Role.JUDGE, [{"role": "system", "content": "be fair"}, *HELLO]),
            await client.complete("user", HELLO),
            await client.complete("user", HELLO),
        ]

    with metering() as meter:
        judged, first, second = run(go())

    assert judged.content == "four words of reply"
    assert judged.raw_text == "four words of reply"
    assert judged.finish_reason == "stop"
    assert judged.tool_calls == []
    assert judged.model == "fake/judge"
    # Word counts: the prompt has "be fair" + "hello there", the reply four words.
    assert judged.usage == Usage(prompt_tokens=4, completion_tokens=4, calls=1, cost=None)
    # litellm has no price for fake models: the cost is unknown, not zero.
    assert judged.cost is None
    assert (first.content, second.content) == ("ok", "fine then")

    usage = meter.by_role
    assert usage[Role.JUDGE] == Usage(prompt_tokens=4, completion_tokens=4, calls=1, cost=None)
    assert usage[Role.USER] == Usage(prompt_tokens=4, completion_tokens=3, calls=2, cost=None)
    assert Role.AGENT not in usage
    assert meter.total().calls == 3
    assert [request.role for request in script.requests] == [Role.JUDGE, Role.USER, Role.USER]
    assert script.requests[0].messages[0] == {"role": "system", "content": "be fair"}
    assert script.pending() == 0


def test_role_settings_reach_the_provider_and_the_key_is_never_recorded() -> None:
    script = FakeScript().enqueue("*", "ok")
    settings = ModelSettings(
        model="fake/judge", temperature=0.2, max_tokens=50, api_base="http://localhost:9", api_key_env="JUDGE_KEY"
    )
    client = make_client(script, environ={"JUDGE_KEY": "sk-very-secret"}, judge=settings)

    run(client.complete("judge", HELLO))

    (request,) = script.requests
    assert request.params["temperature"] == 0.2
    assert request.params["max_tokens"] == 50
    assert request.api_base == "http://localhost:9"
    assert request.has_api_key
    assert "sk-very-secret" not in repr(request)


def test_overrides_win_over_role_settings() -> None:
    script = FakeScript().enqueue("*", "ok")
    client = make_client(script, judge=ModelSettings(model="fake/judge", temperature=0.9))

    run(client.complete("judge", HELLO, temperature=0.0))

    assert script.requests[0].params["temperature"] == 0.0


def test_reserved_arguments_cannot_be_overridden() -> None:
    client = make_client(FakeScript())
    with pytest.raises(ValueError, match="model"):
        run(client.complete("judge", HELLO, model="fake/other"))


def test_model_queue_is_used_before_the_wildcard_queue() -> None:
    script = FakeScript().enqueue("*", "from any").enqueue("fake/judge", "for the judge")
    client = make_client(script, judge="fake/judge", user="fake/user")

    async def go() -> tuple[Completion, Completion]:
        return await client.complete("user", HELLO), await client.complete("judge", HELLO)

    user, judge = run(go())
    assert (user.content, judge.content) == ("from any", "for the judge")


def test_dict_reply_is_sent_as_json_text() -> None:
    script = FakeScript().enqueue("*", {"score": 3, "reason": "fine"})
    completion = run(make_client(script).complete("judge", HELLO))
    assert completion.content == '{"score": 3, "reason": "fine"}'


def test_callable_reply_sees_the_messages() -> None:
    def echo(messages: list[dict[str, Any]]) -> str:
        return f"you said: {messages[-1]['content']}"

    script = FakeScript().enqueue("*", echo)
    completion = run(make_client(script).complete("judge", HELLO))
    assert completion.content == "you said: hello there"


def test_known_price_gives_a_cost_and_costs_add_up() -> None:
    script = FakeScript().enqueue("*", "one two", "three four")
    client = make_client(script)
    price: dict[str, Any] = {"input_cost_per_token": 0.001, "output_cost_per_token": 0.01}

    async def go() -> None:
        await client.complete("judge", HELLO, **price)
        await client.complete("judge", HELLO, **price)

    with metering() as meter:
        run(go())
    usage = meter.by_role[Role.JUDGE]
    # Per call: 2 prompt words * 0.001 + 2 reply words * 0.01.
    assert usage.cost == pytest.approx(2 * (2 * 0.001 + 2 * 0.01))
    assert usage.calls == 2


def test_usage_addition_keeps_unknown_costs_unknown() -> None:
    known = Usage(prompt_tokens=1, completion_tokens=2, calls=1, cost=0.5)
    unknown = Usage(prompt_tokens=3, completion_tokens=4, calls=1, cost=None)
    assert known + known == Usage(prompt_tokens=2, completion_tokens=4, calls=2, cost=1.0)
    assert (known + unknown).cost is None
    assert (known + unknown).total_tokens == 10
    assert Usage() + known == known


def test_offline_price_list_is_forced_before_litellm_is_imported() -> None:
    # A litellm model (not the in-process fake), answered by litellm's own mock so nothing is sent.
    client = LLMClient(ModelRoles(judge=ModelSettings(model="openai/gpt-4o-mini", backend="litellm")))
    run(client.complete("judge", HELLO, mock_response="ok"))
    assert os.environ.get("LITELLM_LOCAL_MODEL_COST_MAP", "").lower() == "true"


# -- tool calls ---------------------------------------------------------------------------------------------------


def test_tool_call_reply() -> None:
    script = FakeScript().enqueue(
        "*",
        [
            FakeToolCall("lookup_order", {"order_id": "A-17"}, id="call-1"),
            FakeToolCall("lookup_order", '{"order_id": "A-', id="call-2"),
        ],
    )
    client = make_client(script, agent="fake/agent")

    completion = run(client.complete("agent", HELLO, tools=TOOLS))

    assert completion.finish_reason == "tool_calls"
    assert completion.content is None
    assert completion.raw_text == ""
    good, bad = completion.tool_calls
    assert good == ToolCallRequest(
        id="call-1", name="lookup_order", arguments={"order_id": "A-17"}, raw_arguments='{"order_id": "A-17"}'
    )
    assert not good.malformed
    assert bad.malformed
    assert bad.arguments == {}
    assert bad.raw_arguments == '{"order_id": "A-'
    assert bad.arguments_error is not None
    assert "not valid JSON" in bad.arguments_error
    assert completion.usage.completion_tokens > 0
    assert script.requests[0].tools == TOOLS


def test_tool_call_arguments_parsing() -> None:
    assert ToolCallRequest.parse("1", "f", "").arguments == {}
    assert not ToolCallRequest.parse("1", "f", None).malformed
    listed = ToolCallRequest.parse("1", "f", "[1, 2]")
    assert listed.malformed
    assert listed.raw_arguments == "[1, 2]"


# -- structured output -----------------------------------------------------------------------------------------


def test_structured_good_reply_passes_the_schema_as_response_format() -> None:
    script = FakeScript().enqueue("*", {"score": 4, "reason": "polite and correct"})
    verdict = run(make_client(script).structured("judge", HELLO, Verdict))

    assert verdict == Verdict(score=4, reason="polite and correct")
    response_format = script.requests[0].params["response_format"]
    assert response_format["type"] == "json_schema"
    assert response_format["json_schema"]["name"] == "Verdict"


def test_structured_accepts_a_fenced_reply() -> None:
    script = FakeScript().enqueue("*", 'Here it is:\n```json\n{"score": 2, "reason": "meh"}\n```')
    assert run(make_client(script).structured("judge", HELLO, Verdict)).score == 2


def test_structured_malformed_json_then_good() -> None:
    script = FakeScript().enqueue("*", '{"score": 4, "reason": ', {"score": 4, "reason": "ok"})
    client = make_client(script)

    with metering() as meter:
        verdict = run(client.structured("judge", HELLO, Verdict))

    assert verdict.score == 4
    retry = script.requests[1].messages
    assert retry[: len(HELLO)] == HELLO
    assert retry[-2] == {"role": "assistant", "content": '{"score": 4, "reason": '}
    assert "not valid JSON" in retry[-1]["content"]
    assert meter.by_role[Role.JUDGE].calls == 2


def test_structured_schema_invalid_then_good() -> None:
    script = FakeScript().enqueue("*", {"score": "high"}, {"score": 1, "reason": "rude"})

    verdict = run(make_client(script).structured("judge", HELLO, Verdict))

    assert verdict == Verdict(score=1, reason="rude")
    correction = script.requests[1].messages[-1]["content"]
    assert "score" in correction
    assert "reason: Field required" in correction


def test_structured_always_malformed_keeps_the_raw_reply() -> None:
    script = FakeScript().enqueue("*", "", "not json", "still { not json")

    with pytest.raises(StructuredOutputError) as caught:
        run(make_client(script).structured("judge", HELLO, Verdict, attempts=3))

    assert isinstance(caught.value, ModelError)
    assert caught.value.raw == "still { not json"
    assert "3 attempts" in str(caught.value)
    assert "judge" in str(caught.value)
    assert len(script.requests) == 3
    # The empty first reply counted as malformed, and said so.
    assert "empty" in script.requests[1].messages[-1]["content"]


# -- retries ----------------------------------------------------------------------------------------------------


def test_rate_limit_then_success_backs_off_exponentially() -> None:
    sleeps = Sleeps()
    script = FakeScript().enqueue("*", fake_rate_limit(), times=3).enqueue("*", "finally")
    client = make_client(script, sleeps=sleeps, judge=ModelSettings(model="fake/judge", max_retries=3))

    with metering() as meter:
        completion = run(client.complete("judge", HELLO))

    assert completion.content == "finally"
    assert len(script.requests) == 4
    assert sleeps.delays == [1.0, 2.0, 4.0]
    # Only the successful call is billed.
    assert meter.by_role[Role.JUDGE].calls == 1


def test_backoff_uses_full_jitter_below_the_cap() -> None:
    sleeps = Sleeps()
    ceilings: list[float] = []

    def jitter(ceiling: float) -> float:
        ceilings.append(ceiling)
        return ceiling / 2

    script = FakeScript().enqueue("*", fake_server_error(503), times=4).enqueue("*", "ok")
    client = LLMClient(
        ModelRoles(judge=ModelSettings(model="fake/judge", max_retries=5)),
        fake_script=script,
        sleep=sleeps,
        jitter=jitter,
        backoff_base=0.5,
        backoff_cap=2.0,
    )

    run(client.complete("judge", HELLO))

    assert ceilings == [0.5, 1.0, 2.0, 2.0]
    assert sleeps.delays == [0.25, 0.5, 1.0, 1.0]


def test_server_error_exhausted_names_role_model_and_attempts() -> None:
    sleeps = Sleeps()
    script = FakeScript().enqueue("*", fake_server_error(500), times=5)
    client = make_client(script, sleeps=sleeps, judge=ModelSettings(model="fake/judge", max_retries=2))

    with metering() as meter, pytest.raises(ModelError) as caught:
        run(client.complete("judge", HELLO))

    message = str(caught.value)
    assert "judge model 'fake/judge'" in message
    assert "3 attempts" in message
    assert "server error 500" in message
    assert len(script.requests) == 3
    assert sleeps.delays == [1.0, 2.0]
    assert Role.JUDGE not in meter.by_role


@pytest.mark.parametrize(
    "make_error",
    [fake_timeout, fake_connection_error, lambda: fake_server_error(502), lambda: fake_server_error(504)],
    ids=["timeout", "connection", "502", "504"],
)
def test_transient_errors_are_retried(make_error: Callable[[], Exception]) -> None:
    sleeps = Sleeps()
    script = FakeScript().enqueue("*", make_error(), "recovered")
    completion = run(make_client(script, sleeps=sleeps).complete("judge", HELLO))
    assert completion.content == "recovered"
    assert len(sleeps.delays) == 1


@pytest.mark.parametrize(
    ("make_error", "expected"),
    [
        (lambda: fake_rate_limit(retry_after=7), 7.0),
        (lambda: fake_rate_limit(retry_after="0.5"), 1.0),  # the backoff (1 s) is longer: it wins
        (lambda: fake_server_error(503, retry_after=12), 12.0),
        (lambda: fake_server_error(500, retry_after=3), 3.0),
        (lambda: fake_rate_limit(retry_after=3600), 60.0),  # capped
        (lambda: fake_rate_limit(retry_after="Fri, 01 Jan 2100 00:00:00 GMT"), 60.0),  # an HTTP date, capped
        (lambda: fake_rate_limit(retry_after="soon"), 1.0),  # not a wait: the backoff alone
    ],
    ids=["429-seconds", "429-shorter-than-backoff", "503", "500", "429-capped", "429-http-date", "429-garbage"],
)
def test_retry_after_is_honoured_for_every_role(make_error: Callable[[], Exception], expected: float) -> None:
    for role in (Role.AGENT, Role.USER, Role.JUDGE):  # the chat roles; the speech roles' own tests are beside them
        sleeps = Sleeps()
        script = FakeScript().enqueue("*", make_error(), "recovered")
        client = make_client(script, sleeps=sleeps, agent="fake/agent", user="fake/user", judge="fake/judge")
        assert run(client.complete(role, HELLO)).content == "recovered"
        assert sleeps.delays == [expected], role


def test_retry_after_seconds_reads_both_forms_and_the_milliseconds_header() -> None:
    now = 4_102_444_800.0  # 2100-01-01 00:00:00 UTC
    assert retry_after_seconds({"Retry-After": "7"}) == 7.0
    assert retry_after_seconds({"retry-after": " 1.5 "}) == 1.5
    assert retry_after_seconds({"RETRY-AFTER": "-3"}) == 0.0
    assert retry_after_seconds({"Retry-After": "Fri, 01 Jan 2100 00:00:30 GMT"}, now=now) == 30.0
    assert retry_after_seconds({"Retry-After": "Thu, 31 Dec 2099 23:59:00 GMT"}, now=now) == 0.0  # past
    assert retry_after_seconds({"retry-after-ms": "250", "retry-after": "9"}) == 0.25
    assert retry_after_seconds({"Retry-After": "tomorrow"}) is None
    assert retry_after_seconds({"Retry-After": "nan"}) is None
    assert retry_after_seconds({"Content-Type": "application/json"}) is None
    assert retry_after_seconds(None) is None


def test_retry_policy_full_jitter_with_a_floor_from_retry_after() -> None:
    policy = RetryPolicy(base=0.5, cap=4.0, retry_after_cap=10.0, jitter=lambda ceiling: ceiling / 2)
    assert [policy.delay(n) for n in (1, 2, 3, 4, 5)] == [0.25, 0.5, 1.0, 2.0, 2.0]
    assert policy.delay(1, retry_after=3.0) == 3.0
    assert policy.delay(5, retry_after=1.0) == 2.0
    assert policy.delay(1, retry_after=99.0) == 10.0
    assert policy.longest_wait() == 10.0
    with pytest.raises(ValueError, match="negative"):
        RetryPolicy(base=-1)


def test_retries_can_be_set_per_call() -> None:
    sleeps = Sleeps()
    script = FakeScript().enqueue("*", fake_server_error(500), times=5)
    client = make_client(script, sleeps=sleeps, agent=ModelSettings(model="fake/agent", max_retries=3))

    with pytest.raises(ModelError, match="failed after 2 attempts"):
        run(client.complete("agent", HELLO, retries=1))
    assert len(script.requests) == 2


def test_a_call_slower_than_the_timeout_is_retried() -> None:
    async def slow(messages: list[dict[str, Any]]) -> str:
        await asyncio.sleep(5)
        return "too late"

    sleeps = Sleeps()
    script = FakeScript().enqueue("*", slow, "quick")
    client = make_client(script, sleeps=sleeps, judge=ModelSettings(model="fake/judge", timeout=0.05))

    assert run(client.complete("judge", HELLO)).content == "quick"
    assert len(sleeps.delays) == 1


def test_auth_error_is_not_retried_and_names_the_key_variable() -> None:
    sleeps = Sleeps()
    script = FakeScript().enqueue("*", fake_auth_error("key sk-very-secret is invalid"), "never reached")
    settings = ModelSettings(model="fake/judge", api_key_env="JUDGE_KEY")
    client = make_client(script, sleeps=sleeps, environ={"JUDGE_KEY": "sk-very-secret"}, judge=settings)

    with pytest.raises(ModelError) as caught:
        run(client.complete("judge", HELLO))

    message = str(caught.value)
    assert "JUDGE_KEY" in message
    assert "judge model 'fake/judge'" in message
    assert "sk-very-secret" not in message
    assert len(script.requests) == 1
    assert sleeps.delays == []


def test_auth_error_without_key_variable_says_how_to_set_one() -> None:
    # The fake provider has no key variable of its own: the hint names none (a real provider's names its own).
    script = FakeScript().enqueue("*", fake_auth_error())
    with pytest.raises(ModelError, match=r"the provider's key variable.*models\.judge\.api_key_env"):
        run(make_client(script).complete("judge", HELLO))


@pytest.mark.parametrize(
    ("make_error", "expected"),
    [(fake_not_found, "does not know this model"), (fake_bad_request, "rejected the request")],
    ids=["not-found", "bad-request"],
)
def test_client_errors_are_not_retried(make_error: Callable[[], Exception], expected: str) -> None:
    sleeps = Sleeps()
    script = FakeScript().enqueue("*", make_error(), "never reached")
    with pytest.raises(ModelError, match=expected):
        run(make_client(script, sleeps=sleeps).complete("judge", HELLO))
    assert len(script.requests) == 1
    assert sleeps.delays == []


def test_missing_key_variable_fails_before_any_call() -> None:
    script = FakeScript().enqueue("*", "ok")
    client = make_client(script, judge=ModelSettings(model="fake/judge", api_key_env="JUDGE_KEY"))
    with pytest.raises(ModelError, match=r"JUDGE_KEY.*not set"):
        run(client.complete("judge", HELLO))
    assert script.requests == []


def test_role_without_model_says_how_to_configure_it() -> None:
    script = FakeScript()
    client = LLMClient(ModelRoles(), fake_script=script)

    with pytest.raises(ModelError) as caught:
        run(client.complete(Role.JUDGE, HELLO))

    message = str(caught.value)
    assert "No model is configured for the judge role" in message
    assert "models: {judge:" in message
    assert "--judge-model" in message
    assert script.requests == []


# -- the fake script --------------------------------------------------------------------------------------------


def test_empty_script_fails_clearly_without_retrying() -> None:
    sleeps = Sleeps()
    script = FakeScript().enqueue("*", "only one")
    client = make_client(script, sleeps=sleeps)

    async def go() -> None:
        await client.complete("judge", HELLO)
        await client.complete("judge", HELLO)

    with pytest.raises(ModelError, match=r"no reply queued for fake/judge"):
        run(go())
    assert sleeps.delays == []


def test_fake_model_without_a_script_fails_clearly() -> None:
    client = LLMClient(ModelRoles(judge=ModelSettings(model="fake/judge")), sleep=Sleeps())
    with pytest.raises(ModelError, match="no FakeScript is bound"):
        run(client.complete("judge", HELLO))


def test_active_script_serves_a_client_without_its_own() -> None:
    script = FakeScript().enqueue("*", "from the active script")
    client = LLMClient(ModelRoles(judge=ModelSettings(model="fake/judge")))

    with script.active():
        completion = run(client.complete("judge", HELLO))

    assert completion.content == "from the active script"
    assert FakeScript().requests == []  # a new script starts empty: nothing is shared


def test_a_plain_exception_from_a_reply_is_a_connection_error() -> None:
    # As litellm treats a plain exception raised inside a provider.
    sleeps = Sleeps()
    script = FakeScript().enqueue("*", OSError("network is down"), "recovered")
    assert run(make_client(script, sleeps=sleeps).complete("judge", HELLO)).content == "recovered"
    assert len(sleeps.delays) == 1


# -- concurrency ------------------------------------------------------------------------------------------------


def test_per_role_concurrency_limit_is_respected() -> None:
    in_flight = {"judge": 0, "user": 0}
    peak = {"judge": 0, "user": 0}

    def tracked(role: str) -> Callable[[list[dict[str, Any]]], Coroutine[Any, Any, str]]:
        async def reply(messages: list[dict[str, Any]]) -> str:
            in_flight[role] += 1
            peak[role] = max(peak[role], in_flight[role])
            await asyncio.sleep(0.01)
            in_flight[role] -= 1
            return "done"

        return reply

    script = FakeScript().enqueue("judge", tracked("judge"), times=20).enqueue("user", tracked("user"), times=10)
    client = make_client(
        script,
        judge=ModelSettings(model="fake/judge", concurrency=3),
        user=ModelSettings(model="fake/user", concurrency=5),
    )

    async def go() -> list[Completion]:
        calls = [client.complete("judge", HELLO) for _ in range(20)]
        calls += [client.complete("user", HELLO) for _ in range(10)]
        return await asyncio.gather(*calls)

    with metering() as meter:
        results = run(go())

    assert len(results) == 30
    # Exactly the limit: never above it, and the calls did run in parallel up to it.
    assert peak == {"judge": 3, "user": 5}
    assert meter.by_role[Role.JUDGE].calls == 20


def test_client_can_be_reused_across_event_loops() -> None:
    script = FakeScript().enqueue("*", "ok", times=4)
    client = make_client(script, judge=ModelSettings(model="fake/judge", concurrency=1))

    async def two() -> None:
        await asyncio.gather(client.complete("judge", HELLO), client.complete("judge", HELLO))

    with metering() as meter:
        run(two())
        run(two())
    assert meter.by_role[Role.JUDGE].calls == 4


# -- import cost ------------------------------------------------------------------------------------------------


def test_importing_the_module_does_not_import_litellm() -> None:
    code = "import simulator.llm, sys; assert 'litellm' not in sys.modules, 'litellm was imported'"
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    result = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, env=env, capture_output=True, text=True, timeout=60, check=False
    )
    assert result.returncode == 0, result.stderr


# Run in a fresh process: litellm is imported by someone else first (its import installs an "ignore" filter for
# a pydantic warning about its TypedDicts), then warnings become errors as pytest's `filterwarnings = error` makes
# them, and only then is the first request made, which is when pydantic builds those schemas and warns. Without
# the client's own targeted filter the first call fails.
WARNINGS_PROBE = """
import asyncio, warnings
import litellm
from simulator.llm import LLMClient
from simulator.models.settings import ModelRoles, ModelSettings

warnings.simplefilter("error")
# A litellm model (the fake backend never reaches litellm), answered by litellm's own mock: nothing is sent.
client = LLMClient(ModelRoles(judge=ModelSettings(model="openai/gpt-4o-mini", backend="litellm")))

async def main() -> None:
    await client.complete("judge", [{"role": "user", "content": "hello"}], mock_response="hi")
    await client.complete("judge", [{"role": "user", "content": "hello"}], tools=[], mock_response="hi")

asyncio.run(main())
"""


def test_first_call_survives_warnings_as_errors() -> None:
    env = {**os.environ, "PYTHONPATH": str(ROOT), "LITELLM_OFFLINE_MODE": "true"}
    result = subprocess.run(
        [sys.executable, "-c", WARNINGS_PROBE],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert result.returncode == 0, result.stderr[-3000:]


def test_metering_counts_each_conversation_apart() -> None:
    # Conversations share one client; each needs its own token account for its transcript.
    script = FakeScript().enqueue("*", "one two three", times=3)
    client = make_client(script, user="fake/user", judge="fake/judge")

    async def conversation(calls: int) -> dict[Role, Usage]:
        with metering() as meter:
            for _ in range(calls):
                await client.complete(Role.USER, HELLO)
            return meter.by_role

    async def both() -> tuple[dict[Role, Usage], dict[Role, Usage]]:
        return await asyncio.gather(conversation(1), conversation(2))

    # The block around both (a run's) counts the calls of the blocks inside it too.
    with metering() as whole:
        first, second = run(both())
    assert first[Role.USER].calls == 1
    assert second[Role.USER].calls == 2
    assert whole.by_role[Role.USER].calls == 3
    assert first[Role.USER].completion_tokens == 3


# -- the fake backend needs no litellm -----------------------------------------------------------------------------

# A whole offline session on fake models: text, tool calls, structured output, a retried rate limit, a fatal
# error, and the preload a run does first. None of it may import litellm (seconds of import per process).
FAKE_ONLY_PROBE = """
import asyncio, sys
from pydantic import BaseModel
from simulator.llm import FakeScript, FakeToolCall, LLMClient, fake_auth_error, fake_rate_limit, metering, preload
from simulator.errors import ModelError
from simulator.models.settings import ModelRoles

class Verdict(BaseModel):
    score: int

async def no_sleep(delay: float) -> None:
    return None

roles = ModelRoles.model_validate({"agent": "fake/agent", "user": "fake/user", "judge": "fake/judge"})
preload(roles)
script = FakeScript()
script.enqueue("agent", [FakeToolCall("lookup", {"id": 1})], fake_rate_limit(retry_after=1), "done")
script.enqueue("judge", {"score": 3}, fake_auth_error())
client = LLMClient(roles, fake_script=script, sleep=no_sleep)
hello = [{"role": "user", "content": "hello"}]

async def main() -> None:
    assert (await client.complete("agent", hello)).tool_calls[0].name == "lookup"
    assert (await client.complete("agent", hello)).content == "done"
    assert (await client.structured("judge", hello, Verdict)).score == 3
    try:
        await client.complete("judge", hello)
    except ModelError as exc:
        assert "refused the credentials" in str(exc), exc
    else:
        raise AssertionError("the auth error was not raised")

with metering() as meter:
    asyncio.run(main())
assert meter.by_role["agent"].calls == 2, meter.by_role
assert "litellm" not in sys.modules, "litellm was imported"
"""


def test_fake_models_never_import_litellm() -> None:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    result = subprocess.run(
        [sys.executable, "-c", FAKE_ONLY_PROBE],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert result.returncode == 0, result.stderr[-3000:]


def test_metering_blocks_nest() -> None:
    script = FakeScript().enqueue("*", "one two", times=3)
    client = make_client(script, user="fake/user", judge="fake/judge")
    with metering() as run_meter:
        run(client.complete(Role.USER, HELLO))
        with metering() as inner:
            run(client.complete(Role.JUDGE, HELLO))
            run(client.complete(Role.JUDGE, HELLO))
    assert inner.by_role == {Role.JUDGE: Usage(prompt_tokens=4, completion_tokens=4, calls=2, cost=None)}
    assert run_meter.by_role[Role.USER].calls == 1
    assert run_meter.by_role[Role.JUDGE].calls == 2
    assert run_meter.total().calls == 3
    assert inner.parent is run_meter


# -- the litellm backend behaves as the fake one -------------------------------------------------------------------
# Real model strings go through litellm. Its own `mock_response` answers them offline (a text, or an exception to
# raise), so the same client code is exercised with litellm's reply and exception types.


def litellm_errors() -> dict[str, tuple[Exception, Exception]]:
    """Each failure kind as litellm raises it and as the fake backend does, with the same status and headers."""
    import httpx
    from litellm import exceptions

    def response(status: int, retry_after: str | None = None) -> httpx.Response:
        headers = {} if retry_after is None else {"retry-after": retry_after}
        return httpx.Response(status, headers=headers, request=httpx.Request("POST", "http://provider.invalid"))

    where: dict[str, Any] = {"llm_provider": "openai", "model": "gpt-4o-mini"}
    return {
        "429": (
            exceptions.RateLimitError("slow", response=response(429, "7"), **where),
            fake_rate_limit(retry_after=7),
        ),
        "500": (exceptions.InternalServerError("down", response=response(500), **where), fake_server_error(500)),
        "502": (exceptions.BadGatewayError("down", response=response(502), **where), fake_server_error(502)),
        "503": (
            exceptions.ServiceUnavailableError("down", response=response(503, "12"), **where),
            fake_server_error(503, retry_after=12),
        ),
        "timeout": (exceptions.Timeout("slow", **where), fake_timeout()),
        "connection": (exceptions.APIConnectionError("refused", **where), fake_connection_error()),
        "auth": (exceptions.AuthenticationError("bad key", **where), fake_auth_error()),
        "not-found": (exceptions.NotFoundError("no such model", **where), fake_not_found()),
        "bad-request": (exceptions.BadRequestError("no", **where), fake_bad_request()),
    }


KINDS = ["429", "500", "502", "503", "timeout", "connection", "auth", "not-found", "bad-request"]


def outcome(client: LLMClient, error: Exception, **overrides: Any) -> tuple[str, list[float]]:
    """The message a call failing with ``error`` ends with (model and provider's words cut out), and the waits."""
    sleeps = Sleeps()
    client.retry_policy = RetryPolicy(jitter=no_jitter, sleep=sleeps)
    with pytest.raises(ModelError) as caught:
        run(client.complete("judge", HELLO, **overrides))
    message = str(caught.value).replace(str(error).strip(), "DETAIL")
    return message.replace(f"model {client.settings('judge').model!r}", "model MODEL"), sleeps.delays


@pytest.mark.parametrize("kind", KINDS)
def test_both_backends_fail_alike(kind: str) -> None:
    litellm_error, fake_error = litellm_errors()[kind]

    real = make_client(FakeScript(), judge=ModelSettings(model="openai/gpt-4o-mini", max_retries=2, backend="litellm"))
    # litellm's mock raises the same exception on every attempt.
    real_message, real_waits = outcome(real, litellm_error, mock_response=litellm_error)

    script = FakeScript().enqueue("*", fake_error, times=3)
    fake = make_client(script, judge=ModelSettings(model="fake/judge", max_retries=2))
    fake_message, fake_waits = outcome(fake, fake_error)

    assert "DETAIL" in real_message
    # The one intended difference: a real provider's key hint names its own variable, the fake has none.
    real_message = real_message.replace("OPENAI_API_KEY", "the provider's key variable")
    assert real_message == fake_message
    assert real_waits == fake_waits


# openai/... models go through the openai backend by default; these tests are about litellm (and use its mock).
LITELLM_MINI = ModelSettings(model="openai/gpt-4o-mini", backend="litellm")


def test_the_litellm_backend_answers_with_usage_and_cost() -> None:
    client = make_client(FakeScript(), judge=LITELLM_MINI)
    with metering() as meter:
        completion = run(client.complete("judge", HELLO, mock_response="hi there"))
    assert completion.content == "hi there"
    assert completion.finish_reason == "stop"
    assert completion.model == "openai/gpt-4o-mini"
    # litellm's mock reports placeholder usage; the model's price is in litellm's bundled list.
    assert completion.usage.calls == 1
    assert completion.usage.total_tokens > 0
    assert completion.cost is not None
    assert completion.cost > 0
    assert meter.by_role[Role.JUDGE] == completion.usage


def test_structured_output_through_the_litellm_backend() -> None:
    client = make_client(FakeScript(), judge=LITELLM_MINI)
    verdict = run(client.structured("judge", HELLO, Verdict, mock_response='{"score": 5, "reason": "good"}'))
    assert verdict == Verdict(score=5, reason="good")
