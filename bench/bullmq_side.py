"""BullMQ's own scripts, built and sent as its Python package does, for the side-by-side rows.

The job-cycle rows call BullMQ's Lua scripts (shipped in the `bullmq` package, includes already
resolved) through a plain synchronous redis-py client, like ours: the keys and arguments come
from BullMQ's own `Scripts` and `Job` classes, so the bytes Redis receives are the ones a BullMQ
worker sends. Its `Scripts.moveToActive` is a coroutine that awaits the script call, so that one
call is rebuilt here from the same keys and options it uses. Bulk add goes through BullMQ's public
`Queue.addBulk`, which is asyncio only, on its own connection, and a flow through its public
`FlowProducer.add` (asyncio too), which adds the parent with addParentJob and each child with
addStandardJob, naming the parent, in one MULTI.

The options match the EchoMQ rows: no delay, no priority, no attempts beyond the first, finished
jobs kept (removeOnComplete false), a 30 s lock, no rate limiter, no metrics.
"""

from __future__ import annotations

import asyncio
from types import SimpleNamespace
from typing import Any

import msgpack
import redis
from bullmq import FlowProducer, Job, Queue
from bullmq.redis_connection import SCRIPT_DEFINITIONS, loadScript
from bullmq.scripts import Scripts, raw2NextJobData
from scriptcost import (
    DEDUP_TTL_MS,
    FLOW_CHILDREN,
    FLOW_JOBS,
    LOCK_MS,
    MAX_EVENTS,
    SCHEDULER_EVERY_MS,
)

from echomq_scripts.runtime.arguments import now_ms

PREFIX = "bull"


class BullCycle:
    """One BullMQ queue on a synchronous client: add, pick up, finish."""

    label = "BullMQ"

    def __init__(self, port: int, queue: str, token: str) -> None:
        self.client = redis.Redis(host="127.0.0.1", port=port, decode_responses=True)
        self.token = token
        # Jobs read their queue's options and names from this object; it never connects.
        url = f"redis://127.0.0.1:{port}"
        self.queue = Queue(queue, {"connection": url, "prefix": PREFIX, "lockDuration": LOCK_MS})
        commands = {
            name: self.client.register_script(loadScript(file))
            for name, file in SCRIPT_DEFINITIONS.items()
        }
        self.scripts = Scripts(PREFIX, queue, SimpleNamespace(conn=self.client, commands=commands))
        self.name = queue
        # The stream's limit, where BullMQ's scripts read it: the same as the EchoMQ side's.
        self.client.hset(f"{PREFIX}:{queue}:meta", "opts.maxLenEvents", MAX_EVENTS)

    def add(self, data: dict[str, Any]) -> str:
        job = Job(self.queue, "job", data, {})
        job_id = self.scripts.addStandardJob(job, job.timestamp)
        return str(job_id)

    def move_to_active(self) -> Job | None:
        keys = self.scripts.getKeys(
            [
                "wait",
                "active",
                "prioritized",
                "events",
                "stalled",
                "limiter",
                "delayed",
                "paused",
                "meta",
                "pc",
                "marker",
            ]
        )
        options = {"token": self.token, "lockDuration": LOCK_MS, "limiter": None}
        args = [self.scripts.keys[""], now_ms(), msgpack.packb(options, use_bin_type=True)]
        return self._job(self.scripts.commands["moveToActive"](keys=keys, args=args))

    def finish(self, job: Job, fetch_next: bool) -> Job | None:
        keys, args = self.scripts.moveToCompletedArgs(
            job, "ok", False, self.token, fetchNext=fetch_next
        )
        reply = self.scripts.commands["moveToFinished"](keys=keys, args=args)
        if isinstance(reply, int) and reply < 0:
            raise RuntimeError(f"BullMQ moveToFinished returned {reply}")
        return self._job(reply) if fetch_next else None

    def _job(self, reply: Any) -> Job | None:
        """The job a pickup answered, as BullMQ's worker builds it (None: nothing to do)."""
        data = raw2NextJobData(reply)
        if not data or not data[0]:
            return None
        return Job.fromJSON(self.queue, data[0], data[1])

    def completed(self) -> int:
        return int(self.client.zcard(f"{PREFIX}:{self.name}:completed"))

    def close(self) -> None:
        self.client.close()


class BulkAdd:
    """BullMQ's own Queue.addBulk, `size` jobs a call; the Queue (which reads and registers
    BullMQ's scripts) is made before the timed part, as a long-lived producer has it."""

    def __init__(self, port: int, queue: str) -> None:
        url = f"redis://127.0.0.1:{port}"
        self.queue = Queue(queue, {"connection": url, "prefix": PREFIX})
        with redis.Redis(host="127.0.0.1", port=port) as setup:
            setup.hset(f"{PREFIX}:{queue}:meta", "opts.maxLenEvents", MAX_EVENTS)

    def __call__(self, batches: int, size: int) -> list[str]:
        async def run() -> list[str]:
            ids: list[str] = []
            try:
                for batch in range(batches):
                    jobs = [{"name": "job", "data": {"n": batch * size + i}} for i in range(size)]
                    added = await self.queue.addBulk(jobs)
                    ids += [str(job.id) for job in added]
            finally:
                await self.queue.close()
            return ids

        return asyncio.run(run())


class BullFlow:
    """BullMQ's own FlowProducer.add, one flow of a parent and FLOW_CHILDREN children a call,
    each child with BullMQ's default options. One producer, on one event loop, serves every round
    (its connection is made in the warm-up), as a long-lived producer does."""

    label = "BullMQ"
    calls = FLOW_JOBS  # addParentJob, then addStandardJob for each child

    def __init__(self, port: int) -> None:
        self.client = redis.Redis(host="127.0.0.1", port=port, decode_responses=True)
        self.runner = asyncio.Runner()
        self.producer = FlowProducer({"connection": f"redis://127.0.0.1:{port}", "prefix": PREFIX})

    def key(self, queue: str, name: str) -> str:
        return f"{PREFIX}:{queue}:{name}"

    def prepare(self, queue: str) -> None:
        self.client.hset(self.key(queue, "meta"), "opts.maxLenEvents", MAX_EVENTS)

    def run(self, queue: str, count: int) -> None:
        def flow() -> dict[str, Any]:
            children = [
                {"name": "child", "queueName": queue, "data": {}} for _ in range(FLOW_CHILDREN)
            ]
            return {"name": "parent", "queueName": queue, "data": {}, "children": children}

        async def run() -> None:
            for _ in range(count):
                await self.producer.add(flow())

        self.runner.run(run())

    def close(self) -> None:
        try:
            self.runner.run(self.producer.close())
        finally:
            self.runner.close()
            self.client.close()


class BullDedupAdd:
    """BullMQ's addStandardJob with a deduplication option of the same TTL, built and sent as
    its Python package does: each call a new id (`held` False), or every call the one id a job
    already holds."""

    label = "BullMQ"
    calls = 1

    def __init__(self, port: int, held: bool) -> None:
        self.port = port
        self.held = held
        self.cycle: BullCycle | None = None

    def key(self, queue: str, name: str) -> str:
        return f"{PREFIX}:{queue}:{name}"

    def prepare(self, queue: str) -> None:
        if self.cycle is not None:
            self.cycle.close()
        self.cycle = BullCycle(self.port, queue, "")
        if self.held:
            self._add("held")

    def _add(self, dedup_id: str) -> None:
        assert self.cycle is not None
        options = {"deduplication": {"id": dedup_id, "ttl": DEDUP_TTL_MS}}
        job = Job(self.cycle.queue, "job", {}, options)
        self.cycle.scripts.addStandardJob(job, job.timestamp)

    def run(self, queue: str, count: int) -> None:
        for i in range(count):
            self._add("held" if self.held else f"d{i}")

    def close(self) -> None:
        if self.cycle is not None:
            self.cycle.close()


class BullUpsertScheduler:
    """BullMQ's own Queue.upsertJobScheduler (asyncio): a new every scheduler a call. One Queue
    a queue name, on one event loop for every round, its connection made before a round is
    timed (prepare asks it for the schedulers' count)."""

    label = "BullMQ"
    calls = 1

    def __init__(self, port: int) -> None:
        self.url = f"redis://127.0.0.1:{port}"
        self.client = redis.Redis(host="127.0.0.1", port=port)
        self.runner = asyncio.Runner()
        self.queues: dict[str, Queue] = {}

    def key(self, queue: str, name: str) -> str:
        return f"{PREFIX}:{queue}:{name}"

    def prepare(self, queue: str) -> None:
        if queue not in self.queues:
            self.queues[queue] = Queue(queue, {"connection": self.url, "prefix": PREFIX})
        self.runner.run(self.queues[queue].getJobSchedulersCount())
        self.client.hset(self.key(queue, "meta"), "opts.maxLenEvents", MAX_EVENTS)

    def run(self, queue: str, count: int) -> None:
        upsert = self.queues[queue].upsertJobScheduler

        async def run() -> None:
            for i in range(count):
                await upsert(f"s{i}", {"every": SCHEDULER_EVERY_MS}, "job", {}, {})

        self.runner.run(run())

    def close(self) -> None:
        try:
            for queue in self.queues.values():
                self.runner.run(queue.close())
        finally:
            self.runner.close()
            self.client.close()
