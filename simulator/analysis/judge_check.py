"""How far the judge model agrees with a person: labelled transcripts scored by the configured judge.

A label file (YAML) lists transcripts with what a person decided about them::

    suite: ../suites/demo/scenarios.yaml      # default suite of the items (relative to this file)
    items:
      - transcript: demo/express.json          # a Transcript, or a scored case from `simulate --json`
        suite: ../suites/demo/scenarios.yaml   # optional, per item; case: NAME defaults to the transcript's
        labels:
          hallucination: {1: 1, 2: n/a}        # per agent turn: 1, 0 or n/a
          goal_satisfaction: 0                 # 1 or 0
          expectations: {The agent stays polite.: met}   # plain-text expectations of the case: met / not_met

Each label becomes the same question the scorer asks the judge (same prompts, same context), and the judge's
answer is compared with the person's: accuracy and Cohen's kappa per question and overall, and every
disagreement with the judge's reason, so a prompt can be fixed where it goes wrong.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from pydantic import Field, ValidationError, field_validator

from simulator.errors import ConfigErrors, JudgeError
from simulator.judges.llm_judges import LLMJudge
from simulator.judges.scoring import goal_description, hallucination_context
from simulator.llm import LLMClient
from simulator.loading import (
    LoadedSuite,
    ReadProblem,
    config_error_at,
    load_model_file,
    load_suite,
    parse_json,
    read_bounded_text,
)
from simulator.metrics import Agreement, agreement
from simulator.models import Case, ModelRoles, StrictModel, Text, normalize_reference
from simulator.models.run import ModelOptions, ModelRole, resolved_models
from simulator.models.scores import CaseResult, Score
from simulator.models.transcript import Transcript
from simulator.runner import load_prompt_overrides


class ItemLabels(StrictModel):
    """What a person decided about one transcript."""

    hallucination: dict[str, Literal[0, 1, "n/a"]] = Field(
        default_factory=dict, description="Agent turn number -> 1 (unsupported claim), 0, or n/a (no claim)."
    )
    goal_satisfaction: Literal[0, 1] | None = None
    expectations: dict[str, Literal["met", "not_met"]] = Field(
        default_factory=dict, description="Text of a plain-text expectation of the case -> met or not_met."
    )

    @field_validator("hallucination")
    @classmethod
    def _turn_numbers(cls, value: dict[str, object]) -> dict[str, object]:
        for key in value:
            if not key.isdigit() or int(key) < 0:
                raise ValueError(f"hallucination labels are keyed by agent turn number, got {key!r}")
        return value


class LabelledItem(StrictModel):
    """One labelled transcript."""

    transcript: Text = Field(description="Path of the transcript JSON, relative to the label file.")
    suite: Text | None = Field(default=None, description="The suite the case comes from, relative to this file.")
    case: Text | None = Field(default=None, description="The case's name (default: the transcript's).")
    labels: ItemLabels


class LabelFile(StrictModel):
    """A file of labelled transcripts for ``simulator judge-check``."""

    suite: Text | None = None
    items: list[LabelledItem] = Field(min_length=1)


@dataclass
class Judgement:
    """One labelled question: the person's answer beside the judge's, with the judge's reason."""

    item: int
    transcript: str
    question: str
    human: str
    judge: str
    reason: str

    @property
    def agrees(self) -> bool:
        """Whether the judge gave the person's answer."""
        return self.human == self.judge


@dataclass
class JudgeCheckReport:
    """Agreement per kind of question and overall, and every judgement."""

    judgements: list[Judgement] = field(default_factory=list)
    by_question: dict[str, Agreement] = field(default_factory=dict)
    overall: Agreement | None = None

    @property
    def disagreements(self) -> list[Judgement]:
        """The judgements where the judge differs from the person."""
        return [j for j in self.judgements if not j.agrees]


def _hallucination_answer(score: Score) -> str:
    if score.verdict in ("unsure", "error"):
        return score.verdict
    if score.verdict == "n/a":
        return "n/a"
    return "1" if score.value == 1 else "0"


async def judge_check(
    path: str | Path,
    *,
    judge_model: str | None = None,
    models: Mapping[ModelRole, Mapping[str, Any]] | None = None,
    llm: LLMClient | None = None,
) -> JudgeCheckReport:
    """Ask the judge every labelled question in the file at ``path`` and compare with the labels.

    The judge is the first item's suite's (its ``models.judge``) with the judge settings of ``models`` (per-role
    settings as ``run`` takes them: ``api_base``, ``backend``, ...) laid over it, and ``judge_model`` over both;
    ``llm`` replaces the client altogether (tests pass one with the offline fake provider).
    """
    given = ModelOptions(
        judge_model=judge_model, models={role: dict(values) for role, values in (models or {}).items()}
    )
    path = Path(path)
    labels: LabelFile = load_model_file(path, LabelFile)
    suites: dict[Path, LoadedSuite] = {}
    report = JudgeCheckReport()
    for index, item in enumerate(labels.items):
        transcript = _read_transcript(path, index, item)
        loaded = _suite_for(path, index, item, labels.suite, suites)
        case = _case_for(path, index, item, loaded, transcript)
        if llm is None:
            settings = resolved_models(loaded.suite, given).judge
            if settings.model is None:
                raise JudgeError(
                    "judge-check needs a judge model: pass --judge-model MODEL (any litellm model), "
                    "or set models.judge in the suite"
                )
            llm = LLMClient(ModelRoles(judge=settings))
        judge = LLMJudge(llm, prompts=load_prompt_overrides(loaded))
        if not judge.has_model:
            raise JudgeError("judge-check needs a judge model: pass --judge-model MODEL (any litellm model)")
        agent = loaded.agent
        instructions = agent.judge_instructions if agent is not None else None
        declared = agent.tools if agent is not None else []
        name = item.transcript
        replies = {reply.turn: reply for reply in transcript.agent_events()}
        for turn_key, label in sorted(item.labels.hallucination.items(), key=lambda kv: int(kv[0])):
            reply = replies.get(int(turn_key))
            if reply is None:
                raise _label_error(
                    path,
                    index,
                    ("labels", "hallucination", turn_key),
                    f"the transcript has no agent turn {turn_key}; its agent turns: {sorted(replies)}",
                )
            score = await judge.hallucination(
                turn=reply, context=hallucination_context(transcript, reply, instructions)
            )
            report.judgements.append(
                Judgement(
                    index,
                    name,
                    f"hallucination turn {turn_key}",
                    str(label),
                    _hallucination_answer(score),
                    score.reason,
                )
            )
        if item.labels.goal_satisfaction is not None:
            score = await judge.goal_satisfaction(
                goal=goal_description(case), conversation=transcript.events, declared_tools=declared
            )
            answer = score.verdict if score.verdict in ("unsure", "error") else str(int(score.value or 0))
            report.judgements.append(
                Judgement(index, name, "goal_satisfaction", str(item.labels.goal_satisfaction), answer, score.reason)
            )
        texts = {normalize_reference(e.text): e.text for e in case.expectations if e.text}
        for text, verdict in item.labels.expectations.items():
            if normalize_reference(text) not in texts:
                raise _label_error(
                    path,
                    index,
                    ("labels", "expectations", text),
                    f"case {case.name!r} has no expectation with this text",
                )
            score = await judge.expectation(
                text=texts[normalize_reference(text)], conversation=transcript.events, declared_tools=declared
            )
            judgement = Judgement(index, name, f"expectation: {text}", verdict, score.verdict, score.reason)
            report.judgements.append(judgement)
    kinds: dict[str, list[tuple[str, str]]] = {}
    for judgement in report.judgements:
        kind = judgement.question.split(" ")[0].rstrip(":")
        kinds.setdefault(kind, []).append((judgement.human, judgement.judge))
    report.by_question = {kind: agreement(pairs) for kind, pairs in kinds.items()}
    report.overall = agreement([(j.human, j.judge) for j in report.judgements])
    return report


def _label_error(path: Path, index: int, where: tuple[str, ...], message: str) -> ConfigErrors:
    return ConfigErrors([config_error_at(path, ("items", index, *where), message)])


def _read_transcript(path: Path, index: int, item: LabelledItem) -> Transcript:
    file = (path.parent / item.transcript).resolve()
    try:
        # Within the limits every reader keeps (size, nesting, numbers; named pipes and devices refused).
        data = parse_json(read_bounded_text(file, "label a shorter conversation", "JSON text"))
    except ReadProblem as problem:
        if problem.message.startswith("cannot read the file: "):
            message = f"cannot read {item.transcript!r}: {problem.message.removeprefix('cannot read the file: ')}"
        else:
            message = f"{item.transcript!r}, line {problem.line}, column {problem.column}: {problem.message}"
        raise _label_error(path, index, ("transcript",), message) from None
    try:
        if isinstance(data, dict) and "transcript" in data and "outcome" in data:
            return CaseResult.model_validate(data).transcript
        return Transcript.model_validate(data)
    except ValidationError as exc:
        first = exc.errors()[0]
        raise _label_error(
            path,
            index,
            ("transcript",),
            f"{item.transcript!r} is not a transcript written by `simulator simulate --json` "
            f"({'.'.join(map(str, first['loc']))}: {first['msg']})",
        ) from None


def _suite_for(
    path: Path, index: int, item: LabelledItem, default: str | None, cache: dict[Path, LoadedSuite]
) -> LoadedSuite:
    relative = item.suite or default
    if relative is None:
        raise _label_error(path, index, (), "name the suite the case comes from: `suite:` on the item or the file")
    file = (path.parent / relative).resolve()
    if file not in cache:
        if not file.is_file():
            raise _label_error(path, index, ("suite",) if item.suite else (), f"suite file {relative!r} not found")
        cache[file] = load_suite(file)
    return cache[file]


def _case_for(path: Path, index: int, item: LabelledItem, loaded: LoadedSuite, transcript: Transcript) -> Case:
    name = item.case or transcript.case
    for case in loaded.suite.cases:
        if case.name == name:
            return case
    raise _label_error(
        path, index, ("case",) if item.case else ("transcript",), f"suite {loaded.path.name} has no case {name!r}"
    )
