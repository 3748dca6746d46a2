"""Personas: who the simulated user is. They live as YAML files in ``personas/``."""

from __future__ import annotations

from typing import Literal

from pydantic import Field, JsonValue

from simulator.models._base import Slug, StrictModel, Text
from simulator.models.voice import PersonaVoice


class PersonaBackground(StrictModel):
    """Facts about the person, shown to the simulated user so it can answer questions consistently."""

    age: int | None = Field(default=None, ge=1, le=130, description="Age in years.")
    location: str | None = Field(default=None, description="Where the person lives, e.g. 'Graz, Austria'.")
    occupation: str | None = Field(default=None, description="What the person does for a living.")
    reason_for_contacting: str | None = Field(
        default=None, description="Why the person contacts the agent, in their own terms."
    )
    tech_savviness: Literal["low", "medium", "high"] | None = Field(
        default=None, description="How comfortable the person is with technology."
    )
    facts: dict[str, JsonValue] = Field(
        default_factory=dict, description="Any further facts the person knows (account number, plan, ...)."
    )


class PersonaStyle(StrictModel):
    """How the person writes. The scripted (offline) user applies these as seeded perturbations."""

    verbosity: Literal["terse", "normal", "chatty"] = Field(
        default="normal", description="terse drops pleasantries; chatty adds small talk."
    )
    typo_rate: float = Field(default=0.0, ge=0.0, le=0.5, description="Share of words that get a typo (0 to 0.5).")
    lowercase: bool = Field(default=False, description="Writes everything in lower case.")
    filler_words: list[str] = Field(
        default_factory=list, description="Words sprinkled into messages, e.g. ['um', 'well']."
    )
    tone: str | None = Field(default=None, description="Free description of the tone, e.g. 'curt', 'warm'.")


class Misreport(StrictModel):
    """Something the person says that is not true, on purpose: to see whether the agent checks before it acts.

    The LLM user gets ``claim`` as an instruction; the scripted user says ``say`` (when the agent's latest message
    has one of the ``when_asked`` words, or with its first message when there are none). Either way it is recorded
    on the message as a misreport on purpose: never a fidelity slip of the simulated user.
    """

    claim: Text = Field(
        description="What the person claims although it is not true, as an instruction to the user model, e.g. "
        "'You say you already restarted the router, although you did not.'"
    )
    say: Text | None = Field(
        default=None,
        description="The scripted user's line for it, e.g. 'I already restarted the router.' Unset: only the user "
        "model misreports.",
    )
    when_asked: list[Text] = Field(
        default_factory=list,
        description="Scripted user: say the line when the agent's latest message has one of these words "
        "(case-insensitive, a word's start), e.g. [restart, reboot]. Empty: with the first message.",
    )


class Persona(StrictModel):
    """A simulated user's identity: personality, background facts, language and writing style."""

    name: Slug = Field(description="Unique name, used on the command line (--persona NAME).")
    description: str = Field(default="", description="One line for listings.")
    personality: Text = Field(description="How the person behaves in a conversation, in a few sentences.")
    language: str = Field(
        default="en",
        pattern=r"^[a-z]{2,3}(-[A-Za-z0-9]{2,8})*$",
        description="Language the person writes in, as a BCP 47 tag such as 'en', 'de', 'pt-BR'.",
    )
    background: PersonaBackground = Field(default_factory=PersonaBackground)
    style: PersonaStyle = Field(default_factory=PersonaStyle)
    misreports: list[Misreport] = Field(
        default_factory=list,
        description="What the person misreports on purpose (a claim that is not true), to test whether the agent "
        "checks before it acts; recorded on the message, never counted as a fidelity slip of the simulated user.",
        exclude_if=lambda misreports: not misreports,  # left out of snapshots unused: a persona hashes as before
    )
    voice: PersonaVoice | None = Field(
        default=None,
        description="How the persona sounds in voice cases (voice, rate, pitch, noise) and behaves on the line "
        "(barge_in_after, silence). Chat cases ignore it.",
        exclude_if=lambda voice: voice is None,  # left out of snapshots unused: a persona hashes as before
    )


class PersonaFile(StrictModel):
    """A file holding several personas under ``personas:``."""

    personas: list[Persona] = Field(min_length=1)
