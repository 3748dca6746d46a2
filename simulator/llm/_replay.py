"""Recording and replaying model requests (``simulator run --record``, ``simulator replay``): a request as a
cassette keeps it, what makes two requests the same question, and the recorded answers a replayed conversation is
offered first."""

from __future__ import annotations

import contextvars
import hashlib
import json
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from typing import Any, Protocol

from pydantic import BaseModel

from simulator.llm._types import Completion, Role
from simulator.taps import active_tape

__all__ = ["RecordedAnswers", "recorded_answers", "replaying", "request_fingerprint", "request_record", "taped"]


def request_record(request: Mapping[str, Any]) -> dict[str, Any]:
    """A model request as a cassette keeps it: JSON data, a ``response_format`` class as its name and schema, and
    no API key (the key is never in a request handed here; this drops it anyway)."""
    record: dict[str, Any] = {}
    for key, value in request.items():
        if key == "api_key":
            continue
        if isinstance(value, type) and issubclass(value, BaseModel):
            record[key] = {"name": value.__name__, "schema": value.model_json_schema()}
        else:
            record[key] = value
    return json.loads(json.dumps(record, default=str))  # type: ignore[no-any-return]


def request_fingerprint(record: Mapping[str, Any]) -> str:
    """What makes two model requests the same question (:func:`request_record` form): the messages, the tools and
    the response format, not the model, its settings or the timeout. A replay answers a request from the
    cassette when its fingerprint is a recorded one."""
    same = {key: record.get(key) for key in ("messages", "tools", "response_format")}
    return hashlib.sha256(json.dumps(same, sort_keys=True, ensure_ascii=False).encode()).hexdigest()


class RecordedAnswers(Protocol):
    """Answers model requests from a recording (see :func:`replaying`)."""

    def answer(self, role: Role, record: dict[str, Any], fingerprint: str) -> Completion | None:
        """The recorded reply to this request; None to send it to the role's model; or raise
        :class:`~simulator.llm.UnrecordedRequest` when it must not be sent."""
        ...


_ANSWERS: contextvars.ContextVar[RecordedAnswers | None] = contextvars.ContextVar("simulator_answers", default=None)


@contextmanager
def replaying(answers: RecordedAnswers) -> Iterator[None]:
    """In this block (and the tasks started from it), every model request is first offered to ``answers``."""
    token = _ANSWERS.set(answers)
    try:
        yield
    finally:
        _ANSWERS.reset(token)


def taped(role: Role, request: Mapping[str, Any], completion: Completion) -> None:
    """Keep ``request`` and its answer on the conversation's tape, when it is recorded (``--record``)."""
    tape = active_tape()
    if tape is None:
        return
    record = request_record(request)
    tape.add(
        role.value,
        "model",
        record,
        completion.model_dump(mode="json"),
        fingerprint=request_fingerprint(record),
    )


def recorded_answers() -> RecordedAnswers | None:
    """The recorded answers of the block the caller is in (:func:`replaying`), if any."""
    return _ANSWERS.get()
