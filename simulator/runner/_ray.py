"""The Ray executor: a stored plan's conversations run on a Ray cluster; this process plans and stores.

The only importer of ray (the optional extra ``simulator[ray]``), imported when a run asks for
``executor="ray"``. How a run is spread:

* the driver (this process) holds the run's lease and is the store's only writer: every result comes back to it
  and is stored the moment it arrives, by the same code as a local run (``save`` from :func:`execute`);
* the conversations run in worker actors on the cluster (``ray_workers`` of them, async, many conversations
  each); the run's suite snapshot is put in the object store once and every worker builds its suites from it,
  as a resumed run does (:func:`~simulator.runner._plan.restore`), so nothing is read from the driver's files;
* the plan is streamed: at most ``concurrency`` conversations are in flight on the whole cluster, handed out
  one by one to the least busy worker, so the driver's memory does not grow with the plan;
* every model call takes a slot of its role from one limiter actor (:class:`ClusterLimits`), so a role's
  ``concurrency`` holds across the cluster, not per worker; the actor also keeps the providers' ``Retry-After``
  hold-offs, so a 429 one worker gets holds off that provider's calls on every worker (and the driver says so,
  as a local run does: :func:`~simulator.llm.log_hold_off`);
* a recorded run (``record``): each worker records its conversation's tape and sends it back, secrets scrubbed,
  with the result; the driver stores the cassette beside the result, as a local run does. A conversation cut off
  by a worker's death sends nothing back, so its half tape is never stored: the retry records a whole one;
* a worker that dies takes none of the run with it: its conversations are handed to a fresh worker and run
  from the start (at most :data:`ATTEMPTS` times, then stored as ``error``), its model slots are given back,
  and the store's one result per key makes sure nothing is stored twice;
* cancelling the driver (Ctrl-C, SIGTERM) kills the workers and the limiter; :func:`execute` then marks the run
  ``interrupted`` and ``resume`` continues it, on Ray again unless told otherwise.

The cluster is named by ``ray_address`` or, without it, by Ray's own ``RAY_ADDRESS`` variable; when neither
names one a local cluster is started (``ray.init`` with ``ray_workers`` CPUs, on the loopback address only) and
shut down at the end; a named one is connected to and left running. The connection is made before the run is
stored (:func:`cluster`), so a cluster that refuses stores nothing. Ray's token authentication is Ray's own:
``RAY_AUTH_MODE``, ``RAY_AUTH_TOKEN`` and ``RAY_AUTH_TOKEN_PATH`` reach ``ray.init`` as they are, and a refused
token is told apart from an address where nobody answers. The cluster's nodes need Simulator and the agent's
code at the same paths as the driver.
"""

from __future__ import annotations

import asyncio
import itertools
import os
import re
import signal
import socket
import threading
from collections import Counter
from collections.abc import AsyncIterator, Awaitable, Iterator
from contextlib import asynccontextmanager, contextmanager, nullcontext
from pathlib import Path
from typing import Any, Protocol

from simulator.errors import InputError
from simulator.llm import HoldOff, HoldOffs, LLMClient, Role, log_hold_off, preload
from simulator.models.run import PlanItem, RunRecord, RunSettings, SuiteSnapshot
from simulator.models.scores import CaseResult
from simulator.runner._case import find_case, model_roles
from simulator.runner._converse import converse, error_result
from simulator.runner._gc import young_collections_rarer
from simulator.runner._plan import restore
from simulator.runner._secrets import register_run_secrets
from simulator.safety import redact_data
from simulator.taps import Tape, recording

#: How many times one conversation is started on a worker before a worker death counts as its result.
ATTEMPTS = 3
#: Seconds to wait for a cluster's address to accept a connection before saying nothing answers there.
REACH_TIMEOUT = 10.0
#: Worker processes of a local cluster when the run does not say.
LOCAL_WORKERS = 2


class Save(Protocol):
    """Stores one finished conversation in the driver, with the tape it was recorded on (a recorded run)."""

    def __call__(
        self, item: PlanItem, result: CaseResult, duration: float, *, tape: Tape | None = None
    ) -> Awaitable[None]:
        """Store ``result`` of ``item`` and, when given, the cassette made of ``tape``."""
        ...


def named_cluster(settings: RunSettings) -> tuple[str, str] | None:
    """The cluster a Ray run connects to and how the user named it (``--ray-address X`` or ``RAY_ADDRESS=X``, for
    messages), or None when a local cluster is started. ``--ray-address`` wins over ``RAY_ADDRESS``, which is
    read here as ``ray.init`` reads it."""
    if settings.ray_address:
        return settings.ray_address, f"--ray-address {settings.ray_address}"
    address = os.environ.get("RAY_ADDRESS", "").strip()
    return (address, f"RAY_ADDRESS={address}") if address else None


def _ray(address: str | None) -> Any:
    """The ray module, for a run on the cluster at ``address``, else on a local one started."""
    if address is None:
        # A local cluster listens on the loopback address only: nothing outside this machine reaches it (read
        # when ray is first imported).
        os.environ.setdefault("RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER", "0")
    try:
        import ray
    except ImportError:
        raise InputError(
            "--executor ray needs Ray: install the extra (pip install 'simulator[ray]'), or run with --executor local"
        ) from None
    return ray


@contextmanager
def cluster(settings: RunSettings) -> Iterator[None]:
    """The run's cluster for the block: connected to, or a local one started (and shut down after it). Entered
    before the run is stored, so a cluster that refuses, or cannot be started, leaves nothing in the store."""
    named = named_cluster(settings)
    ray = _ray(named[0] if named else None)
    started = _start(ray, settings)
    try:
        yield
    finally:
        if started:
            ray.shutdown()


def _start(ray: Any, settings: RunSettings) -> bool:
    """Connect to the run's cluster, or start a local one; True when this call started it (it stops it)."""
    if ray.is_initialized():
        return False  # the caller's cluster (a test session, a notebook, :func:`cluster`): used as it is
    common = {"log_to_driver": False, "configure_logging": False, "include_dashboard": False}
    named = named_cluster(settings)
    # ray.init replaces the SIGTERM handler with one that exits at once: the caller's (the command line's, which
    # cancels the run so it is stored as interrupted) is put back.
    on_sigterm = signal.getsignal(signal.SIGTERM) if threading.current_thread() is threading.main_thread() else None
    try:
        if named is not None:
            address, said = named
            check_reachable(address, said)
            _check_token(ray, address, said)
            try:
                # No num_cpus: a cluster that exists has its own (ray.init refuses it when connecting).
                ray.init(address=address, **common)
            except ConnectionError as exc:
                if _auth_refused(ray, exc):
                    raise InputError(token_refused(said)) from None
                raise InputError(
                    f"{said}: no Ray cluster answers there ({exc}); start one (ray start --head) or leave out "
                    f"{'--ray-address' if settings.ray_address else 'RAY_ADDRESS'} to run on a local cluster"
                ) from None
        else:
            ray.init(num_cpus=settings.ray_workers or LOCAL_WORKERS, **common)
    finally:
        if on_sigterm is not None:
            signal.signal(signal.SIGTERM, on_sigterm)
    return True


def check_reachable(address: str, said: str | None = None) -> None:
    """An InputError at once when nothing listens at ``address`` (``HOST:PORT`` or ``ray://HOST:PORT``): Ray itself
    keeps retrying for minutes. ``auto`` (the cluster this machine belongs to) is left to Ray. ``said`` is how
    the user named the address (``--ray-address X`` by default)."""
    host, _, port = address.removeprefix("ray://").rpartition(":")
    if not host or not port.isdigit():
        return
    said = said or f"--ray-address {address}"
    try:
        socket.create_connection((host.strip("[]"), int(port)), timeout=REACH_TIMEOUT).close()
    except OSError as exc:
        raise InputError(
            f"{said}: nothing answers there ({exc.strerror or exc}); start the cluster (ray start --head) or fix "
            "the address, or leave it out to run on a local cluster"
        ) from None


def _check_token(ray: Any, address: str, said: str) -> None:
    """An InputError at once when the cluster's GCS at ``address`` (``HOST:PORT``) refuses this process's token:
    ray.init retries a refused connection for ~20 s, a warning line each time, and then says only that it
    failed. One request tells; anything but a refusal is left to ray.init to report."""
    refused = getattr(ray.exceptions, "AuthenticationError", None)
    client = getattr(getattr(ray, "_raylet", None), "GcsClient", None)
    if address.startswith("ray://") or address == "auto" or refused is None or client is None:
        return
    try:
        client(address=address, cluster_id=None)
    except refused:
        raise InputError(token_refused(said)) from None
    except Exception:  # not a refusal: ray.init says what it is
        return


def _auth_refused(ray: Any, exc: BaseException) -> bool:
    """Whether ray.init failed because the cluster refused this process's token (Ray puts the refusal in the
    traceback text of the error its ConnectionError comes from)."""
    refused = getattr(ray.exceptions, "AuthenticationError", ())
    seen: BaseException | None = exc
    while seen is not None:
        if isinstance(seen, refused) or "AuthenticationError" in str(seen) or "InvalidAuthToken" in str(seen):
            return True
        seen = seen.__cause__ or seen.__context__
    return False


def token_refused(said: str) -> str:
    """What to do when a cluster refused this process's token: the Ray variable to set, never the token."""
    if os.environ.get("RAY_AUTH_MODE", "").strip().lower() != "token":
        fix = (
            "set RAY_AUTH_MODE=token and give the cluster's token in RAY_AUTH_TOKEN (or the path of a file holding "
            "it in RAY_AUTH_TOKEN_PATH; Ray also reads ~/.ray/auth_token)"
        )
    else:
        given = next((name for name in ("RAY_AUTH_TOKEN", "RAY_AUTH_TOKEN_PATH") if os.environ.get(name)), None)
        fix = (
            f"the token this process gives ({'from ' + given if given else 'from ~/.ray/auth_token'}) is not the "
            "cluster's: set RAY_AUTH_TOKEN to the one `ray get-auth-token` prints on the cluster's head node"
        )
    return f"{said}: the Ray cluster there refused this process (it requires Ray token authentication): {fix}"


def worker_count(ray: Any, settings: RunSettings) -> int:
    """How many worker actors the run uses: ``ray_workers``, else one per CPU of the cluster."""
    if settings.ray_workers:
        return settings.ray_workers
    return max(1, int(ray.cluster_resources().get("CPU", LOCAL_WORKERS)))


class ClusterLimits:
    """The limiter actor: slots per (suite, role) held on the whole cluster, each counted by its holder (a
    worker), so the slots of a worker that died can be given back (:meth:`forget`); and the providers' hold-offs
    (``Retry-After``), told to every worker with the slot it is granted."""

    def __init__(self) -> None:
        self._held: Counter[str] = Counter()
        self._by_holder: dict[str, Counter[str]] = {}
        self._dead: set[str] = set()
        self._changed = asyncio.Condition()
        self._hold_offs = HoldOffs(on_new=self._made)
        self._news: list[tuple[str, float]] = []  # every hold-off made, in order: one per 429 with a longer wait
        self._news_came = asyncio.Event()

    def _made(self, provider: str, seconds: float) -> None:
        self._news.append((provider, seconds))
        came, self._news_came = self._news_came, asyncio.Event()
        came.set()

    async def hold_offs_after(self, seen: int) -> list[tuple[str, float]]:
        """The hold-offs made after the first ``seen``, once there is one (the driver says them)."""
        while len(self._news) <= seen:
            await self._news_came.wait()
        return self._news[seen:]

    async def acquire(self, key: str, limit: int, holder: str, provider: str = "") -> tuple[float, int]:
        """Wait until ``key`` has fewer than ``limit`` slots held, then hold one for ``holder``; how long calls
        to ``provider`` are still held off (a :class:`~simulator.llm.HoldOff`, as a plain tuple)."""
        async with self._changed:
            await self._changed.wait_for(lambda: self._held[key] < limit)
            if holder not in self._dead:  # else asked for before its holder died: nobody would give it back
                self._held[key] += 1
                self._by_holder.setdefault(holder, Counter())[key] += 1
        return await self.held_off(provider)

    async def hold_off(self, provider: str, seconds: float) -> int:
        """Hold off every call to ``provider`` on the cluster for ``seconds``; the hold-off's number."""
        return self._hold_offs.hold_off(provider, seconds)

    async def held_off(self, provider: str) -> tuple[float, int]:
        """How long calls to ``provider`` must still wait."""
        held = self._hold_offs.held_off(provider)
        return held.seconds, held.number

    async def release(self, key: str, holder: str) -> None:
        """Give back one slot of ``key`` that ``holder`` held."""
        async with self._changed:
            held = self._by_holder.get(holder)
            if held is None or held[key] <= 0:
                return  # already given back by forget(): the holder was taken for dead
            held[key] -= 1
            self._held[key] -= 1
            self._changed.notify_all()

    async def forget(self, holder: str) -> None:
        """Give back every slot ``holder`` held (it died holding them)."""
        async with self._changed:
            self._dead.add(holder)
            for key, count in self._by_holder.pop(holder, Counter()).items():
                self._held[key] -= count
            self._changed.notify_all()


class _ClusterSlots:
    """A :class:`~simulator.llm.CallLimiter` for one suite's client in a worker: slots from the limiter actor."""

    def __init__(self, limits: Any, suite: int, holder: str) -> None:
        self._limits = limits
        self._suite = suite
        self._holder = holder

    @asynccontextmanager
    async def slot(self, role: Role, limit: int, provider: str) -> AsyncIterator[HoldOff]:
        key = f"{self._suite}:{role.value}"
        held = await self._limits.acquire.remote(key, limit, self._holder, provider)
        try:
            yield HoldOff(*held)
        finally:
            await self._limits.release.remote(key, self._holder)

    async def hold_off(self, provider: str, seconds: float) -> int:
        number: int = await self._limits.hold_off.remote(provider, seconds)
        return number

    async def held_off(self, provider: str) -> HoldOff:
        return HoldOff(*await self._limits.held_off.remote(provider))


def shipped(snapshot: SuiteSnapshot) -> dict[str, Any]:
    """What a worker gets of a suite's snapshot: its keys as written (as the store keeps them; a key dumped at its
    default reads back as written: a tool fake's ``result: null`` beside its ``error`` is refused), with its path
    made absolute, since a worker's working folder is not the driver's."""
    moved = snapshot.model_copy(update={"path": str(Path(snapshot.path).resolve())})
    return moved.model_dump(mode="json", exclude_unset=True)


_ANSI = re.compile(r"\x1b\[[0-9;]*m")


def death_cause(exc: BaseException) -> str:
    """Why Ray says a worker died, in one line without terminal colours: its first line, and when the worker
    could not even start (an error in its creation task), the error it raised, which Ray puts on the last line."""
    lines = [line.strip() for line in _ANSI.sub("", str(exc)).strip().splitlines() if line.strip()]
    if not lines:
        return type(exc).__name__
    first = lines[0].split(" (pid=")[0]
    if "creation task" in first and len(lines) > 1:
        return f"{first}: {lines[-1]}"
    return first


class ConversationWorker:
    """The worker actor: the run's suites built from its snapshot, one model client per suite, and as many
    conversations at once as the driver hands it."""

    def __init__(self, snapshots: list[dict[str, Any]], settings: dict[str, Any], limits: Any, holder: str) -> None:
        self._base = RunSettings.model_validate(settings)
        self._suites = [restore(SuiteSnapshot.model_validate(snapshot)) for snapshot in snapshots]
        self._clients = [
            LLMClient(model_roles(loaded, self._base), limiter=_ClusterSlots(limits, index, holder))
            for index, loaded in enumerate(self._suites)
        ]
        for loaded in self._suites:
            preload(model_roles(loaded, self._base))
        # This process writes nothing, but what it sends back is redacted with what it knows.
        register_run_secrets(self._suites, self._base)
        # The process is this run's: its young objects are collected as rarely as the runner's own, for as long as
        # it lives.
        young_collections_rarer()

    async def converse(self, item: dict[str, Any]) -> tuple[str, float, list[dict[str, Any]] | None]:
        """Run and score one conversation; its result as JSON, its duration and, in a recorded run, the exchanges
        on its tape with every secret this worker knows scrubbed (the driver scrubs again with its own)."""
        planned = PlanItem.model_validate(item)
        with recording() if self._base.record else nullcontext() as tape:
            result, duration = await converse(
                self._suites[planned.suite], planned, self._clients[planned.suite], self._base
            )
        return result.model_dump_json(), duration, None if tape is None else redact_data(tape.entries)


async def run_on_ray(record: RunRecord, base: RunSettings, items: Iterator[PlanItem], save: Save) -> None:
    """Run ``items`` of ``record`` on the run's Ray cluster, calling ``save`` for each result as it arrives."""
    named = named_cluster(base)
    ray = _ray(named[0] if named else None)
    started = _start(ray, base)
    workers: dict[str, Any] = {}
    limits: Any = None
    try:
        limits = ray.remote(ClusterLimits).options(max_concurrency=10_000).remote()
        snapshots = ray.put([shipped(snapshot) for snapshot in record.snapshot])
        settings = base.model_dump(mode="json")
        names = (f"{record.id}-worker-{number}" for number in itertools.count())
        actor = ray.remote(ConversationWorker).options(
            max_concurrency=max(1, base.concurrency), max_restarts=0, scheduling_strategy="SPREAD"
        )
        load: Counter[str] = Counter()

        def hire() -> str:
            name = next(names)
            workers[name] = actor.remote(snapshots, settings, limits, name)
            load[name] = 0
            return name

        for _ in range(worker_count(ray, base)):
            hire()

        async def replace(name: str) -> None:
            """A worker died: its slots go back, a fresh worker takes its place."""
            if workers.pop(name, None) is None:
                return  # another of its conversations already did this
            del load[name]
            await limits.forget.remote(name)
            hire()

        async def attempt(item: PlanItem) -> tuple[CaseResult, float, Tape | None]:
            for tries in range(1, ATTEMPTS + 1):
                name = min(load, key=load.__getitem__)  # the least busy worker
                load[name] += 1
                try:
                    text, duration, entries = await workers[name].converse.remote(item.model_dump(mode="json"))
                except ray.exceptions.RayActorError as exc:
                    await replace(name)
                    if tries == ATTEMPTS:
                        loaded = restore(record.snapshot[item.suite])
                        cause = death_cause(exc)
                        message = f"the Ray worker running it died {ATTEMPTS} times; last: {cause}"
                        return error_result(find_case(loaded, item.case), item, message), 0.0, None
                    continue
                finally:
                    if name in load:
                        load[name] -= 1
                return CaseResult.model_validate_json(text), duration, None if entries is None else Tape(entries)
            raise AssertionError("unreachable: the last attempt returns")

        async def lane() -> None:
            for item in items:  # shared: each item is taken by exactly one lane (no await inside next())
                result, duration, tape = await attempt(item)
                await save(item, result, duration, tape=tape)

        async def say_hold_offs() -> None:
            seen = 0
            while True:
                news = await limits.hold_offs_after.remote(seen)
                seen += len(news)
                for provider, seconds in news:
                    log_hold_off(provider, seconds)

        sayer = asyncio.create_task(say_hold_offs())
        lanes = [asyncio.create_task(lane()) for _ in range(max(1, base.concurrency))]
        try:
            await asyncio.gather(*lanes)
        except BaseException:
            for task in lanes:
                task.cancel()
            await asyncio.gather(*lanes, return_exceptions=True)
            raise
        finally:
            sayer.cancel()
            await asyncio.gather(sayer, return_exceptions=True)
    finally:
        for handle in [*workers.values(), *([limits] if limits is not None else [])]:
            ray.kill(handle, no_restart=True)  # a cancelled run leaves nothing running on the cluster
        if started:
            ray.shutdown()
