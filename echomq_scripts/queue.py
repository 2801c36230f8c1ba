"""A queue as a service uses it: `Queue` adds jobs and reads the queue, on the generated wrappers.

`Queue` is the producer's side of the protocol, `Worker` (worker.py) the consumer's. Both speak
to Redis only through the generated wrappers of `echomq_scripts.generated`, so they obey the
scripts' checks and codes like any runtime. A job's data is any JSON value, sent as JSON text (the
add wrappers' `json` argument) and decoded when read back; its options are typed (`JobOptions`)
and sent as the JSON object the add scripts read (docs/protocol.md, job options).

`AsyncQueue` is the same on a redis.asyncio client.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, NamedTuple, Self

from . import calls
from . import generated as g
from .flows import MAX_PRIORITY, FlowIds, FlowJob, add_flow, add_flow_async, flow_values
from .runtime import ArgumentError, PipelineIncompleteError, execute, execute_async, keys
from .runtime.arguments import check_queue_name, json_arg, now_ms
from .runtime.clients import AsyncClient, SyncClient
from .runtime.replies import text
from .schedulers import upsert_job_scheduler, upsert_job_scheduler_async


@dataclass(frozen=True)
class Backoff:
    """How long a failed job waits before its next attempt: `delay` ms every time (`fixed`), or
    `delay * 2^(attempt - 1)` (`exponential`); with `jitter` (0 to 1), a random share of it
    less."""

    type: Literal["fixed", "exponential"] = "exponential"
    delay: int = 1000
    jitter: float = 0.0

    def to_json(self) -> dict[str, object]:
        found: dict[str, object] = {"type": self.type, "delay": self.delay}
        if self.jitter:
            found["jitter"] = self.jitter
        return found


@dataclass(frozen=True)
class KeepJobs:
    """A retention rule for finished jobs: drop those older than `age` seconds, then keep at
    most `count` (None: no bound of that kind)."""

    age: int | None = None
    count: int | None = None

    def to_json(self) -> dict[str, object]:
        return {k: v for k, v in (("age", self.age), ("count", self.count)) if v is not None}


# What a finished job leaves: True removes it at once, an int keeps that many of the newest.
Retention = bool | int | KeepJobs


@dataclass(frozen=True)
class Deduplication:
    """While a job of this `id` is in the queue (or for `ttl` ms), adding another of the same id
    adds nothing; `extend` restarts the ttl, `replace` replaces a delayed job's data."""

    id: str
    ttl: int = 0
    extend: bool = False
    replace: bool = False

    def to_json(self) -> dict[str, object]:
        found: dict[str, object] = {"id": self.id}
        if self.ttl:
            found["ttl"] = self.ttl
        if self.extend:
            found["extend"] = True
        if self.replace:
            found["replace"] = True
        return found


@dataclass(frozen=True)
class JobOptions:
    """A job's options. `delay` (ms) and `priority` (1 runs first, 0 none) choose the script
    that adds it; the rest go with the job as its `opts`."""

    job_id: str = ""  # a custom id, or "" for one the queue numbers
    delay: int = 0
    priority: int = 0
    attempts: int = 1
    backoff: Backoff | int | None = None
    lifo: bool = False
    remove_on_complete: Retention | None = None
    remove_on_fail: Retention | None = None
    deduplication: Deduplication | None = None
    # A job of the same queue that the new job becomes a child of: the parent completes only
    # once its children are done (the job is added by addFlow-10, as a flow of one).
    parent_id: str = ""
    extra: Mapping[str, object] = field(default_factory=dict)  # any other option, as it is

    def to_json(self) -> dict[str, object]:
        """The options as the add scripts read them (BullMQ's names)."""
        opts: dict[str, object] = dict(self.extra)
        if self.attempts != 1:
            opts["attempts"] = self.attempts
        if self.backoff is not None:
            opts["backoff"] = (
                self.backoff if isinstance(self.backoff, int) else self.backoff.to_json()
            )
        if self.lifo:
            opts["lifo"] = True
        for name, rule in (
            ("removeOnComplete", self.remove_on_complete),
            ("removeOnFail", self.remove_on_fail),
        ):
            if rule is not None:
                opts[name] = rule.to_json() if isinstance(rule, KeepJobs) else rule
        if self.deduplication is not None:
            opts["deduplication"] = self.deduplication.to_json()
        return opts


@dataclass(frozen=True)
class Job:
    """A job as its hash holds it, its data and options decoded."""

    id: str
    name: str
    data: object
    opts: Mapping[str, object]
    attempts_made: int
    fields: Mapping[str, str]  # the whole hash, as text

    @classmethod
    def from_fields(cls, job_id: str, fields: Mapping[str, str], **more: Any) -> Self:
        """The job of this id and hash; `more`, a subclass's own fields."""
        return cls(
            id=job_id,
            name=fields.get("name", ""),
            data=_decoded(fields.get("data")),
            opts=_options(fields.get("opts")),
            attempts_made=int(fields.get("atm") or 0),
            fields=dict(fields),
            **more,
        )

    @property
    def progress(self) -> object:
        return _decoded(self.fields.get("progress"))

    @property
    def return_value(self) -> object:
        return _decoded(self.fields.get("returnvalue"))

    @property
    def failed_reason(self) -> str:
        return self.fields.get("failedReason", "")

    @property
    def stacktrace(self) -> str:
        return self.fields.get("stacktrace", "")


def _decoded(text: str | None) -> object:
    if text is None:
        return None
    try:
        return json.loads(text)
    except ValueError:
        return text  # stored by another runtime as plain text: given as it is


def _options(text: str | None) -> Mapping[str, object]:
    value = _decoded(text)
    return value if isinstance(value, dict) else {}


class _AddCall(NamedTuple):
    """An add as a wrapper call: the wrapper's name, its arguments (but the client and the
    queue), and whether its answer is the first of a flow's list."""

    wrapper: str
    arguments: dict[str, object]
    name: str  # the job's
    as_flow: bool = False

    def answer(self, reply: Any) -> g.Added:
        added: g.Added = reply[0] if self.as_flow else reply
        return added


def _add_call(queue: str, name: str, data: object, options: JobOptions) -> _AddCall:
    """The wrapper call that adds the job `name` with `data` and `options` to `queue`."""
    if options.delay < 0:
        raise ArgumentError(f"job {name!r}: delay must be >= 0, got {options.delay}")
    if not 0 <= options.priority <= MAX_PRIORITY:
        raise ArgumentError(
            f"job {name!r}: priority must be from 0 to {MAX_PRIORITY}, got {options.priority}"
        )
    dedup = options.deduplication.id if options.deduplication is not None else ""
    if options.parent_id:
        # The add scripts take no parent: a job below one is a flow of one node, whose data is
        # JSON text, encoded as the add wrappers encode theirs.
        text = json_arg(f"job {name!r}", "data", data).decode("utf-8")
        node = FlowJob(
            name,
            queue,
            data=text,
            opts=options.to_json(),
            job_id=options.job_id,
            delay=options.delay,
            priority=options.priority,
            dedup_id=dedup,
        )
        now = now_ms()
        flow = {"now": now, "parent_id": options.parent_id, "node": flow_values(node, now)}
        return _AddCall("add_flow", flow, name, as_flow=True)
    common: dict[str, object] = {
        "job_id": options.job_id,
        "name": name,
        "data": data,
        "opts": options.to_json(),
        "dedup_id": dedup,
    }
    if options.delay:
        return _AddCall("add_delayed_job", {**common, "delay": options.delay}, name)
    if options.priority:
        return _AddCall("add_prioritized_job", {**common, "priority": options.priority}, name)
    return _AddCall("add_standard_job", common, name)


_NO_OPTIONS = JobOptions()


class Queue:
    """One queue of the protocol on a redis-py client (a Redis or a RedisCluster): adding jobs,
    pausing, counting and reading them."""

    def __init__(self, client: SyncClient, name: str) -> None:
        self.client = client
        self.name = name
        check_queue_name("Queue", name)  # checked once, here

    def add(self, name: str, data: object = None, options: JobOptions = _NO_OPTIONS) -> g.Added:
        """Add one job; its id and 1, or the id of the job that was there (a custom id or a
        deduplication id already in the queue) and 0."""
        call = _add_call(self.name, name, data, options)
        return call.answer(getattr(g, call.wrapper)(self.client, queue=self.name, **call.arguments))

    def add_bulk(self, jobs: Sequence[BulkJob]) -> list[g.Added]:
        """Add many jobs, `(name, data)` or `(name, data, options)` each, in one pipeline, in
        order; what `add` answers for each."""
        bulk = _BulkAdd(self.name, jobs)
        while bulk.pending:
            pipe = self.client.pipeline(transaction=False)
            bulk.queue_on(pipe)
            try:
                bulk.take(execute(pipe))
            except PipelineIncompleteError as exc:
                bulk.take(exc.replies, exc.not_run)
        return bulk.answers()

    def add_flow(self, flow: FlowJob, parent_id: str = "") -> FlowIds:
        """Add a parent and its children (flows.py), in this queue; with `parent_id`, below
        that job of the queue."""
        _check_flow(flow, self.name)
        return add_flow(self.client, flow, now=now_ms(), parent_id=parent_id)

    def pause(self) -> None:
        g.pause(self.client, queue=self.name, action="pause")

    def resume(self) -> None:
        g.pause(self.client, queue=self.name, action="resume")

    def is_paused(self) -> bool:
        return bool(self.client.hexists(keys.meta(self.name), "paused"))

    def counts(self) -> g.Counts:
        """How many jobs each state holds."""
        return g.get_counts(self.client, queue=self.name)

    def get_job(self, job_id: str) -> Job | None:
        """The job of this id, or None when the queue has none."""
        fields = self.client.hgetall(keys.job(self.name, job_id))
        return Job.from_fields(job_id, _texts(fields)) if fields else None

    def get_state(self, job_id: str) -> str:
        """The state the job is in ("unknown" for none)."""
        return g.get_job_state(self.client, queue=self.name, job_id=job_id)

    def get_jobs(
        self, *states: g.GetJobsState, start: int = 0, end: int = -1, asc: bool = False
    ) -> list[Job]:
        """The jobs in `states` (each state's places `start` to `end`, -1 for its last; the next
        to run last, or first with `asc`), state after state."""
        found = g.get_jobs(
            self.client, queue=self.name, start=start, end=end, asc=asc, state=states
        )
        return _jobs(found)

    def promote(self, job_id: str) -> None:
        """Run a delayed job now (JobNotExist, JobNotInState when it is none or not delayed)."""
        g.promote(self.client, queue=self.name, job_id=job_id)

    def retry(
        self,
        job_id: str,
        state: Literal["completed", "failed"] = "failed",
        reset_attempts: bool = False,
    ) -> str:
        """Put a finished job back to run again; where it went ("wait", "paused" or
        "prioritized")."""
        return g.reprocess_job(
            self.client,
            queue=self.name,
            job_id=job_id,
            outcome=state,
            reset_attempts=reset_attempts,
        )

    def remove(self, job_id: str, remove_children: bool = False) -> bool:
        """Remove a job (and with `remove_children` its tree), in calls of at most
        `_BATCH` jobs; False when it, or a job of its tree, is held by a worker."""
        return calls.run(self.client, _removing(self.name, job_id, remove_children))

    def drain(self, delayed: bool = False) -> int:
        """Remove every waiting job (and with `delayed` the delayed ones), in calls of at most
        `_BATCH`; how many were removed."""
        return calls.run(self.client, _draining(self.name, delayed))

    def clean(self, state: g.CleanJobsInSetState, grace: int = 0) -> list[str]:
        """Remove the jobs of `state` older than `grace` ms, in calls that read at most
        `_BATCH` entries each; the ids removed."""
        return calls.run(self.client, _cleaning(self.name, state, grace))

    def get_dependencies(self, job_id: str) -> Dependencies:
        """The job's children by what became of them (JobNotExist when there is no job)."""
        return calls.run(self.client, _read_dependencies(self.name, job_id))

    def get_job_logs(
        self, job_id: str, start: int = 0, count: int = 1000, asc: bool = True
    ) -> tuple[int, list[str]]:
        """How many lines the job's log holds, and `count` of them from place `start`, oldest
        first (newest first, the places counting from the newest, unless `asc`)."""
        return g.get_job_logs(
            self.client, queue=self.name, job_id=job_id, start=start, count=count, asc=asc
        )

    def get_metrics(self, outcome: g.GetMetricsOutcome, start: int = 0, end: int = -1) -> Metrics:
        """The metrics of the completed or the failed jobs, with the series' points `start`
        to `end` (0: the newest minute; -1: the oldest)."""
        reply = g.get_metrics(self.client, queue=self.name, outcome=outcome, start=start, stop=end)
        return Metrics(*reply)

    def obliterate(self, force: bool = False) -> bool:
        """Delete the paused queue and everything in it, in calls of at most `_BATCH` jobs;
        False when refused: the queue is not paused, or it has active jobs and not `force`."""
        return calls.run(self.client, _obliterating(self.name, force))

    def upsert_job_scheduler(self, scheduler_id: str, **settings: Any) -> tuple[str, int]:
        """Create or update a job scheduler of this queue (schedulers.upsert_job_scheduler,
        which names the settings); the pending iteration's id and when it runs."""
        return upsert_job_scheduler(self.client, self.name, scheduler_id, now=now_ms(), **settings)


@dataclass(frozen=True)
class Dependencies:
    """A parent's children by what became of them, each named by its job id."""

    processed: dict[str, object]  # completed, with their return values
    unprocessed: list[str]  # still pending
    ignored: dict[str, str]  # failed under ignoreDependencyOnFailure or continueParentOnFailure
    failed: list[str]  # failed under failParentOnFailure or no policy, oldest failure first


def _read_dependencies(queue: str, job_id: str) -> calls.Steps[Dependencies]:
    """getDependencies-4, then paginate-1 on each record that did not come whole."""
    reply = yield "get_dependencies", {"queue": queue, "job_id": job_id, "count": _BATCH}
    processed, unprocessed, ignored, failed, cursors = reply
    pairs: dict[str, list[str]] = {
        "processed": [part for item in processed.items() for part in item],
        "failed": [part for item in ignored.items() for part in item],
    }
    members: dict[str, list[str]] = {"dependencies": list(unprocessed), "unsuccessful": failed}
    parts = ("processed", "dependencies", "failed", "unsuccessful")
    for part, cursor in zip(parts, cursors, strict=True):
        while cursor != "0":
            arguments = {"queue": queue, "job_id": job_id, "part": part, "cursor": cursor}
            cursor, _, page = yield "paginate", {**arguments, "count": _BATCH}
            if part in pairs:
                pairs[part] += page
            else:  # unsuccessful pages hold each key and its score: the keys alone are kept
                members[part] += page[::2] if part == "unsuccessful" else page
    start = len(keys.prefix(queue))  # children are named by their job keys: emq:{q}:<id>
    values, reasons = pairs["processed"], pairs["failed"]
    return Dependencies(
        processed={
            key[start:]: _decoded(value)
            for key, value in zip(values[::2], values[1::2], strict=True)
        },
        unprocessed=sorted(key[start:] for key in members["dependencies"]),
        ignored={
            key[start:]: reason for key, reason in zip(reasons[::2], reasons[1::2], strict=True)
        },
        failed=[key[start:] for key in members["unsuccessful"]],
    )


@dataclass(frozen=True)
class Metrics:
    """How many jobs completed (or failed) since the queue began, and a page of the per-minute
    series, newest minute first."""

    count: int
    prev_ts: int  # the series' last minute, in ms (0 before the first point)
    prev_count: int  # the count then
    data: list[int]  # the points asked for
    points: int  # how many points the series holds


# The walks (calls.py): each script called again until its walk is over, `_BATCH` jobs a call.


def _removing(queue: str, job_id: str, remove_children: bool) -> calls.Steps[bool]:
    """removeJob-13 until the job (and its tree) is gone (True) or held by a worker (False)."""
    arguments = {"queue": queue, "job_id": job_id, "remove_children": remove_children}
    while True:
        done: int = yield "remove_job", {**arguments, "limit": _BATCH}
        if done != _GOES_ON:
            return done == 1


def _draining(queue: str, delayed: bool) -> calls.Steps[int]:
    """drain-5 until a call removes fewer than `_BATCH`; how many were removed."""
    removed = 0
    while True:
        count: int = yield "drain", {"queue": queue, "delayed": delayed, "count": _BATCH}
        removed += count
        if count < _BATCH:
            return removed


def _cleaning(queue: str, state: str, grace: int) -> calls.Steps[list[str]]:
    """cleanJobsInSet-5 until its cursor comes back to 0; the ids removed."""
    removed: list[str] = []
    cursor = 0
    while True:
        arguments = {"queue": queue, "state": state, "grace": grace, "limit": _BATCH}
        cursor, ids = yield "clean_jobs_in_set", {**arguments, "cursor": cursor}
        removed += ids
        if cursor == 0:
            return removed


def _obliterating(queue: str, force: bool) -> calls.Steps[bool]:
    """obliterate-20 until the queue is gone (True) or it refuses (False)."""
    while True:
        left: int = yield "obliterate", {"queue": queue, "count": _BATCH, "force": force}
        if left != 1:
            return left == 0


# Jobs a walk's call takes at most (removeJob-13, drain-5, cleanJobsInSet-5): a call holds the
# server for about a millisecond a thousand jobs (docs/benchmarks.md, walks).
_BATCH = 1000
_GOES_ON = 2  # removeJob-13: part of the tree removed, a next call goes on


def _jobs(found: Sequence[Sequence[tuple[str, dict[str, str]]]]) -> list[Job]:
    return [Job.from_fields(job_id, fields) for state in found for job_id, fields in state]


def _texts(fields: Mapping[Any, Any]) -> dict[str, str]:
    return {text(k): text(v) for k, v in fields.items()}


# One job of a bulk add: (name, data) or (name, data, options).
BulkJob = tuple[str, object] | tuple[str, object, JobOptions]


class _BulkAdd:
    """The calls of one bulk add, and their answers as they come in: a call a SCRIPT FLUSH or a
    failover left unrun within a pipeline (it was answered NOSCRIPT) is sent again in the next."""

    def __init__(self, queue: str, jobs: Sequence[BulkJob]) -> None:
        self.queue = queue
        self.calls = [
            _add_call(queue, job[0], job[1], job[2] if len(job) == 3 else _NO_OPTIONS)
            for job in jobs
        ]
        self.results: list[g.Added | None] = [None] * len(self.calls)
        self.pending = list(range(len(self.calls)))  # the calls still to send
        self.queued: list[Any] = []  # the Pending of each call in `pending`, once on a pipeline

    def queue_on(self, pipe: Any) -> None:
        queued = []
        for index in self.pending:
            call = self.calls[index]
            wrapper = getattr(g, f"{call.wrapper}_pipeline")
            try:
                queued.append(wrapper(pipe, queue=self.queue, **call.arguments))
            except ArgumentError as exc:  # nothing is sent: the pipeline has not run
                raise ArgumentError(f"job {call.name!r}, item {index} of the bulk: {exc}") from None
        self.queued = queued

    def take(self, replies: Sequence[object], not_run: Sequence[int] = ()) -> None:
        unrun = set(not_run)
        left = []
        for index, call in zip(self.pending, self.queued, strict=True):
            if call.index in unrun:
                left.append(index)
            else:
                self.results[index] = self.calls[index].answer(call.result(replies))
        self.pending = left

    def answers(self) -> list[g.Added]:
        return [r for r in self.results if r is not None]


def _check_flow(flow: FlowJob, queue: str) -> None:
    if flow.queue != queue:
        raise ArgumentError(f"flow {flow.name!r} is in queue {flow.queue!r}, not {queue!r}")


class AsyncQueue:
    """`Queue` on a redis.asyncio client (a Redis or a RedisCluster)."""

    def __init__(self, client: AsyncClient, name: str) -> None:
        self.client = client
        self.name = name
        check_queue_name("AsyncQueue", name)

    async def add(
        self, name: str, data: object = None, options: JobOptions = _NO_OPTIONS
    ) -> g.Added:
        call = _add_call(self.name, name, data, options)
        wrapper = getattr(g, f"{call.wrapper}_async")
        return call.answer(await wrapper(self.client, queue=self.name, **call.arguments))

    async def add_bulk(self, jobs: Sequence[BulkJob]) -> list[g.Added]:
        bulk = _BulkAdd(self.name, jobs)
        while bulk.pending:
            pipe = self.client.pipeline(transaction=False)
            bulk.queue_on(pipe)
            try:
                bulk.take(await execute_async(pipe))
            except PipelineIncompleteError as exc:
                bulk.take(exc.replies, exc.not_run)
        return bulk.answers()

    async def add_flow(self, flow: FlowJob, parent_id: str = "") -> FlowIds:
        _check_flow(flow, self.name)
        return await add_flow_async(self.client, flow, now=now_ms(), parent_id=parent_id)

    async def pause(self) -> None:
        await g.pause_async(self.client, queue=self.name, action="pause")

    async def resume(self) -> None:
        await g.pause_async(self.client, queue=self.name, action="resume")

    async def is_paused(self) -> bool:
        return bool(await self.client.hexists(keys.meta(self.name), "paused"))

    async def counts(self) -> g.Counts:
        return await g.get_counts_async(self.client, queue=self.name)

    async def get_job(self, job_id: str) -> Job | None:
        fields = await self.client.hgetall(keys.job(self.name, job_id))
        return Job.from_fields(job_id, _texts(fields)) if fields else None

    async def get_state(self, job_id: str) -> str:
        return await g.get_job_state_async(self.client, queue=self.name, job_id=job_id)

    async def get_dependencies(self, job_id: str) -> Dependencies:
        return await calls.run_async(self.client, _read_dependencies(self.name, job_id))

    async def get_jobs(
        self, *states: g.GetJobsState, start: int = 0, end: int = -1, asc: bool = False
    ) -> list[Job]:
        found = await g.get_jobs_async(
            self.client, queue=self.name, start=start, end=end, asc=asc, state=states
        )
        return _jobs(found)

    async def promote(self, job_id: str) -> None:
        await g.promote_async(self.client, queue=self.name, job_id=job_id)

    async def retry(
        self,
        job_id: str,
        state: Literal["completed", "failed"] = "failed",
        reset_attempts: bool = False,
    ) -> str:
        return await g.reprocess_job_async(
            self.client,
            queue=self.name,
            job_id=job_id,
            outcome=state,
            reset_attempts=reset_attempts,
        )

    async def remove(self, job_id: str, remove_children: bool = False) -> bool:
        return await calls.run_async(self.client, _removing(self.name, job_id, remove_children))

    async def drain(self, delayed: bool = False) -> int:
        return await calls.run_async(self.client, _draining(self.name, delayed))

    async def get_job_logs(
        self, job_id: str, start: int = 0, count: int = 1000, asc: bool = True
    ) -> tuple[int, list[str]]:
        return await g.get_job_logs_async(
            self.client, queue=self.name, job_id=job_id, start=start, count=count, asc=asc
        )

    async def get_metrics(
        self, outcome: g.GetMetricsOutcome, start: int = 0, end: int = -1
    ) -> Metrics:
        reply = await g.get_metrics_async(
            self.client, queue=self.name, outcome=outcome, start=start, stop=end
        )
        return Metrics(*reply)

    async def obliterate(self, force: bool = False) -> bool:
        return await calls.run_async(self.client, _obliterating(self.name, force))

    async def upsert_job_scheduler(self, scheduler_id: str, **settings: Any) -> tuple[str, int]:
        return await upsert_job_scheduler_async(
            self.client, self.name, scheduler_id, now=now_ms(), **settings
        )

    async def clean(self, state: g.CleanJobsInSetState, grace: int = 0) -> list[str]:
        return await calls.run_async(self.client, _cleaning(self.name, state, grace))
