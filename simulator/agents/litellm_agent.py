"""The ``litellm`` adapter: an agent defined by instructions, a model and tools, run by Simulator itself.

This is how hosted agent builders define agents: a system prompt, a model, function tools. The model is called
through the :class:`~simulator.llm.LLMClient` in the agent role, so it gets that role's retries, concurrency
limit, token account and offline fakes. ``complete()`` takes no model override (the role's settings decide),
so the CLI/runner sets ``models.agent.model`` from the agent config's ``model``; this adapter only checks that
the two agree, and refuses to run a different model than the config names.

Each model call may take the agent's ``timeout`` (or ``models.agent.timeout``, if that is shorter) and is retried
on rate limits, server errors, timeouts and connection errors up to the agent's ``retries`` times (unset:
``models.agent.max_retries``), by the client's :class:`~simulator.llm.RetryPolicy`, honouring ``Retry-After``.
A reply that arrived is never asked for again.

Tool calls are answered by the tool router (faked and recorded in test mode), the results go back as ``tool``
messages and the model is asked again, at most :data:`~simulator.agents.http_agent.MAX_TOOL_ROUNDS` times per turn.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from simulator.agents import agent_type
from simulator.agents._base import AgentInput, AgentReply, Message, wire_messages
from simulator.agents._chat import MAX_TOOL_ROUNDS, answer_tool_call, function_tools, session_text, tool_round
from simulator.errors import AgentError, ModelError
from simulator.llm import Role
from simulator.models import LitellmAgent
from simulator.models.transcript import ToolRound

if TYPE_CHECKING:
    from simulator.llm import LLMClient


@agent_type("litellm")
def _litellm(
    config: LitellmAgent, *, llm: LLMClient | None = None, code_folders: Sequence[Path] = ()
) -> LitellmAdapter:
    if llm is None:
        raise AgentError("a litellm agent needs the model client: pass llm= to build_agent")
    return LitellmAdapter(config, llm)


class LitellmAdapter:
    """Runs the configured agent for one conversation."""

    def __init__(self, config: LitellmAgent, llm: LLMClient) -> None:
        configured = llm.settings(Role.AGENT).model
        if configured != config.model:
            raise AgentError(
                f"the litellm agent {config.name!r} is defined with model {config.model!r}, but the agent model "
                f"role is set to {configured!r}. The runner sets models.agent.model from the agent's `model`; "
                "if you set models.agent yourself, give it the same model (or leave its model out)"
            )
        self.config = config
        self._llm = llm
        self._tools = function_tools(config.tools)
        # The agent's own sampling settings win over the role's defaults.
        self._overrides: dict[str, Any] = {}
        if config.temperature is not None:
            self._overrides["temperature"] = config.temperature
        if config.max_tokens is not None:
            self._overrides["max_tokens"] = config.max_tokens
        role = llm.settings(Role.AGENT)
        # Both are limits on one call: the agent's (which bounded its whole reply before calls were retried on
        # their own) and the role's.
        self._timeout = min(config.timeout, role.timeout)
        self._retries = role.max_retries if config.retries is None else config.retries
        self._overrides["timeout"] = self._timeout

    @property
    def turn_timeout(self) -> float:
        """The longest one turn can take: every model call of every tool round with all its attempts and waits.

        Each call is bounded and retried by the model client, so the engine's own bound on a turn is only a
        safety net, and must not cut the retries short.
        """
        call = (self._retries + 1) * self._timeout + self._retries * self._llm.retry_policy.longest_wait()
        return (MAX_TOOL_ROUNDS + 1) * call

    async def respond(self, request: AgentInput) -> AgentReply:
        """Ask the model; answer its tool calls until it replies with text (or stops)."""
        system = self.config.instructions
        if request.session:
            system = f"{system}\n\n{session_text(request.session)}"
        messages: list[Message] = [{"role": "system", "content": system}, *wire_messages(request.messages)]
        texts: list[str] = []
        rounds: list[ToolRound] = []
        for round_ in range(MAX_TOOL_ROUNDS + 1):
            try:
                completion = await self._llm.complete(
                    Role.AGENT, messages, tools=self._tools or None, retries=self._retries, **self._overrides
                )
            except ModelError as exc:
                raise AgentError(f"the litellm agent {self.config.name!r} could not answer: {exc}") from exc
            if completion.content:
                texts.append(completion.content)
            if not completion.tool_calls:
                return AgentReply(messages=texts, tool_rounds=rounds or None)
            if round_ == MAX_TOOL_ROUNDS:
                break
            # Ids are made up only if the provider sent none: the tool messages must point at their call, and the
            # history of later turns holds this turn's calls too.
            made_up = f"call_{request.turn}_{round_}_"
            ids = [call.id or f"{made_up}{index}" for index, call in enumerate(completion.tool_calls)]
            wire_calls = [
                {"id": id_, "type": "function", "function": {"name": call.name, "arguments": call.raw_arguments}}
                for id_, call in zip(ids, completion.tool_calls, strict=True)
            ]
            messages.append({"role": "assistant", "content": completion.content, "tool_calls": wire_calls})
            rounds.append(tool_round(ids, completion.content))
            for id_, call in zip(ids, completion.tool_calls, strict=True):
                # Malformed arguments go to the router raw, so the record says what was wrong with them.
                arguments = call.raw_arguments if call.malformed else call.arguments
                messages.append(
                    await answer_tool_call(
                        request.tools, id_, call.name, arguments, sent=call.raw_arguments, timeout=self.config.timeout
                    )
                )
        raise AgentError(
            f"agent kept calling tools: the litellm agent {self.config.name!r} still asked for tools after "
            f"{MAX_TOOL_ROUNDS} rounds of tool results in one turn"
        )

    async def aclose(self) -> None:
        """Nothing to release: the model client is shared and closed by its owner."""
