"""The agent under test, its variables and tools, and the fakes that answer its tool calls in test mode."""

from __future__ import annotations

from typing import Annotated, Any, ClassVar, Literal

from pydantic import AfterValidator, BeforeValidator, Discriminator, Field, JsonValue, Tag, model_validator

from simulator.models._base import Identifier, ImportRef, PositiveSeconds, Slug, StrictModel, Text, located_error
from simulator.models.env_refs import well_formed
from simulator.models.faults import Fault
from simulator.models.world import WorldOperation

VariableType = Literal["string", "number", "integer", "boolean", "object", "array"]


class VariableDeclaration(StrictModel):
    """A session variable the agent knows about; cases set them through ``session_parameters``."""

    type: VariableType = Field(default="string", description="JSON type of the value.")
    description: str = ""
    default: JsonValue = Field(default=None, description="Value used when a case does not set it.")

    @model_validator(mode="after")
    def _default_has_the_type(self) -> VariableDeclaration:
        if self.default is not None and not json_type_matches(self.default, self.type):
            raise located_error(f"default {self.default!r} is not of the declared type {self.type}", "default")
        return self


def json_type_matches(value: Any, expected: str) -> bool:
    """Whether a value read from YAML/JSON has the JSON type ``expected`` (booleans are not numbers)."""
    if expected == "string":
        return isinstance(value, str)
    if expected == "boolean":
        return isinstance(value, bool)
    if expected == "integer":
        return isinstance(value, int) and not isinstance(value, bool)
    if expected == "number":
        return isinstance(value, (int, float)) and not isinstance(value, bool)
    if expected == "object":
        return isinstance(value, dict)
    return isinstance(value, list)


def _empty_object_schema() -> dict[str, JsonValue]:
    return {"type": "object", "properties": {}}


class SimulatedTool(StrictModel):
    """How a model plays a tool in test mode: what the tool does and the state behind it."""

    behaviour: str = Field(
        default="",
        description="What the tool does and the state behind it (which records exist, their values, how it fails), "
        "e.g. 'Looks up an order by id; orders 1001-1003 exist, 1002 is shipped'. Unset: the tool's description.",
    )


def _simulate_shorthand(value: Any) -> Any:
    """``simulate: true`` (the tool's description says it all), ``simulate: "text"`` (the behaviour) or the mapping;
    ``false`` is the same as leaving it out."""
    if value is True:
        return {}
    if value is False:
        return None
    return {"behaviour": value} if isinstance(value, str) else value


#: ``simulate:`` as a person writes it: true, a behaviour in words, or ``{behaviour: ...}``.
SimulateSetting = Annotated[
    SimulatedTool | None,
    BeforeValidator(_simulate_shorthand, json_schema_input_type=bool | Text | SimulatedTool),
]


class ToolDeclaration(StrictModel):
    """A tool the agent may call, described the way function-calling APIs expect it."""

    name: Identifier
    description: str = ""
    # That it is a JSON Schema of an object is checked where files are read (simulator.loading owns jsonschema),
    # so the error is located in the file.
    parameters: dict[str, JsonValue] = Field(
        default_factory=_empty_object_schema,
        description="JSON Schema of the arguments (an object schema).",
    )
    requires_approval: bool = Field(
        default=False, description="In live mode, a call to this tool stops the case with status needs_approval."
    )
    function: ImportRef | None = Field(default=None, description="module:callable that runs the tool in live mode.")
    kind: Literal["action", "lookup"] | None = Field(
        default=None,
        description="For the offline claim check: action (a call changes something: block, cancel, send) or lookup "
        "(a call reads something: get, search, check). Unset: derived from the tool's name and description.",
    )
    backend: Slug | None = Field(
        default=None,
        description="Test mode only: a tool backend from an installed plugin (entry point simulator.tools) answers "
        "the calls that no tool fake answers, recorded as simulated by that plugin. Never used in live mode.",
        exclude_if=lambda name: name is None,  # left out of snapshots unused: an agent hashes as it did before
    )
    world: WorldOperation | None = Field(
        default=None,
        description="A world tool: answered from the conversation's own copy of the suite's world, in test and live "
        "mode alike (it touches nothing else), by one operation (find, get, update, insert, delete on a collection) "
        "or a Python function given the world. Recorded as executed (world) with what it read and changed.",
        exclude_if=lambda operation: operation is None,  # left out of snapshots unused: an agent hashes as before
    )
    faults: list[Fault] = Field(
        default_factory=list,
        description="Faults injected on purpose into this tool's calls: an error, a timeout or another result, at a "
        "seeded rate, on the Nth call or on every call. Test mode only (and world tools); never on a live tool.",
        exclude_if=lambda faults: not faults,  # left out of snapshots unused: an agent hashes as it did before
    )
    simulate: SimulateSetting = Field(
        default=None,
        description="Test mode only, opt-in: a call that no tool fake answers is answered by a model playing the "
        "tool (the user role's model), consistent with this tool's earlier calls in the conversation, and recorded "
        "as simulated. true (the description says what the tool does), the behaviour in words, or {behaviour: ...}. "
        "Never used for a tool that has a fake, nor in live mode.",
    )

    @model_validator(mode="after")
    def _one_player(self) -> ToolDeclaration:
        players = [key for key in ("world", "backend", "simulate") if getattr(self, key) is not None]
        if len(players) > 1 and "world" in players:
            raise located_error(
                f"a world tool is answered by the world; it cannot also have `{players[1]}`: remove one", players[1]
            )
        if self.backend is not None and self.simulate is not None:
            raise located_error(
                "a tool is answered in test mode either by a model (`simulate`) or by a plugin's backend "
                "(`backend`), not both: remove one",
                "backend",
            )
        return self

    @model_validator(mode="after")
    def _simulation_is_described(self) -> ToolDeclaration:
        if self.simulate is not None and not (self.simulate.behaviour.strip() or self.description.strip()):
            raise located_error(
                "a simulated tool needs its behaviour in words, or the model playing it has nothing to go on: "
                "write `simulate: {behaviour: ...}` (what the tool does and the state behind it) or give the tool "
                "a `description`",
                "simulate",
            )
        return self


class ToolFake(StrictModel):
    """A canned answer to a tool call in test mode, matched by tool name and arguments."""

    tool: Identifier = Field(description="Name of the tool this fake answers.")
    arguments: dict[str, JsonValue] | None = Field(
        default=None, description="Arguments to match; leave out to answer any call of the tool."
    )
    match: Literal["exact", "subset"] = Field(
        default="subset",
        description="subset: the listed arguments must be equal, others may be present; exact: all must be equal.",
    )
    result: JsonValue = Field(default=None, description="What the tool returns.")
    error: str | None = Field(default=None, description="Make the tool fail with this message instead.")

    @model_validator(mode="after")
    def _result_or_error(self) -> ToolFake:
        if self.error is not None and "result" in self.model_fields_set:
            raise located_error("a tool fake has either `result` or `error`, not both", "error")
        if self.error is None and "result" not in self.model_fields_set:
            raise ValueError("a tool fake needs `result` (what the tool returns) or `error`")
        return self


class AgentAudio(StrictModel):
    """How an OpenAI-compatible chat endpoint is asked to answer in audio (its request's ``audio`` setting)."""

    voice: Text = Field(default="alloy", description="The endpoint's voice name, sent as audio.voice.")
    format: Literal["wav", "pcm16"] = Field(
        default="wav",
        description="The reply's audio format, sent as audio.format: wav, or pcm16 (raw 16-bit samples at 24 kHz).",
    )


def _audio_shorthand(value: Any) -> Any:
    """``audio: true`` (the defaults) or the mapping; ``false`` is the same as leaving it out."""
    if value is True:
        return {}
    if value is False:
        return None
    return value


#: ``audio:`` as a person writes it: true or ``{voice: ..., format: ...}``.
AudioSetting = Annotated[
    AgentAudio | None,
    BeforeValidator(_audio_shorthand, json_schema_input_type=bool | AgentAudio),
]


class AgentBase(StrictModel):
    """What every agent config has and answers, whatever its ``type:`` (callers ask these, never the type)."""

    #: Whether the type is an installed package's (entry point ``simulator.agents``) rather than built in.
    from_plugin: ClassVar[bool] = False

    name: str = Field(default="agent", description="Name shown in reports.")
    description: str = ""
    variables: dict[Identifier, VariableDeclaration] = Field(
        default_factory=dict, description="Session variables the agent accepts."
    )
    tools: list[ToolDeclaration] = Field(default_factory=list)
    timeout: PositiveSeconds = Field(
        default=60.0,
        description="Seconds one call to the agent may take: one reply of a python or langgraph agent; one "
        "request (each attempt) of an http agent; one model call of a litellm agent (the shorter of this and "
        "models.agent.timeout). A call that takes longer ends the case as error, or, for http and litellm "
        "agents, is retried (see retries).",
    )

    def code_refs(self) -> list[tuple[tuple[str | int, ...], str, str]]:
        """Every piece of code the config names: (key path inside the agent, ``module:attribute``, what it is)."""
        refs: list[tuple[tuple[str | int, ...], str, str]] = [
            (("tools", index, "function"), tool.function, "tool function")
            for index, tool in enumerate(self.tools)
            if tool.function is not None
        ]
        refs += [
            (("tools", index, "world", "function"), tool.world.function, "world function")
            for index, tool in enumerate(self.tools)
            if tool.world is not None and tool.world.function is not None
        ]
        return refs

    def reaches(self) -> tuple[str, str]:
        """What running a conversation with this agent executes or contacts: the agent, and what happens to it."""
        raise NotImplementedError  # pragma: no cover - every agent type says it

    def environment(self) -> list[tuple[str, str, str]]:
        """The environment variables the agent needs: (its key in the config, the variable, what it is for)."""
        return []

    def urls(self) -> list[tuple[tuple[str | int, ...], str]]:
        """The URLs the config writes, which may hold ``${VAR}`` references: (key path inside the agent, the text)."""
        return []

    @property
    def judge_instructions(self) -> str | None:
        """The agent's own instructions, when Simulator holds them (the judge may check replies against them)."""
        return None

    @property
    def own_model(self) -> str | None:
        """The model the agent runs on, when Simulator itself calls it (the agent role's default model)."""
        return None

    @property
    def speaks_audio(self) -> bool:
        """Whether the agent takes the user's audio and answers in audio itself (a voice run then talks to it
        in audio rather than in text)."""
        return False

    @property
    def speaks_text(self) -> bool:
        """Whether the agent can be talked to in text (a chat run)."""
        return True

    @model_validator(mode="after")
    def _unique_tools(self) -> AgentBase:
        seen: set[str] = set()
        for index, tool in enumerate(self.tools):
            if tool.name in seen:
                raise located_error(f"tool {tool.name!r} is declared twice", "tools", index, "name")
            seen.add(tool.name)
        return self


class PythonAgent(AgentBase):
    """An agent written in Python: ``module:callable``, sync or async."""

    type: Literal["python"]
    callable: ImportRef = Field(description="module:callable of the agent function or class.")
    options: dict[str, JsonValue] = Field(default_factory=dict, description="Passed to the agent as keyword options.")
    audio: bool = Field(
        default=False,
        description="Voice cases: the function hears the user's audio (WAV bytes) and answers with audio; false: "
        "a text agent, given what a recogniser heard and spoken by the synthesizer.",
        exclude_if=lambda audio: not audio,  # left out of snapshots unused: an agent hashes as it did before
    )

    def code_refs(self) -> list[tuple[tuple[str | int, ...], str, str]]:
        """The agent's callable, then its tools' functions."""
        return [(("callable",), self.callable, "agent"), *super().code_refs()]

    def reaches(self) -> tuple[str, str]:
        """Its module is imported and called."""
        return f"python agent {self.callable}", "its module is imported and called"

    @property
    def speaks_audio(self) -> bool:
        """``audio: true``: the callable is given the user's audio and answers in audio."""
        return self.audio


class HttpAgent(AgentBase):
    """An OpenAI-compatible chat-completions endpoint."""

    type: Literal["http"]
    # ${VAR} / ${VAR:-default} are filled in when the agent is called (see simulator.models.env_refs).
    base_url: Annotated[str, Field(pattern=r"^(https?://|\$\{)\S+$"), AfterValidator(well_formed)] = Field(
        description="Base URL, e.g. http://localhost:8000/v1"
    )
    model: str = Field(default="", description="Model name sent in the request.")
    api_key_env: str | None = Field(
        default=None, description="Name of the environment variable that holds the API key (never the key itself)."
    )
    headers_from_env: dict[str, str] = Field(
        default_factory=dict, description="Header name -> environment variable holding its value."
    )
    retries: int = Field(
        default=3,
        ge=0,
        le=20,
        description="How many times a request that got no reply is sent again, with jittered exponential "
        "backoff (and at least the server's Retry-After): connection errors, timeouts, 429, 408 and 5xx. A reply "
        "that arrived (a 2xx, even a malformed one) is never sent again, nor is a 4xx.",
    )
    audio: AudioSetting = Field(
        default=None,
        description="The endpoint also speaks: in a voice run each user turn is sent as input_audio and the reply "
        "asked for in audio (modalities text and audio). true for the defaults, or {voice, format}. A chat run "
        "ignores it.",
        exclude_if=lambda audio: audio is None,  # left out of snapshots unused: an agent hashes as it did before
    )

    @property
    def speaks_audio(self) -> bool:
        """When ``audio`` is set."""
        return self.audio is not None

    def environment(self) -> list[tuple[str, str, str]]:
        """Its API key's variable and each header's."""
        needed = [("api_key_env", self.api_key_env, "the HTTP agent's api_key_env")] if self.api_key_env else []
        return needed + [
            (f"headers_from_env.{header}", variable, f"the HTTP agent's header {header}")
            for header, variable in self.headers_from_env.items()
        ]

    def urls(self) -> list[tuple[tuple[str | int, ...], str]]:
        """Its base URL."""
        return [(("base_url",), self.base_url)]

    def reaches(self) -> tuple[str, str]:
        """Every conversation is sent to its URL."""
        return f"http agent at {self.base_url}", "every conversation is sent there"


class RealtimeAgent(AgentBase):
    """An OpenAI-Realtime-compatible WebSocket agent: audio streamed both ways, one connection per conversation.
    It speaks audio only: it runs in voice mode."""

    type: Literal["realtime"]
    # ${VAR} / ${VAR:-default} are filled in when the agent is called (see simulator.models.env_refs).
    url: Annotated[str, Field(pattern=r"^(wss?://|\$\{)\S+$"), AfterValidator(well_formed)] = Field(
        description="WebSocket URL, e.g. wss://api.openai.com/v1/realtime or ws://localhost:8080/realtime"
    )
    model: str = Field(
        default="", description="Model name, added to the URL as ?model=... (unless the URL names one already)."
    )
    voice: str | None = Field(default=None, description="The agent's voice, sent in session.update; unset: its own.")
    api_key_env: str | None = Field(
        default=None,
        description="Name of the environment variable that holds the API key, sent as a bearer token (never the "
        "key itself).",
    )
    headers: dict[str, str] = Field(
        default_factory=dict,
        description="Headers sent as written, e.g. OpenAI-Beta: realtime=v1. Never a secret: those go in "
        "headers_from_env.",
    )
    headers_from_env: dict[str, str] = Field(
        default_factory=dict, description="Header name -> environment variable holding its value."
    )

    @property
    def speaks_audio(self) -> bool:
        """Always: it is a voice agent."""
        return True

    @property
    def speaks_text(self) -> bool:
        """Never: it takes audio only."""
        return False

    def environment(self) -> list[tuple[str, str, str]]:
        """Its API key's variable and each header's."""
        needed = [("api_key_env", self.api_key_env, "the realtime agent's api_key_env")] if self.api_key_env else []
        return needed + [
            (f"headers_from_env.{header}", variable, f"the realtime agent's header {header}")
            for header, variable in self.headers_from_env.items()
        ]

    def urls(self) -> list[tuple[tuple[str | int, ...], str]]:
        """Its URL."""
        return [(("url",), self.url)]

    def reaches(self) -> tuple[str, str]:
        """Every conversation is streamed there."""
        return f"realtime agent at {self.url}", "every conversation is streamed there in audio"


class LitellmAgent(AgentBase):
    """An agent defined by instructions, a model and tools, run by Simulator itself."""

    type: Literal["litellm"]
    model: Text = Field(description="litellm model string, e.g. openai/gpt-4o-mini.")
    instructions: Text = Field(description="The system prompt of the agent.")
    temperature: float | None = Field(default=None, ge=0, le=2)
    max_tokens: int | None = Field(default=None, ge=1)
    retries: int | None = Field(
        default=None,
        ge=0,
        le=20,
        description="How many times a model call that failed on a rate limit, server error, timeout or connection "
        "error is made again, with jittered exponential backoff (and at least the provider's Retry-After). "
        "Unset: models.agent.max_retries (default 3).",
    )

    def reaches(self) -> tuple[str, str]:
        """Conversations are sent to its model."""
        return f"litellm agent on model {self.model}", "conversations are sent to that model"

    @property
    def judge_instructions(self) -> str | None:
        """Its instructions: Simulator holds them."""
        return self.instructions

    @property
    def own_model(self) -> str | None:
        """Its model: Simulator calls it."""
        return self.model


class LanggraphAgent(AgentBase):
    """A compiled LangGraph graph with a messages state."""

    type: Literal["langgraph"]
    graph: ImportRef = Field(description="module:attribute of the compiled graph.")
    messages_key: str = Field(default="messages", description="State key that holds the messages.")

    def code_refs(self) -> list[tuple[tuple[str | int, ...], str, str]]:
        """The graph, then its tools' functions."""
        return [(("graph",), self.graph, "graph"), *super().code_refs()]

    def reaches(self) -> tuple[str, str]:
        """Its module is imported and the graph run."""
        return f"langgraph graph {self.graph}", "its module is imported and the graph run"


#: The agent types Simulator ships; any other ``type:`` names an agent plugin (an installed package's entry point).
BUILTIN_AGENT_TYPES = ("python", "http", "litellm", "langgraph", "realtime")


class PluginAgent(AgentBase):
    """An agent type added by an installed package (entry point ``simulator.agents``); its ``options`` are its own."""

    from_plugin = True

    type: Annotated[
        str,
        Field(
            pattern=r"^[a-z][a-z0-9_.-]*$",
            json_schema_extra={"not": {"enum": list(BUILTIN_AGENT_TYPES)}},
            description="The name the plugin is installed under (simulator plugins lists them).",
        ),
    ]
    options: dict[str, JsonValue] = Field(default_factory=dict, description="Passed to the plugin's factory as is.")

    def reaches(self) -> tuple[str, str]:
        """The plugin's code is imported and called."""
        return f"agent plugin {self.type}", "the installed package's code is imported and called"


def _agent_tag(value: Any) -> str | None:
    kind = value.get("type") if isinstance(value, dict) else getattr(value, "type", None)
    if not isinstance(kind, str):
        return None
    return kind if kind in BUILTIN_AGENT_TYPES else "plugin"


AgentConfig = Annotated[
    Annotated[PythonAgent, Tag("python")]
    | Annotated[HttpAgent, Tag("http")]
    | Annotated[LitellmAgent, Tag("litellm")]
    | Annotated[LanggraphAgent, Tag("langgraph")]
    | Annotated[RealtimeAgent, Tag("realtime")]
    | Annotated[PluginAgent, Tag("plugin")],
    Discriminator(_agent_tag),
]
