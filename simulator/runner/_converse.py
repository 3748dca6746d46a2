"""One planned conversation, run and scored: its result, or an ``error`` result when it breaks (never an exception).

Both executors call it: the local one (``_execute``) on this process's event loop, the Ray one (``_ray``) in a
worker on the cluster.
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable
from typing import Any

from simulator.cassettes import Playback
from simulator.llm import LLMClient, cache_scope
from simulator.loading import LoadedSuite
from simulator.metrics import case_metrics
from simulator.models import Case, Persona
from simulator.models.run import PlanItem, RunSettings
from simulator.models.scores import CaseResult
from simulator.models.transcript import ErrorEvent, Transcript, utc_now
from simulator.runner._case import find_case, run_case, score_case


def error_result(case: Case, item: PlanItem, message: str) -> CaseResult:
    """A conversation that could not finish, stored as ``error`` with ``message`` as its reason."""
    now = utc_now()
    transcript = Transcript(
        case=case.name, kind=case.kind, persona=item.persona, seed=item.seed,
        events=[ErrorEvent(turn=0, where="engine", message=message)],
        stop_reason="error", error=message, started_at=now, finished_at=now,
    )  # fmt: skip
    # The metrics too, as scoring gives them: an import or merge decides them again from the transcript.
    return CaseResult(
        case=case.name, kind=case.kind, persona=item.persona, repeat=item.repeat, outcome="error",
        reasons=[message], transcript=transcript, metrics=case_metrics(transcript, [], "error"),
    )  # fmt: skip


async def converse(
    loaded: LoadedSuite,
    item: PlanItem,
    llm: LLMClient,
    base: RunSettings,
    *,
    checkpointer: Any = None,
    thread_id: str | None = None,
    playback: Playback | None = None,
    handover: Callable[[], Awaitable[None]] | None = None,
    keep_audio: Callable[[bytes], str] | None = None,
) -> tuple[CaseResult, float]:
    """Run and score one planned conversation; returns its result and how long it took. A case that breaks is
    an ``error`` result, never an exception: one broken case must not stop the run. ``handover`` is awaited
    between the conversation and its scoring (the runner's lanes: see ``execute``). ``keep_audio`` stores a voice
    conversation's audio (WAV bytes) and returns its name (see ``run_case``)."""
    case = find_case(loaded, item.case)
    persona: Persona | None = loaded.personas.get(item.persona) if item.persona else None
    options = base.model_copy(update={"seed": item.seed})
    began = time.monotonic()
    try:
        with cache_scope(f"repeat {item.repeat}"):
            transcript = await run_case(
                loaded, case, persona=persona, llm=llm, options=options, checkpointer=checkpointer,
                thread_id=thread_id, playback=playback, keep_audio=keep_audio,
            )  # fmt: skip
            if handover is not None:
                await handover()
            result = await score_case(loaded, case, transcript, llm=llm, options=options, repeat=item.repeat)
    except Exception as exc:
        result = error_result(case, item, f"{type(exc).__name__}: {exc}")
    return result, time.monotonic() - began
