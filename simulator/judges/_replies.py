"""What the judge model answers: one small JSON object per question, validated by these models."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

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


# The conversation review's reply, as sent since its request went on a diet. Its JSON schema travels with every
# request, so it carries no titles, descriptions or defaults (the prompt says what each field is); a passing
# turn is one verdict, and only an unsupported turn (a claim) or an invented user fact carries words and a
# reason. The older shapes above stay as they are: a replay of a recording finds its request by the schema too.


def bare_schema(schema: dict[str, Any]) -> None:
    """Drop what the prompt already says from a reply's JSON schema: titles, descriptions, defaults."""
    for key in ("title", "description", "default"):
        schema.pop(key, None)
    for field in schema.get("properties", {}).values():
        for key in ("title", "description", "default"):
            field.pop(key, None)


def inlined(schema: dict[str, Any]) -> dict[str, Any]:
    """``schema`` with every ``$ref`` to its ``$defs`` replaced by the definition (the reply's objects are small
    and used once each: written in place they cost fewer tokens than named and referred to)."""
    definitions = schema.pop("$defs", {})

    def resolve(node: Any) -> Any:
        if isinstance(node, dict):
            if "$ref" in node:
                return resolve(definitions[str(node["$ref"]).rsplit("/", 1)[-1]])
            return {key: resolve(value) for key, value in node.items()}
        if isinstance(node, list):
            return [resolve(item) for item in node]
        return node

    return resolve(schema)  # type: ignore[no-any-return]


class ReviewGoal(GoalSatisfactionReply):
    """The goal's verdict in a :class:`ReviewReply`: the fields of :class:`GoalSatisfactionReply`."""

    model_config = ConfigDict(json_schema_extra=bare_schema)


class TurnVerdict(BaseModel):
    """One agent turn's hallucination verdict; an unsupported one's words are in :attr:`ReviewReply.claims`."""

    model_config = ConfigDict(json_schema_extra=bare_schema)

    turn: int
    verdict: Literal["unsupported", "supported", "no_claim"]


class UnsupportedClaim(BaseModel):
    """The first unsupported claim of a turn judged ``unsupported``, quoted from that turn, and why."""

    model_config = ConfigDict(json_schema_extra=bare_schema)

    turn: int
    claim: str = Field(min_length=1)
    reason: str = Field(min_length=1)


class InventedFact(BaseModel):
    """A user turn's words that state a fact the simulated user was never given, and why."""

    model_config = ConfigDict(json_schema_extra=bare_schema)

    turn: int
    fact: str
    reason: str = Field(min_length=1)


#: The reason a passing turn's score gives: the reply names a reason only for an unsupported claim.
NO_UNSUPPORTED = {
    "supported": "the judge found every factual claim of this turn supported",
    "no_claim": "the judge found no factual claim in this turn",
}


class ReviewReply(BaseModel):
    """The questions about one finished conversation in one reply (prompt ``conversation_review``): the goal's
    verdict, one hallucination verdict per judged agent turn, and the claim and reason of each unsupported one.
    :meth:`turn_replies` reads them as :class:`HallucinationBatchReply` ``turns``."""

    model_config = ConfigDict(json_schema_extra=bare_schema)

    goal: ReviewGoal
    turns: list[TurnVerdict]
    claims: list[UnsupportedClaim]

    @classmethod
    def model_json_schema(cls, *args: Any, **kwargs: Any) -> dict[str, Any]:
        """The reply's JSON schema with its objects written in place (:func:`inlined`): what every request sends."""
        return inlined(super().model_json_schema(*args, **kwargs))

    @model_validator(mode="after")
    def _claim_when_unsupported(self) -> ReviewReply:
        quoted = {claim.turn for claim in self.claims}
        missing = [v.turn for v in self.turns if v.verdict == "unsupported" and v.turn not in quoted]
        if missing:
            listed = ", ".join(map(str, missing))
            raise ValueError(f'turn {listed}: "claims" must quote the unsupported claim of a turn judged "unsupported"')
        return self

    def turn_replies(self) -> list[HallucinationTurnReply]:
        """Every verdict as a :class:`HallucinationTurnReply`: an unsupported one with its turn's first claim, a
        passing one with :data:`NO_UNSUPPORTED`'s reason. A claim for a turn the reply calls supported or
        no_claim stands beside that verdict, so the turn has contradicting verdicts (not judged)."""
        first: dict[int, UnsupportedClaim] = {}
        for given in self.claims:
            first.setdefault(given.turn, given)
        replies: list[HallucinationTurnReply] = []
        for verdict in self.turns:
            claim = first.get(verdict.turn)
            if verdict.verdict != "unsupported":
                replies.append(
                    HallucinationTurnReply(
                        turn=verdict.turn, verdict=verdict.verdict, claim="", reason=NO_UNSUPPORTED[verdict.verdict]
                    )
                )
            if claim is not None:
                said = {"claim": claim.claim, "reason": claim.reason}
                replies.append(HallucinationTurnReply(turn=verdict.turn, verdict="unsupported", **said))
        return replies


class ReviewFidelityReply(ReviewReply):
    """:class:`ReviewReply` with the facts the simulated user invented (prompt ``conversation_review_fidelity``):
    only the user turns that state one. :meth:`user_replies` reads them as :class:`UserFidelityReply` ``turns``."""

    invented: list[InventedFact]

    def user_replies(self) -> list[UserFidelityTurnReply]:
        """Every invented fact as a :class:`UserFidelityTurnReply` that says invented."""
        return [
            UserFidelityTurnReply(turn=fact.turn, invented=True, fact=fact.fact, reason=fact.reason)
            for fact in self.invented
        ]
