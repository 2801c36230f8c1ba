"""Running jobs: `Worker` picks a queue's jobs up and calls a function on each, as many at once as
its concurrency, on the generated wrappers.

What it does for each job is the protocol's worker cycle (docs/protocol.md):

- it picks up with moveToActive-11, a new lock token for every pickup; idle, it blocks on the
  queue's marker (BZPOPMIN) until an add or a due delayed job signals work;
- while the function runs, one heartbeat extends the locks of every job in hand
  (extendLocks-1), so a job longer than the lock time keeps its lock;
- it finishes with moveToFinished-14: completed with the function's return value as JSON, or
  failed with the exception's text and traceback, which the script turns into a retry with the
  job's backoff while attempts are left; the same call picks the slot's next job up;
- it runs the stalled check (moveStalledJobsToWait-8) at an interval, so the jobs of a worker
  that died go back to wait;
- a pickup the queue's rate limiter holds back waits as long as the reply says;
- a job whose function added children waits for them (moveToWaitingChildren-7): the function
  hands it over itself (`job.move_to_waiting_children()`), or the worker does when the
  completion is refused for pending children (-4); the job runs again once they are done. A
  completion refused for a failed child (-9) fails the job instead.

`close()` (and SIGTERM or SIGINT during `run()`) stops the pickups; the jobs in hand finish, so
none is lost or run twice; a job still running after `shutdown_timeout` is handed back to wait
(moveJobFromActiveToWait-11).

A call that meets a connection error is sent again, after a pause that grows to 5 s, until it
lands: each transition is safe to send again with the same token (docs/protocol.md, re-sent
calls).
"""

from __future__ import annotations

import asyncio
import itertools
import json
import os
import random
import signal
import threading
import time
import traceback
from collections.abc import Awaitable, Callable, Iterator
from contextlib import contextmanager, suppress
from dataclasses import dataclass, field
from typing import Any, Literal, TypeVar

import redis

from . import calls
from . import generated as g
from .generated.errors import JobHasFailedChildren, JobPendingChildren
from .queue import Job
from .runtime import ScriptFailed, keys
from .runtime.arguments import check_queue_name, now_ms
from .runtime.clients import AsyncClient, SyncClient
from .schedulers import scheduling_next

_T = TypeVar("_T")
# What a call meets while Redis cannot be reached (a loading server's error is a ConnectionError).
_OUTAGE = (redis.exceptions.ConnectionError, redis.exceptions.TimeoutError)
_MAX_PAUSE_S = 5.0


@dataclass(frozen=True, eq=False)
class _HeldJob(Job):
    """A job a worker holds: its fields, the lock token of this pickup, and where it runs."""

    token: str = ""
    queue: str = ""
    client: Any = field(default=None, repr=False)
    # Set once the function has handed the job over to wait for its children: the worker then
    # sends no finish for this pickup.
    moved_to_waiting_children: bool = False

    def _waiting_children_arguments(self, child_id: str) -> dict[str, Any]:
        return {"queue": self.queue, "job_id": self.id, "token": self.token, "child_id": child_id}

    def _mark_moved(self, moved: int) -> bool:
        if moved == 1:
            object.__setattr__(self, "moved_to_waiting_children", True)  # frozen: once, here
        return moved == 1


@dataclass(frozen=True, eq=False)
class ActiveJob(_HeldJob):
    """A job a `Worker` holds, and what the function may do with it while it runs."""

    def update_progress(self, progress: object) -> None:
        """Store the job's progress (any JSON value) and tell the queue's listeners."""
        g.update_progress(self.client, queue=self.queue, job_id=self.id, progress=progress)

    def log(self, line: str) -> None:
        """Add a line to the job's log."""
        g.add_log(self.client, queue=self.queue, job_id=self.id, line=line)

    def move_to_waiting_children(self, child_id: str = "") -> bool:
        """Hand the job over until its pending children (or the child `child_id` alone) are
        done, after adding them (`Queue.add_flow(..., parent_id=job.id)`, or
        `JobOptions(parent_id=job.id)`). True: it moved; the worker finishes nothing when the
        function returns, and the job runs again once the children are done. False: nothing
        was pending, and the job is still this worker's to finish."""
        moved = g.move_to_waiting_children(
            self.client, **self._waiting_children_arguments(child_id)
        )
        return self._mark_moved(moved)


Processor = Callable[[ActiveJob], object]


@dataclass(frozen=True)
class WorkerSettings:
    """How a worker works a queue; the same for `Worker` and `AsyncWorker`."""

    concurrency: int = 1  # jobs at once
    lock_duration: int = 30_000  # ms a lock lives without a heartbeat; beats at half of it
    stalled_interval: int = 30_000  # ms between two stalled checks
    max_stalled: int = 1  # how often a job may stall before it fails
    limit: tuple[int, int] = (0, 0)  # at most (max) jobs per (duration) ms; (0, 0): no limit
    idle_block: float = 1.0  # s an idle slot blocks on the marker before it looks again
    shutdown_timeout: float | None = None  # s the jobs in hand get to finish once closing
    name: str = ""  # the worker's name in its lock tokens; "" for a random one
    # Per-minute points of the finished jobs' metrics kept (Queue.get_metrics); 0: the counts
    # alone.
    max_metrics: int = 0
    # The retry delay in ms of a failed job whose backoff type is neither "fixed" nor
    # "exponential" (the script's own two), from the attempts made with this one, the job
    # and its exception; None: such a job is retried at once.
    backoff_strategy: Callable[[int, Job, Exception], int] | None = None

    def __post_init__(self) -> None:
        if self.concurrency < 1:
            raise ValueError(f"concurrency must be at least 1, got {self.concurrency}")
        if self.lock_duration < 1:
            raise ValueError(f"lock_duration must be at least 1 ms, got {self.lock_duration}")

    def pickup(self, queue: str, token: str) -> dict[str, Any]:
        """moveToActive-11's arguments for a pickup with `token`."""
        limit_max, limit_duration = self.limit
        return {
            "queue": queue,
            "token": token,
            "lock_duration": self.lock_duration,
            "limit_max": limit_max,
            "limit_duration": limit_duration,
        }

    def finish(
        self,
        job: _HeldJob,
        ended: _Ended,
        fetch_next: bool,
        failure: Exception | None = None,
    ) -> dict[str, Any]:
        """moveToFinished-14's arguments for `job`, which `ended` so (with `failure`, the
        exception of its function)."""
        limit_max, limit_duration = self.limit
        outcome, result, stacktrace = ended
        backoff_delay = 0
        if failure is not None and self.backoff_strategy is not None and _custom(job):
            backoff_delay = max(0, int(self.backoff_strategy(job.attempts_made + 1, job, failure)))
        return {
            "backoff_delay": backoff_delay,
            "job_id": job.id,
            "token": job.token,
            "outcome": outcome,
            "result": result,
            "stacktrace": stacktrace,
            "jitter": random.random(),  # the draw of a backoff with a jitter
            "fetch_next": fetch_next,
            "lock_duration": self.lock_duration,
            "limit_max": limit_max,
            "limit_duration": limit_duration,
            "max_metrics": self.max_metrics,
        }


# How a job's function ended: ("completed", its value as JSON, "") or ("failed", the
# exception's text, its traceback).
_Ended = tuple[Literal["completed", "failed"], str, str]


# How a job that completed ends when a child of it failed without a policy that lets the parent
# go on (moveToFinished-14 answers -9): it fails, and runs again while attempts are left.
_CHILD_FAILED: _Ended = ("failed", "a child of the job failed", "")


def _finishing(
    settings: WorkerSettings,
    job: _HeldJob,
    ended: _Ended,
    failure: Exception | None,
    closing: Callable[[], bool],
) -> calls.Steps[Any]:
    """The calls that finish `job` (calls.py): moveToFinished-14's reply, or None once the job
    is not this pickup's (the lock was lost to a stall or a hand-back, or the job went to wait
    for its children).

    A completion refused for pending children (-4) hands the job over to wait for them, so it
    runs again once they are done; one refused for a failed child (-9) fails it instead."""
    while True:
        arguments = settings.finish(job, ended, not closing(), failure)
        try:
            return (yield "move_to_finished", {"queue": job.queue, **arguments})
        except JobPendingChildren:
            try:
                moved = yield "move_to_waiting_children", job._waiting_children_arguments("")
            except JobHasFailedChildren:
                ended, failure = _CHILD_FAILED, None
                continue
            except ScriptFailed:
                return None
            if job._mark_moved(moved):
                return None
            # Its children were done meanwhile: the completion is sent again.
        except JobHasFailedChildren:
            ended, failure = _CHILD_FAILED, None
        except ScriptFailed:
            return None


def _custom(job: Job) -> bool:
    """Whether the job's backoff is of a type the script leaves to the caller's strategy."""
    backoff = job.opts.get("backoff")
    return isinstance(backoff, dict) and backoff.get("type") not in (None, "fixed", "exponential")


def _completed(value: object) -> _Ended:
    try:
        return "completed", json.dumps(value, allow_nan=False), ""
    except (TypeError, ValueError) as exc:
        return _failed(exc)  # a value the job cannot keep: its failure instead


def _failed(exc: BaseException) -> _Ended:
    stack = "".join(traceback.format_exception(exc))
    return "failed", str(exc) or type(exc).__name__, stack


def _settings(settings: WorkerSettings | None, options: dict[str, Any]) -> WorkerSettings:
    """A worker's settings: given whole, or as keyword arguments, not both."""
    if settings is not None and options:
        raise TypeError(f"pass settings= or {', '.join(sorted(options))}=, not both")
    return settings or WorkerSettings(**options)


def _token(name: str, pickups: Iterator[int]) -> str:
    return f"{name}:{next(pickups)}"


class Worker:
    """Runs `processor` on the jobs of `queue`, `concurrency` at a time, in threads, until
    closed; the settings are `WorkerSettings`'s."""

    def __init__(
        self,
        client: SyncClient,
        queue: str,
        processor: Processor,
        settings: WorkerSettings | None = None,
        **options: Any,
    ) -> None:
        check_queue_name("Worker", queue)  # checked once, here
        self.client = client
        self.queue = queue
        self.processor = processor
        self.settings = _settings(settings, options)
        self.name = self.settings.name or os.urandom(6).hex()
        self._closing = threading.Event()  # no pickups from now on
        self._done = threading.Event()  # every slot has ended (or was given up on)
        self._in_hand: dict[str, str] = {}  # job id -> the token of its pickup
        self._guard = threading.Lock()
        self._pickups = itertools.count(1)
        self._failure: BaseException | None = None

    # -- running and stopping ------------------------------------------------------------

    def run(self, *, burst: bool = False, handle_signals: bool = True) -> None:
        """Work until `close()` (or SIGTERM or SIGINT, with `handle_signals` in the main
        thread), then let the jobs in hand finish, handing back to wait any that still runs
        `shutdown_timeout` seconds later. With `burst`, return once the queue has nothing to
        pick up (delayed jobs not yet due stay). An error of the worker's own (not a job's)
        stops it and is raised here."""
        self._done.clear()  # a worker may run again after a burst
        self._failure = None
        slots = [
            threading.Thread(target=self._slot, args=(burst,), name=f"emq-slot-{i}", daemon=True)
            for i in range(self.settings.concurrency)
        ]
        helpers = [
            threading.Thread(target=self._heartbeats, name="emq-heartbeat", daemon=True),
            threading.Thread(target=self._stalled_checks, name="emq-stalled", daemon=True),
        ]
        with self._signals(handle_signals):
            for thread in [*helpers, *slots]:
                thread.start()
            # Joined in short waits, so a signal's handler runs while the slots work.
            while not self._closing.wait(0.2):
                if not any(thread.is_alive() for thread in slots):
                    break  # a burst is over
            timeout = self.settings.shutdown_timeout
            deadline = None if timeout is None else time.monotonic() + timeout
            for thread in slots:
                while thread.is_alive() and (deadline is None or time.monotonic() < deadline):
                    thread.join(0.2)
        self._hand_back()
        self._done.set()
        for thread in helpers:
            thread.join()
        if self._failure is not None:
            raise self._failure

    def close(self) -> None:
        """Stop picking up; `run()` returns once the jobs in hand are done."""
        self._closing.set()

    @contextmanager
    def _signals(self, handle: bool) -> Iterator[None]:
        if not handle or threading.current_thread() is not threading.main_thread():
            yield
            return
        previous = {sig: signal.getsignal(sig) for sig in (signal.SIGTERM, signal.SIGINT)}
        for sig in previous:
            signal.signal(sig, lambda *_: self._closing.set())
        try:
            yield
        finally:
            for sig, handler in previous.items():
                signal.signal(sig, handler)

    def _hand_back(self) -> None:
        """Give the jobs still running back to wait: their function goes on, but its finish
        will find the lock gone and change nothing."""
        with self._guard:
            left = list(self._in_hand.items())
        for job_id, token in left:
            with suppress(ScriptFailed):  # finished or lost meanwhile
                self._send(
                    g.move_job_from_active_to_wait,
                    self.client,
                    queue=self.queue,
                    job_id=job_id,
                    token=token,
                )

    # -- one slot ------------------------------------------------------------------------

    def _slot(self, burst: bool) -> None:
        job: ActiveJob | None = None
        try:
            while not self._closing.is_set() or job is not None:
                if job is not None:
                    job = self._work(job)
                    continue
                job = self._pickup(burst)
                if job is _EMPTY:
                    return
        except BaseException as exc:  # the worker's own failure: every slot stops
            self._failure = self._failure or exc
            self._closing.set()

    def _pickup(self, burst: bool) -> Any:
        """A job picked up; None when there was none (after waiting for work), or with `burst`
        _EMPTY when the queue has nothing to pick up."""
        token = _token(self.name, self._pickups)
        arguments = self.settings.pickup(self.queue, token)
        try:
            pickup = self._send(g.move_to_active, self.client, give_up=self._closing, **arguments)
        except _GaveUp:
            return None
        if pickup.job_id:
            return self._hold(pickup.job_id, pickup.fields, token)
        if pickup.limit_delay:
            self._closing.wait(pickup.limit_delay / 1000)
        elif burst:
            return _EMPTY
        else:
            self._wait_for_work()
        return None

    def _wait_for_work(self) -> None:
        """Block on the marker until work is signalled or `idle_block` passes; a marker scored
        in the future (the next delayed job's run-at) means waiting until then."""
        try:
            popped = self.client.bzpopmin(keys.marker(self.queue), self.settings.idle_block)
        except _OUTAGE:
            self._closing.wait(self.settings.idle_block)
            return
        self._closing.wait(_due_in(popped, self.settings.idle_block))

    def _hold(self, job_id: str, fields: dict[str, str], token: str) -> ActiveJob:
        with self._guard:
            self._in_hand[job_id] = token
        if "rjk" in fields:  # a job scheduler's iteration: its pickup schedules the next
            steps = scheduling_next(self.queue, job_id, fields, now=now_ms())
            calls.run(self.client, steps, self._send)
        return ActiveJob.from_fields(
            job_id, fields, token=token, queue=self.queue, client=self.client
        )

    def _work(self, job: ActiveJob) -> ActiveJob | None:
        """Run the function on `job` and finish it; the next job the finish picked up."""
        failure: Exception | None = None
        try:
            ended = _completed(self.processor(job))
        except Exception as exc:  # the job's failure: its text and traceback are stored
            ended, failure = _failed(exc), exc
        finished = None if job.moved_to_waiting_children else self._finish(job, ended, failure)
        with self._guard:
            self._in_hand.pop(job.id, None)
        if finished is None or not finished.job_id:
            return None
        return self._hold(finished.job_id, finished.fields, job.token)

    def _finish(self, job: ActiveJob, ended: _Ended, failure: Exception | None) -> Any:
        """Drive `_finishing` for `job` on this worker's client."""
        steps = _finishing(self.settings, job, ended, failure, self._closing.is_set)
        return calls.run(self.client, steps, self._send)

    # -- the helpers ---------------------------------------------------------------------

    def _heartbeats(self) -> None:
        """Extend every lock in hand, at half the lock time."""
        duration = self.settings.lock_duration
        while not self._done.wait(duration / 2000):
            with self._guard:
                held = [part for pair in self._in_hand.items() for part in pair]
            if held:
                # Lost to an outage, the next beat tries again, well within the lock time.
                with suppress(*_OUTAGE):
                    g.extend_locks(self.client, queue=self.queue, duration=duration, jobs=held)

    def _stalled_checks(self) -> None:
        """Put back to wait the jobs whose worker stopped extending their locks."""
        while True:
            with suppress(*_OUTAGE):
                g.move_stalled_jobs_to_wait(
                    self.client, queue=self.queue, max_stalled=self.settings.max_stalled
                )
            if self._done.wait(self.settings.stalled_interval / 1000):
                return

    def _send(
        self,
        call: Callable[..., _T],
        *args: Any,
        give_up: threading.Event | None = None,
        **kwargs: Any,
    ) -> _T:
        """`call(*args, **kwargs)`, sent again after a connection error until it lands (or
        `give_up` is set, which raises _GaveUp)."""
        pause = 0.05
        while True:
            try:
                return call(*args, **kwargs)
            except _OUTAGE:
                if give_up is not None and give_up.is_set():
                    raise _GaveUp from None
                time.sleep(pause)
                pause = min(pause * 2, _MAX_PAUSE_S)


def _due_in(popped: Any, most: float) -> float:
    """What an idle slot waits after the marker answered `popped`: nothing for work now, until
    the next delayed job's run-at (at most `most` s) for a marker scored in the future."""
    if not popped:
        return 0.0
    return max(0.0, min((float(popped[2]) - now_ms()) / 1000, most))


# A burst's pickup that found nothing to do.
_EMPTY: Any = object()


class _GaveUp(Exception):
    """A call given up on because the worker is closing."""


# -- asyncio ------------------------------------------------------------------------------


@dataclass(frozen=True, eq=False)
class AsyncActiveJob(_HeldJob):
    """`ActiveJob` for `AsyncWorker`: the same fields, its methods coroutines."""

    async def update_progress(self, progress: object) -> None:
        """Store the job's progress (any JSON value) and tell the queue's listeners."""
        await g.update_progress_async(
            self.client, queue=self.queue, job_id=self.id, progress=progress
        )

    async def log(self, line: str) -> None:
        """Add a line to the job's log."""
        await g.add_log_async(self.client, queue=self.queue, job_id=self.id, line=line)

    async def move_to_waiting_children(self, child_id: str = "") -> bool:
        """`ActiveJob.move_to_waiting_children`."""
        moved = await g.move_to_waiting_children_async(
            self.client, **self._waiting_children_arguments(child_id)
        )
        return self._mark_moved(moved)


AsyncProcessor = Callable[[AsyncActiveJob], Awaitable[object]]


class AsyncWorker:
    """`Worker` on a redis.asyncio client: each slot a task, `processor` a coroutine function."""

    def __init__(
        self,
        client: AsyncClient,
        queue: str,
        processor: AsyncProcessor,
        settings: WorkerSettings | None = None,
        **options: Any,
    ) -> None:
        check_queue_name("AsyncWorker", queue)
        self.client = client
        self.queue = queue
        self.processor = processor
        self.settings = _settings(settings, options)
        self.name = self.settings.name or os.urandom(6).hex()
        self._closing = asyncio.Event()
        self._done = asyncio.Event()
        self._in_hand: dict[str, str] = {}
        self._pickups = itertools.count(1)

    async def run(self, *, burst: bool = False, handle_signals: bool = True) -> None:
        """Work until `close()` (or SIGTERM or SIGINT, with `handle_signals` on a loop that
        takes signal handlers), then as `Worker.run`; `burst` as there."""
        self._done.clear()  # a worker may run again after a burst
        loop = asyncio.get_running_loop()
        handled: list[signal.Signals] = []
        if handle_signals:
            for sig in (signal.SIGTERM, signal.SIGINT):
                with suppress(NotImplementedError, RuntimeError):  # not the main thread's loop
                    loop.add_signal_handler(sig, self._closing.set)
                    handled.append(sig)
        slots = [asyncio.create_task(self._slot(burst)) for _ in range(self.settings.concurrency)]
        helpers = [asyncio.create_task(self._heartbeats()), asyncio.create_task(self._stalled())]
        closing = asyncio.create_task(self._closing.wait())
        try:
            # Until closed, a burst is over, or a slot fails (which closes the others).
            while not self._closing.is_set():
                if any(t.done() and t.exception() is not None for t in slots):
                    self._closing.set()
                    break
                working = [t for t in slots if not t.done()]
                if not working:
                    break
                await asyncio.wait([closing, *working], return_when=asyncio.FIRST_COMPLETED)
            done, running = await asyncio.wait(slots, timeout=self.settings.shutdown_timeout)
            await self._hand_back()
            for task in running:
                task.cancel()
            for task in done:
                task.result()  # a slot's own failure, raised here
        finally:
            closing.cancel()
            for sig in handled:
                loop.remove_signal_handler(sig)
            self._done.set()
            await asyncio.gather(*helpers, return_exceptions=True)

    def close(self) -> None:
        """Stop picking up; `run()` returns once the jobs in hand are done."""
        self._closing.set()

    async def _hand_back(self) -> None:
        for job_id, token in list(self._in_hand.items()):
            with suppress(ScriptFailed):
                await self._send(
                    g.move_job_from_active_to_wait_async,
                    self.client,
                    queue=self.queue,
                    job_id=job_id,
                    token=token,
                )

    async def _slot(self, burst: bool) -> None:
        job: AsyncActiveJob | None = None
        while not self._closing.is_set() or job is not None:
            if job is not None:
                job = await self._work(job)
                continue
            job = await self._pickup(burst)
            if job is _EMPTY:
                return

    async def _pickup(self, burst: bool) -> Any:
        token = _token(self.name, self._pickups)
        arguments = self.settings.pickup(self.queue, token)
        try:
            pickup = await self._send(
                g.move_to_active_async, self.client, give_up=True, **arguments
            )
        except _GaveUp:
            return None
        if pickup.job_id:
            return await self._hold(pickup.job_id, pickup.fields, token)
        if pickup.limit_delay:
            await self._pause(pickup.limit_delay / 1000)
        elif burst:
            return _EMPTY
        else:
            await self._wait_for_work()
        return None

    async def _wait_for_work(self) -> None:
        idle = self.settings.idle_block
        try:
            popped = await self.client.bzpopmin(keys.marker(self.queue), idle)
        except _OUTAGE:
            await self._pause(idle)
            return
        await self._pause(_due_in(popped, idle))

    async def _pause(self, seconds: float) -> None:
        """Sleep `seconds`, or less when the worker closes."""
        if seconds > 0:
            with suppress(TimeoutError):
                await asyncio.wait_for(self._closing.wait(), seconds)

    async def _hold(self, job_id: str, fields: dict[str, str], token: str) -> AsyncActiveJob:
        self._in_hand[job_id] = token
        if "rjk" in fields:
            steps = scheduling_next(self.queue, job_id, fields, now=now_ms())
            await calls.run_async(self.client, steps, self._send)
        return AsyncActiveJob.from_fields(
            job_id, fields, token=token, queue=self.queue, client=self.client
        )

    async def _work(self, job: AsyncActiveJob) -> AsyncActiveJob | None:
        failure: Exception | None = None
        try:
            ended = _completed(await self.processor(job))
        except Exception as exc:  # the job's failure: its text and traceback are stored
            ended, failure = _failed(exc), exc
        finished = (
            None if job.moved_to_waiting_children else await self._finish(job, ended, failure)
        )
        self._in_hand.pop(job.id, None)
        if finished is None or not finished.job_id:
            return None
        return await self._hold(finished.job_id, finished.fields, job.token)

    async def _finish(self, job: AsyncActiveJob, ended: _Ended, failure: Exception | None) -> Any:
        """`Worker._finish`."""
        steps = _finishing(self.settings, job, ended, failure, self._closing.is_set)
        return await calls.run_async(self.client, steps, self._send)

    async def _heartbeats(self) -> None:
        duration = self.settings.lock_duration
        while not await self._done_within(duration / 2000):
            held = [part for pair in self._in_hand.items() for part in pair]
            if held:
                with suppress(*_OUTAGE):
                    await g.extend_locks_async(
                        self.client, queue=self.queue, duration=duration, jobs=held
                    )

    async def _stalled(self) -> None:
        while True:
            with suppress(*_OUTAGE):
                await g.move_stalled_jobs_to_wait_async(
                    self.client, queue=self.queue, max_stalled=self.settings.max_stalled
                )
            if await self._done_within(self.settings.stalled_interval / 1000):
                return

    async def _done_within(self, seconds: float) -> bool:
        with suppress(TimeoutError):
            await asyncio.wait_for(self._done.wait(), seconds)
        return self._done.is_set()

    async def _send(
        self, call: Callable[..., Awaitable[_T]], *args: Any, give_up: bool = False, **kwargs: Any
    ) -> _T:
        """`await call(...)`, sent again after a connection error until it lands (or, with
        `give_up`, until the worker closes)."""
        pause = 0.05
        while True:
            try:
                return await call(*args, **kwargs)
            except _OUTAGE:
                if give_up and self._closing.is_set():
                    raise _GaveUp from None
                await asyncio.sleep(pause)
                pause = min(pause * 2, _MAX_PAUSE_S)
