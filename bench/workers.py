"""Workers end to end: a queue of N no-op jobs emptied by EchoMQ's `Worker` (threads), its
`AsyncWorker` and BullMQ Python's `Worker` (asyncio), at each concurrency, on one private pinned
redis-server.

Each round fills the queue (untimed: EchoMQ's `Queue.add_bulk`, BullMQ's `Queue.addBulk`), then
times from the worker's start until its last job completed: EchoMQ's workers in burst mode
(`run(burst=True)` returns when a pickup finds nothing), BullMQ's until its `completed` events
count N, then closed. The sides alternate which goes first, the server is flushed between runs,
and finished jobs are kept on both sides (no retention), with a 30 s lock and no rate limit.
A row is the median of its rounds' jobs per second; the ratio is EchoMQ's over BullMQ's.
"""

from __future__ import annotations

import asyncio
import statistics
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import redis
import redis.asyncio

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from echomq_scripts.queue import AsyncQueue, Queue
from echomq_scripts.worker import AsyncActiveJob, AsyncWorker, Worker

QUEUE = "bench"
ADD_BATCH = 1000  # jobs a bulk add sends at once, on both sides
TARGET = 1.5  # EchoMQ's jobs/s over BullMQ's, issue 17


@dataclass(frozen=True)
class WorkerRow:
    side: str
    concurrency: int
    jobs_per_s: list[float]  # one a round

    @property
    def median(self) -> float:
        return statistics.median(self.jobs_per_s)


def _fill(port: int, jobs: int) -> None:
    client = redis.Redis(port=port)
    client.flushall()
    queue = Queue(client, QUEUE)
    for first in range(0, jobs, ADD_BATCH):
        queue.add_bulk([("noop", None)] * min(ADD_BATCH, jobs - first))
    client.close()


def echomq_threads(port: int, jobs: int, concurrency: int) -> float:
    _fill(port, jobs)
    client = redis.Redis(port=port, max_connections=concurrency + 4)
    worker = Worker(client, QUEUE, lambda job: None, concurrency=concurrency)
    start = time.perf_counter()
    worker.run(burst=True, handle_signals=False)
    elapsed = time.perf_counter() - start
    assert Queue(client, QUEUE).counts().completed == jobs
    client.close()
    return jobs / elapsed


def echomq_asyncio(port: int, jobs: int, concurrency: int) -> float:
    _fill(port, jobs)

    async def noop(job: AsyncActiveJob) -> None:
        return None

    async def main() -> float:
        client = redis.asyncio.Redis(port=port)
        worker = AsyncWorker(client, QUEUE, noop, concurrency=concurrency)
        start = time.perf_counter()
        await worker.run(burst=True, handle_signals=False)
        elapsed = time.perf_counter() - start
        assert (await AsyncQueue(client, QUEUE).counts()).completed == jobs
        await client.aclose()
        return jobs / elapsed

    return asyncio.run(main())


def bullmq_asyncio(port: int, jobs: int, concurrency: int) -> float:
    from bullmq import Queue as BullQueue
    from bullmq import Worker as BullWorker

    redis.Redis(port=port).flushall()
    options = {"connection": f"redis://127.0.0.1:{port}", "prefix": "bull"}

    async def noop(job: object, token: str) -> None:
        return None

    async def main() -> float:
        queue = BullQueue(QUEUE, options)
        for first in range(0, jobs, ADD_BATCH):
            batch = min(ADD_BATCH, jobs - first)
            await queue.addBulk([{"name": "noop", "data": {}} for _ in range(batch)])
        done = asyncio.Event()
        completed = 0

        def count(*_: object) -> None:
            nonlocal completed
            completed += 1
            if completed == jobs:
                done.set()

        start = time.perf_counter()
        worker = BullWorker(QUEUE, noop, {**options, "concurrency": concurrency})
        worker.on("completed", count)
        await done.wait()
        elapsed = time.perf_counter() - start
        await worker.close()
        await queue.close()
        return jobs / elapsed

    return asyncio.run(main())


SIDES: list[tuple[str, Callable[[int, int, int], float]]] = [
    ("EchoMQ Worker (threads)", echomq_threads),
    ("EchoMQ AsyncWorker", echomq_asyncio),
    ("BullMQ Worker (asyncio)", bullmq_asyncio),
]


def worker_rows(
    port: int,
    jobs: int,
    rounds: int,
    concurrencies: tuple[int, ...],
    progress: Callable[[str], None],
) -> list[WorkerRow]:
    rows = []
    for concurrency in concurrencies:
        rates: dict[str, list[float]] = {side: [] for side, _ in SIDES}
        for round_number in range(rounds):
            # Each round starts with another side, so a slow spell does not fall on one side.
            order = SIDES[round_number % len(SIDES) :] + SIDES[: round_number % len(SIDES)]
            for side, run in order:
                progress(f"workers: {side}, concurrency {concurrency}, round {round_number + 1}")
                rates[side].append(run(port, jobs, concurrency))
        rows += [WorkerRow(side, concurrency, rates[side]) for side, _ in SIDES]
    return rows


def worker_table(rows: list[WorkerRow], jobs: int) -> str:
    lines = [
        f"Workers end to end: {jobs} no-op jobs a round, median jobs/s"
        f" (target: EchoMQ >= {TARGET}x BullMQ)",
        f"{'side':32} {'concurrency':>11} {'jobs/s':>9} {'rounds':>24} {'x BullMQ':>9}",
    ]
    for row in rows:
        bull = next(
            r for r in rows if r.concurrency == row.concurrency and r.side.startswith("BullMQ")
        )
        ratio = row.median / bull.median
        verdict = "" if row is bull else ("PASS" if ratio >= TARGET else "MISS")
        spread = " ".join(f"{rate:.0f}" for rate in row.jobs_per_s)
        lines.append(
            f"{row.side:32} {row.concurrency:>11} {row.median:>9.0f} {spread:>24}"
            f" {ratio:>9.2f} {verdict}"
        )
    return "\n".join(lines)
