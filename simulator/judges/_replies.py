"""What the judge model answers: one small JSON object per question, validated by these models."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, Field, model_validator

# Reply schemas: what the judge model answers, one small JSON object per question. Every field is required
# (providers with strict structured output demand it; the schema they get lists every field as required) but
# the ``quote`` of a pass: a reply without one is a pass without evidence, unsure rather than malformed. Extra
# keys are ignored rather than re-asked.


class ReferenceAnswerReply(BaseModel):
    """The core answer against the reference: a 0-100 score and a verdict that must agree with it."""

    score: int = Field(ge=0, le=100)
    verdict: Literal["pass", "fail", "unsure"]
    reason: str = Field(min_length=1)


class SideClaimReply(BaseModel):
    """Whether the answer states or implies one claim that must not be stated, with the words that do."""

    stated: Literal["yes", "no", "unsure"]
    quote: str
    reason: str = Field(min_length=1)

    @model_validator(mode="after")
    def _quote_when_stated(self) -> SideClaimReply:
        if self.stated == "yes" and not self.quote.strip():
            raise ValueError('quote must give the words of the answer that state the claim when stated is "yes"')
        return self


class SemanticMatchReply(BaseModel):
    """How far the actual message means the same as the expected one: 0 contradiction to 4 fully consistent."""

    score: int = Field(ge=0, le=4)
    reason: str = Field(min_length=1)


class HallucinationReply(BaseModel):
    """Whether a turn makes a claim its context does not support (1), makes only supported ones (0), or none."""

    verdict: Literal["unsupported", "supported", "no_claim"]
    claim: str
    reason: str = Field(min_length=1)

    @model_validator(mode="after")
    def _claim_when_unsupported(self) -> HallucinationReply:
        if self.verdict == "unsupported" and not self.claim.strip():
            raise ValueError('claim must quote the unsupported claim when verdict is "unsupported"')
        return self


class HallucinationTurnReply(BaseModel):
    """One turn's verdict in a batched hallucination reply: the turn's number, then what
    :class:`HallucinationReply` holds for one turn."""

    turn: int
    verdict: Literal["unsupported", "supported", "no_claim"]
    claim: str
    reason: str = Field(min_length=1)

    @model_validator(mode="after")
    def _claim_when_unsupported(self) -> HallucinationTurnReply:
        if self.verdict == "unsupported" and not self.claim.strip():
            raise ValueError(f'turn {self.turn}: claim must quote the unsupported claim when verdict is "unsupported"')
        return self


class HallucinationBatchReply(BaseModel):
    """A verdict per judged turn of one conversation (a turn left out is not judged: ``unsure``)."""

    turns: list[HallucinationTurnReply]


class GoalSatisfactionReply(BaseModel):
    """Whether the conversation satisfied the user's goal, and the agent's words that show it when it did."""

    satisfied: bool
    reason: str = Field(min_length=1)
    quote: str = ""


class ExpectationReply(BaseModel):
    """Whether the conversation meets one expectation written in words, and the agent's words that show it
    when it does."""

    verdict: Literal["met", "not_met", "unsure"]
    reason: str = Field(min_length=1)
    quote: str = ""


class UserFidelityTurnReply(BaseModel):
    """Whether one user turn states a fact the simulated user was never given, quoting it."""

    turn: int
    invented: bool
    fact: str
    reason: str = Field(min_length=1)


class UserFidelityReply(BaseModel):
    """A verdict per judged user turn (a turn left out has no finding)."""

    turns: list[UserFidelityTurnReply]


class HallucinationFidelityBatchReply(BaseModel):
    """Both questions about one conversation in one reply: a hallucination verdict per judged agent turn (as
    :class:`HallucinationBatchReply`) and an invented-fact verdict per judged user turn (as
    :class:`UserFidelityReply`)."""

    turns: list[HallucinationTurnReply]
    user_turns: list[UserFidelityTurnReply]


class ConversationReviewReply(BaseModel):
    """The questions about one finished conversation in one reply: whether it satisfied the user's goal (as
    :class:`GoalSatisfactionReply`) and a hallucination verdict per judged agent turn (as
    :class:`HallucinationBatchReply`)."""

    goal: GoalSatisfactionReply
    turns: list[HallucinationTurnReply]


class ConversationReviewFidelityReply(ConversationReviewReply):
    """:class:`ConversationReviewReply` with an invented-fact verdict per judged user turn (as
    :class:`UserFidelityReply`)."""

    user_turns: list[UserFidelityTurnReply]
