"""Running a stored plan: conversations concurrently on one event loop, each result committed as it is scored.

* ``concurrency`` bounds the conversations in flight; each model role has its own limit on top (its
  ``concurrency`` setting, in the model client), because each role usually hits a different rate limit.
* Rate limits, server errors and timeouts are retried with jittered exponential backoff by the model client;
  a case whose retries run out ends as ``error`` with the reason, and the run goes on.
* Every result is committed to the store the moment it is scored, and every conversation is checkpointed
  step by step (LangGraph, in a file beside the store), so a crash, a ``kill -9`` or Ctrl-C loses at most the
  steps in flight: ``resume`` skips finished cases and continues unfinished conversations where they stopped.
* The run's lease is taken before anything runs and renewed while it runs (see :mod:`simulator.store`): a
  second process resuming the same run is refused, and a killed run reads ``interrupted``. The run ends
  ``completed``, ``interrupted`` (cancelled: Ctrl-C, SIGTERM, or its ``max_cost`` reached, see
  :mod:`simulator.runner._cost`) or ``failed`` (any other error), lease given back in the same transaction.
* With ``executor="ray"`` the conversations run on a Ray cluster (:mod:`simulator.runner._ray`); this process
  keeps the lease and stores each result as it arrives, through the same ``save`` as a local run.
* Live tools are a decision of the command that runs: :func:`execute` runs real tool functions only when its
  caller says ``live=True``, and only for a run recorded as live; a run is never made live by what it stored.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import functools
import itertools
import sqlite3
import time
from collections.abc import Awaitable, Callable, Iterator
from contextlib import ExitStack
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from simulator._sqlite import disk_full
from simulator._version import __version__
from simulator.agents import prepare_agent
from simulator.cassettes import Playback, cassette_of, encode
from simulator.engine import forget, forget_threads, load_graph, open_checkpointer
from simulator.errors import CostLimitReached, CredentialsError, InputError, StoreError
from simulator.llm import (
    LLMClient,
    ModelCall,
    RequestCache,
    logging_calls,
    noting_refusals,
    preload,
    replaying,
)
from simulator.loading import LoadedSuite
from simulator.metrics import SummaryBuilder, run_summary
from simulator.models.run import PlanItem, RunRecord, RunStatus, StoredResult
from simulator.models.scores import CaseResult
from simulator.models.transcript import Usage
from simulator.runner._case import model_roles
from simulator.runner._converse import converse
from simulator.runner._cost import CostAccount
from simulator.runner._gc import old_objects_frozen, rarer_young_collections
from simulator.runner._otlp import OtlpExporter, OtlpTarget, RunTracer
from simulator.runner._plan import restore
from simulator.runner._spans import AgentInfo
from simulator.store import Lease, RunStore
from simulator.taps import recording


@dataclass
class Progress:
    """One finished conversation, for a progress display. ``usage`` is the run's so far, every model role's added
    together: the conversations stored up to this one (a resumed run's from its stored summary on), for tokens and
    cost as they accrue."""

    done: int
    total: int
    item: PlanItem
    result: CaseResult
    duration_s: float
    usage: Usage = field(default_factory=Usage)


def checkpoint_path(store_path: Path) -> Path:
    """Where a store's conversation checkpoints live: a file beside it. Not the store's own file: its
    synchronous writes and the checkpointer's async connection would wait on each other's locks."""
    return store_path.with_name(f"{store_path.stem}-checkpoints{store_path.suffix or '.db'}")


def forget_checkpoints(store_path: Path, run_id: str) -> None:
    """Delete the checkpoints of a run's unfinished conversations (when the run is deleted)."""
    forget_threads(checkpoint_path(store_path), f"{run_id}:")


def check_live(record: RunRecord, live: bool) -> None:
    """Refuse to run ``record`` in another tool mode than it was started in: its results would mix fakes and
    real tool calls. ``live`` is what the command asking says (``--live``), never what the run stored."""
    if record.settings.live and not live:
        raise InputError(
            f"run {record.id} was started with --live (real tool functions ran); continuing it needs --live again "
            "(or start a new run without it: simulator runs repeat RUN)"
        )
    if live and not record.settings.live:
        raise InputError(
            f"run {record.id} runs its tools in test mode (fakes); it cannot continue with --live, which would mix "
            "fakes and real calls in one run: resume it without --live, or start a live run (simulator runs "
            "repeat RUN --live)"
        )


#: How many conversations must fail for want of a valid key, before any succeeds, for a run to stop early.
REFUSALS_TO_STOP = 3


class _RunRefused(Exception):
    """The first conversations of a run failed for want of a valid key: the run stops with this one message."""

    def __init__(self, refusal: CredentialsError) -> None:
        super().__init__(str(refusal))
        self.refusal = refusal


class _CostStop(Exception):
    """The run's models cost what its ``max_cost`` allows: the run stops as if interrupted."""


def _cost_account(store: RunStore, record: RunRecord) -> CostAccount | None:
    """The run's cost so far against its ``max_cost`` (None without one), counting what earlier processes
    stored; an InputError when that already reaches the limit, so a resume is told to raise it rather than
    stopping at once."""
    limit = record.settings.max_cost
    if limit is None:
        return None
    account = CostAccount(limit, (stored.result for stored in store.iter_results(record.id)))
    if account.reached and store.result_count(record.id) < len(record.plan):
        raise InputError(
            f"run {record.id} has already cost ${account.spent:.4f}, which reaches its --max-cost ${limit:g}: "
            f"continue it with a higher limit (simulator runs resume {record.id} --max-cost USD)"
        )
    return account


class LeaseLost(StoreError):
    """Another process took over the run's lease (this one looked dead to it): this one stops."""


async def execute(
    store: RunStore,
    record: RunRecord,
    *,
    live: bool = False,
    on_progress: Callable[[Progress], None] | None = None,
    clients: dict[int, LLMClient] | None = None,
    cache: RequestCache | None = None,
    checkpoints: bool | None = None,
    playbacks: Callable[[PlanItem], Playback] | None = None,
    trace_to: OtlpTarget | None = None,
) -> RunRecord:
    """Run what is left of ``record``'s plan and return the record as stored afterwards.

    ``live``: whether the caller's command said ``--live``; it must match the run's recorded tool mode
    (:func:`check_live`). ``clients`` may give a model client per suite index (tests pass ones with the
    offline fake provider). ``playbacks`` gives each item's cassette playback (``replay``, ``rerun``). With the
    run's ``record`` setting, each conversation's exchanges are stored as its cassette beside its result.
    ``trace_to``: the collector the spans of each stored conversation and of the run are sent to (see
    :mod:`simulator.runner._otlp`); it never changes what runs or how it ends. The
    run's lease is taken first: :class:`~simulator.store.RunBusyError` if another
    live process runs it. Cancellation (Ctrl-C, SIGTERM) stops the conversations in flight, marks the run
    ``interrupted`` and re-raises; any other error marks it ``failed`` and re-raises.
    """
    check_live(record, live)
    suites: list[LoadedSuite] = [restore(snapshot) for snapshot in record.snapshot]
    settings = record.settings
    base = settings.model_copy(update={"live": live})  # what this command says, never what the run stored
    models = dict(clients or {})

    def agent_info(index: int) -> AgentInfo:
        agent = suites[index].suite.agent
        return AgentInfo(
            name=str(getattr(agent, "name", None) or "agent"), model=model_roles(suites[index], base).agent.model
        )

    tracer = RunTracer(record, OtlpExporter(trace_to), agent_info) if trace_to is not None else None

    def client(index: int) -> LLMClient:
        if index not in models:
            models[index] = LLMClient(model_roles(suites[index], base), cache=cache)
        return models[index]

    account = _cost_account(store, record)
    lease = store.acquire(record.id)  # first: a second process is refused before it loads anything
    try:
        for loaded in suites if playbacks is None else ():  # a playback calls models only for what changed
            preload(model_roles(loaded, base))  # before any conversation starts: see preload
            if loaded.agent is not None:
                prepare_agent(loaded.agent)
        finished = store.result_count(record.id)  # read under the lease: nobody else adds results now
    except BaseException:
        _finish(store, lease, "failed", record.totals.duration_s if record.totals else 0.0, quiet=True)
        raise
    total = len(record.plan)
    # The summary is added up as the results are stored, not read back from the store at the end (which grows with
    # the run); a resumed run's, which counts what earlier processes stored, is.
    summing = SummaryBuilder(record) if finished == 0 else None
    positions: dict[str, int] = {}  # the plan position of each item in flight, for the summary
    todo = items_left(store, record, positions=positions if summing is not None else None)
    previous = record.totals.duration_s if record.totals else 0.0
    spent = sum(record.totals.usage.values(), Usage()) if record.totals and finished else Usage()
    started = time.monotonic()
    # Whether a conversation has finished without a credentials failure. Until one has, the conversations that
    # failed because no key was sent or the key was refused are held back; when the first few to finish all did
    # (REFUSALS_TO_STOP, or every one left), the run stops (see _RunRefused): every other one would fail the same
    # way, one error each. One refusal alone does not stop it: a provider may refuse one request of a working key.
    settled = False
    held: list[tuple[PlanItem, CaseResult, float, Any, Any, Any]] = []
    refusals_to_stop = min(REFUSALS_TO_STOP, total - finished)

    async def one(item: PlanItem, saver: Any, handover: Callable[[], Awaitable[None]] | None = None) -> None:
        nonlocal settled
        playback = playbacks(item) if playbacks is not None else None
        with ExitStack() as scope:
            tape = scope.enter_context(recording()) if settings.record else None
            calls = scope.enter_context(logging_calls()) if tracer is not None else None
            refused = scope.enter_context(noting_refusals())
            if playback is not None:
                scope.enter_context(replaying(playback))
            result, duration = await converse(
                suites[item.suite], item, client(item.suite), base, checkpointer=saver,
                thread_id=f"{record.id}:{item.key}", playback=playback, handover=handover,
                keep_audio=functools.partial(store.save_audio, record.id, item.key),
            )  # fmt: skip
        if refused and not settled:
            held.append((item, result, duration, saver, tape, calls))
            if len(held) >= refusals_to_stop:
                raise _RunRefused(refused[0])  # the held ones are not stored: resuming the run runs them again
            return
        if not settled:
            settled = True
            for kept in held:  # a key works: the refusals held back were the provider's, stored as they ended
                await save(*kept[:5], calls=kept[5])
            held.clear()
        await save(item, result, duration, saver, tape, calls=calls)

    async def save(
        item: PlanItem,
        result: CaseResult,
        duration: float,
        saver: Any = None,
        tape: Any = None,
        *,
        calls: list[ModelCall] | None = None,
    ) -> None:
        """Store one finished conversation (from this process or a Ray worker), its cassette when recorded, and
        report it (and trace it, when the run is traced)."""
        nonlocal finished, spent
        stored = stored_result(record.id, item, result, duration)
        # In the store's writer thread: a write that waits for the file lock must not stall the event loop.
        await loop.run_in_executor(writer, store.save_result, stored)
        if summing is not None:
            summing.add(stored, positions.pop(item.key))
        if tracer is not None:
            tracer.conversation(stored, calls)
        if tape is not None:
            cassette = cassette_of(
                tape, run_id=record.id, key=item.key, case=item.case, persona=item.persona,
                simulator_version=__version__,
            )  # fmt: skip
            await loop.run_in_executor(writer, store.save_cassette, record.id, item.key, encode(cassette))
        if saver is not None:
            await forget(saver, f"{record.id}:{item.key}")  # only now: see simulator.engine.simulate
        finished += 1
        if on_progress is not None:
            spent = sum(result.transcript.usage.values(), spent)
            on_progress(Progress(finished, total, item, result, duration, spent))
        if account is not None:
            account.add(result)
            if account.reached and finished < total:
                raise _CostStop  # the conversations in flight stop as by SIGTERM: see simulator.runner._cost

    async def run_all(saver: Any) -> None:
        # A fixed pool of workers taking the next item, not a task per conversation: memory stays flat in the
        # size of the plan. Two stages, ``concurrency`` conversations in each:
        # ``talking`` bounds the conversations in flight (what the agent and the user model see), and a finished
        # conversation is scored and stored under ``scoring`` while the next one already talks. Without it a
        # conversation's lane waited for the judge, one more model latency in every conversation's chain; the
        # scoring slot is taken before the talking one is given back, so at most 2 x concurrency conversations
        # are held at once, and twice as many workers keep both stages full.
        lanes = max(1, settings.concurrency)
        talking, scoring = asyncio.Semaphore(lanes), asyncio.Semaphore(lanes)

        async def worker() -> None:
            while True:
                await talking.acquire()
                item = next(todo, None)  # shared: each item is taken by exactly one worker (no await inside)
                if item is None:
                    talking.release()
                    return
                stage = talking

                async def handover() -> None:
                    nonlocal stage
                    await scoring.acquire()
                    stage = scoring
                    talking.release()

                try:
                    await one(item, saver, handover)
                finally:
                    stage.release()

        tasks = [asyncio.create_task(worker()) for _ in range(min(2 * lanes, total - finished))]
        try:
            await asyncio.gather(*tasks)
        except BaseException:
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)
            raise

    if checkpoints is None:
        # A recorded conversation resumed half-way would keep a cassette of its second half only: it starts over.
        checkpoints = record.settings.checkpoints and not record.settings.record
    main = asyncio.current_task()
    loop = asyncio.get_running_loop()
    lost = False
    # One thread writes the results, for the whole run: the loop's default executor starts a new thread per job
    # (see simulator.agents._base.DaemonThreadExecutor), which cost CPU and, on a busy machine,
    # the wait for each new thread to be scheduled between a conversation's end and the next one's start.
    writer = concurrent.futures.ThreadPoolExecutor(max_workers=1, thread_name_prefix="simulator-store-writer")

    def on_lost() -> None:  # from the heartbeat thread
        nonlocal lost
        lost = True
        if main is not None:
            loop.call_soon_threadsafe(main.cancel)

    try:
        with store.heartbeat(lease, on_lost=on_lost), old_objects_frozen() as frozen, rarer_young_collections():
            if settings.executor != "ray" or playbacks is not None:
                # LangGraph's graph loads while the first conversations take their first turn (engine._imports);
                # its objects are frozen too once it has.
                load_graph(on_loaded=frozen.freeze_more)
            if settings.executor == "ray" and playbacks is None:  # a replay plays its cassettes here
                from simulator.runner._ray import run_on_ray

                # Checkpoints and the request cache are files beside the store, which workers elsewhere cannot
                # reach: a conversation a worker lost starts over on another.
                await run_on_ray(record, base, todo, save)
            elif checkpoints:
                async with open_checkpointer(checkpoint_path(store.path)) as saver:
                    await run_all(saver)
            else:
                await run_all(None)
    except BaseException as exc:
        writer.shutdown(wait=True)  # a result being written is stored before the run is marked
        if lost:
            holder = store.owner(record.id)
            raise LeaseLost(
                f"run {record.id} was taken over by "
                f"{holder.describe() if holder else 'another process'} while this one ran it (its heartbeat "
                "looked stale); this process stopped so that nothing runs twice"
            ) from exc
        cancelled = isinstance(exc, asyncio.CancelledError | KeyboardInterrupt | SystemExit | _CostStop)
        status: RunStatus = "interrupted" if cancelled else "failed"
        _finish(store, lease, status, previous + time.monotonic() - started, quiet=True)
        if tracer is not None:
            # What was stored is sent; a second Ctrl-C while it is stops that too, and the first one goes on.
            with contextlib.suppress(Exception, asyncio.CancelledError):
                await tracer.finish(status)
        if isinstance(exc, sqlite3.Error) and disk_full(exc):  # the checkpoints' file: the store's are StoreErrors
            raise StoreError(f"cannot write the checkpoints {checkpoint_path(store.path)}: {exc}") from exc
        if isinstance(exc, _CostStop) and account is not None and account.spent is not None:
            raise CostLimitReached(
                record.id, account.spent, account.limit, store.result_count(record.id), total
            ) from None
        if isinstance(exc, _RunRefused):
            left = total - store.result_count(record.id)
            raise CredentialsError(
                f"{exc.refusal} The run stopped there: {left} of {total} conversation(s) were not run (none is "
                f"stored as an error). Fix the key, then continue the run with `simulator runs resume {record.id}`."
            ) from exc.refusal
        raise
    writer.shutdown(wait=True)
    complete = store.result_count(record.id) == total  # counted in SQL: no set of every key
    _finish(
        store, lease, "completed" if complete else "failed", previous + time.monotonic() - started,
        finished=datetime.now(UTC) if complete else None, summing=summing,
    )  # fmt: skip
    if tracer is not None:
        await tracer.finish("completed" if complete else "failed")
    return store.get_run(record.id)


def items_left(
    store: RunStore, record: RunRecord, batch: int = 256, positions: dict[str, int] | None = None
) -> Iterator[PlanItem]:
    """The items of ``record``'s plan that have no stored result, in plan order, each read from the plan when it
    is taken: the driver holds a PlanItem for each conversation in flight only, and asks the store which keys
    are done ``batch`` at a time (under the run's lease nobody else adds any), never holding every key. Each
    item's position in the plan is put in ``positions`` (by key) as it is taken."""
    keys = record.plan.item_keys()
    position = 0
    while chunk := list(itertools.islice(keys, batch)):
        done = store.stored_keys(record.id, chunk)
        for offset, key in enumerate(chunk):
            if key not in done:
                if positions is not None:
                    positions[key] = position + offset
                yield record.plan[position + offset]
        position += len(chunk)


def stored_result(run_id: str, item: PlanItem, result: CaseResult, duration: float) -> StoredResult:
    """One finished conversation as the store keeps it."""
    return StoredResult(
        run_id=run_id,
        key=item.key,
        suite=item.suite,
        case=item.case,
        persona=item.persona,
        repeat=item.repeat,
        outcome=result.outcome,
        duration_s=duration,
        finished=datetime.now(UTC),
        result=result,
    )


def _finish(
    store: RunStore,
    lease: Lease,
    status: RunStatus,
    duration_s: float,
    *,
    finished: datetime | None = None,
    quiet: bool = False,
    summing: SummaryBuilder | None = None,
) -> None:
    """End the run with ``status`` and its summary, giving the lease back. ``quiet`` while another error is on
    its way out: a store that cannot be written then does not hide it (the lease expires with this process).

    The summary is the one ``summing`` added up while the run stored its results, or else computed here over the
    stored results read a few at a time (memory stays flat however many conversations the run has); it is
    stored with the run, and every report reads it."""
    try:
        if summing is not None:
            totals = summing.build(duration_s)
        else:
            totals = run_summary(store.iter_results(lease.run_id), duration_s, store.get_run(lease.run_id))
        store.finish(lease, status, totals=totals, finished=finished)
    except StoreError:
        if not quiet:
            raise
